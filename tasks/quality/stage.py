"""The `quality` stage as two shard functions: tag every document with its signals, then filter on thresholds.

`tag_quality_shard` computes the `quality_*` columns once (and applies the C4 line rules to web text);
`filter_quality_shard` decides from those columns alone, so re-tuning a threshold re-runs only the cheap filter.
Each source gets a rule set: WhatsApp conversations are judged by the `chat` thresholds (a few rules that suit
short, unpunctuated messages) and their lines are never removed; everything else by the `web` thresholds
(Gopher quality and repetition, C4), whose defaults are those of the Gopher paper and datatrove.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from storage.parquet import ParquetShardWriter, iter_batches, read_schema
from storage.schemas import with_reason
from tasks.base import StrictModel
from tasks.quality.signals import (
    DEFAULT_STOP_WORDS,
    INT_COLUMNS,
    SIGNAL_COLUMNS,
    C4Rules,
    document_signals,
)

STAGE = "quality"
STAGE_VERSION = "1"
FILTER_STAGE_VERSION = "1"

RuleSet = Literal["web", "prose", "chat", "none"]
RULE_SET_COLUMN = "quality_rule_set"


class QualitySignalsParams(StrictModel):
    """What the tagging computes: the rule set per source, the C4 line rules, stop-word lists per language."""

    rule_sets: dict[str, RuleSet] = Field(
        default_factory=lambda: {"whatsapp": "chat", "text": "prose"},
        description="Rule set per value of the `source` column.",
    )
    default_rule_set: RuleSet = Field("web", description="Rule set of sources not listed in `rule_sets`.")
    c4_remove_lines: bool = Field(True, description="Web text: drop the lines the C4 line rules reject.")
    c4_min_words_per_line: int = Field(3, ge=0)
    c4_max_word_length: int = Field(
        1000, ge=0, description="Lines with a longer word are removed; 0: no limit."
    )
    c4_terminal_punctuation: bool = Field(True, description="Remove lines that do not end like a sentence.")
    c4_javascript: bool = Field(True, description="Remove lines mentioning JavaScript.")
    c4_policy: bool = Field(True, description="Remove cookie / privacy-policy / terms-of-use lines.")
    c4_citations: bool = Field(True, description="Strip Wikipedia citation marks such as [1] and [edit].")
    stop_words: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_STOP_WORDS.items()},
        description="Stop words per language (value of `lang`); other languages have no stop-word signal.",
    )
    default_stop_words: str | None = Field(
        None, description="Language whose list applies when a document's language has none (or no `lang`)."
    )

    def rule_set_of(self, source: str | None) -> str:
        return self.rule_sets.get(source or "", self.default_rule_set)

    def c4_rules(self) -> C4Rules:
        return C4Rules(
            remove_lines=self.c4_remove_lines,
            min_words_per_line=self.c4_min_words_per_line,
            max_word_length=self.c4_max_word_length,
            terminal_punctuation=self.c4_terminal_punctuation,
            javascript=self.c4_javascript,
            policy=self.c4_policy,
            citations=self.c4_citations,
        )


class QualityThresholds(StrictModel):
    """One threshold per rule; `None` switches a rule off. Field order is the order rules are checked in.

    A field `min_X` / `max_X` reads the column `quality_X`, and a document it rejects gets the reason
    `quality_min_X` / `quality_max_X`. A rule whose column is empty for a document (e.g. C4 on chat text,
    stop words in a language without a list) does not apply to it.
    """

    # Gopher quality
    min_words: int | None = 50
    max_words: int | None = 100_000
    min_mean_word_length: float | None = 3.0
    max_mean_word_length: float | None = 10.0
    max_hash_word_ratio: float | None = 0.1
    max_ellipsis_word_ratio: float | None = 0.1
    max_bullet_lines_frac: float | None = 0.9
    max_ellipsis_lines_frac: float | None = 0.3
    min_alpha_words_frac: float | None = 0.8
    min_stop_words: int | None = 2
    # Gopher repetition
    max_dup_para_frac: float | None = 0.3
    max_dup_para_char_frac: float | None = 0.2
    max_dup_line_frac: float | None = 0.3
    max_dup_line_char_frac: float | None = 0.2
    max_top_2gram_char_frac: float | None = 0.20
    max_top_3gram_char_frac: float | None = 0.18
    max_top_4gram_char_frac: float | None = 0.16
    max_dup_5gram_char_frac: float | None = 0.15
    max_dup_6gram_char_frac: float | None = 0.14
    max_dup_7gram_char_frac: float | None = 0.13
    max_dup_8gram_char_frac: float | None = 0.12
    max_dup_9gram_char_frac: float | None = 0.11
    max_dup_10gram_char_frac: float | None = 0.10
    # C4 (document level; the line rules already ran when tagging)
    max_c4_lorem_ipsum_lines: int | None = 0
    max_c4_curly_bracket_lines: int | None = 0
    min_c4_sentences: int | None = 5


def chat_thresholds() -> QualityThresholds:
    """Defaults for conversations: enough words, mostly words with letters, not one message pasted over and over."""
    off = dict.fromkeys(QualityThresholds.model_fields)
    return QualityThresholds(
        **{
            **off,
            "min_words": 5,
            "min_alpha_words_frac": 0.5,
            "max_dup_line_frac": 0.6,
            "max_dup_10gram_char_frac": 0.5,
        }
    )


class QualityFilterParams(StrictModel):
    """Thresholds per rule set (documents of rule set `none` are always kept); `prose` starts as `web`."""

    web: QualityThresholds = Field(default_factory=QualityThresholds)
    prose: QualityThresholds = Field(default_factory=QualityThresholds)
    chat: QualityThresholds = Field(default_factory=chat_thresholds)


@dataclass(frozen=True)
class QualityRule:
    name: str  # the thresholds field, e.g. "max_dup_line_frac"; the reject reason is "quality_" + name
    column: str
    upper: bool  # True: values above the threshold fail; False: values below it fail


RULES: tuple[QualityRule, ...] = tuple(
    QualityRule(name, "quality_" + name[4:], name.startswith("max_"))
    for name in QualityThresholds.model_fields
)
assert all(r.column in SIGNAL_COLUMNS for r in RULES), "every threshold must read a signal column"


def quality_schema_fields() -> list[pa.Field]:
    fields = [pa.field(RULE_SET_COLUMN, pa.string())]
    for name in SIGNAL_COLUMNS:
        fields.append(pa.field(name, pa.int32() if name in INT_COLUMNS else pa.float32()))
    return fields


QUALITY_COLUMNS = tuple(f.name for f in quality_schema_fields())


def tagged_schema(schema: pa.Schema) -> pa.Schema:
    """The input schema without older quality columns, plus the quality columns."""
    for name in QUALITY_COLUMNS:
        if schema.get_field_index(name) >= 0:
            schema = schema.remove(schema.get_field_index(name))
    for f in quality_schema_fields():
        schema = schema.append(f)
    return schema


# ---------------------------------------------------------------------------------------------------------------
# Tagging
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class QualityTagResult:
    part: str
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    rule_sets: dict = field(default_factory=dict)
    lines_removed: dict = field(default_factory=dict)


def _check_columns(path: str, schema: pa.Schema, needed: tuple[str, ...], hint: str) -> None:
    missing = [c for c in needed if schema.get_field_index(c) < 0]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)} ({hint})")


def tag_quality_shard(in_part: str, out_part: str, params: QualitySignalsParams) -> QualityTagResult:
    """Write `in_part` to `out_part` with the quality columns; web text loses the lines the C4 rules reject."""
    started = time.perf_counter()
    schema = read_schema(in_part)
    _check_columns(in_part, schema, ("text", "source"), "not a document dataset")
    has_lang = schema.get_field_index("lang") >= 0
    out_schema = tagged_schema(schema)
    result = QualityTagResult(part=out_part)
    rule_sets: Counter = Counter()
    lines_removed: Counter = Counter()
    stop_lists = {lang: frozenset(w.lower() for w in words) for lang, words in params.stop_words.items()}
    fallback = stop_lists.get(params.default_stop_words) if params.default_stop_words else None
    c4 = params.c4_rules()
    with ParquetShardWriter(out_part, out_schema) as writer:
        for batch in iter_batches(in_part):
            texts = batch.column("text").to_pylist()
            sources = batch.column("source").to_pylist()
            langs = batch.column("lang").to_pylist() if has_lang else [None] * len(texts)
            new_texts: list[str] = []
            kinds: list[str] = []
            columns: dict[str, list] = {name: [] for name in SIGNAL_COLUMNS}
            for text, source, lang in zip(texts, sources, langs, strict=True):
                rule_set = params.rule_set_of(source)
                doc = document_signals(text, rule_set, stop_words=stop_lists.get(lang, fallback), c4=c4)
                rule_sets[rule_set] += 1
                lines_removed.update(doc.c4_removed_by_rule)
                result.bytes_in += len(text.encode("utf-8"))
                result.bytes_out += len(doc.text.encode("utf-8"))
                new_texts.append(doc.text)
                kinds.append(rule_set)
                for name in SIGNAL_COLUMNS:
                    columns[name].append(doc.signals[name])
            table = pa.Table.from_batches([batch])
            for name in QUALITY_COLUMNS:
                if name in table.column_names:
                    table = table.drop_columns([name])
            table = table.set_column(
                table.column_names.index("text"), "text", pa.array(new_texts, pa.string())
            )
            table = table.append_column(RULE_SET_COLUMN, pa.array(kinds, pa.string()))
            for name in SIGNAL_COLUMNS:
                table = table.append_column(name, pa.array(columns[name], out_schema.field(name).type))
            writer.write_batch(table)
            result.docs_in += len(texts)
            result.docs_out += len(texts)
    result.rule_sets = dict(rule_sets)
    result.lines_removed = dict(lines_removed)
    result.seconds = time.perf_counter() - started
    return result


def summarize_quality_tags(results: list[QualityTagResult]) -> tuple[dict, dict]:
    rule_sets: Counter = Counter()
    lines: Counter = Counter()
    for r in results:
        rule_sets.update(r.rule_sets)
        lines.update(r.lines_removed)
    seconds = sum(r.seconds for r in results)
    counts = {
        "in": sum(r.docs_in for r in results),
        "out": sum(r.docs_out for r in results),
        "bytes_in": sum(r.bytes_in for r in results),
        "bytes_out": sum(r.bytes_out for r in results),
    }
    stats = {
        "rule_sets": dict(sorted(rule_sets.items())),
        "c4_lines_removed": dict(sorted(lines.items())),
        "docs_per_second": counts["in"] / seconds if seconds else None,
    }
    return counts, stats


# ---------------------------------------------------------------------------------------------------------------
# Filtering
# ---------------------------------------------------------------------------------------------------------------


def _as_numbers(column: pa.ChunkedArray | pa.Array, name: str) -> np.ndarray:
    """A signal column as numbers with NaN where empty (NaN never fails a comparison)."""
    dtype = np.float64 if name in INT_COLUMNS else np.float32
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=dtype)


def quality_reasons(table: pa.Table | pa.RecordBatch, params: QualityFilterParams) -> np.ndarray:
    """Per row, the reason of the first rule that rejects it, or None; reads only the quality columns."""
    n = table.num_rows
    reasons = np.full(n, None, dtype=object)
    kinds = np.asarray(table.column(RULE_SET_COLUMN).to_pylist(), dtype=object)
    values = {name: _as_numbers(table.column(name), name) for name in SIGNAL_COLUMNS}
    for rule_set, thresholds in (("web", params.web), ("prose", params.prose), ("chat", params.chat)):
        in_set = kinds == rule_set
        if not in_set.any():
            continue
        for rule in RULES:
            threshold = getattr(thresholds, rule.name)
            if threshold is None:
                continue
            v = values[rule.column]
            limit = v.dtype.type(threshold)  # compare in the column's precision: 0.3 stored is 0.3 read
            failing = (v > limit) if rule.upper else (v < limit)
            hit = failing & in_set & (reasons == None)  # noqa: E711 - elementwise on an object array
            reasons[hit] = "quality_" + rule.name
    return reasons


@dataclass
class QualityFilterResult:
    part: str
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    dropped: dict = field(default_factory=dict)


def filter_quality_shard(
    in_part: str, out_part: str, rejected_part: str, params: QualityFilterParams
) -> QualityFilterResult:
    """Split a tagged part into kept rows and rejected rows (with the first failing rule as `reason`)."""
    schema = read_schema(in_part)
    _check_columns(in_part, schema, QUALITY_COLUMNS, "run the quality tagging first")
    result = QualityFilterResult(part=out_part)
    dropped: Counter = Counter()
    with (
        ParquetShardWriter(out_part, schema) as kept,
        ParquetShardWriter(rejected_part, with_reason(schema)) as rejected,
    ):
        for batch in iter_batches(in_part):
            reasons = quality_reasons(batch, params)
            keep = reasons == None  # noqa: E711
            table = pa.Table.from_batches([batch])
            sizes = pc.binary_length(table.column("text")).to_numpy(zero_copy_only=False)
            kept.write_batch(table.filter(pa.array(keep)))
            if (~keep).any():
                gone = table.filter(pa.array(~keep))
                gone = gone.append_column("reason", pa.array(reasons[~keep].tolist(), pa.string()))
                rejected.write_batch(gone)
                dropped.update(reasons[~keep].tolist())
            result.docs_in += table.num_rows
            result.docs_out += int(keep.sum())
            result.bytes_in += int(sizes.sum())
            result.bytes_out += int(sizes[keep].sum())
    result.dropped = dict(dropped)
    return result


def summarize_quality_filter(results: list[QualityFilterResult]) -> tuple[dict, dict]:
    dropped: Counter = Counter()
    for r in results:
        dropped.update(r.dropped)
    counts = {
        "in": sum(r.docs_in for r in results),
        "out": sum(r.docs_out for r in results),
        "bytes_in": sum(r.bytes_in for r in results),
        "bytes_out": sum(r.bytes_out for r in results),
        **{f"dropped_{k}": v for k, v in sorted(dropped.items())},
    }
    kept = counts["out"] / counts["in"] if counts["in"] else None
    return counts, {"keep_rate": kept}
