"""The shard drivers: the one place where a stage's shard loop, its writers and its counters live.

A stage is a small function plus its params; a driver reads the input part batch by batch, writes what the
function says, and counts documents and bytes in and out, and drops by reason, in a `ShardCounts`:

- `tag_shard`: the function returns columns for a batch (signals, or a rewritten `text`); every row is kept;
- `filter_shard`: the function returns a reason per row (None keeps it) — optionally new columns and, for
  dedup, the id each dropped row duplicates; rejected rows are written beside the kept ones with `reason`;
- `map_shard`: the function maps one text to a new text, or gives the reason to drop it (cleaning).

`summarize` turns the shards' counts into a manifest's `counts` and `stats`, as datatrove's `BaseFilter.run`
does the counting for every filter.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage.parquet import ROW_GROUP_ROWS, ParquetShardWriter
from storage.schemas import REJECT_REASON_FIELD, with_reason

RECORD_FORMAT = "shard-counts/1"
DUPLICATE_OF_FIELD = pa.field("duplicate_of", pa.string())
DROPPED = {"dropped": {}}  # `summarize`'s default: the drop reasons as `dropped_<reason>` counts


class ShardInputError(ValueError):
    """A part (or a side file) that cannot be read; the message names the file and what is wrong."""


@dataclass
class ShardCounts:
    """What one shard task did. `extra` holds the stage's own counters, added up over shards by `summarize`:
    a number, or a {key: number} dict (languages seen, rules fired, spans removed…). `info` holds facts of
    this shard that are not added up (its index, the dtype it wrote, an error message)."""

    part: str = ""
    in_part: str = ""
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    bytes_out: int | None = 0  # None: the stage passes text through unchanged and does not report it
    dropped: dict = field(default_factory=dict)  # reason → documents
    dropped_bytes: dict = field(default_factory=dict)  # reason → UTF-8 bytes of those documents
    extra: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    def tally(self, name: str, amount: int | float = 1) -> None:
        self.extra[name] = self.extra.get(name, 0) + amount

    def tally_each(self, name: str, values: Mapping[str, int | float] | Sequence[str]) -> None:
        """Add to the counter dict `name`: a {key: amount} mapping, or one per key listed (as Counter.update)."""
        bucket = self.extra.setdefault(name, {})
        if isinstance(values, Mapping):
            _add(bucket, values)
        else:
            for key in values:
                bucket[key] = bucket.get(key, 0) + 1

    def drop(self, reason: str, nbytes: int) -> None:
        _add(self.dropped, {reason: 1})
        _add(self.dropped_bytes, {reason: nbytes})

    def as_record(self) -> dict:
        """A JSON-able record (the flows keep it in the manifest's `stats.shards`)."""
        return {"format": RECORD_FORMAT, **asdict(self)}

    @classmethod
    def from_record(cls, record: Mapping) -> ShardCounts:
        """The counts of `as_record`; ValueError for a record of another format (the shard is then recomputed)."""
        if not isinstance(record, Mapping) or record.get("format") != RECORD_FORMAT:
            raise ValueError(f"not a {RECORD_FORMAT} shard record")
        try:
            return cls(**{k: v for k, v in record.items() if k != "format"})
        except TypeError as e:
            raise ValueError(f"not a {RECORD_FORMAT} shard record ({e})") from e

    @classmethod
    def total(cls, shards: Sequence[ShardCounts]) -> ShardCounts:
        out = cls(bytes_out=None)
        for s in shards:
            out.docs_in += s.docs_in
            out.docs_out += s.docs_out
            out.bytes_in += s.bytes_in
            if s.bytes_out is not None:
                out.bytes_out = (out.bytes_out or 0) + s.bytes_out
            _add(out.dropped, s.dropped)
            _add(out.dropped_bytes, s.dropped_bytes)
            for name, value in s.extra.items():
                if isinstance(value, Mapping):
                    out.tally_each(name, value)
                else:
                    out.tally(name, value)
        return out


def _add(into: dict, counts: Mapping) -> None:
    for key, n in counts.items():
        into[key] = into.get(key, 0) + n


def summarize(
    shards: Sequence[ShardCounts],
    *,
    counted: Mapping[str, int | dict] = DROPPED,
    stats: Callable[[ShardCounts, Sequence[ShardCounts]], dict] | None = None,
) -> tuple[dict, dict]:
    """A manifest's counts and stats from its shards' counts.

    counts: `in`, `out`, `bytes_in`, `bytes_out` (when the stage reports it), then every counter named in
    `counted` (name → its zero): a number as `<name>`, a dict as `<name>_<key>`; `dropped` is the reasons.
    stats: what the stage's `stats(total, shards)` hook makes of them.
    """
    total = ShardCounts.total(shards)
    counts: dict = {"in": total.docs_in, "out": total.docs_out, "bytes_in": total.bytes_in}
    if total.bytes_out is not None:
        counts["bytes_out"] = total.bytes_out
    for name, zero in counted.items():
        value = total.dropped if name == "dropped" else total.extra.get(name, zero)
        if isinstance(zero, dict):
            counts.update({f"{name}_{key}": n for key, n in sorted(value.items())})
        else:
            counts[name] = value
    return counts, (stats(total, shards) if stats else {})


@dataclass(frozen=True)
class Summary:
    """How a stage's manifest reads its shards' counts (the arguments of `summarize`, declared once)."""

    counted: Mapping[str, int | dict] = field(default_factory=lambda: DROPPED)
    stats: Callable[[ShardCounts, Sequence[ShardCounts]], dict] | None = None

    def __call__(self, shards: Sequence[ShardCounts]) -> tuple[dict, dict]:
        return summarize(shards, counted=self.counted, stats=self.stats)


def keep_rate(total: ShardCounts, _shards: Sequence[ShardCounts]) -> dict:
    """The stats of a plain filter: the share of documents kept."""
    return {"keep_rate": total.docs_out / total.docs_in if total.docs_in else None}


# ------------------------------------------------------------------------------------------------ workers
# What a worker process runs besides the shard functions lives here, not in flows: unpickling a function makes the
# worker import its module, and flows import Prefect (2 s and 60 MB per worker).


def share_cores(workers: int) -> None:
    """A process worker's initializer: give HuggingFace tokenizers' thread pool its share of the cores (encode's
    `encode_batch_fast` otherwise starts a thread per core in every worker: measured on 2 cores, encode with 2
    workers took 5.9-6.6 s with 2 threads each, 5.5-5.7 s with one). A value the user set wins."""
    os.environ.setdefault("RAYON_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))


def warm_up_dask_worker(modules: Sequence[str], machine_workers: dict[str, int], dask_worker=None) -> None:
    """`warm_up` on a Dask worker (`Client.run`, which passes the worker), which also takes its share of its
    machine's cores for HuggingFace tokenizers' thread pool (`share_cores`, as the process runner's workers do:
    otherwise every worker of a machine starts a thread per core in encode). `machine_workers`: each worker's
    address → how many workers its machine runs. A value the user set wins."""
    if dask_worker is not None:
        share_cores(machine_workers.get(dask_worker.address, 1))
    warm_up(modules)


def warm_up(modules: Sequence[str] = ()) -> None:
    """A worker's first task at a run's start (`flows.workers.start_workers`): import the modules of the shard code
    its stages will run (this one, with pyarrow and numpy, it imports to run the task at all)."""
    for module in modules:
        importlib.import_module(module)


def call_shard(fn: Callable[..., Any], kwargs: Mapping[str, Any]) -> Any:
    """A shard call on a Dask worker (its keywords are never taken for `Client.submit`'s own)."""
    return fn(**kwargs)


# ----------------------------------------------------------------------------------------------- reading


def part_schema(path: str, required: Sequence[str] = (), hint: str = "") -> pa.Schema:
    """The schema of a Parquet part; an unreadable file or a missing required column fails naming the file."""
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as e:
        raise ShardInputError(f"{path}: cannot read this Parquet part ({e})") from e
    missing = [c for c in required if c not in schema.names]
    if missing:
        names = ", ".join(f"`{c}`" for c in missing)
        raise ShardInputError(f"{path}: no {names} column" + (f" ({hint})" if hint else ""))
    return schema


def part_batches(
    path: str, columns: Sequence[str] | None = None, batch_size: int = ROW_GROUP_ROWS
) -> Iterator[pa.RecordBatch]:
    """Record batches of a part; a missing, unreadable or column-less file fails naming the file."""
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as e:
        raise ShardInputError(f"{path}: cannot read this Parquet part ({e})") from e
    if columns:
        missing = [c for c in columns if c not in pf.schema_arrow.names]
        if missing:
            raise ShardInputError(
                f"{path}: no column {', '.join(missing)} (columns: {', '.join(pf.schema_arrow.names)})"
            )
    batches = pf.iter_batches(batch_size=batch_size, columns=list(columns) if columns else None)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as e:
            raise ShardInputError(f"{path}: cannot read this Parquet part ({e})") from e
        yield batch


def text_bytes(table: pa.Table | pa.RecordBatch) -> np.ndarray:
    """UTF-8 bytes of every row's `text` (0 where null, or without a text column)."""
    if "text" not in table.schema.names:
        return np.zeros(table.num_rows, dtype=np.int64)
    sizes = pc.fill_null(pc.binary_length(table.column("text")), 0)
    return np.asarray(sizes.to_numpy(zero_copy_only=False), dtype=np.int64)


# ------------------------------------------------------------------------------------------------ columns


def with_fields(schema: pa.Schema, fields: Sequence[pa.Field]) -> pa.Schema:
    """The schema with each field replaced where it stands, or appended when new."""
    for fld in fields:
        i = schema.get_field_index(fld.name)
        schema = schema.set(i, fld) if i >= 0 else schema.append(fld)
    return schema


def _put_columns(table: pa.Table, schema: pa.Schema, columns: Mapping[str, Any]) -> pa.Table:
    for name, values in columns.items():
        fld = schema.field(name)
        if not isinstance(values, (pa.Array, pa.ChunkedArray)):
            values = pa.array(values, type=fld.type)
        i = table.schema.get_field_index(name)
        table = table.set_column(i, fld, values) if i >= 0 else table.append_column(fld, values)
    return table


# -------------------------------------------------------------------------------------------------- tag

TagBatch = Callable[[pa.RecordBatch, ShardCounts], Mapping[str, Any]]


def tag_shard(
    in_part: str,
    out_part: str,
    fields: Sequence[pa.Field],
    tag_batch: TagBatch,
    *,
    rewrites_text: bool = False,
    required: Sequence[str] = (),
    hint: str = "",
) -> ShardCounts:
    """Write every row of `in_part` to `out_part` with the columns `tag_batch(batch, counts)` returns.

    `fields` declares the new columns (one already in the input is replaced where it stands). With
    `rewrites_text`, `tag_batch` returns a new `text` too and the bytes out are counted.
    """
    started = time.perf_counter()
    schema = with_fields(part_schema(in_part, required, hint), fields)
    counts = ShardCounts(part=str(out_part), in_part=str(in_part), bytes_out=0 if rewrites_text else None)
    with ParquetShardWriter(out_part, schema) as writer:
        for batch in part_batches(in_part):
            columns = tag_batch(batch, counts)
            table = _put_columns(pa.Table.from_batches([batch]), schema, columns)
            writer.write_batch(table)
            counts.docs_in += batch.num_rows
            counts.docs_out += batch.num_rows
            counts.bytes_in += int(text_bytes(batch).sum())
            if rewrites_text:
                counts.bytes_out += int(text_bytes(table).sum())
    counts.tally("seconds", time.perf_counter() - started)
    return counts


# ----------------------------------------------------------------------------------------------- filter


@dataclass
class Verdicts:
    """A filter's answer for one batch: a reason per row (None keeps the row), columns to add or replace
    (written to kept and rejected rows alike; `text` keeps its field) and, for dedup, the id each dropped
    row duplicates."""

    reasons: Sequence[str | None]
    columns: Mapping[str, Any] = field(default_factory=dict)
    duplicate_of: Sequence[str | None] | None = None


FilterBatch = Callable[[pa.RecordBatch, ShardCounts], "Verdicts | Sequence[str | None]"]


def filter_shard(
    in_part: str,
    out_part: str,
    rejected_part: str,
    reasons_for_batch: FilterBatch,
    *,
    fields: Sequence[pa.Field] = (),
    duplicates: bool = False,
    required: Sequence[str] = (),
    hint: str = "",
) -> ShardCounts:
    """Split `in_part` into kept rows (`out_part`) and rejected rows (`rejected_part`, with `reason`).

    `reasons_for_batch(batch, counts)` gives a reason per row (None keeps it), or `Verdicts` with new columns
    (declared in `fields`) and, with `duplicates`, the `duplicate_of` column of rejected rows.
    """
    started = time.perf_counter()
    schema = with_fields(part_schema(in_part, required, hint), fields)
    rejected_schema = with_reason(schema)
    if duplicates and rejected_schema.get_field_index(DUPLICATE_OF_FIELD.name) < 0:
        rejected_schema = rejected_schema.append(DUPLICATE_OF_FIELD)
    stale = [REJECT_REASON_FIELD.name] + ([DUPLICATE_OF_FIELD.name] if duplicates else [])
    counts = ShardCounts(part=str(out_part), in_part=str(in_part))
    with (
        ParquetShardWriter(out_part, schema) as kept,
        ParquetShardWriter(rejected_part, rejected_schema) as rejected,
    ):
        for batch in part_batches(in_part):
            verdicts = reasons_for_batch(batch, counts)
            if not isinstance(verdicts, Verdicts):
                verdicts = Verdicts(verdicts)
            reasons = np.asarray(verdicts.reasons, dtype=object).reshape(-1)
            keep = np.asarray([r is None for r in reasons], dtype=bool)
            sizes_in = text_bytes(batch)
            table = _put_columns(pa.Table.from_batches([batch]), schema, verdicts.columns)
            sizes_out = text_bytes(table) if "text" in verdicts.columns else sizes_in
            counts.docs_in += batch.num_rows
            counts.docs_out += int(keep.sum())
            counts.bytes_in += int(sizes_in.sum())
            counts.bytes_out += int(sizes_out[keep].sum())
            for reason, nbytes in zip(reasons[~keep].tolist(), sizes_in[~keep].tolist(), strict=True):
                counts.drop(reason, nbytes)
            if keep.all():
                kept.write_batch(table)
                continue
            mask = pa.array(keep)
            kept.write_batch(table.filter(mask))
            gone = table.filter(pc.invert(mask))
            gone = gone.drop_columns([c for c in stale if c in gone.column_names])
            gone = gone.append_column(REJECT_REASON_FIELD, pa.array(reasons[~keep].tolist(), pa.string()))
            if duplicates:
                survivors = verdicts.duplicate_of if verdicts.duplicate_of is not None else [None] * len(reasons)
                dup = [s for s, k in zip(survivors, keep.tolist(), strict=True) if not k]
                gone = gone.append_column(DUPLICATE_OF_FIELD, pa.array(dup, pa.string()))
            rejected.write_batch(gone)
    counts.tally("seconds", time.perf_counter() - started)
    return counts


# -------------------------------------------------------------------------------------------------- map

MapText = Callable[[str, ShardCounts], "tuple[str, str | None]"]


def map_shard(in_part: str, out_part: str, rejected_part: str, map_text: MapText) -> ShardCounts:
    """Rewrite every row's `text` with `map_text(text, counts) -> (new text, None)`, or drop the row with
    `(_, reason)`: it goes to `rejected_part` as it was, with `reason`."""
    started = time.perf_counter()
    schema = part_schema(in_part, ("text",), "not a document dataset")
    counts = ShardCounts(part=str(out_part), in_part=str(in_part))
    with (
        ParquetShardWriter(out_part, schema) as kept,
        ParquetShardWriter(rejected_part, with_reason(schema)) as rejected,
    ):
        for batch in part_batches(in_part):
            for row in batch.to_pylist():
                original = row["text"]
                nbytes = len(original.encode("utf-8"))
                counts.docs_in += 1
                counts.bytes_in += nbytes
                text, reason = map_text(original, counts)
                if reason is not None:
                    counts.drop(reason, nbytes)
                    rejected.write_row({**row, "reason": reason})
                    continue
                row["text"] = text
                counts.docs_out += 1
                counts.bytes_out += len(text.encode("utf-8"))
                kept.write_row(row)
    counts.tally("seconds", time.perf_counter() - started)
    return counts
