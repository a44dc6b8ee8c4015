"""The cleaning rules, one function each, and `CleanRules`, the switch of each: `RULES` lists them in the order they
apply, and `_enabled_steps` the steps a set of switches leaves on."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from operator import attrgetter

from pydantic import BaseModel, ConfigDict

from tasks.cleaning.edits import (
    _apply_edits,
    _find_all,
    _line_around,
    _piece_around,
    _pieces_sub,
    _remove_bracketed,
    _sub_noting_lines,
    _unusual_characters,
)
from tasks.cleaning.patterns import (
    _BARE_DOMAIN,
    _CONTROL,
    _EDITED_BRACKETED,
    _EDITED_OR_DELETED,
    _EMAIL,
    _FILE_ATTACHED,
    _FILE_ATTACHED_NOTE,
    _FORMAT,
    _LATIN1_CONTROL,
    _LOOSE_ZWJ,
    _MANY_NEWLINES,
    _MEDIA_ATTACHED,
    _MEDIA_BARE,
    _MEDIA_BRACKETED,
    _MENTION,
    _MIN_PHONE_DIGITS,
    _NANP_HINTS,
    _ODD_SPACES,
    _OTHER_LINE_BREAKS,
    _PHONE_SCAN,
    _PHONE_SCAN_NOT_NANP,
    _PLAIN_SPACES,
    _SYSTEM_LINES,
    _TLD_HINT,
    _URL_ANCHOR,
    _URL_SCHEME,
    _ZWJ_RUN,
)


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
