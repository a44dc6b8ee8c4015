"""Telegram Desktop's JSON export → chats: every message shape, one chat or a whole account, and what is refused."""

from __future__ import annotations

import codecs
import json
from datetime import datetime

import pyarrow as pa
import pytest

from storage.schemas import MESSAGE_SCHEMA
from tasks.records import InputFileError, SkipCounter
from tasks.telegram import looks_like_telegram, read_telegram_export
from tasks.whatsapp import chat_to_documents
from tasks.whatsapp.classify import is_poll

PERSONAL = {
    "name": "Sam Lee",
    "type": "personal_chat",
    "id": 4242,
    "messages": [
        {"id": 1, "type": "message", "date": "2024-03-14T18:02:05", "date_unixtime": "1710439325",
         "from": "Sam Lee", "from_id": "user4242", "text": "Hey, are you free on Saturday?",
         "text_entities": [{"type": "plain", "text": "Hey, are you free on Saturday?"}]},
        {"id": 2, "type": "message", "date": "2024-03-14T18:03:10", "date_unixtime": "1710439390",
         "from": "Priya", "from_id": "user1", "reply_to_message_id": 1,
         "text": ["Yes! See ", {"type": "text_link", "text": "the trail map", "href": "https://example.org/map"},
                  " and ", {"type": "bold", "text": "bring boots"}, " "]},
        {"id": 3, "type": "message", "date": "2024-03-14T18:04:00", "date_unixtime": "1710439440",
         "from": "Sam Lee", "from_id": "user4242", "file": "stickers/sticker.webp", "media_type": "sticker",
         "sticker_emoji": "👍", "text": ""},
        {"id": 4, "type": "message", "date": "2024-03-14T18:05:00", "date_unixtime": "1710439500",
         "from": "Priya", "from_id": "user1", "photo": "photos/photo_1.jpg", "width": 800, "height": 600,
         "text": "the view last time"},
        {"id": 5, "type": "message", "date": "2024-03-14T18:06:00", "date_unixtime": "1710439560",
         "from": "Sam Lee", "from_id": "user4242", "forwarded_from": "Hiking Club",
         "text": "Trail closed north of the lake until April."},
        {"id": 6, "type": "message", "date": "2024-03-14T18:07:00", "date_unixtime": "1710439620",
         "from": "Sam Lee", "from_id": "user4242", "edited": "2024-03-14T18:08:00",
         "edited_unixtime": "1710439680", "text": "Meet at 8 then", "reply_to_message_id": 999},
        {"id": 7, "type": "message", "date": "2024-03-14T18:09:00", "date_unixtime": "1710439740",
         "from": "Priya", "from_id": "user1", "file": "voice_messages/audio_1.ogg",
         "media_type": "voice_message", "mime_type": "audio/ogg", "duration_seconds": 4, "text": ""},
    ],
}

GROUP = {
    "name": "Hike crew",
    "type": "private_group",
    "id": 777,
    "messages": [
        {"id": 10, "type": "service", "date": "2024-04-01T09:00:00", "date_unixtime": "1711962000",
         "actor": "Priya", "actor_id": "user1", "action": "create_group", "title": "Hike crew",
         "members": ["Sam Lee", "Kim"], "text": ""},
        {"id": 11, "type": "service", "date": "2024-04-01T09:00:30", "date_unixtime": "1711962030",
         "actor": "Priya", "actor_id": "user1", "action": "invite_members", "members": ["Alex"], "text": ""},
        {"id": 12, "type": "message", "date": "2024-04-01T09:01:00", "date_unixtime": "1711962060",
         "from": "Kim", "from_id": "user3", "poll": {"question": "Which Saturday?", "closed": False,
                                                      "total_voters": 3,
                                                      "answers": [{"text": "the 6th", "voters": 2, "chosen": True},
                                                                  {"text": "the 13th", "voters": 1, "chosen": False}]},
         "text": ""},
        {"id": 13, "type": "service", "date": "2024-04-01T09:02:00", "date_unixtime": "1711962120",
         "actor": "Kim", "actor_id": "user3", "action": "pin_message", "message_id": 12, "text": ""},
        {"id": 14, "type": "message", "date": "2024-04-01T09:03:00", "date_unixtime": "1711962180",
         "from": "Alex", "from_id": "user5", "text": ["ping ", {"type": "mention", "text": "@kim"}],
         "reply_to_message_id": 12},
        {"id": 15, "type": "service", "date": "2024-04-01T20:00:00", "date_unixtime": "1712001600",
         "actor": "Sam Lee", "actor_id": "user4242", "action": "phone_call", "duration_seconds": 65, "text": ""},
        # malformed records: no date, a number as text, an unknown record type, nothing at all
        {"id": 16, "type": "message", "from": "Kim", "text": "lost in time"},
        {"id": 17, "type": "message", "date": "2024-04-01T20:01:00", "from": "Kim", "text": 42},
        {"id": 18, "type": "reaction", "date": "2024-04-01T20:02:00", "text": ""},
        {"id": 19, "type": "message", "date": "2024-04-01T20:03:00", "from": "Kim", "text": ""},
        {"id": 20, "type": "message", "date": "2024-04-01T20:04:00", "from": "Kim", "text": "still here"},
    ],
}


def _write(tmp_path, data, name="result.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_personal_chat_authors_texts_kinds_and_times(tmp_path):
    [chat] = read_telegram_export(_write(tmp_path, PERSONAL))
    rows = [(m.author, m.kind, m.text) for m in chat.messages]
    assert rows == [
        ("Sam Lee", "text", "Hey, are you free on Saturday?"),
        ("Priya", "text", "Yes! See the trail map and bring boots"),  # entities flattened, link text kept
        ("Sam Lee", "media", "sticker omitted"),
        ("Priya", "media", "image omitted\nthe view last time"),  # the caption after the placeholder
        ("Sam Lee", "text", "Trail closed north of the lake until April."),
        ("Sam Lee", "edited", "Meet at 8 then"),
        ("Priya", "media", "voice message omitted"),
    ]
    assert chat.messages[0].timestamp == datetime(2024, 3, 14, 18, 2, 5)  # `date` as written: local time
    assert [m.reply_to for m in chat.messages] == [None, "0", None, None, None, "#999", None]
    assert chat.stats["forwarded"] == 1 and chat.stats["forwarded_indexes"] == [4]
    assert chat.stats["replies"] == 2 and chat.stats["replies_unresolved"] == 1
    assert chat.stats["chat_name"] == "Sam Lee" and chat.stats["chat_type"] == "personal_chat"
    assert chat.stats["kinds"]["media"] == 3 and chat.source_file == "result.json"


def test_group_service_messages_poll_and_skips(tmp_path):
    skips = SkipCounter()
    [chat] = read_telegram_export(_write(tmp_path, GROUP), skips)
    assert [(m.author, m.kind, m.text) for m in chat.messages if m.kind == "system"] == [
        (None, "system", 'Priya created group "Hike crew"'),
        (None, "system", "Priya added Alex"),
        (None, "system", "Kim pinned a message"),
        (None, "system", "Sam Lee called (65 s)"),
    ]
    poll = next(m for m in chat.messages if m.kind == "poll")
    assert poll.author == "Kim" and is_poll(poll.text)
    assert poll.text == "POLL:\nWhich Saturday?\nOPTION: the 6th (2 votes)\nOPTION: the 13th (1 vote)"
    ping = next(m for m in chat.messages if m.author == "Alex")
    assert ping.text == "ping @kim" and chat.messages[int(ping.reply_to)] is poll
    assert chat.messages[-1].text == "still here"
    expected = {"telegram_bad_date": 1, "telegram_malformed_message": 1, "telegram_unknown_record": 1,
                "telegram_empty_message": 1}
    assert dict(skips.counts) == expected and chat.stats["skipped"] == expected


def test_account_export_gives_one_chat_per_entry(tmp_path):
    account = {
        "about": "Here is the data you requested.",
        "personal_information": {"user_id": 1, "first_name": "Priya"},
        "chats": {"about": "This page lists all chats from this export.", "list": [PERSONAL, GROUP]},
    }
    path = _write(tmp_path, account)
    assert looks_like_telegram(path)
    chats = read_telegram_export(path)
    assert [c.stats["chat_name"] for c in chats] == ["Sam Lee", "Hike crew"]
    assert len({c.chat_id for c in chats}) == 2
    assert all(m.chat_id == c.chat_id for c in chats for m in c.messages)
    assert [len(c.messages) for c in chats] == [7, 7]
    # the same chat alone in another file is another chat_id (the file's hash is part of it), stable on re-read
    assert read_telegram_export(path)[0].chat_id == chats[0].chat_id


def test_rows_fit_the_messages_schema_and_documents_keep_authors(tmp_path):
    [chat] = read_telegram_export(_write(tmp_path, PERSONAL))
    table = pa.Table.from_pylist(chat.as_rows(), schema=MESSAGE_SCHEMA)
    assert table.column("reply_to").to_pylist()[:2] == [None, "0"]
    [doc] = chat_to_documents(chat)
    assert doc.text.splitlines() == [
        "Sam Lee: Hey, are you free on Saturday?",
        "Priya: Yes! See the trail map and bring boots",
        "Sam Lee: Trail closed north of the lake until April.",
        "Sam Lee: Meet at 8 then",
    ]
    assert json.loads(doc.meta)["authors"] == ["Sam Lee", "Priya"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"name": "x", "list": []}', "not a Telegram Desktop export"),
        ("[1, 2, 3]", "not a Telegram Desktop export"),
        ('{"messages": [', "not valid JSON (line 1"),
        (b"\xff\xfd\x00garbage", "not UTF-8"),
        (b"\xff\xfe\x00garbage", "not valid JSON (read as UTF-16 LE, line 1, column 1"),  # UTF-16 LE's byte-order mark
        (codecs.BOM_UTF32_BE + b"\x00\x00\x00{\x00\x11\x00\x00", "not UTF-32 BE text (byte 8)"),
    ],
)
def test_files_that_are_not_telegram_exports_are_one_line_errors(tmp_path, content, message):
    path = tmp_path / "result.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputFileError) as err:
        read_telegram_export(path)
    assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)
    assert not looks_like_telegram(path) or content.startswith("{")


def test_missing_date_falls_back_to_unixtime_in_the_given_zone(tmp_path):
    data = {"name": "x", "type": "personal_chat", "id": 1, "messages": [
        {"id": 1, "type": "message", "date_unixtime": "1710439325", "from": "A", "text": "hi"}]}
    path = _write(tmp_path, data)
    assert read_telegram_export(path)[0].messages[0].timestamp == datetime(2024, 3, 14, 18, 2, 5)
    paris = read_telegram_export(path, tz="Europe/Paris")[0].messages[0].timestamp
    assert paris == datetime(2024, 3, 14, 19, 2, 5)


def _chat(*messages, **fields):
    return {"name": "x", "type": "personal_chat", "id": 1, "messages": list(messages), **fields}


def _message(id_, **fields):
    return {"id": id_, "type": "message", "date": "2024-05-01T10:00:00", "date_unixtime": "1714557600",
            "from": "Kim", "from_id": "user3", "text": "hi", **fields}


def test_invalid_json_that_telegram_desktop_writes_is_repaired(tmp_path):
    # Desktop escapes control characters as \x0B (not JSON), and 4.1.x left custom emoji paths unquoted
    lines = [
        '{', ' "name": "x",', ' "type": "personal_chat",', ' "id": 1,', ' "messages": [',
        '  {', '   "id": 1,', '   "type": "message",', '   "date": "2024-05-01T10:00:00",', '   "from": "Kim",',
        r'   "text": "col1\x09col2\x0Bend, a path C:\\x41"', '  },',
        '  {', '   "id": 2,', '   "type": "message",', '   "date": "2024-05-01T10:01:00",', '   "from": "Kim",',
        '   "text": [', '    {', '     "type": "custom_emoji",', '     "text": "😮",',
        '     "document_id": video_files/sticker (2).webm', '    },', '    " wow"', '   ]', '  }',
        ' ]', '}',
    ]
    path = tmp_path / "result.json"
    path.write_text("\n".join(lines), encoding="utf-8")
    [chat] = read_telegram_export(path)
    assert [m.text for m in chat.messages] == ["col1\tcol2\x0bend, a path C:\\x41", "😮 wow"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{\n "name": "x",\n "messages": [\n  {\n   "id": 1,\n   "type": "mess', "it ends early (an unfinished export?)"),
        ('{"messages": [{"id": ' + "9" * 5000 + "}]}", "JSON this reader cannot hold"),
        ('{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON this reader cannot hold"),
        (" \n", "empty file"),
        ('{"guild": {}, "messages": [{"id": "1", "timestamp": "2020-01-01", "content": "hi"}]}',
         "none of type message or service"),
    ],
)
def test_cut_short_unholdable_empty_or_foreign_json_is_a_one_line_error(tmp_path, content, message):
    path = tmp_path / "result.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFileError) as err:
        read_telegram_export(path)
    assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_wrong_types_in_any_field_are_read_around_or_counted(tmp_path):
    service = {"id": 1, "type": "service", "date": "2024-05-01T09:00:00", "actor": "Kim", "text": ""}
    data = _chat(
        {**service, "action": "invite_members", "members": 5},
        {**service, "id": 2, "action": {"not": "a string"}},
        _message(3, media_type={"x": 1}, text=""),
        _message(4, poll={"question": ["Which ", {"type": "bold", "text": "day"}], "answers": 3}),
        _message(5, **{"from": {"a": 1}}, reply_to_message_id={"x": 1}),
        _message(6, date=True, date_unixtime=True),
        {"id": None, "type": None, "date": None, "text": None},
    )
    skips = SkipCounter()
    [chat] = read_telegram_export(_write(tmp_path, data), skips)
    assert [(m.author, m.kind, m.text, m.reply_to) for m in chat.messages] == [
        (None, "system", "Kim added members", None),
        (None, "system", "Kim: service message", None),
        ("Kim", "media", "<Media omitted>", None),
        ("Kim", "poll", "POLL:\nWhich day", None),
        ("user3", "text", "hi", None),  # a `from` that is no name: the account id
    ]
    assert dict(skips.counts) == {"telegram_bad_date": 1, "telegram_unknown_record": 1}


def test_account_export_entries_that_are_not_chats_are_counted(tmp_path):
    account = {"chats": {"list": [5, {"name": "broken", "id": 2, "messages": 7}, _chat(_message(1))]}}
    skips = SkipCounter()
    chats = read_telegram_export(_write(tmp_path, account), skips)
    assert [[m.text for m in c.messages] for c in chats] == [["hi"]]
    assert dict(skips.counts) == {"telegram_malformed_chat": 2}


def test_forwards_from_hidden_accounts_and_replies_to_other_chats(tmp_path):
    data = _chat(
        _message(1),
        _message(2, forwarded_from=None),  # Desktop writes null for a deleted or hidden sender
        _message(3, reply_to_message_id=1, reply_to_peer_id="channel99"),  # message 1 of another chat
        _message(4, reply_to_message_id=1),
    )
    [chat] = read_telegram_export(_write(tmp_path, data))
    assert chat.stats["forwarded"] == 1 and chat.stats["forwarded_indexes"] == [1]
    assert [m.reply_to for m in chat.messages] == [None, None, "#channel99/1", "0"]


def test_unsupported_records_and_media_without_a_file(tmp_path):
    data = _chat(
        {"id": 1, "type": "unsupported"},  # all Desktop writes for a message it cannot export
        _message(2, text="", game_title="Lumberjack", game_description="chop"),
        _message(3, text="", invoice_information={"title": "Tickets", "amount": 500, "currency": "EUR"}),
        _message(4, text=None, photo="photos/p.jpg"),
        {k: v for k, v in _message(5, text_entities=[{"type": "plain", "text": "only entities"}]).items()
         if k != "text"},
        {"id": 6, "type": "service", "date": "2024-05-01T11:00:00", "actor": "Bot",
         "information_text": "Bot changed the rules", "text": ""},
    )
    skips = SkipCounter()
    [chat] = read_telegram_export(_write(tmp_path, data), skips)
    assert [(m.kind, m.text) for m in chat.messages] == [
        ("media", "<Media omitted>"),
        ("media", "<Media omitted>"),
        ("media", "image omitted"),
        ("text", "only entities"),
        ("system", "Bot changed the rules"),
    ]
    assert dict(skips.counts) == {"telegram_unsupported_message": 1}


def test_lone_surrogates_become_replacement_characters_and_rows_can_be_written(tmp_path):
    data = _chat(_message(1, text="cut \ud83d emoji", **{"from": "K\udc00m"}), _message(2, reply_to_message_id="\ud800"),
                 name="Chat \ud800")
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data), encoding="utf-8")  # ensure_ascii: the surrogates as \ud83d escapes
    [chat] = read_telegram_export(path)
    assert [(m.author, m.text) for m in chat.messages] == [("K\ufffdm", "cut \ufffd emoji"), ("Kim", "hi")]
    assert chat.stats["chat_name"] == "Chat \ufffd"
    pa.Table.from_pylist(chat.as_rows(), schema=MESSAGE_SCHEMA)
    for doc in chat_to_documents(chat):
        doc.text.encode("utf-8") and doc.meta.encode("utf-8")


# --- exports that end early (a crash, a full disk, a partial download): what is complete is kept, the cut counted

TEXTS = ["Привет, Kim!", "second, with a \"quote\"", "third"]


def _export(*chats_or_messages, account=False):
    """The text of a single-chat export of `_message`s, or (account) an account export of `_chat`s, written as
    Desktop writes it (one-space indent, UTF-8)."""
    if account:
        data = {"about": "Here is the data you requested.", "personal_information": {"user_id": 1},
                "chats": {"about": "This page lists all chats from this export.", "list": list(chats_or_messages)}}
    else:
        data = _chat(*chats_or_messages, name="Kim")
    return json.dumps(data, ensure_ascii=False, indent=1)


def _single(texts=TEXTS):
    return _export(*(_message(i + 1, text=t, date=f"2024-05-01T10:0{i}:00") for i, t in enumerate(texts)))


def _cut(tmp_path, text, at, name="result.json"):
    """`text` cut at character `at` (None: whole), written as UTF-8 to `name`; returns its path."""
    path = tmp_path / name
    path.write_bytes(text[:at].encode("utf-8"))
    return path


def _byte(text, at):
    return len(text[:at].encode("utf-8"))


def _message_start(text, number):
    """Where message `number` (its `{`) starts in an export written by `_export`."""
    return text.rindex("{", 0, text.index(f'"id": {number},'))


def _read_cut(path):
    skips = SkipCounter()
    chats = read_telegram_export(path, skips)
    return chats, skips


@pytest.mark.parametrize(
    "where",
    ["inside the third message's text", "inside the third message's keys", "right after the second message's }",
     "after the second message's comma", "inside a text entity list", "inside an escape"],
)
def test_export_cut_inside_or_between_messages_keeps_the_complete_ones(tmp_path, where, caplog):
    texts = TEXTS if where != "inside a text entity list" else [
        *TEXTS[:2], ["see ", {"type": "bold", "text": "the map"}, " and ", {"type": "link", "text": "x.org"}]]
    if where == "inside an escape":
        texts = [*TEXTS[:2], "tab\there"]
    text = _export(*(_message(i + 1, text=t, date=f"2024-05-01T10:0{i}:00") for i, t in enumerate(texts)))
    third = _message_start(text, 3)
    at = {
        "inside the third message's text": lambda: text.index('"third"') + 3,
        "inside the third message's keys": lambda: text.index('"date"', third) + 2,
        "right after the second message's }": lambda: text.rindex("}", 0, third) + 1,
        "after the second message's comma": lambda: third - 3,
        "inside a text entity list": lambda: text.index('"the map"') + 4,
        "inside an escape": lambda: text.index("\\t") + 1,
    }[where]()
    path = _cut(tmp_path, text, at)
    [chat], skips = _read_cut(path)
    assert [m.text for m in chat.messages] == TEXTS[:2]
    assert dict(skips.counts) == {"telegram_truncated_export": 1}
    assert chat.stats["skipped"] == {"telegram_truncated_export": 1} and chat.stats["truncated"] is True
    # reading stopped where the third message starts (or where the second ends, when the file ends there)
    stop = min(at, third) if where != "right after the second message's }" else at
    assert chat.stats["truncated_at_byte"] == _byte(text, stop)
    assert str(path) in skips.examples["telegram_truncated_export"]
    assert f"{path} ends early" in caplog.text and "kept 2 complete messages" in caplog.text


def test_export_cut_inside_a_multibyte_character(tmp_path):
    text = _single(["first", "second", "Привет"])
    path = tmp_path / "result.json"
    cut = text.index("Привет") + 2
    path.write_bytes(text.encode("utf-8")[: _byte(text, cut) + 1])  # half of "и"
    [chat], skips = _read_cut(path)
    assert [m.text for m in chat.messages] == ["first", "second"]
    assert chat.stats["truncated_at_byte"] == _byte(text, _message_start(text, 3))


def test_account_export_cut_inside_the_second_chat(tmp_path):
    first = _chat(*(_message(i, text=f"one {i}") for i in (1, 2)), name="Sam", id=10)
    second = _chat(*(_message(i, text=f"two {i}") for i in (1, 2, 3)), name="Hike crew", id=20)
    text = _export(first, second, account=True)
    at = text.index('"two 3"') + 2
    path = _cut(tmp_path, text, at)
    chats, skips = _read_cut(path)
    assert [[m.text for m in c.messages] for c in chats] == [["one 1", "one 2"], ["two 1", "two 2"]]
    assert [c.stats["chat_name"] for c in chats] == ["Sam", "Hike crew"]
    assert "truncated" not in chats[0].stats and chats[0].stats["skipped"] == {}
    assert chats[1].stats["truncated"] is True and chats[1].stats["skipped"] == {"telegram_truncated_export": 1}
    assert dict(skips.counts) == {"telegram_truncated_export": 1}
    assert chats[1].stats["truncated_at_byte"] == _byte(text, text.rindex("{", 0, text.index('"two 3"')))
    assert "Hike crew" in skips.examples["telegram_truncated_export"]


def test_account_export_cut_before_or_right_at_the_second_chats_messages(tmp_path):
    first = _chat(_message(1, text="one"), name="Sam", id=10)
    second = _chat(_message(1, text="two"), name="Hike crew", id=20)
    text = _export(first, second, account=True)
    # right after "messages": [ of the second chat: it is kept, empty, and flagged
    at = text.index("[", text.index('"messages"', text.index('"Hike crew"'))) + 1
    chats, skips = _read_cut(_cut(tmp_path, text, at))
    assert [([m.text for m in c.messages], c.stats.get("truncated")) for c in chats] == [(["one"], None), ([], True)]
    assert dict(skips.counts) == {"telegram_truncated_export": 1} and chats[1].stats["truncated_at_byte"] == _byte(
        text, at)
    # before its messages: nothing of it is kept, the cut is the file's
    at = text.index('"Hike crew"') + 4
    path = _cut(tmp_path, text, at, "cut2.json")
    chats, skips = _read_cut(path)
    assert [[m.text for m in c.messages] for c in chats] == [["one"]] and "truncated" not in chats[0].stats
    assert dict(skips.counts) == {"telegram_truncated_export": 1}
    assert f"{path}@byte " in skips.examples["telegram_truncated_export"]
    # between the two chats
    at = text.rindex("}", 0, text.index('"Hike crew"')) + 2
    chats, skips = _read_cut(_cut(tmp_path, text, at, "cut3.json"))
    assert [[m.text for m in c.messages] for c in chats] == [["one"]]
    assert dict(skips.counts) == {"telegram_truncated_export": 1}


@pytest.mark.parametrize("where", ["right after messages [", "before messages", "inside the first message"])
def test_export_cut_before_its_first_complete_message_is_a_one_line_error(tmp_path, where):
    text = _single()
    at = {"right after messages [": text.index("[") + 1, "before messages": text.index('"messages"') + 3,
          "inside the first message": text.index('"Привет')}[where]
    path = _cut(tmp_path, text, at)
    with pytest.raises(InputFileError) as err:
        read_telegram_export(path)
    assert "it ends early (an unfinished export?) before its first complete message" in str(err.value)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("end", ["cut", "whole"])
def test_a_syntax_error_before_the_end_is_not_guessed_past(tmp_path, end):
    text = _single().replace('"second', '"sec" "ond', 1)  # a syntax error in the second message
    at = text.index('"third"') + 3 if end == "cut" else len(text)
    path = _cut(tmp_path, text, at)
    with pytest.raises(InputFileError) as err:
        read_telegram_export(path)
    line = text[:text.index('"ond')].count("\n") + 1
    assert f"not valid JSON (line {line}, column" in str(err.value) and "Expecting ',' delimiter" in str(err.value)


@pytest.mark.parametrize("ending", ['   "text": "trailing comma",\n  },\n ]\n}', ' ]\n} x', '\n ]\n}\n]'])
def test_syntax_errors_at_the_end_of_a_complete_file_stay_errors(tmp_path, ending):
    text = _single()
    path = _cut(tmp_path, text[:text.rindex("]")] + ending, None)
    with pytest.raises(InputFileError) as err:
        read_telegram_export(path)
    assert "not valid JSON" in str(err.value) and "ends early" not in str(err.value)


def test_export_cut_short_that_also_needs_desktops_repairs(tmp_path):
    # Desktop's \x0B escapes and 4.1.x's unquoted document_id before the cut: repaired, and the byte offset is
    # the original file's, not the repaired text's
    lines = [
        '{', ' "name": "x",', ' "type": "personal_chat",', ' "id": 1,', ' "messages": [',
        '  {', '   "id": 1,', '   "type": "message",', '   "date": "2024-05-01T10:00:00",', '   "from": "Kim",',
        r'   "text": "col1\x09col2\x0Bend ё"', '  },',
        '  {', '   "id": 2,', '   "type": "message",', '   "date": "2024-05-01T10:01:00",', '   "from": "Kim",',
        '   "text": [', '    {', '     "type": "custom_emoji",', '     "text": "😮",',
        '     "document_id": video_files/sticker (2).webm', '    },', '    " wow"', '   ]', '  },',
        '  {', '   "id": 3,', '   "type": "message",', '   "date": "2024-05-01T10:02:00",', '   "from": "Kim",',
        r'   "text": "cut \x0B here and more"', '  }', ' ]', '}',
    ]
    text = "\n".join(lines)
    for at in (text.index("here"), text.index(r"\x0B here") + 2):
        path = _cut(tmp_path, text, at)
        [chat], skips = _read_cut(path)
        assert [m.text for m in chat.messages] == ["col1\tcol2\x0bend ё", "😮 wow"]
        assert chat.stats["truncated_at_byte"] == _byte(text, _message_start(text, 3))
        assert dict(skips.counts) == {"telegram_truncated_export": 1}


def test_a_cut_export_goes_through_ingest_to_parquet(tmp_path):
    from storage.parquet import iter_rows
    from tasks.ingest import InputFile, ingest_file
    from tasks.params import IngestParams

    text = _single(["are you around tonight?", "yes, after the gym", "pizza or ramen?"])
    path = _cut(tmp_path, text, text.index("ramen?"))
    f = InputFile(path=str(path), kind="telegram", source="telegram", sha256="0" * 64)
    docs_part, msgs_part = tmp_path / "docs.parquet", tmp_path / "msgs.parquet"
    result = ingest_file(f, str(docs_part), str(msgs_part), IngestParams())
    assert result.info["error"] is None and result.extra["messages"] == 2
    assert result.extra["skipped"] == {"telegram_truncated_export": 1}
    [stats] = result.info["stats"].values()
    assert stats["truncated"] is True and stats["truncated_at_byte"] == _byte(text, _message_start(text, 3))
    assert [m["text"] for m in iter_rows(msgs_part)] == ["are you around tonight?", "yes, after the gym"]
    [doc] = iter_rows(docs_part)
    assert doc["text"] == "Kim: are you around tonight?\nKim: yes, after the gym"



# --- exports re-saved by another tool: another encoding, ids as floats, a text entity without text

RESAVED = _chat(
    _message(1, text="Привет 😀, Kim!"),
    _message(2, text=["see ", {"type": "bold", "text": "the map"}, " \u2014 ok"], reply_to_message_id=1),
    _message(3, text="tab\there", **{"from": "Sam 🥾"}),
    name="Kim 🥾", id=4242,
)
ENCODINGS = {  # how a file is written: its byte-order mark, then its text in this encoding
    "utf-8 with BOM": (codecs.BOM_UTF8, "utf-8"),
    "utf-16 le": (codecs.BOM_UTF16_LE, "utf-16-le"),
    "utf-16 be": (codecs.BOM_UTF16_BE, "utf-16-be"),
    "utf-32 le": (codecs.BOM_UTF32_LE, "utf-32-le"),
    "utf-32 be": (codecs.BOM_UTF32_BE, "utf-32-be"),
    "utf-16 le without BOM": (b"", "utf-16-le"),
    "utf-16 be without BOM": (b"", "utf-16-be"),
}


def _write_encoded(tmp_path, text, encoding, at=None, name="result.json"):
    """`text` written as `encoding` (a key of ENCODINGS), cut at byte `at` of the encoded file (None: whole)."""
    bom, codec = ENCODINGS[encoding]
    path = tmp_path / name
    path.write_bytes((bom + text.encode(codec, "surrogatepass"))[:at])
    return path


def _encoded_byte(text, at, encoding):
    bom, codec = ENCODINGS[encoding]
    return len(bom) + len(text[:at].encode(codec))


def _rows(chats):
    return [(c.stats["chat_name"], c.stats["source_chat_id"],
             [(m.author, m.kind, m.text, m.reply_to, m.timestamp) for m in c.messages]) for c in chats]


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_export_resaved_as_utf16_or_utf32_reads_like_the_utf8_file(tmp_path, encoding):
    utf8 = read_telegram_export(_write(tmp_path, RESAVED, "utf8.json"))
    path = _write_encoded(tmp_path, json.dumps(RESAVED, ensure_ascii=False, indent=1), encoding)
    assert looks_like_telegram(path)
    skips = SkipCounter()
    chats = read_telegram_export(path, skips)
    assert _rows(chats) == _rows(utf8) and not skips.counts
    assert chats[0].messages[0].text == "Привет 😀, Kim!" and chats[0].messages[1].reply_to == "0"
    account = {"personal_information": {"user_id": 1}, "chats": {"list": [RESAVED]}}
    path = _write_encoded(tmp_path, json.dumps(account, ensure_ascii=False), encoding, name="account.json")
    assert looks_like_telegram(path) and _rows(read_telegram_export(path)) == _rows(utf8)


def test_a_lone_surrogate_in_a_utf16_export_becomes_a_replacement_character(tmp_path):
    # JavaScript strings may hold half an emoji; a tool that re-saves the export as UTF-16 writes it as it is
    text = json.dumps(_chat(_message(1, text="cut \ud83d emoji"), name="K\udc00m"), ensure_ascii=False)
    [chat] = read_telegram_export(_write_encoded(tmp_path, text, "utf-16 le"))
    assert [m.text for m in chat.messages] == ["cut \ufffd emoji"] and chat.stats["chat_name"] == "K\ufffdm"
    pa.Table.from_pylist(chat.as_rows(), schema=MESSAGE_SCHEMA)


DESKTOP_INVALID = "\n".join([  # Desktop's \x0B escapes and 4.1.x's unquoted document_id, then a third message
    '{', ' "name": "Kim",', ' "type": "personal_chat",', ' "id": 1,', ' "messages": [',
    '  {', '   "id": 1,', '   "type": "message",', '   "date": "2024-05-01T10:00:00",', '   "from": "Kim",',
    r'   "text": "a\x09b\x0Bc ё"', '  },',
    '  {', '   "id": 2,', '   "type": "message",', '   "date": "2024-05-01T10:01:00",', '   "from": "Kim",',
    '   "text": [', '    {', '     "type": "custom_emoji",', '     "text": "🙂",',
    '     "document_id": stickers/s (1).webp', '    },', '    " ok"', '   ]', '  },',
    '  {', '   "id": 3,', '   "type": "message",', '   "date": "2024-05-01T10:02:00",', '   "from": "Kim",',
    r'   "text": "😀 then \x0B more"', '  }', ' ]', '}',
])


@pytest.mark.parametrize("encoding", ["utf-16 le", "utf-16 be", "utf-32 le", "utf-16 le without BOM"])
def test_utf16_export_is_repaired_and_salvaged_like_a_utf8_one(tmp_path, encoding):
    [chat] = read_telegram_export(_write_encoded(tmp_path, DESKTOP_INVALID, encoding))
    assert [m.text for m in chat.messages] == ["a\tb\x0bc ё", "🙂 ok", "😀 then \x0b more"]
    third = _message_start(DESKTOP_INVALID, 3)
    emoji = _encoded_byte(DESKTOP_INVALID, DESKTOP_INVALID.index("😀"), encoding)
    # cut inside the third message's text, inside its emoji (half its surrogate pair, an odd byte) and its escape
    for at in (_encoded_byte(DESKTOP_INVALID, DESKTOP_INVALID.index("then"), encoding), emoji + 1, emoji + 2,
               emoji + 3, _encoded_byte(DESKTOP_INVALID, DESKTOP_INVALID.index(r"\x0B more") + 2, encoding)):
        [chat], skips = _read_cut(_write_encoded(tmp_path, DESKTOP_INVALID, encoding, at))
        assert [m.text for m in chat.messages] == ["a\tb\x0bc ё", "🙂 ok"]
        assert dict(skips.counts) == {"telegram_truncated_export": 1} and chat.stats["truncated"] is True
        assert chat.stats["truncated_at_byte"] == _encoded_byte(DESKTOP_INVALID, third, encoding)


def test_utf16_export_cut_before_its_first_message_is_a_one_line_error(tmp_path):
    text = _single()
    path = _write_encoded(tmp_path, text, "utf-16 be", _encoded_byte(text, text.index("[") + 1, "utf-16 be") + 1)
    with pytest.raises(InputFileError) as err:
        read_telegram_export(path)
    line = text[:text.index("[")].count("\n") + 1
    assert f"not valid JSON (read as UTF-16 BE, line {line}, column" in str(err.value)
    assert "it ends early (an unfinished export?) before its first complete message" in str(err.value)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_ids_counts_and_times_written_as_floats(tmp_path):
    # a tool that re-saves the export through JavaScript or pandas writes 1.0 for 1, NaN for a missing id
    data = _chat(
        _message(1.0, text="first"),
        _message(2.0, text="second", reply_to_message_id=1.0, **{"from": None, "from_id": 42.0}),
        {k: v for k, v in _message(3.0, text="third", date_unixtime=1714557600.0).items() if k != "date"},
        _message(4.0, text="", poll={"question": "Which day?", "answers": [{"text": "Sat", "voters": 2.0},
                                                                          {"text": "Sun", "voters": 1.0}]}),
        {"id": 5.0, "type": "service", "date": "2024-05-01T10:00:00", "actor": "Kim", "action": "phone_call",
         "duration_seconds": 65.0, "text": ""},
        # a fraction, NaN or infinity is no id: read around as any other wrong type
        _message(6.5, text="sixth", reply_to_message_id=float("nan")),
        _message(7, text="seventh", reply_to_message_id=6.5, **{"from": None, "from_id": 1.5}),
        _message(8, text="eighth", reply_to_message_id=float("inf"), reply_to_peer_id=2.0),
        _message(9, text="ninth", reply_to_message_id=2, reply_to_peer_id=float("-inf")),
        # a fraction of a second is floored; NaN is no time
        {k: v for k, v in _message(10, text="tenth", date_unixtime=1714557600.5).items() if k != "date"},
        {k: v for k, v in _message(11, date_unixtime=float("nan")).items() if k != "date"},
        id=4242.0,
    )
    skips = SkipCounter()
    [chat] = read_telegram_export(_write(tmp_path, data), skips)
    assert [(m.author, m.kind, m.text, m.reply_to) for m in chat.messages] == [
        ("Kim", "text", "first", None),
        ("42", "text", "second", "0"),
        ("Kim", "text", "third", None),
        ("Kim", "poll", "POLL:\nWhich day?\nOPTION: Sat (2 votes)\nOPTION: Sun (1 vote)", None),
        (None, "system", "Kim called (65 s)", None),
        ("Kim", "text", "sixth", None),
        ("Deleted Account", "text", "seventh", None),
        ("Kim", "text", "eighth", None),
        ("Kim", "text", "ninth", "1"),
        ("Kim", "text", "tenth", None),
    ]
    assert chat.messages[2].timestamp == datetime(2024, 5, 1, 10, 0)  # date_unixtime, in UTC
    assert chat.messages[9].timestamp == datetime(2024, 5, 1, 10, 0)
    assert chat.stats["source_chat_id"] == "4242"
    assert dict(skips.counts) == {"telegram_bad_date": 1}
    assert skips.examples["telegram_bad_date"].endswith(":x#11: None")


def test_a_bad_text_entity_is_counted_and_the_message_keeps_the_rest(tmp_path):
    data = _chat(
        _message(1, text=["see ", {"type": "bold"}, {"type": "link", "text": "x.org"}]),
        _message(2, text=[7, "two ", None, ["nested"], {"type": "bold", "text": 5}, "parts", 1.5, True]),
        _message(3, text=[{"type": "mention", "text": None}], photo="photos/p.jpg"),
        _message(4, text=[None]),  # nothing left: counted, and skipped as empty
        {k: v for k, v in _message(5, text_entities=[{"type": "plain", "text": "only "}, 3,
                                                     {"type": "bold", "text": "entities"}]).items() if k != "text"},
        _message(6, text=["fine"], text_entities=[5]),  # `text_entities` is read only without `text`
    )
    skips = SkipCounter()
    path = _write(tmp_path, data)
    [chat] = read_telegram_export(path, skips)
    assert [(m.author, m.kind, m.text) for m in chat.messages] == [
        ("Kim", "text", "see x.org"),
        ("Kim", "text", "two parts"),
        ("Kim", "media", "image omitted"),
        ("Kim", "text", "only entities"),
        ("Kim", "text", "fine"),
    ]
    counts = {"telegram_bad_entity": 1 + 6 + 1 + 1 + 1, "telegram_empty_message": 1}
    assert dict(skips.counts) == counts and chat.stats["skipped"] == counts
    assert skips.examples["telegram_bad_entity"] == f"{path}:x#1: text[1] is an entity without text"


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ([{"type": "bold", "text": 5}], "text[0] is an entity whose text is a int"),
        (["ok", None], "text[1] is a NoneType, not a string or an entity"),
        (["ok", ["nested"]], "text[1] is a list, not a string or an entity"),
    ],
)
def test_a_bad_text_entity_names_the_file_message_and_part(tmp_path, text, detail):
    skips = SkipCounter()
    path = _write(tmp_path, _chat(_message(1), _message(2, text=text)))
    read_telegram_export(path, skips)
    assert skips.examples["telegram_bad_entity"] == f"{path}:x#2: {detail}"


def test_a_bad_part_of_a_poll_is_counted_and_the_poll_keeps_the_rest(tmp_path):
    poll = {"question": ["Which ", {"type": "bold"}, "day?"], "closed": False, "total_voters": 3,
            "answers": [{"text": ["Sat", None], "voters": 2, "chosen": False},
                        "Sun",
                        {"text": 7, "voters": 1, "chosen": False},
                        {"text": "Mon", "voters": 0, "chosen": True}]}
    skips = SkipCounter()
    path = _write(tmp_path, _chat(_message(1, text="", poll=poll)))
    [chat] = read_telegram_export(path, skips)
    assert [(m.kind, m.text) for m in chat.messages] == [
        ("poll", "POLL:\nWhich day?\nOPTION: Sat (2 votes)\nOPTION:  (1 vote)\nOPTION: Mon (0 votes)")]
    assert dict(skips.counts) == {"telegram_bad_entity": 4} and chat.stats["skipped"] == {"telegram_bad_entity": 4}
    assert skips.examples["telegram_bad_entity"] == f"{path}:x#1: poll.question[1] is an entity without text"


@pytest.mark.parametrize(
    ("poll", "detail"),
    [
        ({"question": "Which day?", "answers": [{"text": ["Sat", 5], "voters": 1}]},
         "poll.answers[0].text[1] is a int, not a string or an entity"),
        ({"question": "Which day?", "answers": [{"text": "Sat", "voters": 1}, "Sun"]},
         "poll.answers[1] is a str, not an answer"),
        ({"question": "Which day?", "answers": [{"text": 7, "voters": 1}]}, "poll.answers[0].text is a int"),
        ({"question": {"type": "bold"}, "answers": []}, "poll.question is a dict"),
    ],
)
def test_a_bad_part_of_a_poll_names_the_question_or_answer(tmp_path, poll, detail):
    skips = SkipCounter()
    path = _write(tmp_path, _chat(_message(1, text="", poll=poll)))
    read_telegram_export(path, skips)
    assert skips.examples["telegram_bad_entity"] == f"{path}:x#1: {detail}"


def test_bad_text_parts_are_read_from_text_entities_that_give_the_same_message(tmp_path):
    # Desktop writes `text` and `text_entities` from one list of parts: a plain part is a string in one and a
    # {"type": "plain"} entity in the other
    entities = [{"type": "plain", "text": "see "}, {"type": "bold", "text": "this"}, {"type": "plain", "text": " now"}]
    data = _chat(
        _message(1, text=["see ", {"type": "bold"}, " now"], text_entities=entities),
        _message(2, text=["see ", None, {"type": "bold", "text": 5}], text_entities=entities),
        _message(3, text=["see ", None, " now"], text_entities=[entities[0], 5, entities[2]]),  # bad in both
        _message(4, text=["see ", {"type": "bold"}, " later"], text_entities=entities),  # they disagree
        _message(5, text=["see ", {"type": "bold"}], text_entities=entities),  # not as many parts
        _message(6, text=["see ", {"type": "bold"}, " now"], text_entities="see this now"),  # no list
    )
    skips = SkipCounter()
    path = _write(tmp_path, data)
    [chat] = read_telegram_export(path, skips)
    assert [m.text for m in chat.messages] == [
        "see this now", "see this now", "see  now", "see  later", "see", "see  now"]
    assert dict(skips.counts) == {"telegram_bad_entity": 4}
    assert skips.examples["telegram_bad_entity"] == f"{path}:x#3: text[1] is a NoneType, not a string or an entity"


def test_a_fractional_unixtime_without_a_date_is_floored_to_the_second(tmp_path):
    def undated(id_, unix):
        return {k: v for k, v in _message(id_, text=f"m{id_}", date_unixtime=unix).items() if k != "date"}

    data = _chat(undated(1, 1714557600.5), undated(2, "1714557600.999"), undated(3, 1714557659.999),
                 undated(4, "1714557600"), undated(5, float("inf")), undated(6, "soon"), undated(7, True))
    skips = SkipCounter()
    path = _write(tmp_path, data)
    [chat] = read_telegram_export(path, skips)
    assert {m.text: m.timestamp for m in chat.messages} == {
        "m1": datetime(2024, 5, 1, 10, 0), "m2": datetime(2024, 5, 1, 10, 0),
        "m3": datetime(2024, 5, 1, 10, 0, 59), "m4": datetime(2024, 5, 1, 10, 0)}  # floored, never rounded up
    assert dict(skips.counts) == {"telegram_bad_date": 3}
    paris = read_telegram_export(path, tz="Europe/Paris")[0].messages[0].timestamp
    assert paris == datetime(2024, 5, 1, 12, 0)
