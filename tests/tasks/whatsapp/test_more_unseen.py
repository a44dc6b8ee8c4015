"""More classes of exports the parser had never seen, each on small hand-written inputs: headers that put the time
first (Vietnamese iOS), an era or "year" word after the year, 12-hour markers of more locales, shared locations;
then classes that were already read right, kept here so that they stay so.
"""

from __future__ import annotations

import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from tasks.records import SkipCounter
from tasks.whatsapp import looks_like_whatsapp, parse_whatsapp_export

LRM, RLM, NNBSP = "\u200e", "\u200f", "\u202f"


def parse(tmp_path: Path, text: str | bytes, name: str = "chat.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    skips = SkipCounter()
    chat = parse_whatsapp_export(path, skips=skips)
    assert skips.total == 0 and chat.stats["invalid_header_dates"] == 0
    return chat


def summary(chat) -> list[tuple]:
    return [(m.timestamp, m.author, m.kind, m.text) for m in chat.messages]


# --- 1. the time before the date (Vietnamese iOS) ------------------------------------------------------------


def test_vietnamese_ios_headers_with_the_time_first(tmp_path):
    text = (
        f"[14:56:01, 18/3/22] Nhóm Bạn: {LRM}Tin nhắn và cuộc gọi được mã hóa đầu cuối.\n"
        "[21:41:35, 27/3/22] Lan: Xin chào\ncó ai ở đó không?\n"
        f"{LRM}[21:41:55, 27/3/22] Minh: {LRM}đã bỏ qua hình ảnh\n"
        "[9:05:00 CH, 28/3/22] Minh: tối nay nhé\n"
    )
    path = tmp_path / "vi.txt"
    path.write_text(text, encoding="utf-8")
    assert looks_like_whatsapp(path)
    chat = parse(tmp_path, text)
    assert [(m.timestamp, m.author, m.kind) for m in chat.messages] == [
        (datetime(2022, 3, 18, 14, 56, 1), None, "system"),
        (datetime(2022, 3, 27, 21, 41, 35), "Lan", "text"),
        (datetime(2022, 3, 27, 21, 41, 55), "Minh", "media"),
        (datetime(2022, 3, 28, 21, 5), "Minh", "text"),
    ]
    assert chat.messages[1].text == "Xin chào\ncó ai ở đó không?"


def test_a_time_first_line_inside_a_date_first_export_stays_text(tmp_path):
    chat = parse(
        tmp_path, "[27/3/22, 21:41:35] Lan: agenda\n[10:00, 28/3/22] standup\n[27/3/22, 21:42:00] Minh: ok\n"
    )
    assert [m.text for m in chat.messages] == ["agenda\n[10:00, 28/3/22] standup", "ok"]


# --- 2. an era or "year" word after the year -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        # iOS set to the Buddhist calendar: year 2565 BE is 2022
        (
            f"[3/18/2565 BE, 14:56:01] Somchai: สวัสดี\n{LRM}[3/27/2565 BE, 21:41:55] Nok: {LRM}image omitted\n",
            [
                (datetime(2022, 3, 18, 14, 56, 1), "Somchai", "text"),
                (datetime(2022, 3, 27, 21, 41, 55), "Nok", "media"),
            ],
        ),
        # Bulgarian and Macedonian write "г." (year) after the date
        (
            "14.07.25 г., 23:34 - Иван: здрасти\n15.07.25 г., 8:05 - Мария: <Без мултимедия>\n",
            [
                (datetime(2025, 7, 14, 23, 34), "Иван", "text"),
                (datetime(2025, 7, 15, 8, 5), "Мария", "media"),
            ],
        ),
        ("[14.7.2025 г., 23:34:10] Петар: здраво\n", [(datetime(2025, 7, 14, 23, 34, 10), "Петар", "text")]),
    ],
    ids=["buddhist-ios", "bulgarian-android", "macedonian-ios"],
)
def test_an_era_or_year_word_after_the_year(tmp_path, text, expected):
    chat = parse(tmp_path, text)
    assert [(m.timestamp, m.author, m.kind) for m in chat.messages] == expected


# --- 3. 12-hour markers of more locales ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "header, hour",
    [
        ("14/07/2025, 11:34 PTG - ", 23),  # Malay, 12-hour by default
        ("14/07/2025, 9:34 PG - ", 9),  # a morning marker that starts with P
        ("14.7.25, 11:34 m.d. - ", 23),  # Albanian, 12-hour by default
        ("14.7.25, 9:34 p.d. - ", 9),
        ("14.07.25 11:34 odp. - ", 23),  # Czech
        ("14. 7. 2025, 11:34 pop. - ", 23),  # Slovenian
        ("14.07.25, 11:34 пп - ", 23),  # Ukrainian
        ("2025-07-14 11:34 em - ", 23),  # Swedish
        ("14.7.2025 klo 11.34 ip. - ", 23),  # Finnish
        ("14.07.25 11:34 priekšp. - ", 11),  # Latvian
        ("2025-07-14 11:34 popiet - ", 23),  # Lithuanian
        ("2025-07-14, 11:34 nm. - ", 23),  # Afrikaans
        ("14/07/2025 11:34 ከሰዓት - ", 23),  # Amharic, 12-hour by default
        ("14.07.2025 ÖS 11:34 - ", 23),  # Turkish writes it before the time
        ("2025. 07. 14. du. 11:34 - ", 23),  # Hungarian too
        ("2025. 07. 14. de. 11:34 - ", 11),
        ("03/01/2021, 9:15 in the morning - ", 9),  # English "flexible" day periods
        ("03/01/2021, 3:15 in the afternoon - ", 15),
        ("03/01/2021, 10:15 at night - ", 22),
        ("03/01/2021, 2:15 at night - ", 2),
        ("03/01/2021, 12:15 at night - ", 0),
    ],
)
def test_twelve_hour_markers_of_more_locales(tmp_path, header, hour):
    chat = parse(tmp_path, f"{header}Ana Lee: hi\n")
    assert [(m.timestamp.hour, m.author, m.text) for m in chat.messages] == [(hour, "Ana Lee", "hi")]


def test_a_24_hour_export_with_names_that_look_like_markers(tmp_path):
    chat = parse(tmp_path, "[14/07/2025, 11:34:00] em: hi\n[14/07/2025, 11:35:00] TO: yo\n")
    assert [(m.timestamp.hour, m.author) for m in chat.messages] == [(11, "em"), (11, "TO")]


# --- 4. shared locations are their author's attachments ------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "location: https://maps.google.com/?q=45.4642035,9.189982",  # Android
        "Standort: https://maps.google.com/?q=52.52,13.405",  # Android, German
        "位置：https://maps.google.com/?q=35.68,139.76",  # Android, Chinese
        "Location: https://maps.google.com/?q=-34.816833,-58.541428",  # iOS without its U+200E
        "Pimlico Gardens (London, United Kingdom): https://foursquare.com/v/4e89af95e5fa82ad4c0aa03b",
        "live location shared",
        "Live-Standort wird geteilt",
        "ubicación en tiempo real compartida",
    ],
)
def test_a_shared_location_is_media_of_its_author(tmp_path, line):
    chat = parse(tmp_path, f"14/07/2025, 23:34 - Zoe: {line}\n14/07/2025, 23:35 - Sam: on my way\n")
    assert [(m.author, m.kind) for m in chat.messages] == [("Zoe", "media"), ("Sam", "text")]


def test_a_person_who_types_a_link_with_a_label_keeps_a_text(tmp_path):
    chat = parse(
        tmp_path,
        "14/07/2025, 23:34 - Zoe: menu: https://example.com/menu\n"
        "14/07/2025, 23:35 - Sam: meet here https://maps.google.com/?q=45.1,9.2 at 8\n",
    )
    assert [m.kind for m in chat.messages] == ["text", "text"]


# --- already read right: kept so that they stay so -----------------------------------------------------------

ALREADY_READ = {
    "year first with slashes (ja, zh)": ("2025/07/14 23:34 - Nok: hi\n", datetime(2025, 7, 14, 23, 34)),
    "two-digit year with dots": ("14.07.25, 23:34 - Nok: hi\n", datetime(2025, 7, 14, 23, 34)),
    "dashes, four-digit year": ("14-07-2025 23:34 - Nok: hi\n", datetime(2025, 7, 14, 23, 34)),
    "thai buddhist year": ("[14/7/2568 23:34:10] Nok: hi\n", datetime(2025, 7, 14, 23, 34, 10)),
    "arabic-indic digits, م": ("١٤/٧/٢٠٢٥ ١١:٣٤ م - Nok: hi\n", datetime(2025, 7, 14, 23, 34)),
    "korean android": ("2025. 7. 14. 오후 11:34 - Nok: hi\n", datetime(2025, 7, 14, 23, 34)),
    "chinese ios, 下午 before the time": (
        "[2025/7/14 下午11:34:56] Nok: hi\n",
        datetime(2025, 7, 14, 23, 34, 56),
    ),
    "czech, day-first with '. '": ("14. 7. 2025 23:34 - Nok: hi\n", datetime(2025, 7, 14, 23, 34)),
    "croatian, dot after the year": ("14. 07. 2025. 23:34 - Nok: hi\n", datetime(2025, 7, 14, 23, 34)),
    "german vorm./nachm.": ("14.07.25, 11:34 nachm. - Nok: hi\n", datetime(2025, 7, 14, 23, 34)),
    "narrow space before PM, LRM first": (
        f"{LRM}[7/14/25, 11:34:00{NNBSP}PM] Nok: hi\n",
        datetime(2025, 7, 14, 23, 34),
    ),
    "vietnamese SA/CH after the time": ("14/07/2025, 11:34 CH - Nok: hi\n", datetime(2025, 7, 14, 23, 34)),
}


@pytest.mark.parametrize("name", sorted(ALREADY_READ))
def test_header_formats_that_were_already_read(tmp_path, name):
    text, when = ALREADY_READ[name]
    chat = parse(tmp_path, text)
    assert [(m.timestamp, m.author, m.text) for m in chat.messages] == [(when, "Nok", "hi")]


def test_message_kinds_that_were_already_read(tmp_path):
    chat = parse(
        tmp_path,
        "14.07.25, 23:30 - Jonas: bis morgen <Diese Nachricht wurde bearbeitet>\n"
        "14.07.25, 23:31 - Jonas: Du hast diese Nachricht gelöscht\n"
        "14.07.25, 23:32 - Anna: Waiting for this message. This may take a while.\n"
        "14.07.25, 23:33 - Anna: <View once voice message omitted>\n"
        "14.07.25, 23:34 - Anna: Kim Lee.vcf (file attached)\n"
        "14.07.25, 23:35 - Anna: Missed voice call\n"
        "14.07.25, 23:36 - Anna turned on disappearing messages. All new messages will disappear from this chat "
        "7 days after they're sent.\n"
        "14.07.25, 23:37 - Jonas: POLL:\nWohin?\nOPTION: Berg (2 votes)\nOPTION: See (0 votes)\n"
        "14.07.25, 23:38 - \u202a+49 151 2345678\u202c: Termin: 12:30 - passt?\n"
        "14/07/2025 is the date\n",
    )
    assert [(m.author, m.kind) for m in chat.messages] == [
        ("Jonas", "edited"),
        ("Jonas", "deleted"),
        ("Anna", "deleted"),
        ("Anna", "media"),
        ("Anna", "media"),
        (None, "system"),
        (None, "system"),
        ("Jonas", "poll"),
        ("+49 151 2345678", "text"),
    ]
    assert chat.messages[0].text == "bis morgen"
    assert chat.messages[-1].text == "Termin: 12:30 - passt?\n14/07/2025 is the date"


@pytest.mark.parametrize(
    "encode, encoding",
    [
        (lambda t: b"\xff\xfe" + t.encode("utf-16-le"), "utf-16-le"),
        (lambda t: t.encode("utf-16-be"), "utf-16-be"),
        (lambda t: b"\xef\xbb\xbf" + t.encode("utf-8"), "utf-8-sig"),
        (lambda t: t.encode("cp1252"), "cp1252"),
    ],
    ids=["utf-16-bom", "utf-16-be-no-bom", "utf-8-bom", "cp1252-resaved"],
)
def test_encodings_and_crlf_were_already_read(tmp_path, encode, encoding):
    text = "14/07/2025, 23:34 - José: ¿qué tal?\r\ncafé\r\n14/07/2025, 23:35 - Zoë: bien\r\n"
    chat = parse(tmp_path, encode(text))
    assert chat.stats["encoding"] == encoding
    assert [(m.author, m.text) for m in chat.messages] == [("José", "¿qué tal?\ncafé"), ("Zoë", "bien")]


def test_a_zip_with_media_and_a_second_txt_was_already_read(tmp_path):
    path = tmp_path / "WhatsApp Chat - Kim.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "not a chat at all\n")
        archive.writestr(
            "_chat.txt",
            "[14/07/2025, 23:34:00] Kim: hi\n"
            f"[14/07/2025, 23:35:00] Sam: {LRM}<attached: 00000001-PHOTO-2025-07-14-23-35-00.jpg>\n",
        )
        archive.writestr("00000001-PHOTO-2025-07-14-23-35-00.jpg", b"\xff\xd8\xff")
    chat = parse_whatsapp_export(path)
    assert chat.stats["archive_member"] == "_chat.txt"
    assert chat.stats["media_files"] == ["notes.txt", "00000001-PHOTO-2025-07-14-23-35-00.jpg"]
    assert [(m.author, m.kind) for m in chat.messages] == [("Kim", "text"), ("Sam", "media")]
