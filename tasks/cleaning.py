"""Text cleaning rules for the `clean` stage: each rule is a small function that can be switched off.

`clean_text` applies the enabled rules in a fixed order and reports which ones changed the text, so the stage can
put per-rule counts in its manifest. The WhatsApp phrases the rules look for (placeholders, markers and system
lines, in several languages) are data in `tasks.whatsapp.phrases`, shared with the parser; the link top-level
domains are at the top of this module.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from itertools import compress, count
from operator import attrgetter, is_not

from pydantic import BaseModel, ConfigDict

from tasks.whatsapp.phrases import (
    ATTACHED_LABELS,
    DELETED,
    EDITED_MARKERS,
    ENCRYPTION_NOTICES,
    FILE_ATTACHED,
    MEDIA_OMITTED,
    NOT_A_NAME,
    SYSTEM_EVENT_WORDS,
    SYSTEM_EVENTS,
)

# ---------------------------------------------------------------------------------------------------------------
# Link top-level domains.
# ---------------------------------------------------------------------------------------------------------------

# Top-level domains that make a bare `name.tld` a link. Those that are also common words or file extensions
# (it, me, to, in, is, so, de, es, md, py, sh, zip…) only count when a path follows (`example.it/page`).
LINK_TLDS: tuple[str, ...] = (
    "com", "net", "org", "edu", "gov", "mil", "info", "biz", "io", "ai", "dev", "app", "xyz", "online",
    "site", "store", "shop", "blog", "tech", "news", "club", "co", "ly", "tv", "fm", "gg",
    "uk", "fr", "ma", "dz", "tn", "ca", "au", "ru", "cn", "jp", "br", "nl", "ch", "eu", "ie", "nz", "za",
    "mx", "cl", "pt", "dk", "fi", "cz", "gr", "hu", "ro", "tr", "ua", "kr", "sg", "hk", "tw", "ph", "vn", "sa",
    "ae", "eg", "il", "ir", "pk", "ng", "ke", "sn", "cm", "qa", "lu", "ar", "se", "nu", "ws", "cc",
)
LINK_TLDS_WITH_PATH_ONLY: tuple[str, ...] = (
    "it", "me", "to", "in", "is", "at", "be", "us", "no", "so", "my", "am", "do", "es", "de", "id", "la", "ms",
    "md", "py", "sh", "pl", "zip", "mov", "ci", "th", "ps", "rs", "nf", "ag", "gl", "im", "fyi",
)


# ---------------------------------------------------------------------------------------------------------------
# Patterns built from the tables.
# ---------------------------------------------------------------------------------------------------------------

# Every horizontal space the whitespace rule collapses (what str.split() splits on, once control characters are
# gone). Wherever a pattern allows a space it allows a run of these, so collapsing spaces never creates a match
# that was not there before (cleaning stays idempotent).
_HSPACE_CHARS = " \\t\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000"
_HSPACE = f"[{_HSPACE_CHARS}]"
_FORMAT_CHARS = "\\u00ad\\u061c\\u180e\\u200b\\u200e\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff"
_D = "[0-9]"  # phone numbers and export timestamps use ASCII digits


def _phrase(text: str) -> str:
    """A table phrase as a regex: literal, any run of spaces where it has one, either apostrophe."""
    words = [re.escape(w).replace("'", "['’]") for w in text.split()]
    return f"{_HSPACE}+".join(words)


def _any_of(phrases: Iterable[str]) -> str:
    ordered = sorted(set(phrases), key=len, reverse=True)  # longest first, so a phrase wins over its prefix
    return "(?:" + "|".join(_phrase(p) for p in ordered) + ")"


def _phrases_of(table: dict[str, tuple[str, ...]]) -> list[str]:
    """The phrases of a table of `tasks.whatsapp.phrases`, once each, without the brackets some are written with:
    what the parser recognises is also what cleaning removes."""
    return list(dict.fromkeys(p.strip("<>‹›").strip() for phrases in table.values() for p in phrases))


_MEDIA_PHRASES = _phrases_of(MEDIA_OMITTED)
_DELETED_PHRASES = _phrases_of(DELETED)
_EDITED_PHRASES = _phrases_of(EDITED_MARKERS)


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


def _hint(words: Iterable[str]) -> re.Pattern:
    """Finds any of the (lower-case) words; used on the lower-cased text."""
    return re.compile(_rare_letter_trie(w.lower() for w in words))


def _longest_words(phrases: Iterable[str]) -> list[str]:
    """A word each phrase must contain, to use as its hint (not one with an apostrophe, which may be ’ or ')."""
    return [max((w for w in p.split() if "'" not in w), key=len) for p in phrases]


# ---------------------------------------------------------------------------------------------------------------
# Line patterns. Several rules remove whole lines (or what follows "Name:" on a line). A line is only tried when
# it contains a hint word, and only lines that a cheap scan of the whole text points at are looked at.
# ---------------------------------------------------------------------------------------------------------------


class _LinePattern:
    """A pattern for single lines, tried only on the lines whose lower-cased text contains one of the hint words.

    `whole_line` says that the pattern starts with `^`, ends with `(?:\\n|\\Z)` and cannot cross a line break: it
    removes the line whole or leaves it, so one `match` at the line's start decides. `folded`, for such a pattern
    with IGNORECASE, is found in exactly the lines it matches once they are case-folded (`_fold_line`), faster.
    """

    def __init__(self, line: re.Pattern, hint_words: Iterable[str], whole_line: bool,
                 folded: re.Pattern | None = None):
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


def _phrase_trie(phrases: Iterable[str]) -> str:
    """`_word_trie` of the phrases, a run of spaces allowed where a phrase has a space and either apostrophe
    where it has one (as `_phrase` does)."""
    words = (" ".join(p.split()).replace(" ", "\0").replace("'", "\1") for p in phrases)
    return _word_trie(words).replace("\0", f"{_HSPACE}+").replace("\1", "['’]")


def _lines_ending_with(phrases: Iterable[str]) -> Callable[[str], list[int]]:
    """Finds the lines that end with one of the phrases (then perhaps spaces and a full stop), ignoring case as
    IGNORECASE does, in a text without "İ": a scan of the case-folded reversed text, where each line's end comes
    right after a line break. The last text's answer is kept: the media and the deleted-message rules share one
    finder, and the second often gets the same text."""
    pattern = re.compile(rf"\n[{_HSPACE_CHARS}.]*(?:{_phrase_trie(_fold_case(p)[::-1] for p in phrases)})")
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
        super().__init__(re.compile(rf"^{whole}(?:\n|\Z)|(?<=[:\]]){_HSPACE}{whole}$", re.I | re.M),
                         _longest_words(phrases), whole_line=False)
        # The same two ways, for the case-folded line (`_fold_line`), the phrases as a trie: a match ends at the
        # end of the line, and starts at its start or after the first ":" or "]" that can start one, whichever
        # phrase matches. The second pattern starts with that ":" or "]" (the regex engine jumps to those).
        folded = body(f"(?:{_phrase_trie(_fold_case(p) for p in phrases)})")
        self.alone = re.compile(rf"{folded}(?:\n|\Z)")
        self.after_name = re.compile(rf"[:\]]({_HSPACE}{folded})$", re.M)

    def apply(self, line: str, low: str) -> str:
        if not self.hint.search(low):
            return line
        folded = _fold_line(low)
        if self.alone.match(folded):
            return ""
        if m := self.after_name.search(folded):
            return line[:m.start(1)] + line[m.end():]
        return line


def _bracketed(inside: str) -> re.Pattern:
    """`<…>` or `‹…›` around `inside` (which ends with the closing bracket); see `_remove_bracketed`."""
    return re.compile(f"[<‹]{inside}", re.I)


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


_MEDIA_BRACKETED = _bracketed(rf"{_HSPACE}*{_any_of(_MEDIA_PHRASES)}{_HSPACE}*[>›]")
# the lines that may be a whole-message placeholder or marker
_LINES_ENDING_WITH_A_PLACEHOLDER = _lines_ending_with(_MEDIA_PHRASES + _EDITED_PHRASES + _DELETED_PHRASES)
_MEDIA_BARE = _LineFilter((_WholeMessage(_MEDIA_PHRASES),), _LINES_ENDING_WITH_A_PLACEHOLDER)
_MEDIA_ATTACHED = _bracketed(
    rf"{_HSPACE}*{_any_of(_phrases_of(ATTACHED_LABELS))}{_HSPACE}*:[^<>‹›\n]*[>›]"
)
_FILE_ATTACHED_NOTE = re.compile(
    rf"\({_HSPACE}*{_any_of(_phrases_of(FILE_ATTACHED))}{_HSPACE}*\)", re.I
)
# The attachment is the whole message, so after "Name:" (or alone on its line) its name may contain spaces
# ("Max Caulfield.vcf"); elsewhere only a space-free file name counts.
_FILE_ATTACHED = re.compile(
    r"(?:(?:^|(?<=[:\]]))[^\n<>:]{0,120}?|[^\s<>:\"/\\|?*()]+)\.\w{1,5}" + f"{_HSPACE}*{_FILE_ATTACHED_NOTE.pattern}",
    re.I | re.M,
)

_EDITED_BRACKETED = _bracketed(rf"{_HSPACE}*{_any_of(_EDITED_PHRASES)}\.?{_HSPACE}*[>›]")
# edited markers first: "This message was deleted <This message was edited>" is a deleted message
_EDITED_OR_DELETED = _LineFilter(
    (_WholeMessage(_EDITED_PHRASES), _WholeMessage(_DELETED_PHRASES)),
    _LINES_ENDING_WITH_A_PLACEHOLDER,
)

# An export line's timestamp, e.g. "12/24/14, 17:08 - ", "[20.06.19, 15:58:47] ", "06/20/2020, 00:08 a. m. - ".
_EXPORT_TIMESTAMP = (
    rf"(?:\[?{_D}{{1,4}}[./\-]{_D}{{1,2}}[./\-]{_D}{{1,4}},?{_HSPACE}+{_D}{{1,2}}[:.]{_D}{{2}}(?:[:.]{_D}{{2}})?"
    rf"(?:{_HSPACE}*[AaPp]\.?{_HSPACE}*[Mm]\.?)?\]?:?{_HSPACE}*(?:-{_HSPACE}*)?)"
)
# capitals of Latin-1 and of Latin Extended-A (Ş, İ, Ł, Č…: Turkish, Polish, Czech names)
_CAPITAL = "A-ZÀ-ÖØ-Þ" + "".join(c for c in map(chr, range(0x100, 0x180)) if c.isupper())
_NAME = (
    rf"(?:~{_HSPACE}*)?(?:\+{_D}(?:{_HSPACE}|[0-9\-()]){{4,40}}{_D}"
    rf"|(?!(?:{'|'.join(re.escape(w) for w in NOT_A_NAME)})\b)[{_CAPITAL}][\w'’.\-]*"
    rf"(?:{_HSPACE}+(?:[{_CAPITAL}][\w'’.\-]*|[^\w\s:,]+)){{0,3}})"
)
_WHO = rf"(?:You|Vous|{_NAME})"
_ONE_OF_NAMES = rf"(?:you|You|vous|Vous|{_NAME})"
_NAMES = (
    rf"{_ONE_OF_NAMES}(?:(?:,{_HSPACE}*|{_HSPACE}+(?:and|et|y|e|und|en|ve|dan){_HSPACE}+){_ONE_OF_NAMES}){{0,30}}"
)
# a name in Arabic script (words of Arabic letters, "و" between names) or a phone number
_AR_WORD = "[\u0621-\u064a\u066e-\u06d3\u06fa-\u06ff][\u0621-\u065f\u066e-\u06d3\u06fa-\u06ff]*"
_AR_WHO = (
    rf"(?:(?:\+{_D}(?:{_HSPACE}|[0-9\-()]){{4,40}}{_D}|{_AR_WORD})"
    rf"(?:(?:{_HSPACE}+|،{_HSPACE}*)(?:\+{_D}(?:{_HSPACE}|[0-9\-()]){{4,40}}{_D}|{_AR_WORD})){{0,12}})"
)
_QUOTED = r"[\"“«„][^\n\"“”«»]{0,200}[\"”»“]"


def _event(template: str) -> str:
    pattern = template.replace("'s ", "['’]s ").replace(" ", f"{_HSPACE}+")
    pattern = pattern.replace("{who}", _WHO).replace("{names}", _NAMES).replace("{ar_who}", _AR_WHO)
    return pattern.replace("{quoted}", _QUOTED)


# Every event starts with one of these (a participant's name, a number, ~, or a capitalised or Arabic word): the
# look-ahead saves trying all events after each way of reading a timestamp that cannot precede one.
_EVENT_START = f"[~+{_CAPITAL}\u0621-\u064a]"


def _system_event_line() -> re.Pattern:
    """A line that is a system event, after an optional export timestamp. The events that start with a participant
    share one `{who}`, so a line that starts with a name is read once, not once per event (same lines match)."""
    after_who = [_event(e.removeprefix("{who} ")) for e in SYSTEM_EVENTS if e.startswith("{who} ")]
    others = [_event(e) for e in SYSTEM_EVENTS if not e.startswith("{who} ")]
    events = f"{_WHO}{_HSPACE}+(?:{'|'.join(after_who)})|{'|'.join(others)}"
    return re.compile(
        rf"^{_HSPACE}*{_EXPORT_TIMESTAMP}?(?={_EVENT_START})(?:{events}){_HSPACE}*\.?{_HSPACE}*(?:\n|\Z)", re.M
    )


_SYSTEM_EVENT = _LinePattern(_system_event_line(), SYSTEM_EVENT_WORDS, whole_line=True)
_ENCRYPTION_NOTICE = _LinePattern(
    re.compile(rf"^[^\n]*{_any_of(ENCRYPTION_NOTICES)}[^\n]*(?:\n|\Z)", re.I | re.M),
    _longest_words(ENCRYPTION_NOTICES),
    whole_line=True,
    # a line is such a line when it holds a notice anywhere
    folded=re.compile(_phrase_trie(_fold_case(notice) for notice in ENCRYPTION_NOTICES)),
)
_SYSTEM_LINES = _LineFilter(
    (_ENCRYPTION_NOTICE, _SYSTEM_EVENT),
    _lines_with_words(_ENCRYPTION_NOTICE.hint_words + _SYSTEM_EVENT.hint_words),
)

# @mentions: `@Name`, `@+212 6…` (a number), `@⁨Name With Spaces⁩` (WhatsApp wraps names in U+2068…U+2069).
# Format characters (and a stray ZWJ) may sit between @ and the name, since bidi_chars runs later. The character
# before the @ is checked after it (`@(?<!…@)`), so that the regex engine jumps from @ to @.
_MENTION_GAP = f"[{_FORMAT_CHARS}\\u200d]*"
_MENTION = re.compile(
    r"@(?<![\w.@+\-/:]@)(?:"
    rf"{_MENTION_GAP}\u2068[^\u2069\n]{{1,80}}\u2069"
    rf"|{_MENTION_GAP}(?:\+{_D}(?:(?:{_HSPACE}+|-)?{_D}){{6,16}}|{_D}{{8,15}}"
    r"|[^\W\d][\w\u0300-\u036f]*(?:[.\-_][\w\u0300-\u036f]+)*)"
    # a name glued to more name characters or to another @ is not a mention but part of some address
    r"(?![\w@]|[.\-_][\w@]))"
)

# An address has no space in it and its look-arounds treat a space like the edge of the text, so it is looked for
# only in the pieces between spaces that hold an @ (see `_pieces_sub`).
_EMAIL = re.compile(
    r"(?<![\w.%+\-])(?:mailto:)?[\w][\w.%+\-]*@[\w](?:[\w\-]*[\w])?(?:\.[\w](?:[\w\-]*[\w])?)*\.[^\W\d_]{2,24}"
    r"(?![\w\-@])",
    re.I,
)

# A URL runs to the next space; trailing punctuation belongs to the sentence. Both kinds of link below hold no
# space, so they are looked for in the pieces around `_URL_ANCHOR` and `_TLD_HINT` matches.
_URL_TAIL = r"(?:[^\s<>\"]*[^\s<>\".,;:!?)\]}'»”’…])?"
_URL_SCHEME = re.compile(rf"(?i:\b(?:https?|ftp)://|\bwww{_D}{{0,3}}\.)[^\s<>\"]{_URL_TAIL}")
_URL_ANCHOR = re.compile("://|w[wW][wW]|W[wW][wW]")  # inside every _URL_SCHEME match
# A bare domain starts with a label after a space or punctuation (not inside a word, an address or a path); the
# cheap `_TLD_HINT` scan (it starts at a dot) tells whether the full pattern needs to run at all.
_TLD_HINT = re.compile(rf"\.(?:{_word_trie(LINK_TLDS + LINK_TLDS_WITH_PATH_ONLY)})(?![\w\-])")
_LABELS = r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+"
_BARE_DOMAIN = re.compile(
    rf"(?<![\w@.\-/:])"
    rf"(?:{_LABELS}(?:{_word_trie(LINK_TLDS)})(?::{_D}{{2,5}})?(?:/{_URL_TAIL})?"
    rf"|{_LABELS}(?:{_word_trie(LINK_TLDS_WITH_PATH_ONLY)})(?::{_D}{{2,5}})?/{_URL_TAIL})"
    r"(?![\w\-@])"
)

# Phone numbers. International ones start with + or 00; local ones must look like a national plan (a leading 0
# and the usual grouping, or the North American 3-3-4), so years, dates, times, prices and decimals stay.
_PHONE_SEP = rf"(?:{_HSPACE}*[.\-]?{_HSPACE}*)"
_PHONE_NUMBER = (
    # +33 6 12 34 56 78, +1 (555) 013-2847, 0044 20 7946 0958
    rf"(?P<intl>(?:\+|00)[1-9]{_D}{{0,2}}(?:{_PHONE_SEP}(?:\({_D}{{1,4}}\)|{_D}{{1,5}})){{1,7}})"
    # 06 12 34 56 78, 06.12.34.56.78, 0612345678 (one separator throughout)
    rf"|(?P<pairs>0[1-9](?:{_D}{{8}}|(?:\.{_D}{{2}}){{4}}|(?:-{_D}{{2}}){{4}}|(?:{_HSPACE}+{_D}{{2}}){{4}}))"
    # 020 7946 0958, 030 1234567, 0171/1234567
    rf"|(?P<grouped>0{_D}{{2,4}}(?:{_HSPACE}+|-|/){_D}{{3,8}}(?:(?:{_HSPACE}+|-){_D}{{3,4}})?)"
    # (555) 013-2847, 555-013-2847, 1-800-555-0199
    rf"|(?P<nanp>(?:1(?:{_HSPACE}+|[.\-]))?(?:\({_D}{{3}}\){_HSPACE}*|{_D}{{3}}[.\-]){_D}{{3}}[.\-]{_D}{{4}})"
)
_PHONE = re.compile(rf"(?<![\w+@/.,\-])(?:{_PHONE_NUMBER})(?![\w@]|[.,]\d)")


def _phone_scan(first: str) -> re.Pattern:
    """`_PHONE`'s matches that start with one of the `first` characters, found from that character (the regex
    engine skips all others): the character before it is checked by a look-behind, then a look-ahead inside a
    one-character look-behind reads the number from that first character on, into the group `phone`. Every
    number's third character is a digit, a separator or "(": checking that first quickly drops times and dates
    ("08:00", "01/05")."""
    return re.compile(
        rf"[{first}](?<![\w+@/.,\-].)(?=.[0-9(.\-{_HSPACE_CHARS}])"
        rf"(?<=(?=(?P<phone>(?:{_PHONE_NUMBER})(?![\w@]|[.,]\d))).)"
    )


_PHONE_SCAN = _phone_scan("+(0-9")
# Only a North American number starts with a digit other than 0, and each one holds this; a text without it only
# needs the (much rarer) starts +, ( and 0 looked at.
_NANP_HINTS = tuple(
    (first, re.compile(rf"{re.escape(first)}{_HSPACE}*{_D}{{3}}[.\-]{_D}{{4}}")) for first in ").-"
)
_PHONE_SCAN_NOT_NANP = _phone_scan("+(0")
_MIN_PHONE_DIGITS = 8

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f]")
_OTHER_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")
_LATIN1_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # a small character set: a faster scan
_FORMAT = re.compile(f"[{_FORMAT_CHARS}]")
_ZWJ_RUN = re.compile("\u200d+")
# a joiner that `_keep_joining_zwj` would drop: next to another, or not between two non-ASCII non-space characters
_LOOSE_ZWJ = re.compile("\u200d(?:\u200d|(?![^\\x00-\\x7f\\s])|(?<![^\\x00-\\x7f\\s]\u200d))")
# what str.split() splits on (str.isspace()) but the plain space and the line break: tab, no-break space…
_ODD_SPACES = re.compile("[\t\x0b\x0c\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
_PLAIN_SPACES = re.compile("   *")  # two or more (the pattern starts with a two-space literal: a fast scan)
_MANY_NEWLINES = re.compile(r"\n{3,}")


# ---------------------------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------------------------


class CleanRules(BaseModel):
    """Which cleaning rules run. Every rule is on by default."""

    model_config = ConfigDict(extra="forbid")

    control_chars: bool = True
    mentions: bool = True
    bidi_chars: bool = True
    unicode_nfc: bool = True
    system_messages: bool = True
    media_placeholders: bool = True
    deleted_edited_markers: bool = True
    emails: bool = True
    links: bool = True
    phone_numbers: bool = True
    whitespace: bool = True


# Each rule takes a text and returns it cleaned. Given a set `changed`, a rule also adds to it every line that it
# changed (without its line break, as it is after the rule; a line it removed leaves nothing), or more:
# `clean_text` uses that to re-run the rules only on lines that changed. Every rule is line-local: it changes each
# line (or removes it whole) according to that line alone, never joins lines, and treats a line break like the
# edge of the text.


def _rule_control_chars(text: str, changed: set[str] | None = None) -> str:
    """Line breaks of every kind become \\n; other C0/C1 control characters (not tab) go."""
    unusual = _unusual_characters(text)
    if not _LATIN1_CONTROL.search(unusual) and "\u2028" not in unusual and "\u2029" not in unusual:
        return text
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", _OTHER_LINE_BREAKS.sub("\n", text))
    if changed is not None:  # lines may have been split: every line counts as changed
        changed.update(text.split("\n"))
    return text


def _rule_mentions(text: str, changed: set[str] | None = None) -> str:
    return _sub_noting_lines(_MENTION, "", text, changed) if "@" in text else text


def _rule_bidi_chars(text: str, changed: set[str] | None = None) -> str:
    """Direction marks, isolates, BOMs and other invisible format characters go; ZWJ stays inside emoji."""
    present = set(_FORMAT.findall(_unusual_characters(text)))
    if present:  # found with str.find, faster than a regex over the whole text
        cuts = sorted(pos for char in present for pos in _find_all(text, char))
        text = _apply_edits(text, [(pos, pos + 1, "") for pos in cuts], changed)
    if "\u200d" in text and _LOOSE_ZWJ.search(text):
        text = _sub_noting_lines(_ZWJ_RUN, _keep_joining_zwj, text, changed)
    return text


def _keep_joining_zwj(m: re.Match) -> str:
    # A joiner between two non-ASCII characters builds an emoji sequence (👨‍👩‍👧) or an Indic/Arabic form;
    # anywhere else (next to a space, ASCII or the text's edge) it joins nothing.
    text, start, end = m.string, m.start(), m.end()
    if 0 < start and end < len(text) and _joinable(text[start - 1]) and _joinable(text[end]):
        return "\u200d"
    return ""


def _joinable(char: str) -> bool:
    return ord(char) > 0x7F and not char.isspace()


def _rule_unicode_nfc(text: str, changed: set[str] | None = None) -> str:
    if unicodedata.is_normalized("NFC", text):
        return text
    new = unicodedata.normalize("NFC", text)
    if changed is not None:  # a line break never composes with anything, so lines stay where they were
        changed.update(line for old, line in zip(text.split("\n"), new.split("\n"), strict=True) if old != line)
    return new


def _rule_system_messages(text: str, changed: set[str] | None = None) -> str:
    """Whole lines that WhatsApp writes itself: encryption notices, group created, X added Y, X left…"""
    return _SYSTEM_LINES.sub(text, changed)


def _rule_media_placeholders(text: str, changed: set[str] | None = None) -> str:
    if "<" in text or "‹" in text:
        text = _remove_bracketed(_MEDIA_ATTACHED, text, changed)
        text = _remove_bracketed(_MEDIA_BRACKETED, text, changed)
    if "(" in text:
        notes = [m.start() for m in _FILE_ATTACHED_NOTE.finditer(text)]
        if notes:  # an attachment ends with its note and stays on its line
            text = _pieces_sub(text, notes, lambda line: _FILE_ATTACHED.sub("", line), changed, _line_around, True)
    return _MEDIA_BARE.sub(text, changed)


def _rule_deleted_edited_markers(text: str, changed: set[str] | None = None) -> str:
    if "<" in text or "‹" in text:
        text = _remove_bracketed(_EDITED_BRACKETED, text, changed)
    return _EDITED_OR_DELETED.sub(text, changed)


def _rule_emails(text: str, changed: set[str] | None = None) -> str:
    if "@" not in text:
        return text
    return _pieces_sub(text, _find_all(text, "@"), lambda piece: _EMAIL.sub("", piece), changed, _piece_around)


def _rule_links(text: str, changed: set[str] | None = None) -> str:
    return _links(text, _may_hold_url_scheme(text), changed)


def _may_hold_url_scheme(text: str) -> bool:
    # `_URL_SCHEME` (which ignores case) only runs on a text that has one of these somewhere: "Www.x.org" goes
    # only from a text that also has "www", "WWW" or "://" in it.
    return "://" in text or "www" in text or "WWW" in text


def _links(text: str, url_scheme: bool, changed: set[str] | None = None) -> str:
    if url_scheme:
        anchors = [m.start() for m in _URL_ANCHOR.finditer(text)]
        if anchors:
            text = _pieces_sub(text, anchors, lambda piece: _URL_SCHEME.sub("", piece), changed, _piece_around)
    hints = [m.start() for m in _TLD_HINT.finditer(text)]
    if hints:
        text = _pieces_sub(text, hints, lambda piece: _BARE_DOMAIN.sub(_drop_domain, piece), changed, _piece_around)
    return text


def _drop_domain(m: re.Match) -> str:
    # "3.5.co" is not a host name: some label before the top-level domain must have a letter
    host = m.group(0).split("/", 1)[0].split(":", 1)[0]
    return "" if any(c.isalpha() for c in host.rsplit(".", 1)[0]) else m.group(0)


def _rule_phone_numbers(text: str, changed: set[str] | None = None) -> str:
    """`_PHONE.sub(_drop_phone, text)`, from the matches that `_PHONE_SCAN` finds in one pass."""
    edits = []
    scanned = 0
    scan = _PHONE_SCAN
    # Where digits are many (an export's timestamps), it is faster to rule out North American numbers first and
    # then only stop at +, ( and 0; both ways find the same numbers.
    if text.count("1") + text.count("2") > len(text) >> 5 and not any(
        first in text and hint.search(text) for first, hint in _NANP_HINTS
    ):
        scan = _PHONE_SCAN_NOT_NANP
    for m in scan.finditer(text):
        start = m.start()
        if start < scanned:  # inside the previous match: the substitution goes on after a match
            continue
        scanned = m.end("phone")
        if _is_phone(m):
            edits.append((start, scanned, ""))
    return _apply_edits(text, edits, changed, lower_too=False)  # no rule after this one lower-cases


def _is_phone(m: re.Match) -> bool:
    """Whether a `_PHONE` match has the digits of a phone number."""
    if intl := m.group("intl"):
        digits = _count_digits(intl) - (2 if intl.startswith("00") else 0)
        return _MIN_PHONE_DIGITS <= digits <= 15
    if grouped := m.group("grouped"):
        return 10 <= _count_digits(grouped) <= 12
    return True


def _count_digits(number: str) -> int:
    """The digits in a `_PHONE` match (ASCII digits, one byte each in UTF-8)."""
    encoded = number.encode()
    return len(encoded) - len(encoded.translate(None, b"0123456789"))


def _drop_phone(m: re.Match) -> str:
    return "" if _is_phone(m) else m.group(0)


def _rule_whitespace(text: str, changed: set[str] | None = None) -> str:
    """Runs of spaces become one, lines lose their edges, at most one blank line in a row."""
    spaced = _collapse_spaces(text)
    if changed is not None and spaced != text:
        changed.update(line for old, line in zip(text.split("\n"), spaced.split("\n"), strict=True) if old != line)
    return _trim_blank_lines(spaced)


def _collapse_spaces(text: str) -> str:
    """Each line's runs of spaces (of any kind) become one space and its edges go:
    `"\\n".join(" ".join(line.split()) for line in text.split("\\n"))`."""
    if _ODD_SPACES.search(_unusual_characters(text)):
        text = _ODD_SPACES.sub(" ", text)
    if "  " in text:
        text = _PLAIN_SPACES.sub(" ", text)
    if " \n" in text:
        text = text.replace(" \n", "\n")
    if "\n " in text:
        text = text.replace("\n ", "\n")
    if text[:1] == " ":
        text = text[1:]
    if text[-1:] == " ":
        text = text[:-1]
    return text


def _trim_blank_lines(text: str) -> str:
    if "\n\n\n" in text:
        text = _MANY_NEWLINES.sub("\n\n", text)
    return text.strip()


# ---------------------------------------------------------------------------------------------------------------
# Applying a substitution where it can match
# ---------------------------------------------------------------------------------------------------------------


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


# (name, function) in the order they apply; names match the CleanRules fields. Mentions come before bidi_chars
# because WhatsApp's U+2068…U+2069 isolates are what delimit a multi-word name; system lines come before the
# token rules that would eat the names and numbers inside them; emails come before links.
RULES: tuple[tuple[str, Callable[..., str]], ...] = (
    ("control_chars", _rule_control_chars),
    ("mentions", _rule_mentions),
    ("bidi_chars", _rule_bidi_chars),
    ("unicode_nfc", _rule_unicode_nfc),
    ("system_messages", _rule_system_messages),
    ("media_placeholders", _rule_media_placeholders),
    ("deleted_edited_markers", _rule_deleted_edited_markers),
    ("emails", _rule_emails),
    ("links", _rule_links),
    ("phone_numbers", _rule_phone_numbers),
    ("whitespace", _rule_whitespace),
)

# Rules that only normalise characters and spacing; the others remove content.
_NORMALISING_RULES = frozenset({"control_chars", "bidi_chars", "unicode_nfc", "whitespace"})
# Removing one thing can reveal another (a placeholder between the halves of an address, a system line once its
# trailing link is gone), so the rules run again while content rules still fire; this makes cleaning idempotent.
MAX_PASSES = 4

_Step = tuple[str, Callable[..., str], bool]  # (rule name, rule, whether it removes content)
_STEPS: dict[tuple[bool, ...], tuple[_Step, ...]] = {}
_RULE_SWITCHES = attrgetter(*(name for name, _ in RULES))


def _enabled_steps(rules: CleanRules) -> tuple[_Step, ...]:
    switches = _RULE_SWITCHES(rules)
    steps = _STEPS.get(switches)
    if steps is None:
        steps = _STEPS[switches] = tuple(
            (name, rule, name not in _NORMALISING_RULES) for (name, rule), on in zip(RULES, switches, strict=True) if on
        )
    return steps


def clean_text(text: str, rules: CleanRules) -> tuple[str, Counter]:
    """Apply the enabled rules; return the cleaned text and, per rule, 1 if it changed the text.

    A text that a rule empties (nothing but whitespace left) becomes "".

    The rules run in passes until a pass removes nothing (at most `MAX_PASSES`). The first pass runs on the whole
    text. Since every rule is line-local, a line that comes through a whole pass unchanged comes through every
    later pass unchanged, so later passes only run on the lines that the previous pass changed. The result is
    that of `clean_text_plainly`, which runs every pass on the whole text.
    """
    steps = _enabled_steps(rules)
    fired: Counter = Counter()
    changed: set[str] = set()
    text, removed, url_scheme = _first_pass(text, steps, fired, changed)
    if not removed or not text:
        return text, fired
    later = _LaterPasses(steps, url_scheme_was_off=not url_scheme)
    for done in range(1, MAX_PASSES):
        result = later.run(text, changed, fired)
        if result is None:
            return _plain_passes(text, steps, fired, MAX_PASSES - done), fired
        text, removed, changed = result
        if not removed or not text:
            break
    return text, fired


def clean_text_plainly(text: str, rules: CleanRules) -> tuple[str, Counter]:
    """What `clean_text` returns, computed the straightforward way: every pass runs every rule on the whole text."""
    fired: Counter = Counter()
    return _plain_passes(text, _enabled_steps(rules), fired, MAX_PASSES), fired


def _plain_passes(text: str, steps: tuple[_Step, ...], fired: Counter, passes: int) -> str:
    for _ in range(passes):
        removed = False
        for name, rule, removes in steps:
            text, removed_now = _take(name, removes, text, rule(text), fired)
            removed |= removed_now
        if not removed or not text:
            break
    return text


def _take(name: str, removes: bool, text: str, new: str, fired: Counter) -> tuple[str, bool]:
    """The text after rule `name` turned `text` into `new` (noted in `fired` if it changed anything; "" if a
    removing rule left only whitespace), and whether content was removed."""
    if new == text:
        return text, False
    fired[name] = 1
    if removes and not new.strip():
        new = ""
    return new, removes


def _first_pass(text: str, steps: tuple[_Step, ...], fired: Counter, changed: set[str]) -> tuple[str, bool, bool]:
    """The first pass over the whole text: returns the text, whether content was removed and whether
    `_URL_SCHEME` ran (always true without the links rule); `changed` collects the lines the rules changed. Not
    those that only control characters changed: that rule comes first (every other rule has seen these lines as
    they are now) and a second run of it changes nothing."""
    removed = False
    url_scheme = True
    for name, rule, removes in steps:
        if rule is _rule_links:
            url_scheme = _may_hold_url_scheme(text)
            new = _links(text, url_scheme, changed)
        else:
            new = rule(text, None if rule is _rule_control_chars else changed)
        text, removed_now = _take(name, removes, text, new, fired)
        removed |= removed_now
    return text, removed, url_scheme


# Between the lines that a later pass cleans, so that they can be cleaned as one text and told apart again: a
# line of its own that no rule changes.
_SEPARATOR = "\uffff\n"


class _LaterPasses:
    """The passes after the first, run on the lines that the previous pass changed.

    Any other line came through the previous pass unchanged, and since what a pass does to a line depends on that
    line alone, it comes through this one unchanged too. Two things are not decided line by line, and make `run`
    give up (return None; the caller then runs the remaining passes plainly): a text with "İ" (the line patterns
    then apply to the whole text), and a pass where `_URL_SCHEME` runs (the text has "www"…) after a pass where it
    did not, since a line left alone then ("Www.x.org") may not be now. `url_scheme_was_off` says whether a pass
    may have run without it (it is also set when it did not matter to the lines that pass cleaned).
    """

    def __init__(self, steps: tuple[_Step, ...], url_scheme_was_off: bool):
        self.steps = steps
        self.url_scheme_was_off = url_scheme_was_off

    def run(self, text: str, changed: set[str], fired: Counter) -> tuple[str, bool, set[str]] | None:
        """One pass over `text`, whose lines in `changed` the previous pass changed: the new text, whether a rule
        removed content and the lines this pass changed; or None (see above)."""
        if "\u0130" in text or "\uffff" in text:
            return None
        lines = text.split("\n")
        changed.discard("")  # an empty line stays as it is
        dirty = list(compress(count(), map(changed.__contains__, lines)))
        if not dirty:
            return text, False, set()
        last = len(lines) - 1
        before = [lines[i] + "\n" if i != last else lines[i] for i in dirty]
        work = _SEPARATOR.join(before)
        fired_now: list[str] = []
        removed = False
        spaced_from = None
        for name, rule, removes in self.steps:
            if rule is _rule_links:
                # The other lines decide only for a "Www" in these (which _URL_SCHEME removes when it runs). They
                # hold no "www" or "://" if it did not run in the previous pass: they came through it unchanged.
                url_scheme = _may_hold_url_scheme(work)
                if not url_scheme and not self.url_scheme_was_off and _URL_ANCHOR.search(work):
                    url_scheme = _may_hold_url_scheme(_lines_except(lines, dirty))
                if url_scheme and self.url_scheme_was_off:
                    return None
                self.url_scheme_was_off |= not url_scheme
                new = _links(work, url_scheme)
            elif rule is _rule_whitespace:  # last; the whole text's blank lines and edges are trimmed below
                spaced_from = work
                new = _collapse_spaces(work)
            else:
                new = rule(work)
            if new == work:
                continue
            if rule is _rule_unicode_nfc and "\u0130" in new:
                return None
            if rule is not _rule_whitespace:
                fired_now.append(name)
            if removes:
                removed = True
                if not new.replace(_SEPARATOR, "").strip() and not _lines_except(lines, dirty).strip():
                    for fired_name in fired_now:
                        fired[fired_name] = 1
                    return "", True, set()
            work = new
        after = work.split(_SEPARATOR)
        new_text = _replace_lines(lines, dirty, after)
        if new_text is None:
            return None
        if spaced_from is not None:  # what whitespace changed: the dirty lines, or the whole text's blank lines
            trimmed = _trim_blank_lines(new_text)
            if spaced_from != work or trimmed != new_text:
                fired_now.append("whitespace")
            new_text = trimmed
        for fired_name in fired_now:
            fired[fired_name] = 1
        changed_now = set()
        for chunk, new in zip(before, after, strict=True):
            if chunk != new:
                changed_now.update(new.split("\n"))
        return new_text, removed, changed_now


def _lines_except(lines: list[str], indices: list[int]) -> str:
    skip = set(indices)
    return "\n".join(line for i, line in enumerate(lines) if i not in skip)


def _replace_lines(lines: list[str], indices: list[int], chunks: list[str]) -> str | None:
    """The lines joined, those at `indices` (ascending) replaced by `chunks`: each the line cleaned, with its line
    break (the last line has none), or "" for a line removed. None if the chunks do not fit."""
    if len(chunks) != len(indices):
        return None
    out: list[str | None] = lines.copy()
    last = len(lines) - 1
    removed = False
    for i, chunk in zip(indices, chunks, strict=True):
        if i == last:
            out[i] = chunk
        elif chunk[-1:] == "\n":
            out[i] = chunk[:-1]
        elif chunk:
            return None
        else:
            out[i] = None
            removed = True
    return "\n".join(filter(partial(is_not, None), out) if removed else out)
