"""Reading one WhatsApp "Export chat" file — a `.txt`, or the `.zip` made with "Attach media" — into messages.

The whole file is read at once (exports are at most a few hundred MB of text): the date order can only be
decided after every date has been seen. Media inside a zip are listed, never extracted or read.
"""

from __future__ import annotations

import codecs
import gc
import hashlib
import logging
import os
import posixpath
import re
import zipfile
import zlib
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from storage.schemas import MESSAGE_KINDS
from tasks.records import InputFileError, SkipCounter
from tasks.whatsapp.classify import classify, split_author
from tasks.whatsapp.headers import (
    IOS_MARK,
    DateEvidence,
    Header,
    OrderDecision,
    decide_date_orders,
    make_date,
    match_header,
    normalize_date_order,
    normalize_text,
    swapped,
)

log = logging.getLogger(__name__)

# A chat text bigger than this inside a zip is refused rather than inflated into memory (zip bombs).
MAX_CHAT_BYTES = 2 << 30
# A file without a message header in its first lines is not an export: stop reading instead of skipping it all.
HEADER_SEARCH_LINES = 500
_HASH_CHUNK = 1 << 20
_SKIP_BEFORE_HEADER = "whatsapp_line_before_first_header"


@dataclass(slots=True)
class ChatMessage:
    """One row of the chat messages schema (storage.schemas.MESSAGE_SCHEMA)."""

    chat_id: str
    index: int  # position in the file, from 0
    timestamp: datetime | None  # naive local time, as written in the export
    author: str | None  # None for system lines
    # multi-line kept; "<This message was edited>" removed; invisible direction marks (U+200E, U+200F,
    # U+2066–U+2069…) dropped and NBSP / narrow NBSP written as plain spaces; otherwise as written
    text: str
    kind: str  # one of storage.schemas.MESSAGE_KINDS
    source_file: str  # the export's file name

    def as_row(self) -> dict:
        return {
            "chat_id": self.chat_id,
            "index": self.index,
            "timestamp": self.timestamp,
            "author": self.author,
            "text": self.text,
            "kind": self.kind,
            "source_file": self.source_file,
        }


@dataclass
class WhatsAppChat:
    """A parsed export: its messages in file order and what the parser saw and decided (`stats`)."""

    chat_id: str  # sha256 of the export file's bytes, 32 hex digits
    source_file: str  # file name of the export (what message rows carry)
    messages: list[ChatMessage]
    stats: dict = field(default_factory=dict)
    path: str = ""  # the path it was read from

    def as_rows(self) -> list[dict]:
        return [m.as_row() for m in self.messages]


def parse_whatsapp_export(
    path: str | os.PathLike,
    *,
    date_order: str | None = None,
    skips: SkipCounter | None = None,
) -> WhatsAppChat:
    """Parse a WhatsApp chat export (`.txt`, or `.zip` with `_chat.txt`/`*.txt` inside) into messages.

    `stats` of the result: message count and counts per kind, messages per author, the date order decided
    (`date_order`, `date_order_ambiguous`, `date_order_source`, per header group `date_orders`), the header
    format(s) seen, lines before the first message (`unattached_lines`), headers with impossible dates read as
    text (`invalid_header_dates`), out-of-order timestamps, encoding, and for zips the chat member and the
    media files listed (never extracted).

    `date_order` ("dmy", "mdy", "ymd"; or "day_first"/"month_first") is used only when the file's own dates
    cannot tell day from month (no field above 12); otherwise the file decides and the argument is ignored
    with a warning. Lines before the first message are counted in `skips`. Raises InputFileError, naming the
    file, when it cannot be read as an export at all.
    """
    path = Path(path)
    requested = normalize_date_order(date_order)
    skips = skips if skips is not None else SkipCounter()
    if _is_zip(path):
        return _parse_zip(path, requested, skips)
    data = _read_bytes(path)
    chat_id = hashlib.sha256(data).hexdigest()[:32]
    return _parse_bytes(
        data,
        path=path,
        where=str(path),
        chat_id=chat_id,
        requested=requested,
        skips=skips,
        member=None,
        media_files=[],
    )


def looks_like_whatsapp(path: str | os.PathLike, *, head_bytes: int = 64 * 1024) -> bool:
    """Cheap sniff for input-kind detection: does this `.txt` (or zip's chat text) read like an export?

    True when the first non-empty line is a message header, or at least 3 of the first 50 non-empty lines
    are. Never raises: an unreadable file is simply not recognised.
    """
    path = Path(path)
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = [
                    i
                    for i in archive.infolist()
                    if i.filename.lower().endswith(".txt") and not _junk_member(i.filename)
                ]
                heads = []
                for info in names[:5]:
                    with archive.open(info) as member:
                        heads.append(member.read(head_bytes))
        else:
            with open(path, "rb") as f:
                heads = [f.read(head_bytes)]
    except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError, zlib.error, EOFError):
        return False
    return any(_head_has_headers(head, truncated=len(head) == head_bytes) for head in heads)


def _head_has_headers(head: bytes, truncated: bool) -> bool:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = head.decode("utf-16", errors="ignore")
    else:
        text = head.decode("utf-8", errors="ignore")
    lines = _split_lines(normalize_text(text))
    if truncated:
        lines = lines[:-1]  # cut in the middle
    lines = [line for line in lines if line.strip()][:50]
    hits = [match_header(line) is not None for line in lines]
    return bool(hits) and (hits[0] or sum(hits) >= 3)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected a WhatsApp .txt or .zip export") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None


def _is_zip(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected a WhatsApp .txt or .zip export") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None
    return head in (b"PK\x03\x04", b"PK\x05\x06") or path.suffix.lower() == ".zip"


def _unsafe_member_name(name: str) -> bool:
    """Names that would escape an extraction directory (zip slip), even though we never extract."""
    n = name.replace("\\", "/")
    return n.startswith("/") or bool(re.match(r"[A-Za-z]:", n)) or ".." in n.split("/") or "\x00" in n


def _junk_member(name: str) -> bool:
    base = posixpath.basename(name.rstrip("/"))
    return name.startswith("__MACOSX/") or base.startswith("._") or base in (".DS_Store", "Thumbs.db")


def _parse_zip(path: Path, requested: str | None, skips: SkipCounter) -> WhatsAppChat:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(_HASH_CHUNK):
                digest.update(chunk)
        archive = zipfile.ZipFile(path)
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None
    except zipfile.BadZipFile as e:
        raise InputFileError(f"{path}: not a readable zip archive ({e})") from None
    chat_id = digest.hexdigest()[:32]
    with archive:
        infos = archive.infolist()
        for info in infos:
            if _unsafe_member_name(info.filename):
                raise InputFileError(
                    f"{path}: refusing an archive with an unsafe member name {info.filename!r} "
                    "(absolute or '..' path: zip slip)"
                )
        members = [i for i in infos if not i.is_dir() and not _junk_member(i.filename)]
        texts = sorted(
            (i for i in members if i.filename.lower().endswith(".txt")),
            key=lambda i: (
                posixpath.basename(i.filename) != "_chat.txt",
                not posixpath.basename(i.filename).lower().startswith("whatsapp"),
                i.filename.count("/"),
                -i.file_size,
            ),
        )
        if not texts:
            raise InputFileError(f"{path}: no chat text file (_chat.txt or *.txt) inside the archive")
        problems = []
        for info in texts:
            if info.file_size > MAX_CHAT_BYTES:
                problems.append(
                    f"{info.filename}: {info.file_size} bytes, more than the {MAX_CHAT_BYTES} allowed"
                )
                continue
            try:
                data = archive.read(info)
            except (
                zipfile.BadZipFile,
                RuntimeError,
                NotImplementedError,
                zlib.error,
                EOFError,
                OSError,
            ) as e:
                problems.append(f"{info.filename}: cannot be decompressed ({e})")
                continue
            media = [i.filename for i in members if i is not info]
            try:
                return _parse_bytes(
                    data,
                    path=path,
                    where=f"{path}!{info.filename}",
                    chat_id=chat_id,
                    requested=requested,
                    skips=skips,
                    member=info.filename,
                    media_files=media,
                )
            except InputFileError as e:
                problems.append(str(e))
        raise InputFileError(f"{path}: no WhatsApp chat inside the archive ({'; '.join(problems)})")


def _decode(data: bytes, where: str, skips: SkipCounter) -> tuple[str, str]:
    if data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = "utf-8"
        if b"\x00" in data[:8192]:
            raise InputFileError(f"{where}: binary data (NUL bytes), not a WhatsApp chat export")
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as e:
        skips.skip(
            "whatsapp_invalid_utf8", f"{where}: byte {e.start}", "undecodable bytes replaced by U+FFFD"
        )
        return data.decode(encoding, errors="replace"), encoding


def _split_lines(text: str) -> list[str]:
    # only \r\n, \r and \n end lines: str.splitlines() would also split on U+2028, U+0085… inside messages
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@contextmanager
def _gc_paused():
    """Millions of small acyclic objects make the cyclic collector run over and over (a third of the parse
    time on a 50 MB export); nothing here creates cycles, so pause it and restore the previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(slots=True)
class _Entry:
    header: Header
    lineno: int
    line: str
    extra: list[str] | None = None


def _parse_bytes(
    data: bytes,
    *,
    path: Path,
    where: str,
    chat_id: str,
    requested: str | None,
    skips: SkipCounter,
    member: str | None,
    media_files: list[str],
) -> WhatsAppChat:
    if not data.strip():
        raise InputFileError(f"{where}: empty file, not a WhatsApp chat export")
    skipped_before = skips.counts[_SKIP_BEFORE_HEADER]
    text, encoding = _decode(data, where, skips)
    lines = _split_lines(normalize_text(text))
    with _gc_paused():
        entries = _find_messages(lines, where, skips)
        messages, order_stats = _build_messages(entries, chat_id, path.name, requested, where, skips)
    if not messages:
        raise InputFileError(f"{where}: no line with a valid date, not a WhatsApp chat export")
    stats = _chat_stats(messages, order_stats)
    stats.update(
        lines=len(lines),
        bytes=len(data),
        encoding=encoding,
        unattached_lines=skips.counts[_SKIP_BEFORE_HEADER] - skipped_before,
        archive_member=member,
        media_files=media_files,
    )
    return WhatsAppChat(
        chat_id=chat_id, source_file=path.name, messages=messages, stats=stats, path=str(path)
    )


def _find_messages(lines: list[str], where: str, skips: SkipCounter) -> list[_Entry]:
    """Group lines into messages: a header line, then the lines that continue it."""
    entries: list[_Entry] = []
    current: _Entry | None = None
    unattached = 0
    for lineno, line in enumerate(lines, 1):
        if line and (line[0] == "[" or line[0].isdigit()):
            header = match_header(line)
            if header is not None:
                current = _Entry(header, lineno, line)
                entries.append(current)
                continue
        if current is None:
            if line.strip():
                unattached += 1
                if unattached > HEADER_SEARCH_LINES:
                    raise InputFileError(
                        f"{where}: no WhatsApp message header in the first {HEADER_SEARCH_LINES} lines, "
                        "not a chat export (expected lines such as '31/12/2023, 21:05 - Name: text' or "
                        "'[31/12/2023, 21:05:10] Name: text')"
                    )
                skips.skip(_SKIP_BEFORE_HEADER, f"{where}:{lineno}", line[:80])
            continue
        if current.extra is None:
            current.extra = [line]
        else:
            current.extra.append(line)
    if not entries:
        raise InputFileError(
            f"{where}: no WhatsApp message header found, not a chat export (expected lines such as "
            "'31/12/2023, 21:05 - Name: text' or '[31/12/2023, 21:05:10] Name: text')"
        )
    return entries


def _resolve_dates(
    entries: list[_Entry], requested: str | None, where: str, skips: SkipCounter
) -> tuple[list[tuple[_Entry, date]], dict[tuple[str, str, str], OrderDecision], Counter, int]:
    """Date every entry; an entry whose date exists in no order is a text line of the previous message."""
    evidence: dict[tuple[str, str, str], DateEvidence] = {}
    for e in entries:
        h = e.header
        group = h.shape.group
        ev = evidence.get(group)
        if ev is None:
            ev = evidence[group] = DateEvidence()
        ev.add(h.a, h.b, h.c)
    decisions = decide_date_orders(evidence, requested)
    if requested is not None:
        for group, dec in decisions.items():
            if dec.source == "evidence" and dec.order != requested:
                log.warning(
                    "%s: date_order=%r ignored for %s headers, the dates say %r",
                    where,
                    requested,
                    group[0],
                    dec.order,
                )

    cache: dict[tuple[str, int, int, int], tuple[date | None, bool]] = {}
    dated: list[tuple[_Entry, date]] = []
    conflicts: Counter = Counter()
    invalid = 0
    for e in entries:
        h = e.header
        order = decisions[h.shape.group].order
        key = (order, h.a, h.b, h.c)
        hit = cache.get(key)
        if hit is None:
            hit = _date_in(order, h.a, h.b, h.c)
            cache[key] = hit
        day, was_swapped = hit
        if day is None:
            invalid += 1
            lines = [e.line] + (e.extra or [])
            if dated:
                previous = dated[-1][0]
                previous.extra = (previous.extra or []) + lines
            else:
                for offset, line in enumerate(lines):
                    if line.strip():
                        skips.skip(_SKIP_BEFORE_HEADER, f"{where}:{e.lineno + offset}", line[:80])
            continue
        if was_swapped:
            conflicts[h.shape.group] += 1
        dated.append((e, day))
    return dated, decisions, conflicts, invalid


def _date_in(order: str, a: int, b: int, c: int) -> tuple[date | None, bool]:
    try:
        return make_date(order, a, b, c), False
    except ValueError:
        pass
    try:
        return make_date(swapped(order), a, b, c), True
    except ValueError:
        return None, False


def _build_messages(
    entries: list[_Entry],
    chat_id: str,
    source_file: str,
    requested: str | None,
    where: str,
    skips: SkipCounter,
) -> tuple[list[ChatMessage], dict]:
    dated, decisions, conflicts, invalid = _resolve_dates(entries, requested, where, skips)
    messages: list[ChatMessage] = []
    shapes: Counter = Counter()
    for index, (e, day) in enumerate(dated):
        h = e.header
        shapes[h.shape] += 1
        author, body, ios_mark = split_author(h.rest)
        if e.extra:
            body = body + "\n" + "\n".join(e.extra)
        kind, author, text = classify(author, body.strip(), ios_mark)
        if IOS_MARK in text:
            text = text.replace(IOS_MARK, "")
        timestamp = datetime(day.year, day.month, day.day, h.hour, h.minute, h.second)
        messages.append(ChatMessage(chat_id, index, timestamp, author, text, kind, source_file))

    by_group: Counter = Counter()
    formats: Counter = Counter()
    for shape, n in shapes.items():
        by_group[shape.group] += n
        formats[shape.describe(decisions[shape.group].order)] += n
    main_group = by_group.most_common(1)[0][0] if by_group else next(iter(decisions))
    main = decisions[main_group]
    used = [g for g in decisions if by_group[g]]
    order_stats = {
        "date_order": main.order,
        "date_order_ambiguous": any(decisions[g].ambiguous for g in used),
        "date_order_source": main.source,
        "date_order_conflicts": sum(conflicts.values()),
        "date_orders": {_group_label(g): decisions[g].order for g in used},
        "invalid_header_dates": invalid,
        "header_format": formats.most_common(1)[0][0] if formats else None,
        "header_formats": dict(formats.most_common()),
    }
    if main.ambiguous:
        log.info("%s: no day above 12 in any date, read as %s (pass date_order to choose)", where, main.order)
    return messages, order_stats


def _group_label(group: tuple[str, str, str]) -> str:
    layout, sep, year_pos = group
    return f"{layout} '{sep}' year {year_pos}"


def _chat_stats(messages: list[ChatMessage], order_stats: dict) -> dict:
    kinds = Counter(m.kind for m in messages)
    authors: Counter = Counter(m.author for m in messages if m.author is not None)
    out_of_order = sum(
        1
        for prev, cur in zip(messages, messages[1:], strict=False)
        if cur.timestamp < prev.timestamp  # type: ignore[operator]
    )
    stats = {
        "messages": len(messages),
        "kinds": {k: kinds.get(k, 0) for k in MESSAGE_KINDS},
        "authors": dict(authors),
        "first_timestamp": min(m.timestamp for m in messages).isoformat() if messages else None,  # type: ignore[type-var]
        "last_timestamp": max(m.timestamp for m in messages).isoformat() if messages else None,  # type: ignore[type-var]
        "out_of_order_timestamps": out_of_order,
    }
    stats.update(order_stats)
    return stats
