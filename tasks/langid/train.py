"""Training an own fastText language model from labelled text, for languages the default model lacks.

Input is a list of paths; each may be prefixed with `LABEL=` to give the label of everything in it:
- a text file: fastText lines (`__label__ary wach nta f dar`), or plain lines labelled with `LABEL=` or with the
  file name (`ary.txt`);
- a CSV/TSV file with a header: the text columns (see `TEXT_COLUMNS`) give one example per non-empty cell; the
  label comes from `LABEL=` or from the folder it is in;
- a directory: one file per label (`ary.txt`, `fr.txt`) or one folder per label (`ary/…`, `fr/…`).

An own model needs negative classes as well as the language it is for: text in the languages it must tell
apart (for Darija: Arabic, French, English, Spanish…). Nothing is downloaded: the user provides them.
The model is saved with a sidecar `<model>.json` (labels, owned labels, threshold, metrics) that
`CombinedPredictor` reads.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from storage.atomic import replace_file, write_text_atomic
from tasks.langid.model import (
    DEFAULT_OWN_MIN_SCORE,
    LABEL_PREFIX,
    LENGTH_CLASSES,
    METADATA_SUFFIX,
    OWN_MODEL_FORMAT,
    OWN_NEVER,
    dominant_script,
    length_class,
    load_fasttext_model,
    normalize_for_own_model,
)
from tasks.training import dying_with_this_process

log = logging.getLogger(__name__)

# Header names read as text in CSV/TSV files: generic ones, plus the columns of the public Darija datasets
# (AfriSenti `tweet`, DODa `darija` in Latin script and `darija_ar` in Arabic script).
TEXT_COLUMNS = ("text", "sentence", "tweet", "darija", "darija_ar")
TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t"}
# fastText 0.9.2 trains a model with `thread` threads that update shared weights without locks (Hogwild), so a
# model trained with several is never the same twice. With one thread, training is a fixed sequence for a
# given seed: the same data give the same model, byte for byte (and so the same fingerprints downstream). By
# default every model is trained with one thread, in a process of its own (`fit_worker.py`: fastText leaves
# nine tenths of the input matrix uninitialised with one thread, and only a fresh process reliably hands it
# zeroed memory), and the independent models of a training (the two halves that find contradicted examples,
# the calibration folds) are trained side by side, one per core. `threads` > 1 trades reproducibility for
# speed on many cores, in this process, with at least 11 threads so that all ten blocks of the matrix are
# initialised (fewer gave random "Encountered NaN." failures).
MIN_TRAIN_THREADS = 11
MAX_OWN_MIN_SCORE = 0.999  # above this, fastText probabilities of short texts are all ~1: the own model abstains
TRAINING_RECIPE = "chatlike-langid-train/4"  # written into the sidecar; changes whenever the recipe does
STAGE_VERSION = "1"  # of the langid-train dataset (the recipe above is part of its parameters too)


@dataclass(frozen=True)
class LabelledText:
    label: str
    text: str


def _check_label(label: str, where: str) -> str:
    label = label.strip().removeprefix(LABEL_PREFIX)
    if not label or any(c.isspace() for c in label):
        raise ValueError(f"{where}: '{label}' is not a usable label (no spaces, not empty)")
    return label


def read_table(path: Path, label: str, text_columns: Sequence[str] = TEXT_COLUMNS) -> list[LabelledText]:
    """One example per non-empty text cell of a CSV/TSV file with a header row."""
    delimiter = TABLE_SUFFIXES[path.suffix.lower()]
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        header = reader.fieldnames or []
        columns = [c for c in header if c.strip().lower() in {t.lower() for t in text_columns}]
        if not columns:
            raise ValueError(
                f"{path}: no text column in the header {header} (expected one of {', '.join(text_columns)})"
            )
        return [
            LabelledText(label, row[c].strip())
            for row in reader
            for c in columns
            if row.get(c) and row[c].strip()
        ]


def read_lines(path: Path, label: str | None) -> list[LabelledText]:
    """fastText `__label__` lines, or plain lines with the given label (default: the file name's stem)."""
    examples = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            if line.startswith(LABEL_PREFIX) and label is None:
                head, _, text = line.partition(" ")
                if text.strip():
                    examples.append(LabelledText(_check_label(head, f"{path}:{number}"), text.strip()))
            else:
                examples.append(LabelledText(label or _check_label(path.stem, str(path)), line))
    return examples


def read_labelled_file(
    path: Path, label: str | None = None, text_columns: Sequence[str] = TEXT_COLUMNS
) -> list[LabelledText]:
    if path.suffix.lower() in TABLE_SUFFIXES:
        if label is None:
            raise ValueError(
                f"{path}: a CSV/TSV file needs a label: write LABEL={path} or put it in a folder named after the label"
            )
        return read_table(path, label, text_columns)
    try:
        return read_lines(path, label)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def _files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def collect_training_data(
    data: Sequence[str | os.PathLike], text_columns: Sequence[str] = TEXT_COLUMNS
) -> list[LabelledText]:
    """Every labelled example named by `data` (paths, optionally `LABEL=PATH`), in a stable order."""
    examples: list[LabelledText] = []
    for item in data:
        item = str(item)
        label = None
        if "=" in item and not Path(item).exists():
            label, _, item = item.partition("=")
            label = _check_label(label, item)
        path = Path(item)
        if not path.exists():
            raise ValueError(f"{path}: training data not found")
        if path.is_file():
            examples.extend(read_labelled_file(path, label, text_columns))
            continue
        for child in sorted(path.iterdir()):
            if child.name.startswith("."):
                continue
            if child.is_dir():
                child_label = label or _check_label(child.name, str(child))
                for f in _files_under(child):
                    examples.extend(read_labelled_file(f, child_label, text_columns))
            else:
                examples.extend(read_labelled_file(child, label, text_columns))
    if not examples:
        raise ValueError(f"no labelled text found in {', '.join(map(str, data))}")
    return examples


@dataclass
class LangidTrainMetrics:
    model_path: str
    labels: dict[str, int]  # training examples per label (before balancing)
    owned_labels: list[str]
    min_score: float  # for scripts without their own threshold
    min_score_by_script: dict[str, float]  # for sentences (6 words or more)
    train_examples: int
    valid_examples: int
    valid_accuracy: float | None
    valid_recall: dict[str, float] = field(default_factory=dict)
    valid_precision: dict[str, float] = field(default_factory=dict)
    # owned-label training examples left out because models trained without them call them another language
    dropped_contradicted: dict[str, int] = field(default_factory=dict)
    # per script and length class ("1", "2", "3": 3–5 words, "6": 6 or more); 1 = the own model never answers
    min_score_by_script_and_length: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds: float = 0.0
    model_bytes: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _is_valid(text: str, fraction: float) -> bool:
    """A deterministic split: the same text always lands on the same side."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def _balanced(examples: list[LabelledText], seed: int) -> list[LabelledText]:
    """Every label repeated up to the size of the largest one, so no class wins by its prior alone."""
    by_label: dict[str, list[LabelledText]] = {}
    for e in examples:
        by_label.setdefault(e.label, []).append(e)
    largest = max(len(v) for v in by_label.values())
    out = [v[i % len(v)] for v in by_label.values() for i in range(largest)]
    random.Random(seed).shuffle(out)
    return out


def _short_spans(
    examples: list[LabelledText], per_example: int, words: tuple[int, int], seed: int
) -> list[LabelledText]:
    """The examples plus `per_example` random windows of `words[0]`–`words[1]` words (always fewer words than
    the example) from each example longer than `words[0]` words.

    Chat messages are a few words long, the labelled sentences (news, books) are mostly longer, and the Darija
    examples short: without short windows of every language the model learns that short text is Darija, and a
    word or two of Arabic or English reads as Darija with near certainty.
    """
    lo, hi = words
    rng = random.Random(seed)
    out = list(examples)
    for e in examples:
        tokens = e.text.split()
        if len(tokens) <= lo:
            continue
        for _ in range(per_example):
            n = rng.randint(lo, min(hi, len(tokens) - 1))
            start = rng.randint(0, len(tokens) - n)
            out.append(LabelledText(e.label, " ".join(tokens[start : start + n])))
    return out


def _contradicted(model, examples: list[LabelledText], owned: set[str], min_p: float) -> list[bool]:
    """For each example: is it owned-labelled while the model (not trained on it) says another label, p ≥ min_p?"""
    flags = [False] * len(examples)
    judged = [i for i, e in enumerate(examples) if e.label in owned]
    if not judged:
        return flags
    labels, probs = model.predict([examples[i].text for i in judged], k=1)
    for i, labs, ps in zip(judged, labels, probs, strict=True):
        top = labs[0][len(LABEL_PREFIX) :]
        flags[i] = top != examples[i].label and float(ps[0]) >= min_p
    return flags


def _owned_scores(model, texts: list[str], owned: set[str]) -> list[float]:
    """Each text's highest probability for an owned label."""
    labels, probs = model.predict(texts, k=-1)
    return [
        max(
            (float(p) for lab, p in zip(labs, ps, strict=True) if lab[len(LABEL_PREFIX) :] in owned),
            default=0.0,
        )
        for labs, ps in zip(labels, probs, strict=True)
    ]


def _calibrated_min_score(scored: list[tuple[str, float]], owned: set[str], max_fp: float) -> float:
    """The lowest threshold ≥ 0.5 that calls at most `max_fp` of each other label's examples owned, or
    `OWN_NEVER` (1: the own model does not answer) when even `MAX_OWN_MIN_SCORE` would call more.

    `scored` holds (gold label, owned-label probability) of examples the scoring model was not trained on.
    Labels with fewer than 20 examples are left out (too few to estimate a rate).
    """
    threshold = DEFAULT_OWN_MIN_SCORE
    by_label: dict[str, list[float]] = {}
    for label, score in scored:
        if label not in owned:
            by_label.setdefault(label, []).append(score)
    for _label, scores in sorted(by_label.items()):
        if len(scores) < 20:
            continue
        scores.sort(reverse=True)
        allowed = int(max_fp * len(scores))
        if allowed < len(scores) and scores[allowed] >= threshold:
            threshold = float(np.nextafter(np.float32(scores[allowed]), np.float32(2)))
            if threshold > MAX_OWN_MIN_SCORE:
                return OWN_NEVER
    return threshold


def _calibrated_by_script_and_length(
    scored: list[tuple[str, str, str, float]], owned: set[str], max_fp: float
) -> dict[str, dict[str, float]]:
    """A threshold per script and length class, from (label, script, length class, owned-label probability).

    A word or two of Arabic reads as Darija far more often than a sentence: one threshold per script is either
    too low for short texts (it takes them from Arabic) or too high for sentences (it costs Darija recall).
    A length class without enough examples of another language gets its script's next longer class's
    threshold or, if none, the highest of its script (short texts are never judged more leniently).
    """
    by_script: dict[str, list[tuple[str, str, float]]] = {}
    for label, script, length, score in scored:
        by_script.setdefault(script, []).append((label, length, score))
    thresholds: dict[str, dict[str, float]] = {}
    for script, rows in sorted(by_script.items()):
        if script == "other":
            continue
        measured = {}
        for n in LENGTH_CLASSES:
            pairs = [(label, score) for label, length, score in rows if length == str(n)]
            if any(c >= 20 for label, c in Counter(label for label, _ in pairs).items() if label not in owned):
                measured[str(n)] = _calibrated_min_score(pairs, owned, max_fp)
        if not measured:
            continue
        by_length: dict[str, float] = {}
        longer = None  # the threshold of the next longer class
        for n in sorted(LENGTH_CLASSES, reverse=True):
            own = measured.get(str(n), longer if longer is not None else max(measured.values()))
            longer = by_length[str(n)] = own if longer is None else max(own, longer)
        thresholds[script] = {str(n): by_length[str(n)] for n in LENGTH_CLASSES}
    return thresholds


def _calibration_texts(text: str, salt: str) -> list[str]:
    """A text and windows of it of every shorter length (one word, two words, 3–5 words, 6–10 words), so that
    the thresholds are calibrated on texts as short as those they will judge, and on pieces of sentences as
    well as whole ones (a chat's messages are often pieces)."""
    words = text.split()
    rng = random.Random(int.from_bytes(hashlib.sha256((salt + text).encode("utf-8")).digest()[:8], "big"))
    texts = [text]
    for lo, hi in ((1, 1), (2, 2), (3, 5), (6, 10)):
        if len(words) > lo:
            n = rng.randint(lo, min(hi, len(words) - 1))
            start = rng.randint(0, len(words) - n)
            texts.append(" ".join(words[start : start + n]))
    return texts


def _fold(text: str, folds: int, salt: bytes = b"calibration") -> int:
    return int.from_bytes(hashlib.sha256(salt + b"\0" + text.encode("utf-8")).digest()[:8], "big") % folds


def _fit_in_own_process(fasttext, train_file: Path, model_file: Path, params: dict, running: set):
    """A one-thread fastText model trained by `fit_worker.py` in a process of its own (why: see there), loaded.

    The process is in `running` while it trains, so that whoever waits on several can stop them all; an
    interruption of this thread stops it too."""
    spec = {"input": str(train_file), "output": str(model_file), "params": params}
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(128 * 1024)}  # every large block freshly mapped: zeroed
    cmd = dying_with_this_process([sys.executable, str(Path(__file__).with_name("fit_worker.py")), json.dumps(spec)])
    with subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
        running.add(proc)
        try:
            _, stderr = proc.communicate()
        except BaseException:
            proc.kill()
            raise
        finally:
            running.discard(proc)
    if proc.returncode != 0:
        lines = stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"the training process exited with {proc.returncode}")
    return fasttext.load_model(str(model_file))


def _drop_contradicted(
    train: list[LabelledText], owned: set[str], min_p: float, fit_many
) -> tuple[list[LabelledText], Counter]:
    """`train` without the owned-label examples that models trained on the other half put in another label.

    `fit_many(list of example lists)` trains one model per list. An owned label is never emptied: if every one
    of its examples is contradicted, the data is kept as it is (with a warning), since the negatives, not the
    examples, are then the likelier problem.
    """
    flags = [False] * len(train)
    halves = [_fold(e.text, 2, b"contradicted") for e in train]
    insides = [[e for e, h in zip(train, halves, strict=True) if h != half] for half in range(2)]
    outsides = [[i for i, h in enumerate(halves) if h == half] for half in range(2)]
    if any(len({e.label for e in inside}) < 2 for inside in insides) or not all(outsides):
        return train, Counter()
    for model, outside in zip(fit_many(insides), outsides, strict=True):
        for i, flag in zip(
            outside, _contradicted(model, [train[i] for i in outside], owned, min_p), strict=True
        ):
            flags[i] = flag
    dropped = Counter(e.label for e, flag in zip(train, flags, strict=True) if flag)
    totals = Counter(e.label for e in train)
    for label, n in sorted(dropped.items()):
        if n == totals[label]:
            log.warning("every '%s' example reads as another language to the model; none is left out", label)
            flags = [flag and e.label != label for e, flag in zip(train, flags, strict=True)]
            del dropped[label]
        elif n > totals[label] / 4:
            log.warning(
                "%d of %d '%s' examples read as another language; they are left out", n, totals[label], label
            )
    if dropped:
        log.info("left out %s owned-label examples that read as another language", dict(dropped))
    return [e for e, flag in zip(train, flags, strict=True) if not flag], dropped


def train_langid_model(
    data: Sequence[str | os.PathLike] | list[LabelledText],
    out_path: str | os.PathLike,
    *,
    owned_labels: Sequence[str] | None = None,
    epochs: int = 25,
    dim: int = 32,
    word_ngrams: int = 2,
    minn: int = 2,
    maxn: int = 5,
    lr: float = 0.5,
    bucket: int = 200_000,
    balance: bool = True,
    valid_fraction: float = 0.1,
    min_score: float | None = None,
    max_false_positive_rate: float = 0.01,
    calibration_folds: int = 3,
    short_spans: int = 3,
    short_span_words: tuple[int, int] = (1, 10),
    drop_contradicted: float | None = 0.9,
    seed: int = 0,
    threads: int | None = None,
    text_columns: Sequence[str] = TEXT_COLUMNS,
) -> LangidTrainMetrics:
    """Train a supervised fastText model on labelled text and save it (plus `<model>.json`) at `out_path`.

    Character n-grams (`minn`–`maxn`) carry most of the signal for short, noisy text such as Arabizi. With
    `valid_fraction` > 0 a deterministic part of the examples is held out and per-label precision and recall
    on it are returned; the saved model is trained on the rest. `owned_labels` (default: every label the
    default model does not know) are the labels `CombinedPredictor` takes from this model.

    `min_score` is the confidence the combined predictor needs before it answers with an owned label. Left
    at None it is calibrated by cross-fitting, per script: `calibration_folds` extra models, each trained
    without one fold of the training examples, score that fold; for each script the threshold is the lowest
    (at least 0.5) at which no more than `max_false_positive_rate` of any other label's examples in that
    script would be called an owned label, so that a close language (Arabic, for Arabic-script Darija) keeps
    its accuracy without costing recall in the other script (Arabizi). Text in a script without examples
    gets the highest of these. With `calibration_folds` < 2 (or a given `min_score`) one threshold is used.

    Two steps (chosen by cross-validation, checked on hand-written chat lines) help on short, unseen text:
    - `short_spans` random windows of `short_span_words` words are added for every longer example, so that
      short messages are not judged by a model that only saw full sentences;
    - owned-label data scraped by place rather than by language (Moroccan tweets are often in Modern Standard
      Arabic) teaches the model that Arabic is Darija. With `drop_contradicted` set, two models, each trained
      on half of the training examples, judge the other half; owned-label examples they put in another label
      with probability ≥ `drop_contradicted` are left out (counted in the metrics). None keeps everything.

    With `threads` left at None (or 1) training is reproducible: each model has one fastText thread, the
    independent ones run side by side, and the same data, parameters and seed give the same model and
    sidecar, byte for byte. `threads` > 1 gives each model that many (at least 11) lock-free threads: faster
    for a large corpus on many cores, different every run.
    """
    started = time.perf_counter()
    if epochs < 1 or dim < 1 or word_ngrams < 1 or bucket < 1 or lr <= 0:
        raise ValueError("epochs, dim, word_ngrams, bucket and lr must be positive")
    if not 0 <= valid_fraction < 1:
        raise ValueError(f"valid_fraction must be in [0, 1), got {valid_fraction}")
    if short_spans < 0 or not 1 <= short_span_words[0] <= short_span_words[1]:
        raise ValueError(
            f"short_spans must be ≥ 0 and short_span_words (min, max) with 1 ≤ min ≤ max, got {short_span_words}"
        )
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be ≥ 1, got {threads}")
    if drop_contradicted is not None and not 0 < drop_contradicted <= 1:
        raise ValueError(f"drop_contradicted must be in (0, 1] or None, got {drop_contradicted}")
    try:
        import fasttext
    except ImportError:
        raise ValueError("fastText is not installed (pip install fasttext-numpy2-wheel)") from None
    if not hasattr(fasttext, "train_supervised"):
        raise ValueError(
            "the installed `fasttext` module can only predict (fasttext-predict); "
            "install fasttext-numpy2-wheel to train"
        )

    if data and isinstance(data[0], LabelledText):
        examples = list(data)  # type: ignore[arg-type]
    else:
        examples = collect_training_data(data, text_columns)  # type: ignore[arg-type]
    normalized = [LabelledText(e.label, normalize_for_own_model(e.text)) for e in examples]
    normalized = [e for e in normalized if e.text]
    counts = Counter(e.label for e in normalized)
    if len(counts) < 2:
        raise ValueError(
            f"only one label ({', '.join(counts) or 'none'}) in the training data: an own model also needs "
            "negative examples (text in the other languages it must tell apart, one file or folder per label)"
        )
    train = [e for e in normalized if not _is_valid(e.text, valid_fraction)]
    valid = [e for e in normalized if _is_valid(e.text, valid_fraction)]

    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    if owned_labels is None:
        default_labels = load_fasttext_model(None).label_set
        owned_labels = sorted(lab for lab in counts if lab not in default_labels) or sorted(counts)
    missing = sorted(set(owned_labels) - set(counts))
    if missing:
        raise ValueError(f"owned label(s) {', '.join(missing)} have no training examples")
    owned = set(owned_labels)
    hogwild = threads or 1  # fastText threads per model
    running: set[subprocess.Popen] = set()  # training processes (one thread per model)

    def fit(examples: list[LabelledText], folder: Path, spans: bool = True, name: str = "train"):
        """One fastText model on `examples` (plus short spans, balanced if asked), trained from a file in `folder`."""
        if spans and short_spans:
            examples = _short_spans(examples, short_spans, short_span_words, seed)
        if balance:
            examples = _balanced(examples, seed)
        train_file = folder / f"{name}.txt"
        with open(train_file, "w", encoding="utf-8") as f:
            for e in examples:
                f.write(f"{LABEL_PREFIX}{e.label} {e.text}\n")
        params = {
            "epoch": epochs, "dim": dim, "wordNgrams": word_ngrams, "minn": minn, "maxn": maxn, "lr": lr,
            "bucket": bucket, "loss": "softmax", "seed": seed,
        }
        model_file = folder / f"{name}.bin"
        try:
            if hogwild == 1:
                return _fit_in_own_process(fasttext, train_file, model_file, params, running)
            return fasttext.train_supervised(
                input=str(train_file), thread=max(MIN_TRAIN_THREADS, hogwild), verbose=0, **params
            )
        except (RuntimeError, ValueError) as e:
            raise ValueError(
                f"fastText training failed ({e}); a lower learning rate (lr) usually helps"
            ) from None
        finally:
            train_file.unlink(missing_ok=True)
            model_file.unlink(missing_ok=True)

    def fit_many(example_lists: list[list[LabelledText]], folder: Path, spans: bool = True) -> list:
        """Independent models, trained side by side when each has one thread (fastText releases the GIL)."""
        side_by_side = 1 if hogwild > 1 else max(1, min(len(example_lists), os.cpu_count() or 1))
        pool = ThreadPoolExecutor(side_by_side)
        try:
            return list(
                pool.map(lambda k: fit(example_lists[k], folder, spans, f"train-{k}"), range(len(example_lists)))
            )
        except BaseException:  # Ctrl-C, SIGTERM turned into an exception, one model failing: stop the others
            for proc in list(running):
                proc.kill()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".langid-train-") as tmp:
        folder = Path(tmp)
        dropped: Counter = Counter()
        if drop_contradicted is not None:
            train, dropped = _drop_contradicted(
                train, owned, drop_contradicted, lambda lists: fit_many(lists, folder, spans=False)
            )
        script_min_scores: dict[str, float] = {}
        length_min_scores: dict[str, dict[str, float]] = {}
        if min_score is None and calibration_folds >= 2:
            scored: list[tuple[str, str, str, float]] = []  # label, script, length class, owned probability
            folds = [_fold(e.text, calibration_folds) for e in train]
            insides, outsides = [], []
            for k in range(calibration_folds):
                inside = [e for e, f in zip(train, folds, strict=True) if f != k]
                outside = [e for e, f in zip(train, folds, strict=True) if f == k]
                if outside and len({e.label for e in inside}) >= 2:
                    insides.append(inside)
                    outsides.append(outside)
            for fold_model, outside in zip(fit_many(insides, folder), outsides, strict=True):
                judged = [(e.label, t) for e in outside for t in _calibration_texts(e.text, str(seed))]
                scores = _owned_scores(fold_model, [t for _, t in judged], owned)
                scored += [
                    (label, dominant_script(t), length_class(t), p)
                    for (label, t), p in zip(judged, scores, strict=True)
                ]
            length_min_scores = _calibrated_by_script_and_length(scored, owned, max_false_positive_rate)
            # the threshold of sentences (6 words or more) of each script, as recipe 2 had it
            script_min_scores = {script: t[str(LENGTH_CLASSES[-1])] for script, t in length_min_scores.items()}
            # texts of other scripts get the most careful threshold (when given no length)
            min_score = max(script_min_scores.values(), default=DEFAULT_OWN_MIN_SCORE)
        elif min_score is None:
            min_score = DEFAULT_OWN_MIN_SCORE
        model = fit(train, folder)
        partial = folder / "model.bin"
        model.save_model(str(partial))

        recall: dict[str, float] = {}
        precision: dict[str, float] = {}
        accuracy = None
        if valid:
            labels, _ = model.predict([e.text for e in valid], k=1)
            predicted = [lab[0][len(LABEL_PREFIX) :] for lab in labels]
            hits = Counter(e.label for e, p in zip(valid, predicted, strict=True) if p == e.label)
            gold = Counter(e.label for e in valid)
            guessed = Counter(predicted)
            accuracy = sum(hits.values()) / len(valid)
            recall = {lab: hits[lab] / n for lab, n in sorted(gold.items())}
            precision = {lab: hits[lab] / n for lab, n in sorted(guessed.items())}
        replace_file(partial, out)

    metrics = LangidTrainMetrics(
        model_path=str(out),
        labels=dict(sorted(counts.items())),
        owned_labels=sorted(owned_labels),
        min_score=min_score,
        min_score_by_script=script_min_scores,
        min_score_by_script_and_length=length_min_scores,
        train_examples=len(train),
        valid_examples=len(valid),
        valid_accuracy=accuracy,
        valid_recall=recall,
        valid_precision=precision,
        dropped_contradicted=dict(sorted(dropped.items())),
        seconds=time.perf_counter() - started,
        model_bytes=out.stat().st_size,
    )
    meta = {
        "format": OWN_MODEL_FORMAT,
        "labels": sorted(counts),
        "owned_labels": sorted(owned_labels),
        "min_score": min_score,
        "min_score_by_script": script_min_scores,
        "min_score_by_script_and_length": length_min_scores,
        "normalization": "normalize_for_own_model/1",
        "recipe": TRAINING_RECIPE,
        "params": {
            "epochs": epochs,
            "dim": dim,
            "word_ngrams": word_ngrams,
            "minn": minn,
            "maxn": maxn,
            "lr": lr,
            "bucket": bucket,
            "balance": balance,
            "seed": seed,
            "max_false_positive_rate": max_false_positive_rate,
            "calibration_folds": calibration_folds,
            "short_spans": short_spans,
            "short_span_words": list(short_span_words),
            "drop_contradicted": drop_contradicted,
        },
        # no path and no seconds: the same data and parameters give the same sidecar, as they give the same model
        "metrics": {k: v for k, v in metrics.as_dict().items() if k not in ("model_path", "seconds")},
    }
    meta_path = Path(str(out) + METADATA_SUFFIX)
    write_text_atomic(meta_path, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    log.info("trained %s on %d examples (%s) in %.1f s", out, len(train), dict(counts), metrics.seconds)
    return metrics
