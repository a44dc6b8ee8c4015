"""Reading one WhatsApp "Export chat" file — a `.txt`, or the `.zip` made with "Attach media" — into messages.

The whole file is read at once (exports are at most a few hundred MB of text): the date order can only be
decided after every date has been seen. Messages are cut out of the text by position, between one header and
the next. Media inside a zip are listed, never extracted or read.

Hostile files: only regular files are opened (not /dev/zero, a FIFO, a socket); at most MAX_CHAT_BYTES of chat
text is read from a file or inflated out of a zip, whatever sizes the archive declares, and a zip member that
inflates more than MAX_COMPRESSION_RATIO times its compressed size is refused as a zip bomb. Memory stays near
the text itself (once as a str), the header index and the messages: the bytes are freed once decoded, and each
block of header entries once its messages are built.
"""

from __future__ import annotations

import codecs
import gc
import hashlib
import logging
import os
import posixpath
import re
import stat
import threading
import zipfile
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from operator import attrgetter, itemgetter, lt
from pathlib import Path

from storage.schemas import MESSAGE_KINDS
from tasks.records import InputFileError, SkipCounter, read_errors
from tasks.whatsapp.classify import classify, is_attachment, split_author
from tasks.whatsapp.headers import (
    IOS_MARK,
    HeaderEntry,
    HeaderScan,
    OrderDecision,
    decide_date_orders,
    make_date,
    match_header,
    month_first_by_default,
    normalize_date_order,
    normalize_text,
    put_date_first,
    scan_headers,
    swapped,
)
from tasks.whatsapp.spelled_dates import write_dates_in_digits

log = logging.getLogger(__name__)

# The most bytes of chat text read from one export, a `.txt` or the chat inflated out of a `.zip` (declared
# sizes are not trusted): a real export of 40,000 messages is a few MB (WhatsApp caps its exports there), so 128 MiB
# stops only zip bombs and endless streams. A parse needs about 5 times the text in memory, 9 times when it holds
# emoji (Python then stores the whole text at 4 bytes a character): messages as Python objects weigh about 3 times
# the text they hold. The cap bounds a hostile file at about 1.2 GB of memory.
MAX_CHAT_BYTES = 128 << 20
# A chat member inflating more than this many times its compressed size is a zip bomb (text compresses 3 to 10
# times); checked only past RATIO_CHECK_BYTES of text, so that a small, very repetitive chat still reads.
MAX_COMPRESSION_RATIO = 100
RATIO_CHECK_BYTES = 4 << 20
_READ_CHUNK = 1 << 20
# A file without a message header in its first lines is not an export: stop reading instead of skipping it all.
HEADER_SEARCH_LINES = 500
_SKIP_BEFORE_HEADER = "whatsapp_line_before_first_header"
_SKIP_UNDECODABLE = "whatsapp_undecodable_bytes"
# message entries built at a time, then freed (see _build_messages)
_BUILD_BLOCK = 1 << 12
# WhatsApp's "Export chat" writes only the latest 40,000 messages of a chat, 10,000 when media are attached, and
# says nothing of what it left out. A file whose message count lies at a cap, or at most EXPORT_CAP_BELOW of it
# below (messages WhatsApp counts that the parser merges or drops, such as lines with impossible dates) or
# EXPORT_CAP_ABOVE above (notices WhatsApp adds on top), is taken as cut: `stats["export_cap"]` says so and a
# warning points to the database route, which has no cap. "With media" is a zip holding media files or a text
# with attachments that name their file ("<attached: …>", "… (file attached)").
EXPORT_CAP_WITHOUT_MEDIA = 40_000
EXPORT_CAP_WITH_MEDIA = 10_000
EXPORT_CAP_BELOW = 0.01
EXPORT_CAP_ABOVE = 10


class NotAnExportError(InputFileError):
    """A file in which no line reads as the start of a WhatsApp message; `lines` holds its first non-empty
    lines (at most NOT_AN_EXPORT_LINES), to show what was there instead."""

    def __init__(self, message: str, lines: list[str]) -> None:
        super().__init__(message)
        self.lines = lines


NOT_AN_EXPORT_LINES = 5


@dataclass(slots=True)
class ChatMessage:
    """One row of the chat messages schema (storage.schemas.MESSAGE_SCHEMA)."""

    chat_id: str
    index: int  # position in the file, from 0
    timestamp: datetime | None  # naive local time, as written in the export
    author: str | None  # None for system lines; NFC, without invisible marks (classify.normalize_author)
    # multi-line kept; "<This message was edited>" removed; invisible direction marks (U+200E, U+200F,
    # U+2066–U+2069…) dropped, except the U+2068…U+2069 around an @mentioned name, and NBSP / narrow NBSP
    # written as plain spaces; otherwise as written
    text: str
    kind: str  # one of storage.schemas.MESSAGE_KINDS
    source_file: str  # the export's file name
    # what this message replies to, where the source records it (databases, Telegram; never .txt exports): the
    # replied message's index as a string, or "#" and the source's own id of it when it is not in the chat
    reply_to: str | None = None

    def as_row(self) -> dict:
        return {
            "chat_id": self.chat_id,
            "index": self.index,
            "timestamp": self.timestamp,
            "author": self.author,
            "text": self.text,
            "kind": self.kind,
            "source_file": self.source_file,
            "reply_to": self.reply_to,
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
    export_year: int | None = None,
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
    with a warning. Old exports that spell the month ("Mar 5, 8:11 PM - ") may write no year: it is inferred
    (`stats["spelled_dates"]`; see `spelled_dates.write_dates_in_digits`), counting back from `export_year`
    (the year of the last message) when the file writes no year at all, else from the current year. Lines
    before the first message, and undecodable bytes, are counted in `skips`. The encoding
    (`stats["encoding"]`) is detected: UTF-8, with or without BOM, UTF-16 LE or BE, with or without BOM, else
    cp1252. Raises InputFileError, naming the file, when it cannot be read as an export at all (not a regular
    file, more than MAX_CHAT_BYTES of text, a zip bomb…): NotAnExportError, with the file's first lines, when no
    line of it reads as the start of a message.
    """
    path = Path(path)
    requested = normalize_date_order(date_order)
    skips = skips if skips is not None else SkipCounter()
    _check_regular_file(path)
    if _is_zip(path):
        return _parse_zip(path, requested, skips, export_year)
    data = _read_text_file(path)
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
        export_year=export_year,
    )


def looks_like_whatsapp(path: str | os.PathLike, *, head_bytes: int = 64 * 1024) -> bool:
    """Cheap sniff for input-kind detection: does this `.txt` (or zip's chat text) read like an export?

    True when the first non-empty line is a message header, or at least 3 of the first 50 non-empty lines
    are. Never raises: an unreadable file is simply not recognised.
    """
    path = Path(path)
    if not path.is_file():  # a directory, a device, a FIFO that would block: no export
        return False
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
    lines = _split_lines(write_dates_in_digits(put_date_first(normalize_text(text)))[0])
    if truncated:
        lines = lines[:-1]  # cut in the middle
    lines = [line for line in lines if line.strip()][:50]
    hits = [match_header(line) is not None for line in lines]
    return bool(hits) and (hits[0] or sum(hits) >= 3)


_NOT_REGULAR = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_regular_file(path: Path) -> None:
    """InputFileError unless `path` is a regular file (or a link to one): /dev/zero would be read forever, and
    opening a FIFO waits for a writer."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None
    if stat.S_ISDIR(mode):
        raise InputFileError(f"{path}: is a directory, expected a WhatsApp .txt or .zip export")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _NOT_REGULAR if test(mode)), "a special file")
        raise InputFileError(f"{path}: not a regular file ({kind}), expected a WhatsApp .txt or .zip export")


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


def _read_capped(stream, where: str, compressed: int | None = None) -> bytearray:
    """All of `stream`, read in chunks, refused past MAX_CHAT_BYTES and, for a zip member of `compressed` bytes,
    past MAX_COMPRESSION_RATIO. A bytearray, so that the parse can free it once decoded."""
    data = bytearray()
    while chunk := stream.read(_READ_CHUNK):
        data += chunk
        if len(data) > MAX_CHAT_BYTES:
            raise InputFileError(
                f"{where}: more than {_mib(MAX_CHAT_BYTES)} of chat text (tasks.whatsapp.parser.MAX_CHAT_BYTES), "
                "far more than any export; refusing it (a zip bomb or an endless stream?)"
            )
        if compressed is not None and len(data) > max(RATIO_CHECK_BYTES, MAX_COMPRESSION_RATIO * compressed):
            raise InputFileError(
                f"{where}: inflates more than {MAX_COMPRESSION_RATIO} times its compressed size of "
                f"{compressed} bytes (chat text compresses 3 to 10 times); refusing a zip bomb"
            )
    return data


def _read_text_file(path: Path) -> bytearray:
    try:
        with open(path, "rb") as f:
            return _read_capped(f, str(path))
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None


def read_head(path: Path, size: int, expected: str) -> bytes:
    """A file's first `size` bytes; a file that cannot be opened is a one-line InputFileError (`expected`: what a
    directory given instead should have been)."""
    with read_errors(path, expected), open(path, "rb") as f:
        return f.read(size)


def _is_zip(path: Path) -> bool:
    head = read_head(path, 4, "a WhatsApp .txt or .zip export")
    return head in (b"PK\x03\x04", b"PK\x05\x06") or path.suffix.lower() == ".zip"


def _unsafe_member_name(name: str) -> bool:
    """Names that would escape an extraction directory (zip slip), even though we never extract."""
    n = name.replace("\\", "/")
    return n.startswith("/") or bool(re.match(r"[A-Za-z]:", n)) or ".." in n.split("/") or "\x00" in n


def _junk_member(name: str) -> bool:
    base = posixpath.basename(name.rstrip("/"))
    return name.startswith("__MACOSX/") or base.startswith("._") or base in (".DS_Store", "Thumbs.db")


def _parse_zip(
    path: Path, requested: str | None, skips: SkipCounter, export_year: int | None
) -> WhatsAppChat:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(_READ_CHUNK):
                digest.update(chunk)
            archive_size = f.tell()
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
        unread_lines: list[str] = []
        for info in texts:
            where = f"{path}!{info.filename}"
            if info.file_size > MAX_CHAT_BYTES:  # a size it declares: no need to inflate it to know
                raise InputFileError(
                    f"{where}: declares {info.file_size} bytes, more than the {_mib(MAX_CHAT_BYTES)} of chat "
                    "text allowed (tasks.whatsapp.parser.MAX_CHAT_BYTES); refusing it"
                )
            try:
                with archive.open(info) as member:
                    # what it inflates to is counted, not what it declares; its compressed bytes are at most
                    # what the file holds
                    data = _read_capped(member, where, compressed=min(info.compress_size, archive_size) or 1)
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
                    where=where,
                    chat_id=chat_id,
                    requested=requested,
                    skips=skips,
                    member=info.filename,
                    media_files=media,
                    export_year=export_year,
                )
            except InputFileError as e:
                problems.append(str(e))
                if isinstance(e, NotAnExportError) and not unread_lines:
                    unread_lines = e.lines
        message = f"{path}: no WhatsApp chat inside the archive ({'; '.join(problems)})"
        if unread_lines:
            raise NotAnExportError(message, unread_lines)
        raise InputFileError(message)


_SNIFF_BYTES = 8192


def _sniff_encoding(data: bytearray, where: str) -> tuple[str, str]:
    """(the encoding, the codec that reads it): a BOM says UTF-8 or UTF-16; without one, NUL bytes at odd
    positions only (the high bytes of ASCII digits and punctuation, which every header has) say UTF-16 LE, at
    even positions only UTF-16 BE, anywhere else binary data. Otherwise UTF-8 (cp1252 is decided in _decode)."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig", "utf-8-sig"
    if data.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le", "utf-16"
    if data.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be", "utf-16"
    head = data[:_SNIFF_BYTES]
    if b"\x00" not in head:
        return "utf-8", "utf-8"
    even, odd, pairs = head[0::2].count(0), head[1::2].count(0), len(head) // 2
    if odd > pairs // 10 and even * 8 < odd:
        return "utf-16-le", "utf-16-le"
    if even > pairs // 10 and odd * 8 < even:
        return "utf-16-be", "utf-16-be"
    raise InputFileError(f"{where}: binary data (NUL bytes), not a WhatsApp chat export")


def _decode(data: bytearray, where: str, skips: SkipCounter) -> tuple[str, str]:
    """The text of an export and its encoding: UTF-8 (with or without BOM), UTF-16 LE/BE (with or without BOM),
    or cp1252 (Windows' Latin-1) for bytes that are not UTF-8.

    Bytes that are not UTF-8 are read as cp1252 unless most non-ASCII sequences of the file are valid UTF-8:
    then it is a damaged UTF-8 file, and only its bad bytes are replaced by U+FFFD. Each undecodable byte (or
    sequence) is counted in `skips`.
    """
    encoding, codec = _sniff_encoding(data, where)
    try:
        return data.decode(codec), encoding
    except UnicodeDecodeError as e:
        first_bad = e.start
    text = data.decode(codec, errors="replace")
    bad = max(1, text.count("\ufffd") - data.count("\ufffd".encode(encoding.replace("-sig", ""))))
    # each valid multi-byte character adds bytes without adding characters: fewer such bytes than bad ones, and
    # the file is no UTF-8 with a few bad bytes but a legacy 8-bit export
    if encoding == "utf-8" and len(data) - len(text) < bad:
        encoding = "cp1252"
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError as e:  # the five bytes cp1252 leaves undefined
            first_bad = e.start
        text = data.decode(encoding, errors="replace")
        bad = text.count("\ufffd")
    line = text.count("\n", 0, text.find("\ufffd")) + 1
    skips.skip(
        _SKIP_UNDECODABLE,
        f"{where}:{line}",
        f"{bad} undecodable byte(s) in {encoding}, the first at byte {first_bad}, replaced by U+FFFD",
    )
    skips.counts[_SKIP_UNDECODABLE] += bad - 1
    return text, encoding


def _split_lines(text: str) -> list[str]:
    # only \r\n, \r and \n end lines: str.splitlines() would also split on U+2028, U+0085… inside messages
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class _CollectorPause:
    """Pauses Python's cyclic garbage collector while messages are built (a context manager).

    Why: every ChatMessage is a container the collector tracks, and each of its full collections walks all of
    them again, so on a 50 MB export the collector took a fifth of the parse (bench/bench_whatsapp.py: about
    170,000 messages/s with it running, 205,000–218,000 paused), and the aim is 200,000. Nothing the parser
    builds holds a reference cycle, so the pause frees nothing later than it would have been freed. It is
    process-wide: other threads' cyclic garbage waits for the end of the parse (about 3 s for 50 MB), their
    other memory is freed as usual. Overlapping parses in several threads share one pause, and a collector
    someone else switched off stays off.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._resume = False

    def __enter__(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._holders += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._resume:
                gc.enable()


_COLLECTOR_PAUSE = _CollectorPause()


def _count_lines(text: str) -> int:
    """How many lines `_split_lines` would give."""
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def _parse_bytes(
    data: bytearray,
    *,
    path: Path,
    where: str,
    chat_id: str,
    requested: str | None,
    skips: SkipCounter,
    member: str | None,
    media_files: list[str],
    export_year: int | None,
) -> WhatsAppChat:
    """`data` is emptied once decoded: from there on the parse holds the text only once."""
    size = len(data)
    skipped_before = skips.counts[_SKIP_BEFORE_HEADER]
    text, encoding = _decode(data, where, skips)
    data.clear()
    # one copy at a time: each step frees the text before it
    text = normalize_text(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        text = text.replace("\r", "\n")
    text = put_date_first(text)
    text, spelled = write_dates_in_digits(text, export_year)
    if not text or text.isspace():
        raise InputFileError(f"{where}: empty file, not a WhatsApp chat export")
    first = _first_header(text, where, skips)
    with _COLLECTOR_PAUSE:
        headers = scan_headers(text, first)
        messages, order_stats = _build_messages(text, headers, chat_id, path.name, requested, where, skips)
    if not messages:
        raise InputFileError(f"{where}: no line with a valid date, not a WhatsApp chat export")
    stats = _chat_stats(messages, order_stats)
    if spelled is not None and spelled.kind == "month names":  # a month name leaves no order to decide
        stats.update(date_order_ambiguous=False, date_order_source="month names")
    stats.update(
        lines=_count_lines(text),
        bytes=size,
        encoding=encoding,
        unattached_lines=skips.counts[_SKIP_BEFORE_HEADER] - skipped_before,
        archive_member=member,
        media_files=media_files,
        export_cap=_export_cap(messages, media_files, where),
        spelled_dates=asdict(spelled) if spelled else None,
    )
    return WhatsAppChat(
        chat_id=chat_id, source_file=path.name, messages=messages, stats=stats, path=str(path)
    )


def _first_header(text: str, where: str, skips: SkipCounter) -> int:
    """Where the first message header starts; the lines before it are counted in `skips`.

    Reads line by line and gives up after HEADER_SEARCH_LINES non-empty lines, so that a big file that is not
    an export fails at once instead of being scanned to its end.
    """
    pos, lineno, size = 0, 1, len(text)
    unread: list[str] = []  # the non-empty lines before the first header
    while pos < size:
        end = text.find("\n", pos)
        if end < 0:
            end = size
        line = text[pos:end]
        if (line[:1] == "[" or line[:1].isdigit()) and match_header(line) is not None:
            return pos
        if line.strip():
            unread.append(line)
            if len(unread) > HEADER_SEARCH_LINES:
                raise NotAnExportError(
                    f"{where}: no WhatsApp message header in the first {HEADER_SEARCH_LINES} lines, "
                    "not a chat export (expected lines such as '31/12/2023, 21:05 - Name: text' or "
                    "'[31/12/2023, 21:05:10] Name: text')",
                    unread[:NOT_AN_EXPORT_LINES],
                )
            skips.skip(_SKIP_BEFORE_HEADER, f"{where}:{lineno}", line[:80])
        pos, lineno = end + 1, lineno + 1
    raise NotAnExportError(
        f"{where}: no WhatsApp message header found, not a chat export (expected lines such as "
        "'31/12/2023, 21:05 - Name: text' or '[31/12/2023, 21:05:10] Name: text')",
        unread[:NOT_AN_EXPORT_LINES],
    )


def _skip_lines(text: str, start: int, stop: int, where: str, skips: SkipCounter) -> None:
    """Count the non-empty lines of text[start:stop] as lines outside any message."""
    lineno = text.count("\n", 0, start) + 1
    for offset, line in enumerate(text[start:stop].split("\n")):
        if line.strip():
            skips.skip(_SKIP_BEFORE_HEADER, f"{where}:{lineno + offset}", line[:80])


def _decide_orders(headers: HeaderScan, requested: str | None, where: str) -> list[OrderDecision]:
    """The date order of each header shape's group, decided from every date of the file (impossible ones
    included); indexed like `headers.shapes`."""
    month_first = frozenset(shape.group for shape in headers.shapes if month_first_by_default(shape))
    decisions = decide_date_orders(headers.evidence, requested, month_first)
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
    return [decisions[shape.group] for shape in headers.shapes]


def _date_entries(
    text: str, headers: HeaderScan, orders: list[OrderDecision], where: str, skips: SkipCounter
) -> tuple[list[HeaderEntry], list[datetime], int, int]:
    """The entries whose date exists and their timestamps (dates read in their shape's order), how many of
    those dates only exist in the swapped order (conflicts), and how many headers had a date that exists in
    no order.

    A header with an impossible date is a text line of the previous message: it is dropped here, so that the
    previous message runs on to the next kept header.
    """
    days_of: list[dict] = [{} for _ in orders]
    kept: list[HeaderEntry] = []
    stamps: list[datetime] = []
    conflicts = invalid = 0
    orphans_from = None  # start of impossible-date headers seen before any kept one
    last_fields, last_number, hit = None, -1, (None, False)
    for e in headers.entries:
        start, _, _, number, fields, (hour, minute, second) = e
        if fields is not last_fields or number != last_number:  # else: same date as the previous header
            hit = days_of[number].get(fields)
            if hit is None:
                hit = days_of[number][fields] = _date_in(orders[number].order, *fields)
            last_fields, last_number = fields, number
        day, was_swapped = hit
        if day is None:
            invalid += 1
            if not kept and orphans_from is None:
                orphans_from = start
            continue
        if orphans_from is not None:
            _skip_lines(text, orphans_from, start - 1, where, skips)
            orphans_from = None
        if was_swapped:
            conflicts += 1
        kept.append(e)
        year, month, day_of_month = day
        stamps.append(datetime(year, month, day_of_month, hour, minute, second))
    if orphans_from is not None:
        _skip_lines(text, orphans_from, _text_end(text), where, skips)
    return kept, stamps, conflicts, invalid


def _date_in(order: str, a: int, b: int, c: int) -> tuple[tuple[int, int, int] | None, bool]:
    """((year, month, day), False) of the fields read in `order`, else (…, True) in the swapped order, else
    (None, False)."""
    for candidate, was_swapped in ((order, False), (swapped(order), True)):
        try:
            day = make_date(candidate, a, b, c)
        except ValueError:
            continue
        return (day.year, day.month, day.day), was_swapped
    return None, False


def _text_end(text: str) -> int:
    """Where the last line ends (before a final newline)."""
    return len(text) - 1 if text.endswith("\n") else len(text)


def _build_messages(
    text: str,
    headers: HeaderScan,
    chat_id: str,
    source_file: str,
    requested: str | None,
    where: str,
    skips: SkipCounter,
) -> tuple[list[ChatMessage], dict]:
    """The messages of `text`; empties `headers.entries` on the way: each block of _BUILD_BLOCK entries is freed
    once its messages are built, so that entries and messages are not both held whole (each about 3 times the
    text they index)."""
    orders = _decide_orders(headers, requested, where)
    kept, stamps, conflicts, invalid = _date_entries(text, headers, orders, where, skips)
    headers.entries = []
    order_stats = _order_stats(headers, kept, orders, conflicts, invalid, where)
    end_of_text = _text_end(text)
    marked = IOS_MARK in text
    messages: list[ChatMessage] = []
    append = messages.append
    for first in range(0, len(kept), _BUILD_BLOCK):
        block = kept[first : first + _BUILD_BLOCK]
        after = first + len(block)
        kept[first:after] = [None] * len(block)  # `block` is now their only holder
        # a message runs from its header to the newline before the next kept header (or the end of the text)
        stops = [e[0] - 1 for e in block[1:]]
        stops.append(kept[after][0] - 1 if after < len(kept) else end_of_text)
        for index, ((_, end, rest, _, _, _), stop, timestamp) in enumerate(
            zip(block, stops, stamps[first:after], strict=True), first
        ):
            author, body, ios_mark = split_author(text[rest:end])
            if stop > end:
                body = f"{body}\n{text[end + 1 : stop]}"
            kind, author, body = classify(author, body.strip(), ios_mark)
            if marked and IOS_MARK in body:
                body = body.replace(IOS_MARK, "")
            append(ChatMessage(chat_id, index, timestamp, author, body, kind, source_file))
        del block  # before the next block is sliced
    return messages, order_stats


def _order_stats(
    headers: HeaderScan,
    kept: list[HeaderEntry],
    orders: list[OrderDecision],
    conflicts: int,
    invalid: int,
    where: str,
) -> dict:
    """What `stats` says about header formats and date orders."""
    decisions = dict(zip((shape.group for shape in headers.shapes), orders, strict=True))
    by_group: Counter = Counter()
    formats: Counter = Counter()
    for number, n in Counter(map(itemgetter(3), kept)).items():
        shape = headers.shapes[number]
        by_group[shape.group] += n
        formats[shape.describe(orders[number].order)] += n
    main_group = by_group.most_common(1)[0][0] if by_group else next(iter(decisions))
    main = decisions[main_group]
    used = [g for g in decisions if by_group[g]]
    order_stats = {
        "date_order": main.order,
        "date_order_ambiguous": any(decisions[g].ambiguous for g in used),
        "date_order_source": main.source,
        "date_order_conflicts": conflicts,
        "date_orders": {_group_label(g): decisions[g].order for g in used},
        "invalid_header_dates": invalid,
        "header_format": formats.most_common(1)[0][0] if formats else None,
        "header_formats": dict(formats.most_common()),
    }
    if main.ambiguous:
        log.info(
            "%s: no day above 12 in any date, read as %s (%s; pass date_order to choose)",
            where,
            main.order,
            main.source,
        )
    return order_stats


def _group_label(group: tuple[str, str, str]) -> str:
    layout, sep, year_pos = group
    return f"{layout} '{sep}' year {year_pos}"


def _chat_stats(messages: list[ChatMessage], order_stats: dict) -> dict:
    kinds = Counter(map(attrgetter("kind"), messages))
    authors = Counter(map(attrgetter("author"), messages))
    authors.pop(None, None)
    stamps = list(map(attrgetter("timestamp"), messages))
    stats = {
        "messages": len(messages),
        "kinds": {k: kinds.get(k, 0) for k in MESSAGE_KINDS},
        "authors": dict(authors),
        "first_timestamp": min(stamps).isoformat() if stamps else None,
        "last_timestamp": max(stamps).isoformat() if stamps else None,
        "out_of_order_timestamps": sum(map(lt, stamps[1:], stamps)),
    }
    stats.update(order_stats)
    return stats


def _export_cap(messages: list[ChatMessage], media_files: list[str], where: str) -> dict | None:
    """{"limit", "messages", "with_media"} when the export ends at WhatsApp's message cap (see
    EXPORT_CAP_WITHOUT_MEDIA), else None; logs a warning when it does."""
    n = len(messages)
    if n < EXPORT_CAP_WITH_MEDIA * (1 - EXPORT_CAP_BELOW):  # most chats: no need to look at their media
        return None
    with_media = bool(media_files) or any(m.kind == "media" and is_attachment(m.text) for m in messages)
    limit = EXPORT_CAP_WITH_MEDIA if with_media else EXPORT_CAP_WITHOUT_MEDIA
    if not limit * (1 - EXPORT_CAP_BELOW) <= n <= limit + EXPORT_CAP_ABOVE:
        return None
    log.warning(
        "%s: %d messages, at the %d that WhatsApp's export keeps of a chat (%s media): the chat is probably cut "
        "at its start. The phone's database has every message: add it as an input with kind: whatsapp-db "
        "(Android msgstore.db, decrypted, or iOS ChatStorage.sqlite; README 'Other chat sources')",
        where,
        n,
        limit,
        "with" if with_media else "without",
    )
    return {"limit": limit, "messages": n, "with_media": with_media}
