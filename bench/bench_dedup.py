"""Dedup: what each method removes from the same corpus, and how fast — MinHash against datatrove's pipeline.

    .venv/bin/python bench/bench_dedup.py [--quick] [--scale N] [--skip-datatrove]

The corpus is built in a temporary directory from ../shared/data: the MinHash news articles (with their 10
labelled near-duplicate pairs) and Dolma's 697 Common Crawl documents, plus `scale` rounds of perturbed
copies of the CC documents — exact copies, near copies (2 % of words replaced, case changed), half copies
(the first half of the paragraphs followed by new text) — and a shared 300-byte footer on a fifth of all
documents. Tables:

1. removal per method, each run alone on the same input (plus the default chain exact → MinHash → suffix array),
   with the share of removals whose record names the survivor;
2. MinHash recall per similarity band on labelled near-duplicates made from the news articles by realistic edits
   (typos, inserted/deleted words and sentences, reordering, boilerplate), beside the S-curve's prediction, for
   14 × 8 and for `threshold: 0.5`;
3. MinHash throughput, ours (signature + buckets + cluster + filter) against datatrove's four MinHash steps
   with the same settings (5-grams, 14 × 8, one task each), each in its own process: documents/s on one core
   and that process's peak RSS; the S-curve of 14 × 8 beside it;
4. suffix-array build MB/s (divsufsort, Kasai LCP) and Bloom-filter checks/s.

datatrove 0.10 hashes `str` with xxhash, which xxhash ≥ 4 refuses; the bench encodes to UTF-8 first (the same
function otherwise). Without datatrove installed, its rows say so and our side is still printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import summary  # noqa: E402  (headline figures for bench/run_all.py)

SHARED = ROOT.parent / "shared" / "data"
ARTICLES = SHARED / "text" / "MinHash_articles_1000.train"
CC = SHARED / "commoncrawl" / "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
FOOTER = (
    "About us | Contact | Privacy policy | Terms of service | Cookie settings. All content on this site is "
    "protected by copyright and may not be reproduced without permission. Subscribe to our newsletter to "
    "receive the latest stories, offers and event invitations straight to your inbox every week. Follow us."
)
N_PARTS = 4


def peak_rss_mb() -> float:
    """This process's peak resident memory since exec (VmHWM; ru_maxrss would include the forking parent's)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------------------------------------------
# corpus


def _perturb_words(text: str, rng: random.Random, share: float) -> str:
    words = text.split(" ")
    for i in rng.sample(range(len(words)), max(1, int(len(words) * share))):
        words[i] = rng.choice(["lorem", "ipsum", "dolor", "amet", "vero", "eos"])
    return " ".join(words).replace("The ", "the ", 3)


def build_corpus(folder: Path, scale: int, seed: int = 0) -> dict:
    """Write the corpus as N_PARTS Parquet parts and one JSONL file (for datatrove); returns a summary."""
    from tasks.dedup.sidefiles import write_documents

    rng = random.Random(seed)
    docs: list[tuple[str, str]] = []
    truth: list[tuple[str, str, str]] = []  # (original, copy, kind)
    if ARTICLES.is_file():
        with open(ARTICLES, encoding="utf-8") as fh:
            docs += [tuple(line.rstrip("\n").split(" ", 1)) for line in fh if line.strip()]
        with open(ARTICLES.with_suffix(".truth"), encoding="utf-8") as fh:
            truth += [(*line.split(), "labelled article pair") for line in fh if line.strip()]
    cc: list[tuple[str, str]] = []
    if CC.is_file():
        with gzip.open(CC, "rt", encoding="utf-8") as fh:
            cc = [(d["id"], d["text"]) for d in map(json.loads, fh)]
    if not docs and not cc:
        raise SystemExit(
            f"no input data under {SHARED}: the benchmark needs ../shared/data beside the project"
        )
    # the shared footer goes on the originals, so copies inherit it
    docs = [(i, t + "\n" + FOOTER) if rng.random() < 0.2 else (i, t) for i, t in docs]
    cc = [(i, t + "\n" + FOOTER) if rng.random() < 0.2 else (i, t) for i, t in cc]
    docs += cc
    kinds = {"exact copy": 0, "near copy": 0, "half copy": 0}
    for round_ in range(scale):
        for doc_id, text in cc:
            r = rng.random()
            if r < 0.15:
                copy = (f"{doc_id}-copy{round_}", text)
                kind = "exact copy"
            elif r < 0.35:
                copy = (f"{doc_id}-near{round_}", _perturb_words(text, rng, 0.02))
                kind = "near copy"
            elif r < 0.50:
                paras = text.split("\n")
                fresh = " ".join(rng.choice(text.split() or ["x"]) for _ in range(60))
                copy = (f"{doc_id}-half{round_}", "\n".join(paras[: max(1, len(paras) // 2)] + [fresh]))
                kind = "half copy"
            else:
                continue
            docs.append(copy)
            truth.append((doc_id, copy[0], kind))
            kinds[kind] += 1
    rng.shuffle(docs)
    parts = []
    for k in range(N_PARTS):
        parts.append(str(write_documents(folder / "in" / f"part-{k:05d}.parquet", docs[k::N_PARTS])))
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for k in range(N_PARTS):  # the same corpus order as the parts
            for doc_id, text in docs[k::N_PARTS]:
                fh.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    return {
        "parts": parts,
        "jsonl": str(folder / "corpus.jsonl"),
        "docs": len(docs),
        "bytes": sum(len(t.encode()) for _, t in docs),
        "kinds": kinds,
        "truth": truth,
    }


# ---------------------------------------------------------------------------------------------------------
# removal per method


def _paths(work: Path, n: int) -> tuple[list[str], list[str], list[str]]:
    return (
        [str(work / "out" / f"part-{i:05d}.parquet") for i in range(n)],
        [str(work / "rejected" / f"part-{i:05d}.parquet") for i in range(n)],
        [str(work / "spans" / f"part-{i:05d}.parquet") for i in range(n)],
    )


def run_exact(parts, work, paragraphs=False):
    from tasks.dedup.exact import exact_dedup_local, summarize_exact
    from tasks.dedup.params import ExactDedupParams

    out, rej, spans = _paths(work, len(parts))
    res = exact_dedup_local(
        parts, out, rej, str(work / "tmp"), ExactDedupParams(paragraphs=paragraphs), spans
    )
    return out, summarize_exact(res)


def run_minhash(parts, work):
    from tasks.dedup.minhash import minhash_dedup_local, summarize_minhash
    from tasks.dedup.params import MinhashDedupParams

    out, rej, _ = _paths(work, len(parts))
    params = MinhashDedupParams()
    filtered, buckets, cluster = minhash_dedup_local(parts, out, rej, str(work / "tmp"), params)
    return out, summarize_minhash(filtered, buckets, cluster, params)


def run_bloom(parts, work):
    from tasks.dedup.bloom import bloom_dedup_parts, summarize_bloom
    from tasks.dedup.params import BloomDedupParams

    out, rej, spans = _paths(work, len(parts))
    params = BloomDedupParams(capacity=2_000_000)
    return out, summarize_bloom(bloom_dedup_parts(parts, out, rej, params, spans), params)


def run_suffix_array(parts, work):
    from tasks.dedup.params import SuffixArrayDedupParams
    from tasks.dedup.suffix_array import (
        plan_suffix_array_groups,
        suffix_array_dedup_group,
        summarize_suffix_array,
    )

    out, rej, spans = _paths(work, len(parts))
    params = SuffixArrayDedupParams()
    plan = plan_suffix_array_groups(parts, params)
    results = []
    for g in plan.groups:
        results += suffix_array_dedup_group(
            [parts[i] for i in g], g, [out[i] for i in g], [rej[i] for i in g], params, [spans[i] for i in g]
        )
    return out, summarize_suffix_array(results, plan)


def removal_table(corpus: dict, work: Path) -> list[tuple]:
    rows = []
    methods = [
        ("exact (documents)", lambda p, w: run_exact(p, w)),
        ("exact (+ paragraphs)", lambda p, w: run_exact(p, w, paragraphs=True)),
        ("minhash 14×8", run_minhash),
        ("bloom 13-grams", run_bloom),
        ("suffix array ≥100 B", run_suffix_array),
    ]
    for name, fn in methods:
        t0 = time.perf_counter()
        folder = work / name.split()[0] / str(len(rows))
        _, (counts, stats) = fn(corpus["parts"], folder)
        rows.append((name, counts, {**stats, "named": _named_survivors([folder])}, time.perf_counter() - t0))
    # the default chain: each method on the previous one's output
    parts = corpus["parts"]
    t0 = time.perf_counter()
    chain_counts = {}
    for name, fn in (("exact", run_exact), ("minhash", run_minhash), ("suffix", run_suffix_array)):
        parts, (counts, _) = fn(parts, work / "chain" / name)
        chain_counts[name] = counts
    final = dict(chain_counts["suffix"])
    final["in"] = chain_counts["exact"]["in"]
    final["bytes_in"] = chain_counts["exact"]["bytes_in"]
    for key in {k for c in chain_counts.values() for k in c if k.startswith("spans_removed_")}:
        final[key] = sum(c.get(key, 0) for c in chain_counts.values())
    named = _named_survivors([work / "chain" / n for n in chain_counts])
    rows.append(("chain exact→minhash→SA", final, {"named": named}, time.perf_counter() - t0))
    return rows


def _named_survivors(folders: list[Path]) -> float:
    """Share of removal records (rejected documents and cut spans) that name the document kept instead."""
    from storage.parquet import iter_rows

    total = named = 0
    for folder in folders:
        for sub in ("rejected", "spans"):
            for p in sorted((folder / sub).glob("*.parquet")):
                for r in iter_rows(p, ["duplicate_of"]):
                    total += 1
                    named += r["duplicate_of"] is not None
    return named / total if total else float("nan")


def _roots(dropped: dict[str, str]):
    """Follow `duplicate_of` links to the kept document (exact and MinHash survivors)."""

    def root(x: str) -> str:
        while x in dropped:
            x = dropped[x]
        return x

    return root


def print_quality(corpus: dict, work: Path) -> None:
    """Recall of exact dedup and MinHash on the corpus's known (original, copy) pairs, and what else MinHash took."""
    from storage.parquet import iter_rows
    from tasks.dedup.minhash import shingle_hashes

    def rejected(folder: Path) -> dict[str, str]:
        return {r["id"]: r["duplicate_of"] for p in sorted(folder.glob("*.parquet")) for r in iter_rows(p)}

    exact_root = _roots(rejected(work / "exact" / "0" / "rejected"))
    mh_dropped = rejected(work / "minhash" / "2" / "rejected")
    mh_root = _roots(mh_dropped)
    print(f"\n{'known pairs':<24} {'pairs':>6} {'exact found':>12} {'minhash found':>14}")
    known_parent: dict[str, str] = {}

    def known(x: str) -> str:
        while known_parent.get(x, x) != x:
            x = known_parent[x]
        return x

    for a, b, _ in corpus["truth"]:
        known_parent[known(a)] = known(b)
    for kind in ("labelled article pair", "exact copy", "near copy", "half copy"):
        pairs = [(a, b) for a, b, k in corpus["truth"] if k == kind]
        if pairs:
            ex = sum(exact_root(a) == exact_root(b) for a, b in pairs) / len(pairs)
            mh = sum(mh_root(a) == mh_root(b) for a, b in pairs) / len(pairs)
            print(f"{kind:<24} {len(pairs):>6} {ex:>12.1%} {mh:>14.1%}")
    print("(an exact copy MinHash misses is an empty document: no shingles, left to exact dedup)")
    other = [(d, s) for d, s in mh_dropped.items() if known(d) != known(s)]
    if other:
        texts = {r["id"]: r["text"] for p in corpus["parts"] for r in iter_rows(Path(p), ["id", "text"])}
        js = []
        for d, s in other:
            a, b = (set(shingle_hashes(texts[x], 5).tolist()) for x in (d, s))
            js.append(len(a & b) / len(a | b))
        high = sum(j >= 0.7 for j in js)
        print(
            f"MinHash also dropped {len(other)} documents that are no known copy: {high} have true Jaccard ≥ 0.7 "
            f"with their survivor (CC near-duplicates, short pages made alike by the shared footer), "
            f"{len(other) - high} joined a cluster through a third document (union-find chaining)"
        )


def print_removal(rows: list[tuple]) -> None:
    print(
        f"\n{'method':<26} {'docs in':>8} {'dropped':>8} {'drop %':>7} {'spans cut':>9} {'bytes removed %':>15} "
        f"{'survivor named':>14} {'s':>6}"
    )
    for name, c, stats, sec in rows:
        dropped = c["in"] - c["out"]
        spans = sum(v for k, v in c.items() if k.startswith("spans_removed_"))
        removed = 1 - c["bytes_out"] / c["bytes_in"] if c["bytes_in"] else 0
        print(
            f"{name:<26} {c['in']:>8,} {dropped:>8,} {dropped / c['in']:>7.1%} {spans:>9,} {removed:>15.1%} "
            f"{stats.get('named', float('nan')):>14.1%} {sec:>6.1f}"
        )
    print("(survivor named: removal records whose duplicate_of is set; Bloom's misses are false positives)")


def print_labelled_near_duplicates(work: Path, pairs: int) -> None:
    """MinHash recall per Jaccard band on near-duplicates made here, beside the S-curve at each pair's similarity."""
    from storage.parquet import iter_rows
    from tasks.dedup.evaluation import evaluate_pairs, make_labelled_corpus, pairs_from_duplicates
    from tasks.dedup.minhash import minhash_dedup_local
    from tasks.dedup.params import MinhashDedupParams
    from tasks.dedup.sidefiles import write_documents

    if not ARTICLES.is_file():
        print(f"\nlabelled near-duplicates: skipped ({ARTICLES} not found)")
        return
    labelled_ids = set(ARTICLES.with_suffix(".truth").read_text(encoding="utf-8").split())
    texts = [
        line.partition(" ")[2]
        for line in ARTICLES.read_text(encoding="utf-8").splitlines()
        if line.strip() and line.partition(" ")[0] not in labelled_ids
    ]
    corpus = make_labelled_corpus(texts, seed=5, pairs=min(pairs, len(texts) // 2), singles=100)
    kinds = sorted({k for p in corpus.pairs for k in p.edits})
    print(
        f"\nMinHash on {len(corpus.pairs)} labelled near-duplicate pairs + {corpus.singles} singles made from the "
        f"news articles (0–40 edits each: {', '.join(kinds)})"
    )
    for label, params in (
        ("14 × 8 (default)", MinhashDedupParams()),
        ("threshold 0.5", MinhashDedupParams(threshold=0.5)),
    ):
        folder = work / label.split()[0]
        ins = [
            str(write_documents(folder / "in" / f"part-{k:05d}.parquet", corpus.docs[k::3])) for k in range(3)
        ]
        out, rej, _ = _paths(folder, 3)
        minhash_dedup_local(ins, out, rej, str(folder / "tmp"), params)
        found = pairs_from_duplicates(
            (r["id"], r["duplicate_of"]) for p in rej for r in iter_rows(Path(p), ["id", "duplicate_of"])
        )
        ev = evaluate_pairs(corpus.pairs, found, params.bands, params.rows)
        print(f"{label}: {params.bands} bands × {params.rows} rows, midpoint {params.midpoint:.3f}")
        print("  " + ev.table().replace("\n", "\n  "))


# ---------------------------------------------------------------------------------------------------------
# MinHash throughput (each side in its own process, so each has its own peak RSS)


def worker_ours(corpus_dir: Path, work: Path) -> dict:
    from storage.parquet import parquet_files
    from tasks.dedup.minhash import minhash_dedup_local
    from tasks.dedup.params import MinhashDedupParams

    parts = [str(p) for p in parquet_files(corpus_dir / "in")]
    out, rej, _ = _paths(work, len(parts))
    t0 = time.perf_counter()
    filtered, _, _ = minhash_dedup_local(parts, out, rej, str(work / "tmp"), MinhashDedupParams())
    seconds = time.perf_counter() - t0
    docs = sum(r.docs_in for r in filtered)
    return {
        "docs": docs,
        "seconds": seconds,
        "removed": docs - sum(r.docs_out for r in filtered),
        "peak_mb": peak_rss_mb(),
    }


def worker_datatrove(corpus_dir: Path, work: Path) -> dict:
    import logging

    import datatrove.utils.hashes.xxhash as dt_xxhash
    import xxhash

    # datatrove 0.10 passes str to xxhash, which xxhash >= 4 rejects: encode first, same hash otherwise
    dt_xxhash.xxhash64 = lambda s: xxhash.xxh64_intdigest(s.encode("utf-8") if isinstance(s, str) else s)
    dt_xxhash.xxhash32 = lambda s: xxhash.xxh32_intdigest(s.encode("utf-8") if isinstance(s, str) else s)
    from loguru import logger

    logger.remove()
    logging.disable(logging.INFO)
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers.jsonl import JsonlWriter

    src = work / "src"
    src.mkdir(parents=True, exist_ok=True)
    os.link(corpus_dir / "corpus.jsonl", src / "corpus.jsonl")
    cfg = MinhashConfig()  # 5-grams, 14 buckets × 8 hashes, 64-bit xxhash: datatrove's defaults
    signature = MinhashDedupSignature(output_folder=str(work / "sigs"), config=cfg)
    signature.word_tokenizer.word_tokenize("warm up the tokenizer before the clock starts")
    t0 = time.perf_counter()
    steps = [
        ([JsonlReader(str(src)), signature], 1),
        (
            [
                MinhashDedupBuckets(
                    input_folder=str(work / "sigs"), output_folder=str(work / "buckets"), config=cfg
                )
            ],
            cfg.num_buckets,
        ),
        (
            [
                MinhashDedupCluster(
                    input_folder=str(work / "buckets"), output_folder=str(work / "remove"), config=cfg
                )
            ],
            1,
        ),
        (
            [
                JsonlReader(str(src)),
                MinhashDedupFilter(input_folder=str(work / "remove")),
                JsonlWriter(str(work / "out")),
            ],
            1,
        ),
    ]
    for k, (pipeline, tasks) in enumerate(steps):
        LocalPipelineExecutor(
            pipeline=pipeline, tasks=tasks, workers=1, logging_dir=str(work / f"logs{k}")
        ).run()
    seconds = time.perf_counter() - t0
    docs = sum(1 for _ in open(src / "corpus.jsonl", encoding="utf-8"))
    kept = 0
    for f in (work / "out").glob("*.jsonl.gz"):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            kept += sum(1 for _ in fh)
    return {"docs": docs, "seconds": seconds, "removed": docs - kept, "peak_mb": peak_rss_mb()}


def run_worker(kind: str, corpus_dir: Path) -> dict | str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = [sys.executable, __file__, "--worker", kind, "--corpus", str(corpus_dir)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["failed"])[-1]
        return last
    return json.loads(r.stdout.strip().splitlines()[-1])


def print_throughput(corpus: dict, ours: dict | str, theirs: dict | str) -> None:
    print(f"\nMinHash, one process on one core: {corpus['docs']:,} documents, {corpus['bytes'] / 1e6:.1f} MB")
    print(
        f"{'pipeline':<44} {'docs/s/core':>12} {'MB/s':>7} {'seconds':>8} {'removed':>8} {'peak RSS MB':>12}"
    )
    for name, r in (
        ("ours: signature+buckets+cluster+filter", ours),
        ("datatrove 0.10: the same four steps", theirs),
    ):
        if isinstance(r, str):
            print(f"{name:<44} {'—':>12}   ({r})")
            continue
        print(
            f"{name:<44} {r['docs'] / r['seconds']:>12,.0f} {corpus['bytes'] / 1e6 / r['seconds']:>7.2f} "
            f"{r['seconds']:>8.2f} {r['removed']:>8,} {r['peak_mb']:>12.0f}"
        )
    if isinstance(ours, dict) and isinstance(theirs, dict):
        print(
            f"speed-up: {theirs['seconds'] / ours['seconds']:.1f}× (datatrove's spaCy tokenizer loaded before timing)"
        )
    if isinstance(ours, dict):
        peer = theirs if isinstance(theirs, dict) else None
        summary.record("dedup MinHash (sig+buckets+cluster+filter)", "docs/s per core", ours["docs"] / ours["seconds"],
                       "datatrove MinHash, 4 steps", peer["docs"] / peer["seconds"] if peer else None,
                       peak_mb=ours["peak_mb"], peer_peak_mb=peer["peak_mb"] if peer else None)


def print_s_curve() -> None:
    from tasks.dedup.minhash import s_curve, similarity_at

    print("\nS-curve of 14 bands × 8 rows: P(candidate) = 1 − (1 − s^8)^14")
    pts = s_curve(14, 8)
    print("  Jaccard s    " + " ".join(f"{s:>6.2f}" for s, _ in pts))
    print("  P(candidate) " + " ".join(f"{p:>6.3f}" for _, p in pts))
    print(f"  50 % at s = {similarity_at(0.5, 14, 8):.3f}; 99 % at s = {similarity_at(0.99, 14, 8):.3f}")


# ---------------------------------------------------------------------------------------------------------
# suffix array and Bloom filter throughput


def suffix_array_speed(corpus: dict) -> list[tuple]:
    from storage.parquet import iter_rows
    from tasks.dedup.suffix_array import find_repeats

    texts = [r["text"].encode() for p in corpus["parts"] for r in iter_rows(Path(p), ["text"])]
    rows = []
    for label, data in (("corpus", texts),):
        mb = (sum(map(len, data)) + len(data)) / 1e6
        t0 = time.perf_counter()
        found = find_repeats(data, 100)
        total = time.perf_counter() - t0
        rows.append((label, mb, mb / found.sa_seconds, mb / found.lcp_seconds, mb / total))
    return rows


def bloom_speed(n: int) -> tuple[float, float, float]:
    from tasks.dedup.bloom import make_filter, measure_false_positive_rate
    from tasks.dedup.params import BloomDedupParams

    filt = make_filter(BloomDedupParams(capacity=n * 2))
    keys = [f"{random.getrandbits(64):x}" for _ in range(n)]
    t0 = time.perf_counter()
    for k in keys:
        filt.add(k)
    add_s = n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for k in keys:
        _ = k in filt
    check_s = n / (time.perf_counter() - t0)
    fp = measure_false_positive_rate(min(n, 50_000), 0.01, probes=min(n, 50_000)).rate
    return add_s, check_s, fp


# ---------------------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one round of perturbed copies (≤ 3 minutes)")
    ap.add_argument(
        "--scale", type=int, default=None, help="rounds of perturbed CC copies (default 1 quick, 4 full)"
    )
    ap.add_argument("--skip-datatrove", action="store_true")
    ap.add_argument("--worker", choices=["ours", "datatrove"], help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        with tempfile.TemporaryDirectory() as d:
            fn = worker_ours if args.worker == "ours" else worker_datatrove
            print(json.dumps(fn(args.corpus, Path(d))))
        return

    scale = args.scale if args.scale is not None else (1 if args.quick else 4)
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        corpus = build_corpus(folder, scale)
        kinds = ", ".join(f"{v} {k}" for k, v in corpus["kinds"].items())
        print(
            f"corpus: {corpus['docs']:,} documents, {corpus['bytes'] / 1e6:.1f} MB in {N_PARTS} parts ({kinds}; 20 % with a shared footer)"
        )

        removal = removal_table(corpus, folder / "methods")
        print_removal(removal)
        print_quality(corpus, folder / "methods")
        print_labelled_near_duplicates(folder / "labelled", 300 if args.quick else 450)

        ours = run_worker("ours", folder)
        if args.skip_datatrove:
            theirs: dict | str = "skipped (--skip-datatrove)"
        else:
            try:
                import datatrove  # noqa: F401

                theirs = run_worker("datatrove", folder)
            except ImportError:
                theirs = "datatrove not installed: pip install datatrove"
        print_throughput(corpus, ours, theirs)
        print_s_curve()

        print(
            f"\n{'suffix array (pydivsufsort)':<28} {'MB':>7} {'SA MB/s':>9} {'pairs MB/s':>10} {'all MB/s':>9}"
        )
        speeds = suffix_array_speed(corpus)
        for label, mb, sa, lcp, total in speeds:
            print(f"{label:<28} {mb:>7.1f} {sa:>9.1f} {lcp:>10.1f} {total:>9.1f}")
        summary.record("dedup suffix array (SA+pairs+repeats)", "MB/s per core", speeds[-1][4])

        n = 100_000 if args.quick else 500_000
        add_s, check_s, fp = bloom_speed(n)
        print(
            f"\nBloom filter (pybloom-live, fp 0.01): {add_s:,.0f} check-and-insert/s, {check_s:,.0f} checks/s; "
            f"measured false-positive rate at capacity {fp:.4f}"
        )
        summary.record("dedup Bloom filter", "checks/s per core", check_s)
        bloom_row = next(r for r in removal if r[0].startswith("bloom"))
        print(
            f"Bloom sub-stage end to end (13-gram hashing, filter, survivor index, Parquet in/out): "
            f"{bloom_row[2]['checks'] / bloom_row[3]:,.0f} checks/s over {bloom_row[2]['checks']:,} n-grams"
        )


if __name__ == "__main__":
    main()
