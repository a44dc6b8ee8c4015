"""Line patterns: several rules remove whole lines (or what follows "Name:" on a line). A line is only tried when
it contains a hint word, and only the lines that a cheap scan of the whole text points at are looked at."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from tasks.cleaning.edits import _apply_edits, _fold_case, _fold_line, _lower, _sub_noting_lines
from tasks.cleaning.phrase_regex import (
    _HSPACE,
    _HSPACE_CHARS,
    LazyPattern,
    _any_of,
    _hint,
    _longest_words,
    _phrase_trie,
    lazy_compile,
)


class _LinePattern:
    """A pattern for single lines, tried only on the lines whose lower-cased text contains one of the hint words.

    `whole_line` says that the pattern starts with `^`, ends with `(?:\\n|\\Z)` and cannot cross a line break: it
    removes the line whole or leaves it, so one `match` at the line's start decides. `folded`, for such a pattern
    with IGNORECASE, is found in exactly the lines it matches once they are case-folded (`_fold_line`), faster.
    """

    def __init__(self, line: LazyPattern, hint_words: Iterable[str], whole_line: bool,
                 folded: LazyPattern | None = None):
        self.line = line
        self.hint_words = tuple(hint_words)
        self.hint = _hint(self.hint_words)
        self.whole_line = whole_line
        self.folded = folded

    def apply(self, line: str, low: str) -> str:
        """The line (with its line break, if it has one, and no "İ") after this pattern; `low` is the line
        lower-cased."""
        if not self.hint.search(low):
            return line
        if self.folded is not None:
            return "" if self.folded.search(_fold_line(low)) else line
        if self.whole_line:
            return "" if self.line.match(line) else line
        return self.line.sub("", line)


class _LineFilter:
    """Applies line patterns, one after the other, to the lines that `find_lines` points at.

    `find_lines(text)` returns positions (ascending) inside every line that one of the patterns could change; it
    may point at more lines. Lines are looked at in the text as it is (the lower-cased text has the same positions,
    except where "İ" is, which lower-cases to two characters: a text with one gets each pattern applied to the whole
    text, when the hint words occur anywhere in it, as this rule always did).
    """

    def __init__(self, patterns: tuple[_LinePattern, ...], find_lines: Callable[[str], list[int]]):
        self.patterns = patterns
        self.find_lines = find_lines

    def sub(self, text: str, changed: set[str] | None = None) -> str:
        if "\u0130" in text:
            for pattern in self.patterns:
                if "\u0130" not in text:
                    text = _LineFilter((pattern,), self.find_lines).sub(text, changed)
                elif pattern.hint.search(text.lower()):
                    text = _sub_noting_lines(pattern.line, "", text, changed)
            return text
        edits = []
        done = 0
        for pos in self.find_lines(text):
            if pos < done:
                continue
            start = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end + 1  # the line with its line break
            done = end
            line = new = text[start:end]
            low = line.lower()
            for pattern in self.patterns:
                applied = pattern.apply(new, low)
                if applied != new:
                    new = applied
                    low = new.lower()
            if new != line:
                edits.append((start, end, new))
        return _apply_edits(text, edits, changed)


def _lines_with_words(words: Iterable[str]) -> Callable[[str], list[int]]:
    """Finds the lines that contain one of the (lower-case) words once lower-cased, in a text without "İ"."""
    pattern = _hint(words)
    return lambda text: [m.start() for m in pattern.finditer(_lower(text))]


def _lines_ending_with(phrases: Iterable[str]) -> Callable[[str], list[int]]:
    """Finds the lines that end with one of the phrases (then perhaps spaces and a full stop), ignoring case as
    IGNORECASE does, in a text without "İ": a scan of the case-folded reversed text, where each line's end comes
    right after a line break. The last text's answer is kept: the media and the deleted-message rules share one
    finder, and the second often gets the same text."""
    pattern = lazy_compile(rf"\n[{_HSPACE_CHARS}.]*(?:{_phrase_trie(_fold_case(p)[::-1] for p in phrases)})")
    last_answer: list[tuple[str, list[int]]] = [("", [])]

    def find(text: str) -> list[int]:
        answer = last_answer[0]
        if answer[0] is not text:
            last = len(text) - 1
            ends = [last - m.start() for m in pattern.finditer("\n" + _fold_case(text)[::-1])]
            answer = last_answer[0] = (text, ends[::-1])
        return answer[1]

    return find


class _WholeMessage(_LinePattern):
    """One of the phrases as a whole message: a line of its own (removed with its line break), or all that
    follows an export's "Name:" or "[date]" on a line."""

    def __init__(self, phrases: list[str]):
        def body(phrases_pattern: str) -> str:
            return rf"{_HSPACE}*{phrases_pattern}{_HSPACE}*\.?{_HSPACE}*"

        whole = body(_any_of(phrases))
        super().__init__(lazy_compile(rf"^{whole}(?:\n|\Z)|(?<=[:\]]){_HSPACE}{whole}$", re.I | re.M),
                         _longest_words(phrases), whole_line=False)
        # The same two ways, for the case-folded line (`_fold_line`), the phrases as a trie: a match ends at the
        # end of the line, and starts at its start or after the first ":" or "]" that can start one, whichever
        # phrase matches. The second pattern starts with that ":" or "]" (the regex engine jumps to those).
        folded = body(f"(?:{_phrase_trie(_fold_case(p) for p in phrases)})")
        self.alone = lazy_compile(rf"{folded}(?:\n|\Z)")
        self.after_name = lazy_compile(rf"[:\]]({_HSPACE}{folded})$", re.M)

    def apply(self, line: str, low: str) -> str:
        if not self.hint.search(low):
            return line
        folded = _fold_line(low)
        if self.alone.match(folded):
            return ""
        if m := self.after_name.search(folded):
            return line[:m.start(1)] + line[m.end():]
        return line
