"""WhatsApp's own databases → chats: Android msgstore.db (current and legacy schemas) and iOS ChatStorage.sqlite,
built here with the real table and column names and invented messages."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from storage.schemas import MESSAGE_SCHEMA
from tasks.records import InputFileError, SkipCounter
from tasks.whatsapp import chat_to_documents
from tasks.whatsapp.database import APPLE_EPOCH, looks_like_whatsapp_database, read_whatsapp_database


def _ms(*args) -> int:
    return int(datetime(*args, tzinfo=timezone.utc).timestamp() * 1000)


def _android_db(path):
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE jid (_id INTEGER PRIMARY KEY, user TEXT, server TEXT, agent INTEGER, device INTEGER,
                          type INTEGER, raw_string TEXT);
        CREATE TABLE chat (_id INTEGER PRIMARY KEY, jid_row_id INTEGER UNIQUE, hidden INTEGER, subject TEXT,
                           created_timestamp INTEGER, sort_timestamp INTEGER);
        CREATE TABLE message (_id INTEGER PRIMARY KEY, chat_row_id INTEGER, from_me INTEGER, key_id TEXT,
                              sender_jid_row_id INTEGER, status INTEGER, broadcast INTEGER,
                              recipient_count INTEGER, participant_hash TEXT, origination_flags INTEGER,
                              origin INTEGER, timestamp INTEGER, received_timestamp INTEGER,
                              receipt_server_timestamp INTEGER, message_type INTEGER, text_data TEXT,
                              starred INTEGER, lookup_tables INTEGER, sort_id INTEGER);
        CREATE TABLE message_quoted (message_row_id INTEGER PRIMARY KEY, chat_row_id INTEGER,
                                     parent_message_chat_row_id INTEGER, from_me INTEGER,
                                     sender_jid_row_id INTEGER, key_id TEXT, timestamp INTEGER,
                                     message_type INTEGER, origin INTEGER, text_data TEXT);
        CREATE TABLE message_system (message_row_id INTEGER PRIMARY KEY, action_type INTEGER);
        CREATE TABLE message_poll_option (_id INTEGER PRIMARY KEY, message_row_id INTEGER, option_sha256 TEXT,
                                          option_name TEXT, vote_total INTEGER);
        INSERT INTO jid VALUES (1, '447700900123', 's.whatsapp.net', 0, 0, 0, '447700900123@s.whatsapp.net');
        INSERT INTO jid VALUES (2, '120363000000000001', 'g.us', 0, 0, 1, '120363000000000001@g.us');
        INSERT INTO jid VALUES (3, '33600000001', 's.whatsapp.net', 0, 0, 0, '33600000001@s.whatsapp.net');
        INSERT INTO jid VALUES (4, 'status', 'broadcast', 0, 0, 5, 'status@broadcast');
        INSERT INTO chat VALUES (1, 1, 0, NULL, 0, 0);
        INSERT INTO chat VALUES (2, 2, 0, 'Hike crew', 0, 0);
        INSERT INTO chat VALUES (3, 4, 0, NULL, 0, 0);
        """
    )
    rows = [
        # _id, chat, from_me, key_id, sender, flags, timestamp, type, text
        (1, 1, 0, "AA01", 0, 0, _ms(2024, 3, 14, 18, 2, 5), 0, "Hey, are you free on Saturday?"),
        (2, 1, 1, "AA02", 0, 0, _ms(2024, 3, 14, 18, 3, 10), 0, "Yes! Where do we meet?"),
        (3, 1, 0, "AA03", 0, 0, _ms(2024, 3, 14, 18, 4), 1, "the trail map"),
        (4, 1, 0, "AA04", 0, 1, _ms(2024, 3, 14, 18, 5), 0, "Trail closed north of the lake."),
        (5, 1, 1, "AA05", 0, 0, _ms(2024, 3, 14, 18, 6), 15, None),
        (6, 1, 0, "AA06", 0, 0, _ms(2024, 3, 14, 18, 7), 20, None),
        (7, 2, 1, "BB01", 0, 0, _ms(2024, 4, 1, 9, 0), 7, None),
        (8, 2, 0, "BB02", 3, 0, _ms(2024, 4, 1, 9, 1), 0, "Count me in"),
        (9, 2, 0, "BB03", 3, 0, _ms(2024, 4, 1, 9, 2), 99, "Which Saturday?"),
        (10, 2, 1, "BB04", 0, 0, _ms(2024, 4, 1, 9, 3), 0, "the 6th for me"),
        (11, 3, 0, "CC01", 1, 0, _ms(2024, 4, 2, 9, 0), 0, "my status"),
        (12, 9, 0, "DD01", 1, 0, _ms(2024, 4, 2, 9, 0), 0, "a chat that is gone"),
        (13, 1, 0, "AA07", 0, 0, _ms(2024, 3, 14, 18, 8), 0, ""),
    ]
    db.executemany(
        "INSERT INTO message (_id, chat_row_id, from_me, key_id, sender_jid_row_id, origination_flags, timestamp, "
        "message_type, text_data, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
        rows,
    )
    db.execute("INSERT INTO message_quoted (message_row_id, chat_row_id, key_id, text_data) VALUES (2, 1, 'AA01', 'Hey')")
    db.execute("INSERT INTO message_quoted (message_row_id, chat_row_id, key_id, text_data) VALUES (10, 2, 'BB03', '')")
    db.execute("INSERT INTO message_quoted (message_row_id, chat_row_id, key_id, text_data) VALUES (8, 2, 'ZZ99', '')")
    db.execute("INSERT INTO message_system VALUES (7, 11)")
    db.executemany(
        "INSERT INTO message_poll_option (message_row_id, option_name, vote_total) VALUES (9, ?, ?)",
        [("the 6th", 2), ("the 13th", 1)],
    )
    db.commit()
    db.close()
    return path


def _legacy_db(path):
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE messages (_id INTEGER PRIMARY KEY AUTOINCREMENT, key_remote_jid TEXT NOT NULL,
            key_from_me INTEGER, key_id TEXT NOT NULL, status INTEGER, needs_push INTEGER, data TEXT,
            timestamp INTEGER, media_url TEXT, media_mime_type TEXT, media_wa_type TEXT, media_size INTEGER,
            media_name TEXT, media_caption TEXT, latitude REAL, longitude REAL, remote_resource TEXT,
            received_timestamp INTEGER, quoted_row_id INTEGER);
        CREATE TABLE messages_quotes (_id INTEGER PRIMARY KEY AUTOINCREMENT, key_remote_jid TEXT,
            key_from_me INTEGER, key_id TEXT, data TEXT, timestamp INTEGER);
        CREATE TABLE chat_list (_id INTEGER PRIMARY KEY AUTOINCREMENT, key_remote_jid TEXT UNIQUE, subject TEXT);
        INSERT INTO chat_list (key_remote_jid, subject) VALUES ('120363000000000002@g.us', 'Book club');
        """
    )
    rows = [
        ("-1", 0, "-1", 0, None, 0, "0", None, None, None),
        ("447700900123@s.whatsapp.net", 0, "L1", 0, "Did you finish it?", _ms(2019, 5, 1, 20, 0), "0", None, None, 0),
        ("447700900123@s.whatsapp.net", 1, "L2", 5, "Not yet!", _ms(2019, 5, 1, 20, 1), "0", None, None, 1),
        ("120363000000000002@g.us", 0, "L3", 6, None, _ms(2019, 5, 2, 8, 0), "0", None, "33600000001@s.whatsapp.net", 0),
        ("120363000000000002@g.us", 0, "L4", 0, None, _ms(2019, 5, 2, 8, 1), "1", "chapter 3 notes",
         "33600000001@s.whatsapp.net", 0),
        ("120363000000000002@g.us", 1, "L5", 5, "Thanks!", _ms(2019, 5, 2, 8, 2), "0", None, None, 0),
    ]
    db.executemany(
        "INSERT INTO messages (key_remote_jid, key_from_me, key_id, status, data, timestamp, media_wa_type, "
        "media_caption, remote_resource, quoted_row_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.execute("INSERT INTO messages_quotes (_id, key_remote_jid, key_id, data) VALUES (1, '447700900123@s.whatsapp.net', 'L1', 'Did you finish it?')")
    db.commit()
    db.close()
    return path


def _ios_db(path):
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE ZWACHATSESSION (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZSESSIONTYPE INTEGER,
            ZLASTMESSAGEDATE TIMESTAMP, ZCONTACTJID VARCHAR, ZPARTNERNAME VARCHAR, ZGROUPINFO INTEGER);
        CREATE TABLE ZWAGROUPMEMBER (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZISADMIN INTEGER,
            ZCHATSESSION INTEGER, ZCONTACTNAME VARCHAR, ZFIRSTNAME VARCHAR, ZMEMBERJID VARCHAR);
        CREATE TABLE ZWAPROFILEPUSHNAME (Z_PK INTEGER PRIMARY KEY, ZJID VARCHAR, ZPUSHNAME VARCHAR);
        CREATE TABLE ZWAMESSAGE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHATSESSION INTEGER,
            ZGROUPEVENTTYPE INTEGER, ZGROUPMEMBER INTEGER, ZISFROMME INTEGER, ZMESSAGESTATUS INTEGER,
            ZMESSAGETYPE INTEGER, ZSORT INTEGER, ZMEDIAITEM INTEGER, ZFLAGS INTEGER, ZMESSAGEDATE TIMESTAMP,
            ZSENTDATE TIMESTAMP, ZFROMJID VARCHAR, ZSTANZAID VARCHAR, ZTEXT VARCHAR, ZTOJID VARCHAR,
            ZPUSHNAME VARCHAR);
        CREATE TABLE ZWAMEDIAITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZMESSAGE INTEGER,
            ZMEDIALOCALPATH VARCHAR, ZTITLE VARCHAR, ZMETADATA BLOB);
        INSERT INTO ZWACHATSESSION VALUES (1, 5, 1, 0, 0, '447700900123@s.whatsapp.net', 'Sam Lee', NULL);
        INSERT INTO ZWACHATSESSION VALUES (2, 5, 1, 1, 0, '120363000000000001@g.us', 'Hike crew', 1);
        INSERT INTO ZWAGROUPMEMBER VALUES (1, 3, 1, 0, 2, '', 'Kim', '33600000001@s.whatsapp.net');
        INSERT INTO ZWAGROUPMEMBER VALUES (2, 3, 1, 0, 2, '', NULL, '33600000002@s.whatsapp.net');
        INSERT INTO ZWAPROFILEPUSHNAME VALUES (1, '33600000002@s.whatsapp.net', 'Alex ⛰');
        """
    )

    def apple(*args):
        return datetime(*args, tzinfo=timezone.utc).timestamp() - APPLE_EPOCH

    rows = [
        # pk, chat, event, member, from_me, type, sort, flags, date, fromjid, stanza, text
        (1, 1, None, None, 0, 0, 1, 0, apple(2024, 3, 14, 18, 2, 5) + 0.5, "447700900123@s.whatsapp.net", "3A01", "Hey, are you free on Saturday?"),
        (2, 1, None, None, 1, 0, 2, 0, apple(2024, 3, 14, 18, 3, 10), None, "3A02", "Yes! Where do we meet?"),
        (3, 1, None, None, 0, 1, 3, 0, apple(2024, 3, 14, 18, 4), "447700900123@s.whatsapp.net", "3A03", None),
        (4, 1, None, None, 0, 7, 4, 128, apple(2024, 3, 14, 18, 5), "447700900123@s.whatsapp.net", "3A04", "see https://example.org"),
        (5, 1, None, None, 0, 14, 5, 0, apple(2024, 3, 14, 18, 6), "447700900123@s.whatsapp.net", "3A05", None),
        (6, 2, 12, 1, 0, 6, 1, 0, apple(2024, 4, 1, 9, 0), "120363000000000001@g.us", "3B01", None),
        (7, 2, None, 1, 0, 0, 2, 0, apple(2024, 4, 1, 9, 1), "120363000000000001@g.us", "3B02", "Count me in"),
        (8, 2, None, 2, 0, 15, 3, 0, apple(2024, 4, 1, 9, 2), "120363000000000001@g.us", "3B03", None),
        (9, 2, None, None, 1, 0, 4, 0, apple(2024, 4, 1, 9, 3), None, "3B04", "great"),
        (10, 2, None, 2, 0, 0, 5, 0, None, "120363000000000001@g.us", "3B05", "no date"),
    ]
    db.executemany(
        "INSERT INTO ZWAMESSAGE (Z_PK, ZCHATSESSION, ZGROUPEVENTTYPE, ZGROUPMEMBER, ZISFROMME, ZMESSAGETYPE, "
        "ZSORT, ZFLAGS, ZMESSAGEDATE, ZFROMJID, ZSTANZAID, ZTEXT) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    quoted = b"\x2a" + bytes([4]) + b"3A01" + b"\x32\x0f447700900123@s"  # field 5: the quoted stanza id
    db.execute("INSERT INTO ZWAMEDIAITEM (ZMESSAGE, ZMETADATA) VALUES (2, ?)", (quoted,))
    db.execute("INSERT INTO ZWAMEDIAITEM (ZMESSAGE, ZTITLE, ZMEDIALOCALPATH) VALUES (3, 'the trail map', 'Media/x.jpg')")
    db.commit()
    db.close()
    return path


def _rows(chat):
    return [(m.author, m.kind, m.text) for m in chat.messages]


def test_android_database_one_chat_per_chat_row(tmp_path):
    path = _android_db(tmp_path / "msgstore.db")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    skips = SkipCounter()
    sam, group = read_whatsapp_database(path, skips, me="Priya")
    assert _rows(sam) == [
        ("447700900123", "text", "Hey, are you free on Saturday?"),
        ("Priya", "text", "Yes! Where do we meet?"),
        ("447700900123", "media", "image omitted\nthe trail map"),
        ("447700900123", "text", "Trail closed north of the lake."),
        ("Priya", "deleted", "You deleted this message"),
        ("447700900123", "media", "sticker omitted"),
    ]
    assert sam.messages[0].timestamp == datetime(2024, 3, 14, 18, 2, 5)  # UTC by default
    assert [m.reply_to for m in sam.messages][:2] == [None, "0"]
    assert sam.stats["forwarded"] == 1 and sam.stats["forwarded_indexes"] == [3]
    assert sam.stats["source"] == "whatsapp-db-android" and sam.stats["skipped"] == {"whatsapp_db_empty_message": 1}
    assert _rows(group) == [
        (None, "system", "Priya created the group"),
        ("33600000001", "text", "Count me in"),
        ("33600000001", "poll", "POLL:\nWhich Saturday?\nOPTION: the 6th (2 votes)\nOPTION: the 13th (1 vote)"),
        ("Priya", "text", "the 6th for me"),
    ]
    assert [m.reply_to for m in group.messages] == [None, "#ZZ99", None, "2"]
    assert group.stats["chat_name"] == "Hike crew" and group.stats["group"]
    assert sam.chat_id != group.chat_id
    assert skips.counts["whatsapp_db_status_update"] == 1 and skips.counts["whatsapp_db_message_without_chat"] == 1
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # read-only
    assert not (tmp_path / "msgstore.db-journal").exists() and not (tmp_path / "msgstore.db-wal").exists()


def test_android_time_zone_and_contact_names(tmp_path):
    path = _android_db(tmp_path / "msgstore.db")
    wa = sqlite3.connect(tmp_path / "wa.db")
    wa.execute("CREATE TABLE wa_contacts (_id INTEGER PRIMARY KEY, jid TEXT, display_name TEXT, wa_name TEXT)")
    wa.execute("INSERT INTO wa_contacts (jid, display_name, wa_name) VALUES ('447700900123@s.whatsapp.net', 'Sam Lee', 'Sam')")
    wa.execute("INSERT INTO wa_contacts (jid, display_name, wa_name) VALUES ('33600000001@s.whatsapp.net', '', 'Kim')")
    wa.commit()
    wa.close()
    sam, group = read_whatsapp_database(path, tz="Europe/London", contacts_db=tmp_path / "wa.db")
    assert sam.messages[0].author == "Sam Lee" and sam.messages[1].author == "me"
    assert group.messages[1].author == "Kim"
    assert sam.messages[0].timestamp == datetime(2024, 3, 14, 18, 2, 5)  # GMT in March
    assert group.messages[1].timestamp == datetime(2024, 4, 1, 10, 1)  # BST in April


def test_legacy_android_messages_table(tmp_path):
    sam, club = read_whatsapp_database(_legacy_db(tmp_path / "msgstore.db"))
    assert _rows(sam) == [("447700900123", "text", "Did you finish it?"), ("me", "text", "Not yet!")]
    assert sam.messages[1].reply_to == "0" and sam.stats["source"] == "whatsapp-db-android-legacy"
    assert club.stats["chat_name"] == "Book club"
    assert [m.kind for m in club.messages] == ["system", "media", "text"]
    assert club.messages[1].author == "33600000001" and club.messages[1].text == "image omitted\nchapter 3 notes"
    assert club.messages[0].timestamp == datetime(2019, 5, 2, 8, 0)


def test_ios_chat_storage(tmp_path):
    skips = SkipCounter()
    sam, group = read_whatsapp_database(_ios_db(tmp_path / "ChatStorage.sqlite"), skips, me="Priya")
    assert _rows(sam) == [
        ("Sam Lee", "text", "Hey, are you free on Saturday?"),
        ("Priya", "text", "Yes! Where do we meet?"),
        ("Sam Lee", "media", "image omitted\nthe trail map"),
        ("Sam Lee", "text", "see https://example.org"),
        ("Sam Lee", "deleted", "This message was deleted"),
    ]
    assert sam.messages[0].timestamp == datetime(2024, 3, 14, 18, 2, 5, 500000)
    assert sam.messages[1].reply_to == "0"
    assert sam.stats["forwarded_indexes"] == [3] and sam.stats["source"] == "whatsapp-db-ios"
    assert _rows(group) == [
        (None, "system", "Kim created the group"),
        ("Kim", "text", "Count me in"),  # ZCONTACTNAME empty: ZFIRSTNAME
        ("Alex ⛰", "media", "sticker omitted"),  # neither: the push name
        ("Priya", "text", "great"),
    ]
    assert skips.counts["whatsapp_db_bad_timestamp"] == 1


@pytest.mark.parametrize("build", [_android_db, _legacy_db, _ios_db])
def test_documents_from_database_chats(tmp_path, build):
    chats = read_whatsapp_database(build(tmp_path / "db.sqlite"))
    for chat in chats:
        pa.Table.from_pylist(chat.as_rows(), schema=MESSAGE_SCHEMA)
        docs = chat_to_documents(chat)
        typed = {m.author for m in chat.messages if m.kind == "text"}
        assert {a for d in docs for a in json.loads(d.meta)["authors"]} >= typed
        assert all(d.text for d in docs)


def test_encrypted_backup_and_other_files_are_one_line_errors(tmp_path):
    crypt = tmp_path / "msgstore.db.crypt15"
    crypt.write_bytes(os.urandom(4096))
    text = tmp_path / "msgstore.db"
    text.write_text("31/12/2023, 21:05 - Sam: hi\n")
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.commit()
    db.close()
    cases = {crypt: "encrypted WhatsApp backup (.crypt15)", text: "not an SQLite database",
             other: "without WhatsApp's message tables"}
    for path, message in cases.items():
        with pytest.raises(InputFileError) as err:
            read_whatsapp_database(path)
        assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)
    assert looks_like_whatsapp_database(crypt) and looks_like_whatsapp_database(other)
    assert not looks_like_whatsapp_database(text)
    with pytest.raises(InputFileError, match="no such file"):
        read_whatsapp_database(tmp_path / "missing.db")


def _files(folder):
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.iterdir()}


def test_wal_database_is_read_without_writing_beside_it(tmp_path):
    phone, copy, clean = tmp_path / "phone", tmp_path / "copy", tmp_path / "clean"
    for folder in (phone, copy, clean):
        folder.mkdir()
    writer = sqlite3.connect(_android_db(phone / "msgstore.db"))
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO message (_id, chat_row_id, from_me, key_id, sender_jid_row_id, timestamp, message_type, "
                   f"text_data) VALUES (20, 1, 0, 'AA20', 0, {_ms(2024, 3, 15, 9, 0)}, 0, 'only in the wal')")
    writer.commit()
    for name in ("msgstore.db", "msgstore.db-wal", "msgstore.db-shm"):  # copied while WhatsApp had it open
        (copy / name).write_bytes((phone / name).read_bytes())
    writer.close()  # checkpoints: a WAL-mode file alone
    (clean / "msgstore.db").write_bytes((phone / "msgstore.db").read_bytes())
    for folder in (copy, clean):
        before = _files(folder)
        sam = read_whatsapp_database(folder / "msgstore.db")[0]
        assert sam.messages[-1].text == "only in the wal"
        assert _files(folder) == before  # nothing created, nothing written (mode=ro alone writes -shm/-wal)


def test_truncated_database_is_a_one_line_error(tmp_path):
    data = _android_db(tmp_path / "full.db").read_bytes()
    for size in (60, 4096, len(data) - 100):
        cut = tmp_path / f"cut{size}.db"
        cut.write_bytes(data[:size])  # SQLite alone reads missing pages as empty: messages lost silently
        with pytest.raises(InputFileError, match="truncated SQLite file") as err:
            read_whatsapp_database(cut)
        assert str(cut) in str(err.value) and "\n" not in str(err.value)


def test_timestamps_no_calendar_holds_are_skipped_not_a_crash(tmp_path):
    android = _android_db(tmp_path / "msgstore.db")
    db = sqlite3.connect(android)
    db.execute("UPDATE message SET timestamp = timestamp * 1000 WHERE _id = 1")  # microseconds: year 56171
    db.execute("UPDATE message SET timestamp = 'soon' WHERE _id = 2")
    db.commit()
    db.close()
    ios = _ios_db(tmp_path / "ChatStorage.sqlite")
    db = sqlite3.connect(ios)
    db.execute("UPDATE ZWAMESSAGE SET ZMESSAGEDATE = 1e15 WHERE Z_PK = 1")
    db.commit()
    db.close()
    skips = SkipCounter()
    sam = read_whatsapp_database(android, skips)[0]
    assert sam.messages[0].text == "image omitted\nthe trail map" and skips.counts["whatsapp_db_bad_timestamp"] == 2
    skips = SkipCounter()
    sam = read_whatsapp_database(ios, skips)[0]
    assert sam.messages[0].text == "Yes! Where do we meet?" and skips.counts["whatsapp_db_bad_timestamp"] == 2


def test_ios_without_optional_columns(tmp_path):
    path = _ios_db(tmp_path / "ChatStorage.sqlite")
    db = sqlite3.connect(path)
    for table, column in [("ZWAPROFILEPUSHNAME", "ZPUSHNAME"), ("ZWAMESSAGE", "ZSTANZAID"), ("ZWAMESSAGE", "ZFLAGS"),
                          ("ZWAMEDIAITEM", "ZMETADATA"), ("ZWACHATSESSION", "ZPARTNERNAME")]:
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.commit()
    db.close()
    sam, group = read_whatsapp_database(path)
    assert [m.text for m in sam.messages][:3] == ["Hey, are you free on Saturday?", "Yes! Where do we meet?",
                                                 "image omitted\nthe trail map"]
    assert sam.messages[0].author == "447700900123" and sam.stats["chat_name"] == "447700900123"
    assert _rows(group)[2] == ("33600000002", "media", "sticker omitted")  # no push name: the number


def test_ios_calls_notices_and_newer_types(tmp_path):
    path = _ios_db(tmp_path / "ChatStorage.sqlite")
    db = sqlite3.connect(path)
    rows = [  # pk, type, event: calls use type 10's own event numbers, not the group events of type 6
        (30, 10, 1), (31, 10, 3), (32, 10, 2), (33, 59, None), (34, 38, None), (35, 46, None), (36, 66, None),
        (37, 28, None),
    ]
    for pk, type_code, event in rows:
        db.execute("INSERT INTO ZWAMESSAGE (Z_PK, ZCHATSESSION, ZGROUPEVENTTYPE, ZISFROMME, ZMESSAGETYPE, ZSORT, "
                   "ZMESSAGEDATE, ZFROMJID, ZSTANZAID, ZTEXT) VALUES (?, 1, ?, 0, ?, ?, ?, "
                   "'447700900123@s.whatsapp.net', ?, ?)",
                   (pk, event, type_code, pk, 740000000 + pk, f"3C{pk}", "Where?" if type_code == 46 else None))
    db.commit()
    db.close()
    skips = SkipCounter()
    sam = read_whatsapp_database(path, skips)[0]
    assert _rows(sam)[5:] == [
        (None, "system", "Sam Lee called (missed voice call)"),
        (None, "system", "Sam Lee security code changed"),
        (None, "system", "Messages and calls are end-to-end encrypted."),
        (None, "system", "system event"),  # a call: not "<Media omitted>" by Sam
        ("Sam Lee", "media", "image omitted"),  # view once
        ("Sam Lee", "poll", "POLL:\nWhere?"),
        (None, "system", "system event"),
    ]
    assert skips.counts["whatsapp_db_not_a_message"] == 1 and sam.stats["unknown_types"] == {}  # 66: an album


def test_ios_two_media_rows_for_one_message_give_one_message(tmp_path):
    path = _ios_db(tmp_path / "ChatStorage.sqlite")
    db = sqlite3.connect(path)
    db.execute("INSERT INTO ZWAMEDIAITEM (ZMESSAGE, ZTITLE) VALUES (3, 'the trail map')")
    db.commit()
    db.close()
    skips = SkipCounter()
    sam = read_whatsapp_database(path, skips)[0]
    assert [m.text for m in sam.messages].count("image omitted\nthe trail map") == 1
    assert skips.counts["whatsapp_db_duplicate_row"] == 1


def test_android_lid_chat_edits_and_newer_types(tmp_path):
    path = _android_db(tmp_path / "msgstore.db")
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE jid_map (lid_row_id INTEGER PRIMARY KEY NOT NULL, jid_row_id INTEGER NOT NULL, sort_id INTEGER);
        CREATE TABLE message_edit_info (message_row_id INTEGER PRIMARY KEY, original_key_id TEXT NOT NULL,
                                        edited_timestamp INTEGER NOT NULL, sender_timestamp INTEGER NOT NULL);
        CREATE TABLE message_add_on (_id INTEGER PRIMARY KEY AUTOINCREMENT, chat_row_id INTEGER, from_me INTEGER,
            key_id TEXT NOT NULL, sender_jid_row_id INTEGER, parent_message_row_id INTEGER, timestamp INTEGER,
            status INTEGER, message_add_on_type INTEGER);
        CREATE TABLE message_add_on_reaction (message_add_on_row_id INTEGER PRIMARY KEY, reaction TEXT,
                                              sender_timestamp INTEGER);
        CREATE TABLE some_future_table (_id INTEGER PRIMARY KEY, blob BLOB);
        INSERT INTO jid VALUES (10, '99887766554433', 'lid', 0, 0, 0, '99887766554433@lid');
        INSERT INTO jid VALUES (11, '491701234567', 's.whatsapp.net', 0, 0, 0, '491701234567@s.whatsapp.net');
        INSERT INTO jid VALUES (12, '33600000001', 's.whatsapp.net', 0, 5, 0, '33600000001:5@s.whatsapp.net');
        INSERT INTO jid_map VALUES (10, 11, 0);
        INSERT INTO chat VALUES (5, 10, 0, NULL, 0, 0);
        INSERT INTO message_edit_info VALUES (31, 'E2', 0, 0);
        INSERT INTO message_quoted (message_row_id, chat_row_id, key_id) VALUES (32, 5, 'E2');
        INSERT INTO message_add_on VALUES (1, 5, 0, 'R1', 10, 31, 0, 0, 56);
        INSERT INTO message_add_on_reaction VALUES (1, '👍', 0);
        """
    )
    rows = [  # _id, chat, from_me, key, sender, type, text
        (30, 5, 0, "E1", 0, 0, "hello from a hidden number"), (31, 5, 1, "E2-edit", 0, 0, "the final wording"),
        (32, 5, 0, "E3", 0, 0, "a reply to the edited one"), (33, 5, 0, "E4", 0, 90, None),
        (34, 5, 0, "E5", 0, 42, None), (35, 5, 0, "E6", 0, 36, None), (36, 5, 0, "E7", 0, 116, None),
        (37, 5, 0, "E8", 0, 99, None), (38, 5, 0, "E9", 0, 66, "Lunch?"),
        (39, 2, 0, "BB9", 12, 0, "from my second phone"), (40, 2, 0, "BB10", 0, 0, "sender row gone"),
    ]
    db.executemany(
        "INSERT INTO message (_id, chat_row_id, from_me, key_id, sender_jid_row_id, timestamp, message_type, text_data) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(i, c, f, k, s, _ms(2024, 5, 1, 10, i - 30), t, x) for i, c, f, k, s, t, x in rows],
    )
    db.commit()
    db.close()
    skips = SkipCounter()
    _, group, hidden = read_whatsapp_database(path, skips, me="Priya")
    assert hidden.stats["chat_name"] == "491701234567" and hidden.stats["chat_jid"] == "99887766554433@lid"
    assert _rows(hidden) == [
        ("491701234567", "text", "hello from a hidden number"),
        ("Priya", "edited", "the final wording"),  # once, final text; the reaction is no message
        ("491701234567", "text", "a reply to the edited one"),
        (None, "system", "system event"),  # a call log entry
        ("491701234567", "media", "image omitted"),  # view once
        (None, "system", "system event"),  # disappearing messages timer
        ("491701234567", "poll", "POLL:\nLunch?"),
    ]
    assert hidden.messages[2].reply_to == "1" and hidden.stats["unknown_types"] == {}
    assert skips.counts["whatsapp_db_not_a_message"] == 2  # 116 (never shown) and 99 (an album's container)
    assert _rows(group)[-2:] == [("33600000001", "text", "from my second phone"), ("unknown", "text", "sender row gone")]


def test_damaged_rows_are_skipped_not_the_whole_file(tmp_path):
    path = _android_db(tmp_path / "msgstore.db")
    db = sqlite3.connect(path)
    db.execute("UPDATE message SET text_data = CAST(x'fffe41' AS TEXT) WHERE _id = 4")  # not UTF-8
    db.execute("DELETE FROM jid WHERE _id = 1")  # the chat's jid row is gone, its messages are not
    db.commit()
    db.close()
    skips = SkipCounter()
    sam, _ = read_whatsapp_database(path, skips)
    assert len(sam.messages) == 5 and skips.counts["whatsapp_db_binary_text"] == 1
    assert sam.messages[0].author == "unknown" and sam.stats["chat_jid"] is None


def test_legacy_revoked_message_and_other_apps_messages_table(tmp_path):
    path = _legacy_db(tmp_path / "msgstore.db")
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE messages ADD COLUMN edit_version INTEGER")
    db.execute("INSERT INTO messages (key_remote_jid, key_from_me, key_id, status, data, timestamp, media_wa_type, "
               f"edit_version) VALUES ('447700900123@s.whatsapp.net', 0, 'L9', 0, NULL, {_ms(2019, 5, 1, 20, 5)}, '0', 7)")
    db.commit()
    db.close()
    sam = read_whatsapp_database(path)[0]
    assert _rows(sam)[-1] == ("447700900123", "deleted", "This message was deleted")
    other = tmp_path / "notes.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)")
    db.commit()
    db.close()
    with pytest.raises(InputFileError, match="without WhatsApp's message tables"):
        read_whatsapp_database(other)


def test_android_lid_people_without_a_phone_number_go_by_their_display_name(tmp_path):
    path = _android_db(tmp_path / "msgstore.db")
    db = sqlite3.connect(path)
    db.executescript(  # lid_display_name as WhatsApp creates it; lid_row_id is the @lid jid's row
        """
        CREATE TABLE jid_map (lid_row_id INTEGER PRIMARY KEY NOT NULL, jid_row_id INTEGER NOT NULL, sort_id INTEGER);
        CREATE TABLE lid_display_name (lid_row_id INTEGER PRIMARY KEY NOT NULL, display_name TEXT NOT NULL,
                                       username TEXT);
        INSERT INTO jid VALUES (20, '201122334455667', 'lid', 0, 0, 0, '201122334455667@lid');
        INSERT INTO jid VALUES (21, '201122334455667', 'lid', 0, 3, 0, '201122334455667:3@lid');
        INSERT INTO jid VALUES (22, '201122334455668', 'lid', 0, 0, 0, '201122334455668@lid');
        INSERT INTO jid VALUES (23, '491701234567', 's.whatsapp.net', 0, 0, 0, '491701234567@s.whatsapp.net');
        INSERT INTO jid VALUES (24, '201122334455669', 'lid', 0, 0, 0, '201122334455669@lid');
        INSERT INTO jid VALUES (25, '201122334455670', 'lid', 0, 0, 0, '201122334455670@lid');
        INSERT INTO jid_map VALUES (22, 23, 0);
        INSERT INTO lid_display_name VALUES (20, 'Dana ☀', NULL);
        INSERT INTO lid_display_name VALUES (22, 'Jo', NULL);
        INSERT INTO lid_display_name VALUES (24, '', 'rowan.h');
        INSERT INTO lid_display_name VALUES (25, 'Mika', NULL);
        INSERT INTO chat VALUES (6, 25, 0, NULL, 0, 0);
        """
    )
    rows = [  # _id, chat, from_me, key, sender, text
        (40, 2, 0, "BB20", 20, "I'll bring the map"), (41, 2, 0, "BB21", 21, "from my tablet"),
        (42, 2, 0, "BB22", 22, "count me in too"), (43, 2, 0, "BB23", 24, "maybe"),
        (44, 6, 0, "FF01", 0, "hi, it's Mika from the hike"), (45, 6, 1, "FF02", 0, "hi Mika!"),
    ]
    db.executemany(
        "INSERT INTO message (_id, chat_row_id, from_me, key_id, sender_jid_row_id, timestamp, message_type, text_data) "
        "VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
        [(i, c, f, k, s, _ms(2024, 5, 1, 10, i - 40), x) for i, c, f, k, s, x in rows],
    )
    db.commit()
    db.close()
    _, group, mika = read_whatsapp_database(path, me="Priya")
    assert _rows(group)[-4:] == [
        ("Dana ☀", "text", "I'll bring the map"),
        ("Dana ☀", "text", "from my tablet"),  # a linked device of the same @lid person
        ("491701234567", "text", "count me in too"),  # jid_map knows the phone number: it stays the author
        ("201122334455669", "text", "maybe"),  # a username alone (empty display_name): the number
    ]
    assert mika.stats["chat_name"] == "Mika" and mika.stats["chat_jid"] == "201122334455670@lid"
    assert _rows(mika) == [("Mika", "text", "hi, it's Mika from the hike"), ("Priya", "text", "hi Mika!")]

    db = sqlite3.connect(path)  # a lid_display_name of another shape is left out, not guessed at
    db.execute("ALTER TABLE lid_display_name RENAME COLUMN display_name TO shown_name")
    db.commit()
    db.close()
    _, group, mika = read_whatsapp_database(path)
    assert group.messages[-4].author == "201122334455667" and mika.stats["chat_name"] == "201122334455670"


def test_android_broadcast_list_is_no_chat_and_its_messages_are_read_once(tmp_path):
    path = _android_db(tmp_path / "msgstore.db")
    db = sqlite3.connect(path)
    db.executescript(
        """
        INSERT INTO jid VALUES (30, '1712000000', 'broadcast', 0, 0, 0, '1712000000@broadcast');
        INSERT INTO chat VALUES (7, 30, 0, 'Hike invites', 0, 0);
        INSERT INTO chat VALUES (8, 3, 0, NULL, 0, 0);
        """
    )
    invite = "Hike on Saturday, who's in?"
    rows = [  # _id, chat, from_me, key, text: the list's row and one copy per recipient share the key id
        (50, 7, 1, "BC01", invite), (51, 1, 1, "BC01", invite), (52, 8, 1, "BC01", invite),
        (53, 8, 0, "BC02", "Me!"),
    ]
    db.executemany(
        "INSERT INTO message (_id, chat_row_id, from_me, key_id, sender_jid_row_id, broadcast, timestamp, "
        "message_type, text_data) VALUES (?, ?, ?, ?, 0, 1, ?, 0, ?)",
        [(i, c, f, k, _ms(2024, 3, 14, 19, i - 50), x) for i, c, f, k, x in rows],
    )
    db.commit()
    db.close()
    skips = SkipCounter()
    chats = read_whatsapp_database(path, skips, me="Priya")
    assert [c.stats["chat_jid"] for c in chats] == [
        "447700900123@s.whatsapp.net", "120363000000000001@g.us", "33600000001@s.whatsapp.net",
    ]
    sam, _, kim = chats
    assert _rows(sam)[-1] == ("Priya", "text", invite)
    assert _rows(kim) == [("Priya", "text", invite), ("33600000001", "text", "Me!")]
    assert sum(m.text == invite for c in chats for m in c.messages) == 2  # once per recipient, not three times
    assert skips.counts["whatsapp_db_broadcast_list"] == 1 and skips.counts["whatsapp_db_status_update"] == 1


def test_legacy_broadcast_list_is_no_chat(tmp_path):
    path = _legacy_db(tmp_path / "msgstore.db")
    db = sqlite3.connect(path)
    db.executemany(
        "INSERT INTO messages (key_remote_jid, key_from_me, key_id, status, data, timestamp, media_wa_type) "
        "VALUES (?, 1, 'LB1', 5, 'Meeting moved to Friday', ?, '0')",
        [("1556000000@broadcast", _ms(2019, 5, 3, 9, 0)), ("447700900123@s.whatsapp.net", _ms(2019, 5, 3, 9, 0))],
    )
    db.commit()
    db.close()
    skips = SkipCounter()
    chats = read_whatsapp_database(path, skips)
    assert [c.stats["chat_jid"] for c in chats] == ["447700900123@s.whatsapp.net", "120363000000000002@g.us"]
    assert _rows(chats[0])[-1] == ("me", "text", "Meeting moved to Friday")
    assert skips.counts["whatsapp_db_broadcast_list"] == 1


def _dated(chats):
    return [[(m.author, m.kind, m.text, m.timestamp) for m in chat.messages] for chat in chats]


@pytest.mark.parametrize("build, table, first", [(_android_db, "message", datetime(2024, 3, 14, 18, 2, 5)),
                                                 (_legacy_db, "messages", datetime(2019, 5, 1, 20, 0))])
def test_android_timestamps_written_in_seconds(tmp_path, build, table, first):
    expected = _dated(read_whatsapp_database(build(tmp_path / "ms.db")))
    path = build(tmp_path / "seconds.db")
    db = sqlite3.connect(path)
    db.execute(f"UPDATE {table} SET timestamp = timestamp / 1000")  # what some tools write instead of ms
    db.commit()
    chats = read_whatsapp_database(path)
    assert _dated(chats) == expected and chats[0].messages[0].timestamp == first  # not January 1970
    db.execute(f"UPDATE {table} SET timestamp = timestamp * 1000000 WHERE _id = 2")  # no calendar holds it
    db.execute(f"UPDATE {table} SET timestamp = 'soon' WHERE _id = 3")
    db.commit()
    db.close()
    skips = SkipCounter()
    chats = read_whatsapp_database(path, skips)
    kept, before = [m for c in _dated(chats) for m in c], [m for c in expected for m in c]
    assert skips.counts["whatsapp_db_bad_timestamp"] == 2
    assert len(kept) == len(before) - 2 and all(m in before for m in kept)  # the others still read right


def _wa_db(path, contacts):
    """An Android wa.db: `wa_contacts` with some of the real table's columns, among them the three the reader reads."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE wa_contacts (_id INTEGER PRIMARY KEY AUTOINCREMENT, jid TEXT NOT NULL, "
               "is_whatsapp_user BOOLEAN NOT NULL, status TEXT, number TEXT, display_name TEXT, given_name TEXT, "
               "family_name TEXT, wa_name TEXT)")
    db.executemany("INSERT INTO wa_contacts (jid, is_whatsapp_user, display_name, wa_name) VALUES (?, 1, ?, ?)",
                   contacts)
    db.commit()
    db.close()
    return path


def test_android_one_to_one_chat_is_named_as_its_person_is(tmp_path):
    path = _android_db(tmp_path / "msgstore.db")
    db = sqlite3.connect(path)
    db.executescript(  # an @lid person with both a wa.db name and a name they chose: the wa.db name wins, as for authors
        """
        CREATE TABLE lid_display_name (lid_row_id INTEGER PRIMARY KEY NOT NULL, display_name TEXT NOT NULL,
                                       username TEXT);
        INSERT INTO jid VALUES (25, '201122334455670', 'lid', 0, 0, 0, '201122334455670@lid');
        INSERT INTO lid_display_name VALUES (25, 'Mika', NULL);
        INSERT INTO chat VALUES (6, 25, 0, NULL, 0, 0);
        INSERT INTO chat VALUES (8, 3, 0, NULL, 0, 0);
        """
    )
    db.executemany(
        "INSERT INTO message (_id, chat_row_id, from_me, key_id, sender_jid_row_id, timestamp, message_type, text_data) "
        "VALUES (?, ?, 0, ?, 0, ?, 0, ?)",
        [(60, 6, "FF01", _ms(2024, 5, 1, 10, 0), "hi, it's Mika"), (61, 8, "KK01", _ms(2024, 5, 1, 11, 0), "hi")],
    )
    db.commit()
    db.close()
    wa = _wa_db(tmp_path / "wa.db", [
        ("447700900123@s.whatsapp.net", "Sam Lee", "Sam"),
        ("201122334455670@lid", "", "Mika Rossi"),
        ("120363000000000001@g.us", "An old group name", None),  # the chat's own subject stays its name
    ])
    sam, group, mika, kim = read_whatsapp_database(path, contacts_db=wa)
    assert (sam.stats["chat_name"], sam.messages[0].author) == ("Sam Lee", "Sam Lee")  # not "447700900123"
    assert (mika.stats["chat_name"], mika.messages[0].author) == ("Mika Rossi", "Mika Rossi")  # not "Mika"
    assert group.stats["chat_name"] == "Hike crew"
    assert (kim.stats["chat_name"], kim.messages[0].author) == ("33600000001", "33600000001")  # no name anywhere

    legacy = _legacy_db(tmp_path / "legacy.db")
    sam, club = read_whatsapp_database(legacy, contacts_db=wa)
    assert (sam.stats["chat_name"], sam.messages[0].author) == ("Sam Lee", "Sam Lee")
    assert club.stats["chat_name"] == "Book club"


def _epoch(*args) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize("build, insert, stamp", [
    (_android_db, "INSERT INTO message (_id, chat_row_id, from_me, key_id, sender_jid_row_id, timestamp, "
     "message_type, text_data) VALUES (?, 1, 0, ?, 0, ?, 0, ?)", lambda t: int(t * 1000)),
    (_legacy_db, "INSERT INTO messages (_id, key_remote_jid, key_from_me, key_id, status, timestamp, media_wa_type, "
     "data) VALUES (?, '447700900123@s.whatsapp.net', 0, ?, 0, ?, '0', ?)", lambda t: int(t * 1000)),
    (_ios_db, "INSERT INTO ZWAMESSAGE (Z_PK, ZCHATSESSION, ZISFROMME, ZMESSAGETYPE, ZSORT, ZSTANZAID, ZMESSAGEDATE, "
     "ZTEXT) VALUES (?, 1, 0, 0, 0, ?, ?, ?)", lambda t: t - APPLE_EPOCH),
], ids=["android", "legacy", "ios"])
def test_times_no_whatsapp_message_can_have_are_skipped(tmp_path, build, insert, stamp):
    expected = _dated(read_whatsapp_database(build(tmp_path / "before.db")))
    path = build(tmp_path / "after.db")
    db = sqlite3.connect(path)
    rows = [  # a row the column's unit reads as 1970, one from 2008, one from 2200; a 2009 message is kept
        (90, "T1", stamp(86400), "the 2nd of January 1970"), (91, "T2", stamp(_epoch(2008, 12, 31, 23)), "2008"),
        (92, "T3", stamp(_epoch(2200, 1, 1)), "the year 2200"), (93, "T4", stamp(_epoch(2009, 6, 1)), "June 2009"),
    ]
    if build is _ios_db:
        rows.append((94, "T5", 0.0, "an unset date: 2001-01-01"))
    db.executemany(insert, rows)
    db.commit()
    db.close()
    before = SkipCounter()
    read_whatsapp_database(build(tmp_path / "again.db"), before)
    skips = SkipCounter()
    chats = read_whatsapp_database(path, skips)
    kept = [m for c in _dated(chats) for m in c]
    assert skips.counts["whatsapp_db_bad_timestamp"] - before.counts["whatsapp_db_bad_timestamp"] == len(rows) - 1
    assert [m for m in kept if m not in [e for c in expected for e in c]] == [
        ("447700900123" if build is not _ios_db else "Sam Lee", "text", "June 2009", datetime(2009, 6, 1))
    ]
    assert all(datetime(2009, 1, 1) <= m[3] < datetime.now() for m in kept)


def test_ios_status_sessions_are_no_chats(tmp_path):
    path = _ios_db(tmp_path / "ChatStorage.sqlite")
    db = sqlite3.connect(path)
    db.executescript(  # iOS: one Status session per person seen, <number>@status or <lid>@lid.status, type 3
        """
        INSERT INTO ZWACHATSESSION VALUES (3, 5, 1, 3, 0, '447700900123@status', 'Sam Lee', NULL);
        INSERT INTO ZWACHATSESSION VALUES (4, 5, 1, 3, 0, '201122334455667@lid.status', NULL, NULL);
        """
    )
    db.executemany(
        "INSERT INTO ZWAMESSAGE (Z_PK, ZCHATSESSION, ZISFROMME, ZMESSAGETYPE, ZSORT, ZMESSAGEDATE, ZFROMJID, ZSTANZAID, "
        "ZTEXT) VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?)",
        [(40, 3, 1, 1, 740000000, "447700900123@status", "3S01", "sunset at the lake"),
         (41, 3, 0, 2, 740000100, "447700900123@status", "3S02", "back home"),
         (42, 4, 0, 1, 740000200, "201122334455667@lid.status", "3S03", "new job!")],
    )
    db.commit()
    db.close()
    skips = SkipCounter()
    chats = read_whatsapp_database(path, skips)
    assert [c.stats["chat_jid"] for c in chats] == ["447700900123@s.whatsapp.net", "120363000000000001@g.us"]
    assert skips.counts["whatsapp_db_status_update"] == 3


def test_database_sha256_covers_the_wa_db_named_wherever_it_lies(tmp_path):
    """The chats of a msgstore.db depend on the wa.db their names come from: a named one (ingest's `contacts`), in
    any folder, wins over the one beside it, and a change to it changes the hash."""
    from tasks.chat_records import file_sha256
    from tasks.whatsapp.database import database_sha256

    (tmp_path / "backup").mkdir()
    (tmp_path / "contacts").mkdir()
    path = _android_db(tmp_path / "backup" / "msgstore.db")
    wa = _wa_db(tmp_path / "contacts" / "wa.db", [("447700900123@s.whatsapp.net", "Sam Lee", "Sam")])
    named = database_sha256(path, wa)
    assert database_sha256(path) == file_sha256(path) != named
    _wa_db(tmp_path / "backup" / "wa.db", [("447700900123@s.whatsapp.net", "Sammy", "Sam")])
    assert database_sha256(path, wa) == named != database_sha256(path)
    wa.unlink()
    _wa_db(wa, [("447700900123@s.whatsapp.net", "Samuel Lee", "Sam")])
    assert database_sha256(path, wa) not in (named, database_sha256(path))


def test_what_keeps_a_file_from_being_a_wa_db_is_said_in_a_few_words(tmp_path):
    from tasks.whatsapp.database import contacts_database_problem, is_contacts_database

    wa = _wa_db(tmp_path / "wa.db", [("447700900123@s.whatsapp.net", "Sam Lee", "Sam")])
    (tmp_path / "notes.txt").write_text("not a database\n")
    (tmp_path / "wa.db.crypt14").write_bytes(b"\x00" * 200)
    empty = sqlite3.connect(tmp_path / "other.sqlite")
    empty.execute("CREATE TABLE t (x)")
    empty.close()
    assert contacts_database_problem(wa) is None and is_contacts_database(wa)
    problems = {name: contacts_database_problem(tmp_path / name) for name in
                ("missing.db", ".", "notes.txt", "wa.db.crypt14", "other.sqlite")}
    problems["msgstore.db"] = contacts_database_problem(_android_db(tmp_path / "msgstore.db"))
    problems["ChatStorage.sqlite"] = contacts_database_problem(_ios_db(tmp_path / "ChatStorage.sqlite"))
    assert {name: bool(p) and "\n" not in p for name, p in problems.items()} == dict.fromkeys(problems, True)
    assert "does not exist" in problems["missing.db"] and "folder" in problems["."]
    assert "not an SQLite database" in problems["notes.txt"] and "encrypted" in problems["wa.db.crypt14"]
    assert "wa_contacts" in problems["other.sqlite"]
    assert "messages" in problems["msgstore.db"] and "messages" in problems["ChatStorage.sqlite"]
    assert not any(is_contacts_database(tmp_path / name) for name in problems)
