"""Headers whose date is not written in digits alone, rewritten in digits before the headers are scanned.

Two kinds were found in real exports:
    19:23, 28 Aug 2013 - Name: text       old Android (2012–2014): month names, the time first in some locales
    Mar 5, 8:11 PM - Name: text           and no year at all for dates of the year the chat was exported in
    18 Mar 12:14 - Name: text
    [3/27/R4, 21:41:35] Name: text        iOS set to the Japanese calendar: an era and its year (R4 is 2022)
`write_dates_in_digits` turns a month-name header into "2013-08-28, 19:23 - Name: text" and an era year into
the Gregorian year ("[3/27/2022, 21:41:35] "), so that `headers.HEADER_RE` reads them as any other header. Like
`headers.put_date_first`, it rewrites a text only when most headers at its start are of these kinds, so that an
ordinary export pays one look at its first 64 KiB.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import date

from tasks.whatsapp.headers import HEADER_RE
from tasks.whatsapp.phrases import JAPANESE_ERAS, MONTH_NAMES

log = logging.getLogger(__name__)

_SP = r"[^\S\n]"  # whitespace that stays on one line
_MONTHS = {name: month for month, names in MONTH_NAMES.items() for name in names}
_MONTH = "|".join(sorted(map(re.escape, _MONTHS), key=len, reverse=True))
_TIME = rf"\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:{_SP}?[AaPp]\.?{_SP}?[Mm]\.?)?"

_MONTH_NAME_RE = re.compile(
    rf"""
    ^(?:(?P<time_first>{_TIME}),{_SP})?                         # "19:23, " (Indian English)
    (?: (?P<day>\d{{1,2}}){_SP}(?P<month>{_MONTH})\.?           # "28 Aug"
      | (?P<month_first>{_MONTH})\.?{_SP}(?P<day_after>\d{{1,2}}) # "Aug 28"
    )
    (?:,?{_SP}(?P<year>\d{{4}}))?
    (?(time_first)|,?{_SP}(?P<time>{_TIME}))
    (?={_SP}[-–]{_SP})                                         # then " - Name: text", as on Android
    """,
    re.VERBOSE | re.MULTILINE,
)
_ERA_RE = re.compile(
    rf"^(?P<date>\[?\d{{1,2}}(?P<sep>[/.\-])\d{{1,2}}(?P=sep))(?P<era>{'|'.join(JAPANESE_ERAS)})(?P<year>\d{{1,2}})"
    rf"(?=,?{_SP}\d{{1,2}}[:.]\d{{2}})",
    re.MULTILINE,
)
_HEAD = 64 * 1024  # how much of a text tells whether its headers spell their dates

# A date this many days earlier in the year than the one before it is a message out of order, not a new year.
OUT_OF_ORDER_DAYS = 7
_DAYS_BEFORE_MONTH = (0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335)  # in a leap year


@dataclass
class SpelledDates:
    """What `write_dates_in_digits` rewrote (`stats["spelled_dates"]` of a chat)."""

    kind: str  # "month names" or "Japanese era"
    headers: int
    years_inferred: int  # headers that wrote no year
    # where those years come from: "years written in the file", "export_year" or "current year"; None if none
    year_from: str | None


def write_dates_in_digits(text: str, export_year: int | None = None) -> tuple[str, SpelledDates | None]:
    """`text` with month-name and era-year headers written in digits, and what was rewritten; `text` itself and
    None when most headers at its start are not of these kinds.

    A header without a year takes it from the header before it: old Android wrote the year only for dates
    before the year of the export. Messages are taken to be in order, so a date earlier in the year than the
    one before it (by more than OUT_OF_ORDER_DAYS) starts the next year. Headers before the first written year
    count back from it; in a file that writes no year at all they count back from the last message, which is
    in `export_year` when given, else in the current year (the previous one when its date is still to come).
    """
    head = text[:_HEAD]
    numeric = None  # headers at the start written in digits, counted once a spelled one is seen
    for pattern in (_MONTH_NAME_RE, _ERA_RE):
        spelled = sum(1 for _ in pattern.finditer(head))
        if spelled and numeric is None:
            numeric = sum(1 for _ in HEADER_RE.finditer(head))
        if spelled and spelled > numeric:
            return _write_era_years(text) if pattern is _ERA_RE else _write_month_names(text, export_year)
    return text, None


def _write_era_years(text: str) -> tuple[str, SpelledDates]:
    text, headers = _ERA_RE.subn(lambda m: f"{m['date']}{JAPANESE_ERAS[m['era']] + int(m['year'])}", text)
    return text, SpelledDates("Japanese era", headers, 0, None)


def _write_month_names(text: str, export_year: int | None) -> tuple[str, SpelledDates]:
    matches = list(_MONTH_NAME_RE.finditer(text))
    dates = [
        (_MONTHS[m["month"]], int(m["day"]))
        if m["month"]
        else (_MONTHS[m["month_first"]], int(m["day_after"]))
        for m in matches
    ]
    written = [int(m["year"]) if m["year"] else None for m in matches]
    years, year_from = infer_years(dates, written, export_year)
    pieces, done = [], 0
    for m, (month, day), year in zip(matches, dates, years, strict=True):
        pieces += text[done : m.start()], f"{year:04d}-{month:02d}-{day:02d}, {m['time_first'] or m['time']}"
        done = m.end()
    pieces.append(text[done:])
    inferred = written.count(None)
    if inferred:
        log.info("%d headers write no year: years inferred from %s", inferred, year_from)
    return "".join(pieces), SpelledDates(
        "month names", len(matches), inferred, year_from if inferred else None
    )


def infer_years(
    dates: list[tuple[int, int]], written: list[int | None], export_year: int | None
) -> tuple[list[int], str]:
    """The year of each (month, day) in file order, given the years `written` (None where a header has none),
    and where the missing ones come from (see `write_dates_in_digits`)."""
    turns, turn, previous = [], 0, None  # turn: how many new years since the first date
    for month, day in dates:
        day_of_year = _DAYS_BEFORE_MONTH[month - 1] + day
        if previous is not None:
            turn += _new_year_step(previous, day_of_year)
        turns.append(turn)
        previous = day_of_year
    bases = [year - t for year, t in zip(written, turns, strict=True) if year is not None]
    if bases:
        base, year_from = bases[0], "years written in the file"
    else:
        last_year, year_from = _last_year(dates[-1], export_year)
        base = last_year - turns[-1]
    years = []
    for year, t in zip(written, turns, strict=True):
        if year is not None:
            base = year - t
        years.append(base + t)
    return years, year_from


def _new_year_step(before: int, after: int) -> int:
    """1 when going from day-of-year `before` to `after` starts a new year; -1 when it goes back over New Year's
    Eve by a few days (a message out of order around midnight on 31 December); else 0."""
    if before - after > OUT_OF_ORDER_DAYS:
        return 1
    if after - before > 366 - OUT_OF_ORDER_DAYS:
        return -1
    return 0


def _last_year(last: tuple[int, int], export_year: int | None) -> tuple[int, str]:
    if export_year is not None:
        return export_year, "export_year"
    today = date.today()
    return today.year - (last > (today.month, today.day)), "current year"
