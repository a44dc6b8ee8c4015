"""Parquet shard files: streaming writers and readers with bounded memory, zstd-compressed.

Writers buffer rows into record batches and flush row groups as they fill, so a shard of any size is written
with memory proportional to one row group. A shard file appears under its final name only when complete.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from storage.atomic import fsync_file, partial_path, raise_if_disk_full, replace_file

COMPRESSION = "zstd"
COMPRESSION_LEVEL = 3
ROW_GROUP_ROWS = 8_192
# A row group is also cut once its rows hold this many characters of strings, so 8,192 large web pages (or
# whole books) never sit in memory at once.
ROW_GROUP_CHARS = 64 * 1024 * 1024


class ParquetShardWriter:
    """Writes one Parquet file from rows (dicts) or record batches; renamed into place on `close()`.

    Use as a context manager: on an exception the partial file is removed and nothing appears.
    """

    def __init__(self, path: str | os.PathLike, schema: pa.Schema, row_group_rows: int = ROW_GROUP_ROWS,
                 row_group_chars: int = ROW_GROUP_CHARS):
        self.path = Path(path)
        self.schema = schema
        self.row_group_rows = row_group_rows
        self.row_group_chars = row_group_chars
        self.rows = 0
        self._buffer: list[dict] = []
        self._buffered_chars = 0
        self._partial = partial_path(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._writer = pq.ParquetWriter(
                self._partial,
                schema,
                compression=COMPRESSION,
                compression_level=COMPRESSION_LEVEL,
                write_statistics=True,
                use_dictionary=True,
            )
        except OSError as exc:
            self._partial.unlink(missing_ok=True)
            raise_if_disk_full(self.path, exc)
            raise

    def write_row(self, row: dict) -> None:
        self._buffer.append(row)
        self._buffered_chars += sum(len(v) for v in row.values() if isinstance(v, str))
        if len(self._buffer) >= self.row_group_rows or self._buffered_chars >= self.row_group_chars:
            self._flush()

    def write_rows(self, rows: Iterable[dict]) -> None:
        for row in rows:
            self.write_row(row)

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        self._flush()
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        table = table.select(self.schema.names).cast(self.schema)
        self._writer.write_table(table, row_group_size=self.row_group_rows)
        self.rows += table.num_rows

    def _flush(self) -> None:
        if not self._buffer:
            return
        table = pa.Table.from_pylist(self._buffer, schema=self.schema)
        # the rows' strings (and the UTF-8 copy Python keeps of each non-ASCII one) go before Parquet's own copies
        self._buffer.clear()
        self._buffered_chars = 0
        self._writer.write_table(table, row_group_size=self.row_group_rows)
        self.rows += table.num_rows

    def close(self) -> Path:
        try:
            self._flush()
            self._writer.close()
            fsync_file(self._partial)
        except OSError as exc:
            self.abort()
            raise_if_disk_full(self.path, exc)
            raise
        replace_file(self._partial, self.path)
        return self.path

    def abort(self) -> None:
        with contextlib.suppress(OSError):  # the file is dropped anyway (on a full disk its footer fails too)
            self._writer.close()
        self._partial.unlink(missing_ok=True)

    def __enter__(self) -> ParquetShardWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
            raise_if_disk_full(self.path, exc)


def parquet_files(dataset: str | os.PathLike, subdir: str = "") -> list[Path]:
    """The complete `part-*.parquet` files of a dataset (or of one of its sub-folders), in name order."""
    folder = Path(dataset) / subdir if subdir else Path(dataset)
    return sorted(p for p in folder.glob("part-*.parquet") if p.is_file())


def iter_batches(
    files: Path | Sequence[Path],
    columns: Sequence[str] | None = None,
    batch_size: int = ROW_GROUP_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Stream record batches from one or more Parquet files without loading them whole."""
    if isinstance(files, (str, Path)):
        files = [Path(files)]
    for path in files:
        pf = pq.ParquetFile(path)
        yield from pf.iter_batches(batch_size=batch_size, columns=list(columns) if columns else None)


def iter_rows(files: Path | Sequence[Path], columns: Sequence[str] | None = None) -> Iterator[dict]:
    """Stream rows as dicts (convenient for per-document Python work)."""
    for batch in iter_batches(files, columns):
        yield from batch.to_pylist()


def read_schema(path: str | os.PathLike) -> pa.Schema:
    return pq.read_schema(path)


def count_rows(path: str | os.PathLike) -> int:
    return pq.ParquetFile(path).metadata.num_rows
