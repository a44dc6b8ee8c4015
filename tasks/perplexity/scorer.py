"""Document perplexity under a KenLM model, as CCNet computes it.

    perplexity = 10 ** ( -Σ_lines log10 P(line) / Σ_lines (tokens(line) + 1) )

where each line is normalised and tokenised by `tasks.perplexity.text.lm_lines`, `log10 P(line)` is
`kenlm.Model.score(line, bos=True, eos=True)` (the line is one sentence `<s> w1 … wn </s>`), and the `+ 1`
counts the predicted `</s>` of every line (`<s>` is given, not predicted). Lines without any token are skipped;
a document without any token has no perplexity (None).

A model file is loaded once per process (cached by path, size and modification time) and shared by every scorer
that names it; kenlm's scoring is read-only, so threads can share one model.

kenlm trusts its files: a damaged binary can crash the process or send a lookup into an endless loop at 100 % CPU
that no signal interrupts. So before the first load in a process, a model inside a kenlm-train dataset must have
the sha256 its manifest records, and any other model is first loaded and scored in a short-lived child process
that is killed when it does not finish within `CHECK_SECONDS` (+ `CHECK_SECONDS_PER_GB` of file). The child
follows the model's own n-grams from common words and from the vocabulary a binary keeps at its end, which finds
the damaged hash tables we met; only the sha256 check finds every damage.
"""

from __future__ import annotations

import logging
import math
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import kenlm

from storage.dataset import DatasetError, read_manifest
from storage.fingerprint import hash_file
from tasks.perplexity.text import lm_lines

log = logging.getLogger(__name__)

BINARY_MAGIC = b"mmap lm "
# A kenlm-train dataset holds `<lang>/model.binary` (and `<lang>/model.arpa` unless it was not kept).
MODEL_BINARY = "model.binary"
MODEL_ARPA = "model.arpa"
KENLM_TRAIN_STAGE = "kenlm-train"  # tasks.kenlm_train.STAGE (that module imports this one)

# The child that checks a model not made by kenlm-train gets this long, plus this much per GB of file (loading an
# ARPA text parses every line, a binary is mapped).
CHECK_SECONDS = 30.0
CHECK_SECONDS_PER_GB = {"binary": 10.0, "arpa": 60.0}
_COMMON_WORDS = "the of and to in a is that it for on with as was at by this from he she we you they de la le et"
# Loads the model, then follows its own n-grams: from each given word, extend the sentence with the first given
# word that makes a known n-gram one longer, up to the model's order. Every table is then looked up, with hits and
# misses (a miss in a damaged table is what loops forever).
_CHECK_MODEL = """
import sys, kenlm
config = kenlm.Config()
config.show_progress = False
config.arpa_complain = kenlm.ARPALoadComplain.NONE
try:
    model = kenlm.Model(sys.argv[1], config)
except Exception as exc:
    sys.stderr.write(" ".join(str(exc).split()))
    sys.exit(3)
words = sys.argv[2:]
model.score(" ".join(words), bos=True, eos=True)
for first in words:
    sentence = [first]
    while len(sentence) < model.order:
        for word in words:
            *_, (_, matched, _) = model.full_scores(" ".join([*sentence, word]), bos=False, eos=False)
            if matched > len(sentence):
                sentence.append(word)
                break
        else:
            break
"""

_cache: dict[tuple[str, int, int], kenlm.Model] = {}
_cache_lock = threading.Lock()


def load_kenlm_model(path: str | os.PathLike) -> kenlm.Model:
    """The KenLM model at `path` (ARPA or kenlm binary), loaded once per process.

    Raises ValueError naming the path when the file is missing, is not a file, is not a model kenlm can read
    (kenlm itself raises OSError, or UnicodeDecodeError for binary garbage read as ARPA), does not have the sha256
    its kenlm-train manifest records, or fails the check in a child process (models from elsewhere).
    """
    p = Path(path)
    if not p.exists():
        raise ValueError(
            f"KenLM model not found: {p} (train one with the kenlm-train stage, or fix the path)"
        )
    if not p.is_file():
        raise ValueError(f"KenLM model path is not a file: {p}")
    st = p.stat()
    if st.st_size == 0:
        raise ValueError(f"KenLM model file is empty: {p}")
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    with _cache_lock:
        model = _cache.get(key)
        if model is not None:
            return model
        expected = _recorded_sha256(p)
        if expected is not None:
            _verify_sha256(p, *expected)
        else:
            check_model_in_child(p)
        config = kenlm.Config()
        config.show_progress = False
        config.arpa_complain = kenlm.ARPALoadComplain.NONE
        try:
            model = kenlm.Model(str(p), config)
        except Exception as exc:  # kenlm: OSError (format/IO); UnicodeDecodeError (garbage read as ARPA)
            raise ValueError(f"{p}: {_INVALID} ({_kind(p)} expected): {_short(str(exc))}") from exc
        log.info("loaded KenLM model %s (order %d, %.1f MB)", p, model.order, st.st_size / 1e6)
        _cache[key] = model
        return model


_INVALID = "not a valid KenLM model or corrupted"


def check_model_in_child(path: Path) -> None:
    """Load `path` and score sentences of its own n-grams in a child process; a crash, a kenlm error or running
    past the time limit (the child is then killed) raises ValueError naming the file."""
    kind = _kind(path)
    gigabytes = path.stat().st_size / 1e9
    limit = CHECK_SECONDS + CHECK_SECONDS_PER_GB["binary" if kind == "kenlm binary" else "arpa"] * gigabytes
    cmd = [sys.executable, "-c", _CHECK_MODEL, str(path), *_COMMON_WORDS.split(), *_own_words(path)]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise ValueError(f"{path}: {_INVALID} (loading and scoring did not finish within "
                         f"{limit:.0f} s; kenlm loops on damaged files)") from None
    if proc.returncode < 0:
        raise ValueError(f"{path}: {_INVALID} (kenlm crashed loading or scoring it, signal {-proc.returncode})")
    if proc.returncode != 0:
        reason = _short(proc.stderr.decode("utf-8", "replace")) or f"exit code {proc.returncode}"
        raise ValueError(f"{path}: {_INVALID} ({kind} expected): {reason}")


def _own_words(path: Path, tail_bytes: int = 1 << 16, limit: int = 100) -> list[str]:
    """Up to `limit` words of the vocabulary a kenlm binary stores, NUL-separated, at its end ([] for ARPA)."""
    with open(path, "rb") as f:
        f.seek(max(path.stat().st_size - tail_bytes, 0))
        tail = f.read()
    words = [w.decode("utf-8", "ignore") for w in tail.split(b"\0")[1:]]
    return [w for w in words if w and len(w) <= 64 and not re.search(r"\s", w) and w.isprintable()][-limit:]


def _recorded_sha256(path: Path) -> tuple[str, Path] | None:
    """The sha256 the manifest of the kenlm-train dataset holding `path` records for it, and that manifest."""
    root = path.resolve().parent.parent
    try:
        manifest = read_manifest(root)
    except DatasetError:
        return None
    if manifest.stage != KENLM_TRAIN_STAGE:
        return None
    name = path.resolve().relative_to(root).as_posix()
    return next(((f.sha256, Path(manifest.path)) for f in manifest.files if f.name == name), None)


def _verify_sha256(path: Path, expected: str, dataset: Path) -> None:
    actual = hash_file(path)
    if actual != expected:
        raise ValueError(
            f"{path}: sha256 {actual} is not the {expected} that kenlm-train recorded in {dataset}/manifest.json: "
            f"the model file is damaged or was changed; rerun kenlm-train with --force "
            f"(chatlike run --only kenlm-train --force)"
        )


def _kind(path: Path) -> str:
    return "kenlm binary" if _starts_with(path, BINARY_MAGIC) else "ARPA text"


def clear_model_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _starts_with(path: Path, magic: bytes) -> bool:
    with open(path, "rb") as f:
        return f.read(len(magic)) == magic


def _short(message: str, limit: int = 300) -> str:
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 1] + "…"


@dataclass(frozen=True)
class DocScore:
    """The sums a document perplexity is made of (they add up over documents, e.g. for a corpus perplexity)."""

    log10_prob: float  # Σ log10 P(line), each line with <s> … </s>
    length: int  # Σ (tokens + 1): every token and every line's </s>
    lines: int  # lines scored (lines with at least one token)

    @property
    def tokens(self) -> int:
        return self.length - self.lines

    @property
    def perplexity(self) -> float | None:
        if self.length == 0:
            return None
        return perplexity_from_sums(self.log10_prob, self.length)


def perplexity_from_sums(log10_prob: float, length: int) -> float:
    """10 ** (-Σ log10 p / Σ (tokens + 1)); +inf when the value overflows a float."""
    exponent = -log10_prob / length
    return 10.0**exponent if exponent < 308 else math.inf


class PerplexityScorer:
    """Scores texts with one KenLM model, using the project's normalisation and tokenisation."""

    def __init__(self, model_path: str | os.PathLike):
        self.model_path = Path(model_path)
        self.model = load_kenlm_model(self.model_path)

    @property
    def order(self) -> int:
        return self.model.order

    def score_tokens(self, tokens: list[str]) -> float:
        """log10 P(<s> tokens </s>) of one already normalised and tokenised line."""
        return self.model.score(" ".join(tokens), bos=True, eos=True)

    def score_line(self, line: str) -> float:
        """log10 P of one raw line after normalisation (the whole line scored as one sentence)."""
        return self.score_text(line).log10_prob

    def score_text(self, text: str) -> DocScore:
        model = self.model
        total = 0.0
        length = 0
        lines = 0
        for tokens in lm_lines(text):
            total += model.score(" ".join(tokens), bos=True, eos=True)
            length += len(tokens) + 1
            lines += 1
        return DocScore(total, length, lines)

    def perplexity(self, text: str) -> float | None:
        """The document perplexity of `text`; None when it has no token at all."""
        return self.score_text(text).perplexity
