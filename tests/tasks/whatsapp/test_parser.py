"""The WhatsApp parser on real exports from other projects (read in place from ../shared/data/whatsapp) and on
the project's own fictional examples (examples/whatsapp)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from storage.schemas import MESSAGE_KINDS
from tasks.records import InputFileError, SkipCounter
from tasks.whatsapp import looks_like_whatsapp, parse_whatsapp_export

ROOT = Path(__file__).resolve().parents[3]
SHARED_DATA = ROOT.parent / "shared" / "data"
SHARED = SHARED_DATA / "whatsapp"
EXAMPLES = ROOT / "examples" / "whatsapp"
NO_SHARED = f"shared sample data not found at {SHARED} (expected beside the project root)"

POKEMON = ["Ash Ketchum", "Brock", "Jessie & James", "Meowth", "Misty", "Prof. Oak", "Raichu", "Wobbuffet"]
CHAT_MINER = ["Jahn Doe", "John Doe", "John Doe 🤓", "John-John Doe", "🤓"]

# file → (messages, authors, non-zero kinds); counts checked against the header lines of each file by hand
EXPECTED = {
    "chat-analytics_1A_3M.txt": (3, ["A", "B"], {"text": 3}),
    "chat-analytics_2A_5M.txt": (5, ["A", "B"], {"text": 4, "media": 1}),
    "chat-miner-old_test_dateformat1.txt": (
        10,
        ["+12 345 578", "Jahn Doe", "John Doe", "John-John Doe"],
        {"text": 6, "system": 4},
    ),
    "chat-miner-old_test_dateformat2.txt": (4, ["Jahn Doe", "John Doe", "John-John Doe"], {"text": 4}),
    "chat-miner-old_test_dateformat3.txt": (4, ["Jahn Doe", "John Doe", "John-John Doe"], {"text": 4}),
    "chat-miner-old_test_dateformat6.txt": (4, ["Jahn Doe", "John Doe", "John-John Doe"], {"text": 4}),
    "chat-miner-old_test_unicode.txt": (3, ["John Doe", "John Doe 🤓", "🤓"], {"text": 3}),
    "chat-miner-old_testlog.txt": (23, ["+12 345 578", *CHAT_MINER], {"text": 20, "system": 3}),
    "chat-miner_test_[mmddyy]_24hrs.txt": (9, CHAT_MINER, {"text": 6, "system": 3}),
    "chat-miner_test_ddmmyy_24hrs.txt": (9, CHAT_MINER, {"text": 6, "system": 3}),
    "chat-miner_test_mmddyy_24hrs.txt": (9, CHAT_MINER, {"text": 6, "system": 3}),
    "chat-miner_test_mmddyyyy_12hrs.txt": (9, CHAT_MINER, {"text": 6, "system": 3}),
    "chat-miner_test_yyyymmdd_24hrs.txt": (9, CHAT_MINER, {"text": 6, "system": 3}),
    "rwhatsapp_sample.txt": (9, ["Johannes Gruber", "Test"], {"text": 6, "media": 1, "system": 2}),
    "whatsapp-chat-parser-rb_sample.txt": (
        7,
        ["Alice", "Bob", "Charlie", "Jane Smith", "John Doe"],
        {"text": 5, "system": 2},
    ),
    "whatsapp-chat-parser-website_example_chat.txt": (
        52,
        ["Emily", "John", "Loris"],
        {"text": 43, "media": 4, "system": 4, "poll": 1},
    ),
    "whatsapp-chat-parser-website_example_old_chat.txt": (
        100,
        ["Emily", "John", "Loris"],
        {"text": 97, "system": 3},
    ),
    "whatsapp-chat-parser_short-chat.txt": (
        5,
        ["+410123456789", "Sample User", "TestBot"],
        {"text": 3, "system": 2},
    ),
    "whatsapp-exported-chat-reader_sample-android.txt": (
        25,
        ["Alessandro", "Tommaso Azzalin"],
        {"text": 15, "media": 10},
    ),
    "whatsapp-exported-chat-reader_sample-new-iOS.txt": (
        19,
        ["Bianca 😂", "Tommaso Azzalin"],
        {"text": 15, "media": 3, "system": 1},
    ),
    "whatsapp-to-sqlite_WhatsApp Chat mit Jane Doe.txt": (
        8,
        ["Jane Doe", "John Doe"],
        {"text": 5, "media": 2, "system": 1},
    ),
    "whatstk-old_samplechat_3_dot24h.txt": (20, POKEMON, {"text": 18, "system": 2}),
    "whatstk-tests_example-12h-2.txt": (20, POKEMON, {"text": 18, "system": 2}),
    "whatstk-tests_example-12h.txt": (20, POKEMON, {"text": 18, "system": 2}),
    "whatstk-tests_example_1.txt": (20, POKEMON, {"text": 18, "system": 2}),
    "whatstk-tests_example_2.txt": (20, POKEMON, {"text": 18, "system": 2}),
    "whatstk_lorem-2000.txt": (2000, ["+1 123 456 789", "Giuseppe", "John", "Mary"], {"text": 2000}),
    "whatstk_lorem-merge-part1.txt": (300, ["+1 123 456 789", "Giuseppe", "John", "Mary"], {"text": 300}),
    "whatstk_lorem-merge-part2.txt": (
        300,
        ["+1 123 456 789", "Giuseppe", "John", "Maria", "Maria2"],
        {"text": 300},
    ),
    "whatstk_lorem.txt": (500, ["+1 123 456 789", "Giuseppe", "John", "Mary"], {"text": 500}),
    "whatstk_pokemon.txt": (20, POKEMON, {"text": 18, "system": 2}),
    "whatsapp-chat-parser-website_example.zip": (
        52,
        ["Emily", "John", "Loris"],
        {"text": 43, "media": 4, "system": 4, "poll": 1},
    ),
}

SHARED_EXPORTS = (
    sorted(p for p in SHARED.glob("*") if p.suffix in (".txt", ".zip")) if SHARED.is_dir() else []
)
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=NO_SHARED)


def shared(name: str) -> Path:
    return SHARED / name


@needs_shared
def test_every_shared_export_has_expectations():
    assert sorted(p.name for p in SHARED_EXPORTS) == sorted(EXPECTED)


@pytest.mark.parametrize(
    "path",
    SHARED_EXPORTS or [pytest.param(None, marks=pytest.mark.skip(reason=NO_SHARED))],
    ids=lambda p: p.name if p else "none",
)
def test_shared_export_parses_cleanly(path):
    skips = SkipCounter()
    chat = parse_whatsapp_export(path, skips=skips)
    count, authors, kinds = EXPECTED[path.name]
    assert len(chat.messages) == count
    assert sorted(chat.stats["authors"]) == sorted(authors)
    assert {k: n for k, n in chat.stats["kinds"].items() if n} == kinds
    assert skips.total == 0 and chat.stats["unattached_lines"] == 0
    assert chat.stats["invalid_header_dates"] == 0
    assert [m.index for m in chat.messages] == list(range(count))
    assert all(m.kind in MESSAGE_KINDS for m in chat.messages)
    assert all(m.timestamp is not None and 2009 <= m.timestamp.year <= 2026 for m in chat.messages)
    assert all((m.author is None) == (m.kind == "system") for m in chat.messages)
    assert all("\u200e" not in m.text and "\x01" not in m.text for m in chat.messages)
    assert {m.source_file for m in chat.messages} == {path.name}


@needs_shared
@pytest.mark.parametrize(
    "name",
    [
        "chat-miner_test_ddmmyy_24hrs.txt",
        "chat-miner_test_mmddyy_24hrs.txt",
        "chat-miner_test_[mmddyy]_24hrs.txt",
        "chat-miner_test_yyyymmdd_24hrs.txt",
        "chat-miner_test_mmddyyyy_12hrs.txt",
    ],
)
def test_chat_miner_exports_give_the_expected_parse(name):
    """The same chat in five formats parses to chat-miner's target (which joins lines with a space and leaves
    out system lines and the malformed 'John Doe:.' line)."""
    target = json.loads(shared("chat-miner_target.json").read_text(encoding="utf-8"))
    chat = parse_whatsapp_export(shared(name))
    got = [
        {"timestamp": m.timestamp.isoformat(), "author": m.author, "message": m.text.replace("\n", " ")}
        for m in chat.messages
        if m.kind == "text"
    ]
    assert sorted(got, key=lambda r: r["timestamp"]) == sorted(target, key=lambda r: r["timestamp"])
    assert chat.stats["date_order_ambiguous"] is False


@needs_shared
def test_whatstk_lorem_has_500_messages_with_seconds():
    chat = parse_whatsapp_export(shared("whatstk_lorem.txt"))
    assert len(chat.messages) == 500
    assert chat.messages[0].timestamp == datetime(2020, 1, 15, 2, 22, 56)
    assert chat.messages[0].author == "Mary"
    assert chat.stats["header_format"] == "[dd-MM-yy HH:mm:ss] Name: text"
    assert chat.stats["authors"]["+1 123 456 789"] > 0


@needs_shared
def test_attach_media_zip_from_an_iphone():
    chat = parse_whatsapp_export(shared("whatsapp-chat-parser-website_example.zip"))
    txt = parse_whatsapp_export(shared("whatsapp-chat-parser-website_example_chat.txt"))
    assert [m.as_row() | {"chat_id": None, "source_file": None} for m in chat.messages] == [
        m.as_row() | {"chat_id": None, "source_file": None} for m in txt.messages
    ]
    assert chat.chat_id != txt.chat_id
    assert chat.stats["archive_member"] == "_chat.txt"
    assert chat.stats["media_files"] == [
        "00000001-PHOTO-2019-06-20-16-00-15.jpg",
        "00000002-VIDEO-2019-06-20-16-01-42.mp4",
        "00000003-AUDIO-2019-06-20-16-03-55.mp3",
        "00000004-whatsapp-chat-parser-example.zip",
    ]
    poll = next(m for m in chat.messages if m.kind == "poll")
    assert poll.author == "Loris" and poll.text.count("OPTION:") == 5
    assert [m.text for m in chat.messages if m.kind == "system"][:2] == [
        "Messages to this group are now secured with end-to-end encryption.",
        "Loris created group “WhatsApp Chat Parser Example”",
    ]
    emily = next(m for m in chat.messages if m.text.startswith("Come on..."))
    assert emily.text == "Come on...\ndon't be so mysterious and show us!"


@needs_shared
def test_mixed_android_and_ios_lines_in_one_file():
    chat = parse_whatsapp_export(shared("whatsapp-chat-parser-rb_sample.txt"))
    assert {m.timestamp.date().isoformat() for m in chat.messages} == {"2025-12-15"}
    assert chat.messages[2].timestamp == datetime(2025, 12, 15, 10, 32, 3)
    assert chat.messages[4].author == "Charlie"  # the bracket-less iOS line
    assert chat.stats["date_orders"] == {
        "android '/' year short": "mdy",
        "ios '/' year last": "dmy",
        "ios_no_brackets '/' year last": "dmy",
    }


@needs_shared
def test_android_italian_attachments_and_author_with_trailing_space():
    chat = parse_whatsapp_export(shared("whatsapp-exported-chat-reader_sample-android.txt"))
    recipe = chat.messages[5]
    assert recipe.author == "Alessandro"
    assert recipe.text.startswith("6 uova \n280g zucchero\n")  # inner lines as written
    assert len(recipe.text.splitlines()) == 9
    assert all(m.text.endswith("(file allegato)") for m in chat.messages if m.kind == "media")


@needs_shared
def test_german_attachment_with_caption_and_contact_card():
    chat = parse_whatsapp_export(shared("whatsapp-to-sqlite_WhatsApp Chat mit Jane Doe.txt"))
    media = [m.text for m in chat.messages if m.kind == "media"]
    assert media == [
        "VID-20181031-WA0007.mp4 (Datei angehängt)\nDas hier meine ich",
        "Max Caulfield.vcf (Datei angehängt)",
    ]
    assert chat.messages[0].kind == "system" and chat.messages[0].text.startswith("Nachrichten, die du")


@needs_shared
def test_blank_lines_inside_and_between_messages():
    short = parse_whatsapp_export(shared("whatsapp-chat-parser_short-chat.txt"))
    assert short.messages[-1].text == "How are you?\n\nIs everything alright?"
    spaced = parse_whatsapp_export(shared("chat-miner-old_test_dateformat6.txt"))
    assert spaced.messages[1].text == "Lorem ipsum dolor sit amet."


@needs_shared
def test_system_line_with_the_chat_name_as_author():
    chat = parse_whatsapp_export(shared("whatstk_pokemon.txt"))
    first = chat.messages[0]
    assert (first.kind, first.author) == ("system", None)
    assert first.text.startswith("Pokemon Chat: Messages and calls are end-to-end encrypted.")


@needs_shared
def test_out_of_order_timestamps_are_kept_in_file_order_and_counted():
    chat = parse_whatsapp_export(shared("chat-analytics_2A_5M.txt"))
    assert chat.messages[-1].text == "This message should be reordered"
    assert chat.stats["out_of_order_timestamps"] == 1


@needs_shared
def test_many_formats_in_one_file_with_nbsp_and_dotted_times():
    chat = parse_whatsapp_export(shared("chat-miner-old_testlog.txt"))
    by_text = {m.text: m.timestamp for m in chat.messages}
    assert by_text["Testing spacing in pm"] == datetime(2019, 12, 24, 23, 30)
    assert by_text["Testing brackets"] == datetime(2022, 9, 10, 22, 37)
    assert by_text["Testing date dashes"] == datetime(2022, 9, 10, 22, 37)
    assert by_text["Testing abnormal unicode with yyyy first"] == datetime(2022, 12, 24, 13, 1)
    assert chat.stats["date_order"] == "mdy"


@needs_shared
@pytest.mark.parametrize(
    "relative", ["whatsapp/whatstk_header_format_support.json", "text/char-rnn_tinyshakespeare_input.txt"]
)
def test_files_that_are_not_exports_raise_with_their_path(relative):
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"{path} not found")
    with pytest.raises(InputFileError) as error:
        parse_whatsapp_export(path)
    assert str(path) in str(error.value)
    assert "not a chat export" in str(error.value)


# --- the project's own examples --------------------------------------------------------------------------

EXAMPLE_FILES = {
    "sam_priya_android_en_24h.txt": (62, {"Sam", "Priya"}, "dd/MM/yyyy, HH:mm - Name: text"),
    "coloc_ios_fr_seconds.txt": (52, {"Sam", "Camille", "Hugo"}, "[dd/MM/yyyy HH:mm:ss] Name: text"),
    "sam_yassine_android_us_12h_darija.txt": (47, {"Sam", "Yassine"}, "MM/dd/yy, h:mm a - Name: text"),
    "book_club_ios_2025_with_media.zip": (46, {"Sam", "Jordan", "Alex"}, "[MM/dd/yy, h:mm:ss a] Name: text"),
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_FILES))
def test_examples_are_complete_demo_inputs(name):
    count, authors, header = EXAMPLE_FILES[name]
    skips = SkipCounter()
    chat = parse_whatsapp_export(EXAMPLES / name, skips=skips)
    kinds = chat.stats["kinds"]
    assert len(chat.messages) == count and 40 <= count <= 150
    assert set(chat.stats["authors"]) == authors
    assert chat.stats["authors"]["Sam"] >= 15
    assert chat.stats["header_format"] == header
    assert all(kinds[k] >= 1 for k in ("text", "media", "deleted", "edited", "system"))
    assert any("\n" in m.text for m in chat.messages if m.kind == "text")
    assert chat.stats["date_order_ambiguous"] is False
    assert skips.total == 0


def test_example_zip_lists_its_photo():
    chat = parse_whatsapp_export(EXAMPLES / "book_club_ios_2025_with_media.zip")
    assert chat.stats["media_files"] == ["00000004-PHOTO-2025-03-14-18-20-11.jpg"]
    photo = next(m for m in chat.messages if m.kind == "media")
    assert (photo.author, photo.timestamp) == ("Sam", datetime(2025, 3, 14, 18, 20, 11))
    assert chat.stats["authors"]["Alex"] == 12  # "~ Alex", not in the exporter's contacts


def test_french_example_keeps_group_events_out_of_authors():
    chat = parse_whatsapp_export(EXAMPLES / "coloc_ios_fr_seconds.txt")
    system = [m.text for m in chat.messages if m.kind == "system"]
    assert "Coloc des Lilas: Camille a créé le groupe « Coloc des Lilas »" in system
    assert "Hugo: Appel vocal manqué" in system
    edited = next(m for m in chat.messages if m.kind == "edited")
    assert edited.text == "Sam tu peux préchauffer le four à 180 ? J'arrive dans 20 min"


# --- recognising exports among other inputs (ingest's kind detection) --------------------------------------


def test_exports_are_recognised_and_other_text_is_not(tmp_path):
    for path in [*SHARED_EXPORTS, *(EXAMPLES / name for name in EXAMPLE_FILES)]:
        assert looks_like_whatsapp(path), path
    for relative in [
        "whatsapp/whatstk_header_format_support.json",
        "text/char-rnn_tinyshakespeare_input.txt",
        "text/sentencepiece_botchan.txt",
    ]:
        if (SHARED_DATA / relative).exists():
            assert not looks_like_whatsapp(SHARED_DATA / relative), relative
    diary = tmp_path / "diary.txt"
    diary.write_text("Dear diary,\ntoday was long.\n25/12/2021, 10:00 - Sam: a quoted chat line\nThe end.\n")
    assert not looks_like_whatsapp(diary)
    assert not looks_like_whatsapp(tmp_path / "absent.txt")


def test_generated_demo_chat_matches_its_script_and_parses_cleanly():
    import importlib.util

    folder = ROOT / "examples" / "whatsapp_generated"
    spec = importlib.util.spec_from_file_location("make_examples", folder / "make_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (folder / "sam_friends_android_en.txt").read_text(encoding="utf-8")
    assert module.generate() == committed  # rerun `python examples/whatsapp_generated/make_examples.py`
    chat = parse_whatsapp_export(folder / "sam_friends_android_en.txt")
    authors = {m.author for m in chat.messages if m.author}
    assert authors == {"Sam", "Priya", "Alex", "Jordan", "Hugo", "Mei"}
    assert len(chat.messages) == committed.count("\n") and chat.messages[0].kind == "system"
