"""Recognising the line that starts a WhatsApp message, and turning its date and time into a datetime.

An export line that starts a message looks like one of
    31/12/2023, 21:05 - Name: text               Android
    [31.12.23, 21:05:10] Name: text              iOS
    31/12/2023, 9:05:10 PM Name: text            iOS without brackets
    31/12/23, 21:05:10: Name: text               legacy (old iOS / BlackBerry era)
    [21:05:10, 31/12/23] Name: text              time first (Vietnamese iOS; see `put_date_first`)
    26/09/2019 à 22:39 - Name: text              a localised word between date and time (French, Finnish)
    2023. 03. 15. 22:30 - Name: text             ". " between date fields (Hungarian, Korean)
with any of `/ . -` (or ". ") between date fields, day/month, month/day or year-first order, 2- or 4-digit
years, 12- or 24-hour clocks (with localised AM/PM markers), seconds or not, `:` or `.` in the time, and
Arabic-Indic or Persian digits. One regular expression reads all of them, in one pass over the whole text (`scan_headers`);
which field is the day is decided afterwards for the whole file (`decide_date_orders`), because a single line
such as `03/04/21` cannot tell.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache

from tasks.whatsapp.phrases import DATE_TIME_WORDS, MERIDIEM_PREFIXES, MERIDIEM_SUFFIXES, YEAR_SUFFIXES

# Invisible direction marks WhatsApp scatters through exports (U+200E before attachments and system events on
# iOS, U+200F and U+061C in Arabic, U+2068/U+2069 around names in recent Android exports, a stray BOM).
INVISIBLE_MARKS = "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
# Spaces that are not U+0020: NBSP (inside "p. m."), narrow NBSP (before AM/PM since 2023), figure/thin space.
ODD_SPACES = "\u00a0\u202f\u2007\u2009"
# iOS writes U+200E right after "Name: " (or "] ") when the text is not something a person typed: an
# attachment or a system event. We keep that signal through normalisation as this control character.
IOS_MARK = "\x01"

_INVISIBLE_RE = re.compile(f"[{INVISIBLE_MARKS}]")
_ODD_SPACE_RE = re.compile(f"[{ODD_SPACES}]")
_TO_NORMALIZE_RE = re.compile(f"[{INVISIBLE_MARKS}{ODD_SPACES}{IOS_MARK}]")
_IOS_MARK_AFTER = (": \u200e", "] \u200e")

DATE_ORDERS = ("dmy", "mdy", "ymd", "ydm")
_ORDER_ALIASES = {
    "dmy": "dmy",
    "day_first": "dmy",
    "day-first": "dmy",
    "dayfirst": "dmy",
    "mdy": "mdy",
    "month_first": "mdy",
    "month-first": "mdy",
    "monthfirst": "mdy",
    "ymd": "ymd",
    "year_first": "ymd",
    "year-first": "ymd",
    "ydm": "ydm",
}
_SWAPPED = {"dmy": "mdy", "mdy": "dmy", "ymd": "ydm", "ydm": "ymd"}


# "@⁨Kim Lee⁩": Android wraps a mentioned name in U+2068…U+2069, the only thing that tells where a name of
# several words ends. Those two isolates are kept (the clean stage's mention rule reads them); an isolate
# anywhere else goes with the other marks.
_MENTION_RE = re.compile("@\u2068([^\u2068\u2069\n]{1,80})\u2069")
_MENTION_OPEN, _MENTION_CLOSE = "\x02", "\x03"  # stand-ins while the other marks are removed


def normalize_text(text: str) -> str:
    """Remove invisible direction marks and turn odd spaces into U+0020, keeping the iOS U+200E signal and the
    isolates around @mentioned names."""
    if _TO_NORMALIZE_RE.search(text) is None:  # one pass over a text that has none
        return text
    if IOS_MARK in text:
        text = text.replace(IOS_MARK, "")
    if "\u200e" in text:
        for before in _IOS_MARK_AFTER:
            text = text.replace(before, before[:-1] + IOS_MARK)
    mentions = "@\u2068" in text
    if mentions:
        text = text.replace(_MENTION_OPEN, "").replace(_MENTION_CLOSE, "")
        text = _MENTION_RE.sub(f"@{_MENTION_OPEN}\\1{_MENTION_CLOSE}", text)
    text = _INVISIBLE_RE.sub("", text)
    if mentions:
        text = text.replace(_MENTION_OPEN, "\u2068").replace(_MENTION_CLOSE, "\u2069")
    return _ODD_SPACE_RE.sub(" ", text)


def normalize_date_order(date_order: str | None) -> str | None:
    """'dmy', 'mdy', 'ymd' or 'ydm' (aliases such as 'day_first'), or None; ValueError otherwise."""
    if date_order is None:
        return None
    key = date_order.strip().lower()
    if key not in _ORDER_ALIASES:
        raise ValueError(
            f"date_order must be one of {', '.join(DATE_ORDERS)} (or day_first / month_first), got {date_order!r}"
        )
    return _ORDER_ALIASES[key]


# Whitespace that stays on one line: HEADER_RE also scans whole texts, where `\s` would run into the next line.
_SP = r"[^\S\n]"


def _meridiem_alternation(table: dict[str, tuple[str, ...]]) -> str:
    tokens = sorted({t for tokens in table.values() for t in tokens}, key=len, reverse=True)
    # dots optional and spaces flexible, so "ق.ظ." also matches "ق.ظ" and "π.μ." matches "π. μ."
    return "|".join(re.escape(t).replace(r"\.", r"\.?").replace(r"\ ", f"{_SP}?") for t in tokens)


def _meridiem_starts(table: dict[str, tuple[str, ...]], also: str = "") -> str:
    """A class of the characters the markers of `table` (and `also`) start with: a look at the next character
    spares most headers, which have no marker, the try of every one."""
    chars = {t[0] for tokens in table.values() for t in tokens} | set(also)
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


_MERIDIEM_LOOKUP = {
    re.sub(r"[.\s]", "", t).lower(): half
    for table in (MERIDIEM_SUFFIXES, MERIDIEM_PREFIXES)
    for half, tokens in table.items()
    for t in tokens
}

# The start of a message: finds every header of a whole text at once (`finditer`, `^` at each line start), or
# reads one line (`match`).
HEADER_RE = re.compile(
    rf"""
    ^(?P<open>\[)?
    (?P<date>(?P<d1>\d{{1,4}})(?P<sep>[/.\-]|\.\x20)(?P<d2>\d{{1,2}})(?P=sep)(?P<d3>\d{{1,4}}))
    (?:\.|{_SP}(?:{"|".join(map(re.escape, YEAR_SUFFIXES))}))?
    (?P<joint>{_SP}*[,،]{_SP}*|{_SP}+(?:(?:{"|".join(map(re.escape, DATE_TIME_WORDS))}){_SP}+)?)
    (?P<time>
        (?:(?={_meridiem_starts(MERIDIEM_PREFIXES)})(?P<pre>{_meridiem_alternation(MERIDIEM_PREFIXES)}){_SP}?)?
        (?P<H>\d{{1,2}})(?P<tsep>[:.])(?P<M>\d{{2}})
    )
    (?:(?P=tsep)(?P<S>\d{{2}}))?
    (?P<tail>
        (?P<tdot>\.(?!\d))?
        (?:(?={_SP}?{_meridiem_starts(MERIDIEM_SUFFIXES, "AaPp")})
            {_SP}?(?P<ampm>[AaPp]\.?{_SP}?[Mm]\.?|{_meridiem_alternation(MERIDIEM_SUFFIXES)})(?!\w))?
    )
    (?P<end>(?(open)
        \]{_SP}?
      | (?: {_SP}*[-–]{_SP}                                     # Android: " - "
          | :{_SP}                                              # legacy: ": "
          | {_SP}(?=[^\s:\[][^:\n]{{0,100}}?:{_SP}) )           # iOS without brackets: a name and ": "
    ))
    (?P<rest>[^\n]*)
    """,
    re.VERBOSE | re.MULTILINE,
)

LAYOUTS = ("android", "ios", "ios_no_brackets", "legacy")

# Vietnamese iOS writes the time before the date: "[21:41:35, 27/3/22] Name: text". `put_date_first` turns such
# headers around in place (same length, so positions hold), and HEADER_RE reads them as any other.
_TIME_FIRST_RE = re.compile(
    rf"""
    ^(?P<open>\[?)
    (?P<time>\d{{1,2}}[:.]\d{{2}}(?:[:.]\d{{2}})?
        (?:{_SP}?(?:[AaPp]\.?{_SP}?[Mm]\.?|{_meridiem_alternation(MERIDIEM_SUFFIXES)}))?)
    (?P<joint>,{_SP}*|{_SP}+)
    (?P<date>\d{{1,4}}[/.\-]\d{{1,2}}[/.\-]\d{{1,4}})
    (?=(?(open)\]|{_SP}*[-–]{_SP}))
    """,
    re.VERBOSE | re.MULTILINE,
)
_TIME_FIRST_HEAD = 64 * 1024  # how much of a text tells whether its headers put the time first


def put_date_first(text: str) -> str:
    """`text` with time-first headers written date first, when most headers at its start put the time first;
    else `text` itself."""
    head = text[:_TIME_FIRST_HEAD]
    time_first = sum(1 for _ in _TIME_FIRST_RE.finditer(head))
    if not time_first or time_first <= sum(1 for _ in HEADER_RE.finditer(head)):
        return text
    return _TIME_FIRST_RE.sub(r"\g<open>\g<date>\g<joint>\g<time>", text)


@dataclass(frozen=True, slots=True, eq=False)
class HeaderShape:
    """How a header is written, minus the field values: what `stats['header_formats']` counts.

    Shapes are interned (one object per distinct shape), so identity is equality and hashing is cheap on the
    per-message path.
    """

    layout: str  # one of LAYOUTS
    sep: str  # between date fields
    year_pos: str  # "first" (4 digits first), "last" (4 digits last) or "short" (all fields ≤ 2 digits)
    year_digits: int
    comma: bool
    connector: str  # a word between date and time ("à"), or ""
    clock12: bool
    seconds: bool
    time_sep: str
    time_dot: bool
    # the 12-hour marker is written "AM"/"PM" (capitals, no dots), as in the United States
    capital_ampm: bool = False
    # lines sharing layout, separator and year position share one date order
    group: tuple[str, str, str] = ("", "", "")

    def __post_init__(self) -> None:
        object.__setattr__(self, "group", (self.layout, self.sep, self.year_pos))

    def describe(self, order: str) -> str:
        """A readable pattern such as "[dd.MM.yy, HH:mm:ss] Name: text"."""
        year = "yyyy" if self.year_digits == 4 else "yy"
        fields = {"d": "dd", "m": "MM", "y": year}
        date_part = self.sep.join(fields[c] for c in order)
        hour = "h" if self.clock12 else "HH"
        time_part = f"{hour}{self.time_sep}mm" + (f"{self.time_sep}ss" if self.seconds else "")
        time_part += ("." if self.time_dot else "") + (" a" if self.clock12 else "")
        joint = "," if self.comma else ""
        joint += f" {self.connector}" if self.connector else ""
        stamp = f"{date_part}{joint} {time_part}"
        if self.layout == "ios":
            return f"[{stamp}] Name: text"
        if self.layout == "legacy":
            return f"{stamp}: Name: text"
        if self.layout == "ios_no_brackets":
            return f"{stamp} Name: text"
        return f"{stamp} - Name: text"


@dataclass(slots=True)
class Header:
    """The parsed start of a message: date fields still in file order, time already on a 24-hour clock."""

    shape: HeaderShape
    a: int
    b: int
    c: int
    hour: int
    minute: int
    second: int
    rest: str


# group numbers, for reading several groups of a match in one call
_DATE, _D1, _SEP, _D2, _D3, _JOINT, _TIME, _PRE, _H, _TSEP, _M, _S, _TAIL, _TDOT, _AMPM, _END, _REST = (
    HEADER_RE.groupindex[name]
    for name in "date d1 sep d2 d3 joint time pre H tsep M S tail tdot ampm end rest".split()
)
_SHAPES: dict[tuple, HeaderShape] = {}


def _shape(key: tuple) -> HeaderShape:
    shape = _SHAPES.get(key)
    if shape is None:
        layout, sep, year_pos, joint, clock, seconds, time_sep, time_dot = key
        shape = _SHAPES[key] = HeaderShape(
            layout,
            sep,
            year_pos,
            2 if year_pos == "short" else 4,
            "," in joint or "،" in joint,
            joint.strip(" ,،"),
            clock != "24h",
            seconds,
            time_sep,
            time_dot,
            clock == "AM/PM",
        )
    return shape


# What a date or a clock adds to a header's shape, as one string each ("/last", "12h:."), because the scan
# looks its shapes up by them once per header and a string keeps its hash. Clocks are "24h", "12h", or "AM/PM"
# (a 12-hour clock with the marker in capitals).
_DATE_KINDS = {(sep, pos): sep + pos for sep in ("/", ".", "-", ". ") for pos in ("first", "last", "short")}
_DATE_KIND_PARTS = {kind: parts for parts, kind in _DATE_KINDS.items()}
_CLOCK_KINDS = {
    (clock, sep, dot): f"{clock}{sep}{'.' if dot else ''}"
    for clock in ("24h", "12h", "AM/PM")
    for sep in ":."
    for dot in (False, True)
}
_CLOCK_KIND_PARTS = {kind: parts for parts, kind in _CLOCK_KINDS.items()}


def _read_date(d1: str, sep: str, d2: str, d3: str) -> tuple[tuple[int, int, int], str] | None:
    """((a, b, c) in file order, its kind in _DATE_KINDS); None when the field widths fit no date."""
    l1, l3 = len(d1), len(d3)
    if l1 == 4:
        if l3 > 2:
            return None
        year_pos = "first"
    elif l3 == 4:
        if l1 > 2:
            return None
        year_pos = "last"
    elif l1 == 3 or l3 == 3:
        return None
    else:
        year_pos = "short"
    return (int(d1), int(d2), int(d3)), _DATE_KINDS[sep, year_pos]


@lru_cache(maxsize=256)
def _meridiem_half(ampm: str) -> str | None:
    """"am", "pm", "night" or None for a 12-hour marker (once per spelling: a header of every message has one).
    The table first: "PG" (Malay) and "p.d." (Albanian) are morning markers."""
    half = _MERIDIEM_LOOKUP.get(re.sub(r"[.\s]", "", ampm).lower())
    if half is None and ampm[0] in "AaPp":
        half = "am" if ampm[0] in "Aa" else "pm"
    return half


def _read_clock(
    pre: str | None, hh: str, tsep: str, mm: str, tdot: str | None, ampm: str | None
) -> tuple[str, int, int] | None:
    """(its kind in _CLOCK_KINDS, hour on a 24-hour clock, minute) of a time without its seconds; None when it
    is no time of day."""
    hour, minute = int(hh), int(mm)
    half = None
    ampm = ampm or pre
    if ampm:
        half = _meridiem_half(ampm)
        if half == "night":  # "10:30 at night" is 22:30, "2:00 at night" 02:00
            half = "pm" if 6 <= hour < 12 else "am"
        if half is not None and 1 <= hour <= 12:
            if half == "pm" and hour < 12:
                hour += 12
            elif half == "am" and hour == 12:
                hour = 0
    if hour > 23 or minute > 59:
        return None
    clock = "24h" if half is None else "AM/PM" if ampm in ("AM", "PM") else "12h"
    return _CLOCK_KINDS[clock, tsep, tdot is not None], hour, minute


def _layout(end: str) -> str:
    """The layout told by what comes between the time and the name (HEADER_RE's `end` group)."""
    if end[0] == "]":
        return "ios"
    if end[0] == ":":
        return "legacy"
    return "android" if end.strip() else "ios_no_brackets"


@dataclass
class DateEvidence:
    """What one header group's dates say about their order: distinct (a, b, c) fields, and how often the
    first and the last field change from one message to the next (the year is the field that changes least)."""

    dates: set[tuple[int, int, int]] = field(default_factory=set)
    first_changes: int = 0
    last_changes: int = 0
    _previous: tuple[int, int, int] | None = None

    def add(self, a: int, b: int, c: int) -> None:
        previous = self._previous
        if previous is not None:
            self.first_changes += previous[0] != a
            self.last_changes += previous[2] != c
        self._previous = (a, b, c)
        self.dates.add((a, b, c))


# (start, end, rest, shape number, (a, b, c), (hour, minute, second)): text[start:end] is the header line,
# text[rest:end] what follows its timestamp, (a, b, c) the date fields in file order. Only numbers, so the
# garbage collector stops tracking the tuple after its first look (it never forgets a dataclass instance), and
# no copy of the line: an export has millions of headers, all held until the date order is decided.
HeaderEntry = tuple[int, int, int, int, tuple[int, int, int], tuple[int, int, int]]


@dataclass
class HeaderScan:
    """The message headers of a text, in order, the shapes they are written in (`entries[i][3]` is an index
    into `shapes`), and what the dates of each group of shapes say about their order."""

    entries: list[HeaderEntry]
    shapes: list[HeaderShape]
    evidence: dict[tuple[str, str, str], DateEvidence]


_NOT_A_TIME = object()  # a clock reading that no time of day has
_SECONDS = {f"{second:02d}": second for second in range(60)}


def scan_headers(text: str, pos: int = 0) -> HeaderScan:
    """Every line of `text` from `pos` (a line start) on that starts a message, in order.

    One regex pass over the whole text, so lines that continue a message cost nothing here. Dates and times
    are read once per distinct string: an export has a few thousand distinct dates and clock readings, but
    can have millions of headers. Equal-valued fields are the same tuple object.
    """
    dates: dict[str, tuple | None] = {}
    # a clock reading without its seconds (or the cache would hold every second of the day): (kind, hour,
    # minute, (hour, minute, 0)), or _NOT_A_TIME
    clocks: dict[str | tuple[str, str], tuple | object] = {}
    shape_numbers: dict[tuple, int] = {}
    shapes: list[HeaderShape] = []
    evidence: dict[tuple[str, str, str], DateEvidence] = {}
    evidence_of: list[DateEvidence] = []  # by shape number
    last_fields, last_number = None, -1
    entries: list[HeaderEntry] = []
    append = entries.append
    for m in HEADER_RE.finditer(text, pos):
        date_s, joint, time_s, ss, tail, end = m.group(_DATE, _JOINT, _TIME, _S, _TAIL, _END)
        date = dates.get(date_s, False)
        if date is False:
            date = dates[date_s] = _read_date(*m.group(_D1, _SEP, _D2, _D3))
        if date is None:
            continue
        clock_key = (time_s, tail) if tail else time_s
        clock = clocks.get(clock_key)
        if clock is None:
            read = _read_clock(*m.group(_PRE, _H, _TSEP, _M, _TDOT, _AMPM))
            clock = clocks[clock_key] = (*read, (read[1], read[2], 0)) if read else _NOT_A_TIME
        if clock is _NOT_A_TIME:
            continue
        fields, date_kind = date
        clock_kind, hour, minute, on_the_minute = clock
        if ss is None:
            hms = on_the_minute
        else:
            second = _SECONDS.get(ss)
            if second is None:  # not written with two ASCII digits, or above 59
                second = int(ss)
                if second > 59:
                    continue
            hms = (hour, minute, second)
        key = (joint, end, date_kind, clock_kind, ss is None)
        number = shape_numbers.get(key)
        if number is None:
            sep, year_pos = _DATE_KIND_PARTS[date_kind]
            clock, time_sep, time_dot = _CLOCK_KIND_PARTS[clock_kind]
            layout = _layout(end)
            shape = _shape(
                (layout, sep, year_pos, " ".join(joint.split()), clock, ss is not None, time_sep, time_dot)
            )
            if shape not in shapes:
                shapes.append(shape)
                evidence_of.append(evidence.setdefault(shape.group, DateEvidence()))
            number = shape_numbers[key] = shapes.index(shape)
        # consecutive messages mostly share their date, and adding the same date again changes nothing
        if fields is not last_fields or number != last_number:
            evidence_of[number].add(*fields)
            last_fields, last_number = fields, number
        start, stop = m.span()
        append((start, stop, m.end(_END), number, fields, hms))
    return HeaderScan(entries, shapes, evidence)


def match_header(line: str) -> Header | None:
    """Parse `line` if it starts a message (valid clock and plausible date fields), else None."""
    scan = scan_headers(line)
    if not scan.entries or scan.entries[0][0] != 0:
        return None
    _, end, rest, number, (a, b, c), (hour, minute, second) = scan.entries[0]
    return Header(scan.shapes[number], a, b, c, hour, minute, second, line[rest:end])


@dataclass
class OrderDecision:
    """The date order chosen for one group of header shapes, and why."""

    order: str
    # "evidence" | "other formats in file" | "argument" | "default" | "default for US-style headers"
    source: str
    ambiguous: bool
    conflicts: int = 0  # distinct dates that only make sense in the other order


def _year_first(group: tuple[str, str, str], ev: DateEvidence, requested: str | None) -> bool:
    if group[2] != "short":
        return group[2] == "first"
    # two-digit years: a field above 31 can only be the year, else the year is the field that changes least,
    # else the year is last unless the caller says first and as many dates exist that way ("1/13/15" does not)
    if any(a > 31 for a, _, _ in ev.dates):
        return True
    if any(c > 31 for _, _, c in ev.dates):
        return False
    if ev.first_changes != ev.last_changes:
        return ev.first_changes < ev.last_changes
    if requested not in ("ymd", "ydm"):
        return False
    first_possible = sum(_month_and_day(b, c) for _, b, c in ev.dates)
    last_possible = sum(_month_and_day(a, b) for a, b, _ in ev.dates)
    return first_possible >= last_possible


def _month_and_day(x: int, y: int) -> bool:
    """Whether two date fields can be a month and a day, in some order."""
    return (1 <= x <= 12 and 1 <= y <= 31) or (1 <= y <= 12 and 1 <= x <= 31)


def month_first_by_default(shape: HeaderShape) -> bool:
    """Whether the locale a header shape comes from writes the month first: "3/14/25, 9:05 PM" (two-digit
    year, slashes, capital AM/PM) is how phones set to US English write it. Used only when no date can tell."""
    return shape.capital_ampm and shape.sep == "/" and shape.year_pos == "short"


def decide_date_orders(
    evidence: dict[tuple[str, str, str], DateEvidence],
    requested: str | None,
    month_first_groups: frozenset[tuple[str, str, str]] = frozenset(),
) -> dict[tuple[str, str, str], OrderDecision]:
    """Choose, per header group, which date field is the day, from every date in the file.

    A field above 12 cannot be a month, so it settles the order; a group without such a field borrows the
    order settled by other groups of the file, then falls back to `requested` (the caller's `date_order`),
    then to the locale's default told by the header's shape — month-first for the `month_first_groups`
    (see `month_first_by_default`), else day-first (year-month-day for year-first dates) — and is recorded
    as ambiguous.
    """
    votes: dict[tuple[str, str, str], tuple[bool, Counter]] = {}
    file_votes: Counter = Counter()
    for group, ev in evidence.items():
        year_first = _year_first(group, ev, requested)
        v: Counter = Counter()
        if year_first:
            v["ymd"] = sum(1 for _, _, c in ev.dates if c > 12)
            v["ydm"] = sum(1 for _, b, _ in ev.dates if b > 12)
        else:
            v["dmy"] = sum(1 for a, _, _ in ev.dates if a > 12)
            v["mdy"] = sum(1 for _, b, _ in ev.dates if b > 12)
        votes[group] = (year_first, v)
        file_votes.update(v)

    decisions: dict[tuple[str, str, str], OrderDecision] = {}
    for group, (year_first, v) in votes.items():
        first, second = ("ymd", "ydm") if year_first else ("dmy", "mdy")
        if v[first] or v[second]:
            order = second if v[second] > v[first] else first
            decisions[group] = OrderDecision(order, "evidence", False, min(v[first], v[second]))
        elif file_votes[first] or file_votes[second]:
            order = second if file_votes[second] > file_votes[first] else first
            decisions[group] = OrderDecision(order, "other formats in file", False)
        elif requested in (first, second):
            decisions[group] = OrderDecision(requested, "argument", True)
        elif not year_first and group in month_first_groups:
            decisions[group] = OrderDecision("mdy", "default for US-style headers", True)
        else:
            decisions[group] = OrderDecision(first, "default", True)
    return decisions


def swapped(order: str) -> str:
    """The order with day and month exchanged."""
    return _SWAPPED[order]


def _is_persian_leap(year: int) -> bool:
    # the 33-year arithmetic rule, which matches the official calendar for the years phones write today
    return (year * 8 + 29) % 33 < 8


_NOWRUZ_1400 = date(2021, 3, 21).toordinal()  # 1 Farvardin 1400


@lru_cache(maxsize=256)
def _nowruz_ordinal(year: int) -> int:
    ordinal = _NOWRUZ_1400
    for y in range(1400, year):
        ordinal += 366 if _is_persian_leap(y) else 365
    for y in range(year, 1400):
        ordinal -= 366 if _is_persian_leap(y) else 365
    return ordinal


def jalali_to_gregorian(jy: int, jm: int, jd: int) -> date:
    """Convert a Solar Hijri (Persian calendar) date, as written by Persian-locale phones, to Gregorian."""
    month_days = 31 if jm <= 6 else 30 if jm <= 11 else (30 if _is_persian_leap(jy) else 29)
    if not (1 <= jm <= 12) or not (1 <= jd <= month_days):
        raise ValueError(f"not a Persian calendar date: {jy}/{jm}/{jd}")
    day_of_year = (jm - 1) * 31 + jd if jm <= 7 else 186 + (jm - 7) * 30 + jd
    return date.fromordinal(_nowruz_ordinal(jy) + day_of_year - 1)


def make_date(order: str, a: int, b: int, c: int) -> date:
    """The calendar date of fields (a, b, c) read in `order`; ValueError when there is none.

    Two-digit years are 20yy (WhatsApp appeared in 2009). Years 1300–1499 are the Persian calendar and years
    from 2400 the Thai Buddhist calendar (year − 543), both used by phones in those locales.
    """
    if order == "dmy":
        day, month, year = a, b, c
    elif order == "mdy":
        month, day, year = a, b, c
    elif order == "ymd":
        year, month, day = a, b, c
    else:
        year, day, month = a, b, c
    if year < 100:
        year += 2000
    if 1300 <= year < 1500:
        return jalali_to_gregorian(year, month, day)
    if year >= 2400:
        year -= 543
    if year < 1970:
        raise ValueError(f"year {year} is before any chat export")
    return date(year, month, day)
