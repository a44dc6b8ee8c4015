"""Storage throughput: our streaming ParquetShardWriter/reader against one-shot pyarrow on the same rows.

Prints rows/s, MB/s and peak memory growth. The point of streaming is bounded memory at a similar speed.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import summary  # noqa: E402  (headline figures for bench/run_all.py)

from storage.parquet import ParquetShardWriter, iter_batches  # noqa: E402
from storage.schemas import DOCUMENT_SCHEMA  # noqa: E402

WORDS = "the harbour ferry leaves at seven and the quay is busy with fishermen carrying crates of ice".split()


def rows(n: int):
    for i in range(n):
        k = 20 + i % 200
        yield {
            "id": f"{i:012d}",
            "text": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(k)),
            "source": "text",
            "url": f"https://example.org/{i}",
            "timestamp": None,
            "meta": None,
        }


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n = 100_000 if args.quick else 1_000_000
    text_mb = sum(len(r["text"]) for r in rows(n)) / 1e6
    results = []
    with tempfile.TemporaryDirectory() as d:
        base = peak_mb()
        t0 = time.perf_counter()
        with ParquetShardWriter(Path(d) / "ours.parquet", DOCUMENT_SCHEMA) as w:
            w.write_rows(rows(n))
        t_ours = time.perf_counter() - t0
        mem_ours = peak_mb() - base

        t0 = time.perf_counter()
        seen = sum(b.num_rows for b in iter_batches(Path(d) / "ours.parquet"))
        t_read = time.perf_counter() - t0
        assert seen == n

        base = peak_mb()
        t0 = time.perf_counter()
        table = pa.Table.from_pylist(list(rows(n)), schema=DOCUMENT_SCHEMA)
        pq.write_table(table, Path(d) / "plain.parquet", compression="zstd")
        t_plain = time.perf_counter() - t0
        mem_plain = peak_mb() - base
        size_ours = (Path(d) / "ours.parquet").stat().st_size / 1e6

    results.append(("write: ParquetShardWriter (streaming)", n / t_ours, text_mb / t_ours, mem_ours))
    results.append(("write: pa.Table.from_pylist + write_table", n / t_plain, text_mb / t_plain, mem_plain))
    results.append(("read: iter_batches", n / t_read, text_mb / t_read, float("nan")))
    print(f"{n:,} documents, {text_mb:,.1f} MB of text, {size_ours:,.1f} MB on disk (zstd)")
    print(f"{'operation':<45} {'rows/s':>12} {'MB/s':>8} {'peak RSS growth MB':>20}")
    for name, rps, mbs, mem in results:
        print(f"{name:<45} {rps:>12,.0f} {mbs:>8.1f} {mem:>20.1f}")
    summary.record("storage: Parquet shard write", "rows/s", n / t_ours, "pyarrow one-shot write_table",
                   n / t_plain, peak_mb=mem_ours, peer_peak_mb=mem_plain, note="peak = RSS growth")


if __name__ == "__main__":
    main()
