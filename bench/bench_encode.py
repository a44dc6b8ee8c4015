"""Encoding throughput: our encode stage (`encode_shard`: batch encoding, numpy token shards) per core and with
all cores, against two tiktoken-free baselines on the same documents.

    .venv/bin/python bench/bench_encode.py [--quick]

- **HF defaults**: `tokenizers.ByteLevelBPETokenizer` trained with its default settings (vocab 30,000,
  min_frequency 2, plus `<|endoftext|>`), used the obvious way: `encode(text).ids` one document at a time.
- **nanoGPT prepare-style**: our tokenizer, one `encode` per document, `eot` appended, every id list kept, then
  one `np.uint16` memmap of the total length filled in order (`prepare.py`'s shape; its parallel form maps over
  documents in worker processes and fills the memmap in the parent).

Every configuration runs in a fresh child process so thread settings are honest: "1 core" means one process
with `RAYON_NUM_THREADS=1` (HuggingFace's own thread pool held to one thread); "N procs" means a process pool
over the Parquet parts (or document chunks), each worker single-threaded; "rayon" is one process letting
`encode_batch_fast` use every core. Times include reading the Parquet parts and writing the token files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import summary  # noqa: E402  (headline figures for bench/run_all.py)
from bench_tokenizer import corpus_texts, write_corpus_parts  # noqa: E402

from storage.parquet import iter_batches  # noqa: E402

EOT = "<|endoftext|>"


def _texts(part: str) -> list[str]:
    return [t for b in iter_batches(Path(part), columns=["text"]) for t in b.column("text").to_pylist() if t]


# --- workers (run inside child processes) ---------------------------------------------------------------------


def _ours(args: tuple[str, str, str, int]) -> int:
    from tasks.encode import EncodeParams, encode_shard

    part, tok_path, out_dir, index = args
    r = encode_shard(part, tok_path, out_dir, index, EncodeParams())
    return sum(r.extra["tokens"].values())


def _hf_default(args: tuple[str, str, str, int]) -> int:
    from tokenizers import ByteLevelBPETokenizer

    part, model_dir, out_dir, index = args
    tok = ByteLevelBPETokenizer(f"{model_dir}/vocab.json", f"{model_dir}/merges.txt")
    eot = tok.token_to_id(EOT)
    ids: list[int] = []
    for text in _texts(part):
        ids.extend(tok.encode(text).ids)
        ids.append(eot)
    np.array(ids, dtype=np.uint16).tofile(Path(out_dir) / f"hf-{index:05d}.bin")
    return len(ids)


_NANO_TOK = None


def _nano_encode(texts: list[str]) -> list[list[int]]:
    global _NANO_TOK
    from tasks.tokenizer import load_tokenizer

    if _NANO_TOK is None:
        _NANO_TOK = load_tokenizer(os.environ["BENCH_TOKENIZER"])
    eot = _NANO_TOK.token_to_id(EOT)
    out = []
    for text in texts:
        ids = _NANO_TOK.encode(text).ids
        ids.append(eot)
        out.append(ids)
    return out


def _nanogpt(parts: list[str], out_dir: str, procs: int) -> int:
    docs = [t for p in parts for t in _texts(p)]
    if procs == 1:
        encoded = _nano_encode(docs)
    else:
        import multiprocessing as mp

        chunks = [docs[i : i + 256] for i in range(0, len(docs), 256)]
        with mp.get_context("spawn").Pool(procs) as pool:
            encoded = [ids for chunk in pool.imap(_nano_encode, chunks) for ids in chunk]
    total = sum(len(ids) for ids in encoded)
    arr = np.memmap(Path(out_dir) / "nanogpt.bin", dtype=np.uint16, mode="w+", shape=(total,))
    idx = 0
    for start in range(0, len(encoded), 1024):
        batch = np.concatenate([np.asarray(ids, dtype=np.uint16) for ids in encoded[start : start + 1024]])
        arr[idx : idx + len(batch)] = batch
        idx += len(batch)
    arr.flush()
    return total


def child(mode: str, parts: list[str], model: str, out_dir: str, procs: int) -> dict:
    t0 = time.perf_counter()
    if mode == "nanogpt":
        tokens = _nanogpt(parts, out_dir, procs)
    else:
        fn = _ours if mode == "ours" else _hf_default
        jobs = [(p, model, out_dir, i) for i, p in enumerate(parts)]
        if procs == 1:
            tokens = sum(map(fn, jobs))
        else:
            import multiprocessing as mp

            with mp.get_context("spawn").Pool(procs) as pool:
                tokens = sum(pool.map(fn, jobs))
    return {"tokens": tokens, "seconds": time.perf_counter() - t0}


# --- the benchmark ------------------------------------------------------------------------------------------------


def run_child(
    mode: str, parts: list[str], model: str, out_dir: Path, procs: int, rayon_threads: int | None
) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, BENCH_TOKENIZER=model if mode == "nanogpt" else "")
    env.pop("RAYON_NUM_THREADS", None)
    if rayon_threads:
        env["RAYON_NUM_THREADS"] = str(rayon_threads)
    cmd = [
        sys.executable,
        __file__,
        "--child",
        mode,
        "--model",
        model,
        "--out",
        str(out_dir),
        "--procs",
        str(procs),
        *parts,
    ]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{mode} child failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="an ~8 MB corpus (≤ 3 min)")
    ap.add_argument("--child")
    ap.add_argument("--model")
    ap.add_argument("--out")
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("parts", nargs="*")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.parts, args.model, args.out, args.procs)))
        return

    texts = corpus_texts()
    if not texts:
        print("skipped: no text under ../shared/data")
        return
    from tokenizers import ByteLevelBPETokenizer

    from tasks.tokenizer import TokenizerParams, train_tokenizer

    cores = os.cpu_count() or 1
    target_mb = 8 if args.quick else 40
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        parts, corpus_mb = write_corpus_parts(texts, target_mb, tmp / "corpus", parts=max(4, 2 * cores))
        ours = train_tokenizer(texts, tmp / "ours", TokenizerParams(vocab_size=16_384)).path
        hf = ByteLevelBPETokenizer()
        hf.train_from_iterator(texts, special_tokens=[EOT], show_progress=False)  # defaults otherwise
        (tmp / "hf").mkdir()
        hf.save_model(str(tmp / "hf"))

        configs = [
            ("ours: encode_shard (encode_batch_fast)", "ours", ours, 1, 1),
            ("ours: encode_shard (encode_batch_fast)", "ours", ours, cores, 1),
            ("ours: encode_shard, rayon threads", "ours", ours, 1, None),
            ("HF defaults: ByteLevelBPETokenizer.encode loop", "hf", str(tmp / "hf"), 1, 1),
            ("HF defaults: ByteLevelBPETokenizer.encode loop", "hf", str(tmp / "hf"), cores, 1),
            ("nanoGPT prepare-style: encode + eot + memmap", "nanogpt", ours, 1, 1),
            ("nanoGPT prepare-style: encode + eot + memmap", "nanogpt", ours, cores, 1),
        ]
        rows = []
        for k, (name, mode, model, procs, threads) in enumerate(configs):
            r = run_child(mode, parts, model, tmp / f"out{k}", procs, threads)
            used = procs if threads else cores
            rows.append((name, procs, "1" if threads else "all", r["tokens"], r["seconds"], used))

    print(
        f"{corpus_mb:,.1f} MB of text in {len(parts)} Parquet parts; {cores} cores; "
        f"load average {os.getloadavg()[0]:.1f} (other jobs share these cores: compare rows, not absolutes)"
    )
    print(
        f"{'encoder':<48} {'procs':>5} {'threads':>7} {'tokens':>12} {'seconds':>8} {'tokens/s':>11} "
        f"{'tok/s/core':>11} {'MB/s':>7}"
    )
    for name, procs, threads, tokens, seconds, used in rows:
        print(
            f"{name:<48} {procs:>5} {threads:>7} {tokens:>12,} {seconds:>8.2f} {tokens / seconds:>11,.0f} "
            f"{tokens / seconds / used:>11,.0f} {corpus_mb / seconds:>7.2f}"
        )
    print(
        "tokens include one <|endoftext|> per document; ours and nanoGPT-style use the same tokenizer "
        "(same token count), HF defaults its own 30k vocabulary"
    )
    one_core = {name: tokens / seconds for name, procs, threads, tokens, seconds, _ in rows
                if procs == 1 and threads == "1"}
    every_core = {name: tokens / seconds for name, procs, threads, tokens, seconds, _ in rows if procs == cores}
    ours_name, nano_name = configs[0][0], configs[5][0]
    summary.record("encode (1 process)", "tokens/s per core", one_core[ours_name], "nanoGPT prepare-style loop",
                   one_core[nano_name])
    summary.record(f"encode ({cores} processes)", "tokens/s, all cores", every_core[ours_name],
                   "nanoGPT prepare-style loop", every_core[nano_name])


if __name__ == "__main__":
    main()
