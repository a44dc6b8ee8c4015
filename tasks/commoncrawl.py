"""Web archive readers for the ingest stage: WET `conversion` records, and WARC `response` records whose HTML is
turned into main-content text with Resiliparse; both yield `Document`s.

Files are streamed with FastWARC (gzip per record or whole file, or plain, detected from the bytes), one record
at a time, so memory does not grow with the file. Besides Common Crawl's own files this reads the WARCs of other
crawlers: ClueWeb09/12 (`WARC/0.18`, HTTP headers ending in a bare LF), Heritrix and wget (interleaved
`request`/`metadata`/`resource` records, chunked or gzipped bodies, WARC headers in bare LF). ARC files are
refused with a line saying how to convert them. HTML kept in a `resource` record (a page without its HTTP headers,
as wget and warcit store some) is read like a response. A page is decoded from its byte-order mark, else its HTTP
charset, its `<meta>` charset or a detected one; when they disagree, the decoding that reads as text wins.
A segmented record gives its first segment, flagged as cut short; its `continuation` records are counted.

A record that cannot be used (a revisit, a non-HTML or empty page, a non-2xx status, a broken HTTP body, a bad
target URI…) is skipped and counted with its file and byte offset; a stretch of the file that breaks the WARC
framing is counted too, and reading goes on at the next record found after it; a file that holds no record
besides `warcinfo` is counted (`no_records`). A record cut short (by the end of the file, inside a gzip member
or not, or by a Content-Length that runs into the next record) keeps the text it holds, with `truncated: true` in
its meta, counted as `truncated_record_kept`; when nothing usable is left it is counted as `truncated_gzip`
(the file ends inside its gzip member) or `truncated_record`. A file that is not a WARC file at all raises
`InputFileError` naming it.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import json
import logging
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Literal

from charset_normalizer.md import mess_ratio
from fastwarc.stream_io import BrotliReader, ZstdReader
from fastwarc.warc import ArchiveIterator, WarcRecord, WarcRecordType
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding, detect_mime, map_encoding_to_html5

from tasks.records import Document, InputFileError, SkipCounter, stable_id

log = logging.getLogger(__name__)

SOURCE = "commoncrawl"
CommonCrawlKind = Literal["wet", "warc"]

HTML_MIME_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# A decoded page with more replacement characters than this share is not text in any encoding we tried.
MAX_REPLACEMENT_SHARE = 0.01
# A compressed HTTP body that inflates past this is not a web page (or is a decompression bomb).
MAX_DECODED_BODY = 32 << 20
# Records read by `detect_commoncrawl_kind` before it falls back on the file name.
_PEEK_RECORDS = 4

_URI = re.compile(r"^https?://[^\s<>\"]+$", re.IGNORECASE)
_CHUNK_SIZE_LINE = re.compile(rb"([0-9a-fA-F]{1,15})[ \t]*(?:;[^\r\n]*)?\r?\n")
# A record's first line: WARC/1.0 and 1.1, and the drafts older crawls wrote (Heritrix 0.17, ClueWeb's 0.18).
_VERSION_LINE = rb"WARC/(?:1\.[01]|0\.1[0-9])\r?\n"


@dataclass(frozen=True)
class _Located:
    """A WARC record with where it starts, for skip messages ("file:offset")."""

    record: WarcRecord
    offset: int
    where: str
    cut_short: bool = False  # the file ends inside this record's gzip member


def detect_commoncrawl_kind(path: str | Path) -> CommonCrawlKind | None:
    """'wet' or 'warc' from the first records of the file (after `warcinfo`); None for anything else.

    A file holding only a `warcinfo` record is judged by its name (`.wet`, `.wet.gz`, `.warc`, `.warc.gz`).
    WAT files (`metadata` records) and files that are not WARC at all give None.
    """
    path = Path(path)
    seen: list[WarcRecordType] = []
    warcinfo = False
    with _open(path) as fh:
        head = _first_bytes(fh)
        if head.startswith(_ARC_START):
            return None
        try:
            for record in ArchiveIterator(fh, parse_http=False, quirks_mode=_bare_lf(head)):
                if record.record_type == WarcRecordType.warcinfo:
                    warcinfo = True
                else:
                    seen.append(record.record_type)
                if len(seen) >= _PEEK_RECORDS:
                    break
        except (OSError, ValueError):
            if not seen:
                return None
    for record_type in seen:
        if record_type == WarcRecordType.conversion:
            return "wet"
        if record_type in (WarcRecordType.response, WarcRecordType.request, WarcRecordType.revisit,
                           WarcRecordType.resource):
            return "warc"
    if seen or not warcinfo:
        return None
    name = path.name.lower()
    if name.endswith((".wet", ".wet.gz")):
        return "wet"
    if name.endswith((".warc", ".warc.gz")) and not name.endswith((".wat", ".wat.gz")):
        return "warc"
    return None


def iter_commoncrawl_documents(path: str | Path, skips: SkipCounter) -> Iterator[Document]:
    """Documents of a WET or WARC file, whichever `detect_commoncrawl_kind` says it is."""
    kind = detect_commoncrawl_kind(path)
    if kind == "wet":
        yield from iter_wet_documents(path, skips)
    elif kind == "warc":
        yield from iter_warc_documents(path, skips)
    else:
        raise InputFileError(f"{path}: not a Common Crawl WET or WARC file (no conversion or response records)")


def iter_wet_documents(path: str | Path, skips: SkipCounter) -> Iterator[Document]:
    """One document per WET `conversion` record: the extracted text Common Crawl already computed."""
    path = Path(path)
    seen: Counter = Counter()
    for loc in _iter_records(path, skips):
        seen[str(loc.record.record_type)] += 1
        if loc.record.record_type != WarcRecordType.conversion:
            continue
        doc = _wet_document(loc, skips)
        if doc is not None:
            yield doc
    _check_kind(path, seen, "wet", skips)


def iter_warc_documents(path: str | Path, skips: SkipCounter) -> Iterator[Document]:
    """One document per WARC `response` record holding an HTML page, reduced to its main text.

    Common Crawl writes the languages it detected (CLD2) in a `metadata` record right after each response;
    they go into the document's `meta["language"]` as ISO 639-3 codes ("zho,eng"), as WET files have them.
    So a document is held back until the next record has been seen (one at a time: memory stays bounded).
    """
    path = Path(path)
    seen: Counter = Counter()
    pending: tuple[Document, str | None] | None = None  # a document and its response's WARC-Record-ID
    for loc in _iter_records(path, skips):
        record_type = loc.record.record_type
        seen[str(record_type)] += 1
        if pending is not None:
            if record_type == WarcRecordType.metadata and pending[1] is not None:
                if loc.record.headers.get("WARC-Concurrent-To") == pending[1]:
                    _add_metadata_language(pending[0], loc.record)
            yield pending[0]
            pending = None
        if record_type == WarcRecordType.revisit:
            skips.skip("revisit", loc.where, "a revisit record carries no page body")
            continue
        if record_type == WarcRecordType.continuation:
            origin = loc.record.headers.get("WARC-Segment-Origin-ID")
            skips.skip("continuation", loc.where, f"a later segment of {origin}, not joined to its first segment")
            continue
        if record_type == WarcRecordType.resource:
            if _media_type(loc.record.headers.get("Content-Type"))[0] not in HTML_MIME_TYPES:
                continue  # wget's log and manifest, Heritrix's DNS lookups: not pages
            doc = _html_document(loc, skips)
        elif record_type == WarcRecordType.response:
            doc = _html_document(loc, skips)
        else:
            continue
        if doc is not None:
            pending = (doc, loc.record.headers.get("WARC-Record-ID"))
    if pending is not None:
        yield pending[0]
    _check_kind(path, seen, "warc", skips)


_CLD2_LINE = re.compile(rb"^languages-cld2:[ \t]*(\{.*\})[ \t]*\r?$", re.MULTILINE)


def _add_metadata_language(doc: Document, metadata: WarcRecord) -> None:
    """Put the languages of a Common Crawl `metadata` record ("languages-cld2: {…}") in the document's meta,
    unless the response had its own language header. A record without them, or unreadable, changes nothing."""
    meta = json.loads(doc.meta)
    if "language" in meta:
        return
    try:
        block = metadata.reader.read(_METADATA_MAX)
    except (OSError, ValueError):
        return
    m = _CLD2_LINE.search(block)
    if m is None:
        return
    try:
        languages = json.loads(m.group(1)).get("languages") or []
        codes = [str(lang["code-iso-639-3"]) for lang in languages if lang.get("code-iso-639-3")]
    except (ValueError, TypeError, AttributeError, KeyError):
        return
    if codes:
        meta["language"] = ",".join(codes)
        doc.meta = json.dumps(meta, ensure_ascii=False, sort_keys=True)


_METADATA_MAX = 1 << 16


def _check_kind(path: Path, seen: Counter, kind: CommonCrawlKind, skips: SkipCounter) -> None:
    """A file read to the end without one record of the kind we read is the wrong kind of file: say which. A file
    with no record besides `warcinfo` gives no document: counted (`no_records`), so it shows in the summary."""
    wanted = ("conversion",) if kind == "wet" else ("response", "revisit", "request")
    if not set(seen) - {"warcinfo"}:
        skips.skip("no_records", str(path), f"no {' or '.join(wanted)} record, only {seen['warcinfo']} warcinfo")
        return
    if any(seen[t] for t in wanted) or (kind == "warc" and seen["resource"]):  # pages stored without HTTP headers
        return
    if kind == "wet" and seen["response"]:
        raise InputFileError(f"{path}: is a WARC file (response records), not WET; read it as WARC")
    if kind == "warc" and seen["conversion"]:
        raise InputFileError(f"{path}: is a WET file (conversion records), not WARC; read it as WET")
    found = ", ".join(f"{n} {t}" for t, n in sorted(seen.items()))
    raise InputFileError(f"{path}: holds no {' or '.join(wanted)} records (found {found}); not a {kind.upper()} file")


def _open(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as e:
        raise InputFileError(f"{path}: cannot open the file ({e.strerror or e})") from e


_ARC_START = b"filedesc://"


def _first_bytes(fh: BinaryIO) -> bytes:
    """The file's first bytes, inflated when it is gzipped; the file is left at its start."""
    fh.seek(0)
    head = fh.read(1 << 12)
    fh.seek(0)
    if head.startswith(b"\x1f\x8b"):
        try:
            return zlib.decompressobj(31).decompress(head, 64)
        except zlib.error:
            return b""
    return head[:64]


def _bare_lf(head: bytes) -> bool:
    """Whether the first record's version line ends in a bare LF (some ClueWeb and home-made WARCs): FastWARC
    reads such WARC headers only in its quirks mode, which is otherwise left off, since it reads through framing
    errors (a record cut short) that strict mode reports."""
    m = re.match(_VERSION_LINE, head)
    return m is not None and not m.group().endswith(b"\r\n")


def _iter_records(path: Path, skips: SkipCounter) -> Iterator[_Located]:
    """Every record of the file, HTTP headers parsed but bodies left encoded (decoding errors stay per record).

    A stretch that breaks the WARC framing (a garbled header, a record cut short, a Content-Length that runs
    past the next records) is counted as one skip, and reading goes on at the next record start found after
    it: the next gzip member that holds a WARC record (gzip per record, as Common Crawl writes them), or the
    next "WARC/1.x" line (uncompressed files). Failing on the very first record means the file is not WARC.
    Memory stays bounded: records are streamed, and a record nobody reads is drained in chunks.
    """
    with _open(path) as fh:
        head = _first_bytes(fh)
        if head == b"":
            raise InputFileError(f"{path}: the file is empty, expected WARC records")
        if head.startswith(_ARC_START):
            raise InputFileError(
                f"{path}: is an ARC file (the format before WARC), which is not read here; convert it to WARC first, "
                "e.g. with `warcio recompress FILE.arc.gz FILE.warc.gz` or Heritrix's arc2warc"
            )
        quirks = _bare_lf(head)
        gzipped = fh.read(2) == b"\x1f\x8b"
        truncated_at = _truncated_last_member(fh) if gzipped else None
        start, count = 0, 0
        while start is not None:
            fh.seek(start)
            records = iter(ArchiveIterator(fh, parse_http=False, quirks_mode=quirks))
            last_offset, read_any, cut_short = start, False, ""
            broken = ""
            while True:
                try:
                    record = next(records)
                except StopIteration:
                    break
                except (OSError, ValueError) as e:
                    if count == 0:
                        raise InputFileError(f"{path}: not a WARC file or unreadable from the start ({e})") from e
                    broken = str(e)
                    break
                count += 1
                read_any, last_offset = True, record.stream_pos
                cut = last_offset == truncated_at  # its reader keeps what it can, or counts `truncated_gzip`
                if cut:
                    truncated_at = None
                yield _Located(record, last_offset, f"{path}:{last_offset}", cut)
                while record.reader.read(_DRAIN_CHUNK):  # what the reader left, so its length can be checked
                    pass
                length, consumed = record.content_length, record.reader.tell()
                cut_short = f"record cut short ({consumed} of {length} bytes)" if consumed < length else ""
            if not broken and not cut_short:
                break  # the end of the file, at a record boundary
            # Resume after the start of the last record read (or after `start` when nothing could be read from
            # there): a record that runs past the end of the file may have swallowed the records after it.
            start = _next_record_start(fh, last_offset + 1, gzipped)
            resumed = f"reading resumes at offset {start}" if start is not None else "nothing readable after it"
            if not broken:
                # the record itself is counted by its reader (truncated_record…); the records it hid are not lost
                if start is not None:
                    log.info("%s:%d: %s; %s", path, last_offset, cut_short, resumed)
                continue
            if read_any:  # else the same broken stretch as the round before, already counted
                skips.skip("warc_read_error", f"{path}:{last_offset}", f"after this record: {broken}; {resumed}")
        if count == 0:
            raise InputFileError(f"{path}: no WARC record found")
        if truncated_at is not None:  # so damaged that no record could be read from it
            skips.skip("truncated_gzip", f"{path}:{truncated_at}", _CUT_SHORT)


_CUT_SHORT = "the file ends inside this record's gzip member (an interrupted download?)"
# The tail of a gzipped file searched for its last member: one record's member (Common Crawl caps a page at 1 MiB)
# fits in it; a file gzipped whole has no member start there, and is read as before.
_TAIL_CHECK = 8 << 20
_INFLATE_CHUNK = 1 << 20


def _truncated_last_member(fh: BinaryIO) -> int | None:
    """The offset of the last gzip member when the file ends inside it and it holds one WARC record (gzip per
    record, as Common Crawl writes them), else None. FastWARC reads such a member to the cut without a word, and
    the record it yields looks broken in some other way (no HTTP status line, no target URI)."""
    size = fh.seek(0, io.SEEK_END)
    start = max(0, size - _TAIL_CHECK)
    fh.seek(start)
    tail = memoryview(fh.read())
    for m in reversed(list(_GZIP_MEMBER.finditer(tail))):  # from the end: the last member start comes first
        try:
            first, records, ended = _inflate_member(tail[m.start():])
        except zlib.error:
            continue  # three bytes inside compressed data that look like a member start
        if first.startswith(b"WARC/"):
            return start + m.start() if not ended and records == 1 else None
    return None


def _inflate_member(data: memoryview) -> tuple[bytes, int, bool]:
    """The first bytes of the gzip member at the start of `data`, how many WARC records it holds, and whether it
    ends inside `data`; read in chunks, so memory stays bounded whatever it inflates to."""
    inflater = zlib.decompressobj(31)
    chunk = first = inflater.decompress(data, _INFLATE_CHUNK)
    records, carry = 0, b""
    while chunk:
        window = carry + chunk
        records += len(_VERSION_ANYWHERE.findall(window))
        carry = window[-8:]  # shorter than a version line: none is counted twice
        chunk = inflater.decompress(inflater.unconsumed_tail, _INFLATE_CHUNK)
    return first[:16], records, inflater.eof


_DRAIN_CHUNK = 1 << 16
_SCAN_CHUNK = 1 << 20


def _next_record_start(fh: BinaryIO, pos: int, gzipped: bool) -> int | None:
    """The offset of the first record start at or after `pos`, or None: a gzip member whose first bytes
    decompress to "WARC/" in a gzip file, else a version line ("WARC/1.0", 1.1, 0.18…), even in the middle of a
    line (a record cut short runs straight into the next one)."""
    while True:
        fh.seek(pos)
        chunk = fh.read(_SCAN_CHUNK)
        if not chunk:
            return None
        for m in (_GZIP_MEMBER if gzipped else _VERSION_ANYWHERE).finditer(chunk):
            if not gzipped or _gzip_holds_warc(fh, pos + m.start()):
                return pos + m.start()
        if len(chunk) < _SCAN_CHUNK:
            return None
        pos += len(chunk) - 16  # a start cut by the chunk's end is found by the next read


_GZIP_MEMBER = re.compile(b"\x1f\x8b\x08")
_VERSION_ANYWHERE = re.compile(_VERSION_LINE)


def _gzip_holds_warc(fh: BinaryIO, offset: int) -> bool:
    fh.seek(offset)
    try:
        return zlib.decompressobj(31).decompress(fh.read(1 << 14), 16).startswith(b"WARC/")
    except zlib.error:
        return False


class _RecordSkips:
    """Where the skips of one record go. A record known to be cut short is counted once, by its truncation
    (`truncated_gzip` or `truncated_record`), whatever broke first in what is left of it; one that still gives a
    document is counted as `truncated_record_kept`."""

    def __init__(self, skips: SkipCounter, loc: _Located) -> None:
        self.skips, self.loc = skips, loc
        self.cut = "truncated_gzip" if loc.cut_short else ""
        self.cut_detail = _CUT_SHORT if loc.cut_short else ""

    def skip(self, reason: str, where: str, detail: str = "") -> None:
        if self.cut:
            reason, detail = self.cut, f"{self.cut_detail}; then {reason}: {detail}" if detail else self.cut_detail
        self.skips.skip(reason, where, detail)

    def truncated(self, detail: str) -> None:
        """The payload ends before its Content-Length: from now on, its truncation is the record's reason."""
        self.cut = self.cut or "truncated_record"
        self.cut_detail = f"{self.cut_detail}; {detail}" if self.cut_detail else detail

    def kept(self, url: str, meta: dict) -> None:
        if self.cut:
            meta["truncated"] = True
            self.skips.skip("truncated_record_kept", self.loc.where, f"{url}: {self.cut_detail}; the text read is kept")


def _wet_document(loc: _Located, counter: SkipCounter) -> Document | None:
    record, skips = loc.record, _RecordSkips(counter, loc)
    url = _target_uri(record, loc, skips)
    if url is None:
        return None
    payload = _read_payload(loc, skips, url)
    if payload is None:
        return None
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        if not skips.cut:
            skips.skip("undecodable_text", loc.where, f"{url}: {e}")
            return None
        text = payload.decode("utf-8", errors="ignore")  # a multi-byte character cut by the end of the record
    text = unicodedata.normalize("NFC", text).strip()
    if not text:
        skips.skip("empty_text", loc.where, url)
        return None
    record_id = record.headers.get("WARC-Record-ID")
    meta = {"warc_record_id": record_id, "content_length": _content_length(record), "offset": loc.offset}
    language = record.headers.get("WARC-Identified-Content-Language")
    if language:
        meta["language"] = language
    skips.kept(url, meta)
    return Document(
        id=stable_id(SOURCE, url, record_id or _sha1(payload)),
        text=text,
        source=SOURCE,
        url=url,
        timestamp=_warc_date(record),
        meta=json.dumps(meta, ensure_ascii=False, sort_keys=True),
    )


def _html_document(loc: _Located, counter: SkipCounter) -> Document | None:
    """The main text of a `response` record's HTML page, or of a `resource` record's (a page stored without its
    HTTP headers, as wget and warcit store some: its WARC Content-Type is the page's)."""
    record, skips = loc.record, _RecordSkips(counter, loc)
    url = _target_uri(record, loc, skips)
    if url is None:
        return None
    if record.headers.get("WARC-Segment-Number", "").strip() == "1":
        skips.truncated("the first segment of a segmented record; its continuation records are not joined to it")
    resource = record.record_type == WarcRecordType.resource
    status = None if resource else _http_status(record)
    if status is None and not resource:
        skips.skip("not_http_response", loc.where, f"{url}: no HTTP status line")
        return None
    if status is not None and not 200 <= status < 300:
        skips.skip("http_status", loc.where, f"{url}: HTTP {status}")
        return None
    raw = _read_payload(loc, skips, url)
    if raw is None:
        return None
    body = raw if resource else _decode_http_body(raw, record, loc, skips, url)
    if body is None:
        return None
    if not body.strip():
        skips.skip("empty_payload", loc.where, url)
        return None
    if resource:
        mime, declared = _media_type(record.headers.get("Content-Type"))
    else:
        mime, declared = (record.http_content_type or "").strip().lower(), record.http_charset
    if mime in ("", "application/octet-stream", "unknown/unknown"):
        mime = "text/html" if _HTML_START.match(body[:4096]) else detect_mime(body[:4096])
    if mime not in HTML_MIME_TYPES:
        skips.skip("not_html", loc.where, f"{url}: {mime}")
        return None
    decoded = _decode_html(body, declared)
    if decoded is None:
        skips.skip("undecodable_html", loc.where, f"{url}: no encoding decodes it")
        return None
    html, charset = decoded
    try:
        text = extract_plain_text(html, main_content=True, alt_texts=False)
    except Exception as e:  # one malformed page must cost one record, whatever the parser raises
        skips.skip("html_extraction_error", loc.where, f"{url}: {type(e).__name__}: {e}")
        return None
    text = unicodedata.normalize("NFC", text).strip()
    if not text:
        skips.skip("empty_text", loc.where, f"{url}: no main content")
        return None
    record_id = record.headers.get("WARC-Record-ID")
    meta = {
        "warc_record_id": record_id,
        "content_length": _content_length(record),
        "offset": loc.offset,
        "content_type": mime,
        "charset": charset,
    }
    if status is not None:
        meta["http_status"] = status
    if record.headers.get("WARC-Truncated"):
        meta["warc_truncated"] = record.headers.get("WARC-Truncated")
    language = record.headers.get("WARC-Identified-Content-Language")
    if language:
        meta["language"] = language
    skips.kept(url, meta)
    return Document(
        id=stable_id(SOURCE, url, record_id or _sha1(raw)),
        text=text,
        source=SOURCE,
        url=url,
        timestamp=_warc_date(record),
        meta=json.dumps(meta, ensure_ascii=False, sort_keys=True),
    )


# What a page without a Content-Type starts with when it is HTML (libmagic calls some of them text/plain).
_HTML_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S)


def _media_type(content_type: str | None) -> tuple[str, str | None]:
    """The media type and charset of a Content-Type value ("text/html; charset=UTF-8" → "text/html", "UTF-8")."""
    mime, _, params = (content_type or "").partition(";")
    m = re.search(r"""charset\s*=\s*["']?([^"';\s]+)""", params, re.IGNORECASE)
    return mime.strip().lower(), m.group(1) if m else None


def _http_status(record: WarcRecord) -> int | None:
    """The HTTP status of a response record, its HTTP headers parsed here rather than by the archive iterator, in
    FastWARC's quirks mode: ClueWeb and older crawlers end HTTP header lines in a bare LF, which strict parsing reads
    as one endless header that swallows the page."""
    if not record.is_http:
        return None
    if not record.is_http_parsed:
        try:
            record.parse_http(auto_decode="none", quirks_mode=True)
        except (OSError, ValueError):
            return None
    return record.http_headers.status_code if record.http_headers is not None else None


def _read_payload(loc: _Located, skips: _RecordSkips, url: str) -> bytes | None:
    """The record's payload as stored; None (counted) when it cannot be read. A payload that ends before its
    Content-Length is kept, and the record marked as cut short; when the next record's version line is inside it (a
    Content-Length that runs past the record), it ends there."""
    record = loc.record
    try:
        payload = record.reader.read()
    except (OSError, ValueError) as e:
        skips.skip("unreadable_record", loc.where, f"{url}: {e}")
        return None
    if len(payload) < record.content_length:
        skips.truncated(f"{len(payload)} of {record.content_length} payload bytes")
        m = _EMBEDDED_RECORD.search(payload)
        if m is not None:
            payload = payload[: m.start()]
    return payload


_EMBEDDED_RECORD = re.compile(rb"\r?\n" + _VERSION_LINE)


def _content_length(record: WarcRecord) -> int:
    """The record's `Content-Length` header (the whole block, HTTP headers included for a response)."""
    raw = (record.headers.get("Content-Length") or "").strip()
    return int(raw) if raw.isdigit() else record.content_length


def _target_uri(record: WarcRecord, loc: _Located, skips: SkipCounter) -> str | None:
    """The record's URL; wget writes it between angle brackets (`<http://…>`), which we strip."""
    raw = record.headers.get("WARC-Target-URI")
    if raw is None:
        skips.skip("missing_target_uri", loc.where)
        return None
    uri = raw.strip()
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1].strip()
    if not _URI.match(uri):
        skips.skip("bad_target_uri", loc.where, repr(raw[:200]))
        return None
    return uri


def _warc_date(record: WarcRecord) -> datetime | None:
    raw = (record.headers.get("WARC-Date") or "").strip()
    if not raw:
        return None
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        log.debug("unreadable WARC-Date %r", raw)
        return None
    if when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


def _decode_http_body(
    raw: bytes, record: WarcRecord, loc: _Located, skips: _RecordSkips, url: str
) -> bytes | None:
    """Undo the transfer and content encodings ourselves, so a broken body costs one record, not the file."""
    transfer = (record.http_headers.get("Transfer-Encoding") or "").strip().lower()
    if "chunked" in transfer:
        if _CHUNK_SIZE_LINE.match(raw):
            raw = _dechunk(raw)
        elif not _looks_like_body(raw):
            # Some archivers store the de-chunked body and keep the header; anything else is broken framing.
            skips.skip("bad_chunked_encoding", loc.where, f"{url}: body starts with {raw[:20]!r}")
            return None
    encoding = (record.http_headers.get("Content-Encoding") or "").strip().lower()
    if encoding in ("", "identity", "none"):
        return raw
    try:
        if encoding in ("gzip", "x-gzip", "deflate"):
            return _inflate(raw)
        if encoding == "br":
            return BrotliReader(io.BytesIO(raw)).read()
        if encoding == "zstd":
            return ZstdReader(io.BytesIO(raw)).read()
    except (OSError, ValueError, zlib.error) as e:
        skips.skip("bad_content_encoding", loc.where, f"{url}: {encoding}: {e}")
        return None
    skips.skip("unsupported_content_encoding", loc.where, f"{url}: {encoding}")
    return None


def _dechunk(raw: bytes) -> bytes:
    """The body of a chunked transfer. Size lines may end in CRLF or a bare LF (older crawlers); a body cut short,
    or garbage after some chunks, gives what the chunks before it hold."""
    out, pos = [], 0
    while m := _CHUNK_SIZE_LINE.match(raw, pos):
        size = int(m.group(1), 16)
        if size == 0:
            break
        out.append(raw[m.end() : m.end() + size])
        pos = m.end() + size
        pos += 2 if raw.startswith(b"\r\n", pos) else 1 if raw.startswith(b"\n", pos) else 0
    return b"".join(out)


def _looks_like_body(raw: bytes) -> bool:
    head = raw.lstrip()[:2]
    return head.startswith(b"<") or head == b"\x1f\x8b"


def _inflate(raw: bytes) -> bytes:
    """gzip, zlib or raw deflate; a stream cut short still gives what was decoded (truncated crawls)."""
    for wbits in (47, -15):  # 47: gzip or zlib header, detected; -15: headerless deflate
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(raw, MAX_DECODED_BODY)
        except zlib.error:
            continue
        if inflater.unconsumed_tail:
            raise ValueError(f"decoded body larger than {MAX_DECODED_BODY >> 20} MiB")
        return out
    raise ValueError("not a gzip, zlib or deflate stream")


def _decode_html(body: bytes, http_charset: str | None) -> tuple[str, str] | None:
    """The page as text and the codec used.

    The first of the HTTP charset, the `<meta>` one, the detected one (uchardet, through Resiliparse) and UTF-8 that
    decodes every byte is taken when the page is UTF-8 or plain ASCII, when no `<meta>` contradicts it and it is
    multi-byte or few bytes depend on it (`_worth_checking`), or when detection agrees. Otherwise a
    declaration may be wrong (a server's default ISO-8859-1 header on a Cyrillic page, a meta tag copied from a
    template): the page's own `<meta>` charset wins when detection confirms it, else the decoding that reads most
    like text (charset-normalizer's mess ratio) wins, ties going to the declared one.
    """
    bom = _bom_charset(body)
    if bom is not None and (text := _strict_decode(body, bom)) is not None:
        return text, bom
    meta = _meta_charset(body)
    detected = _Detected(body)
    first = next(_encoding_candidates(body, http_charset, meta, detected), None)
    if first is None:
        return _decode_with_replacements(body, http_charset, meta, detected)
    name, text = first
    if name == "utf-8" or body.isascii():
        return text, name
    if (meta is None or _family(meta) == _family(name)) and not _worth_checking(body, name):
        return text, name
    if _family(detected()) == _family(name):
        return text, name
    rivals = {name: text}
    for rival in (meta, detected()):
        if rival and _family(rival) not in map(_family, rivals) and (decoded := _strict_decode(body, rival)):
            if _family(rival) == _family(meta) == _family(detected()):
                return decoded, rival
            rivals[rival] = decoded
    if len(rivals) == 1:
        return text, name
    # min() keeps the first of equal scores: the declared encoding
    best = min(rivals, key=lambda n: mess_ratio(rivals[n][:_SCORED_CHARS], maximum_threshold=1.0))
    return rivals[best], best


# Enough text to tell a right decoding from a wrong one; the ratio's cost grows with it.
_SCORED_CHARS = 1 << 15
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
# Encodings that browsers decode as a superset of the declared one: tried when the declared one fails.
_SUPERSETS = {"shift_jis": "cp932", "gbk": "gb18030", "big5": "big5hkscs", "euc_kr": "cp949", "euc_jp": "euc_jis_2004"}
_FAMILY = {superset: base for base, superset in _SUPERSETS.items()}
# Detection reads this much of a page: enough to tell its encoding, and the cost of uchardet stays flat.
_DETECT_BYTES = 1 << 14


# A byte-order mark names the page's encoding whatever its headers say, as in browsers (HTML5's "BOM sniffing").
# UTF-32's little-endian mark starts with UTF-16's, so it comes first; Python's codecs drop the mark themselves.
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _bom_charset(body: bytes) -> str | None:
    return next((name for mark, name in _BOMS if body.startswith(mark)), None)


def _worth_checking(body: bytes, name: str) -> bool:
    """Whether a charset that decodes the page, and that no `<meta>` contradicts, still needs detection to confirm
    it: a multi-byte one that decodes every byte is right; a single-byte one decodes anything, so it is checked
    when more than a few bytes depend on it (a few accented letters in markup cannot say which is right anyway)."""
    if codecs.lookup(name).name in _MULTI_BYTE:
        return False
    return len(body) - len(body.translate(None, _HIGH_BYTES)) > _CHECKED_SHARE * len(body)


_MULTI_BYTE = frozenset(codecs.lookup(n).name for n in (*_SUPERSETS, *_SUPERSETS.values(), "gb18030", "euc_jp"))
_HIGH_BYTES = bytes(range(0x80, 0x100))
_CHECKED_SHARE = 0.02


def _family(name: str | None) -> str | None:
    """An encoding and its superset are one for choosing between declarations (gb2312 declared, gb18030 found)."""
    return _FAMILY.get(name, name) if name else None


class _Detected:
    """The page's detected encoding (uchardet, through Resiliparse), computed once and only when asked for."""

    def __init__(self, body: bytes) -> None:
        self.body, self.done, self.name = body, False, None

    def __call__(self) -> str | None:
        if not self.done:
            self.done, self.name = True, _codec(detect_encoding(self.body[:_DETECT_BYTES]))
        return self.name


def _meta_charset(body: bytes) -> str | None:
    """The codec of the page's `<meta charset>` or `<meta http-equiv="Content-Type" content="…; charset=…">`."""
    m = _META_CHARSET.search(body, 0, 8192)
    name = _codec(m.group(1).decode("ascii")) if m else None
    # a `<meta>` readable as ASCII is not in UTF-16: browsers read such a page as UTF-8
    return "utf-8" if name and name.startswith("utf-16") else name


def _codec(label: str | None) -> str | None:
    """The Python codec for an encoding label, as browsers map it (ISO-8859-1 → cp1252…); None if unknown."""
    name = map_encoding_to_html5(label, fallback_utf8=False) if label else None
    return name if name and _codec_exists(name) else None


def _strict_decode(body: bytes, name: str) -> str | None:
    if name.startswith(("utf-16", "utf-32")) and b"\x00" not in body[:_DETECT_BYTES]:
        return None  # an ASCII-compatible page declared UTF-16 decodes without error, into nonsense
    try:
        # utf-8-sig: a leading byte-order mark is not part of the page's text
        return body.decode("utf-8-sig" if name == "utf-8" else name)
    except UnicodeDecodeError:
        return None


def _encoding_candidates(
    body: bytes, http_charset: str | None, meta: str | None, detected: _Detected
) -> Iterator[tuple[str, str]]:
    """(codec, text) for each candidate that decodes every byte, computed lazily: detection only runs when the
    declared charsets fail."""
    tried: set[str] = set()
    for label in (lambda: _codec(http_charset), lambda: meta, detected, lambda: "utf-8"):
        name = label()
        for codec in (name, _SUPERSETS.get(name or "")):
            if codec and codec not in tried:
                tried.add(codec)
                text = _strict_decode(body, codec)
                if text is not None:
                    yield codec, text
                    break


def _decode_with_replacements(
    body: bytes, http_charset: str | None, meta: str | None, detected: _Detected
) -> tuple[str, str] | None:
    """No encoding decodes every byte: keep the first choice if only a few bytes are broken."""
    name = _codec(http_charset) or meta or detected() or "utf-8"
    text = body.decode(name, errors="replace")
    if text.count("\ufffd") > MAX_REPLACEMENT_SHARE * max(len(text), 1):
        return None
    return text, name


def _codec_exists(name: str) -> bool:
    try:
        codecs.lookup(name)
    except LookupError:
        return False
    return True


def _sha1(data: bytes) -> str:
    return "sha1:" + hashlib.sha1(data).hexdigest()
