"""Parameters of the four dedup sub-stages (strict pydantic models; every field changes the output).

Defaults follow DESIGN §4: MinHash word 5-grams with 112 permutations as 14 bands × 8 rows (fixed seed);
Bloom filter false-positive rate 0.01 on word 13-grams, a document dropped when ≥ 0.8 of it was seen before;
suffix array repeats of ≥ 100 bytes; exact dedup on normalised document text, paragraphs optional.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tasks.base import StrictModel


class ExactDedupParams(StrictModel):
    normalize: bool = Field(
        True,
        description="Compare CCNet-normalised text (case, accents, digits, punctuation, spaces) instead of raw.",
    )
    paragraphs: bool = Field(
        False, description="Also remove paragraphs (lines) seen earlier in the corpus, CCNet-style."
    )
    min_paragraph_chars: int = Field(
        1, ge=1, description="Paragraphs shorter than this (normalised) are never treated as duplicates."
    )
    min_chars_after: int = Field(
        1, ge=1, description="A document left shorter than this after paragraph removal is dropped."
    )
    partitions: int = Field(
        4, ge=1, description="Hash partitions: the global selection runs once per partition."
    )


class MinhashDedupParams(StrictModel):
    """MinHash LSH settings. The S-curve 1 − (1 − s^rows)^bands is the chance that two documents of Jaccard
    similarity s become candidates; `threshold`, when given, picks bands × rows for it (see `_bands_for_threshold`)."""

    ngram: int = Field(5, ge=1, description="Word n-gram (shingle) size.")
    normalize: bool = Field(
        True,
        description="Shingle normalised words (accents and combining marks dropped, digits → 0), as datatrove does.",
    )
    bands: int = Field(14, ge=1)
    rows: int = Field(8, ge=1, description="Permutations per band; bands × rows permutations in all.")
    threshold: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Jaccard similarity at which a pair should become a candidate with probability 1/2: when set, "
        "rows r and bands ⌊(bands × rows) / r⌋ are chosen to put the S-curve's midpoint nearest it (the default "
        "14 × 8 has its midpoint at 0.685).",
    )
    seed: int = Field(
        1, description="Seed of the permutations (datasketch's generator, so signatures agree)."
    )
    partitions: int = Field(
        4,
        ge=1,
        description="Band-key partitions: bucket grouping runs once per partition, in parallel, holding "
        "about 24 × bands × documents / partitions bytes each.",
    )
    verify: bool = Field(
        False, description="Confirm candidate pairs with the true Jaccard of their shingles."
    )
    jaccard_threshold: float = Field(
        0.7,
        gt=0,
        le=1,
        description="With `verify`: candidate pairs below this Jaccard similarity are not duplicates.",
    )
    verify_max_bucket: int = Field(
        64,
        ge=2,
        description="With `verify`: buckets larger than this compare each member with the first only.",
    )
    batch_docs: int = Field(
        2048, ge=1, description="Documents hashed together (memory ∝ shingles × permutations)."
    )

    @model_validator(mode="before")
    @classmethod
    def _bands_for_threshold(cls, data: object) -> object:
        """With `threshold`: keep the permutation budget bands × rows (112 by default), and choose the rows r
        (bands = ⌊budget / r⌋) whose S-curve crosses 1/2 nearest the threshold."""
        if not isinstance(data, dict) or data.get("threshold") is None:
            return data
        t = data["threshold"]
        if not isinstance(t, (int, float)) or not 0 < t < 1:
            return data  # the field's own validation explains it
        budget = int(data.get("bands", 14)) * int(data.get("rows", 8))
        if budget < 1:
            return data
        best = min(
            range(1, budget + 1),
            key=lambda r: (abs(_midpoint(budget // r, r) - t), -(budget // r) * r, r),
        )
        return {**data, "bands": budget // best, "rows": best}

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows

    @property
    def midpoint(self) -> float:
        """The Jaccard similarity at which a pair becomes a candidate with probability 1/2 (0.685 for 14 × 8)."""
        return _midpoint(self.bands, self.rows)

    @property
    def lsh_threshold(self) -> float:
        """The usual LSH threshold (1/b)^(1/r), where the S-curve is steepest (candidate probability ≈ 1 − 1/e)."""
        return (1 / self.bands) ** (1 / self.rows)

    def fingerprint_params(self) -> dict:
        params = self.model_dump(mode="json")
        params.pop("batch_docs")  # only changes memory use, never the output
        return params


def _midpoint(bands: int, rows: int) -> float:
    """Inverse S-curve at 1/2: (1 − 2^(−1/b))^(1/r)."""
    return (1.0 - 0.5 ** (1.0 / bands)) ** (1.0 / rows)


class BloomDedupParams(StrictModel):
    unit: Literal["ngram", "paragraph"] = Field(
        "ngram",
        description="What is checked against the filter: word n-grams of each paragraph, or whole paragraphs.",
    )
    ngram: int = Field(13, ge=1, description="Word n-gram size (a shorter paragraph is one n-gram).")
    error_rate: float = Field(
        0.01, gt=0, lt=1, description="False-positive rate of the Bloom filter at capacity."
    )
    capacity: int = Field(10_000_000, ge=1, description="Distinct keys the filter holds at `error_rate`.")
    scalable: bool = Field(
        False,
        description="Grow the filter past `capacity` (pybloom-live ScalableBloomFilter) instead of failing.",
    )
    doc_threshold: float = Field(
        0.8, gt=0, le=1, description="Drop a document when this share of it was seen before."
    )
    paragraph_threshold: float = Field(
        0.8,
        gt=0,
        le=1,
        description="Remove a paragraph of a kept document when this share of its n-grams was seen.",
    )
    normalize: bool = Field(
        False,
        description="Paragraph unit: compare normalised paragraphs (n-grams are always lower-cased words).",
    )
    min_chars_after: int = Field(
        1, ge=1, description="A document left shorter than this after removal is dropped."
    )
    track_survivors: bool = Field(
        True,
        description="Remember which document first held each key, to name survivors in `duplicate_of` "
        "(16 bytes per distinct key plus each document's id, in memory and in the work folder); false for "
        "corpora whose keys do not fit in memory (`duplicate_of` is then null).",
    )


class SuffixArrayDedupParams(StrictModel):
    min_bytes: int = Field(
        100, ge=8, description="Shortest repeated substring removed (Lee et al.: ~50 tokens)."
    )
    min_doc_bytes: int = Field(
        50, ge=1, description="A document cut shorter than this (UTF-8 bytes, stripped) is dropped."
    )
    max_group_bytes: int = Field(
        512 << 20,
        ge=1 << 10,
        description="Text bytes per suffix array; larger inputs are split into groups of shards.",
    )
    max_memory_bytes: int | None = Field(
        None,
        ge=1 << 20,
        description="Memory allowed for one suffix array; default: 80 % of available memory.",
    )

    @model_validator(mode="after")
    def _sizes(self) -> SuffixArrayDedupParams:
        if self.min_doc_bytes > self.max_group_bytes:
            raise ValueError("min_doc_bytes must not exceed max_group_bytes")
        return self

    def fingerprint_params(self) -> dict:
        params = self.model_dump(mode="json")
        params.pop("max_memory_bytes")  # a guard, never changes the output (it refuses instead)
        return params
