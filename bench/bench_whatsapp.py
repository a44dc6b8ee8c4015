"""Throughput of the WhatsApp parser on a large synthetic export (default about 50 MB), printed as a table.

    .venv/bin/python bench/bench_whatsapp.py [--mb 50] [--formats android ios] [--quick] [--repeat 3]

The export is generated in a temporary directory (word salad of small talk, 10 % multi-line messages, sessions
of ~50 messages, media, deleted, edited and system lines, two authors plus a phone number). Beside the parser,
the table shows the floor any parser pays — reading, decoding and splitting the file into lines — so the cost of
the parsing itself is visible, and the aim of issue 3 (≥ 200,000 messages/s per core) beside the parser's rate.

Times are CPU seconds of this process (best of --repeat runs): the parser is single-threaded, so that is its
cost on one core, whatever else the machine is running. The last column is the peak RSS of this process after
the step (it reads the whole export at once: the date order is decided from every date of the file).
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tasks.whatsapp import chat_to_documents, parse_whatsapp_export  # noqa: E402

try:  # bench/summary.py collects headline figures when bench/run_all.py runs this script
    import summary  # noqa: E402
except ImportError:  # pragma: no cover - running without the summary helper
    summary = None

WORDS = (
    "ok see you later tonight tomorrow haha yes no maybe coffee lunch dinner the a to and is it was really "
    "good nice cool thanks sorry where when what train bus late early home work weekend hike film book "
    "soup cake call me now leaving there here almost done great idea sounds perfect 🙂 😂 👍"
).split()
AUTHORS = ("Sam", "Priya Raman", "+44 7700 900123")
SPECIAL = (
    (0.05, "<Media omitted>"),
    (0.01, "This message was deleted"),
    (0.01, "{text} <This message was edited>"),
)


def header(layout: str, when: datetime) -> str:
    if layout == "ios":
        return when.strftime("[%d/%m/%Y, %H:%M:%S] ")
    return when.strftime("%d/%m/%Y, %H:%M - ")


def generate(path: Path, target_bytes: int, layout: str, seed: int = 0) -> None:
    rng = random.Random(seed)
    when = datetime(2021, 1, 1, 8, 0)
    written = 0
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write(header(layout, when) + "Messages and calls are end-to-end encrypted. Learn more.\n")
        while written < target_bytes:
            lines = []
            for _ in range(1000):
                when += timedelta(seconds=rng.randint(5, 3600))
                if rng.random() < 0.02:  # a night or a quiet day: a new conversation session
                    when += timedelta(hours=rng.randint(7, 30))
                text = " ".join(rng.choices(WORDS, k=rng.randint(2, 18)))
                roll = rng.random()
                for p, template in SPECIAL:
                    if roll < p:
                        text = template.format(text=text)
                        break
                    roll -= p
                if rng.random() < 0.10:
                    text += "\n" + " ".join(rng.choices(WORDS, k=rng.randint(2, 12)))
                if rng.random() < 0.005:
                    lines.append(header(layout, when) + "Sam added Priya Raman\n")
                    continue
                lines.append(f"{header(layout, when)}{rng.choice(AUTHORS)}: {text}\n")
            block = "".join(lines)
            out.write(block)
            written += len(block.encode("utf-8"))


def read_and_split(path: Path) -> int:
    text = path.read_bytes().decode("utf-8")
    return len(text.split("\n"))


AIM_MESSAGES_PER_S = 200_000


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(repeat: int, fn, *args, **kwargs):
    """(result, best CPU seconds of `repeat` calls)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        result = None  # the previous result would weigh on the garbage collector
        start = time.process_time()
        result = fn(*args, **kwargs)
        best = min(best, time.process_time() - start)
    return result, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of each synthetic export in MB")
    parser.add_argument("--formats", nargs="+", default=["android", "ios"], choices=["android", "ios"])
    parser.add_argument("--quick", action="store_true", help="5 MB per export (what bench/run_all.py runs)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per step; the best is shown")
    args = parser.parse_args()
    if args.quick:
        args.mb = min(args.mb, 5.0)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layout in args.formats:
            path = Path(tmp) / f"synthetic_{layout}.txt"
            generate(path, int(args.mb * 1e6), layout)
            mb = path.stat().st_size / 1e6
            _, floor = timed(args.repeat, read_and_split, path)
            chat, parse = timed(args.repeat, parse_whatsapp_export, path)
            docs, to_docs = timed(args.repeat, chat_to_documents, chat)
            n = len(chat.messages)
            aim = f"≥ {AIM_MESSAGES_PER_S:,}: " + ("met" if n / parse >= AIM_MESSAGES_PER_S else "not met")
            peak = peak_rss_mb()
            rows.append((f"{layout}: read + decode + split lines (floor)", mb, n, floor, None, ""))
            rows.append((f"{layout}: parse_whatsapp_export", mb, n, parse, peak, aim))
            rows.append((f"{layout}: chat_to_documents ({len(docs)} docs)", mb, n, to_docs, None, ""))
            rows.append((f"{layout}: parse + documents", mb, n, parse + to_docs, None, ""))
            if summary is not None:
                summary.record(f"whatsapp parse ({layout})", "messages/s per core", n / parse,
                               "reading + splitting lines", n / floor, peak_mb=peak)
            del chat, docs

    print(
        f"\n{'step':<48} {'MB':>7} {'messages':>10} {'CPU s':>7} {'messages/s':>12} {'MB/s':>7} {'peak RSS MB':>11}"
        "  aim (messages/s)"
    )
    print("-" * 128)
    for name, mb, n, seconds, peak, aim in rows:
        peak_text = f"{peak:>11,.0f}" if peak is not None else " " * 11
        print(
            f"{name:<48} {mb:>7.1f} {n:>10,} {seconds:>7.2f} {n / seconds:>12,.0f} {mb / seconds:>7.1f} {peak_text}"
            f"  {aim}"
        )


if __name__ == "__main__":
    main()
