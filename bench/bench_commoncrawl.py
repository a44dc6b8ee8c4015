"""Throughput of the Common Crawl readers (tasks/commoncrawl.py): WET records → documents and WARC responses →
main text with Resiliparse, on the real files in ../shared/data/commoncrawl and on the project's examples.

Each file is read repeatedly until about `--seconds` of CPU time has passed. Beside each reader, the same file is
iterated with FastWARC alone (every record's payload read, nothing decoded or extracted): the difference is the
cost of our HTTP decoding, charset detection and HTML extraction. Times are CPU seconds of this process, so other
load on a shared machine does not skew them.

Run from the project root: `python bench/bench_commoncrawl.py [--seconds 1.5] [--quick]`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastwarc.warc import ArchiveIterator  # noqa: E402

from tasks.commoncrawl import iter_warc_documents, iter_wet_documents  # noqa: E402
from tasks.records import SkipCounter  # noqa: E402

SHARED_CC = ROOT / ".." / "shared" / "data" / "commoncrawl"
EXAMPLES = ROOT / "examples" / "commoncrawl"

FILES = [
    ("wet", SHARED_CC / "whirlwind-python_whirlwind.warc.wet.gz"),
    ("wet", EXAMPLES / "sample.wet.gz"),
    ("warc", SHARED_CC / "whirlwind-python_whirlwind.warc.gz"),
    ("warc", SHARED_CC / "resiliparse_warcfile.warc.gz"),
    ("warc", SHARED_CC / "dolma_sample-0000.warc.gz"),
    ("warc", SHARED_CC / "warcio_example-iana.org-chunked.warc"),
    ("warc", EXAMPLES / "sample.warc.gz"),
]


def fastwarc_only(path: Path) -> tuple[int, int]:
    """Records read and payload bytes, with FastWARC alone."""
    records = payload = 0
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh, parse_http=True, auto_decode="none"):
            payload += len(record.reader.read())
            records += 1
    return records, payload


def documents(reader: Callable, path: Path) -> tuple[int, int]:
    """Documents yielded and characters of text."""
    docs = chars = 0
    for doc in reader(path, SkipCounter()):
        docs += 1
        chars += len(doc.text)
    return docs, chars


def timed(fn: Callable[[], tuple[int, int]], budget: float) -> tuple[float, int, tuple[int, int]]:
    """Runs fn until `budget` CPU seconds have passed (at least once); seconds per run, runs, fn's result."""
    runs = 0
    start = time.process_time()
    while True:
        result = fn()
        runs += 1
        elapsed = time.process_time() - start
        if elapsed >= budget:
            return elapsed / runs, runs, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="CPU seconds per file and reader (default 1.5)")
    parser.add_argument("--quick", action="store_true", help="0.3 s per file and reader")
    args = parser.parse_args()
    budget = 0.3 if args.quick else args.seconds
    logging.disable(logging.WARNING)  # skipped records are expected here; their log lines would drown the table

    header = (
        f"{'file':<42} {'kind':<4} {'MB':>6} {'docs':>5} {'runs':>5} {'docs/s':>8} {'MB/s':>7} {'text MB/s':>9}"
        f" | {'FastWARC only: rec/s':>20} {'MB/s':>7}"
    )
    print(f"\nCommon Crawl readers, one process, CPU time (MB = file size on disk)\n{header}\n{'-' * len(header)}")
    for kind, path in FILES:
        if not path.is_file():
            print(f"{path.name:<42} skipped: not found ({path.parent})")
            continue
        reader = iter_wet_documents if kind == "wet" else iter_warc_documents
        mb = path.stat().st_size / 1e6
        seconds, runs, (docs, chars) = timed(lambda r=reader, p=path: documents(r, p), budget)
        base_seconds, _, (records, _) = timed(lambda p=path: fastwarc_only(p), budget)
        print(
            f"{path.name:<42} {kind:<4} {mb:>6.3f} {docs:>5} {runs:>5} {docs / seconds:>8.0f} {mb / seconds:>7.2f}"
            f" {chars / 1e6 / seconds:>9.2f} | {records / base_seconds:>20.0f} {mb / base_seconds:>7.1f}"
        )


if __name__ == "__main__":
    main()
