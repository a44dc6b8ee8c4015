"""Throughput of `clean_text` (tasks/cleaning/) on ~20 MB per corpus: Shakespeare speeches (prose with few
matches), raw Common Crawl WET text (web prose) and synthetic WhatsApp-like conversations (many matches). Each
corpus is cleaned with all rules and, for comparison, with the three character rules alone (control characters,
NFC, whitespace: the cost of any cleaning at all), beside the aim of issue 3 (≥ 10 MB/s per core with all rules).
A second table times each rule alone on the chat corpus.

Times are CPU seconds of this process (time.process_time), so other load on a shared machine does not skew them.
Run from the project root: `python bench/bench_cleaning.py [--mb 20] [--quick]`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from tasks.cleaning import RULES, CleanRules, clean_text  # noqa: E402

try:  # bench/summary.py collects headline figures when bench/run_all.py runs this script
    import summary  # noqa: E402
except ImportError:  # pragma: no cover - running without the summary helper
    summary = None

AIM_MB_PER_S = 10.0

SHARED = ROOT / ".." / "shared" / "data"
SHAKESPEARE = SHARED / "text" / "char-rnn_tinyshakespeare_input.txt"
WET_JSONL = SHARED / "commoncrawl" / "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"

CHARACTER_RULES = CleanRules(**{name: name in ("control_chars", "unicode_nfc", "whitespace") for name, _ in RULES})


def repeat_to(docs: list[str], megabytes: float) -> list[str]:
    """The documents cycled until they hold about `megabytes` of UTF-8."""
    target = megabytes * 1e6
    out: list[str] = []
    size = 0
    while size < target:
        for doc in docs:
            out.append(doc)
            size += len(doc.encode("utf-8"))
            if size >= target:
                break
    return out


def shakespeare_docs() -> list[str] | None:
    if not SHAKESPEARE.is_file():
        return None
    return [p for p in SHAKESPEARE.read_text(encoding="utf-8").split("\n\n") if p.strip()]


def web_docs() -> list[str] | None:
    if not WET_JSONL.is_file():
        return None
    with gzip.open(WET_JSONL, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


NAMES = ["Amina", "Youssef", "Léa", "Tom", "Sara Benali", "Marc", "+212 6 61 23 45 67", "Nadia"]
PLAIN = [
    "ok see you at 8", "on arrive dans 10 minutes", "did you get the tickets?", "wach nta f dar?",
    "haha yes 😂😂", "je peux pas ce soir, demain ?", "the meeting moved to 14:30 on 12/05",
    "it was 12,50 € for both, not bad", "bon appétit 👨‍👩‍👧", "call me when you're free",
    "i'll bring the charger and the cables", "mdr t'as vu ça ?", "Happy birthday!!! 🎉🎂",
]
SPECIAL = [
    "<Media omitted>", "‹Médias omis›", "IMG-20240105-WA0012.jpg (file attached)", "This message was deleted",
    "Ce message a été supprimé", "see https://maps.example.com/place/123 ok", "write to me: amina@example.ma",
    "my new number is +33 6 12 34 56 78", "appelle le 06 12 34 56 78", "@\u2068Léa Martin\u2069 tu viens ?",
    "@Tom check www.example.org", "typo fixed <This message was edited>", "\u200eimage omitted",
]
SYSTEM = [
    "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read or "
    "listen to them. Tap to learn more.",
    "Amina added Tom", "Tom left", 'Youssef changed the subject from "Trip" to "Trip 2024"', "Léa a ajouté Marc",
]


def chat_docs(seed: int = 0, conversations: int = 2000) -> list[str]:
    """Synthetic conversations in export form ("12/05/2024, 14:30 - Name: text"), deterministic."""
    rng = random.Random(seed)
    docs = []
    for c in range(conversations):
        lines = []
        for i in range(rng.randint(20, 80)):
            stamp = f"{1 + c % 28:02d}/05/2024, {8 + i // 12:02d}:{(i * 5) % 60:02d} - "
            roll = rng.random()
            if roll < 0.03:
                lines.append(stamp + rng.choice(SYSTEM))
            elif roll < 0.18:
                lines.append(f"{stamp}{rng.choice(NAMES)}: {rng.choice(SPECIAL)}")
            else:
                lines.append(f"{stamp}{rng.choice(NAMES)}: {rng.choice(PLAIN)}")
        docs.append("\n".join(lines))
    return docs


def clean_all(docs: list[str], rules: CleanRules) -> tuple[float, int, Counter]:
    changed = 0
    fired: Counter = Counter()
    start = time.process_time()
    for doc in docs:
        out, counts = clean_text(doc, rules)
        if out != doc:
            changed += 1
        fired.update(counts)
    return time.process_time() - start, changed, fired


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0, help="megabytes of text per corpus (default 20)")
    parser.add_argument("--quick", action="store_true", help="2 MB per corpus")
    args = parser.parse_args()
    megabytes = 2.0 if args.quick else args.mb

    corpora: dict[str, list[str]] = {}
    for name, load in (("shakespeare", shakespeare_docs), ("web (CC WET)", web_docs), ("chat", chat_docs)):
        docs = load()
        if docs is None:
            print(f"{name}: skipped, shared data not found under {SHARED}")
            continue
        corpora[name] = repeat_to(docs, megabytes)

    print(f"\nclean_text, one process, {megabytes:g} MB per corpus, CPU time")
    header = f"{'corpus':<14} {'docs':>8} {'MB':>6} {'all rules s':>11} {'MB/s':>7} {'docs/s':>9} " \
             f"{'changed':>8} | {'char rules MB/s':>15} {'docs/s':>9} | aim ≥ {AIM_MB_PER_S:g} MB/s"
    print(header)
    print("-" * len(header))
    chat_fired: Counter = Counter()
    for name, docs in corpora.items():
        mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
        seconds, changed, fired = clean_all(docs, CleanRules())
        base_seconds, _, _ = clean_all(docs, CHARACTER_RULES)
        if name == "chat":
            chat_fired = fired
        met = "met" if mb / seconds >= AIM_MB_PER_S else "not met"
        print(
            f"{name:<14} {len(docs):>8} {mb:>6.1f} {seconds:>11.2f} {mb / seconds:>7.1f} {len(docs) / seconds:>9.0f} "
            f"{changed / len(docs):>7.0%} | {mb / base_seconds:>15.1f} {len(docs) / base_seconds:>9.0f} | {met}"
        )
        if summary is not None:
            summary.record(f"clean ({name})", "MB/s per core", mb / seconds, "character rules only",
                           mb / base_seconds)

    if "chat" in corpora:
        docs = corpora["chat"][: max(1, len(corpora["chat"]) // 4)]
        mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
        print(f"\neach rule alone on {mb:.1f} MB of chat (fired = share of chat documents it changed, all rules on)")
        print(f"{'rule':<24} {'MB/s':>8} {'fired':>7}")
        print("-" * 41)
        total = len(corpora["chat"])
        for name, rule in RULES:
            start = time.process_time()
            for doc in docs:
                rule(doc)
            seconds = time.process_time() - start
            print(f"{name:<24} {mb / seconds:>8.1f} {chat_fired[name] / total:>7.0%}")


if __name__ == "__main__":
    main()
