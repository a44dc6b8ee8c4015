"""The `perplexity` stage (CCNet-style KenLM perplexity tagging, bucketing and filtering) and the text
preparation it shares with `kenlm-train`. See docs/perplexity.md for the choices and the figures.
"""

from tasks.perplexity.scorer import DocScore, PerplexityScorer, clear_model_cache, load_kenlm_model
from tasks.perplexity.stage import (
    BUCKETS,
    FILTER_SUMMARY,
    STAGE,
    STAGE_VERSION,
    TAG_SUMMARY,
    PerplexityFilterParams,
    PerplexityParams,
    bucket_cutoffs,
    bucket_of,
    compute_cutoffs,
    filter_perplexity_shard,
    filter_reason,
    load_scorers,
    resolve_models,
    tag_perplexity_shard,
)
from tasks.perplexity.text import lm_lines, lm_tokens, normalize_line, strip_accents, tokenize

__all__ = [
    "BUCKETS",
    "STAGE",
    "STAGE_VERSION",
    "TAG_SUMMARY",
    "FILTER_SUMMARY",
    "DocScore",
    "PerplexityFilterParams",
    "PerplexityParams",
    "PerplexityScorer",
    "bucket_cutoffs",
    "bucket_of",
    "clear_model_cache",
    "compute_cutoffs",
    "filter_perplexity_shard",
    "filter_reason",
    "lm_lines",
    "lm_tokens",
    "load_kenlm_model",
    "load_scorers",
    "normalize_line",
    "resolve_models",
    "strip_accents",
    "tag_perplexity_shard",
    "tokenize",
]
