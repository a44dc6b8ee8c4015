"""Exact dedup: documents (and optionally paragraphs, CCNet-style) whose normalised text hashes equal.

Three phases, each taking and writing paths, so any of them can run in another process or on a Dask worker:

1. `exact_hash_shard` (one call per input part): a 128-bit hash of every document's normalised text, and of
   every paragraph when enabled, with (part, row, paragraph) and the document id, written into
   `params.partitions` files by hash → `<work>/p003/part-00012.parquet`.
2. `exact_select` (one call per hash partition, all parts' files of that partition): groups equal hashes and
   keeps the first occurrence in corpus order — the smallest (part, row[, paragraph]) — so the survivor does
   not depend on which shard finished first or on the order the files are listed in. Writes the rows to drop
   and the paragraphs to cut, each with the survivor's id, sorted → `<selection>/p003.parquet`.
3. `exact_filter_shard` (one call per input part): reads the selection rows of its part from every
   partition's file and writes kept / rejected rows (reason `exact_duplicate`, `duplicate_of`) and removed
   paragraphs (reason `exact_duplicate_paragraph`) to the spans part.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from tasks.dedup.decisions import DEDUP_SUMMARY, KEEP, Decision, SpanRemoval, apply_decisions
from tasks.dedup.params import ExactDedupParams
from tasks.dedup.sidefiles import part_name, read_tables, write_table_atomic
from tasks.dedup.text import hash128, normalize_document, normalize_text, split_paragraphs
from tasks.shard_drivers import ShardCounts, part_batches

STAGE = "dedup_exact"
STAGE_VERSION = "1"
REASON_DOC = "exact_duplicate"
REASON_PARAGRAPH = "exact_duplicate_paragraph"
REASON_EMPTIED = "exact_emptied"
WHOLE_DOC = -1  # `para` of a whole-document hash row

log = logging.getLogger(__name__)

HASH_SCHEMA = pa.schema(
    [
        pa.field("h_hi", pa.uint64(), nullable=False),
        pa.field("h_lo", pa.uint64(), nullable=False),
        pa.field("part", pa.int32(), nullable=False),
        pa.field("row", pa.int64(), nullable=False),
        pa.field("para", pa.int32(), nullable=False),
        pa.field("id", pa.string(), nullable=False),
    ]
)

SELECTION_SCHEMA = pa.schema(
    [
        pa.field("part", pa.int32(), nullable=False),
        pa.field("row", pa.int64(), nullable=False),
        pa.field("para", pa.int32(), nullable=False),  # -1: drop the whole document
        pa.field("duplicate_of", pa.string(), nullable=False),
    ]
)


@dataclass
class ExactHashResult:
    part: str
    part_index: int
    docs: int = 0
    paragraphs: int = 0
    files: list = field(default_factory=list)


@dataclass
class ExactSelectResult:
    selection: str
    rows_in: int = 0
    duplicate_docs: int = 0
    duplicate_paragraphs: int = 0
    groups: int = 0  # distinct documents that have at least one duplicate


def hash_partition_path(work_dir: str | os.PathLike, partition: int, part_index: int) -> Path:
    return Path(work_dir) / f"p{partition:03d}" / f"{part_name(part_index)}.parquet"


def hash_partition_files(work_dir: str | os.PathLike, partition: int) -> list[str]:
    """Every part's hash file of one partition, in part order (input of `exact_select`)."""
    return [str(p) for p in sorted((Path(work_dir) / f"p{partition:03d}").glob("part-*.parquet"))]


def selection_path(selection_dir: str | os.PathLike, partition: int) -> Path:
    return Path(selection_dir) / f"p{partition:03d}.parquet"


def document_key(text: str, params: ExactDedupParams) -> tuple[int, int]:
    """The 128-bit hash two documents share when they are exact duplicates under `params`."""
    if not params.normalize:
        return hash128(text)
    norm = normalize_document(text)
    # Text with no letters or digits (emoji, punctuation) normalises to nothing: compare it as written.
    return hash128(norm if norm else "\x00raw\x00" + text.strip())


def paragraph_keys(text: str, params: ExactDedupParams) -> list[tuple[int, int, int]]:
    """(paragraph index, hash high, hash low) of every paragraph long enough to count as a duplicate."""
    out = []
    for p in split_paragraphs(text):
        key = normalize_text(p.text) if params.normalize else p.text.strip()
        if len(key) >= params.min_paragraph_chars:
            hi, lo = hash128(key)
            out.append((p.index, hi, lo))
    return out


def exact_hash_shard(
    in_part: str, part_index: int, work_dir: str, params: ExactDedupParams
) -> ExactHashResult:
    """Phase 1: hash every document (and paragraph) of one part into `params.partitions` hash files."""
    result = ExactHashResult(part=in_part, part_index=part_index)
    tables: list[pa.Table] = []
    row = 0
    for batch in part_batches(in_part, columns=["id", "text"]):
        # Python objects live for one batch only; the part's hashes accumulate as Arrow columns
        cols: dict[str, list] = {name: [] for name in HASH_SCHEMA.names}
        for doc_id, text in zip(
            batch.column("id").to_pylist(), batch.column("text").to_pylist(), strict=True
        ):
            hi, lo = document_key(text, params)
            entries = [(WHOLE_DOC, hi, lo)]
            if params.paragraphs:
                entries += paragraph_keys(text, params)
                result.paragraphs += len(entries) - 1
            for para, phi, plo in entries:
                cols["h_hi"].append(phi)
                cols["h_lo"].append(plo)
                cols["part"].append(part_index)
                cols["row"].append(row)
                cols["para"].append(para)
                cols["id"].append(doc_id)
            row += 1
        tables.append(pa.table(cols, schema=HASH_SCHEMA))
    result.docs = row
    table = pa.concat_tables(tables) if tables else HASH_SCHEMA.empty_table()
    which = (np.asarray(table.column("h_lo")) % np.uint64(params.partitions)).astype(np.int64)
    for k in range(params.partitions):
        path = hash_partition_path(work_dir, k, part_index)
        write_table_atomic(path, table.filter(pa.array(which == k)))
        result.files.append(str(path))
    return result


def _first_of_runs(keys: list[np.ndarray], order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted by `order`, the start index of each row's run of equal `keys`, and whether it starts one."""
    n = len(order)
    new = np.ones(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)
        for k in keys:
            ks = k[order]
            same &= ks[1:] == ks[:-1]
        new[1:] = ~same
    run_start = np.maximum.accumulate(np.where(new, np.arange(n), 0))
    return run_start, new


def exact_select(hash_files: list[str], selection_out: str, params: ExactDedupParams) -> ExactSelectResult:
    """Phase 2: for one hash partition, the documents to drop and paragraphs to cut, with their survivors.

    The survivor of a group of equal hashes is its first occurrence in corpus order: smallest part index,
    then row, then paragraph index. The output is sorted, so it is the same bytes whatever the file order.
    """
    del params  # the rule needs no parameter; kept for a uniform phase signature
    table = read_tables(sorted(hash_files)) if hash_files else HASH_SCHEMA.empty_table()
    result = ExactSelectResult(selection=selection_out, rows_in=table.num_rows)
    hi = np.asarray(table.column("h_hi"))
    lo = np.asarray(table.column("h_lo"))
    part = np.asarray(table.column("part")).astype(np.int64)
    row = np.asarray(table.column("row"))
    para = np.asarray(table.column("para")).astype(np.int64)
    is_doc = para == WHOLE_DOC
    # sort by (kind, hash, part, row, para): runs of equal (kind, hash) start with their survivor
    order = np.lexsort((para, row, part, lo, hi, is_doc))
    run_start, new = _first_of_runs([is_doc.astype(np.int8), hi, lo], order)
    dup = ~new
    dup_rows = order[dup]
    survivors = order[run_start[dup]]
    ids = table.column("id")
    out = pa.table(
        {
            "part": pa.array(part[dup_rows].astype(np.int32)),
            "row": pa.array(row[dup_rows]),
            "para": pa.array(para[dup_rows].astype(np.int32)),
            "duplicate_of": ids.take(pa.array(survivors)) if len(survivors) else pa.array([], pa.string()),
        },
        schema=SELECTION_SCHEMA,
    )
    out = out.sort_by([("part", "ascending"), ("row", "ascending"), ("para", "ascending")])
    write_table_atomic(selection_out, out)
    dup_is_doc = is_doc[dup_rows]
    result.duplicate_docs = int(dup_is_doc.sum())
    result.duplicate_paragraphs = int((~dup_is_doc).sum())
    result.groups = int(len(np.unique(survivors[dup_is_doc]))) if len(survivors) else 0
    return result


def read_selection(
    selection_files: list[str], part_index: int
) -> tuple[dict[int, str], dict[int, dict[int, str]]]:
    """The selection rows of one part: {row: survivor id} to drop, {row: {paragraph: survivor id}} to cut."""
    drop: dict[int, str] = {}
    cut: dict[int, dict[int, str]] = {}
    files = [f for f in sorted(selection_files) if Path(f).is_file()]
    if not files:
        return drop, cut
    t = read_tables(files, filters=[("part", "=", part_index)])
    for r, p, s in zip(
        t.column("row").to_pylist(),
        t.column("para").to_pylist(),
        t.column("duplicate_of").to_pylist(),
        strict=True,
    ):
        if p == WHOLE_DOC:
            drop[r] = s
        else:
            cut.setdefault(r, {})[p] = s
    return drop, cut


def exact_filter_shard(
    in_part: str,
    part_index: int,
    selection_files: list[str],
    out_part: str,
    rejected_part: str,
    params: ExactDedupParams,
    spans_part: str | None = None,
) -> ShardCounts:
    """Phase 3: drop this part's duplicate documents and cut its repeated paragraphs."""
    drop, cut = read_selection(selection_files, part_index)

    def decide(row: int, doc_id: str, text: str) -> Decision:
        if row in drop:
            return Decision(REASON_DOC, drop[row])
        paras = cut.get(row)
        if not paras:
            return KEEP
        spans = [
            SpanRemoval(p.start, p.end, REASON_PARAGRAPH, paras[p.index])
            for p in split_paragraphs(text)
            if p.index in paras
        ]
        return Decision(spans=spans)

    result = apply_decisions(
        in_part,
        out_part,
        rejected_part,
        decide,
        spans_part=spans_part,
        min_chars_after=params.min_chars_after,
        emptied_reason=REASON_EMPTIED,
    )
    result.info["part_index"] = part_index
    return result


def summarize_exact(
    results: list[ShardCounts], select_results: list[ExactSelectResult] | None = None
) -> tuple[dict, dict]:
    """Manifest counts/stats of the exact sub-stage (filter results, plus the selection's group counts)."""
    counts, stats = DEDUP_SUMMARY(results)
    if select_results:
        stats["duplicate_groups"] = sum(r.groups for r in select_results)
        stats["hash_rows"] = sum(r.rows_in for r in select_results)
    return counts, stats


def exact_dedup_local(
    in_parts: list[str],
    out_parts: list[str],
    rejected_parts: list[str],
    work_dir: str,
    params: ExactDedupParams,
    spans_parts: list[str] | None = None,
) -> list[ShardCounts]:
    """All three phases in this process, in order (tests, benchmarks, small inputs)."""
    for i, part in enumerate(in_parts):
        exact_hash_shard(part, i, str(Path(work_dir) / "hashes"), params)
    selections = []
    for k in range(params.partitions):
        out = selection_path(Path(work_dir) / "selection", k)
        exact_select(hash_partition_files(Path(work_dir) / "hashes", k), str(out), params)
        selections.append(str(out))
    return [
        exact_filter_shard(
            part,
            i,
            selections,
            out_parts[i],
            rejected_parts[i],
            params,
            spans_parts[i] if spans_parts else None,
        )
        for i, part in enumerate(in_parts)
    ]


__all__ = [
    "ExactDedupParams",
    "ExactHashResult",
    "ExactSelectResult",
    "exact_hash_shard",
    "exact_select",
    "exact_filter_shard",
    "exact_dedup_local",
    "hash_partition_files",
    "hash_partition_path",
    "selection_path",
    "summarize_exact",
]
