"""The `ingest` stage: raw files (WhatsApp exports, Common Crawl WET/WARC, JSONL, plain text) → documents.

One shard task per input file: it streams the file's records into one Parquet part (and, for WhatsApp, a
part of the `messages/` side dataset). Broken records are skipped and counted with their location; a file that
cannot be read at all fails the stage naming it (`check_readable`), or with `on_unreadable: skip` is counted and
listed in the manifest's `unreadable_files`. When several chat inputs hold copies of one conversation (a `.txt`
export and the phone's database), the documents keep one merged copy (`merge_chat_copies`), counted. A Messenger
download given as several zips (or the folders they unzip to) reads as one (`join_split_downloads`).

JSON lines may be gzip, bzip2, xz or zstd compressed, told by the file's first bytes (not its name); the page's
URL and time are taken from the record or from the `metadata`, `meta` or `warc_headers` that Dolma, datatrove,
RedPajama and OSCAR write. A line that is not UTF-8 or not a JSON object is counted and the next one read; a JSON
array or a pretty-printed JSON file is refused, saying so. A plain text file is UTF-8, or UTF-16/32 with a
byte-order mark; one with NUL bytes (binary data given by mistake) is refused naming where. A file that gives no
record at all is counted (`no_records`), as an empty WET file is. No document holds more than MAX_DOCUMENT_CHARS:
a longer text (a whole file in `file` mode, one paragraph or line, a JSON record's text) is kept in full as
consecutive numbered parts cut at paragraph, line or word breaks, counted once as `too_long_split_kept`.
"""

from __future__ import annotations

import bz2
import codecs
import glob
import gzip
import hashlib
import io
import itertools
import json
import logging
import lzma
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from storage.fingerprint import hash_file
from storage.parquet import ParquetShardWriter
from storage.schemas import DOCUMENT_SCHEMA, MESSAGE_SCHEMA
from tasks.params import IngestParams, InputSpec
from tasks.records import Document, InputFileError, SkipCounter, stable_id, without_surrogates
from tasks.shard_drivers import ShardCounts, Summary

if TYPE_CHECKING:
    from tasks.messenger import SplitConversation

STAGE = "ingest"
# 2: messages carry reply_to, chat sources telegram and whatsapp-db; 3: chat copies merged; 4: JSONL url and time
# also from metadata/meta/warc_headers, lone surrogates as U+FFFD, NaN as null, a BOM no longer costs line 1;
# 5: a clock outlier cuts no chat session, Messenger/Discord zips and forms, Telegram encodings and bad entities,
# WhatsApp databases' broadcast lists, @lid display names and seconds timestamps, damaged whole-gzip WARCs,
# ARC lengths too short, texts over MAX_DOCUMENT_CHARS kept in parts, WARC resync and block digests; 6: Discord dates
# by one pattern per file (Buddhist era), Messenger downloads in several zips, wa.db apart from its msgstore.db,
# WARC Content-Length past its record, Telegram and Messenger HTML exports; 7: Discord and Messenger HTML dates in
# other languages, Messenger events in Polish, WARC framing in bare-LF headers, misspelt WARC-Types counted; 8: WARC
# payloads past 32 MiB and Brotli/zstd bombs skipped and counted, Messenger HTML weekdays checked, Discord dates in
# sk/sl/bg/lt/lv/et/he and with the weekday after the date
STAGE_VERSION = "8"
log = logging.getLogger(__name__)

_COMPRESSED = (".gz", ".bz2", ".xz", ".zst")
_JSONL_SUFFIXES = tuple(f"{name}{c}" for name in (".jsonl", ".ndjson") for c in ("", *_COMPRESSED)) + tuple(
    f".json{c}" for c in _COMPRESSED)
_WET_SUFFIXES = (".wet", ".wet.gz")
_WARC_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz")  # ARC: read by the WARC reader (tasks/commoncrawl.py)
_DEFAULT_SOURCE = {"whatsapp": "whatsapp", "whatsapp-db": "whatsapp", "telegram": "telegram", "messenger": "messenger",
                   "discord": "discord", "wet": "commoncrawl", "warc": "commoncrawl", "jsonl": "jsonl", "text": "text"}
CHAT_KINDS = ("whatsapp", "whatsapp-db", "telegram", "messenger", "discord")  # kinds that also write a messages part
_DATABASE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_MEDIA_SUFFIXES = frozenset(
    ".jpg .jpeg .png .gif .webp .heic .bmp .tiff .mp4 .mov .webm .mkv .avi .3gp .mp3 .m4a .aac .ogg .opus .wav "
    ".amr .flac .pdf .vcf".split()
)


@dataclass(frozen=True)
class InputFile:
    """One raw file to ingest, with its resolved kind and content hash."""

    path: str
    kind: str  # whatsapp | whatsapp-db | telegram | messenger | discord | wet | warc | jsonl | text
    source: str
    sha256: str
    # messenger: the conversations of a download split over several inputs that this one reads whole or leaves to
    # another (`join_split_downloads`); None when no run planned it (the reader then looks within the file only)
    split: tuple[SplitConversation, ...] | None = None
    # whatsapp-db: the wa.db its contacts' names come from (its input's `contacts`, the one beside it, or one paired
    # by `_pair_contacts`); None: the one beside it, if any
    contacts: str | None = None


def detect_kind(path: Path) -> str:
    """Guess a file's kind from its name and, for .txt, .json and .csv, from its first bytes; a .zip from the names
    inside it: Meta's download of Messenger/Instagram (`message_N.json`, or an e2ee chat file) or Discord's data
    package (`c<id>/messages.json`), else a WhatsApp export (whose reader says when it holds no chat)."""
    name = path.name.lower()
    if name.endswith(_WET_SUFFIXES):
        return "wet"
    if name.endswith(_WARC_SUFFIXES):
        from tasks.commoncrawl import detect_commoncrawl_kind

        return detect_commoncrawl_kind(path) or "warc"
    if name.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(".zip"):
        from tasks.discord import looks_like_discord_archive
        from tasks.messenger import looks_like_messenger_archive

        if looks_like_messenger_archive(path):
            return "messenger"
        if looks_like_discord_archive(path):
            return "discord"
        return "whatsapp"
    if name.endswith(_DATABASE_SUFFIXES) or ".crypt" in path.suffix.lower():
        from tasks.whatsapp.database import looks_like_whatsapp_database

        if looks_like_whatsapp_database(path):
            return "whatsapp-db"
    if name.endswith((".html", ".htm")):  # Meta's download in its default form, HTML: message_N.html
        from tasks.messenger_html import looks_like_messenger_html

        if looks_like_messenger_html(path):
            return "messenger"
    if name.endswith((".json", ".csv")):
        # Messenger's and DiscordChatExporter's files have "messages" and "type" too: they are told first
        from tasks.discord import is_discord_package_metadata, looks_like_discord
        from tasks.messenger import looks_like_messenger

        if name.endswith(".json") and looks_like_messenger(path):
            return "messenger"
        if looks_like_discord(path) or is_discord_package_metadata(path):  # the metadata: read with the messages
            return "discord"
    if name.endswith(".json"):
        from tasks.telegram import looks_like_telegram

        if looks_like_telegram(path):
            return "telegram"
    if name.endswith((".html", ".htm")):
        from tasks.telegram_html import looks_like_telegram_html

        if looks_like_telegram_html(path):  # Desktop's HTML export: its pages, told by how they start
            return "telegram"
    if name.endswith(".txt"):
        from tasks.discord import looks_like_discord
        from tasks.whatsapp import looks_like_whatsapp

        if looks_like_discord(path):  # DiscordChatExporter's PlainText: a first line no WhatsApp export has
            return "discord"
        return "whatsapp" if looks_like_whatsapp(path) else "text"
    from tasks.telegram_html import in_telegram_html_export

    if in_telegram_html_export(path):  # the css, js and media of an HTML export: passed over with it
        return "telegram"
    raise InputFileError(
        f"{path}: cannot tell what kind of input this is; set `kind` (whatsapp, whatsapp-db, telegram, messenger, "
        "discord, wet, warc, jsonl, text) in ingest.inputs"
    )


def _hidden_below(path: Path, folder: Path) -> bool:
    """A file or folder whose name starts with a dot, between `folder` and `path` (`.git/`, `.ssh/`, `.env`)."""
    return any(part.startswith(".") for part in path.relative_to(folder).parts)


def _inside(path: Path, folders: Sequence[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved == f or f in resolved.parents for f in folders)


def _expand(spec: InputSpec, position: int, exclude: Sequence[Path] = ()) -> list[Path]:
    """The files an input names. A folder yields its files below it, without hidden files and folders; neither a
    folder nor a glob yields what lies in `exclude` (the data root: the pipeline's own output)."""
    p = Path(spec.path).expanduser()
    excluded = [Path(e).resolve() for e in exclude]
    if any(ch in spec.path for ch in "*?[") and not p.exists():  # "exports [2025]/" is a folder, not a glob
        matches = [Path(m) for m in glob.glob(str(p), recursive=True)]
        files = [m for m in matches if m.is_file() and not _inside(m, excluded)]
    elif p.is_dir():
        files = [f for f in p.rglob("*")
                 if f.is_file() and not _hidden_below(f, p) and not _inside(f, excluded)]
    elif p.is_file():
        files = [p]
    else:
        raise InputFileError(f"ingest.inputs[{position}].path: '{spec.path}' does not exist")
    if not files:
        raise InputFileError(f"ingest.inputs[{position}].path: '{spec.path}' matches no file")
    return sorted(files)


def resolve_inputs(params: IngestParams, exclude: Sequence[str | os.PathLike] = ()) -> list[InputFile]:
    """Every raw file the config names, in a stable order, with kind and content hash; nothing inside `exclude`
    (the data root) is read. A WhatsApp database takes its contacts' names from the wa.db its input names in
    `contacts`, else the one beside it, else a wa.db listed apart that `_pair_contacts` can pair with it."""
    if not params.inputs:
        raise InputFileError("ingest.inputs is empty: name at least one file, folder or glob to ingest")
    # resolved path → (position, kind, source, the wa.db named for it) of its first entry
    seen: dict[str, tuple[int, str, str, Path | None]] = {}
    address_books: dict[str, tuple[Path, str]] = {}  # resolved wa.db among the files named → (path, source)
    out: list[InputFile] = []
    for i, spec in enumerate(params.inputs):
        media, databases, named_file = 0, 0, Path(spec.path).expanduser().is_file()
        named_contacts = _named_contacts(spec, i)
        for path in _expand(spec, i, [Path(e) for e in exclude]):
            if not os.access(path, os.R_OK):
                raise InputFileError(f"{path}: cannot be read (permission denied)")
            kind = spec.kind
            if kind == "auto" and path.suffix.lower() in _MEDIA_SUFFIXES and not named_file:
                media += 1  # the photos and voice notes in an export's folder (Messenger's, Discord's): no text
                continue
            if kind == "commoncrawl":
                from tasks.commoncrawl import detect_commoncrawl_kind

                kind = detect_commoncrawl_kind(path) or "warc"
            elif kind == "auto":
                kind = detect_kind(path)
            if _read_with_another_file(kind, path):
                if kind == "whatsapp-db":  # a wa.db: read with the database it names, wherever that lies
                    address_books.setdefault(str(path.resolve()), (path, spec.source or _DEFAULT_SOURCE[kind]))
                continue
            source = spec.source or _default_source(kind, path)
            contacts = named_contacts if kind == "whatsapp-db" else None
            databases += kind == "whatsapp-db"
            key = str(path.resolve())
            if key in seen:
                first, *read_as, first_contacts = seen[key]
                if read_as != [kind, source]:
                    raise InputFileError(
                        f"{path}: named by ingest.inputs[{first}] as {_read_as(*read_as)} and by "
                        f"ingest.inputs[{i}] as {_read_as(kind, source)}; list it once, with the kind to read it as"
                    )
                if _resolved(first_contacts) != _resolved(contacts):
                    raise InputFileError(
                        f"{path}: named by ingest.inputs[{first}] {_with_contacts(first_contacts)} and by "
                        f"ingest.inputs[{i}] {_with_contacts(contacts)}; list it once, with the wa.db to name its "
                        "contacts"
                    )
                log.info("%s: named again by ingest.inputs[%d], read once", path, i)
                continue
            seen[key] = (i, kind, source, contacts)
            if kind == "whatsapp-db" and contacts is None:
                from tasks.whatsapp.database import contacts_database_beside

                contacts = contacts_database_beside(path)
            out.append(InputFile(path=str(path), kind=kind, source=source,
                                 sha256=_content_sha256(kind, path, contacts),
                                 contacts=None if contacts is None else str(contacts)))
        if named_contacts is not None and not databases:
            raise InputFileError(
                f"ingest.inputs[{i}].contacts: names the contacts of a WhatsApp database (msgstore.db), but "
                f"ingest.inputs[{i}] ('{spec.path}') holds none"
            )
        if media:
            log.info("ingest.inputs[%d]: %d photo, video and audio file(s) passed over (no text to read)", i, media)
    return join_split_downloads(_pair_contacts(out, address_books))


def _named_contacts(spec: InputSpec, position: int) -> Path | None:
    """The wa.db an input names in `contacts`, checked: a readable wa.db, on an input that may hold a database."""
    if spec.contacts is None:
        return None
    where = f"ingest.inputs[{position}].contacts"
    if spec.kind not in ("auto", "whatsapp-db"):
        raise InputFileError(f"{where}: names the contacts of a WhatsApp database (msgstore.db), but "
                             f"ingest.inputs[{position}] ('{spec.path}') is read as kind '{spec.kind}'")
    from tasks.whatsapp.database import contacts_database_problem

    path = Path(spec.contacts).expanduser()
    if problem := contacts_database_problem(path):
        raise InputFileError(f"{where}: '{spec.contacts}' {problem}")
    if not os.access(path, os.R_OK):
        raise InputFileError(f"{where}: '{spec.contacts}' cannot be read (permission denied)")
    return path


def _resolved(path: Path | None) -> str | None:
    return None if path is None else str(path.resolve())


def _with_contacts(path: Path | None) -> str:
    return "without contacts" if path is None else f"with contacts '{path}'"


def _pair_contacts(files: list[InputFile], address_books: Mapping[str, tuple[Path, str]]) -> list[InputFile]:
    """The wa.db files among the inputs (resolved path → (path, source)) that no database of the run takes (none
    names it in `contacts`, none lies beside it). One is the names of the run's one Android database that has
    none, said in the log. Otherwise which phone's names they are cannot be told: each stays an input of its own,
    whose shard reads nothing and counts `whatsapp_contacts_unpaired` (`_read_chats`), with a warning."""
    if not address_books:
        return files
    from tasks.whatsapp.database import contacts_database_beside, is_android_database

    databases = [f for f in files if f.kind == "whatsapp-db"]
    taken = {_resolved(Path(f.contacts)) for f in databases if f.contacts is not None}
    taken.update(_resolved(beside) for f in databases if (beside := contacts_database_beside(f.path)) is not None)
    stray = [(path, source) for key, (path, source) in address_books.items() if key not in taken]
    if not stray:
        return files
    unnamed = [f for f in databases if f.contacts is None and is_android_database(f.path)]
    if len(stray) == 1 and len(unnamed) == 1:
        [(contacts, _)], [db] = stray, unnamed
        log.info("%s: names the contacts of %s, the run's only msgstore.db without a wa.db (set `contacts:` in "
                 "ingest.inputs to pair them otherwise)", contacts, db.path)
        paired = replace(db, contacts=str(contacts), sha256=_content_sha256(db.kind, Path(db.path), contacts))
        return [paired if f is db else f for f in files]
    if len(unnamed) > 1:
        why = f"{len(unnamed)} msgstore.db of the run have no wa.db: {', '.join(f.path for f in unnamed)}"
    elif unnamed:
        why = f"{len(stray)} wa.db lie apart and one msgstore.db, {unnamed[0].path}, has none"
    else:
        why = "every msgstore.db of the run has a wa.db" if databases else "the run has no msgstore.db"
    for contacts, _ in stray:
        log.warning("%s: a wa.db paired with no msgstore.db (%s): their chats go by phone numbers, not its names; "
                    "set `contacts: %s` on its msgstore.db's entry in ingest.inputs", contacts, why, contacts)
    return files + [InputFile(path=str(path), kind="whatsapp-db", source=source, sha256=hash_file(path))
                    for path, source in stray]


def join_split_downloads(files: list[InputFile]) -> list[InputFile]:
    """A Messenger/Instagram download in several zips (or the folders they unzip to, or both) read as if unzipped
    into one folder: a conversation whose parts lie in several inputs is read whole by the one holding its first
    part and left by the others (`tasks.messenger.find_split_conversations`, over every Messenger input of the run).
    Every input keeps its shard; the key of one that reads or leaves such a conversation also covers the other
    inputs holding it, and which of the two it does."""
    messenger = [f.path for f in files if f.kind == "messenger"]
    if not messenger:
        return files
    from tasks.messenger import find_split_conversations

    split = find_split_conversations(messenger)
    sha256 = {f.path: f.sha256 for f in files}
    out = []
    for f in files:
        if f.kind != "messenger":
            out.append(f)
            continue
        held = tuple(c for c in split if f.path in c.inputs)
        if held:
            key = [f.sha256, *(" ".join([c.key, "reads" if c.reader[0] == f.path else "leaves",
                                         *sorted(sha256[i] for i in c.inputs if i != f.path)]) for c in held)]
            f = replace(f, sha256=hashlib.sha256("\n".join(key).encode()).hexdigest())
        out.append(replace(f, split=held))
    return out


def _read_with_another_file(kind: str, path: Path) -> bool:
    """A file read with another one of its export, not on its own: a Messenger chat's later parts (with its
    message_1.json), its photos and videos, a Discord data package's channel.json and index.json, the later parts
    of a partitioned DiscordChatExporter export, an Android wa.db (the contact names of the msgstore.db beside
    it, or of the one `_pair_contacts` finds)."""
    if kind == "messenger":
        from tasks.messenger import is_continuation_part

        return path.suffix.lower() not in (".json", ".zip", ".html", ".htm") or is_continuation_part(path)
    if kind == "discord":
        from tasks.discord import is_discord_package_metadata, is_later_partition

        return is_discord_package_metadata(path) or is_later_partition(path)
    if kind == "whatsapp-db":
        from tasks.whatsapp.database import is_contacts_database

        return is_contacts_database(path)  # a wa.db: the names of a msgstore.db
    if kind == "telegram" and path.suffix.lower() != ".json":
        from tasks.telegram_html import is_read_with_another_file

        return is_read_with_another_file(path)  # an HTML export's later pages, other pages, css, js, media
    return False


def _default_source(kind: str, path: Path) -> str:
    if kind == "messenger":  # Instagram's direct messages come in the same files, told by their folder
        from tasks.messenger import source_for

        return source_for(path)
    return _DEFAULT_SOURCE[kind]


def _content_sha256(kind: str, path: Path, contacts: Path | None = None) -> str:
    """What a shard's output depends on: the file, or every part of a Messenger chat or of a partitioned Discord
    export (read together), or a WhatsApp database and the wa.db `contacts` its names come from."""
    if kind == "messenger":
        from tasks.messenger import conversation_sha256

        return conversation_sha256(path)
    if kind == "discord":
        from tasks.discord import export_sha256

        return export_sha256(path)
    if kind == "whatsapp-db":
        from tasks.whatsapp.database import database_sha256

        return database_sha256(path, contacts)
    if kind == "telegram" and path.suffix.lower() in (".html", ".htm"):
        from tasks.telegram_html import export_sha256

        return export_sha256(path)
    return hash_file(path)


def _read_as(kind: str, source: str) -> str:
    return f"kind '{kind}'" + (f" (source '{source}')" if source != _DEFAULT_SOURCE[kind] else "")


# ---------------------------------------------------------------------------------------------- readers


_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zst"))
_DECOMPRESSION_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError)
_UTF16_32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# NaN and ±Infinity (Python's json.dumps writes them) are not JSON: kept in `meta` they would make it unreadable
# to strict parsers, so they are read as null.
_JSON = json.JSONDecoder(parse_constant=lambda _: None)
_URL_KEYS = ("warc_url", "url", "warc-target-uri")  # in a record's metadata, meta or warc_headers, first wins
_TIME_KEYS = ("timestamp", "date", "warc-date")


def _open_binary(path: Path) -> tuple[io.BufferedIOBase, str | None]:
    """The file's bytes, decompressed as its first bytes say (a `.gz` that holds plain text is read as it is),
    and the compression's name (None when plain)."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    codec = next((name for magic, name in _MAGIC if head.startswith(magic)), None)
    # Left with their own small buffers: a larger one in front would lose the whole lines it held when a cut-short
    # stream raises.
    if codec is None:
        return open(path, "rb"), None
    if codec == "zst":  # pyarrow (a dependency already) reads zstd streams; the stdlib cannot before Python 3.14
        import pyarrow as pa

        return io.BufferedReader(pa.input_stream(str(path), compression="zstd")), codec
    return {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}[codec](path, "rb"), codec


def _parse_timestamp(value: object) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) in (10, 13):
        value = int(value)  # epoch seconds or milliseconds written as a string ("20240101" is a date)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # seconds since the epoch; milliseconds, microseconds and nanoseconds are common too
        scale = 1e9 if abs(value) > 1e17 else 1e6 if abs(value) > 1e14 else 1e3 if abs(value) > 1e11 else 1
        return datetime.fromtimestamp(value / scale, tz=timezone.utc)
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        dt = datetime.fromisoformat(text)
        return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
    raise ValueError(f"unsupported timestamp {value!r}")


def _record_url_and_time(record: dict) -> tuple[object, object]:
    """The page's URL and time: `url` and `timestamp` (or Dolma's `created`), else from `metadata` (Dolma writes
    `url` without its scheme there and the full address as `warc_url`; datatrove writes `date`), RedPajama's
    `meta` or OSCAR's `warc_headers`. The URL is the first candidate with a scheme, else the first one given."""
    url, time = record.get("url"), record.get("timestamp", record.get("created"))
    for nested in (record.get("metadata"), record.get("meta"), record.get("warc_headers")):
        if type(nested) is not dict:
            continue
        if not (url and "://" in str(url)):
            urls = [u for u in map(nested.get, _URL_KEYS) if u]
            url = next((u for u in urls if "://" in str(u)), url or (urls[0] if urls else None))
        if time is None:
            time = next((t for t in map(nested.get, _TIME_KEYS) if t is not None), None)
    return url, time


def _read_raw_line(fh: io.BufferedIOBase, pending: list[bytes]) -> bytes:
    """The file's next line as bytes (b"" at its end), ending in LF, CRLF or, as classic Mac files end them, a CR
    alone; `pending` keeps, last first, the other lines of what LF ended. A function, not a generator, so that
    nothing holds a long line once its reader lets it go."""
    if pending:
        return pending.pop()
    raw = fh.readline()
    if b"\r" in raw and b"\r" in raw.rstrip(b"\r\n"):  # CRs inside what LF ends: each one ends a line
        pending.extend(reversed(raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").splitlines(keepends=True)))
        return pending.pop()
    return raw


def _not_json_lines(path: Path, line_no: int, line: str, record: object) -> InputFileError | None:
    """The error for a file whose first line shows it is one JSON value, not JSON lines, else None."""
    if line_no != 1:
        return None
    if line.strip() in ("[", "{"):
        return InputFileError(f"{path}:1: pretty-printed JSON, not JSON lines (one object per line); convert it "
                              "with `jq -c '.[]'` (an array) or `jq -c .` (objects)")
    if isinstance(record, list) and record and isinstance(record[0], dict):
        return InputFileError(f"{path}:1: a JSON array of {len(record)} objects, not JSON lines (one object per "
                              "line); convert it with `jq -c '.[]'`")
    return None


def _missing_text(record: dict, field_name: str) -> str:
    if field_name in record:
        return f"'{field_name}' is {json.dumps(record[field_name], default=str)[:60]}, not a string"
    fields = ", ".join(list(record)[:8])
    return f"no field '{field_name}' (fields: {fields}); set ingest.jsonl_text_field to read another one"


# A longer text (a file in `file` mode, a paragraph or line, a JSON record's text) becomes several documents, cut
# by `_parts` and counted as `too_long_split_kept`: writing one 200 MB document to Parquet took ten times its size
# (its column statistics, dictionary and page buffers each copy it) and every later stage would hold it whole.
# Almost every book fits in one (In Search of Lost Time has some 7 million characters).
MAX_DOCUMENT_CHARS = 10_000_000


def _part_end(text: str, start: int, limit: int) -> int:
    """Where the part of `text` from `start` ends, at most at `limit`: after the last paragraph break before
    `limit`, else the last line break, else the last space, else at `limit`."""
    for sep in ("\n\n", "\n", " "):
        at = text.rfind(sep, start, limit)
        if at >= 0:
            return at + len(sep)
    return limit


def _parts(text: str, max_chars: int) -> Iterator[str]:
    """`text` in consecutive parts of at most `max_chars` characters (`_part_end`), whose concatenation is it."""
    start = 0
    while len(text) - start > max_chars:
        end = _part_end(text, start, start + max_chars)
        yield text[start:end]
        start = end
    yield text[start:] if start else text


def _split_detail(chars: int, parts: int, max_chars: int) -> str:
    return (f"{chars:,} characters, more than the {max_chars:,} a document may hold: kept as {parts} documents "
            "cut at paragraph or line breaks")


def iter_jsonl_documents(f: InputFile, params: IngestParams, skips: SkipCounter,
                         _max_chars: int = MAX_DOCUMENT_CHARS) -> Iterator[Document]:
    """One document per JSON line; `url`/`timestamp` kept when present, other fields go to `meta`. A text longer
    than `_max_chars` gives one document per part (`_parts`), with `_part` in `meta`."""
    path = Path(f.path)
    field_name = params.jsonl_text_field
    skipped_before, documents = skips.total, 0
    try:
        fh, codec = _open_binary(path)
        with fh:
            line_no, pending = 0, []
            while True:
                try:
                    raw = _read_raw_line(fh, pending)
                except _DECOMPRESSION_ERRORS as e:
                    if codec is None:
                        raise
                    skips.skip(f"truncated_{codec}", f"{path}:{line_no + 1}", str(e))
                    break
                if not raw:
                    break
                line_no += 1
                if line_no == 1:
                    if raw.startswith(_UTF16_32_BOMS):
                        raise InputFileError(f"{path}: UTF-16 or UTF-32 text; JSON lines must be UTF-8 (convert it "
                                             "with `iconv -f UTF-16 -t UTF-8`)")
                    raw = raw.removeprefix(codecs.BOM_UTF8)
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    skips.skip("not_utf8", f"{path}:{line_no}", f"byte {e.start}: {raw[e.start:e.start + 1]!r}")
                    continue
                del raw  # a long line is held once: as its text, then as its record
                try:
                    record = _JSON.decode(line)
                except (ValueError, RecursionError) as e:  # also too deep, or an integer of over 4,300 digits
                    if not line.strip():
                        continue
                    if error := _not_json_lines(path, line_no, line, None):
                        raise error from e
                    skips.skip("bad_json", f"{path}:{line_no}", getattr(e, "msg", str(e)))
                    continue
                if type(record) is not dict:
                    if error := _not_json_lines(path, line_no, line, record):
                        raise error
                    skips.skip("not_an_object", f"{path}:{line_no}")
                    continue
                text = record.get(field_name)
                if type(text) is not str:
                    skips.skip("no_text_field", f"{path}:{line_no}", _missing_text(record, field_name))
                    continue
                url, time = _record_url_and_time(record)
                try:
                    ts = _parse_timestamp(time)
                except (ValueError, OverflowError, OSError):
                    skips.skip("bad_timestamp_kept", f"{path}:{line_no}", f"{time!r:.80}")
                    ts = None
                rest = {k: v for k, v in record.items() if k not in (field_name, "url", "timestamp", "created")}
                rest["_line"] = line_no
                url = str(url) if url is not None else None
                surrogates = "\\ud" in line or "\\uD" in line  # a lone one cannot be written as UTF-8: U+FFFD
                del record, line  # nor while its documents are written
                if surrogates:
                    text = without_surrogates(text)
                    url = without_surrogates(url) if url else url
                if len(text) <= _max_chars:
                    documents += 1
                    yield Document(id=stable_id(f.source, f.sha256, str(line_no)), text=text, source=f.source,
                                   url=url, timestamp=ts, meta=_jsonl_meta(rest, surrogates))
                    continue
                for k, part in enumerate(_parts(text, _max_chars)):
                    documents += 1
                    yield Document(id=stable_id(f.source, f.sha256, f"{line_no}.{k}"), text=part, source=f.source,
                                   url=url, timestamp=ts, meta=_jsonl_meta({**rest, "_part": k}, surrogates))
                skips.skip("too_long_split_kept", f"{path}:{line_no}", _split_detail(len(text), k + 1, _max_chars))
    except OSError as e:
        raise InputFileError(f"{path}: cannot be read ({e})") from e
    if not documents and skips.total == skipped_before:
        skips.skip("no_records", str(path), "no JSON line in the file" if not line_no else "only blank lines")


def _jsonl_meta(rest: dict, surrogates: bool) -> str:
    meta = json.dumps(rest, ensure_ascii=False, sort_keys=True, default=str)
    return without_surrogates(meta) if surrogates else meta


_TEXT_CHUNK_BYTES = 1 << 21  # a plain text file is read, decoded and split this many bytes at a time


def _iter_decoded_text(path: Path, fh: io.BufferedIOBase, chunk_bytes: int = _TEXT_CHUNK_BYTES) -> Iterator[str]:
    """A text file's text in pieces as read: UTF-8 (a byte-order mark dropped), or UTF-16/32 as its byte-order mark
    says. A file with a NUL byte is binary data given by mistake (or UTF-16 without a byte-order mark): refused
    naming where once the whole file has decoded (a decoding error further on is the one told); nothing is yielded
    from the NUL on. Errors name the same line, byte and character as decoding the whole file at once."""
    head = b""
    while len(head) < 4 and (more := fh.read(4 - len(head))):
        head += more
    if head.startswith(_UTF16_32_BOMS[:2]):
        encoding = "utf-32"
    elif head.startswith(_UTF16_32_BOMS[2:]):
        encoding = "utf-16"
    else:
        encoding, head = "utf-8", head.removeprefix(codecs.BOM_UTF8)
    decoder = codecs.getincrementaldecoder(encoding)()
    fed = raw_newlines = 0  # bytes given to the decoder (after a UTF-8 byte-order mark), and the b"\n" among them
    chars = newlines = 0  # characters decoded before the NUL, and the "\n" among them
    nul: tuple[int, int] | None = None  # (line, character) of the first NUL
    data, final = head, False
    while True:
        pending = len(decoder.getstate()[0])  # bytes of a character cut at the end of the last read
        try:
            text = decoder.decode(data, final)
        except UnicodeDecodeError as e:
            if encoding != "utf-8":
                raise InputFileError(f"{path}: not {encoding.upper()} text after its byte-order mark "
                                     f"({e.reason})") from e
            # e.object: the cut character's bytes (never a b"\n") then `data`
            line = raw_newlines + e.object.count(b"\n", 0, e.start) + 1
            raise InputFileError(f"{path}:{line}: not UTF-8 text "
                                 f"(byte {fed - pending + e.start}: {e.object[e.start:e.start + 1]!r})") from e
        fed += len(data)
        raw_newlines += data.count(b"\n")
        if nul is None:
            at = text.find("\x00")
            if at >= 0:
                nul = (newlines + text.count("\n", 0, at) + 1, chars + at)
            elif text:
                chars += len(text)
                newlines += text.count("\n")
                yield text
        if final:
            break
        data = fh.read(chunk_bytes)
        final = not data
    if nul is not None:
        raise InputFileError(f"{path}:{nul[0]}: a NUL character (character {nul[1]}): binary data, or UTF-16 text "
                             "without a byte-order mark, not a text file")


def _iter_lf_text(chunks: Iterator[str]) -> Iterator[str]:
    """`chunks` with CRLF and a lone CR made LF, as if done on their whole text: a CR ending a chunk waits for
    the next one, which may start with its LF."""
    cr = ""
    for text in chunks:
        text = cr + text
        cr = "\r" if text.endswith("\r") else ""
        if cr:
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if text:
            yield text
    if cr:
        yield "\n"


def _iter_split_text(chunks: Iterator[str], sep: str | None, max_chars: int) -> Iterator[tuple[str, bool, bool]]:
    """(text, ends_piece, is_last) for the pieces of "".join(chunks).split(sep) (sep "\\n" or "\\n\\n"; None:
    the whole text is one piece), in order, holding one piece at a time: a "\\n\\n" may straddle two chunks. A
    piece longer than `max_chars` comes in parts (`_parts`), read as they fill, the last one ending the piece."""
    tail: list[str] = []  # the piece being read, in parts (none empty)
    tail_chars = 0
    for text in chunks:
        if sep == "\n\n" and tail and tail[-1].endswith("\n") and text.startswith("\n"):
            tail[-1] = tail[-1][:-1]  # the piece's last "\n" is unmatched: with this one, a separator
            yield from _piece_parts("".join(tail), max_chars, False)
            tail, tail_chars, text = [], 0, text[1:]
        parts = text.split(sep) if sep else [text]
        if len(parts) > 1:
            tail.append(parts[0])
            yield from _piece_parts("".join(tail), max_chars, False)
            for piece in itertools.islice(parts, 1, len(parts) - 1):
                yield from _piece_parts(piece, max_chars, False)
            tail, tail_chars = [], 0
        if parts[-1]:
            tail.append(parts[-1])
            tail_chars += len(parts[-1])
        held = int(sep == "\n\n" and bool(tail) and tail[-1].endswith("\n"))  # maybe half a separator
        if tail_chars - held > max_chars:  # the piece's full parts go now; what may still grow stays
            piece = "".join(tail)
            *full, rest = _parts(piece[:-1] if held else piece, max_chars)
            for part in full:
                yield part, False, False
            tail = [rest + "\n" if held else rest]
            tail_chars = len(tail[0])
    yield from _piece_parts("".join(tail), max_chars, True)


def _piece_parts(piece: str, max_chars: int, last: bool) -> Iterator[tuple[str, bool, bool]]:
    """(part, ends_piece, is_last) for a whole piece: itself, or its parts when longer than `max_chars`."""
    if len(piece) <= max_chars:
        yield piece, True, last
        return
    *full, rest = _parts(piece, max_chars)
    for part in full:
        yield part, False, False
    yield rest, True, last


def _blank(text: str) -> bool:
    """`not text.strip()` without the stripped copy."""
    return not text or text.isspace()


def iter_text_documents(f: InputFile, params: IngestParams, skips: SkipCounter, _chunk_bytes: int = _TEXT_CHUNK_BYTES,
                        _max_chars: int = MAX_DOCUMENT_CHARS) -> Iterator[Document]:
    """A plain text file as one document, or one per paragraph / line (`text_split`), read a few MiB at a time:
    for paragraphs and lines the memory held is that of the longest piece, not of the file. A piece longer than
    `_max_chars` gives one document per part (`_parts`), numbered `<piece>.<part>` in its id and url, with `part`
    in `meta`; it is read a part at a time."""
    path = Path(f.path)
    name = path.name
    sep = {"file": None, "paragraph": "\n\n", "line": "\n"}[params.text_split]
    splits: list[tuple[str, str]] = []  # (where, detail) of each piece cut: counted once the whole file has decoded
    with open(path, "rb") as fh:
        chunks = _iter_lf_text(_iter_decoded_text(path, fh, _chunk_bytes))
        empty, documents = True, 0
        i = k = chars = before = 0  # the piece, its part (0 when whole), its characters so far, documents before it
        for text, ends_piece, last in _iter_split_text(chunks, sep, _max_chars):
            empty = empty and not text and last  # one piece only, and empty: the text is empty
            split = k > 0 or not ends_piece
            if not _blank(text):
                documents += 1
                yield Document(
                    id=stable_id(f.source, f.sha256, f"{i}.{k}" if split else str(i)),
                    text=text,
                    source=f.source,
                    url=(f"file://{name}#{i}.{k}" if split else f"file://{name}" if i == 0 and last
                         else f"file://{name}#{i}"),
                    meta=json.dumps({"file": name, "piece": i, **({"part": k} if split else {})}),
                )
            if not ends_piece:
                k, chars = k + 1, chars + len(text)
                continue
            if split and documents > before:  # a blank piece is dropped, cut or not
                splits.append((str(path) if sep is None else f"{path}#{i}",
                               _split_detail(chars + len(text), documents - before, _max_chars)))
            i, k, chars, before = i + 1, 0, 0, documents
    for where, detail in splits:
        skips.skip("too_long_split_kept", where, detail)
    if not documents:  # every piece blank: the text is whitespace, or empty
        skips.skip("no_records", str(path), "an empty file" if empty else "only whitespace")


def _read_chats(f: InputFile, params: IngestParams, skips: SkipCounter) -> list:
    """The chats of one chat input: one for a WhatsApp export, any number for a database or a Telegram export."""
    if f.kind == "whatsapp":
        from tasks.whatsapp import parse_whatsapp_export

        order = None if params.date_order == "auto" else params.date_order
        return [parse_whatsapp_export(Path(f.path), date_order=order, skips=skips, export_year=params.export_year)]
    if f.kind == "whatsapp-db":
        from tasks.whatsapp.database import (
            contacts_database_beside,
            is_contacts_database,
            read_whatsapp_database,
        )

        contacts = f.contacts if f.contacts is not None else contacts_database_beside(f.path)
        try:
            return read_whatsapp_database(Path(f.path), skips, me=params.database_owner, tz=params.database_timezone,
                                          contacts_db=contacts)
        except InputFileError:
            # told after a failed read only, not before every read: opening a msgstore.db with a -wal copies it
            if not is_contacts_database(f.path):
                raise
            # a wa.db that no database of the run takes (`_pair_contacts`): counted, nothing to read
            skips.skip("whatsapp_contacts_unpaired", f.path, "a wa.db paired with no msgstore.db (none or several "
                       f"could take its names): set `contacts: {f.path}` on its msgstore.db's entry in ingest.inputs")
            return []
    if f.kind == "messenger":
        from tasks.messenger import read_messenger_export

        return read_messenger_export(Path(f.path), skips, tz=params.database_timezone, source=f.source,
                                     split=f.split)
    if f.kind == "discord":
        from tasks.discord import read_discord_export

        return read_discord_export(Path(f.path), skips, tz=params.database_timezone, owner=params.database_owner)
    if Path(f.path).suffix.lower() in (".html", ".htm"):
        from tasks.telegram_html import read_telegram_html_export

        return read_telegram_html_export(Path(f.path), skips)
    from tasks.telegram import read_telegram_export

    return read_telegram_export(Path(f.path), skips, tz=params.database_timezone)


def _documents(
    f: InputFile,
    messages_part_path: str | None,
    params: IngestParams,
    skips: SkipCounter,
    result: ShardCounts,
) -> Iterator[Document]:
    if f.kind in CHAT_KINDS:
        from tasks.whatsapp import chat_to_documents

        chats = _read_chats(f, params, skips)
        if messages_part_path is None:
            raise ValueError("a chat input needs a messages part path")
        with ParquetShardWriter(messages_part_path, MESSAGE_SCHEMA) as msgs:
            for chat in chats:
                msgs.write_rows(m.as_row() for m in chat.messages)
        result.tally("messages", sum(len(c.messages) for c in chats))
        # one chat per .txt export (its stats as they were); a database or a Telegram account: stats per chat
        stats = chats[0].stats if f.kind == "whatsapp" else {c.chat_id: c.stats for c in chats}
        result.info["stats"] = _jsonable(stats)
        return itertools.chain.from_iterable(
            chat_to_documents(c, session_gap_hours=params.session_gap_hours, pseudonymize=params.pseudonymize,
                              salt=params.pseudonym_salt)
            for c in chats
        )
    if f.kind == "wet":
        from tasks.commoncrawl import iter_wet_documents

        return iter_wet_documents(Path(f.path), skips)
    if f.kind == "warc":
        from tasks.commoncrawl import iter_warc_documents

        return iter_warc_documents(Path(f.path), skips)
    if f.kind == "jsonl":
        return iter_jsonl_documents(f, params, skips)
    if f.kind == "text":
        return iter_text_documents(f, params, skips)
    raise InputFileError(f"{f.path}: unknown input kind '{f.kind}'")


def ingest_file(
    f: InputFile, part_path: str, messages_part_path: str | None, params: IngestParams
) -> ShardCounts:
    """Ingest one raw file into one document part (and one messages part for WhatsApp exports).

    `docs_out` counts the documents, `docs_in` them and the skipped records (`extra["skipped"]`, per reason,
    with a located example in `info["skip_examples"]`); `info["error"]` says why an unreadable file gave none.
    """
    skips = SkipCounter()
    result = ShardCounts(part=part_path, in_part=f.path, bytes_in=os.path.getsize(f.path), bytes_out=None,
                         extra={"files_in": 1, "files_unreadable": 0, "messages": 0}, info={"error": None})
    try:
        with ParquetShardWriter(part_path, DOCUMENT_SCHEMA) as docs:
            for doc in _documents(f, messages_part_path, params, skips, result):
                doc.source = f.source
                docs.write_row(doc.as_row())
        result.docs_out = docs.rows
    except InputFileError as e:  # the flow fails naming it, or with `on_unreadable: skip` logs it and goes on
        result.info["error"] = str(e)
        result.docs_out = result.extra["messages"] = 0
        result.extra["files_unreadable"] = 1
        # An unreadable file still gets its (empty) parts, so part numbers stay aligned with input files.
        ParquetShardWriter(part_path, DOCUMENT_SCHEMA).close()
        if messages_part_path:
            ParquetShardWriter(messages_part_path, MESSAGE_SCHEMA).close()
    result.extra["skipped"] = dict(skips.counts)
    # records read: kept documents plus skipped records; a `*_kept` reason is a notice about a kept document
    # (a bad time, a cut record, a text split in parts), not a record lost
    result.docs_in = result.docs_out + sum(n for reason, n in skips.counts.items() if not reason.endswith("_kept"))
    result.info["skip_examples"] = dict(skips.examples)
    return result


@dataclass
class ChatCopies:
    """What `merge_chat_copies` did: the document parts it rewrote (by index) and one record per merged chat."""

    rewritten: list[int]
    merged: list[dict]


def merge_chat_copies(doc_parts: Sequence[str], message_parts: Sequence[str | None], sources: Sequence[str],
                      params: IngestParams) -> ChatCopies:
    """Copies of one conversation in several chat inputs (a `.txt` export and the phone's database, an export made
    again later) become one chat in the documents: `tasks.chat_merge` finds them in the messages parts, the
    copies' documents are removed from their parts and the merged chat's sessions written, once, into the part of
    the copy it keeps (the one with exact timestamps). Part `i` of `doc_parts` is input file `i`'s, `message_parts`
    its messages part (None, missing or empty for a file that is not a chat), `sources` its source. The messages
    dataset keeps every copy as read (sft-data merges them the same way). Rerunning it on its own output changes
    nothing."""
    from tasks.chat_merge import merge_chat_rows, read_chat_rows
    from tasks.whatsapp import chat_to_documents

    chat_parts = [(i, p) for i, p in enumerate(message_parts) if p and os.path.isfile(p)]
    if len(chat_parts) < 2:
        return ChatCopies([], [])
    rows_by_chat: dict[str, list[dict]] = {}
    part_of: dict[str, int] = {}
    for i, part in chat_parts:
        rows, _ = read_chat_rows([part])
        for chat_id, chat_rows in rows.items():
            if chat_id not in rows_by_chat:  # the same chat id twice is the same file read twice: one copy
                rows_by_chat[chat_id], part_of[chat_id] = chat_rows, i
    removed: set[str] = set()
    added: dict[int, list[dict]] = {}
    merged = []
    for chat in merge_chat_rows(rows_by_chat):
        copies = chat.stats.get("merged_from")
        if not copies:
            continue
        home = part_of[chat.chat_id]
        docs = chat_to_documents(chat, session_gap_hours=params.session_gap_hours, pseudonymize=params.pseudonymize,
                                 salt=params.pseudonym_salt)
        for doc in docs:
            doc.source = sources[home]
        removed.update(c["chat_id"] for c in copies)
        added.setdefault(home, []).extend(doc.as_row() for doc in docs)
        merged.append({"chat_id": chat.chat_id, "copies": copies,
                       "shared_messages": chat.stats["merged_shared_messages"],
                       "offset_seconds": chat.stats["merged_offset_seconds"], "documents": len(docs)})
    rewritten = sorted({part_of[chat_id] for chat_id in removed})
    for i in rewritten:
        _rewrite_chat_part(doc_parts[i], removed, added.get(i, []))
    return ChatCopies(rewritten, merged)


def count_chat_copies(counts: dict, stats: dict, copies: ChatCopies, doc_parts: Sequence[str]) -> tuple[dict, dict]:
    """The manifest's counts and stats after `merge_chat_copies`: `out` is what the parts now hold, the documents
    of copies left out are skipped as `duplicate_chat_copy`, and `merged_chats` lists the merged chats."""
    from storage.parquet import count_rows

    out = sum(count_rows(p) for p in doc_parts)
    counts = {**counts, "out": out, "skipped_duplicate_chat_copy": max(0, counts["out"] - out)}
    return counts, {**stats, "merged_chats": copies.merged}


def _rewrite_chat_part(path: str, removed: set[str], added: list[dict]) -> None:
    """The documents part at `path` without the sessions of the chats in `removed`, then `added` (in place)."""
    from storage.parquet import iter_batches

    def kept() -> Iterator[dict]:
        for batch in iter_batches(Path(path)):
            for row in batch.to_pylist():
                if json.loads(row["meta"] or "{}").get("chat_id") not in removed:
                    yield row

    with ParquetShardWriter(path, DOCUMENT_SCHEMA) as out:  # a new file renamed over the old on close
        out.write_rows(kept())
        out.write_rows(added)


def unreadable_files(shards: Sequence[ShardCounts]) -> dict[str, str]:
    """Each input file that could not be read at all → why (the message names the file)."""
    return {r.in_part: r.info["error"] for r in shards if r.info.get("error")}


def check_readable(errors: Mapping[str, str], params: IngestParams) -> None:
    """Fail naming every file that could not be read (`unreadable_files`), one line each, unless `on_unreadable`
    is `skip`."""
    if not errors or params.on_unreadable == "skip":
        return
    some, them = ("1 input file cannot", "it") if len(errors) == 1 else (f"{len(errors)} input files cannot", "them")
    raise InputFileError("\n".join(
        [f"{some} be read (fix or remove {them}, or set ingest.on_unreadable: skip to ingest the others):",
         *errors.values()]
    ))


def _jsonable(obj: object) -> object:
    return json.loads(json.dumps(obj, default=str))


def ingest_stats(_total: ShardCounts, shards: Sequence[ShardCounts]) -> dict:
    """Which files could not be read, an example of each skip reason, and what each file gave."""
    return {
        "unreadable_files": unreadable_files(shards),
        "skip_examples": {k: v for r in shards for k, v in r.info.get("skip_examples", {}).items()},
        "per_file": {
            r.in_part: {"documents": r.docs_out, "messages": r.extra.get("messages", 0),
                        **({"stats": r.info["stats"]} if r.info.get("stats") else {})}
            for r in shards
        },
    }


SUMMARY = Summary(counted={"files_in": 0, "files_unreadable": 0, "messages": 0, "skipped": {}}, stats=ingest_stats)
