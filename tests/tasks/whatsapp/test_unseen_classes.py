"""The classes of mistakes seen on exports the project had never seen (issue 19), each on hand-written fixtures:
system lines under a group's name, media placeholders and attachments in every language of the phrase table,
authors who write once with an attachment, and exports cut at WhatsApp's message cap.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tasks.cleaning import RULES, CleanRules, clean_text
from tasks.whatsapp import parse_whatsapp_export
from tasks.whatsapp.classify import classify
from tasks.whatsapp.phrases import DELETED, FILE_ATTACHED, MEDIA_OMITTED

LRM = "\u200e"


def parse(tmp_path: Path, text: str, name: str = "chat.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return parse_whatsapp_export(path)


def kinds(chat) -> list[tuple]:
    return [(m.author, m.kind) for m in chat.messages]


# --- 1. system lines under the group's name ----------------------------------------------------------------

# (language, encryption notice, an event about a member) as an iOS group export writes them after the group's name
GROUP_LINES = [
    (
        "en",
        "Messages and calls are end-to-end encrypted. Only people in this chat can read them.",
        "Alice added you",
    ),
    (
        "en",
        "Messages to this group are now secured with end-to-end encryption.",
        "Alice changed the subject to “Trip: day 2”",
    ),
    ("fr", "Les messages et les appels sont chiffrés de bout en bout.", "Alice a ajouté Bruno"),
    ("es", "Los mensajes y las llamadas están cifrados de extremo a extremo.", "Alice te añadió"),
    (
        "pt",
        "As mensagens e as chamadas são protegidas com a criptografia de ponta-a-ponta.",
        "Alice adicionou você",
    ),
    ("de", "Nachrichten und Anrufe sind Ende-zu-Ende-verschlüsselt.", "Alice hat dich hinzugefügt"),
    ("it", "I messaggi e le chiamate sono crittografati end-to-end.", "Alice ha aggiunto Bruno"),
    ("nl", "Berichten en oproepen worden end-to-end versleuteld.", "Alice heeft je toegevoegd"),
    ("tr", "Mesajlar ve aramalar uçtan uca şifrelidir.", "Alice seni ekledi"),
    ("id", "Pesan dan panggilan terenkripsi secara end-to-end.", "Alice menambahkan Anda"),
    ("ar", "الرسائل والمكالمات مشفرة تمامًا بين الطرفين.", "أضافك أليس"),
]


@pytest.mark.parametrize("marked", [True, False], ids=["with U+200E", "without"])
@pytest.mark.parametrize(
    "lang, notice, event", GROUP_LINES, ids=[f"{g[0]}-{i}" for i, g in enumerate(GROUP_LINES)]
)
def test_system_lines_under_the_group_name_are_system_and_the_group_is_no_author(
    tmp_path, lang, notice, event, marked
):
    mark = LRM if marked else ""
    chat = parse(
        tmp_path,
        f"[7/14/25, 11:34:42 PM] Trip with friends: {mark}{notice}\n"
        f"[7/14/25, 11:34:43 PM] Trip with friends: {mark}{event}\n"
        "[7/14/25, 11:35:00 PM] Alice: hi all\n",
    )
    assert kinds(chat) == [(None, "system"), (None, "system"), ("Alice", "text")]
    assert chat.messages[1].text == f"Trip with friends: {event}"
    assert chat.stats["authors"] == {"Alice": 1}


def test_a_person_writing_about_an_event_is_still_a_person(tmp_path):
    chat = parse(
        tmp_path,
        "[7/14/25, 11:35:00 PM] Alice: I added salt to the soup\n"
        "[7/14/25, 11:35:10 PM] Bruno: Sam is coming to the party\n"
        "[7/14/25, 11:35:20 PM] Alice: Sam left his keys here, and Kim added hers\n"
        "[7/14/25, 11:35:30 PM] Bruno: Il a dit que Marie a ajouté du sel\n",
    )
    assert [m.kind for m in chat.messages] == ["text"] * 4


# --- 2. media placeholders and attachments in every language of the table ----------------------------------


def test_the_phrase_table_covers_forty_languages():
    assert len(MEDIA_OMITTED) >= 40 and len(DELETED) >= 40 and len(FILE_ATTACHED) >= 40
    for lang in (
        "it",
        "pt",
        "ru",
        "hi",
        "id",
        "tr",
        "ar",
        "fa",
        "zh-Hans",
        "zh-Hant",
        "ja",
        "ko",
        "pl",
        "uk",
    ):
        assert lang in MEDIA_OMITTED and lang in DELETED, lang


@pytest.mark.parametrize("phrase", sorted({p for row in MEDIA_OMITTED.values() for p in row}))
def test_every_media_placeholder_of_the_table_is_media_of_its_author(phrase):
    assert classify("Bob", phrase, False) == ("media", "Bob", phrase)
    assert classify("Bob", phrase, True)[:2] == ("media", "Bob")  # iOS marks it with U+200E


@pytest.mark.parametrize("phrase", sorted({p for row in DELETED.values() for p in row}))
def test_every_deleted_placeholder_of_the_table_is_deleted(phrase):
    assert classify("Bob", phrase, False)[:2] == ("deleted", "Bob")


@pytest.mark.parametrize("note", sorted({p for row in FILE_ATTACHED.values() for p in row}))
def test_every_android_attachment_note_of_the_table_is_media(note):
    assert classify("Bob", f"report 2024.pdf ({note})", False)[:2] == ("media", "Bob")


def test_placeholders_and_attachments_in_an_export_of_each_platform(tmp_path):
    chat = parse(
        tmp_path,
        "14/07/2025, 23:30 - Giulia: <Media omessi>\n"
        "14/07/2025, 23:31 - Giulia: <allegato>\n"
        "14/07/2025, 23:32 - Igor: <Без медиафайлов>\n"
        "14/07/2025, 23:33 - Priya: <मीडिया के बिना>\n"
        "14/07/2025, 23:34 - Ayşe: <Medya dahil edilmedi>\n"
        "14/07/2025, 23:35 - Reza: <رسانه حذف شد>\n"
        "14/07/2025, 23:36 - Wei: <省略影音内容>\n"
        "14/07/2025, 23:37 - Yuki: <メディアは含まれていません>\n"
        "14/07/2025, 23:38 - Jonas: Rechnung.pdf (Datei angehängt)\n"
        "14/07/2025, 23:39 - Ana: IMG-20250714-WA0001.jpg (arquivo anexado)\n"
        "legenda da foto\n"
        "14/07/2025, 23:40 - Budi: Pesan ini telah dihapus\n",
        name="android.txt",
    )
    assert [m.kind for m in chat.messages] == ["media"] * 10 + ["deleted"]
    ios = parse(
        tmp_path,
        f"[14/07/2025, 23:30:00] Giulia: {LRM}immagine omessa\n"
        f"[14/07/2025, 23:31:00] Giulia: {LRM}<allegato: 00000012-PHOTO-2025-07-14-23-31-00.jpg>\n"
        f"[14/07/2025, 23:32:00] Tomás: {LRM}<attached: 00000013-AUDIO-2025-07-14-23-32-00.opus>\n"
        f"[14/07/2025, 23:33:00] Wei: {LRM}图片已省略\n"
        f"[14/07/2025, 23:34:00] Ola: {LRM}obraz pominięty\n",
        name="ios.txt",
    )
    assert [m.kind for m in ios.messages] == ["media"] * 5


def test_the_clean_stage_removes_the_same_placeholders():
    # the clean stage reads the phrase table of tasks.whatsapp.phrases: a phrase of a language added there is gone
    media_only = CleanRules(**{name: name in ("media_placeholders", "whitespace") for name, _ in RULES})
    deleted_only = CleanRules(**{name: name in ("deleted_edited_markers", "whitespace") for name, _ in RULES})
    for text in ("<Pominięto multimedia>", "<省略影音内容>", "<Без медиафайлов>", "<מדיה הושמטה>"):
        assert clean_text(f"look\n{text}\nnice", media_only)[0].split() == ["look", "nice"]
    assert clean_text("Ta wiadomość została usunięta", deleted_only)[0] == ""


# --- 3. an author who writes once, with an attachment --------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        f"{LRM}IMG_1234.HEIC",
        f"{LRM}<attached: 00000042-PHOTO-2025-07-14-23-35-00.jpg>",
        f"{LRM}<allegato: 00000042-PHOTO-2025-07-14-23-35-00.jpg>",
        f"{LRM}Location: https://maps.google.com/?q=45.46,9.19",
        f"{LRM}obraz pominięty",
        f"{LRM}<zdjęcie pominięte>",
        f"{LRM}image omitted",
    ],
)
def test_an_author_who_writes_once_with_an_attachment_is_that_authors_media(tmp_path, line):
    chat = parse(
        tmp_path,
        f"[14/07/2025, 23:30:00] Trip: {LRM}Messages and calls are end-to-end encrypted.\n"
        "[14/07/2025, 23:34:00] Alice: hi\n"
        f"[14/07/2025, 23:35:00] Zoe: {line}\n"
        "[14/07/2025, 23:36:00] Alice: thanks Zoe\n",
    )
    assert kinds(chat) == [(None, "system"), ("Alice", "text"), ("Zoe", "media"), ("Alice", "text")]
    assert chat.stats["authors"] == {"Alice": 2, "Zoe": 1}


def test_an_android_author_who_writes_once_with_an_attachment(tmp_path):
    chat = parse(tmp_path, "14/07/2025, 23:35 - Zoe: IMG-20250714-WA0001.jpg (plik załączony)\n")
    assert kinds(chat) == [("Zoe", "media")]


# --- 4. exports cut at WhatsApp's message cap ----------------------------------------------------------------


def write_chat(path: Path, n: int, attachment_every: int = 0) -> Path:
    start = datetime(2024, 1, 1, 8, 0)
    lines = []
    for i in range(n):
        when = (start + timedelta(minutes=i)).strftime("%d/%m/%Y, %H:%M")
        text = (
            f"IMG-20240101-WA{i:04d}.jpg (file attached)"
            if attachment_every and i % attachment_every == 0
            else f"message {i}"
        )
        lines.append(f"{when} - {'Sam' if i % 2 else 'Kim'}: {text}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "n, attachment_every, cap",
    [
        (40_000, 0, {"limit": 40_000, "messages": 40_000, "with_media": False}),
        (39_700, 0, {"limit": 40_000, "messages": 39_700, "with_media": False}),
        (10_000, 50, {"limit": 10_000, "messages": 10_000, "with_media": True}),
        (10_000, 0, None),  # without media the cap is 40,000
        (38_000, 0, None),
        (12_000, 50, None),
    ],
)
def test_an_export_that_ends_at_the_cap_says_so(tmp_path, caplog, n, attachment_every, cap):
    path = write_chat(tmp_path / "chat.txt", n, attachment_every)
    with caplog.at_level(logging.WARNING, logger="tasks.whatsapp.parser"):
        chat = parse_whatsapp_export(path)
    assert chat.stats["export_cap"] == cap
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if cap is None:
        assert not warnings
    else:
        assert len(warnings) == 1 and "kind: whatsapp-db" in warnings[0] and str(path) in warnings[0]


def test_a_small_export_has_no_cap(tmp_path):
    chat = parse(tmp_path, "14/07/2025, 23:35 - Zoe: hi\n")
    assert chat.stats["export_cap"] is None
