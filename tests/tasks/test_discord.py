"""Discord exports → chats: DiscordChatExporter's JSON (a DM, a server channel) and Discord's own data package
(messages.json and messages.csv), and what is refused or skipped."""

from __future__ import annotations

import json
from datetime import datetime

import pyarrow as pa
import pytest

from storage.schemas import MESSAGE_SCHEMA
from tasks.discord import (
    export_sha256,
    is_discord_package_metadata,
    is_later_partition,
    looks_like_discord,
    looks_like_discord_archive,
    read_discord_export,
)
from tasks.records import InputFileError, SkipCounter
from tasks.whatsapp import chat_to_documents

SAM = {"id": "111", "name": "sam.lee", "discriminator": "0000", "nickname": "Sam", "isBot": False}
KIM = {"id": "222", "name": "kim_k", "discriminator": "0000", "nickname": "Kim", "isBot": False}
ALEX = {"id": "333", "name": "alexr", "discriminator": "4242", "nickname": "Alex", "isBot": False}
BOT = {"id": "999", "name": "Dyno", "discriminator": "3861", "nickname": "Dyno", "isBot": True}


def _message(id_, author, content="", type_="Default", ts="2024-03-14T18:00:00+01:00", **fields):
    return {"id": id_, "type": type_, "timestamp": ts, "timestampEdited": None, "callEndedTimestamp": None,
            "isPinned": False, "content": content, "author": author, "attachments": [], "embeds": [],
            "stickers": [], "reactions": [], "mentions": [], "inlineEmojis": [], **fields}


DM = {
    "guild": {"id": "0", "name": "Direct Messages", "iconUrl": "https://cdn.discordapp.com/embed/avatars/0.png"},
    "channel": {"id": "5001", "type": "DirectTextChat", "categoryId": None, "category": "Private",
                "name": "Kim", "topic": None},
    "dateRange": {"after": None, "before": None},
    "exportedAt": "2024-04-01T10:00:00+01:00",
    "messages": [
        _message("1", SAM, "Hey, free on Saturday?", ts="2024-03-14T18:02:05.123+01:00"),
        _message("2", KIM, "Yes! which trail?", "Reply", "2024-03-14T18:03:10+01:00",
                 reference={"type": "Default", "messageId": "1", "channelId": "5001", "guildId": None}),
        _message("3", SAM, "", ts="2024-03-14T18:04:00+01:00",
                 attachments=[{"id": "71", "url": "https://cdn.discordapp.com/attachments/5001/71/map.png",
                               "fileName": "map.png", "fileSizeBytes": 123456}]),
        _message("4", KIM, "the view last time", ts="2024-03-14T18:05:00+01:00",
                 attachments=[{"id": "72", "url": "clip.MP4", "fileName": "clip.MP4", "fileSizeBytes": 9},
                              {"id": "73", "url": "x", "fileName": "voice-message.ogg", "fileSizeBytes": 9}]),
        _message("5", SAM, "", ts="2024-03-14T18:06:00+01:00",
                 stickers=[{"id": "81", "name": "Wave", "format": "Apng", "sourceUrl": "s.png"}]),
        _message("6", SAM, "Meet at 8 then", "Reply", "2024-03-14T18:07:00+01:00",
                 timestampEdited="2024-03-14T18:08:00+01:00",
                 reference={"type": "Default", "messageId": "424242", "channelId": "5001", "guildId": None}),
        _message("7", SAM, "Started a call that lasted 12 minutes.", "Call", "2024-03-14T20:00:00+01:00",
                 callEndedTimestamp="2024-03-14T20:12:00+01:00"),
        # a forward: its reference is no reply, the forwarded text is kept
        _message("8", KIM, "", ts="2024-03-14T20:30:00+01:00",
                 reference={"type": "Forward", "messageId": "77", "channelId": "6000", "guildId": "1"},
                 forwardedMessage={"timestamp": "2024-03-10T08:00:00+00:00", "timestampEdited": None,
                                   "content": "Trail closed north of the lake until April.",
                                   "attachments": [], "embeds": [], "stickers": []}),
    ],
    "messageCount": 8,
}

GUILD = {
    "guild": {"id": "9000", "name": "Hiking Club", "iconUrl": None},
    "channel": {"id": "9100", "type": "GuildTextChat", "categoryId": "9001", "category": "Trips",
                "name": "general", "topic": "plans"},
    "dateRange": {"after": None, "before": None},
    "messages": [
        _message("10", ALEX, "Joined the server.", "GuildMemberJoin", "2024-04-01T09:00:00+00:00"),
        # raw markup, as `--markdown false` writes it: mentions, custom and animated emoji, channel, role, time
        _message("11", SAM, "hi <@333> and <@!222> <:wave:555> <a:party:556> see <#9100> <@&77> <#123> <@888>",
                 ts="2024-04-01T09:01:00+00:00",
                 mentions=[{"id": "333", "name": "alexr", "nickname": "Alex"},
                           {"id": "222", "name": "kim_k", "nickname": "Kim"}]),
        # rendered markup (DiscordChatExporter's default) is kept as it is
        _message("12", KIM, "@Sam :wave: #general", ts="2024-04-01T09:02:00+00:00"),
        _message("13", ALEX, "Pinned a message.", "ChannelPinnedMessage", "2024-04-01T09:03:00+00:00",
                 reference={"type": "Default", "messageId": "11", "channelId": "9100", "guildId": "9000"}),
        _message("14", BOT, "", ts="2024-04-01T09:04:00+00:00",
                 embeds=[{"title": "Welcome!", "description": "Read #rules", "fields": [
                     {"name": "Members", "value": "42", "isInline": False}]}]),
        _message("15", BOT, "Alex reached level 2", ts="2024-04-01T09:05:00+00:00"),
        # a reply to a message of another channel: unresolved, never matched against this channel's ids
        _message("16", SAM, "same as there", "Reply", "2024-04-01T09:06:00+00:00",
                 reference={"type": "Default", "messageId": "11", "channelId": "7777", "guildId": "9000"}),
        # an old export (before 2023-02): raw system content, numeric kinds DiscordChatExporter has no name for
        _message("17", KIM, "trips-2024", "ChannelNameChange", "2024-04-01T09:07:00+00:00"),
        _message("18", KIM, "", "8", "2024-04-01T09:08:00+00:00"),
        _message("19", SAM, "", "GuildMemberJoin", "2024-04-01T09:09:00+00:00"),
        # wrong types: counted skips
        _message("20", SAM, 42, ts="2024-04-01T09:10:00+00:00"),
        _message("21", SAM, "no time", ts="yesterday"),
        _message("22", "Sam", "author is a string", ts="2024-04-01T09:11:00+00:00"),
        _message("23", SAM, "x", ts="2024-04-01T09:12:00+00:00", attachments={"fileName": "a.png"}),
        _message("24", SAM, "", ts="2024-04-01T09:13:00+00:00"),
        "not a message",
        # a malformed optional field is ignored (counted in stats), the message kept
        _message("25", KIM, "still here", "Reply", "2024-04-01T09:14:00+00:00", reference="11"),
    ],
}


def _write(tmp_path, data, name="export.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_dm_authors_kinds_media_replies_and_times(tmp_path):
    path = _write(tmp_path, DM, "Direct Messages - Kim [5001].json")
    assert looks_like_discord(path)
    [chat] = read_discord_export(path, tz="Europe/Paris")
    assert [(m.author, m.kind, m.text) for m in chat.messages] == [
        ("Sam", "text", "Hey, free on Saturday?"),
        ("Kim", "text", "Yes! which trail?"),
        ("Sam", "media", "image omitted"),
        ("Kim", "media", "video omitted\nvoice message omitted\nthe view last time"),  # text after placeholders
        ("Sam", "media", "sticker omitted"),
        ("Sam", "edited", "Meet at 8 then"),
        (None, "system", "Sam started a call that lasted 12 minutes."),
        ("Kim", "text", "Trail closed north of the lake until April."),
    ]
    # +01:00 is Paris in March: wall-clock time as written, fractions kept
    assert chat.messages[0].timestamp == datetime(2024, 3, 14, 18, 2, 5, 123000)
    assert [m.reply_to for m in chat.messages] == [None, "0", None, None, None, "#424242", None, None]
    assert chat.stats["replies"] == 2 and chat.stats["replies_unresolved"] == 1
    assert chat.stats["forwarded"] == 1 and chat.stats["forwarded_indexes"] == [7]
    assert chat.stats["source"] == "discord" and chat.stats["chat_name"] == "Kim"  # a DM: the other person
    assert chat.stats["chat_type"] == "DirectTextChat" and chat.stats["source_chat_id"] == "5001"
    assert chat.stats["usernames"] == {"Sam": "sam.lee", "Kim": "kim_k"}
    assert chat.stats["own_messages_only"] is False and chat.stats["skipped"] == {}


def test_timestamps_are_written_in_the_given_zone(tmp_path):
    path = _write(tmp_path, DM)
    utc = read_discord_export(path)[0].messages[0].timestamp
    tokyo = read_discord_export(path, tz="Asia/Tokyo")[0].messages[0].timestamp
    assert utc == datetime(2024, 3, 14, 17, 2, 5, 123000) and tokyo == datetime(2024, 3, 15, 2, 2, 5, 123000)


def test_guild_channel_system_mentions_bots_and_skips(tmp_path):
    skips = SkipCounter()
    [chat] = read_discord_export(_write(tmp_path, GUILD), skips)
    rows = [(m.author, m.kind, m.text) for m in chat.messages]
    assert rows == [
        (None, "system", "Alex joined the server."),
        ("Sam", "text", "hi @Alex and @Kim :wave: :party: see #general @role #channel <@888>"),
        ("Kim", "text", "@Sam :wave: #general"),
        (None, "system", "Alex pinned a message."),
        ("Dyno", "text", "Welcome!\nRead #rules\nMembers: 42"),
        ("Dyno", "text", "Alex reached level 2"),
        ("Sam", "text", "same as there"),
        (None, "system", "Kim changed the channel name: trips-2024"),
        (None, "system", "Kim system message (8)."),
        (None, "system", "Sam joined the server."),
        ("Kim", "text", "still here"),
    ]
    assert [m.reply_to for m in chat.messages][3] is None  # a pin's reference is no reply
    assert chat.messages[6].reply_to == "#7777/11"
    assert chat.stats["chat_name"] == "general in Hiking Club" and chat.stats["category"] == "Trips"
    assert chat.stats["bots"] == ["Dyno"] and chat.stats["bot_messages"] == 2
    assert chat.stats["ignored_fields"] == {"reference": 1}
    expected = {"discord_malformed_message": 4, "discord_bad_timestamp": 1, "discord_empty_message": 1}
    assert dict(skips.counts) == expected and chat.stats["skipped"] == expected
    assert "#21" in skips.examples["discord_bad_timestamp"] and "general in Hiking Club" in skips.examples[
        "discord_bad_timestamp"]
    assert skips.examples["discord_malformed_message"].endswith("#20: content is a int")


def test_same_display_name_of_two_accounts_is_told_apart(tmp_path):
    other = {"id": "444", "name": "sam_two", "nickname": "Sam", "isBot": False}
    no_nick = {"id": "555", "name": "lee", "isBot": False}  # an early export: no nickname field
    data = {**DM, "messages": [_message("1", SAM, "a"), _message("2", other, "b"), _message("3", no_nick, "c")]}
    [chat] = read_discord_export(_write(tmp_path, data))
    assert [m.author for m in chat.messages] == ["Sam (sam.lee)", "Sam (sam_two)", "lee"]


def test_odd_ids_and_types_are_read_or_skipped_never_raised(tmp_path):
    data = {**DM, "messages": [
        _message(["1"], {"id": ["x"], "name": "odd"}, "an id that is a list"),
        _message(7, {**KIM, "id": 222}, "int ids", type_=["Reply"], reference={"messageId": {}}),
        _message("3", {"id": "5", "name": None, "nickname": None}, "no name"),
        _message("4", SAM, "\ud83d half an emoji", mentions="everyone", timestampEdited=5),
    ]}
    skips = SkipCounter()
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(data))  # a lone surrogate can only be written escaped, as some tools do
    [chat] = read_discord_export(path, skips)
    assert [(m.author, m.text) for m in chat.messages] == [
        ("odd", "an id that is a list"), ("Kim", "int ids"), ("Sam", "\ufffd half an emoji")]
    assert dict(skips.counts) == {"discord_malformed_message": 1}
    assert chat.stats["ignored_fields"] == {"timestampEdited": 1}


def test_rows_fit_the_messages_schema_and_documents_keep_authors(tmp_path):
    [chat] = read_discord_export(_write(tmp_path, DM))
    table = pa.Table.from_pylist(chat.as_rows(), schema=MESSAGE_SCHEMA)
    assert table.column("reply_to").to_pylist()[:2] == [None, "0"]
    [doc] = chat_to_documents(chat)
    assert doc.text.splitlines()[:2] == ["Sam: Hey, free on Saturday?", "Kim: Yes! which trail?"]


def _package(tmp_path, form="json", root="messages"):
    """A data package's messages folder: a DM in the newer JSON form, a server channel in the older CSV form."""
    base = tmp_path / "package" / root
    dm, guild = base / "c5001", base / "c9100"
    dm.mkdir(parents=True)
    guild.mkdir()
    (base / "index.json").write_text(json.dumps({"5001": "Direct Message with kim_k#0", "9100": "None"}))
    (dm / "channel.json").write_text(json.dumps({"id": "5001", "type": "DM", "recipients": ["111", "222"]}))
    (guild / "channel.json").write_text(json.dumps(
        {"id": "9100", "type": 0, "name": "general", "guild": {"id": "9000", "name": "Hiking Club"}}))
    (dm / "messages.json").write_text(json.dumps([
        {"ID": 1219000000000000003, "Timestamp": "2024-03-14 17:07:00", "Contents": "Meet at 8 then",
         "Attachments": ""},
        {"ID": 1219000000000000002, "Timestamp": "2024-03-14 17:04:00", "Contents": "",
         "Attachments": "https://cdn.discordapp.com/attachments/5001/1/map.png?ex=0&is=1&hm=2 "
                        "https://cdn.discordapp.com/attachments/5001/2/notes.pdf"},
        {"ID": 1219000000000000001, "Timestamp": "2024-03-14 17:02:05", "Contents": "Hey, free on Saturday?",
         "Attachments": ""},
        {"ID": 1219000000000000004, "Timestamp": 1710436925, "Contents": "bad time", "Attachments": ""},
        {"ID": 1219000000000000005, "Timestamp": "2024-03-14 17:09:00", "Contents": ["x"], "Attachments": ""},
        {"ID": 1219000000000000006, "Timestamp": "2024-03-14 17:10:00", "Contents": "", "Attachments": ""},
    ]))
    csv_text = (
        "ID,Timestamp,Contents,Attachments\r\n"
        '731000000000000001,2020-07-01 09:00:00.123000+00:00,"hello, everyone",\r\n'
        '731000000000000002,2020-07-01 09:01:00+00:00,"a list:\n- boots\n- ""good"" socks",\r\n'
        "731000000000000003,2020-07-01 09:02:00.5+00:00,,https://cdn.discordapp.com/attachments/9/3/song.mp3\r\n"
        "731000000000000004,2020-07-01 09:03:00+00:00,one,two,three\r\n"
    )
    (guild / "messages.csv").write_text(csv_text, encoding="utf-8", newline="")
    return base


def test_data_package_json_and_csv_are_the_owners_own_messages(tmp_path):
    base = _package(tmp_path)
    assert looks_like_discord(base / "c5001" / "messages.json") and looks_like_discord(base / "c9100" / "messages.csv")
    assert is_discord_package_metadata(base / "c5001" / "channel.json")
    assert is_discord_package_metadata(base / "index.json")
    assert not looks_like_discord(base / "c5001" / "channel.json")
    skips = SkipCounter()
    dm, guild = read_discord_export(base, skips, owner="Sam", tz="Europe/Paris")
    assert [(m.author, m.kind, m.text) for m in dm.messages] == [
        ("Sam", "text", "Hey, free on Saturday?"),
        ("Sam", "media", "image omitted\ndocument omitted"),
        ("Sam", "text", "Meet at 8 then"),
    ]
    assert dm.messages[0].timestamp == datetime(2024, 3, 14, 18, 2, 5)  # UTC in the package, Paris here
    assert dm.stats["chat_name"] == "Direct Message with kim_k#0" and dm.stats["chat_type"] == "DM"
    assert dm.stats["own_messages_only"] is True and dm.stats["package_form"] == "json"
    assert dm.stats["replies"] == 0 and dm.stats["authors"] == {"Sam": 3}
    assert dm.stats["skipped"] == {"discord_bad_timestamp": 1, "discord_malformed_message": 1,
                                   "discord_empty_message": 1}
    assert [(m.author, m.kind, m.text) for m in guild.messages] == [
        ("Sam", "text", "hello, everyone"),
        ("Sam", "text", 'a list:\n- boots\n- "good" socks'),
        ("Sam", "media", "audio omitted"),
    ]
    assert guild.messages[0].timestamp == datetime(2020, 7, 1, 11, 0, 0, 123000)
    assert guild.stats["chat_name"] == "general in Hiking Club"  # index.json's "None": from channel.json
    assert guild.stats["chat_type"] == "0" and guild.stats["package_form"] == "csv"
    assert guild.stats["skipped"] == {"discord_malformed_message": 1}  # the row of five fields
    assert "line 6" in skips.examples["discord_malformed_message"] or "#1219000000000000005" in skips.examples[
        "discord_malformed_message"]
    assert skips.total == 4


def test_data_package_one_channel_by_file_folder_or_package_root(tmp_path):
    base = _package(tmp_path, root="Messages")
    [by_file] = read_discord_export(base / "c5001" / "messages.json")
    [by_folder] = read_discord_export(base / "c5001")
    assert by_file.chat_id == by_folder.chat_id and by_file.messages[0].author == "me"  # the default owner
    assert len(read_discord_export(base.parent)) == 2  # the package itself
    assert read_discord_export(base / "c5001" / "channel.json") == []  # metadata: read with the messages
    # the same channel without its channel.json / index.json: named by nothing, its id from the folder
    lone = tmp_path / "lone" / "c42"
    lone.mkdir(parents=True)
    (lone / "messages.json").write_text('[{"ID": "1", "Timestamp": "2024-01-01 00:00:00", "Contents": "hi"}]')
    [chat] = read_discord_export(lone / "messages.json")
    assert chat.stats["source_chat_id"] == "42" and chat.stats["chat_name"] is None


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("x.json", '{"name": "x", "list": []}', "not a Discord export"),
        ("x.json", "[1, 2, 3]", "not a Discord export"),
        ("x.json", '{"guild": {"id": "1"}, "channel": {"id": "2"}, "messages": {}}', "'messages' is a dict"),
        ("x.json", json.dumps(DM)[:700], "ends early"),
        ("x.json", json.dumps(DM)[:-3], "ends early"),
        ("x.json", b"\xff\xfe\x00garbage", "not UTF-8"),
        ("x.json", "   ", "empty file"),
        ("messages.csv", "id;when;text\n1;2;3\n", "header is not ID,Timestamp,Contents,Attachments"),
        ("messages.csv", 'ID,Timestamp,Contents,Attachments\n1,2020-07-01 09:00:00+00:00,"cut in the mid',
         "ends early"),
    ],
)
def test_files_that_are_not_exports_are_one_line_errors(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputFileError) as err:
        read_discord_export(path)
    text = str(err.value)
    assert message in text and str(path) in text and "\n" not in text


def test_truncated_json_names_the_place(tmp_path):
    text = json.dumps(DM, indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(InputFileError, match=r"cut\.json: not valid JSON \(line \d+, column \d+: .*ends early"):
        read_discord_export(path)


def test_sniffing(tmp_path):
    assert looks_like_discord(_write(tmp_path, GUILD, "guild.json"))
    telegram = {"name": "x", "type": "personal_chat", "id": 1, "messages": []}
    assert not looks_like_discord(_write(tmp_path, telegram, "result.json"))
    assert not looks_like_discord(tmp_path / "missing.json")
    stray = tmp_path / "messages.json"  # not in a c<id> folder, not DiscordChatExporter's
    stray.write_text("[]")
    assert not looks_like_discord(stray)


def test_a_large_export_is_read_whole_with_its_replies(tmp_path):
    # messages/s: bench/bench_whatsapp.py's per-source table
    n = 30_000
    messages = [
        _message(str(10**17 + i), (SAM, KIM, ALEX)[i % 3], f"message number {i} <:wave:5>",
                 "Reply" if i % 10 == 0 and i else "Default", f"2024-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:"
                 f"{i % 60:02d}.{i % 1000:03d}+02:00",
                 reference={"type": "Default", "messageId": str(10**17 + i - 1), "channelId": "9100",
                            "guildId": "9000"} if i % 10 == 0 and i else None)
        for i in range(n)
    ]
    path = _write(tmp_path, {**GUILD, "messages": messages}, "big.json")
    [chat] = read_discord_export(path)
    assert len(chat.messages) == n and chat.stats["replies_unresolved"] == 0


# ------------------------------------------------------------------------------------------------ CSV and PlainText

EXPORTER_CSV = (
    "AuthorID,Author,Date,Content,Attachments,Reactions\n"
    '"111","sam.lee","2024-03-14T18:02:05.1230000+01:00","Hey, free on Saturday?","",""\n'
    '"222","kim_k","2024-03-14T18:03:10+01:00","Yes! which ""trail""?\nthe north one?","","👍 (1)"\n'
    '"111","sam.lee","2024-03-14T18:04:00+01:00","","https://cdn.discordapp.com/attachments/5001/71/map.png,'
    'https://cdn.discordapp.com/attachments/5001/72/clip.mp4",""\n'
    '"333","alexr#4242","2024-03-14T18:05:00+01:00","Joined the server.","",""\n'
    '"333","alexr#4242","2024-03-14T18:06:00+01:00","hi <@111>","",""\n'
    '"444","alexr#1111","2024-03-14T18:07:00+01:00","another alexr","",""\n'
    '"111","sam.lee","2024-03-14T18:08:00+01:00","a row of four fields"\n'
    '"111","sam.lee","yesterday","no time","",""\n'
)


def test_exporter_csv_authors_kinds_media_and_times(tmp_path):
    path = tmp_path / "Direct Messages - Private - Kim [5001].csv"
    path.write_text(EXPORTER_CSV, encoding="utf-8")
    assert looks_like_discord(path)
    skips = SkipCounter()
    [chat] = read_discord_export(path, skips, tz="Europe/Paris")
    assert [(m.author, m.kind, m.text) for m in chat.messages] == [
        ("sam.lee", "text", "Hey, free on Saturday?"),
        ("kim_k", "text", 'Yes! which "trail"?\nthe north one?'),
        ("sam.lee", "media", "image omitted\nvideo omitted"),
        (None, "system", "alexr (alexr#4242) joined the server."),  # two accounts show "alexr"
        ("alexr (alexr#4242)", "text", "hi @sam.lee"),  # a raw mention named by the AuthorID column
        ("alexr (alexr#1111)", "text", "another alexr"),
    ]
    assert chat.messages[0].timestamp == datetime(2024, 3, 14, 18, 2, 5, 123000)
    assert chat.stats["export_form"] == "csv" and chat.stats["exact_timestamps"] is True
    assert chat.stats["source_chat_id"] == "5001" and chat.stats["chat_name"] == "Direct Messages - Private - Kim"
    assert chat.stats["usernames"]["alexr (alexr#1111)"] == "alexr#1111"
    assert chat.stats["skipped"] == {"discord_malformed_message": 1, "discord_bad_timestamp": 1} and skips.total == 2
    assert "date_order" not in chat.stats  # ISO times have no order to decide


@pytest.mark.parametrize(("dates", "order", "ambiguous", "first"), [
    (["3/14/2024 6:02 PM", "3/14/2024 6:03 PM"], "month_first", False, datetime(2024, 3, 14, 18, 2)),  # en-US "g"
    (["03/04/2024 6:02 PM", "03/04/2024 7:03 PM"], "month_first", True, datetime(2024, 3, 4, 18, 2)),
    (["14.03.2024 18:02", "15.03.2024 08:03"], "day_first", False, datetime(2024, 3, 14, 18, 2)),  # de-DE "g"
    (["03/04/2024 18:02", "03/04/2024 19:03"], "day_first", True, datetime(2024, 4, 3, 18, 2)),  # en-GB, fr-FR
    (["2024-03-14 18:02", "2024-03-14 18:03"], None, None, datetime(2024, 3, 14, 18, 2)),  # sv-SE "g"
    (["14-Mar-24 06:02 PM", "14-Mar-24 06:03 PM"], None, None, datetime(2024, 3, 14, 18, 2)),  # before 2023-02
    # .NET's "g" of cultures whose time is not "H:mm" after the date (ICU's, and Windows' defaults)
    (["2024. 3. 14. 오후 6:02", "2024. 3. 15. 오전 12:05"], None, None, datetime(2024, 3, 14, 18, 2)),  # ko, ICU
    (["2024-03-14 오후 6:02", "2024-03-15 오전 9:03"], None, None, datetime(2024, 3, 14, 18, 2)),  # ko, Windows
    (["2024/3/14 下午6:02", "2024/3/15 上午9:03"], None, None, datetime(2024, 3, 14, 18, 2)),  # zh-TW, ICU
    (["2024/3/14 下午 06:02", "2024/3/15 上午 09:03"], None, None, datetime(2024, 3, 14, 18, 2)),  # zh-TW, Windows
    (["2024/03/14 午後 6:02", "2024/03/15 午前 9:03"], None, None, datetime(2024, 3, 14, 18, 2)),  # ja, 12-hour
    (["2024-03-14 18 h 02", "2024-03-15 9 h 03"], None, None, datetime(2024, 3, 14, 18, 2)),  # fr-CA, ICU
    (["14.03.2024 г. 18:02", "15.03.2024 г. 9:03"], "day_first", False, datetime(2024, 3, 14, 18, 2)),  # bg, ICU
])
def test_exporter_csv_dates_as_the_locale_wrote_them(tmp_path, dates, order, ambiguous, first):
    rows = "".join(f'"111","sam","{d}","message {i}","",""\n' for i, d in enumerate(dates))
    path = tmp_path / "chat.csv"
    path.write_text("AuthorID,Author,Date,Content,Attachments,Reactions\n" + rows)
    [chat] = read_discord_export(path, tz="Asia/Tokyo")  # a written local time is kept as written
    assert chat.messages[0].timestamp == first and len(chat.messages) == 2
    assert chat.stats.get("date_order") == order and chat.stats.get("date_order_ambiguous") == ambiguous
    assert chat.stats["exact_timestamps"] is False


PLAIN_TEXT = """==============================================================
Guild: Hiking Club
Channel: Trips / general
Topic: plans
==============================================================

[3/14/2024 6:02 PM] alexr#4242
Joined the server.


[3/14/2024 6:03 PM] sam.lee (pinned)
Who is in for Saturday?

Bring boots.
[3/14/2024 6:00 PM] a quoted line, not a message: no empty line above it


[3/14/2024 6:04 PM] kim_k
me!

{Attachments}
https://cdn.discordapp.com/attachments/9100/1/trail.jpg

{Reactions}
👍 (2) 🎉


[3/14/2024 6:05 PM] Dyno#3861


{Embed}
Dyno
https://dyno.gg
Welcome!
Read the rules


[3/14/2024 6:06 PM] kim_k


{Stickers}
https://media.discordapp.net/stickers/1.png


==============================================================
Exported 5 message(s)
==============================================================
"""

OLD_PLAIN_TEXT = """==============================================================
Guild: Direct Messages
Channel: kim_k
==============================================================

[14-Mar-24 06:02 PM] sam.lee#1234
Hey, free on Saturday?

[14-Mar-24 06:03 PM] kim_k#0042
Yes!

{Attachments}
https://cdn.discordapp.com/attachments/5001/71/map.png

{Reactions}
👍 (2) 🎉\x20


==============================================================
Exported 2 message(s)
==============================================================
"""


def test_exporter_plain_text_new_and_old(tmp_path):
    path = tmp_path / "Hiking Club - Trips - general [9100].txt"
    path.write_text(PLAIN_TEXT.replace("\n", "\r\n"), encoding="utf-8")  # as Windows writes it
    assert looks_like_discord(path)
    [chat] = read_discord_export(path)
    assert [(m.author, m.kind, m.text) for m in chat.messages] == [
        (None, "system", "alexr joined the server."),
        ("sam.lee", "text", "Who is in for Saturday?\n\nBring boots.\n"
                            "[3/14/2024 6:00 PM] a quoted line, not a message: no empty line above it"),
        ("kim_k", "media", "image omitted\nme!"),
        ("Dyno", "text", "Dyno\nWelcome!\nRead the rules"),  # an embed alone: its lines, not its URLs
        ("kim_k", "media", "sticker omitted"),
    ]
    assert chat.messages[0].timestamp == datetime(2024, 3, 14, 18, 2)
    assert chat.stats["chat_name"] == "general in Hiking Club" and chat.stats["category"] == "Trips"
    assert chat.stats["source_chat_id"] == "9100" and chat.stats["export_form"] == "text"
    assert chat.stats["date_order"] == "month_first" and chat.stats["date_order_ambiguous"] is False  # 3/14
    assert "message_count_declared" not in chat.stats  # 5 declared, 5 read
    old = tmp_path / "kim.txt"
    old.write_text(OLD_PLAIN_TEXT, encoding="utf-8")
    [dm] = read_discord_export(old)
    assert [(m.author, m.kind, m.text) for m in dm.messages] == [
        ("sam.lee", "text", "Hey, free on Saturday?"), ("kim_k", "media", "image omitted\nYes!")]
    assert dm.stats["chat_name"] == "kim_k" and dm.stats["guild_id"] == "0"
    assert dm.messages[1].timestamp == datetime(2024, 3, 14, 18, 3)


def _plain_text(*messages):
    """A PlainText export of `messages` ((date, author, content)…) as DiscordChatExporter lays one out."""
    rule = "=" * 62
    body = "".join(f"[{date}] {author}\n{content}\n\n" for date, author, content in messages)
    return (f"{rule}\nGuild: Direct Messages\nChannel: kim_k\n{rule}\n\n{body}\n{rule}\n"
            f"Exported {len(messages)} message(s)\n{rule}\n")


# each culture's .NET "g" (short date, a space, short time), from .NET's culture data: ICU's, and Windows' defaults
# where they differ; the first date is 2024-03-14 18:02, the second 2024-03-15 09:03
G_FORMATS = {
    "de-DE": ("14.03.2024 18:02", "15.03.2024 09:03"),
    "fr-FR, it-IT, pt-BR": ("14/03/2024 18:02", "15/03/2024 09:03"),
    "es-ES": ("14/3/2024 18:02", "15/3/2024 9:03"),
    "nl-NL": ("14-03-2024 18:02", "15-03-2024 09:03"),
    "nl-NL, Windows": ("14-3-2024 18:02", "15-3-2024 09:03"),
    "ru-RU, pl-PL": ("14.03.2024 18:02", "15.03.2024 09:03"),
    "tr-TR": ("14.03.2024 18:02", "15.03.2024 09:03"),
    "fi-FI": ("14.3.2024 18.02", "15.3.2024 9.03"),
    "ja-JP": ("2024/03/14 18:02", "2024/03/15 9:03"),
    "zh-CN": ("2024/3/14 18:02", "2024/3/15 09:03"),
    "zh-TW": ("2024/3/14 下午6:02", "2024/3/15 上午9:03"),
    "zh-TW, Windows": ("2024/3/14 下午 06:02", "2024/3/15 上午 09:03"),
    "ko-KR": ("2024. 3. 14. 오후 6:02", "2024. 3. 15. 오전 9:03"),
    "ko-KR, Windows": ("2024-03-14 오후 6:02", "2024-03-15 오전 9:03"),
    "fr-CA": ("2024-03-14 18 h 02", "2024-03-15 09 h 03"),
    "es-MX": ("14/03/2024 6:02 p.m.", "15/03/2024 9:03 a.m."),
}


@pytest.mark.parametrize("culture", list(G_FORMATS))
def test_plain_text_dates_in_the_g_format_of_common_cultures(tmp_path, culture):
    first, second = G_FORMATS[culture]
    path = tmp_path / "kim.txt"
    path.write_text(_plain_text((first, "sam.lee#1234", "Hey, free on Saturday?"), (second, "kim_k", "Yes!")),
                    encoding="utf-8")
    skips = SkipCounter()
    [chat] = read_discord_export(path, skips)
    assert [(m.author, m.text) for m in chat.messages] == [("sam.lee", "Hey, free on Saturday?"), ("kim_k", "Yes!")]
    assert [m.timestamp for m in chat.messages] == [datetime(2024, 3, 14, 18, 2), datetime(2024, 3, 15, 9, 3)]
    assert skips.total == 0 and chat.stats["exact_timestamps"] is False


def test_dates_no_g_format_of_a_covered_culture_writes_stay_counted(tmp_path):
    # a Persian designator and month name (a language not read) and Finnish "klo" are not guessed; Greek designators
    # and German and Lithuanian month names, counted here before, read (TestDatesInOtherLanguages)
    rows = "".join(f'"111","sam","{d}","message {i}","",""\n' for i, d in enumerate(
        ["14/3/2024 6:02 ب.ظ", "14-مارس-24 06:02", "14.3.2024 klo 18.02", "15.3.2024 9.03"]))
    path = tmp_path / "chat.csv"
    path.write_text("AuthorID,Author,Date,Content,Attachments,Reactions\n" + rows, encoding="utf-8")
    skips = SkipCounter()
    [chat] = read_discord_export(path, skips)
    assert [m.text for m in chat.messages] == ["message 3"]
    assert dict(skips.counts) == {"discord_bad_timestamp": 3}


# DiscordChatExporter's CSV before 2019-12, as each form of its history wrote the same two messages and a bad row
OLD_CSV = {
    # 2019-09 to 2019-12: every field quoted, `;` after each
    "AuthorID;": (
        "AuthorID;Author;Date;Content;Attachments;Reactions;\n"
        '"111";"sam.lee#1234";"14-Mar-19 06:02 PM";"Hey; free on Saturday?";"";"";\n'
        '"222";"kim_k#0042";"14-Mar-19 06:03 PM";"Yes, the ""north"" trail\nbring boots";'
        '"https://cdn.discordapp.com/attachments/1/2/map.png";"👍 (2)";\n'
        '"333";"alexr#4242";"14-Mar-19 06:04 PM";\n'
    ),
    # 2019-06 to 2019-09: no AuthorID
    "Reactions;": (
        "Author;Date;Content;Attachments;Reactions;\n"
        '"sam.lee#1234";"14-Mar-19 06:02 PM";"Hey; free on Saturday?";"";"";\n'
        '"kim_k#0042";"14-Mar-19 06:03 PM";"Yes, the ""north"" trail\nbring boots";'
        '"https://cdn.discordapp.com/attachments/1/2/map.png";"👍(2)";\n'
        '"alexr#4242";"14-Mar-19 06:04 PM";\n'
    ),
    # 2018-11 to 2019-06: no reactions (written on Windows: rows end in CR LF, a content's line breaks stay LF)
    "Attachments;": (
        "Author;Date;Content;Attachments;\r\n"
        '"sam.lee#1234";"14-Mar-19 06:02 PM";"Hey; free on Saturday?";"";\r\n'
        '"kim_k#0042";"14-Mar-19 06:03 PM";"Yes, the ""north"" trail\nbring boots";'
        '"https://cdn.discordapp.com/attachments/1/2/map.png";\r\n'
        '"alexr#4242";"14-Mar-19 06:04 PM";\r\n'
    ),
    # 2018-06 to 2018-11: a content quoted only when it holds `,` or `;`, its line breaks written as ", "
    "unquoted;": (
        "Author;Date;Content;Attachments;\n"
        'sam.lee#1234;14-Mar-19 06:02 PM;"Hey; free on Saturday?";;\n'
        'kim_k#0042;14-Mar-19 06:03 PM;"Yes, the ""north"" trail, bring boots";'
        "https://cdn.discordapp.com/attachments/1/2/map.png;\n"
        "alexr#4242;14-Mar-19 06:04 PM;\n"
    ),
    # 2018-04 to 2018-06: CsvHelper's `,`, quoting what needs it; line breaks written as ", "
    "Attachments,": (
        "Author,Date,Content,Attachments\r\n"
        "sam.lee#1234,14-Mar-19 06:02 PM,Hey; free on Saturday?,\r\n"
        'kim_k#0042,14-Mar-19 06:03 PM,"Yes, the ""north"" trail, bring boots",'
        "https://cdn.discordapp.com/attachments/1/2/map.png\r\n"
        "alexr#4242,14-Mar-19 06:04 PM\r\n"
    ),
}


@pytest.mark.parametrize("form", list(OLD_CSV))
def test_exporter_csv_of_before_2019_12_is_read(tmp_path, form):
    path = tmp_path / "Direct Messages - Private - kim_k [5001].csv"
    path.write_text(OLD_CSV[form], encoding="utf-8", newline="")
    assert looks_like_discord(path)
    skips = SkipCounter()
    [chat] = read_discord_export(path, skips)
    rows = [(m.author, m.kind, m.text, m.timestamp) for m in chat.messages]
    line_break = ", " if form in ("unquoted;", "Attachments,") else "\n"
    assert rows == [
        ("sam.lee", "text", "Hey; free on Saturday?", datetime(2019, 3, 14, 18, 2)),
        ("kim_k", "media", f'image omitted\nYes, the "north" trail{line_break}bring boots',
         datetime(2019, 3, 14, 18, 3)),
    ]
    assert chat.stats["export_form"] == "csv" and chat.stats["source_chat_id"] == "5001"
    assert dict(skips.counts) == {"discord_malformed_message": 1}


def test_a_modern_csv_with_semicolons_in_its_fields_is_not_misread(tmp_path):
    path = tmp_path / "chat.csv"
    path.write_text("AuthorID,Author,Date,Content,Attachments,Reactions\n"
                    '"111","sam;lee","2024-03-14T18:02:05+00:00","a;b;c","",""\n'
                    '"222","kim","2024-03-14T18:03:05+00:00","Author;Date;Content;Attachments;","",""\n',
                    encoding="utf-8")
    [chat] = read_discord_export(path)
    assert [(m.author, m.text) for m in chat.messages] == [("sam;lee", "a;b;c"),
                                                          ("kim", "Author;Date;Content;Attachments;")]


def test_a_csv_row_of_the_wrong_width_names_its_row_and_line(tmp_path):
    path = tmp_path / "Direct Messages - Private - Kim [5001].csv"
    path.write_text(EXPORTER_CSV, encoding="utf-8")
    skips = SkipCounter()
    read_discord_export(path, skips)
    # the second row spans two lines: the seventh row starts on line 9
    assert skips.examples["discord_malformed_message"] == (
        f"{path}:Direct Messages - Private - Kim#position-6: row 7 (line 9) has 4 fields, not the header's 6 "
        "(AuthorID,Author,Date,Content,Attachments,Reactions)")
    old = tmp_path / "old.csv"
    old.write_text(OLD_CSV["AuthorID;"], encoding="utf-8")
    skips = SkipCounter()
    read_discord_export(old, skips)
    assert skips.examples["discord_malformed_message"].endswith(
        "#position-2: row 3 (line 5) has 3 fields, not the header's 6 (AuthorID;Author;Date;Content;Attachments;"
        "Reactions)")


def test_plain_text_sniffing_takes_no_whatsapp_or_plain_text(tmp_path):
    whatsapp = tmp_path / "WhatsApp Chat with Kim.txt"
    whatsapp.write_text("[14/03/2024, 18:02:05] Sam: Hey\n[14/03/2024, 18:03:10] Kim: Yes!\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("=" * 62 + "\nGuild: of St Luke, minutes of the meeting\n" + "=" * 62 + "\n")
    lines = tmp_path / "rule.txt"
    lines.write_text("=" * 62 + "\nChannel: 4\nGuild: x\n")
    assert not any(map(looks_like_discord, (whatsapp, notes, lines)))
    headless = tmp_path / "headless.txt"  # DiscordChatExporter's header, then no message that reads
    headless.write_text("=" * 62 + "\nGuild: x\nChannel: y\n" + "=" * 62 + "\n\n[yesterday] Sam\nhi\n")
    assert looks_like_discord(headless)
    with pytest.raises(InputFileError, match=r"headless\.txt: no message header .* first line '\[yesterday\] Sam'"):
        read_discord_export(headless)


def test_partitioned_export_is_one_chat(tmp_path):
    messages = GUILD["messages"]
    base = "Hiking Club - Trips - general [9100]"
    first = _write(tmp_path, {**GUILD, "messages": messages[:8]}, f"{base}.json")
    second = _write(tmp_path, {**GUILD, "messages": messages[8:14]}, f"{base} [part 2].json")
    third = _write(tmp_path, {**GUILD, "messages": messages[14:]}, f"{base} [part 3].json")
    (tmp_path / "unpartitioned").mkdir()
    whole = _write(tmp_path / "unpartitioned", GUILD, first.name)
    [chat] = read_discord_export(first)
    [alone] = read_discord_export(whole)
    # the messages of the one file, read from three (the chat's id is of the files read)
    assert [{**m.as_row(), "chat_id": None} for m in chat.messages] == [
        {**m.as_row(), "chat_id": None} for m in alone.messages]
    assert chat.stats["parts"] == [first.name, second.name, third.name]
    assert chat.stats["skipped"] == alone.stats["skipped"]
    assert read_discord_export(second) == [] and read_discord_export(third) == []
    assert is_later_partition(third) and not is_later_partition(first)
    assert len(read_discord_export(third, partitions=False)[0].messages) == 1
    before = export_sha256(first)
    _write(tmp_path, {**GUILD, "messages": messages[8:13]}, f"{base} [part 2].json")
    assert export_sha256(first) != before and export_sha256(third) == export_sha256(first)
    # a part of another channel under the same name is a chat of its own
    _write(tmp_path, {**DM, "messages": DM["messages"][:2]}, f"{base} [part 4].json")
    assert sorted(c.stats["source_chat_id"] for c in read_discord_export(first)) == ["5001", "9100"]


def test_a_data_package_zip_reads_as_its_folder(tmp_path):
    import zipfile

    base = _package(tmp_path, root="Messages")
    archive = tmp_path / "package.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(base.parent.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(base.parent).as_posix())
        z.writestr("account/user.json", '{"id": "111"}')
        z.writestr("README.txt", "Your data package")
    assert looks_like_discord_archive(archive)
    from_zip, from_folder = read_discord_export(archive, owner="Sam"), read_discord_export(base.parent, owner="Sam")

    def same(chat):
        return chat.chat_id, chat.source_file, [m.as_row() for m in chat.messages], chat.stats

    assert [same(c) for c in from_zip] == [same(c) for c in from_folder] and len(from_zip) == 2
    assert from_zip[0].stats["chat_name"] == "Direct Message with kim_k#0"  # index.json read in the zip
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("_chat.txt", "14/03/2024, 18:02 - Sam: hi\n")
    assert not looks_like_discord_archive(other)
    with pytest.raises(InputFileError, match=r"other\.zip: a zip without a Discord data package's channel folders"):
        read_discord_export(other)


# ------------------------------------------------------------------------------------------------ dates: Thai, custom


def _csv_of_dates(tmp_path, dates, name="chat.csv"):
    """A DiscordChatExporter CSV (header on line 1) of one message per date: "message 0", "message 1"…"""
    rows = "".join(f'"111","sam","{d}","message {i}","",""\n' for i, d in enumerate(dates))
    path = tmp_path / name
    path.write_text("AuthorID,Author,Date,Content,Attachments,Reactions\n" + rows, encoding="utf-8")
    return path


class TestThaiBuddhistEraDates:
    """.NET's th-TH culture counts years in the Thai Buddhist era (Gregorian + 543): its "g" format, "d/M/yyyy
    HH:mm" from ICU's "d/M/yy" (.NET widens a short date's "yy") and "HH:mm" ("H:mm" in Windows' own data), writes
    2024-03-14 18:02 as "14/3/2567 18:02", in ASCII digits. These tests hold until the Gregorian year 2566."""

    @pytest.mark.parametrize("form", ["text", "csv"])
    @pytest.mark.parametrize("dates", [("14/3/2567 18:02", "15/3/2567 09:03"),  # ICU
                                       ("14/3/2567 18:02", "15/3/2567 9:03")])  # Windows
    def test_th_th_g_format_reads_as_the_gregorian_time(self, tmp_path, form, dates):
        if form == "text":
            path = tmp_path / "kim.txt"
            path.write_text(_plain_text((dates[0], "sam.lee", "สวัสดี"), (dates[1], "kim_k", "ไปไหนมา")),
                            encoding="utf-8")
        else:  # CSV wrote "g" from 2023-09 (the --locale option) to 2023-11 (ISO since)
            path = _csv_of_dates(tmp_path, dates)
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        assert [m.timestamp for m in chat.messages] == [datetime(2024, 3, 14, 18, 2), datetime(2024, 3, 15, 9, 3)]
        assert skips.total == 0 and chat.stats["buddhist_era"] is True
        assert chat.stats["date_pattern"] == "d/M/yyyy H:mm" and chat.stats["date_order"] == "day_first"

    def test_a_customised_thai_clock_and_two_digit_buddhist_years(self, tmp_path):
        # a Thai user's own short date "d/M/yy" and time "h:mm tt" (ICU's th designators)
        path = _csv_of_dates(tmp_path, ["14/3/67 6:02 หลังเที่ยง", "15/3/67 9:03 ก่อนเที่ยง"])
        [chat] = read_discord_export(path)
        assert [m.timestamp for m in chat.messages] == [datetime(2024, 3, 14, 18, 2), datetime(2024, 3, 15, 9, 3)]
        assert chat.stats["buddhist_era"] is True

    def test_buddhist_era_only_when_every_year_of_the_file_is_one(self, tmp_path):
        # the rule: a year is Gregorian from 2015 (Discord's first) to next year; one that is not but, less 543, is
        # (2558 on: over 500 years ahead) is of the Buddhist era; a file is read so only when every one of its years
        # is; else its Buddhist-era years, as its years that are neither, are counted, never read as some time
        path = _csv_of_dates(tmp_path, ["14/3/2024 18:02", "15/3/2567 09:03", "16/3/2024 10:00", "17/3/2700 11:00"])
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        assert [m.text for m in chat.messages] == ["message 0", "message 2"]
        assert chat.stats["skipped"] == {"discord_bad_timestamp": 2} and "buddhist_era" not in chat.stats
        assert skips.examples["discord_bad_timestamp"].endswith(
            "#position-1: line 3: '15/3/2567 09:03' has a Buddhist-era year among the file's Gregorian ones")

    def test_a_future_year_that_is_no_buddhist_one_is_counted(self, tmp_path):
        path = _csv_of_dates(tmp_path, ["14/3/2600 18:02", "15/3/2600 09:03"])  # 2600 - 543 = 2057
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        assert chat.messages == [] and dict(skips.counts) == {"discord_bad_timestamp": 2}
        assert skips.examples["discord_bad_timestamp"].endswith(
            "#position-0: line 2: '14/3/2600 18:02' has a year no Discord message has")


SENT = (datetime(2024, 3, 14, 18, 2), datetime(2024, 3, 15, 9, 3))  # the two messages of the tests below


class TestCustomisedDateFormats:
    """Dates in a user's own short date and time (Windows' regional settings, read by DiscordChatExporter since
    2024-01; its --dateformat, in English, before 2023-09): one pattern for the whole file, found from all its
    dates."""

    @pytest.mark.parametrize(("dates", "pattern", "sent"), [
        (["Mar 14, 2024 6:02 PM", "Mar 15, 2024 9:03 AM"], "MMM d, yyyy h:mm tt", SENT),
        (["Thursday, March 14, 2024 6:02 PM", "Friday, March 15, 2024 9:03 AM"], "ddd, MMM d, yyyy h:mm tt", SENT),
        (["2024-Mar-14 18:02", "2024-Mar-15 09:03"], "yyyy-MMM-d H:mm", SENT),
        (["Thu 14/03/2024 18:02:05", "Fri 15/03/2024 09:03:00"], "ddd d/M/yyyy H:mm:ss",
         (datetime(2024, 3, 14, 18, 2, 5), datetime(2024, 3, 15, 9, 3))),
        (["2024.03.14 18:02", "2024.03.15 09:03"], "yyyy.M.d H:mm", SENT),
        (["14-Mar-24 6:02 PM", "15-Mar-24 9:03 AM"], "d-MMM-yy h:mm tt", SENT),
        # a two-digit year first: 14 cannot be the year of a Discord message (2014), so the 24 is
        (["24/03/14 18:02", "24/03/15 09:03"], "yy/M/d H:mm", SENT),
        # year, day, month: the 14 is a day wherever it is in the file
        (["2024-05-03 18:02", "2024-14-03 09:03"], "yyyy-d-M H:mm",
         (datetime(2024, 3, 5, 18, 2), datetime(2024, 3, 14, 9, 3))),
    ])
    def test_one_pattern_is_found_from_all_of_a_files_dates(self, tmp_path, dates, pattern, sent):
        path = tmp_path / "kim.txt"
        path.write_text(_plain_text((dates[0], "sam.lee", "Hey"), (dates[1], "kim_k", "Yes!")), encoding="utf-8")
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        assert [(m.author, m.text, m.timestamp) for m in chat.messages] == [("sam.lee", "Hey", sent[0]),
                                                                            ("kim_k", "Yes!", sent[1])]
        assert skips.total == 0 and chat.stats["date_pattern"] == pattern
        assert "buddhist_era" not in chat.stats

    def test_an_ambiguous_file_says_which_order_it_assumed(self, tmp_path, caplog):
        path = _csv_of_dates(tmp_path, ["03/04/2024 18:02", "05/04/2024 19:03"], "ambiguous.csv")
        with caplog.at_level("WARNING", logger="tasks.discord"):
            [chat] = read_discord_export(path)
        assert [m.timestamp for m in chat.messages] == [datetime(2024, 4, 3, 18, 2), datetime(2024, 4, 5, 19, 3)]
        assert chat.stats["date_order"] == "day_first" and chat.stats["date_order_ambiguous"] is True
        [record] = [r for r in caplog.records if "ambiguous.csv" in r.getMessage()]
        assert "no day or month over 12" in record.getMessage() and "read day first (d/M/yyyy H:mm)" in (
            record.getMessage())

    def test_dates_the_files_pattern_does_not_read_are_counted_with_line_and_reason(self, tmp_path):
        path = _csv_of_dates(tmp_path, ["Mar 14, 2024 6:02 PM", "Mar 15, 2024 9:03 AM", "16/03/2024 10:00",
                                        "Mar 32, 2024 6:02 PM", "Mär 17, 2024 6:02 PM", "yesterday"])
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        assert [m.text for m in chat.messages] == ["message 0", "message 1"]
        assert chat.stats["skipped"] == {"discord_bad_timestamp": 4}
        assert skips.examples["discord_bad_timestamp"].endswith(
            "#position-2: line 4: '16/03/2024 10:00' is not written as the file's other dates (MMM d, yyyy h:mm tt)")
        # every reason, by line: another pattern's, no such day, a month name not in English, no date at all
        details = _bad_timestamp_details(path)
        assert details == [
            "line 4: '16/03/2024 10:00' is not written as the file's other dates (MMM d, yyyy h:mm tt)",
            "line 5: 'Mar 32, 2024 6:02 PM' is no date in the file's pattern (MMM d, yyyy h:mm tt)",
            "line 6: 'Mär 17, 2024 6:02 PM' has no English month name",
            "line 7: 'yesterday' is no date and time DiscordChatExporter writes",
        ]

    def test_a_weekday_that_is_not_the_dates_is_counted(self, tmp_path):
        # 2024-03-15 is a Friday: the date or its weekday is wrong, and which cannot be told
        path = _csv_of_dates(tmp_path, ["Thu 14/03/2024 18:02", "Thu 15/03/2024 09:03"])
        [chat] = read_discord_export(path)
        assert [m.text for m in chat.messages] == ["message 0"]
        assert _bad_timestamp_details(path) == [
            "line 3: 'Thu 15/03/2024 09:03' is a Friday in the file's pattern (ddd d/M/yyyy H:mm), not a Thu"]

    def test_plain_text_line_numbers_of_unread_dates(self, tmp_path):
        path = tmp_path / "kim.txt"
        path.write_text(_plain_text(("Mar 14, 2024 6:02 PM", "sam", "a"), ("Mar 15, 2024 9:03 AM", "kim", "b"),
                                    ("15/03/2024 09:04", "sam", "c")), encoding="utf-8")
        [chat] = read_discord_export(path)
        assert [m.text for m in chat.messages] == ["a", "b"]
        # the header's five lines, then three lines a message: the third message's "[date] author" is on line 12
        assert _bad_timestamp_details(path) == [
            "line 12: '15/03/2024 09:04' is not written as the file's other dates (MMM d, yyyy h:mm tt)"]


class _EverySkip(SkipCounter):
    """A SkipCounter that keeps what every skipped record was said to be (the counter keeps each reason's first)."""

    def __init__(self) -> None:
        super().__init__()
        self.details: list[tuple[str, str]] = []

    def skip(self, reason: str, where: str, detail: str = "") -> None:
        super().skip(reason, where, detail)
        self.details.append((reason, detail))


def _bad_timestamp_details(path):
    """What each skipped bad timestamp of `path` was said to be, in file order."""
    skips = _EverySkip()
    read_discord_export(path, skips)
    return [detail for reason, detail in skips.details if reason == "discord_bad_timestamp"]


# ---------------------------------------------------------------------------------------------- dates: other languages


class TestDatesInOtherLanguages:
    """Dates written on machines of other cultures: month and weekday names of the table's languages (as .NET writes
    them: stand-alone and genitive, full and abbreviated), their AM/PM designators, the time before the date. Every
    date here was read as no date before (a counted skip), or never written (.NET's names and designators, from ICU
    72's data and CLDR's, are in the module's docstring)."""

    # a user's own short date and time in each language (Windows' settings or an old --dateformat), and how the
    # file's pattern is then described; the dates are 2024-03-14 18:02 and 2024-03-15 09:03 unless said
    @pytest.mark.parametrize(("dates", "pattern", "language", "sent"), [
        (["jeudi 14 mars 2024 18:02", "vendredi 15 mars 2024 09:03"], "ddd d MMM yyyy H:mm", "French", SENT),
        (["14 févr. 2024 18:02", "15 avr. 2024 09:03"], "d MMM yyyy H:mm", "French",
         (datetime(2024, 2, 14, 18, 2), datetime(2024, 4, 15, 9, 3))),
        (["Donnerstag, 14. März 2024 18:02", "Freitag, 15. März 2024 09:03"], "ddd, d. MMM yyyy H:mm", "German",
         SENT),
        (["14. Sept. 2024 18:02", "15. Okt. 2024 09:03"], "d. MMM yyyy H:mm", "German",
         (datetime(2024, 9, 14, 18, 2), datetime(2024, 10, 15, 9, 3))),
        (["jue, 14 de marzo de 2024 18:02", "vie, 15 de marzo de 2024 9:03"], "ddd, d 'de' MMM 'de' yyyy H:mm",
         "Spanish", SENT),
        (["giovedì 14 marzo 2024 18:02", "venerdì 15 marzo 2024 09:03"], "ddd d MMM yyyy H:mm", "Italian", SENT),
        (["quinta-feira, 14 de março de 2024 18:02", "sexta-feira, 15 de março de 2024 09:03"],
         "ddd, d 'de' MMM 'de' yyyy H:mm", "Portuguese", SENT),  # pt-BR's and pt-PT's long date
        (["14/03/2024, 6:02 da tarde", "15/03/2024, 9:03 da manhã"], "d/M/yyyy, h:mm tt", None, SENT),  # pt-PT
        (["14 mrt 2024 18:02", "15 mei 2024 09:03"], "d MMM yyyy H:mm", "Dutch",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["14 marca 2024 18:02", "15 maja 2024 09:03"], "d MMM yyyy H:mm", "Polish",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["14 марта 2024 г. 18:02", "15 мая 2024 г. 9:03"], "d MMM yyyy г. H:mm", "Russian",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["чт, 14.03.2024 18:02", "пт, 15.03.2024 9:03"], "ddd, d.M.yyyy H:mm", "Russian", SENT),
        (["14 бер. 2024 р. 18:02", "15 трав. 2024 р. 09:03"], "d MMM yyyy р. H:mm", "Ukrainian",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["14 Mart 2024 18:02", "15 Mayıs 2024 09:03"], "d MMM yyyy H:mm", "Turkish",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["tors 14 mars 2024 18:02", "fre 15 mars 2024 09:03"], "ddd d MMM yyyy H:mm", "Swedish", SENT),
        (["14. marts 2024 18.02", "15. maj 2024 09.03"], "d. MMM yyyy H.mm", "Danish",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["14. mar. 2024, 18:02", "15. des. 2024, 09:03"], "d. MMM yyyy, H:mm", "Norwegian",  # nb's medium date
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 12, 15, 9, 3))),
        (["14. maaliskuuta 2024 18.02", "15. toukokuuta 2024 9.03"], "d. MMM yyyy H.mm", "Finnish",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["14. března 2024 18:02", "15. května 2024 9:03"], "d. MMM yyyy H:mm", "Czech",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["14 martie 2024 18:02", "15 mai 2024 09:03"], "d MMM yyyy H:mm", "Romanian",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["2024. márc. 14. 18:02", "2024. máj. 15. 9:03"], "yyyy. MMM d. H:mm", "Hungarian",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["14 Μαρτίου 2024 6:02 μ.μ.", "15 Μαΐου 2024 9:03 π.μ."], "d MMM yyyy h:mm tt", "Greek",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["Kamis, 14 Maret 2024 18.02", "Jumat, 15 Maret 2024 09.03"], "ddd, d MMM yyyy H.mm", "Indonesian", SENT),
        (["14 tháng 3, 2024 18:02", "15 thg 5, 2024 09:03"], "d MMM, yyyy H:mm", "Vietnamese",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["Thứ Năm, 14/03/2024 18:02", "Thứ Sáu, 15/03/2024 09:03"], "ddd, d/M/yyyy H:mm", "Vietnamese", SENT),
        (["14. ožujka 2024. 18:02", "15. svibnja 2024. 09:03"], "d. MMM yyyy. H:mm", "Croatian",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 5, 15, 9, 3))),
        (["štvrtok 14. marca 2024 18:02", "piatok 15. novembra 2024 9:03"], "ddd d. MMM yyyy H:mm", "Slovak",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 11, 15, 9, 3))),  # sk's full date, genitive months
        (["četrtek, 14. marec 2024 18:02", "pet., 15. nov. 2024 09:03"], "ddd, d. MMM yyyy H:mm", "Slovenian",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 11, 15, 9, 3))),
        (["четвъртък, 14 март 2024 г. 18:02", "петък, 15 ное 2024 г. 9:03"], "ddd, d MMM yyyy г. H:mm",
         "Bulgarian", (datetime(2024, 3, 14, 18, 2), datetime(2024, 11, 15, 9, 3))),
        (["2024 m. kovo 14 d. 18:02", "2024 m. lapkričio 15 d. 09:03"], "yyyy 'm'. MMM d 'd'. H:mm", "Lithuanian",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 11, 15, 9, 3))),  # lt's long date, genitive months
        (["ceturtdiena, 2024. gada 14. marts 18:02", "piektd., 2024. gada 15. nov. 09:03"],
         "ddd, yyyy. 'gada' d. MMM H:mm", "Latvian", (datetime(2024, 3, 14, 18, 2), datetime(2024, 11, 15, 9, 3))),
        (["neljapäev, 14. märts 2024 18:02", "R, 15. nov 2024 09:03"], "ddd, d. MMM yyyy H:mm", "Estonian",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 11, 15, 9, 3))),
        (["יום חמישי, 14 במרץ 2024 18:02", "יום ו׳, 15 בנוב׳ 2024 9:03"], "ddd, d בMMM yyyy H:mm", "Hebrew",
         (datetime(2024, 3, 14, 18, 2), datetime(2024, 11, 15, 9, 3))),  # he's "d בMMM y", geresh abbreviations
        # year first with ja's and zh's 年 月 日, ko's 년 월 일
        (["2024年3月14日 18:02", "2024年3月15日 9:03"], "yyyy年M月d日 H:mm", None, SENT),
        (["2024年3月14日 下午6:02", "2024年3月15日 上午9:03"], "yyyy年M月d日 tt h:mm", None, SENT),
        (["2024년 3월 14일 오후 6:02", "2024년 3월 15일 오전 9:03"], "yyyy년 M월 d일 tt h:mm", None, SENT),
    ])
    def test_month_and_weekday_names_of_each_language(self, tmp_path, dates, pattern, language, sent):
        path = _csv_of_dates(tmp_path, dates)
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        assert [m.timestamp for m in chat.messages] == list(sent) and skips.total == 0
        assert chat.stats["date_pattern"] == pattern
        assert chat.stats.get("date_languages", [None])[0] == language

    # the designators .NET writes for these cultures' 12-hour clocks ("g" of el-GR, ar-EG, vi-VN…, else a user's
    # own time format), after the time or before it
    @pytest.mark.parametrize("dates", [
        ["14/3/2024 6:02 μ.μ.", "15/3/2024 9:03 π.μ."],  # el
        ["14\u200f/3\u200f/2024 6:02 م", "15\u200f/3\u200f/2024 9:03 ص"],  # ar-EG's "g", its right-to-left marks
        ["14/3/2024 6:02 अपराह्न", "15/3/2024 9:03 पूर्वाह्न"],  # hi, CLDR 29 (ICU now writes "pm", read before)
        ["14/03/2024 6:02 CH", "15/03/2024 9:03 SA"],  # vi
        ["14.03.2024 ÖS 6:02", "15.03.2024 ÖÖ 9:03"],  # tr, before the time
        ["2024-03-14 6:02 em", "2024-03-15 9:03 fm"],  # sv
        ["14.3.2024 6.02 ip.", "15.3.2024 9.03 ap."],  # fi
        ["14.03.2024 6:02 odp.", "15.03.2024 9:03 dop."],  # cs
        ["2024. 03. 14. du. 6:02", "2024. 03. 15. de. 9:03"],  # hu
        ["14.03.2024 6:02 пп", "15.03.2024 9:03 дп"],  # uk
        ["14.03.2024 6:02 ПП", "15.03.2024 9:03 ДП"],  # ru, CLDR 29
        ["14.03.2024 6:02 nachm.", "15.03.2024 9:03 vorm."],  # de, CLDR 29
        ["14. 3. 2024 6:02 pop.", "15. 3. 2024 9:03 dop."],  # sl
        ["14.03.2024 г. 6:02 сл.об.", "15.03.2024 г. 9:03 пр.об."],  # bg, CLDR 25 (CLDR 48 writes "pm", "am")
        ["2024-03-14 6:02 popiet", "2024-03-15 9:03 priešpiet"],  # lt
        ["14.03.2024 6:02 pēcp.", "15.03.2024 9:03 priekšp."],  # lv
        ["14.3.2024 6:02 אחה״צ", "15.3.2024 9:03 לפנה״צ"],  # he, older CLDRs (CLDR 48 writes "PM", "AM")
    ])
    def test_am_pm_designators_of_other_languages(self, tmp_path, dates):
        skips = SkipCounter()
        [chat] = read_discord_export(_csv_of_dates(tmp_path, dates), skips)
        assert [m.timestamp for m in chat.messages] == list(SENT) and skips.total == 0

    @pytest.mark.parametrize(("dates", "pattern"), [
        (["18:02 14.03.2024", "09:03 15.03.2024"], "H:mm d.M.yyyy"),
        (["6:02 PM 3/14/2024", "9:03 AM 3/15/2024"], "h:mm tt M/d/yyyy"),
        (["18.02 14.3.2024", "9.03 15.3.2024"], "H.mm d.M.yyyy"),
        (["18:02 jeu. 14 mars 2024", "09:03 ven. 15 mars 2024"], "H:mm ddd d MMM yyyy"),
        (["오후 6:02 2024. 3. 14.", "오전 9:03 2024. 3. 15."], "tt h:mm yyyy. M. d."),
    ])
    def test_the_time_before_the_date(self, tmp_path, dates, pattern):
        path = tmp_path / "kim.txt"
        path.write_text(_plain_text((dates[0], "sam.lee", "Hey"), (dates[1], "kim_k", "Yes!")), encoding="utf-8")
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        assert [(m.author, m.timestamp) for m in chat.messages] == [("sam.lee", SENT[0]), ("kim_k", SENT[1])]
        assert skips.total == 0 and chat.stats["date_pattern"] == pattern

    def test_time_first_and_date_first_in_one_file_is_one_pattern(self, tmp_path):
        path = _csv_of_dates(tmp_path, ["18:02 14.03.2024", "09:03 15.03.2024", "16.03.2024 10:00"])
        [chat] = read_discord_export(path)
        assert [m.text for m in chat.messages] == ["message 0", "message 1"]
        assert _bad_timestamp_details(path) == [
            "line 4: '16.03.2024 10:00' is not written as the file's other dates (H:mm d.M.yyyy)"]

    def test_a_name_of_two_months_in_two_languages_is_read_from_the_files_other_dates(self, tmp_path):
        # "listopada" is November in Polish and October in Croatian: alone, the file does not tell which
        alone = _csv_of_dates(tmp_path, ["14 listopada 2024 18:02", "15 listopada 2024 09:03"], "alone.csv")
        [chat] = read_discord_export(alone)
        assert chat.messages == [] and chat.stats["date_languages"] == ["Polish", "Croatian"]
        assert _bad_timestamp_details(alone)[0] == (
            "line 2: '14 listopada 2024 18:02' reads as 2024-11-14 in Polish, 2024-10-14 in Croatian, and the file's "
            "other dates do not tell which language it is in")
        # a month only Polish names ("grudnia", December: Croatian writes "prosinca") tells it, and Croatian's so
        polish = _csv_of_dates(tmp_path, ["14 listopada 2024 18:02", "3 grudnia 2024 10:00"], "polish.csv")
        croatian = _csv_of_dates(tmp_path, ["14 listopada 2024 18:02", "3 prosinca 2024 10:00"], "croatian.csv")
        [pl], [hr] = read_discord_export(polish), read_discord_export(croatian)
        assert [m.timestamp for m in pl.messages] == [datetime(2024, 11, 14, 18, 2), datetime(2024, 12, 3, 10, 0)]
        assert [m.timestamp for m in hr.messages] == [datetime(2024, 10, 14, 18, 2), datetime(2024, 12, 3, 10, 0)]
        assert pl.stats["date_languages"] == ["Polish"] and hr.stats["date_languages"] == ["Croatian"]

    def test_names_not_of_the_files_language_are_counted(self, tmp_path):
        # a German file: a French month name, and "So" (Sunday in German, Saturday in Czech) on a Saturday
        path = _csv_of_dates(tmp_path, ["Do 14. März 2024 18:02", "Fr 15. März 2024 09:03",
                                        "Sa 16. avril 2024 10:00", "So 17. März 2024 11:00", "So 16. März 2024 12:00"])
        [chat] = read_discord_export(path)
        assert [m.timestamp for m in chat.messages] == [*SENT, datetime(2024, 3, 17, 11, 0)]
        assert chat.stats["date_languages"] == ["German"]
        assert _bad_timestamp_details(path) == [
            "line 4: 'Sa 16. avril 2024 10:00' has no German month name",
            "line 6: 'So 16. März 2024 12:00' is a Saturday in the file's pattern (ddd d. MMM yyyy H:mm), not a So"]

    def test_plain_text_headers_in_other_languages(self, tmp_path):
        path = tmp_path / "kim.txt"
        path.write_text(_plain_text(
            ("quinta-feira, 14 de março de 2024 18:02", "sam.lee", "Oi!\n\n[em 16 de março de 2024 10:00] lembra?"),
            ("sexta-feira, 15 de março de 2024 09:03", "kim_k", "Sim")), encoding="utf-8")
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        # a header is longer than 40 characters; a bracketed date after a word that is no weekday is text
        assert [(m.author, m.text, m.timestamp) for m in chat.messages] == [
            ("sam.lee", "Oi!\n\n[em 16 de março de 2024 10:00] lembra?", SENT[0]), ("kim_k", "Sim", SENT[1])]
        assert skips.total == 0

    # a weekday after the date: ja's, zh's and ko's full dates ("y年M月d日EEEE", "y년 M월 d일 EEEE"), tr's ("d MMMM y
    # EEEE") and hu's ("y. MMMM d., EEEE"), as a user's own date format writes them
    @pytest.mark.parametrize(("dates", "pattern", "language"), [
        (("2024年3月14日木曜日 18:02", "2024年3月15日金曜日 9:03"), "yyyy年M月d日ddd H:mm", "Japanese"),
        (("2024年3月14日木 18:02", "2024年3月15日金 9:03"), "yyyy年M月d日ddd H:mm", "Japanese"),
        (("2024年3月14日星期四 18:02", "2024年3月15日星期五 09:03"), "yyyy年M月d日ddd H:mm", "Chinese"),
        (("2024年3月14日 週四 下午6:02", "2024年3月15日 週五 上午9:03"), "yyyy年M月d日 ddd tt h:mm", "Chinese"),
        (("2024년 3월 14일 목요일 오후 6:02", "2024년 3월 15일 금요일 오전 9:03"), "yyyy년 M월 d일 ddd tt h:mm", "Korean"),
        (("14 Mart 2024 Perşembe 18:02", "15 Mart 2024 Cuma 09:03"), "d MMM yyyy ddd H:mm", "Turkish"),
        (("2024. március 14., csütörtök 18:02", "2024. március 15., péntek 9:03"), "yyyy. MMM d., ddd H:mm",
         "Hungarian"),
    ])
    def test_a_weekday_after_the_date(self, tmp_path, dates, pattern, language):
        path = tmp_path / "kim.txt"
        path.write_text(_plain_text((dates[0], "sam.lee", "Hey"), (dates[1], "kim_k#0420", "Yes!")),
                        encoding="utf-8")
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        assert [(m.author, m.timestamp, m.text) for m in chat.messages] == [
            ("sam.lee", SENT[0], "Hey"), ("kim_k", SENT[1], "Yes!")]
        assert skips.total == 0 and chat.stats["date_pattern"] == pattern
        assert chat.stats["date_languages"] == [language]

    @pytest.mark.parametrize(("dates", "wrong"), [
        (["2026年11月27日金曜日 18:02", "2026年11月28日金曜日 9:03", "2026年11月28日土曜日 9:04"],
         "line 3: '2026年11月28日金曜日 9:03' is a Saturday in the file's pattern (yyyy年M月d日ddd H:mm), not a 金曜日"),
        (["27 Kasım 2026 Cuma 18:02", "28 Kasım 2026 Cuma 09:03", "28 Kasım 2026 Cumartesi 09:04"],
         "line 3: '28 Kasım 2026 Cuma 09:03' is a Saturday in the file's pattern (d MMM yyyy ddd H:mm), not a Cuma"),
    ])
    def test_a_weekday_after_the_date_that_is_not_the_dates_is_counted(self, tmp_path, dates, wrong):
        # 2026-11-28 is a Saturday: the date or its weekday is wrong, and which cannot be told
        path = _csv_of_dates(tmp_path, dates)
        skips = SkipCounter()
        [chat] = read_discord_export(path, skips)
        assert [(m.text, m.timestamp) for m in chat.messages] == [
            ("message 0", datetime(2026, 11, 27, 18, 2)), ("message 2", datetime(2026, 11, 28, 9, 4))]
        assert chat.stats["skipped"] == {"discord_bad_timestamp": 1} and skips.total == 1
        assert _bad_timestamp_details(path) == [wrong]

    def test_a_weekday_of_two_days_in_two_languages_is_read_in_the_files_language(self, tmp_path):
        # "tor." is Tuesday in Slovenian, Thursday in Danish and Norwegian; "sre." (Wednesday) is Slovenian alone,
        # so the file is Slovenian and its "tor." on a Thursday is a wrong weekday
        path = _csv_of_dates(tmp_path, ["tor., 12. mar. 2024 18:02", "sre., 13. mar. 2024 09:03",
                                        "tor., 14. mar. 2024 10:00"])
        [chat] = read_discord_export(path)
        assert [m.timestamp for m in chat.messages] == [datetime(2024, 3, 12, 18, 2), datetime(2024, 3, 13, 9, 3)]
        assert chat.stats["date_languages"] == ["Slovenian"]
        assert _bad_timestamp_details(path) == [
            "line 4: 'tor., 14. mar. 2024 10:00' is a Thursday in the file's pattern (ddd, d. MMM yyyy H:mm), not a "
            "tor."]
        # alone, "tor." reads in Slovenian on a Tuesday and in Danish on a Thursday: the date's weekday tells which
        alone = _csv_of_dates(tmp_path, ["tor., 12. mar. 2024 18:02", "tor., 14. mar. 2024 10:00"], "alone.csv")
        [chat] = read_discord_export(alone)
        assert [m.timestamp for m in chat.messages] == [datetime(2024, 3, 12, 18, 2), datetime(2024, 3, 14, 10, 0)]
        assert chat.stats["date_languages"] == ["Danish", "Norwegian", "Slovenian"]


# exports of machines in the newly read languages, as DiscordChatExporter lays them out: a Lithuanian PlainText
# export (a user's own full date, lt's "y 'm'. MMMM d 'd'., EEEE") and a Hebrew CSV (he's medium date, 12 hours)
LITHUANIAN_PLAIN_TEXT = """==============================================================
Guild: Žygeiviai
Channel: Kelionės / bendras
==============================================================

[2024 m. lapkričio 14 d., ketvirtadienis 18:02] rūta#0420
Ar šeštadienį eisime?

[2024 m. lapkričio 14 d., ketvirtadienis 18:03] jonas
Taip!

[2024 m. gruodžio 1 d., sekmadienis 09:05] rūta#0420
{Attachments}
https://cdn.discordapp.com/attachments/5001/71/zemelapis.png

==============================================================
Exported 3 message(s)
==============================================================
"""

HEBREW_CSV = (
    "AuthorID,Author,Date,Content,Attachments,Reactions\n"
    '"111","noa","14 בנוב׳ 2024 6:02 אחה״צ","מתי יוצאים?","",""\n'
    '"222","dan","14 בנוב׳ 2024 6:03 אחה״צ","בשבת בבוקר","","👍 (1)"\n'
    '"111","noa","2 בדצמ׳ 2024 9:05 לפנה״צ","","https://cdn.discordapp.com/attachments/5001/72/map.png",""\n'
)


def test_exports_from_lithuanian_and_hebrew_machines(tmp_path):
    text = tmp_path / "Žygeiviai - Kelionės - bendras [5001].txt"
    text.write_text(LITHUANIAN_PLAIN_TEXT, encoding="utf-8")
    skips = SkipCounter()
    [lt] = read_discord_export(text, skips)
    assert [(m.author, m.timestamp, m.kind, m.text) for m in lt.messages] == [
        ("rūta", datetime(2024, 11, 14, 18, 2), "text", "Ar šeštadienį eisime?"),
        ("jonas", datetime(2024, 11, 14, 18, 3), "text", "Taip!"),
        ("rūta", datetime(2024, 12, 1, 9, 5), "media", "image omitted")]
    assert lt.stats["date_pattern"] == "yyyy 'm'. MMM d 'd'., ddd H:mm" and lt.stats["date_languages"] == [
        "Lithuanian"]
    assert skips.total == 0 and lt.stats["chat_name"] == "bendras in Žygeiviai"
    csv_path = tmp_path / "Direct Messages - Private - dan [5002].csv"
    csv_path.write_text(HEBREW_CSV, encoding="utf-8")
    skips = SkipCounter()
    [he] = read_discord_export(csv_path, skips)
    assert [(m.author, m.timestamp, m.kind) for m in he.messages] == [
        ("noa", datetime(2024, 11, 14, 18, 2), "text"), ("dan", datetime(2024, 11, 14, 18, 3), "text"),
        ("noa", datetime(2024, 12, 2, 9, 5), "media")]
    assert he.messages[1].text == "בשבת בבוקר" and skips.total == 0
    assert he.stats["date_pattern"] == "d בMMM yyyy h:mm tt" and he.stats["date_languages"] == ["Hebrew"]
