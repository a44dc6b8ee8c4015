"""The patterns the rules apply, compiled when first used: WhatsApp placeholders, markers and system lines (from the
phrase tables of `tasks.whatsapp.phrases`), mentions, addresses, links, phone numbers and character classes."""

from __future__ import annotations

import re

from tasks.cleaning.edits import _fold_case
from tasks.cleaning.lines import (
    _LineFilter,
    _LinePattern,
    _lines_ending_with,
    _lines_with_words,
    _WholeMessage,
)
from tasks.cleaning.phrase_regex import (
    _HSPACE,
    _HSPACE_CHARS,
    LazyPattern,
    _any_of,
    _longest_words,
    _phrase_trie,
    _word_trie,
    lazy_compile,
)
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

_FORMAT_CHARS = "\\u00ad\\u061c\\u180e\\u200b\\u200e\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff"
_D = "[0-9]"  # phone numbers and export timestamps use ASCII digits


def _phrases_of(table: dict[str, tuple[str, ...]]) -> list[str]:
    """The phrases of a table of `tasks.whatsapp.phrases`, once each, without the brackets some are written with:
    what the parser recognises is also what cleaning removes."""
    return list(dict.fromkeys(p.strip("<>‹›").strip() for phrases in table.values() for p in phrases))


_MEDIA_PHRASES = _phrases_of(MEDIA_OMITTED)
_DELETED_PHRASES = _phrases_of(DELETED)
_EDITED_PHRASES = _phrases_of(EDITED_MARKERS)


def _bracketed(inside: str) -> LazyPattern:
    """`<…>` or `‹…›` around `inside` (which ends with the closing bracket); see `_remove_bracketed`."""
    return lazy_compile(f"[<‹]{inside}", re.I)


_MEDIA_BRACKETED = _bracketed(rf"{_HSPACE}*{_any_of(_MEDIA_PHRASES)}{_HSPACE}*[>›]")
# the lines that may be a whole-message placeholder or marker
_LINES_ENDING_WITH_A_PLACEHOLDER = _lines_ending_with(_MEDIA_PHRASES + _EDITED_PHRASES + _DELETED_PHRASES)
_MEDIA_BARE = _LineFilter((_WholeMessage(_MEDIA_PHRASES),), _LINES_ENDING_WITH_A_PLACEHOLDER)
_MEDIA_ATTACHED = _bracketed(
    rf"{_HSPACE}*{_any_of(_phrases_of(ATTACHED_LABELS))}{_HSPACE}*:[^<>‹›\n]*[>›]"
)
_FILE_ATTACHED_NOTE = lazy_compile(
    rf"\({_HSPACE}*{_any_of(_phrases_of(FILE_ATTACHED))}{_HSPACE}*\)", re.I
)
# The attachment is the whole message, so after "Name:" (or alone on its line) its name may contain spaces
# ("Max Caulfield.vcf"); elsewhere only a space-free file name counts.
_FILE_ATTACHED = lazy_compile(
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


def _system_event_line() -> LazyPattern:
    """A line that is a system event, after an optional export timestamp. The events that start with a participant
    share one `{who}`, so a line that starts with a name is read once, not once per event (same lines match)."""
    after_who = [_event(e.removeprefix("{who} ")) for e in SYSTEM_EVENTS if e.startswith("{who} ")]
    others = [_event(e) for e in SYSTEM_EVENTS if not e.startswith("{who} ")]
    events = f"{_WHO}{_HSPACE}+(?:{'|'.join(after_who)})|{'|'.join(others)}"
    return lazy_compile(
        rf"^{_HSPACE}*{_EXPORT_TIMESTAMP}?(?={_EVENT_START})(?:{events}){_HSPACE}*\.?{_HSPACE}*(?:\n|\Z)", re.M
    )


_SYSTEM_EVENT = _LinePattern(_system_event_line(), SYSTEM_EVENT_WORDS, whole_line=True)
_ENCRYPTION_NOTICE = _LinePattern(
    lazy_compile(rf"^[^\n]*{_any_of(ENCRYPTION_NOTICES)}[^\n]*(?:\n|\Z)", re.I | re.M),
    _longest_words(ENCRYPTION_NOTICES),
    whole_line=True,
    # a line is such a line when it holds a notice anywhere
    folded=lazy_compile(_phrase_trie(_fold_case(notice) for notice in ENCRYPTION_NOTICES)),
)
_SYSTEM_LINES = _LineFilter(
    (_ENCRYPTION_NOTICE, _SYSTEM_EVENT),
    _lines_with_words(_ENCRYPTION_NOTICE.hint_words + _SYSTEM_EVENT.hint_words),
)

# @mentions: `@Name`, `@+212 6…` (a number), `@⁨Name With Spaces⁩` (WhatsApp wraps names in U+2068…U+2069).
# Format characters (and a stray ZWJ) may sit between @ and the name, since bidi_chars runs later. The character
# before the @ is checked after it (`@(?<!…@)`), so that the regex engine jumps from @ to @.
_MENTION_GAP = f"[{_FORMAT_CHARS}\\u200d]*"
_MENTION = lazy_compile(
    r"@(?<![\w.@+\-/:]@)(?:"
    rf"{_MENTION_GAP}\u2068[^\u2069\n]{{1,80}}\u2069"
    rf"|{_MENTION_GAP}(?:\+{_D}(?:(?:{_HSPACE}+|-)?{_D}){{6,16}}|{_D}{{8,15}}"
    r"|[^\W\d][\w\u0300-\u036f]*(?:[.\-_][\w\u0300-\u036f]+)*)"
    # a name glued to more name characters or to another @ is not a mention but part of some address
    r"(?![\w@]|[.\-_][\w@]))"
)

# An address has no space in it and its look-arounds treat a space like the edge of the text, so it is looked for
# only in the pieces between spaces that hold an @ (see `_pieces_sub`).
_EMAIL = lazy_compile(
    r"(?<![\w.%+\-])(?:mailto:)?[\w][\w.%+\-]*@[\w](?:[\w\-]*[\w])?(?:\.[\w](?:[\w\-]*[\w])?)*\.[^\W\d_]{2,24}"
    r"(?![\w\-@])",
    re.I,
)

# A URL runs to the next space; trailing punctuation belongs to the sentence. Both kinds of link below hold no
# space, so they are looked for in the pieces around `_URL_ANCHOR` and `_TLD_HINT` matches.
_URL_TAIL = r"(?:[^\s<>\"]*[^\s<>\".,;:!?)\]}'»”’…])?"
_URL_SCHEME = lazy_compile(rf"(?i:\b(?:https?|ftp)://|\bwww{_D}{{0,3}}\.)[^\s<>\"]{_URL_TAIL}")
_URL_ANCHOR = lazy_compile("://|w[wW][wW]|W[wW][wW]")  # inside every _URL_SCHEME match
# A bare domain starts with a label after a space or punctuation (not inside a word, an address or a path); the
# cheap `_TLD_HINT` scan (it starts at a dot) tells whether the full pattern needs to run at all.
_TLD_HINT = lazy_compile(rf"\.(?:{_word_trie(LINK_TLDS + LINK_TLDS_WITH_PATH_ONLY)})(?![\w\-])")
_LABELS = r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+"
_BARE_DOMAIN = lazy_compile(
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
_PHONE = lazy_compile(rf"(?<![\w+@/.,\-])(?:{_PHONE_NUMBER})(?![\w@]|[.,]\d)")


def _phone_scan(first: str) -> LazyPattern:
    """`_PHONE`'s matches that start with one of the `first` characters, found from that character (the regex
    engine skips all others): the character before it is checked by a look-behind, then a look-ahead inside a
    one-character look-behind reads the number from that first character on, into the group `phone`. Every
    number's third character is a digit, a separator or "(": checking that first quickly drops times and dates
    ("08:00", "01/05")."""
    return lazy_compile(
        rf"[{first}](?<![\w+@/.,\-].)(?=.[0-9(.\-{_HSPACE_CHARS}])"
        rf"(?<=(?=(?P<phone>(?:{_PHONE_NUMBER})(?![\w@]|[.,]\d))).)"
    )


_PHONE_SCAN = _phone_scan("+(0-9")
# Only a North American number starts with a digit other than 0, and each one holds this; a text without it only
# needs the (much rarer) starts +, ( and 0 looked at.
_NANP_HINTS = tuple(
    (first, lazy_compile(rf"{re.escape(first)}{_HSPACE}*{_D}{{3}}[.\-]{_D}{{4}}")) for first in ").-"
)
_PHONE_SCAN_NOT_NANP = _phone_scan("+(0")
_MIN_PHONE_DIGITS = 8

_CONTROL = lazy_compile(r"[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f]")
_OTHER_LINE_BREAKS = lazy_compile("[\x85\u2028\u2029]")
_LATIN1_CONTROL = lazy_compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # a small character set: a faster scan
_FORMAT = lazy_compile(f"[{_FORMAT_CHARS}]")
_ZWJ_RUN = lazy_compile("\u200d+")
# a joiner that `_keep_joining_zwj` would drop: next to another, or not between two non-ASCII non-space characters
_LOOSE_ZWJ = lazy_compile("\u200d(?:\u200d|(?![^\\x00-\\x7f\\s])|(?<![^\\x00-\\x7f\\s]\u200d))")
# what str.split() splits on (str.isspace()) but the plain space and the line break: tab, no-break space…
_ODD_SPACES = lazy_compile("[\t\x0b\x0c\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
_PLAIN_SPACES = lazy_compile("   *")  # two or more (the pattern starts with a two-space literal: a fast scan)
_MANY_NEWLINES = lazy_compile(r"\n{3,}")
