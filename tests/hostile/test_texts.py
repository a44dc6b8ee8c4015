"""Hostile texts in the per-document stages: odd but possible documents (control characters, line separators,
zalgo, astral characters, one mark repeated thousands of times, empty and identical documents) thrown at the pure
functions of each stage, and a small part of them through the shard functions. Every stage must return, and every
document must come out or be counted as dropped with its reason."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.parquet import ParquetShardWriter, iter_rows
from storage.schemas import DOCUMENT_SCHEMA
from tasks.clean import clean_shard
from tasks.cleaning import CleanRules, clean_text, clean_text_plainly
from tasks.dedup.exact import document_key, exact_dedup_local, paragraph_keys
from tasks.dedup.minhash import minhash_dedup_local, shingle_hashes
from tasks.dedup.params import ExactDedupParams, MinhashDedupParams, SuffixArrayDedupParams
from tasks.dedup.suffix_array import suffix_array_dedup_group
from tasks.dedup.text import normalize_document, words
from tasks.langid.model import normalize_for_own_model, one_line, text_spans
from tasks.params import CleanParams
from tasks.perplexity.text import lm_lines
from tasks.quality.signals import SIGNAL_COLUMNS, C4Rules, c4_lines, quality_signals, tokenize
from tasks.quality.stage import (
    QualityFilterParams,
    QualitySignalsParams,
    filter_quality_shard,
    tag_quality_shard,
)

HOSTILE = [
    "",
    " \n\t \r\n ",
    "\n" * 50,
    "!?.,;:()" * 20,
    "0123456789 " * 10,
    "a\x00b\x01c\x1f\x7fd\x85e\x9f f",
    "\ufffd" * 60,
    "one\u2028two\u2029three\x85four\x0bfive\x0csix\rseven",
    "a\u200db\ufeffc\u202ed\u2066e\u200bf\u2069 \u200d",
    "Z" + "\u0301\u0336" * 300 + " a",
    "\ufdfa\u3300 " * 20,
    "😀👨‍👩‍👧‍👦🏳️‍🌈 𝒜𝓑 \U00020000 \U000e0001",
    "Hello مرحبا Привет 你好 שלום नमस्ते",
    "مـــــرحـــــبا يـــا صـــديقي",
    "我们今天去公园玩了很久然后回家吃饭" * 8,
    "a" * 3000,
    "wow" + "!" * 3000,
    "x\n" * 1000,
    "İstanbul www.example.org İ",
    "a\uffff\nb\uffff",
    "the same text, word for word, again " * 5,
    "the same text, word for word, again " * 5,
    "A perfectly ordinary paragraph about rivers and the bridges that cross them, long enough to count. " * 4,
]

# Text drawn from every code point Parquet can store (no surrogates), weighted towards the odd ones.
ODD = st.sampled_from(list("\x00\x01\x1f\x7f\x85\x9f\u00a0\u200b\u200d\u2028\u2029\u202e\u2066\ufeff\ufffd\uffff"
                           "\u0301\u0640\ufdfa\u3300İıſ.!?'’()\n\r\t ") + ["😀", "👨", "🏽", "\U00020000"])
TEXT = st.text(st.one_of(st.characters(blacklist_categories=("Cs",)), ODD), max_size=200)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextmanager
def finishes_within(seconds: int):
    """Fails the test instead of letting a quadratic loop hang the suite (a liveness check, not a benchmark)."""

    def stop(*_):
        raise AssertionError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _part(path: Path, texts: list[str]) -> str:
    with ParquetShardWriter(path, DOCUMENT_SCHEMA) as w:
        for i, text in enumerate(texts):
            source = ("web", "whatsapp", "text")[i % 3]
            w.write_row({"id": f"d{i}", "text": text, "source": source, "url": None, "timestamp": None,
                         "meta": None})
    return str(path)


def _rows(path: Path) -> list[dict]:
    return list(iter_rows(path)) if path.exists() else []


# ------------------------------------------------------------------------------------------- failures found


@pytest.mark.parametrize("chunk", ["a" + ")" * 30_000, "wow" + "!" * 200_000, "(" * 200_000 + "hello",
                                   "x" + "'s" * 20_000])
def test_a_long_run_of_marks_in_one_word_is_tokenized_in_linear_time(chunk):
    # "a))))…" took 0.5 s at a thousand marks, 80 s at sixteen thousand (a suffix searched from the chunk's
    # start at every mark taken off); a million "!" took hours (the rest copied at every mark)
    with finishes_within(20):
        tokens = tokenize(f"Look {chunk} here").tokens
    assert "".join(tokens) == f"Look{chunk}here"
    assert tokens[0] == "Look" and tokens[-1] == "here" and len(tokens) > len(chunk) // 2  # each mark a token


def test_quality_tagging_of_a_document_of_marks_finishes(tmp_path):
    src = _part(tmp_path / "in.parquet", ["Great news" + "!" * 100_000, "ok" + ")" * 20_000])
    with finishes_within(30):
        counts = tag_quality_shard(src, str(tmp_path / "q.parquet"), QualitySignalsParams())
    assert counts.docs_out == 2 and [r["quality_words"] for r in _rows(tmp_path / "q.parquet")] == [2, 1]


# ---------------------------------------------------------------------------------------- pure functions


@PROPERTY
@given(TEXT)
def test_cleaning_returns_text_and_agrees_with_its_plain_definition(text):
    cleaned, fired = clean_text(text, CleanRules())
    assert (cleaned, fired) == clean_text_plainly(text, CleanRules())
    assert cleaned == cleaned.strip()


@PROPERTY
@given(TEXT)
def test_langid_text_preparation_keeps_the_words(text):
    assert one_line(text).split() == text.split() and "\n" not in one_line(text)
    normalized = normalize_for_own_model(text)
    assert normalized == " ".join(normalized.split())
    spans = text_spans(text, 50, 3)
    assert 1 <= len(spans) <= 3 and all(len(s) <= 50 and s in text for s in spans)


@PROPERTY
@given(TEXT)
def test_quality_tokens_cover_the_text_and_signals_are_finite(text):
    assert "".join(tokenize(text).tokens) == "".join(text.split())
    for rule_set in ("web", "prose", "chat"):
        signals = quality_signals(text, rule_set)
        assert set(signals) == set(SIGNAL_COLUMNS)
        assert all(v is None or 0 <= v < float("inf") for v in signals.values())
    result = c4_lines(text, C4Rules())
    assert set(result.text.split("\n")) <= {line.strip() for line in text.splitlines()} | {""}


@PROPERTY
@given(TEXT)
def test_perplexity_tokens_are_what_kenlm_can_read(text):
    for tokens in lm_lines(text):
        assert tokens and all(t and not any(c.isspace() or c == "\x00" for c in t) for t in tokens)


@PROPERTY
@given(TEXT)
def test_dedup_keys_of_any_text(text):
    assert "\n\n" not in normalize_document(text)
    assert document_key(text, ExactDedupParams()) == document_key(text, ExactDedupParams())
    assert all(len(key) == 3 for key in paragraph_keys(text, ExactDedupParams(paragraphs=True)))
    n = len(words(text))
    assert len(shingle_hashes(text, 5)) == (n - 4 if n >= 5 else min(n, 1))


@pytest.mark.parametrize("text", HOSTILE)
def test_every_pure_function_returns_on_each_hostile_text(text):
    with finishes_within(20):
        clean_text(text, CleanRules())
        normalize_for_own_model(one_line(text))
        for rule_set in ("web", "prose", "chat"):
            quality_signals(text, rule_set)
        list(lm_lines(text))
        paragraph_keys(text, ExactDedupParams(paragraphs=True))
        shingle_hashes(text, 5)


# ------------------------------------------------------------------------------------------ shard functions


@pytest.mark.parametrize("texts", [HOSTILE, []], ids=["hostile", "zero-rows"])
def test_shard_functions_account_for_every_document(tmp_path, texts):
    src = _part(tmp_path / "in.parquet", texts)
    n = len(texts)

    def accounted(counts, out: str, rejected: str | None = None) -> None:
        kept, gone = _rows(tmp_path / out), _rows(tmp_path / rejected) if rejected else []
        assert counts.docs_in == n and len(kept) + len(gone) == n
        assert counts.docs_out == len(kept) and sum(counts.dropped.values()) == len(gone)
        assert all(r["reason"] for r in gone)

    def path(name: str) -> str:
        return str(tmp_path / name)

    accounted(clean_shard(src, path("c.parquet"), path("c-rej.parquet"), CleanParams()), "c.parquet", "c-rej.parquet")
    accounted(tag_quality_shard(src, path("q.parquet"), QualitySignalsParams()), "q.parquet")
    accounted(filter_quality_shard(path("q.parquet"), path("qf.parquet"), path("qf-rej.parquet"),
                                   QualityFilterParams()), "qf.parquet", "qf-rej.parquet")
    exact = exact_dedup_local([src], [path("e.parquet")], [path("e-rej.parquet")], path("e-work"),
                              ExactDedupParams(paragraphs=True), [path("e-spans.parquet")])[0]
    accounted(exact, "e.parquet", "e-rej.parquet")
    minhash = minhash_dedup_local([src], [path("m.parquet")], [path("m-rej.parquet")], path("m-work"),
                                  MinhashDedupParams())[0][0]
    accounted(minhash, "m.parquet", "m-rej.parquet")
    suffix = suffix_array_dedup_group([src], [0], [path("s.parquet")], [path("s-rej.parquet")],
                                      SuffixArrayDedupParams())[0]
    accounted(suffix, "s.parquet", "s-rej.parquet")
    if texts:  # the two identical documents (and the blank ones) are duplicates
        assert exact.dropped.get("exact_duplicate", 0) >= 1 and minhash.dropped.get("minhash_duplicate", 0) >= 1
