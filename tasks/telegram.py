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
`tz` (default UTC) only when `date` is missing, a fraction of a second (1714557600.5, written by tools that re-save
the export) floored to the second. A part of a `text` list with no text of its own (a number, null, a nested list,
an entity without a string `text`) is left out and counted (`telegram_bad_entity`, one a part): the message keeps
the text of the others. Desktop writes `text` and `text_entities` from one list of parts (tdesktop's
`SerializeText`: the same parts in the same order, a plain part a string in one and a `{"type": "plain"}` entity in
the other), so when `text_entities` has as many parts and agrees with `text` on every part both hold, a bad part of
`text` is read from it and nothing is lost (a part bad in both is still counted). A poll's question and answers
are read the same way, a part of them without text (or an answer that is no object) counted as
`telegram_bad_entity` too, named `poll.question[i]`, `poll.answers[j].text[i]`. Ids, counts and durations written
as floats without a fraction (123.0, by tools that re-save the JSON through JavaScript or pandas) are read as ints.

Telegram Desktop writes two kinds of invalid JSON, which are repaired before giving up on a file: control
characters in a text escaped as `\\x0B` (every version; tdesktop issue #27571), and 4.1.x's unquoted custom-emoji
`"document_id": video_files/sticker.webm` (tdesktop #24961). A `reply_to_peer_id` marks a reply to a message of
another chat: it is kept unresolved (`#<peer>/<id>`), never matched against this chat's ids. Lone UTF-16
surrogates (a `\\ud83d` escape without its pair, written by tools that re-save exports) become U+FFFD, since
they cannot be written as UTF-8. A file re-saved in another encoding is read as its byte-order mark says (UTF-8,
UTF-16 LE or BE, UTF-32 LE or BE) or, without one, as the NUL bytes around its first characters say
(`json.detect_encoding`); the repairs and the salvage below work the same on all of them.

The file is parsed whole with the stdlib `json` (an account export can be hundreds of MB: it is held in memory
once; a streaming parser is left for when that matters; 200k messages, 70 MB, read in about 3 s, 400 MB peak).

An export that ends early (Desktop crashed or was stopped, the disk filled up, a partial download or copy) is
salvaged rather than refused, when the whole-file parse (after the repair) fails only because the text runs out,
not on a syntax error before the end (that stays the file's one-line error: nothing is guessed past it). The
top object is then read member by member, and so are a chat's `messages`, an account's `chats` / `left_chats`,
their `list` and each chat in it, with `json.JSONDecoder.raw_decode` on the same text (no copy): every complete
message is kept, the one cut is not, a message is never kept in part; an account keeps its complete chats and
the complete messages of the chat cut (an empty chat when the file ends right after its `"messages": [`, nothing
of a chat cut before its messages). A file cut inside a character is read without it. What is lost is
counted once: `telegram_truncated_export` in the skip counter, located by the byte offset (in the file, before
any repair) where reading stopped (the first record not kept), and in the cut chat's `stats["skipped"]`, with
`stats["truncated"] = True` and `stats["truncated_at_byte"]`; when the file ends outside any chat's messages
(between two chats) the skip is the file's. One warning names the file. A file cut before its first complete
message stays a one-line error ("it ends early (an unfinished export?) before its first complete message").
"""

from __future__ import annotations

import codecs
import json
import logging
import math
import os
import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo
from json.decoder import scanstring
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
from tasks.records import InputFileError, SkipCounter, without_surrogates
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
_WS = re.compile(r"[ \t\n\r]*")
_WS_ONLY = re.compile(r"\s*")
# what may be left after the position of an "Expecting …" error when the text ends there: the start of a value
# (of true, false, null or a negative number), of a number's fraction or exponent, else only whitespace
_CUT_TOKEN = {"Expecting value": re.compile(r"(-|t|tr|tru|f|fa|fal|fals|n|nu|nul)?\s*"),
              "Expecting ',' delimiter": re.compile(r"([.eE][0-9eE+-]*)?\s*")}
_DECODER = json.JSONDecoder(strict=False)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_PIECE = 1 << 20
_UNIX_TEXT = re.compile(r"\s*-?\d{1,19}(\.\d*)?\s*")
log = logging.getLogger(__name__)


def read_telegram_export(
    path: str | os.PathLike, skips: SkipCounter | None = None, *, tz: tzinfo | str | None = None
) -> list[WhatsAppChat]:
    """Every chat of a Telegram Desktop JSON export, one `WhatsAppChat` each, in file order.

    `chat_id` is derived from the file's sha256 and the chat's own Telegram id. Records that cannot be read
    (no date, a text of the wrong type, an unknown or unsupported record type, nothing to show) are skipped and
    counted in `skips` and in the chat's `stats["skipped"]`, and so is each part of a message's text (that its
    `text_entities` cannot give) or of a poll's question or answers that has no text (`telegram_bad_entity`; the
    message is kept); a chat without any readable message is still
    returned (empty); an entry of an account's chat list that is not a chat with a `messages` list is skipped
    and counted (`telegram_malformed_chat`). An export that ends early keeps its complete messages and chats and
    counts the cut (`telegram_truncated_export`, see the module's docstring). Raises InputFileError, naming the
    file, when it is not a Telegram export at all (not JSON even after repair, cut short before its first
    complete message, another program's JSON).
    """
    path = Path(path)
    skips = skips if skips is not None else SkipCounter()
    zone = resolve_tz(tz)
    digest = file_sha256(path)
    data, cut = _load(path)
    chats = []
    for position, raw in enumerate(_raw_chats(data, path)):
        if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list):
            what = "messages" if isinstance(raw, dict) else "chat"
            found = raw.get("messages") if isinstance(raw, dict) else raw
            skips.skip("telegram_malformed_chat", f"{path}:chat {position}", f"{what} is a {type(found).__name__}")
            continue
        cut_here = cut is not None and raw is cut.chat
        chats.append(_read_chat(raw, position, path, digest, zone, skips, cut if cut_here else None))
    if cut is not None:
        log.warning("%s ends early (an unfinished export?): kept %d complete messages in %d chats, the rest from "
                    "byte %d on is lost", path, cut.kept, len(chats), cut.offset)
        if cut.chat is None:  # the file ends between chats or outside them: what is lost is no chat's
            skips.skip("telegram_truncated_export", f"{path}@byte {cut.offset}", _lost(cut))
    return chats


def _lost(cut: _Cut) -> str:
    return f"the file ends early (an unfinished export?), {cut.kept} complete messages kept, the rest lost"


def looks_like_telegram(path: str | os.PathLike, head_bytes: int = 4096) -> bool:
    """Cheap sniff for input-kind detection: a `.json` whose head reads like a Telegram Desktop export."""
    try:
        with open(path, "rb") as f:
            head = f.read(head_bytes)
            encoding, bom = _encoding(head[:4])
            if encoding != "utf-8":  # as many characters as a UTF-8 head of ASCII would hold
                head += f.read(head_bytes * (2 if encoding.startswith("utf-16") else 4) - len(head))
    except OSError:
        return False
    head = head[bom:].decode(encoding, errors="ignore").lstrip("\ufeff \t\r\n")
    return head.startswith("{") and (
        ('"messages"' in head and '"type"' in head) or '"personal_information"' in head or '"chats"' in head
    )


@dataclass
class _Cut:
    """Where an export that ends early stopped being read: the byte `offset` of the first record not kept (after
    the last complete message), the chat that was cut (the salvaged object, or None when the file ends outside any
    chat's messages) and how many complete messages were kept in all."""

    offset: int
    chat: dict | None
    kept: int


def _load(path: Path) -> tuple[object, _Cut | None]:
    """The file's JSON, and None; or, for an export that ends early, what came before the cut and where it is."""
    encoding = "utf-8"
    try:
        with open(path, "rb") as f:
            data = f.read()
        encoding, bom = _encoding(data[:4])
        end = len(data)
        try:
            text = _decode(memoryview(data)[bom:], encoding)
        except UnicodeDecodeError as e:
            if e.reason not in ("unexpected end of data", "truncated data") or bom + e.end != end:
                raise InputFileError(
                    f"{path}: not {_label(encoding)} text (byte {bom + e.start}), not a Telegram JSON export"
                ) from None
            end = bom + e.start  # the file ends inside a character: an export cut short, read without it
            text = _decode(memoryview(data)[bom:end], encoding)
        del data
        if not text or text.isspace():
            raise InputFileError(f"{path}: empty file, not a Telegram JSON export")
        data, salvaged = _parse_json(text)
        if salvaged is None:
            return data, None
        return data, _cut_of(data, salvaged, text, end, encoding)
    except InputFileError:
        raise
    except json.JSONDecodeError as e:
        # Desktop writes the file as it goes, and every result.json ends with its top object's "}" (after which
        # anything is extra data, not an early end)
        early = getattr(e, "ends_early", False) or not (_ends_with_brace(e.doc) or e.msg.startswith("Extra data"))
        ending = "; it ends early (an unfinished export?)" if early else ""
        before = " before its first complete message" if getattr(e, "ends_early", False) else ""
        read_as = "" if encoding == "utf-8" else f"read as {_label(encoding)}, "
        raise InputFileError(
            f"{path}: not valid JSON ({read_as}line {e.lineno}, column {e.colno}: {e.msg}){ending}{before}, "
            "not a Telegram JSON export"
        ) from None
    except (ValueError, RecursionError) as e:  # an integer of over 4300 digits; arrays nested thousands deep
        raise InputFileError(
            f"{path}: JSON this reader cannot hold ({str(e)[:80]}), not a Telegram JSON export"
        ) from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected Telegram's result.json") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None


def _encoding(head: bytes) -> tuple[str, int]:
    """The encoding of a JSON file by its first four bytes, and the length of its byte-order mark: UTF-8, UTF-16 or
    UTF-32 as the mark says (UTF-32 LE's starts with UTF-16 LE's, so it is tried first); without a mark, UTF-16 or
    UTF-32 when the NUL bytes are where those encodings put them around JSON's first two (ASCII) characters, as
    `json.detect_encoding` tells them, else UTF-8."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding, len(bom)
    return json.detect_encoding(head), 0


def _decode(data: memoryview, encoding: str) -> str:
    # UTF-16 and UTF-32 can hold lone surrogates (tools that re-save exports write them); they are kept, as a
    # `\ud83d` escape's are, and become U+FFFD where the text is read. UTF-8 cannot: it stays strict.
    return str(data, encoding) if encoding == "utf-8" else str(data, encoding, "surrogatepass")


def _label(encoding: str) -> str:
    """The encoding's name as a user knows it: UTF-16 LE for utf-16-le."""
    return encoding.upper().replace("-LE", " LE").replace("-BE", " BE")


def _ends_with_brace(text: str) -> bool:
    end = len(text)
    while end and text[end - 1].isspace():  # no rstrip(): it would copy the whole text
        end -= 1
    return text[end - 1:end] == "}"


@dataclass
class _Salvaged:
    """What came before the cut of a text that ends early: `stop`, the position (in the text salvaged, repaired
    when it needed a repair) of the first record not kept; `chat_path`, the path of the chat that was cut (None
    outside any chat); `to_original`, a position of that text in the text before the repair."""

    stop: int
    chat_path: tuple | None
    to_original: Callable[[int], int]


def _parse_json(text: str) -> tuple[object, _Salvaged | None]:
    """The JSON in `text`; when it does not parse, again after repairing what Telegram Desktop writes wrongly
    (see the module's docstring); when that text ends early (an export cut short), what came before the cut
    (`_salvage`), with where it stopped. The first error is the one raised when neither helps."""
    try:
        return json.loads(text, strict=False), None
    except json.JSONDecodeError as first:
        source, error, to_original = text, first, _unchanged
        repaired, to_original = _repair(text)
        if repaired != text:
            try:
                return json.loads(repaired, strict=False), None
            except json.JSONDecodeError as second:
                source, error = repaired, second
        if not _ends_early(source, error):
            raise first from None
        try:
            salvaged = _salvage(source)
        except json.JSONDecodeError:  # not met: json found no error before the end
            raise first from None
        if salvaged is None or not _messages_kept(salvaged[0]):
            first.ends_early = True  # a file cut before its first complete message: its one-line error says so
            raise first from None
        data, stop, chat_path = salvaged
        return data, _Salvaged(stop, chat_path, to_original)


def _messages_kept(data: dict) -> int:
    """How many messages a salvaged export holds: its own, or its chats' (complete or cut)."""
    if "messages" in data:
        chats = [data]
    else:
        chats = [entry for section in ("chats", "left_chats") if isinstance(data.get(section), dict)
                 and isinstance(data[section].get("list"), list) for entry in data[section]["list"]]
    return sum(len(c["messages"]) for c in chats if isinstance(c, dict) and isinstance(c.get("messages"), list))


def _unchanged(position: int) -> int:
    return position


def _repair(text: str) -> tuple[str, Callable[[int], int]]:
    """`text` with Desktop's `\\xNN` escapes and unquoted `document_id`s repaired, and the function that takes a
    position of the repaired text (outside a repaired span) back to `text`'s."""
    repaired, back_hex = _sub_tracked(
        _HEX_ESCAPE, lambda m: "\\\\" if m.group(2) is None else "\\u00" + m.group(2), text)
    repaired, back_id = _sub_tracked(
        _BARE_DOCUMENT_ID, lambda m: m.group(1) + json.dumps(m.group(2).strip()), repaired)
    return repaired, lambda position: back_hex(back_id(position))


def _sub_tracked(pattern: re.Pattern, replace: Callable[[re.Match], str], text: str
                 ) -> tuple[str, Callable[[int], int]]:
    ends, shifts = array("q"), array("q")  # where a replacement that changed the length ends, the shift so far
    shift = 0

    def tracked(m: re.Match) -> str:
        nonlocal shift
        new = replace(m)
        if len(new) != m.end() - m.start():
            shift += len(new) - (m.end() - m.start())
            ends.append(m.end() + shift)
            shifts.append(shift)
        return new

    result = pattern.sub(tracked, text)
    return result, lambda position: position - (shifts[i - 1] if (i := bisect_right(ends, position)) else 0)


def _ends_early(text: str, error: json.JSONDecodeError) -> bool:
    """Whether `error` is the text running out (an export cut short), not a syntax error before its end: a
    string left open, an escape cut, or a value, `,` `:` or name expected where only the start of a number or
    of true/false/null (or nothing) is left."""
    if error.msg.startswith("Unterminated string"):  # the scanner found no closing quote before the end
        return True
    if error.msg.startswith("Invalid \\"):  # "\\x0", "\\ud8": an escape cut, when no quote follows
        return text.find('"', error.pos) < 0
    if not error.msg.startswith("Expecting"):
        return False
    return _CUT_TOKEN.get(error.msg, _WS_ONLY).fullmatch(text, error.pos) is not None


def _descends(path: tuple) -> bool:
    """Whether the container at `path` is read member by member when the text ends inside it (`_salvage`): the
    top object, a chat's `messages`, an account's `chats` / `left_chats`, their `list` and each chat in it."""
    if len(path) <= 1:
        return not path or path[0] in ("messages", "chats", "left_chats")
    rest = path[1:]
    return path[0] in ("chats", "left_chats") and rest[0] == "list" and (
        len(rest) <= 2 or (len(rest) == 3 and rest[2] == "messages"))


def _is_chat_path(path: tuple) -> bool:
    return not path or (len(path) == 3 and path[0] in ("chats", "left_chats") and path[1] == "list")


class _Ended(Exception):
    """The text ends inside a value: `partial` holds its complete members (None for a value not read member by
    member), `stop` the position of the first one not kept, `chat_path` the innermost chat around the cut."""

    def __init__(self, partial: object, stop: int, chat_path: tuple | None) -> None:
        self.partial, self.stop, self.chat_path = partial, stop, chat_path


def _salvage(text: str) -> tuple[dict, int, tuple | None] | None:
    """The top object of a text that ends early (`_ends_early`), with the members complete before the cut, read
    into the containers of `_descends` (the messages of the chat that was cut, the chats of an account before
    it) and whole elsewhere: a message is kept whole or not at all. Returns the object, the position of the
    first record not kept and the path of the chat that was cut (None outside any chat), or None when the text
    is no object."""
    start = _WS.match(text).end()
    if not text.startswith("{", start):
        return None
    try:
        value, _ = _salvage_value(text, start, ())
    except _Ended as cut:
        return cut.partial, cut.stop, cut.chat_path
    return value, len(text), ()  # not reached: a text that parses whole is never salvaged


def _salvage_value(text: str, position: int, path: tuple) -> tuple[object, int]:
    """The value at `position` (no whitespace before it) and the position after it; raises `_Ended` when the text
    ends inside it, and the JSONDecodeError of a syntax error (never met after `_ends_early`)."""
    opening = text[position:position + 1]
    if opening not in ("{", "[") or not _descends(path):
        try:
            return _DECODER.raw_decode(text, position)
        except json.JSONDecodeError as e:
            if _ends_early(text, e):
                raise _Ended(None, position, None) from None
            raise
    chat_path = path if _is_chat_path(path) else None
    closing = "}" if opening == "{" else "]"
    container: dict | list = {} if opening == "{" else []
    position = _WS.match(text, position + 1).end()
    if text.startswith(closing, position):
        return container, position + 1
    while True:
        member = position  # where this member starts: where reading stops when it is cut
        if position >= len(text):
            raise _Ended(container, member, chat_path)
        if opening == "{":
            if text[position] != '"':
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, position)
            try:
                key, position = scanstring(text, position + 1, False)
            except json.JSONDecodeError as e:
                if _ends_early(text, e):
                    raise _Ended(container, member, chat_path) from None
                raise
            position = _WS.match(text, position).end()
            if position >= len(text):
                raise _Ended(container, member, chat_path)
            if text[position] != ":":
                raise json.JSONDecodeError("Expecting ':' delimiter", text, position)
            position = _WS.match(text, position + 1).end()
            inner = (*path, key)
        else:
            key, inner = len(container), (*path, len(container))
        try:
            value, position = _salvage_value(text, position, inner)
        except _Ended as cut:
            if cut.partial is None:  # a value read whole, cut: not kept, reading stopped where its member starts
                raise _Ended(container, member, chat_path) from None
            _put(container, key, cut.partial)
            raise _Ended(container, cut.stop, chat_path if cut.chat_path is None else cut.chat_path) from None
        _put(container, key, value)
        position = _WS.match(text, position).end()
        if position >= len(text):
            raise _Ended(container, position, chat_path)
        if text[position] == closing:
            return container, position + 1
        if text[position] != ",":
            raise json.JSONDecodeError("Expecting ',' delimiter", text, position)
        position = _WS.match(text, position + 1).end()


def _put(container: dict | list, key: object, value: object) -> None:
    if isinstance(container, dict):
        container[key] = value
    else:
        container.append(value)


def _cut_of(data: dict, salvaged: _Salvaged, original: str, end: int, encoding: str) -> _Cut:
    """The `_Cut` of a salvaged export read from `original` (the text before any repair, decoded from `encoding`),
    whose last byte read is `end`; the cut chat of an account is left out when the file ends before its messages."""
    chat = data
    for step in salvaged.chat_path or ():
        chat = chat[step]  # each step was salvaged: a chat's path is a dict's key, then a list's last index
    if salvaged.chat_path is None or not isinstance(chat, dict) or not isinstance(chat.get("messages"), list):
        if salvaged.chat_path:  # a chat of an account cut before its messages: nothing of it is kept
            data[salvaged.chat_path[0]]["list"].pop()
        chat = None
    stop = salvaged.to_original(salvaged.stop)
    return _Cut(end - _encoded_length(original, stop, encoding), chat, _messages_kept(data))


def _encoded_length(text: str, start: int, encoding: str) -> int:
    """The length in bytes of `text[start:]` encoded as the file was, a piece at a time (the piece is a tail of the
    file, which can be long)."""
    return sum(len(text[i:i + _PIECE].encode(encoding, "surrogatepass")) for i in range(start, len(text), _PIECE))


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


def _read_chat(raw: dict, position: int, path: Path, digest: str, zone: tzinfo, skips: SkipCounter,
               cut: _Cut | None = None) -> WhatsAppChat:
    own_id = without_surrogates(str(_id_or(raw.get("id"), f"position-{position}")))
    name = without_surrogates(raw["name"]) if isinstance(raw.get("name"), str) else None
    chat_type = without_surrogates(raw["type"]) if isinstance(raw.get("type"), str) else None
    chat_skips = ChatSkips(skips, f"{path}:{name or own_id}")
    records = []
    for number, message in enumerate(raw["messages"]):
        record = _read_message(message, number, zone, chat_skips)
        if record is not None:
            records.append(record)
    extra = {"chat_type": chat_type, "source_chat_id": own_id}
    if cut is not None:  # the file ends inside this chat: the messages after its last complete one are lost
        chat_skips.skip("telegram_truncated_export", f"byte {cut.offset}", _lost(cut))
        extra.update(truncated=True, truncated_at_byte=cut.offset)
    return build_chat(
        records,
        chat_id=chat_id_for(digest, own_id),
        path=path,
        source=SOURCE,
        name=name,
        skipped=dict(chat_skips.counts),
        extra=extra,
    )


def _read_message(message: object, number: int, zone: tzinfo, skips: ChatSkips) -> SourceMessage | None:
    if not isinstance(message, dict):
        skips.skip("telegram_malformed_message", number, f"a {type(message).__name__}, not an object")
        return None
    locator = without_surrogates(str(_id_or(message.get("id"), number)))
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
    field, raw_text = "text", message.get("text")
    if raw_text is None:  # a third-party writer may leave `text` out (or null) and keep `text_entities`
        field, raw_text = "text_entities", message.get("text_entities") or ""
    flat = _flatten(raw_text)
    if flat is None:
        skips.skip("telegram_malformed_message", locator, f"{field} is a {type(raw_text).__name__}")
        return None
    text, bad_entities = flat
    if bad_entities and field == "text":
        text, bad_entities = _mended_text(raw_text, message.get("text_entities"), text, bad_entities)
    for index in bad_entities:  # the message keeps the text of its other entities
        skips.skip("telegram_bad_entity", locator, f"{field}[{index}] is {_not_an_entity(raw_text[index])}")
    text = without_surrogates(text.strip())  # as the .txt parser keeps a message's text
    source_id = locator if _id_or(message.get("id"), None) is not None else f"position-{number}"
    if kind_of_record == "service":
        return SourceMessage(source_id, timestamp, None, without_surrogates(_service_text(message)), "system")
    author = without_surrogates(_name(message.get("from")) or _name(message.get("from_id")) or "Deleted Account")
    reply_to = _reply_to(message)
    forwarded = "forwarded_from" in message or "saved_from" in message  # null: from a deleted or hidden account
    if isinstance(message.get("poll"), dict):
        poll, lost = _poll_text(message["poll"])
        for detail in lost:  # the poll keeps the rest of its question and answers
            skips.skip("telegram_bad_entity", locator, detail)
        return SourceMessage(source_id, timestamp, author, without_surrogates(poll), "poll", reply_to, forwarded)
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
    """`value` when it can be an id (an int or a string), else `default`. A float without a fraction is the int
    (a tool that re-saves the JSON through JavaScript or pandas writes 123.0); another float (a fraction, NaN,
    infinity) is no id, read around like any wrong type and not counted: pandas writes NaN for every message
    without a `reply_to_message_id`."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else default
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else default


def _whole(value: object) -> object:
    """A count or a duration as written, a float without a fraction as the int (2.0 votes are "2 votes")."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _name(value: object) -> str | None:
    """A person's or chat's name as a string: a string or a number as written; anything else is no name."""
    value = _id_or(value, None)
    return str(value) if value not in (None, "") else None


def _reply_to(message: dict) -> str | None:
    """The source id of the replied message; a message of another chat (`reply_to_peer_id`) as "<peer>/<id>",
    which no message of this chat has."""
    reply = _id_or(message.get("reply_to_message_id"), None)
    if reply is None:
        return None
    peer = _id_or(message.get("reply_to_peer_id"), None)
    return without_surrogates(f"{peer}/{reply}" if peer is not None else str(reply))


def _timestamp(message: dict, zone: tzinfo) -> datetime | None:
    date = message.get("date")
    if isinstance(date, str):
        try:
            return datetime.fromisoformat(date).replace(tzinfo=None)
        except ValueError:
            pass
    unix = _unix_seconds(message.get("date_unixtime"))
    try:
        return local_time(unix, zone) if unix is not None else None
    except (ValueError, OverflowError, OSError):
        return None


def _unix_seconds(value: object) -> int | None:
    """A `date_unixtime` as whole seconds: a string in Desktop's files, an int or a float from other writers; a
    fraction (1714557600.5, written by tools that re-save the export) is floored to the second; NaN, infinity and
    anything else is none."""
    if isinstance(value, str):
        if _UNIX_TEXT.fullmatch(value) is None:
            return None
        value = float(value) if "." in value else int(value)
    if isinstance(value, float):
        return math.floor(value) if math.isfinite(value) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _flatten(text: object) -> tuple[str, list[int]] | None:
    """Plain text of a `text` field: a string, or a list of strings and entity objects whose `text` is kept
    (a link's visible text, a mention, bold…), and the positions in the list of what has no text to keep (a
    number, null, a nested list, an object without a string `text`), left out; None when it is neither."""
    if isinstance(text, str):
        return text, []
    if not isinstance(text, list):
        return None
    parts = _part_texts(text)
    return "".join(p for p in parts if p is not None), [i for i, p in enumerate(parts) if p is None]


def _mended_text(text: list, entities: object, flat: str, bad: list[int]) -> tuple[str, list[int]]:
    """A `text` list read as `flat` without its bad parts (at `bad`), mended from `text_entities`: Desktop writes
    both from one list of parts, in one order (a plain part a string in `text`, a {"type": "plain"} entity in
    `text_entities`), so when the two have as many parts and agree on every part both hold, a bad part of `text` is
    its entity's text. The text and the positions still lost (all of `bad` when `text_entities` is no such list)."""
    if not isinstance(entities, list) or len(entities) != len(text):
        return flat, bad
    mine, theirs = _part_texts(text), _part_texts(entities)
    if any(a is not None and b is not None and a != b for a, b in zip(mine, theirs, strict=True)):
        return flat, bad
    parts = [a if a is not None else b for a, b in zip(mine, theirs, strict=True)]
    return "".join(p for p in parts if p is not None), [i for i, p in enumerate(parts) if p is None]


def _part_texts(parts: list) -> list[str | None]:
    """The text of each part of a `text` or `text_entities` list (a string, an entity's string `text`), None where a
    part has none."""
    return [p if isinstance(p, str) else p["text"] if isinstance(p, dict) and isinstance(p.get("text"), str)
            else None for p in parts]


def _not_an_entity(part: object) -> str:
    """What a part of a `text` list left out by `_flatten` is, for its skip."""
    if not isinstance(part, dict):
        return f"a {type(part).__name__}, not a string or an entity"
    if "text" not in part:
        return "an entity without text"
    return f"an entity whose text is a {type(part['text']).__name__}"


def _poll_part(value: object, where: str, lost: list[str]) -> str:
    """The text of a poll's question or answer (a string, or a list of parts as a message's `text`); what of it has
    no text is left out and told in `lost`."""
    flat = _flatten("" if value is None else value)
    if flat is None:
        lost.append(f"{where} is a {type(value).__name__}")
        return ""
    lost += [f"{where}[{index}] is {_not_an_entity(value[index])}" for index in flat[1]]
    return flat[0]


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


def _poll_text(poll: dict) -> tuple[str, list[str]]:
    """A poll written as WhatsApp writes one, and what of its question and answers was left out (for its skips)."""
    lost: list[str] = []
    lines = ["POLL:", _poll_part(poll.get("question"), "poll.question", lost)]
    answers = poll.get("answers")
    for number, answer in enumerate(answers if isinstance(answers, list) else []):
        if not isinstance(answer, dict):
            lost.append(f"poll.answers[{number}] is a {type(answer).__name__}, not an answer")
            continue
        votes = _whole(answer.get("voters", 0))
        text = _poll_part(answer.get("text"), f"poll.answers[{number}].text", lost)
        lines.append(f"OPTION: {text} ({votes} vote{'' if votes == 1 else 's'})")
    return "\n".join(lines), lost


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
        seconds = _whole(message.get("duration_seconds"))
        if message.get("discard_reason") == "missed":
            return f"Missed call from {actor}"
        return f"{actor} called ({seconds} s)" if seconds else f"{actor} called"
    if action == "migrate_to_supergroup":
        return f"{actor} converted the group to a supergroup"
    return f"{actor}: {action.replace('_', ' ')}"
