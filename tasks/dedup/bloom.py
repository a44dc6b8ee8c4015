"""Bloom-filter dedup, BFF-style (Dolma): each document is checked against everything seen before it.

The filter (pybloom-live) holds the word n-grams (13 by default) of every paragraph seen so far, or whole
paragraphs with `unit="paragraph"`. For each document, in corpus order, paragraph by paragraph, each key is
checked and inserted at once (so a paragraph repeated inside one document counts too). Then:

- if ≥ `doc_threshold` (0.8) of the document's keys were already there, the document is dropped
  (reason `bloom_duplicate`);
- otherwise each paragraph with ≥ `paragraph_threshold` of its keys already there is cut out
  (reason `bloom_duplicate_paragraph`, recorded in the spans part with its character offsets).

Paragraphs are newline-delimited and their span includes the newline, as in Dolma's
`bff_duplicate_paragraph_spans`. A paragraph shorter than n words is one n-gram; a paragraph without words is
ignored. In paragraph mode the shares are weighted by paragraph length in characters.

State carries over from part to part, so the parts are processed in order: either all in one call
(`bloom_dedup_parts`) or one call per part that loads the previous part's filter file and saves its own
(`bloom_dedup_shard`, pybloom-live's `tofile`/`fromfile`), which a flow can chain and resume.

A Bloom filter answers membership only. To name the survivor (`duplicate_of`), a `SurvivorIndex` remembers
which document first inserted each key (`track_survivors`, on by default): 64-bit key → document number in
sorted numpy runs, 16 bytes per distinct key plus each document's id, never a Python object per key. A removed
paragraph's survivor is the document that first held most of its seen keys; a dropped document's, the one that
first held most of all its seen keys (ties → the smallest id). When parts run one call each, every part saves
the keys it added (`<filter_out>.survivors.npz`, linked to the previous part's) and the next part loads the
chain, so survivors are named across parts exactly as in one pass. With `track_survivors: false` (corpora
whose keys do not fit in memory) `duplicate_of` is null. False positives make a key look seen when it is not:
the rate is `error_rate` once `capacity` distinct keys are in (measured by `measure_false_positive_rate`); a
key seen only through a false positive has no owner.
"""

from __future__ import annotations

import logging
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
from pybloom_live import BloomFilter, ScalableBloomFilter

from storage.atomic import atomic_path, write_atomic
from tasks.dedup.decisions import DEDUP_SUMMARY, KEEP, Decision, SpanRemoval, apply_decisions
from tasks.dedup.params import BloomDedupParams
from tasks.dedup.sidefiles import DedupInputError
from tasks.dedup.text import batch_ngram_hashes, batch_word_hashes, hash64, normalize_text, split_paragraphs
from tasks.shard_drivers import ShardCounts, part_batches

STAGE = "dedup_bloom"
STAGE_VERSION = "2"
REASON_DOC = "bloom_duplicate"
REASON_PARAGRAPH = "bloom_duplicate_paragraph"
REASON_EMPTIED = "bloom_emptied"

log = logging.getLogger(__name__)

Filter = BloomFilter | ScalableBloomFilter


def make_filter(params: BloomDedupParams) -> Filter:
    if params.scalable:
        return ScalableBloomFilter(
            initial_capacity=params.capacity,
            error_rate=params.error_rate,
            mode=ScalableBloomFilter.LARGE_SET_GROWTH,
        )
    return BloomFilter(capacity=params.capacity, error_rate=params.error_rate)


def estimate_keys(in_parts: list[str], params: BloomDedupParams) -> int:
    """An upper estimate of the distinct keys the corpus can put in the filter, read column-wise with Arrow:
    one n-gram per word (a word run of letters/digits) in n-gram mode, one per paragraph in paragraph mode.
    A flow can size `capacity` from it (it depends on the input only, so reruns stay byte-identical)."""
    pattern = r"[\p{L}\p{N}_]+" if params.unit == "ngram" else "\n"
    total = 0
    for part in in_parts:
        for batch in part_batches(part, columns=["text"]):
            counts = pc.count_substring_regex(batch.column(0), pattern)
            total += int(pc.sum(counts).as_py() or 0) + (len(batch) if params.unit == "paragraph" else 0)
    return total


def load_filter(path: str | os.PathLike, params: BloomDedupParams) -> Filter:
    """A filter saved by an earlier part; refuses one built with other settings."""
    cls = ScalableBloomFilter if params.scalable else BloomFilter
    try:
        with open(path, "rb") as fh:
            filt = cls.fromfile(fh)
    except (OSError, ValueError, EOFError) as e:
        raise ValueError(f"{path}: cannot read the Bloom filter saved by the previous part ({e})") from e
    capacity = getattr(filt, "initial_capacity", None) if params.scalable else filt.capacity
    if capacity != params.capacity or abs(filt.error_rate - params.error_rate) > 1e-12:
        raise ValueError(
            f"{path}: Bloom filter has capacity {capacity} and error rate {filt.error_rate}, "
            f"but the parameters say {params.capacity} and {params.error_rate}"
        )
    return filt


def save_filter(filt: Filter, path: str | os.PathLike) -> Path:
    def save(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            filt.tofile(fh)

    return write_atomic(path, save)


SURVIVORS_SUFFIX = ".survivors.npz"
_FLUSH_KEYS = 1 << 20  # keys held in the dict of the current part before they move to a sorted run


class SurvivorIndex:
    """Which document first inserted each filter key, compactly: sorted (key, document number) numpy runs,
    merged geometrically like a log-structured tree, plus a dict for the newest keys and the documents' ids.

    Document numbers count documents in corpus order from the first part; `ids[n]` is document n's id. Runs
    loaded from earlier parts are kept apart from the ones this call adds, so `save` writes only the new keys.
    """

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._base: list[tuple[np.ndarray, np.ndarray]] = []
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending: dict[int, int] = {}
        self._first_new_doc = 0

    def __len__(self) -> int:
        return sum(len(k) for k, _ in self._base) + sum(len(k) for k, _ in self._runs) + len(self._pending)

    def new_document(self, doc_id: str) -> int:
        self.ids.append(doc_id)
        return len(self.ids) - 1

    def record(self, key: int, doc: int) -> None:
        """`doc` inserted `key` (only called for keys the filter had not seen)."""
        self._pending.setdefault(key, doc)
        if len(self._pending) >= _FLUSH_KEYS:
            self._flush()

    def owners(self, keys: np.ndarray) -> np.ndarray:
        """The document number that first inserted each key, −1 where unknown (a false positive)."""
        out = np.full(len(keys), -1, dtype=np.int64)
        if len(keys) == 0:
            return out
        for run_keys, run_docs in (*self._base, *self._runs):
            if len(run_keys) == 0:
                continue
            i = np.minimum(np.searchsorted(run_keys, keys), len(run_keys) - 1)
            hit = (run_keys[i] == keys) & (out < 0)
            out[hit] = run_docs[i[hit]]
        if self._pending:
            get = self._pending.get
            for j in np.flatnonzero(out < 0).tolist():
                d = get(int(keys[j]))
                if d is not None:
                    out[j] = d
        return out

    def _flush(self) -> None:
        if not self._pending:
            return
        keys = np.fromiter(self._pending.keys(), dtype=np.uint64, count=len(self._pending))
        docs = np.fromiter(self._pending.values(), dtype=np.int64, count=len(self._pending))
        order = np.argsort(keys, kind="stable")
        _push_run(self._runs, keys[order], docs[order])
        self._pending = {}

    def _new_keys(self) -> tuple[np.ndarray, np.ndarray]:
        self._flush()
        keys, docs = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
        for k, d in self._runs:
            keys, docs = _merge_runs(keys, docs, k, d)
        return keys, docs

    def save(self, path: str | os.PathLike, previous: str | os.PathLike | None) -> Path:
        """Write the keys and documents this call added; `previous` is the survivors file it continued."""
        keys, docs = self._new_keys()
        new_ids = [i.encode("utf-8") for i in self.ids[self._first_new_doc :]]
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(
                fh,
                keys=keys,
                docs=docs,
                first_doc=np.array([self._first_new_doc], dtype=np.int64),
                id_bytes=np.frombuffer(b"".join(new_ids), dtype=np.uint8),  # UTF-8 ids, back to back
                id_ends=np.cumsum([len(i) for i in new_ids], dtype=np.int64),
                previous=np.array([Path(previous).name if previous else ""], dtype=np.str_),
            )
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> SurvivorIndex:
        """The index as it stood after the part that wrote `path`, following its chain back to the first part."""
        chain: list[dict] = []
        current: Path | None = Path(path)
        while current is not None:
            if not current.is_file():
                raise DedupInputError(
                    f"{current}: survivors of an earlier Bloom part are missing (rerun the Bloom parts from the "
                    "first, or set dedup bloom track_survivors: false)"
                )
            try:
                with np.load(current, allow_pickle=False) as z:
                    entry = {
                        k: z[k] for k in ("keys", "docs", "first_doc", "id_bytes", "id_ends", "previous")
                    }
            except (OSError, ValueError, KeyError) as e:
                raise DedupInputError(f"{current}: cannot read the Bloom survivors file ({e})") from e
            chain.append(entry)
            prev = str(entry["previous"][0])
            current = current.with_name(prev) if prev else None
        index = cls()
        for entry in reversed(chain):
            if int(entry["first_doc"][0]) != len(index.ids):
                raise DedupInputError(
                    f"{path}: the chain of Bloom survivors files is inconsistent (a part was redone with other "
                    "input); rerun the Bloom sub-stage from its first part"
                )
            blob, ends = entry["id_bytes"].tobytes(), entry["id_ends"].tolist()
            index.ids += [blob[a:b].decode("utf-8") for a, b in zip([0, *ends][:-1], ends, strict=True)]
            if len(entry["keys"]):
                _push_run(index._base, entry["keys"], entry["docs"])
        index._first_new_doc = len(index.ids)
        return index


def _merge_runs(
    k1: np.ndarray, d1: np.ndarray, k2: np.ndarray, d2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted runs merged in one pass (no re-sort): each key of the second goes after its equals in the first."""
    at = np.searchsorted(k1, k2, side="right") + np.arange(len(k2))
    from_second = np.zeros(len(k1) + len(k2), dtype=bool)
    from_second[at] = True
    keys = np.empty(len(from_second), dtype=np.uint64)
    docs = np.empty(len(from_second), dtype=np.int64)
    keys[at], docs[at] = k2, d2
    keys[~from_second], docs[~from_second] = k1, d1
    return keys, docs


def _push_run(runs: list[tuple[np.ndarray, np.ndarray]], keys: np.ndarray, docs: np.ndarray) -> None:
    """Append a sorted run, then merge while the newest is at least half the size of the one before it, so
    n keys live in O(log n) runs and each key takes part in O(log n) merges."""
    runs.append((keys, docs))
    while len(runs) >= 2 and 2 * len(runs[-1][0]) >= len(runs[-2][0]):
        (k1, d1), (k2, d2) = runs.pop(-2), runs.pop(-1)
        runs.append(_merge_runs(k1, d1, k2, d2))


def survivors_path(filter_path: str | os.PathLike) -> Path:
    p = Path(filter_path)
    return p.with_name(p.name + SURVIVORS_SUFFIX)


@dataclass
class ParagraphCheck:
    index: int
    start: int
    end: int
    keys: int
    seen: int
    weight: float
    survivor: str | None = None

    @property
    def fraction(self) -> float:
        return self.seen / self.keys if self.keys else 0.0


@dataclass
class DocumentCheck:
    paragraphs: list[ParagraphCheck]
    keys: int = 0
    seen: int = 0
    duplicated_fraction: float = 0.0
    survivor: str | None = None


class BloomDeduper:
    """Checks documents in order against a filter of everything seen before (check and insert at once)."""

    def __init__(
        self, params: BloomDedupParams, filt: Filter | None = None, survivors: SurvivorIndex | None = None
    ):
        self.params = params
        self.filter = filt if filt is not None else make_filter(params)
        self.survivors: SurvivorIndex | None = None
        if params.track_survivors:
            self.survivors = survivors if survivors is not None else SurvivorIndex()
        self.checks = 0

    def _keys(self, paragraphs: list[str]) -> list[np.ndarray]:
        """The 64-bit filter keys of each paragraph (none for a paragraph without words)."""
        if self.params.unit == "paragraph":
            keys = (normalize_text(p) if self.params.normalize else p.strip() for p in paragraphs)
            return [np.array([hash64(k)], dtype=np.uint64) if k else _NO_KEYS for k in keys]
        # one vectorised pass over the whole document; n-grams never cross a paragraph boundary
        word_h, counts = batch_word_hashes(paragraphs)
        grams, per_paragraph = batch_ngram_hashes(word_h, counts, self.params.ngram)
        return np.split(grams, np.cumsum(per_paragraph)[:-1]) if len(paragraphs) else []

    def _add(self, key: str) -> bool:
        try:
            return self.filter.add(key)
        except IndexError:
            raise ValueError(
                f"Bloom filter full: more than {self.params.capacity:,} distinct keys at error rate "
                f"{self.params.error_rate}; raise dedup bloom capacity or set scalable=true"
            ) from None

    def check(self, doc_id: str, text: str) -> DocumentCheck:
        """Check (and insert) every key of one document; which paragraphs were seen, and how much of it."""
        out: list[ParagraphCheck] = []
        total_w = seen_w = 0.0
        keys_n = seen_n = 0
        index = self.survivors
        doc = index.new_document(doc_id) if index is not None else -1
        doc_owners: Counter = Counter()
        paragraphs = split_paragraphs(text)
        for p, keys in zip(paragraphs, self._keys([p.text for p in paragraphs]), strict=True):
            if not len(keys):
                continue
            as_int = keys.tolist()
            hits = np.fromiter((self._add(format(k, "x")) for k in as_int), dtype=bool, count=len(as_int))
            seen = int(hits.sum())
            owners: Counter = Counter()
            if index is not None:
                for k in keys[~hits].tolist():  # first: a key repeated inside this paragraph is its own
                    index.record(k, doc)
                if seen:
                    found = index.owners(keys[hits])
                    owners.update(index.ids[d] for d in found[found >= 0].tolist())
            self.checks += len(keys)
            weight = float(len(p.text)) if self.params.unit == "paragraph" else float(len(keys))
            frac = seen / len(keys)
            out.append(ParagraphCheck(p.index, p.start, p.end, len(keys), seen, weight, _most_common(owners)))
            total_w += weight
            seen_w += weight * frac
            keys_n += len(keys)
            seen_n += seen
            doc_owners.update(owners)
        return DocumentCheck(
            paragraphs=out,
            keys=keys_n,
            seen=seen_n,
            duplicated_fraction=seen_w / total_w if total_w else 0.0,
            survivor=_most_common(doc_owners),
        )

    def decide(self, doc_id: str, text: str) -> Decision:
        c = self.check(doc_id, text)
        if c.keys and c.duplicated_fraction >= self.params.doc_threshold:
            return Decision(REASON_DOC, c.survivor)
        spans = [
            SpanRemoval(p.start, p.end, REASON_PARAGRAPH, p.survivor)
            for p in c.paragraphs
            if p.fraction >= self.params.paragraph_threshold
        ]
        return Decision(spans=spans) if spans else KEEP


_NO_KEYS = np.empty(0, dtype=np.uint64)


def _most_common(c: Counter) -> str | None:
    if not c:
        return None
    # ties go to the smallest id, so the answer does not depend on insertion order
    best = max(c.values())
    return min(k for k, v in c.items() if v == best)


def bloom_dedup_shard(
    in_part: str,
    part_index: int,
    filter_in: str | None,
    filter_out: str | None,
    out_part: str,
    rejected_part: str,
    params: BloomDedupParams,
    spans_part: str | None = None,
) -> ShardCounts:
    """One part, in corpus order after the parts before it: load their filter, check, save the filter.

    `filter_in` is the previous part's `filter_out` (None for the first part). With `track_survivors`, the
    survivors of the earlier parts come from `<filter_in>.survivors.npz` and this part's new keys go to
    `<filter_out>.survivors.npz`, so the chain of calls names the same survivors as one pass. Each call reads
    the keys of every earlier part (16 bytes a key, sorted runs merged in linear passes, no re-sort).
    """
    survivors = None
    if params.track_survivors and filter_in:
        survivors = SurvivorIndex.load(survivors_path(filter_in))
    deduper = BloomDeduper(params, load_filter(filter_in, params) if filter_in else None, survivors)
    result = _run(deduper, in_part, out_part, rejected_part, spans_part, part_index)
    if filter_out:
        if deduper.survivors is not None:
            deduper.survivors.save(
                survivors_path(filter_out), survivors_path(filter_in) if filter_in else None
            )
        save_filter(deduper.filter, filter_out)  # last: the filter file marks the part as complete
    return result


def bloom_dedup_parts(
    in_parts: list[str],
    out_parts: list[str],
    rejected_parts: list[str],
    params: BloomDedupParams,
    spans_parts: list[str] | None = None,
    filter_out: str | None = None,
) -> list[ShardCounts]:
    """All parts in order through one filter (one task: the state carries over from part to part)."""
    if not (len(in_parts) == len(out_parts) == len(rejected_parts)):
        raise ValueError("bloom: in_parts, out_parts and rejected_parts must have the same length")
    deduper = BloomDeduper(params)
    results = [
        _run(deduper, part, out_parts[i], rejected_parts[i], spans_parts[i] if spans_parts else None, i)
        for i, part in enumerate(in_parts)
    ]
    if filter_out:
        save_filter(deduper.filter, filter_out)
    return results


def _run(
    deduper: BloomDeduper,
    in_part: str,
    out_part: str,
    rejected_part: str,
    spans_part: str | None,
    part_index: int,
) -> ShardCounts:
    checks0 = deduper.checks
    result = apply_decisions(
        in_part,
        out_part,
        rejected_part,
        lambda row, doc_id, text: deduper.decide(doc_id, text),
        spans_part=spans_part,
        min_chars_after=deduper.params.min_chars_after,
        emptied_reason=REASON_EMPTIED,
    )
    result.tally("checks", deduper.checks - checks0)
    result.info.update(part_index=part_index, filter_keys=len(deduper.filter))
    if deduper.survivors is not None:
        result.info["survivor_keys"] = len(deduper.survivors)
    return result


def summarize_bloom(
    results: list[ShardCounts], params: BloomDedupParams | None = None
) -> tuple[dict, dict]:
    counts, stats = DEDUP_SUMMARY(results)
    stats["checks"] = sum(r.extra.get("checks", 0) for r in results)
    if results:
        stats["filter_keys"] = results[-1].info.get("filter_keys", 0)
    if params is not None:
        stats["capacity"] = params.capacity
        stats["error_rate"] = params.error_rate
        if not params.scalable and stats.get("filter_keys"):
            stats["filter_fill"] = round(stats["filter_keys"] / params.capacity, 6)
    return counts, stats


@dataclass
class FalsePositiveMeasurement:
    capacity: int
    error_rate: float
    inserted: int
    probes: int
    false_positives: int
    bits: int
    extra: dict = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.false_positives / self.probes if self.probes else 0.0


def measure_false_positive_rate(
    capacity: int, error_rate: float, probes: int = 20_000, fill: float = 1.0, seed: int = 0
) -> FalsePositiveMeasurement:
    """Fill a filter with `fill × capacity` random keys, then probe with as many keys never inserted."""
    rng = random.Random(seed)
    filt = BloomFilter(capacity=capacity, error_rate=error_rate)
    inserted = int(capacity * fill)
    for _ in range(inserted):
        filt.add(f"in:{rng.getrandbits(64):x}")
    hits = sum(f"out:{rng.getrandbits(64):x}" in filt for _ in range(probes))
    return FalsePositiveMeasurement(capacity, error_rate, inserted, probes, hits, filt.num_bits)
