"""Quality signals of one document: Gopher quality and repetition measures, and C4 line rules.

Everything here is a pure function of a text. `document_signals` returns the `quality_*` values of one document
and, for web text, the text with the C4 line rules applied; the stage stores them as columns so that thresholds
can be re-tuned later without recomputing anything (see `tasks.quality.stage`).

Definitions follow the Gopher paper (Rae et al. 2021, appendix A) and C4 (Raffel et al. 2020) as datatrove
implements them, so that its default thresholds mean the same thing here: "words" are tokens as spaCy's English
tokenizer makes them (whitespace first, then leading and trailing punctuation and a few inner marks; see
`split_tokens`), fractions of characters are taken over the whole text, and the duplicate n-gram fractions count a
repeated n-gram's characters (without spaces) and then skip past it. The tokenizer is ours, not spaCy, and
5-10x faster; on the rare chunk it splits differently a document near a threshold can land on the other side
(bench/bench_quality.py measures how often).
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

# ---------------------------------------------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------------------------------------------


def _char_class(wanted) -> str:
    """A regex class body of every code point (up to U+1FFFF) for which `wanted(code point, category)` holds."""
    ranges: list[list[int]] = []
    for cp in range(0x1FFFF + 1):
        if wanted(cp, unicodedata.category(chr(cp))):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    return "".join(f"\\U{a:08x}-\\U{b:08x}" if a != b else f"\\U{a:08x}" for a, b in ranges)


# Words are made the way spaCy's English tokenizer makes them (datatrove's default, so that the Gopher thresholds
# mean the same here), by rules of our own that reproduce its behaviour on web text: the text is split at
# whitespace; from each chunk, opening punctuation is taken off the front and closing punctuation off the end,
# one mark at a time; what remains is split only at a few inner marks (ellipses, symbols, a hyphen, comma, slash
# or colon between letters, an operator between digits, a full stop between a lower-case and a capital letter).
# So "3.50", "10,000", "3:30", "a/1", "x.y.z", "l'homme", URLs and e-mail addresses stay whole, while "(approx.)"
# gives "(", "approx", ".", ")". English contractions split as "do" + "n't"; "J.", "U.S.", "e.g." and a few
# common abbreviations keep their full stop. Emoji are tokens of their own (a skin tone too).
_SYMBOLS = _char_class(lambda cp, cat: (cat == "So" and cp != 0xB0) or 0x1F3FB <= cp <= 0x1F3FF)
_OPENING = "([{<>\"'“”‘’«»„‚`´,:;!?¡¿_#*&§%=—–$£€¥₹₽₩…，。、：；！？（）「」『』《》〈〉【】،؛؟"
_CLOSING = ")]}>\"'“”‘’«»,:;!?_#*&—–…，。、：；！？（）「」『』《》〈〉【】%([{<°،؛؟"
_CAPITAL = "A-Z\u00c0-\u00d6\u00d8-\u00de\u0391-\u03a9\u0400-\u042f"
_UNITS = "km|m|cm|mm|kg|g|mg|lb|oz|mph|kb|KB|mb|MB|gb|GB|tb|TB|K|M|T|ft|in|yd|am|pm"
_PREFIX = re.compile(rf"\.\.+|''|[{re.escape(_OPENING)}]|\+(?!\d)|[{_SYMBOLS}]")
_SUFFIX = re.compile(
    rf"(?:\.\.+|''|\):|[{re.escape(_CLOSING)}]|[{_SYMBOLS}]|['’][sS]|(?<=\d)(?:[+$£€¥]|{_UNITS})"
    rf"|(?<=[^{_CAPITAL}])\.|(?<=[{_CAPITAL}]{{2}})\.)$"  # a full stop, except after one capital ("J.")
)
_L = r"[^\W\d_]"
_L_RE = re.compile(_L)
_INFIX = re.compile(
    rf"\.\.+|…|[{_SYMBOLS}]|(?<=\d)[+\-*^](?=[\d-])|(?<=[^\W\d_{_CAPITAL}]|['\"”’])\.(?=[{_CAPITAL}'\"“‘])"
    rf"|(?<={_L}),(?={_L})|(?<=[^\W_])(?:-+|—|–|~)(?={_L})|(?<=[^\W_])[:<>=/](?={_L})"
)
_URL_OR_EMAIL = re.compile(r"(?:https?://|www\.)\S+|[\w.+-]+@[\w-]+\.[\w.-]+", re.IGNORECASE)
_INITIALS = re.compile(r"(?:[a-z]\.)+|(?:[A-Z]\.)+")  # "a.", "e.g.", "J.", "U.S."
_MIXED_INITIALS = re.compile(r"(?:[A-Za-z]\.){2,}")  # "a.C." -> "a.", "C."
_CONTRACTION = re.compile(r"([^\W\d_]+?)(n['’]t|['’](?:s|m|re|ve|ll|d))", re.IGNORECASE)
_KEPT_WHOLE = frozenset(
    "Mr. Mrs. Ms. Dr. St. Mt. Jr. Sr. Inc. Ltd. Co. Corp. vs. Jan. Feb. Mar. Apr. Jun. Jul. Aug. Sep. Sept. Oct. "
    "Nov. Dec. Gov. Sen. Rep. Rev. Gen. Sgt. Capt. Prof. Bros. :) :( ;) :-) :-( ;-) :P :-P :D =) :] :[ (: ): <3 "
    "xD".split()
)
# contractions written without the apostrophe, split like their spelled-out forms
_BARE_CONTRACTIONS = {
    w: len(w) - 2
    for w in "dont cant wont didnt doesnt isnt arent wasnt couldnt wouldnt shouldnt havent hasnt".split()
} | {"im": 1, "ive": 1, "cannot": 3}


# `_special_chunk` answers only for a chunk of at most this many characters, or for one that starts with a letter
# and ends with a letter or a full stop (initials, contractions).
_SPECIAL_MAX_CHARS = max(map(len, [*_KEPT_WHOLE, *_BARE_CONTRACTIONS]))
# A `_SUFFIX` match has at most this many characters, unless it is a run of full stops.
_SUFFIX_MAX_CHARS = max(2, *map(len, _UNITS.split("|")))


def _may_be_special(chunk: str, start: int, end: int) -> bool:
    """Whether `_special_chunk` can answer for `chunk[start:end]` (a cheap test of its ends)."""
    return end - start <= _SPECIAL_MAX_CHARS or bool(
        _L_RE.match(chunk, start) and (chunk[end - 1] == "." or _L_RE.match(chunk, end - 1))
    )


def _special_chunk(chunk: str, start: int, end: int) -> list[str] | None:
    """The tokens of `chunk[start:end]` when it is kept whole or split by a rule of its own (looked at in place)."""
    short = end - start <= _SPECIAL_MAX_CHARS
    if (short and chunk[start:end] in _KEPT_WHOLE) or _INITIALS.fullmatch(chunk, start, end):
        return [chunk[start:end]]
    if _MIXED_INITIALS.fullmatch(chunk, start, end):
        return [chunk[i : i + 2] for i in range(start, end, 2)]
    cut = _BARE_CONTRACTIONS.get(chunk[start:end].lower()) if short else None
    if cut is not None:
        return [chunk[start : start + cut], chunk[start + cut : end]]
    m = _CONTRACTION.fullmatch(chunk, start, end)
    return [m.group(1), m.group(2)] if m else None


def _suffix_search_start(chunk: str, start: int, end: int) -> int:
    """Where the leftmost `_SUFFIX` match of chunk[start:end] can start: in its last few characters, or where its
    final run of full stops does."""
    dots = end
    while dots > start and chunk[dots - 1] == ".":
        dots -= 1
    return max(start, min(dots, end - _SUFFIX_MAX_CHARS))


@functools.lru_cache(maxsize=1 << 18)
def _chunk_tokens(chunk: str) -> tuple[str, ...]:
    """The tokens of one whitespace-free chunk (cached: most chunks of a corpus are frequent words).

    Marks are taken off `chunk[start:end]` by moving its ends, never by copying what is left, and a suffix is
    looked for only where one can start: a chunk of a hundred thousand "!" or ")" takes linear time, not hours."""
    if (chunk.isalpha() and chunk.lower() not in _BARE_CONTRACTIONS) or chunk.isdigit():
        return (chunk,)  # most chunks: a plain word or number
    head: list[str] = []
    tail: list[str] = []
    start, end = 0, len(chunk)
    while start < end:
        if _may_be_special(chunk, start, end):
            special = _special_chunk(chunk, start, end)
            if special is not None:
                return (*head, *special, *reversed(tail))
        m = _PREFIX.match(chunk, start, end)
        if m:
            head.append(m.group())
            start = m.end()
            continue
        # the characters before `start` are marks, never the digit or capital a look-behind asks for
        m = _SUFFIX.search(chunk, _suffix_search_start(chunk, start, end), end)
        if m and m.start() > start:
            tail.append(m.group())
            end = m.start()
            continue
        break
    chunk = chunk[start:end]
    middle: list[str] = []
    if chunk and _URL_OR_EMAIL.fullmatch(chunk):
        middle.append(chunk)
    elif chunk:
        start = 0
        for m in _INFIX.finditer(chunk):
            if m.start() > start:
                middle.append(chunk[start : m.start()])
            middle.append(m.group())
            start = m.end()
        if start < len(chunk):
            middle.append(chunk[start:])
    return (*head, *middle, *reversed(tail))


# A word has at least one character that is not punctuation (Unicode P*, or an ASCII symbol such as $ + = |).
_WORD_CHAR = re.compile(
    "[^\\s" + _char_class(lambda cp, cat: cat.startswith("P") or (cp < 0x80 and not chr(cp).isalnum())) + "]"
)
_LETTER_RE = re.compile(r"[^\W\d_]")
_PARAGRAPH_SPLIT = re.compile(r"\n{2,}")
_LINE_SPLIT = re.compile(r"\n+")

BULLETS = ("•", "-", "*", "‣", "◦", "▪", "●", "–")
ELLIPSES = ("...", "…")


def split_tokens(text: str) -> list[str]:
    """Words and punctuation tokens, in text order."""
    tokens: list[str] = []
    for chunk in text.split():
        tokens.extend(_chunk_tokens(chunk))
    return tokens


@functools.lru_cache(maxsize=1 << 18)
def _chunk_info(chunk: str) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """A chunk's tokens, the tokens that are words, and how many of those have a letter (one cache lookup
    per chunk gives all three)."""
    tokens = _chunk_tokens(chunk)
    words = tuple(words_of(tokens))
    return tokens, words, sum(1 for w in words if _LETTER_RE.search(w))


class Tokens(NamedTuple):
    tokens: list[str]  # words and punctuation, in text order
    words: list[str]  # the tokens that are words
    letter_words: int  # how many words have a letter


_TOKENS, _WORDS, _LETTER_WORDS = (operator.itemgetter(i) for i in range(3))


def tokenize(text: str) -> Tokens:
    """`split_tokens(text)`, its words and how many of them have a letter, looked up per chunk in a cache."""
    infos = list(map(_chunk_info, text.split()))
    chain = itertools.chain.from_iterable
    return Tokens(list(chain(map(_TOKENS, infos))), list(chain(map(_WORDS, infos))), sum(map(_LETTER_WORDS, infos)))


def clear_token_cache() -> None:
    """Forget the cached tokens of chunks (for benchmarks that must not profit from an earlier run)."""
    _chunk_tokens.cache_clear()
    _chunk_info.cache_clear()


def words_of(tokens: list[str]) -> list[str]:
    """The tokens that are words (at least one character that is not punctuation), in order."""
    search = _WORD_CHAR.search
    return [t for t in tokens if search(t)]


def split_words(text: str) -> list[str]:
    """Only the words of a text (tokens with a character that is not punctuation), in text order."""
    return words_of(split_tokens(text))


# ---------------------------------------------------------------------------------------------------------------
# Gopher quality
# ---------------------------------------------------------------------------------------------------------------

# Gopher's list for English; for the other languages, the most frequent function words (our own choice).
# The rule asks for at least two distinct ones, compared in lower case.
DEFAULT_STOP_WORDS: dict[str, list[str]] = {
    "en": ["the", "be", "to", "of", "and", "that", "have", "with"],
    "fr": ["le", "la", "les", "de", "des", "et", "est", "un", "une", "que", "pour", "dans"],
    "de": ["der", "die", "das", "und", "ist", "nicht", "mit", "von", "zu", "ein", "eine", "den"],
    "es": ["el", "la", "los", "las", "de", "del", "que", "y", "en", "se", "un", "una"],
    "it": ["il", "la", "di", "che", "e", "per", "un", "una", "non", "in", "del", "della"],
    "pt": ["o", "a", "os", "as", "de", "que", "e", "do", "da", "em", "um", "para"],
    "nl": ["de", "het", "een", "en", "van", "is", "dat", "op", "te", "in", "niet", "met"],
    "ar": ["في", "من", "على", "أن", "إلى", "التي", "الذي", "عن", "هذا", "هذه", "مع", "كان"],
}


def gopher_quality_signals(
    text: str,
    tokens: list[str],
    words: list[str],
    stop_words: frozenset[str] | None,
    letter_words: int | None = None,
) -> dict:
    """Word count, mean word length, symbol ratios, bullet/ellipsis line fractions, letters, stop words.

    `letter_words`: how many words have a letter, when already known (`tokenize`)."""
    n_tokens = len(tokens)
    n_words = len(words)
    lines = text.splitlines() or [""]
    with_letters = sum(1 for w in words if _LETTER_RE.search(w)) if letter_words is None else letter_words
    return {
        "quality_words": n_words,
        "quality_mean_word_length": sum(map(len, words)) / n_words if n_words else 0.0,
        "quality_hash_word_ratio": text.count("#") / n_tokens if n_tokens else 0.0,
        "quality_ellipsis_word_ratio": (text.count("...") + text.count("…")) / n_tokens if n_tokens else 0.0,
        "quality_bullet_lines_frac": sum(1 for s in lines if s.lstrip().startswith(BULLETS)) / len(lines),
        "quality_ellipsis_lines_frac": sum(1 for s in lines if s.rstrip().endswith(ELLIPSES)) / len(lines),
        "quality_alpha_words_frac": with_letters / n_tokens if n_tokens else 0.0,
        "quality_stop_words": (
            None if stop_words is None else len(stop_words.intersection(map(str.lower, words)))
        ),
    }


# ---------------------------------------------------------------------------------------------------------------
# Gopher repetition
# ---------------------------------------------------------------------------------------------------------------

TOP_NGRAM_SIZES = (2, 3, 4)
DUP_NGRAM_SIZES = (5, 6, 7, 8, 9, 10)
_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


def _duplicates(parts: list[str]) -> tuple[int, int]:
    """(number of parts seen before, characters in them)."""
    seen: set[str] = set()
    count = chars = 0
    for part in parts:
        if part in seen:
            count += 1
            chars += len(part)
        else:
            seen.add(part)
    return count, chars


def _doc_starts(doc_of: np.ndarray) -> np.ndarray:
    """Indices where a new document begins in an array sorted by document."""
    return np.flatnonzero(np.concatenate(([True], doc_of[1:] != doc_of[:-1])))


def _top_ngram_chars(
    doc_of: np.ndarray, counts: np.ndarray, window_chars: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per document with windows: characters covered by its most frequent n-gram (its length with spaces × its
    count; the one seen first wins ties). Returns (documents, characters)."""
    starts = _doc_starts(doc_of)
    top = np.maximum.reduceat(counts, starts)
    is_top = np.flatnonzero(counts == np.repeat(top, np.diff(np.append(starts, counts.size))))
    first = is_top[_doc_starts(doc_of[is_top])]  # each document's first window of a most frequent n-gram
    return doc_of[starts], window_chars[first] * top


def _dup_ngram_chars(
    doc_of: np.ndarray, positions: np.ndarray, hashes: np.ndarray, letters: np.ndarray, n: int, out: list[int]
) -> None:
    """Add to `out[doc]` the characters in repeated n-grams, scanning each document left to right and jumping
    past each repeat. Only the windows given (those whose n-gram occurs more than once) can be a repeat, so the
    scan visits just those: a unique n-gram only ever advances the scan by one position."""
    seen: set[int] = set()
    current = -1
    position = 0
    for doc, i, h, chars in zip(
        doc_of.tolist(), positions.tolist(), hashes.tolist(), letters.tolist(), strict=True
    ):
        if doc != current:
            current, position = doc, 0
            seen.clear()
        if i < position:
            continue
        if h in seen:
            out[doc] += chars
            position = i + n
        else:
            seen.add(h)
            position = i + 1


def _ngram_chars(token_lists: Sequence[list[str]]) -> dict[int, list[int]]:
    """For each n of TOP_NGRAM_SIZES and DUP_NGRAM_SIZES, per document: the characters of its top n-gram or of
    its repeated n-grams.

    The documents' tokens are hashed together: each n-gram gets one 64-bit polynomial hash, extended from the
    (n-1)-gram's (collisions are negligible), and token ids are numbered per document, so equal n-grams of
    different documents never meet. Windows that cross a document boundary are left out. From n = 5 on only the
    windows whose (n-1)-gram and next (n-1)-gram both repeat are hashed: no other n-gram can repeat.
    """
    sizes = [len(tokens) for tokens in token_lists]
    total = sum(sizes)
    found = {n: [0] * len(token_lists) for n in (*TOP_NGRAM_SIZES, *DUP_NGRAM_SIZES)}
    if total < 2:
        return found
    id_list: list[int] = []
    for tokens in token_lists:
        # a token's id is the position of its first occurrence: no id of one document is another's
        id_list.extend(map({}.setdefault, tokens, itertools.count(len(id_list))))
    ids = np.array(id_list, dtype=np.uint64) + np.uint64(1)
    lengths = np.fromiter(map(len, itertools.chain.from_iterable(token_lists)), np.int64, total)
    cumulative = np.concatenate(([0], np.cumsum(lengths)))
    doc_of = np.repeat(np.arange(len(token_lists)), sizes)
    hashes = ids * _HASH_MULTIPLIER
    repeated = None  # window starts of the last n whose n-gram occurs more than once
    for n in range(2, max(DUP_NGRAM_SIZES) + 1):
        if total < n:
            break
        hashes = hashes[:-1] * _HASH_MULTIPLIER + ids[n - 1 :]
        if n <= max(TOP_NGRAM_SIZES):
            positions = np.flatnonzero(doc_of[: total - n + 1] == doc_of[n - 1 :])
        else:
            follows = np.zeros(total + 1, dtype=bool)
            follows[repeated] = True
            positions = repeated[follows[repeated + 1]]
        if positions.size == 0:
            break
        window_hashes = hashes[positions]
        _, inverse, counts = np.unique(window_hashes, return_inverse=True, return_counts=True)
        counts = counts[inverse.reshape(-1)]
        window_doc = doc_of[positions]
        # characters of each window without spaces
        letters = cumulative[positions + n] - cumulative[positions]
        if n in TOP_NGRAM_SIZES:
            docs, chars = _top_ngram_chars(window_doc, counts, letters + (n - 1))
            for doc, c in zip(docs.tolist(), chars.tolist(), strict=True):
                found[n][doc] = c
        many = counts > 1
        repeated = positions[many]
        if n in DUP_NGRAM_SIZES:
            _dup_ngram_chars(window_doc[many], repeated, window_hashes[many], letters[many], n, found[n])
    return found


def repetition_signals_of(texts: Sequence[str], token_lists: Sequence[list[str]]) -> list[dict]:
    """`repetition_signals` of many documents at once (the n-gram work is done for all of them together)."""
    ngram_chars = _ngram_chars(token_lists)
    results = []
    for index, text in enumerate(texts):
        n_chars = len(text) or 1
        paragraphs = _PARAGRAPH_SPLIT.split(text.strip())
        para_dups, para_chars = _duplicates(paragraphs)
        lines = _LINE_SPLIT.split(text)
        line_dups, line_chars = _duplicates(lines)
        signals = {
            "quality_dup_para_frac": para_dups / len(paragraphs),
            "quality_dup_para_char_frac": para_chars / n_chars,
            "quality_dup_line_frac": line_dups / len(lines),
            "quality_dup_line_char_frac": line_chars / n_chars,
        }
        for n in TOP_NGRAM_SIZES:
            signals[f"quality_top_{n}gram_char_frac"] = ngram_chars[n][index] / n_chars
        for n in DUP_NGRAM_SIZES:
            signals[f"quality_dup_{n}gram_char_frac"] = ngram_chars[n][index] / n_chars
        results.append(signals)
    return results


def repetition_signals(text: str, tokens: list[str]) -> dict:
    """Duplicate line/paragraph fractions, top 2–4-gram and duplicate 5–10-gram character fractions."""
    return repetition_signals_of([text], [tokens])[0]


# ---------------------------------------------------------------------------------------------------------------
# C4 line rules
# ---------------------------------------------------------------------------------------------------------------

# C4 keeps lines ending like a sentence; the marks of other scripts (Arabic, Urdu, Devanagari, CJK) count too.
TERMINAL_PUNCTUATION = (".", "?", "!", '"', "'", "؟", "۔", "।", "。", "！", "？")
# A sentence ends at ?, ! or a full stop that does not follow a lone letter (initials, "r."), before a space.
# (The look-behinds come after the full stop so that the pattern starts with a mark: the regex engine then
# only tries the positions holding one, about 6x faster than trying every position.)
_SENTENCE_END = re.compile(
    r"(?:\.(?:(?<=[^\W\d_]{2}\.)|(?<=[\d\W]\.))|[?!؟۔।。！？])[.?!؟۔।。！？]*[\"'”’)\]]*(?=\s|$)"
)
_CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]", re.IGNORECASE)
POLICY_PHRASES = (
    "terms of use",
    "privacy policy",
    "cookie policy",
    "uses cookies",
    "use of cookies",
    "use cookies",
)


@dataclass(frozen=True)
class C4Rules:
    """Which C4 line rules run (the stage builds this from its parameters)."""

    remove_lines: bool = True
    min_words_per_line: int = 3
    max_word_length: int = 1000
    terminal_punctuation: bool = True
    javascript: bool = True
    policy: bool = True
    citations: bool = True


@dataclass
class C4Result:
    text: str
    lines_removed: int
    chars_removed: int
    sentences: int
    lorem_ipsum_lines: int
    curly_bracket_lines: int
    removed_by_rule: dict[str, int]


def unwrap_paragraphs(text: str) -> str:
    """Plain-text prose with hard-wrapped lines as one line per paragraph (blank lines separate paragraphs).

    The C4 line rules judge lines as an HTML page yields them, one per block; a book or a note wrapped at 80
    columns would lose every line that does not happen to end a sentence.
    """
    paragraphs = re.split(r"\n[ \t]*\n", text)
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines() if line.strip()) for p in paragraphs)


def c4_lines(text: str, rules: C4Rules) -> C4Result:
    """Apply the C4 line rules; count sentences, "lorem ipsum" and "{" in the lines that survive them.

    Blank lines are kept (one between paragraphs) and not counted. Order of checks per line: overlong word,
    citation removal, terminal punctuation (an ellipsis does not count), words per line; then "lorem ipsum" is
    counted, JavaScript lines removed, "{" counted and cookie/policy lines removed (datatrove's order).
    """
    kept: list[str] = []
    removed: dict[str, int] = {}
    sentences = lorem = curly = 0
    lines = text.splitlines()
    for raw in lines:
        line = raw.strip()
        if not line:  # blank lines are layout, not content: keep one between kept paragraphs
            if kept and kept[-1]:
                kept.append("")
            continue
        words = line.split()
        reason = None
        if rules.max_word_length > 0 and max(map(len, words)) > rules.max_word_length:
            reason = "too_long_word"
        else:
            if rules.citations:
                line = _CITATION.sub("", line)
            if rules.terminal_punctuation and (
                not line.endswith(TERMINAL_PUNCTUATION) or line.endswith(ELLIPSES)
            ):
                reason = "no_terminal_punctuation"
            elif len(words) < rules.min_words_per_line:
                reason = "too_few_words"
            else:
                lowered = line.lower()
                lorem += "lorem ipsum" in lowered
                if rules.javascript and "javascript" in lowered:
                    reason = "javascript"
                else:
                    curly += "{" in line
                    if rules.policy and any(p in lowered for p in POLICY_PHRASES):
                        reason = "policy"
        if reason is not None:
            removed[reason] = removed.get(reason, 0) + 1
            continue
        sentences += max(1, len(_SENTENCE_END.findall(line)))
        kept.append(line)
    while kept and not kept[-1]:
        kept.pop()
    out = "\n".join(kept) if rules.remove_lines else text
    n_removed = sum(removed.values())
    return C4Result(
        text=out,
        lines_removed=n_removed,
        chars_removed=max(0, len(text) - len(out)) if rules.remove_lines else 0,
        sentences=sentences,
        lorem_ipsum_lines=lorem,
        curly_bracket_lines=curly,
        removed_by_rule=removed,
    )


# ---------------------------------------------------------------------------------------------------------------
# Chat text
# ---------------------------------------------------------------------------------------------------------------

# WhatsApp documents hold one "Author: text" line per message (tasks.whatsapp.documents).
_AUTHOR_PREFIX = re.compile(r"^[^\n:]{1,64}: ", re.MULTILINE)


def strip_chat_authors(text: str) -> str:
    """The messages of a chat document without their "Author: " prefixes."""
    return _AUTHOR_PREFIX.sub("", text)


# ---------------------------------------------------------------------------------------------------------------
# One document
# ---------------------------------------------------------------------------------------------------------------

RULE_SETS = ("web", "prose", "chat", "none")

SIGNAL_COLUMNS: tuple[str, ...] = (
    "quality_words",
    "quality_mean_word_length",
    "quality_hash_word_ratio",
    "quality_ellipsis_word_ratio",
    "quality_bullet_lines_frac",
    "quality_ellipsis_lines_frac",
    "quality_alpha_words_frac",
    "quality_stop_words",
    "quality_dup_para_frac",
    "quality_dup_para_char_frac",
    "quality_dup_line_frac",
    "quality_dup_line_char_frac",
    *(f"quality_top_{n}gram_char_frac" for n in TOP_NGRAM_SIZES),
    *(f"quality_dup_{n}gram_char_frac" for n in DUP_NGRAM_SIZES),
    "quality_c4_lines_removed",
    "quality_c4_chars_removed",
    "quality_c4_sentences",
    "quality_c4_lorem_ipsum_lines",
    "quality_c4_curly_bracket_lines",
)
INT_COLUMNS = frozenset(
    {
        "quality_words",
        "quality_stop_words",
        "quality_c4_lines_removed",
        "quality_c4_chars_removed",
        "quality_c4_sentences",
        "quality_c4_lorem_ipsum_lines",
        "quality_c4_curly_bracket_lines",
    }
)


@dataclass
class DocumentSignals:
    text: str  # the text to keep: web text after the C4 line rules, otherwise unchanged
    signals: dict  # every name of SIGNAL_COLUMNS (None where the rule set does not compute it)
    c4_removed_by_rule: dict[str, int]


def documents_signals(
    texts: Sequence[str],
    rule_sets: Sequence[str],
    stop_words: Sequence[frozenset[str] | None],
    c4: C4Rules | None = None,
) -> list[DocumentSignals]:
    """The quality signals of many documents, each under its rule set and stop words (see `document_signals`).

    The results are those of `document_signals` on each document; the n-gram work of all of them is done
    together, which is where a document-at-a-time loop spends most of its time on short documents.
    """
    for rule_set in rule_sets:
        if rule_set not in RULE_SETS:
            raise ValueError(
                f"unknown quality rule set '{rule_set}' (expected one of {', '.join(RULE_SETS)})"
            )
    # slices of about BATCH_CHARS characters bound the memory of the token lists and n-gram arrays
    results: list[DocumentSignals] = []
    start = 0
    while start < len(texts):
        end, chars = start + 1, len(texts[start])
        while end < len(texts) and chars + len(texts[end]) <= BATCH_CHARS:
            chars += len(texts[end])
            end += 1
        results += _slice_signals(texts[start:end], rule_sets[start:end], stop_words[start:end], c4)
        start = end
    return results


BATCH_CHARS = 1 << 22  # characters of text whose signals are computed together


def _slice_signals(
    texts: Sequence[str],
    rule_sets: Sequence[str],
    stop_words: Sequence[frozenset[str] | None],
    c4: C4Rules | None,
) -> list[DocumentSignals]:
    measured_index = [i for i, rule_set in enumerate(rule_sets) if rule_set != "none"]
    measured = [
        unicodedata.normalize("NFC", strip_chat_authors(texts[i]) if rule_sets[i] == "chat" else texts[i])
        for i in measured_index
    ]
    split = [tokenize(text) for text in measured]
    repetition = repetition_signals_of(measured, [tokens.tokens for tokens in split])
    results = [DocumentSignals(text, dict.fromkeys(SIGNAL_COLUMNS), {}) for text in texts]
    for i, text, tokens, repeated in zip(measured_index, measured, split, repetition, strict=True):
        signals = results[i].signals
        signals.update(
            gopher_quality_signals(text, tokens.tokens, tokens.words, stop_words[i], tokens.letter_words)
        )
        signals.update(repeated)
        if rule_sets[i] == "chat":
            continue
        result = c4_lines(
            unwrap_paragraphs(texts[i]) if rule_sets[i] == "prose" else texts[i], c4 or C4Rules()
        )
        signals.update(
            quality_c4_lines_removed=result.lines_removed,
            quality_c4_chars_removed=result.chars_removed,
            quality_c4_sentences=result.sentences,
            quality_c4_lorem_ipsum_lines=result.lorem_ipsum_lines,
            quality_c4_curly_bracket_lines=result.curly_bracket_lines,
        )
        results[i] = DocumentSignals(result.text, signals, result.removed_by_rule)
    return results


def document_signals(
    text: str,
    rule_set: str,
    *,
    stop_words: frozenset[str] | None = None,
    c4: C4Rules | None = None,
) -> DocumentSignals:
    """The quality signals of one document under a rule set.

    - `web`: Gopher quality and repetition on the text as it is, then the C4 line rules, which also produce the
      text to keep (when `c4.remove_lines`).
    - `prose`: as `web`, for plain-text files whose paragraphs are hard-wrapped: the C4 line rules judge whole
      paragraphs (their lines joined), and the kept text has one line per paragraph.
    - `chat`: Gopher quality and repetition on the messages without author prefixes; the text is never changed
      and the C4 columns stay empty (chat lines are short and unpunctuated by nature).
    - `none`: no signals; the filter keeps the document.
    """
    return documents_signals([text], [rule_set], [stop_words], c4)[0]


def quality_signals(
    text: str, rule_set: str = "web", stop_words: Iterable[str] | None = DEFAULT_STOP_WORDS["en"]
) -> dict:
    """The `quality_*` values of one text (a convenience over `document_signals` with default C4 rules)."""
    words = None if stop_words is None else frozenset(w.lower() for w in stop_words)
    return document_signals(text, rule_set, stop_words=words).signals
