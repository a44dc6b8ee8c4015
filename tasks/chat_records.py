"""What the chat readers other than the WhatsApp `.txt` parser share: a message as a source stores it, and how a
chat's source messages become the same `WhatsAppChat` the `.txt` parser returns (indexes, replies, stats).

Readers of Telegram exports and WhatsApp databases collect `SourceMessage`s per chat and call `build_chat`; the
rest of the pipeline (documents, the messages dataset, sft-data) sees no difference between the sources.
"""

from __future__ import annotations

import codecs
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from storage.fingerprint import hash_file
from storage.schemas import MESSAGE_KINDS
from tasks.records import InputFileError, SkipCounter, stable_id
from tasks.whatsapp.parser import ChatMessage, WhatsAppChat

# Placeholders written for media, worded like WhatsApp's own iOS export so that the clean stage's phrase table
# (tasks.whatsapp.phrases.MEDIA_OMITTED) recognises them whatever the source.
IMAGE, VIDEO, AUDIO, VOICE, STICKER, GIF, DOCUMENT, CONTACT, VIDEO_NOTE, MEDIA = (
    "image omitted", "video omitted", "audio omitted", "voice message omitted", "sticker omitted",
    "GIF omitted", "document omitted", "Contact card omitted", "video note omitted", "<Media omitted>",
)


@dataclass(slots=True)
class SourceMessage:
    """One message as a source stores it, before it gets its index in the chat."""

    source_id: str  # the source's own id of the message (Telegram id, WhatsApp key_id / stanza id)
    timestamp: datetime | None  # naive local time
    author: str | None  # None for system messages
    text: str
    kind: str  # one of storage.schemas.MESSAGE_KINDS
    reply_to_id: str | None = None  # the source's id of the message replied to
    forwarded: bool = False


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (storage.fingerprint.hash_file), a failed read as a one-line InputFileError."""
    try:
        return hash_file(path)
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected a file") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None


def read_export_text(path: Path, what: str) -> str:
    """The text of a UTF-8 export file (a byte-order mark dropped); a one-line InputFileError naming the file when
    it cannot be read, is not UTF-8 (or ends inside a character: a cut copy) or is empty. `what` ends the
    messages: "a Discord export"."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected a file") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = str(memoryview(data)[bom:], "utf-8")
    except UnicodeDecodeError as e:
        if e.reason == "unexpected end of data":
            raise InputFileError(f"{path}: ends inside a character at byte {bom + e.start} (a cut copy?), "
                                 f"not a complete {what.removeprefix('a ')}") from None
        raise InputFileError(f"{path}: not UTF-8 text (byte {bom + e.start}), not {what}") from None
    if not text.strip():
        raise InputFileError(f"{path}: empty file, not {what}")
    return text


def read_export_json(path: Path, what: str) -> object:
    """The JSON of an export file (see `read_export_text`); not JSON is one line with its line and column, saying
    when the text ends early (a cut or unfinished export)."""
    text = read_export_text(path, what)
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError as e:
        rest = text[e.pos:]
        early = not rest.strip() or (e.msg.startswith("Unterminated string") and '"' not in rest[1:])
        ending = "; it ends early (a cut or unfinished export?)" if early else ""
        raise InputFileError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}){ending}, "
                             f"not {what}") from None
    except (ValueError, RecursionError) as e:  # an integer of over 4300 digits; arrays nested thousands deep
        raise InputFileError(f"{path}: JSON this reader cannot hold ({str(e)[:80]}), not {what}") from None


def chat_id_for(file_digest: str, own_id: object) -> str:
    """A chat's id: stable for the same file and chat, different for two chats of one file (32 hex digits)."""
    return stable_id(file_digest, str(own_id))


def resolve_tz(tz: tzinfo | str | None) -> tzinfo:
    """The time zone to write epoch timestamps in: a tzinfo, an IANA name ("Europe/Paris"), or None for UTC."""
    if tz is None:
        return ZoneInfo("UTC")
    if isinstance(tz, str):
        try:
            return ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {tz!r} (expected an IANA name such as 'Europe/Paris')") from None
    return tz


def local_time(epoch_seconds: float, tz: tzinfo) -> datetime:
    """A UTC epoch as naive local wall-clock time in `tz`, like the `.txt` exports write it."""
    return datetime.fromtimestamp(epoch_seconds, tz).replace(tzinfo=None)


def build_chat(
    records: list[SourceMessage],
    *,
    chat_id: str,
    path: Path,
    source: str,
    name: str | None,
    skipped: dict[str, int],
    extra: dict | None = None,
) -> WhatsAppChat:
    """The chat of `records`, in time order (source order among equal times), with replies resolved.

    `reply_to` becomes the replied message's index as a string, or "#<source id>" when that message is not in
    the chat (deleted, or older than what the source kept). `stats` holds what the `.txt` parser's stats hold
    that applies here (messages, kinds, authors, first/last timestamp) plus `source`, `chat_name`, `forwarded`
    (count) and `forwarded_indexes` (so that a persona's SFT can leave forwarded text out), `replies`,
    `replies_unresolved`, `skipped` (reason → records of this chat left out) and `exact_timestamps`.
    """
    order = sorted(range(len(records)), key=lambda i: (records[i].timestamp is None, records[i].timestamp or 0, i))
    ordered = [records[i] for i in order]
    index_of = {}
    for index, r in enumerate(ordered):
        index_of.setdefault(r.source_id, index)
    messages = []
    unresolved = 0
    for index, r in enumerate(ordered):
        reply_to = None
        if r.reply_to_id is not None:
            target = index_of.get(r.reply_to_id)
            if target is None:
                unresolved += 1
                reply_to = f"#{r.reply_to_id}"
            else:
                reply_to = str(target)
        messages.append(
            ChatMessage(chat_id, index, r.timestamp, r.author, r.text, r.kind, path.name, reply_to)
        )
    kinds = Counter(m.kind for m in messages)
    authors = Counter(m.author for m in messages if m.author is not None)
    stamps = [m.timestamp for m in messages if m.timestamp is not None]
    stats = {
        "source": source,
        "chat_name": name,
        "messages": len(messages),
        "kinds": {k: kinds.get(k, 0) for k in MESSAGE_KINDS},
        "authors": dict(authors),
        "first_timestamp": min(stamps).isoformat() if stamps else None,
        "last_timestamp": max(stamps).isoformat() if stamps else None,
        "out_of_order_timestamps": 0,
        "exact_timestamps": True,
        "forwarded": sum(r.forwarded for r in ordered),
        "forwarded_indexes": [i for i, r in enumerate(ordered) if r.forwarded],
        "replies": sum(r.reply_to_id is not None for r in ordered),
        "replies_unresolved": unresolved,
        "skipped": {k: v for k, v in skipped.items() if v},
        **(extra or {}),
    }
    return WhatsAppChat(chat_id=chat_id, source_file=path.name, messages=messages, stats=stats, path=str(path))


class ChatSkips:
    """The records of one chat that a reader skipped, counted in the file's SkipCounter as well."""

    def __init__(self, skips: SkipCounter, where: str) -> None:
        self.skips = skips
        self.where = where
        self.counts: Counter = Counter()

    def skip(self, reason: str, locator: object, detail: str = "") -> None:
        self.counts[reason] += 1
        self.skips.skip(reason, f"{self.where}#{locator}", detail)

