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

A Bloom filter answers membership only; with `track_survivors` a dictionary also remembers which document
first inserted each key, so `duplicate_of` names the survivor (costs ~100 bytes per key); without it
`duplicate_of` is null. False positives make a key look seen when it is not: the rate is `error_rate` once
`capacity` distinct keys are in (measured by `measure_false_positive_rate`).
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

from tasks.dedup.common import (
    KEEP,
    Decision,
    DedupShardResult,
    SpanRemoval,
    atomic_path,
    batch_ngram_hashes,
    batch_word_hashes,
    doc_batches,
    filter_shard,
    normalize_text,
    split_paragraphs,
    summarize_results,
)
from tasks.dedup.params import BloomDedupParams

STAGE = "dedup_bloom"
STAGE_VERSION = "1"
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
        for batch in doc_batches(part, columns=["text"]):
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
    final, tmp = atomic_path(path)
    with open(tmp, "wb") as fh:
        filt.tofile(fh)
    os.replace(tmp, final)
    return final


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

    def __init__(self, params: BloomDedupParams, filt: Filter | None = None):
        self.params = params
        self.filter = filt if filt is not None else make_filter(params)
        self.owners: dict[str, str] | None = {} if params.track_survivors else None
        self.checks = 0

    def _keys(self, paragraphs: list[str]) -> list[list[str]]:
        """The filter keys of each paragraph (none for a paragraph without words)."""
        if self.params.unit == "paragraph":
            keys = (normalize_text(p) if self.params.normalize else p.strip() for p in paragraphs)
            return [[k] if k else [] for k in keys]
        # one vectorised pass over the whole document; n-grams never cross a paragraph boundary
        word_h, counts = batch_word_hashes(paragraphs)
        grams, per_paragraph = batch_ngram_hashes(word_h, counts, self.params.ngram)
        flat = [format(h, "x") for h in grams.tolist()]
        ends = np.cumsum(per_paragraph).tolist()
        return [flat[e - c : e] for e, c in zip(ends, per_paragraph.tolist(), strict=True)]

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
        doc_owners: Counter = Counter()
        paragraphs = split_paragraphs(text)
        for p, keys in zip(paragraphs, self._keys([p.text for p in paragraphs]), strict=True):
            if not keys:
                continue
            seen = 0
            owners: Counter = Counter()
            for key in keys:
                hit = self._add(key)
                seen += hit
                if self.owners is not None:
                    owner = self.owners.setdefault(key, doc_id)
                    if hit:
                        owners[owner] += 1
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
) -> DedupShardResult:
    """One part, in corpus order after the parts before it: load their filter, check, save the filter.

    `filter_in` is the previous part's `filter_out` (None for the first part). With `track_survivors`, the
    survivor dictionary is not saved between calls: use `bloom_dedup_parts` to name survivors across parts.
    """
    deduper = BloomDeduper(params, load_filter(filter_in, params) if filter_in else None)
    result = _run(deduper, in_part, out_part, rejected_part, spans_part, part_index)
    if filter_out:
        save_filter(deduper.filter, filter_out)
    return result


def bloom_dedup_parts(
    in_parts: list[str],
    out_parts: list[str],
    rejected_parts: list[str],
    params: BloomDedupParams,
    spans_parts: list[str] | None = None,
    filter_out: str | None = None,
) -> list[DedupShardResult]:
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
) -> DedupShardResult:
    checks0 = deduper.checks
    result = filter_shard(
        in_part,
        out_part,
        rejected_part,
        lambda row, doc_id, text: deduper.decide(doc_id, text),
        spans_part=spans_part,
        min_chars_after=deduper.params.min_chars_after,
        emptied_reason=REASON_EMPTIED,
    )
    result.stats = {
        "part_index": part_index,
        "checks": deduper.checks - checks0,
        "filter_keys": len(deduper.filter),
    }
    return result


def summarize_bloom(
    results: list[DedupShardResult], params: BloomDedupParams | None = None
) -> tuple[dict, dict]:
    counts, stats = summarize_results(results)
    stats["checks"] = sum(r.stats.get("checks", 0) for r in results)
    if results:
        stats["filter_keys"] = results[-1].stats.get("filter_keys", 0)
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
