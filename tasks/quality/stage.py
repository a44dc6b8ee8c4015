"""The `quality` stage as two shard functions: tag every document with its signals, then filter on thresholds.

`tag_quality_shard` computes the `quality_*` columns once (and applies the C4 line rules to web text);
`filter_quality_shard` decides from those columns alone, so re-tuning a threshold re-runs only the cheap filter.
Each source gets a rule set: WhatsApp conversations are judged by the `chat` thresholds (a few rules that suit
short, unpunctuated messages) and their lines are never removed; everything else by the `web` thresholds
(Gopher quality and repetition, C4), whose defaults are those of the Gopher paper and datatrove.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
from pydantic import Field

from tasks.base import StrictModel
from tasks.quality.signals import (
    DEFAULT_STOP_WORDS,
    INT_COLUMNS,
    SIGNAL_COLUMNS,
    C4Rules,
    documents_signals,
)
from tasks.records import CHAT_SOURCES
from tasks.shard_drivers import ShardCounts, Summary, filter_shard, keep_rate, part_schema, tag_shard

STAGE = "quality"
STAGE_VERSION = "1"
FILTER_STAGE_VERSION = "1"

RuleSet = Literal["web", "prose", "chat", "none"]
RULE_SET_COLUMN = "quality_rule_set"


class QualitySignalsParams(StrictModel):
    """What the tagging computes: the rule set per source, the C4 line rules, stop-word lists per language."""

    rule_sets: dict[str, RuleSet] = Field(
        default_factory=lambda: {**dict.fromkeys(CHAT_SOURCES, "chat"), "text": "prose"},
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


# ---------------------------------------------------------------------------------------------------------------
# Tagging
# ---------------------------------------------------------------------------------------------------------------


def tag_quality_shard(in_part: str, out_part: str, params: QualitySignalsParams) -> ShardCounts:
    """Write `in_part` to `out_part` with the quality columns; web text loses the lines the C4 rules reject.

    `extra` counts documents per rule set (`rule_sets`) and lines removed per C4 rule (`lines_removed`)."""
    has_lang = "lang" in part_schema(in_part).names
    stop_lists = {lang: frozenset(w.lower() for w in words) for lang, words in params.stop_words.items()}
    fallback = stop_lists.get(params.default_stop_words) if params.default_stop_words else None
    c4 = params.c4_rules()

    def tag(batch: pa.RecordBatch, counts: ShardCounts) -> dict:
        texts = batch.column("text").to_pylist()
        sources = batch.column("source").to_pylist()
        langs = batch.column("lang").to_pylist() if has_lang else [None] * len(texts)
        rule_sets = [params.rule_set_of(source) for source in sources]
        docs = documents_signals(texts, rule_sets, [stop_lists.get(lang, fallback) for lang in langs], c4)
        counts.tally_each("rule_sets", rule_sets)
        for doc in docs:
            counts.tally_each("lines_removed", doc.c4_removed_by_rule)
        columns: dict[str, list] = {"text": [doc.text for doc in docs], RULE_SET_COLUMN: rule_sets}
        for name in SIGNAL_COLUMNS:
            columns[name] = [doc.signals[name] for doc in docs]
        return columns

    return tag_shard(
        in_part,
        out_part,
        quality_schema_fields(),
        tag,
        rewrites_text=True,
        required=("text", "source"),
        hint="not a document dataset",
    )


def quality_tag_stats(total: ShardCounts, _shards: Sequence[ShardCounts]) -> dict:
    seconds = total.extra.get("seconds", 0)
    return {
        "rule_sets": dict(sorted(total.extra.get("rule_sets", {}).items())),
        "c4_lines_removed": dict(sorted(total.extra.get("lines_removed", {}).items())),
        "docs_per_second": total.docs_in / seconds if seconds else None,
    }


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


def filter_quality_shard(
    in_part: str, out_part: str, rejected_part: str, params: QualityFilterParams
) -> ShardCounts:
    """Split a tagged part into kept rows and rejected rows (with the first failing rule as `reason`)."""
    return filter_shard(
        in_part,
        out_part,
        rejected_part,
        lambda batch, _counts: quality_reasons(batch, params),
        required=QUALITY_COLUMNS,
        hint="run the quality tagging first",
    )


TAG_SUMMARY = Summary(counted={}, stats=quality_tag_stats)
FILTER_SUMMARY = Summary(stats=keep_rate)
