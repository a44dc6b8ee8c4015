"""Reading Telegram Desktop's JSON export (`result.json`) into chats like the WhatsApp `.txt` parser's.

Two shapes of file are read: the export of one chat (top-level `name`, `type`, `id`, `messages`) and the export
of a whole account (`chats.list[…]` and `left_chats.list[…]`, each a chat with its `messages`), which gives one
chat per entry. The format is the one Telegram Desktop writes (Settings → Advanced → Export Telegram data →
JSON); fields relied on, as seen in open parsers (chat-analytics' Telegram.d.ts, tg-parser's format notes):

- `type: "message"`: `id`, `from`, `from_id`, `date` (ISO local time, no offset), `date_unixtime`, `text` (a
  string, or a list of strings and `{type, text}` entity objects: bold, link, text_link, mention…),
  `reply_to_message_id`, `forwarded_from`, `edited`, media (`photo`, `file`, `media_type`: sticker,
  voice_message, video_message, video_file, animation, audio_file; `sticker_emoji`), `poll` (`question`,
  `answers[{text, voters}]`), `contact_information`, `location_information`;
- `type: "service"`: `actor`, `action` (create_group, invite_members, remove_members, pin_message, phone_call,
  join_group_by_link, edit_group_title…), `title`, `members`, `duration_seconds`, `discard_reason`.

Kinds: text; "edited" for a message Telegram marks `edited` (as the `.txt` parser does for WhatsApp's
"<This message was edited>"); "media" with a placeholder worded like WhatsApp's ("image omitted", a caption on
the next line); "poll" written as WhatsApp writes polls ("POLL:" / "OPTION: … (n votes)"); "system" for service
messages, without author. Forwarded messages are kept as they are and counted (`stats["forwarded"]`,
`stats["forwarded_indexes"]`). Timestamps are `date` as written (local time); `date_unixtime` converted with
`tz` (default UTC) only when `date` is missing.

The file is parsed whole with the stdlib `json` (an account export can be hundreds of MB: it is held in memory
once; a streaming parser is left for when that matters).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime, tzinfo
from pathlib import Path

from tasks.chat_records import (
    AUDIO,
    CONTACT,
    DOCUMENT,
    GIF,
    IMAGE,
    MEDIA,
    STICKER,
    VIDEO,
    VIDEO_NOTE,
    VOICE,
    ChatSkips,
    SourceMessage,
    build_chat,
    chat_id_for,
    file_sha256,
    local_time,
    resolve_tz,
)
from tasks.records import InputFileError, SkipCounter
from tasks.whatsapp.parser import WhatsAppChat

SOURCE = "telegram"
_MEDIA_TYPES = {
    "sticker": STICKER,
    "voice_message": VOICE,
    "video_message": VIDEO_NOTE,
    "video_file": VIDEO,
    "animation": GIF,
    "audio_file": AUDIO,
}


def read_telegram_export(
    path: str | os.PathLike, skips: SkipCounter | None = None, *, tz: tzinfo | str | None = None
) -> list[WhatsAppChat]:
    """Every chat of a Telegram Desktop JSON export, one `WhatsAppChat` each, in file order.

    `chat_id` is derived from the file's sha256 and the chat's own Telegram id. Records that cannot be read
    (no date, a text of the wrong type, an unknown record type, nothing to show) are skipped and counted in
    `skips` and in the chat's `stats["skipped"]`; a chat without any readable message is still returned
    (empty). Raises InputFileError, naming the file, when it is not a Telegram export at all.
    """
    path = Path(path)
    skips = skips if skips is not None else SkipCounter()
    zone = resolve_tz(tz)
    digest = file_sha256(path)
    data = _load(path)
    chats = []
    for position, raw in enumerate(_raw_chats(data, path)):
        chats.append(_read_chat(raw, position, path, digest, zone, skips))
    return chats


def looks_like_telegram(path: str | os.PathLike, head_bytes: int = 4096) -> bool:
    """Cheap sniff for input-kind detection: a `.json` whose head reads like a Telegram Desktop export."""
    try:
        with open(path, "rb") as f:
            head = f.read(head_bytes).decode("utf-8", errors="ignore")
    except OSError:
        return False
    head = head.lstrip("\ufeff \t\r\n")
    return head.startswith("{") and (
        ('"messages"' in head and '"type"' in head) or '"personal_information"' in head or '"chats"' in head
    )


def _load(path: Path) -> object:
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise InputFileError(f"{path}: not UTF-8 text (byte {e.start}), not a Telegram JSON export") from None
    except json.JSONDecodeError as e:
        raise InputFileError(
            f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}), not a Telegram JSON export"
        ) from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected Telegram's result.json") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None


def _raw_chats(data: object, path: Path) -> Iterator[dict]:
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        yield data
        return
    found = False
    if isinstance(data, dict):
        for section in ("chats", "left_chats"):
            listing = data.get(section)
            if isinstance(listing, dict) and isinstance(listing.get("list"), list):
                found = True
                yield from (c for c in listing["list"] if isinstance(c, dict))
    if not found:
        keys = ", ".join(list(data)[:6]) if isinstance(data, dict) else type(data).__name__
        raise InputFileError(
            f"{path}: JSON without 'messages' or 'chats.list' (found {keys}), not a Telegram Desktop export "
            "(Settings → Advanced → Export Telegram data, format JSON)"
        )


def _read_chat(raw: dict, position: int, path: Path, digest: str, zone: tzinfo, skips: SkipCounter) -> WhatsAppChat:
    own_id = raw.get("id", f"position-{position}")
    name = raw.get("name") if isinstance(raw.get("name"), str) else None
    chat_skips = ChatSkips(skips, f"{path}:{name or own_id}")
    records = []
    for number, message in enumerate(raw.get("messages") or []):
        record = _read_message(message, number, zone, chat_skips)
        if record is not None:
            records.append(record)
    return build_chat(
        records,
        chat_id=chat_id_for(digest, own_id),
        path=path,
        source=SOURCE,
        name=name,
        skipped=dict(chat_skips.counts),
        extra={"chat_type": raw.get("type"), "source_chat_id": str(own_id)},
    )


def _read_message(message: object, number: int, zone: tzinfo, skips: ChatSkips) -> SourceMessage | None:
    if not isinstance(message, dict):
        skips.skip("telegram_malformed_message", number, f"a {type(message).__name__}, not an object")
        return None
    locator = message.get("id", number)
    timestamp = _timestamp(message, zone)
    if timestamp is None:
        skips.skip("telegram_bad_date", locator, repr(message.get("date"))[:60])
        return None
    text = _flatten(message.get("text", ""))
    if text is None:
        skips.skip("telegram_malformed_message", locator, f"text is a {type(message.get('text')).__name__}")
        return None
    text = text.strip()  # as the .txt parser keeps a message's text
    source_id = str(message.get("id", f"position-{number}"))
    kind_of_record = message.get("type")
    if kind_of_record == "service":
        return SourceMessage(source_id, timestamp, None, _service_text(message), "system")
    if kind_of_record != "message":
        skips.skip("telegram_unknown_record", locator, f"type {kind_of_record!r}")
        return None
    author = message.get("from") or message.get("from_id") or "Deleted Account"
    reply = message.get("reply_to_message_id")
    reply_to = str(reply) if reply is not None else None
    forwarded = bool(message.get("forwarded_from") or message.get("saved_from"))
    if isinstance(message.get("poll"), dict):
        return SourceMessage(source_id, timestamp, str(author), _poll_text(message["poll"]), "poll", reply_to, forwarded)
    placeholder = _media_placeholder(message)
    if placeholder is not None:
        body = f"{placeholder}\n{text}" if text.strip() else placeholder
        return SourceMessage(source_id, timestamp, str(author), body, "media", reply_to, forwarded)
    if not text.strip():
        skips.skip("telegram_empty_message", locator, "no text, media or poll")
        return None
    kind = "edited" if message.get("edited") else "text"
    return SourceMessage(source_id, timestamp, str(author), text, kind, reply_to, forwarded)


def _timestamp(message: dict, zone: tzinfo) -> datetime | None:
    date = message.get("date")
    if isinstance(date, str):
        try:
            return datetime.fromisoformat(date).replace(tzinfo=None)
        except ValueError:
            pass
    unix = message.get("date_unixtime")
    try:
        return local_time(int(unix), zone) if unix is not None else None
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _flatten(text: object) -> str | None:
    """Plain text of a `text` field: a string, or a list of strings and entity objects whose `text` is kept
    (a link's visible text, a mention, bold…); None when it is neither."""
    if isinstance(text, str):
        return text
    if not isinstance(text, list):
        return None
    parts = []
    for part in text:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        else:
            return None
    return "".join(parts)


def _media_placeholder(message: dict) -> str | None:
    media_type = message.get("media_type")
    if media_type in _MEDIA_TYPES:
        return _MEDIA_TYPES[media_type]
    if "photo" in message:
        return IMAGE
    if "file" in message:
        return DOCUMENT
    if "contact_information" in message:
        return CONTACT
    if "location_information" in message or "place_name" in message:
        return MEDIA
    if media_type is not None:
        return MEDIA
    return None


def _poll_text(poll: dict) -> str:
    lines = ["POLL:", str(poll.get("question", ""))]
    for answer in poll.get("answers") or []:
        if isinstance(answer, dict):
            votes = answer.get("voters", 0)
            lines.append(f"OPTION: {answer.get('text', '')} ({votes} vote{'' if votes == 1 else 's'})")
    return "\n".join(lines)


def _service_text(message: dict) -> str:
    actor = message.get("actor") or message.get("actor_id") or "Someone"
    action = message.get("action") or "service message"
    members = ", ".join(str(m) for m in message.get("members") or [] if m)
    title = message.get("title")
    if action == "create_group":
        return f'{actor} created group "{title}"' if title else f"{actor} created the group"
    if action == "invite_members":
        return f"{actor} added {members}" if members else f"{actor} added members"
    if action == "remove_members":
        return f"{actor} removed {members}" if members else f"{actor} removed members"
    if action == "join_group_by_link":
        return f"{actor} joined using an invite link"
    if action == "pin_message":
        return f"{actor} pinned a message"
    if action == "edit_group_title":
        return f'{actor} changed the group name to "{title}"'
    if action == "edit_group_photo":
        return f"{actor} changed the group photo"
    if action == "phone_call":
        seconds = message.get("duration_seconds")
        if message.get("discard_reason") == "missed":
            return f"Missed call from {actor}"
        return f"{actor} called ({seconds} s)" if seconds else f"{actor} called"
    if action == "migrate_to_supergroup":
        return f"{actor} converted the group to a supergroup"
    return f"{actor}: {action.replace('_', ' ')}"
