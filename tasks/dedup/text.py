"""Text as the dedup methods compare it: CCNet-style normalisation, paragraphs and words, and the stable
64/128-bit hashes of them (xxh3; word n-grams mixed with splitmix64, vectorised over whole batches)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

_MASK64 = (1 << 64) - 1
_WORD_RE = re.compile(r"\w+")
_NON_WORD_RE = re.compile(r"\W+")
_ASCII_DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")
_DIGIT_RE = re.compile(r"\d")
_COMBINING_RE = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


# ---------------------------------------------------------------------------------------------------------
# text


def normalize_text(text: str) -> str:
    """CCNet-style normalisation of one line or paragraph: lower case, accents stripped, every digit → 0,
    punctuation removed, whitespace collapsed. Two strings equal after this are treated as the same text.

    Punctuation becomes a space and runs of spaces one space, which is one substitution of every run of
    characters that are not word characters (whitespace is never one). ASCII text, most of it, has no accents
    to strip and only the digits 0-9, so it skips the Unicode steps."""
    if text.isascii():
        text = text.lower().translate(_ASCII_DIGITS_TO_ZERO)
    else:
        text = _COMBINING_RE.sub("", unicodedata.normalize("NFD", text.lower()))
        text = _DIGIT_RE.sub("0", text)
    return _NON_WORD_RE.sub(" ", text).strip()


def normalize_document(text: str) -> str:
    """A document normalised paragraph by paragraph, empty paragraphs left out, joined with newlines.

    Keeping the paragraph structure means two documents equal after normalisation have the same list of
    normalised paragraphs, which lets document- and paragraph-level exact dedup agree with each other.
    """
    return "\n".join(p for p in (normalize_text(line) for line in text.split("\n")) if p)


@dataclass(frozen=True)
class Paragraph:
    """A newline-delimited paragraph: `text` without its newline; [start, end) covers the newline too."""

    index: int
    start: int
    end: int
    text: str


def split_paragraphs(text: str) -> list[Paragraph]:
    """Paragraphs as Dolma/BFF and CCNet see them: split on "\\n"; each span includes its trailing newline."""
    out: list[Paragraph] = []
    start = 0
    for i, line in enumerate(text.split("\n")):
        end = min(start + len(line) + 1, len(text))
        out.append(Paragraph(i, start, end, line))
        start = end
    return out


def words(text: str) -> list[str]:
    """Lower-cased word tokens (Unicode letters and digits) used for shingles and n-grams."""
    return _WORD_RE.findall(text.lower())


# ---------------------------------------------------------------------------------------------------------
# hashing


def hash64(data: str | bytes) -> int:
    """A stable 64-bit hash (xxh3) of a string's UTF-8 bytes."""
    return xxhash.xxh3_64_intdigest(data.encode("utf-8") if isinstance(data, str) else data)


def hash128(data: str | bytes) -> tuple[int, int]:
    """A stable 128-bit hash (xxh3) as (high, low) 64-bit halves: collisions are negligible at any corpus size."""
    h = xxhash.xxh3_128_intdigest(data.encode("utf-8") if isinstance(data, str) else data)
    return h >> 64, h & _MASK64


def word_hashes(tokens: Sequence[str]) -> np.ndarray:
    """One 64-bit hash per word (uint64)."""
    fn = xxhash.xxh3_64_intdigest
    return np.fromiter((fn(w.encode("utf-8")) for w in tokens), dtype=np.uint64, count=len(tokens))


def normalize_word(word: str) -> str:
    """A lower-cased word as near-duplicate detection compares it (datatrove's `simplify_text` does the same):
    accents and other combining marks removed (é → e, Arabic harakat dropped), every digit → 0, so copies that
    differ only in dates, prices, counts or diacritics share their shingles."""
    decomposed = unicodedata.normalize("NFD", word)
    if not decomposed.isascii():
        decomposed = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _DIGIT_RE.sub("0", decomposed)


def batch_word_hashes(texts: Sequence[str], normalize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Word hashes of many texts at once: (concatenated uint64 hashes, words per text).

    Equal to `word_hashes(words(t))` for each text (of `normalize_word` of each word with `normalize`), but
    each distinct word of the batch is hashed (and normalised) once: Arrow dictionary-encodes the batch's
    words, Zipf's law does the rest.
    """
    tokens = [words(t) for t in texts]
    counts = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
    flat = [w for ws in tokens for w in ws]
    if not flat:
        return np.empty(0, dtype=np.uint64), counts
    encoded = pc.dictionary_encode(pa.array(flat, pa.string()))
    fn = xxhash.xxh3_64_intdigest
    distinct = encoded.dictionary.to_pylist()
    if normalize:
        distinct = [normalize_word(w) for w in distinct]
    hashes = np.fromiter((fn(w.encode("utf-8")) for w in distinct), dtype=np.uint64, count=len(distinct))
    return hashes[np.asarray(encoded.indices)], counts


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a bijective mixer that spreads every input bit over the whole 64-bit word."""
    x = x.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= _MIX1
        x ^= x >> np.uint64(27)
        x *= _MIX2
        x ^= x >> np.uint64(31)
    return x


def ngram_hashes(word_h: np.ndarray, n: int, short_as_one: bool = True) -> np.ndarray:
    """64-bit hashes of the word n-grams of one sequence of word hashes, in order (vectorised).

    A sequence shorter than `n` gives one n-gram made of all its words when `short_as_one`, else none.
    The hash depends on the order of the words: each position is rotated differently before mixing.
    """
    m = len(word_h)
    if m == 0:
        return np.empty(0, dtype=np.uint64)
    k = n if m >= n else (m if short_as_one else 0)
    if k == 0:
        return np.empty(0, dtype=np.uint64)
    count = m - k + 1
    with np.errstate(over="ignore"):
        acc = np.full(count, np.uint64(k), dtype=np.uint64) * _GOLDEN
        for j in range(k):
            acc = mix64(acc ^ word_h[j : j + count])
    return acc


def batch_ngram_hashes(word_h: np.ndarray, counts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`ngram_hashes` of many word sequences given concatenated: (concatenated n-gram hashes, n-grams per text).

    The n-grams of all texts with at least n words are mixed in one vectorised pass over the concatenation
    (n-grams straddling two texts are computed and thrown away); shorter texts give one n-gram each.
    """
    counts = np.asarray(counts, dtype=np.int64)
    ends = np.cumsum(counts)
    starts = ends - counts
    is_long = counts >= n
    out_counts = np.where(is_long, counts - n + 1, np.minimum(counts, 1))
    out_ends = np.cumsum(out_counts)
    out = np.empty(int(out_ends[-1]) if len(out_ends) else 0, dtype=np.uint64)
    total = len(word_h)
    if is_long.any() and total >= n:
        span = total - n + 1
        with np.errstate(over="ignore"):
            acc = np.full(span, np.uint64(n), dtype=np.uint64) * _GOLDEN
            for j in range(n):
                acc = mix64(acc ^ word_h[j : j + span])
        long_docs = np.flatnonzero(is_long)
        c = out_counts[long_docs]
        offset_in_doc = np.arange(int(c.sum()), dtype=np.int64) - np.repeat(np.cumsum(c) - c, c)
        src = np.repeat(starts[long_docs], c) + offset_in_doc
        dst = np.repeat(out_ends[long_docs] - c, c) + offset_in_doc
        out[dst] = acc[src]
    # texts shorter than n words: one n-gram of all their words, vectorised per length
    short = np.flatnonzero(~is_long & (counts > 0))
    for m in np.unique(counts[short]).tolist():
        docs = short[counts[short] == m]
        with np.errstate(over="ignore"):
            acc = np.full(len(docs), np.uint64(m), dtype=np.uint64) * _GOLDEN
            for j in range(m):
                acc = mix64(acc ^ word_h[starts[docs] + j])
        out[out_ends[docs] - 1] = acc
    return out, out_counts
