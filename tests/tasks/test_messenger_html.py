"""Meta's "Download your information" in its default format, HTML: `messages/inbox/<chat>/message_N.html` of
Messenger and Instagram, in the markup of three eras, read into the chat the JSON download of the same conversation
gives; dates in the account's language; detection, zips, cut files and files that are no export."""

from __future__ import annotations

import html
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tasks.ingest import InputFile, check_readable, detect_kind, ingest_file, resolve_inputs, unreadable_files
from tasks.messenger import is_continuation_part, looks_like_messenger_archive, read_messenger_export
from tasks.messenger_html import (
    _MONTH_NAMES,
    _WEEKDAY_NAMES,
    _month_table,
    _weekday_table,
    looks_like_messenger_html,
    read_html_date,
)
from tasks.params import IngestParams, InputSpec
from tasks.records import InputFileError, SkipCounter
from tests.tasks.test_messenger import msg, thread, write

# Three eras of the markup, written after real files' markup as public parsers and their fixtures quote it:
# 2018-2021 `_2lel` sender / `_2let` content / `_2lem` date inside `_4t5n role=main` with the title in `_3b0d`;
# 2022 `_a6-h` sender div / `_a6-p` content / `_a6-o` date inside `_a706 role=main` with the title in `_a70e`;
# 2023+ the same with the sender in an `<h2>`, the title in the header's `<h1>`, a `<main>`.
ERAS = {
    "2019": dict(block="pam _3-95 _2pi0 _2lej uiBoxWhite noborder", sender='<div class="_3-96 _2pio _2lek _2lel">{}'
                 "</div>", content="_3-96 _2let", date="_3-94 _2lem", reactions="_tqp"),
    "2022": dict(block="pam _3-95 _2ph- _a6-g uiBoxWhite noborder", sender='<div class="_3-95 _2pim _a6-h _a6-i">{}'
                 "</div>", content="_3-95 _a6-p", date="_3-94 _a6-o", reactions="_a6-q"),
    "2024": dict(block="pam _3-95 _2ph- _a6-g uiBoxWhite noborder", sender='<h2 class="_3-95 _2pim _a6-h _a6-i">{}'
                 "</h2>", content="_3-95 _a6-p", date="_3-94 _a6-o", reactions="_a6-q"),
}
STYLE = "<style>._a6-g{background:#fff}._a6-h{font-weight:bold}._a6-o{color:#8d949e}._a6-p{margin:8px}</style>"


def block(era: str, sender: str, date: str, text: str = "", media: str = "", reactions: str = "") -> str:
    """One message as the DYI HTML writes it: sender, content (an empty slot, the text, media or share, an empty
    slot, the reactions) and date."""
    e = ERAS[era]
    ul = f'<ul class="{e["reactions"]}"><li>{reactions}</li></ul>' if reactions else ""
    return (f'<div class="{e["block"]}">{e["sender"].format(html.escape(sender))}<div class="{e["content"]}"><div>'
            f"<div></div><div>{text}</div><div>{media}</div><div></div>{ul}</div></div>"
            f'<div class="{e["date"]}">{date}</div></div>')


def page(era: str, title: str, blocks: list[str], participants: str | None = None) -> str:
    t = html.escape(title)
    e = ERAS[era]
    people = (f'<div class="{e["block"]}">{e["sender"].format(html.escape("Participants: " + participants))}</div>'
              if participants else "")
    if era == "2019":
        return (f'<!DOCTYPE html><html><head><meta charset="utf-8" /><title>{t}</title>{STYLE}</head>'
                '<body class="_5vb_ _2yq _4yic"><div class="clearfix _ikh"><div class="_4bl9"><div class="_li">'
                f'<div class="_3a_u"><div class="_4t5n" role="main"><div class="_3-8y _3-95 _3b0a">'
                f'<div class="_3b0d">{t}</div></div>{people}{"".join(blocks)}</div></div></div></div></div>'
                "</body></html>")
    if era == "2022":
        return (f'<html><head><meta charset="utf-8" /><title>{t}</title>{STYLE}</head><body class="_5vb_ _2yq _a7o5">'
                '<div class="_li"><div class="_a705"><div class="_a70a"><a href="../../index.html">Back</a>'
                f'<div class="_a70d"><div class="_a70e">{t}</div></div></div><div class="_a706" role="main">'
                f'{people}{"".join(blocks)}</div></div></div></body></html>')
    return ('<html><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />'
            f'<base href="../../../" /><title>{t}</title>{STYLE}</head><body class="_5vb_ _2yq _a7o5">'
            '<div class="_li"><div class="_a705">'
            f'<header class="_as-_ _a70a"><div class="_a70d"><h1>{t}</h1></div></header>'
            f'<main class="_a706" role="main">{people}{"".join(blocks)}</main></div></div></body></html>')


def english(minute: int, seconds: bool = True, comma: bool = False) -> str:
    """T0 (2024-03-14 18:02:05) + `minute` as the 2023+ exports write it ("Mar 14, 2024 6:02:05 pm"), or the older
    ones ("Mar 14, 2024, 6:02 PM")."""
    t = datetime(2024, 3, 14, 18, 2, 5) + timedelta(minutes=minute)
    clock = f"{(t.hour - 1) % 12 + 1}:{t.minute:02d}" + (f":{t.second:02d}" if seconds else "")
    half = "pm" if t.hour >= 12 else "am"
    day = f"{t:%b} {t.day:02d}, {t.year}"
    return f"{day}, {clock} {half.upper()}" if comma else f"{day} {clock} {half}"


PHOTO = "messages/inbox/radoslaw_123/photos/1.jpg"
STICKER = "messages/stickers_used/39178562_1505197616293642_5411344281094848512_n_369239263222822.png"
AUDIO = "messages/inbox/radoslaw_123/audio/audioclip1710439325.mp4"


def conversation_json() -> dict:
    return thread([
        msg("Radosław", 0, "Cześć! Jak się masz?"),
        msg("Zoë", 1, "Très bien, merci\net toi ?"),
        msg("Radosław", 2, photos=[{"uri": PHOTO, "creation_timestamp": 1710439445}]),
        msg("Zoë", 3, "look at this", share={"link": "https://example.com/a?b=1&c=2"}),
        msg("Radosław", 4, "😂", reactions=[{"reaction": "❤", "actor": "Zoë"}]),
        msg("Zoë", 5, "Liked a message"),
        msg("Zoë", 6, is_unsent=True),
        msg("Radosław", 7, "Radosław named the group Wakacje."),
        msg("Zoë", 8, sticker={"uri": STICKER}),
        msg("Radosław", 9, audio_files=[{"uri": AUDIO}]),
        msg("Zoë", 10, "Do zobaczenia & pa <3"),
    ])


def conversation_html(era: str) -> str:
    seconds, comma = era != "2019", era == "2019"

    def b(sender, minute, **parts):
        return block(era, sender, english(minute, seconds, comma), **parts)

    blocks = [
        b("Radosław", 0, text="Cześć! Jak się masz?"),
        b("Zoë", 1, text="Très bien, merci\net toi ?"),
        b("Radosław", 2, media=f'<div><a target="_blank" href="{PHOTO}"><img src="{PHOTO}" class="_a6_o _3-96" />'
                               "</a></div>"),
        b("Zoë", 3, text="look at this", media='<div><a target="_blank" href="https://example.com/a?b=1&amp;c=2">'
                                               "https://example.com/a?b=1&amp;c=2</a></div>"),
        b("Radosław", 4, text="😂", reactions="<span>❤Zoë</span>"),
        b("Zoë", 5, text="Liked a message"),
        b("Zoë", 6, text="Zoë unsent a message."),
        b("Radosław", 7, text="Radosław named the group Wakacje."),
        b("Zoë", 8, media=f'<img src="{STICKER}" class="_a6_o _3-96" />'),
        b("Radosław", 9, media=f'<audio src="{AUDIO}" controls="1"><a href="{AUDIO}">Click for audio</a></audio>'),
        b("Zoë", 10, text="Do zobaczenia &amp; pa &lt;3"),
    ]
    return page(era, "Radosław", blocks[::-1])  # newest first, as Meta writes it


def write_html(folder: Path, text: str, name: str = "message_1.html") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def rows(chat):
    return [(m.author, m.kind, m.text) for m in chat.messages]


@pytest.mark.parametrize("era", sorted(ERAS))
def test_the_same_conversation_as_html_gives_the_messages_of_its_json(tmp_path, era):
    [from_json] = read_messenger_export(write(tmp_path / "json" / "messages" / "inbox" / "radoslaw_123",
                                              conversation_json()))
    skips = SkipCounter()
    path = write_html(tmp_path / "html" / "messages" / "inbox" / "radoslaw_123", conversation_html(era))
    [chat] = read_messenger_export(path, skips)
    assert rows(chat) == rows(from_json)
    assert [k for _, k, _ in rows(chat)] == ["text", "text", "media", "text", "text", "deleted", "system", "media",
                                              "media", "text"]
    assert rows(chat)[3] == ("Zoë", "text", "look at this\nhttps://example.com/a?b=1&c=2")
    if era == "2019":  # the older markup shows minutes
        assert [m.timestamp.replace(second=5) for m in chat.messages] == [m.timestamp for m in from_json.messages]
        assert chat.stats["exact_timestamps"] is False
    else:
        assert [m.timestamp for m in chat.messages] == [m.timestamp for m in from_json.messages]
    assert chat.messages[0].timestamp.replace(second=5) == datetime(2024, 3, 14, 18, 2, 5)
    assert dict(skips.counts) == {"messenger_reaction_notice": 1}
    for key in ("source", "chat_name", "source_chat_id", "authors", "kinds", "messages"):
        assert chat.stats[key] == from_json.stats[key], key
    assert chat.stats["export_shape"] == "html" and chat.source_file == "message_1.html"


def test_parts_of_a_conversation_are_one_chat_and_a_group_lists_its_participants(tmp_path):
    folder = tmp_path / "your_instagram_activity" / "messages" / "inbox" / "wakacje_77"
    people = "Radosław, Zoë and Ana"
    newer = [block("2024", "Ana", english(9), text="do jutra"), block("2024", "Zoë", english(8), text="ok")]
    older = [block("2024", "Zoë", english(1), text="hej"), block("2024", "Radosław", english(0), text="cześć")]
    first = write_html(folder, page("2024", "Wakacje", newer, people))
    second = write_html(folder, page("2024", "Wakacje", older, people), "message_2.html")
    assert is_continuation_part(second) and not is_continuation_part(first)
    assert read_messenger_export(second) == []  # read with message_1.html
    [chat] = read_messenger_export(first)
    assert rows(chat) == [("Radosław", "text", "cześć"), ("Zoë", "text", "hej"), ("Zoë", "text", "ok"),
                          ("Ana", "text", "do jutra")]
    assert chat.stats["participants"] == ["Radosław", "Zoë", "Ana"] and chat.stats["chat_type"] == "group"
    assert chat.stats["source"] == "instagram" and chat.stats["parts"] == ["message_1.html", "message_2.html"]
    [alone] = read_messenger_export(second, siblings=False)
    assert len(alone.messages) == 2


@pytest.mark.parametrize("raw, expected", [
    ("Mar 14, 2024 6:02:05 pm", datetime(2024, 3, 14, 18, 2, 5)),
    ("Sep 22, 2017, 6:33 AM", datetime(2017, 9, 22, 6, 33)),
    ("Jan 29, 2021 12:05PM", datetime(2021, 1, 29, 12, 5)),
    ("Jan 29, 2021 12:05 am", datetime(2021, 1, 29, 0, 5)),
    ("01 Jan 2020, 09:59", datetime(2020, 1, 1, 9, 59)),
    ("14 mars 2024 18:02", datetime(2024, 3, 14, 18, 2)),
    ("14 févr. 2024 à 18:02", datetime(2024, 2, 14, 18, 2)),
    ("2024-03-14 18:02:05", datetime(2024, 3, 14, 18, 2, 5)),
    ("Thursday, March 14, 2024 at 6:02 PM", datetime(2024, 3, 14, 18, 2)),
])
def test_dates_in_english_french_and_numeric_forms_read(raw, expected):
    assert read_html_date(raw) == expected


@pytest.mark.parametrize("raw", ["", "yesterday", "Mar 14, 2024", "Mar 14, 2024 25:02", "Mar 32, 2024 6:02 pm",
                                 "14 Brumaire 2024 18:02", "Mar 14, 2024 13:02 pm", "6:02 pm", "Mar 14, 20"])
def test_a_date_that_does_not_read_is_none_never_a_guess(raw):
    assert read_html_date(raw) is None


# A date as a page in each language writes it: the CLDR's medium and long forms for the language (month names
# abbreviated with and without the dot, genitive and partitive forms, "r." "г." "р." after the year, 12-hour markers).
T = datetime(2024, 3, 14, 18, 2)


@pytest.mark.parametrize("language, raw, expected", [
    ("it", "14 mar 2024, 18:02", T),
    ("it", "14 marzo 2024 alle ore 18:02", T),
    ("it", "3 set 2023, 09:15:30", datetime(2023, 9, 3, 9, 15, 30)),
    ("pt-PT", "14/03/2024, 18:02", T),
    ("pt-PT", "14 de mar. de 2024, 18:02", T),
    ("pt-BR", "14 de março de 2024 às 18:02", T),
    ("pt-BR", "2 de out de 2023 07:45", datetime(2023, 10, 2, 7, 45)),
    ("nl", "14 mrt 2024 18:02", T),
    ("nl", "14 maart 2024 om 18:02", T),
    ("nl", "1 mei 2022 00:00", datetime(2022, 5, 1)),
    ("pl", "14 marca 2024 18:02", T),
    ("pl", "14 mar 2024, 18:02", T),
    ("pl", "1 października 2023 r. o 18:02", datetime(2023, 10, 1, 18, 2)),
    ("pl", "30 lis 2021, 23:59", datetime(2021, 11, 30, 23, 59)),
    ("tr", "14 Mart 2024 18:02", T),
    ("tr", "14 Ağu 2024 18:02", datetime(2024, 8, 14, 18, 2)),
    ("tr", "5 Aralık 2020 saat 08:10", datetime(2020, 12, 5, 8, 10)),
    ("id", "14 Mar 2024 18.02", T),
    ("id", "17 Agustus 2023 pukul 18.02", datetime(2023, 8, 17, 18, 2)),
    ("id", "24 Des 2023 09.30", datetime(2023, 12, 24, 9, 30)),
    ("sv", "14 mars 2024 18:02", T),
    ("sv", "14 okt. 2024 kl. 18:02", datetime(2024, 10, 14, 18, 2)),
    ("da", "14. mar. 2024 18.02", T),
    ("da", "den 14. marts 2024 kl. 18.02", T),
    ("nb", "14. mar. 2024, 18:02", T),
    ("nb", "24. des. 2023 kl. 18:02", datetime(2023, 12, 24, 18, 2)),
    ("fi", "14. maaliskuuta 2024 klo 18.02", T),
    ("fi", "14.3.2024 klo 18.02", T),
    ("fi", "1. jouluk. 2023 klo 7.05", datetime(2023, 12, 1, 7, 5)),
    ("cs", "14. března 2024 v 18:02", T),
    ("cs", "14. bře 2024 18:02:09", T.replace(second=9)),
    ("cs", "2. července 2023 18:02", datetime(2023, 7, 2, 18, 2)),
    ("ro", "14 mar. 2024, 18:02", T),
    ("ro", "14 martie 2024 la 18:02", T),
    ("hu", "2024. márc. 14. 18:02", T),
    ("hu", "2024. március 14. 18:02:07", T.replace(second=7)),
    ("hu", "2023. szept. 1. 6:00", datetime(2023, 9, 1, 6)),
    ("ru", "14 марта 2024 г. в 18:02", T),
    ("ru", "14 мар. 2024 г., 18:02", T),
    ("ru", "1 нояб. 2023 г., 18:02", datetime(2023, 11, 1, 18, 2)),
    ("uk", "14 березня 2024 р. о 18:02", T),
    ("uk", "14 бер. 2024 р., 18:02", T),
    ("uk", "3 листопада 2023 р. об 11:02", datetime(2023, 11, 3, 11, 2)),
    ("es", "14 de marzo de 2024, 6:02 p. m.", T),
    ("es", "14 mar 2024 6:02 a.m.", datetime(2024, 3, 14, 6, 2)),
    ("ja", "2024年3月14日 18:02", T),
    ("ja", "2024年3月14日(木) 午後6:02", T),
    ("zh", "2024年3月14日 下午6:02:05", T.replace(second=5)),
    ("zh", "2024年3月14日星期四 上午12:30", datetime(2024, 3, 14, 0, 30)),
    ("ko", "2024년 3월 14일 오후 6:02", T),
    ("ko", "2024. 3. 14. 오전 6:02", datetime(2024, 3, 14, 6, 2)),
    ("ar", "14 مارس 2024 6:02 م", T),
    ("ar", "١٤ مارس ٢٠٢٤، ٦:٠٢ ص", datetime(2024, 3, 14, 6, 2)),
])
def test_dates_in_the_languages_meta_writes_read(language, raw, expected):
    assert read_html_date(raw) == expected, language


@pytest.mark.parametrize("raw", [
    "14 marca 2024 18:02 Uhr",  # a word after the time that is no 12-hour marker
    "2024年3月14日 午後13:02",  # a 12-hour marker on a 24-hour time
    "2024년 3월 14일 오후 6:02 pm",  # two markers
    "14 marca lutego 2024 18:02",  # two months
    "14.03.2024",  # no time
    "14 listopada 24 18:02",  # no four-digit year
    "2024年3月 18:02",  # no day
    "14 brumaire 2024 18.02",
])
def test_a_date_in_another_language_that_does_not_read_is_none(raw):
    assert read_html_date(raw) is None


def test_every_month_name_reads_its_month_and_no_name_means_two_months():
    for language, months in _MONTH_NAMES.items():
        for month, spellings in enumerate(months, 1):
            for name in spellings.split():
                assert read_html_date(f"14 {name} 2024 18:02") == T.replace(month=month), (language, name)
                assert read_html_date(f"14 {name}. 2024 18:02") == T.replace(month=month), (language, name)
    # Croatian's "lip" is June and "listopad" October, where Polish's are July and November: refused together
    croatian = ("sij siječnja", "velj veljače", "ožu ožujka", "tra travnja", "svi svibnja", "lip lipnja", "srp srpnja",
                "kol kolovoza", "ruj rujna", "lis listopada", "stu studenoga", "pro prosinca")
    with pytest.raises(ValueError, match="'lip'"):
        _month_table({**_MONTH_NAMES, "hr": croatian}, set())
    with pytest.raises(ValueError, match="also a date word"):
        _month_table(_MONTH_NAMES, {"mar"})


# A Saturday, a Sunday and a Tuesday as a page in each language writes them with their weekday (the CLDR's full
# form, and its medium one after an abbreviated weekday), and a Friday's name on that Tuesday.
SAT, SUN, TUE = datetime(2026, 11, 28, 10, 51), datetime(2026, 11, 29, 9, 5), datetime(2026, 12, 1, 18, 2)


@pytest.mark.parametrize("language, dates, wrong", [
    ("pl", ["sobota, 28 listopada 2026 10:51", "niedz., 29 lis 2026, 09:05", "wtorek, 1 grudnia 2026 o 18:02"],
     "piątek, 1 grudnia 2026 18:30"),
    ("es", ["sábado, 28 de noviembre de 2026, 10:51", "dom, 29 nov 2026, 9:05", "mar, 1 dic 2026, 6:02 p. m."],
     "viernes, 1 de diciembre de 2026, 18:30"),
    ("it", ["sabato 28 novembre 2026 10:51", "dom 29 nov 2026, 09:05", "martedì 1 dicembre 2026 alle ore 18:02"],
     "venerdì 1 dicembre 2026 18:30"),
    ("pt", ["sábado, 28 de novembro de 2026 10:51", "dom., 29 de nov. de 2026 09:05",
            "terça-feira, 1 de dezembro de 2026 às 18:02"], "sexta-feira, 1 de dezembro de 2026 18:30"),
    ("pt-PT", ["sábado, 28 de novembro de 2026, 10:51", "domingo, 29/11/2026, 09:05",
               "terça, 1 de dez. de 2026, 18:02"], "sexta, 1 de dez. de 2026, 18:30"),
    ("nl", ["zaterdag 28 november 2026 10:51", "zo 29 nov 2026 09:05", "dinsdag 1 december 2026 om 18:02"],
     "vrijdag 1 december 2026 18:30"),
    ("ru", ["суббота, 28 ноября 2026 г. 10:51", "вс, 29 нояб. 2026 г., 09:05", "вторник, 1 декабря 2026 г. в 18:02"],
     "пятница, 1 декабря 2026 г. в 18:30"),
    ("uk", ["субота, 28 листопада 2026 р. 10:51", "нд, 29 лист. 2026 р., 09:05",
            "вівторок, 1 грудня 2026 р. о 18:02"], "пʼятниця, 1 грудня 2026 р. о 18:30"),
    ("tr", ["28 Kasım 2026 Cumartesi 10:51", "Paz, 29 Kas 2026 09:05", "1 Aralık 2026 Salı saat 18:02"],
     "1 Aralık 2026 Cuma 18:30"),
    ("ar", ["السبت، ٢٨ نوفمبر ٢٠٢٦ ١٠:٥١ ص", "الأحد، 29 نوفمبر 2026، 9:05 ص", "الثلاثاء، ١ ديسمبر ٢٠٢٦، ٦:٠٢ م"],
     "الجمعة، ١ ديسمبر ٢٠٢٦، ٦:٣٠ م"),
    ("fr", ["samedi 28 novembre 2026 à 10:51", "dim. 29 nov. 2026, 09:05", "mar. 1 déc. 2026, 18:02"],
     "vendredi 1 décembre 2026 18:30"),
    ("de", ["Samstag, 28. November 2026 um 10:51", "So., 29. Nov. 2026, 09:05", "Dienstag, 1. Dezember 2026 18:02"],
     "Freitag, 1. Dezember 2026 18:30"),
    ("cs", ["sobota 28. listopadu 2026 10:51", "ne 29. lis 2026 9:05", "úterý 1. prosince 2026 v 18:02"],
     "pátek 1. prosince 2026 18:30"),
    ("fi", ["lauantai 28. marraskuuta 2026 klo 10.51", "su 29. marrask. 2026 klo 9.05",
            "tiistaina 1. joulukuuta 2026 klo 18.02"], "perjantai 1. joulukuuta 2026 klo 18.30"),
    ("hu", ["2026. november 28., szombat 10:51", "2026. nov. 29., vasárnap 9:05", "2026. december 1., kedd 18:02"],
     "2026. december 1., péntek 18:30"),
    ("ja", ["2026年11月28日土曜日 10:51", "2026年11月29日(日) 9:05", "2026年12月1日(火) 午後6:02"],
     "2026年12月1日(金) 18:30"),
    ("zh", ["2026年11月28日星期六 10:51", "2026年11月29日 周日 09:05", "2026年12月1日星期二 下午6:02"],
     "2026年12月1日星期五 18:30"),
    ("ko", ["2026년 11월 28일 토요일 오전 10:51", "2026년 11월 29일 (일) 오전 9:05", "2026년 12월 1일 화요일 오후 6:02"],
     "2026년 12월 1일 금요일 오후 6:30"),
])
def test_a_page_whose_dates_name_their_weekday_reads_and_a_weekday_not_the_date_s_is_a_counted_skip(
        tmp_path, language, dates, wrong):
    blocks = [block("2024", "Ana" if i % 2 else "Bo", d, text=f"m{i}") for i, d in enumerate([*dates, wrong])]
    skips = SkipCounter()
    [chat] = read_messenger_export(write_html(tmp_path / "messages" / "inbox" / "ana_1", page("2024", "Ana",
                                                                                             blocks[::-1])), skips)
    assert [(m.timestamp, m.text) for m in chat.messages] == [(SAT, "m0"), (SUN, "m1"), (TUE, "m2")], language
    assert dict(skips.counts) == {"messenger_bad_timestamp": 1}, language
    [(_, example)] = skips.examples.items()
    assert "message_1.html#message 0" in example  # the newest block, the Friday's name


@pytest.mark.parametrize("right, wrong, expected", [
    ("mar., 12 mars 2024 18:02", "mar., 14 mars 2024 18:02", datetime(2024, 3, 12, 18, 2)),  # "mar" beside a month
    ("mar, 24/11/2026 18:02", "mar, 25/11/2026 18:02", datetime(2026, 11, 24, 18, 2)),  # beside three numbers
    ("mar 24 nov 2026 18:02", "mar 25 nov 2026 18:02", datetime(2026, 11, 24, 18, 2)),
    ("So., 29. Nov. 2026 09:05", "So., 30. Nov. 2026 09:05", SUN),  # "so": Sunday in German
    ("so 28. lis 2026 10:51", "so 27. lis 2026 10:51", SAT),  # and Saturday in Czech
    ("четверг, 14 марта 2024 г. в 18:02", "пятница, 14 марта 2024 г. в 18:02", T),
    ("quinta-feira, 14 de março de 2024 18:02", "sexta-feira, 14 de março de 2024 18:02", T),
    ("Thursday, March 14, 2024 at 6:02 PM", "Friday, March 14, 2024 at 6:02 PM", T),
    ("Thursday, March 14, 2024 6:02 PM", "Thursday Friday, March 14, 2024 6:02 PM", T),  # two days
    ("Thu 14/03/2024 18:02", "Fri 14/03/2024 18:02", T),
    ("2024年3月14日(木) 18:02", "2024年3月14日(金) 18:02", T),
    ("2024年3月14日星期四 下午6:02", "2024年3月14日星期五 下午6:02", T),
    ("2024년 3월 14일 (목) 오후 6:02", "2024년 3월 14일 (금) 오후 6:02", T),
])
def test_a_date_reads_with_its_own_weekday_and_not_with_another_day_s(right, wrong, expected):
    assert read_html_date(right) == expected
    assert read_html_date(wrong) is None


# Words that are also a weekday's name in some language, read as before: "mar" alone is March, fi "la" (Saturday)
# the es and ro "la", ja 月 (Monday) the month's character; a month's name that is no weekday's beside three numbers
# still does not read.
@pytest.mark.parametrize("raw, expected", [
    ("14 mar 2024 18:02", T),
    ("14 martie 2024 la 18:02", T),
    ("la 27.11.2026 klo 10.51", datetime(2026, 11, 27, 10, 51)),  # not checked
    ("2026年12月1日(月) 18:02", TUE),  # not checked
    ("mars 24/11/2026 18:02", None),
])
def test_a_word_that_is_also_a_weekday_s_name_keeps_its_reading(raw, expected):
    assert read_html_date(raw) == expected


def test_every_weekday_name_reads_its_day_and_no_weekday_name_is_another_date_word():
    monday = datetime(2026, 11, 23, 18, 2)
    for language, days in _WEEKDAY_NAMES.items():
        for day, spellings in enumerate(days):
            for name in spellings.split():
                date = monday + timedelta(days=day)
                assert read_html_date(f"{name}, {date:%Y-%m-%d} 18:02") == date, (language, name)
                assert read_html_date(f"{name}. {date:%Y-%m-%d} 18:02") == date, (language, name)
                other = monday + timedelta(days=(day + 3) % 7)
                assert read_html_date(f"{name} {other:%Y-%m-%d} 18:02") is None, (language, name)
    with pytest.raises(ValueError, match="'la' .* also a date word"):
        _weekday_table({**_WEEKDAY_NAMES, "fi": ("ma", "ti", "ke", "to", "pe", "la", "su")}, {"la"})


@pytest.mark.parametrize("dates", [
    ["14 marca 2024 18:02", "14 marca 2024 18:03", "1 kwietnia 2024 09:00"],
    ["14. maaliskuuta 2024 klo 18.02", "14. maaliskuuta 2024 klo 18.03", "1. huhtikuuta 2024 klo 9.00"],
    ["2024年3月14日 午後6:02", "2024年3月14日 午後6:03", "2024年4月1日 午前9:00"],
    ["2024년 3월 14일 오후 6:02", "2024년 3월 14일 오후 6:03", "2024년 4월 1일 오전 9:00"],
])
def test_a_page_dated_in_another_language_reads_in_order(tmp_path, dates):
    blocks = [block("2024", "Ana" if i % 2 else "Bo", d, text=f"m{i}") for i, d in enumerate(dates)]
    skips = SkipCounter()
    [chat] = read_messenger_export(write_html(tmp_path / "messages" / "inbox" / "ana_1", page("2024", "Ana",
                                                                                             blocks[::-1])), skips)
    assert [(m.timestamp, m.text) for m in chat.messages] == [
        (T, "m0"), (T.replace(minute=3), "m1"), (datetime(2024, 4, 1, 9), "m2")]
    assert dict(skips.counts) == {} and chat.stats["exact_timestamps"] is False


def test_numeric_dates_take_their_day_month_order_from_the_file_and_an_unread_date_is_a_counted_skip(tmp_path):
    folder = tmp_path / "messages" / "inbox" / "kim_5"
    blocks = [block("2024", "Kim", "14/03/2024 18:03", text="later"), block("2024", "Sam", "03/04/2024 18:02",
                                                                                 text="which day?"),
              block("2024", "Kim", "hier à 18:01", text="a date in words"), block("2024", "Sam", "03/03/2024 18:00",
                                                                                     text="first")]
    skips = SkipCounter()
    [chat] = read_messenger_export(write_html(folder, page("2024", "Kim", blocks)), skips)
    assert [(m.timestamp, m.text) for m in chat.messages] == [
        (datetime(2024, 3, 3, 18, 0), "first"), (datetime(2024, 3, 14, 18, 3), "later"),
        (datetime(2024, 4, 3, 18, 2), "which day?")]  # 14/03 tells day/month for the whole file
    assert dict(skips.counts) == {"messenger_bad_timestamp": 1}
    [(reason, example)] = skips.examples.items()
    assert "message_1.html#message 2" in example and "hier à 18:01" in example
    ambiguous = [block("2024", "Kim", "03/04/2024 18:02", text="a"), block("2024", "Sam", "02/04/2024 18:00",
                                                                            text="b")]
    skips = SkipCounter()
    [chat] = read_messenger_export(write_html(tmp_path / "x" / "inbox" / "a_1", page("2024", "Kim", ambiguous)),
                                   skips)
    assert chat.messages == [] and skips.counts["messenger_bad_timestamp"] == 2


def test_a_cut_file_keeps_its_complete_messages_and_counts_the_cut(tmp_path):
    path = write_html(tmp_path / "messages" / "inbox" / "radoslaw_123", conversation_html("2024"))
    text = path.read_text(encoding="utf-8")
    cut = text.index(english(1)) + len("Mar 14, 2024 6:0")  # inside the date of the second-oldest message
    path.write_bytes(text[:cut].encode("utf-8"))
    skips = SkipCounter()
    [chat] = read_messenger_export(path, skips)
    assert [m.text for m in chat.messages][:2] == ["image omitted", "look at this\nhttps://example.com/a?b=1&c=2"]
    assert len(chat.messages) == 8 and chat.stats["truncated"] is True
    assert skips.counts["messenger_truncated_export"] == 1


@pytest.mark.parametrize("content", [
    "<html><body><p>My notes</p></body></html>",  # not an export
    page("2024", "Radosław", []),  # the page of a chat, but no message in it
    page("2024", "Radosław", [block("2024", "Zoë", english(0), text="hi")])[:80],  # cut before any message
    "\x00\x01binary",
])
def test_a_message_file_that_cannot_be_read_fails_in_one_line_saying_how_to_get_json(tmp_path, content):
    path = write_html(tmp_path / "messages" / "inbox" / "a_1", content)
    with pytest.raises(InputFileError) as error:
        read_messenger_export(path)
    message = str(error.value)
    assert "\n" not in message and str(path) in message and "Format: JSON" in message


def test_html_downloads_are_detected_by_their_markup_and_ingested_in_folders_and_zips(tmp_path):
    chat = tmp_path / "dyi" / "your_facebook_activity" / "messages" / "inbox" / "radoslaw_123"
    path = write_html(chat, conversation_html("2022"))
    write_html(chat, page("2022", "Radosław", [block("2022", "Zoë", english(-5), text="earlier")]), "message_2.html")
    (chat / "photos").mkdir()
    (chat / "photos" / "1.jpg").write_bytes(b"\xff\xd8\xff\xe0")
    assert looks_like_messenger_html(path) and detect_kind(path) == "messenger"
    other = write_html(tmp_path / "notes", "<html><body>message one</body></html>")  # a message_1.html, no export
    followers = write_html(tmp_path / "dyi" / "connections", page("2024", "Followers", []), "followers_1.html")
    for not_chat in (other, followers):
        assert not looks_like_messenger_html(not_chat)
        with pytest.raises(InputFileError, match="cannot tell what kind"):
            detect_kind(not_chat)
    [f] = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(tmp_path / "dyi" / "your_facebook_activity"))]))
    assert (Path(f.path).name, f.kind, f.source) == ("message_1.html", "messenger", "messenger")
    result = ingest_file(f, str(tmp_path / "out" / "p0.parquet"), str(tmp_path / "out" / "m0.parquet"), IngestParams())
    assert result.info["error"] is None and result.extra["messages"] == 11

    archive = tmp_path / "facebook-zoe.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for file in sorted((tmp_path / "dyi").rglob("*")):
            if file.is_file():
                z.write(file, file.relative_to(tmp_path / "dyi").as_posix())
    assert looks_like_messenger_archive(archive) and detect_kind(archive) == "messenger"
    [zipped] = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(archive))]))
    [from_zip] = read_messenger_export(archive)
    [from_folder] = read_messenger_export(path)
    assert rows(from_zip) == rows(from_folder) and len(from_zip.messages) == 11
    assert zipped.kind == "messenger"


def test_an_unreadable_html_message_file_is_counted_with_on_unreadable_skip(tmp_path):
    path = write_html(tmp_path / "messages" / "inbox" / "a_1", page("2024", "A", []))
    f = InputFile(path=str(path), kind="messenger", source="messenger", sha256="0" * 64)
    result = ingest_file(f, str(tmp_path / "out" / "p0.parquet"), str(tmp_path / "out" / "m0.parquet"),
                         IngestParams())
    assert result.extra["files_unreadable"] == 1 and "Format: JSON" in result.info["error"]
    errors = unreadable_files([result])
    check_readable(errors, IngestParams(on_unreadable="skip"))  # counted, not fatal
    with pytest.raises(InputFileError, match="Format: JSON"):
        check_readable(errors, IngestParams())


def test_a_page_nested_deep_or_long_reads_without_recursion(tmp_path):
    deep = "<div>" * 20000 + "deep" + "</div>" * 20000
    many = [block("2024", "Kim", english(i % 600), text=f"n{i}") for i in range(3000)]
    path = write_html(tmp_path / "messages" / "inbox" / "k_1", page("2024", "Kim", [block("2024", "Kim", english(
        0), text=deep), *many]))
    [chat] = read_messenger_export(path)
    assert len(chat.messages) == 3001 and "deep" in {m.text for m in chat.messages}


def test_a_polish_page_reads_its_dates_and_meta_s_polish_notes(tmp_path):
    blocks = [
        block("2024", "Zofia", "14 marca 2024 18:02", text="Zofia nadała nazwę grupy Ognisko."),
        block("2024", "Zofia", "14 mar 2024, 18:03", text="Zofia wysłała załącznik.",
              media=f'<div><a href="{PHOTO}"><img src="{PHOTO}" /></a></div>'),
        block("2024", "Łukasz", "1 kwietnia 2024 09:00", text="Super, do zobaczenia!"),
    ]
    [chat] = read_messenger_export(write_html(tmp_path / "messages" / "inbox" / "ognisko_2",
                                              page("2024", "Ognisko", blocks[::-1])))
    assert [(m.timestamp, m.author, m.kind, m.text) for m in chat.messages] == [
        (T, None, "system", "Zofia nadała nazwę grupy Ognisko."),
        (T.replace(minute=3), "Zofia", "media", "image omitted"),
        (datetime(2024, 4, 1, 9), "Łukasz", "text", "Super, do zobaczenia!"),
    ]
