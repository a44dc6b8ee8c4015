"""Document perplexity under a KenLM model, as CCNet computes it.

    perplexity = 10 ** ( -Σ_lines log10 P(line) / Σ_lines (tokens(line) + 1) )

where each line is normalised and tokenised by `tasks.perplexity.text.lm_lines`, `log10 P(line)` is
`kenlm.Model.score(line, bos=True, eos=True)` (the line is one sentence `<s> w1 … wn </s>`), and the `+ 1`
counts the predicted `</s>` of every line (`<s>` is given, not predicted). Lines without any token are skipped;
a document without any token has no perplexity (None).

A model file is loaded once per process (cached by path, size and modification time) and shared by every scorer
that names it; kenlm's scoring is read-only, so threads can share one model.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import kenlm

from tasks.perplexity.text import lm_lines

log = logging.getLogger(__name__)

BINARY_MAGIC = b"mmap lm "
# A kenlm-train dataset holds `<lang>/model.binary` (and `<lang>/model.arpa` unless it was not kept).
MODEL_BINARY = "model.binary"
MODEL_ARPA = "model.arpa"

_cache: dict[tuple[str, int, int], kenlm.Model] = {}
_cache_lock = threading.Lock()


def load_kenlm_model(path: str | os.PathLike) -> kenlm.Model:
    """The KenLM model at `path` (ARPA or kenlm binary), loaded once per process.

    Raises ValueError naming the path when the file is missing, is not a file, or is not a model kenlm can read
    (kenlm itself raises OSError, or UnicodeDecodeError for binary garbage read as ARPA).
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
        config = kenlm.Config()
        config.show_progress = False
        config.arpa_complain = kenlm.ARPALoadComplain.NONE
        try:
            model = kenlm.Model(str(p), config)
        except Exception as exc:  # kenlm: OSError (format/IO); UnicodeDecodeError (garbage read as ARPA)
            kind = "kenlm binary" if _starts_with(p, BINARY_MAGIC) else "ARPA text"
            reason = _short(str(exc))
            raise ValueError(f"{p}: not a readable KenLM model ({kind} expected): {reason}") from exc
        log.info("loaded KenLM model %s (order %d, %.1f MB)", p, model.order, st.st_size / 1e6)
        _cache[key] = model
        return model


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
