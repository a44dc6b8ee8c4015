"""Perplexity stage: CCNet normalisation, scoring against a known ARPA model, bad model files, tagging shards,
percentile buckets and filter decisions."""

from __future__ import annotations

import gzip
import json
import math
import unicodedata
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from storage.parquet import ParquetShardWriter, iter_rows, read_schema
from storage.schemas import DOCUMENT_SCHEMA
from tasks.perplexity import (
    PerplexityFilterParams,
    PerplexityParams,
    PerplexityScorer,
    bucket_cutoffs,
    bucket_of,
    compute_cutoffs,
    filter_perplexity_shard,
    lm_lines,
    lm_tokens,
    load_kenlm_model,
    normalize_line,
    resolve_models,
    tag_perplexity_shard,
)
from tasks.perplexity.stage import FILTER_SUMMARY, TAG_SUMMARY
from tests.conftest import shared_file

# ------------------------------------------------------------------------------------------- normalisation


def test_normalisation_follows_ccnet():
    assert normalize_line("  Hello World  ") == "hello world"
    assert normalize_line("Ça coûte naïve Ångström") == "ca coute naive angstrom"
    # every Unicode decimal digit becomes 0: ASCII, Arabic-Indic, fullwidth
    assert normalize_line("Call 555-1234 or ١٢٣ or ３４") == "call 000-0000 or 000 or 00"
    # CCNet's punctuation table, in its own order (the fullwidth `１` is a digit first, so it becomes 0)
    weird = "，。、„”“«»１」「《》´∶：？！（）；–—．～’…━〈〉【】％►"
    assert normalize_line("a" + weird + "b") == "a" + ',.,"""""0""""\'::?!();- - . ~\'...-<>[]%-' + "b"
    # control characters go; a tab separates words
    assert normalize_line("bell\x07ed\x9f\tword") == "belled word"
    # invisible format characters (zero-width space, bidi marks, BOM) go
    assert normalize_line("\ufeffzero\u200bwidth\u200e") == "zerowidth"
    # accents are stripped but Hangul syllables are not split into jamo
    assert normalize_line("한국어") == "한국어"


# CCNet's table, written out again independently of the module under test
_PUNCT = {
    **dict.fromkeys("，、", ","),
    "。": ".",
    **dict.fromkeys("„”“«»」「《》", '"'),
    **dict.fromkeys("´’", "'"),
    **dict.fromkeys("∶：", ":"),
    **{"？": "?", "！": "!", "（": "(", "）": ")", "；": ";", "～": "~", "％": "%", "…": "..."},
    **dict.fromkeys("–━►", "-"),
    **{"—": " - ", "．": ". ", "〈": "<", "〉": ">", "【": "[", "】": "]"},
}


def _plain_ccnet_normalize(line: str) -> str:
    """The steps of the module docstring, one after the other, character by character (slow and obvious)."""
    line = line.strip().lower()
    line = "".join(c for c in unicodedata.normalize("NFD", line) if unicodedata.category(c) != "Mn")
    line = unicodedata.normalize("NFC", line)
    line = "".join("0" if c.isdecimal() else c for c in line)
    line = "".join(_PUNCT.get(c, c) for c in line)
    line = line.replace("\t", " ")
    invisible = {"\u00ad", "\ufeff", *map(chr, range(0x200B, 0x2010)), *map(chr, range(0x202A, 0x202F))}
    invisible |= set(map(chr, range(0x2060, 0x2065)))
    return "".join(c for c in line if not (ord(c) < 32 or 127 <= ord(c) < 160 or c in invisible))


@pytest.mark.parametrize("lang", ["ar", "de", "en", "es", "fa", "fr", "it", "nl", "pt", "ur"])
def test_fast_normalisation_equals_the_plain_steps(lang):
    lines = shared_file("langid", f"lingua_sentences_{lang}.txt").read_text(encoding="utf-8").splitlines()
    lines += [
        "Ｆｕｌｌ　ｗｉｄｔｈ ９９％",
        "\ufeffCafé\u200b—«déjà vu»…\x85",
        "Ελληνικά ΟΔΟΣ άλφα",
        "Tiếng Việt có dấu",
    ]
    for line in lines:
        assert normalize_line(line) == _plain_ccnet_normalize(line), line


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_ascii_lines_take_the_one_pass_path_with_the_same_result(line):
    from tasks.perplexity.text import _TOKEN

    normalized = normalize_line(line)
    assert normalized == _plain_ccnet_normalize(line)
    assert lm_tokens(line) == _TOKEN.findall(normalized)


def test_tokens_are_words_and_single_symbols():
    assert lm_tokens("Hello, World! It’s 2024…") == [
        "hello",
        ",",
        "world",
        "!",
        "it",
        "'",
        "s",
        "0000",
        ".",
        ".",
        ".",
    ]
    # KenLM's own symbols cannot appear as tokens
    assert lm_tokens("<s> </s> <unk>") == ["<", "s", ">", "<", "/", "s", ">", "<", "unk", ">"]
    # CJK ideographs and kana are one token each; Latin words around them stay whole
    assert lm_tokens("東京は晴れ today") == ["東", "京", "は", "晴", "れ", "today"]
    assert lm_tokens("emoji 🙂 ok") == ["emoji", "🙂", "ok"]


def test_lines_without_tokens_are_skipped():
    assert list(lm_lines("First line\n\n   \n\x00\x01\nLast\u2028line")) == [
        ["first", "line"],
        ["last"],
        ["line"],
    ]


# --------------------------------------------------------------------------------- scoring against an ARPA

# kenlm_test.arpa (from kenlm's own tests). Each term is read from the file by hand: p(w | longest context
# present) plus the backoff weights of the longer contexts that were not found.
SENTENCE_FULL_MATCH = (
    "Looking on a little more loin",
    [
        -0.4846522,  # <s> looking                         (2-gram)
        -0.3488368,  # <s> looking on                      (3-gram)
        -0.01552657,  # <s> looking on a                   (4-gram)
        -0.003061223,  # <s> looking on a little           (5-gram)
        -0.001813953,  # looking on a little more          (5-gram)
        -0.0432557,  # on a little more loin               (5-gram)
        -0.6708385,  # </s> | a little more loin: only "loin </s>" exists; no backoffs on the way (none listed)
    ],
)
SENTENCE_WITH_BACKOFF = (
    "On a loin",
    [
        -1.509559 + -0.4149733,  # on | <s>: no "<s> on"; unigram "on" + backoff(<s>)
        -0.1649931,  # a | on: 2-gram "on a"; "<s> on" is absent, so no backoff for it
        -1.383514 + -0.4771213 + -0.69897,  # loin | on a: unigram "loin" + backoff("on a") + backoff("a")
        -0.6708385,  # </s> | a loin: 2-gram "loin </s>"
    ],
)
SENTENCE_OOV = (
    "Zebra.",
    [
        -1.995635 + -0.4149733,  # zebra is unknown: p(<unk>) + backoff(<s>)
        -1.139057 + -20,  # "." after <unk>: unigram "." + backoff(<unk>) (= -20 in this file)
        -0.0602359,  # ". </s>"
    ],
)


@pytest.fixture(scope="module")
def arpa_scorer():
    return PerplexityScorer(shared_file("text", "kenlm_test.arpa"))


@pytest.mark.parametrize("sentence,terms", [SENTENCE_FULL_MATCH, SENTENCE_WITH_BACKOFF, SENTENCE_OOV])
def test_known_log_probabilities(arpa_scorer, sentence, terms):
    assert arpa_scorer.score_line(sentence) == pytest.approx(sum(terms), abs=1e-5)


def _read_arpa(path) -> tuple[dict, dict, int]:
    prob: dict[tuple, float] = {}
    backoff: dict[tuple, float] = {}
    order = 0
    section = 0
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line.startswith("\\") and line.endswith("-grams:"):
            section = int(line[1:].split("-")[0])
            order = max(order, section)
            continue
        if not section or not line or line.startswith("\\"):
            continue
        fields = line.split("\t")
        ngram = tuple(fields[1].split())
        prob[ngram] = float(fields[0])
        if len(fields) > 2:
            backoff[ngram] = float(fields[2])
    return prob, backoff, order


def _reference_log10(prob, backoff, order, tokens: list[str]) -> float:
    """Textbook back-off scoring: p(w|h) = p(w|h) if listed, else backoff(h) + p(w|h[1:])."""
    words = ["<s>"] + [t if (t,) in prob else "<unk>" for t in tokens] + ["</s>"]
    total = 0.0
    for i in range(1, len(words)):
        context = tuple(words[max(0, i - order + 1) : i])
        w = words[i]
        penalty = 0.0
        while (*context, w) not in prob:
            penalty += backoff.get(context, 0.0)
            context = context[1:]
        total += prob[(*context, w)] + penalty
    return total


@pytest.mark.parametrize(
    "sentence",
    [
        "the screening a little more.",
        "What I would also call for, however, is to look beyond immediate concerns in Biarritz.",
        "watching considering consider watch",
        "looking higher more loin, small.",
        "a little little a more more",
        "unknown words like aardvark appear here",
    ],
)
def test_scores_equal_textbook_backoff(arpa_scorer, sentence):
    prob, backoff, order = _read_arpa(shared_file("text", "kenlm_test.arpa"))
    expected = _reference_log10(prob, backoff, order, lm_tokens(sentence))
    assert arpa_scorer.score_line(sentence) == pytest.approx(expected, abs=1e-4)


def test_document_perplexity_formula(arpa_scorer):
    a = sum(SENTENCE_FULL_MATCH[1])
    b = sum(SENTENCE_WITH_BACKOFF[1])
    score = arpa_scorer.score_text("Looking on a little more loin\n\n  \nOn a loin\n")
    assert score.lines == 2
    assert score.length == (6 + 1) + (3 + 1)  # tokens + one </s> per line
    assert score.log10_prob == pytest.approx(a + b, abs=1e-5)
    assert score.perplexity == pytest.approx(10 ** (-(a + b) / 11), rel=1e-5)
    assert arpa_scorer.perplexity("") is None
    assert arpa_scorer.perplexity(" \n\x00\n") is None


# --------------------------------------------------------------------------------------- bad model files


def test_missing_model_file_names_the_path(tmp_path):
    missing = tmp_path / "en" / "model.binary"
    with pytest.raises(ValueError, match="not found: .*en/model.binary"):
        PerplexityScorer(missing)


@pytest.mark.parametrize(
    "content,kind",
    [
        (
            bytes(range(256)) * 40,
            "ARPA text",
        ),  # garbage bytes: kenlm would raise UnicodeDecodeError reading ARPA
        (b"just some text\nnot a model\n", "ARPA text"),
        (b"mmap lm http://kheafield.com/code format version 5\n\x00" + b"\xff" * 200, "kenlm binary"),
    ],
)
def test_corrupt_model_file_is_a_clear_error(tmp_path, content, kind):
    bad = tmp_path / "model.binary"
    bad.write_bytes(content)
    with pytest.raises(ValueError, match=rf"{bad}: not a valid KenLM model or corrupted \({kind}"):
        load_kenlm_model(bad)


def test_truncated_binary_and_empty_file_and_directory(tmp_path):
    arpa = shared_file("text", "kenlm_test.arpa")
    empty = tmp_path / "empty.binary"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        load_kenlm_model(empty)
    with pytest.raises(ValueError, match="not a file"):
        load_kenlm_model(tmp_path)
    truncated = tmp_path / "truncated.arpa"
    truncated.write_bytes(arpa.read_bytes()[:900])
    with pytest.raises(ValueError, match="truncated.arpa: not a valid KenLM model or corrupted"):
        load_kenlm_model(truncated)


def test_model_is_loaded_once_per_process():
    path = shared_file("text", "kenlm_test.arpa")
    assert load_kenlm_model(path) is load_kenlm_model(str(path))


# --------------------------------------------------------------------------------------------- tagging


def _doc(i: int, text: str, **extra) -> dict:
    return {
        "id": f"d{i}",
        "text": text,
        "source": "text",
        "url": None,
        "timestamp": None,
        "meta": None,
        **extra,
    }


def _write_part(path, rows: list[dict], schema: pa.Schema) -> str:
    with ParquetShardWriter(path, schema) as w:
        w.write_rows(rows)
    return str(path)


LANG_SCHEMA = DOCUMENT_SCHEMA.append(pa.field("lang", pa.string())).append(
    pa.field("lang_score", pa.float32())
)


def test_tag_shard_scores_model_languages_and_counts_the_rest(tmp_path):
    arpa = shared_file("text", "kenlm_test.arpa")
    rows = [
        _doc(0, "Looking on a little more loin\nOn a loin", lang="en", lang_score=0.9),
        _doc(1, "Bonjour tout le monde", lang="fr", lang_score=0.9),
        _doc(2, "Zebra.", lang=None, lang_score=None),
        _doc(3, "\n \n", lang="en", lang_score=0.5),
        _doc(4, "Guten Tag", lang="de", lang_score=0.8),
        _doc(5, "Un autre texte", lang="fr", lang_score=0.9),
    ]
    src = _write_part(tmp_path / "in.parquet", rows, LANG_SCHEMA)
    out = tmp_path / "out.parquet"
    result = tag_perplexity_shard(src, str(out), PerplexityParams(models={"en": str(arpa)}))

    schema = read_schema(out)
    assert schema.names == LANG_SCHEMA.names + ["perplexity"]
    assert schema.field("perplexity").type == pa.float32()
    got = {r["id"]: r for r in iter_rows(out)}
    expected = PerplexityScorer(arpa).perplexity(rows[0]["text"])
    assert got["d0"]["perplexity"] == pytest.approx(expected, rel=1e-6)
    assert got["d1"]["perplexity"] is None and got["d4"]["perplexity"] is None
    assert got["d2"]["perplexity"] is None  # no language and no default_lang: 'und', which has no model
    assert got["d3"]["perplexity"] is None  # a model, but not a single token
    assert got["d1"]["text"] == "Bonjour tout le monde" and got["d1"]["lang_score"] == pytest.approx(0.9)

    counts, stats = TAG_SUMMARY([result])
    assert counts == {
        "in": 6,
        "out": 6,
        "bytes_in": sum(len(r["text"].encode()) for r in rows),
        "tagged": 1,
        "no_tokens": 1,
        "no_model_de": 1,
        "no_model_fr": 2,
        "no_model_und": 1,
    }
    assert stats["tagged_per_lang"] == {"en": 1}
    assert stats["tokens_scored"] == 9 and stats["lines_scored"] == 2


def test_tag_shard_without_lang_column(tmp_path):
    arpa = str(shared_file("text", "kenlm_test.arpa"))
    src = _write_part(tmp_path / "in.parquet", [_doc(0, "on a loin"), _doc(1, "zebra .")], DOCUMENT_SCHEMA)
    with pytest.raises(ValueError, match="no `lang` column"):
        tag_perplexity_shard(src, str(tmp_path / "x.parquet"), PerplexityParams(models={"en": arpa}))
    assert not (tmp_path / "x.parquet").exists()  # nothing half-written
    params = PerplexityParams(models={"en": arpa}, default_lang="en")
    result = tag_perplexity_shard(src, str(tmp_path / "out.parquet"), params)
    assert result.extra["tagged"] == 2
    # re-tagging a tagged part replaces the column rather than adding a second one
    again = tag_perplexity_shard(str(tmp_path / "out.parquet"), str(tmp_path / "again.parquet"), params)
    assert again.extra["tagged"] == 2
    assert read_schema(tmp_path / "again.parquet").names.count("perplexity") == 1


def test_tag_shard_with_a_missing_model_fails_before_writing(tmp_path):
    src = _write_part(tmp_path / "in.parquet", [_doc(0, "text", lang="en", lang_score=1.0)], LANG_SCHEMA)
    params = PerplexityParams(models={"en": str(tmp_path / "nowhere" / "model.binary")})
    with pytest.raises(ValueError, match="KenLM model for 'en' not found: .*nowhere/model.binary"):
        tag_perplexity_shard(src, str(tmp_path / "out.parquet"), params)
    assert not (tmp_path / "out.parquet").exists()


def test_model_lookup_errors_name_the_language_and_path(tmp_path):
    arpa = str(shared_file("text", "kenlm_test.arpa"))
    (tmp_path / "models").mkdir()
    with pytest.raises(ValueError, match="model for 'fr' is a directory, not a model file: .*models"):
        resolve_models(PerplexityParams(models={"en": arpa, "fr": str(tmp_path / "models")}))
    with pytest.raises(ValueError, match="models_dir .*nothing-here is not a directory"):
        resolve_models(PerplexityParams(models_dir=str(tmp_path / "nothing-here")))
    with pytest.raises(ValueError, match="no <lang>/model.binary or <lang>/model.arpa under"):
        resolve_models(PerplexityParams(models_dir=str(tmp_path / "models")))
    (tmp_path / "models" / "en").mkdir()
    (tmp_path / "models" / "en" / "model.arpa").write_bytes(Path(arpa).read_bytes())
    found = resolve_models(PerplexityParams(models_dir=str(tmp_path / "models"), models={"de": arpa}))
    assert found == {"en": tmp_path / "models" / "en" / "model.arpa", "de": Path(arpa)}


def test_params_are_strict():
    with pytest.raises(ValueError, match="no KenLM model"):
        resolve_models(
            PerplexityParams()
        )  # no model is an error when models are looked up, not at config time
    with pytest.raises(ValidationError):
        PerplexityParams(models={"en": "m.binary"}, modles={})
    with pytest.raises(ValidationError, match="head_percentile must be below"):
        PerplexityFilterParams(head_percentile=60, tail_percentile=30)
    with pytest.raises(ValidationError):
        PerplexityFilterParams(keep_buckets=["head", "best"])
    with pytest.raises(ValidationError, match="keep at least one"):
        PerplexityFilterParams(keep_buckets=[])
    with pytest.raises(ValidationError, match="min_perplexity must be below"):
        PerplexityFilterParams(min_perplexity=500, max_perplexity=100)
    p = PerplexityFilterParams()
    assert (p.head_percentile, p.tail_percentile, p.keep_buckets) == (30, 60, ["head", "middle"])
    assert p.fingerprint_params()["keep_buckets"] == ["head", "middle"]


# ----------------------------------------------------------------------------------- cut-offs and filter


def test_bucket_cutoffs_per_language():
    cut = bucket_cutoffs(
        {"en": list(range(1, 101)), "fr": [10.0, 20.0, float("nan"), None], "xx": []}, 30, 60
    )
    assert cut["en"] == pytest.approx((30.7, 60.4))  # numpy's linear interpolation
    assert cut["fr"] == pytest.approx((13.0, 16.0))
    assert "xx" not in cut
    with pytest.raises(ValueError):
        bucket_cutoffs({"en": [1.0]}, 60, 30)


def test_bucket_convention_is_ccnet():
    cut = (100.0, 200.0)
    assert bucket_of(99.9, cut) == "head"
    assert bucket_of(100.0, cut) == "middle"  # head < p30 ≤ middle
    assert bucket_of(199.9, cut) == "middle"
    assert bucket_of(200.0, cut) == "tail"  # middle < p60 ≤ tail
    assert bucket_of(None, cut) is None
    assert bucket_of(150.0, None) is None


TAGGED_SCHEMA = LANG_SCHEMA.append(pa.field("perplexity", pa.float32()))


def _tagged_rows() -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for i, p in enumerate(rng.permutation(np.arange(1, 101))):
        rows.append(_doc(i, f"english doc {i}", lang="en", lang_score=1.0, perplexity=float(p) * 10))
    for i, p in enumerate([5.0, 50.0, 500.0, 5000.0]):
        rows.append(_doc(100 + i, f"doc francais {i}", lang="fr", lang_score=1.0, perplexity=p))
    rows.append(_doc(200, "sin modelo", lang="es", lang_score=1.0, perplexity=None))
    return rows


def test_compute_cutoffs_reads_tagged_parts(tmp_path):
    rows = _tagged_rows()
    a = _write_part(tmp_path / "part-00000.parquet", rows[:60], TAGGED_SCHEMA)
    b = _write_part(tmp_path / "part-00001.parquet", rows[60:], TAGGED_SCHEMA)
    values = defaultdict(list)
    for r in rows:
        values[r["lang"]].append(r["perplexity"])
    expected = bucket_cutoffs(values, 30, 60)
    for got in (
        compute_cutoffs([a, b], 30, 60),
        compute_cutoffs(tmp_path, 30, 60),
    ):  # parts, or a dataset dir
        assert got.keys() == expected.keys()
        for lang in expected:
            assert got[lang] == pytest.approx(expected[lang])
    assert set(expected) == {"en", "fr"}
    assert expected["en"] == pytest.approx((307.0, 604.0))
    untagged = _write_part(
        tmp_path / "untagged.parquet", [_doc(0, "x", lang="en", lang_score=1.0)], LANG_SCHEMA
    )
    with pytest.raises(ValueError, match="no `perplexity` column"):
        compute_cutoffs([untagged])


def test_filter_keeps_head_and_middle_and_counts_reasons(tmp_path):
    rows = _tagged_rows()
    src = _write_part(tmp_path / "in.parquet", rows, TAGGED_SCHEMA)
    cutoffs = {"en": [307.0, 604.0], "fr": (40.0, 600.0)}  # lists, as read back from a manifest, work too
    params = PerplexityFilterParams(max_perplexity=900, min_perplexity=20)
    out, rej = tmp_path / "out.parquet", tmp_path / "rejected.parquet"
    result = filter_perplexity_shard(src, str(out), str(rej), params, cutoffs)

    kept = {r["id"]: r for r in iter_rows(out)}
    rejected = {r["id"]: r for r in iter_rows(rej)}
    assert len(kept) + len(rejected) == len(rows)
    assert read_schema(out).names == TAGGED_SCHEMA.names + ["ppl_bucket"]
    assert read_schema(rej).names == TAGGED_SCHEMA.names + ["ppl_bucket", "reason"]
    for r in rows:
        p, doc_id = r["perplexity"], r["id"]
        if r["lang"] == "es":
            assert kept[doc_id]["ppl_bucket"] is None  # no model: kept, no bucket
            continue
        head, tail = cutoffs[r["lang"]]
        bucket = "head" if p < head else "middle" if p < tail else "tail"
        row = kept.get(doc_id) or rejected[doc_id]
        assert row["ppl_bucket"] == bucket
        if p < 20:
            assert rejected[doc_id]["reason"] == "perplexity_below_min"
        elif p > 900:
            assert rejected[doc_id]["reason"] == "perplexity_above_max"
        elif bucket == "tail":
            assert rejected[doc_id]["reason"] == "perplexity_tail"
        else:
            assert doc_id in kept
    counts, stats = FILTER_SUMMARY([result])
    # en: 10..1000 step 10 → head < 307 (30 docs), middle 307..603 (30), tail ≥ 604 (40: 30 tail + 10 above max)
    # fr: 5 below min, 50 middle, 500 middle, 5000 above max
    assert counts["dropped_perplexity_tail"] == 30
    assert counts["dropped_perplexity_above_max"] == 10 + 1
    assert counts["dropped_perplexity_below_min"] == 1 + 1  # en 10, fr 5
    assert counts["in"] == 105 and counts["out"] == 105 - 30 - 11 - 2
    assert counts["kept_without_perplexity"] == 1
    assert stats["buckets"] == {"head": 30 + 1, "middle": 30 + 2, "tail": 40 + 1, "none": 1}


def test_filter_can_keep_only_head_and_needs_tagged_input(tmp_path):
    rows = _tagged_rows()
    src = _write_part(tmp_path / "in.parquet", rows, TAGGED_SCHEMA)
    cutoffs = compute_cutoffs([src])
    params = PerplexityFilterParams(keep_buckets=["head"])
    result = filter_perplexity_shard(
        src, str(tmp_path / "o.parquet"), str(tmp_path / "r.parquet"), params, cutoffs
    )
    assert result.dropped == {"perplexity_middle": 30 + 1, "perplexity_tail": 40 + 2}
    assert result.docs_out == 30 + 1 + 1  # en head, fr head, es without a model
    # a language without cut-offs keeps its documents, without a bucket, and says so
    result = filter_perplexity_shard(
        src,
        str(tmp_path / "o2.parquet"),
        str(tmp_path / "r2.parquet"),
        PerplexityFilterParams(),
        {"en": (307, 604)},
    )
    assert result.extra["no_cutoffs"] == {"fr": 4}
    untagged = _write_part(
        tmp_path / "untagged.parquet", [_doc(0, "x", lang="en", lang_score=1.0)], LANG_SCHEMA
    )
    with pytest.raises(ValueError, match="no `perplexity` column"):
        filter_perplexity_shard(
            untagged, str(tmp_path / "o3.parquet"), str(tmp_path / "r3.parquet"), params, {}
        )


# --------------------------------------------------------------------------------- CCNet head documents


def test_ccnet_head_documents_carry_their_recorded_perplexity():
    path = shared_file("commoncrawl", "dolma_cc_en_head-0091.jsonl.gz")
    docs = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
    assert len(docs) == 10
    recorded = [d["metadata"]["perplexity"] for d in docs]
    assert all(d["metadata"]["bucket"] == "head" and d["metadata"]["language"] == "en" for d in docs)
    # CCNet's English head: below its 30th percentile, which for Wikipedia-trained models lies near 300–350
    assert all(100 < p < 350 for p in recorded)
    # our scoring on these documents is well defined (ranking against CCNet's is shown in bench/)
    scorer = PerplexityScorer(shared_file("text", "kenlm_test.arpa"))
    for d in docs:
        score = scorer.score_text(d["text"])
        assert score.lines >= 1 and math.isfinite(score.perplexity) and score.perplexity > 1


def test_tagged_part_round_trips_through_pyarrow(tmp_path):
    """The output is plain Parquet: any reader sees `perplexity` as float32 without our library."""
    arpa = str(shared_file("text", "kenlm_test.arpa"))
    src = _write_part(tmp_path / "in.parquet", [_doc(0, "on a loin", lang="en", lang_score=1.0)], LANG_SCHEMA)
    tag_perplexity_shard(src, str(tmp_path / "out.parquet"), PerplexityParams(models={"en": arpa}))
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.column("perplexity").type == pa.float32()
    assert table.column("perplexity")[0].as_py() == pytest.approx(10 ** (5.3199692 / 4), rel=1e-5)
