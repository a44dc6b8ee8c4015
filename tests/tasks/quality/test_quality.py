"""quality as plain functions: which documents the Gopher/C4 rules keep, why others go, what chat text gets."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tasks.quality.stage as quality_stage
from storage.parquet import ParquetShardWriter, iter_rows, read_schema
from storage.schemas import DOCUMENT_SCHEMA
from tasks.quality import (
    QUALITY_COLUMNS,
    QualityFilterParams,
    QualitySignalsParams,
    QualityThresholds,
    document_signals,
    filter_quality_shard,
    quality_signals,
    tag_quality_shard,
)
from tasks.quality.signals import (
    C4Rules,
    c4_lines,
    documents_signals,
    repetition_signals,
    repetition_signals_of,
    split_tokens,
    split_words,
)
from tasks.quality.stage import FILTER_SUMMARY, TAG_SUMMARY
from tests.conftest import ROOT, shared_file

GOOD_PROSE = """The old harbour of the town was built in the seventeenth century, when the fishing fleet had grown too large for the river mouth. Its granite walls still stand, and every morning the boats come back with their catch before the market opens.

Visitors often walk along the eastern pier to watch the ferry leave for the islands. On a clear day you can see the lighthouse at the end of the bay, and the smell of salt and diesel hangs over the water while the gulls wait for scraps.

In winter the storms push waves over the breakwater, and the harbour master closes the outer gate. The fishermen mend their nets in the sheds by the quay and talk about the weather, the price of fuel and the quotas that change every year. Nobody in the town would want to live anywhere else."""

BOILERPLATE = """Home
About us
Products
Contact
We use cookies to improve your experience on our website.
By continuing you accept our privacy policy and terms of use.
Login | Register | Cart (0)
Copyright 2024 Example Corp. All rights reserved."""

LOREM = (
    GOOD_PROSE
    + "\n\nLorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt."
)

CODE = (
    GOOD_PROSE
    + '\n\nTo configure it, add the following block to the settings file: { "debug": true, "port": 8080 }.'
)

REPETITIVE = "\n".join(["Buy the best watches and clocks online today at the lowest price in town."] * 30)

HASHTAGS = " ".join(f"#deal{i} #sale #cheap #shopping great offer" for i in range(40))

CHAT = """Sam: salut tu es dispo ce soir
Yassine: wakha
Yassine: on se voit au cafe a 9h
Sam: ok parfait je ramene Karim
Yassine: top
Sam: il arrive apres le boulot
Yassine: ça marche a toute"""


def _reject_reason(text: str, source: str = "commoncrawl", lang: str | None = "en") -> str | None:
    """Tag and filter one document through the shard functions, return its reject reason (None = kept)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        rows = [_row(0, text, source, lang)]
        src = _write_docs(Path(d) / "in.parquet", rows, with_lang=lang is not None)
        tagged = Path(d) / "tagged.parquet"
        tag_quality_shard(str(src), str(tagged), QualitySignalsParams())
        result = filter_quality_shard(
            str(tagged), str(Path(d) / "kept.parquet"), str(Path(d) / "rej.parquet"), QualityFilterParams()
        )
        rejected = list(iter_rows(Path(d) / "rej.parquet"))
        assert result.docs_in == 1
        return rejected[0]["reason"] if rejected else None


def _no_repetition_rules(**changes) -> QualityThresholds:
    """Default web thresholds with every Gopher repetition rule switched off."""
    off = {name: None for name in QualityThresholds.model_fields if name.startswith(("max_dup_", "max_top_"))}
    return QualityThresholds(**{**off, **changes})


def _row(i: int, text: str, source: str = "commoncrawl", lang: str | None = "en") -> dict:
    return {
        "id": f"doc-{i}",
        "text": text,
        "source": source,
        "url": None,
        "timestamp": None,
        "meta": None,
        "lang": lang,
    }


def _write_docs(path, rows: list[dict], with_lang: bool = True):
    import pyarrow as pa

    schema = DOCUMENT_SCHEMA
    if with_lang:
        schema = schema.append(pa.field("lang", pa.string())).append(pa.field("lang_score", pa.float32()))
        rows = [{**r, "lang_score": 0.9} for r in rows]
    else:
        rows = [{k: v for k, v in r.items() if k != "lang"} for r in rows]
    with ParquetShardWriter(path, schema) as w:
        w.write_rows(rows)
    return path


# ---------------------------------------------------------------------------------------------------------------
# Decisions on hand-written documents
# ---------------------------------------------------------------------------------------------------------------


def test_good_prose_is_kept_unchanged():
    assert _reject_reason(GOOD_PROSE) is None
    doc = document_signals(GOOD_PROSE, "web", stop_words=frozenset(["the", "and", "of", "to"]))
    assert doc.signals["quality_c4_lines_removed"] == 0
    assert doc.text == GOOD_PROSE


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (BOILERPLATE, "quality_min_words"),
        (REPETITIVE, "quality_max_dup_line_frac"),
        (LOREM, "quality_max_c4_lorem_ipsum_lines"),
        (CODE, "quality_max_c4_curly_bracket_lines"),
        (HASHTAGS, "quality_max_hash_word_ratio"),
        ("", "quality_min_words"),
    ],
    ids=["boilerplate", "repetitive", "lorem-ipsum", "curly-brace", "hashtags", "empty"],
)
def test_bad_documents_are_rejected_with_the_rule_that_caught_them(text, reason):
    assert _reject_reason(text) == reason


def test_boilerplate_fails_c4_even_when_long_enough():
    long_menu = "\n".join(["Shop the new collection of shoes and bags | free shipping"] * 40)
    signals = quality_signals(long_menu)
    assert signals["quality_words"] >= 50
    assert signals["quality_c4_sentences"] == 0 and signals["quality_c4_lines_removed"] == 40
    params = QualityFilterParams(web=_no_repetition_rules())
    import pyarrow as pa

    table = pa.Table.from_pylist([{"quality_rule_set": "web", **signals}])
    assert quality_stage.quality_reasons(table, params).tolist() == ["quality_min_c4_sentences"]


def test_c4_line_rules_remove_boilerplate_lines_and_keep_the_good_ones():
    text = (
        "Welcome to the harbour museum, which tells the story of the town and its fishermen.\n"
        "Menu\n"
        "This site uses cookies to give you the best experience.\n"
        "Please enable JavaScript to see the opening hours of the museum.\n"
        "The exhibition on the great storm of 1953 has been extended until March.[3]\n"
        "Read more...\n"
        "Tickets cost eight euros for adults and are free for children under twelve."
    )
    doc = document_signals(text, "web")
    assert doc.text.splitlines() == [
        "Welcome to the harbour museum, which tells the story of the town and its fishermen.",
        "The exhibition on the great storm of 1953 has been extended until March.",
        "Tickets cost eight euros for adults and are free for children under twelve.",
    ]
    assert doc.c4_removed_by_rule == {"no_terminal_punctuation": 2, "policy": 1, "javascript": 1}
    assert doc.signals["quality_c4_lines_removed"] == 4
    assert doc.signals["quality_c4_chars_removed"] == len(text) - len(doc.text)
    assert doc.signals["quality_c4_sentences"] == 3


@pytest.mark.parametrize(
    ("line", "sentences"),
    [
        ("One ends here. Two ends here! Three?", 3),
        ("Dr. J. R. R. Tolkien wrote it in 1937. It sold well.", 3),  # "Dr." counts, lone initials do not
        ("It cost 3.50 euros. Then 4. Then more.", 3),  # a stop after a digit ends one, "3.50" does not
        ('She said "stop." and left (quickly.) after it.', 3),  # closing quotes and brackets belong to it
        ("Why?! Really?? Yes.", 3),
        ("هل تأتي غدا؟ نعم. 你好。 再见！", 4),  # the marks of other scripts
        ("A line with a lone stop . in the middle, ending here.", 2),
        ("a. b. c. and then the end of the line.", 1),  # stops after a single letter are initials
    ],
)
def test_c4_counts_the_sentences_of_a_kept_line(line, sentences):
    assert c4_lines(line, C4Rules()).sentences == sentences


def test_chat_conversations_are_kept_and_never_rewritten():
    assert _reject_reason(CHAT, source="whatsapp", lang="fr") is None
    doc = document_signals(CHAT, "chat")
    assert doc.text == CHAT
    assert doc.signals["quality_c4_lines_removed"] is None  # C4 never runs on chat text
    assert (
        doc.signals["quality_words"] == len(split_words(CHAT)) - 7
    )  # author prefixes are not words of the chat
    # the same text judged as web text would lose every line and be dropped
    assert document_signals(CHAT, "web").text == ""
    assert _reject_reason(CHAT, source="commoncrawl", lang="fr") is not None


def test_hard_wrapped_plain_text_keeps_its_paragraphs_as_prose():
    import textwrap

    wrapped = "\n\n".join(textwrap.fill(p, 72) for p in GOOD_PROSE.split("\n\n"))
    assert len(wrapped.splitlines()) > 10  # lines that end mid-sentence
    as_web = document_signals(wrapped, "web", stop_words=frozenset(["the", "and"]))
    as_prose = document_signals(wrapped, "prose", stop_words=frozenset(["the", "and"]))
    assert as_web.signals["quality_c4_lines_removed"] > 5  # web rules judge each wrapped line
    assert as_prose.signals["quality_c4_lines_removed"] == 0
    assert as_prose.text == GOOD_PROSE  # one line per paragraph, paragraphs kept
    assert _reject_reason(wrapped, source="text") is None  # plain-text files are prose by default
    assert _reject_reason(wrapped, source="commoncrawl") == "quality_min_c4_sentences"


def test_real_whatsapp_conversations_mostly_pass_the_chat_rules():
    from tasks.whatsapp.documents import chat_to_documents
    from tasks.whatsapp.parser import parse_whatsapp_export

    texts = []
    for name in (
        "sam_priya_android_en_24h.txt",
        "coloc_ios_fr_seconds.txt",
        "sam_yassine_android_us_12h_darija.txt",
    ):
        texts += [
            d.text for d in chat_to_documents(parse_whatsapp_export(ROOT / "examples" / "whatsapp" / name))
        ]
    reasons = [_reject_reason(t, source="whatsapp", lang=None) for t in texts]
    assert len(texts) >= 10
    assert sum(r is None for r in reasons) >= len(texts) - 1, reasons  # at most one tiny session goes


def test_stop_words_follow_the_document_language():
    french = "Le chat et la souris dorment dans la maison."
    assert (
        document_signals(french, "web", stop_words=frozenset(["the", "and"])).signals["quality_stop_words"]
        == 0
    )
    assert (
        document_signals(french, "web", stop_words=frozenset(["le", "la", "et"])).signals[
            "quality_stop_words"
        ]
        == 3
    )
    # no list for the language: the rule does not apply (empty column) rather than rejecting everything
    assert document_signals(GOOD_PROSE, "web", stop_words=None).signals["quality_stop_words"] is None


def test_rule_set_none_keeps_everything_without_signals():
    doc = document_signals(REPETITIVE, "none")
    assert doc.text == REPETITIVE and all(v is None for v in doc.signals.values())
    with pytest.raises(ValueError, match="unknown quality rule set 'fancy'"):
        document_signals("x", "fancy")


# ---------------------------------------------------------------------------------------------------------------
# Signal definitions
# ---------------------------------------------------------------------------------------------------------------


def test_tokens_are_made_like_spacys_english_tokenizer():
    """datatrove's Gopher filters count spaCy's English tokens; ours follow the same rules (bench_quality.py
    checks them against spaCy on 384k chunks of Common Crawl text: 99.9% identical)."""
    assert split_tokens("Don't pay $3.50 (approx.) at https://x.org/a-b. OK...") == [
        "Do",
        "n't",
        "pay",
        "$",
        "3.50",
        "(",
        "approx",
        ".",
        ")",
        "at",
        "https://x.org/a-b",
        ".",
        "OK",
        "...",
    ]
    assert split_tokens("مَرْحَبًا 👍🏽 ok") == ["مَرْحَبًا", "👍", "🏽", "ok"]
    assert split_words("stop-believing, 10,000 times!") == ["stop", "believing", "10,000", "times"]
    # inner marks stay where spaCy keeps them, and split where it splits
    cases = {
        "f(a,b)": ["f(a", ",", "b", ")"],
        "end.The": ["end", ".", "The"],
        "x.y.z 3:30 a/1 and-or": ["x.y.z", "3:30", "a/1", "and", "-", "or"],
        "l'homme c’est Jean's": ["l'homme", "c’est", "Jean", "'s"],
        "J. R. R. Tolkien, U.S. e.g. Dr. Who": [
            "J.",
            "R.",
            "R.",
            "Tolkien",
            ",",
            "U.S.",
            "e.g.",
            "Dr.",
            "Who",
        ],
        "dont im 10km -97.4 // mult..": ["do", "nt", "i", "m", "10", "km", "-97.4", "//", "mult", ".."],
        "(see http://a.org/x) a@b.org": ["(", "see", "http://a.org/x", ")", "a@b.org"],
        "''Galactica'' Author(s):": ["''", "Galactica", "''", "Author(s", "):"],
    }
    for text, tokens in cases.items():
        assert split_tokens(text) == tokens, text
    assert split_words("( ) -- · ... a $ 5") == ["a", "5"]  # punctuation is not a word


def _naive_repetition(text: str, tokens: list[str]) -> dict:
    """The Gopher repetition definitions written the slow, obvious way (n-grams as tuples)."""
    import re

    n_chars = len(text) or 1
    out = {}
    for n in (2, 3, 4):
        grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
        if not grams:
            out[n] = 0.0
            continue
        counts = Counter(grams)
        best = max(counts.values())
        first = next(g for g in grams if counts[g] == best)
        out[n] = (len(" ".join(first)) * best) / n_chars
    for n in range(5, 11):
        seen, chars, i = set(), 0, 0
        while i < len(tokens) - n + 1:
            g = tuple(tokens[i : i + n])
            if g in seen:
                chars += sum(map(len, g))
                i += n
            else:
                seen.add(g)
                i += 1
        out[n] = chars / n_chars
    lines = re.split(r"\n+", text)
    out["lines"] = sum(1 for i, x in enumerate(lines) if x in lines[:i]) / len(lines)
    return out


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "bb", "ccc", "the", "cat", ".", "\n", "\n\n", "x y"]), min_size=0, max_size=120
    )
)
def test_fast_repetition_signals_match_the_definitions(parts):
    text = " ".join(parts)
    tokens = split_tokens(text)
    fast = repetition_signals(text, tokens)
    slow = _naive_repetition(text, tokens)
    for n in (2, 3, 4):
        assert fast[f"quality_top_{n}gram_char_frac"] == pytest.approx(slow[n])
    for n in range(5, 11):
        assert fast[f"quality_dup_{n}gram_char_frac"] == pytest.approx(slow[n])
    assert fast["quality_dup_line_frac"] == pytest.approx(slow["lines"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(
                st.sampled_from(["a", "bb", "the", "cat", ".", "\n", "\n\n", "x y", "Sam: a"]), max_size=60
            ),
            st.sampled_from(["web", "prose", "chat", "none"]),
        ),
        max_size=8,
    )
)
def test_signals_of_many_documents_are_each_documents_own(docs):
    # the stage computes a whole batch at once: equal n-grams of different documents must never meet
    texts = [" ".join(parts) for parts, _ in docs]
    rule_sets = [rule_set for _, rule_set in docs]
    together = documents_signals(texts, rule_sets, [frozenset(["the"])] * len(texts))
    alone = [
        document_signals(t, r, stop_words=frozenset(["the"])) for t, r in zip(texts, rule_sets, strict=True)
    ]
    assert together == alone
    assert [
        s["quality_dup_5gram_char_frac"]
        for s in repetition_signals_of(texts, [split_tokens(t) for t in texts])
    ] == [_naive_repetition(t, split_tokens(t))[5] for t in texts]


def test_a_large_batch_is_computed_in_slices_with_the_same_signals(monkeypatch):
    import tasks.quality.signals as signals

    texts = [GOOD_PROSE, REPETITIVE, CHAT, "", LOREM, HASHTAGS] * 3
    rule_sets = ["web", "web", "chat", "web", "prose", "web"] * 3
    whole = documents_signals(texts, rule_sets, [frozenset(["the"])] * len(texts))
    monkeypatch.setattr(signals, "BATCH_CHARS", 500)  # a few documents per slice, a long one alone
    assert documents_signals(texts, rule_sets, [frozenset(["the"])] * len(texts)) == whole


def test_gopher_quality_signals_on_a_small_text():
    s = quality_signals("• one item here\n• two items there...\nThe end of the list, and that is all.")
    assert s["quality_words"] == 15
    assert s["quality_bullet_lines_frac"] == pytest.approx(2 / 3)
    assert s["quality_ellipsis_lines_frac"] == pytest.approx(1 / 3)
    assert s["quality_stop_words"] == 4  # the (any case), of, and, that
    assert (
        0 < s["quality_alpha_words_frac"] < 1
    )  # the bullets, ellipsis, comma and stop are tokens without letters


# ---------------------------------------------------------------------------------------------------------------
# Shards: tag once, filter many times
# ---------------------------------------------------------------------------------------------------------------


def test_tag_then_filter_shards_keep_columns_and_reasons(tmp_path):
    rows = [
        _row(0, GOOD_PROSE),
        _row(1, REPETITIVE),
        _row(2, CHAT, "whatsapp", "fr"),
        _row(3, LOREM),
        _row(4, ""),
    ]
    src = _write_docs(tmp_path / "in.parquet", rows)
    tagged = tmp_path / "tagged" / "part-00000.parquet"
    tag = tag_quality_shard(str(src), str(tagged), QualitySignalsParams())
    schema = read_schema(tagged)
    assert schema.names[: len(DOCUMENT_SCHEMA) + 2] == [*DOCUMENT_SCHEMA.names, "lang", "lang_score"]
    assert all(c in schema.names for c in QUALITY_COLUMNS)
    out = list(iter_rows(tagged))
    assert [r["quality_rule_set"] for r in out] == ["web", "web", "chat", "web", "web"]
    assert out[2]["text"] == CHAT
    counts, stats = TAG_SUMMARY([tag])
    assert counts["in"] == counts["out"] == 5 and stats["rule_sets"] == {"chat": 1, "web": 4}

    result = filter_quality_shard(
        str(tagged), str(tmp_path / "kept.parquet"), str(tmp_path / "rejected.parquet"), QualityFilterParams()
    )
    kept = [r["id"] for r in iter_rows(tmp_path / "kept.parquet")]
    rejected = {r["id"]: r["reason"] for r in iter_rows(tmp_path / "rejected.parquet")}
    assert kept == ["doc-0", "doc-2"]
    assert rejected == {
        "doc-1": "quality_max_dup_line_frac",
        "doc-3": "quality_max_c4_lorem_ipsum_lines",
        "doc-4": "quality_min_words",
    }
    counts, stats = FILTER_SUMMARY([result])
    assert counts["in"] == 5 and counts["out"] == 2
    assert counts["dropped_quality_min_words"] == 1 and stats["keep_rate"] == pytest.approx(0.4)


def test_refiltering_with_new_thresholds_reads_only_the_signal_columns(tmp_path, monkeypatch):
    rows = [_row(i, GOOD_PROSE if i % 2 else REPETITIVE) for i in range(10)]
    tagged = tmp_path / "tagged.parquet"
    tag_quality_shard(str(_write_docs(tmp_path / "in.parquet", rows)), str(tagged), QualitySignalsParams())

    def no_signals(*args, **kwargs):
        raise AssertionError("the filter must not recompute signals")

    monkeypatch.setattr(quality_stage, "documents_signals", no_signals)
    strict = filter_quality_shard(
        str(tagged), str(tmp_path / "a.parquet"), str(tmp_path / "ra.parquet"), QualityFilterParams()
    )
    lenient = QualityFilterParams(web=_no_repetition_rules(min_words=5, min_c4_sentences=1))
    loose = filter_quality_shard(
        str(tagged), str(tmp_path / "b.parquet"), str(tmp_path / "rb.parquet"), lenient
    )
    assert strict.docs_out == 5 and loose.docs_out == 10


def test_filter_refuses_untagged_input(tmp_path):
    src = _write_docs(tmp_path / "in.parquet", [_row(0, GOOD_PROSE)])
    with pytest.raises(ValueError, match="run the quality tagging first"):
        filter_quality_shard(
            str(src), str(tmp_path / "k.parquet"), str(tmp_path / "r.parquet"), QualityFilterParams()
        )
    assert not (tmp_path / "k.parquet").exists()


def test_params_are_strict():
    with pytest.raises(ValueError):
        QualityThresholds(min_wrods=3)
    with pytest.raises(ValueError):
        QualitySignalsParams(rule_sets={"whatsapp": "chatty"})


# ---------------------------------------------------------------------------------------------------------------
# Real Common Crawl text
# ---------------------------------------------------------------------------------------------------------------


def test_common_crawl_documents_get_plausible_keep_rates(tmp_path):
    path = shared_file("commoncrawl", "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    assert len(docs) == 697
    rows = [
        {
            "id": d["id"],
            "text": d["text"],
            "source": "commoncrawl",
            "url": None,
            "timestamp": None,
            "meta": None,
        }
        for d in docs
    ]
    src = _write_docs(tmp_path / "cc.parquet", rows, with_lang=False)
    tagged = tmp_path / "tagged.parquet"
    params = QualitySignalsParams(default_stop_words="en")  # no langid here: judge stop words as English
    tag = tag_quality_shard(str(src), str(tagged), params)
    assert tag.docs_out == 697 and tag.bytes_out < tag.bytes_in  # C4 removed lines
    result = filter_quality_shard(
        str(tagged), str(tmp_path / "k.parquet"), str(tmp_path / "r.parquet"), QualityFilterParams()
    )
    keep_rate = result.docs_out / result.docs_in
    # raw multilingual WET text judged with English stop words: most goes; Gopher+C4 keep a small share
    assert 0.05 < keep_rate < 0.4, keep_rate
    assert {"quality_min_words", "quality_min_stop_words", "quality_min_c4_sentences"} <= set(result.dropped)
    kept = list(iter_rows(tmp_path / "k.parquet"))
    assert all(r["quality_words"] >= 50 and r["quality_c4_sentences"] >= 5 for r in kept)
