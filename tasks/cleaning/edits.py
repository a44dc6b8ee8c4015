"""How a rule changes a text: edits made at known positions (only where a pattern can match), the lines they change
noted for the pass engine, and the views of a text (lower-cased, case-folded, its non-ASCII characters) that the
rules share and that carry over from one rule's text to the next."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# Views of a text that several rules need. Each keeps its last answer, so the next rule asking about the same text
# gets it free, and `_carry_over` moves it to the text that an edit makes.

_PLAIN_ASCII = bytes(range(0x20, 0x7F)) + b"\n"
_LAST_UNUSUAL: list[tuple[str, str]] = [("", "")]


def _unusual_characters(text: str) -> str:
    """The characters of `text` other than printable ASCII and line breaks: for most texts a short string, which
    the character rules scan instead of the whole text. The last text's answer is kept, for the next rule."""
    last = _LAST_UNUSUAL[0]
    if last[0] is not text:
        unusual = text.encode("utf-8", "surrogatepass").translate(None, _PLAIN_ASCII)
        last = _LAST_UNUSUAL[0] = (text, unusual.decode("utf-8", "surrogatepass"))
    return last[1]


_LAST_LOWER: list[tuple[str, str]] = [("", "")]


def _lower(text: str) -> str:
    """`text.lower()`, the last answer kept for the next rule (the system and the placeholder rules need it). It
    may also be carried over from an earlier text (`_carry_over`), then perhaps with σ where `lower` gives ς or the
    other way round: no hint word has either, and case folding makes them one."""
    last = _LAST_LOWER[0]
    if last[0] is not text:
        last = _LAST_LOWER[0] = (text, text.lower())
    return last[1]


def _case_folding() -> dict[int, int]:
    """A `str.translate` table that, after `str.lower`, makes two characters equal exactly when a regex with
    IGNORECASE takes them for one another: it lower-cases both, and also takes ı for i, ſ for s and a few Greek and
    Cyrillic variants for each other (the regex module's own table of those)."""
    try:
        from re._casefix import _EXTRA_CASES as extras  # Python 3.11 and later
    except ImportError:  # pragma: no cover - Python 3.10
        from sre_compile import _ignorecase_fixes as extras
    table: dict[int, int] = {}
    for char, others in extras.items():
        first = min(char, *others, *(table.get(other, other) for other in others))
        for member in (char, *others):
            if member != first:
                table[member] = first
    return table


_CASE_FOLDING = _case_folding()
_FOLDED_CHARACTERS = frozenset(map(chr, _CASE_FOLDING))
_NEEDS_FOLDING = re.compile(f"[{''.join(map(re.escape, sorted(_FOLDED_CHARACTERS)))}]")


def _fold_case(text: str) -> str:
    """`text` case-folded: two characters are the same in it exactly when IGNORECASE matches one with the other
    (for a text without "İ", which lower-cases to two characters; the result has the same length)."""
    low = _lower(text)
    if not _FOLDED_CHARACTERS.isdisjoint(_unusual_characters(text).lower()):
        low = low.translate(_CASE_FOLDING)
    return low


def _fold_line(low: str) -> str:
    """`_fold_case` for a line already lower-cased."""
    return low.translate(_CASE_FOLDING) if _NEEDS_FOLDING.search(low) else low


# Edits: a rule finds where it can change the text, and the changes are made in one join.


def _note_lines(text: str, positions: Iterable[int], changed: set[str]) -> None:
    """Adds the lines of `text` at these positions (ascending) to `changed`."""
    end = -1
    for pos in positions:
        if pos > end:
            start = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            if end < 0:
                end = len(text)
            changed.add(text[start:end])


def _sub_noting_lines(pattern: re.Pattern, repl: str | Callable[[re.Match], str], text: str,
                      changed: set[str] | None) -> str:
    """`pattern.sub(repl, text)` (`repl` a function or a string without escapes), noting the lines it changes."""
    if changed is None:
        return pattern.sub(repl, text)
    edits = []
    for m in pattern.finditer(text):
        new = repl(m) if callable(repl) else repl
        if new != m.group():
            edits.append((m.start(), m.end(), new))
    return _apply_edits(text, edits, changed)


def _apply_edits(text: str, edits: list[tuple[int, int, str]], changed: set[str] | None,
                 lower_too: bool = True) -> str:
    """`text` with each (start, end, replacement) of `edits` (ascending, apart) made, noting the lines changed.
    What `_lower` and `_unusual_characters` know of `text` carries over to the result (see `_carry_over`)."""
    if not edits:
        return text
    pieces = []
    cuts = []
    last = length = 0
    for start, end, new in edits:
        pieces += (text[last:start], new)
        length += start - last
        cuts.append(length)
        length += len(new)
        last = end
    pieces.append(text[last:])
    new_text = "".join(pieces)
    if changed is not None:
        _note_lines(new_text, cuts, changed)
    _carry_over(text, new_text, edits, lower_too)
    return new_text


def _carry_over(text: str, new_text: str, edits: list[tuple[int, int, str]], lower_too: bool = True) -> None:
    """Carries what `_lower` and `_unusual_characters` know of `text` over to `new_text`, which `edits` made: the
    replacements hold no characters but some of `text`'s, and lower-cased slices make the lower-cased result (but
    for a Σ next to an edit, see `_lower`). The lower-cased text only if `lower_too`: not worth it where no later
    rule lower-cases."""
    unusual = _LAST_UNUSUAL[0]
    if unusual[0] is text:
        _LAST_UNUSUAL[0] = (new_text, unusual[1])  # all of its characters, or more
    low = _LAST_LOWER[0]
    if lower_too and low[0] is text and len(low[1]) == len(text):  # not so with "İ"
        lowered = []
        last = 0
        for start, end, new in edits:
            lowered += (low[1][last:start], new.lower())
            last = end
        lowered.append(low[1][last:])
        _LAST_LOWER[0] = (new_text, "".join(lowered))


def _find_all(text: str, needle: str) -> list[int]:
    positions = []
    pos = text.find(needle)
    while pos >= 0:
        positions.append(pos)
        pos = text.find(needle, pos + 1)
    return positions


def _line_around(text: str, pos: int) -> tuple[int, int]:
    """The line at `pos`, with its line break."""
    end = text.find("\n", pos)
    return text.rfind("\n", 0, pos) + 1, len(text) if end < 0 else end + 1


def _piece_around(text: str, pos: int) -> tuple[int, int]:
    """The piece of text at `pos` between spaces or line breaks."""
    space, newline = text.find(" ", pos), text.find("\n", pos)
    end = min(space if space >= 0 else len(text), newline if newline >= 0 else len(text))
    return max(text.rfind(" ", 0, pos), text.rfind("\n", 0, pos)) + 1, end


def _pieces_sub(text: str, anchors: list[int], replace: Callable[[str], str], changed: set[str] | None,
                around: Callable[[str, int], tuple[int, int]], lower_too: bool = False) -> str:
    """`replace` applied to the pieces of `text` (lines, or pieces between spaces) around the anchor positions
    (ascending), the rest left as it is. The same as applying it to the whole text when each of its matches lies
    inside one piece and holds an anchor, and its look-arounds see the piece's edges (a space, a line break) like
    the edges of the text. `lower_too`: see `_carry_over`."""
    edits = []
    done = 0
    for pos in anchors:
        if pos < done:
            continue
        start, done = around(text, pos)
        piece = text[start:done]
        new = replace(piece)
        if new != piece:
            edits.append((start, done, new))
    return _apply_edits(text, edits, changed, lower_too)


def _remove_bracketed(pattern: re.Pattern, text: str, changed: set[str] | None) -> str:
    """`pattern.sub("", text)` for a `_bracketed` pattern, tried only where a < or ‹ is (found with str.find, much
    faster than the regex engine's own scan), in order, as the substitution would."""
    starts = _find_all(text, "<")
    if "‹" in text:
        starts = sorted(starts + _find_all(text, "‹"))
    edits = []
    done = 0
    for start in starts:
        if start >= done and (m := pattern.match(text, start)):
            done = m.end()
            edits.append((start, done, ""))
    return _apply_edits(text, edits, changed)
