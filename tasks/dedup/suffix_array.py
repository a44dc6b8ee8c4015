"""Suffix-array dedup (Lee et al. 2022): cut every repeated substring of ≥ `min_bytes` bytes (100 by default,
about 50 tokens) out of all but its first occurrence in corpus order.

The documents of a group of shards are concatenated as UTF-8 with a 0xFF byte after each (a byte UTF-8 never
uses, so no match can run across a document boundary once lengths are clipped at it). pydivsufsort builds the
suffix array. Which adjacent suffixes share their first `min_bytes` bytes, none of them a separator, is found by
a pass in text order that stops each comparison at `min_bytes`, on every core (`adjacent_repeats`, compiled from
repeats.c by `make setup`; where it was not built, from pydivsufsort's LCP array, on one core: the same pairs).
A maximal run of such pairs is one repeated window, whose first occurrence (smallest offset = earliest document)
survives while every other occurrence's window is marked. Marked windows are merged into spans, snapped inward to UTF-8 character
boundaries, and cut from their documents; a document cut below `min_doc_bytes` is dropped.

Memory is bounded: `plan_suffix_array_groups` splits the input into groups of consecutive shards of at most
`max_group_bytes` text bytes (repeats across groups are then not found, and the plan says so), and each group
first estimates what it needs — text + suffix array + LCP + Kasai's rank array + the post-processing, about
`2 + 4·w` bytes per input byte with w = 4 (int32 offsets) below 2 GiB and 8 above; the compiled pass needs no LCP
or rank array (measured: 3.5 GB instead of 4.0 for a group of 268 MB) — and refuses with a clear
message when that exceeds `max_memory_bytes` (default: 80 % of the memory available now).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tasks.dedup.decisions import DEDUP_SUMMARY, KEEP, Decision, SpanRemoval, apply_decisions, cut_spans
from tasks.dedup.params import SuffixArrayDedupParams
from tasks.dedup.sidefiles import part_name, read_tables, write_table_atomic
from tasks.shard_drivers import ShardCounts, part_batches

STAGE = "dedup_suffix_array"
STAGE_VERSION = "1"
REASON_SPAN = "suffix_array_repeat"
REASON_TOO_SHORT = "suffix_array_too_short"
SEPARATOR = 0xFF
_INT32_LIMIT = (1 << 31) - 1
_CHUNK = 1 << 22  # suffix-array entries post-processed at once

log = logging.getLogger(__name__)


def available_memory_bytes() -> int:
    """Memory the kernel says can be allocated now without swapping (MemAvailable); a guess when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 4 << 30


def estimate_memory_bytes(text_bytes: int, docs: int = 0) -> int:
    """Peak memory of one suffix array over `text_bytes` of text in `docs` documents (see the module doc)."""
    n = text_bytes + docs
    w = 4 if n <= _INT32_LIMIT else 8
    return n * (2 + 4 * w)


def memory_limit(params: SuffixArrayDedupParams) -> int:
    return params.max_memory_bytes or int(available_memory_bytes() * 0.8)


@dataclass
class SuffixArrayPlan:
    """Which shards share one suffix array; `message` says whether and why the input was split."""

    groups: list[list[int]]
    part_bytes: list[int]
    part_docs: list[int]
    total_bytes: int
    max_group_bytes: int
    message: str

    @property
    def split(self) -> bool:
        return len(self.groups) > 1

    def stats(self) -> dict:
        return {
            "groups": len(self.groups),
            "group_parts": [len(g) for g in self.groups],
            "group_bytes": [sum(self.part_bytes[i] for i in g) for g in self.groups],
            "total_bytes": self.total_bytes,
            "max_group_bytes": self.max_group_bytes,
            "cross_group_repeats_detected": not self.split,
            "note": self.message,
        }


def text_size(in_part: str) -> tuple[int, int]:
    """(UTF-8 bytes of the `text` column, documents) of one part, read column-wise."""
    total = docs = 0
    for batch in part_batches(in_part, columns=["text"]):
        col = batch.column(0)
        docs += len(col)
        s = pc.sum(pc.binary_length(col)).as_py()
        total += int(s or 0)
    return total, docs


def plan_suffix_array_groups(in_parts: list[str], params: SuffixArrayDedupParams) -> SuffixArrayPlan:
    """Group consecutive shards so each suffix array covers at most `max_group_bytes` of text.

    A shard larger than the limit on its own is a group by itself (shards are never split); whether it fits
    in memory is checked when the group runs.
    """
    sizes = [text_size(p) for p in in_parts]
    part_bytes = [b for b, _ in sizes]
    part_docs = [d for _, d in sizes]
    groups: list[list[int]] = []
    current: list[int] = []
    current_bytes = 0
    for i, b in enumerate(part_bytes):
        if current and current_bytes + b > params.max_group_bytes:
            groups.append(current)
            current, current_bytes = [], 0
        current.append(i)
        current_bytes += b
    if current:
        groups.append(current)
    total = sum(part_bytes)
    if len(groups) > 1:
        message = (
            f"{total:,} text bytes exceed max_group_bytes={params.max_group_bytes:,}: processed as {len(groups)} "
            f"groups of consecutive shards; substrings repeated across groups are not removed"
        )
        log.warning("suffix array: %s", message)
    else:
        message = f"{total:,} text bytes in one suffix array"
    oversized = [i for i, b in enumerate(part_bytes) if b > params.max_group_bytes]
    if oversized:
        message += f"; shards {oversized} alone exceed max_group_bytes (shards are never split)"
    return SuffixArrayPlan(groups, part_bytes, part_docs, total, params.max_group_bytes, message)


@dataclass
class RepeatSpans:
    """Byte spans to cut from the documents of a group, in document order and, within one, in text order: span k
    is bytes `start[k]:end[k]` of document `doc[k]`, and `survivor[k]` is the earliest document holding a first
    occurrence of one of its windows."""

    doc: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    start: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    end: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    survivor: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    windows: int = 0
    sa_seconds: float = 0.0
    lcp_seconds: float = 0.0  # adjacent_repeats (the LCP array's, before it had a compiled pass)

    def by_doc(self) -> dict[int, list[tuple[int, int, int]]]:
        """document index → [(start byte, end byte, survivor document)]"""
        spans: dict[int, list[tuple[int, int, int]]] = {}
        for d, s, e, sd in zip(*(a.tolist() for a in (self.doc, self.start, self.end, self.survivor)), strict=True):
            spans.setdefault(d, []).append((s, e, sd))
        return spans


def adjacent_repeats(data: np.ndarray, sa: np.ndarray, min_bytes: int) -> np.ndarray:
    """`pair[i]` (n entries, the last False): suffixes `sa[i]` and `sa[i + 1]` of `data` share their first
    `min_bytes` bytes, none of them the separator. With the compiled helper (`repeats.c`, built by `make setup` into
    .venv/lib): a pass in text order that stops each comparison at `min_bytes`, on every core; without it, from the
    whole LCP array (pydivsufsort's Kasai), on one core and with two more arrays of n entries. Both give the same."""
    lib = _repeats_library()
    if lib is None:
        return _adjacent_repeats_kasai(data, sa, min_bytes)
    n = len(data)
    data = np.ascontiguousarray(data, dtype=np.uint8)  # no copy for what find_repeats passes
    sa = np.ascontiguousarray(sa, dtype=np.int32 if sa.dtype == np.int32 else np.int64)
    width = 32 if sa.dtype == np.int32 else 64
    phi_of, marks_of, pairs_of = (getattr(lib, f"chatlike_{name}{width}") for name in ("phi", "marks", "pairs"))
    phi = np.empty(n, dtype=sa.dtype)  # phi[p]: the suffix before suffix p in suffix-array order
    phi[sa[0]] = -1
    text_at, sa_at, phi_at = _ptr(data), _ptr(sa), _ptr(phi)
    _on_threads(lambda lo, hi: phi_of(sa_at, lo, hi, phi_at), 1, n)
    marks = np.empty(n, dtype=np.uint8)
    marks_at = _ptr(marks)
    _on_threads(lambda lo, hi: marks_of(text_at, n, phi_at, lo, hi, min_bytes, SEPARATOR, marks_at), 0, n)
    del phi
    pair = np.zeros(n, dtype=np.uint8)
    pair_at = _ptr(pair)
    _on_threads(lambda lo, hi: pairs_of(sa_at, marks_at, lo, hi, pair_at), 0, n - 1)
    return pair.view(bool)


def _adjacent_repeats_kasai(data: np.ndarray, sa: np.ndarray, min_bytes: int) -> np.ndarray:
    """`adjacent_repeats` from the LCP array: `clear[p]`, no separator among the first min_bytes bytes of p, read
    from a running count of separators kept modulo 2^bits (exact, since a window holds at most min_bytes)."""
    import pydivsufsort

    n = len(data)
    lcp = pydivsufsort.kasai(data, sa)  # lcp[i] = common prefix of sa[i] and sa[i + 1]
    count_type = np.uint8 if min_bytes < 1 << 8 else np.uint16 if min_bytes < 1 << 16 else np.uint32
    separators = np.zeros(n + 1, dtype=count_type)
    np.cumsum(data == SEPARATOR, dtype=count_type, out=separators[1:])
    clear = separators[min_bytes:] == separators[: n + 1 - min_bytes]
    del separators
    pair = np.zeros(n, dtype=bool)
    for c0 in range(0, n - 1, _CHUNK):
        c1 = min(c0 + _CHUNK, n - 1)
        cand = np.flatnonzero(lcp[c0:c1] >= min_bytes) + c0  # few in most corpora: neighbours share little
        if len(cand):
            pair[cand[clear[sa[cand]]]] = True
    return pair


_REPEATS_LIBRARY = "libchatlike_repeats.so"
_repeats_lib: list = []  # [the loaded library or None], once per process


def _repeats_library():
    """The compiled helper of `adjacent_repeats`, or None where it was not built (the log says so, once)."""
    if not _repeats_lib:
        import ctypes

        path = Path(sys.prefix) / "lib" / _REPEATS_LIBRARY
        lib = None
        if path.is_file():
            try:
                lib = ctypes.CDLL(str(path))
            except OSError as e:
                log.warning("suffix array: %s does not load (%s): the LCP array is built instead", path, e)
        else:
            log.info("suffix array: %s not built (make setup builds it): the LCP array is built instead", path)
        if lib is not None:
            i64, u8, p = ctypes.c_int64, ctypes.c_uint8, ctypes.c_void_p
            for width in (32, 64):
                getattr(lib, f"chatlike_phi{width}").argtypes = [p, i64, i64, p]
                getattr(lib, f"chatlike_marks{width}").argtypes = [p, i64, p, i64, i64, i64, u8, p]
                getattr(lib, f"chatlike_pairs{width}").argtypes = [p, p, i64, i64, p]
        _repeats_lib.append(lib)
    return _repeats_lib[0]


def _ptr(array: np.ndarray) -> int:
    return array.ctypes.data


def _on_threads(run, lo: int, hi: int) -> None:
    """`run(a, b)` over [lo, hi) cut into one range per core, each on a thread (ctypes lets go of the GIL)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    threads = max(1, min(cores, 8, (hi - lo) >> 16))
    bounds = [lo + (hi - lo) * t // threads for t in range(threads + 1)]
    if threads == 1:
        run(lo, hi)
        return
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(run, bounds[:-1], bounds[1:]))


def find_repeats(texts: list[bytes], min_bytes: int) -> RepeatSpans:
    """Repeated substrings (≥ min_bytes) of the concatenated documents: every occurrence but the first.

    Returns byte spans per document (merged, snapped to UTF-8 character starts) and, for each span, the index of
    the earliest document holding a first occurrence of one of its windows. Past the suffix array and the pairs
    of `adjacent_repeats`, everything is whole-array NumPy work: most of a repetitive corpus's text can be windows
    (100 M of them in the 268 MB group of the full JSONL bench).
    """
    import pydivsufsort

    out = RepeatSpans()
    lens = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    starts = np.zeros(len(texts), dtype=np.int64)
    if len(texts) > 1:
        starts[1:] = np.cumsum(lens + 1)[:-1]
    ends = starts + lens
    buf = bytearray(b"\xff".join(texts))
    buf.append(SEPARATOR)
    n = len(buf)
    if n < 2 or lens.max(initial=0) < min_bytes:
        return out
    data = np.frombuffer(buf, dtype=np.uint8)
    t0 = time.perf_counter()
    sa = pydivsufsort.divsufsort(data)
    t1 = time.perf_counter()
    # adjacent suffix pairs (i, i+1) sharing ≥ min_bytes bytes inside both documents: as the two share their
    # first min_bytes bytes, that is "no separator among them"
    pair = adjacent_repeats(data, sa, min_bytes)
    out.sa_seconds, out.lcp_seconds = t1 - t0, time.perf_counter() - t1
    if not pair.any():
        return out
    # a maximal run of pair indices i..j is one group of suffixes sharing their first min_bytes bytes: entries
    # i..j+1 of the suffix array, the group starting where a pair index follows no other
    member = pair.copy()
    member[1:] |= pair[:-1]
    pair[1:] &= ~pair[:-1]  # now: the pair indices that start a run
    members = np.flatnonzero(member)
    del member
    group_start = pair[members]
    del pair
    pos = sa[members]  # text offsets of the group members, group by group
    del sa, members
    offsets = np.flatnonzero(group_start)
    first = np.minimum.reduceat(pos, offsets)  # each group's first occurrence
    group = np.cumsum(group_start, dtype=pos.dtype)  # int32 below 2 GiB: 8x faster than int64 here
    group -= 1
    del group_start
    # every other member starts a window, whose survivor is its group's first occurrence: one slot per text
    # offset (an offset is in at most one group), read back in text order, which sorts the windows for free
    survivor_at = np.full(n, -1, dtype=pos.dtype)
    survivor_at[pos] = first[group]
    survivor_at[first] = -1
    del pos, group, first, offsets
    w_start = np.flatnonzero(survivor_at >= 0)
    w_surv = survivor_at[w_start]
    del survivor_at
    out.windows = len(w_start)
    # windows all have min_bytes bytes: sorted by start, they are sorted by end too; merge overlapping or
    # touching ones into spans, whose survivor is the earliest document any of their windows was first seen in
    # (documents are in text order, so that is the document of the earliest first occurrence)
    w_end = w_start + min_bytes
    new_span = np.ones(len(w_start), dtype=bool)
    new_span[1:] = w_start[1:] > w_end[:-1]
    s_idx = np.flatnonzero(new_span)
    del new_span
    s = w_start[s_idx]
    e = w_end[np.append(s_idx[1:] - 1, len(w_start) - 1)]
    surv_doc = np.searchsorted(starts, np.minimum.reduceat(w_surv, s_idx), side="right") - 1
    del w_start, w_end, w_surv
    doc = np.searchsorted(starts, s, side="right") - 1
    # snap inward to character boundaries: start not inside a character, nor end inside one (a UTF-8
    # character has at most 3 continuation bytes)
    last = n - 1
    while True:
        move = (s < e) & ((data[np.minimum(s, last)] & 0xC0) == 0x80)
        if not move.any():
            break
        s = s + move
    doc_end = ends[doc]
    while True:
        move = (e > s) & (e < doc_end) & ((data[np.minimum(e, last)] & 0xC0) == 0x80)
        if not move.any():
            break
        e = e - move
    keep = e > s
    out.doc, out.survivor = doc[keep], surv_doc[keep]
    out.start, out.end = s[keep] - starts[out.doc], e[keep] - starts[out.doc]
    return out


PLAN_SCHEMA = pa.schema(
    [("row", pa.int64()), ("start", pa.int64()), ("end", pa.int64()), ("duplicate_of", pa.string())]
)


@dataclass
class SuffixArrayGroupResult:
    """What the suffix array of one group found: its statistics (the part files hold the spans)."""

    stats: dict = field(default_factory=dict)


def suffix_array_find_group(
    in_parts: list[str],
    part_indices: list[int],
    plan_parts: list[str],
    params: SuffixArrayDedupParams,
) -> SuffixArrayGroupResult:
    """One group of consecutive shards (from `plan_suffix_array_groups`): one suffix array over all their text,
    and for each part a plan file of the byte spans to cut (`PLAN_SCHEMA`: row, start, end, survivor id) for
    `suffix_array_filter_shard`, which can then run on every part at once. Refuses, before allocating anything
    big, when the estimated memory exceeds the limit."""
    if not (len(in_parts) == len(part_indices) == len(plan_parts)):
        raise ValueError("suffix array: in_parts, part_indices and plan_parts must have the same length")
    sizes = [text_size(p) for p in in_parts]
    n_bytes = sum(b for b, _ in sizes)
    n_docs = sum(d for _, d in sizes)
    need, limit = estimate_memory_bytes(n_bytes, n_docs), memory_limit(params)
    if need > limit:
        raise MemoryError(
            f"suffix array over {len(in_parts)} shard(s) with {n_bytes:,} text bytes needs about {need:,} bytes of "
            f"memory (≈{need / max(n_bytes, 1):.0f} per text byte) but only {limit:,} are allowed; lower "
            f"dedup suffix_array max_group_bytes (now {params.max_group_bytes:,}) or write smaller shards"
        )
    texts: list[bytes] = []
    id_chunks: list[pa.Array] = []
    first_doc = [0]  # index of each part's first document in the group
    for part in in_parts:
        for batch in part_batches(part, columns=["id", "text"]):
            texts.extend(text.encode("utf-8") for text in batch.column("text").to_pylist())
            id_chunks.append(batch.column("id").cast(pa.string()))
        first_doc.append(len(texts))
    t0 = time.perf_counter()
    found = find_repeats(texts, params.min_bytes)
    seconds = time.perf_counter() - t0
    del texts
    ids = pa.concat_arrays(id_chunks) if id_chunks else pa.array([], pa.string())
    bounds = np.searchsorted(found.doc, first_doc)  # spans are in document order
    for k, path in enumerate(plan_parts):
        lo, hi = bounds[k], bounds[k + 1]
        plan = {
            "row": found.doc[lo:hi] - first_doc[k],
            "start": found.start[lo:hi],
            "end": found.end[lo:hi],
            "duplicate_of": ids.take(found.survivor[lo:hi]),
        }
        write_table_atomic(path, pa.table(plan, schema=PLAN_SCHEMA))
    return SuffixArrayGroupResult(
        {
            "group_parts": list(part_indices),
            "group_bytes": n_bytes,
            "group_docs": n_docs,
            "memory_estimate": need,
            "memory_limit": limit,
            "windows": found.windows,
            "sa_seconds": round(found.sa_seconds, 4),
            "lcp_seconds": round(found.lcp_seconds, 4),
            "seconds": round(seconds, 4),
        }
    )


def suffix_array_filter_shard(
    in_part: str,
    part_index: int,
    plan_part: str,
    out_part: str,
    rejected_part: str,
    params: SuffixArrayDedupParams,
    spans_part: str | None = None,
) -> ShardCounts:
    """Cut the spans of one part's plan (from `suffix_array_find_group`) out of its documents; a document left
    under `min_doc_bytes` is dropped with the survivor of its longest span."""
    plan: dict[int, list[tuple[int, int, str]]] = {}
    table = read_tables([plan_part])
    for row, s, e, survivor in zip(*(table.column(n).to_pylist() for n in PLAN_SCHEMA.names), strict=True):
        plan.setdefault(row, []).append((s, e, survivor))

    def decide(row: int, doc_id: str, text: str) -> Decision:
        spans = plan.get(row)
        if not spans:
            return KEEP
        if text.isascii():  # byte offsets are character offsets
            removals = [SpanRemoval(s, e, REASON_SPAN, surv) for s, e, surv in spans]
        else:
            raw = text.encode("utf-8")
            removals = [
                SpanRemoval(len(raw[:s].decode("utf-8")), len(raw[:e].decode("utf-8")), REASON_SPAN, surv)
                for s, e, surv in spans
            ]
        left = cut_spans(text, removals)
        if len(left.strip().encode("utf-8")) < params.min_doc_bytes:
            biggest = max(removals, key=lambda span: span.end - span.start)
            return Decision(REASON_TOO_SHORT, biggest.duplicate_of)
        return Decision(spans=removals)

    shard = apply_decisions(
        in_part, out_part, rejected_part, decide, spans_part=spans_part, emptied_reason=REASON_TOO_SHORT
    )
    shard.info["part_index"] = part_index
    return shard


def suffix_array_dedup_group(
    in_parts: list[str],
    part_indices: list[int],
    out_parts: list[str],
    rejected_parts: list[str],
    params: SuffixArrayDedupParams,
    spans_parts: list[str] | None = None,
) -> list[ShardCounts]:
    """`suffix_array_find_group` and then `suffix_array_filter_shard` on each part, in this process (the
    pipeline runs the filters as tasks of their own); the first part's `info["group"]` holds the group's
    statistics."""
    if not (len(in_parts) == len(part_indices) == len(out_parts) == len(rejected_parts)):
        raise ValueError(
            "suffix array: in_parts, part_indices, out_parts and rejected_parts must have the same length"
        )
    with tempfile.TemporaryDirectory(prefix="suffix-array-plan-") as tmp:
        plan_parts = [str(Path(tmp) / f"{part_name(i)}.parquet") for i in part_indices]
        group = suffix_array_find_group(in_parts, part_indices, plan_parts, params)
        results = [
            suffix_array_filter_shard(
                in_parts[k],
                part_indices[k],
                plan_parts[k],
                out_parts[k],
                rejected_parts[k],
                params,
                spans_parts[k] if spans_parts else None,
            )
            for k in range(len(in_parts))
        ]
    if results:
        results[0].info["group"] = group.stats
    return results


def summarize_suffix_array(
    results: list[ShardCounts], plan: SuffixArrayPlan | None = None
) -> tuple[dict, dict]:
    counts, stats = DEDUP_SUMMARY(results)
    groups = [r.info["group"] for r in results if "group" in r.info]
    if groups:
        text = sum(g["group_bytes"] for g in groups)
        sa = sum(g["sa_seconds"] + g["lcp_seconds"] for g in groups)
        stats["suffix_array_mb_per_s"] = round(text / 1e6 / sa, 2) if sa else None
        stats["windows"] = sum(g["windows"] for g in groups)
        stats["peak_memory_estimate"] = max(g["memory_estimate"] for g in groups)
    if plan is not None:
        stats["plan"] = plan.stats()
    return counts, stats
