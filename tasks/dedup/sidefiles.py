"""The files the dedup phases pass each other (hashes, bucket rows, pairs, clusters, selections), written whole
and atomically so a killed phase leaves no half file, and read back with errors that name the file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from storage.atomic import write_atomic
from storage.parquet import ParquetShardWriter
from tasks.shard_drivers import ShardInputError


class DedupInputError(ShardInputError):
    """A side file that cannot be read; the message names the file and the phase to rerun."""


def part_name(part_index: int) -> str:
    return f"part-{part_index:05d}"


def write_table_atomic(path: str | os.PathLike, table: pa.Table) -> Path:
    """A small Parquet side file (hashes, pairs, clusters) written whole, deterministic and atomic."""
    return write_atomic(
        path, lambda tmp: pq.write_table(table, tmp, compression="zstd", compression_level=3, row_group_size=1 << 20)
    )


def save_npy_atomic(path: str | os.PathLike, array: np.ndarray) -> Path:
    def save(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(array), allow_pickle=False)

    return write_atomic(path, save)


def read_tables(
    paths: Sequence[str | os.PathLike], columns: Sequence[str] | None = None, filters=None
) -> pa.Table:
    """Concatenate Parquet side files (in the order given; callers sort them)."""
    tables = []
    for p in paths:
        try:
            tables.append(pq.read_table(p, columns=list(columns) if columns else None, filters=filters))
        except (pa.ArrowException, OSError) as e:
            raise DedupInputError(
                f"{p}: cannot read this dedup side file ({e}); rerun the phase that writes it"
            ) from e
    if not tables:
        raise ValueError("no input files given")
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def load_array(path: str | os.PathLike, mmap: bool = False) -> np.ndarray:
    """A .npy side file written by an earlier phase (never pickled objects)."""
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise DedupInputError(
            f"{path}: cannot read this dedup side file ({e}); rerun the phase that writes it"
        ) from e


def write_documents(path: str | os.PathLike, docs: Sequence[tuple[str, str]], source: str = "text") -> Path:
    """A document part (DOCUMENT_SCHEMA) from (id, text) pairs: small inputs for tests and benchmarks."""
    from storage.schemas import DOCUMENT_SCHEMA

    with ParquetShardWriter(path, DOCUMENT_SCHEMA) as w:
        for doc_id, text in docs:
            w.write_row(
                {"id": doc_id, "text": text, "source": source, "url": None, "timestamp": None, "meta": None}
            )
    return Path(path)
