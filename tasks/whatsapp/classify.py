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

from tasks.whatsapp.headers import IOS_MARK
from tasks.whatsapp.phrases import (
    DELETED,
    EDITED_MARKERS,
    FILE_ATTACHED,
    GROUP_EVENT_PATTERNS,
    MEDIA_OMITTED,
    OMITTED_WORDS,
    OPTION_KEYWORDS,
    PAGES_WORDS,
    POLL_KEYWORDS,
    SYSTEM_PATTERNS,
)

# An author is a contact name or a phone number; longer "names" are system text that happens to hold ": ".
MAX_AUTHOR_CHARS = 80
MAX_AUTHOR_WORDS = 8

_BRACKETS = "<>‹›"


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


_MEDIA_KEYS = frozenset(_phrase_key(p) for p in _all(MEDIA_OMITTED))
_DELETED_KEYS = frozenset(_phrase_key(p) for p in _all(DELETED))
# longer first lines cannot be one of those phrases: skip building their key
_MAX_PHRASE_CHARS = max(len(p) for p in _all(MEDIA_OMITTED) + _all(DELETED)) + 8
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
_SYSTEM_RE = re.compile(
    "|".join(f"(?:{p})" for patterns in SYSTEM_PATTERNS.values() for p in patterns), re.IGNORECASE
)
_GROUP_EVENT_RE = re.compile(
    "|".join(f"(?:{p})" for patterns in GROUP_EVENT_PATTERNS.values() for p in patterns), re.IGNORECASE
)


def split_author(rest: str) -> tuple[str | None, str, bool]:
    """Split the text after a timestamp into (author, body, ios_mark); author None for a system line.

    `body` is the whole `rest` for system lines. A leading `~ ` (iOS, for people not in the contacts) and
    surrounding spaces are removed from the author.
    """
    if rest.startswith(IOS_MARK):
        rest = rest[1:]
    cut = rest.find(": ")
    if cut < 0:
        stripped = rest.rstrip()
        # "Name:" with the text on the following lines
        if stripped.endswith(":") and ":" not in stripped[:-1]:
            author = _clean_author(stripped[:-1])
            if author is not None:
                return author, "", False
        return None, rest, False
    if _GROUP_EVENT_RE.search(rest, 0, cut):
        return None, rest, False
    author = _clean_author(rest[:cut])
    if author is None:
        return None, rest, False
    body = rest[cut + 2 :]
    if body.startswith(IOS_MARK):
        return author, body[1:], True
    return author, body, False


def _clean_author(raw: str) -> str | None:
    name = raw.strip()
    if name.startswith("~"):
        name = name[1:].lstrip()
    if not name or len(name) > MAX_AUTHOR_CHARS or name.count(" ") >= MAX_AUTHOR_WORDS:
        return None
    return name


def _first_line(text: str) -> str:
    cut = text.find("\n")
    return (text if cut < 0 else text[:cut]).strip()


def _key(first: str) -> str | None:
    return _phrase_key(first) if len(first) <= _MAX_PHRASE_CHARS else None


def _is_media(first: str, key: str | None) -> bool:
    if not first:
        return False
    if key is not None and key in _MEDIA_KEYS:
        return True
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
    first = text.split("\n", 1)[0]
    return len(first) <= 400 and bool(_SYSTEM_RE.match(first.strip()))


def strip_edited_marker(text: str) -> tuple[str, bool]:
    """Remove a trailing "<This message was edited>" (any language); return (text, whether one was there)."""
    if text.rstrip()[-1:] not in (">", "›"):
        return text, False
    m = _EDITED_RE.search(text)
    if m is None:
        return text, False
    return text[: m.start()].rstrip(), True


def classify(author: str | None, body: str, ios_mark: bool) -> tuple[str, str | None, str]:
    """(kind, author, text) of one message; system events lose their author (the name stays in the text)."""
    if author is None:
        return "system", None, body
    if is_poll(body):
        return "poll", author, body
    first = _first_line(body)
    key = _key(first)
    if key is not None and key in _DELETED_KEYS and "\n" not in body:
        return "deleted", author, body
    if _is_media(first, key):
        return "media", author, body
    text, edited = strip_edited_marker(body)
    if edited:
        return "edited", author, text
    if ios_mark or is_system_text(body):
        return "system", None, f"{author}: {body}"
    return "text", author, body
