"""WhatsApp export formats the shared sample files do not cover, written here as small inputs.

Each test states what a user would see: which timestamps, authors and message kinds come out of an export
written in that format.
"""

from __future__ import annotations

import gc
import hashlib
import json
import zipfile
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pytest

from storage.schemas import MESSAGE_SCHEMA
from tasks.records import InputFileError, SkipCounter
from tasks.whatsapp import NotAnExportError, parse_whatsapp_export

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "whatsapp"


def parse(tmp_path: Path, text: str | bytes, name: str = "chat.txt", **kwargs):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return parse_whatsapp_export(path, **kwargs)


def summary(chat) -> list[tuple]:
    return [(m.timestamp, m.author, m.kind, m.text) for m in chat.messages]


# --- header variants -------------------------------------------------------------------------------------


def test_arabic_android_export_with_arabic_indic_digits_and_localised_clock(tmp_path):
    rlm = "\u200f"
    text = (
        f"{rlm}١٥{rlm}/٣{rlm}/٢٠٢٣، ١٠:٣٠ م - سارة: مرحبا يا سام\n"
        f"{rlm}١٥{rlm}/٣{rlm}/٢٠٢٣، ١٠:٣٢ م - سام: أهلا، كيف حالك؟\n"
        f"{rlm}١٦{rlm}/٣{rlm}/٢٠٢٣، ١٢:١٥ ص - سارة: {rlm}<تم استبعاد الوسائط>\n"
        f"{rlm}١٦{rlm}/٣{rlm}/٢٠٢٣، ٩:٠٥ ص - سام: تم حذف هذه الرسالة\n"
    )
    chat = parse(tmp_path, text)
    assert summary(chat) == [
        (datetime(2023, 3, 15, 22, 30), "سارة", "text", "مرحبا يا سام"),
        (datetime(2023, 3, 15, 22, 32), "سام", "text", "أهلا، كيف حالك؟"),
        (datetime(2023, 3, 16, 0, 15), "سارة", "media", "<تم استبعاد الوسائط>"),
        (datetime(2023, 3, 16, 9, 5), "سام", "deleted", "تم حذف هذه الرسالة"),
    ]
    assert chat.stats["date_order"] == "dmy" and not chat.stats["date_order_ambiguous"]


def test_persian_digits_in_gregorian_and_persian_calendar_dates(tmp_path):
    gregorian = parse(tmp_path, "۲۰۲۳/۰۶/۰۵، ۱۴:۳۰ - علی: سلام\n", name="g.txt")
    persian = parse(tmp_path, "۱۴۰۲/۰۳/۱۵، ۱۴:۳۰ - علی: سلام\n", name="p.txt")
    assert gregorian.messages[0].timestamp == datetime(2023, 6, 5, 14, 30)
    # 15 Khordad 1402 is 5 June 2023
    assert persian.messages[0].timestamp == datetime(2023, 6, 5, 14, 30)


def test_dots_in_the_time_and_single_digit_day_and_month(tmp_path):
    chat = parse(tmp_path, "[1.1.2019, 12.00.00] Sam: Happy new year!\n[1.1.2019, 12.00.05] Kim: You too\n")
    assert summary(chat) == [
        (datetime(2019, 1, 1, 12, 0, 0), "Sam", "text", "Happy new year!"),
        (datetime(2019, 1, 1, 12, 0, 5), "Kim", "text", "You too"),
    ]
    assert chat.stats["header_format"] == "[dd.MM.yyyy, HH.mm.ss] Name: text"
    assert chat.stats["date_order_ambiguous"] is True


def test_ios_2025_narrow_spaces_and_tilde_for_non_contacts(tmp_path):
    nnbsp, lrm = "\u202f", "\u200e"
    text = (
        f"[3/14/25, 9:05:12{nnbsp}AM] ~{nnbsp}Sam Rivera: hey, is this Alex?\n"
        f"{lrm}[3/14/25, 9:06:40{nnbsp}PM] Alex Kim: {lrm}image omitted\n"
        f"[3/14/25, 9:07:00{nnbsp}PM] ~{nnbsp}Sam Rivera: {lrm}Missed voice call\n"
        f"[3/14/25, 9:08:00{nnbsp}PM] Alex Kim: sorry, in the car{nnbsp}🚗 {lrm}<This message was edited>\n"
    )
    chat = parse(tmp_path, text)
    assert summary(chat) == [
        (datetime(2025, 3, 14, 9, 5, 12), "Sam Rivera", "text", "hey, is this Alex?"),
        (datetime(2025, 3, 14, 21, 6, 40), "Alex Kim", "media", "image omitted"),
        (datetime(2025, 3, 14, 21, 7, 0), None, "system", "Sam Rivera: Missed voice call"),
        (datetime(2025, 3, 14, 21, 8, 0), "Alex Kim", "edited", "sorry, in the car 🚗"),
    ]
    assert chat.stats["authors"] == {"Sam Rivera": 1, "Alex Kim": 2}


def test_legacy_header_with_colon_after_the_seconds(tmp_path):
    text = "24/12/14, 17:08:22: Sam: Merry Christmas: all of you!\n24/12/14, 17:09:01: Kim: Same to you\n"
    chat = parse(tmp_path, text)
    assert summary(chat) == [
        (datetime(2014, 12, 24, 17, 8, 22), "Sam", "text", "Merry Christmas: all of you!"),
        (datetime(2014, 12, 24, 17, 9, 1), "Kim", "text", "Same to you"),
    ]
    assert chat.stats["header_format"] == "dd/MM/yy, HH:mm:ss: Name: text"


def test_bracketless_ios_header(tmp_path):
    chat = parse(tmp_path, "15/12/2025, 10:34:00 PM Charlie: no brackets here\n")
    assert summary(chat) == [(datetime(2025, 12, 15, 22, 34), "Charlie", "text", "no brackets here")]


@pytest.mark.parametrize(
    "clock, hour",
    [
        ("1:05 PM", 13),
        ("1:05 pm", 13),
        ("1:05 p.m.", 13),
        ("1:05 p. m.", 13),
        ("1:05 p.\u00a0m.", 13),
        ("12:05 a.m.", 0),
        ("12:05 AM", 0),
        ("12:05 p. m.", 12),
        ("11:05\u202fam", 11),
        ("13:05", 13),
        ("13:05.", 13),
        ("1:05 م", 13),
        ("1:05 ص", 1),
    ],
)
def test_clock_variants(tmp_path, clock, hour):
    chat = parse(tmp_path, f"25/12/2021, {clock} - Sam: hi\n")
    assert chat.messages[0].timestamp == datetime(2021, 12, 25, hour, 5)


@pytest.mark.parametrize(
    "stamp",
    ["2021-12-25, 14:05", "2021.12.25, 14:05", "2021/12/25 14:05", "25-12-2021, 14:05", "25.12.21, 14:05"],
)
def test_separators_and_year_positions(tmp_path, stamp):
    chat = parse(tmp_path, f"{stamp} - Sam: hi\n")
    assert chat.messages[0].timestamp == datetime(2021, 12, 25, 14, 5)


def _whatstk_formats() -> list[str]:
    path = SHARED / "whatstk_header_format_support.json"
    if not path.exists():
        return []
    return [entry["format"] for entry in json.loads(path.read_text(encoding="utf-8"))]


@pytest.mark.skipif(not _whatstk_formats(), reason=f"shared sample data not found at {SHARED}")
def test_every_header_format_of_the_whatstk_checklist(tmp_path):
    moments = [
        datetime(2021, 3, 25, 14, 7, 9),
        datetime(2021, 3, 26, 9, 15, 30),
        datetime(2021, 4, 2, 0, 45, 0),
        datetime(2021, 4, 17, 12, 59, 59),
    ]
    failures = []
    for i, fmt in enumerate(_whatstk_formats()):
        lines = [m.strftime(fmt.replace("%name", "Sam")) + f" message {n}" for n, m in enumerate(moments)]
        chat = parse(tmp_path, "\n".join(lines) + "\n", name=f"f{i}.txt")
        expected = [m if "%S" in fmt else m.replace(second=0) for m in moments]
        got = [m.timestamp for m in chat.messages]
        if got != expected or {m.author for m in chat.messages} != {"Sam"}:
            failures.append((fmt, got))
    assert failures == []


# --- date order ------------------------------------------------------------------------------------------


def test_date_order_is_ambiguous_when_no_day_exceeds_12(tmp_path):
    text = "03/04/21, 10:00 - Sam: hi\n05/04/21, 10:00 - Kim: hello\n"
    default = parse(tmp_path, text)
    assert default.messages[0].timestamp == datetime(2021, 4, 3, 10, 0)
    assert default.stats["date_order"] == "dmy"
    assert default.stats["date_order_ambiguous"] is True
    assert default.stats["date_order_source"] == "default"

    chosen = parse(tmp_path, text, date_order="mdy")
    assert chosen.messages[0].timestamp == datetime(2021, 3, 4, 10, 0)
    assert chosen.stats["date_order_source"] == "argument"
    assert chosen.stats["date_order_ambiguous"] is True


@pytest.mark.parametrize("order", ["dmy", "mdy"])
def test_date_order_decided_by_a_late_day_above_12(tmp_path, order):
    lines = []
    for month in range(1, 13):
        for day in range(1, 13):
            a, b = (day, month) if order == "dmy" else (month, day)
            lines.append(f"{a:02d}/{b:02d}/2020, 10:{day:02d} - Sam: day {day} of month {month}")
    lines.append(
        "25/12/2020, 18:00 - Kim: Merry Christmas"
        if order == "dmy"
        else "12/25/2020, 18:00 - Kim: Merry Christmas"
    )
    chat = parse(tmp_path, "\n".join(lines) + "\n", date_order="mdy" if order == "dmy" else "dmy")
    assert chat.stats["date_order"] == order
    assert chat.stats["date_order_ambiguous"] is False
    assert chat.stats["date_order_source"] == "evidence"
    # the very first line, "02/01" or "01/02", is read in the order the last line proved
    assert chat.messages[1].timestamp == datetime(2020, 1, 2, 10, 2)
    assert chat.messages[-1].timestamp == datetime(2020, 12, 25, 18, 0)
    assert [m.timestamp for m in chat.messages] == sorted(m.timestamp for m in chat.messages)


def test_a_year_first_argument_cannot_make_two_digit_dates_impossible(tmp_path):
    # read year first, "1/13/15" has neither a month 13 nor a month 15: the year is last, the month first
    chat = parse(tmp_path, "1/13/15, 9:05 AM - Sam: hi\n", date_order="ymd")
    assert chat.messages[0].timestamp == datetime(2015, 1, 13, 9, 5)
    assert chat.stats["date_order"] == "mdy"


def test_a_header_with_an_impossible_date_is_text_of_the_previous_message(tmp_path):
    text = "10/01/2021, 10:00 - Sam: the dates that never exist:\n31/02/2021, 10:00 - not a message\n"
    chat = parse(tmp_path, text)
    assert len(chat.messages) == 1
    assert chat.messages[0].text == "the dates that never exist:\n31/02/2021, 10:00 - not a message"
    assert chat.stats["invalid_header_dates"] == 1


def test_mixed_android_and_ios_lines_each_keep_their_own_order(tmp_path):
    text = (
        "12/15/25, 10:30 AM - Sam: android, month first\n"
        "[15/12/2025, 10:32:03 AM] Kim: iOS, day first\n"
        "[03/12/2025, 10:33:00 AM] Kim: iOS again\n"
    )
    chat = parse(tmp_path, text)
    assert [m.timestamp.date().isoformat() for m in chat.messages] == [
        "2025-12-15",
        "2025-12-15",
        "2025-12-03",
    ]


# --- lines, authors, encodings ---------------------------------------------------------------------------


def test_bom_crlf_and_mixed_line_endings(tmp_path):
    data = (
        b"\xef\xbb\xbf"
        + b"12/01/2020, 10:00 - Sam: first line\r\nsecond line\r\n\r\nafter a blank line\r\n"
        + b"13/01/2020, 10:05 - Kim: hi\n13/01/2020, 10:06 - Sam: bye\r13/01/2020, 10:07 - Kim: ok"
    )
    chat = parse(tmp_path, data)
    assert [m.text for m in chat.messages] == [
        "first line\nsecond line\n\nafter a blank line",
        "hi",
        "bye",
        "ok",
    ]
    assert chat.stats["encoding"] == "utf-8-sig"


def test_utf16_export_with_bom(tmp_path):
    chat = parse(tmp_path, "\ufeff25/12/2021, 10:00 - Sam: hi\n".encode("utf-16-le"))
    assert summary(chat) == [(datetime(2021, 12, 25, 10, 0), "Sam", "text", "hi")]


def test_authors_with_emoji_phone_numbers_trailing_spaces_and_isolates(tmp_path):
    text = (
        "25/12/2021, 10:00 - Sam 🌻: hi: colons stay in the text\n"
        "25/12/2021, 10:01 - +44 7700 900123: who is this?\n"
        "25/12/2021, 10:02 - Alessandro : trailing space in the name\n"
        "25/12/2021, 10:03 - \u2068Kim Lee\u2069: isolates around the name\n"
        "25/12/2021, 10:04 - ~ Jo: not in contacts\n"
    )
    chat = parse(tmp_path, text)
    assert [m.author for m in chat.messages] == ["Sam 🌻", "+44 7700 900123", "Alessandro", "Kim Lee", "Jo"]
    assert chat.messages[0].text == "hi: colons stay in the text"


def test_lines_before_the_first_header_are_skipped_and_counted(tmp_path):
    skips = SkipCounter()
    text = "garbage from a bad copy\n\nmore garbage\n25/12/2021, 10:00 - Sam: hi\n"
    chat = parse(tmp_path, text, skips=skips)
    assert len(chat.messages) == 1
    assert chat.stats["unattached_lines"] == 2
    assert skips.counts == {"whatsapp_line_before_first_header": 2}
    assert "chat.txt:1" in skips.examples["whatsapp_line_before_first_header"]


def test_rows_fit_the_message_schema(tmp_path):
    chat = parse(tmp_path, "25/12/2021, 10:00 - Sam: hi\n25/12/2021, 10:01 - Messages and calls are e2e\n")
    table = pa.Table.from_pylist(chat.as_rows(), schema=MESSAGE_SCHEMA)
    assert table.num_rows == 2
    assert table.column("index").to_pylist() == [0, 1]
    assert table.column("author").to_pylist() == ["Sam", None]
    assert chat.chat_id == hashlib.sha256((tmp_path / "chat.txt").read_bytes()).hexdigest()[:32]
    assert set(table.column("source_file").to_pylist()) == {"chat.txt"}


# --- kinds -----------------------------------------------------------------------------------------------

MEDIA_PLACEHOLDERS = [
    "<Media omitted>",
    "<Médias omis>",
    "‹Médias omis›",
    "<Multimedia omitido>",
    "<Mídia oculta>",
    "<Medien ausgeschlossen>",
    "<Media omessi>",
    "<Media weggelaten>",
    "<Medya dahil edilmedi>",
    "<تم استبعاد الوسائط>",
    "<Media tidak disertakan>",
    "image omitted",
    "video omitted",
    "sticker omitted",
    "GIF omitted",
    "audio omitted",
    "document omitted",
    "imagen omitida",
    "Bild weggelassen",
    "<attached: 00000012-PHOTO-2024-05-01-10-00-00.jpg>",
    "<allegato: 00000006-PHOTO-2018-04-17.jpg>",
    "<Anhang: 00000007-AUDIO-2021-02-01.opus>",
    "<pièce jointe : 00000008-VIDEO-2022.mp4>",
    "IMG-20180627-WA0028.jpg (file attached)",
    "PTT-20180620-WA0017.opus (file allegato)",
    "VID-20181031-WA0007.mp4 (Datei angehängt)\nDas hier meine ich",
    "IMG-20200101-WA0001.jpg (fichier joint)",
    "IMG-20200101-WA0001.jpg (archivo adjunto)",
    "IMG-20200101-WA0001.jpg (arquivo anexado)",
    "IMG-20200101-WA0001.jpg (bestand bijgevoegd)",
    "Notes trip.pdf (dosya ekli)",
    "Notes trip.pdf (ملف مرفق)",
    "Notes trip.pdf (file terlampir)",
    "Holiday plan.pdf • 3 pages <attached: 00000020-Holiday plan.pdf>",
    "Max Caulfield.vcf",
    "Max Caulfield.vcf (Datei angehängt)",
    "<View once voice message omitted>",
]


@pytest.mark.parametrize("body", MEDIA_PLACEHOLDERS)
def test_media_placeholders_in_every_language(tmp_path, body):
    chat = parse(tmp_path, f"25/12/2021, 10:00 - Sam: {body}\n")
    assert (chat.messages[0].kind, chat.messages[0].author) == ("media", "Sam")


DELETED_PLACEHOLDERS = [
    "This message was deleted",
    "This message was deleted.",
    "You deleted this message",
    "Ce message a été supprimé",
    "Vous avez supprimé ce message",
    "Se eliminó este mensaje.",
    "Eliminaste este mensaje",
    "Mensagem apagada",
    "Você apagou esta mensagem",
    "Diese Nachricht wurde gelöscht.",
    "Du hast diese Nachricht gelöscht.",
    "Questo messaggio è stato eliminato",
    "Hai eliminato questo messaggio",
    "Dit bericht is verwijderd",
    "Je hebt dit bericht verwijderd",
    "Bu mesaj silindi",
    "Bu mesajı sildiniz",
    "تم حذف هذه الرسالة",
    "لقد حذفت هذه الرسالة",
    "Pesan ini telah dihapus",
    "Anda menghapus pesan ini",
]


@pytest.mark.parametrize("body", DELETED_PLACEHOLDERS)
def test_deleted_messages_in_every_language(tmp_path, body):
    chat = parse(tmp_path, f"25/12/2021, 10:00 - Sam: {body}\n")
    assert (chat.messages[0].kind, chat.messages[0].author) == ("deleted", "Sam")


@pytest.mark.parametrize(
    "marker",
    [
        "<This message was edited>",
        "<Ce message a été modifié>",
        "<Se editó este mensaje.>",
        "<Esta mensagem foi editada>",
        "<Diese Nachricht wurde bearbeitet>",
        "<Questo messaggio è stato modificato>",
        "<Dit bericht is bewerkt>",
        "<Bu mesaj düzenlendi>",
        "<تم تعديل هذه الرسالة>",
        "<Pesan ini telah diedit>",
    ],
)
def test_edited_marker_is_removed_and_the_text_kept(tmp_path, marker):
    chat = parse(tmp_path, f"25/12/2021, 10:00 - Sam: see you at 8\ninstead of 7 {marker}\n")
    assert (chat.messages[0].kind, chat.messages[0].text) == ("edited", "see you at 8\ninstead of 7")


@pytest.mark.parametrize(
    "rest, text",
    [
        (
            "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, "
            "can read or listen to them. Tap to learn more.",
            None,
        ),
        ('Sam created group "Sunday football"', None),
        ("Sam added Kim", None),
        ("Kim left", None),
        ("Sam removed Jo", None),
        ("You were added", None),
        ('Sam changed the subject from "Trip" to "Trip: day 2"', None),
        ("Sam changed this group's icon", None),
        ("Sam changed the group description", None),
        ("Kim changed their phone number to a new number. Tap to message or add the new number.", None),
        ("Your security code with Kim changed. Tap to learn more.", None),
        (
            "Family: Messages and calls are end-to-end encrypted. Only people in this chat can read, listen "
            "to, or share them. Learn more.",
            None,
        ),
        ("Sam: Missed voice call", None),
        ("Sam: Missed video call", None),
        ("Sam: Appel vocal manqué", None),
        ("Sam: Verpasster Sprachanruf", None),
        ("Kim: Nachrichten und Anrufe sind Ende-zu-Ende-verschlüsselt.", None),
        ("Kim: Il codice di sicurezza di Sam è cambiato.", None),
    ],
)
def test_system_lines_have_no_author(tmp_path, rest, text):
    chat = parse(tmp_path, f"25/12/2021, 10:00 - {rest}\n")
    message = chat.messages[0]
    assert (message.kind, message.author, message.text) == ("system", None, text or rest)


def test_ios_marked_events_after_a_name_are_system(tmp_path):
    lrm = "\u200e"
    chat = parse(
        tmp_path,
        f"[25/12/2021, 10:00:00] Football: {lrm}Sam added Kim\n"
        f"[25/12/2021, 10:01:00] Kim: Sam added me, hi all\n",
    )
    assert [(m.kind, m.author) for m in chat.messages] == [("system", None), ("text", "Kim")]


def test_messages_that_merely_mention_system_words_stay_text(tmp_path):
    text = (
        "25/12/2021, 10:00 - Sam: I added salt to the soup\n"
        "25/12/2021, 10:01 - Kim: messages are end-to-end encrypted, right?\n"
        "25/12/2021, 10:02 - Sam: what's the security code for the gate?\n"
        "25/12/2021, 10:03 - Kim: the image omitted from the report was mine\n"
    )
    chat = parse(tmp_path, text)
    assert [m.kind for m in chat.messages] == ["text"] * 4


def test_poll_block(tmp_path):
    text = (
        "[20.06.19, 16:30:44] Sam: POLL:\nWhen can we meet?\nOPTION: Thursday (2 votes)\n"
        "OPTION: Friday (1 vote)\n[20.06.19, 16:44:30] Kim: Thursday it is\n"
    )
    chat = parse(tmp_path, text)
    assert [m.kind for m in chat.messages] == ["poll", "text"]
    assert chat.messages[0].text.splitlines()[1] == "When can we meet?"
    assert chat.stats["kinds"]["poll"] == 1


# --- files that cannot be read ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, reason",
    [
        ("# Shopping list\n- eggs\n- milk\n", "no WhatsApp message header"),
        ('{"messages": [{"from": "Sam", "text": "hi"}]}\n', "no WhatsApp message header"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("", "empty"),
    ],
)
def test_a_file_that_is_not_an_export_names_the_file(tmp_path, content, reason):
    path = tmp_path / "notes.txt"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    with pytest.raises(InputFileError) as error:
        parse_whatsapp_export(path)
    assert str(path) in str(error.value) and reason in str(error.value)


def test_a_file_that_is_no_export_keeps_its_first_lines_for_the_error(tmp_path):
    with pytest.raises(NotAnExportError) as error:
        parse(tmp_path, "# Shopping list\n\n- eggs\n- milk\n", name="notes.txt")
    assert error.value.lines == ["# Shopping list", "- eggs", "- milk"]


def test_the_garbage_collector_is_left_as_it_was(tmp_path):
    text = "25/12/2021, 10:00 - Sam: hi\n"
    assert gc.isenabled()
    parse(tmp_path, text)
    assert gc.isenabled()
    gc.disable()
    try:
        parse(tmp_path, text)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_long_text_without_headers_fails_fast(tmp_path):
    path = tmp_path / "book.txt"
    path.write_text("It was a dark and stormy night.\n" * 5000 + "25/12/2021, 10:00 - Sam: hi\n")
    with pytest.raises(InputFileError, match="no WhatsApp message header in the first"):
        parse_whatsapp_export(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputFileError, match="no such file"):
        parse_whatsapp_export(tmp_path / "absent.txt")
    with pytest.raises(InputFileError, match="is a directory"):
        parse_whatsapp_export(tmp_path)


def test_invalid_date_order_argument(tmp_path):
    with pytest.raises(ValueError, match="date_order"):
        parse(tmp_path, "25/12/2021, 10:00 - Sam: hi\n", date_order="yesterday")


# --- zip archives ----------------------------------------------------------------------------------------

CHAT = "[25/12/2021, 10:00:00] Sam: look\n[25/12/2021, 10:00:05] Sam: \u200e<attached: 00000001-PHOTO.jpg>\n"


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_zip_with_media_lists_files_and_skips_macos_junk(tmp_path):
    path = make_zip(
        tmp_path / "WhatsApp Chat - Sam.zip",
        {
            "_chat.txt": CHAT.encode(),
            "__MACOSX/._chat.txt": b"\x00\x05\x16\x07junk",
            "00000001-PHOTO.jpg": b"\xff\xd8\xff\xe0fake\xff\xd9",
            "notes.txt": b"not the chat",
        },
    )
    chat = parse_whatsapp_export(path)
    assert [(m.author, m.kind) for m in chat.messages] == [("Sam", "text"), ("Sam", "media")]
    assert chat.stats["archive_member"] == "_chat.txt"
    assert chat.stats["media_files"] == ["00000001-PHOTO.jpg", "notes.txt"]
    assert chat.source_file == "WhatsApp Chat - Sam.zip"
    assert chat.chat_id == hashlib.sha256(path.read_bytes()).hexdigest()[:32]


def test_android_zip_with_a_named_chat_file(tmp_path):
    android = "25/12/2021, 10:00 - Sam: IMG-20211225-WA0001.jpg (file attached)\n"
    path = make_zip(
        tmp_path / "export.zip",
        {
            "WhatsApp Chat with Sam.txt": android.encode(),
            "IMG-20211225-WA0001.jpg": b"\xff\xd8\xff\xd9",
        },
    )
    chat = parse_whatsapp_export(path)
    assert chat.stats["archive_member"] == "WhatsApp Chat with Sam.txt"
    assert chat.messages[0].kind == "media"


@pytest.mark.parametrize("evil", ["../../etc/cron.d/evil", "/etc/passwd", "media/../../up.txt", "C:/x.txt"])
def test_zip_slip_names_are_rejected(tmp_path, evil):
    path = make_zip(tmp_path / "evil.zip", {"_chat.txt": CHAT.encode(), evil: b"x"})
    with pytest.raises(InputFileError, match="zip slip") as error:
        parse_whatsapp_export(path)
    assert str(path) in str(error.value)


@pytest.mark.parametrize(
    "members, reason",
    [
        ({"photo.jpg": b"\xff\xd8"}, "no chat text file"),
        ({"__MACOSX/._chat.txt": b"junk"}, "no chat text file"),
        ({"readme.txt": b"hello there\n"}, "no WhatsApp chat inside the archive"),
    ],
)
def test_zip_without_a_chat(tmp_path, members, reason):
    path = make_zip(tmp_path / "export.zip", members)
    with pytest.raises(InputFileError, match=reason):
        parse_whatsapp_export(path)


def test_broken_zip(tmp_path):
    path = tmp_path / "export.zip"
    path.write_bytes(b"PK\x03\x04 truncated archive")
    with pytest.raises(InputFileError, match="not a readable zip archive") as error:
        parse_whatsapp_export(path)
    assert str(path) in str(error.value)


# --- exports from locales the shared files lack, as their phones write them --------------------------------

RLM, LRM, NNBSP, LRE, PDF = "\u200f", "\u200e", "\u202f", "\u202a", "\u202c"


def _arabic_digits(text: str) -> str:
    return text.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))


def _arabic_stamp(day: int, month: int, year: int, clock: str) -> str:
    d, m, y = (_arabic_digits(str(n)) for n in (day, month, year))
    return f"{RLM}{d}{RLM}/{m}{RLM}/{y}، {_arabic_digits(clock)}"


LOCALE_EXPORTS = {
    "arabic_android": (
        "\n".join(
            [
                _arabic_stamp(12, 3, 2023, "9:15 م")
                + " - الرسائل والمكالمات مشفرة تمامًا بين الطرفين. لا أحد خارج هذه الدردشة يمكنه قراءتها.",
                _arabic_stamp(12, 3, 2023, "9:16 م") + f' - {RLM}أنشأ أحمد المجموعة "العائلة"',
                _arabic_stamp(12, 3, 2023, "9:16 م") + f" - {RLM}أضاف أحمد {LRE}+212 661-234567{PDF}",
                _arabic_stamp(12, 3, 2023, "9:20 م") + " - أحمد: السلام عليكم",
                _arabic_stamp(12, 3, 2023, "9:21 م") + f" - {LRE}+212 661-234567{PDF}: وعليكم السلام",
                "كيف الحال؟",
                _arabic_stamp(13, 3, 2023, "10:05 ص") + f" - سارة: {RLM}<تم استبعاد الوسائط>",
                _arabic_stamp(13, 3, 2023, "10:06 ص") + " - سارة: تم حذف هذه الرسالة",
                _arabic_stamp(13, 3, 2023, "10:08 ص") + f" - أحمد: نلتقي غدا {RLM}<تم تعديل هذه الرسالة>",
                _arabic_stamp(13, 3, 2023, "12:30 م") + " - سارة: IMG-20230313-WA0004.jpg (ملف مرفق)",
            ]
        )
        + "\n",
        [
            (datetime(2023, 3, 12, 21, 15), None, "system"),
            (datetime(2023, 3, 12, 21, 16), None, "system"),
            (datetime(2023, 3, 12, 21, 16), None, "system"),
            (datetime(2023, 3, 12, 21, 20), "أحمد", "text"),
            (datetime(2023, 3, 12, 21, 21), "+212 661-234567", "text"),
            (datetime(2023, 3, 13, 10, 5), "سارة", "media"),
            (datetime(2023, 3, 13, 10, 6), "سارة", "deleted"),
            (datetime(2023, 3, 13, 10, 8), "أحمد", "edited"),
            (datetime(2023, 3, 13, 12, 30), "سارة", "media"),
        ],
    ),
    "arabic_ios": (
        f"{LRM}[{_arabic_digits('15/3/2023')}، {_arabic_digits('10:30:12')} م] سارة: مرحبا\n"
        f"[{_arabic_digits('15/3/2023')}، {_arabic_digits('10:31:00')} م] سام: {LRM}تم استبعاد الصورة\n",
        [(datetime(2023, 3, 15, 22, 30, 12), "سارة", "text"), (datetime(2023, 3, 15, 22, 31), "سام", "media")],
    ),
    "turkish_android": (
        "15.03.2023 22:30 - Mesajlar ve aramalar uçtan uca şifrelidir. Bu sohbetin dışında bulunan hiç kimse, "
        "WhatsApp bile bunları okuyamaz ve dinleyemez. Daha fazla bilgi edinmek için dokunun.\n"
        "15.03.2023 22:31 - Ayşe Yılmaz: Merhaba! Nasılsın?\n"
        "15.03.2023 22:32 - Mehmet: İyiyim, sen?\nYarın buluşalım mı: saat 10'da?\n"
        "16.03.2023 09:01 - Mehmet: <Medya dahil edilmedi>\n"
        "16.03.2023 09:02 - Ayşe Yılmaz: Bu mesaj silindi\n"
        "16.03.2023 09:03 - Mehmet: yarın görüşürüz <Bu mesaj düzenlendi>\n"
        "16.03.2023 09:05 - Ayşe Yılmaz: IMG-20230316-WA0003.jpg (dosya ekli)\n",
        [
            (datetime(2023, 3, 15, 22, 30), None, "system"),
            (datetime(2023, 3, 15, 22, 31), "Ayşe Yılmaz", "text"),
            (datetime(2023, 3, 15, 22, 32), "Mehmet", "text"),
            (datetime(2023, 3, 16, 9, 1), "Mehmet", "media"),
            (datetime(2023, 3, 16, 9, 2), "Ayşe Yılmaz", "deleted"),
            (datetime(2023, 3, 16, 9, 3), "Mehmet", "edited"),
            (datetime(2023, 3, 16, 9, 5), "Ayşe Yılmaz", "media"),
        ],
    ),
    "turkish_ios": (
        f"[15.03.2023 22:30:12] Ayşe: {LRM}Mesajlar ve aramalar uçtan uca şifrelidir.\n"
        "[15.03.2023 22:31:40] Ayşe: Selam\n"
        f"[16.03.2023 09:01:02] Mehmet: {LRM}görüntü dahil edilmedi\n",
        [
            (datetime(2023, 3, 15, 22, 30, 12), None, "system"),
            (datetime(2023, 3, 15, 22, 31, 40), "Ayşe", "text"),
            (datetime(2023, 3, 16, 9, 1, 2), "Mehmet", "media"),
        ],
    ),
    "dutch_android": (
        "15-03-2023 22:30 - Berichten en oproepen worden end-to-end versleuteld. Niemand buiten deze chat kan ze "
        "lezen. Tik voor meer informatie.\n"
        '15-03-2023 22:30 - Jan heeft groep "Zeilen: 2023" aangemaakt\n'
        "15-03-2023 22:32 - Jan de Vries: Hoi allemaal!\n"
        "16-03-2023 08:00 - Piet: <Media weggelaten>\n"
        "16-03-2023 08:01 - Piet: Dit bericht is verwijderd\n"
        "16-03-2023 08:02 - Jan de Vries: tot zaterdag <Dit bericht is bewerkt>\n"
        "16-03-2023 08:03 - Piet heeft de groep verlaten\n",
        [
            (datetime(2023, 3, 15, 22, 30), None, "system"),
            (datetime(2023, 3, 15, 22, 30), None, "system"),
            (datetime(2023, 3, 15, 22, 32), "Jan de Vries", "text"),
            (datetime(2023, 3, 16, 8, 0), "Piet", "media"),
            (datetime(2023, 3, 16, 8, 1), "Piet", "deleted"),
            (datetime(2023, 3, 16, 8, 2), "Jan de Vries", "edited"),
            (datetime(2023, 3, 16, 8, 3), None, "system"),
        ],
    ),
    "indonesian_android": (
        "15/03/23 22.30 - Pesan dan panggilan terenkripsi secara end-to-end. Tidak seorang pun di luar chat ini "
        "yang dapat membacanya. Ketuk untuk info selengkapnya.\n"
        "15/03/23 22.31 - Budi Santoso: halo, jadi ketemu jam 10.30?\n"
        "16/03/23 07.45 - Siti: <Media tidak disertakan>\n"
        "16/03/23 07.46 - Budi Santoso: Pesan ini telah dihapus\n"
        "16/03/23 07.47 - Siti: oke <Pesan ini telah diedit>\n",
        [
            (datetime(2023, 3, 15, 22, 30), None, "system"),
            (datetime(2023, 3, 15, 22, 31), "Budi Santoso", "text"),
            (datetime(2023, 3, 16, 7, 45), "Siti", "media"),
            (datetime(2023, 3, 16, 7, 46), "Budi Santoso", "deleted"),
            (datetime(2023, 3, 16, 7, 47), "Siti", "edited"),
        ],
    ),
    "indonesian_ios": (
        "[15/03/23 22.30.12] Budi: halo\n[15/03/23 22.31.40] Siti: hai juga\n",
        [(datetime(2023, 3, 15, 22, 30, 12), "Budi", "text"), (datetime(2023, 3, 15, 22, 31, 40), "Siti", "text")],
    ),
    "ios_2025_group": (
        f"[3/14/25, 9:05:12{NNBSP}AM] Book Club: {LRM}Messages and calls are end-to-end encrypted. Only people "
        "in this chat can read, listen to, or share them.\n"
        f"[3/14/25, 9:05:12{NNBSP}AM] Book Club: {LRM}Sam created this group\n"
        f"[3/14/25, 9:06:01{NNBSP}AM] ~{NNBSP}Alex: {LRM}image omitted\n"
        f"[3/14/25, 9:07:22{NNBSP}AM] Sam: who's bringing snacks?\nAlso: chapter 3 or 4?\n"
        f"[3/14/25, 9:08:00{NNBSP}AM] ~{NNBSP}Alex: {LRM}This message was deleted.\n"
        f"[3/14/25, 9:09:00{NNBSP}AM] Jordan Lee: chapter 4 {LRM}<This message was edited>\n"
        f"[3/14/25, 9:10:00{NNBSP}PM] Sam: {LRM}Notes.pdf • {LRM}3 pages {LRM}document omitted\n"
        f"[3/14/25, 9:11:00{NNBSP}PM] Jordan Lee: {LRM}sticker omitted\n"
        f"[3/15/25, 10:00:00{NNBSP}AM] ~{NNBSP}Alex: @\u2068Jordan Lee\u2069 thanks!\n",
        [
            (datetime(2025, 3, 14, 9, 5, 12), None, "system"),
            (datetime(2025, 3, 14, 9, 5, 12), None, "system"),
            (datetime(2025, 3, 14, 9, 6, 1), "Alex", "media"),
            (datetime(2025, 3, 14, 9, 7, 22), "Sam", "text"),
            (datetime(2025, 3, 14, 9, 8), "Alex", "deleted"),
            (datetime(2025, 3, 14, 9, 9), "Jordan Lee", "edited"),
            (datetime(2025, 3, 14, 21, 10), "Sam", "media"),
            (datetime(2025, 3, 14, 21, 11), "Jordan Lee", "media"),
            (datetime(2025, 3, 15, 10, 0), "Alex", "text"),
        ],
    ),
    "french_android_a": (
        "26/09/2019 à 22:39 - Les messages envoyés dans cette discussion et les appels sont désormais protégés "
        "avec le chiffrement de bout en bout. Appuyez pour plus d'informations.\n"
        "26/09/2019 à 22:39 - Camille: Salut :)\n"
        "26/09/2019 à 22:40 - Hugo: <Médias omis>\n"
        "27/09/2019 à 08:41 - Hugo: Vous avez supprimé ce message\n",
        [
            (datetime(2019, 9, 26, 22, 39), None, "system"),
            (datetime(2019, 9, 26, 22, 39), "Camille", "text"),
            (datetime(2019, 9, 26, 22, 40), "Hugo", "media"),
            (datetime(2019, 9, 27, 8, 41), "Hugo", "deleted"),
        ],
    ),
    "finnish_klo": (
        "15.3.2023 klo 22.30 - Matti: Moi!\n15.3.2023 klo 22.31 - Liisa: Hei\n",
        [(datetime(2023, 3, 15, 22, 30), "Matti", "text"), (datetime(2023, 3, 15, 22, 31), "Liisa", "text")],
    ),
    "hungarian_dotted_year_first": (
        "2023. 03. 15. 22:30 - Kovács Anna: Szia!\n2023. 03. 16. 07:05 - Péter: Jó reggelt\n",
        [(datetime(2023, 3, 15, 22, 30), "Kovács Anna", "text"), (datetime(2023, 3, 16, 7, 5), "Péter", "text")],
    ),
    "korean_ios": (
        "[2023. 3. 15. 오후 10:30:12] 민수: 안녕\n[2023. 3. 16. 오전 9:01:00] 지은: 좋은 아침\n",
        [(datetime(2023, 3, 15, 22, 30, 12), "민수", "text"), (datetime(2023, 3, 16, 9, 1), "지은", "text")],
    ),
    "spanish_android_12h": (
        "15/3/23, 10:30 p. m. - Los mensajes y las llamadas están cifrados de extremo a extremo. Nadie fuera de "
        "este chat puede leerlos.\n"
        "15/3/23, 10:31 p. m. - Lucía: hola!\n"
        "15/3/23, 10:32 p. m. - Pablo: <Multimedia omitido>\n"
        "16/3/23, 9:00 a. m. - Pablo: Se eliminó este mensaje.\n"
        '16/3/23, 9:01 a. m. - Lucía creó el grupo "Viaje"\n',
        [
            (datetime(2023, 3, 15, 22, 30), None, "system"),
            (datetime(2023, 3, 15, 22, 31), "Lucía", "text"),
            (datetime(2023, 3, 15, 22, 32), "Pablo", "media"),
            (datetime(2023, 3, 16, 9, 0), "Pablo", "deleted"),
            (datetime(2023, 3, 16, 9, 1), None, "system"),
        ],
    ),
    "portuguese_android": (
        "15/03/2023 22:31 - João: oi\n15/03/2023 22:32 - Maria: <Arquivo de mídia oculto>\n"
        "16/03/2023 08:00 - Maria: Mensagem apagada\n",
        [
            (datetime(2023, 3, 15, 22, 31), "João", "text"),
            (datetime(2023, 3, 15, 22, 32), "Maria", "media"),
            (datetime(2023, 3, 16, 8, 0), "Maria", "deleted"),
        ],
    ),
    "legacy_seconds_colon": (
        "24/12/14, 17:08:22: Sam: Merry Christmas: all of you!\nSecond line here\n"
        "24/12/14, 17:09:01: Kim: Same to you\n25/12/14, 09:00:00: Kim: <Media omitted>\n",
        [
            (datetime(2014, 12, 24, 17, 8, 22), "Sam", "text"),
            (datetime(2014, 12, 24, 17, 9, 1), "Kim", "text"),
            (datetime(2014, 12, 25, 9, 0, 0), "Kim", "media"),
        ],
    ),
    "dots_in_time": (
        "[1.1.2019, 12.00.00] Sam: Happy new year!\n[13.1.2019, 08.30.00] Kim: back at work\n",
        [(datetime(2019, 1, 1, 12, 0), "Sam", "text"), (datetime(2019, 1, 13, 8, 30), "Kim", "text")],
    ),
}


@pytest.mark.parametrize("name", sorted(LOCALE_EXPORTS))
def test_exports_from_locales_the_shared_files_lack(tmp_path, name):
    text, expected = LOCALE_EXPORTS[name]
    skips = SkipCounter()
    chat = parse(tmp_path, text, name=f"{name}.txt", skips=skips)
    assert [(m.timestamp, m.author, m.kind) for m in chat.messages] == expected
    assert skips.total == 0 and chat.stats["invalid_header_dates"] == 0
    assert not any(mark in m.text for m in chat.messages for mark in (RLM, LRM, NNBSP, LRE, PDF, "\x01"))


def test_locale_exports_keep_multi_line_texts_and_colons(tmp_path):
    turkish = parse(tmp_path, LOCALE_EXPORTS["turkish_android"][0])
    assert turkish.messages[2].text == "İyiyim, sen?\nYarın buluşalım mı: saat 10'da?"
    arabic = parse(tmp_path, LOCALE_EXPORTS["arabic_android"][0], name="ar.txt")
    assert arabic.messages[4].text == "وعليكم السلام\nكيف الحال؟"
    assert arabic.messages[7].text == "نلتقي غدا"
    dutch = parse(tmp_path, LOCALE_EXPORTS["dutch_android"][0], name="nl.txt")
    assert dutch.messages[1].text == 'Jan heeft groep "Zeilen: 2023" aangemaakt'


@pytest.mark.parametrize(
    "name, header_format",
    [
        ("french_android_a", "dd/MM/yyyy à HH:mm - Name: text"),
        ("finnish_klo", "dd.MM.yyyy klo HH.mm - Name: text"),
        ("hungarian_dotted_year_first", "yyyy. MM. dd HH:mm - Name: text"),
        ("indonesian_android", "dd/MM/yy HH.mm - Name: text"),
        ("turkish_ios", "[dd.MM.yyyy HH:mm:ss] Name: text"),
    ],
)
def test_header_formats_are_reported_as_written(tmp_path, name, header_format):
    chat = parse(tmp_path, LOCALE_EXPORTS[name][0])
    assert chat.stats["header_format"] == header_format


@pytest.mark.parametrize(
    "text, order, source",
    [
        # how phones set to US English write it: month first
        ("3/4/25, 9:05 PM - Sam: hi\n3/5/25, 9:06 PM - Kim: yo\n", "mdy", "default for US-style headers"),
        ("[3/4/25, 9:05:00 PM] Sam: hi\n", "mdy", "default for US-style headers"),
        # lower-case "pm" (India, Australia…), 24-hour clocks and four-digit years: day first
        ("03/04/25, 9:05 pm - Sam: hi\n", "dmy", "default"),
        ("03/04/2025, 21:05 - Sam: hi\n", "dmy", "default"),
        ("[03/04/2025, 9:05:00 PM] Sam: hi\n", "dmy", "default"),
    ],
)
def test_an_ambiguous_file_takes_the_default_of_the_locale_its_headers_come_from(tmp_path, text, order, source):
    chat = parse(tmp_path, text)
    assert (chat.stats["date_order"], chat.stats["date_order_source"]) == (order, source)
    assert chat.stats["date_order_ambiguous"] is True
    assert chat.messages[0].timestamp.date() == (
        datetime(2025, 3, 4).date() if order == "mdy" else datetime(2025, 4, 3).date()
    )
