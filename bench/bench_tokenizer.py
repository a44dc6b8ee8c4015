"""Tokenizer training: our stage (HuggingFace `tokenizers`, byte-level BPE) on the 2 % sample and on the whole
corpus, beside a pure-Python BPE on the same sample for scale (the course this project grew from trained its
hand-written BPE for 6 hours on 900 M characters).

    .venv/bin/python bench/bench_tokenizer.py [--quick]

The corpus is every text in ../shared/data (novels, news, sentences in 10 languages, Darija tweets, WhatsApp
exports, ~700 raw Common Crawl WET documents), about 8 MB, repeated under fresh document ids to tens of MB.
Repetition adds no new words, so the BPE merge phase costs what it costs on 8 MB: the "full corpus" rate is the
rate of reading, pre-tokenising and counting, which is what grows with a real corpus.
The sample is drawn by the sample stage itself (`sample_shard`, 2 %), so its throughput is printed too.
Compression (bytes/token) is measured on each run's own held-out documents; on the repeated corpus those have
copies in the training text, so that figure flatters the full-corpus tokenizer a little.

The pure-Python BPE below is written for this comparison in the minbpe manner: text split into chunks by the
same regex as our pre-tokeniser, identical chunks counted once with their frequency, then for every merge the
byte-pair counts are rebuilt in a dict over all distinct chunks, the top pair merged everywhere. It is honest
(no needless slowness), just Python. It runs a limited number of merges; the time for the full vocabulary is
extrapolated linearly from them and marked "est.".
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import summary  # noqa: E402  (headline figures for bench/run_all.py)

from storage.parquet import ParquetShardWriter  # noqa: E402
from storage.schemas import DOCUMENT_SCHEMA  # noqa: E402
from tasks.sample import SampleParams, sample_shard  # noqa: E402
from tasks.tokenizer import CHAT_SPLIT_PATTERN, MIN_VOCAB, TokenizerParams, train_tokenizer  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
COURSE_CHARS = 900e6
COURSE_SECONDS = 6 * 3600


def corpus_texts() -> list[str]:
    """Documents from every readable text file of ../shared/data (empty when it is absent)."""
    docs: list[str] = []

    def read(rel: str) -> str:
        path = DATA / rel
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    docs += [p for p in read("text/char-rnn_tinyshakespeare_input.txt").split("\n\n") if p]
    docs += [p for p in read("text/sentencepiece_botchan.txt").split("\n\n") if p]
    docs += [line.split(" ", 1)[-1] for line in read("text/MinHash_articles_1000.train").splitlines() if line]
    for path in sorted((DATA / "langid").glob("lingua_sentences_*.txt")):
        lines = path.read_text(encoding="utf-8").splitlines()
        docs += [" ".join(lines[i : i + 5]) for i in range(0, len(lines), 5)]
    for name in ("afrisenti_ma_dev.tsv", "afrisenti_dz_dev.tsv"):
        docs += [r.split("\t")[1] for r in read(f"langid/{name}").splitlines()[1:] if r.count("\t") >= 2]
    for path in sorted((DATA / "whatsapp").glob("*.txt")):
        docs.append(path.read_text(encoding="utf-8", errors="replace"))
    for rel in (
        "commoncrawl/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz",
        "commoncrawl/dolma_cc_en_head-0091.jsonl.gz",
        "text/dolma_dedup_documents_000.json.gz",
    ):
        path = DATA / rel
        if path.exists():
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                docs += [json.loads(line).get("text", "") for line in fh if line.strip()]
    return [d for d in docs if d]


def write_corpus_parts(
    texts: list[str], target_mb: float, folder: Path, parts: int
) -> tuple[list[str], float]:
    """The corpus repeated under fresh ids until it reaches target_mb, as Parquet parts; returns (paths, MB)."""
    unique_mb = sum(len(t.encode()) for t in texts) / 1e6
    repeats = max(1, round(target_mb / unique_mb))
    rows = [(f"r{r}-{i}", t) for r in range(repeats) for i, t in enumerate(texts)]
    # contiguous runs of documents of about equal bytes, so that parallel workers get equal work
    sizes = np.cumsum([len(t.encode()) for _, t in rows])
    cuts = np.searchsorted(sizes, sizes[-1] * np.arange(1, parts) / parts).tolist()
    paths = []
    for k, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(rows)], strict=True)):
        path = folder / f"part-{k:05d}.parquet"
        with ParquetShardWriter(path, DOCUMENT_SCHEMA) as w:
            w.write_rows(
                {"id": i, "text": t, "source": "text", "url": None, "timestamp": None, "meta": None}
                for i, t in rows[lo:hi]
            )
        paths.append(str(path))
    return paths, unique_mb * repeats


# --- a small pure-Python BPE, for scale ---------------------------------------------------------------------


def _chunks(text: str) -> list[str]:
    try:
        import regex
    except ImportError:  # the `regex` package is optional here; fall back to a rough split
        import re

        return re.findall(r"\s?\w+|\s?[^\w\s]+|\s+", text)
    return regex.findall(CHAT_SPLIT_PATTERN, text)


def python_bpe(texts: list[str], merges: int) -> tuple[list[tuple[int, int]], float]:
    """Train `merges` byte-pair merges; returns the merges and the seconds taken (pre-tokenising included)."""
    t0 = time.perf_counter()
    words: Counter = Counter()
    for text in texts:
        for chunk in _chunks(text):
            words[tuple(chunk.encode("utf-8"))] += 1
    vocab = list(words.items())
    learned: list[tuple[int, int]] = []
    next_id = 256
    for _ in range(merges):
        pairs: dict[tuple[int, int], int] = {}
        for ids, freq in vocab:
            for pair in zip(ids, ids[1:], strict=False):
                pairs[pair] = pairs.get(pair, 0) + freq
        if not pairs:
            break
        best = max(pairs, key=pairs.get)
        learned.append(best)
        merged = []
        for ids, freq in vocab:
            if len(ids) > 1:
                ids = _merge(ids, best, next_id)
            merged.append((ids, freq))
        vocab = merged
        next_id += 1
    return learned, time.perf_counter() - t0


def _merge(ids: tuple[int, ...], pair: tuple[int, int], new_id: int) -> tuple[int, ...]:
    out = []
    i = 0
    n = len(ids)
    while i < n:
        if i < n - 1 and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return tuple(out)


# --- the benchmark ------------------------------------------------------------------------------------------


def _iter_sample_texts(parts: list[str]) -> Iterator[str]:
    from storage.parquet import iter_batches

    for p in parts:
        for batch in iter_batches(Path(p), columns=["text"]):
            yield from batch.column("text").to_pylist()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="~24 MB corpus, fewer pure-Python merges (≤ 3 min)")
    args = ap.parse_args()
    texts = corpus_texts()
    if not texts:
        print(f"skipped: no text under {DATA}")
        return
    target_mb = 24 if args.quick else 100
    py_merges = 100 if args.quick else 400
    vocab = 16_384
    cores = os.cpu_count() or 1
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        parts, corpus_mb = write_corpus_parts(texts, target_mb, tmp / "corpus", parts=4)

        t0 = time.perf_counter()
        sample_results = [
            sample_shard(p, str(tmp / "sample" / Path(p).name), SampleParams(fraction=0.02)) for p in parts
        ]
        sample_s = time.perf_counter() - t0
        sample_parts = [r.part for r in sample_results]
        sample_texts = list(_iter_sample_texts(sample_parts))
        sample_mb = sum(len(t.encode()) for t in sample_texts) / 1e6

        full = train_tokenizer(parts, tmp / "tok-full", TokenizerParams(vocab_size=vocab))
        sampled = train_tokenizer(sample_parts, tmp / "tok-sample", TokenizerParams(vocab_size=vocab))
        small_vocab = 256 + py_merges
        hf_small = train_tokenizer(
            sample_texts,
            tmp / "tok-small",
            TokenizerParams(vocab_size=max(small_vocab + 4, MIN_VOCAB), heldout_fraction=0),
        )
        learned, py_s = python_bpe(sample_texts, py_merges)
        py_per_merge = py_s / max(len(learned), 1)
        py_full_est = py_per_merge * (vocab - MIN_VOCAB)

    def est_course(mb_per_s: float) -> str:
        return f"{COURSE_CHARS / 1e6 / mb_per_s / 3600:,.2f} h" if mb_per_s > 0 else "-"

    def hf_row(name: str, info, course: str = "-") -> tuple:
        return (
            name,
            info.train_bytes / 1e6,
            info.vocab_size,
            info.train_seconds,
            info.train_mb_per_s,
            info.bytes_per_token,
            course,
        )

    rows += [
        hf_row("ours (HF BPE), full corpus", full, est_course(full.train_mb_per_s)),
        hf_row("ours (HF BPE), 2 % sample", sampled),
        hf_row(f"ours (HF BPE), sample, {py_merges} merges", hf_small),
        (
            f"pure Python BPE, sample, {len(learned)} merges",
            sample_mb,
            256 + len(learned),
            py_s,
            sample_mb / py_s,
            float("nan"),
            "-",
        ),
        (
            f"pure Python BPE, sample, {vocab:,} vocab (est.)",
            sample_mb,
            vocab,
            py_full_est,
            sample_mb / py_full_est,
            float("nan"),
            "-",
        ),
    ]
    print(
        f"corpus: {len(texts):,} distinct documents, {corpus_mb:,.1f} MB after repetition; {cores} cores "
        f"(HF trains on all of them, pure Python on one); load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"sample stage: 2 % of {corpus_mb:,.1f} MB → {sample_mb:,.2f} MB in {sample_s:.2f} s "
        f"({corpus_mb / sample_s:,.1f} MB/s)"
    )
    print(
        f"{'tokenizer training':<44} {'MB':>8} {'vocab':>7} {'seconds':>9} {'MB/s':>8} {'bytes/tok':>10} "
        f"{'900 MB at this rate':>20}"
    )
    for name, mb, v, s, rate, bpt, course in rows:
        print(f"{name:<44} {mb:>8.2f} {v:>7,} {s:>9.2f} {rate:>8.4g} {bpt:>10.3f} {course:>20}")
    print(
        f"the course's hand-written BPE: 900 MB in {COURSE_SECONDS / 3600:.0f} h = "
        f"{COURSE_CHARS / 1e6 / COURSE_SECONDS:.3f} MB/s"
    )
    print("bytes/tok: UTF-8 bytes per token on held-out documents (1 % by id hash), higher is better")
    summary.record("tokenizer training (full corpus)", "MB/s, all cores", full.train_mb_per_s,
                   "pure-Python BPE, same vocab (est.)", sample_mb / py_full_est)


if __name__ == "__main__":
    main()
