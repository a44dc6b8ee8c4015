"""The `sample` stage: a deterministic hash sample of the corpus (default 2 %) to train the tokenizer on.

Every document gets a key, the first 8 bytes of blake2b(salt, NUL, id) read as an unsigned 64-bit integer; it
depends on nothing but the salt and the document's id. A document is in the sample iff its key is below a
threshold T, nominally `fraction · 2^64`. Because membership is decided per document by a fixed key, the sample
is stable when the corpus grows: the documents of yesterday's sample are in today's.

Byte bounds, applied by `apply_byte_bound` once every part has been sampled, move T, never the keys:

- sample above `max_bytes`: T is lowered to keep the documents with the smallest keys whose texts add up to at
  most `max_bytes` (UTF-8 bytes of `text`);
- sample below `min_bytes`: T is raised to take documents in key order until `min_bytes` is reached (or the whole
  corpus is taken).

So a bounded sample is still "every document whose key is below T": two samples of a growing corpus are always
nested (the one with the lower T is contained in the other, restricted to the documents both corpora hold), and
nothing depends on how documents are spread over parts or processes. When neither bound binds, T is the nominal
threshold and a grown corpus's sample contains the old one.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from storage.atomic import write_text_atomic
from storage.parquet import ParquetShardWriter, iter_batches, read_schema
from tasks.base import StrictModel
from tasks.shard_drivers import ShardCounts, summarize

STAGE = "sample"
STAGE_VERSION = "1"
KEY_COLUMN = "sample_key"
KEY_SPACE = 1 << 64
BOUND_FILE = ".sample-bound.json"  # hidden: bookkeeping, not part of the dataset's files

log = logging.getLogger(__name__)


class SampleParams(StrictModel):
    fraction: float = Field(0.02, gt=0, le=1, description="Share of documents (by hash of id) in the sample.")
    max_bytes: int = Field(200_000_000, gt=0, description="Upper bound on the sample's text bytes.")
    min_bytes: int = Field(0, ge=0, description="Lower bound on the sample's text bytes (small corpora).")
    salt: str = Field("sample", description="Changing the salt draws a different, equally stable sample.")

    @model_validator(mode="after")
    def _bounds_ordered(self) -> SampleParams:
        if self.min_bytes > self.max_bytes:
            raise ValueError(f"sample min_bytes ({self.min_bytes:,}) is above max_bytes ({self.max_bytes:,})")
        return self


def document_key(salt: str, doc_id: str) -> int:
    """A document's 64-bit sampling key: depends only on the salt and the id (stable across runs and machines)."""
    digest = hashlib.blake2b(f"{salt}\x00{doc_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def document_keys(salt: str, ids: Iterable[str]) -> np.ndarray:
    return np.fromiter((document_key(salt, i) for i in ids), dtype=np.uint64)


def nominal_threshold(fraction: float) -> int:
    """Keys strictly below this are in the sample (2^64 for fraction 1: every key)."""
    return min(int(fraction * KEY_SPACE), KEY_SPACE)


def below(keys: np.ndarray, threshold: int) -> np.ndarray:
    """Boolean mask of keys < threshold, for any threshold in [0, 2^64]."""
    if threshold >= KEY_SPACE:
        return np.ones(keys.shape, dtype=bool)
    return keys < np.uint64(threshold)


def _with_key(schema: pa.Schema) -> pa.Schema:
    if schema.get_field_index(KEY_COLUMN) >= 0:
        return schema
    return schema.append(pa.field(KEY_COLUMN, pa.uint64(), nullable=False))


def _filter_part(in_part: str, out_part: str, salt: str, threshold: int) -> tuple[int, int, int, int]:
    """Copy the rows of `in_part` whose key is below `threshold` to `out_part` (with a key column).

    Returns (docs_in, bytes_in, docs_out, bytes_out). Reads and writes record batches: bounded memory.
    """
    schema = read_schema(in_part)
    missing = [c for c in ("id", "text") if schema.get_field_index(c) < 0]
    if missing:
        raise ValueError(
            f"{in_part}: not a document part (no {' or '.join(repr(c) for c in missing)} column)"
        )
    schema = _with_key(schema)
    docs_in = bytes_in = docs_out = bytes_out = 0
    with ParquetShardWriter(out_part, schema) as out:
        for batch in iter_batches(in_part):
            table = pa.Table.from_batches([batch])
            keys = document_keys(salt, table.column("id").to_pylist())
            nbytes = _text_bytes(table)
            mask = below(keys, threshold)
            docs_in += table.num_rows
            bytes_in += int(nbytes.sum())
            if not mask.any():
                continue
            if KEY_COLUMN in table.column_names:
                table = table.drop_columns([KEY_COLUMN])
            table = table.append_column(KEY_COLUMN, pa.array(keys, type=pa.uint64()))
            out.write_batch(table.filter(pa.array(mask)))
            docs_out += int(mask.sum())
            bytes_out += int(nbytes[mask].sum())
    return docs_in, bytes_in, docs_out, bytes_out


def _text_bytes(table: pa.Table) -> np.ndarray:
    return pc.binary_length(table.column("text")).to_numpy(zero_copy_only=False).astype(np.int64)


def sample_shard(in_part: str, out_part: str, params: SampleParams) -> ShardCounts:
    """Write the documents of one part whose key is below the nominal threshold; the rest are not rejections
    (they are simply not sampled), so there is no rejected side file."""
    d_in, b_in, d_out, b_out = _filter_part(
        in_part, out_part, params.salt, nominal_threshold(params.fraction)
    )
    return ShardCounts(str(out_part), str(in_part), docs_in=d_in, docs_out=d_out, bytes_in=b_in, bytes_out=b_out)


@dataclass
class ByteBoundResult:
    """What the byte bound did: the threshold actually used, and the sample it gives."""

    rule: str  # "fraction" (no bound binds), "max_bytes" (lowered) or "min_bytes" (raised)
    threshold: int
    effective_fraction: float
    docs_out: int
    bytes_out: int


def _keys_and_bytes(parts: Sequence[str], salt: str) -> tuple[np.ndarray, np.ndarray]:
    keys, sizes = [], []
    for part in parts:
        for batch in iter_batches(part, columns=["id", "text"]):
            table = pa.Table.from_batches([batch])
            keys.append(document_keys(salt, table.column("id").to_pylist()))
            sizes.append(_text_bytes(table))
    if not keys:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    return np.concatenate(keys), np.concatenate(sizes)


def _threshold_for_max(keys: np.ndarray, sizes: np.ndarray, max_bytes: int) -> int:
    """The largest threshold whose documents (smallest keys first) add up to at most max_bytes."""
    order = np.argsort(keys, kind="stable")
    cum = np.cumsum(sizes[order])
    keep = int(np.searchsorted(cum, max_bytes, side="right"))
    return KEY_SPACE if keep >= keys.size else int(keys[order[keep]])


def _threshold_for_min(keys: np.ndarray, sizes: np.ndarray, min_bytes: int) -> int:
    """The smallest threshold whose documents (smallest keys first) reach min_bytes; 2^64 when none does."""
    order = np.argsort(keys, kind="stable")
    cum = np.cumsum(sizes[order])
    need = int(np.searchsorted(cum, min_bytes, side="left"))
    return KEY_SPACE if need >= keys.size else int(keys[order[need]]) + 1


def apply_byte_bound(results: Sequence[ShardCounts], params: SampleParams) -> ByteBoundResult:
    """Enforce `min_bytes` / `max_bytes` over the whole sample by moving the threshold (module docstring).

    Rewrites the sampled parts in place when the threshold moves: lowered, each part is filtered; raised, each
    part is re-read from its input part (only when the sample is under `min_bytes`, i.e. the corpus is small).
    The threshold is recorded in a hidden file beside the parts before any part is rewritten, so a run killed
    mid-way resumes with the same threshold and ends with the same parts.
    """
    if not results:
        raise ValueError("sample: no parts were sampled (the input dataset has no Parquet parts)")
    out_parts = [r.part for r in results]
    marker = Path(out_parts[0]).parent / BOUND_FILE
    nominal = nominal_threshold(params.fraction)
    if marker.is_file():
        bound = ByteBoundResult(**json.loads(marker.read_text(encoding="utf-8")))
    else:
        bound = _decide_bound(results, params, nominal)
        write_text_atomic(marker, json.dumps(asdict(bound)))
    if bound.rule == "max_bytes":
        for r in results:
            _filter_part(r.part, r.part, params.salt, bound.threshold)
    elif bound.rule == "min_bytes":
        for r in results:
            _filter_part(r.in_part, r.part, params.salt, bound.threshold)
    if bound.rule != "fraction":
        log.info(
            "sample: %s bound moved the threshold to a fraction of %.6f (%s documents, %s bytes)",
            bound.rule,
            bound.effective_fraction,
            f"{bound.docs_out:,}",
            f"{bound.bytes_out:,}",
        )
    return bound


def _decide_bound(
    results: Sequence[ShardCounts], params: SampleParams, nominal: int
) -> ByteBoundResult:
    sampled_bytes = sum(r.bytes_out for r in results)
    sampled_docs = sum(r.docs_out for r in results)
    everything = all(r.docs_out == r.docs_in for r in results)

    def outcome(rule: str, keys: np.ndarray, sizes: np.ndarray, threshold: int) -> ByteBoundResult:
        mask = below(keys, threshold)
        return ByteBoundResult(
            rule, threshold, threshold / KEY_SPACE, int(mask.sum()), int(sizes[mask].sum())
        )

    if sampled_bytes > params.max_bytes:
        keys, sizes = _keys_and_bytes([r.part for r in results], params.salt)
        return outcome("max_bytes", keys, sizes, _threshold_for_max(keys, sizes, params.max_bytes))
    if sampled_bytes < params.min_bytes and not everything:
        keys, sizes = _keys_and_bytes([r.in_part for r in results], params.salt)
        threshold = _threshold_for_min(keys, sizes, params.min_bytes)
        # min_bytes ≤ max_bytes, but one long document can carry the sample past max_bytes: max wins
        threshold = min(threshold, _threshold_for_max(keys, sizes, params.max_bytes))
        if threshold > nominal:
            return outcome("min_bytes", keys, sizes, threshold)
    return ByteBoundResult("fraction", nominal, nominal / KEY_SPACE, sampled_docs, sampled_bytes)


def summarize_sample(results: Sequence[ShardCounts], bound: ByteBoundResult | None = None) -> tuple[dict, dict]:
    """Counts and stats for the manifest; pass the byte bound's result once it has been applied (its sample is
    what `out` and `bytes_out` count; the nominal one stays in the stats)."""

    def stats(total: ShardCounts, _shards: Sequence[ShardCounts]) -> dict:
        out = {"nominal_docs": total.docs_out, "nominal_bytes": total.bytes_out or 0}
        if bound:
            out.update(bound_rule=bound.rule, threshold=str(bound.threshold),
                       effective_fraction=bound.effective_fraction)
        return out

    counts, stats_ = summarize(results, counted={}, stats=stats)
    if bound:
        counts.update(out=bound.docs_out, bytes_out=bound.bytes_out)
    return counts, stats_
