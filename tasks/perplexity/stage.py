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
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator, model_validator

from storage.parquet import ParquetShardWriter, iter_batches, parquet_files, read_schema
from storage.schemas import with_reason
from tasks.base import StrictModel
from tasks.perplexity.scorer import MODEL_ARPA, MODEL_BINARY, PerplexityScorer

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


def _with_column(table: pa.Table, fld: pa.Field, values: pa.Array) -> pa.Table:
    i = table.schema.get_field_index(fld.name)
    return table.set_column(i, fld, values) if i >= 0 else table.append_column(fld, values)


def _output_schema(schema: pa.Schema, *fields: pa.Field) -> pa.Schema:
    for fld in fields:
        i = schema.get_field_index(fld.name)
        schema = schema.set(i, fld) if i >= 0 else schema.append(fld)
    return schema


# ---------------------------------------------------------------------------------------------------- tagging


@dataclass
class PerplexityTagResult:
    part: str
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    tagged: int = 0
    lines: int = 0
    tokens: int = 0
    no_model: dict = field(default_factory=dict)  # lang → documents passed through without a model
    no_tokens: int = 0  # documents with a model but no token (null perplexity)
    per_lang: dict = field(default_factory=dict)  # lang → documents tagged
    seconds: float = 0.0


def tag_perplexity_shard(
    in_part: str,
    out_part: str,
    params: PerplexityParams,
    scorers: Mapping[str, PerplexityScorer] | None = None,
) -> PerplexityTagResult:
    """Copy `in_part` to `out_part` with a `perplexity` column (float32; null without a model or without tokens).

    `scorers` (from `load_scorers`) can be passed to reuse loaded models; by default they are loaded here
    (once per process: the model cache makes a second load free).
    """
    t0 = time.perf_counter()
    scorers = load_scorers(params) if scorers is None else scorers
    schema = read_schema(in_part)
    if "text" not in schema.names:
        raise ValueError(f"{in_part}: no `text` column")
    out_schema = _output_schema(schema, PERPLEXITY_FIELD)
    result = PerplexityTagResult(part=out_part)
    no_model: Counter = Counter()
    per_lang: Counter = Counter()
    with ParquetShardWriter(out_part, out_schema) as writer:
        for batch in iter_batches(in_part):
            langs = _row_langs(batch, params.default_lang, in_part)
            values: list[float | None] = []
            for text, lang in zip(batch.column("text").to_pylist(), langs, strict=True):
                text = text or ""
                result.bytes_in += len(text.encode("utf-8"))
                scorer = scorers.get(lang)
                if scorer is None:
                    no_model[lang] += 1
                    values.append(None)
                    continue
                score = scorer.score_text(text)
                ppl = score.perplexity
                if ppl is None:
                    result.no_tokens += 1
                else:
                    result.tagged += 1
                    per_lang[lang] += 1
                    result.lines += score.lines
                    result.tokens += score.tokens
                values.append(ppl)
            table = pa.Table.from_batches([batch])
            table = _with_column(table, PERPLEXITY_FIELD, pa.array(values, type=pa.float32()))
            writer.write_batch(table)
            result.docs_in += batch.num_rows
            result.docs_out += batch.num_rows
    result.no_model = dict(sorted(no_model.items()))
    result.per_lang = dict(sorted(per_lang.items()))
    result.seconds = round(time.perf_counter() - t0, 3)
    return result


def summarize_tag(results: Sequence[PerplexityTagResult]) -> tuple[dict, dict]:
    no_model: Counter = Counter()
    per_lang: Counter = Counter()
    for r in results:
        no_model.update(r.no_model)
        per_lang.update(r.per_lang)
    seconds = sum(r.seconds for r in results)
    docs = sum(r.docs_in for r in results)
    mb = sum(r.bytes_in for r in results) / 1e6
    counts = {
        "in": docs,
        "out": sum(r.docs_out for r in results),
        "bytes_in": sum(r.bytes_in for r in results),
        "tagged": sum(r.tagged for r in results),
        "no_tokens": sum(r.no_tokens for r in results),
        **{f"no_model_{lang}": n for lang, n in sorted(no_model.items())},
    }
    stats = {
        "tagged_per_lang": dict(sorted(per_lang.items())),
        "lines_scored": sum(r.lines for r in results),
        "tokens_scored": sum(r.tokens for r in results),
        "task_seconds": round(seconds, 3),
        "docs_per_task_second": round(docs / seconds, 1) if seconds else None,
        "mb_per_task_second": round(mb / seconds, 3) if seconds else None,
    }
    return counts, stats


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


@dataclass
class PerplexityFilterResult:
    part: str
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    dropped: dict = field(default_factory=dict)  # reason → documents
    buckets: dict = field(default_factory=dict)  # bucket (or 'none') → documents, before dropping
    kept_without_perplexity: int = 0
    no_cutoffs: dict = field(default_factory=dict)  # lang → documents with a perplexity but no cut-offs


def filter_perplexity_shard(
    in_part: str,
    out_part: str,
    rejected_part: str,
    params: PerplexityFilterParams,
    cutoffs: Mapping[str, Sequence[float]],
) -> PerplexityFilterResult:
    """Add `ppl_bucket` to a tagged part; keep the chosen buckets, the rest goes to `rejected_part` with a reason.

    `cutoffs` is `compute_cutoffs(...)` (or the same mapping read back from the manifest: lists work too).
    """
    schema = read_schema(in_part)
    if "perplexity" not in schema.names:
        raise ValueError(f"{in_part}: no `perplexity` column (tag the shard with tag_perplexity_shard first)")
    out_schema = _output_schema(schema, BUCKET_FIELD)
    result = PerplexityFilterResult(part=out_part)
    dropped: Counter = Counter()
    buckets: Counter = Counter()
    no_cutoffs: Counter = Counter()
    with (
        ParquetShardWriter(out_part, out_schema) as kept_writer,
        ParquetShardWriter(rejected_part, with_reason(out_schema)) as rejected_writer,
    ):
        for batch in iter_batches(in_part):
            langs = _row_langs(batch, params.default_lang, in_part)
            ppls = batch.column("perplexity").to_pylist()
            sizes = (
                [len((t or "").encode("utf-8")) for t in batch.column("text").to_pylist()]
                if ("text" in batch.schema.names)
                else [0] * batch.num_rows
            )
            bucket_values: list[str | None] = []
            reasons: list[str | None] = []
            for ppl, lang, size in zip(ppls, langs, sizes, strict=True):
                cutoff = cutoffs.get(lang)
                if ppl is not None and not math.isnan(ppl) and cutoff is None:
                    no_cutoffs[lang] += 1
                bucket = bucket_of(ppl, cutoff)
                reason = filter_reason(ppl, bucket, params)
                buckets[bucket or "none"] += 1
                if ppl is None or math.isnan(ppl):
                    result.kept_without_perplexity += 1
                bucket_values.append(bucket)
                reasons.append(reason)
                result.bytes_in += size
                if reason is None:
                    result.bytes_out += size
                else:
                    dropped[reason] += 1
            table = _with_column(
                pa.Table.from_batches([batch]), BUCKET_FIELD, pa.array(bucket_values, pa.string())
            )
            keep = pa.array([r is None for r in reasons])
            kept = table.filter(keep)
            kept_writer.write_batch(kept)
            if kept.num_rows < table.num_rows:
                rejected = table.filter(pc.invert(keep))
                rejected = rejected.append_column(
                    with_reason(out_schema).field("reason"), pa.array([r for r in reasons if r is not None])
                )
                rejected_writer.write_batch(rejected)
            result.docs_in += table.num_rows
            result.docs_out += kept.num_rows
    result.dropped = dict(sorted(dropped.items()))
    result.buckets = {b: buckets[b] for b in (*BUCKETS, "none") if buckets[b]}
    result.no_cutoffs = dict(sorted(no_cutoffs.items()))
    return result


def summarize_filter(results: Sequence[PerplexityFilterResult]) -> tuple[dict, dict]:
    dropped: Counter = Counter()
    buckets: Counter = Counter()
    no_cutoffs: Counter = Counter()
    for r in results:
        dropped.update(r.dropped)
        buckets.update(r.buckets)
        no_cutoffs.update(r.no_cutoffs)
    counts = {
        "in": sum(r.docs_in for r in results),
        "out": sum(r.docs_out for r in results),
        "bytes_in": sum(r.bytes_in for r in results),
        "bytes_out": sum(r.bytes_out for r in results),
        "kept_without_perplexity": sum(r.kept_without_perplexity for r in results),
        **{f"dropped_{k}": v for k, v in sorted(dropped.items())},
    }
    stats = {
        "buckets": {b: buckets[b] for b in (*BUCKETS, "none") if buckets[b]},
        "no_cutoffs_per_lang": dict(sorted(no_cutoffs.items())),
    }
    return counts, stats


def summarize(results: Sequence[PerplexityTagResult] | Sequence[PerplexityFilterResult]) -> tuple[dict, dict]:
    """`summarize_tag` or `summarize_filter`, by the kind of results (an empty list summarises as a filter)."""
    if results and isinstance(results[0], PerplexityTagResult):
        return summarize_tag(results)  # type: ignore[arg-type]
    return summarize_filter(results)  # type: ignore[arg-type]
