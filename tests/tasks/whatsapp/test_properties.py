"""Property tests: exports generated in the formats real phones write parse back to the messages they were made of.

Each example picks a locale's format (Android, iOS, iOS without brackets, legacy; day/month, month/day or
year-first dates; 12- or 24-hour clocks…), writes a chat of generated messages in it — authors with emoji, phone
numbers and `~ ` prefixes, multi-line texts with blank lines and colons, the invisible marks and odd spaces
WhatsApp puts where it puts them, BOM and CRLF — then checks that parsing gives back the authors, the timestamps
(to the second when the format has seconds, else to the minute) and the texts. The first message falls on a day
above 12, so the file's own dates tell day from month, as in any chat longer than a couple of weeks.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.records import InputFileError
from tasks.whatsapp import looks_like_whatsapp, parse_whatsapp_export

LRM, RLM, NBSP, NNBSP, FSI, PDI = "\u200e", "\u200f", "\u00a0", "\u202f", "\u2068", "\u2069"
SPANISH_MARKERS = (f"a.{NBSP}m.", f"p.{NBSP}m.")  # "9:05 p. m.", with a no-break space inside
ARABIC_DIGITS = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@dataclass(frozen=True)
class ExportFormat:
    """How one locale on one platform writes a message header."""

    name: str
    layout: str  # "android" ("… - Name: "), "ios" ("[…] Name: "), "ios_no_brackets" ("… Name: "), "legacy" ("…: Name: ")
    order: str  # "dmy", "mdy" or "ymd"
    sep: str  # between date fields
    year_digits: int
    padded: bool  # "05/01" rather than "5/1" (and "09:05" on a 24-hour clock)
    comma: str  # between date and time
    clock12: tuple[str, str] | None  # (am, pm) markers, None on a 24-hour clock
    seconds: bool
    time_sep: str = ":"
    arabic: bool = False  # Arabic-Indic digits, U+200F before the date fields


# What phones write (Android from the locale's short date and time, iOS with seconds and brackets).
FORMATS = [
    ExportFormat("android en_GB", "android", "dmy", "/", 4, True, ", ", None, False),
    ExportFormat("android en_US", "android", "mdy", "/", 2, False, ", ", ("AM", "PM"), False),
    ExportFormat("android en_IN", "android", "dmy", "/", 2, True, ", ", ("am", "pm"), False),
    ExportFormat("android en_CA", "android", "ymd", "-", 4, True, ", ", ("a.m.", "p.m."), False),
    ExportFormat("android es_ES", "android", "dmy", "/", 2, False, ", ", SPANISH_MARKERS, False),
    ExportFormat("android de_DE", "android", "dmy", ".", 2, True, ", ", None, False),
    ExportFormat("android ru_RU", "android", "dmy", ".", 4, True, ", ", None, False),
    ExportFormat("android pt_BR", "android", "dmy", "/", 4, True, " ", None, False),
    ExportFormat("android nl_NL", "android", "dmy", "-", 4, True, " ", None, False),
    ExportFormat("android id_ID", "android", "dmy", "/", 2, True, " ", None, False, time_sep="."),
    ExportFormat("android sv_SE", "android", "ymd", "-", 4, True, " ", None, False),
    ExportFormat("android zh_CN", "android", "ymd", "/", 4, False, " ", None, False),
    ExportFormat("android ar_EG", "android", "dmy", "/", 4, False, "، ", ("ص", "م"), False, arabic=True),
    ExportFormat("android fr_FR (older)", "android", "dmy", "/", 4, True, " à ", None, False),
    ExportFormat("android fi_FI", "android", "dmy", ".", 4, False, " klo ", None, False, time_sep="."),
    ExportFormat("android hu_HU", "android", "ymd", ". ", 4, True, ". ", None, False),
    ExportFormat("ios en_US", "ios", "mdy", "/", 2, False, ", ", ("AM", "PM"), True),
    ExportFormat("ios en_GB", "ios", "dmy", "/", 4, True, ", ", None, True),
    ExportFormat("ios de_DE", "ios", "dmy", ".", 2, True, ", ", None, True),
    ExportFormat("ios fr_FR", "ios", "dmy", "/", 4, True, " ", None, True),
    ExportFormat("ios fi_FI", "ios", "dmy", ".", 4, False, ", ", None, True, time_sep="."),
    ExportFormat("ios ja_JP", "ios", "ymd", "/", 4, True, " ", None, True),
    ExportFormat("ios without brackets", "ios_no_brackets", "dmy", "/", 4, True, ", ", ("AM", "PM"), True),
    ExportFormat("legacy iOS / BlackBerry", "legacy", "dmy", "/", 2, True, ", ", None, True),
]

# Names as contacts are saved: scripts, emoji, initials, phone numbers of people not in the contacts.
NAMES = [
    "Sam", "Priya Raman", "Zoë", "José María", "Jean-Luc", "O'Brien", "Dr. Kim", "Ngozi Okafor", "李雷",
    "Мария", "محمد", "Ana 🌻", "🎸 Leo", "😂", "Kim & Jo", "+44 7700 900123", "+1 (555) 010-9999",
    "+33 6 12 34 56 78",
]  # fmt: skip
# Words of typed messages; the first word of a line never starts with a digit or "[" (such a line could be read
# as the start of a message, in any parser).
WORDS = [
    "hey", "ok", "see", "you", "at", "the", "station", "café", "ça", "va", "über", "Straße", "jalan", "yuk",
    "شكرا", "مرحبا", "你好", "ありがとう", "😂", "👍🏽", "🇫🇷", "note:", "time:", "a:b", "(yes)", "why?",
    "wow!", "#tag", "@Sam", "http://example.com/x?a=1", "e-mail", "...", f"«{NBSP}oui{NBSP}»", "well,",
]  # fmt: skip
INNER_WORDS = WORDS + ["5", "10:30", "3/4", "50%", "2.5", f"10{NNBSP}000"]


@dataclass(frozen=True)
class Message:
    timestamp: datetime
    author: str
    text: str


def _two(n: int, padded: bool) -> str:
    return f"{n:02d}" if padded else str(n)


def header(fmt: ExportFormat, when: datetime, author: str, narrow_space: bool = False) -> str:
    """The start of a message line, as `fmt`'s locale writes it (`narrow_space`: U+202F before AM/PM)."""
    year = f"{when.year % 100:02d}" if fmt.year_digits == 2 else str(when.year)
    fields = {"d": _two(when.day, fmt.padded), "m": _two(when.month, fmt.padded), "y": year}
    if fmt.arabic:  # "‏١٥‏/٣‏/٢٠٢٣": U+200F before the first field and before each separator
        first, second, third = (fields[c] for c in fmt.order)
        date = f"{RLM}{first}{RLM}{fmt.sep}{second}{RLM}{fmt.sep}{third}"
    else:
        date = fmt.sep.join(fields[c] for c in fmt.order)
    if fmt.clock12 is None:
        clock = f"{when.hour:02d}{fmt.time_sep}{when.minute:02d}"
    else:
        clock = f"{when.hour % 12 or 12}{fmt.time_sep}{when.minute:02d}"
    if fmt.seconds:
        clock += f"{fmt.time_sep}{when.second:02d}"
    if fmt.clock12 is not None:
        clock += (NNBSP if narrow_space else " ") + fmt.clock12[when.hour >= 12]
    stamp = f"{date}{fmt.comma}{clock}"
    if fmt.arabic:
        stamp = stamp.translate(ARABIC_DIGITS)
    if fmt.layout == "android":
        return f"{stamp} - {author}: "
    if fmt.layout == "ios":
        return f"[{stamp}] {author}: "
    if fmt.layout == "ios_no_brackets":
        return f"{stamp} {author}: "
    return f"{stamp}: {author}: "


@dataclass(frozen=True)
class Touches:
    """What varies between files of one format: the app version, the phone, the way the file was copied."""

    narrow_space: bool  # U+202F before AM/PM (2023 and later)
    isolates: bool  # Android: U+2068 … U+2069 around names
    tilde_space: str  # iOS: "~ " or "~\u202f" before people not in the contacts
    lrm_lines: frozenset[int]  # iOS lines that start with U+200E
    newline: str  # "\n", "\r\n", or "mixed": "\r\n" after messages, "\n" inside them
    bom: bool
    final_newline: bool


def render(fmt: ExportFormat, messages: list[Message], touches: Touches, strangers: frozenset[str]) -> bytes:
    lines = []
    for i, m in enumerate(messages):
        author = m.author
        if fmt.layout == "ios" and author in strangers:
            author = f"~{touches.tilde_space}{author}"
        if fmt.layout == "android" and touches.isolates:
            author = f"{FSI}{author}{PDI}"
        text = m.text if touches.newline == "mixed" else m.text.replace("\n", touches.newline)
        line = header(fmt, m.timestamp, author, touches.narrow_space) + text
        if fmt.layout == "ios" and i in touches.lrm_lines:
            line = LRM + line
        lines.append(line)
    newline = "\r\n" if touches.newline == "mixed" else touches.newline
    text = newline.join(lines) + (newline if touches.final_newline else "")
    return ("\ufeff" if touches.bom else "").encode() + text.encode("utf-8")


@st.composite
def texts(draw) -> str:
    """A typed message: one to four lines of words, blank lines allowed between them."""
    lines = []
    for i in range(draw(st.integers(1, 4))):
        if i and draw(st.booleans()):
            lines.extend([""] * draw(st.integers(1, 2)))
        first = draw(st.sampled_from(WORDS))
        rest = draw(st.lists(st.sampled_from(INNER_WORDS), max_size=8))
        lines.append(" ".join([first, *rest]))
    return "\n".join(lines)


@st.composite
def chats(draw) -> tuple[ExportFormat, list[Message], Touches, frozenset[str]]:
    fmt = draw(st.sampled_from(FORMATS))
    authors = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    # the first day is above 12; messages follow each other by seconds to days, over at most a few months
    when = datetime(
        draw(st.integers(2015, 2026)),
        draw(st.integers(1, 12)),
        draw(st.integers(13, 28)),
        draw(st.integers(0, 23)),
        draw(st.integers(0, 59)),
        draw(st.integers(0, 59)),
    )
    messages = []
    for _ in range(draw(st.integers(1, 12))):
        messages.append(Message(when, draw(st.sampled_from(authors)), draw(texts())))
        when += timedelta(seconds=draw(st.integers(1, 3 * 24 * 3600)))
    touches = Touches(
        narrow_space=draw(st.booleans()),
        isolates=draw(st.booleans()),
        tilde_space=draw(st.sampled_from([" ", NNBSP])),
        lrm_lines=frozenset(draw(st.lists(st.integers(0, len(messages) - 1), max_size=3))),
        newline=draw(st.sampled_from(["\n", "\r\n", "mixed"])),
        bom=draw(st.booleans()),
        final_newline=draw(st.booleans()),
    )
    strangers = frozenset(draw(st.lists(st.sampled_from(authors), max_size=2)))
    return fmt, messages, touches, strangers


def parse_bytes(data: bytes, **kwargs):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "WhatsApp Chat.txt"
        path.write_bytes(data)
        return parse_whatsapp_export(path, **kwargs), looks_like_whatsapp(path)


def expected_text(text: str) -> str:
    """Odd spaces come out as plain ones (documented in ChatMessage.text)."""
    return text.replace(NBSP, " ").replace(NNBSP, " ")


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chats())
def test_generated_exports_round_trip(chat):
    fmt, messages, touches, strangers = chat
    parsed, recognised = parse_bytes(render(fmt, messages, touches, strangers))
    stamps = [m.timestamp if fmt.seconds else m.timestamp.replace(second=0) for m in messages]

    assert [m.author for m in parsed.messages] == [m.author for m in messages], fmt.name
    assert [m.timestamp for m in parsed.messages] == stamps, fmt.name
    assert [m.text for m in parsed.messages] == [expected_text(m.text) for m in messages], fmt.name
    assert {m.kind for m in parsed.messages} == {"text"}
    assert parsed.stats["date_order"] == fmt.order and not parsed.stats["date_order_ambiguous"], fmt.name
    assert parsed.stats["unattached_lines"] == 0 and parsed.stats["invalid_header_dates"] == 0
    assert recognised


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chats(), st.data())
def test_a_date_order_argument_never_overrides_what_the_dates_say(chat, data):
    fmt, messages, touches, strangers = chat
    # "13/01/15" alone may be 13 January 2015 or 15 January 2013: with two-digit years the argument can decide
    # where the year is, never which of day and month comes first
    requested = data.draw(st.sampled_from(["dmy", "mdy", "ymd"] if fmt.year_digits == 4 else ["dmy", "mdy"]))
    parsed, _ = parse_bytes(render(fmt, messages, touches, strangers), date_order=requested)
    assert parsed.stats["date_order"] == fmt.order
    assert parsed.messages[0].timestamp.replace(second=0) == messages[0].timestamp.replace(second=0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chats(), st.data())
def test_lines_cut_and_shuffled_from_an_export_never_crash_the_parser(chat, data):
    """Any selection of an export's lines, in any order: either a clean error naming the file, or messages."""
    fmt, messages, touches, strangers = chat
    lines = render(fmt, messages, replace(touches, bom=False), strangers).decode().splitlines()
    picked = data.draw(st.lists(st.sampled_from(lines), max_size=12))
    try:
        parsed, _ = parse_bytes("\n".join(picked).encode())
    except InputFileError as e:
        assert "WhatsApp Chat.txt" in str(e)
        return
    assert [m.index for m in parsed.messages] == list(range(len(parsed.messages)))
    assert all(m.timestamp is not None for m in parsed.messages)
