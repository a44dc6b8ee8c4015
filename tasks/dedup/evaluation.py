"""Measuring near-duplicate detection on labelled pairs: realistic edits that turn a text into a labelled
near-duplicate, the pairs a dedup run put together, and recall per similarity band beside what the LSH S-curve
predicts. Tests and `bench/bench_dedup.py` use it; the stage itself does not.

A labelled copy is made from an original by a number of edits drawn from what near-duplicates on the web and in
chats look like: typos (swapped, dropped or inserted letters), words inserted or deleted, sentences inserted
(from other texts), deleted or swapped (reordering), and a header or footer of boilerplate. Its true word
5-gram Jaccard similarity to the original is measured, so each pair can be compared with the S-curve
1 − (1 − s^r)^b at its own similarity.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tasks.dedup.minhash import candidate_probability, jaccard

EDIT_KINDS = (
    "typo",
    "insert_word",
    "delete_word",
    "insert_sentence",
    "delete_sentence",
    "swap_sentences",
    "boilerplate",
)
BOILERPLATE = (
    "Share this article on Facebook, Twitter or by e-mail.",
    "Copyright 2024. All rights reserved. This material may not be published, broadcast or redistributed.",
    "Click here to subscribe to our newsletter and get the latest news every morning.",
    "Sent from my phone, please excuse any typos.",
)
FILLER_WORDS = ("really", "also", "however", "the", "new", "very", "just", "now", "indeed")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def split_sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


@dataclass
class NearDuplicateEditor:
    """Applies random realistic edits to a text; `donors` supply the sentences that get inserted."""

    rng: random.Random
    donors: Sequence[str] = ()
    kinds: Sequence[str] = EDIT_KINDS
    weights: Sequence[float] | None = (3, 1, 1, 1, 1, 1, 1)  # typos are the most common edit

    def typo(self, word: str) -> str:
        if len(word) < 3:
            return word + self.rng.choice(_LETTERS)
        i = self.rng.randrange(len(word) - 1)
        kind = self.rng.randrange(3)
        if kind == 0:
            return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        if kind == 1:
            return word[:i] + word[i + 1 :]
        return word[:i] + self.rng.choice(_LETTERS) + word[i:]

    def edit(self, text: str, edits: int) -> tuple[str, list[str]]:
        """The edited text and the kinds of edit applied, in order."""
        sentences = split_sentences(text) or [text]
        applied: list[str] = []
        for _ in range(edits):
            kind = self.rng.choices(list(self.kinds), weights=self.weights)[0]
            j = self.rng.randrange(len(sentences))
            ws = sentences[j].split()
            if kind == "typo" and ws:
                k = self.rng.randrange(len(ws))
                ws[k] = self.typo(ws[k])
                sentences[j] = " ".join(ws)
            elif kind == "insert_word":
                ws.insert(self.rng.randrange(len(ws) + 1), self.rng.choice(FILLER_WORDS))
                sentences[j] = " ".join(ws)
            elif kind == "delete_word" and len(ws) > 1:
                ws.pop(self.rng.randrange(len(ws)))
                sentences[j] = " ".join(ws)
            elif kind == "insert_sentence" and self.donors:
                donor = split_sentences(self.rng.choice(self.donors)) or [""]
                sentences.insert(self.rng.randrange(len(sentences) + 1), self.rng.choice(donor))
            elif kind == "delete_sentence" and len(sentences) > 2:
                sentences.pop(j)
            elif kind == "swap_sentences" and len(sentences) > 2:
                a, b = self.rng.sample(range(len(sentences)), 2)
                sentences[a], sentences[b] = sentences[b], sentences[a]
            elif kind == "boilerplate":
                line = self.rng.choice(BOILERPLATE)
                sentences = [line, *sentences] if self.rng.random() < 0.5 else [*sentences, line]
            else:
                continue
            applied.append(kind)
        return " ".join(s for s in sentences if s), applied


@dataclass(frozen=True)
class LabelledPair:
    original: str
    copy: str
    jaccard: float
    edits: tuple[str, ...] = ()


@dataclass
class LabelledCorpus:
    """Documents (id, text) in a shuffled order, and the labelled (original, copy) pairs among them."""

    docs: list[tuple[str, str]]
    pairs: list[LabelledPair]
    singles: int = 0


def make_labelled_corpus(
    texts: Sequence[str],
    seed: int = 0,
    pairs: int = 300,
    singles: int = 100,
    edit_counts: Sequence[int] = (0, 1, 2, 3, 5, 8, 12, 16, 20, 25, 30, 40),
    ngram: int = 5,
) -> LabelledCorpus:
    """`pairs` originals each with one edited copy (edit count drawn from `edit_counts`), plus `singles`
    documents with no copy; originals, singles and donors of inserted sentences are distinct texts."""
    rng = random.Random(seed)
    pool = list(dict.fromkeys(t for t in texts if t.strip()))
    rng.shuffle(pool)
    if len(pool) < pairs + singles + 1:
        raise ValueError(f"need {pairs + singles + 1} distinct texts for {pairs} pairs and {singles} singles")
    originals, lone = pool[:pairs], pool[pairs : pairs + singles]
    donors = pool[pairs + singles :]
    editor = NearDuplicateEditor(rng, donors)
    docs: list[tuple[str, str]] = []
    labelled: list[LabelledPair] = []
    for i, text in enumerate(originals):
        copy, applied = editor.edit(text, rng.choice(list(edit_counts)))
        docs += [(f"orig-{i:05d}", text), (f"copy-{i:05d}", copy)]
        labelled.append(
            LabelledPair(f"orig-{i:05d}", f"copy-{i:05d}", jaccard(text, copy, ngram), tuple(applied))
        )
    docs += [(f"single-{i:05d}", t) for i, t in enumerate(lone)]
    rng.shuffle(docs)
    return LabelledCorpus(docs, labelled, len(lone))


def pairs_from_duplicates(duplicate_of: Iterable[tuple[str, str]]) -> set[frozenset[str]]:
    """Every pair of documents a dedup run put together, from (removed id, survivor id) rows: the groups are
    the connected components of those links (a survivor that was itself removed joins its own survivor)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    for removed, survivor in duplicate_of:
        if survivor is None:
            continue
        a, b = find(removed), find(survivor)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = {}
    for x in list(parent):
        groups.setdefault(find(x), []).append(x)
    out: set[frozenset[str]] = set()
    for root, members in groups.items():
        everyone = sorted({root, *members})
        out |= {frozenset(p) for p in itertools.combinations(everyone, 2)}
    return out


@dataclass
class SimilarityBand:
    low: float
    high: float
    pairs: int
    found: int
    predicted: float  # mean S-curve probability of the band's pairs

    @property
    def recall(self) -> float:
        return self.found / self.pairs if self.pairs else float("nan")


@dataclass
class PairEvaluation:
    """Recall of labelled pairs per similarity band against the S-curve, and what else was put together."""

    bands: list[SimilarityBand]
    labelled: int
    found_labelled: int
    expected_found: float  # Σ over labelled pairs of the S-curve probability at their similarity
    expected_sd: float  # its binomial standard deviation
    found_pairs: int
    unlabelled_found: list[frozenset[str]] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.found_labelled / self.labelled if self.labelled else float("nan")

    @property
    def precision(self) -> float:
        return (self.found_pairs - len(self.unlabelled_found)) / self.found_pairs if self.found_pairs else 1.0

    def table(self) -> str:
        lines = [f"{'Jaccard':<12} {'pairs':>6} {'found':>6} {'recall':>7} {'S-curve':>8}"]
        for b in self.bands:
            if b.pairs:
                lines.append(
                    f"[{b.low:.2f}, {b.high:.2f}) {b.pairs:>6} {b.found:>6} {b.recall:>7.2f} {b.predicted:>8.2f}"
                )
        lines.append(
            f"all labelled {self.labelled:>6} {self.found_labelled:>6} {self.recall:>7.2f} "
            f"{self.expected_found / max(self.labelled, 1):>8.2f}   precision {self.precision:.3f} "
            f"({self.found_pairs} pairs found, {len(self.unlabelled_found)} not labelled)"
        )
        return "\n".join(lines)


def evaluate_pairs(
    labelled: Sequence[LabelledPair],
    found: set[frozenset[str]],
    bands: int,
    rows: int,
    edges: Sequence[float] = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
) -> PairEvaluation:
    """Compare what was found with the labels, per band of true Jaccard similarity (the last band includes 1)."""
    sims = np.array([p.jaccard for p in labelled], dtype=np.float64)
    hit = np.array([frozenset((p.original, p.copy)) in found for p in labelled], dtype=bool)
    prob = np.asarray(candidate_probability(sims, bands, rows), dtype=np.float64).reshape(-1)
    out = []
    for k, (lo, hi) in enumerate(itertools.pairwise(edges)):
        m = (sims >= lo) & ((sims < hi) if k < len(edges) - 2 else (sims <= hi))
        out.append(
            SimilarityBand(lo, hi, int(m.sum()), int(hit[m].sum()), float(prob[m].mean()) if m.any() else 0.0)
        )
    labels = {frozenset((p.original, p.copy)) for p in labelled}
    return PairEvaluation(
        bands=out,
        labelled=len(labelled),
        found_labelled=int(hit.sum()),
        expected_found=float(prob.sum()),
        expected_sd=float(np.sqrt((prob * (1 - prob)).sum())),
        found_pairs=len(found),
        unlabelled_found=sorted(found - labels, key=sorted),
    )
