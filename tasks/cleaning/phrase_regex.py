"""Regular expressions built from lists of words and phrases: a phrase matches with any run of spaces where it has
one and either apostrophe, and long alternations are factored into tries (by common prefix, or from each word's
rarest letter) because Python's regex engine tries alternatives one by one."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Every horizontal space the whitespace rule collapses (what str.split() splits on, once control characters are
# gone). Wherever a pattern allows a space it allows a run of these, so collapsing spaces never creates a match
# that was not there before (cleaning stays idempotent).
_HSPACE_CHARS = " \\t\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000"
_HSPACE = f"[{_HSPACE_CHARS}]"


class LazyPattern:
    """A regex compiled the first time it is used. The cleaning patterns hold every WhatsApp phrase in 61
    languages and take about 0.9 s to compile: a process that imports the cleaning rules without cleaning (a
    `chatlike` command, a stage worker, a planner) does not pay it. Once compiled, the methods used are plain
    attributes of the object, as fast to call as the compiled pattern's own."""

    _METHODS = ("match", "fullmatch", "search", "sub", "subn", "split", "finditer", "findall", "groups",
                "groupindex", "flags")

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern = pattern
        self._flags = flags

    def compiled(self) -> re.Pattern:
        compiled = re.compile(self.pattern, self._flags)
        for name in self._METHODS:
            setattr(self, name, getattr(compiled, name))
        return compiled

    def __getattr__(self, name: str):  # only for what is not an attribute yet: before the first use
        if name.startswith("__") or name not in self._METHODS:
            raise AttributeError(name)
        return getattr(self.compiled(), name)


def lazy_compile(pattern: str, flags: int = 0) -> LazyPattern:
    return LazyPattern(pattern, flags)


def _phrase(text: str) -> str:
    """A table phrase as a regex: literal, any run of spaces where it has one, either apostrophe."""
    words = [re.escape(w).replace("'", "['’]") for w in text.split()]
    return f"{_HSPACE}+".join(words)


def _any_of(phrases: Iterable[str]) -> str:
    ordered = sorted(set(phrases), key=len, reverse=True)  # longest first, so a phrase wins over its prefix
    return "(?:" + "|".join(_phrase(p) for p in ordered) + ")"


def _word_trie(words: Iterable[str]) -> str:
    """An alternation of literal words factored by common prefixes (`o(?:mis|mitted)`): Python's regex engine
    tries alternatives one by one, so sharing prefixes makes scanning a long text several times faster."""
    words = sorted(set(words))
    if words == [""]:
        return ""
    groups: dict[str, list[str]] = {}
    for w in words:
        groups.setdefault(w[:1], []).append(w[1:])
    branches = []
    for first, rests in groups.items():
        if first == "":
            continue
        inner = _word_trie(rests)
        optional = "" in rests
        if inner and optional:
            branches.append(f"{re.escape(first)}(?:{inner})?")
        elif inner:
            branches.append(f"{re.escape(first)}{inner}" if len(rests) == 1 else f"{re.escape(first)}(?:{inner})")
        else:
            branches.append(re.escape(first))
    return branches[0] if len(branches) == 1 else "|".join(branches)


# Letters from the most to the least frequent (in English, most of the text cleaned); other characters are rarer.
_LETTERS_BY_FREQUENCY = "etaoinshrdlcumwfgypbvkjxqz"


def _rare_letter_trie(words: Iterable[str]) -> str:
    """Finds the same words as `_word_trie`, each from its rarest letter on, the letters before that checked by a
    look-behind (`ft(?<=left)`). The regex engine only stops where a pattern can start; starting at rare letters
    instead of at nearly every letter makes the scan several times faster. A match lies inside the word found."""

    def rarity(char: str) -> int:
        rank = _LETTERS_BY_FREQUENCY.find(char)
        return len(_LETTERS_BY_FREQUENCY) if rank < 0 else rank

    entries = []
    for word in sorted(set(words)):
        cut = max(range(len(word)), key=lambda k: (rarity(word[k]), -k))
        entries.append((word[cut:], word))
    return _suffix_trie(entries)


def _suffix_trie(entries: list[tuple[str, str]]) -> str:
    """An alternation over (what is left to match, whole word), factored by common prefixes; once a word's rest
    has matched, a look-behind checks the whole word (one look-behind for the words of each length)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    ends: dict[int, list[str]] = {}
    for rest, word in entries:
        if rest:
            groups.setdefault(rest[0], []).append((rest[1:], word))
        else:
            ends.setdefault(len(word), []).append(word)
    branches = []
    for first, sub in groups.items():
        inner = _suffix_trie(sub)
        branches.append(re.escape(first) + (f"(?:{inner})" if "|" in inner else inner))
    branches += (f"(?<={_word_trie(words)})" for _, words in sorted(ends.items()))
    return "|".join(branches)


def _hint(words: Iterable[str]) -> LazyPattern:
    """Finds any of the (lower-case) words; used on the lower-cased text."""
    return lazy_compile(_rare_letter_trie(w.lower() for w in words))


def _longest_words(phrases: Iterable[str]) -> list[str]:
    """A word each phrase must contain, to use as its hint (not one with an apostrophe, which may be ’ or ')."""
    return [max((w for w in p.split() if "'" not in w), key=len) for p in phrases]


def _phrase_trie(phrases: Iterable[str]) -> str:
    """`_word_trie` of the phrases, a run of spaces allowed where a phrase has a space and either apostrophe
    where it has one (as `_phrase` does)."""
    words = (" ".join(p.split()).replace(" ", "\0").replace("'", "\1") for p in phrases)
    return _word_trie(words).replace("\0", f"{_HSPACE}+").replace("\1", "['’]")
