"""MinHash LSH near-duplicate detection, split into phases that never need every signature in memory.

Shingles are word n-grams (5 by default) of the lower-cased word tokens, normalised as datatrove does
(accents and combining marks dropped, digits → 0; `normalize`); each shingle is a 32-bit hash of its words. Signatures use datasketch's permutations (same seed → the same `a, b` as
`datasketch.MinHash(num_perm, seed)`), computed for a whole batch of documents at once with numpy, so a
signature equals datasketch's `MinHash(hashfunc=<our shingle hash>)` of the same shingles. LSH splits the
112 permutations into 14 bands × 8 rows: two documents become candidates when all rows of one band agree,
which happens with probability 1 − (1 − s^r)^b for Jaccard similarity s (`candidate_probability`); the
`threshold` parameter picks b × r for a wanted midpoint. On labelled near-duplicates made by realistic edits
(`tasks.dedup.evaluation`, tests/test_dedup_near_duplicates.py) recall per similarity band follows that curve.

Phases and files (`<w>` is a work directory the caller chooses; part/partition numbers are zero-padded):

1. `minhash_signature_shard(in_part, part_index, <w>, params)` → per band, a 64-bit key of the band's rows,
   written as (band, key, doc ref) rows to `<w>/buckets/p{k}/part-{i}.npy`, partition k = key mod P;
   `<w>/docs/part-{i}.parquet` (row, id, shingle count); with `verify`, the sorted shingle set of every
   document in `<w>/shingles/part-{i}.npy` + `.offsets.npy` (memory-mapped later, read for candidates only).
2. `minhash_bucket_partition(bucket_files_of_partition_k, pairs_out, params, shingles_dir)` → groups equal
   (band, key) rows: the documents of one bucket are candidate pairs, optionally confirmed by their true
   Jaccard; writes the sorted unique pairs (uint64 doc refs) to `pairs_out` (.npy). Needs only partition k.
3. `minhash_cluster(pair_files, docs_files, clusters_out)` → connected components of all pairs (union-find
   by min-label propagation with pointer jumping, in numpy); the survivor of a cluster is its document that
   comes first in corpus order (smallest part, then row); writes every other member with its survivor's
   id to `clusters_out` (Parquet, sorted by part, row).
4. `minhash_filter_shard(in_part, part_index, clusters_out, out_part, rejected_part, params)` → kept rows,
   rejected rows with reason `minhash_duplicate` and `duplicate_of`.

A doc ref is `part << 32 | row`, so sorting refs sorts documents in corpus order.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa

from tasks.dedup.decisions import DEDUP_SUMMARY, KEEP, Decision, apply_decisions
from tasks.dedup.params import MinhashDedupParams
from tasks.dedup.sidefiles import (
    DedupInputError,
    load_array,
    part_name,
    read_tables,
    save_npy_atomic,
    write_table_atomic,
)
from tasks.dedup.text import batch_ngram_hashes, batch_word_hashes, mix64
from tasks.shard_drivers import ShardCounts, part_batches

STAGE = "dedup_minhash"
STAGE_VERSION = "2"
REASON = "minhash_duplicate"

log = logging.getLogger(__name__)

MERSENNE_PRIME = np.uint64((1 << 61) - 1)
MAX_HASH = np.uint64((1 << 32) - 1)
_SHIFT61 = np.uint64(61)
_CHUNK_ROWS = 2048  # shingles hashed at once: 2048 × 112 × 8 bytes stays in the CPU cache

DOCS_SCHEMA = pa.schema(
    [
        pa.field("part", pa.int32(), nullable=False),
        pa.field("row", pa.int64(), nullable=False),
        pa.field("id", pa.string(), nullable=False),
        pa.field("shingles", pa.int32(), nullable=False),
    ]
)

CLUSTER_SCHEMA = pa.schema(
    [
        pa.field("part", pa.int32(), nullable=False),
        pa.field("row", pa.int64(), nullable=False),
        pa.field("id", pa.string(), nullable=False),
        pa.field("duplicate_of", pa.string(), nullable=False),
        pa.field("survivor_part", pa.int32(), nullable=False),
        pa.field("survivor_row", pa.int64(), nullable=False),
        pa.field("cluster_size", pa.int32(), nullable=False),
    ]
)


# ---------------------------------------------------------------------------------------------------------
# the maths


def candidate_probability(similarity: float | np.ndarray, bands: int, rows: int) -> float | np.ndarray:
    """Probability that two documents of Jaccard similarity s share at least one band: 1 − (1 − s^r)^b."""
    s = np.asarray(similarity, dtype=np.float64)
    p = 1.0 - (1.0 - s**rows) ** bands
    return float(p) if p.ndim == 0 else p


def similarity_at(probability: float, bands: int, rows: int) -> float:
    """The Jaccard similarity at which a pair becomes a candidate with the given probability (inverse S-curve)."""
    return float((1.0 - (1.0 - probability) ** (1.0 / bands)) ** (1.0 / rows))


def s_curve(
    bands: int, rows: int, points: tuple[float, ...] = (0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)
) -> list[tuple[float, float]]:
    """(similarity, candidate probability) at the given similarities: the S-curve of b bands × r rows."""
    return [(s, candidate_probability(s, bands, rows)) for s in points]


@lru_cache(maxsize=16)
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The universal-hash parameters (a, b) datasketch draws for `MinHash(num_perm, seed)`."""
    from datasketch import MinHash

    a, b = MinHash(num_perm=num_perm, seed=seed).permutations
    return np.ascontiguousarray(a, dtype=np.uint64), np.ascontiguousarray(b, dtype=np.uint64)


def batch_shingle_hashes(
    texts: list[str], ngram: int, normalize: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Shingle hashes of many texts: (concatenated 32-bit hashes as uint64, shingles per text).

    Words are lower-cased runs of letters and digits; with `normalize` (the default, as in the stage) also
    stripped of accents with every digit → 0 (`normalize_word`)."""
    word_h, counts = batch_word_hashes(texts, normalize=normalize)
    h, per_text = batch_ngram_hashes(word_h, counts, ngram)
    return h & MAX_HASH, per_text


def shingle_hashes(text: str, ngram: int, normalize: bool = True) -> np.ndarray:
    """32-bit hashes (as uint64) of the word n-grams of a text; a text shorter than n words is one shingle."""
    return batch_shingle_hashes([text], ngram, normalize)[0]


def jaccard(a: str, b: str, ngram: int = 5, normalize: bool = True) -> float:
    """True Jaccard similarity of two texts' shingle sets (what MinHash estimates and `verify` checks)."""
    x, y = (np.unique(shingle_hashes(t, ngram, normalize)) for t in (a, b))
    if len(x) == 0 and len(y) == 0:
        return 1.0
    inter = len(np.intersect1d(x, y, assume_unique=True))
    return inter / (len(x) + len(y) - inter)


def signatures(shingles: list[np.ndarray], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MinHash signatures (n_docs × num_perm, uint32) of each document's shingle hashes."""
    sizes = np.fromiter((len(s) for s in shingles), dtype=np.int64, count=len(shingles))
    flat = np.concatenate(shingles).astype(np.uint64) if len(shingles) else np.empty(0, np.uint64)
    return batch_signatures(flat, sizes, a, b)


def batch_signatures(hv: np.ndarray, sizes: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MinHash signatures (n_docs × num_perm, uint32) of concatenated shingle hashes (`sizes` per document).

    The same arithmetic as datasketch: min over shingles of ((a·h + b) mod 2^64 mod (2^61 − 1)) & (2^32 − 1).
    The modulo folds the high bits twice (2^61 ≡ 1 mod the prime) instead of dividing, in place, over
    cache-sized chunks; it differs from `%` only when the product is ≡ 2^61 − 1 exactly (probability 2^-61).
    A document without shingles gets the empty signature (every value 2^32 − 1).
    """
    n = len(sizes)
    num_perm = len(a)
    sig = np.full((n, num_perm), MAX_HASH, dtype=np.uint64)
    docs = np.flatnonzero(sizes)
    if len(docs) == 0:
        return sig.astype(np.uint32)
    hv = np.asarray(hv, dtype=np.uint64)
    starts = np.concatenate([[0], np.cumsum(sizes[docs])[:-1]])
    total = len(hv)
    chunk = min(_CHUNK_ROWS, total)
    buf = np.empty((chunk, num_perm), dtype=np.uint64)
    tmp = np.empty_like(buf)
    with np.errstate(over="ignore"):
        for c0 in range(0, total, chunk):
            c1 = min(c0 + chunk, total)
            x, t = buf[: c1 - c0], tmp[: c1 - c0]
            np.multiply(hv[c0:c1, None], a[None, :], out=x)
            x += b
            for _ in range(2):
                np.right_shift(x, _SHIFT61, out=t)
                x &= MERSENNE_PRIME
                x += t
            x &= MAX_HASH
            first = np.searchsorted(starts, c0, side="right") - 1
            last = np.searchsorted(starts, c1, side="left")  # docs [first, last) overlap this chunk
            seg = np.maximum(starts[first:last], c0) - c0
            mins = np.minimum.reduceat(x, seg, axis=0)
            rows = docs[first:last]
            sig[rows] = np.minimum(sig[rows], mins)
    return sig.astype(np.uint32)


def band_keys(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """A 64-bit key per (document, band) that is equal exactly when the band's rows are (up to 2^-64)."""
    n = sig.shape[0]
    v = sig[:, : bands * rows].reshape(n, bands, rows).astype(np.uint64)
    acc = np.broadcast_to(mix64(np.arange(1, bands + 1, dtype=np.uint64)), (n, bands)).copy()
    for j in range(rows):
        acc = mix64(acc ^ v[:, :, j] ^ np.uint64(j << 40))
    return acc


def doc_ref(part: int | np.ndarray, row: int | np.ndarray) -> np.ndarray:
    return (np.asarray(part, dtype=np.uint64) << np.uint64(32)) | np.asarray(row, dtype=np.uint64)


def split_ref(ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ref = np.asarray(ref, dtype=np.uint64)
    return (ref >> np.uint64(32)).astype(np.int64), (ref & np.uint64(0xFFFFFFFF)).astype(np.int64)


# ---------------------------------------------------------------------------------------------------------
# paths


def bucket_path(work_dir: str | os.PathLike, partition: int, part_index: int) -> Path:
    return Path(work_dir) / "buckets" / f"p{partition:03d}" / f"{part_name(part_index)}.npy"


def bucket_files(work_dir: str | os.PathLike, partition: int) -> list[str]:
    """Every part's bucket file of one partition, in part order (input of `minhash_bucket_partition`)."""
    return [str(p) for p in sorted((Path(work_dir) / "buckets" / f"p{partition:03d}").glob("part-*.npy"))]


def docs_path(work_dir: str | os.PathLike, part_index: int) -> Path:
    return Path(work_dir) / "docs" / f"{part_name(part_index)}.parquet"


def docs_files(work_dir: str | os.PathLike) -> list[str]:
    return [str(p) for p in sorted((Path(work_dir) / "docs").glob("part-*.parquet"))]


def shingles_dir(work_dir: str | os.PathLike) -> Path:
    return Path(work_dir) / "shingles"


def pairs_path(work_dir: str | os.PathLike, partition: int) -> Path:
    return Path(work_dir) / "pairs" / f"p{partition:03d}.npy"


def _part_index_of(path: str | os.PathLike) -> int:
    m = re.search(r"part-(\d+)", Path(path).name)
    if not m:
        raise ValueError(f"{path}: expected a file named part-NNNNN.*")
    return int(m.group(1))


# ---------------------------------------------------------------------------------------------------------
# phase 1: signatures → band buckets


@dataclass
class MinhashSignatureResult:
    part: str
    part_index: int
    docs: int = 0
    docs_without_shingles: int = 0
    shingles: int = 0
    bucket_rows: int = 0
    files: list = field(default_factory=list)


def minhash_signature_shard(
    in_part: str, part_index: int, work_dir: str, params: MinhashDedupParams
) -> MinhashSignatureResult:
    """Phase 1: shingle, sign and band one part; write its bucket rows into `params.partitions` files."""
    a, b = permutations(params.num_perm, params.seed)
    result = MinhashSignatureResult(part=in_part, part_index=part_index)
    parts_out: list[list[np.ndarray]] = [[] for _ in range(params.partitions)]
    doc_cols: dict[str, list] = {name: [] for name in DOCS_SCHEMA.names}
    kept_shingles: list[np.ndarray] = []
    row0 = 0
    for batch in part_batches(in_part, columns=["id", "text"], batch_size=params.batch_docs):
        ids = batch.column("id").to_pylist()
        hv, sizes = batch_shingle_hashes(batch.column("text").to_pylist(), params.ngram, params.normalize)
        sig = batch_signatures(hv, sizes, a, b)
        keys = band_keys(sig, params.bands, params.rows)
        rows = np.arange(row0, row0 + len(ids), dtype=np.int64)
        has = sizes > 0
        n_has = int(has.sum())
        if n_has:
            bands_col = np.tile(np.arange(params.bands, dtype=np.uint64), n_has)
            keys_col = keys[has].reshape(-1)
            refs_col = np.repeat(doc_ref(part_index, rows[has]), params.bands)
            entries = np.stack([bands_col, keys_col, refs_col], axis=1)
            which = keys_col % np.uint64(params.partitions)
            for k in range(params.partitions):
                parts_out[k].append(entries[which == k])
        doc_cols["part"] += [part_index] * len(ids)
        doc_cols["row"] += rows.tolist()
        doc_cols["id"] += ids
        doc_cols["shingles"] += sizes.tolist()
        if params.verify:
            kept_shingles += [np.unique(s).astype(np.uint32) for s in np.split(hv, np.cumsum(sizes)[:-1])]
        result.docs += len(ids)
        result.docs_without_shingles += len(ids) - n_has
        result.shingles += int(sizes.sum())
        row0 += len(ids)
    for k in range(params.partitions):
        entries = np.concatenate(parts_out[k]) if parts_out[k] else np.empty((0, 3), dtype=np.uint64)
        result.bucket_rows += len(entries)
        result.files.append(str(save_npy_atomic(bucket_path(work_dir, k, part_index), entries)))
    result.files.append(
        str(write_table_atomic(docs_path(work_dir, part_index), pa.table(doc_cols, schema=DOCS_SCHEMA)))
    )
    if params.verify:
        offsets = np.zeros(len(kept_shingles) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(s) for s in kept_shingles])
        flat = np.concatenate(kept_shingles) if kept_shingles else np.empty(0, dtype=np.uint32)
        base = shingles_dir(work_dir) / part_name(part_index)
        result.files.append(str(save_npy_atomic(base.with_suffix(".npy"), flat)))
        result.files.append(str(save_npy_atomic(base.with_suffix(".offsets.npy"), offsets)))
    return result


# ---------------------------------------------------------------------------------------------------------
# phase 2: buckets → candidate pairs


@dataclass
class MinhashBucketResult:
    pairs_file: str
    bucket_rows: int = 0
    buckets_with_candidates: int = 0
    largest_bucket: int = 0
    candidate_pairs: int = 0
    verified_pairs: int = 0
    rejected_pairs: int = 0
    pairs: int = 0


class ShingleStore:
    """Random access to the shingle sets written by phase 1, memory-mapped: only candidates are read."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self._parts: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def get(self, ref: int) -> np.ndarray:
        part, row = int(ref) >> 32, int(ref) & 0xFFFFFFFF
        if part not in self._parts:
            base = self.directory / part_name(part)
            flat_path, off_path = base.with_suffix(".npy"), base.with_suffix(".offsets.npy")
            if not flat_path.is_file() or not off_path.is_file():
                raise FileNotFoundError(
                    f"{flat_path}: shingles of part {part} are missing; run minhash_signature_shard with verify=True"
                )
            self._parts[part] = (load_array(flat_path, mmap=True), load_array(off_path))
        flat, offsets = self._parts[part]
        return np.asarray(flat[offsets[row] : offsets[row + 1]])

    def jaccard(self, x: int, y: int) -> float:
        sx, sy = self.get(x), self.get(y)
        if len(sx) == 0 and len(sy) == 0:
            return 1.0
        inter = len(np.intersect1d(sx, sy, assume_unique=True))
        return inter / (len(sx) + len(sy) - inter)


def _runs(sorted_keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Start offsets and lengths of the runs of equal rows in column-wise sorted keys."""
    n = len(sorted_keys[0])
    if n == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    new = np.ones(n, dtype=bool)
    same = np.ones(n - 1, dtype=bool)
    for k in sorted_keys:
        same &= k[1:] == k[:-1]
    new[1:] = ~same
    starts = np.flatnonzero(new)
    lengths = np.diff(np.append(starts, n))
    return starts, lengths


def minhash_bucket_partition(
    bucket_files: list[str],
    pairs_out: str,
    params: MinhashDedupParams,
    shingles_dir: str | None = None,
) -> MinhashBucketResult:
    """Phase 2: candidate pairs of one band-key partition (sorted, unique, smaller ref first).

    Without `verify`, each bucket links every member to its first document (enough for the clusters).
    With `verify`, the pairs of a bucket (all of them up to `verify_max_bucket` members, else each with the
    first) are kept only when the true Jaccard of their shingle sets reaches `jaccard_threshold`.
    """
    loaded = [load_array(f) for f in sorted(bucket_files)]
    entries = np.concatenate(loaded) if loaded else np.empty((0, 3), dtype=np.uint64)
    result = MinhashBucketResult(pairs_file=pairs_out, bucket_rows=len(entries))
    band, key, ref = entries[:, 0], entries[:, 1], entries[:, 2]
    order = np.lexsort((ref, key, band))
    band, key, ref = band[order], key[order], ref[order]
    starts, lengths = _runs([band, key])
    multi = lengths >= 2
    starts, lengths = starts[multi], lengths[multi]
    result.buckets_with_candidates = len(starts)
    result.largest_bucket = int(lengths.max()) if len(lengths) else 0
    if not params.verify:
        first = np.repeat(ref[starts], lengths - 1)
        member_idx = np.repeat(starts, lengths - 1) + _ranks(lengths - 1) + 1
        pairs = np.stack([first, ref[member_idx]], axis=1) if len(first) else np.empty((0, 2), np.uint64)
        pairs = _unique_pairs(pairs)
        result.candidate_pairs = result.pairs = len(pairs)
    else:
        if shingles_dir is None:
            raise ValueError("minhash verify=True needs shingles_dir (the signature phase's shingles folder)")
        cand = []
        for s, n in zip(starts.tolist(), lengths.tolist(), strict=True):
            members = ref[s : s + n]
            if n <= params.verify_max_bucket:
                i, j = np.triu_indices(n, k=1)
                cand.append(np.stack([members[i], members[j]], axis=1))
            else:
                cand.append(np.stack([np.repeat(members[0], n - 1), members[1:]], axis=1))
        cand_pairs = _unique_pairs(np.concatenate(cand) if cand else np.empty((0, 2), np.uint64))
        store = ShingleStore(shingles_dir)
        keep = np.fromiter(
            (store.jaccard(x, y) >= params.jaccard_threshold for x, y in cand_pairs.tolist()),
            dtype=bool,
            count=len(cand_pairs),
        )
        pairs = cand_pairs[keep]
        result.candidate_pairs = len(cand_pairs)
        result.verified_pairs = result.pairs = len(pairs)
        result.rejected_pairs = len(cand_pairs) - len(pairs)
    save_npy_atomic(pairs_out, pairs.astype(np.uint64))
    return result


def _ranks(counts: np.ndarray) -> np.ndarray:
    """[0..c0-1, 0..c1-1, …] for counts [c0, c1, …]."""
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total, dtype=np.int64) - offsets


def _unique_pairs(pairs: np.ndarray) -> np.ndarray:
    if len(pairs) == 0:
        return np.empty((0, 2), dtype=np.uint64)
    pairs = np.sort(pairs.astype(np.uint64), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return np.unique(pairs, axis=0)


# ---------------------------------------------------------------------------------------------------------
# phase 3: pairs → clusters


@dataclass
class MinhashClusterResult:
    clusters_file: str
    pairs: int = 0
    clusters: int = 0
    duplicates: int = 0
    largest_cluster: int = 0
    rounds: int = 0


def connected_components(edges: np.ndarray, n: int) -> tuple[np.ndarray, int]:
    """Component label of each of n nodes = the smallest node index in its component, and the rounds taken.

    Min-label propagation along the edges followed by pointer jumping, repeated until stable: numpy only.
    """
    label = np.arange(n, dtype=np.int64)
    if len(edges) == 0:
        return label, 0
    u, v = edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64)
    rounds = 0
    while True:
        rounds += 1
        m = np.minimum(label[u], label[v])
        new = label.copy()
        np.minimum.at(new, u, m)
        np.minimum.at(new, v, m)
        while True:  # pointer jumping: follow labels to their own labels
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, label):
            return label, rounds
        label = new


def minhash_cluster(pair_files: list[str], docs_files: list[str], clusters_out: str) -> MinhashClusterResult:
    """Phase 3: cluster all candidate pairs; write every non-survivor with its survivor (first in corpus order)."""
    loaded = [load_array(f).reshape(-1, 2) for f in sorted(pair_files)]
    pairs = _unique_pairs(np.concatenate(loaded) if loaded else np.empty((0, 2), np.uint64))
    result = MinhashClusterResult(clusters_file=clusters_out, pairs=len(pairs))
    nodes = np.unique(pairs.reshape(-1))
    edges = np.searchsorted(nodes, pairs)
    label, result.rounds = connected_components(edges, len(nodes))
    sizes = np.bincount(label, minlength=len(nodes))
    dup = label != np.arange(len(nodes))
    result.duplicates = int(dup.sum())
    result.clusters = int((sizes > 1).sum())
    result.largest_cluster = int(sizes.max()) if len(sizes) else 0
    members, survivors = nodes[dup], nodes[label[dup]]
    m_part, m_row = split_ref(members)
    s_part, s_row = split_ref(survivors)
    id_of = _ids_lookup(docs_files, np.concatenate([m_part, s_part]), np.concatenate([m_row, s_row]))
    table = pa.table(
        {
            "part": pa.array(m_part.astype(np.int32)),
            "row": pa.array(m_row),
            "id": pa.array(
                [id_of(p, r) for p, r in zip(m_part.tolist(), m_row.tolist(), strict=True)], pa.string()
            ),
            "duplicate_of": pa.array(
                [id_of(p, r) for p, r in zip(s_part.tolist(), s_row.tolist(), strict=True)], pa.string()
            ),
            "survivor_part": pa.array(s_part.astype(np.int32)),
            "survivor_row": pa.array(s_row),
            "cluster_size": pa.array(sizes[label[dup]].astype(np.int32)),
        },
        schema=CLUSTER_SCHEMA,
    )
    write_table_atomic(clusters_out, table)  # already sorted by (part, row): refs were sorted
    return result


def _ids_lookup(docs_files: list[str], parts: np.ndarray, rows: np.ndarray):
    """A (part, row) → id lookup for the given documents only: each part's ids are read in turn and only the
    rows asked for are kept, so memory follows the duplicates, not the corpus."""
    by_part = {_part_index_of(f): f for f in docs_files}
    ids: dict[tuple[int, int], str] = {}
    for p in np.unique(parts).tolist():
        if p not in by_part:
            raise FileNotFoundError(f"minhash: no docs file for part {p} among {len(docs_files)} given")
        wanted = np.unique(rows[parts == p])
        column = read_tables([by_part[p]], columns=["id"]).column("id")
        if len(wanted) and int(wanted[-1]) >= len(column):
            raise DedupInputError(
                f"{by_part[p]}: has {len(column)} documents but the pairs name row {int(wanted[-1])}; "
                "rerun the minhash signature phase"
            )
        taken = column.take(pa.array(wanted)).to_pylist()
        ids.update(zip(((p, r) for r in wanted.tolist()), taken, strict=True))
        del column
    return lambda part, row: ids[(part, row)]


# ---------------------------------------------------------------------------------------------------------
# phase 4: filter


def read_clusters(clusters_file: str, part_index: int) -> dict[int, str]:
    """{row: survivor id} of the duplicates in one part."""
    if not Path(clusters_file).is_file():
        raise FileNotFoundError(f"{clusters_file}: minhash clusters missing (run minhash_cluster first)")
    t = read_tables([clusters_file], columns=["row", "duplicate_of"], filters=[("part", "=", part_index)])
    return dict(zip(t.column("row").to_pylist(), t.column("duplicate_of").to_pylist(), strict=True))


def minhash_filter_shard(
    in_part: str,
    part_index: int,
    clusters_file: str,
    out_part: str,
    rejected_part: str,
    params: MinhashDedupParams | None = None,
) -> ShardCounts:
    """Phase 4: drop this part's cluster members that are not their cluster's survivor."""
    del params  # the decision is all in the clusters file
    drop = read_clusters(clusters_file, part_index)

    def decide(row: int, doc_id: str, text: str) -> Decision:
        survivor = drop.get(row)
        return Decision(REASON, survivor) if survivor is not None else KEEP

    result = apply_decisions(in_part, out_part, rejected_part, decide)
    result.info["part_index"] = part_index
    return result


def summarize_minhash(
    results: list[ShardCounts],
    bucket_results: list[MinhashBucketResult] | None = None,
    cluster_result: MinhashClusterResult | None = None,
    params: MinhashDedupParams | None = None,
) -> tuple[dict, dict]:
    """Manifest counts/stats: per-reason drops plus candidate pairs, clusters and the S-curve used."""
    counts, stats = DEDUP_SUMMARY(results)
    if bucket_results:
        stats["candidate_pairs"] = sum(r.candidate_pairs for r in bucket_results)
        stats["verified_pairs"] = sum(r.verified_pairs for r in bucket_results)
        stats["rejected_pairs"] = sum(r.rejected_pairs for r in bucket_results)
        stats["largest_bucket"] = max(r.largest_bucket for r in bucket_results)
    if cluster_result:
        stats["clusters"] = cluster_result.clusters
        stats["largest_cluster"] = cluster_result.largest_cluster
    if params:
        stats["bands_rows"] = f"{params.bands}x{params.rows}"
        stats["lsh_threshold"] = round(params.lsh_threshold, 4)
        stats["midpoint"] = round(params.midpoint, 4)
        stats["s_curve"] = {f"{s:.2f}": round(p, 4) for s, p in s_curve(params.bands, params.rows)}
    return counts, stats


def minhash_dedup_local(
    in_parts: list[str],
    out_parts: list[str],
    rejected_parts: list[str],
    work_dir: str,
    params: MinhashDedupParams,
) -> tuple[list[ShardCounts], list[MinhashBucketResult], MinhashClusterResult]:
    """All four phases in this process, in order (tests, benchmarks, small inputs)."""
    for i, part in enumerate(in_parts):
        minhash_signature_shard(part, i, work_dir, params)
    buckets = [
        minhash_bucket_partition(
            bucket_files(work_dir, k), str(pairs_path(work_dir, k)), params, str(shingles_dir(work_dir))
        )
        for k in range(params.partitions)
    ]
    clusters_file = str(Path(work_dir) / "clusters.parquet")
    cluster = minhash_cluster([b.pairs_file for b in buckets], docs_files(work_dir), clusters_file)
    filtered = [
        minhash_filter_shard(part, i, clusters_file, out_parts[i], rejected_parts[i], params)
        for i, part in enumerate(in_parts)
    ]
    return filtered, buckets, cluster
