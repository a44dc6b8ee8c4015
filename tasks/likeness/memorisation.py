"""Memorised replies: a reply that repeats a training message verbatim (equal once normalised: case, accents,
digits, punctuation) or nearly (Jaccard similarity of word-bigram sets at least `jaccard`). Candidates come from
the MinHash LSH of the dedup stage (tasks.dedup.minhash: the same shingles, permutations, signatures and band
keys), with as many rows per band as keep the chance of missing a pair at the threshold under 2 %; each
candidate is then confirmed with its true Jaccard, so a flag is never a hash collision.

Replies of fewer than `min_words` words are never flagged: "ok" or "haha" repeat a training message without
being recited from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import Field

from tasks.base import StrictModel
from tasks.dedup.minhash import (
    band_keys,
    batch_shingle_hashes,
    batch_signatures,
    candidate_probability,
    permutations,
)
from tasks.dedup.text import normalize_text, words

NUM_PERM = 128
MINHASH_SEED = 1
EXACT, NEAR = "exact", "near"


class MemorisationParams(StrictModel):
    """When a reply counts as a repeat of a training message."""

    ngram: int = Field(2, ge=1, description="Words per shingle.")
    jaccard: float = Field(0.6, gt=0, le=1, description="Shingle-set Jaccard similarity of a near copy.")
    min_words: int = Field(4, ge=1, description="Shorter replies are never counted as memorised.")


@dataclass(frozen=True)
class MemorisedMatch:
    """How a reply relates to the closest training message found: `kind` is "exact", "near" or None."""

    kind: str | None
    similarity: float
    source: str | None

    @property
    def memorised(self) -> bool:
        return self.kind is not None


NO_MATCH = MemorisedMatch(None, 0.0, None)


def lsh_shape(threshold: float, num_perm: int = NUM_PERM, recall: float = 0.98) -> tuple[int, int]:
    """(bands, rows) with the most rows per band (fewest spurious candidates) that still make a pair at the
    threshold a candidate with probability ≥ `recall`."""
    for rows in sorted((r for r in range(1, num_perm + 1) if num_perm % r == 0), reverse=True):
        bands = num_perm // rows
        if candidate_probability(threshold, bands, rows) >= recall:
            return bands, rows
    return num_perm, 1


def _shingle_sets(texts: Sequence[str], ngram: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    hv, sizes = batch_shingle_hashes(list(texts), ngram)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    sets = [np.unique(hv[s:s + n]) for s, n in zip(starts, sizes, strict=True)]
    return hv, sizes, sets


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter) if len(a) + len(b) else 1.0


class TrainingMessageIndex:
    """The training messages, indexed for exact (normalised) and near-copy lookups of replies."""

    def __init__(self, messages: Sequence[str], params: MemorisationParams | None = None):
        self.params = params or MemorisationParams()
        self.messages = list(messages)
        self._exact: dict[str, int] = {}
        for i, m in enumerate(self.messages):
            self._exact.setdefault(normalize_text(m), i)
        self._exact.pop("", None)
        self.bands, self.rows = lsh_shape(self.params.jaccard)
        self._a, self._b = permutations(NUM_PERM, MINHASH_SEED)
        hv, sizes, self._sets = _shingle_sets(self.messages, self.params.ngram)
        keys = self._band_keys(hv, sizes)  # (messages, bands)
        owners = np.repeat(np.arange(len(self.messages)), self.bands)
        flat = keys.reshape(-1)
        keep = np.repeat(sizes > 0, self.bands)  # an empty text's signature would match every other empty one
        order = np.argsort(flat[keep], kind="stable")
        self._keys = flat[keep][order]
        self._owners = owners[keep][order]

    def _band_keys(self, hv: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        sig = batch_signatures(hv, sizes, self._a, self._b)
        return band_keys(sig, self.bands, self.rows)

    def match(self, replies: Sequence[str]) -> list[MemorisedMatch]:
        """For each reply, the training message it repeats (exactly, else nearly), or NO_MATCH."""
        if not replies:
            return []
        hv, sizes, sets = _shingle_sets(replies, self.params.ngram)
        keys = self._band_keys(hv, sizes)
        out: list[MemorisedMatch] = []
        for i, reply in enumerate(replies):
            if len(words(reply)) < self.params.min_words:
                out.append(NO_MATCH)
                continue
            exact = self._exact.get(normalize_text(reply))
            if exact is not None:
                out.append(MemorisedMatch(EXACT, 1.0, self.messages[exact]))
                continue
            lo = np.searchsorted(self._keys, keys[i], side="left")
            hi = np.searchsorted(self._keys, keys[i], side="right")
            candidates = np.unique(np.concatenate([self._owners[a:b] for a, b in zip(lo, hi, strict=True)]))
            best, best_sim = None, 0.0
            for c in candidates:
                sim = _jaccard(sets[i], self._sets[c])
                if sim > best_sim:
                    best, best_sim = int(c), sim
            if best is not None and best_sim >= self.params.jaccard:
                out.append(MemorisedMatch(NEAR, best_sim, self.messages[best]))
            else:
                out.append(MemorisedMatch(None, best_sim, None))
        return out
