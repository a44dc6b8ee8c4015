"""Meta's Messenger / Instagram JSON exports → chats: split parts, every record shape, the mojibake, and refusals."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pytest

from storage.schemas import MESSAGE_SCHEMA
from tasks.messenger import (
    conversation_sha256,
    is_continuation_part,
    looks_like_messenger,
    read_messenger_export,
    repair_mojibake,
)
from tasks.records import InputFileError, SkipCounter
from tasks.telegram import looks_like_telegram
from tasks.whatsapp import chat_to_documents
from tasks.whatsapp.classify import is_deleted, is_media

T0 = 1_710_439_325_000  # 2024-03-14 18:02:05 UTC, in ms
MIN = 60_000


def moji(text: str) -> str:
    """`text` as the DYI exports write it: each UTF-8 byte as its own code point (json.dumps → \\u00XX)."""
    return text.encode("utf-8").decode("latin-1")


def msg(sender, minute, content=None, **fields):
    m = {"sender_name": moji(sender), "timestamp_ms": T0 + minute * MIN, "is_geoblocked_for_viewer": False}
    if content is not None:
        m["content"] = moji(content)
    return {**m, **fields}


def thread(messages, title="Radosław", participants=("Radosław", "Zoë"), path="inbox/radoslaw_123", **fields):
    return {
        "participants": [{"name": moji(p)} for p in participants],
        "messages": sorted(messages, key=lambda m: -m.get("timestamp_ms", 0)),  # newest first, as Meta writes
        "title": moji(title),
        "is_still_participant": True,
        "thread_type": "RegularGroup" if len(participants) > 2 else "Regular",
        "thread_path": path,
        "magic_words": [],
        **fields,
    }


def write(folder, data, name="message_1.json"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")  # ensure_ascii: the file holds \u00c5\u0082 escapes
    return path


def rows(chat):
    return [(m.author, m.kind, m.text) for m in chat.messages]


def test_a_chat_split_in_two_parts_is_one_chat_oldest_first(tmp_path):
    folder = tmp_path / "messages" / "inbox" / "radoslaw_123"
    newer = [msg("Zoë", 10, "à demain 😂"), msg("Radosław", 9, "Dobrze, widzimy się jutro")]
    older = [msg("Radosław", 1, "Cześć! Jak się masz?"), msg("Zoë", 2, "Très bien, merci")]
    first = write(folder, thread(newer))
    second = write(folder, thread(older), "message_2.json")
    assert first.read_text().count("\\u00c5\\u0082") >= 2  # "ł" written as two Latin-1 escapes

    [chat] = read_messenger_export(first, tz="Europe/Warsaw")
    assert rows(chat) == [
        ("Radosław", "text", "Cześć! Jak się masz?"),
        ("Zoë", "text", "Très bien, merci"),
        ("Radosław", "text", "Dobrze, widzimy się jutro"),
        ("Zoë", "text", "à demain 😂"),  # a 4-byte character repaired from four escapes
    ]
    assert chat.messages[0].timestamp == datetime(2024, 3, 14, 19, 3, 5)  # UTC 18:03:05 in Warsaw
    assert chat.stats["chat_name"] == "Radosław" and chat.stats["participants"] == ["Radosław", "Zoë"]
    assert chat.stats["source"] == "messenger" and chat.stats["chat_type"] == "Regular"
    assert chat.stats["parts"] == ["message_1.json", "message_2.json"] and chat.stats["mojibake_repaired"]
    assert chat.source_file == "message_1.json" and chat.stats["source_chat_id"] == "inbox/radoslaw_123"

    # the later part gives nothing alone (it was read with message_1); the folder gives the same chat
    assert is_continuation_part(second) and not is_continuation_part(first)
    assert read_messenger_export(second) == []
    [again] = read_messenger_export(folder)
    assert again.chat_id == chat.chat_id and len(again.messages) == 4
    [alone] = read_messenger_export(second, siblings=False)
    assert [m.text for m in alone.messages] == ["Cześć! Jak się masz?", "Très bien, merci"]
    assert alone.chat_id != chat.chat_id
    # the conversation's hash covers every part: a changed message_2 changes what message_1 stands for
    before = conversation_sha256(first)
    write(folder, thread([*older, msg("Zoë", 3, "one more")]), "message_2.json")
    assert conversation_sha256(first) != before
    with pytest.raises(InputFileError, match="missing.json: no such file"):
        conversation_sha256(folder / "missing.json")


def test_group_events_polls_calls_and_unsent(tmp_path):
    people = ("Ana", "Bo", "Cy")
    messages = [
        msg("Ana", 0, "Ana added Bo and Cy to the group.", type="Subscribe", users=[{"name": "Bo"}, {"name": "Cy"}]),
        msg("Ana", 1, None, type="Subscribe", users=[{"name": "Dee"}]),
        msg("Ana", 2, "Ana named the group Hike crew."),
        msg("Bo", 3, "Bo created a poll: Which Saturday?."),
        msg("Cy", 4, 'Cy voted for "the 6th" in the poll: Which Saturday?.'),
        msg("Bo", 5, "Bo started a video chat."),
        msg("Bo", 6, "The video chat ended."),
        msg("Cy", 7, None, type="Call", call_duration=65),
        msg("Cy", 8, None, type="Call", call_duration=0, missed=True),
        msg("Ana", 9, None, type="Generic", is_unsent=True, reactions=[{"reaction": moji("😍"), "actor": "Bo"}]),
        msg("Bo", 10, "she named the group chat after her cat lol"),  # not an event: it does not start with "Bo "
        msg("Cy", 11, None, type="Unsubscribe", users=[{"name": "Cy"}]),
        msg("Ana", 12, None, type="Unsubscribe", users=[{"name": "Bo"}]),
        msg("Bo", 13, "You are now connected on Messenger"),
        msg("Ana", 14, "Ana set the nickname for Bo to Bobo."),
    ]
    [chat] = read_messenger_export(write(tmp_path / "hikecrew_9", thread(messages, "Hike crew", people)))
    assert rows(chat) == [
        (None, "system", "Ana added Bo and Cy to the group."),  # Meta's own wording kept when written
        (None, "system", "Ana added Dee"),
        (None, "system", "Ana named the group Hike crew."),
        ("Bo", "poll", "POLL:\nWhich Saturday?"),
        (None, "system", 'Cy voted for "the 6th" in the poll: Which Saturday?.'),
        (None, "system", "Bo started a video chat."),
        (None, "system", "The video chat ended."),
        (None, "system", "Cy called (65 s)"),
        (None, "system", "Missed call from Cy"),
        ("Ana", "deleted", "This message was deleted"),
        ("Bo", "text", "she named the group chat after her cat lol"),
        (None, "system", "Cy left the group"),
        (None, "system", "Ana removed Bo"),
        (None, "system", "You are now connected on Messenger"),
        (None, "system", "Ana set the nickname for Bo to Bobo."),
    ]
    assert is_deleted(chat.messages[9].text)
    assert chat.stats["chat_type"] == "RegularGroup" and chat.stats["messages"] == 15  # the reaction is no message


def test_every_media_kind_with_its_caption(tmp_path):
    uri = {"uri": "messages/inbox/x/photos/1.jpg", "creation_timestamp": 1710439325}
    messages = [
        msg("Ana", 0, None, photos=[uri, uri]),
        msg("Ana", 1, "the view ☀️", photos=[uri]),
        msg("Bo", 2, None, videos=[{"uri": "v.mp4", "thumbnail": {"uri": "v.mp4"}}]),
        msg("Bo", 3, None, gifs=[{"uri": "g.gif"}]),
        msg("Ana", 4, None, audio_files=[{"uri": "a.mp4"}]),
        msg("Ana", 5, None, files=[{"uri": "notes.tex"}]),
        msg("Bo", 6, None, sticker={"uri": "messages/stickers_used/1.png"}),
        msg("Bo", 7, "Bo sent an attachment.", photos=[uri]),  # Meta's note beside it is no caption
        msg("Ana", 8, "Ana sent an attachment."),  # an attachment the export left out
    ]
    [chat] = read_messenger_export(write(tmp_path / "x_1", thread(messages, "x", ("Ana", "Bo"))))
    assert [m.text for m in chat.messages] == [
        "image omitted", "image omitted\nthe view ☀️", "video omitted", "GIF omitted", "audio omitted",
        "document omitted", "sticker omitted", "image omitted", "<Media omitted>",
    ]
    assert {m.kind for m in chat.messages} == {"media"} and all(is_media(m.text) for m in chat.messages)


def test_shares_reactions_and_reaction_notices(tmp_path):
    link = "https://www.youtube.com/watch?v=dQw4w9WgXcQ"
    messages = [
        msg("Ana", 0, "look at this", type="Share", share={"link": link}),
        msg("Bo", 1, link, type="Share", share={"link": link}),
        msg("Ana", 2, "Ana sent a link.", type="Share", share={"link": link, "share_text": "someone else's caption"}),
        msg("Bo", 3, None, type="Share", share={"share_text": "Live location, last updated 8 September"}),
        msg("Ana", 4, "haha", reactions=[{"reaction": moji("😂"), "actor": "Bo"}]),
        msg("Bo", 5, "Liked a message"),
        msg("Bo", 6, "Bo reacted 😂 to your message"),
    ]
    skips = SkipCounter()
    [chat] = read_messenger_export(write(tmp_path / "x_1", thread(messages, "x", ("Ana", "Bo"))), skips)
    assert rows(chat) == [
        ("Ana", "text", f"look at this\n{link}"),
        ("Bo", "text", link),
        ("Ana", "text", link),
        ("Bo", "media", "<Media omitted>"),
        ("Ana", "text", "haha"),
    ]
    assert dict(skips.counts) == {"messenger_reaction_notice": 2}
    assert "x_1/message_1.json#message " in skips.examples["messenger_reaction_notice"]


def test_mojibake_is_repaired_only_where_it_can_be(tmp_path):
    assert repair_mojibake(moji("Radosław 👍🏽 naïve")) == "Radosław 👍🏽 naïve"
    # real Latin-1 text is not valid UTF-8 once encoded: it stays as written
    for real in ("SÃO PAULO", "café", "Ã", "ÃO", "£5 ½ price", "plain ascii"):
        assert repair_mojibake(real) == real

    # a copy already repaired by some tool: most strings do not decode, so none is touched, not even "Ã©tÃ©"
    repaired = thread([msg("Ana", 0), msg("Ana", 1), msg("Ana", 2)], "Łódź trip", ("Ana", "Bo"))
    for message, text in zip(repaired["messages"], ["Ã©tÃ©", "Łódź", "café ☕"], strict=True):
        message["content"] = text
    repaired["title"] = "Łódź trip"  # as the tool wrote it back
    [chat] = read_messenger_export(write(tmp_path / "fixed_1", repaired))
    assert [m.text for m in chat.messages] == ["café ☕", "Łódź", "Ã©tÃ©"]
    assert chat.stats["chat_name"] == "Łódź trip" and not chat.stats["mojibake_repaired"]

    # a mojibake file with strings written otherwise (real Latin-1, curly quotes): those stay, the rest is repaired
    mixed = thread([msg("Zoë", 0, "São Paulo"), msg("Zoë", 1), msg("Zoë", 2)], "x", ("Zoë", "Bo"))
    mixed["messages"][0]["content"] = "SÃO PAULO"
    mixed["messages"][1]["content"] = "\u201cquoted\u201d"
    [chat] = read_messenger_export(write(tmp_path / "mixed_1", mixed))
    assert [m.text for m in chat.messages] == ["São Paulo", "\u201cquoted\u201d", "SÃO PAULO"]
    assert {m.author for m in chat.messages} == {"Zoë"} and chat.stats["mojibake_repaired"]


def test_instagram_export_is_told_by_its_folder(tmp_path):
    folder = tmp_path / "instagram-zoe-2024-05-01" / "your_instagram_activity" / "messages" / "inbox" / "ana_17"
    data = thread([msg("ana.b", 0, "hej 👋"), msg("zoe", 1, "hi!"), msg("ana.b", 2, "Liked a message")],
                  "ana.b", ("ana.b", "zoe"), "inbox/ana_17")
    path = write(folder, data)
    assert looks_like_messenger(path)
    skips = SkipCounter()
    [chat] = read_messenger_export(path, skips)
    assert chat.stats["source"] == "instagram" and rows(chat) == [("ana.b", "text", "hej 👋"), ("zoe", "text", "hi!")]
    assert skips.counts["messenger_reaction_notice"] == 1
    assert read_messenger_export(path, source="messenger")[0].stats["source"] == "messenger"


E2EE = {
    "participants": ["Zoë", "Jana Nováková"],
    "threadName": "Jana Nováková_7",
    "messages": [
        {"isUnsent": False, "media": [], "reactions": [{"actor": "Zoë", "reaction": "❤"}],
         "senderName": "Jana Nováková", "text": "tajná zpráva 🍺", "timestamp": T0, "type": "text"},
        {"isUnsent": False, "media": [{"uri": "./media/e2ee.jpeg"}], "reactions": [], "senderName": "Zoë",
         "text": "", "timestamp": T0 + MIN, "type": "media"},
        {"isUnsent": True, "media": [], "reactions": [], "senderName": "Zoë", "text": "User unsent a message",
         "timestamp": T0 + 2 * MIN, "type": "placeholder"},
        {"isUnsent": False, "media": [{"uri": "Failed to download media"}], "reactions": [],
         "senderName": "Jana Nováková", "text": "to je on", "timestamp": T0 + 3 * MIN, "type": "media"},
        {"isUnsent": False, "media": [{"uri": "./media/clip.mp4"}], "reactions": [], "senderName": "Zoë",
         "text": "", "timestamp": T0 + 4 * MIN, "type": "media"},
        {"isUnsent": False, "media": [], "reactions": [], "senderName": "Zoë", "text": "https://example.org/a",
         "timestamp": T0 + 5 * MIN, "type": "link"},
    ],
}


def test_end_to_end_encrypted_download(tmp_path):
    path = tmp_path / "messages" / "Jana Nováková_7.json"
    path.parent.mkdir()
    path.write_text(json.dumps(E2EE, ensure_ascii=False), encoding="utf-8")  # clean UTF-8, no mojibake
    assert looks_like_messenger(path)
    [chat] = read_messenger_export(path)
    assert rows(chat) == [
        ("Jana Nováková", "text", "tajná zpráva 🍺"),
        ("Zoë", "media", "image omitted"),
        ("Zoë", "deleted", "This message was deleted"),
        ("Jana Nováková", "media", "<Media omitted>\nto je on"),
        ("Zoë", "media", "video omitted"),
        ("Zoë", "text", "https://example.org/a"),
    ]
    assert chat.stats["chat_name"] == "Jana Nováková" and chat.stats["export_shape"] == "e2ee"
    assert chat.stats["participants"] == ["Zoë", "Jana Nováková"] and chat.stats["chat_type"] == "one-to-one"
    # the same download escaped (ensure_ascii) reads the same: "á" is one \u00e1, not a UTF-8 byte pair
    path.write_text(json.dumps(E2EE), encoding="utf-8")
    assert rows(read_messenger_export(path)[0]) == rows(chat)
    # and a whole folder: the DYI parts and the e2ee file, other JSON of the export passed over
    write(tmp_path / "messages" / "inbox" / "x_1", thread([msg("Ana", 0, "hi")], "x", ("Ana", "Bo")))
    (tmp_path / "messages" / "autofill_information.json").write_text('{"media": [], "label_values": []}')
    chats = read_messenger_export(tmp_path)
    assert sorted(c.stats["chat_name"] for c in chats) == ["Jana Nováková", "x"]


def test_participants_missing_and_bad_records_are_counted(tmp_path):
    data = thread([msg("Ana", 0, "one"), msg("Bo", 1, "two")], "x", ("Ana", "Bo"))
    del data["participants"]
    data["messages"] += [
        {"sender_name": "Ana", "timestamp_ms": T0 + 5 * MIN, "content": 42},
        {"sender_name": "Ana", "timestamp_ms": "yesterday", "content": "when?"},
        {"timestamp_ms": T0 + 6 * MIN, "content": "who?"},
        {"sender_name": "Ana", "timestamp_ms": T0 + 7 * MIN},  # nothing to show
        "not an object",
    ]
    skips = SkipCounter()
    [chat] = read_messenger_export(write(tmp_path / "x_1", data), skips)
    assert [m.text for m in chat.messages] == ["one", "two"] and chat.stats["participants"] is None
    expected = {"messenger_malformed_message": 2, "messenger_bad_timestamp": 1, "messenger_no_sender": 1,
                "messenger_empty_message": 1}
    assert dict(skips.counts) == expected and chat.stats["skipped"] == expected
    assert skips.examples["messenger_bad_timestamp"].endswith("x_1/message_1.json#message 3: 'yesterday'")


def test_legacy_seconds_timestamps_and_ascending_files(tmp_path):
    data = {"participants": [{"name": "Ana"}], "title": "x", "messages": [
        {"sender_name": "Ana", "timestamp": 1524558089, "content": "first", "type": "Generic"},
        {"sender_name": "Ana", "timestamp": 1524558090, "content": "second", "type": "Generic"},
    ]}
    [chat] = read_messenger_export(write(tmp_path / "x_1", data))
    assert [m.text for m in chat.messages] == ["first", "second"]
    assert chat.messages[0].timestamp == datetime(2018, 4, 24, 8, 21, 29)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"name": "x", "list": []}', "without a 'messages' list"),
        ('{"messages": [{"id": 1, "type": "message", "from": "Kim", "date": "2024-01-01T00:00:00"}]}',
         "none with sender_name or senderName"),
        ("[1, 2, 3]", "not an object with 'messages'"),
        ('{\n "participants": [{"name": "A"}],\n "messages": [\n  {"sender_name": "A", "timestamp_ms": 1, "con',
         "it ends early"),
        ('{"messages": [}', "not valid JSON (line 1"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        ("", "empty file"),
    ],
)
def test_files_that_are_not_exports_are_one_line_errors(tmp_path, content, message):
    path = tmp_path / "message_1.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputFileError) as err:
        read_messenger_export(path)
    assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_bad_part_fails_its_chat_and_a_folder_counts_it(tmp_path):
    folder = tmp_path / "inbox" / "x_1"
    first = write(folder, thread([msg("Ana", 5, "new")], "x", ("Ana", "Bo")))
    (folder / "message_2.json").write_text('{"participants": [], "messages": [{"sender_name": "A", "timest')
    with pytest.raises(InputFileError, match="message_2.json: not valid JSON .* ends early"):
        read_messenger_export(first)
    write(tmp_path / "inbox" / "y_2", thread([msg("Ana", 1, "fine")], "y", ("Ana", "Bo")))
    skips = SkipCounter()
    [chat] = read_messenger_export(tmp_path, skips)
    assert chat.stats["chat_name"] == "y" and skips.counts["messenger_unreadable_file"] == 1


def test_sniffing_tells_messenger_from_telegram(tmp_path):
    messenger = write(tmp_path / "x_1", thread([msg("Ana", 0, "hi", type="Generic")], "x", ("Ana", "Bo")))
    telegram = tmp_path / "result.json"
    telegram.write_text(json.dumps({"name": "x", "type": "personal_chat", "id": 1, "messages": [
        {"id": 1, "type": "message", "date": "2024-05-01T10:00:00", "from": "Kim", "text": "hi"}]}))
    other = tmp_path / "autofill_information.json"
    other.write_text('{"media": [], "label_values": []}')
    assert looks_like_messenger(messenger) and not looks_like_messenger(telegram)
    assert not looks_like_messenger(other) and not looks_like_messenger(tmp_path / "missing.json")
    # Telegram's sniff also matches a Messenger file ("messages" and "type"): ask looks_like_messenger first
    assert looks_like_telegram(messenger)


def test_rows_fit_the_messages_schema_and_documents_keep_authors(tmp_path):
    messages = [msg("Radosław", 0, "Cześć"), msg("Zoë", 1, None, photos=[{"uri": "p.jpg"}]), msg("Zoë", 2, "hej")]
    [chat] = read_messenger_export(write(tmp_path / "r_1", thread(messages)))
    pa.Table.from_pylist(chat.as_rows(), schema=MESSAGE_SCHEMA)
    [doc] = chat_to_documents(chat)
    assert doc.text.splitlines() == ["Radosław: Cześć", "Zoë: hej"]


def test_a_chat_of_many_parts_is_read_whole_and_in_order(tmp_path):
    # messages/s: bench/bench_whatsapp.py's per-source table
    folder = tmp_path / "inbox" / "big_1"
    count, per_file = 30_000, 10_000
    for part in range(count // per_file):
        start = (count // per_file - 1 - part) * per_file  # message_1 holds the newest
        batch = [msg("Zoë" if i % 2 else "Radosław", start + i, f"wiadomość numer {i} 😂") for i in range(per_file)]
        write(folder, thread(batch), f"message_{part + 1}.json")
    [chat] = read_messenger_export(folder / "message_1.json")
    assert len(chat.messages) == count and chat.messages[0].text == "wiadomość numer 0 😂"
    stamps = [m.timestamp for m in chat.messages]
    assert stamps == sorted(stamps)


# ------------------------------------------------------------------------------------------------ the download's zip


def _download(root, instagram=False):
    """An unzipped "Download your information" folder: a chat in two parts with a photo, a one-part chat, an e2ee
    chat file and JSON of the export that holds no chat."""
    activity = root / ("your_instagram_activity" if instagram else "your_facebook_activity") / "messages"
    chat = activity / "inbox" / "radoslaw_123"
    write(chat, thread([msg("Zoë", 10, "à demain 😂"), msg("Radosław", 9, "Dobrze")]))
    write(chat, thread([msg("Radosław", 1, "Cześć!"), msg("Zoë", 2, "Très bien")]), "message_2.json")
    (chat / "photos").mkdir()
    (chat / "photos" / "1.jpg").write_bytes(b"\xff\xd8\xff\xe0" * 100)
    old = thread([msg("Ana", 0, "old news")], "Ana", ("Ana", "Zoë"), "archived_threads/ana_9")
    write(activity / "archived_threads" / "ana_9", old)
    (activity / "Jana_7.json").write_text(json.dumps(E2EE), encoding="utf-8")
    (activity / "autofill_information.json").write_text('{"media": [], "label_values": []}')
    return root


def _zip(folder, path):
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                archive.write(file, file.relative_to(folder).as_posix())
    return path


def _same_chat(chat):
    return chat.chat_id, chat.source_file, [m.as_row() for m in chat.messages], {
        k: v for k, v in chat.stats.items() if k != "path"}


def test_a_zip_of_the_download_reads_as_the_folder_it_unzips_to(tmp_path):
    folder = _download(tmp_path / "facebook-zoe-2024-05-01")
    archive = _zip(folder, tmp_path / "facebook-zoe-2024-05-01.zip")
    from_zip, from_folder = read_messenger_export(archive), read_messenger_export(folder)
    assert len(from_zip) == 3  # the two parts are one chat, the e2ee file a chat, other JSON passed over
    assert sorted(map(_same_chat, from_zip)) == sorted(map(_same_chat, from_folder))
    chat = next(c for c in from_zip if c.stats["chat_name"] == "Radosław")
    assert rows(chat) == [("Radosław", "text", "Cześć!"), ("Zoë", "text", "Très bien"),
                          ("Radosław", "text", "Dobrze"), ("Zoë", "text", "à demain 😂")]
    assert chat.path.startswith(str(archive)) and chat.stats["parts"] == ["message_1.json", "message_2.json"]
    assert {c.stats["source"] for c in from_zip} == {"messenger"}
    insta = _zip(_download(tmp_path / "x", instagram=True), tmp_path / "x.zip")  # told by the folder inside
    assert {c.stats["source"] for c in read_messenger_export(insta)} == {"instagram"}


def test_a_zip_member_that_is_too_large_or_inflates_too_much_is_refused(tmp_path, monkeypatch):
    import tasks.chat_records as chat_records

    folder = tmp_path / "dl"
    big = thread([msg("Ana", 0, "hi" + " " * 300_000)], "x", ("Ana", "Bo"))  # 300 kB of spaces: ~1000 times
    write(folder / "messages" / "inbox" / "x_1", big)
    archive = _zip(folder, tmp_path / "dl.zip")
    monkeypatch.setattr(chat_records, "RATIO_CHECK_BYTES", 100_000)
    with pytest.raises(InputFileError) as err:
        read_messenger_export(archive)
    text = str(err.value)
    assert "dl.zip: member 'messages/inbox/x_1/message_1.json' inflates more than 200 times" in text
    assert "zip bomb" in text and "\n" not in text
    monkeypatch.setattr(chat_records, "MAX_MEMBER_BYTES", 1000)
    with pytest.raises(InputFileError, match=r"dl\.zip: member 'messages/inbox/x_1/message_1\.json' declares \d+ "
                                             r"bytes, more than the 0 MiB"):
        read_messenger_export(archive)


def test_a_zip_without_a_message_file_is_an_error_naming_it(tmp_path):
    import zipfile

    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes/autofill_information.json", '{"media": []}')
    with pytest.raises(InputFileError, match=r"other\.zip: no Messenger or Instagram message file .* in the archive"):
        read_messenger_export(path)


# ------------------------------------------------------------------------------------------------ cut short


def test_a_cut_message_file_keeps_its_complete_messages_and_counts_the_cut(tmp_path):
    folder = tmp_path / "inbox" / "x_1"
    path = write(folder, thread([msg("Ana" if i % 2 else "Bo", i, f"wiadomość {i} 😂") for i in range(6)], "x",
                                ("Ana", "Bo")))
    whole = path.read_bytes()
    cut_at = whole.index(b'"wiadomo\\u00c5\\u009b\\u00c4\\u0087 1') + 30  # inside message 1 (newest first)
    path.write_bytes(whole[:cut_at])
    skips = SkipCounter()
    [chat] = read_messenger_export(path, skips)
    # messages 5 … 2 were written before the cut; 1 is cut (not kept in part), 0 was never written
    assert rows(chat) == [("Bo", "text", "wiadomość 2 😂"), ("Ana", "text", "wiadomość 3 😂"),
                          ("Bo", "text", "wiadomość 4 😂"), ("Ana", "text", "wiadomość 5 😂")]
    offset = chat.stats["truncated_at_byte"]
    assert chat.stats["truncated"] is True and chat.stats["truncated_parts"] == ["message_1.json"]
    assert whole[offset:].startswith(b'{"sender_name": "Ana", "timestamp_ms": ' + str(T0 + MIN).encode())
    assert chat.stats["skipped"] == {"messenger_truncated_export": 1} and skips.total == 1
    assert skips.examples["messenger_truncated_export"].startswith(f"{path}#byte {offset}: the file ends early")
    assert chat.stats["participants"] == ["Ana", "Bo"]  # written before the messages: kept
    assert chat.stats["chat_name"] is None  # the title comes after them: lost with the cut (no other part)


def test_a_cut_first_part_takes_the_chat_title_from_its_other_parts(tmp_path):
    folder = tmp_path / "inbox" / "x_1"
    first = write(folder, thread([msg("Ana", 9, "newest"), msg("Bo", 8, "newer")], "x", ("Ana", "Bo")))
    write(folder, thread([msg("Ana", 1, "oldest")], "x", ("Ana", "Bo")), "message_2.json")
    whole = first.read_bytes()
    first.write_bytes(whole[:whole.index(b"newer") - 40])  # cut inside the older message of message_1
    [chat] = read_messenger_export(first)
    assert rows(chat) == [("Ana", "text", "oldest"), ("Ana", "text", "newest")]
    assert chat.stats["chat_name"] == "x" and chat.stats["source_chat_id"] == "inbox/radoslaw_123"
    assert chat.stats["skipped"] == {"messenger_truncated_export": 1} and chat.stats["truncated_parts"] == [
        "message_1.json"]


def test_an_e2ee_file_cut_inside_a_character_is_read_without_it(tmp_path):
    path = tmp_path / "Jana_7.json"
    data = json.dumps(E2EE, ensure_ascii=False).encode()
    cut = data.rindex("á".encode(), 0, data.index(b"to je on")) + 1  # between the two bytes of the sender's "á"
    path.write_bytes(data[:cut])
    [chat] = read_messenger_export(path)
    assert [m.kind for m in chat.messages] == ["text", "media", "deleted"] and chat.stats["truncated"] is True


@pytest.mark.parametrize("content", [
    '{"participants": [{"name": "A"}], "messages": [{"sender_name": "A", "timestamp_ms": 1, "content": "x"}, ]]}',
    '{"participants": [{"name": "A"}], "messages": [{"sender_name": "A", "timestamp_ms": 1} {"sender_name":',
])
def test_a_syntax_error_before_the_end_is_still_refused(tmp_path, content):
    path = tmp_path / "message_1.json"
    path.write_text(content)
    with pytest.raises(InputFileError, match="not valid JSON") as err:
        read_messenger_export(path)
    assert "ends early" not in str(err.value)


def test_records_without_type_are_told_events_by_their_fields_in_any_language(tmp_path):
    # 2024 exports leave `type` out; a call's or a membership change's fields still say what the record is
    people = ("Ana", "Bo", "Cy")
    messages = [
        msg("Ana", 0, "Ana hat Bo zur Gruppe hinzugefügt.", users=[{"name": "Bo"}]),
        msg("Bo", 1, "Bo a démarré un appel vidéo.", call_duration=125),
        msg("Cy", 2, None, call_duration=0, missed=True),
        msg("Cy", 3, None, users=[{"name": "Cy"}]),
        msg("Bo", 4, "ja, bis morgen"),
    ]
    [chat] = read_messenger_export(write(tmp_path / "gruppe_1", thread(messages, "Gruppe", people)))
    assert rows(chat) == [
        (None, "system", "Ana hat Bo zur Gruppe hinzugefügt."),
        (None, "system", "Bo a démarré un appel vidéo."),
        (None, "system", "Missed call from Cy"),
        (None, "system", "Cy changed the members: Cy"),
        ("Bo", "text", "ja, bis morgen"),
    ]


def test_french_group_events_are_no_ones_words(tmp_path):
    people = ("Élodie", "Théo", "Maëlle")
    messages = [
        msg("Élodie", 0, "Élodie a nommé le groupe Week-end à Lyon."),
        msg("Théo", 1, "Théo a défini l’emoji sur 🍕."),
        msg("Élodie", 2, "Vous avez changé la photo du groupe."),
        msg("Maëlle", 3, "Maëlle a surnommé Théo Titi."),
        msg("Théo", 4, "Théo a démarré une discussion vidéo de groupe."),
        msg("Théo", 5, "La discussion vidéo est terminée."),
        msg("Maëlle", 6, "Maëlle a voté pour « samedi » dans le sondage : Quel jour ?"),
        msg("Théo", 7, "Théo a quitté le groupe."),
        msg("Maëlle", 8, "Maëlle a envoyé une pièce jointe.", photos=[{"uri": "p.jpg"}]),
        msg("Élodie", 9, "Élodie a envoyé une pièce jointe."),
        msg("Maëlle", 10, "elle a nommé le groupe comme ça pour rire"),  # not after the sender's name: her words
        msg("Théo", 11, "Théo a quitté le groupe hier soir, il revient demain"),  # more than the event: his words
    ]
    [chat] = read_messenger_export(write(tmp_path / "weekend_2", thread(messages, "Week-end à Lyon", people)))
    assert rows(chat) == [
        (None, "system", "Élodie a nommé le groupe Week-end à Lyon."),
        (None, "system", "Théo a défini l’emoji sur 🍕."),
        (None, "system", "Vous avez changé la photo du groupe."),
        (None, "system", "Maëlle a surnommé Théo Titi."),
        (None, "system", "Théo a démarré une discussion vidéo de groupe."),
        (None, "system", "La discussion vidéo est terminée."),
        (None, "system", "Maëlle a voté pour « samedi » dans le sondage : Quel jour ?"),
        (None, "system", "Théo a quitté le groupe."),
        ("Maëlle", "media", "image omitted"),
        ("Élodie", "media", "<Media omitted>"),
        ("Maëlle", "text", "elle a nommé le groupe comme ça pour rire"),
        ("Théo", "text", "Théo a quitté le groupe hier soir, il revient demain"),
    ]


def test_a_german_attachment_note_beside_a_link_is_no_caption(tmp_path):
    link = "https://example.org/wanderung"
    messages = [
        msg("Hanna", 0, "Hanna hat einen Anhang gesendet.", share={"link": link, "share_text": "Wanderung"}),
        msg("Jonas", 1, "Jonas hat einen Anhang gesendet."),  # the attachment was not exported
    ]
    [chat] = read_messenger_export(write(tmp_path / "hanna_3", thread(messages, "Hanna", ("Hanna", "Jonas"))))
    assert rows(chat) == [("Hanna", "text", link), ("Jonas", "media", "<Media omitted>")]


def test_polish_group_events_and_attachment_notes_are_no_ones_words(tmp_path):
    link = "https://example.pl/ognisko"
    people = ("Łukasz", "Zofia", "Bartek")
    messages = [
        msg("Łukasz", 0, "Łukasz nadał(a) nazwę grupy Wyjazd do Zakopanego."),
        msg("Łukasz", 1, "Łukasz dodał Bartek Nowak do grupy."),
        msg("Zofia", 2, "Zofia ustawiła pseudonim Bartek na Bartuś."),
        msg("Zofia", 3, "Zofia zmieniła kolor czatu."),
        msg("Łukasz", 4, "Łukasz usunął użytkownika Bartek Nowak z grupy."),
        msg("Zofia", 5, "Zofia utworzyła plan."),  # the feminine of "utworzył plan.", by grammar
        msg("Zofia", 6, "Zofia nazwała plan: Ognisko."),
        msg("Zofia", 7, "Twoja odpowiedź na wydarzenie Ognisko: Wezmę udział"),
        msg("Łukasz", 8, "Opuściłeś(aś) grupę."),
        msg("Zofia", 9, "Zofia wysłała załącznik.", photos=[{"uri": "p.jpg"}]),
        msg("Łukasz", 10, "Wysłałeś(aś) załącznik."),  # the account holder's, the attachment not exported
        msg("Zofia", 11, "Zofia wysłał(a) link.", share={"link": link}),
        msg("Zofia", 12, "Zofia dodała zdjęcia do grupy na Facebooku, zobaczcie"),  # no event: her words
        msg("Bartek", 13, "ona nadała nazwę grupy dla żartu"),  # not after the sender's name: his words
        msg("Bartek", 14, "Odpowiedź Zofii na wydarzenie była szybka"),  # no answer Meta writes: his words
    ]
    [chat] = read_messenger_export(write(tmp_path / "zakopane_4", thread(messages, "Wyjazd do Zakopanego", people)))
    assert rows(chat) == [
        (None, "system", "Łukasz nadał(a) nazwę grupy Wyjazd do Zakopanego."),
        (None, "system", "Łukasz dodał Bartek Nowak do grupy."),
        (None, "system", "Zofia ustawiła pseudonim Bartek na Bartuś."),
        (None, "system", "Zofia zmieniła kolor czatu."),
        (None, "system", "Łukasz usunął użytkownika Bartek Nowak z grupy."),
        (None, "system", "Zofia utworzyła plan."),
        (None, "system", "Zofia nazwała plan: Ognisko."),
        (None, "system", "Twoja odpowiedź na wydarzenie Ognisko: Wezmę udział"),
        (None, "system", "Opuściłeś(aś) grupę."),
        ("Zofia", "media", "image omitted"),
        ("Łukasz", "media", "<Media omitted>"),
        ("Zofia", "text", link),
        ("Zofia", "text", "Zofia dodała zdjęcia do grupy na Facebooku, zobaczcie"),
        ("Bartek", "text", "ona nadała nazwę grupy dla żartu"),
        ("Bartek", "text", "Odpowiedź Zofii na wydarzenie była szybka"),
    ]


@pytest.mark.parametrize("note, sender", [
    ("Enviaste un archivo adjunto.", "Lucía"),  # Spanish (Instagram): the account holder's
    ("Te envió un archivo adjunto.", "Mateo"),
    ("Wysłałeś(aś) link.", "Lucía"),  # Polish
    ("Mateo przesyła załącznik.", "Mateo"),
])
def test_an_attachment_note_in_another_language_is_no_caption(tmp_path, note, sender):
    messages = [msg(sender, 0, note, photos=[{"uri": "p.jpg"}]), msg(sender, 1, note)]
    [chat] = read_messenger_export(write(tmp_path / "lucia_8", thread(messages, "Lucía", ("Lucía", "Mateo"))))
    assert rows(chat) == [(sender, "media", "image omitted"), (sender, "media", "<Media omitted>")]


# ---------------------------------------------------------------------------------------- a download in several zips

# Meta cuts a large download into several zips that unzip to the same layout, each with some of the files: one
# conversation's message_1.json can be in one zip and its message_2.json in another. The parts may carry one name
# (the browser then adds " (1)", " (2)"), as a public Messenger analyser's download guide shows them unzipped.
RADOSLAW = "messages/inbox/radoslaw_123"
ANA = "messages/inbox/ana_9/message_1.json"
KIM = "messages/inbox/kim_5/message_1.json"


def _whole(root, parts=2):
    """A download unzipped into one folder: radoslaw_123 in `parts` message files of three messages each (message_1
    the newest), ana_9 and kim_5 in one file each."""
    for n in range(parts):
        first = (parts - 1 - n) * 3
        batch = [msg("Zoë" if i % 2 else "Radosław", 10 * (first + i), f"wiadomość {first + i} 😂")
                 for i in range(3)]
        write(root / RADOSLAW, thread(batch), f"message_{n + 1}.json")
    write(root / "messages/inbox/ana_9", thread([msg("Ana", 0, "old news"), msg("Zoë", 1, "oh")], "Ana",
                                                ("Ana", "Zoë"), "inbox/ana_9"))
    write(root / "messages/inbox/kim_5", thread([msg("Kim", 2, "yo")], "Kim", ("Kim", "Zoë"), "inbox/kim_5"))
    return root


def _spread(whole, root, **parts):
    """`whole`'s files spread over folders `root/<name>/` as the zips of one download unzip: `parts` maps a folder's
    name to the files it holds (relative to the download)."""
    import shutil

    for name, files in parts.items():
        for rel in files:
            (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(whole / rel, root / name / rel)
    return [root / name for name in parts]


def _as_unzipped(chat):
    """What a chat read from one unzipped folder shows: id, file name, rows and stats (not where the files lay)."""
    return chat.chat_id, chat.source_file, [m.as_row() for m in chat.messages], {
        k: v for k, v in chat.stats.items() if k not in ("path", "part_files")}


def _ingested(tmp_path, *inputs):
    """What ingest makes of `inputs`: its input files (resolve_inputs), each file's shard result, and the documents
    and message rows of all shards (sorted)."""
    from tasks.ingest import resolve_inputs
    from tasks.params import IngestParams, InputSpec
    from tests.tasks.test_ingest_inputs import _ingest_chats

    files = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(p)) for p in inputs]))
    results, docs, messages = _ingest_chats(tmp_path, files)
    return files, results, docs, messages


def test_a_conversation_split_over_two_zips_is_one_chat_as_unzipped_together(tmp_path):
    from storage.fingerprint import hash_file

    whole = _whole(tmp_path / "whole")
    a, b = _spread(whole, tmp_path / "unzipped", **{"facebook-zoe": [f"{RADOSLAW}/message_1.json", ANA],
                                                   "facebook-zoe (1)": [f"{RADOSLAW}/message_2.json", KIM]})
    zips = [_zip(a, tmp_path / "facebook-zoe.zip"), _zip(b, tmp_path / "facebook-zoe (1).zip")]
    files, results, docs, messages = _ingested(tmp_path / "zips", *zips)
    _, _, whole_docs, whole_messages = _ingested(tmp_path / "folder", whole)
    # the same rows, chat ids and documents as the download unzipped into one folder: one chat per conversation
    assert messages == whole_messages and docs == whole_docs
    assert len({m["chat_id"] for m in messages}) == 3 and len(messages) == 6 + 2 + 1
    # both zips are inputs; the first reads the conversation whole, the second its other chat only
    assert [Path(f.path).name for f in files] == ["facebook-zoe.zip", "facebook-zoe (1).zip"]
    names = [sorted(s["chat_name"] for s in r.info["stats"].values()) for r in results]
    assert names == [["Ana", "Radosław"], ["Kim"]] and all(r.info["error"] is None for r in results)
    [radoslaw] = [s for s in results[0].info["stats"].values() if s["chat_name"] == "Radosław"]
    assert radoslaw["parts"] == ["message_1.json", "message_2.json"]
    assert radoslaw["part_files"] == [f"{zips[0]}/{RADOSLAW}/message_1.json",
                                      f"{zips[1]}/{RADOSLAW}/message_2.json"]
    # a shard's key covers what it reads from, and leaves to, the other zip
    assert all(f.sha256 != hash_file(z) for f, z in zip(files, zips, strict=True))

    # read directly, the zips give the chats of the folder; ana_9, whole in the first zip, is the chat it always was
    from tasks.messenger import read_messenger_exports

    chats = read_messenger_exports(zips)
    assert sorted(map(_as_unzipped, chats)) == sorted(map(_as_unzipped, read_messenger_export(whole)))
    [ana] = [c for c in chats if c.stats["chat_name"] == "Ana"]
    [alone] = [c for c in read_messenger_export(zips[0]) if c.stats["chat_name"] == "Ana"]
    assert _same_chat(ana) == _same_chat(alone) and "part_files" not in ana.stats


def test_a_conversation_split_over_the_folders_each_zip_was_unzipped_to_is_one_chat(tmp_path):
    whole = _whole(tmp_path / "whole")
    parent = tmp_path / "downloads"
    _spread(whole, parent, **{"facebook-zoe": [f"{RADOSLAW}/message_1.json", ANA],
                              "facebook-zoe (1)": [f"{RADOSLAW}/message_2.json", KIM]})
    expected = sorted(map(_as_unzipped, read_messenger_export(whole)))
    assert sorted(map(_as_unzipped, read_messenger_export(parent))) == expected  # the parent folder, read directly

    files, results, docs, messages = _ingested(tmp_path / "folders", parent)
    _, _, whole_docs, whole_messages = _ingested(tmp_path / "folder", whole)
    assert messages == whole_messages and docs == whole_docs and len({m["chat_id"] for m in messages}) == 3
    # message_2.json, alone in its folder, is still an input: read by the shard of message_1.json, it gives no chat
    assert sorted(str(Path(f.path).relative_to(parent)) for f in files) == [
        f"facebook-zoe (1)/{KIM}", f"facebook-zoe (1)/{RADOSLAW}/message_2.json", f"facebook-zoe/{ANA}",
        f"facebook-zoe/{RADOSLAW}/message_1.json"]
    by_name = {str(Path(r.in_part).relative_to(parent)): r for r in results}
    assert by_name[f"facebook-zoe (1)/{RADOSLAW}/message_2.json"].docs_out == 0
    assert by_name[f"facebook-zoe (1)/{RADOSLAW}/message_2.json"].info["error"] is None


def test_three_parts_over_three_zips_read_the_same_in_any_order(tmp_path):
    whole = _whole(tmp_path / "whole", parts=3)
    folders = _spread(whole, tmp_path / "unzipped", **{
        "part-a": [f"{RADOSLAW}/message_2.json", KIM], "part-b": [f"{RADOSLAW}/message_3.json"],
        "part-c": [f"{RADOSLAW}/message_1.json", ANA]})
    zips = [_zip(f, tmp_path / f"{f.name}.zip") for f in folders]
    _, _, whole_docs, whole_messages = _ingested(tmp_path / "folder", whole)
    orders = (zips, zips[::-1], zips[1:] + zips[:1])
    runs = [_ingested(tmp_path / f"run{i}", *order) for i, order in enumerate(orders)]
    for _files, _results, docs, messages in runs:
        assert messages == whole_messages and docs == whole_docs
        assert len([m for m in messages if m["author"] in ("Radosław", "Zoë") and "wiadomość" in m["text"]]) == 9
    # the zip holding message_1.json reads the conversation, whatever the order the zips are given in
    for _files, results, _docs, _messages in runs:
        reader = next(r for r in results if any(s["chat_name"] == "Radosław" for s in r.info["stats"].values()))
        assert Path(reader.in_part).name == "part-c.zip"

    from tasks.messenger import read_messenger_exports

    expected = sorted(map(_as_unzipped, read_messenger_export(whole)))
    assert sorted(map(_as_unzipped, read_messenger_exports(zips))) == expected
    assert sorted(map(_as_unzipped, read_messenger_exports(zips[::-1]))) == expected


def test_a_part_in_two_zips_is_read_once_and_zips_mix_with_unzipped_folders(tmp_path):
    whole = _whole(tmp_path / "whole", parts=3)
    a, b = _spread(whole, tmp_path / "unzipped", **{
        "facebook-zoe": [f"{RADOSLAW}/message_1.json", f"{RADOSLAW}/message_2.json", ANA],
        "facebook-zoe (1)": [f"{RADOSLAW}/message_2.json", f"{RADOSLAW}/message_3.json", KIM]})
    _, _, whole_docs, whole_messages = _ingested(tmp_path / "folder", whole)
    zips = [_zip(a, tmp_path / "a.zip"), _zip(b, tmp_path / "b.zip")]
    for i, inputs in enumerate((zips, [zips[0], b], [a, zips[1]])):  # two zips; a zip and a folder, both ways
        _, _, docs, messages = _ingested(tmp_path / f"run{i}", *inputs)
        assert messages == whole_messages and docs == whole_docs  # message_2 read once: no message twice


def test_two_downloads_of_different_dates_stay_two_copies_while_a_split_one_is_joined(tmp_path):
    from storage.fingerprint import hash_file

    whole = _whole(tmp_path / "whole")
    a, b = _spread(whole, tmp_path / "unzipped", **{"facebook-zoe": [f"{RADOSLAW}/message_1.json", ANA],
                                                   "facebook-zoe (1)": [f"{RADOSLAW}/message_2.json", KIM]})
    # jana_4, in two parts now (both in the first zip), and in one part a year before: the same path, other bytes
    jana = [msg("Jana" if i % 2 else "Zoë", 100 + i, f"ahoj {i}") for i in range(4)]
    write(a / "messages/inbox/jana_4", thread(jana[2:], "Jana", ("Jana", "Zoë"), "inbox/jana_4"))
    write(a / "messages/inbox/jana_4", thread(jana[:2], "Jana", ("Jana", "Zoë"), "inbox/jana_4"), "message_2.json")
    zips = [_zip(a, tmp_path / "facebook-zoe-2024.zip"), _zip(b, tmp_path / "facebook-zoe-2024 (1).zip")]
    # the download made a year before: jana_4 and ana_9 with their first messages only, kim_5 as it is now; no
    # radoslaw_123 yet
    older = tmp_path / "older"
    write(older / "messages/inbox/jana_4", thread(jana[:3], "Jana", ("Jana", "Zoë"), "inbox/jana_4"))
    write(older / "messages/inbox/ana_9", thread([msg("Ana", 0, "old news")], "Ana", ("Ana", "Zoë"), "inbox/ana_9"))
    (older / KIM).parent.mkdir(parents=True)
    (older / KIM).write_bytes((whole / KIM).read_bytes())
    old_zip = _zip(older, tmp_path / "facebook-zoe-2023.zip")

    files, results, _docs, messages = _ingested(tmp_path / "run", *zips, old_zip)
    # radoslaw_123, split over the 2024 zips, is one chat as the download unzipped into one folder gives it
    [radoslaw] = [c for c in read_messenger_export(whole) if c.stats["chat_name"] == "Radosław"]
    assert [m for m in messages if m["chat_id"] == radoslaw.chat_id] == [m.as_row() for m in radoslaw.messages]
    assert len({m["chat_id"] for m in messages if m["author"] == "Radosław"}) == 1
    # the 2023 download is read as it always was: the chats it gives alone, its shard keyed on its own bytes
    [old_file] = [f for f in files if f.path == str(old_zip)]
    [old_result] = [r for r in results if r.in_part == str(old_zip)]
    assert old_file.sha256 == hash_file(old_zip)
    assert set(old_result.info["stats"]) == {c.chat_id for c in read_messenger_export(old_zip)}
    # jana_4 and ana_9 differ between the downloads: two copies each (for chat_merge), as each zip gives them alone
    for author, count in (("Jana", 2 + 1), ("Ana", 1 + 1)):
        assert len({m["chat_id"] for m in messages if m["author"] == author}) == 2
        assert len([m for m in messages if m["author"] == author]) == count
    # kim_5 is byte for byte the same in both: each zip reads it, under one chat id
    assert len({m["chat_id"] for m in messages if m["author"] == "Kim"}) == 1
