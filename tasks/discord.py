"""Reading Discord chats into chats like the WhatsApp `.txt` parser's, from the two forms people have.

1. DiscordChatExporter's JSON (Tyrrrz/DiscordChatExporter, "Export format: JSON"): one file per channel (or per
   part of a channel, with `--partition`), top-level `guild {id, name}`, `channel {id, type, categoryId,
   category, name, topic}`, `dateRange`, `exportedAt`, `messages [...]`, `messageCount`. Fields relied on, as its
   JsonMessageWriter writes them (checked across its history, 2020 to 2026; nothing copied):

   - a message: `id`, `type` (the name of its MessageKind: Default, Reply, RecipientAdd, RecipientRemove, Call,
     ChannelNameChange, ChannelIconChange, ChannelPinnedMessage, GuildMemberJoin, ThreadCreated; a kind it has no
     name for is written as its number, "8", "20"…), `timestamp` and `timestampEdited` (ISO 8601 with an offset:
     the exporting machine's, or UTC with `--utc`), `callEndedTimestamp` (2020-08 on), `isPinned`, `content`,
     `author {id, name, discriminator, nickname (2021-03 on), isBot}`, `attachments [{id, url, fileName,
     fileSizeBytes}]`, `embeds`, `stickers [{id, name, format, sourceUrl}]` (2022-02 on), `reactions`,
     `mentions [user…]` (2020-10 on), `reference {type (Default | Forward), messageId, channelId, guildId}`
     (2020-12 on), `forwardedMessage {timestamp, content, attachments, embeds, stickers}` (2025 on),
     `interaction`, `inlineEmojis`;
   - `content` is, by default, Discord markdown rendered to plain text: user mentions as `@<display name>`,
     custom emoji as `:name:`, channels as `#name`; with `--markdown false` it is raw: `<@123>`, `<@!123>`,
     `<:name:123>`, `<a:name:123>`, `<#123>`, `<@&123>`, `<t:1700000000:R>`. Both are read: raw user mentions
     become `@<name>` when the author list or the message's `mentions` names them (else they are kept as they
     are), custom emoji `:name:`, channel mentions `#<name>` (this channel's) or `#channel`, role mentions
     `@role`, timestamps the local time in `tz`;
   - system messages (kinds 1-18, DiscordChatExporter's own "system notification" range) have since 2023-02 a
     fallback sentence as `content` ("Joined the server.", "Pinned a message.", "Started a call that lasted 3
     minutes.", "Added Sam to the group.", "Changed the channel name: x", "Started a thread."); older exports
     hold the raw content (often empty). Either way the message becomes kind "system", without author, its text
     "<author> <what happened>" ("Sam joined the server.").

   Authors are `author.nickname` (DiscordChatExporter writes there the server nickname, else the global display
   name, else the username) with `author.name` (the username) when the nickname is missing: it is the name the
   conversation shows and exactly the name the rendered `@mentions` in `content` use, so a pseudonymised chat
   replaces both. Two different accounts showing one name in a chat are told apart as "Name (username)". As a
   nickname can differ between servers, `stats["usernames"]` maps each author name to its username, for
   sft-data's list of target names. Bots keep their messages as the text they are (a bot's reply is part of the
   conversation); they are listed in `stats["bots"]` and counted in `stats["bot_messages"]`.

   Kinds: text; "edited" for a text whose `timestampEdited` is set (as the `.txt` parser marks WhatsApp's
   "<This message was edited>"); "media" for attachments and stickers, one placeholder worded like WhatsApp's per
   attachment or sticker ("image omitted", by the file name's extension; "voice message omitted" for Discord's
   `voice-message.ogg`), the text on the next line; "system" as above. A message with no text, attachment or
   sticker but embeds (a bot's card) is the text of its embeds (title, description, fields). A reply (kind
   Reply) gets `reply_to` from `reference.messageId`, resolved in the chat like Telegram's reply ids (a message
   of another channel or missing from the export stays `#<id>` / `#<channel>/<id>`); a pin's or a thread's
   reference is no reply. Forwards (`reference.type` Forward, `forwardedMessage`) are kept with the forwarded
   text and counted as forwarded (`stats["forwarded"]`, `stats["forwarded_indexes"]`).

2. Discord's own data package (Settings → Data & Privacy → Request all of my data): `messages/` (`Messages/` in
   newer packages) with `index.json` (channel id → "general in My Server", "Direct Message with sam#0"), and one
   `c<channel id>/` folder per channel holding `channel.json` (`id`, `type` (a number in old packages, "DM",
   "GROUP_DM", "GUILD_TEXT", "PUBLIC_THREAD"… in newer ones), `name`, `guild {id, name}`, `recipients`) and
   either `messages.json` (newer: an array of `{ID, Timestamp, Contents, Attachments}`, Timestamp
   "YYYY-MM-DD HH:MM:SS" in UTC) or `messages.csv` (older: header `ID,Timestamp,Contents,Attachments`,
   Timestamp "YYYY-MM-DD HH:MM:SS.ffffff+00:00"); Attachments are URLs separated by spaces. The package holds
   ONLY the account owner's own messages, nobody else's: every message is authored by `owner` (default "me"),
   there are no replies and no other side of any conversation. Such a chat is good for pretraining text and the
   owner's style, but gives no reply to train on; its stats say so (`own_messages_only: True`).

Timestamps carry an offset (or are UTC in the package) and are written as naive local time in `tz` (default
UTC), as the WhatsApp database reader writes its UTC epochs: pass the zone the person lives in.

A file that is not one of these is refused with a one-line InputFileError naming it; so is a JSON or CSV file cut
short (naming the line and column where it ends). A record that cannot be read (not an object, no readable
timestamp, a field of the wrong type, nothing to show) is skipped and counted, located by chat and message id, in
the skip counter and in the chat's `stats["skipped"]`. Optional fields of the wrong type (a `reference`, a
`mentions` list, `timestampEdited`…) are ignored and counted in `stats["ignored_fields"]`. Files are parsed whole
with the stdlib `json` and `csv`; nothing is fetched (attachment URLs are never opened).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
from collections import Counter
from datetime import datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from pathlib import Path

from tasks.chat_records import (
    AUDIO,
    DOCUMENT,
    GIF,
    IMAGE,
    STICKER,
    VIDEO,
    VOICE,
    ChatSkips,
    SourceMessage,
    build_chat,
    chat_id_for,
    file_sha256,
    read_export_json,
    read_export_text,
    resolve_tz,
)
from tasks.records import InputFileError, SkipCounter, without_surrogates
from tasks.whatsapp.parser import WhatsAppChat

SOURCE = "discord"
OWNER = "me"  # the author of a data package's messages when `owner` is not given
log = logging.getLogger(__name__)

_PACKAGE_FILES = ("messages.json", "messages.csv")
_PACKAGE_METADATA = ("channel.json", "index.json")
_CHANNEL_FOLDER = re.compile(r"c(\d+)")
_CSV_HEADER = ["ID", "Timestamp", "Contents", "Attachments"]
_TIMESTAMP = re.compile(
    r"\s*(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d+))?)?\s*(Z|[+-]\d\d(?::?\d\d)?)?\s*")
# raw Discord markup (DiscordChatExporter with `--markdown false`); rendered exports hold none of it
_MARKUP = re.compile(r"<(?:(a?):(\w{1,64}):\d+|@!?(\d+)|@&(\d+)|#(\d+)|t:(-?\d{1,13})(?::[tTdDfFR])?)>")
_SYSTEM_KINDS = {
    "RecipientAdd": "added someone to the group",
    "RecipientRemove": "removed someone from the group",
    "Call": "started a call",
    "ChannelNameChange": "changed the channel name",
    "ChannelIconChange": "changed the channel icon",
    "ChannelPinnedMessage": "pinned a message",
    "GuildMemberJoin": "joined the server",
    "ThreadCreated": "started a thread",
}
# the sentences DiscordChatExporter (2023-02 on) writes as a system message's content: kept, after the author
_FALLBACK = re.compile(r"(Added |Removed |Left the group|Started a call|Changed the channel (name|icon)|"
                       r"Pinned a message|Started a thread|Joined the server)")
_WHAT = "a Discord export"
_IMAGE_EXT = {"jpg", "jpeg", "png", "webp", "bmp", "heic", "heif", "tif", "tiff", "avif", "svg"}
_VIDEO_EXT = {"mp4", "mov", "webm", "mkv", "avi", "m4v", "wmv", "3gp"}
_AUDIO_EXT = {"mp3", "wav", "m4a", "flac", "aac", "ogg", "opus", "wma"}


# ------------------------------------------------------------------------------------------------ public API


def looks_like_discord(path: str | os.PathLike, head_bytes: int = 8192) -> bool:
    """Cheap sniff for input-kind detection: a `.json` whose head holds DiscordChatExporter's `guild`, `channel`
    and `messages` (or `dateRange`), or a data package's `messages.json` / `messages.csv` in a `c<digits>` folder.
    """
    path = Path(path)
    name = path.name.lower()
    if not name.endswith((".json", ".csv")):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(head_bytes).decode("utf-8", errors="ignore")
    except OSError:
        return False
    head = head.lstrip("\ufeff \t\r\n")
    if name in _PACKAGE_FILES and _CHANNEL_FOLDER.fullmatch(path.parent.name):
        if name.endswith(".csv"):
            return head.startswith("ID,Timestamp,Contents")
        return head.startswith("[")
    return (name.endswith(".json") and head.startswith("{") and '"guild"' in head and '"channel"' in head
            and ('"messages"' in head or '"dateRange"' in head))


def is_discord_package_metadata(path: str | os.PathLike) -> bool:
    """A data package's `channel.json` (in a `c<digits>` folder) or `messages/index.json`: read along with the
    channel's `messages.json` / `messages.csv`, holding no message of its own (ingest can pass over it)."""
    path = Path(path)
    name = path.name.lower()
    if name == "channel.json":
        return bool(_CHANNEL_FOLDER.fullmatch(path.parent.name))
    if name == "index.json":
        return any(_CHANNEL_FOLDER.fullmatch(p.name) for p in _subfolders(path.parent))
    return False


def read_discord_export(
    path: str | os.PathLike,
    skips: SkipCounter | None = None,
    *,
    tz: tzinfo | str | None = None,
    owner: str = OWNER,
) -> list[WhatsAppChat]:
    """The chats of a Discord export, one `WhatsAppChat` each (source "discord").

    `path` is a DiscordChatExporter JSON file (one chat), a data package's `messages.json` / `messages.csv` or
    its `c<id>` folder (one chat), or the package's `messages/` folder or the package itself (one chat per
    channel folder, in folder order); a package's `channel.json` / `index.json` alone gives no chat (they are read
    with the messages file). `tz` is the zone timestamps are written in (default UTC); `owner` is the author of
    a data package's messages, which are all the owner's own (the package has nobody else's, so no replies).
    `chat_id` derives from the messages file's sha256 and the channel id. Skipped records are counted in `skips`
    and the chat's `stats["skipped"]`. Raises InputFileError, naming the file, for what is no Discord export.
    """
    path = Path(path)
    skips = skips if skips is not None else SkipCounter()
    zone = resolve_tz(tz)
    if path.is_dir():
        return [_read_package_file(f, skips, zone, owner) for f in _package_files(path)]
    if is_discord_package_metadata(path):
        log.info("%s: a data package's metadata, read with the channel's messages file", path)
        return []
    digest = file_sha256(path)
    if path.name.lower().endswith(".csv"):
        return [_read_package_file(path, skips, zone, owner, digest)]
    data = read_export_json(path, _WHAT)
    if isinstance(data, dict) and ("guild" in data or "channel" in data):
        return [_read_exporter(data, path, digest, zone, skips)]
    package_file = path.name.lower() == "messages.json" and _CHANNEL_FOLDER.fullmatch(path.parent.name)
    if isinstance(data, list) and (package_file or any(
            isinstance(m, dict) and "Timestamp" in m and ("Contents" in m or "ID" in m) for m in data[:20])):
        return [_read_package_file(path, skips, zone, owner, digest, data)]
    found = (", ".join(map(str, list(data)[:6])) or "no key") if isinstance(data, dict) else type(data).__name__
    raise InputFileError(
        f"{path}: JSON without DiscordChatExporter's 'guild', 'channel' and 'messages' or a data package's "
        f"messages (found {found}), not a Discord export"
    )


# ------------------------------------------------------------------------------------------------ loading


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []


def _package_files(folder: Path) -> list[Path]:
    """The messages files a folder names: a channel folder's own, or those of the channel folders in it (or in
    its `messages/` folder)."""
    own = _channel_messages_file(folder)
    if own is not None:
        return [own]
    candidates = [folder] + [p for p in _subfolders(folder) if p.name.lower() == "messages"]
    for base in candidates:
        files = [f for f in map(_channel_messages_file, _subfolders(base)) if f is not None]
        if files:
            return files
    raise InputFileError(
        f"{folder}: a folder without a Discord data package's channel folders (c<id>/messages.json or "
        "messages.csv), not a Discord export"
    )


def _channel_messages_file(folder: Path) -> Path | None:
    if not _CHANNEL_FOLDER.fullmatch(folder.name):
        return None
    for name in _PACKAGE_FILES:
        if (folder / name).is_file():
            return folder / name
    return None


# ------------------------------------------------------------------------------------------------ shared helpers


def _id(value: object) -> str | None:
    """An id as a string: a string or an int as written; anything else is no id."""
    if isinstance(value, str) and value:
        return without_surrogates(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _timestamp(value: object, zone: tzinfo) -> datetime | None:
    """An ISO 8601 time (`T` or space, any fraction, `Z`, `+hh:mm` or none: UTC) as naive local time in `zone`."""
    if not isinstance(value, str):
        return None
    m = _TIMESTAMP.fullmatch(value)
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, offset = m.groups()
    micro = int((fraction + "000000")[:6]) if fraction else 0
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micro,
                          _offset(offset))
        return moment.astimezone(zone).replace(tzinfo=None)
    except (ValueError, OverflowError):
        return None


@lru_cache(maxsize=256)
def _offset(offset: str | None) -> timezone:
    """The fixed zone of an ISO offset ("Z", "+01:00", "-0530", "+02"; None: UTC)."""
    if offset is None or offset == "Z":
        return timezone.utc
    digits = offset[1:].replace(":", "")
    delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
    return timezone(-delta if offset[0] == "-" else delta)


def _placeholder(file_name: str) -> str:
    """The WhatsApp-worded placeholder of an attachment, by its file name (or URL)."""
    name = file_name.rsplit("/", 1)[-1].split("?", 1)[0].lower()
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if ext == "gif":
        return GIF
    if ext in _IMAGE_EXT:
        return IMAGE
    if ext in _VIDEO_EXT:
        return VIDEO
    if ext in _AUDIO_EXT:
        return VOICE if name.startswith("voice-message") else AUDIO
    return DOCUMENT


def _body(placeholders: list[str], text: str) -> str:
    return "\n".join([*placeholders, text]) if text else "\n".join(placeholders)


# ------------------------------------------------------------------------------------------------ DiscordChatExporter


class _Exporter:
    """One DiscordChatExporter file's chat: author names, markup and records."""

    def __init__(self, channel_id: str | None, channel_name: str | None, zone: tzinfo, skips: ChatSkips) -> None:
        self.channel_id, self.channel_name, self.zone, self.skips = channel_id, channel_name, zone, skips
        self.ignored: Counter = Counter()
        self.bots: set[str] = set()
        self.bot_messages = 0
        self.usernames: dict[str, str] = {}
        self.labels: dict[str, str] = {}  # author key (id, else name) → the author's name in the chat

    def name_authors(self, messages: list) -> None:
        """Every author's name in the chat (first pass): nickname, else username; "Nick (username)" for a name
        two accounts show."""
        seen: dict[str, tuple[str, str]] = {}
        for m in messages:
            author = m.get("author") if isinstance(m, dict) else None
            if isinstance(author, dict):
                names = _author_names(author)
                if names is not None:
                    seen.setdefault(names[0], names[1:])
        shown = Counter(display for display, _ in seen.values())
        for key, (display, username) in seen.items():
            label = f"{display} ({username})" if shown[display] > 1 and display != username else display
            self.labels[key] = label
            self.usernames.setdefault(label, username)

    def author(self, author: object) -> str | None:
        if not isinstance(author, dict):
            return None
        own_id = author.get("id")
        if isinstance(own_id, str) and own_id in self.labels:  # named in the first pass
            return self.labels[own_id]
        names = _author_names(author)
        return None if names is None else self.labels.get(names[0], names[1])

    def record(self, message: object, number: int) -> SourceMessage | None:
        skip = self.skips.skip
        if not isinstance(message, dict):
            skip("discord_malformed_message", number, f"a {type(message).__name__}, not an object")
            return None
        own_id = _id(message.get("id"))
        locator = own_id or f"position-{number}"
        timestamp = _timestamp(message.get("timestamp"), self.zone)
        if timestamp is None:
            skip("discord_bad_timestamp", locator, repr(message.get("timestamp"))[:60])
            return None
        author = self.author(message.get("author"))
        if author is None:
            skip("discord_malformed_message", locator, f"author is {_what(message.get('author'))}")
            return None
        content = message.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            skip("discord_malformed_message", locator, f"content is {_what(content)}")
            return None
        placeholders, bad = _media(message)
        if bad:
            skip("discord_malformed_message", locator, bad)
            return None
        text = self.plain(content, message).strip()
        kind_name = message.get("type")
        kind_name = str(kind_name) if isinstance(kind_name, (str, int)) and not isinstance(kind_name, bool) else ""
        if _is_system(kind_name):
            return SourceMessage(own_id or f"position-{number}", timestamp, None,
                                 self.system_text(kind_name, author, text, message), "system")
        reply_to, forwarded = self.reference(message, kind_name)
        forward = message.get("forwardedMessage")
        if forward is not None:
            forwarded = True
            if isinstance(forward, dict):
                more, bad = _media(forward)
                if bad:
                    self.ignored["forwardedMessage"] += 1
                placeholders += more
                inner = forward.get("content")
                inner = self.plain(inner, forward).strip() if isinstance(inner, str) else ""
                text = "\n".join(t for t in (text, inner) if t)
            else:
                self.ignored["forwardedMessage"] += 1
        if not text and not placeholders:
            text = _embeds_text(message.get("embeds"))
        if not text and not placeholders:
            skip("discord_empty_message", locator, "no text, attachment, sticker or embed")
            return None
        author_dict = message["author"]
        if author_dict.get("isBot") is True:
            self.bots.add(author)
            self.bot_messages += 1
        elif "isBot" in author_dict and not isinstance(author_dict["isBot"], bool):
            self.ignored["author.isBot"] += 1
        source_id = own_id or f"position-{number}"
        if placeholders:
            return SourceMessage(source_id, timestamp, author, _body(placeholders, text), "media", reply_to,
                                 forwarded)
        edited = message.get("timestampEdited")
        if edited is not None and not isinstance(edited, str):
            self.ignored["timestampEdited"] += 1
        kind = "edited" if isinstance(edited, str) and edited else "text"
        return SourceMessage(source_id, timestamp, author, text, kind, reply_to, forwarded)

    def reference(self, message: dict, kind_name: str) -> tuple[str | None, bool]:
        """The replied message's source id (a reply's only: a pin's or a crosspost's reference is none) and
        whether the message is a forward."""
        ref = message.get("reference")
        if ref is None:
            return None, False
        if not isinstance(ref, dict):
            self.ignored["reference"] += 1
            return None, False
        if ref.get("type") == "Forward":
            return None, True
        if kind_name not in ("Reply", "19"):
            return None, False
        target = _id(ref.get("messageId"))
        if target is None:
            self.ignored["reference.messageId"] += 1
            return None, False
        channel = _id(ref.get("channelId"))
        if channel is not None and self.channel_id is not None and channel != self.channel_id:
            return f"{channel}/{target}", False  # another channel's message: never one of this chat's ids
        return target, False

    def plain(self, content: str, message: dict) -> str:
        """`content` with raw Discord markup made readable (rendered exports have none: returned as they are)."""
        content = without_surrogates(content)
        if "<" not in content:
            return content
        mentioned: dict[str, str] = {}
        mentions = message.get("mentions")
        if isinstance(mentions, list):
            for user in mentions:
                names = _author_names(user) if isinstance(user, dict) else None
                if names is not None:
                    mentioned[names[0]] = self.labels.get(names[0], names[1])
        elif mentions is not None:
            self.ignored["mentions"] += 1

        def readable(m: re.Match) -> str:
            emoji, user, role, channel, stamp = m.group(2), m.group(3), m.group(4), m.group(5), m.group(6)
            if emoji is not None:
                return f":{emoji}:"
            if user is not None:
                name = mentioned.get(user) or self.labels.get(user)
                return f"@{name}" if name else m.group(0)
            if role is not None:
                return "@role"
            if channel is not None:
                return f"#{self.channel_name}" if channel == self.channel_id and self.channel_name else "#channel"
            try:
                when = datetime.fromtimestamp(int(stamp), self.zone)
            except (ValueError, OverflowError, OSError):
                return m.group(0)
            return when.strftime("%Y-%m-%d %H:%M")

        return _MARKUP.sub(readable, content)

    def system_text(self, kind_name: str, author: str, text: str, message: dict) -> str:
        """"<author> <what happened>": DiscordChatExporter's own sentence when it wrote one, else a wording of the
        kind (with an old export's raw content: a new channel name, a thread's name)."""
        if text and _FALLBACK.match(text):
            return f"{author} {text[0].lower()}{text[1:]}"
        what = _SYSTEM_KINDS.get(kind_name, f"system message ({kind_name})" if kind_name else "system message")
        if kind_name == "Call":
            start = _timestamp(message.get("timestamp"), timezone.utc)
            end = _timestamp(message.get("callEndedTimestamp"), timezone.utc)
            if start is not None and end is not None and end >= start:
                minutes = round((end - start).total_seconds() / 60)
                what = f"started a call that lasted {minutes} minute{'' if minutes == 1 else 's'}"
        elif kind_name in ("RecipientAdd", "RecipientRemove"):
            mentions = message.get("mentions")
            first = mentions[0] if isinstance(mentions, list) and mentions else None
            names = _author_names(first) if isinstance(first, dict) else None
            if names is not None:
                who = self.labels.get(names[0], names[1])
                what = (f"added {who} to the group" if kind_name == "RecipientAdd"
                        else "left the group" if who == author else f"removed {who} from the group")
        return f"{author} {what}: {text}" if text else f"{author} {what}."


def _media(message: dict) -> tuple[list[str], str]:
    """One placeholder per attachment and sticker, and what is malformed ("" when nothing is)."""
    found: list[str] = []
    for key in ("attachments", "stickers"):
        items = message.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            return found, f"{key} is {_what(items)}"
        if not all(isinstance(i, dict) for i in items):
            return found, f"{key} holds something other than objects"
        if key == "stickers":
            found += [STICKER] * len(items)
            continue
        for item in items:
            name = item.get("fileName") if isinstance(item.get("fileName"), str) else item.get("url")
            found.append(_placeholder(name) if isinstance(name, str) else DOCUMENT)
    return found, ""


def _author_names(author: dict) -> tuple[str, str, str] | None:
    """(key, display name, username) of an author or mentioned user; None without a usable name."""
    username = author.get("name")
    nickname = author.get("nickname")
    username = without_surrogates(username.strip()) if isinstance(username, str) and username.strip() else None
    nickname = without_surrogates(nickname.strip()) if isinstance(nickname, str) and nickname.strip() else None
    if username is None and nickname is None:
        return None
    username = username or nickname
    key = _id(author.get("id")) or f"name:{username}"
    return key, nickname or username, username


def _is_system(kind_name: str) -> bool:
    if kind_name in _SYSTEM_KINDS:
        return True
    return kind_name.isdigit() and 1 <= int(kind_name) <= 18  # kinds DiscordChatExporter has no name for


def _what(value: object) -> str:
    return "missing" if value is None else f"a {type(value).__name__}"


def _embeds_text(embeds: object) -> str:
    """The title, description and fields of a message's embeds (a bot's card), as lines."""
    if not isinstance(embeds, list):
        return ""
    lines = []
    for embed in embeds:
        if not isinstance(embed, dict):
            continue
        for key in ("title", "description"):
            if isinstance(embed.get(key), str) and embed[key].strip():
                lines.append(embed[key].strip())
        fields = embed.get("fields")
        for field in fields if isinstance(fields, list) else []:
            if isinstance(field, dict) and isinstance(field.get("name"), str) and isinstance(field.get("value"), str):
                lines.append(f"{field['name'].strip()}: {field['value'].strip()}")
    return without_surrogates("\n".join(lines))


def _read_exporter(data: dict, path: Path, digest: str, zone: tzinfo, skips: SkipCounter) -> WhatsAppChat:
    messages = data.get("messages")
    if not isinstance(messages, list) or not isinstance(data.get("channel"), dict):
        what = "messages" if not isinstance(messages, list) else "channel"
        raise InputFileError(
            f"{path}: JSON with DiscordChatExporter's keys but '{what}' is {_what(data.get(what))}, "
            "not a complete DiscordChatExporter export"
        )
    channel = data["channel"]
    guild = data.get("guild") if isinstance(data.get("guild"), dict) else {}
    chat_type = without_surrogates(channel["type"]) if isinstance(channel.get("type"), str) else None
    guild_name = without_surrogates(guild["name"]) if isinstance(guild.get("name"), str) else None
    channel_id = _id(channel.get("id"))
    own_id = channel_id or path.stem
    channel_name = without_surrogates(channel["name"]) if isinstance(channel.get("name"), str) else None
    direct = chat_type in ("DirectTextChat", "DirectGroupTextChat") or _id(guild.get("id")) == "0"
    name = f"{channel_name} in {guild_name}" if channel_name and guild_name and not direct else channel_name
    reader = _Exporter(channel_id, channel_name, zone, ChatSkips(skips, f"{path}:{name or own_id}"))
    reader.name_authors(messages)
    records = [r for r in (reader.record(m, i) for i, m in enumerate(messages)) if r is not None]
    extra = {
        "chat_type": chat_type,
        "source_chat_id": own_id,
        "guild": guild_name,
        "guild_id": _id(guild.get("id")),
        "category": without_surrogates(channel["category"]) if isinstance(channel.get("category"), str) else None,
        "usernames": reader.usernames,
        "bots": sorted(reader.bots),
        "bot_messages": reader.bot_messages,
        "ignored_fields": dict(reader.ignored),
        "own_messages_only": False,
    }
    if isinstance(data.get("messageCount"), int) and data["messageCount"] != len(messages):
        extra["message_count_declared"] = data["messageCount"]
    return build_chat(records, chat_id=chat_id_for(digest, own_id), path=path, source=SOURCE, name=name,
                      skipped=dict(reader.skips.counts), extra=extra)


# ------------------------------------------------------------------------------------------------ data package


def _read_package_file(path: Path, skips: SkipCounter, zone: tzinfo, owner: str, digest: str | None = None,
                       data: list | None = None) -> WhatsAppChat:
    """One channel of a data package: every message the owner's own."""
    digest = digest or file_sha256(path)
    folder = _CHANNEL_FOLDER.fullmatch(path.parent.name)
    channel = _package_channel(path.parent / "channel.json")
    own_id = _id(channel.get("id")) or (folder.group(1) if folder else path.parent.name or path.stem)
    name = _package_name(path.parent.parent / "index.json", own_id, channel)
    chat_skips = ChatSkips(skips, f"{path}:{name or own_id}")
    if path.name.lower().endswith(".csv"):
        rows, form = _csv_rows(path, chat_skips), "csv"
    else:
        rows, form = (data if data is not None else _package_json(path)), "json"
    records = []
    for number, row in enumerate(rows):
        record = _package_record(row, number, zone, owner, chat_skips)
        if record is not None:
            records.append(record)
    guild = channel.get("guild") if isinstance(channel.get("guild"), dict) else {}
    kind = channel.get("type")
    extra = {
        "chat_type": str(kind) if isinstance(kind, (str, int)) and not isinstance(kind, bool) else None,
        "source_chat_id": own_id,
        "guild": without_surrogates(guild["name"]) if isinstance(guild.get("name"), str) else None,
        "guild_id": _id(guild.get("id")),
        "own_messages_only": True,  # the package holds the owner's messages only: no replies to train on
        "package_form": form,
    }
    return build_chat(records, chat_id=chat_id_for(digest, own_id), path=path, source=SOURCE, name=name,
                      skipped=dict(chat_skips.counts), extra=extra)


def _package_json(path: Path) -> list:
    data = read_export_json(path, _WHAT)
    if not isinstance(data, list):
        found = ", ".join(map(str, list(data)[:6])) if isinstance(data, dict) else type(data).__name__
        raise InputFileError(f"{path}: a data package's messages.json should be an array of messages (found "
                             f"{found}), not a Discord export")
    return data


def _package_channel(path: Path) -> dict:
    """A channel folder's `channel.json`, or {} when it is missing or unreadable (logged: names only)."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig"), strict=False)
    except (OSError, ValueError, RecursionError) as e:
        log.warning("%s: unreadable (%s), the channel is read without its name", path, str(e)[:80])
        return {}
    return data if isinstance(data, dict) else {}


def _package_name(index_path: Path, own_id: str, channel: dict) -> str | None:
    """The channel's name: `messages/index.json`'s ("general in My Server"), else from `channel.json`."""
    if index_path.is_file():
        try:
            index = json.loads(index_path.read_bytes().decode("utf-8-sig"), strict=False)
        except (OSError, ValueError, RecursionError) as e:
            log.warning("%s: unreadable (%s), channel names come from channel.json", index_path, str(e)[:80])
            index = None
        name = index.get(own_id) if isinstance(index, dict) else None
        if isinstance(name, str) and name.strip() and name != "None":
            return without_surrogates(name.strip())
    name = channel.get("name") if isinstance(channel.get("name"), str) and channel["name"].strip() else None
    guild = channel.get("guild") if isinstance(channel.get("guild"), dict) else {}
    if name and isinstance(guild.get("name"), str):
        return without_surrogates(f"{name} in {guild['name']}")
    return without_surrogates(name) if name else None


def _csv_rows(path: Path, skips: ChatSkips) -> list:
    """The rows of an old package's `messages.csv` as dicts keyed by its header; a row with the wrong number of
    fields is skipped, counted. A file cut inside a quoted field is refused, naming the line."""
    text = read_export_text(path, _WHAT)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None or [h.strip().lower() for h in header] != [h.lower() for h in _CSV_HEADER]:
            shown = ",".join(header or [])[:60]
            raise InputFileError(f"{path}: a CSV whose header is not ID,Timestamp,Contents,Attachments "
                                 f"(found {shown!r}), not a Discord data package's messages.csv")
        rows = []
        for row in reader:
            if not row:
                continue
            if len(row) != len(_CSV_HEADER):
                skips.skip("discord_malformed_message", f"line {reader.line_num}",
                           f"{len(row)} fields, not {len(_CSV_HEADER)}")
                continue
            rows.append(dict(zip(_CSV_HEADER, row, strict=True)))
        return rows
    except csv.Error as e:
        early = "; it ends early (a cut copy?)" if "end" in str(e).lower() else ""
        raise InputFileError(f"{path}: not valid CSV (line {reader.line_num}: {e}){early}, "
                             "not a Discord data package's messages.csv") from None


def _package_record(row: object, number: int, zone: tzinfo, owner: str, skips: ChatSkips) -> SourceMessage | None:
    if not isinstance(row, dict):
        skips.skip("discord_malformed_message", number, f"a {type(row).__name__}, not an object")
        return None
    own_id = _id(row.get("ID"))
    locator = own_id or f"position-{number}"
    timestamp = _timestamp(row.get("Timestamp"), zone)
    if timestamp is None:
        skips.skip("discord_bad_timestamp", locator, repr(row.get("Timestamp"))[:60])
        return None
    contents = row.get("Contents")
    contents = "" if contents is None else contents
    attachments = row.get("Attachments")
    attachments = "" if attachments is None else attachments
    if isinstance(attachments, list) and all(isinstance(a, str) for a in attachments):
        attachments = " ".join(attachments)
    for field, value in (("Contents", contents), ("Attachments", attachments)):
        if not isinstance(value, str):
            skips.skip("discord_malformed_message", locator, f"{field} is {_what(value)}")
            return None
    text = without_surrogates(contents).strip()
    placeholders = [_placeholder(url) for url in attachments.split()]
    if not text and not placeholders:
        skips.skip("discord_empty_message", locator, "no text or attachment")
        return None
    source_id = own_id or f"position-{number}"
    if placeholders:
        return SourceMessage(source_id, timestamp, owner, _body(placeholders, text), "media")
    return SourceMessage(source_id, timestamp, owner, text, "text")
