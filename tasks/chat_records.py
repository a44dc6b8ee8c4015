"""What the chat readers other than the WhatsApp `.txt` parser share: a message as a source stores it, and how a
chat's source messages become the same `WhatsAppChat` the `.txt` parser returns (indexes, replies, stats).

Readers of Telegram exports and WhatsApp databases collect `SourceMessage`s per chat and call `build_chat`; the
rest of the pipeline (documents, the messages dataset, sft-data) sees no difference between the sources.

Also shared by the Messenger and Discord readers: reading an export's files out of the zip it was downloaded as
(`ExportArchive`, as if unzipped: the same bytes, names and so the same chats), and keeping the complete records
of a JSON export that ends early (`read_cut_json`).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import posixpath
import re
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo
from json.decoder import scanstring
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from resiliparse.parse.html import NodeType

from storage.fingerprint import hash_file
from storage.schemas import MESSAGE_KINDS
from tasks.records import InputFileError, SkipCounter, read_errors, stable_id
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


# Meta's "Download your information" (Messenger, Instagram): its media lists, in the order their placeholder is
# chosen when a message has several, and the placeholder of a file by its extension
DYI_MEDIA_KEYS = (("photos", IMAGE), ("videos", VIDEO), ("gifs", GIF), ("audio_files", AUDIO), ("files", DOCUMENT))
MEDIA_BY_EXTENSION = {
    **dict.fromkeys(("jpg", "jpeg", "png", "webp", "heic", "bmp"), IMAGE),
    **dict.fromkeys(("mp4", "mov", "m4v", "webm", "3gp"), VIDEO),
    "gif": GIF,
    **dict.fromkeys(("m4a", "mp3", "aac", "ogg", "opus", "wav", "amr"), AUDIO),
}


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (storage.fingerprint.hash_file), a failed read as a one-line InputFileError."""
    with read_errors(path):
        return hash_file(path)


def combined_sha256(digests: list[str]) -> str:
    """One content hash for the files a chat is read from: the file's own sha256 when it is one, else the sha256
    of their sha256s in order (a Messenger conversation's parts, a partitioned Discord export)."""
    return digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()


def numbered_parts(path: Path, number: Callable[[Path], int | None]) -> list[Path]:
    """The numbered files of one export that `path` belongs to: every file of its folder that `number` numbers,
    `path` included, by number (then name); `[path]` for a file it does not number."""
    if number(path) is None:
        return [path]
    try:
        parts = [p for p in path.parent.iterdir() if number(p) is not None and p.is_file()]
    except OSError:
        return [path]
    if path not in parts:
        parts.append(path)
    return sorted(parts, key=lambda p: (number(p), p.name))


def html_children(node: Any) -> Iterator[Any]:
    """A resiliparse DOM node's children, walked from sibling to sibling: its `child_nodes` collection is walked from
    its start for every item, so going through n children that way is quadratic (a page of 2,000 messages, 17 s)."""
    child = node.first_child
    while child is not None:
        yield child
        child = child.next


def html_elements(node: Any) -> Iterator[Any]:
    """A resiliparse DOM node's child elements (text and comments passed over without a node made for each: a
    pretty-printed page has a whitespace text node between any two elements)."""
    child = node.first_child
    if child is not None and child.type != NodeType.ELEMENT:
        child = child.next_element
    while child is not None:
        yield child
        child = child.next_element


def read_export_bytes(path: Path) -> bytes:
    """A file's bytes, a failed read as a one-line InputFileError naming it."""
    with read_errors(path):
        return path.read_bytes()


def read_export_text(path: Path, what: str, data: bytes | None = None) -> str:
    """The text of a UTF-8 export file (a byte-order mark dropped); a one-line InputFileError naming the file when
    it cannot be read, is not UTF-8 (or ends inside a character: a cut copy) or is empty. `what` ends the
    messages: "a Discord export". `data`: the file's bytes when already read (out of a zip)."""
    if data is None:
        data = read_export_bytes(path)
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


def read_export_json(path: Path, what: str, data: bytes | None = None) -> object:
    """The JSON of an export file (see `read_export_text`); not JSON is one line with its line and column, saying
    when the text ends early (a cut or unfinished export)."""
    text = read_export_text(path, what, data)
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



# ------------------------------------------------------------------------------------------------ exports cut short

# What may be left after the position of an "Expecting …" error when the text runs out there: the start of a value
# (of true, false, null or a negative number), of a number's fraction or exponent, else only whitespace.
_CUT_TOKEN = {"Expecting value": re.compile(r"(-|t|tr|tru|f|fa|fal|fals|n|nu|nul)?\s*"),
              "Expecting ',' delimiter": re.compile(r"([.eE][0-9eE+-]*)?\s*")}
_WS = re.compile(r"[ \t\n\r]*")
_WS_ONLY = re.compile(r"\s*")
_DECODER = json.JSONDecoder(strict=False)


@dataclass(frozen=True)
class JsonCut:
    """Where a JSON export that ends early stopped being read: `offset`, the byte of the file where the first
    record not kept starts (after the last complete one), and `kept`, how many complete records were kept."""

    offset: int
    kept: int


def json_ends_early(text: str, error: json.JSONDecodeError) -> bool:
    """Whether `error` is the text running out (a file cut short), not a syntax error before its end: a string
    left open, an escape cut, or a value, `,` or `:` expected where only the start of a number or of
    true/false/null (or nothing) is left."""
    if error.msg.startswith("Unterminated string"):  # no closing quote before the end
        return True
    if error.msg.startswith("Invalid \\"):  # "\\u00e", an escape cut, when no quote follows
        return text.find('"', error.pos) < 0
    if not error.msg.startswith("Expecting"):
        return False
    return _CUT_TOKEN.get(error.msg, _WS_ONLY).fullmatch(text, error.pos) is not None


def read_cut_json(path: Path, what: str, key: str, data: bytes | None = None) -> tuple[object, JsonCut | None]:
    """The JSON of an export file and None, as `read_export_json`; for a file that ends early (a download, copy or
    export interrupted), its top object with the members complete before the cut, its `key` list read record by
    record (a record is kept whole or not at all), and the `JsonCut`. A file cut inside a UTF-8 character is read
    without it. Still one-line InputFileErrors: a syntax error before the end (nothing is guessed past it), and a
    file cut before its first complete record. `data`: the file's bytes when already read (out of a zip)."""
    if data is None:
        data = read_export_bytes(path)
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    end = len(data)
    try:
        text = str(memoryview(data)[bom:], "utf-8")
    except UnicodeDecodeError as e:
        if e.reason != "unexpected end of data" or bom + e.end != end:
            raise InputFileError(f"{path}: not UTF-8 text (byte {bom + e.start}), not {what}") from None
        end = bom + e.start  # the file ends inside a character: read without it
        text = str(memoryview(data)[bom:end], "utf-8")
    if not text.strip():
        raise InputFileError(f"{path}: empty file, not {what}")
    try:
        return json.loads(text, strict=False), None
    except json.JSONDecodeError as e:
        error = e
    except (ValueError, RecursionError) as e:  # an integer of over 4300 digits; arrays nested thousands deep
        raise InputFileError(f"{path}: JSON this reader cannot hold ({str(e)[:80]}), not {what}") from None
    early = json_ends_early(text, error)
    found, stop = _salvage(text, key) if early else (None, 0)
    if not isinstance(found, dict) or not isinstance(found.get(key), list) or not found[key]:
        ending = "; it ends early (a cut or unfinished export?) before its first complete message" if early else ""
        raise InputFileError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
                             f"{ending}, not {what}")
    return found, JsonCut(end - len(text[stop:].encode("utf-8", "surrogatepass")), len(found[key]))


def _salvage(text: str, key: str) -> tuple[dict | None, int]:
    """The top object of `text`, which ends early (`json_ends_early`: no syntax error before the end), with the
    members complete before the cut and its `key` list read element by element; and the position where the first
    member or element not kept starts. (None, 0) when the text is no object."""
    position = _WS.match(text).end()
    if not text.startswith("{", position):
        return None, 0
    found: dict = {}
    position = _WS.match(text, position + 1).end()
    while True:
        member = position  # where reading stops when this member is cut
        if not text.startswith('"', position):
            return found, member
        try:
            name, position = scanstring(text, position + 1, False)
        except json.JSONDecodeError:
            return found, member
        position = _WS.match(text, position).end()
        if not text.startswith(":", position):
            return found, member
        position = _WS.match(text, position + 1).end()
        if name == key and text.startswith("[", position):
            records: list = []
            found[name] = records
            position = _WS.match(text, position + 1).end()
            while not text.startswith("]", position):
                try:
                    record, after = _DECODER.raw_decode(text, position)
                except json.JSONDecodeError:
                    return found, position
                records.append(record)
                position = _WS.match(text, after).end()
                if not text.startswith(",", position):
                    if not text.startswith("]", position):
                        return found, position
                    break
                position = _WS.match(text, position + 1).end()
            position += 1
        else:
            try:
                found[name], position = _DECODER.raw_decode(text, position)
            except json.JSONDecodeError:
                return found, member
        position = _WS.match(text, position).end()
        if not text.startswith(",", position):
            return found, position
        position = _WS.match(text, position + 1).end()


# ------------------------------------------------------------------------------------------------ zip archives

# The most bytes read out of one member of an export's zip, whatever it declares: Meta writes at most 10,000
# messages a file (a few MB), a Discord package a file per channel. Past it, or inflating more than
# MAX_COMPRESSION_RATIO times its compressed size once past RATIO_CHECK_BYTES (JSON compresses 5 to 20 times), a
# member is refused as a zip bomb.
MAX_MEMBER_BYTES = 512 << 20
MAX_COMPRESSION_RATIO = 200
RATIO_CHECK_BYTES = 16 << 20
_READ_CHUNK = 1 << 20
_ZIP_ERRORS = (zipfile.BadZipFile, RuntimeError, NotImplementedError, zlib.error, EOFError, OSError)


class UnsafeArchiveError(InputFileError):
    """A zip member refused as a zip bomb (too large, or inflating too much): the whole archive is refused, not
    only the conversation the member belongs to."""


def is_zip_name(path: Path) -> bool:
    """Whether `path` is named as a zip archive (how the Messenger and Discord readers tell one)."""
    return path.suffix.lower() == ".zip"


class ExportArchive:
    """A chat export's zip (Meta's "Download your information", Discord's data package), read like the folder it
    unzips to: member `a/b.json` of `x.zip` is the path `x.zip/a/b.json`, whose name, stem and parents are the
    unzipped file's, so that readers find the same files and read the same bytes. Nothing is extracted: a member is
    read into memory when asked for, within MAX_MEMBER_BYTES and MAX_COMPRESSION_RATIO (one-line InputFileErrors
    naming the zip and the member). Folders, `__MACOSX/` and names that would escape the folder are left out; an
    absolute or `..` member name refuses the archive, as the WhatsApp zip reader does."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            with read_errors(self.path, "a zip archive"):
                self.size = self.path.stat().st_size
                self._zip = zipfile.ZipFile(self.path)
        except zipfile.BadZipFile as e:
            raise InputFileError(f"{self.path}: not a readable zip archive ({e})") from None
        self._members: dict[Path, zipfile.ZipInfo] = {}
        for info in self._zip.infolist():
            name = info.filename.replace("\\", "/")
            if name.startswith("/") or re.match(r"[A-Za-z]:", name) or ".." in name.split("/"):
                self._zip.close()
                raise InputFileError(f"{self.path}: refusing an archive with an unsafe member name "
                                     f"{info.filename!r} (absolute or '..' path: zip slip)")
            if not info.is_dir() and not name.endswith("/") and not name.startswith("__MACOSX/"):
                self._members[self.path / posixpath.normpath(name)] = info

    def __enter__(self) -> ExportArchive:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._zip.close()

    def files(self) -> list[Path]:
        """Every file of the archive as its path (`x.zip/a/b.json`), sorted."""
        return sorted(self._members)

    def is_file(self, path: Path) -> bool:
        return path in self._members

    def member_checksum(self, path: Path) -> tuple[int, int]:
        """(size, CRC-32) of the member at `path` as the zip's directory records them: tells two members apart
        without inflating them (equal ones may still differ)."""
        info = self._members.get(path)
        if info is None:
            raise InputFileError(f"{path}: no such file in {self.path}")
        return info.file_size, info.CRC

    def read_bytes(self, path: Path, head: int | None = None) -> bytes:
        """The bytes of the member at `path` (the first `head` of them when given, to sniff)."""
        info = self._members.get(path)
        if info is None:
            raise InputFileError(f"{path}: no such file in {self.path}")
        where = f"{self.path}: member {info.filename!r}"
        if head is None and info.file_size > MAX_MEMBER_BYTES:  # what it declares: no need to inflate it to know
            raise UnsafeArchiveError(f"{where} declares {info.file_size} bytes, more than the {MAX_MEMBER_BYTES >> 20} "
                                 "MiB a file of an export may hold (tasks.chat_records.MAX_MEMBER_BYTES); refusing it")
        # what it inflates to is counted, not what it declares; its compressed bytes are at most the zip's size
        compressed = min(info.compress_size, self.size) or 1
        bound = max(RATIO_CHECK_BYTES, MAX_COMPRESSION_RATIO * compressed)
        chunks, read = [], 0
        try:
            with self._zip.open(info) as member:
                while chunk := member.read(_READ_CHUNK if head is None else min(_READ_CHUNK, head - read)):
                    chunks.append(chunk)
                    read += len(chunk)
                    if read > MAX_MEMBER_BYTES:
                        raise UnsafeArchiveError(f"{where} inflates to more than {MAX_MEMBER_BYTES >> 20} MiB "
                                             "(tasks.chat_records.MAX_MEMBER_BYTES); refusing it (a zip bomb?)")
                    if read > bound:
                        raise UnsafeArchiveError(f"{where} inflates more than {MAX_COMPRESSION_RATIO} times its "
                                             f"compressed size of {compressed} bytes; refusing a zip bomb")
                    if head is not None and read >= head:
                        break
        except _ZIP_ERRORS as e:
            raise InputFileError(f"{where} cannot be decompressed ({e})") from None
        return b"".join(chunks)
