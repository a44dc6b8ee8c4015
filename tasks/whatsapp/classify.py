"""Deciding what a WhatsApp line is: who wrote it, and whether it is text, media, deleted, edited, system or poll.

The phrases come from `tasks.whatsapp.phrases`; this module only compiles them and applies them in a fixed
order. Two facts about exports drive the rules:
- a line without "Name: " after its timestamp is a system event (group created, member added…);
- iOS marks text that no person typed (attachments, call notices, events it prefixes with the chat name) with
  U+200E right after "Name: ", kept by `headers.normalize_text` as `IOS_MARK`.
"""

from __future__ import annotations

import re
import unicodedata

try:  # the regex parser, to tell which alternatives a first character allows (`_ByFirstChar`)
    from re import _parser as _sre  # Python >= 3.11
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre  # type: ignore[no-redef]

from tasks.whatsapp.headers import INVISIBLE_MARKS, IOS_MARK
from tasks.whatsapp.phrases import (
    DELETED,
    EDITED_MARKERS,
    ENCRYPTION_NOTICES,
    FILE_ATTACHED,
    GROUP_EVENT_PATTERNS,
    LIVE_LOCATION_SHARED,
    MEDIA_OMITTED,
    NOT_A_NAME,
    OMITTED_WORDS,
    OPTION_KEYWORDS,
    PAGES_WORDS,
    POLL_KEYWORDS,
    SYSTEM_EVENTS,
    SYSTEM_PATTERNS,
)

# An author is a contact name or a phone number; longer "names" are system text that happens to hold ": ".
MAX_AUTHOR_CHARS = 80
MAX_AUTHOR_WORDS = 8

_BRACKETS = "<>‹›"
# Invisible characters that make one contact name two: direction marks and isolates (gone from an export's text
# already, see headers.normalize_text, but not from a name typed into a config), the BOM, zero-width space and
# word joiner. ZWNJ and ZWJ go only at a name's ends: inside it Persian, Indic scripts and emoji sequences
# (👨‍👩‍👧) need them.
_NAME_INVISIBLE_RE = re.compile(f"[{INVISIBLE_MARKS}\u200b\u2060]")
_JOINERS = "\u200c\u200d"


def _phrase_key(text: str) -> str:
    """What whole-message phrases are compared on: NFC, case-folded, no brackets, no final full stop."""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    key = text.strip().strip(_BRACKETS).strip().rstrip(".").strip()
    return " ".join(key.casefold().split())


def _all(table: dict[str, tuple[str, ...]]) -> list[str]:
    return [phrase for phrases in table.values() for phrase in phrases]


def _alternation(phrases: list[str]) -> str:
    return "|".join(sorted({re.escape(p) for p in phrases}, key=len, reverse=True))


# a live location is an attachment of its author too, with no text of theirs
_MEDIA_PHRASES = _all(MEDIA_OMITTED) + _all(LIVE_LOCATION_SHARED)
_MEDIA_KEYS = frozenset(_phrase_key(p) for p in _MEDIA_PHRASES)
_DELETED_KEYS = frozenset(_phrase_key(p) for p in _all(DELETED))
# longer first lines cannot be one of those phrases: skip building their key
_MAX_PHRASE_CHARS = max(len(p) for p in _MEDIA_PHRASES + _all(DELETED)) + 8
# A line ending in an ASCII letter, digit or sign other than a bracket or a full stop keeps its end in its key,
# so the end alone can rule a phrase out (see `_ending_flags`); these are the ends the phrases have.
_KEY_TAILS = frozenset(k[-3:] for k in _MEDIA_KEYS | _DELETED_KEYS)
_KEY_LAST_CHARS = frozenset(k[-1] for k in _MEDIA_KEYS | _DELETED_KEYS)
_KEY_TRIMMED = frozenset(_BRACKETS + ".")
_OMITTED_RE = re.compile(rf"(?<!\w)(?:{_alternation(list(OMITTED_WORDS))})(?!\w)", re.IGNORECASE)
# "<attached: 00000001-PHOTO-….jpg>", "<allegato: …>": any short label, then a file name with an extension
_ATTACHED_RE = re.compile(r"[<‹][^<>‹›:]{1,30}:\s*[^<>‹›]*\.[0-9A-Za-z]{1,6}\s*[>›]\s*$")
_FILE_ATTACHED_RE = re.compile(
    rf"^.*\.[0-9A-Za-z]{{1,6}}\s*\((?:{_alternation(_all(FILE_ATTACHED))})\)\s*$", re.IGNORECASE
)
# Android media file names: IMG-20180627-WA0028.jpg, PTT-…opus, STK-…webp
_WA_MEDIA_NAME_RE = re.compile(r"^(?:IMG|VID|AUD|PTT|STK|DOC)-\d{8}-WA\d{3,}(?:\.\w{1,6})?\b")
_PAGES_RE = re.compile(
    rf"\.[0-9A-Za-z]{{1,6}}\s*•\s*\d+\s*(?:{_alternation(list(PAGES_WORDS))})\b", re.IGNORECASE
)
# a bare contact-card file name ("Max Caulfield.vcf"), not a sentence that mentions one
_VCF_RE = re.compile(r"^\S+(?: \S+){0,3}\.vcf$", re.IGNORECASE)
_EDITED_RE = re.compile(rf"\s*[<‹]\s*(?:{_alternation(_all(EDITED_MARKERS))})\.?\s*[>›]\s*$", re.IGNORECASE)
_POLL_RE = re.compile(rf"^(?:{_alternation(_all(POLL_KEYWORDS))})\s?:", re.IGNORECASE)
_OPTION_RE = re.compile(rf"^\s*(?:{_alternation(_all(OPTION_KEYWORDS))})\s?:", re.IGNORECASE | re.MULTILINE)
# What an iOS-marked line (U+200E after "Name: ", text nobody typed) that no table names still shows to be an
# attachment of its author: a bare file name ("IMG_1234.HEIC"), a placeholder in brackets, a shared location.
_BARE_FILE_RE = re.compile(r"^[^\s/\\<>:]{1,120}\.[0-9A-Za-z]{2,5}$")
_BRACKETED_RE = re.compile(r"^[<‹][^<>‹›\n]{1,60}[>›]$")
_LOCATION_RE = re.compile(r"^[^\s:]{1,30}(?: [^\s:]{1,30})?: https?://\S+$")
# A shared location, on either platform and whatever the label's language: "location: https://maps.google.com/
# ?q=45.46,9.19" (Android), "Standort: …", "位置：…", or a venue, "Pimlico Gardens (London): https://foursquare.com/v/…"
_SHARED_LOCATION_RE = re.compile(
    r"^(?:[^:：\n]{1,40}[:：] ?https://maps\.google\.com/\?q=-?\d{1,3}(?:\.\d+)?,-?\d{1,3}(?:\.\d+)?"
    r"|.{1,200}: https://foursquare\.com/v/\w+)$"
)

# System events written after a prefix: iOS writes a group's events under the group's name ("Family: Sam added
# Kim", "Family: Messages and calls are end-to-end encrypted…"), so the prefix is no author. A first line that
# is wholly one of phrases.SYSTEM_EVENTS (the table the clean stage removes whole lines with) or starts with one
# of phrases.ENCRYPTION_NOTICES is a system line whatever the prefix. The templates' placeholders, as the clean
# stage reads them ({who}: You/Vous, a capitalised name of up to four words or a phone number; {names}: a list
# of them; {quoted}: a quoted group name; {ar_who}: a name in Arabic script):
_SP = r"[^\S\n]"
_CAPITAL = "A-ZÀ-ÖØ-Þ" + "".join(c for c in map(chr, range(0x100, 0x180)) if c.isupper())
_PHONE = rf"\+\d(?:{_SP}|[0-9\-()]){{4,40}}\d"
_NAME = (
    rf"(?:~{_SP}*)?(?:{_PHONE}|(?!(?:{'|'.join(re.escape(w) for w in NOT_A_NAME)})\b)[{_CAPITAL}][\w'’.\-]*"
    rf"(?:{_SP}+(?:[{_CAPITAL}][\w'’.\-]*|[^\w\s:,]+)){{0,3}})"
)
_ONE_OF_NAMES = rf"(?:you|You|vous|Vous|{_NAME})"
_EVENT_PLACEHOLDERS = {
    "{who}": rf"(?:You|Vous|{_NAME})",
    "{names}": rf"{_ONE_OF_NAMES}(?:(?:,{_SP}*|{_SP}+(?:and|et|y|e|und|en|ve|dan){_SP}+){_ONE_OF_NAMES}){{0,30}}",
    "{ar_who}": (
        rf"(?:(?:{_PHONE}|[\u0621-\u064a\u066e-\u06d3\u06fa-\u06ff][\u0621-\u065f\u066e-\u06d3\u06fa-\u06ff]*)"
        rf"(?:(?:{_SP}+|،{_SP}*)(?:{_PHONE}|[\u0621-\u064a\u066e-\u06d3\u06fa-\u06ff]"
        rf"[\u0621-\u065f\u066e-\u06d3\u06fa-\u06ff]*)){{0,12}})"
    ),
    "{quoted}": r"[\"“«„][^\n\"“”«»]{0,200}[\"”»“]",
}
_EVENT_END = rf"{_SP}*\.?{_SP}*$"


def _event_pattern(template: str) -> str:
    pattern = template.replace("'s ", "['’]s ").replace(" ", f"{_SP}+")
    for placeholder, regex in _EVENT_PLACEHOLDERS.items():
        pattern = pattern.replace(placeholder, regex)
    return f"(?:{pattern}){_EVENT_END}"


# Events that start with a participant ("Sam added Kim"): tried only on a line whose first word that does not
# start like a name (a lower-case letter) is a word of such an event ("added"), and then only the events holding
# that word, so that an ordinary message pays a split and a set look-up, not a regex.
_NAME_EVENTS = [e for e in SYSTEM_EVENTS if e.startswith(("{who}", "(?:{who}"))]


def _first_words(template: str) -> set[str]:
    """The words, case-folded, that can come first in a template once the names in it are skipped: "{who}
    (?:is|are) …" gives "is" and "are"; "{who},? (?:seni|{names})(?: kişisini)? ekledi" gives "seni",
    "kişisini" and "ekledi" (a name is capitalised, so the first lower-case word of a line is one of these)."""
    s = template.lstrip().removeprefix(",?").lstrip()
    if s.startswith("(?:"):
        depth, cut, alternatives = 0, 3, []
        for i in range(3, len(s)):
            if s[i] == "(":
                depth += 1
            elif s[i] == ")" and depth:
                depth -= 1
            elif s[i] in "|)" and not depth:
                alternatives.append(s[cut:i])
                cut = i + 1
                if s[i] == ")":
                    break
        rest = s[cut:]
        optional = rest.startswith("?")
        rest = rest.removeprefix("?")
        words = set().union(*(_first_words(a + rest) for a in alternatives))
        return words | _first_words(rest) if optional else words
    if s.startswith("{"):  # a name, names or a quoted group name
        return _first_words(s[s.index("}") + 1 :])
    word = re.match(r"(?:[^\W\d_]|\[\w+\])+", s)
    if word is None:
        return set()
    variants = {word.group()}
    for letters in re.findall(r"\[(\w+)\]", word.group()):  # "uscit[oa]": "uscito", "uscita"
        variants = {v.replace(f"[{letters}]", letter, 1) for v in variants for letter in letters}
    return {v.casefold() for v in variants}


_NAME_EVENTS_BY_WORD: dict[str, list[str]] = {}
for _event in _NAME_EVENTS:
    for _word in _first_words(_event):
        _NAME_EVENTS_BY_WORD.setdefault(_word, []).append(_event)
_NAME_EVENT_RES: dict[str, re.Pattern] = {}  # compiled on first use, per word


def _name_event_re(word: str) -> re.Pattern:
    pattern = _NAME_EVENT_RES.get(word)
    if pattern is None:
        events = _NAME_EVENTS_BY_WORD[word]
        # the participant read once for all the events that start with it
        after = [_event_pattern(e.removeprefix("{who}")) for e in events if e.startswith("{who}")]
        others = [_event_pattern(e) for e in events if not e.startswith("{who}")]
        alternatives = [f"{_EVENT_PLACEHOLDERS['{who}']}(?:{'|'.join(after)})"] if after else []
        pattern = _NAME_EVENT_RES[word] = re.compile("|".join(alternatives + others))
    return pattern


_MAX_NAME_WORDS = 6  # "~ Mary Ann Lee Smith" then the event's first word

_SYSTEM_ALTERNATIVES = [p for patterns in SYSTEM_PATTERNS.values() for p in patterns]
# events with a fixed first word ("Missed voice call", Arabic ones, which start with the verb) and the notices
_SYSTEM_ALTERNATIVES += [_event_pattern(e) for e in SYSTEM_EVENTS if e not in _NAME_EVENTS]
_SYSTEM_ALTERNATIVES += [
    f"{_SP}+".join(re.escape(word) for word in notice.split()) for notice in ENCRYPTION_NOTICES
]
_GROUP_EVENT_RE = re.compile(
    "|".join(f"(?:{p})" for patterns in GROUP_EVENT_PATTERNS.values() for p in patterns), re.IGNORECASE
)


def _first_chars(items) -> tuple[set[str], bool] | None:
    """(characters a match of this parsed regex sequence can start with, whether it can match ""), or None
    when that is not simple to tell (a class such as \\w, `.`, a negation)."""
    chars: set[str] = set()
    for op, av in items:
        if op is _sre.AT:  # \b, ^: zero width
            continue
        if op is _sre.LITERAL:
            chars.add(chr(av))
            return chars, False
        if op is _sre.IN:
            for item, value in av:
                if item is _sre.LITERAL:
                    chars.add(chr(value))
                elif item is _sre.RANGE and value[1] - value[0] < 256:
                    chars.update(map(chr, range(value[0], value[1] + 1)))
                else:
                    return None
            return chars, False
        if op is _sre.SUBPATTERN and not av[1] and not av[2]:  # a group without inline flags
            inner = _first_chars(av[-1])
            empty = inner is not None and inner[1]
        elif op is _sre.BRANCH:
            inner = (set(), False)
            for alternative in av[1]:
                one = _first_chars(alternative)
                if one is None:
                    return None
                inner = (inner[0] | one[0], inner[1] or one[1])
            empty = inner[1]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            inner = _first_chars(av[2])
            empty = inner is not None and (av[0] == 0 or inner[1])
        else:
            return None
        if inner is None:
            return None
        chars |= inner[0]
        if not empty:
            return chars, False
    return chars, True


class _ByFirstChar(dict):
    """Maps the first character of a text to the alternation of those `alternatives` whose matches can start
    with it (None when none can; the whole alternation for ""): matching at the start of a text needs no other.

    Worked out on first sight of each character by testing it against each alternative's possible first
    characters with the regex engine itself, so its case rules apply.
    """

    def __init__(self, alternatives: list[str], flags: int) -> None:
        super().__init__()
        self._alternatives = alternatives
        self._flags = flags
        self._starts: list[re.Pattern | None] = []  # None: could start with anything
        for alternative in alternatives:
            first = _first_chars(_sre.parse(alternative, flags))
            if first is None or first[1]:
                self._starts.append(None)
            else:
                chars = "".join(re.escape(c) for c in sorted(first[0]))
                self._starts.append(re.compile(f"[{chars}]", flags))
        self._compiled: dict[tuple[str, ...], re.Pattern] = {}
        self[""] = self._alternation(tuple(alternatives))

    def _alternation(self, chosen: tuple[str, ...]) -> re.Pattern:
        pattern = self._compiled.get(chosen)
        if pattern is None:
            pattern = self._compiled[chosen] = re.compile("|".join(f"(?:{a})" for a in chosen), self._flags)
        return pattern

    def __missing__(self, char: str) -> re.Pattern | None:
        chosen = tuple(
            a
            for a, start in zip(self._alternatives, self._starts, strict=True)
            if start is None or start.match(char)
        )
        pattern = self[char] = self._alternation(chosen) if chosen else None
        return pattern


_SYSTEM_BY_FIRST_CHAR = _ByFirstChar(_SYSTEM_ALTERNATIVES, re.IGNORECASE)


def split_author(rest: str) -> tuple[str | None, str, bool]:
    """Split the text after a timestamp into (author, body, ios_mark); author None for a system line.

    `body` is the whole `rest` for system lines. A leading `~ ` (iOS, for people not in the contacts) and
    surrounding spaces are removed from the author.
    """
    if rest[:1] == IOS_MARK:
        rest = rest[1:]
    prefix, colon, body = rest.partition(": ")
    if not colon:
        stripped = rest.rstrip()
        # "Name:" with the text on the following lines
        if stripped.endswith(":") and ":" not in stripped[:-1]:
            author = _clean_author(stripped[:-1])
            if author is not None:
                return author, "", False
        return None, rest, False
    author = _AUTHORS.get(prefix, _UNSEEN)
    if author is _UNSEEN:
        author = _author_before_colon(prefix)
    if author is None:
        return None, rest, False
    if body[:1] == IOS_MARK:
        return author, body[1:], True
    return author, body, False


# A chat has a handful of authors, written before ": " on every one of its lines: what each prefix means is
# remembered (up to _MAX_AUTHORS prefixes, then forgotten all at once).
_AUTHORS: dict[str, str | None] = {}
_MAX_AUTHORS = 4096
_UNSEEN = object()


def _author_before_colon(prefix: str) -> str | None:
    """The author named by the text before the first ": ", or None when it is a group event or no name."""
    author = None if _GROUP_EVENT_RE.search(prefix) else _clean_author(prefix)
    if len(_AUTHORS) >= _MAX_AUTHORS:
        _AUTHORS.clear()
    _AUTHORS[prefix] = author
    return author


def normalize_author(name: str) -> str:
    """A contact name as the parser writes it and as the person to imitate is matched: NFC (a name typed on
    one phone as "é", on another as "e" + combining accent, is one name), without invisible marks, trimmed."""
    if name.isascii():
        return name.strip()
    name = unicodedata.normalize("NFC", _NAME_INVISIBLE_RE.sub("", name))
    return name.strip().strip(_JOINERS).strip()


def _clean_author(raw: str) -> str | None:
    name = normalize_author(raw)
    if name.startswith("~"):
        name = name[1:].lstrip()
    if not name or len(name) > MAX_AUTHOR_CHARS or name.count(" ") >= MAX_AUTHOR_WORDS:
        return None
    return name


def _first_line(text: str) -> str:
    cut = text.find("\n")
    return (text if cut < 0 else text[:cut]).strip()


# What the last four characters of a (stripped) first line let it be, so that most lines skip the costlier
# tests: _MAY_BE_PHRASE (a whole-message phrase of MEDIA_OMITTED or DELETED), _MAY_BE_FILE (an attachment told by
# its end: "<…>", "(file attached)", ".vcf"). Remembered per ending, up to _MAX_ENDINGS, then forgotten at once.
_MAY_BE_PHRASE, _MAY_BE_FILE = 1, 2
_ENDINGS: dict[str, int] = {}
_MAX_ENDINGS = 1 << 15


def _ending_flags(ending: str) -> int:
    """_MAY_BE_PHRASE | _MAY_BE_FILE as far as `ending` (a line's last four characters, or all of a shorter
    line) tells; also remembered in _ENDINGS."""
    flags = 0
    if ending:
        last = ending[-1]
        if last in ">›)" or ending.lower() == ".vcf":
            flags |= _MAY_BE_FILE
        # A line ending in an ASCII character that the key does not trim (a letter, a digit, a sign) keeps that
        # end in its key, lower-cased: if no phrase key ends that way, the line is no phrase.
        tail = ending[-3:]
        if not last.isascii() or last in _KEY_TRIMMED:
            flags |= _MAY_BE_PHRASE
        elif tail.isascii() and tail.isalpha():
            flags |= _MAY_BE_PHRASE if tail.lower() in _KEY_TAILS else 0
        elif last.lower() in _KEY_LAST_CHARS:
            flags |= _MAY_BE_PHRASE
    if len(_ENDINGS) >= _MAX_ENDINGS:
        _ENDINGS.clear()
    _ENDINGS[ending] = flags
    return flags


def _key(first: str) -> str | None:
    """The phrase key of a (stripped) first line, or None when it cannot be a whole-message phrase."""
    if len(first) > _MAX_PHRASE_CHARS:
        return None
    flags = _ENDINGS.get(first[-4:])
    if flags is None:
        flags = _ending_flags(first[-4:])
    return _phrase_key(first) if flags & _MAY_BE_PHRASE else None


def _is_media(first: str, key: str | None) -> bool:
    return (key is not None and key in _MEDIA_KEYS) or _is_media_file(first)


def _is_media_file(first: str) -> bool:
    """An attachment or placeholder told by its form (brackets, file name) rather than by a known phrase."""
    if not first:
        return False
    last = first[-1]
    if last in ">›":
        if first[0] in "<‹" and len(first) <= 60 and _OMITTED_RE.search(first):
            return True
        if _ATTACHED_RE.search(first):
            return True
    # cheap character tests first: most messages are none of these
    return bool(
        (last == ")" and _FILE_ATTACHED_RE.match(first))
        or (first[3:4] == "-" and _WA_MEDIA_NAME_RE.match(first))
        or ("•" in first and _PAGES_RE.search(first))
        or (len(first) <= 60 and first[-4:].lower() == ".vcf" and _VCF_RE.match(first))
    )


def is_media(text: str) -> bool:
    """True for an attachment or a media placeholder, in any supported language."""
    first = _first_line(text)
    return _is_media(first, _key(first))


def is_deleted(text: str) -> bool:
    """True for "This message was deleted" and its translations."""
    return "\n" not in text and _key(text.strip()) in _DELETED_KEYS


def is_poll(text: str) -> bool:
    """True for a "POLL:" block with at least one "OPTION:" line."""
    if not _POLL_RE.match(text):
        return False
    _, newline, options = text.partition("\n")
    return bool(newline) and _OPTION_RE.search(options) is not None


def is_system_text(text: str) -> bool:
    """True when the text after a name is a system event (encryption notice, missed call, security code…)."""
    return _is_system_line(text.split("\n", 1)[0])


def _is_system_line(first: str) -> bool:
    if len(first) > 400:
        return False
    first = first.strip()
    system = _SYSTEM_BY_FIRST_CHAR[first[:1]]
    return (system is not None and system.match(first) is not None) or _is_name_event(first)


def _is_name_event(first: str) -> bool:
    """Whether a (stripped) first line is wholly an event that starts with a participant ("Sam added Kim")."""
    words = first.split(" ", _MAX_NAME_WORDS)
    for word in words[1:_MAX_NAME_WORDS]:
        if word[:1].islower():  # the first word that cannot be part of a name: the event's first word
            word = word.casefold()
            return word in _NAME_EVENTS_BY_WORD and _name_event_re(word).match(first) is not None
    return False


def _is_unnamed_attachment(first: str) -> bool:
    """An iOS-marked line that no table names but that has the form of an attachment or a placeholder."""
    return len(first) <= 200 and bool(
        _BARE_FILE_RE.match(first)
        or _BRACKETED_RE.match(first)
        or _LOCATION_RE.match(first)
        or _OMITTED_RE.search(first)
    )


def is_attachment(text: str) -> bool:
    """True for an attachment that names its file ("IMG-….jpg (file attached)", "<attached: ….jpg>"): what an
    export made with media holds, where one made without holds placeholders."""
    first = _first_line(text)
    return bool(
        first
        and (
            (first[-1] in ">›" and _ATTACHED_RE.search(first))
            or (first[-1] == ")" and _FILE_ATTACHED_RE.match(first))
            or _WA_MEDIA_NAME_RE.match(first)
            or _BARE_FILE_RE.match(first)
        )
    )


_CLOSING = (">", "›")


def strip_edited_marker(text: str) -> tuple[str, bool]:
    """Remove a trailing "<This message was edited>" (any language); return (text, whether one was there)."""
    if text.rstrip()[-1:] not in _CLOSING:
        return text, False
    m = _EDITED_RE.search(text)
    if m is None:
        return text, False
    return text[: m.start()].rstrip(), True


def classify(author: str | None, body: str, ios_mark: bool) -> tuple[str, str | None, str]:
    """(kind, author, text) of one message; system events lose their author (the name stays in the text).

    Runs once per message: the tests that rule out most messages come first, inline.
    """
    if author is None:
        return "system", None, body
    cut = body.find("\n")
    if cut < 0:
        first_line = body
    else:
        if is_poll(body):  # a poll has option lines
            return "poll", author, body
        first_line = body[:cut]
    first = first_line.strip()
    may_be = _ENDINGS.get(first[-4:])
    if may_be is None:
        may_be = _ending_flags(first[-4:])
    if may_be & _MAY_BE_PHRASE and len(first) <= _MAX_PHRASE_CHARS:
        key = _phrase_key(first)
        if cut < 0 and key in _DELETED_KEYS:
            return "deleted", author, body
        if key in _MEDIA_KEYS:
            return "media", author, body
    # _is_media_file's own tests are for lines ending like a file, "IMG-…" names and "• 3 pages"
    if (may_be & _MAY_BE_FILE or first[3:4] == "-" or "•" in first) and _is_media_file(first):
        return "media", author, body
    if "://" in first and _SHARED_LOCATION_RE.match(first):
        return "media", author, body
    if body.rstrip()[-1:] in _CLOSING:  # what strip_edited_marker needs: most texts fail it
        text, edited = strip_edited_marker(body)
        if edited:
            return "edited", author, text
    # a system event whatever the prefix (a caller's name, a group's name): only the system patterns that can
    # start with this character (None: none can), then the events that start with a name
    system = _SYSTEM_BY_FIRST_CHAR[first[:1]]
    if len(first_line) <= 400 and (
        (system is not None and system.match(first))
        or (cut < 0 and not first[:1].islower() and _is_name_event(first))
    ):
        return "system", None, f"{author}: {body}"
    if ios_mark:
        # iOS marks what nobody typed: attachments (their author's, however seldom that author writes) and events
        if _is_unnamed_attachment(first):
            return "media", author, body
        return "system", None, f"{author}: {body}"
    return "text", author, body
