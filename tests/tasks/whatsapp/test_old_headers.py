"""Headers that spell part of their date, on small hand-written inputs: old Android exports (2012–2014) with month
names and often no year, and iOS set to the Japanese calendar (an era and its year); then what must not change.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import pytest

from tasks.records import SkipCounter
from tasks.whatsapp import NotAnExportError, looks_like_whatsapp, parse_whatsapp_export

LRM = "\u200e"


def parse(tmp_path: Path, text: str, **kwargs):
    path = tmp_path / "chat.txt"
    path.write_text(text, encoding="utf-8")
    assert looks_like_whatsapp(path)
    skips = SkipCounter()
    chat = parse_whatsapp_export(path, skips=skips, **kwargs)
    assert skips.total == 0 and chat.stats["invalid_header_dates"] == 0
    return chat


def summary(chat) -> list[tuple]:
    return [(m.timestamp, m.author, m.kind, m.text) for m in chat.messages]


# --- month names -------------------------------------------------------------------------------------------


def test_time_first_with_the_year_then_without_it_for_the_export_year(tmp_path):
    # old Android wrote the year only for dates before the year of the export, and events after the exporter's name
    text = (
        "08:15, 14 Nov 2013 - Rosa Diaz: Tom Ward joined\n"
        "08:20, 14 Nov 2013 - Tom Ward: hi all\nsecond line\n"
        "23:58, 31 Dec 2013 - Rosa Diaz: nearly midnight\n"
        "00:03, 1 Jan - Tom Ward: <Media omitted>\n"
        "17:40, 12 Feb - Rosa Diaz: see you at 17:45, 13 Feb\n"
    )
    chat = parse(tmp_path, text)
    assert summary(chat) == [
        (datetime(2013, 11, 14, 8, 15), None, "system", "Rosa Diaz: Tom Ward joined"),
        (datetime(2013, 11, 14, 8, 20), "Tom Ward", "text", "hi all\nsecond line"),
        (datetime(2013, 12, 31, 23, 58), "Rosa Diaz", "text", "nearly midnight"),
        (datetime(2014, 1, 1, 0, 3), "Tom Ward", "media", "<Media omitted>"),
        (datetime(2014, 2, 12, 17, 40), "Rosa Diaz", "text", "see you at 17:45, 13 Feb"),
    ]
    assert chat.stats["spelled_dates"] == {
        "kind": "month names",
        "headers": 5,
        "years_inferred": 2,
        "year_from": "years written in the file",
    }
    assert chat.stats["date_order_ambiguous"] is False
    assert chat.stats["date_order_source"] == "month names"


def test_month_first_twelve_hour_clock_without_a_year(tmp_path):
    text = (
        "Dec 30, 11:59 PM - Ana Silva: last one of the year\n"
        "Jan 2, 12:05 AM - Ben Cole: new year,\nnew phone\n"
        "Jan 2, 8:11 PM - Ana Silva: Ben Cole left\n"
        "Mar 5, 12:30 PM - Ben Cole: lunch?\n"
    )
    chat = parse(tmp_path, text, export_year=2014)
    assert summary(chat) == [
        (datetime(2013, 12, 30, 23, 59), "Ana Silva", "text", "last one of the year"),
        (datetime(2014, 1, 2, 0, 5), "Ben Cole", "text", "new year,\nnew phone"),
        (datetime(2014, 1, 2, 20, 11), None, "system", "Ana Silva: Ben Cole left"),
        (datetime(2014, 3, 5, 12, 30), "Ben Cole", "text", "lunch?"),
    ]
    assert chat.stats["spelled_dates"]["years_inferred"] == 4
    assert chat.stats["spelled_dates"]["year_from"] == "export_year"
    assert chat.stats["authors"] == {"Ana Silva": 1, "Ben Cole": 2}


def test_day_first_twenty_four_hour_clock_without_a_year(tmp_path):
    text = (
        "18 Mar 12:14 - Sam Hill changed the subject to “Hikers”\n"
        "18 Mar 12:14 - Lee Moss was added\n"
        "2 Aug 07:30 - Lee Moss: morning\n\nall set?\n"
        "16 Nov 21:05 - Sam Hill: <Media omitted>\n"
    )
    chat = parse(tmp_path, text, export_year=2014)
    assert summary(chat) == [
        (datetime(2014, 3, 18, 12, 14), None, "system", "Sam Hill changed the subject to “Hikers”"),
        (datetime(2014, 3, 18, 12, 14), None, "system", "Lee Moss was added"),
        (datetime(2014, 8, 2, 7, 30), "Lee Moss", "text", "morning\n\nall set?"),
        (datetime(2014, 11, 16, 21, 5), "Sam Hill", "media", "<Media omitted>"),
    ]


def test_years_count_back_from_the_last_message_over_each_new_year(tmp_path):
    text = (
        "3 Nov 10:00 - Ida: one\n9 Feb 10:00 - Ida: two\n20 Dec 10:00 - Ida: three\n4 Jan 10:00 - Ida: four\n"
    )
    chat = parse(tmp_path, text, export_year=2015)
    assert [m.timestamp.date() for m in chat.messages] == [
        date(2013, 11, 3),
        date(2014, 2, 9),
        date(2014, 12, 20),
        date(2015, 1, 4),
    ]


def test_a_message_out_of_order_around_midnight_starts_no_new_year(tmp_path):
    text = (
        "31 Mar 23:50 - Ida: a\n1 Apr 00:01 - Ida: b\n31 Mar 23:59 - Ida: late\n1 Apr 00:02 - Ida: c\n"
        "31 Dec 23:58 - Ida: d\n1 Jan 00:01 - Ida: e\n31 Dec 23:59 - Ida: late\n1 Jan 00:02 - Ida: f\n"
    )
    chat = parse(tmp_path, text, export_year=2020)
    assert [m.timestamp for m in chat.messages] == [
        datetime(2019, 3, 31, 23, 50),
        datetime(2019, 4, 1, 0, 1),
        datetime(2019, 3, 31, 23, 59),
        datetime(2019, 4, 1, 0, 2),
        datetime(2019, 12, 31, 23, 58),
        datetime(2020, 1, 1, 0, 1),
        datetime(2019, 12, 31, 23, 59),
        datetime(2020, 1, 1, 0, 2),
    ]


def test_without_export_year_the_last_message_is_in_the_current_year(tmp_path):
    # 1 January is never still to come, so the last message is in this year
    chat = parse(tmp_path, "20 Dec 10:00 - Ida: old\n1 Jan 09:00 - Ida: new\n")
    this_year = date.today().year
    assert [m.timestamp.date() for m in chat.messages] == [date(this_year - 1, 12, 20), date(this_year, 1, 1)]
    assert chat.stats["spelled_dates"]["year_from"] == "current year"


# --- the Japanese calendar (iOS) ---------------------------------------------------------------------------


def test_ios_japanese_era_years(tmp_path):
    text = (
        f"[4/30/H31, 10:00:00] Kenji: {LRM}Messages and calls are end-to-end encrypted. Tap to learn more.\n"
        "[5/1/R1, 09:15:20] Kenji: first day of Reiwa\n"
        f"{LRM}[3/27/R4, 21:41:35] Yui: {LRM}image omitted\n"
        "[1/12/R5, 02:05:44] Kenji: two\nlines\n"
    )
    chat = parse(tmp_path, text)
    assert summary(chat) == [
        (
            datetime(2019, 4, 30, 10, 0),
            None,
            "system",
            "Kenji: Messages and calls are end-to-end encrypted. Tap to learn more.",
        ),
        (datetime(2019, 5, 1, 9, 15, 20), "Kenji", "text", "first day of Reiwa"),
        (datetime(2022, 3, 27, 21, 41, 35), "Yui", "media", "image omitted"),
        (datetime(2023, 1, 12, 2, 5, 44), "Kenji", "text", "two\nlines"),
    ]
    assert chat.stats["date_order"] == "mdy"
    assert chat.stats["spelled_dates"] == {
        "kind": "Japanese era",
        "headers": 4,
        "years_inferred": 0,
        "year_from": None,
    }


# --- what must not change ----------------------------------------------------------------------------------


def test_a_numeric_export_with_month_name_lines_in_its_messages_is_unaffected(tmp_path):
    text = (
        "05/03/2014, 20:11 - Ana: minutes of the call:\n"
        "Mar 5, 8:11 PM - Ben: agreed\n"
        "19:23, 28 Aug 2013 - Ana: noted\n"
        "[3/27/R4, 21:41:35] Yui: quoted\n"
        "13/03/2014, 09:00 - Ben: ok\n"
    )
    chat = parse(tmp_path, text)
    assert summary(chat) == [
        (
            datetime(2014, 3, 5, 20, 11),
            "Ana",
            "text",
            "minutes of the call:\nMar 5, 8:11 PM - Ben: agreed\n19:23, 28 Aug 2013 - Ana: noted\n"
            "[3/27/R4, 21:41:35] Yui: quoted",
        ),
        (datetime(2014, 3, 13, 9, 0), "Ben", "text", "ok"),
    ]
    assert chat.stats["spelled_dates"] is None


@pytest.mark.parametrize(
    "text",
    [
        "Release notes\n28 Aug 2013 - first public build\nAug 2013: 40 users\nMet on 5 Mar at 8:11 PM.\n",
        "Senior engineer | Aug 2013 - May 2016\n  20 Aug 2013 - C. Keller - Initial version\n",
    ],
)
def test_a_text_that_mentions_month_names_is_no_export(tmp_path, text):
    path = tmp_path / "notes.txt"
    path.write_text(text, encoding="utf-8")
    assert not looks_like_whatsapp(path)
    with pytest.raises(NotAnExportError):
        parse_whatsapp_export(path)
