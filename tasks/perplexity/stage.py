"""The `perplexity` stage on Parquet shards: tag every document with its KenLM perplexity, then bucket and filter.

Tag, then filter (as Dolma does): `tag_perplexity_shard` adds a `perplexity` column (float32) using the model of
each document's `lang`; a document in a language without a model gets null and passes through, counted as
`no_model_<lang>`. A reduce step over all tagged shards (`compute_cutoffs`, reading only `lang` and `perplexity`)
gives per-language percentile cut-offs, stored in the manifest; `filter_perplexity_shard` then adds `ppl_bucket`
with CCNet's convention

    head: perplexity < p_head      middle: p_head ≤ perplexity < p_tail      tail: p_tail ≤ perplexity

(p_head, p_tail = the 30th and 60th percentiles of that language by default) and keeps the chosen buckets.
Re-tuning the percentiles or thresholds re-runs only the filter, never KenLM.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
from pydantic import Field, field_validator, model_validator

from storage.parquet import iter_batches, parquet_files, read_schema
from tasks.base import StrictModel
from tasks.perplexity.scorer import MODEL_ARPA, MODEL_BINARY, PerplexityScorer
from tasks.shard_drivers import ShardCounts, Summary, Verdicts, filter_shard, tag_shard

STAGE = "perplexity"
STAGE_VERSION = "1"

Bucket = Literal["head", "middle", "tail"]
BUCKETS: tuple[str, ...] = ("head", "middle", "tail")
UNDETERMINED = "und"  # the language key of a row whose `lang` is null (BCP 47 "undetermined")

PERPLEXITY_FIELD = pa.field("perplexity", pa.float32())
BUCKET_FIELD = pa.field("ppl_bucket", pa.string())


class PerplexityParams(StrictModel):
    """Tagging: which KenLM model scores which language."""

    models: dict[str, str] = Field(
        default_factory=dict, description="Language → model file (binary or ARPA)."
    )
    models_dir: str | None = Field(
        None, description="A kenlm-train dataset: every `<lang>/model.binary` (or model.arpa) in it is used."
    )
    default_lang: str | None = Field(
        None,
        description="Language of documents whose `lang` is null, or of all of them when there is no column.",
    )


class PerplexityFilterParams(StrictModel):
    """Bucketing and filtering on the `perplexity` column (no KenLM involved)."""

    head_percentile: float = Field(30, gt=0, lt=100)
    tail_percentile: float = Field(60, gt=0, lt=100)
    keep_buckets: list[Bucket] = Field(default_factory=lambda: ["head", "middle"])
    max_perplexity: float | None = Field(
        None, gt=0, description="Drop documents above this, whatever the bucket."
    )
    min_perplexity: float | None = Field(
        None, gt=0, description="Drop documents below this: near-copies of the reference corpus, boilerplate."
    )
    default_lang: str | None = Field(None, description="As in PerplexityParams (must be the same).")

    @field_validator("keep_buckets")
    @classmethod
    def _buckets(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("keep_buckets: keep at least one of head, middle, tail")
        return sorted(set(value), key=BUCKETS.index)

    @model_validator(mode="after")
    def _ordered(self) -> PerplexityFilterParams:
        if self.head_percentile >= self.tail_percentile:
            raise ValueError("head_percentile must be below tail_percentile")
        if self.min_perplexity is not None and self.max_perplexity is not None:
            if self.min_perplexity >= self.max_perplexity:
                raise ValueError("min_perplexity must be below max_perplexity")
        return self


def resolve_models(params: PerplexityParams) -> dict[str, Path]:
    """Language → model file: `models_dir/<lang>/model.binary` (or .arpa), overridden by explicit `models`."""
    found: dict[str, Path] = {}
    if params.models_dir:
        root = Path(params.models_dir)
        if not root.is_dir():
            raise ValueError(
                f"perplexity: models_dir {root} is not a directory (expected kenlm-train output)"
            )
        for sub in sorted(p for p in root.iterdir() if p.is_dir()):
            for name in (MODEL_BINARY, MODEL_ARPA):
                if (sub / name).is_file():
                    found[sub.name] = sub / name
                    break
        if not found:
            raise ValueError(f"perplexity: no <lang>/{MODEL_BINARY} or <lang>/{MODEL_ARPA} under {root}")
    for lang, path in params.models.items():
        if not Path(path).is_file():
            what = "is a directory, not a model file" if Path(path).is_dir() else "not found"
            raise ValueError(
                f"perplexity: the KenLM model for '{lang}' {what}: {path} (fix models.{lang}, or train one "
                "with kenlm-train)"
            )
        found[lang] = Path(path)
    if not found:
        raise ValueError(
            "perplexity: no KenLM model: give `models` (language → model file), `models_dir` (kenlm-train "
            "output), or kenlm_train.references so the pipeline trains them"
        )
    return found


def load_scorers(params: PerplexityParams) -> dict[str, PerplexityScorer]:
    """One scorer per language, every model loaded now (a bad model file fails here, naming its path)."""
    return {lang: PerplexityScorer(path) for lang, path in resolve_models(params).items()}


def _row_langs(batch: pa.RecordBatch | pa.Table, default_lang: str | None, part: str) -> list[str]:
    """The language key of every row: `lang`, else `default_lang`, else 'und'."""
    if "lang" not in batch.schema.names:
        if default_lang is None:
            raise ValueError(f"{part}: no `lang` column (run langid first, or set default_lang)")
        return [default_lang] * batch.num_rows
    fallback = default_lang or UNDETERMINED
    return [v or fallback for v in batch.column("lang").to_pylist()]


# ---------------------------------------------------------------------------------------------------- tagging


def tag_perplexity_shard(
    in_part: str,
    out_part: str,
    params: PerplexityParams,
    scorers: Mapping[str, PerplexityScorer] | None = None,
) -> ShardCounts:
    """Copy `in_part` to `out_part` with a `perplexity` column (float32; null without a model or without tokens).

    `scorers` (from `load_scorers`) can be passed to reuse loaded models; by default they are loaded here
    (once per process: the model cache makes a second load free). `extra` counts the documents `tagged`
    (`per_lang`), passed through for want of a model (`no_model`, per language) or of tokens (`no_tokens`),
    and the `lines` and `tokens` scored.
    """
    scorers = load_scorers(params) if scorers is None else scorers

    def tag(batch: pa.RecordBatch, counts: ShardCounts) -> dict:
        langs = _row_langs(batch, params.default_lang, in_part)
        values: list[float | None] = []
        for text, lang in zip(batch.column("text").to_pylist(), langs, strict=True):
            scorer = scorers.get(lang)
            if scorer is None:
                counts.tally_each("no_model", [lang])
                values.append(None)
                continue
            score = scorer.score_text(text or "")
            if score.perplexity is None:
                counts.tally("no_tokens")
            else:
                counts.tally("tagged")
                counts.tally_each("per_lang", [lang])
                counts.tally("lines", score.lines)
                counts.tally("tokens", score.tokens)
            values.append(score.perplexity)
        return {PERPLEXITY_FIELD.name: values}

    return tag_shard(in_part, out_part, [PERPLEXITY_FIELD], tag, required=("text",))


def perplexity_tag_stats(total: ShardCounts, _shards: Sequence[ShardCounts]) -> dict:
    seconds = total.extra.get("seconds", 0)
    return {
        "tagged_per_lang": dict(sorted(total.extra.get("per_lang", {}).items())),
        "lines_scored": total.extra.get("lines", 0),
        "tokens_scored": total.extra.get("tokens", 0),
        "task_seconds": round(seconds, 3),
        "docs_per_task_second": round(total.docs_in / seconds, 1) if seconds else None,
        "mb_per_task_second": round(total.bytes_in / 1e6 / seconds, 3) if seconds else None,
    }


# ----------------------------------------------------------------------------------------------- cut-offs


def bucket_cutoffs(
    perplexities: Mapping[str, Iterable[float]], head_percentile: float = 30, tail_percentile: float = 60
) -> dict[str, tuple[float, float]]:
    """Per language, (p_head, p_tail): the head/tail percentiles of its perplexities (linear interpolation).

    Null/NaN values are ignored; a language without any value gets no cut-offs (its documents get no bucket).
    """
    if not 0 < head_percentile < tail_percentile < 100:
        raise ValueError(
            f"percentiles must satisfy 0 < head < tail < 100, got {head_percentile}, {tail_percentile}"
        )
    cutoffs: dict[str, tuple[float, float]] = {}
    for lang, values in sorted(perplexities.items()):
        arr = np.asarray(
            [v for v in values if v is not None] if not isinstance(values, np.ndarray) else values,
            dtype=np.float64,
        )
        arr = arr[~np.isnan(arr)]
        if arr.size == 0:
            continue
        head, tail = np.percentile(arr, [head_percentile, tail_percentile])
        cutoffs[lang] = (float(head), float(tail))
    return cutoffs


def compute_cutoffs(
    parts: Sequence[str | os.PathLike] | str | os.PathLike,
    head_percentile: float = 30,
    tail_percentile: float = 60,
    default_lang: str | None = None,
) -> dict[str, tuple[float, float]]:
    """`bucket_cutoffs` over tagged Parquet parts (or a dataset directory), reading only `lang` and `perplexity`.

    Memory: 4 bytes per document with a perplexity (float32 per language).
    """
    if isinstance(parts, (str, os.PathLike)):
        parts = parquet_files(parts) if Path(parts).is_dir() else [Path(parts)]
    chunks: dict[str, list[np.ndarray]] = {}
    for part in parts:
        names = read_schema(part).names
        if "perplexity" not in names:
            raise ValueError(
                f"{part}: no `perplexity` column (tag the shard with tag_perplexity_shard first)"
            )
        columns = ["perplexity"] + (["lang"] if "lang" in names else [])
        for batch in iter_batches(Path(part), columns=columns):
            ppl = batch.column("perplexity").to_numpy(zero_copy_only=False).astype(np.float32)
            langs = np.asarray(_row_langs(batch, default_lang, str(part)), dtype=object)
            valid = ~np.isnan(ppl)
            for lang in set(langs[valid]):
                chunks.setdefault(lang, []).append(ppl[valid & (langs == lang)])
    values = {lang: np.concatenate(c) for lang, c in chunks.items()}
    return bucket_cutoffs(values, head_percentile, tail_percentile)


# ---------------------------------------------------------------------------------------------------- filter


def bucket_of(perplexity: float | None, cutoff: Sequence[float] | None) -> str | None:
    """'head' / 'middle' / 'tail' by CCNet's convention; None without a perplexity or without cut-offs."""
    if perplexity is None or cutoff is None or math.isnan(perplexity):
        return None
    p_head, p_tail = cutoff
    if perplexity < p_head:
        return "head"
    if perplexity < p_tail:
        return "middle"
    return "tail"


def filter_reason(perplexity: float | None, bucket: str | None, params: PerplexityFilterParams) -> str | None:
    """Why a document is dropped, or None to keep it. Documents without a perplexity are always kept."""
    if perplexity is None or math.isnan(perplexity):
        return None
    if params.min_perplexity is not None and perplexity < params.min_perplexity:
        return "perplexity_below_min"
    if params.max_perplexity is not None and perplexity > params.max_perplexity:
        return "perplexity_above_max"
    if bucket is not None and bucket not in params.keep_buckets:
        return f"perplexity_{bucket}"
    return None


def filter_perplexity_shard(
    in_part: str,
    out_part: str,
    rejected_part: str,
    params: PerplexityFilterParams,
    cutoffs: Mapping[str, Sequence[float]],
) -> ShardCounts:
    """Add `ppl_bucket` to a tagged part; keep the chosen buckets, the rest goes to `rejected_part` with a reason.

    `cutoffs` is `compute_cutoffs(...)` (or the same mapping read back from the manifest: lists work too).
    `extra` counts documents per bucket before dropping (`buckets`), those kept without a perplexity, and per
    language those with a perplexity but no cut-offs (`no_cutoffs`).
    """

    def bucket_and_filter(batch: pa.RecordBatch, counts: ShardCounts) -> Verdicts:
        langs = _row_langs(batch, params.default_lang, in_part)
        buckets: list[str | None] = []
        reasons: list[str | None] = []
        for ppl, lang in zip(batch.column("perplexity").to_pylist(), langs, strict=True):
            cutoff = cutoffs.get(lang)
            measured = ppl is not None and not math.isnan(ppl)
            if measured and cutoff is None:
                counts.tally_each("no_cutoffs", [lang])
            if not measured:
                counts.tally("kept_without_perplexity")
            bucket = bucket_of(ppl, cutoff)
            counts.tally_each("buckets", [bucket or "none"])
            buckets.append(bucket)
            reasons.append(filter_reason(ppl, bucket, params))
        return Verdicts(reasons, columns={BUCKET_FIELD.name: buckets})

    return filter_shard(
        in_part, out_part, rejected_part, bucket_and_filter, fields=[BUCKET_FIELD], required=("perplexity",),
        hint="tag the shard with tag_perplexity_shard first",
    )


def perplexity_filter_stats(total: ShardCounts, _shards: Sequence[ShardCounts]) -> dict:
    buckets = total.extra.get("buckets", {})
    return {
        "buckets": {b: buckets[b] for b in (*BUCKETS, "none") if buckets.get(b)},
        "no_cutoffs_per_lang": dict(sorted(total.extra.get("no_cutoffs", {}).items())),
    }


TAG_SUMMARY = Summary(counted={"tagged": 0, "no_tokens": 0, "no_model": {}}, stats=perplexity_tag_stats)
FILTER_SUMMARY = Summary(counted={"kept_without_perplexity": 0, "dropped": {}}, stats=perplexity_filter_stats)
