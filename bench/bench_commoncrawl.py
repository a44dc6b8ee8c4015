"""Throughput and memory of the Common Crawl readers (tasks/commoncrawl.py), printed as three tables.

1. Each reader (WET records → documents; WARC responses → main text with Resiliparse) on the real files in
   ../shared/data/commoncrawl and on the project's examples, beside FastWARC alone on the same file (every
   record's payload read, nothing decoded or extracted): the difference is the cost of our HTTP decoding,
   charset detection and HTML extraction.
2. WARC → text against warcio + trafilatura on the same WARC files: the stack datatrove's WarcReader and
   Trafilatura extractor use (`trafilatura.extract(html, favor_precision=True, include_comments=False,
   deduplicate=True)`, on 200 responses with an HTML content type). Issue 3 aims at ≥ 5× their pages/s.
3. Peak memory of the ingest stage's shard function (`tasks.ingest.ingest_file`, one process, files in turn, as
   one worker runs them) on inputs made by repeating the shared files: one WARC.gz, one JSONL.gz (the shared
   raw WET texts) and a folder of WhatsApp exports, at 1/8 of --memory-gb and at --memory-gb (default 1 GB
   each). Each run is a fresh process; its peak RSS (VmHWM) is shown beside its RSS once everything is
   imported. The aim: flat (the same at both sizes) and under 1 GB.

Times are CPU seconds of this process (or of the child process), so other load on a shared machine does not skew
them. Run from the project root:

    .venv/bin/python bench/bench_commoncrawl.py [--seconds 1.5] [--memory-gb 1] [--quick]

warcio and trafilatura come with `pip install -e '.[bench]'`; without them table 2 says so and is skipped.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from fastwarc.warc import ArchiveIterator  # noqa: E402

from tasks.commoncrawl import iter_warc_documents, iter_wet_documents  # noqa: E402
from tasks.records import SkipCounter  # noqa: E402

try:  # bench/summary.py collects headline figures when bench/run_all.py runs this script
    import summary  # noqa: E402
except ImportError:  # pragma: no cover - running without the summary helper
    summary = None

SHARED = ROOT.parent / "shared" / "data"
SHARED_CC = SHARED / "commoncrawl"
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
# real crawls of real pages, for the comparison with warcio + trafilatura
COMPARED = [
    SHARED_CC / "resiliparse_warcfile.warc.gz",
    SHARED_CC / "dolma_sample-0000.warc.gz",
    SHARED_CC / "whirlwind-python_whirlwind.warc.gz",
]
AIM_SPEEDUP = 5.0
AIM_PEAK_MB = 1024.0

# what the memory table repeats
WARC_PARTS = [
    SHARED_CC / "whirlwind-python_whirlwind.warc.gz",
    SHARED_CC / "resiliparse_warcfile.warc.gz",
    SHARED_CC / "dolma_sample-0000.warc.gz",
    SHARED_CC / "warcio_example.warc.gz",
]
JSONL_PART = SHARED_CC / "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
WHATSAPP_DIR = SHARED / "whatsapp"
WHATSAPP_FILE_MB = 8.0  # a long chat's export; WhatsApp caps an export at some 40,000 messages


# ------------------------------------------------------------------------------------------- table 1


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


def readers_table(budget: float) -> None:
    header = (
        f"{'file':<42} {'kind':<4} {'MB':>6} {'docs':>5} {'runs':>5} {'docs/s':>8} {'MB/s':>7} {'text MB/s':>9}"
        f" | {'FastWARC only: rec/s':>20} {'MB/s':>7}"
    )
    print(f"\n1. Common Crawl readers, one process, CPU time (MB = file size on disk)\n{header}\n{'-' * len(header)}")
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


# ------------------------------------------------------------------------------------------- table 2


def warcio_trafilatura(path: Path) -> tuple[int, int]:
    """HTML pages read and pages given a text, the way datatrove reads a WARC file and extracts its pages."""
    import trafilatura
    from warcio.archiveiterator import ArchiveIterator as WarcioIterator

    # trafilatura remembers the paragraphs it saw (deduplicate=True): a file read again would find them all
    # seen and be cut short, so every run starts with an empty memory, as the first pass over a crawl does
    seen = getattr(__import__("trafilatura.deduplication").deduplication, "LRU_TEST", None)
    if seen is not None:
        seen.clear()
    pages = with_text = 0
    with open(path, "rb") as fh:
        for record in WarcioIterator(fh):
            if record.rec_type != "response" or record.http_headers is None:
                continue
            if record.http_headers.get_statuscode() != "200":
                continue
            content_type = (record.http_headers.get_header("Content-Type") or "").lower()
            if "html" not in content_type:
                continue
            body = record.content_stream().read()
            charset = content_type.partition("charset=")[2].split(";")[0].strip() or "utf-8"
            try:
                html = body.decode(charset, errors="replace")
            except LookupError:
                html = body.decode("utf-8", errors="replace")
            text = trafilatura.extract(html, favor_precision=True, include_comments=False, deduplicate=True)
            pages += 1
            with_text += bool(text)
    return pages, with_text


def comparison_table(budget: float) -> None:
    print("\n2. WARC → main text, same files, one process, CPU time: ours (FastWARC + Resiliparse) vs warcio + "
          "trafilatura\n   (pages = HTML pages with status 200 read and extracted; speed-up = ratio of the times)")
    try:
        import trafilatura  # noqa: F401
        import warcio  # noqa: F401
    except ImportError as e:
        print(f"   skipped: {e.name} is not installed (.venv/bin/pip install -e '.[bench]')")
        return
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    header = (
        f"{'file':<36} {'ours: pages':>11} {'pages/s':>9} | {'warcio+trafilatura: pages (with text)':>37}"
        f" {'pages/s':>9} | {'speed-up':>8}  aim ≥ {AIM_SPEEDUP:g}×"
    )
    print(f"{header}\n{'-' * len(header)}")
    total_ours = total_peer = 0.0
    pages_ours = pages_peer = 0
    for path in COMPARED:
        if not path.is_file():
            print(f"{path.name:<36} skipped: not found ({path.parent})")
            continue
        ours_s, _, (ours_pages, _) = timed(lambda p=path: documents(iter_warc_documents, p), budget)
        peer_s, _, (peer_pages, peer_texts) = timed(lambda p=path: warcio_trafilatura(p), budget)
        total_ours += ours_s
        total_peer += peer_s
        pages_ours += ours_pages
        pages_peer += peer_pages
        speedup = peer_s / ours_s  # same file, same records: the ratio of the times
        print(
            f"{path.name:<36} {ours_pages:>11} {ours_pages / ours_s:>9.0f} | {f'{peer_pages} ({peer_texts})':>37} "
            f"{peer_pages / peer_s:>9.0f} | {speedup:>7.1f}×  {'met' if speedup >= AIM_SPEEDUP else 'not met'}"
        )
    if total_ours:
        speedup = total_peer / total_ours
        print(
            f"{'all three files':<36} {pages_ours:>11} {pages_ours / total_ours:>9.0f} | {pages_peer:>37} "
            f"{pages_peer / total_peer:>9.0f} | {speedup:>7.1f}×  {'met' if speedup >= AIM_SPEEDUP else 'not met'}"
        )
        if summary is not None:
            summary.record(
                "ingest: WARC → text", "pages/s per core", pages_ours / total_ours, "warcio + trafilatura",
                pages_peer / total_peer,
            )


# ------------------------------------------------------------------------------------------- table 3


def repeat_into(parts: list[Path], out: Path, target_bytes: int) -> None:
    """`out` = the parts one after the other, again and again, until it holds at least `target_bytes`.
    Gzip members and WARC records may follow each other, so the result is a valid file of the same kind."""
    blob = b"".join(p.read_bytes() for p in parts)
    with open(out, "wb") as fh:
        written = 0
        while written < target_bytes:
            fh.write(blob)
            written += len(blob)


def whatsapp_folder(out: Path, target_bytes: int) -> None:
    """Exports of about WHATSAPP_FILE_MB each, every one the shared exports one after the other, repeated."""
    exports = sorted(p for p in WHATSAPP_DIR.glob("*.txt"))
    blob = b"".join(p.read_bytes().removeprefix(b"\xef\xbb\xbf").rstrip(b"\r\n") + b"\n" for p in exports)
    per_file = max(1, int(WHATSAPP_FILE_MB * 1e6 // len(blob)))
    out.mkdir()
    written, n = 0, 0
    while written < target_bytes:
        data = blob * per_file
        (out / f"WhatsApp Chat {n:04d}.txt").write_bytes(data)
        written += len(data)
        n += 1


def vm_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def ingest_child(kind: str, paths: list[str]) -> None:
    """Runs in a fresh process: ingest every file in turn, print a JSON line with what it saw and its memory."""
    from tasks.ingest import InputFile, ingest_file
    from tasks.params import IngestParams

    logging.disable(logging.WARNING)
    base_mb = vm_kb("VmRSS") / 1024  # everything imported, nothing read
    params = IngestParams()
    docs = messages = 0
    start = time.process_time()
    with tempfile.TemporaryDirectory() as out:
        for i, path in enumerate(paths):
            f = InputFile(path=path, kind=kind, source=kind, sha256="0" * 64)
            part = os.path.join(out, f"part-{i:05d}.parquet")
            msgs = os.path.join(out, f"messages-{i:05d}.parquet") if kind == "whatsapp" else None
            result = ingest_file(f, part, msgs, params)
            if result.info["error"]:
                raise SystemExit(f"{path}: {result.info['error']}")
            docs += result.docs_out
            messages += result.extra["messages"]
            for name in (part, msgs):  # keep the disk footprint small too
                if name and os.path.exists(name):
                    os.remove(name)
    seconds = time.process_time() - start
    print(json.dumps({"docs": docs, "messages": messages, "seconds": seconds, "base_mb": base_mb,
                      "peak_mb": vm_kb("VmHWM") / 1024}))


def measure_ingest(kind: str, paths: list[Path]) -> dict:
    cmd = [sys.executable, __file__, "--ingest-child", kind, *map(str, paths)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ingest of {kind} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def memory_table(target_gb: float) -> None:
    missing = [p for p in [*WARC_PARTS, JSONL_PART, WHATSAPP_DIR] if not p.exists()]
    print(f"\n3. Peak memory of ingest_file on inputs made by repeating the shared files (fresh process per run, "
          f"aim: flat and < {AIM_PEAK_MB:,.0f} MB)")
    if missing:
        print(f"   skipped: shared data not found ({', '.join(map(str, missing))})")
        return
    header = (
        f"{'input':<44} {'MB':>7} {'files':>5} {'docs':>9} {'messages':>10} {'CPU s':>7} {'MB/s':>6}"
        f" {'RSS after imports':>17} {'peak RSS MB':>11}  aim"
    )
    print(f"{header}\n{'-' * len(header)}")
    sizes = [target_gb / 8, target_gb]
    peaks: dict[str, list[float]] = {}
    for kind, label in (("warc", "WARC.gz (shared WARC files)"), ("jsonl", "JSONL.gz (shared raw WET texts)"),
                        ("whatsapp", "WhatsApp exports (shared exports)")):
        for gb in sizes:
            target = int(gb * 1e9)
            with tempfile.TemporaryDirectory(dir=os.environ.get("CHATLIKE_BENCH_TMP")) as tmp:
                if kind == "warc":
                    paths = [Path(tmp) / "repeated.warc.gz"]
                    repeat_into(WARC_PARTS, paths[0], target)
                elif kind == "jsonl":
                    paths = [Path(tmp) / "repeated.jsonl.gz"]
                    repeat_into([JSONL_PART], paths[0], target)
                else:
                    whatsapp_folder(Path(tmp) / "exports", target)
                    paths = sorted((Path(tmp) / "exports").iterdir())
                mb = sum(p.stat().st_size for p in paths) / 1e6
                r = measure_ingest(kind, paths)
                shutil.rmtree(tmp, ignore_errors=True)
            peaks.setdefault(kind, []).append(r["peak_mb"])
            verdict = ""
            if gb == sizes[-1]:
                small, big = peaks[kind]
                flat = big <= small * 1.25 + 64
                verdict = ("flat" if flat else "grows") + (", under 1 GB" if big < AIM_PEAK_MB else ", over 1 GB")
                if summary is not None:
                    summary.record(f"ingest peak RSS: {kind}", f"MB, {mb / 1e3:.1f} GB input", big,
                                   note=verdict, peak_mb=big)
            print(
                f"{label:<44} {mb:>7.0f} {len(paths):>5} {r['docs']:>9,} {r['messages']:>10,} {r['seconds']:>7.1f}"
                f" {mb / r['seconds']:>6.1f} {r['base_mb']:>17.0f} {r['peak_mb']:>11.0f}  {verdict}"
            )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--ingest-child":
        ingest_child(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="CPU seconds per file and reader (default 1.5)")
    parser.add_argument("--memory-gb", type=float, default=1.0,
                        help="size of each input of the memory table, in GB (default 1; 0 skips the table)")
    parser.add_argument("--quick", action="store_true", help="0.3 s per file and reader, 64 MB memory inputs")
    args = parser.parse_args()
    budget = 0.3 if args.quick else args.seconds
    memory_gb = min(args.memory_gb, 0.064) if args.quick else args.memory_gb
    logging.disable(logging.WARNING)  # skipped records are expected here; their log lines would drown the table

    readers_table(budget)
    comparison_table(budget)
    if memory_gb > 0:
        memory_table(memory_gb)


if __name__ == "__main__":
    main()
