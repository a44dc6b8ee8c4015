"""Chat → documents: one document per conversation session, typed text only, optional pseudonyms."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from storage.schemas import DOCUMENT_SCHEMA
from tasks.records import SkipCounter
from tasks.whatsapp import chat_to_documents, parse_whatsapp_export, pseudonym

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "whatsapp"


@pytest.fixture(scope="module")
def hike_chat():
    return parse_whatsapp_export(EXAMPLES / "sam_priya_android_en_24h.txt")


def test_one_document_per_session_split_on_six_hour_gaps(hike_chat):
    docs = chat_to_documents(hike_chat)
    assert [d.timestamp for d in docs] == [
        datetime(2024, 3, 14, 18, 2, tzinfo=timezone.utc),  # the encryption notice opens the first session
        datetime(2024, 3, 15, 12, 10, tzinfo=timezone.utc),
        datetime(2024, 3, 15, 19, 4, tzinfo=timezone.utc),
        datetime(2024, 3, 16, 8, 24, tzinfo=timezone.utc),
        datetime(2024, 3, 16, 15, 47, tzinfo=timezone.utc),
    ]
    assert sum(json.loads(d.meta)["messages"] for d in docs) == len(hike_chat.messages)
    assert len(chat_to_documents(hike_chat, session_gap_hours=48)) == 1
    assert len(chat_to_documents(hike_chat, session_gap_hours=0.5)) > len(docs)


def test_document_text_holds_typed_messages_only(hike_chat):
    docs = chat_to_documents(hike_chat)
    first, second, third = docs[0], docs[1], docs[2]
    assert first.text.splitlines()[:2] == [
        "Priya: Hey Sam! Are we still on for Saturday?",
        "Sam: Hey! Yes, definitely 🙂",
    ]
    assert "Sam: About 12 km round trip\nMostly flat, one steep bit at the end\n" in first.text
    for gone in ("<Media omitted>", "end-to-end encrypted", "This message was deleted", "<This message was"):
        assert all(gone not in d.text for d in docs)
    assert "Priya: I'll make it on Sunday after the hike" in third.text.splitlines()
    assert json.loads(second.meta)["kinds"] == {
        "text": 5,
        "media": 0,
        "deleted": 1,
        "edited": 0,
        "system": 0,
        "poll": 0,
    }


def test_urls_ids_and_meta(hike_chat):
    docs = chat_to_documents(hike_chat)
    chat_id = hike_chat.chat_id
    assert [d.url for d in docs] == [
        f"whatsapp://sam_priya_android_en_24h.txt#{chat_id}/{i}" for i in range(5)
    ]
    assert [d.id for d in docs] == [d.id for d in chat_to_documents(hike_chat)]  # stable
    assert len({d.id for d in docs}) == 5
    meta = json.loads(docs[0].meta)
    assert meta["chat_id"] == chat_id and meta["session"] == 0
    assert meta["authors"] == ["Priya", "Sam"]
    assert meta["messages"] == 26
    assert {d.source for d in docs} == {"whatsapp"}
    table = pa.Table.from_pylist([d.as_row() for d in docs], schema=DOCUMENT_SCHEMA)
    assert table.num_rows == 5


def test_file_names_with_spaces_are_percent_encoded(tmp_path):
    path = tmp_path / "WhatsApp Chat with Sam.txt"
    path.write_text("25/12/2021, 10:00 - Sam: hi\n")
    doc = chat_to_documents(parse_whatsapp_export(path))[0]
    assert doc.url.startswith("whatsapp://WhatsApp%20Chat%20with%20Sam.txt#")


def test_polls_are_kept_as_written():
    chat = parse_whatsapp_export(EXAMPLES / "sam_yassine_android_us_12h_darija.txt")
    text = "\n".join(d.text for d in chat_to_documents(chat))
    assert "Yassine: POLL:\nScore dyal ghedda?\nOPTION: Lfri9 dyalna yrb7 (1 vote)" in text


def test_pseudonyms_replace_authors_and_mentions():
    chat = parse_whatsapp_export(EXAMPLES / "book_club_ios_2025_with_media.zip")
    docs = chat_to_documents(chat, pseudonymize=True, salt="demo")
    sam, jordan, alex = (pseudonym(n, "demo") for n in ("Sam", "Jordan", "Alex"))
    text = "\n".join(d.text for d in docs)
    assert f"{sam}: Lemon cake or apple crumble for Thursday? @{jordan} @{alex}" in text
    assert all(
        line.split(": ", 1)[0] in {sam, jordan, alex}
        for d in docs
        for line in d.text.splitlines()
        if ": " in line and line.startswith("Person-")
    )
    assert "Sam:" not in text and "@Jordan" not in text
    assert sam.startswith("Person-") and len(sam) == len("Person-") + 8
    assert json.loads(docs[0].meta)["authors"] == [jordan, sam, alex]
    # same salt, same pseudonyms; another salt, others
    assert [d.text for d in chat_to_documents(chat, pseudonymize=True, salt="demo")] == [d.text for d in docs]
    other = chat_to_documents(chat, pseudonymize=True, salt="other")
    assert sam not in "\n".join(d.text for d in other)


def test_pseudonyms_cover_phone_mentions_and_the_file_name(tmp_path):
    path = tmp_path / "WhatsApp Chat with Sam Lee.txt"
    path.write_text(
        "25/12/2021, 10:00 - Sam Lee: hi @447700900123, did @Kim see this?\n"
        "25/12/2021, 10:01 - +44 7700 900123: yes!\n"
        "25/12/2021, 10:02 - Kim: @Sam Lee yes\n"
    )
    doc = chat_to_documents(parse_whatsapp_export(path), pseudonymize=True)[0]
    sam, phone, kim = pseudonym("Sam Lee"), pseudonym("+44 7700 900123"), pseudonym("Kim")
    assert doc.text.splitlines() == [
        f"{sam}: hi @{phone}, did @{kim} see this?",
        f"{phone}: yes!",
        f"{kim}: @{sam} yes",
    ]
    assert "Sam" not in doc.url and json.loads(doc.meta)["source_file"] == f"WhatsApp Chat with {sam}.txt"


def test_sessions_without_typed_text_are_skipped_and_counted(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text(
        '01/12/2021, 10:00 - Sam created group "Dinner"\n'
        "01/12/2021, 10:00 - Sam added Kim\n"
        "25/12/2021, 10:00 - Sam: <Media omitted>\n"
        "26/12/2021, 09:00 - Kim: Merry Christmas!\n"
    )
    skips = SkipCounter()
    docs = chat_to_documents(parse_whatsapp_export(path), skips=skips)
    assert [d.text for d in docs] == ["Kim: Merry Christmas!"]
    assert docs[0].url.endswith("/2")
    assert skips.counts == {"whatsapp_session_without_text": 2}


def test_invalid_gap():
    with pytest.raises(ValueError, match="session_gap_hours"):
        chat_to_documents(parse_whatsapp_export(EXAMPLES / "coloc_ios_fr_seconds.txt"), session_gap_hours=0)


def test_isolate_wrapped_mentions_are_kept_and_pseudonymised(tmp_path):
    # Android writes "@⁨Kim Park⁩": the isolates are what tell where a name of several words ends
    path = tmp_path / "chat.txt"
    path.write_text(
        "25/12/2021, 10:00 - \u2068Sam Lee\u2069: hi @\u2068Kim Park\u2069 and @\u2068+44 7700 900123\u2069!\n"
        "25/12/2021, 10:01 - Kim Park: hey\n"
        "25/12/2021, 10:02 - +44 7700 900123: yo\n",
        encoding="utf-8",
    )
    chat = parse_whatsapp_export(path)
    assert chat.messages[0].author == "Sam Lee"
    assert chat.messages[0].text == "hi @\u2068Kim Park\u2069 and @\u2068+44 7700 900123\u2069!"
    doc = chat_to_documents(chat, pseudonymize=True)[0]
    sam, kim, phone = pseudonym("Sam Lee"), pseudonym("Kim Park"), pseudonym("+44 7700 900123")
    assert doc.text.splitlines()[0] == f"{sam}: hi @\u2068{kim}\u2069 and @\u2068{phone}\u2069!"


def test_a_time_that_jumps_away_and_back_cuts_no_session():
    """One message with a wrong clock (hours back, or years ahead) stays in its conversation; a real silence still
    cuts, and so does a clock that moves for good."""
    from datetime import timedelta

    from tasks.whatsapp.documents import clock_outliers, split_sessions
    from tasks.whatsapp.parser import ChatMessage

    def chat(*times):
        return [ChatMessage(chat_id="c", index=i, timestamp=t, author="Sam", text=f"m{i}", kind="text",
                            source_file="chat.txt") for i, t in enumerate(times)]

    at = lambda h, m=0, day=1: datetime(2024, 5, day, h, m)  # noqa: E731  (naive, as exports write)
    six = timedelta(hours=6)
    back = chat(at(10), at(10, 1), at(3), at(10, 2), at(10, 3))
    assert clock_outliers(back, six) == {2} and [len(s) for s in split_sessions(back, six)] == [5]
    ahead = chat(at(10), datetime(2099, 1, 1), at(10, 5), at(20), at(20, 1))
    assert clock_outliers(ahead, six) == {1} and [len(s) for s in split_sessions(ahead, six)] == [3, 2]
    silence = chat(at(10), at(10, 1), at(18), at(18, 5))
    assert clock_outliers(silence, six) == set() and [len(s) for s in split_sessions(silence, six)] == [2, 2]
    moved = chat(at(10), at(10, 1), at(2, day=2), at(2, 5, day=2))  # a new clock, kept from there on
    assert [len(s) for s in split_sessions(moved, six)] == [2, 2]
    untimed = chat(at(10), None, at(3), None, at(10, 2))
    assert [len(s) for s in split_sessions(untimed, six)] == [5]
