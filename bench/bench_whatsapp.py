"""Throughput of the chat readers on large synthetic inputs, printed as tables: the WhatsApp `.txt` parser in detail
(default about 50 MB per export), then parse speed per source — `.txt` exports, Telegram Desktop's JSON and HTML
exports, Messenger's JSON and HTML downloads, a DiscordChatExporter JSON, and WhatsApp's Android (current and
legacy schema) and iOS databases — beside whatstk and chat-miner on the same files where they can read them.

    .venv/bin/python bench/bench_whatsapp.py [--mb 50] [--formats android ios] [--quick] [--repeat 3]
        [--db-messages 200000] [--html-messages 50000] [--peer-python /tmp/peers/bin/python]

whatstk and chat-miner are not dependencies of chatlike; they run in a child process of `--peer-python` (default:
this interpreter), so they can live in their own environment:
`python -m venv /tmp/peers && /tmp/peers/bin/pip install whatstk chat-miner`. A peer that is not installed there
is shown as such; one that has no reader for a source is marked "cannot read".

The export is generated in a temporary directory (word salad of small talk, 10 % multi-line messages, sessions
of ~50 messages, media, deleted, edited and system lines, two authors plus a phone number). Beside the parser,
the table shows the floor any parser pays — reading, decoding and splitting the file into lines — so the cost of
the parsing itself is visible, and the aim of issue 3 (≥ 200,000 messages/s per core) beside the parser's rate.

Times are CPU seconds of this process (best of --repeat runs): the parser is single-threaded, so that is its
cost on one core, whatever else the machine is running. The peers' times are CPU seconds of their child process
(every thread counted, one run each), so messages/s per core compares like with like; each parser's rate is of
the messages it returns itself (counts differ: chat-miner leaves system lines out). The last column is the peak RSS of this process after
the step (it reads the whole export at once: the date order is decided from every date of the file).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tasks.discord import read_discord_export  # noqa: E402
from tasks.messenger import read_messenger_export  # noqa: E402
from tasks.telegram import read_telegram_export  # noqa: E402
from tasks.telegram_html import read_telegram_html_export  # noqa: E402
from tasks.whatsapp import chat_to_documents, parse_whatsapp_export  # noqa: E402
from tasks.whatsapp.database import APPLE_EPOCH, read_whatsapp_database  # noqa: E402

try:  # bench/summary.py collects headline figures when bench/run_all.py runs this script
    import summary  # noqa: E402
except ImportError:  # pragma: no cover - running without the summary helper
    summary = None

WORDS = (
    "ok see you later tonight tomorrow haha yes no maybe coffee lunch dinner the a to and is it was really "
    "good nice cool thanks sorry where when what train bus late early home work weekend hike film book "
    "soup cake call me now leaving there here almost done great idea sounds perfect 🙂 😂 👍"
).split()
AUTHORS = ("Sam", "Priya Raman", "+44 7700 900123")
SPECIAL = (
    (0.05, "<Media omitted>"),
    (0.01, "This message was deleted"),
    (0.01, "{text} <This message was edited>"),
)


def header(layout: str, when: datetime) -> str:
    if layout == "ios":
        return when.strftime("[%d/%m/%Y, %H:%M:%S] ")
    return when.strftime("%d/%m/%Y, %H:%M - ")


def generate(path: Path, target_bytes: int, layout: str, seed: int = 0) -> None:
    rng = random.Random(seed)
    when = datetime(2021, 1, 1, 8, 0)
    written = 0
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write(header(layout, when) + "Messages and calls are end-to-end encrypted. Learn more.\n")
        while written < target_bytes:
            lines = []
            for _ in range(1000):
                when += timedelta(seconds=rng.randint(5, 3600))
                if rng.random() < 0.02:  # a night or a quiet day: a new conversation session
                    when += timedelta(hours=rng.randint(7, 30))
                text = " ".join(rng.choices(WORDS, k=rng.randint(2, 18)))
                roll = rng.random()
                for p, template in SPECIAL:
                    if roll < p:
                        text = template.format(text=text)
                        break
                    roll -= p
                if rng.random() < 0.10:
                    text += "\n" + " ".join(rng.choices(WORDS, k=rng.randint(2, 12)))
                if rng.random() < 0.005:
                    lines.append(header(layout, when) + "Sam added Priya Raman\n")
                    continue
                lines.append(f"{header(layout, when)}{rng.choice(AUTHORS)}: {text}\n")
            block = "".join(lines)
            out.write(block)
            written += len(block.encode("utf-8"))


def _messages(n: int, seed: int):
    """n synthetic messages: (UTC time, sender 0-2 with 0 the phone's owner, text or None for media, kind)."""
    rng = random.Random(seed)
    # about 27 minutes a message on average: 200,000 messages end in 2022, in the past (the database readers
    # refuse times after the day they read a copy)
    when = datetime(2012, 1, 1, 8, 0, tzinfo=timezone.utc)
    for _ in range(n):
        when += timedelta(seconds=rng.randint(5, 600), milliseconds=rng.randint(0, 999))
        if rng.random() < 0.02:
            when += timedelta(hours=rng.randint(7, 30))
        text = " ".join(rng.choices(WORDS, k=rng.randint(2, 18)))
        if rng.random() < 0.10:
            text += "\n" + " ".join(rng.choices(WORDS, k=rng.randint(2, 12)))
        roll = rng.random()
        kind = "media" if roll < 0.05 else "deleted" if roll < 0.06 else "system" if roll < 0.065 else "text"
        yield when, rng.randrange(3), text, kind


def generate_telegram(path: Path, n: int, seed: int = 0) -> None:
    """A Telegram Desktop export of one group chat: entity arrays, replies, forwards, photos, service lines."""
    rng = random.Random(seed)
    names = ("Sam", "Priya Raman", "Kim")
    messages = []
    for i, (when, sender, text, kind) in enumerate(_messages(n, seed), start=1):
        local = when.replace(tzinfo=None).isoformat(timespec="seconds")
        if kind == "system":
            messages.append({"id": i, "type": "service", "date": local, "date_unixtime": str(int(when.timestamp())),
                             "actor": names[sender], "actor_id": f"user{sender}", "action": "invite_members",
                             "members": ["Kim"], "text": "", "text_entities": []})
            continue
        msg = {"id": i, "type": "message", "date": local, "date_unixtime": str(int(when.timestamp())),
               "from": names[sender], "from_id": f"user{sender}", "text": text,
               "text_entities": [{"type": "plain", "text": text}]}
        if rng.random() < 0.1:
            msg["text"] = [text, {"type": "bold", "text": "really"}]
        if rng.random() < 0.05 and i > 1:
            msg["reply_to_message_id"] = i - rng.randint(1, min(i - 1, 20))
        if rng.random() < 0.02:
            msg["forwarded_from"] = "Someone"
        if kind == "media":
            msg.update(photo="(File not included. Change data exporting settings to download.)", width=1280,
                       height=960, text="")
        messages.append(msg)
    path.write_text(json.dumps({"name": "Hike crew", "type": "private_group", "id": 4242, "messages": messages},
                               ensure_ascii=False), encoding="utf-8")


def generate_messenger(path: Path, n: int, seed: int = 0) -> None:
    """A Messenger "Download your information" JSON of one group chat in one file (Meta caps a file at 10,000
    messages; one file here so that chat-miner, which reads one file, reads the same): newest first, every string
    written as Meta writes it (each UTF-8 byte a \\u00XX escape), photos, unsent messages, subscribe lines."""
    names = ("Sam", "Priya Raman", "Zoë")

    def moji(text: str) -> str:
        return text.encode("utf-8").decode("latin-1")

    messages = []
    for when, sender, text, kind in _messages(n, seed):
        msg = {"sender_name": moji(names[sender]), "timestamp_ms": int(when.timestamp() * 1000),
               "is_geoblocked_for_viewer": False}
        if kind == "system":
            msg.update(type="Subscribe", content=moji(f"{names[sender]} added Zoë to the group."),
                       users=[{"name": moji("Zoë")}])
        elif kind == "media":
            msg["photos"] = [{"uri": "messages/inbox/hikecrew_42/photos/1.jpg", "creation_timestamp": 0}]
        elif kind == "deleted":
            msg["is_unsent"] = True
        else:
            msg["content"] = moji(text)
        messages.append(msg)
    messages.reverse()
    path.write_text(json.dumps({"participants": [{"name": moji(a)} for a in names], "messages": messages,
                                "title": "Hike crew", "is_still_participant": True, "thread_type": "RegularGroup",
                                "thread_path": "inbox/hikecrew_42", "magic_words": []}), encoding="utf-8")


def generate_telegram_html(folder: Path, n: int, seed: int = 0) -> Path:
    """The same kind of group chat as `generate_telegram`, in Telegram Desktop's HTML form (its default): pages of
    1000 messages (`messages.html`, `messages2.html`…) with date separators, "joined" messages (the same sender
    again, no name), replies, forwards, photos not downloaded and service lines. Returns the first page."""
    rng = random.Random(seed)
    names = ("Sam", "Priya Raman", "Kim")
    folder.mkdir(parents=True, exist_ok=True)
    pages, body, day, last_sender = [], [], None, None
    for i, (when, sender, text, kind) in enumerate(_messages(n, seed), start=1):
        if (i - 1) % 1000 == 0 and body:
            pages.append(body)
            body, last_sender = [], None
        if when.date() != day:
            day = when.date()
            body.append(f'<div class="message service" id="message-{i}"><div class="body details">'
                        f"{when.day} {when:%B %Y}</div></div>")
        if kind == "system":
            body.append(f'<div class="message service" id="message{i}"><div class="body details">'
                        f"{names[sender]} invited Kim</div></div>")
            last_sender = None
            continue
        title = f"{when:%d.%m.%Y %H:%M:%S} UTC+00:00"
        inner = [f'<div class="pull_right date details" title="{title}">{when:%H:%M}</div>']
        joined = sender == last_sender
        if not joined:
            inner.append(f'<div class="from_name">{names[sender]} </div>')
        if rng.random() < 0.05 and i > 1:
            target = i - rng.randint(1, min(i - 1, 20))
            inner.append(f'<div class="reply_to details">In reply to <a href="#go_to_message{target}" '
                         f'onclick="return GoToMessage({target})">this message</a></div>')
        if kind == "media":
            inner.append('<div class="media_wrap clearfix"><div class="media clearfix pull_left media_photo">'
                         '<div class="fill pull_left"></div><div class="body"><div class="title bold">Photo</div>'
                         '<div class="status details">Not included, change data exporting settings to download.'
                         "</div></div></div></div>")
        else:
            html_text = text.replace("&", "&amp;").replace("<", "&lt;").replace("\n", "<br>")
            if rng.random() < 0.1:
                html_text += " <strong>really</strong>"
            inner.append(f'<div class="text">{html_text}</div>')
        userpic = "" if joined else ('<div class="pull_left userpic_wrap"><div class="userpic userpic2" '
                                     f'style="width: 42px; height: 42px"><div class="initials">{names[sender][0]}'
                                     "</div></div></div>")
        body.append(f'<div class="message default clearfix{" joined" if joined else ""}" id="message{i}">'
                    f'{userpic}<div class="body">{"".join(inner)}</div></div>')
        last_sender = sender
    pages.append(body)
    for number, page in enumerate(pages, start=1):
        links = []
        if number > 1:
            links.append(f'<a class="pagination block_link" href="messages{number - 1 if number > 2 else ""}.html">'
                         "Previous messages</a>")
        if number < len(pages):
            links.append(f'<a class="pagination block_link" href="messages{number + 1}.html">Next messages</a>')
        (folder / f"messages{number if number > 1 else ''}.html").write_text(
            '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8"/>\n<title>Exported Data</title>\n'
            '<link href="css/style.css" rel="stylesheet"/>\n<script src="js/script.js" type="text/javascript">'
            '</script>\n</head>\n<body onload="CheckLocation();">\n<div class="page_wrap">\n'
            '<div class="page_header"><div class="content"><div class="text bold">Hike crew</div></div></div>\n'
            '<div class="page_body chat_page">\n<div class="history">\n'
            + "\n".join(links[:1] + page + links[1:]) + "\n</div>\n</div>\n</div>\n</body>\n</html>\n",
            encoding="utf-8")
    return folder / "messages.html"


def generate_messenger_html(path: Path, n: int, seed: int = 0) -> None:
    """The same kind of group chat as `generate_messenger`, in the HTML form of Meta's download (its default), in
    the markup of 2023 on: one block per message, newest first, the sender in an `<h2>`, the date in English
    ("Mar 14, 2024 6:02:05 pm"), photos, unsent messages and subscribe lines."""
    names = ("Sam", "Priya Raman", "Zoë")
    blocks = []
    for when, sender, text, kind in _messages(n, seed):
        if kind == "system":
            content = f"{names[sender]} added Zoë to the group."
        elif kind == "media":
            content = ""
        elif kind == "deleted":
            content = f"{names[sender]} unsent a message."
        else:
            content = text.replace("&", "&amp;").replace("<", "&lt;")
        media = ('<div><a target="_blank" href="messages/inbox/hikecrew_42/photos/1.jpg"><img '
                 'src="messages/inbox/hikecrew_42/photos/1.jpg" class="_a6_o _3-96" /></a></div>'
                 if kind == "media" else "")
        hour = (when.hour - 1) % 12 + 1
        date = f"{when:%b} {when.day:02d}, {when.year} {hour}:{when:%M:%S} {'pm' if when.hour >= 12 else 'am'}"
        blocks.append(f'<div class="pam _3-95 _2ph- _a6-g uiBoxWhite noborder"><h2 class="_3-95 _2pim _a6-h _a6-i">'
                      f'{names[sender]}</h2><div class="_3-95 _a6-p"><div><div></div><div>{content}</div>'
                      f'<div>{media}</div><div></div></div></div><div class="_3-94 _a6-o">{date}</div></div>')
    blocks.reverse()
    path.write_text(
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8" /><base href="../../../" />'
        '<title>Hike crew</title></head><body class="_5vb_ _2yq _a7o5"><div class="_li"><div class="_a705">'
        '<header class="_as-_ _a70a"><div class="_a70d"><h1>Hike crew</h1></div></header>'
        '<main class="_a706" role="main"><div class="pam _3-95 _2ph- _a6-g uiBoxWhite noborder">'
        '<h2 class="_3-95 _2pim _a6-h _a6-i">Participants: Sam, Priya Raman and Zoë</h2></div>'
        + "".join(blocks) + "</main></div></div></body></html>", encoding="utf-8")


def generate_discord(path: Path, n: int, seed: int = 0) -> None:
    """A DiscordChatExporter JSON of one server channel: replies, attachments, custom emoji, join lines."""
    rng = random.Random(seed)
    authors = [{"id": str(100 + i), "name": name.lower().replace(" ", ""), "discriminator": "0000",
                "nickname": name, "isBot": False} for i, name in enumerate(("Sam", "Priya Raman", "Kim"))]
    messages = []
    for i, (when, sender, text, kind) in enumerate(_messages(n, seed)):
        msg = {"id": str(10**17 + i), "type": "Default", "timestamp": when.isoformat(timespec="milliseconds"),
               "timestampEdited": None, "callEndedTimestamp": None, "isPinned": False, "content": text,
               "author": authors[sender], "attachments": [], "embeds": [], "stickers": [], "reactions": [],
               "mentions": [], "inlineEmojis": []}
        if kind == "system":
            msg.update(type="GuildMemberJoin", content="Joined the server.")
        elif kind == "media":
            msg["attachments"] = [{"id": str(i), "url": "https://cdn.example/a.png", "fileName": "a.png",
                                   "fileSizeBytes": 1000}]
        if rng.random() < 0.05 and i > 0:
            msg.update(type="Reply", reference={"type": "Default", "messageId": str(10**17 + i - 1),
                                                 "channelId": "9100", "guildId": "9000"})
        messages.append(msg)
    path.write_text(json.dumps({"guild": {"id": "9000", "name": "Hikers"},
                                "channel": {"id": "9100", "type": "GuildTextChat", "categoryId": None,
                                            "category": "Text", "name": "general", "topic": None},
                                "dateRange": {"after": None, "before": None}, "messages": messages,
                                "messageCount": len(messages)}, ensure_ascii=False), encoding="utf-8")


_ANDROID_TYPES = {"text": 0, "media": 1, "deleted": 15, "system": 7}


def generate_android_db(path: Path, n: int, seed: int = 0) -> None:
    """A msgstore.db (current schema): a personal chat and a group of three, 5 % quoted replies."""
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE jid (_id INTEGER PRIMARY KEY, user TEXT, server TEXT, agent INTEGER, device INTEGER,
                          type INTEGER, raw_string TEXT);
        CREATE TABLE chat (_id INTEGER PRIMARY KEY, jid_row_id INTEGER UNIQUE, hidden INTEGER, subject TEXT);
        CREATE TABLE message (_id INTEGER PRIMARY KEY, chat_row_id INTEGER, from_me INTEGER, key_id TEXT,
                              sender_jid_row_id INTEGER, status INTEGER, origination_flags INTEGER,
                              timestamp INTEGER, message_type INTEGER, text_data TEXT);
        CREATE TABLE message_quoted (message_row_id INTEGER PRIMARY KEY, chat_row_id INTEGER, key_id TEXT);
        CREATE TABLE message_system (message_row_id INTEGER PRIMARY KEY, action_type INTEGER);
        INSERT INTO jid VALUES (1, '447700900123', 's.whatsapp.net', 0, 0, 0, '447700900123@s.whatsapp.net');
        INSERT INTO jid VALUES (2, '120363000000000001', 'g.us', 0, 0, 1, '120363000000000001@g.us');
        INSERT INTO jid VALUES (3, '33600000001', 's.whatsapp.net', 0, 0, 0, '33600000001@s.whatsapp.net');
        INSERT INTO chat VALUES (1, 1, 0, NULL);
        INSERT INTO chat VALUES (2, 2, 0, 'Hike crew');
    """)
    rng = random.Random(seed)
    rows, quoted, system = [], [], []
    for i, (when, sender, text, kind) in enumerate(_messages(n, seed), start=1):
        chat = 1 if i % 3 else 2
        sender_jid = 0 if chat == 1 or sender != 2 else 3
        rows.append((i, chat, int(sender == 0), f"K{i:07d}", sender_jid, 0, int(rng.random() < 0.02),
                     int(when.timestamp() * 1000), _ANDROID_TYPES[kind], text if kind in ("text", "media") else None))
        if kind == "system":
            system.append((i, 11))
        elif rng.random() < 0.05 and i > 20:
            quoted.append((i, chat, f"K{i - 3:07d}"))
    db.executemany("INSERT INTO message VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO message_quoted VALUES (?, ?, ?)", quoted)
    db.executemany("INSERT INTO message_system VALUES (?, ?)", system)
    db.commit()
    db.close()


def generate_legacy_db(path: Path, n: int, seed: int = 0) -> None:
    """A msgstore.db of the legacy schema (the `messages` table, before 2021)."""
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE messages (_id INTEGER PRIMARY KEY AUTOINCREMENT, key_remote_jid TEXT NOT NULL,
            key_from_me INTEGER, key_id TEXT NOT NULL, status INTEGER, data TEXT, timestamp INTEGER,
            media_wa_type TEXT, media_caption TEXT, remote_resource TEXT, quoted_row_id INTEGER);
        CREATE TABLE messages_quotes (_id INTEGER PRIMARY KEY AUTOINCREMENT, key_remote_jid TEXT,
            key_from_me INTEGER, key_id TEXT, data TEXT, timestamp INTEGER);
        CREATE TABLE chat_list (_id INTEGER PRIMARY KEY AUTOINCREMENT, key_remote_jid TEXT UNIQUE, subject TEXT);
        INSERT INTO chat_list (key_remote_jid, subject) VALUES ('120363000000000002@g.us', 'Book club');
    """)
    rng = random.Random(seed)
    rows, quotes = [], []
    for i, (when, sender, text, kind) in enumerate(_messages(n, seed), start=1):
        chat = "447700900123@s.whatsapp.net" if i % 3 else "120363000000000002@g.us"
        member = "33600000001@s.whatsapp.net" if chat.endswith("g.us") and sender else None
        quote = None
        if kind == "text" and rng.random() < 0.05 and i > 20:
            quotes.append((len(quotes) + 1, chat, f"L{i - 3:07d}", ""))
            quote = len(quotes)
        rows.append((chat, int(sender == 0), f"L{i:07d}", 6 if kind == "system" else 0,
                     text if kind == "text" else None, int(when.timestamp() * 1000),
                     "1" if kind == "media" else "0", text if kind == "media" else None, member, quote))
    db.executemany("INSERT INTO messages (key_remote_jid, key_from_me, key_id, status, data, timestamp, media_wa_type, "
                   "media_caption, remote_resource, quoted_row_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO messages_quotes (_id, key_remote_jid, key_id, data) VALUES (?, ?, ?, ?)", quotes)
    db.commit()
    db.close()


_IOS_TYPES = {"text": 0, "media": 1, "deleted": 14, "system": 6}


def generate_ios_db(path: Path, n: int, seed: int = 0) -> None:
    """An iOS ChatStorage.sqlite: a personal chat and a group whose members have names."""
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE ZWACHATSESSION (Z_PK INTEGER PRIMARY KEY, ZSESSIONTYPE INTEGER, ZCONTACTJID VARCHAR,
            ZPARTNERNAME VARCHAR);
        CREATE TABLE ZWAGROUPMEMBER (Z_PK INTEGER PRIMARY KEY, ZCHATSESSION INTEGER, ZCONTACTNAME VARCHAR,
            ZFIRSTNAME VARCHAR, ZMEMBERJID VARCHAR);
        CREATE TABLE ZWAPROFILEPUSHNAME (Z_PK INTEGER PRIMARY KEY, ZJID VARCHAR, ZPUSHNAME VARCHAR);
        CREATE TABLE ZWAMESSAGE (Z_PK INTEGER PRIMARY KEY, ZCHATSESSION INTEGER, ZGROUPEVENTTYPE INTEGER,
            ZGROUPMEMBER INTEGER, ZISFROMME INTEGER, ZMESSAGETYPE INTEGER, ZSORT INTEGER, ZFLAGS INTEGER,
            ZMESSAGEDATE TIMESTAMP, ZFROMJID VARCHAR, ZSTANZAID VARCHAR, ZTEXT VARCHAR);
        CREATE TABLE ZWAMEDIAITEM (Z_PK INTEGER PRIMARY KEY, ZMESSAGE INTEGER, ZMEDIALOCALPATH VARCHAR,
            ZTITLE VARCHAR, ZMETADATA BLOB);
        INSERT INTO ZWACHATSESSION VALUES (1, 0, '447700900123@s.whatsapp.net', 'Priya Raman');
        INSERT INTO ZWACHATSESSION VALUES (2, 1, '120363000000000001@g.us', 'Hike crew');
        INSERT INTO ZWAGROUPMEMBER VALUES (1, 2, 'Kim', NULL, '33600000001@s.whatsapp.net');
        INSERT INTO ZWAGROUPMEMBER VALUES (2, 2, '', NULL, '33600000002@s.whatsapp.net');
        INSERT INTO ZWAPROFILEPUSHNAME VALUES (1, '33600000002@s.whatsapp.net', 'Alex');
    """)
    rng = random.Random(seed)
    rows, media = [], []
    for i, (when, sender, text, kind) in enumerate(_messages(n, seed), start=1):
        chat = 1 if i % 3 else 2
        jid = "447700900123@s.whatsapp.net" if chat == 1 else "120363000000000001@g.us"
        member = sender if chat == 2 and sender else None
        rows.append((i, chat, 12 if kind == "system" else None, member, int(sender == 0), _IOS_TYPES[kind], i,
                     128 if rng.random() < 0.02 else 0, when.timestamp() - APPLE_EPOCH, None if sender == 0 else jid,
                     f"3A{i:07d}", text if kind == "text" else None))
        if kind == "media":
            media.append((i, "Media/x.jpg", text, None))
        elif kind == "text" and rng.random() < 0.05 and i > 20:
            stanza = f"3A{i - 3:07d}".encode()
            media.append((i, None, None, b"\x2a" + bytes([len(stanza)]) + stanza))
    db.executemany("INSERT INTO ZWAMESSAGE VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO ZWAMEDIAITEM (ZMESSAGE, ZMEDIALOCALPATH, ZTITLE, ZMETADATA) VALUES (?, ?, ?, ?)", media)
    db.commit()
    db.close()


# The peers' readers: which sources each can read, and the code its child process runs on a file (prints the
# number of messages it returned).
PEERS = {
    "whatstk": {
        "txt": ("from whatstk.whatsapp.objects import WhatsAppChat",
                "n = len(WhatsAppChat.from_source(filepath=path).df)"),
    },
    "chat-miner": {
        "txt": ("from chatminer.chatparsers import WhatsAppParser as P",
                "p = P(path); p.parse_file(); n = len(p.parsed_messages.get_df())"),
        "telegram": ("from chatminer.chatparsers import TelegramJsonParser as P",
                     "p = P(path); p.parse_file(); n = len(p.parsed_messages.get_df())"),
        "messenger": ("from chatminer.chatparsers import FacebookMessengerParser as P",
                      "p = P(path); p.parse_file(); n = len(p.parsed_messages.get_df())"),
    },
}
_PEER_IMPORT = {"whatstk": "whatstk", "chat-miner": "chatminer"}
_PEER_RUN = """
import json, logging, os, sys, time
os.environ["TQDM_DISABLE"] = "1"
{imports}
logging.disable(logging.CRITICAL)
path = sys.argv[1]
start = time.process_time()
{code}
print(json.dumps({{"messages": n, "cpu_s": time.process_time() - start}}))
"""


def peer_installed(python: str, peer: str) -> bool:
    probe = subprocess.run([python, "-c", f"import {_PEER_IMPORT[peer]}"], capture_output=True)
    return probe.returncode == 0


def run_peer(python: str, peer: str, source: str, path: Path) -> str:
    """The peer's messages/s per core on `path`, or why there is none."""
    reader = PEERS[peer].get(source)
    if reader is None:
        return "cannot read"
    imports, code = reader  # imported before the clock starts
    done = subprocess.run([python, "-c", _PEER_RUN.format(imports=imports, code=code), str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"failed: {last.split(':')[0][:28]}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return f"{result['messages'] / result['cpu_s']:,.0f} ({result['messages']:,})"


def read_and_split(path: Path) -> int:
    text = path.read_bytes().decode("utf-8")
    return len(text.split("\n"))


AIM_MESSAGES_PER_S = 200_000


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(repeat: int, fn, *args, **kwargs):
    """(result, best CPU seconds of `repeat` calls)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        result = None  # the previous result would weigh on the garbage collector
        start = time.process_time()
        result = fn(*args, **kwargs)
        best = min(best, time.process_time() - start)
    return result, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of each synthetic export in MB")
    parser.add_argument("--formats", nargs="+", default=["android", "ios"], choices=["android", "ios"])
    parser.add_argument("--quick", action="store_true", help="5 MB per export (what bench/run_all.py runs)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per step; the best is shown")
    parser.add_argument("--db-messages", type=int, default=200_000,
                        help="messages of the synthetic Telegram export and of each synthetic database")
    parser.add_argument("--html-messages", type=int, default=50_000,
                        help="messages of the synthetic Telegram and Messenger HTML exports")
    parser.add_argument("--peer-python", default=sys.executable,
                        help="the Python that has whatstk and chat-miner installed (default: this one)")
    args = parser.parse_args()
    if args.quick:
        args.mb = min(args.mb, 5.0)

    rows = []
    per_source = []  # (source, file, MB, messages, CPU s, {peer: result})
    peers = {peer: peer_installed(args.peer_python, peer) for peer in PEERS}

    def compare(source: str, path: Path) -> dict:
        return {peer: run_peer(args.peer_python, peer, source, path) if installed else
                ("cannot read" if source not in PEERS[peer] else "not installed")
                for peer, installed in peers.items()}

    with tempfile.TemporaryDirectory() as tmp:
        for layout in args.formats:
            path = Path(tmp) / f"synthetic_{layout}.txt"
            generate(path, int(args.mb * 1e6), layout)
            mb = path.stat().st_size / 1e6
            _, floor = timed(args.repeat, read_and_split, path)
            chat, parse = timed(args.repeat, parse_whatsapp_export, path)
            docs, to_docs = timed(args.repeat, chat_to_documents, chat)
            n = len(chat.messages)
            aim = f"≥ {AIM_MESSAGES_PER_S:,}: " + ("met" if n / parse >= AIM_MESSAGES_PER_S else "not met")
            peak = peak_rss_mb()
            rows.append((f"{layout}: read + decode + split lines (floor)", mb, n, floor, None, ""))
            rows.append((f"{layout}: parse_whatsapp_export", mb, n, parse, peak, aim))
            rows.append((f"{layout}: chat_to_documents ({len(docs)} docs)", mb, n, to_docs, None, ""))
            rows.append((f"{layout}: parse + documents", mb, n, parse + to_docs, None, ""))
            if summary is not None:
                summary.record(f"whatsapp parse ({layout})", "messages/s per core", n / parse,
                               "reading + splitting lines", n / floor, peak_mb=peak)
            per_source.append((f"WhatsApp .txt ({layout})", path.name, mb, n, parse, compare("txt", path)))
            del chat, docs

        databases = (
            ("Telegram Desktop JSON", "result.json", generate_telegram, read_telegram_export, "telegram"),
            ("Messenger JSON (Meta's download)", "message_1.json", generate_messenger,
             lambda p: read_messenger_export(p, siblings=False), "messenger"),
            ("Discord (DiscordChatExporter JSON)", "discord.json", generate_discord, read_discord_export, "discord"),
            ("WhatsApp Android msgstore.db", "msgstore.db", generate_android_db, read_whatsapp_database, "android"),
            ("WhatsApp Android msgstore.db (legacy)", "msgstore-legacy.db", generate_legacy_db,
             read_whatsapp_database, "android"),
            ("WhatsApp iOS ChatStorage.sqlite", "ChatStorage.sqlite", generate_ios_db, read_whatsapp_database, "ios"),
        )
        html = (
            ("Telegram Desktop HTML", "telegram_html", generate_telegram_html, read_telegram_html_export, "telegram-html"),
            ("Messenger HTML (Meta's download)", "message_1.html", generate_messenger_html,
             lambda p: read_messenger_export(p, siblings=False), "messenger-html"),
        )
        for (source, name, generate_source, read, kind), messages in (
                [(d, args.db_messages) for d in databases] + [(h, args.html_messages) for h in html]):
            path = Path(tmp) / name
            generate_source(path, messages)
            chats, seconds = timed(args.repeat, read, path)
            n = sum(len(c.messages) for c in chats)
            size = sum(f.stat().st_size for f in path.iterdir()) if path.is_dir() else path.stat().st_size
            per_source.append((source, name, size / 1e6, n, seconds, compare(kind, path)))
            if summary is not None:
                summary.record(f"chat read ({source})", "messages/s per core", n / seconds)
            del chats

    print(
        f"\n{'step':<48} {'MB':>7} {'messages':>10} {'CPU s':>7} {'messages/s':>12} {'MB/s':>7} {'peak RSS MB':>11}"
        "  aim (messages/s)"
    )
    print("-" * 128)
    for name, mb, n, seconds, peak, aim in rows:
        peak_text = f"{peak:>11,.0f}" if peak is not None else " " * 11
        print(
            f"{name:<48} {mb:>7.1f} {n:>10,} {seconds:>7.2f} {n / seconds:>12,.0f} {mb / seconds:>7.1f} {peak_text}"
            f"  {aim}"
        )

    print(f"\nparse speed per source, messages/s per core (messages returned); peers via {args.peer_python}")
    print(f"{'source':<38} {'MB':>6} {'messages':>9} {'chatlike':>10} {'whatstk':>20} {'chat-miner':>20}")
    print("-" * 108)
    for source, _, mb, n, seconds, compared in per_source:
        print(f"{source:<38} {mb:>6.1f} {n:>9,} {n / seconds:>10,.0f} {compared['whatstk']:>20} "
              f"{compared['chat-miner']:>20}")


if __name__ == "__main__":
    main()
