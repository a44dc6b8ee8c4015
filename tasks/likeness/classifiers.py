"""The classifiers of the likeness measures, on supervised fastText (word bigrams and character 2–5-grams, which
carry the spelling, emoji and punctuation habits of short chat messages):

- who said it: one classifier trained on the training sessions with three classes, the person, the other
  participants and text that is not this chat (corpus snippets), asked who wrote each reply. The third class
  keeps noise from being credited to the person: with two classes, anything that does not read like the others
  reads like the person (on the demo a 2-class classifier gave the person 76 % of the untuned base model's
  garbled replies).
- a classifier two-sample test (Lopez-Paz & Oquab 2017): can a classifier, trained on part of the replies, tell
  the person's real held-out replies from a model's on the rest? Its cross-validated ROC AUC is 0.5 when the two
  sets cannot be told apart and 1.0 when they always can.

fastText 0.9.2 trains with at least 11 threads (tasks.langid.train.MIN_TRAIN_THREADS: with fewer, part of its
input matrix is left uninitialised), so a classifier is not bit-for-bit reproducible: figures move in the second
decimal between runs on small sets.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import Field

from tasks.base import StrictModel
from tasks.langid.model import LABEL_PREFIX, one_line
from tasks.langid.train import MIN_TRAIN_THREADS

PERSON, OTHERS, CORPUS = "person", "others", "corpus"
EMPTY_TEXT = "∅"  # an empty reply as a token: a model that says nothing is easy to tell from a person


class ClassifierParams(StrictModel):
    """fastText settings of the likeness classifiers."""

    epochs: int = Field(25, ge=1)
    dim: int = Field(32, ge=2)
    lr: float = Field(0.5, gt=0)
    word_ngrams: int = Field(2, ge=1)
    minn: int = Field(2, ge=0)
    maxn: int = Field(5, ge=0)
    bucket: int = Field(100_000, ge=1000)


def fasttext_line(text: str) -> str:
    """A text as fastText reads it: one line, no label marker inside, never empty."""
    line = one_line(text).replace(LABEL_PREFIX, "label ")
    return line or EMPTY_TEXT


class TextClassifier:
    """A trained fastText classifier over plain-string labels."""

    def __init__(self, model, labels: Sequence[str]):
        self._model = model
        self.labels = list(labels)

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), len(labels)) class probabilities, columns in `labels` order."""
        out = np.zeros((len(texts), len(self.labels)))
        if not texts:
            return out
        column = {f"{LABEL_PREFIX}{lab}": j for j, lab in enumerate(self.labels)}
        labels, probs = self._model.predict([fasttext_line(t) for t in texts], k=-1, threshold=0.0)
        for i, (labs, ps) in enumerate(zip(labels, probs, strict=True)):
            for lab, p in zip(labs, ps, strict=True):
                out[i, column[lab]] = min(float(p), 1.0)
        return out

    def predict(self, texts: Sequence[str]) -> list[str]:
        if not texts:
            return []
        return [self.labels[j] for j in self.probabilities(texts).argmax(axis=1)]


def train_classifier(texts: Sequence[str], labels: Sequence[str], params: ClassifierParams,
                     seed: int = 0) -> TextClassifier:
    """A fastText classifier of `texts` into `labels` (at least two distinct). Every class is up-sampled to the
    largest, so that no class wins by its prior, and the lines are shuffled (each training thread reads one
    contiguous stretch of the file)."""
    try:
        import fasttext
    except ImportError:
        raise ValueError("fastText is not installed (pip install fasttext-numpy2-wheel)") from None
    if len(texts) != len(labels):
        raise ValueError(f"{len(texts)} texts but {len(labels)} labels")
    classes = sorted(set(labels))
    if len(classes) < 2:
        raise ValueError(f"a classifier needs two classes or more, got {classes or 'none'}")
    rng = np.random.default_rng(seed)
    by_class = {c: [fasttext_line(t) for t, lab in zip(texts, labels, strict=True) if lab == c] for c in classes}
    largest = max(len(v) for v in by_class.values())
    lines: list[str] = []
    for c in classes:
        members = by_class[c]
        order = rng.permutation(len(members))
        lines += [f"{LABEL_PREFIX}{c} {members[order[i % len(members)]]}" for i in range(largest)]
    lines = [lines[i] for i in rng.permutation(len(lines))]
    with tempfile.TemporaryDirectory(prefix="chatlike-likeness-") as tmp:
        train_file = Path(tmp) / "train.txt"
        train_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            model = fasttext.train_supervised(
                input=str(train_file), epoch=params.epochs, dim=params.dim, lr=params.lr,
                wordNgrams=params.word_ngrams, minn=params.minn, maxn=params.maxn, bucket=params.bucket,
                loss="softmax", thread=max(MIN_TRAIN_THREADS, os.cpu_count() or 1), seed=seed, verbose=0,
            )
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"fastText training failed ({e}); a lower classifier.lr usually helps") from None
    return TextClassifier(model, classes)


def train_who_said_it(person: Sequence[str], others: Sequence[str], corpus: Sequence[str],
                      params: ClassifierParams, seed: int = 0) -> TextClassifier:
    """The three-class classifier: the person, the other participants, not this chat (left out when there is no
    corpus text)."""
    texts = [*person, *others, *corpus]
    labels = [PERSON] * len(person) + [OTHERS] * len(others) + [CORPUS] * len(corpus)
    return train_classifier(texts, labels, params, seed)


def roc_auc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """Area under the ROC curve: the probability that a random positive scores above a random negative, ties
    counting one half (the Mann–Whitney U statistic over the product of the class sizes)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("AUC needs both classes")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    # average ranks (1-based) over runs of equal scores
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], len(s)]
    for a, b in zip(starts, ends, strict=True):
        ranks[order[a:b]] = (a + b + 1) / 2.0
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def _folds(groups: Sequence[str], k: int, seed: int) -> np.ndarray:
    """Fold of each item: groups (prompts) are dealt to folds in salted-hash order, so that a prompt's replies
    share a fold."""
    unique = sorted(set(groups), key=lambda g: hashlib.sha256(f"{seed}:{g}".encode()).digest())
    fold_of = {g: i % k for i, g in enumerate(unique)}
    return np.array([fold_of[g] for g in groups], dtype=np.int64)


def c2st_auc(real: Sequence[str], generated: Sequence[str], params: ClassifierParams, *, folds: int = 5,
             seed: int = 0, real_groups: Sequence[str] | None = None,
             generated_groups: Sequence[str] | None = None, min_per_class: int = 4) -> float | None:
    """Classifier two-sample test of two sets of texts: the mean over `folds` cross-validation folds of the ROC AUC
    of a classifier trained on the other folds. Items with the same group (the prompt they answer) share a fold.
    None when either set has fewer than `min_per_class` texts."""
    if len(real) < min_per_class or len(generated) < min_per_class:
        return None
    real_groups = list(real_groups) if real_groups is not None else [f"r{i}" for i in range(len(real))]
    generated_groups = (list(generated_groups) if generated_groups is not None
                        else [f"g{i}" for i in range(len(generated))])
    texts = [*real, *generated]
    is_generated = np.array([False] * len(real) + [True] * len(generated))
    fold = _folds([*real_groups, *generated_groups], min(folds, len(set(real_groups) | set(generated_groups))),
                  seed)
    aucs = []
    for k in np.unique(fold):
        test, train = fold == k, fold != k
        if len(set(is_generated[train])) < 2 or len(set(is_generated[test])) < 2:
            continue
        clf = train_classifier([texts[i] for i in np.flatnonzero(train)],
                               ["generated" if g else "real" for g in is_generated[train]], params, seed)
        scores = clf.probabilities([texts[i] for i in np.flatnonzero(test)])[:, clf.labels.index("generated")]
        aucs.append(roc_auc(scores, is_generated[test]))
    return float(np.mean(aucs)) if aucs else None
