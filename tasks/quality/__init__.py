"""The `quality` stage: Gopher quality and repetition signals and C4 line rules as columns, then a filter.

`signals` holds the pure text functions, `stage` the params models and the shard functions the flow maps.
"""

from tasks.quality.signals import (
    DEFAULT_STOP_WORDS,
    SIGNAL_COLUMNS,
    C4Rules,
    DocumentSignals,
    document_signals,
    quality_signals,
    strip_chat_authors,
)
from tasks.quality.stage import (
    FILTER_SUMMARY,
    QUALITY_COLUMNS,
    RULES,
    STAGE,
    STAGE_VERSION,
    TAG_SUMMARY,
    QualityFilterParams,
    QualitySignalsParams,
    QualityThresholds,
    chat_thresholds,
    filter_quality_shard,
    quality_reasons,
    tag_quality_shard,
)

__all__ = [
    "DEFAULT_STOP_WORDS",
    "QUALITY_COLUMNS",
    "RULES",
    "SIGNAL_COLUMNS",
    "STAGE",
    "STAGE_VERSION",
    "TAG_SUMMARY",
    "FILTER_SUMMARY",
    "C4Rules",
    "DocumentSignals",
    "QualityFilterParams",
    "QualitySignalsParams",
    "QualityThresholds",
    "chat_thresholds",
    "document_signals",
    "filter_quality_shard",
    "quality_reasons",
    "quality_signals",
    "strip_chat_authors",
    "tag_quality_shard",
]
