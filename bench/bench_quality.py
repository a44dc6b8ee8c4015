"""Quality and language filters: our signals + filter against datatrove's filters on the same documents.

Documents: the 697 raw Common Crawl WET documents of ../shared/data/commoncrawl (dolma test data), repeated.
Everything runs in this one process on one core and is timed in CPU seconds, so docs/s is per core. Prints

- throughput of datatrove's GopherRepetitionFilter, GopherQualityFilter, C4QualityFilter (and the three
  chained, FineWeb's order) and LanguageFilter (lid.176.ftz, the model our default uses), beside ours: the
  matching signal functions, the whole tagging, the filter on tagged columns, and the shard functions
  end to end (Parquet in, Parquet out);
- how often the keep/drop decisions agree where the rules are the same (stop words: English for every
  document, as datatrove's defaults; datatrove's repetition filter also drops empty documents, which our
  word-count rule does, so they are left out of that row).

    .venv/bin/python bench/bench_quality.py [--quick] [--repeat N]

datatrove is optional (`pip install datatrove spacy fasteners`; its English word tokenizer is spaCy's, its
LanguageFilter needs fasteners): without it only our side is printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
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

from storage.parquet import ParquetShardWriter  # noqa: E402
from storage.schemas import DOCUMENT_SCHEMA  # noqa: E402
from tasks.langid import LangidFilterParams, LangidParams, LanguagePredictor, default_model_path  # noqa: E402
from tasks.langid.stage import filter_langid_shard, tag_langid_shard  # noqa: E402
from tasks.quality.signals import (  # noqa: E402
    DEFAULT_STOP_WORDS,
    C4Rules,
    c4_lines,
    clear_token_cache,
    document_signals,
    gopher_quality_signals,
    repetition_signals,
    split_tokens,
    split_words,
)
from tasks.quality.stage import (  # noqa: E402
    RULES,
    QualityFilterParams,
    QualitySignalsParams,
    filter_quality_shard,
    quality_reasons,
    tag_quality_shard,
)

CC_DOCS = (
    ROOT.parent
    / "shared"
    / "data"
    / "commoncrawl"
    / "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
)
ENGLISH = frozenset(DEFAULT_STOP_WORDS["en"])

GROUPS = {
    "repetition": lambda name: name.startswith(("max_dup_", "max_top_")),
    "gopher quality": lambda name: not name.startswith(("max_dup_", "max_top_")) and "c4" not in name,
    "c4": lambda name: "c4" in name,
}


def load_docs() -> list[str]:
    if not CC_DOCS.exists():
        sys.exit(f"real data not available: {CC_DOCS} (expected ../shared/data beside the project)")
    with gzip.open(CC_DOCS, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def timed(fn, docs: list[str]) -> tuple[float, list]:
    """CPU seconds of this process (one core; other load on the machine does not count) and the results.

    Our tokenizer caches the tokens of each whitespace-separated chunk; the cache is emptied first, so that no
    step profits from an earlier one (within a step, repeated documents do find their chunks cached)."""
    clear_token_cache()
    t0 = time.process_time()
    out = [fn(d) for d in docs]
    return time.process_time() - t0, out


def our_decisions(signals: list[dict], group: str) -> list[bool]:
    """Keep (True) / drop per document from our default web thresholds of one rule group."""
    import pyarrow as pa

    params = QualityFilterParams()
    names = {r.name for r in RULES if GROUPS[group](r.name)}
    web = {k: (v if k in names else None) for k, v in params.web.model_dump().items()}
    params = QualityFilterParams(web=web)
    table = pa.Table.from_pylist([{"quality_rule_set": "web", **s} for s in signals])
    return [r is None for r in quality_reasons(table, params)]


def datatrove_filters():
    try:
        from datatrove.data import Document
        from datatrove.pipeline.filters import (
            C4QualityFilter,
            GopherQualityFilter,
            GopherRepetitionFilter,
            LanguageFilter,
        )
    except ImportError:
        return None
    return Document, C4QualityFilter, GopherQualityFilter, GopherRepetitionFilter, LanguageFilter


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer documents (well under two minutes)")
    ap.add_argument("--repeat", type=int, default=None, help="how many times the 697 documents are repeated")
    args = ap.parse_args()
    base = load_docs()
    repeat = args.repeat or (1 if args.quick else 20)
    docs = base * repeat
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    print(f"{len(docs):,} documents ({len(base)} distinct × {repeat}), {mb:,.1f} MB of text, one core\n")

    rows: list[tuple[str, str, float]] = []  # (step, implementation, seconds)
    # ours: the signal functions each datatrove filter corresponds to (tokenizing included in each)
    t_rep, _ = timed(lambda d: repetition_signals(d, split_tokens(d)), docs)
    t_gq, _ = timed(lambda d: gopher_quality_signals(d, split_tokens(d), split_words(d), ENGLISH), docs)
    rules = C4Rules()
    t_c4, _ = timed(lambda d: c4_lines(d, rules), docs)
    t_all, results = timed(lambda d: document_signals(d, "web", stop_words=ENGLISH, c4=rules), docs)
    signals = [r.signals for r in results]

    dt = datatrove_filters()
    dt_rows: dict[str, float] = {}
    decisions: dict[str, list[bool]] = {}
    if dt is not None:
        Document, C4QualityFilter, GopherQualityFilter, GopherRepetitionFilter, LanguageFilter = dt
        filters = {
            "repetition": GopherRepetitionFilter(),
            "gopher quality": GopherQualityFilter(),
            "c4": C4QualityFilter(),
        }
        for name, flt in filters.items():
            t, out = timed(lambda d, flt=flt: flt.filter(Document(text=d, id="x")), docs)
            dt_rows[name] = t
            decisions[name] = [r is True for r in out[: len(base)]]

        def chain(d: str) -> bool:
            doc = Document(text=d, id="x")
            return all(f.filter(doc) is True for f in filters.values())

        dt_rows["all three"], chained = timed(chain, docs)
        decisions["all three"] = chained[: len(base)]

    rows += [
        ("GopherRepetitionFilter", "datatrove", dt_rows.get("repetition")),
        ("  repetition signals", "ours", t_rep),
        ("GopherQualityFilter", "datatrove", dt_rows.get("gopher quality")),
        ("  Gopher quality signals", "ours", t_gq),
        ("C4QualityFilter", "datatrove", dt_rows.get("c4")),
        ("  C4 line rules", "ours", t_c4),
        ("all three, chained", "datatrove", dt_rows.get("all three")),
        ("  all signals of a document", "ours", t_all),
    ]

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.parquet"
        with ParquetShardWriter(src, DOCUMENT_SCHEMA) as w:
            w.write_rows(
                {
                    "id": f"{i}",
                    "text": t,
                    "source": "commoncrawl",
                    "url": None,
                    "timestamp": None,
                    "meta": None,
                }
                for i, t in enumerate(docs)
            )
        clear_token_cache()
        t0 = time.process_time()
        tag_quality_shard(
            str(src), str(Path(d) / "tagged.parquet"), QualitySignalsParams(default_stop_words="en")
        )
        t_tag = time.process_time() - t0
        t0 = time.process_time()
        filter_quality_shard(
            str(Path(d) / "tagged.parquet"),
            str(Path(d) / "k.parquet"),
            str(Path(d) / "r.parquet"),
            QualityFilterParams(),
        )
        t_filter = time.process_time() - t0
        rows += [
            ("quality tag shard (Parquet → Parquet)", "ours", t_tag),
            ("quality filter shard on tagged columns", "ours", t_filter),
        ]

        # language identification on the same documents, keep English at 0.65
        t0 = time.process_time()
        tag_langid_shard(str(src), str(Path(d) / "lang.parquet"), LangidParams())
        filter_langid_shard(
            str(Path(d) / "lang.parquet"),
            str(Path(d) / "lk.parquet"),
            str(Path(d) / "lr.parquet"),
            LangidFilterParams(keep_languages=["en"]),
        )
        t_lang_shard = time.process_time() - t0
        predictor = LanguagePredictor()
        t_lang, guesses = timed(lambda t: predictor.predict_many([t])[0], docs)
        rows.append(("LanguageFilter (lid.176.ftz, en ≥ 0.65)", "datatrove", None))
        if dt is not None:
            from fasttext.FastText import _FastText

            try:
                lf = LanguageFilter(languages=["en"], language_threshold=0.65)
            except ImportError as e:  # datatrove's LanguageFilter also needs `fasteners`
                print(f"datatrove LanguageFilter not measured: {e}\n")
            else:
                lf.model._model = _FastText(model_path=default_model_path())  # same model, no download
                t, out = timed(lambda t: lf.filter(Document(text=t, id="x")), docs)
                rows[-1] = ("LanguageFilter (lid.176.ftz, en ≥ 0.65)", "datatrove", t)
                decisions["langid"] = [bool(r) for r in out[: len(base)]]
        rows += [
            ("  language of each document (spans)", "ours", t_lang),
            ("  langid tag + filter shards (Parquet)", "ours", t_lang_shard),
        ]
        ours_lang = [g.lang == "en" and g.score >= 0.65 for g in guesses[: len(base)]]

    print(f"{'step':<44} {'impl':<10} {'docs/s':>9} {'MB/s':>7} {'vs datatrove':>13}")
    reference, peer_step = None, ""
    for step, impl, seconds in rows:
        if impl == "datatrove":
            reference, peer_step = seconds, step
        if seconds is None:
            print(f"{step:<44} {impl:<10} {'(not installed)':>9}")
            continue
        speedup = (
            f"{reference / seconds:.1f}×"
            if impl == "ours" and reference and not step.startswith(("quality", "  langid"))
            else ""
        )
        print(f"{step:<44} {impl:<10} {len(docs) / seconds:>9,.0f} {mb / seconds:>7.2f} {speedup:>13}")
        if summary is not None and impl == "ours" and step.startswith("  ") and not step.startswith("  langid"):
            summary.record(f"quality: {step.strip()}", "docs/s per core", len(docs) / seconds,
                           f"datatrove {peer_step}" if reference else None,
                           len(docs) / reference if reference else None)

    tokenizer_agreement(base)
    if decisions:
        english = [g.lang == "en" for g in guesses[: len(base)]]
        empty = [not d.strip() for d in base]
        for title, subset in (("all", [True] * len(base)), ("English (lid.176 says en)", english)):
            print(f"\nkeep/drop agreement, {title} documents of the {len(base)} distinct ones")
            print(f"{'rules':<22} {'agree':>7} {'docs':>6} {'kept: datatrove':>16} {'ours':>6}")
            for group in ("repetition", "gopher quality", "c4"):
                ours = our_decisions(signals[: len(base)], group)
                theirs = decisions[group]
                pairs = [
                    (a, b)
                    for a, b, e, keep in zip(theirs, ours, empty, subset, strict=True)
                    if keep and not (group == "repetition" and e)
                ]
                _agreement_row(group, pairs)
            ours_all = [
                all(x) for x in zip(*(our_decisions(signals[: len(base)], g) for g in GROUPS), strict=True)
            ]
            _agreement_row(
                "all three",
                [(a, b) for a, b, keep in zip(decisions["all three"], ours_all, subset, strict=True) if keep],
            )
            if "langid" in decisions:
                _agreement_row(
                    "language (en ≥ 0.65)",
                    [
                        (a, b)
                        for a, b, keep in zip(decisions["langid"], ours_lang, subset, strict=True)
                        if keep
                    ],
                )


def tokenizer_agreement(docs: list[str]) -> None:
    """How many whitespace-separated chunks our tokenizer splits exactly as spaCy's English one (datatrove's)."""
    try:
        import spacy
    except ImportError:
        return
    from collections import Counter

    nlp = spacy.blank("en")
    chunks = Counter(c for d in docs for c in d.split())
    same = sum(n for c, n in chunks.items() if [t.text for t in nlp(c) if t.text.strip()] == split_tokens(c))
    total = sum(chunks.values())
    print(
        f"\ntokens: {same / total:.2%} of {total:,} whitespace-separated chunks ({len(chunks):,} distinct) are "
        "split exactly as spaCy's English tokenizer splits them"
    )


def _agreement_row(name: str, pairs: list[tuple[bool, bool]]) -> None:
    agree = sum(a == b for a, b in pairs) / len(pairs)
    print(
        f"{name:<22} {agree:>7.1%} {len(pairs):>6} {sum(a for a, _ in pairs):>16} {sum(b for _, b in pairs):>6}"
    )


if __name__ == "__main__":
    main()
