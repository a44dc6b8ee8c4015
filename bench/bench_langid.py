"""Language identification: accuracy of the default model, Darija with an own model, throughput.

On ../shared/data/langid/ (and the Common Crawl sample for throughput), prints

1. accuracy of the default model (lid.176.ftz) on the lingua sentences, per language;
2. Moroccan Darija (`ary`) recall with the combined predictor, per dataset and per script (Arabic letters vs
   Latin "Arabizi", decided by counting letters of each script), by K-fold cross-validation: each fold's own
   model is trained on the other folds' Darija (DODa + AfriSenti Morocco) and the other folds' lingua
   sentences (ten negative languages), and judged on its own fold only;
3. accuracy on the lingua sentences with the combined predictor against the default model alone (same folds);
4. the same two numbers for other own-model thresholds (the trade-off between Darija recall and Arabic);
5. issue 19's short-text table: for every lingua language, accuracy of the default model alone and combined
   (and the change) on a random word, a random pair of adjacent words and the whole sentence of every held-out
   sentence, and on conversations of 3 and 10 chat-sized messages judged whole (as the stage judges WhatsApp
   documents); aims marked MET/UNMET;
6. Darija recall per script at the same lengths (sentences: the aim);
7. hand-written chat lines no model has seen (tests/tasks/langid/test_langid.py: Darija in both scripts, and French,
   English, Modern Standard Arabic, Spanish), judged by an own model trained on all the shared data;
8. throughput in documents (or sentences) per CPU second (one core).

Folds go by source sentence (a DODa row's two scripts share one); held-out Darija whose normalised text is also
a training text is left out.

    .venv/bin/python bench/bench_langid.py [--quick] [--folds K] [--lengths: tables 1-6 only]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

try:  # bench/summary.py collects headline figures when bench/run_all.py runs this script
    import summary  # noqa: E402
except ImportError:  # pragma: no cover - running without the summary helper
    summary = None

from tasks.langid import (  # noqa: E402
    CombinedPredictor,
    LabelledText,
    LanguagePredictor,
    load_fasttext_model,
    normalize_for_own_model,
    train_langid_model,
)
from tasks.quality.signals import strip_chat_authors  # noqa: E402  (what the langid stage does to chats)

DATA = ROOT.parent / "shared" / "data"
LANGID = DATA / "langid"
LINGUA = ("ar", "de", "en", "es", "fa", "fr", "it", "nl", "pt", "ur")
ARABIC_LETTER = re.compile("[\u0620-\u064a\u0671-\u06d3\u06fa-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufefc]")
LATIN_LETTER = re.compile("[A-Za-z\u00c0-\u024f]")
SWEEP = (0.5, 0.7, 0.8, 0.9, 0.95)


def script(text: str) -> str:
    return "arabic" if len(ARABIC_LETTER.findall(text)) > len(LATIN_LETTER.findall(text)) else "latin"


def fold_of(text: str, k: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % k


def load() -> tuple[dict[str, list[str]], list[tuple[str, str, str, str]], list[str]]:
    if not LANGID.exists():
        sys.exit(f"real data not available: {LANGID} (expected ../shared/data beside the project)")
    lingua = {
        lang: [
            s.strip()
            for s in (LANGID / f"lingua_sentences_{lang}.txt").read_text(encoding="utf-8").split("\n")
            if s.strip()
        ]
        for lang in LINGUA
    }
    darija: list[tuple[str, str, str, str]] = []  # (text, dataset, script, fold key)
    for name in ("DODa_ongoing_02.csv", "DODa_x-tra_idioms.csv", "DODa_x-tra_proverbs.csv"):
        with open(LANGID / name, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                # a DODa row's two columns are one sentence in two scripts: they share a fold
                key = f"{name}:{(row.get('darija') or '').strip()}:{(row.get('darija_ar') or '').strip()}"
                for column in ("darija", "darija_ar"):
                    text = (row.get(column) or "").strip()
                    if text:
                        darija.append((text, "DODa", script(text), key))
    with open(LANGID / "afrisenti_ma_dev.tsv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            darija.append((row["tweet"].strip(), "AfriSenti-ma", script(row["tweet"]), row["tweet"].strip()))
    with open(LANGID / "afrisenti_dz_dev.tsv", encoding="utf-8", newline="") as f:
        algerian = [row["tweet"].strip() for row in csv.DictReader(f, delimiter="\t")]
    return lingua, darija, algerian


def _cpu_with_children() -> float:
    """CPU seconds of this process and of its finished children (each model trains in a process of its own)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def pct(hits: int, n: int) -> str:
    return f"{hits / n:.1%}" if n else "-"


def held_out_darija(
    darija: list[tuple[str, str, str, str]], k: int, fold: int
) -> tuple[list[str], list[tuple[str, str, str, str]]]:
    """Training texts and held-out examples of one fold. Folds go by source sentence (a DODa row's two scripts
    together), and a held-out text whose normalised form is also a training text is left out (DODa repeats
    some sentences across rows), so that nothing judged here was seen in training."""
    train = [t for t, _, _, key in darija if fold_of(key, k) != fold]
    seen = {normalize_for_own_model(t) for t in train}
    held = [d for d in darija if fold_of(d[3], k) == fold and normalize_for_own_model(d[0]) not in seen]
    return train, held


_EDGE_PUNCTUATION = re.compile(r"^[\W_]+|[\W_]+$")


def words_of(text: str) -> list[str]:
    """The text's words (punctuation at their edges cut off), those with at least one letter."""
    words = (_EDGE_PUNCTUATION.sub("", w) for w in text.split())
    return [w for w in words if any(c.isalpha() for c in w)]


LENGTHS = ("word", "pair", "sentence")


def length_variants(text: str) -> dict[str, str | None]:
    """One random word, one random pair of adjacent words, and the whole text (seeded by the text)."""
    rng = random.Random(fold_of(text, 2**31))
    words = words_of(text)
    start = rng.randrange(len(words) - 1) if len(words) >= 2 else 0
    return {
        "word": rng.choice(words) if words else None,
        "pair": " ".join(words[start : start + 2]) if len(words) >= 2 else None,
        "sentence": text,
    }


def chat_messages(texts: list[str]) -> list[str]:
    """Chat-sized messages: a window of 1–6 words from each text (seeded by the text)."""
    out = []
    for text in texts:
        words = words_of(text)
        if words:
            rng = random.Random(fold_of(text, 2**31) + 1)
            n = min(rng.randint(1, 6), len(words))
            start = rng.randint(0, len(words) - n)
            out.append(" ".join(words[start : start + n]))
    return out


def conversations(messages: list[str], n: int) -> list[str]:
    """Consecutive messages in groups of n, judged the way the langid stage judges a WhatsApp document: the
    `Author: text` lines of the conversation without their author prefixes."""
    chats = []
    for i in range(0, len(messages) - n + 1, n):
        lines = [f"{('Sam', 'Nadia')[j % 2]}: {m}" for j, m in enumerate(messages[i : i + n])]
        chats.append(strip_chat_authors("\n".join(lines)))
    return chats


CHAT_SIZES = (3, 10)
COLUMNS = (*LENGTHS, *(f"chat of {n}" for n in CHAT_SIZES))
MAX_LOSS_POINTS = 2.0
DARIJA_AIMS = {"arabic": 0.90, "latin": 0.95}  # recall on unseen Darija sentences


def judge_lengths(
    held_by_gold: dict[str, list[str]],
    variants: dict[str, dict[str, str | None]],
    default_guess: dict[str, str],
    default: LanguagePredictor,
    combined: CombinedPredictor,
) -> list[tuple[str, str, str, str]]:
    """(gold, column, default label, combined label) for every held-out text at every length, and for
    conversations of its chat-sized pieces."""
    rows = []
    for gold, texts in held_by_gold.items():
        for length in LENGTHS:
            pieces = [v for v in (variants[t][length] for t in texts) if v]
            for piece, guess in zip(pieces, combined.predict_many(pieces), strict=True):
                rows.append((gold, length, default_guess[piece], guess.lang))
        messages = chat_messages(texts)
        for n in CHAT_SIZES:
            chats = conversations(messages, n)
            for d, c in zip(default.predict_many(chats), combined.predict_many(chats), strict=True):
                rows.append((gold, f"chat of {n}", d.lang, c.lang))
    return rows


def print_length_tables(rows: list[tuple[str, str, str, str]], k: int) -> tuple[float, dict[str, float]]:
    """Tables 5 and 6; returns the worst change of another language (points) and Darija sentence recall per
    script."""
    hits: dict[tuple[str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for gold, column, d, c in rows:
        lang = "ary" if gold.startswith("ary-") else gold
        hits[(gold, column)].append((d == lang, c == lang))

    def rate(gold: str, column: str, which: int) -> float:
        pairs = hits[(gold, column)]
        return sum(p[which] for p in pairs) / len(pairs) if pairs else float("nan")

    print(f"\n5. accuracy by length, default model alone vs combined ({k}-fold, held-out folds only): a random word,")
    print("   a random pair of adjacent words and the whole sentence of every held-out lingua sentence; conversations")
    print("   of 3 and 10 chat-sized messages (1–6 words of consecutive held-out sentences, judged whole as the")
    print(f"   stage judges a WhatsApp document). Aim: no language loses more than {MAX_LOSS_POINTS:g} points.")
    header = f"{'lang':<5}" + "".join(f" {c:>23}" for c in COLUMNS)
    print(header)
    print(f"{'':<5}" + "".join(f" {'default combined change':>23}" for _ in COLUMNS))
    worst, worst_at = 0.0, ""
    for lang in LINGUA:
        cells = []
        for column in COLUMNS:
            d, c = rate(lang, column, 0), rate(lang, column, 1)
            change = 100 * (c - d)
            if change < worst:
                worst, worst_at = change, f"{lang}, {column}"
            cells.append(f"{d:>7.1%} {c:>8.1%} {change:>+5.1f}{'!' if change < -MAX_LOSS_POINTS else ' '}")
        print(f"{lang:<5}" + "".join(f" {cell:>23}" for cell in cells))
    n_per = {column: len(hits[(LINGUA[0], column)]) for column in COLUMNS}
    print("n per language: " + ", ".join(f"{column} {n}" for column, n in n_per.items()))
    met = worst >= -MAX_LOSS_POINTS
    print(f"aim (no language loses more than {MAX_LOSS_POINTS:g} points at any length): "
          f"{'MET' if met else 'UNMET'} (worst {worst:+.1f} points{', ' + worst_at if worst_at else ''})")

    print("\n6. Darija recognised as `ary` (held-out folds; the default model alone: 0% everywhere); per script,")
    print("   then per data set (AfriSenti-ma's Arabic-script tweets are about half Modern Standard Arabic)")
    print(f"{'script':<22}" + "".join(f" {c:>12}" for c in COLUMNS) + "   aim (sentences)")
    recall = {}
    for sc in ("arabic", "latin"):
        golds = sorted({g for g, _ in hits if g.startswith(f"ary-{sc}-")})
        for gold in ("", *golds):
            pairs = {c: [p for g in (golds if not gold else [gold]) for p in hits[(g, c)]] for c in COLUMNS}
            cells = [
                f"{sum(p[1] for p in pairs[c]) / len(pairs[c]):.1%} ({len(pairs[c])})" if pairs[c] else "-"
                for c in COLUMNS
            ]
            if not gold:
                recall[sc] = sum(p[1] for p in pairs["sentence"]) / max(1, len(pairs["sentence"]))
                aim = DARIJA_AIMS[sc]
                print(f"{sc:<22}" + "".join(f" {cell:>12}" for cell in cells)
                      + f"   ≥ {aim:.0%}: {'MET' if recall[sc] >= aim else 'UNMET'}")
            else:
                print(f"{'  ' + gold.split('-', 2)[2]:<22}" + "".join(f" {cell:>12}" for cell in cells))
    return worst, recall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="2 folds instead of 5 (well under two minutes)")
    ap.add_argument("--folds", type=int, default=None)
    ap.add_argument("--lengths", action="store_true",
                    help="only the cross-validation tables (1-6: no final model, hand-written lines, throughput)")
    ap.add_argument("--max-false-positive-rate", type=float, default=None,
                    help="calibration target of the own models (default: train_langid_model's)")
    args = ap.parse_args()
    recipe = {} if args.max_false_positive_rate is None else {"max_false_positive_rate": args.max_false_positive_rate}
    k = args.folds or (2 if args.quick else 5)
    lingua, darija, algerian = load()
    default = LanguagePredictor()

    # 1. default model per language ------------------------------------------------------------------------
    print("1. default model (lid.176.ftz) on the lingua sentences")
    print(f"{'lang':<6} {'sentences':>9} {'accuracy':>9}")
    default_guess: dict[str, str] = {}
    t0 = time.process_time()
    n_sentences = 0
    for lang, sentences in lingua.items():
        guesses = default.predict_many(sentences)
        n_sentences += len(sentences)
        default_guess.update({s: g.lang for s, g in zip(sentences, guesses, strict=True)})
        print(f"{lang:<6} {len(sentences):>9} {pct(sum(g.lang == lang for g in guesses), len(sentences)):>9}")
    t_default_sentences = time.process_time() - t0
    for text, guess in zip([d[0] for d in darija], default.predict_many([d[0] for d in darija]), strict=True):
        default_guess[text] = guess.lang

    # the short test sets: a word and a word pair of every text, and the text itself (table 7)
    variants = {t: length_variants(t) for ss in lingua.values() for t in ss}
    variants.update({d[0]: length_variants(d[0]) for d in darija})
    short_texts = sorted({v for vs in variants.values() for v in vs.values() if v} - set(default_guess))
    for text, guess in zip(short_texts, default.predict_many(short_texts), strict=True):
        default_guess[text] = guess.lang

    # 2-4, 7-8. cross-validated own model -------------------------------------------------------------------
    print(f"\n{k}-fold cross-validation of an own model (Darija + the ten lingua languages as negatives)")
    rows_darija: list[tuple[str, str, str, float]] = []  # dataset, script, combined label, own p(ary)
    rows_lingua: list[tuple[str, str, str, float]] = []  # gold, default label, combined label, own p(ary)
    rows_length: list[tuple[str, str, str, str]] = []  # gold (or ary-<script>), length, default, combined
    thresholds: list[dict[str, dict[str, float]]] = []
    dropped_per_fold: list[dict[str, int]] = []
    algerian_ary = 0
    t_train = w_train = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for fold in range(k):
            darija_train, held = held_out_darija(darija, k, fold)
            train = [LabelledText("ary", t) for t in darija_train]
            train += [
                LabelledText(lang, s) for lang, ss in lingua.items() for s in ss if fold_of(s, k) != fold
            ]
            model_path = Path(tmp) / f"fold{fold}.bin"
            t0, w0 = _cpu_with_children(), time.perf_counter()
            metrics = train_langid_model(train, model_path, **recipe)
            t_train += _cpu_with_children() - t0
            w_train += time.perf_counter() - w0
            thresholds.append(metrics.min_score_by_script_and_length)
            dropped_per_fold.append(metrics.dropped_contradicted)
            combined = CombinedPredictor(str(model_path))
            own = load_fasttext_model(model_path)

            def own_p(texts: list[str], own=own) -> list[float]:
                return [
                    d.get("ary", 0.0) for d in own.predict([normalize_for_own_model(t) for t in texts], k=1)
                ]

            texts = [t for t, _, _, _ in held]
            for (_, ds, sc, _), g, p in zip(held, combined.predict_many(texts), own_p(texts), strict=True):
                rows_darija.append((ds, sc, g.lang, p))
            held_by_gold: dict[str, list[str]] = {}
            for lang, ss in lingua.items():
                held_s = [s for s in ss if fold_of(s, k) == fold]
                held_by_gold[lang] = held_s
                for s, g, p in zip(held_s, combined.predict_many(held_s), own_p(held_s), strict=True):
                    rows_lingua.append((lang, default_guess[s], g.lang, p))
            for text, ds, sc, _ in held:  # per script and data set: a conversation is of one data set
                held_by_gold.setdefault(f"ary-{sc}-{ds}", []).append(text)
            rows_length += judge_lengths(held_by_gold, variants, default_guess, default, combined)
            algerian_ary += sum(g.lang == "ary" for g in combined.predict_many(algerian))
    print(
        "own-model thresholds per script and length (1 word / 2 / 3–5 / 6+; 1 = never), calibrated by"
        f" cross-fitting on each fold's training part so that ≤ {args.max_false_positive_rate or 0.01:.1%} of any other"
        " language's texts of that script"
        " and length are called ary; one column per fold:"
    )
    for script_name in ("arabic", "latin"):
        values = ", ".join(
            "/".join(f"{v:.3f}".rstrip("0").rstrip(".") for v in t.get(script_name, {}).values()) or "-"
            for t in thresholds
        )
        print(f"  {script_name:<7} {values}")
    print(
        f"training (2 models to find contradicted examples, 3 calibration models, the final one): {t_train / k:.1f}"
        f" CPU s ({w_train / k:.1f} s wall) per fold"
    )
    print(
        "Darija training examples left out per fold because models trained without them call them another"
        " language (p >= 0.9; mostly AfriSenti tweets in Modern Standard Arabic): "
        + ", ".join(str(m.get("ary", 0)) for m in dropped_per_fold)
    )

    print("\n2. Darija recognised as `ary` (held-out folds)")
    print(f"{'dataset':<14} {'script':<8} {'texts':>6} {'default alone':>14} {'combined':>9}")
    groups: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for ds, sc, label, _ in rows_darija:
        groups[(ds, sc)].append(label == "ary")
        groups[("all", sc)].append(label == "ary")
    for (ds, sc), hits in sorted(groups.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        defaults = [default_guess[t] == "ary" for t, d, s, _ in darija if (ds in ("all", d)) and s == sc]
        print(
            f"{ds:<14} {sc:<8} {len(hits):>6} {pct(sum(defaults), len(defaults)):>14} {pct(sum(hits), len(hits)):>9}"
        )
    print(f"(Algerian tweets, AfriSenti-dz, not Darija: {pct(algerian_ary, len(algerian) * k)} called ary)")
    if summary is not None:
        for sc in ("arabic", "latin"):
            hits = groups[("all", sc)]
            defaults = [default_guess[t] == "ary" for t, _, s, _ in darija if s == sc]
            summary.record(f"langid: Darija ({sc} script), {k}-fold", "% recognised as ary", 100 * sum(hits) / len(hits),
                           "default model alone", 100 * sum(defaults) / len(defaults))

    print("\n3. other languages: accuracy with the combined predictor vs the default model alone")
    print(f"{'lang':<6} {'default':>8} {'combined':>9} {'change':>8}")
    by_lang: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    worst = 0.0
    for gold, dl, cl, _ in rows_lingua:
        by_lang[gold].append((dl == gold, cl == gold))
    for lang, pairs in by_lang.items():
        d = sum(a for a, _ in pairs) / len(pairs)
        c = sum(b for _, b in pairs) / len(pairs)
        print(f"{lang:<6} {d:>8.1%} {c:>9.1%} {100 * (c - d):>+7.1f}pt")
        worst = min(worst, 100 * (c - d))
    if summary is not None:
        summary.record("langid: worst other language", "accuracy change, points", worst)

    print("\n4. threshold trade-off (same folds): Darija recall per script, accuracy change on the others")
    print(f"{'threshold':<10} {'arabic':>7} {'latin':>7} {'worst change':>13} {'mean change':>12}")
    for t in SWEEP:
        rec = {}
        for sc in ("arabic", "latin"):
            hits = [p >= t for _, s, _, p in rows_darija if s == sc]
            rec[sc] = sum(hits) / len(hits)
        changes = []
        for lang in LINGUA:
            pairs = [(dl == lang, dl == lang and p < t) for g, dl, _, p in rows_lingua if g == lang]
            changes.append(100 * (sum(b for _, b in pairs) - sum(a for a, _ in pairs)) / len(pairs))
        print(
            f"{t:<10.2f} {rec['arabic']:>7.1%} {rec['latin']:>7.1%} {min(changes):>+12.1f}pt"
            f" {sum(changes) / len(changes):>+11.2f}pt"
        )
    calibrated = {
        sc: sum(label == "ary" for _, s, label, _ in rows_darija if s == sc) for sc in ("arabic", "latin")
    }
    totals = {sc: sum(s == sc for _, s, _, _ in rows_darija) for sc in ("arabic", "latin")}
    changes = []
    for lang in LINGUA:
        pairs = [(dl == lang, cl == lang) for g, dl, cl, _ in rows_lingua if g == lang]
        changes.append(100 * (sum(b for _, b in pairs) - sum(a for a, _ in pairs)) / len(pairs))
    print(
        f"{'calibrated':<10} {calibrated['arabic'] / totals['arabic']:>7.1%} {calibrated['latin'] / totals['latin']:>7.1%}"
        f" {min(changes):>+12.1f}pt {sum(changes) / len(changes):>+11.2f}pt"
    )
    print(
        "(rows with one threshold for every script use the own model's probability with the default model's"
        " label as fallback, the combined rule for single sentences; 'calibrated' is the combined predictor"
        " with its thresholds per script and length, as in tables 2 and 3)"
    )

    worst_short, _ = print_length_tables(rows_length, k)
    if summary is not None:
        summary.record("langid: worst other language, words/pairs/sentences/chats", "accuracy change, points",
                       worst_short)
    if args.lengths:
        return

    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "all.bin"
        train_langid_model(
            [LabelledText("ary", t) for t, _, _, _ in darija]
            + [LabelledText(lang, s) for lang, ss in lingua.items() for s in ss],
            model,
            valid_fraction=0.0,
            **recipe,
        )
        combined = CombinedPredictor(str(model))

        # 7. unseen chat lines --------------------------------------------------------------------------------
        from tests.tasks.langid.test_langid import DARIJA_CHAT_ARABIC, DARIJA_CHAT_LATIN, OTHER_CHAT

        print("\n7. hand-written chat lines (never in any training data), own model trained on all the data")
        print(f"{'lines':<24} {'n':>4} {'default alone':>14} {'combined':>9}")
        for name, lines, gold in (
            ("Darija, Arabic script", DARIJA_CHAT_ARABIC, "ary"),
            ("Darija, Arabizi", DARIJA_CHAT_LATIN, "ary"),
            *((f"{lang}", lines, lang) for lang, lines in OTHER_CHAT.items()),
        ):
            d = sum(g.lang == gold for g in default.predict_many(list(lines)))
            c = sum(g.lang == gold for g in combined.predict_many(list(lines)))
            print(f"{name:<24} {len(lines):>4} {pct(d, len(lines)):>14} {pct(c, len(lines)):>9}")
            if summary is not None and gold == "ary":
                summary.record(f"langid: unseen chat, {name}", "% recognised as ary", 100 * c / len(lines),
                               "default model alone", 100 * d / len(lines))

        # 8. throughput ---------------------------------------------------------------------------------------
        cc = DATA / "commoncrawl" / "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
        print("\n8. throughput on one core")
        print(f"{'predictor':<36} {'input':<28} {'items/s':>9}")
        print(f"{'default':<36} {'lingua sentences':<28} {n_sentences / t_default_sentences:>9,.0f}")
        if cc.exists():
            with gzip.open(cc, "rt", encoding="utf-8") as f:
                docs = [json.loads(line)["text"] for line in f] * (1 if args.quick else 5)
            for name, predictor in (
                ("default (3 spans of 1000 chars)", default),
                ("combined (own + default)", combined),
            ):
                t0 = time.process_time()
                predictor.predict_many(docs)
                seconds = time.process_time() - t0
                print(f"{name:<36} {f'{len(docs)} CC documents':<28} {len(docs) / seconds:>9,.0f}")
            t0 = time.process_time()
            combined.predict_many([s for ss in lingua.values() for s in ss])
            print(
                f"{'combined (own + default)':<36} {'lingua sentences':<28} {n_sentences / (time.process_time() - t0):>9,.0f}"
            )


if __name__ == "__main__":
    main()
