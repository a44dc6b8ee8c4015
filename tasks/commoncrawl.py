"""Web archive readers for the ingest stage: WET `conversion` records, and WARC `response` records (or the ARC
records of older crawls) whose HTML is turned into main-content text with Resiliparse; both yield `Document`s.

Files are streamed with FastWARC (gzip per record or whole file, or plain, detected from the bytes), one record at a
time, so memory does not grow with the file; nor with a record: a payload past `MAX_PAYLOAD` (32 MiB, by its
Content-Length: a film, a disk image, or a Content-Length that says so) is no web page, and is counted as
`payload_too_large` and skipped unread, its reader drained in chunks, on every path below. Besides Common Crawl's
own files this reads the WARCs of other crawlers: ClueWeb09/12 (`WARC/0.18`, HTTP headers ending in a bare LF),
Heritrix and wget (interleaved `request`/`metadata`/`resource` records, chunked or gzipped bodies, WARC headers in
bare LF). HTML kept in a `resource` record (a page without its HTTP headers, as wget and warcit store some) is read
like a response. A page is decoded from its byte-order mark, else its HTTP charset, its `<meta>` charset or a
detected one; when they disagree, the decoding that reads as text wins. A segmented record gives its first segment,
flagged as cut short; its `continuation` records are counted.

ARC files (the Internet Archive's format before WARC: v1 and v2 header lines, plain, gzipped per record or whole)
are read as WARC files, whatever their name: our own ARC reader streams them a record at a time and hands each on
as the WARC record it stands for (`response` for an HTTP response, `warcinfo` for the `filedesc` version block,
`resource` for anything else, such as a DNS lookup), so a page gives the document it would give in a WARC, dated
from its 14-digit Archive-date, with the same skips.

A record that cannot be used (a revisit, a non-HTML or empty page, a non-2xx status, a broken HTTP body, a bad
target URI…) is skipped and counted with its file and byte offset; a stretch of the file that breaks the framing
is counted too (`warc_read_error`; in an ARC file `arc_read_error`: garbage between records, a garbled header
line, a corrupt gzip member), and reading goes on at the next record found after it, inside a gzip stream too (after
garbage in a WARC file, the next version line after the end of the record before it, so that a record quoted in a
page is never read as one; in an ARC file, a header line whose URL holds spaces is found by its well-formed right
end); a file that holds no record besides `warcinfo` (or an ARC file's version block) is counted (`no_records`).
Damage inside a gzip stream costs the record it falls in and what follows it in that stream, not the records before
it, even in a small file gzipped whole, which FastWARC would lose whole (or one whose first record is big). zlib
finds some damage only at the stream's end, by its checksum: so in a gzip stream that holds many records, a page
whose block does not match its `WARC-Block-Digest` is counted (`warc_digest_mismatch`) instead of being read; with
no digest it can check, what was read is kept as read. A gzip member that holds one record (gzip per record) and
inflates to its end, but whose checksum (CRC32 or length) fails, keeps its page as read, marked
`gzip_checksum_failed: true` in its meta (a byte of it may be wrong; dropped if its block digest says so); the member
is counted once (`warc_read_error`, where zlib finds it broken); it is inflated again in chunks, holding the page
only (one past `MAX_PAYLOAD` is not read: counted as `payload_too_large`). An ARC record whose
Archive-length is off is read to where the next record starts (the page whole) and counted as `arc_read_error`; so
is a WARC record whose Content-Length runs past it, over the records after it (or past the end of the file, over the
last ones), in a plain file, gzip per record or gzipped whole alike, whether its WARC headers end their lines in
CRLF or in a bare LF: it ends where the next record starts (a version line followed by WARC header fields, WARC-Type
or WARC-Record-ID among them, after the two newlines that end a record, or starting a whole record: never one a page
quotes, inside a line or after a blank one), the records after it are read as if its length were right, and it is
counted once, as `warc_read_error`; its page is whole, or marked `truncated: true` when it runs straight into the
next record inside a line (a writer that died in it); so is one whose Content-Length is past `MAX_PAYLOAD`, when the
next record starts within the limit (its page is read again, once that is known). WARC headers in bare LF are read
in FastWARC's quirks mode, which reads on past any framing error without a word: there, a record that does not start
where the one before ends is the framing error it is, counted and read on from as in CRLF; records in bare LF after
records in CRLF (two writers) are read too. A record cut short (by the end of the file, inside a gzip member or not)
keeps the text it holds, with `truncated: true` in its meta, counted as `truncated_record_kept`; when nothing usable
is left it is counted as `truncated_gzip` (the file ends inside its gzip member; also when it ends inside its gzip
stream between two records) or `truncated_record` (also when the file ends inside its WARC headers). A record of a
type the WARC standard does not have (a misspelt or garbled WARC-Type) is counted (`unknown_record_type`). A file
that is not a WARC or ARC file at all raises `InputFileError` naming it, as does one whose gzip stream breaks before
its first whole record (naming the offset).
"""

from __future__ import annotations

import base64
import codecs
import hashlib
import io
import json
import logging
import re
import unicodedata
import zlib
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Literal

from charset_normalizer.md import mess_ratio
from fastwarc.stream_io import BrotliReader, ZstdReader
from fastwarc.warc import ArchiveIterator, WarcRecord, WarcRecordType
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding, detect_mime, map_encoding_to_html5
from resiliparse.parse.html import HTMLTree

from tasks.records import Document, InputFileError, SkipCounter, stable_id

log = logging.getLogger(__name__)

SOURCE = "commoncrawl"
CommonCrawlKind = Literal["wet", "warc"]

HTML_MIME_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# A decoded page with more replacement characters than this share is not text in any encoding we tried.
MAX_REPLACEMENT_SHARE = 0.01
# A compressed HTTP body (gzip, deflate, Brotli or zstd) that decodes past this is not a web page (or is a
# decompression bomb): decoding stops there, holding no more, and the record is counted (`bad_content_encoding`).
MAX_DECODED_BODY = 32 << 20
# A record whose payload (by its Content-Length) is past this is not a web page either: Common Crawl cuts a page at
# 1 MiB; what is larger is a film or a disk image, or a Content-Length that says so. It is skipped unread and counted
# (`payload_too_large`), whichever path reads it (`_read_payload`), so that memory does not grow with a record.
MAX_PAYLOAD = 32 << 20
# Records read by `detect_commoncrawl_kind` before it falls back on the file name.
_PEEK_RECORDS = 4

_URI = re.compile(r"^https?://[^\s<>\"]+$", re.IGNORECASE)
_CHUNK_SIZE_LINE = re.compile(rb"([0-9a-fA-F]{1,15})[ \t]*(?:;[^\r\n]*)?\r?\n")
# A record's first line: WARC/1.0 and 1.1, and the drafts older crawls wrote (Heritrix 0.17, ClueWeb's 0.18).
_VERSION_LINE = rb"WARC/(?:1\.[01]|0\.1[0-9])\r?\n"


@dataclass(frozen=True)
class _Located:
    """A WARC record (or the one an ARC record stands for) with where it starts, for skip messages ("file:offset";
    "file:member+inflated-offset" for the later records of a file gzipped whole, WARC or ARC)."""

    record: WarcRecord
    offset: int
    where: str
    cut_short: bool = False  # the file ends inside this record's gzip member
    stream: _InflatedGzip | None = None  # the gzip stream it is read from, when we inflate it (a file gzipped whole)
    records: _Records | None = None  # the records it is read among, which say where it ends (`_read_payload`)
    block_end: int | None = None  # in a gzip stream we inflate: where its block ends by its length (`_Framed`)


def detect_commoncrawl_kind(path: str | Path) -> CommonCrawlKind | None:
    """'wet' or 'warc' from the first records of the file (after `warcinfo`); None for anything else.

    A file holding only a `warcinfo` record is judged by its name (`.wet`, `.wet.gz`, `.warc`, `.warc.gz`).
    An ARC file (plain or gzipped, whatever its name) is 'warc': `iter_warc_documents` reads it.
    WAT files (`metadata` records) and files that are not WARC or ARC at all give None.
    """
    path = Path(path)
    seen: list[WarcRecordType] = []
    warcinfo = False
    with _open(path) as fh:
        head = _first_bytes(fh)
        if _is_arc(head):
            return "warc"  # ARC records are web pages with their HTTP headers: read as WARC
        span = _gzip_to_inflate(fh, 0)
        stream = _InflatedGzip(fh, 0, one_member=span == "member") if span else fh
        fh.seek(0)
        try:
            for record in ArchiveIterator(stream, parse_http=False, quirks_mode=_bare_lf(head)):
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
    with _open(path) as fh:
        if _is_arc(_first_bytes(fh)):
            raise InputFileError(
                f"{path}: is an ARC file (web pages with their HTTP headers), not WET; read it as WARC"
            )
    seen: Counter = Counter()
    for loc in _iter_records(path, skips):
        seen[str(loc.record.record_type)] += 1
        if loc.record.record_type == WarcRecordType.unknown:
            _skip_unknown_type(loc, skips)
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
        if record_type == WarcRecordType.unknown:
            _skip_unknown_type(loc, skips)
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


def _skip_unknown_type(loc: _Located, skips: SkipCounter) -> None:
    """A record whose WARC-Type is none of the WARC standard's (misspelt, or its header garbled) may be a page: it is
    counted, not passed over as the records that are no pages are (`warcinfo`, `request`, `metadata`…)."""
    declared = loc.record.headers.get("WARC-Type")
    skips.skip("unknown_record_type", loc.where, f"WARC-Type {declared[:80]!r}" if declared else "no WARC-Type")


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


# Enough of the file's start for a WARC version line or an ARC file's first header line.
_HEAD_BYTES = 1 << 10


def _first_bytes(fh: BinaryIO) -> bytes:
    """The file's first bytes, inflated when it is gzipped (up to where the gzip stream breaks, when it does); the
    file is left at its start."""
    fh.seek(0)
    head = fh.read(1 << 12)
    fh.seek(0)
    if head.startswith(b"\x1f\x8b"):
        try:
            return zlib.decompressobj(31).decompress(head, _HEAD_BYTES)
        except zlib.error:
            return _inflate_until_broken(zlib.decompressobj(31), head)[0][:_HEAD_BYTES]
    return head[:_HEAD_BYTES]


def _inflate_until_broken(inflater: zlib._Decompress, data: bytes) -> tuple[bytes, int]:
    """What `data` inflates to before the byte where zlib finds it broken, and how many bytes of it come before that
    byte. Fed a byte at a time, since a failing call gives none of its output; used only once zlib has failed."""
    out = []
    for i in range(len(data)):
        try:
            out.append(inflater.decompress(data[i : i + 1]))
        except zlib.error:
            return b"".join(out), i
    return b"".join(out), len(data)


def _record_head(fh: BinaryIO, at: int, gzipped: bool) -> bytes:
    """The first bytes of the record at `at`: in a gzip file, of what the gzip member there inflates to."""
    fh.seek(at)
    if not gzipped:
        return fh.read(16)
    try:
        return zlib.decompressobj(31).decompress(fh.read(1 << 12), 16)
    except zlib.error:
        return b""


def _bare_lf(head: bytes) -> bool:
    """Whether the record's version line at the start of `head` ends in a bare LF (some ClueWeb and home-made WARCs):
    FastWARC reads such WARC headers only in its quirks mode, which is otherwise left off, since it reads through
    framing errors (a record cut short) that strict mode reports (`_Records` checks the framing there itself)."""
    m = re.match(_VERSION_LINE, head)
    return m is not None and not m.group().endswith(b"\r\n")


def _iter_records(path: Path, skips: SkipCounter) -> Iterator[_Located]:
    """Every record of the file, HTTP headers parsed but bodies left encoded (decoding errors stay per record).

    A stretch that breaks the WARC framing (garbage, a garbled header, a record cut short, a Content-Length that runs
    past the next records) is counted as one skip, and reading goes on at the next record start found after it: the
    next gzip member that holds a WARC record (gzip per record, as Common Crawl writes them), or the next "WARC/1.x"
    line (uncompressed files, and gzip streams we inflate). That line is searched for from the end of the record read
    before, where its Content-Length says, when the record ends there (the two newlines that end a record follow its
    block): what its block holds is never taken for a record; when it does not end there, its Content-Length is off
    and the search starts inside it (`_record_start_after`: a version line a page quotes is passed over). Each round
    reads in FastWARC's quirks mode when the record it starts at has its version line in bare LF (`_Records`).
    A record whose Content-Length runs over the records after it ends where the next one starts, for its reader too
    (`_Records.next_record_inside`), and is counted once (`warc_read_error`); when it runs past the end of the file,
    reading resumes inside it as well, in a gzip stream we inflate too.
    A gzip member FastWARC cannot inflate is counted once, where zlib finds it broken: by the round that inflates it
    (`_InflatedGzip`) when FastWARC broke on it after the record before, which leaves its count to that round.
    Failing on the very first record means the file is not WARC.
    A gzip stream that holds many records (a file gzipped whole), or whose first record is too big to tell, or whose
    WARC headers end in bare LF (FastWARC's quirks mode reads gzip per record on past a framing error without a word),
    is inflated by `_InflatedGzip`, which stops where the stream breaks: the records before the damage are read whole,
    the one it falls in is lost, and the damage is counted (`warc_read_error`) with its offset in the file. Its
    records' blocks are checked against their `WARC-Block-Digest` (`_read_payload`), since zlib finds some damage only
    at the stream's end.
    Memory stays bounded: records are streamed, and a record nobody reads is drained in chunks, as is one whose
    payload is past `MAX_PAYLOAD` (`_read_payload`).
    An ARC file is read by `_iter_arc_records`, record by record, as the WARC records they stand for.
    """
    with _open(path) as fh:
        head = _first_bytes(fh)
        gzipped = fh.read(2) == b"\x1f\x8b"
        if head == b"" and not gzipped:
            raise InputFileError(f"{path}: the file is empty, expected WARC records")
        if _is_arc(head):
            yield from _iter_arc_records(fh, path, skips, gzipped)
            return
        truncated_at = _truncated_last_member(fh) if gzipped else None
        start, count, unreadable = 0, 0, ""  # why the first record could not be read, if it could not
        member_read = False  # the round before read a gzip member to its end: what breaks at `start` is new
        left_over: tuple[str, str] | None = None  # a break the round before counts, unless the member here is broken
        while start is not None:
            first_round, fresh, member_read = start == 0, member_read, False
            quirks = _bare_lf(head if first_round else _record_head(fh, start, gzipped))
            span = _gzip_to_inflate(fh, start) if gzipped else None
            if gzipped and span is None and quirks:  # FastWARC's quirks mode reads past framing errors without a
                span = "stream"  # word, in gzip per record too: inflated by us, the records' framing is checked
            # FastWARC broke on this member's damage: it is counted once, where this round finds the member broken
            damage_counted_here = left_over is not None and span == "broken"
            if left_over is not None and not damage_counted_here:
                skips.skip("warc_read_error", *left_over)
            left_over = None
            stream = _InflatedGzip(fh, start, one_member=span == "member") if span else None
            fh.seek(start)
            records = _Records(fh, stream, path, gzipped, quirks)
            last_offset, last_where, read_any, cut_short = start, f"{path}:{start}", False, ""
            broken, lost, ends_inside = "", "", False
            bare_lf_at: int | None = None  # gzip per record: a member in bare LF follows, read on in quirks mode
            last = _Framed(start, 0, None)  # the last record read
            bad: _BadStretch | None = None  # what follows it breaks the framing: counted once reading resumes
            while True:
                try:
                    record = next(records)
                except StopIteration:
                    break
                except _BareLfRecord as e:
                    bare_lf_at = e.at
                    break
                except (OSError, ValueError) as e:
                    if count == 0 and (stream is None or not stream.stopped):
                        raise InputFileError(f"{path}: not a WARC file or unreadable from the start ({e})") from e
                    if bad is None and read_any and (stream is not None or not gzipped):
                        bad = _bad_stretch(fh, stream, path, last, last_where, str(e))
                    if bad is not None and bad.resume_after(fh, stream) is not None:
                        records.restart()
                        continue
                    if stream is not None and stream.stopped:
                        bad = None  # it is where the stream stops: counted with the damage or the cut, below
                        break  # FastWARC read what came before the damage or the cut
                    if bad is None:  # gzip per record; a plain file whose Content-Length is off: resumed below
                        broken = str(e)
                        break
                    skips.skip("warc_read_error", *bad.counted(fh, stream, resumed=False))
                    bad = None
                    break
                offset, where = _record_place(record, path, stream)
                if bad is not None:
                    skips.skip("warc_read_error", *bad.counted(fh, stream, resumed=True))
                    bad = None
                cut = offset == truncated_at  # its reader keeps what it can, or counts `truncated_gzip`
                if stream is not None and stream.cuts(record):
                    if stream.damage:
                        lost = where
                        break  # what it holds may be garbage: inflating detects damage only some bytes after it
                    cut = True
                    if record.headers.get("WARC-Type") is None:  # cut before it says what it is: no reader counts it
                        skips.skip("truncated_gzip", where, _CUT_SHORT)
                        break
                if cut:
                    truncated_at = None
                elif record.headers.get("Content-Length") is None and records.ends_in_headers(record):
                    # FastWARC gives it as it stands: a reader would count it for what it lacks, or not at all
                    count += 1
                    skips.skip("truncated_record", where, _ENDS_IN_HEADERS)
                    break
                count += 1
                read_any, last_offset, last_where, counted = True, offset, where, skips.total
                if stream is not None:
                    last = records.last = _Framed(record.stream_pos, record.content_length, stream.block_end(record))
                    if record.record_type in _DIGEST_CHECKED:
                        stream.watch(record, last.block_end)
                elif not gzipped:  # gzip per record resumes at the next member instead
                    last = records.last = _Framed(record.stream_pos, record.content_length, None)
                yield _Located(record, offset, where, cut, stream, records, last.block_end if stream else None)
                consumed, broke = records.finish(record)
                if broke is not None:  # FastWARC could not inflate the rest of its block: a gzip member breaks
                    broken, cut_short = str(broke), ""
                    break
                length = record.content_length
                cut_short = f"record cut short ({consumed} of {length} bytes)" if consumed < length else ""
                if cut_short and stream is not None and not stream.damage:
                    resume = _record_start_after(fh, stream, last.pos + 1)
                    if resume is not None:  # its Content-Length runs past the stream's end, over the records after it
                        stream.rewind(resume)
                        skips.skip("warc_read_error", where, f"its Content-Length runs past the end of its gzip stream "
                                   f"({cut_short}), over the records after it: it ends where the next one starts; "
                                   f"reading resumes at offset {_stream_offset(*stream.member_of(resume))}")
                        records.restart()
                        cut_short = ""
                        continue
                ends_inside = cut or bool(cut_short and stream is not None and stream.stopped and not stream.damage)
                if ends_inside and skips.total == counted:  # a record no reader counts (warcinfo, metadata…)
                    skips.skip("truncated_gzip", where, _CUT_SHORT)
            if bad is not None:  # nothing after the last version line tried
                skips.skip("warc_read_error", *bad.counted(fh, stream, resumed=False))
            if bare_lf_at is not None:
                start = bare_lf_at
                continue
            if stream is not None and stream.stopped:
                truncated_at = None  # the stream says where the file ends inside a member
                if not stream.damage:
                    unreadable = unreadable or f"{path}:{stream.stopped_at}: the file ends inside its gzip stream"
                    if count and not ends_inside:  # no record is cut: the file ends between two of them
                        skips.skip("truncated_gzip", f"{path}:{stream.stopped_at}", _ENDS_BETWEEN_RECORDS)
                    break
                if cut_short:  # its reader gave what came before the damage and dropped it (`_read_payload`)
                    lost = last_where
                unreadable = unreadable or f"{path}:{stream.stopped_at}: the gzip stream is corrupt ({stream.damage})"
                start = _next_record_start(fh, stream.stopped_at, gzipped)
                resumed = f"reading resumes at offset {start}" if start is not None else "nothing readable after it"
                lost = f"; the rest of its gzip member is lost, from the record at {lost} on" if lost else ""
                if read_any or first_round or damage_counted_here:  # else the member the round before broke on,
                    skips.skip("warc_read_error", f"{path}:{stream.stopped_at}",  # already counted
                               f"the gzip stream does not inflate from here ({stream.damage}){lost}; {resumed}")
                continue
            if stream is not None and stream.member_end is not None and not broken and not cut_short:
                start = _after_padding(fh, stream.member_end)  # a big first record's member read: FastWARC goes on
                member_read = True
                continue
            if not broken and not cut_short:
                break  # the end of the file, at a record boundary
            # Resume after the start of the last record read (or after `start` when nothing could be read from
            # there): a record that runs past the end of the file may have swallowed the records after it.
            if gzipped:
                start = _next_record_start(fh, last_offset + 1, True)
            else:
                start = _record_start_after(fh, None, last_offset + 1)
            resumed = f"reading resumes at offset {start}" if start is not None else "nothing readable after it"
            if not broken:
                # Its Content-Length runs past the end of the file, over the records after it: it ends where the next
                # one starts (`_read_payload`). With none after it, it is cut short, counted by its reader.
                if start is not None and stream is None:
                    skips.skip("warc_read_error", last_where, f"its Content-Length runs past the end of the file "
                               f"({cut_short}), over the records after it: it ends where the next one starts; "
                               f"{resumed}")
                elif start is not None:
                    log.info("%s: %s; %s", last_where, cut_short, resumed)
                continue
            damage = _member_damage(fh, last_offset) if gzipped and stream is None and read_any else None
            if damage is not None:  # FastWARC met it inside the gzip member of the last record read
                skips.skip("warc_read_error", f"{path}:{damage[0]}",
                           f"the gzip stream does not inflate from here ({damage[1]}); {resumed}")
                continue
            if read_any:
                left_over = (last_where, f"after this record: {broken}; {resumed}")
            elif fresh:  # else the same broken stretch as the round before, already counted
                left_over = (last_where, f"no WARC record here ({broken}); {resumed}")
            if left_over is not None and (start is None or not gzipped):
                skips.skip("warc_read_error", *left_over)
                left_over = None
        if count == 0 and unreadable:
            raise InputFileError(f"{unreadable}, before its first whole record")
        if count == 0:
            raise InputFileError(f"{path}: no WARC record found")
        if truncated_at is not None:  # so damaged that no record could be read from it
            skips.skip("truncated_gzip", f"{path}:{truncated_at}", _CUT_SHORT)


# The records whose block is checked against its digest in a gzip stream we inflate: the ones documents come from.
_DIGEST_CHECKED = (WarcRecordType.response, WarcRecordType.resource, WarcRecordType.conversion)


@dataclass(frozen=True)
class _Framed:
    """Where a record read starts (in the file, or in the gzip stream we inflate), the length of its block as FastWARC
    reads it (its Content-Length, or 0 when its headers are garbled), and where its block ends (in a gzip stream, found
    when the record is read: its headers are not held for long)."""

    pos: int
    length: int
    block_end: int | None


class _Records:
    """FastWARC's records in one round of `_iter_records`, read from the file or from the gzip stream we inflate; and
    where the record being read ends, which its reader asks once it has read its payload (`next_record_inside`).

    FastWARC says whether a record ends where its Content-Length says only when it reads the record after it. That
    read is made then, ahead, and kept for `_iter_records`: it is the read that comes next anyway, so a record read as
    it should be costs nothing more. When no record follows where the Content-Length says, the record ends where the
    next record starts, if one starts inside it: searched for as `_iter_records` searches for where to read on
    (the next version line after its start; in gzip per record, the next member), so the two agree.

    WARC headers in bare LF (ClueWeb, some wget WARCs) are read in FastWARC's quirks mode, chosen from the version
    line where reading starts or resumes. That mode reads on past what breaks the framing (garbage, a Content-Length
    that is off) to the next "WARC/" it finds, without a word: so there, a record that does not start where the one
    before ends (after the newlines that end a record) is the framing error strict mode would raise (`_check_framing`),
    and the search for where to read on is the same. In strict mode, a record in bare LF (a file that two writers
    wrote) reads as one garbled header without a Content-Length: it is read again in quirks mode (`_pull`)."""

    def __init__(self, fh: BinaryIO, stream: _InflatedGzip | None, path: Path, gzipped: bool, quirks: bool) -> None:
        self.fh, self.stream, self.path, self.gzipped, self.quirks = fh, stream, path, gzipped, quirks
        self.last = _Framed(0, 0, None)  # the record read, in a plain file or a gzip stream (`_iter_records` sets it)
        self.restart()

    def restart(self) -> None:
        """Read on from where the file or the stream now stands."""
        self.next_at: int | None = None  # quirks mode: where the next record must start (plain, or a stream)
        if self.stream is not None or not self.gzipped:
            self.next_at = self.stream.tell() if self.stream is not None else self.fh.tell()
            head = self._bytes(self.next_at, 16) or b""
            if re.match(_VERSION_LINE, head):
                self.quirks = _bare_lf(head)
        self._iterate()
        self.ahead: tuple[WarcRecord | None, Exception | None] | None = None  # the next record, or why there is none
        self.drained: WarcRecord | None = None
        self.consumed, self.broke = 0, None

    def _iterate(self) -> None:
        self.records = iter(ArchiveIterator(self.stream or self.fh, parse_http=False, quirks_mode=self.quirks))

    def __next__(self) -> WarcRecord:
        if self.ahead is None:
            return self._pull()
        (record, error), self.ahead = self.ahead, None
        if error is not None:
            raise error
        if record is None:
            raise StopIteration
        return record

    def _pull(self) -> WarcRecord:
        """FastWARC's next record, its framing checked in quirks mode."""
        try:
            record = next(self.records)
        except StopIteration:
            if self.quirks:
                self._check_end()
            raise
        if not self.quirks and record.headers.get("Content-Length") is None and self._in_bare_lf(record):
            # strict mode reads WARC headers in bare LF as one garbled field: they are read again in quirks mode
            if self.stream is None and self.gzipped:
                raise _BareLfRecord(record.stream_pos)  # from its member on, in a new round
            if self.stream is not None:
                self.stream.rewind(record.stream_pos)
            else:
                self.fh.seek(record.stream_pos)
            self.quirks, self.next_at = True, record.stream_pos
            self._iterate()
            record = next(self.records)
        if self.quirks:
            self._check_framing(record)
        return record

    def _check_framing(self, record: WarcRecord) -> None:
        """Raise the framing error strict mode raises when FastWARC, in quirks mode, read on past the end of the record
        before (or the place reading resumed at) to find this one: it starts there, or after newlines only."""
        at, expected = record.stream_pos, self.next_at
        if expected is not None and at != expected:
            gap = at - expected
            between = self._bytes(expected, gap) if 0 < gap <= _NEWLINES_MAX else None
            if between is None or between.strip(b"\r\n"):
                raise _FramingError(_NO_HEADER_HERE)
        self.next_at = self._block_end(record)

    def _check_end(self) -> None:
        """Raise the framing error strict mode raises when FastWARC, in quirks mode, found no record after the last one
        though something else than newlines follows where it ends (a Content-Length too short, or garbage)."""
        if self.next_at is None or (self.stream is not None and self.stream.stopped):
            return  # where the stream stops, what is cut or damaged is counted by `_iter_records`
        rest = self._bytes(self.next_at, _NEWLINES_MAX)
        if rest is None or rest.strip(b"\r\n"):
            raise _FramingError(_NO_HEADER_HERE)

    def ends_in_headers(self, record: WarcRecord) -> bool:
        """Whether the data ends inside the record's WARC headers, before the blank line that ends them (in gzip per
        record, inside a whole member that no other follows)."""
        if self.stream is not None or not self.gzipped:
            rest = self._bytes(record.stream_pos, _HEADER_MAX)
            return rest is not None and len(rest) < _HEADER_MAX and _HEADERS_END.search(rest) is None
        saved = self.fh.tell()
        try:
            member = _inflate_member_at(self.fh, record.stream_pos)
            if member.broken_at is not None or member.size >= _HEADER_MAX or _HEADERS_END.search(member.head):
                return False
            return member.end is None or _after_padding(self.fh, member.end) is None
        finally:
            self.fh.seek(saved)

    def _block_end(self, record: WarcRecord) -> int | None:
        """Where the block of a record just read ends, by its Content-Length (plain file, or a stream); None in gzip
        per record, or when its headers cannot be found."""
        if self.stream is not None:
            return self.stream.block_end(record)
        if self.gzipped:
            return None
        header = _header_length(self._bytes(record.stream_pos, _HEADER_PEEK) or b"", 0)
        if header is None:
            header = _header_length(self._bytes(record.stream_pos, _HEADER_MAX) or b"", 0)
        return None if header is None else record.stream_pos + header + record.content_length

    def _bytes(self, at: int, n: int) -> bytes | None:
        """Up to `n` bytes from offset `at` of the file or the stream (None when the stream no longer holds them), the
        file left where FastWARC reads it."""
        if self.stream is not None:
            return self.stream.bytes_at(at, n)
        saved = self.fh.tell()
        try:
            self.fh.seek(at)
            return self.fh.read(n)
        finally:
            self.fh.seek(saved)

    def _in_bare_lf(self, record: WarcRecord) -> bool:
        """Whether the record's version line ends in a bare LF."""
        if self.stream is not None or not self.gzipped:
            return _bare_lf(self._bytes(record.stream_pos, 16) or b"")
        saved = self.fh.tell()
        try:
            return _bare_lf(_record_head(self.fh, record.stream_pos, gzipped=True))
        finally:
            self.fh.seek(saved)

    def finish(self, record: WarcRecord) -> tuple[int, Exception | None]:
        """Read what the reader of `record` left, so that its length can be checked: how far it got, and what stopped
        it (a gzip member FastWARC cannot inflate)."""
        if self.drained is not record:
            self.drained, self.broke = record, None
            try:
                while record.reader.read(_DRAIN_CHUNK):
                    pass
            except (OSError, ValueError) as e:
                self.broke = e
            self.consumed = record.reader.tell()
        return self.consumed, self.broke

    def next_record_inside(self, loc: _Located) -> int | None:
        """Where, in the payload of the record `loc` (read to its end), the next record starts, when the record's
        Content-Length runs past it, over that one; None when it ends where its Content-Length says, or (the file
        ending first) when no record starts inside it."""
        record = loc.record
        consumed, error = self.finish(record)
        if error is None:
            if self.ahead is None:
                try:
                    self.ahead = (self._pull(), None)
                except _BareLfRecord as e:
                    self.ahead = (None, e)
                    return None  # a record follows where its Content-Length says it ends
                except StopIteration:
                    self.ahead = (None, None)
                except (OSError, ValueError) as e:
                    self.ahead = (None, e)
            following, error = self.ahead
            if following is not None or (error is None and consumed >= record.content_length):
                return None
        saved = self.fh.tell()
        try:
            inside = self._next_record_in_block(loc, error)
        finally:
            self.fh.seek(saved)
        # its payload comes after its HTTP headers, which FastWARC has parsed: its length is what is left of the block
        return None if inside is None else max(0, inside - (_content_length(record) - record.content_length))

    def reread(self, loc: _Located, error: Exception) -> tuple[bytes, bool] | None:
        """The payload of `loc`'s record inflated by zlib from its own gzip member (gzip per record), when FastWARC
        failed to inflate it: it fails the whole read in which it meets damage, in that member or one after it. With
        whether the member's checksum fails (its CRC32 or length: a byte of it may be wrong); None when the member
        breaks before the record's end (its damage is counted by `_iter_records`, where it breaks). The member is
        inflated in chunks and only the payload is kept (no more than `MAX_PAYLOAD` bytes: `_read_payload` asks for
        no longer one)."""
        self.drained, self.consumed, self.broke = loc.record, 0, error
        payload, member = self._inflate_own_member(loc, _content_length(loc.record), loc.record.content_length)
        if payload.end is None or member.size < payload.end:
            return None
        failed = member.broken_at is not None and _CHECKSUM_FAILED.search(member.why) is not None
        return payload.kept(), failed

    def _next_record_in_block(self, loc: _Located, error: Exception | None) -> int | None:
        """`next_record_inside`, as an offset in the record's block (the framing error, if any, is `error`)."""
        last, stream, fh = self.last, self.stream, self.fh
        if stream is not None or not self.gzipped:
            if error is not None:
                bad = _bad_stretch(fh, stream, self.path, last, loc.where, str(error))
                if bad is not None and bad.framed:
                    return None  # it ends where its Content-Length says: what follows it is no record
            at = _record_start_after(fh, stream, last.pos + 1)
            block = self._block_start()
            return None if at is None or block is None else at - block
        # gzip per record: FastWARC reads the members as one stream, so a record read past its member's end
        if _next_record_start(fh, loc.offset + 1, True) is None:
            return None
        member = _inflate_member_at(fh, loc.offset)
        header = _header_length(member.head, 0)
        if header is None or member.broken_at is not None or member.size >= header + _content_length(loc.record):
            return None
        return member.size - header

    def _inflate_own_member(self, loc: _Located, block: int, length: int):
        """`loc`'s record's own gzip member (gzip per record) inflated by zlib, holding only the last `length` of
        the first `block` bytes after its WARC headers (`_PayloadOfMember`); with what `_inflate_member_at` found.
        The file is left where it was."""
        payload = _PayloadOfMember(block, length)
        saved = self.fh.tell()
        try:
            member = _inflate_member_at(self.fh, loc.offset, sink=payload.take)
        finally:
            self.fh.seek(saved)
        return payload, member

    def _block_start(self) -> int | None:
        """Where the block of the record read last starts, in a plain file or a gzip stream we inflate; None when its
        WARC headers cannot be found."""
        last = self.last
        if self.stream is not None:
            return None if last.block_end is None else last.block_end - last.length
        header = _header_length(self._bytes(last.pos, _HEADER_MAX) or b"", 0)
        return None if header is None else last.pos + header

    def payload_head(self, loc: _Located, n: int) -> bytes | None:
        """The first `n` bytes of the payload of `loc`'s record (the last read, and read past: `next_record_inside`),
        read again from the file, the gzip stream we inflate or its own gzip member; None when its WARC headers cannot
        be found. For a payload whose Content-Length is past `MAX_PAYLOAD` but that ends within it, where the next
        record starts: it is read only once that is known."""
        record = loc.record
        http = _content_length(record) - record.content_length  # its HTTP headers, which FastWARC has parsed
        if self.stream is None and self.gzipped:
            payload, _ = self._inflate_own_member(loc, http + n, n)
            return payload.kept() if payload.start is not None else None
        block = self._block_start()
        if block is None:
            return None
        if self.stream is not None:
            return self.stream.read_again(block + http, n)
        return self._bytes(block + http, n)


class _PayloadOfMember:
    """The payload of the record a gzip member starts with, gathered from the chunks it inflates to
    (`_inflate_member_at`'s sink): the last `length` bytes of its block of `block` bytes, after its WARC headers. Only
    those bytes are held (`_read_payload` reads no record whose payload is past `MAX_PAYLOAD`)."""

    def __init__(self, block: int, length: int) -> None:
        self.block, self.length = block, length
        self.head = b""  # the member's first bytes, until its WARC headers end in them
        self.start: int | None = None  # where the payload starts, once the headers are read
        self.parts: list[bytes] = []

    @property
    def end(self) -> int | None:
        """Where the record's block ends in the member, once its headers are read."""
        return None if self.start is None else self.start + self.length

    def take(self, pos: int, chunk: bytes) -> None:
        if self.start is None:
            if len(self.head) >= _HEADER_MAX:
                return  # no WARC headers where it starts: nothing to keep
            self.head += chunk
            header = _header_length(self.head, 0)
            if header is None:
                return
            self.start = header + self.block - self.length
            pos, chunk, self.head = 0, self.head, b""
        low, high = max(pos, self.start), min(pos + len(chunk), self.start + self.length)
        if low < high:
            self.parts.append(chunk[low - pos : high - pos])

    def kept(self) -> bytes:
        return b"".join(self.parts)


class _FramingError(ValueError):
    """What breaks the WARC framing where FastWARC's quirks mode reads on without a word (`_Records._check_framing`),
    said as strict mode says it."""


_NO_HEADER_HERE = "Invalid WARC header"


class _BareLfRecord(ValueError):
    """In gzip per record, read in strict mode: the next member holds a record in bare LF; reading goes on from it in a
    new round, in quirks mode, and nothing is counted."""

    def __init__(self, at: int) -> None:
        super().__init__(f"a record in bare LF at offset {at}")
        self.at = at


# What is read of a record's start to find the end of its WARC headers, before `_HEADER_MAX` bytes are.
_HEADER_PEEK = 1 << 12


@dataclass
class _BadStretch:
    """Bytes after a record that break the WARC framing (garbage, a garbled record), skipped to the next version line
    and counted once (`warc_read_error`) when reading resumes after them, or the file ends in them.

    When the record before them ends where its Content-Length says (the two newlines that end a record follow its
    block), they start there and are counted from there, with their length. When it does not, its Content-Length is
    off (a record cut short, or longer than it says): the next version line is searched for from inside it, and the
    skip names the record."""

    at: int  # where they start (framed), or where the record before starts
    where: str  # the same, for messages
    after: str  # the record before them
    why: str  # FastWARC's error
    framed: bool
    tried: int = -1  # the last version line tried
    resumed: str = ""  # the same, for messages

    def resume_after(self, fh: BinaryIO, stream: _InflatedGzip | None) -> int | None:
        """The next version line after what was tried, with the file or the stream positioned on it; or None. Inside a
        record whose Content-Length is off, the next one that starts a record (`_record_start_after`)."""
        after = max(self.at, self.tried) + 1
        if not self.framed:
            resume = _record_start_after(fh, stream, after)
        elif stream is not None:
            resume = stream.find(_VERSION_ANYWHERE, after)
        else:
            resume = _next_record_start(fh, after, False)
        if resume is None:
            return None
        self.tried = resume
        if stream is not None:
            stream.rewind(resume)
            self.resumed = _stream_offset(*stream.member_of(resume))
        else:
            fh.seek(resume)
            self.resumed = str(resume)
        return resume

    def counted(self, fh: BinaryIO, stream: _InflatedGzip | None, resumed: bool) -> tuple[str, str]:
        """Where and why, for the skip; `resumed`: whether a record was read after them."""
        if resumed:
            end, then = self.tried, f"reading resumes at offset {self.resumed}"
        elif stream is not None:
            end, then = stream.produced, "nothing readable after it in its gzip stream"
        else:
            end, then = fh.seek(0, io.SEEK_END), "nothing readable after it"
        if not self.framed:
            return self.after, f"after this record: {self.why}; {then}"
        return self.where, f"{end - self.at} bytes after the record at {self.after} are no WARC record ({self.why}); " \
                           f"{then}"


# How many newlines after a record's block are read to tell where what follows it starts.
_NEWLINES_MAX = 1 << 12
# What ends a record after its block: two newlines (CRLF, or a bare LF as some writers end lines).
_RECORD_END = re.compile(rb"\r\n\r\n|\n\n")
# The end of a block read past its record into the next one's WARC headers: a version line, then no blank line.
_ENDS_IN_WARC_HEADERS = re.compile(rb"\n" + _VERSION_LINE + rb"(?:[^\r\n]+\r?\n)*[^\r\n]*\r?\Z")
_TAIL_READ = 1 << 12


def _bad_stretch(
    fh: BinaryIO, stream: _InflatedGzip | None, path: Path, last: _Framed, last_where: str, why: str
) -> _BadStretch | None:
    """What breaks the framing after the record `last` (read whole): from the end of its block when the two newlines
    that end a record follow it; else (its Content-Length is off) from its start in a gzip stream, and None in a plain
    file, which `_iter_records` reads on from inside the record as it reads on after a record cut short."""
    if stream is not None:
        end = last.block_end
        if end is not None and stream.bytes_at(end, 1) is None:  # quirks mode: FastWARC read on far past it
            stream.rewind(max(last.pos, end - _TAIL_READ))
            stream.peek(end, _NEWLINES_MAX)
        tail = stream.bytes_at(max(last.pos, end - _TAIL_READ), min(end - last.pos, _TAIL_READ)) if end else None
        after = stream.bytes_at(end, _NEWLINES_MAX) if end is not None else None
    else:
        fh.seek(last.pos)
        length = _header_length(fh.read(_HEADER_MAX), 0)
        end = last.pos + length + last.length if length is not None else None
        tail = after = None
        if end is not None:
            fh.seek(max(last.pos, end - _TAIL_READ))
            tail, after = fh.read(min(end - last.pos, _TAIL_READ)), fh.read(_NEWLINES_MAX)
    # A block that ends inside what reads as a record's WARC headers ran past its record, onto the next one.
    if after is None or not _RECORD_END.match(after) or (tail is not None and _ENDS_IN_WARC_HEADERS.search(tail)):
        return _BadStretch(last.pos, last_where, last_where, why, framed=False) if stream is not None else None
    at = end + len(after) - len(after.lstrip(b"\r\n"))
    where = f"{path}:{at}" if stream is None else _stream_place(path, *stream.member_of(at))
    return _BadStretch(at, where, last_where, why, framed=True)


def _after_padding(fh: BinaryIO, pos: int) -> int | None:
    """The offset of the first byte at or after `pos` that is not zero padding after a gzip member; None at the end."""
    fh.seek(pos)
    while chunk := fh.read(_SCAN_CHUNK):
        data = chunk.lstrip(b"\x00")
        if data:
            return pos + len(chunk) - len(data)
        pos += len(chunk)
    return None


def _record_place(record: WarcRecord, path: Path, stream: _InflatedGzip | None) -> tuple[int, str]:
    """A record's offset, and where it is for skip messages: its offset in the file, or, in a gzip stream we
    inflate, the offset of the gzip member it starts in ("file:member", "file:member+offset-inflated-in-it")."""
    if stream is None:
        return record.stream_pos, f"{path}:{record.stream_pos}"
    member, inside = stream.member_of(record.stream_pos)
    return member, _stream_place(path, member, inside)


def _stream_place(path: Path, member: int, inside: int) -> str:
    return f"{path}:{_stream_offset(member, inside)}"


def _stream_offset(member: int, inside: int) -> str:
    return f"{member}+{inside}" if inside else f"{member}"


_CUT_SHORT = "the file ends inside this record's gzip member (an interrupted download?)"
_ENDS_IN_HEADERS = "the file ends inside this record's WARC headers"
_ENDS_BETWEEN_RECORDS = "the file ends inside its gzip stream, after the last whole record (an interrupted download?)"
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


@dataclass(frozen=True)
class _InflatedMember:
    """What `_inflate_member_at` found of a gzip member: its first `_HEADER_MAX` inflated bytes, how many bytes it
    inflates to, the offset in the file of the byte where it breaks and why (None and "" when it inflates to its end,
    or the file ends first), and the offset right after it (None unless it inflates to its end)."""

    head: bytes
    size: int
    broken_at: int | None
    why: str
    end: int | None


def _inflate_member_at(
    fh: BinaryIO, offset: int, sink: Callable[[int, bytes], None] | None = None
) -> _InflatedMember:
    """The gzip member at `offset` in the file, inflated in chunks, so that memory stays bounded: only its first
    `_HEADER_MAX` bytes are kept; `sink(pos, chunk)` is handed every chunk with its inflated offset, to keep what it
    needs of it."""
    fh.seek(offset)
    inflater, head, size, read_to = zlib.decompressobj(31), b"", 0, offset
    while not inflater.eof:
        data = inflater.unconsumed_tail
        if not data:
            data = fh.read(_INFLATE_INPUT)
            read_to += len(data)
            if not data:
                break
        before = inflater.copy()
        try:
            chunk, broken_at, why = inflater.decompress(data, _INFLATE_CHUNK), None, ""
        except zlib.error as e:
            chunk, good = _inflate_until_broken(before, data)
            broken_at, why = read_to - len(data) + good, str(e)
        if size < _HEADER_MAX:
            head += chunk[: _HEADER_MAX - size]
        if sink is not None and chunk:
            sink(size, chunk)
        size += len(chunk)
        if broken_at is not None:
            return _InflatedMember(head, size, broken_at, why, None)
    end = read_to - len(inflater.unused_data) if inflater.eof else None
    return _InflatedMember(head, size, None, "", end)


def _member_damage(fh: BinaryIO, offset: int) -> tuple[int, str] | None:
    """Where in the file the gzip member at `offset` breaks, and why; None when it inflates to its end."""
    member = _inflate_member_at(fh, offset)
    return None if member.broken_at is None else (member.broken_at, member.why)


# What zlib says of a gzip member that inflates to its end but whose trailer disagrees: its CRC32, or its length.
_CHECKSUM_FAILED = re.compile(r"incorrect (?:data|length) check")


# The first record of a file gzipped whole is found within this much of its inflated start (a `warcinfo`, or a page)
_WHOLE_CHECK = 8 << 20
# What `_gzip_to_inflate` says `_InflatedGzip` inflates: the rest of the file, or the gzip member at the start only;
# "broken" is the rest of the file too, from a member that breaks.
_GzipSpan = Literal["stream", "member", "broken"]


def _gzip_to_inflate(fh: BinaryIO, start: int) -> _GzipSpan | None:
    """Whether the gzip member at `start` is inflated by `_InflatedGzip` rather than by FastWARC, and how far.

    "stream" (the rest of the file) when the member holds more than one WARC record (a file gzipped whole), "broken"
    (the same) when it breaks: `_InflatedGzip` stops there, after what inflates before. "member" (this member only)
    when its first record runs past `_WHOLE_CHECK` bytes: it may be a file gzipped whole whose first record is big,
    which FastWARC would lose whole after damage or garbage, or a member per record whose first record is big, after
    which FastWARC reads the members that follow. None for a member per record (gzip per record, as Common Crawl writes
    them), which FastWARC reads faster, and for a member that holds no WARC record at all (FastWARC says what it is
    not)."""
    fh.seek(start)
    if fh.read(3) != _GZIP_MAGIC:
        return None
    fh.seek(start)
    inflater, records, carry, seen = zlib.decompressobj(31), 0, b"", 0
    while not inflater.eof and seen < _WHOLE_CHECK:
        data = inflater.unconsumed_tail or fh.read(_INFLATE_INPUT)
        if not data:
            # the file ends inside the member: the stream says where
            return "stream" if records > 0 or seen == 0 else None
        try:
            chunk = inflater.decompress(data, _INFLATE_CHUNK)
        except zlib.error:
            return "broken"
        window = carry + chunk
        records += sum(1 for m in _VERSION_ANYWHERE.finditer(window) if m.end() > len(carry))  # none twice
        if records > 1:
            return "stream"
        carry, seen = window[-12:], seen + len(chunk)
    return "member" if records == 1 and not inflater.eof else None


class _InflatedGzip:
    """A gzip file from `start` on (one stream, or members one after another; or its first member only), inflated as
    FastWARC reads it.

    FastWARC fails the whole read buffer in which it meets damage in a gzip stream: in a file gzipped whole, that
    loses the records inflated before it, the whole file when it is small. This stream hands out what inflates up to
    the damage, to the last byte, and then ends: `damage` says why and `stopped_at` where in the file (the same
    where the file ends inside a member, `damage` empty). It keeps where each member starts, for the offsets of the
    records, and reads zero bytes between members as padding, as gzip does.

    It holds at least the last `_HELD_BYTES` bytes it handed out, so that after a framing error (garbage between two
    records) the next record start is found in what FastWARC read past (`find`) and handed out again (`rewind`); one
    further back (inside a record whose Content-Length ran far past it) is found by inflating again from the start. And
    it hashes the block of the record being read as it hands it out, when the record's `WARC-Block-Digest` can be
    checked (`watch`, `digest_mismatch`): zlib finds some damage only at the stream's end, by its checksum, after the
    pages it garbled have been read. A member that inflates to its end but fails its checksum is told apart
    (`fails_checksum`): a record alone in it (gzip per record) is whole, though a byte of it may be wrong."""

    def __init__(self, fh: BinaryIO, start: int, one_member: bool = False) -> None:
        self.fh, self.start, self.one_member = fh, start, one_member
        self._begin()

    def _begin(self) -> None:
        """The state of the stream before its first byte is inflated."""
        self.next_in = self.start
        self.inflater, self.fed = zlib.decompressobj(31), False
        self.pending = b""  # read from the file, not yet inflated
        self.ready, self.ready_at = b"", 0  # inflated, handed out up to `ready_at`
        self.held: deque[bytes] = deque()  # inflated chunks handed out before `ready`, the latest ones
        self.held_size = 0
        self.produced = self.out = 0  # bytes inflated; bytes handed out (the `stream_pos` of FastWARC's records)
        self.members: deque[tuple[int, int]] = deque()  # (file offset, inflated offset) where members start
        self.damage = ""
        self.stopped_at: int | None = None
        self.member_end: int | None = None  # `one_member`: the file offset right after it, once inflated to its end
        self.ended = False
        self.digest: _BlockDigest | None = None  # the block being hashed
        self.checksum_failed_from: int | None = None  # where the member whose checksum failed starts, inflated

    @property
    def stopped(self) -> bool:
        """Whether the stream ended before the end of the file's gzip data (damage, or a member the file cuts)."""
        return self.stopped_at is not None

    def tell(self) -> int:
        return self.out

    def read(self, n: int = -1) -> bytes:
        while self.ready_at == len(self.ready) and not self.ended:
            self._hold(self.ready)
            self.ready, self.ready_at = self._inflate(), 0
        end = len(self.ready) if n is None or n < 0 else min(len(self.ready), self.ready_at + n)
        out = self.ready[self.ready_at : end]
        if self.digest is not None:
            self.digest.update(self.out, out)
        self.ready_at, self.out = end, self.out + len(out)
        return out

    def member_of(self, pos: int) -> tuple[int, int]:
        """The file offset of the member that inflated offset `pos` is in, and `pos`'s offset inside it; asked in
        order, so the members before it are forgotten."""
        while len(self.members) > 1 and self.members[1][1] <= pos:
            self.members.popleft()
        offset, inflated = self.members[0] if self.members else (self.next_in, 0)
        return offset, pos - inflated

    def cuts(self, record: WarcRecord) -> bool:
        """Whether the stream has already stopped inside this record: its headers and block cannot all be in what
        was inflated (headers cut before their Content-Length have none)."""
        if not self.stopped:
            return False
        if record.headers.get("Content-Length") is None:
            return True
        headers = len(record.headers.status_line) + 2 + sum(len(k) + len(v) + 2 for k, v in record.headers.astuples())
        return record.stream_pos + headers + record.content_length > self.produced

    def block_end(self, record: WarcRecord) -> int | None:
        """Where the record's block ends by its length (as FastWARC reads it, before it is read), after the blank line
        that ends its WARC headers (found in the bytes held); None when they are no longer held."""
        pieces = self._pieces(record.stream_pos, _HEADER_MAX) or [b""]
        length = _header_length(pieces[0] if len(pieces) == 1 else b"".join(pieces), 0)
        return None if length is None else record.stream_pos + length + record.content_length

    def watch(self, record: WarcRecord, block_end: int | None) -> None:
        """Hash the record's block as it is handed out, when its `WARC-Block-Digest` is one we can check."""
        self.digest = _BlockDigest.of(record, block_end)
        if self.digest is not None and self.digest.start < self.out:  # FastWARC has read on into the block
            pos = self.digest.start
            for piece in self._pieces(pos, self.out - pos) or []:
                self.digest.update(pos, piece)
                pos += len(piece)

    def digest_mismatch(self, record: WarcRecord, payload: bytes) -> str:
        """Why the block of `record` (its `payload` read whole) is not what its `WARC-Block-Digest` says; "" when it
        is, or when that cannot be told. A block not followed by the two newlines that end a record is not judged: its
        Content-Length is off (a record cut short, or longer than it says), which the framing error after it counts, as
        in a plain file."""
        digest = self.digest
        if digest is None or digest.record_pos != record.stream_pos:
            return ""
        mismatch = digest.mismatch(payload)
        after = self.bytes_at(digest.end, 4) if mismatch else None
        if after and not _RECORD_END.match(after):
            log.debug("%s: its block is not followed by the end of a record: not judged by its digest",
                      record.headers.get("WARC-Record-ID"))
            return ""
        return mismatch

    def bytes_at(self, pos: int, n: int) -> bytes | None:
        """Up to `n` bytes inflated from offset `pos` on; None when they are no longer held."""
        pieces = self._pieces(pos, n)
        return None if pieces is None else b"".join(pieces)

    def read_again(self, pos: int, n: int) -> bytes:
        """Up to `n` bytes from offset `pos` on, handed out already: inflated again from the start, by a stream of
        their own, when they are no longer held; this stream goes on where it stands."""
        held = self.bytes_at(pos, n)
        if held is not None:
            return held
        again = _InflatedGzip(self.fh, self.start, self.one_member)
        again._inflate_again_to(pos)
        parts = []
        while n > 0 and (part := again.read(n)):
            parts.append(part)
            n -= len(part)
        return b"".join(parts)

    def _pieces(self, pos: int, n: int) -> list[memoryview] | None:
        """`bytes_at`, uncopied: views of the chunks that hold them."""
        at, chunks = self._chunks_from(pos)
        if pos < at:
            return None
        pieces, skip = [], pos - at
        for chunk in chunks:
            if n > 0 and skip < len(chunk):
                pieces.append(memoryview(chunk)[skip : skip + n])
                n -= len(pieces[-1])
            skip = max(0, skip - len(chunk))
        return pieces

    def find(self, pattern: re.Pattern[bytes], pos: int) -> int | None:
        """The offset of the first match of `pattern` at or after `pos`, inflating on as far as it takes; None when the
        stream ends first. What is inflated on the way is held, for `rewind`."""
        self.digest = None
        if pos < self._chunks_from(pos)[0]:
            self._inflate_again_to(pos)
        while True:
            at, data = self._window(pos)
            m = pattern.search(data, max(0, pos - at))
            if m is not None:
                return at + m.start()
            pos = max(pos, at + len(data) - _VERSION_LINE_MAX)  # a match cut by the end is found with what comes next
            self.out += len(self.ready) - self.ready_at
            self.ready_at = len(self.ready)
            if self.ended:
                return None
            self._hold(self.ready)
            self.ready, self.ready_at = self._inflate(), 0

    def fails_checksum(self, record: WarcRecord, block_end: int | None) -> bool:
        """Whether the record (whose block ends at `block_end`, found when it was read: a big record's headers are no
        longer held) is alone in a gzip member that inflated to its end but whose checksum (its CRC32, or its length)
        failed: whole, but a byte of it may be wrong. In a member that holds more records (a file gzipped whole), zlib
        finds it only after most of them are gone: their pages are judged by their block digests."""
        if self.checksum_failed_from != record.stream_pos or block_end is None:
            return False
        end = block_end
        rest = self.bytes_at(end, self.produced - end) if end <= self.produced else None
        return rest is not None and not rest.strip(b"\r\n")  # nothing after it but the newlines that end it

    def peek(self, pos: int, n: int) -> bytes:
        """Up to `n` bytes from offset `pos` on, inflating ahead as far as it takes (`rewind` hands them out again);
        fewer where the stream ends, none when `pos` is no longer held."""
        while self.produced < pos + n and not self.ended:
            self.out += len(self.ready) - self.ready_at
            self._hold(self.ready)
            self.ready, self.ready_at = self._inflate(), 0
        return self.bytes_at(pos, n) or b""

    def rewind(self, pos: int) -> None:
        """Hand out the bytes from offset `pos` on again (inflated again from the start when no longer held)."""
        if pos < self._chunks_from(pos)[0]:
            self._inflate_again_to(pos)
            return
        at, data = self._window(pos)
        self.held.clear()
        self.held_size, self.digest = 0, None
        self.ready, self.ready_at, self.out = data, pos - at, pos

    def _inflate_again_to(self, pos: int) -> None:
        """Inflate from the start again, up to offset `pos`, which is no longer held, and hand out from there."""
        self._begin()
        while not self.ended:
            chunk = self._inflate()
            if self.produced > pos:
                self.ready, self.ready_at, self.out = chunk, pos - (self.produced - len(chunk)), pos
                return
        self.out = self.produced

    def _window(self, pos: int) -> tuple[int, bytes]:
        """The offset of the held chunk that `pos` is in (or of the first one held), and what inflated from it on."""
        at, chunks = self._chunks_from(pos)
        return at, chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _chunks_from(self, pos: int) -> tuple[int, list[bytes]]:
        """The offset of the held chunk that `pos` is in (or of the first one held), and the chunks from it on."""
        at, chunks = self.out - self.ready_at, [self.ready]
        for chunk in reversed(self.held):
            if at <= pos:
                break
            chunks.append(chunk)
            at -= len(chunk)
        return at, chunks[::-1]

    def _hold(self, chunk: bytes) -> None:
        if chunk:
            self.held.append(chunk)
            self.held_size += len(chunk)
        while self.held and self.held_size - len(self.held[0]) >= _HELD_BYTES:
            self.held_size -= len(self.held.popleft())

    def _inflate(self) -> bytes:
        if not self.pending:
            self.fh.seek(self.next_in)
            self.pending = self.fh.read(_INFLATE_INPUT)
            self.next_in += len(self.pending)
            if not self.pending:
                self.ended = True
                if self.fed:  # the file ends inside a member
                    self.stopped_at = self.next_in
                return b""
        if not self.fed:
            self.pending = self.pending.lstrip(b"\x00")  # padding between members, or after the last
            if not self.pending:
                return b""
            self.members.append((self.next_in - len(self.pending), self.produced))
            self.fed = True
        before = self.inflater.copy()
        try:
            out = self.inflater.decompress(self.pending, _INFLATE_CHUNK)
        except zlib.error as e:
            out, good = _inflate_until_broken(before, self.pending)
            self.damage, self.stopped_at = str(e), self.next_in - len(self.pending) + good
            self.ended, self.pending = True, b""
            if _CHECKSUM_FAILED.search(self.damage):  # it inflated to its end: only its trailer disagrees
                self.checksum_failed_from = self.members[-1][1] if self.members else 0
        else:
            if self.inflater.eof and self.one_member:
                self.member_end = self.next_in - len(self.inflater.unused_data)
                self.ended, self.pending = True, b""
            elif self.inflater.eof:
                self.pending = self.inflater.unused_data
                self.inflater, self.fed = zlib.decompressobj(31), False
            else:
                self.pending = self.inflater.unconsumed_tail
        self.produced += len(out)
        return out


# What `_InflatedGzip` holds of what it handed out, at least: more than FastWARC reads past a record (64 KiB a read).
_HELD_BYTES = 1 << 20
_VERSION_LINE_MAX = 16
# A WARC header block is found within this many bytes of its record's start (FastWARC reads at most 32 KiB of it).
_HEADER_MAX = 1 << 16
_HEADERS_END = re.compile(rb"\n\r?\n")


def _header_length(data: bytes, at: int) -> int | None:
    """The length of the WARC headers of the record at `at` in `data`, the blank line that ends them included; None
    when no record starts there or its headers do not end within `_HEADER_MAX` bytes."""
    if at < 0 or data[at : at + 5] != b"WARC/":
        return None
    m = _HEADERS_END.search(data, at, at + _HEADER_MAX)
    return None if m is None else m.end() - at


@dataclass
class _BlockDigest:
    """A record's `WARC-Block-Digest` (`sha1:` in base32 as most crawlers write it; sha256, sha512, md5, base16 or
    base64 too), and the digest of its block, hashed as the block is handed out."""

    record_pos: int
    start: int  # where the block starts in the stream, and ends
    end: int
    declared: str
    hasher: hashlib._Hash
    expected: bytes
    done: int = 0  # bytes of the block hashed
    tail: bytes = b""  # its last bytes hashed: they must be the payload's, else the block was not found where it is

    @classmethod
    def of(cls, record: WarcRecord, block_end: int | None) -> _BlockDigest | None:
        declared = (record.headers.get("WARC-Block-Digest") or "").strip()
        parsed = _parse_digest(declared) if declared and block_end is not None else None
        if parsed is None:
            return None
        return cls(record.stream_pos, block_end - record.content_length, block_end, declared, *parsed)

    def update(self, pos: int, data: bytes | memoryview) -> None:
        """Hash what of `data` (handed out from offset `pos` on) is the next bytes of the block."""
        low, high = self.start + self.done, min(self.end, pos + len(data))
        if pos <= low < high:
            part = memoryview(data)[low - pos : high - pos]
            self.hasher.update(part)
            self.done += len(part)
            if high > self.end - _DIGEST_TAIL:  # the block's last bytes
                self.tail = (self.tail + bytes(part[-_DIGEST_TAIL:]))[-_DIGEST_TAIL:]

    def mismatch(self, payload: bytes) -> str:
        if self.done != self.end - self.start or not self.tail.endswith(payload[-_DIGEST_TAIL:]):
            log.debug("block digest not checked: the block was not seen whole where its headers say it is")
            return ""
        if self.hasher.digest() == self.expected:
            return ""
        return f"its block does not match its WARC-Block-Digest ({self.declared}): damaged in the gzip stream"


_DIGEST_TAIL = 16
# Base32 (RFC 4648: A-Z, 2-7) as the digits of a base-32 number (0-9, a-v): `int` decodes it, faster than `base64`.
_B32_AS_DIGITS = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789abcdefghijklmnopqrstuv")
_B32_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_HEX = re.compile(r"[0-9A-Fa-f]+")
_DIGEST_ALGORITHMS = frozenset({"sha1", "sha256", "sha512", "sha384", "sha224", "md5"})


def _parse_digest(declared: str) -> tuple[hashlib._Hash, bytes] | None:
    """A hasher for the algorithm of a `WARC-Block-Digest` value ("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ") and the
    digest it declares, written in base32, base16 or base64; None for an algorithm or an encoding we do not read."""
    algorithm, _, encoded = declared.partition(":")
    name = algorithm.strip().lower().replace("-", "")
    if name not in _DIGEST_ALGORITHMS:
        return None
    hasher = hashlib.new(name)
    size, encoded = hasher.digest_size, encoded.strip()
    try:
        if len(encoded) == 2 * size and _HEX.fullmatch(encoded):
            digest = bytes.fromhex(encoded)
        elif len(encoded.rstrip("=")) == -(-size * 8 // 5):
            digest = _b32decode(encoded.rstrip("=").upper(), size)
        else:
            digest = base64.b64decode(encoded, validate=True)
    except ValueError:
        return None
    return (hasher, digest) if len(digest) == size else None


def _b32decode(encoded: str, size: int) -> bytes:
    """`size` bytes written in base32 without padding; the bits past them must be zero."""
    if not _B32_ALPHABET.issuperset(encoded):
        raise ValueError(f"not base32: {encoded!r}")
    spare = 5 * len(encoded) - 8 * size
    value = int(encoded.translate(_B32_AS_DIGITS), 32)
    if value & ((1 << spare) - 1):
        raise ValueError(f"not base32 for {size} bytes: {encoded!r}")
    return (value >> spare).to_bytes(size, "big")


_INFLATE_INPUT = 1 << 16
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


def _record_start_after(fh: BinaryIO, stream: _InflatedGzip | None, pos: int) -> int | None:
    """Where the next record starts at or after `pos` in a plain file or a gzip stream we inflate, searched for inside
    a record whose Content-Length is off (too long, or cut short): a version line that comes after the two newlines
    that end a record, or that starts a whole record (see `_starts_a_record`). A record that a page quotes inside a
    line is not one: the page goes on after it. The caller positions the file or the stream there."""
    if stream is not None:
        read = stream.peek
    else:
        def read(at: int, n: int) -> bytes:
            fh.seek(at)
            return fh.read(n)
    while True:
        at = stream.find(_VERSION_ANYWHERE, pos) if stream is not None else _next_record_start(fh, pos, False)
        if at is None or _starts_a_record(read, at):
            return at
        pos = at + 1


def _starts_a_record(read: Callable[[int, int], bytes], at: int) -> bool:
    """Whether the version line at `at` (`read(offset, n)` gives the bytes) starts a record: WARC header fields follow
    it (`_warc_headers_follow`), and it comes after the two newlines that end a record or (a record cut short runs
    straight into the next, inside a line) starts a whole record, whose block is followed by the two newlines that end
    it and another version line, or by the end of the data."""
    head = read(at, _HEADER_MAX)
    if not _warc_headers_follow(head):
        return False
    if at == 0 or read(max(0, at - 3), min(at, 3)).endswith((b"\n\r\n", b"\n\n")):
        return True
    header = _header_length(head, 0)
    length = _CONTENT_LENGTH_FIELD.search(head, 0, header) if header is not None else None
    if length is None:
        return False
    after = read(at + header + int(length.group(1)), 4 + _VERSION_LINE_MAX)
    end = _RECORD_END.match(after)
    return after == b"" or (end is not None and b"WARC/".startswith(after[end.end() : end.end() + 5]))


# A WARC header block: the version line, then `Name: value` fields (or their continuation lines) up to a blank line.
_WARC_HEADER_BLOCK = re.compile(
    _VERSION_LINE + rb"((?:[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\r\n]*\r?\n|[ \t][^\r\n]*\r?\n)*)(\r?\n)?"
)
# Fields every record has, whatever wrote it (ClueWeb's WARC/0.18 too): a page that quotes a version line rarely
# follows it with them.
_RECORD_FIELD = re.compile(rb"^(?:WARC-Type|WARC-Record-ID):", re.IGNORECASE | re.MULTILINE)
_FIELD_CUT = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]*(?::[^\r\n]*)?")  # a field line the end of the data cuts


def _warc_headers_follow(head: bytes) -> bool:
    """Whether `head` (from a version line on) reads as a record's WARC headers: header fields up to the blank line
    that ends them, among them its WARC-Type or WARC-Record-ID; or header fields up to the end of the data, where the
    file ends inside them (a record cut short in its headers)."""
    m = _WARC_HEADER_BLOCK.match(head)
    if m is None:
        return False
    if m.group(2) is not None:
        return _RECORD_FIELD.search(m.group(1)) is not None
    return len(head) < _HEADER_MAX and _FIELD_CUT.fullmatch(head, m.end()) is not None


_CONTENT_LENGTH_FIELD = re.compile(rb"^content-length:[ \t]*(\d{1,18})[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)


def _gzip_holds_warc(fh: BinaryIO, offset: int) -> bool:
    fh.seek(offset)
    try:
        return zlib.decompressobj(31).decompress(fh.read(1 << 14), 16).startswith(b"WARC/")
    except zlib.error:
        return False


# --- ARC files ------------------------------------------------------------------------------------------------
#
# The Internet Archive's format before WARC (1996; Alexa, early Heritrix). A file opens with a version block, a
# record whose URL is `filedesc://NAME` and whose block holds "VERSION RESERVED ORIGIN", the list of the header
# fields every record has, and (ARC 1.1) an XML description; then come the records. Each is one header line, its
# fields separated by single spaces: `URL IP-address Archive-date Content-type Archive-length` (v1) or
# `URL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length` (v2);
# Archive-length counts the bytes that follow the line (the response as stored, HTTP status and headers included;
# for the version block, its lines), then a newline ends the record. The Archive-date is 14 digits, UTC
# (YYYYMMDDhhmmss). Written plain, or gzipped one record to a member, so that a record can be read from its offset.
#
# Each record is read into memory (one at a time, at most `_ARC_MAX_BLOCK` bytes of it) and handed to FastWARC as
# the WARC record it stands for, so that a page goes through the very path a WARC response takes: a record holding
# an HTTP response is a `response`, the version block a `warcinfo`, and any other (a `dns:` lookup, a page stored
# without its HTTP headers) a `resource` with the ARC Content-type, which is only read when it is HTML.

# A header line is found (after a framing error) by its right end, whose fields are well-formed: ` IP-address
# Archive-date Content-type [Result-code Checksum Location Offset Filename] Archive-length`; its URL, which may hold
# spaces, is what comes before, from a known scheme on (after a byte no URL holds: a record cut short runs
# straight into the next one).
_ARC_IP = rb"(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}|-)"
_ARC_HEADER_TAIL = re.compile(
    rb" " + _ARC_IP + rb" \d{8,17} (?:[\w.+-]{1,64}/\S{1,256}|no-type|unk|unknown|-)"
    rb"(?: (?:\d{3}|-) \S{1,256} \S{1,8192} (?:\d{1,18}|-) \S{1,1024})? \d{1,18}\r?\n"
)
_ARC_URL_BEFORE_TAIL = re.compile(
    rb"(?:https?|ftp|dns|filedesc|gopher|news|mailto|rtsp|mms|whois|wais|telnet):[^\s<>\"\x00-\x1f\x7f]"
    rb"[^<>\"\x00-\x1f\x7f]*\Z",
    re.IGNORECASE,
)
_ARC_URL = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*:")
_ARC_FILEDESC = b"filedesc://"
_ARC_V1_FIELDS, _ARC_V2_FIELDS = 5, 10
# A block kept in memory is cut here (flagged `WARC-Truncated: length`, as crawlers flag the pages they cut); the
# rest is skipped unread. A page is smaller by far; what is larger (a video, a disk image) is no page anyway.
_ARC_MAX_BLOCK = 32 << 20
_ARC_LINE_MAX = 1 << 16
_ARC_CHUNK = 1 << 16


def _is_arc(head: bytes) -> bool:
    """Whether the file's first bytes (inflated) are an ARC file's: its version block, or a record header line."""
    first_line = head[: head.find(b"\n") + 1]
    return head.startswith(_ARC_FILEDESC) or (first_line != b"" and _find_arc_header(first_line) == 0)


def _find_arc_header(buf: bytes | bytearray, pos: int = 0) -> int | None:
    """Where the first ARC header line at or after `pos` starts (see `_ARC_HEADER_TAIL`), or None."""
    for tail in _ARC_HEADER_TAIL.finditer(buf, pos):
        lowest = max(pos, tail.start() - _ARC_LINE_MAX)
        line_start = buf.rfind(b"\n", lowest, tail.start()) + 1 or lowest
        url = _ARC_URL_BEFORE_TAIL.search(buf, line_start, tail.start())
        if url is not None:
            return url.start()
    return None


@dataclass
class _ArcHeader:
    url: bytes
    date: bytes
    content_type: bytes
    length: int


def _arc_header(line: bytes, fields: int) -> _ArcHeader | None:
    """The fields of an ARC record's header line, or None when it is not one. They are read from the right, in the
    layout of `fields` fields (the version block's) first, then v1's and v2's: what is left on the left is the URL,
    which some crawlers wrote with spaces in it (put back as %20)."""
    if not line.endswith(b"\n"):
        return None
    parts = line.split()
    for n in dict.fromkeys((fields, _ARC_V1_FIELDS, _ARC_V2_FIELDS)):
        if len(parts) < n:
            continue
        url = b"%20".join(parts[: len(parts) - n + 1])
        ip, date, content_type, length = parts[1 - n], parts[2 - n], parts[3 - n], parts[-1]
        if (length.isdigit() and date.isdigit() and 8 <= len(date) <= 17 and _ARC_URL.match(url)
                and re.fullmatch(_ARC_IP, ip)):
            return _ArcHeader(url, date, content_type, int(length))
    return None


def _arc_fields(version_block: bytes, fields: int) -> int:
    """The number of header fields the version block lists (its second line), else `fields` unchanged."""
    lines = version_block.split(b"\n", 2)
    listed = len(lines[1].split()) if len(lines) > 1 else 0
    return listed if listed >= _ARC_V1_FIELDS else fields


def _arc_date(raw: bytes) -> bytes | None:
    """An ARC date (YYYYMMDDhhmmss, UTC; older files have fewer digits, some more) as a WARC-Date; None when it is
    no date."""
    if len(raw) in (8, 10, 12):
        raw = raw.ljust(14, b"0")
    try:
        when = datetime.strptime(raw[:14].decode("ascii"), "%Y%m%d%H%M%S")
    except (ValueError, UnicodeDecodeError):
        return None
    return when.strftime("%Y-%m-%dT%H:%M:%SZ").encode("ascii")


def _arc_as_warc(header: _ArcHeader, block: bytes) -> WarcRecord:
    """The WARC record an ARC record stands for, read by FastWARC from memory: `warcinfo` for the version block,
    `response` for an HTTP response, `resource` for anything else, with its ARC Content-type. Its Content-Length is
    the Archive-length (or what is kept of an oversized block), so that a block cut short reads as one."""
    length, lines = header.length, [b"WARC/1.0"]
    if header.url.lower().startswith(_ARC_FILEDESC):
        lines += [b"WARC-Type: warcinfo", b"WARC-Filename: " + header.url[len(_ARC_FILEDESC):],
                  b"Content-Type: text/plain"]
    else:
        response = block.startswith(b"HTTP/")
        content_type = header.content_type
        if content_type.lower() in (b"no-type", b"-"):
            content_type = b"application/octet-stream"
        lines += [b"WARC-Type: " + (b"response" if response else b"resource"), b"WARC-Target-URI: " + header.url,
                  b"Content-Type: " + (b"application/http; msgtype=response" if response else content_type)]
        date = _arc_date(header.date)
        if date is not None:
            lines.append(b"WARC-Date: " + date)
    if length > _ARC_MAX_BLOCK:
        lines.append(b"WARC-Truncated: length")
        length = _ARC_MAX_BLOCK
    lines.append(b"Content-Length: %d" % length)
    data = b"\r\n".join(lines) + b"\r\n\r\n" + block
    return next(iter(ArchiveIterator(io.BytesIO(data), parse_http=False)))


class _ArcStream:
    """The bytes of an ARC file from `start` on, read ahead in chunks: the file's own when it is plain, else what the
    gzip member at `start` inflates to, up to its end. `consumed` counts the bytes handed out."""

    def __init__(self, fh: BinaryIO, start: int, gzipped: bool) -> None:
        self.fh, self.start, self.next_in = fh, start, start
        self.inflater = zlib.decompressobj(31) if gzipped else None
        self.buf, self.consumed = bytearray(), 0
        self.member_end: int | None = None  # gzip: the offset right after the member, once inflated to its end
        self.error = ""  # gzip: why the member could not be inflated further
        self.error_at = 0  # gzip: where in the file it breaks
        self.file_ended = False  # the file ended (inside the member, when gzipped)

    def _fill(self) -> bool:
        """More bytes in `buf`; False when there are no more."""
        if self.member_end is not None or self.error or self.file_ended:
            return False
        if self.inflater is not None and self.inflater.unconsumed_tail:
            data = self.inflater.unconsumed_tail
        else:
            self.fh.seek(self.next_in)
            data = self.fh.read(_ARC_CHUNK)
            self.next_in += len(data)
            if not data:
                self.file_ended = True
                return False
            if self.inflater is None:
                self.buf += data
                return True
        before = self.inflater.copy()
        try:
            self.buf += self.inflater.decompress(data, _ARC_CHUNK)
        except zlib.error as e:  # what inflates before the damage is read (a file gzipped whole may hold many records)
            out, good = _inflate_until_broken(before, data)
            self.buf += out
            self.error, self.error_at = str(e), self.next_in - len(data) + good
            return bool(out)
        if self.inflater.eof:
            self.member_end = self.next_in - len(self.inflater.unused_data)
        return True

    def _take(self, n: int) -> bytes:
        out = bytes(self.buf[:n])
        del self.buf[:n]
        self.consumed += len(out)
        return out

    def peek(self, n: int) -> bytes:
        while len(self.buf) < n and self._fill():
            pass
        return bytes(self.buf[:n])

    def read(self, n: int) -> bytes:
        """Up to `n` bytes: fewer only where the stream ends."""
        parts = []
        while n > 0 and (self.buf or self._fill()):
            parts.append(self._take(n))
            n -= len(parts[-1])
        return b"".join(parts)

    def skip(self, n: int) -> None:
        while n > 0 and (self.buf or self._fill()):
            n -= len(self._take(min(n, len(self.buf))))

    def peekline(self, limit: int) -> bytes:
        """The next line with its newline, left unread; without it where the stream ends first, or at `limit`."""
        searched = 0
        while True:
            i = self.buf.find(b"\n", searched, limit)
            if i >= 0:
                return bytes(self.buf[: i + 1])
            searched = len(self.buf)
            if searched >= limit or not self._fill():
                return bytes(self.buf[:limit])

    def readline(self, limit: int) -> bytes:
        return self._take(len(self.peekline(limit)))

    def read_to_next_header(self, limit: int) -> bytes | None:
        """The bytes up to the next ARC header line, or to the end of the stream; None, nothing read, when neither
        comes within `limit` bytes."""
        searched = 0
        while True:
            at = _find_arc_header(self.buf, searched)
            if at is not None:
                return self._take(at) if at <= limit else None
            if len(self.buf) > limit + _ARC_LINE_MAX:
                return None
            searched = max(0, len(self.buf) - _ARC_LINE_MAX)  # a line the buffer's end cuts is searched again
            if not self._fill():
                return self._take(len(self.buf)) if len(self.buf) <= limit else None

    def skip_newlines(self) -> bytes:
        """The newline that ends a record, and any blank lines some writers add: skipped, and returned."""
        skipped = b""
        while (head := self.peek(1)) and head in b"\r\n":
            skipped += self._take(1)
        return skipped

    def skip_to_next_header(self) -> bool:
        """Skip to the next ARC header line; False, at the end of the stream, when there is none."""
        while (at := _find_arc_header(self.buf)) is None:
            self._take(max(0, len(self.buf) - _ARC_LINE_MAX))  # a line the buffer's end cuts is searched again
            if not self._fill():
                self._take(len(self.buf))
                return False
        self._take(at)
        return True

    def unread(self, data: bytes) -> None:
        """Hand bytes read back, to be read again."""
        self.buf[:0] = data
        self.consumed -= len(data)

    def drain(self) -> None:
        """Inflate the member to its end (or to the first error), so that where it ends is known."""
        self.buf.clear()
        while self._fill():
            self.buf.clear()


@dataclass
class _ArcBreak:
    """Where a stream stopped making sense as ARC records, and why."""

    at: int  # the offset in the file (plain) or in the member's inflated bytes (gzip)
    why: str


def _iter_arc_records(fh: BinaryIO, path: Path, skips: SkipCounter, gzipped: bool) -> Iterator[_Located]:
    """Every record of an ARC file, plain or gzipped (a member per record, or the whole file), as the WARC record it
    stands for. A stretch that breaks the ARC framing (a garbled header line, a member that is not gzip or will not
    inflate, garbage between records) is counted as one `arc_read_error` with its offset, and reading goes on at the
    next record found: the next header line in the same gzip stream (a file gzipped whole) or the next gzip member
    that inflates to one, or (plain files) the next header line after the header line of the last record read (not
    inside that header line: an archived URL may hold another, as the Wayback Machine's do). An Archive-length that
    is off is counted too, and its record read to where the next one starts (`_arc_fit_block`)."""
    state = {"fields": _ARC_V1_FIELDS, "count": 0, "cut": False}  # `cut`: a record the end of the file cuts
    size = fh.seek(0, io.SEEK_END)
    pos: int | None = 0
    while pos is not None and pos < size:
        if gzipped:
            fh.seek(pos)
            if fh.read(3) != _GZIP_MAGIC:
                resume = _next_arc_start(fh, pos + 1, gzipped)
                _arc_broken(skips, f"{path}:{pos}", "not a gzip member", resume)
                pos = resume
                continue
        stream = _ArcStream(fh, pos, gzipped)
        header_end = [pos]  # plain: where the header line of the last record read ends
        broken = yield from _arc_records(stream, path, skips, gzipped, state, header_end)
        if not gzipped:
            if broken is None:
                break
            resume = _next_arc_start(fh, max(header_end[0], pos + 1), gzipped)
            _arc_broken(skips, f"{path}:{broken.at}", broken.why, resume)
            pos = resume
            continue
        if broken is not None or stream.error:
            stream.drain()
        if stream.error:  # a corrupt member: what follows it is found by its gzip header
            resume = _next_arc_start(fh, pos + 1, gzipped)
            why = f"{broken.why}; " if broken is not None else ""
            _arc_broken(skips, f"{path}:{pos}",
                        f"{why}the gzip member does not inflate from offset {stream.error_at} ({stream.error})", resume)
            pos = resume
        elif broken is not None:
            where = f"{path}:{pos}" if broken.at == 0 else f"{path}:{pos}+{broken.at}"
            resume = stream.member_end
            _arc_broken(skips, where, f"{broken.why} (inside the gzip member)", resume)
            pos = resume
        else:
            pos = stream.member_end  # None: the file ended inside the member, which its reader has counted…
            if pos is None and not state["cut"]:  # …unless no record is cut: the file ends between two of them
                skips.skip("truncated_gzip", f"{path}:{size}", _ENDS_BETWEEN_RECORDS)
    if state["count"] == 0:
        raise InputFileError(f"{path}: no ARC record found")


def _arc_broken(skips: SkipCounter, where: str, why: str, resume: int | str | None) -> None:
    resumed = f"reading resumes at offset {resume}" if resume is not None else "nothing readable after it"
    skips.skip("arc_read_error", where, f"{why}; {resumed}")


def _arc_records(
    stream: _ArcStream, path: Path, skips: SkipCounter, gzipped: bool, state: dict, header_end: list[int]
) -> Generator[_Located, None, _ArcBreak | None]:
    """The records of one stream (a plain file from some offset on, or one gzip member), until it ends or stops
    making sense as ARC: then its generator returns an `_ArcBreak`. A record cut short by the end of the file is
    yielded as it is (its reader keeps what it can, flagged); one whose header line is cut is counted here."""
    while True:
        stream.skip_newlines()
        if not stream.peek(1):
            return None
        at = stream.consumed
        offset = stream.start + at if not gzipped else stream.start
        where = f"{path}:{offset}" if not gzipped or at == 0 else f"{path}:{offset}+{at}"
        line = stream.readline(_ARC_LINE_MAX)
        header = _arc_header(line, state["fields"])
        if header is None:
            if stream.file_ended and not line.endswith(b"\n") and len(line) < _ARC_LINE_MAX:
                reason = "truncated_gzip" if gzipped else "truncated_record"
                state["count"] += 1
                state["cut"] = True
                skips.skip(reason, where, "the file ends inside this record's ARC header line")
                return None
            why = f"no ARC record header here: {line[:80]!r}"
            if gzipped and stream.skip_to_next_header():  # a file gzipped whole goes on after the garbage
                _arc_broken(skips, where, f"{why} (inside the gzip member)", f"{stream.start}+{stream.consumed}")
                continue
            return _ArcBreak(stream.start + at if not gzipped else at, why)
        header_end[0] = stream.start + stream.consumed
        kept = min(header.length, _ARC_MAX_BLOCK)
        block = stream.read(kept)
        if len(block) == kept:
            stream.skip(header.length - kept)
        short = len(block) < kept
        if short and stream.error:  # what a corrupt member inflated to is not trusted: counted with the member
            return None
        gap = b"" if short else stream.skip_newlines()
        if short or not _arc_record_follows(stream, state["fields"]):
            block, note = _arc_fit_block(stream, block, gap, header.length)
            if len(block) > kept and stream.error:  # read on into the damage: not trusted either
                return None
            if note:
                skips.skip("arc_read_error", where, f"its Archive-length ({header.length}) {note}")
                header.length, short = len(block), False
        broken = None
        if not short and not _arc_record_follows(stream, state["fields"]):
            after = stream.start + stream.consumed if not gzipped else stream.consumed
            broken = _ArcBreak(after, f"no ARC record header after the record at {where}: {stream.peekline(80)!r}")
        if header.url.lower().startswith(_ARC_FILEDESC):
            state["fields"] = _arc_fields(block, state["fields"])
        state["count"] += 1
        state["cut"] = short and gzipped and stream.file_ended
        yield _Located(_arc_as_warc(header, block), offset, where, cut_short=state["cut"])
        if broken is not None and gzipped and stream.skip_to_next_header():
            where = f"{path}:{stream.start}+{broken.at}"
            _arc_broken(skips, where, f"{broken.why} (inside the gzip member)", f"{stream.start}+{stream.consumed}")
            continue
        if short or broken is not None:
            return broken  # the stream ended inside the record, or what follows it is no record


def _arc_fit_block(stream: _ArcStream, block: bytes, gap: bytes, length: int) -> tuple[bytes, str]:
    """A block that no record header follows (or that the end of the stream cuts), fitted to where its record ends
    when its Archive-length is off, with a note saying how; else as it is.

    Too long: a header line starts inside the block (or in the line its end cuts), so the block is cut there and the
    rest handed back to the stream. Too short: no newline ends the block, which was read whole, so the bytes up to the
    next header line (or the end of the stream) are the rest of it; a wrong length is more likely there than garbage
    glued to a record's end without its newline. `gap` holds the newlines read after the block."""
    inner = _find_arc_header(block + gap + stream.peekline(_ARC_LINE_MAX), 1)
    if inner is not None and inner < len(block):
        stream.unread(block[inner:] + gap)
        end = inner - 1 if block[:inner].endswith(b"\n") else inner  # the newline that ends a record
        return block[:end], f"runs {length - end} bytes into the next record: the record is cut where that one starts"
    if gap or len(block) < length or not stream.peek(1):
        return block, ""
    rest = stream.read_to_next_header(_ARC_MAX_BLOCK - len(block))
    if not rest:
        return block, ""
    block += rest[:-1] if rest.endswith(b"\n") else rest
    return block, f"is {len(block) - length} bytes short: the record is read up to the next record header"


def _arc_record_follows(stream: _ArcStream, fields: int) -> bool:
    """Whether what follows a record (after its newline, skipped) is the end, or a record header line; a line that
    the end of the file cuts is left for the next read to count."""
    stream.skip_newlines()
    line = stream.peekline(_ARC_LINE_MAX)
    if not line or (stream.file_ended and not line.endswith(b"\n")):
        return True
    return _arc_header(line, fields) is not None


_GZIP_MAGIC = b"\x1f\x8b\x08"


def _next_arc_start(fh: BinaryIO, pos: int, gzipped: bool) -> int | None:
    """The offset of the first ARC record start at or after `pos`, or None: a gzip member that inflates to an ARC
    header line in a gzip file, else a header line (even in the middle of a line: a record cut short runs straight
    into the next one)."""
    while True:
        fh.seek(pos)
        chunk = fh.read(_SCAN_CHUNK)
        if not chunk:
            return None
        if gzipped:
            at = next((m.start() for m in _GZIP_MEMBER.finditer(chunk) if _gzip_holds_arc(fh, pos + m.start())), None)
        else:
            at = _find_arc_header(chunk)
        if at is not None:
            return pos + at
        if len(chunk) < _SCAN_CHUNK:
            return None
        pos += len(chunk) - (16 if gzipped else _ARC_LINE_MAX)  # a start cut by the chunk's end is found next


def _gzip_holds_arc(fh: BinaryIO, offset: int) -> bool:
    fh.seek(offset)
    try:
        return _is_arc(zlib.decompressobj(31).decompress(fh.read(1 << 14), _HEAD_BYTES))
    except zlib.error:
        return False


class _RecordSkips:
    """Where the skips of one record go. A record known to be cut short is counted once, by its truncation
    (`truncated_gzip` or `truncated_record`), whatever broke first in what is left of it; one that still gives a
    document is counted as `truncated_record_kept`. A record that ends where the next one starts, before its
    Content-Length (`ends_at_next_record`), is counted as the framing error it is, where reading resumes after it;
    marked `truncated` when it runs straight into the next one. One whose gzip member fails its checksum
    (`checksum_failed`) is marked `gzip_checksum_failed`, the member counted where it breaks."""

    def __init__(self, skips: SkipCounter, loc: _Located) -> None:
        self.skips, self.loc = skips, loc
        self.cut = "truncated_gzip" if loc.cut_short else ""
        self.cut_detail = _CUT_SHORT if loc.cut_short else ""
        self.cut_at_next = False
        self.checksum = False

    def skip(self, reason: str, where: str, detail: str = "") -> None:
        if self.cut:
            reason, detail = self.cut, f"{self.cut_detail}; then {reason}: {detail}" if detail else self.cut_detail
        self.skips.skip(reason, where, detail)

    def truncated(self, detail: str, reason: str = "truncated_record") -> None:
        """The payload ends before its Content-Length: from now on, its truncation is the record's reason."""
        self.cut = self.cut or reason
        self.cut_detail = f"{self.cut_detail}; {detail}" if self.cut_detail else detail

    def ends_at_next_record(self, whole: bool) -> None:
        """Its block ends where the next record starts, so the end of the file does not cut it. Not `whole` (no two
        newlines end it): it runs straight into the next one, cut short (a writer that died in it, and a later run that
        appended to the file)."""
        if self.cut_detail == _CUT_SHORT:
            self.cut = self.cut_detail = ""
        self.cut_at_next = not whole

    def checksum_failed(self) -> None:
        """Its gzip member inflates to its end, but its CRC32 or length disagrees: some byte of it may be wrong."""
        self.checksum = True

    @property
    def may_be_cut(self) -> bool:
        """Whether its text may end anywhere, inside a character too."""
        return bool(self.cut) or self.cut_at_next

    def kept(self, url: str, meta: dict) -> None:
        if self.checksum:
            meta["gzip_checksum_failed"] = True
        if self.may_be_cut:
            meta["truncated"] = True
        if self.cut:
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
        if not skips.may_be_cut:
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
    charset = decoded[1]
    page = _utf8_page(body, *decoded)
    del decoded  # the page as text is not held while the parser builds its tree (a big page's text is as big)
    try:
        text = extract_plain_text(HTMLTree.parse_from_bytes(page, "utf-8"), main_content=True, alt_texts=False)
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


def _utf8_page(body: bytes, html: str, charset: str) -> bytes:
    """The page in UTF-8, for the HTML parser: the body itself when it is UTF-8 as it stands (no byte-order mark,
    no byte decoded to a replacement character), else its text encoded. The parser reads UTF-8 bytes; handed the
    text, it would encode it itself, holding both."""
    if charset == "utf-8" and not body.startswith(codecs.BOM_UTF8) and "\ufffd" not in html:
        return body
    return html.encode("utf-8")


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
    """The record's payload as stored; None (counted) when it cannot be read.

    When its Content-Length runs past the record, over the next one (or past the end of the file, the next record
    inside it), it ends where that one starts (`_Records.next_record_inside`): its page is whole when the two newlines
    that end a record come before it (the Content-Length was wrong), else cut short, marked (`truncated`); the
    framing error is counted where reading resumes. Otherwise a payload that ends before its Content-Length is kept,
    and the record marked as cut short. A page whose gzip member FastWARC cannot inflate (gzip per record) is inflated
    from it by zlib: kept when the member inflates to its end, marked when its checksum fails. A payload past
    `MAX_PAYLOAD` is read by neither (`_payload_past_the_limit`)."""
    record, records = loc.record, loc.records
    if record.content_length > MAX_PAYLOAD:
        return _payload_past_the_limit(loc, skips, url)
    try:
        payload = record.reader.read()
    except (OSError, ValueError) as e:
        if records is None or not records.gzipped or records.stream is not None:
            skips.skip("unreadable_record", loc.where, f"{url}: {e}")
            return None
        reread = records.reread(loc, e)
        if reread is None:
            return None  # its gzip member breaks inside it: counted with it (`warc_read_error`), where it breaks
        payload, checksum_failed = reread
        if checksum_failed:
            skips.checksum_failed()
        return payload
    short = len(payload) < record.content_length
    if short and loc.stream is not None and loc.stream.damage:
        return None  # it runs into damage in its gzip stream: counted with it (`warc_read_error`), as in a member
    inside = records.next_record_inside(loc) if records is not None else None
    if inside is not None and inside < len(payload):
        return _up_to_next_record(payload[:inside], skips)
    checksum_failed = loc.stream is not None and not short and loc.stream.fails_checksum(record, loc.block_end)
    if checksum_failed:
        skips.checksum_failed()
    if loc.stream is not None and not short:
        mismatch = loc.stream.digest_mismatch(record, payload)
        if mismatch and checksum_failed:  # the damage its member's checksum found: counted once, where it breaks
            log.info("%s: %s: %s", loc.where, url, mismatch)
            return None
        if mismatch:  # zlib may say so only at the stream's end, when the page is long gone
            skips.skip("warc_digest_mismatch", loc.where, f"{url}: {mismatch}")
            return None
    if short:
        if loc.stream is not None and loc.stream.stopped and not skips.cut:
            skips.truncated(_CUT_SHORT, "truncated_gzip")
        skips.truncated(f"{len(payload)} of {record.content_length} payload bytes")
    return payload


def _payload_past_the_limit(loc: _Located, skips: _RecordSkips, url: str) -> bytes | None:
    """None for a payload that its Content-Length puts past `MAX_PAYLOAD`: it is not read into memory (its reader is
    drained in chunks, `_Records.finish`) and is counted as `payload_too_large`. Unless that Content-Length runs over
    the records after it (or past the end of the file, the next record inside it), and the next one starts within the
    limit: the record ends there, as in `_read_payload`, and its payload is read again up to there."""
    record, records = loc.record, loc.records
    if records is not None:
        consumed, _ = records.finish(record)
        if consumed < record.content_length and loc.stream is not None and loc.stream.damage:
            return None  # it runs into damage in its gzip stream: counted with it (`warc_read_error`), as in a member
        inside = records.next_record_inside(loc)
        if inside is not None and inside <= MAX_PAYLOAD:
            payload = records.payload_head(loc, inside)
            if payload is not None:
                return _up_to_next_record(payload, skips)
    skips.skip("payload_too_large", loc.where, f"{url}: a payload of {record.content_length} bytes by its "
               f"Content-Length, past the {MAX_PAYLOAD} bytes a page may take; skipped unread")
    return None


def _up_to_next_record(payload: bytes, skips: _RecordSkips) -> bytes:
    """A payload up to where the next record starts, without the two newlines that end a record; without them, it
    runs straight into the next record, and is marked as cut short."""
    m = _RECORD_END_AT_END.search(payload)
    skips.ends_at_next_record(whole=m is not None)
    return payload if m is None else payload[: m.start()]


_RECORD_END_AT_END = re.compile(rb"(?:\r\n\r\n|\n\n)\Z")


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
            return _read_decoded(BrotliReader(io.BytesIO(raw)))
        if encoding == "zstd":
            return _read_decoded(ZstdReader(io.BytesIO(raw)))
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
            raise _decoded_past_the_limit()
        return out
    raise ValueError("not a gzip, zlib or deflate stream")


# Brotli and zstd bodies are decoded this much at a time, so that a bomb is stopped at `MAX_DECODED_BODY`.
_DECODED_CHUNK = 1 << 20


def _read_decoded(reader: BrotliReader | ZstdReader) -> bytes:
    """A Brotli or zstd body read from its FastWARC decoder up to `MAX_DECODED_BODY`, holding no more (past it:
    ValueError, as in `_inflate`). A read that gives less than it was asked for is the body's end, where FastWARC's
    unbounded read ends it too: reading on would take what follows a Brotli stream (a CRLF, garbage) for another one,
    and fail."""
    chunks, size = [], 0
    while True:
        asked = min(_DECODED_CHUNK, MAX_DECODED_BODY + 1 - size)
        chunk = reader.read(asked)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_DECODED_BODY:
            raise _decoded_past_the_limit()
        if len(chunk) < asked:
            return b"".join(chunks)


def _decoded_past_the_limit() -> ValueError:
    return ValueError(f"decoded body larger than {MAX_DECODED_BODY >> 20} MiB")


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
