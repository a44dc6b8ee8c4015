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

Telegram Desktop writes two kinds of invalid JSON, which are repaired before giving up on a file: control
characters in a text escaped as `\\x0B` (every version; tdesktop issue #27571), and 4.1.x's unquoted custom-emoji
`"document_id": video_files/sticker.webm` (tdesktop #24961). A `reply_to_peer_id` marks a reply to a message of
another chat: it is kept unresolved (`#<peer>/<id>`), never matched against this chat's ids. Lone UTF-16
surrogates (a `\\ud83d` escape without its pair, written by tools that re-save exports) become U+FFFD, since
they cannot be written as UTF-8.

The file is parsed whole with the stdlib `json` (an account export can be hundreds of MB: it is held in memory
once; a streaming parser is left for when that matters; 200k messages, 70 MB, read in about 3 s, 400 MB peak).
"""

from __future__ import annotations

import json
import os
import re
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
# media without a file of their own, written as the generic placeholder (Desktop's keys for each)
_OTHER_MEDIA_KEYS = ("location_information", "place_name", "game_title", "invoice_information",
                     "giveaway_information", "giveaway_results", "paid_stars_amount", "todo_list")
_RECORD_TYPES = ("message", "service", "unsupported")
_HEX_ESCAPE = re.compile(r"\\(\\|x([0-9A-Fa-f]{2}))")  # an escaped backslash is consumed whole, never split
_BARE_DOCUMENT_ID = re.compile(r'("document_id": )(?![\s"\d-])([^\r\n]*)')
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_telegram_export(
    path: str | os.PathLike, skips: SkipCounter | None = None, *, tz: tzinfo | str | None = None
) -> list[WhatsAppChat]:
    """Every chat of a Telegram Desktop JSON export, one `WhatsAppChat` each, in file order.

    `chat_id` is derived from the file's sha256 and the chat's own Telegram id. Records that cannot be read
    (no date, a text of the wrong type, an unknown or unsupported record type, nothing to show) are skipped and
    counted in `skips` and in the chat's `stats["skipped"]`; a chat without any readable message is still
    returned (empty); an entry of an account's chat list that is not a chat with a `messages` list is skipped
    and counted (`telegram_malformed_chat`). Raises InputFileError, naming the file, when it is not a Telegram
    export at all (not JSON even after repair, cut short, another program's JSON).
    """
    path = Path(path)
    skips = skips if skips is not None else SkipCounter()
    zone = resolve_tz(tz)
    digest = file_sha256(path)
    data = _load(path)
    chats = []
    for position, raw in enumerate(_raw_chats(data, path)):
        if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list):
            what = "messages" if isinstance(raw, dict) else "chat"
            found = raw.get("messages") if isinstance(raw, dict) else raw
            skips.skip("telegram_malformed_chat", f"{path}:chat {position}", f"{what} is a {type(found).__name__}")
            continue
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
            text = f.read().decode("utf-8-sig")
        if not text.strip():
            raise InputFileError(f"{path}: empty file, not a Telegram JSON export")
        return _parse_json(text)
    except InputFileError:
        raise
    except UnicodeDecodeError as e:
        raise InputFileError(f"{path}: not UTF-8 text (byte {e.start}), not a Telegram JSON export") from None
    except json.JSONDecodeError as e:
        # Desktop writes the file as it goes, and every result.json ends with its top object's "}"
        ending = "; it ends early (an unfinished export?)" if not text.rstrip().endswith("}") else ""
        raise InputFileError(
            f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}){ending}, not a Telegram JSON export"
        ) from None
    except (ValueError, RecursionError) as e:  # an integer of over 4300 digits; arrays nested thousands deep
        raise InputFileError(
            f"{path}: JSON this reader cannot hold ({str(e)[:80]}), not a Telegram JSON export"
        ) from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected Telegram's result.json") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None


def _parse_json(text: str) -> object:
    """The JSON in `text`; when it does not parse, again after repairing what Telegram Desktop writes wrongly
    (see the module's docstring). The first error is the one raised when the repair does not help."""
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError as first:
        repaired = _HEX_ESCAPE.sub(lambda m: "\\\\" if m.group(2) is None else "\\u00" + m.group(2), text)
        repaired = _BARE_DOCUMENT_ID.sub(lambda m: m.group(1) + json.dumps(m.group(2).strip()), repaired)
        if repaired == text:
            raise
        try:
            return json.loads(repaired, strict=False)
        except json.JSONDecodeError:
            raise first from None


def _raw_chats(data: object, path: Path) -> Iterator[object]:
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        records = data["messages"]
        if records and not any(isinstance(m, dict) and m.get("type") in _RECORD_TYPES for m in records):
            raise InputFileError(
                f"{path}: JSON with 'messages' but none of type message or service (another program's export?), "
                "not a Telegram Desktop export"
            )
        yield data
        return
    found = False
    if isinstance(data, dict):
        for section in ("chats", "left_chats"):
            listing = data.get(section)
            if isinstance(listing, dict) and isinstance(listing.get("list"), list):
                found = True
                yield from listing["list"]
    if not found:
        keys = ", ".join(list(data)[:6]) if isinstance(data, dict) else type(data).__name__
        raise InputFileError(
            f"{path}: JSON without 'messages' or 'chats.list' (found {keys}), not a Telegram Desktop export "
            "(Settings → Advanced → Export Telegram data, format JSON)"
        )


def _read_chat(raw: dict, position: int, path: Path, digest: str, zone: tzinfo, skips: SkipCounter) -> WhatsAppChat:
    own_id = _valid_text(str(_id_or(raw.get("id"), f"position-{position}")))
    name = _valid_text(raw["name"]) if isinstance(raw.get("name"), str) else None
    chat_type = _valid_text(raw["type"]) if isinstance(raw.get("type"), str) else None
    chat_skips = ChatSkips(skips, f"{path}:{name or own_id}")
    records = []
    for number, message in enumerate(raw["messages"]):
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
        extra={"chat_type": chat_type, "source_chat_id": own_id},
    )


def _read_message(message: object, number: int, zone: tzinfo, skips: ChatSkips) -> SourceMessage | None:
    if not isinstance(message, dict):
        skips.skip("telegram_malformed_message", number, f"a {type(message).__name__}, not an object")
        return None
    locator = _valid_text(str(_id_or(message.get("id"), number)))
    kind_of_record = message.get("type")
    if kind_of_record == "unsupported":  # Desktop writes only the id of a message it cannot export
        skips.skip("telegram_unsupported_message", locator, "exported without content")
        return None
    if kind_of_record not in ("message", "service"):
        skips.skip("telegram_unknown_record", locator, f"type {kind_of_record!r}"[:60])
        return None
    timestamp = _timestamp(message, zone)
    if timestamp is None:
        skips.skip("telegram_bad_date", locator, repr(message.get("date"))[:60])
        return None
    raw_text = message.get("text")
    if raw_text is None:  # a third-party writer may leave `text` out (or null) and keep `text_entities`
        raw_text = message.get("text_entities") or ""
    text = _flatten(raw_text)
    if text is None:
        skips.skip("telegram_malformed_message", locator, f"text is a {type(raw_text).__name__}")
        return None
    text = _valid_text(text.strip())  # as the .txt parser keeps a message's text
    source_id = locator if _id_or(message.get("id"), None) is not None else f"position-{number}"
    if kind_of_record == "service":
        return SourceMessage(source_id, timestamp, None, _valid_text(_service_text(message)), "system")
    author = _valid_text(_name(message.get("from")) or _name(message.get("from_id")) or "Deleted Account")
    reply_to = _reply_to(message)
    forwarded = "forwarded_from" in message or "saved_from" in message  # null: from a deleted or hidden account
    if isinstance(message.get("poll"), dict):
        return SourceMessage(source_id, timestamp, author, _valid_text(_poll_text(message["poll"])), "poll",
                             reply_to, forwarded)
    placeholder = _media_placeholder(message)
    if placeholder is not None:
        body = f"{placeholder}\n{text}" if text else placeholder
        return SourceMessage(source_id, timestamp, author, body, "media", reply_to, forwarded)
    if not text:
        skips.skip("telegram_empty_message", locator, "no text, media or poll")
        return None
    kind = "edited" if message.get("edited") else "text"
    return SourceMessage(source_id, timestamp, author, text, kind, reply_to, forwarded)


def _id_or(value: object, default: object) -> object:
    """`value` when it can be an id (an int or a string), else `default`."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else default


def _name(value: object) -> str | None:
    """A person's or chat's name as a string: a string or a number as written; anything else is no name."""
    value = _id_or(value, None)
    return str(value) if value not in (None, "") else None


def _valid_text(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def _reply_to(message: dict) -> str | None:
    """The source id of the replied message; a message of another chat (`reply_to_peer_id`) as "<peer>/<id>",
    which no message of this chat has."""
    reply = _id_or(message.get("reply_to_message_id"), None)
    if reply is None:
        return None
    peer = _id_or(message.get("reply_to_peer_id"), None)
    return _valid_text(f"{peer}/{reply}" if peer is not None else str(reply))


def _timestamp(message: dict, zone: tzinfo) -> datetime | None:
    date = message.get("date")
    if isinstance(date, str):
        try:
            return datetime.fromisoformat(date).replace(tzinfo=None)
        except ValueError:
            pass
    unix = _id_or(message.get("date_unixtime"), None)  # a string in Desktop's files; an int from other writers
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
    if isinstance(media_type, str) and media_type in _MEDIA_TYPES:
        return _MEDIA_TYPES[media_type]
    if "photo" in message:
        return IMAGE
    if "file" in message:
        return DOCUMENT
    if "contact_information" in message:
        return CONTACT
    if any(key in message for key in _OTHER_MEDIA_KEYS):
        return MEDIA
    if media_type is not None:
        return MEDIA
    return None


def _poll_text(poll: dict) -> str:
    lines = ["POLL:", _flatten(poll.get("question")) or ""]
    answers = poll.get("answers")
    for answer in answers if isinstance(answers, list) else []:
        if isinstance(answer, dict):
            votes = answer.get("voters", 0)
            text = _flatten(answer.get("text")) or ""
            lines.append(f"OPTION: {text} ({votes} vote{'' if votes == 1 else 's'})")
    return "\n".join(lines)


def _service_text(message: dict) -> str:
    actor = _name(message.get("actor")) or _name(message.get("actor_id")) or "Someone"
    action = message.get("action")
    if not isinstance(action, str) or not action:
        # a bot's custom action has no `action`, only its wording
        info = message.get("information_text")
        return info if isinstance(info, str) and info.strip() else f"{actor}: service message"
    listed = message.get("members")
    members = ", ".join(name for name in map(_name, listed if isinstance(listed, list) else []) if name)
    title = _name(message.get("title"))
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
        return f'{actor} changed the group name to "{title}"' if title else f"{actor} changed the group name"
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
