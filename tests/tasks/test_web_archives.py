"""WARCs of crawlers other than Common Crawl (ClueWeb, wget, Heritrix), legacy charsets, and records cut short:
fixtures written by hand here, byte by byte, the way each crawler writes them."""

from __future__ import annotations

import codecs
import gzip
import json
import shutil
import subprocess
import sys
import zlib
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tasks.commoncrawl import detect_commoncrawl_kind, iter_warc_documents, iter_wet_documents
from tasks.ingest import detect_kind, resolve_inputs
from tasks.params import IngestParams, InputSpec
from tasks.records import InputFileError, SkipCounter

PAGES = {
    "http://river.example/": "A perfectly ordinary paragraph about rivers, bridges and the boats that pass under them.",
    "http://cafe.example/menu": "Le café de la gare ouvre à sept heures, même le dimanche, et sert des croissants.",
    "http://station.example/": "Вчера вечером мы гуляли по старому парку у реки и говорили о новой работе брата.",
}


def html(text: str, head: str = "") -> str:
    return f"<html><head>{head}<title>T</title></head><body><main><p>{text}</p></main></body></html>"


def read(path: Path) -> tuple[list, SkipCounter]:
    skips = SkipCounter()
    return list(iter_warc_documents(path, skips)), skips


def record(version: str, fields: list[tuple[str, str]], block: bytes, eol: str = "\r\n") -> bytes:
    head = f"{version}{eol}" + "".join(f"{k}: {v}{eol}" for k, v in fields)
    return (head + f"Content-Length: {len(block)}{eol}{eol}").encode() + block + (eol * 2).encode()


# --- one writer per crawler -----------------------------------------------------------------------------------


def clueweb09(pages: dict[str, bytes], warc_eol: str = "\r\n") -> bytes:
    """ClueWeb09: `WARC/0.18`, HTTP headers in bare LF, an empty WARC-Identified-Payload-Type, a broken date."""
    info = b"software: Nutch 1.0-dev (modified for clueweb09)\nisPartOf: clueweb09-en\n"
    out = [record("WARC/0.18", [("WARC-Type", "warcinfo"), ("WARC-Date", "2009-03-65T08:43:19-0800"),
                                ("Content-Type", "application/warc-fields")], info, warc_eol)]
    for n, (url, body) in enumerate(pages.items()):
        http = b"HTTP/1.1 200 OK\nContent-Type: text/html\nServer: Apache\nContent-Length: %d\n\n" % len(body) + body
        out.append(record("WARC/0.18", [
            ("WARC-Type", "response"), ("WARC-Target-URI", url), ("WARC-Date", "2009-03-65T08:43:19-0800"),
            ("WARC-Record-ID", f"<urn:uuid:00000000-0000-0000-0000-{n:012d}>"),
            ("WARC-TREC-ID", f"clueweb09-en0000-00-{n:05d}"), ("Content-Type", "application/http;msgtype=response"),
            ("WARC-Identified-Payload-Type", ""),
        ], http, warc_eol))
    return b"".join(out)


def chunked(body: bytes, eol: bytes) -> bytes:
    parts = [body[:40], body[40:]]
    return b"".join(b"%x" % len(p) + eol + p + eol for p in parts) + b"0" + eol + eol


def wget(pages: dict[str, bytes]) -> bytes:
    """wget 1.x / old Heritrix: `<url>` targets, request and metadata records around each response, a charset
    parameter, bare-LF HTTP headers, chunked and gzipped bodies, a `resource` log at the end."""
    out = [record("WARC/1.0", [("WARC-Type", "warcinfo"), ("Content-Type", "application/warc-fields")],
                  b"software: Wget/1.21\r\nformat: WARC File Format 1.0\r\n")]
    for n, (url, body) in enumerate(pages.items()):
        out.append(record("WARC/1.0", [("WARC-Type", "request"), ("WARC-Target-URI", f"<{url}>"),
                                       ("Content-Type", "application/http;msgtype=request")],
                          f"GET / HTTP/1.1\r\nHost: {url.split('/')[2]}\r\n\r\n".encode()))
        headers = "HTTP/1.1 200 OK\nContent-Type: text/html; charset=UTF-8\n"
        if n == 0:
            headers, body = headers + "Transfer-Encoding: chunked\n", chunked(body, b"\n")
        elif n == 1:
            headers, body = headers + "Content-Encoding: gzip\n", gzip.compress(body, mtime=0)
        out.append(record("WARC/1.0", [
            ("WARC-Type", "response"), ("WARC-Target-URI", f"<{url}>"), ("WARC-Date", "2024-01-02T03:04:05Z"),
            ("WARC-Record-ID", f"<urn:uuid:wget-{n}>"), ("Content-Type", "application/http;msgtype=response"),
        ], (headers + "\n").encode() + body))
        out.append(record("WARC/1.0", [("WARC-Type", "metadata"), ("WARC-Target-URI", f"<{url}>"),
                                       ("Content-Type", "application/warc-fields")], b"outlink: http://x.example/\r\n"))
    out.append(record("WARC/1.0", [("WARC-Type", "resource"), ("WARC-Target-URI", "metadata://gnu.org/wget/log"),
                                   ("Content-Type", "text/plain")], b"wget log\n"))
    return b"".join(out)


def common_crawl(pages: dict[str, bytes]) -> bytes:
    """Common Crawl: WARC/1.0, CRLF everywhere, request / response / metadata triples, gzip per record."""
    out = []
    for n, (url, body) in enumerate(pages.items()):
        http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + body
        out.append(record("WARC/1.0", [("WARC-Type", "request"), ("WARC-Target-URI", url),
                                       ("Content-Type", "application/http; msgtype=request")], b"GET / HTTP/1.1\r\n\r\n"))
        out.append(record("WARC/1.0", [
            ("WARC-Type", "response"), ("WARC-Target-URI", url), ("WARC-Date", "2024-05-18T01:58:10Z"),
            ("WARC-Record-ID", f"<urn:uuid:cc-{n}>"), ("Content-Type", "application/http; msgtype=response"),
        ], http))
        out.append(record("WARC/1.0", [("WARC-Type", "metadata"), ("WARC-Target-URI", url),
                                       ("Content-Type", "application/warc-fields")], b"fetchTimeMs: 12\r\n"))
    return b"".join(out)


def pages() -> dict[str, bytes]:
    return {url: html(text, '<meta charset="utf-8">').encode() for url, text in PAGES.items()}


def test_clueweb_wget_and_common_crawl_warcs_of_the_same_pages_give_the_same_documents(tmp_path):
    files = {
        "clueweb09.warc": clueweb09(pages()),
        "clueweb09-lf.warc.gz": gzip.compress(clueweb09(pages(), warc_eol="\n"), mtime=0),  # bare LF everywhere
        "wget.warc": wget(pages()),
        "cc.warc.gz": common_crawl(pages()),
    }
    results = {}
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert detect_commoncrawl_kind(path) == "warc", name
        docs, skips = read(path)
        assert skips.total == 0, (name, dict(skips.counts))
        results[name] = [(d.url, d.text) for d in docs]
    assert results["cc.warc.gz"] == list(PAGES.items())
    for name, got in results.items():
        assert got == results["cc.warc.gz"], name


def test_clueweb_documents_carry_their_record_id_and_no_broken_date(tmp_path):
    path = tmp_path / "clueweb.warc"
    path.write_bytes(clueweb09(pages()))
    docs, _ = read(path)
    assert json.loads(docs[0].meta)["warc_record_id"] == "<urn:uuid:00000000-0000-0000-0000-000000000000>"
    assert all(d.timestamp is None for d in docs)  # "2009-03-65" is no date


def test_a_broken_clueweb_record_costs_only_that_record(tmp_path):
    data = clueweb09(pages())
    second = data.index(b"WARC/0.18", data.index(b"WARC-TREC-ID"))  # the second response
    path = tmp_path / "broken.warc"
    path.write_bytes(data[:second] + b"@@ garbage line @@\r\n\r\n" + data[second:])
    docs, skips = read(path)
    assert [d.url for d in docs] == list(PAGES)
    assert dict(skips.counts) == {"warc_read_error": 1}


# warcio, the reference reader, comes with `pip install -e '.[bench]'`
WARCIO = shutil.which("warcio", path=str(Path(sys.executable).parent)) or shutil.which("warcio")


def test_warcio_reads_the_same_pages_from_the_clueweb_file(tmp_path):
    """The reference: warcio + Resiliparse's extraction on the same ClueWeb-style file."""
    pytest.importorskip("warcio")
    from resiliparse.extract.html2text import extract_plain_text
    from warcio.archiveiterator import ArchiveIterator

    path = tmp_path / "clueweb.warc"
    path.write_bytes(clueweb09(pages()))
    with open(path, "rb") as fh:
        theirs = [(r.rec_headers.get_header("WARC-Target-URI"),
                   extract_plain_text(r.content_stream().read().decode(), main_content=True))
                  for r in ArchiveIterator(fh) if r.rec_type == "response"]
    assert [(d.url, d.text) for d in read(path)[0]] == theirs


# --- ARC files (the Internet Archive's format before WARC): v1 and v2, plain and gzipped per record -------------

ARC_RU = "http://station.example/"
ARC_RIVER = "http://river.example/"
# The field lists a version block announces: v1 (Heritrix, early Alexa) and v2 (Alexa's later crawls).
ARC_FIELDS = {
    1: "URL IP-address Archive-date Content-type Archive-length",
    2: "URL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length",
}


def arc_record(url: str, block: bytes, version: int = 1, content_type: str = "text/html",
               date: str = "20010101000001") -> bytes:
    """One ARC record: its header line (Archive-length counts the block after it), the block, and a newline."""
    v2 = " 200 - - 0 crawl.arc" if version == 2 else ""
    return f"{url} 10.0.0.1 {date} {content_type}{v2} {len(block)}\n".encode() + block + b"\n"


def arc_filedesc(version: int) -> bytes:
    """The version block: version, reserved, origin; the header fields; and (ARC 1.1, as Heritrix writes it) XML."""
    block = f"{version} {2 - version} Test Crawler\n{ARC_FIELDS[version]}\n".encode()
    if version == 1:
        block += b'<?xml version="1.0" encoding="UTF-8"?>\n<arcmetadata><operator>test</operator></arcmetadata>\n'
    return arc_record("filedesc://crawl.arc", block, version, "text/plain", "20010101000000")


def arc_blocks() -> dict[str, tuple[str, bytes]]:
    """A Cyrillic page in windows-1251 (declared in the HTTP header only), an ASCII page, and records that are no
    page: a DNS lookup (no HTTP) and an image (HTTP, not HTML)."""
    return {
        "dns:station.example": ("text/dns", b"20010101000000\nstation.example.\t3600\tIN\tA\t10.0.0.1\n"),
        ARC_RU: ("text/html", http_block(html(RU).encode("cp1251"), "text/html; charset=windows-1251")),
        "http://station.example/logo.gif": ("image/gif", http_block(b"GIF89a\x01\x00\x01\x00;", "image/gif")),
        ARC_RIVER: ("text/html", http_block(html(PAGES[ARC_RIVER]).encode(), "text/html")),
    }


def arc_records(version: int) -> list[bytes]:
    return [arc_filedesc(version)] + [arc_record(url, block, version, content_type)
                                      for url, (content_type, block) in arc_blocks().items()]


def arc_bytes(records: list[bytes], gzipped: bool) -> bytes:
    """Plain, or gzipped one record to a member, as the Internet Archive and Heritrix write them."""
    return b"".join(gzip.compress(r, mtime=0) for r in records) if gzipped else b"".join(records)


def warc_of_arc_blocks() -> bytes:
    """The same records as a WARC: responses for what holds HTTP, a resource for the DNS lookup."""
    out = [record("WARC/1.0", [("WARC-Type", "warcinfo"), ("Content-Type", "application/warc-fields")],
                  b"software: Test Crawler\r\n")]
    for url, (content_type, block) in arc_blocks().items():
        kind = "response" if block.startswith(b"HTTP/") else "resource"
        out.append(record("WARC/1.0", [
            ("WARC-Type", kind), ("WARC-Target-URI", url), ("WARC-Date", "2001-01-01T00:00:01Z"),
            ("WARC-Record-ID", f"<urn:uuid:{url}>"),
            ("Content-Type", "application/http; msgtype=response" if kind == "response" else content_type),
        ], block))
    return b"".join(out)


def comparable(doc) -> tuple:
    """What a page gives whatever its container: the record id and the offset are the container's."""
    meta = {k: v for k, v in json.loads(doc.meta).items() if k not in ("warc_record_id", "offset")}
    return doc.url, doc.text, doc.timestamp, meta


def arc_name(gzipped: bool) -> str:
    return "crawl.arc.gz" if gzipped else "crawl.arc"


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("version", [1, 2], ids=["v1", "v2"])
def test_an_arc_file_gives_the_documents_the_same_pages_give_in_a_warc(tmp_path, version, gzipped):
    arc, warc = tmp_path / arc_name(gzipped), tmp_path / "same.warc"
    records = arc_records(version)
    arc.write_bytes(arc_bytes(records, gzipped))
    warc.write_bytes(warc_of_arc_blocks())
    assert detect_commoncrawl_kind(arc) == "warc" and detect_kind(arc) == "warc"
    docs, skips = read(arc)
    warc_docs, warc_skips = read(warc)
    assert [comparable(d) for d in docs] == [comparable(d) for d in warc_docs]
    assert [(d.url, d.text) for d in docs] == [(ARC_RU, RU), (ARC_RIVER, PAGES[ARC_RIVER])]
    assert dict(skips.counts) == dict(warc_skips.counts) == {"not_html": 1}  # the image; the DNS lookup is no page
    ru = json.loads(docs[0].meta)
    assert ru["charset"] == "cp1251" and ru["content_type"] == "text/html" and ru["http_status"] == 200
    assert docs[0].timestamp == datetime(2001, 1, 1, 0, 0, 1, tzinfo=timezone.utc)
    # the offset is the record's in the file (its gzip member's, when gzipped), as for WARC
    sizes = [len(gzip.compress(r, mtime=0)) if gzipped else len(r) for r in records]
    assert ru["offset"] == sum(sizes[:2]) and ru["content_length"] == len(arc_blocks()[ARC_RU][1])


def test_an_arc_file_gzipped_whole_is_read(tmp_path):
    path = tmp_path / "whole.arc.gz"
    path.write_bytes(gzip.compress(b"".join(arc_records(1)), mtime=0))
    docs, skips = read(path)
    assert [(d.url, d.text) for d in docs] == [(ARC_RU, RU), (ARC_RIVER, PAGES[ARC_RIVER])]
    assert dict(skips.counts) == {"not_html": 1}


def test_an_arc_url_with_spaces_and_blank_lines_between_records_are_read(tmp_path):
    """Some crawlers wrote URLs unescaped, and some a blank line more after a record."""
    block = http_block(html(PAGES[ARC_RIVER]).encode(), "text/html")
    path = tmp_path / "spaces.arc"
    path.write_bytes(arc_filedesc(1) + b"\n\n" + arc_record("http://river.example/a page.html", block))
    [doc], skips = read(path)
    assert doc.url == "http://river.example/a%20page.html" and doc.text == PAGES[ARC_RIVER] and skips.total == 0


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
def test_an_arc_file_with_only_its_version_block_gives_no_page_and_is_counted(tmp_path, gzipped):
    path = tmp_path / arc_name(gzipped)
    path.write_bytes(arc_bytes([arc_filedesc(1)], gzipped))
    assert detect_commoncrawl_kind(path) == "warc"
    docs, skips = read(path)
    assert docs == [] and dict(skips.counts) == {"no_records": 1}


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("version", [1, 2], ids=["v1", "v2"])
def test_an_arc_record_cut_by_the_end_of_the_file_keeps_its_text_flagged(tmp_path, version, gzipped):
    whole = arc_record("http://whole.example/", http_block(html(LONG).encode(), "text/html"), version)
    last = arc_record("http://cut.example/", http_block(html(LONG).encode(), "text/html"), version)
    path = tmp_path / arc_name(gzipped)
    if gzipped:
        member = gzip.compress(last, mtime=0)
        path.write_bytes(arc_bytes([arc_filedesc(version), whole], True) + member[: len(member) * 3 // 4])
    else:
        path.write_bytes(arc_filedesc(version) + whole + last[: len(last) * 2 // 3])  # inside the HTML
    docs, skips = read(path)
    assert [d.url for d in docs] == ["http://whole.example/", "http://cut.example/"]
    complete, partial = docs
    assert "truncated" not in json.loads(complete.meta) and json.loads(partial.meta)["truncated"] is True
    assert partial.text.startswith("Paragraph 0 says") and len(partial.text) < len(complete.text)
    assert dict(skips.counts) == {"truncated_record_kept": 1}
    assert skips.examples["truncated_record_kept"].startswith(f"{path}:")
    if gzipped:
        assert "gzip member" in skips.examples["truncated_record_kept"]


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
def test_an_arc_file_cut_inside_a_header_line_keeps_what_is_before_and_counts_the_cut(tmp_path, gzipped):
    records = arc_records(1)
    cut = records[-1][:20]  # "http://river.example" and no more
    path = tmp_path / arc_name(gzipped)
    path.write_bytes(arc_bytes(records[:-1], gzipped) + (gzip.compress(cut, mtime=0)[:-8] if gzipped else cut))
    docs, skips = read(path)
    assert [d.url for d in docs] == [ARC_RU]
    assert dict(skips.counts) == {"not_html": 1, "truncated_gzip" if gzipped else "truncated_record": 1}


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
def test_garbage_between_arc_records_is_skipped_and_counted_with_its_offset(tmp_path, gzipped):
    records = arc_records(1)
    garbage = b"@@ not a record @@\r\n\x00\x01\x02 http://nowhere.example/ half a line\n"
    before = arc_bytes(records[:3], gzipped)
    path = tmp_path / arc_name(gzipped)
    path.write_bytes(before + garbage + arc_bytes(records[3:], gzipped))
    docs, skips = read(path)
    assert [(d.url, d.text) for d in docs] == [(ARC_RU, RU), (ARC_RIVER, PAGES[ARC_RIVER])]
    assert dict(skips.counts) == {"arc_read_error": 1, "not_html": 1}
    example = skips.examples["arc_read_error"]
    assert example.startswith(f"{path}:{len(before)}:") and "reading resumes at offset" in example


# Garbage, then lines that look like a header line on the left or on the right, and are none: no well-formed IP
# address, date, content type and length after a URL.
GARBAGE = (
    b"@@ not a record @@\n"
    b"http://nowhere.example/ a b c 20010101000000 words 42\n"
    b"ping 10.0.0.1 20010101000001 text/html 55\n"
    b"see http://nowhere.example/ 10.0.0.1 yesterday text/html 12\n"
)


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("url", ["http://river.example/a page.html", "http://river.example/old site/a b c d e.html"],
                         ids=["one_space", "five_spaces"])
def test_after_garbage_an_arc_header_line_whose_url_has_spaces_is_found_again(tmp_path, gzipped, url):
    """Some crawlers wrote URLs unescaped. After garbage, the next header line is found from its right end (IP
    address, date, content type, length), whatever the URL before it holds; five spaces make ten fields, as many as
    a v2 line has, and the v1 file's line is still read as v1."""
    block = http_block(html(PAGES[ARC_RIVER]).encode(), "text/html")
    records = arc_records(1)[:3] + [arc_record(url, block)]
    before = arc_bytes(records[:3], gzipped)
    path = tmp_path / arc_name(gzipped)
    path.write_bytes(before + GARBAGE + arc_bytes(records[3:], gzipped))
    docs, skips = read(path)
    assert [(d.url, d.text) for d in docs] == [(ARC_RU, RU), (url.replace(" ", "%20"), PAGES[ARC_RIVER])]
    assert dict(skips.counts) == {"arc_read_error": 1}
    assert skips.examples["arc_read_error"].startswith(f"{path}:{len(before)}:")
    assert skips.examples["arc_read_error"].endswith(f"reading resumes at offset {len(before) + len(GARBAGE)}")


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
def test_a_record_cut_short_running_into_an_arc_header_line_with_spaces_is_found_again(tmp_path, gzipped):
    """A record cut short runs straight into the next header line: its URL starts at its scheme, after the markup."""
    block = http_block(html(PAGES[ARC_RIVER]).encode(), "text/html")
    url = "http://river.example/a page.html"
    records = arc_records(1)[:2]
    cut = arc_record("http://cut.example/", block)[:-30]  # its header says 30 bytes more than there are
    path = tmp_path / arc_name(gzipped)
    path.write_bytes(arc_bytes(records, gzipped) + (gzip.compress(cut + arc_record(url, block), mtime=0) if gzipped
                                                    else cut + arc_record(url, block)))
    docs, skips = read(path)
    assert [d.url for d in docs] == ["http://cut.example/", url.replace(" ", "%20")]
    assert docs[-1].text == PAGES[ARC_RIVER] and dict(skips.counts) == {"arc_read_error": 1}
    assert "its Archive-length (207) runs 29 bytes into the next record" in skips.examples["arc_read_error"]


@pytest.mark.parametrize("damage", ["garbage", "archive_length_long"])
def test_an_arc_file_gzipped_whole_goes_on_after_garbage_or_a_length_too_long(tmp_path, damage):
    """Inside one gzip stream there is no next member to go on from: the next header line is found in the stream."""
    block = http_block(html(LONG).encode(), "text/html")
    records = [arc_filedesc(1)] + [arc_record(f"http://p{i}.example/", block) for i in range(3)]
    if damage == "garbage":
        records[1] += GARBAGE
    else:
        records[1] = records[1].replace(b" %d\n" % len(block), b" %d\n" % (len(block) + 500), 1)
    path = tmp_path / "whole.arc.gz"
    path.write_bytes(gzip.compress(b"".join(records), mtime=0))
    docs, skips = read(path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(3)]
    assert docs[0].text == docs[1].text == docs[2].text
    assert dict(skips.counts) == {"arc_read_error": 1}
    example = skips.examples["arc_read_error"]
    if damage == "garbage":
        assert example.startswith(f"{path}:0+{len(records[0]) + len(records[1]) - len(GARBAGE)}: no ARC record")
        assert example.endswith(f"reading resumes at offset 0+{len(records[0]) + len(records[1])}")
    else:
        assert example.startswith(f"{path}:0+{len(records[0])}: its Archive-length ({len(block) + 500}) runs 500 bytes")


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("delta", [-40, 40], ids=["archive_length_short", "archive_length_long"])
def test_an_arc_archive_length_off_by_a_little_costs_no_page(tmp_path, gzipped, delta):
    block = http_block(html(LONG).encode(), "text/html")
    records = [arc_filedesc(1)] + [arc_record(f"http://p{i}.example/", block) for i in range(3)]
    records[1] = records[1].replace(b" %d\n" % len(block), b" %d\n" % (len(block) + delta), 1)
    path = tmp_path / arc_name(gzipped)
    path.write_bytes(arc_bytes(records, gzipped))
    docs, skips = read(path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(3)]
    # too long: nothing of the next record's header line in the page; too short: the page is read to its end
    assert docs[0].text == docs[1].text
    if gzipped and delta > 0:  # the member ends first: the record is cut short, and says so
        assert dict(skips.counts) == {"truncated_record_kept": 1}
    else:
        assert dict(skips.counts) == {"arc_read_error": 1}


@pytest.mark.parametrize("packing", ["plain", "gzip", "whole"], ids=["plain", "gzip_per_record", "gzip_whole"])
@pytest.mark.parametrize("short_by", [40, 1000, "all_but_10"])
def test_an_arc_archive_length_too_short_still_gives_the_whole_page(tmp_path, packing, short_by):
    """The bytes after the block are not the newline that ends a record, and no record starts inside it: the rest of
    the page, up to the next header line, is read with it, and the wrong length counted."""
    block = http_block(html(LONG).encode(), "text/html")
    length = 10 if short_by == "all_but_10" else len(block) - short_by  # 10: "HTTP/1.1 2", no status yet
    records = [arc_filedesc(1)] + [arc_record(f"http://p{i}.example/", block) for i in range(3)]
    records[2] = records[2].replace(b" %d\n" % len(block), b" %d\n" % length, 1)
    path = tmp_path / ("crawl.arc" if packing == "plain" else "crawl.arc.gz")
    path.write_bytes(gzip.compress(b"".join(records), mtime=0) if packing == "whole"
                     else arc_bytes(records, packing == "gzip"))
    docs, skips = read(path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(3)]
    assert docs[1].text == docs[0].text == docs[2].text
    assert json.loads(docs[1].meta)["content_length"] == len(block) and "truncated" not in json.loads(docs[1].meta)
    assert dict(skips.counts) == {"arc_read_error": 1}
    where = {"plain": f"{path}:{len(records[0]) + len(records[1])}",
             "gzip": f"{path}:{len(gzip.compress(records[0], mtime=0)) + len(gzip.compress(records[1], mtime=0))}",
             "whole": f"{path}:0+{len(records[0]) + len(records[1])}"}[packing]
    assert skips.examples["arc_read_error"] == (
        f"{where}: its Archive-length ({length}) is {len(block) - length} bytes short: the record is read up to"
        " the next record header"
    )


def test_an_arc_archive_length_past_the_end_of_the_file_swallows_no_record(tmp_path):
    block = http_block(html(LONG).encode(), "text/html")
    records = [arc_filedesc(1)] + [arc_record(f"http://p{i}.example/", block) for i in range(3)]
    records[1] = records[1].replace(b" %d\n" % len(block), b" 987654321\n", 1)
    path = tmp_path / "huge.arc"
    path.write_bytes(b"".join(records))
    docs, skips = read(path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(3)]
    assert docs[0].text == docs[1].text and "truncated" not in json.loads(docs[0].meta)
    assert dict(skips.counts) == {"arc_read_error": 1}
    assert skips.examples["arc_read_error"].startswith(f"{path}:{len(records[0])}:")


def test_an_arc_file_gzipped_whole_damaged_early_keeps_every_record_before_the_damage(tmp_path):
    """A small ARC file gzipped whole, all of it inflated in one read: the damage costs the record it is in and what
    follows it in the stream, not the records before it."""
    records = arc_records(1)
    inside = sum(map(len, records[:3])) + 20  # inside the header line of the image's record
    deflater = zlib.compressobj(6, zlib.DEFLATED, 31)
    data = deflater.compress(b"".join(records)[:inside]) + deflater.flush(zlib.Z_FULL_FLUSH)
    edge = len(data)
    data = bytearray(data + deflater.compress(b"".join(records)[inside:]) + deflater.flush())
    data[edge] = 0b110  # a deflate block of type 3: there is none, zlib stops right there
    path = tmp_path / "whole.arc.gz"
    path.write_bytes(data)
    docs, skips = read(path)
    assert [(d.url, d.text) for d in docs] == [(ARC_RU, RU)]
    assert dict(skips.counts) == {"arc_read_error": 1}
    assert f"the gzip member does not inflate from offset {edge} (" in skips.examples["arc_read_error"]


def test_a_corrupt_gzip_member_in_an_arc_file_costs_only_its_record(tmp_path):
    block = http_block(html(LONG).encode(), "text/html")
    members = [bytearray(gzip.compress(r, mtime=0))
               for r in [arc_filedesc(1)] + [arc_record(f"http://p{i}.example/", block) for i in range(3)]]
    middle = len(members[2]) // 2
    members[2][middle : middle + 8] = b"\xff" * 8
    path = tmp_path / "corrupt.arc.gz"
    path.write_bytes(b"".join(members))
    docs, skips = read(path)
    assert [d.url for d in docs] == ["http://p0.example/", "http://p2.example/"]
    assert dict(skips.counts) == {"arc_read_error": 1}
    assert skips.examples["arc_read_error"].startswith(f"{path}:{len(members[0]) + len(members[1])}:")


@pytest.mark.parametrize(
    ("kind", "name"),
    [(kind, name) for kind in ("auto", "commoncrawl", "warc") for name in ("crawl.arc", "crawl.arc.gz")]
    + [("commoncrawl", "crawl.dat.gz"), ("warc", "crawl.dat")],  # not named .arc: told, not found by its name
)
def test_an_arc_file_is_read_whatever_kind_ingest_is_told(tmp_path, kind, name):
    """Found by its name, `kind: commoncrawl`, or `kind: warc` (`.arc.gz` or plain `.arc`): read as WARC."""
    path = tmp_path / name
    path.write_bytes(arc_bytes(arc_records(1), gzipped=name.endswith(".gz")))
    [f] = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(path), kind=kind)]))
    assert (f.kind, f.source) == ("warc", "commoncrawl")
    assert [d.url for d in iter_warc_documents(Path(f.path), SkipCounter())] == [ARC_RU, ARC_RIVER]


def test_an_arc_file_read_as_wet_says_to_read_it_as_warc(tmp_path):
    path = tmp_path / "crawl.arc"
    path.write_bytes(b"".join(arc_records(1)))
    with pytest.raises(InputFileError) as err:
        list(iter_wet_documents(path, SkipCounter()))
    assert str(err.value) == f"{path}: is an ARC file (web pages with their HTTP headers), not WET; read it as WARC"


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("version", [1, 2], ids=["v1", "v2"])
def test_warcio_finds_the_same_records_in_our_arc_files(tmp_path, version, gzipped):
    """The reference: warcio's ArchiveIterator on the same ARC files gives the same responses, payload bytes and
    all. warcio reads only v1 header lines (a v2 line's five more fields end up in its URL), so for v2 only the
    payloads are compared."""
    pytest.importorskip("warcio")
    from warcio.archiveiterator import ArchiveIterator as WarcioIterator

    from tasks.commoncrawl import _iter_records

    path = tmp_path / arc_name(gzipped)
    path.write_bytes(arc_bytes(arc_records(version), gzipped))
    ours = []
    for loc in _iter_records(path, SkipCounter()):
        if str(loc.record.record_type) == "response":
            loc.record.parse_http(auto_decode="none", quirks_mode=True)
            ours.append((loc.record.headers.get("WARC-Target-URI"), loc.record.reader.read()))
    with open(path, "rb") as fh:
        theirs = [(r.rec_headers.get_header("WARC-Target-URI"), r.raw_stream.read())
                  for r in WarcioIterator(fh, arc2warc=True) if r.http_headers is not None]
    assert [payload for _, payload in ours] == [payload for _, payload in theirs]
    assert [url for url, _ in ours] == [ARC_RU, "http://station.example/logo.gif", ARC_RIVER]
    if version == 1:
        assert ours == theirs


# An ARC file read through warcio's conversion, as before the reader read ARC: the same pages either way.
@pytest.mark.skipif(WARCIO is None, reason="warcio's command line is not installed (pip install -e '.[bench]')")
def test_an_arc_file_converted_with_warcio_recompress_gives_the_same_documents(tmp_path):
    arc, warc = tmp_path / "crawl.arc.gz", tmp_path / "crawl.warc.gz"
    arc.write_bytes(arc_bytes(arc_records(1), gzipped=True))
    subprocess.run([WARCIO, "recompress", str(arc), str(warc)], check=True, capture_output=True)
    assert [(d.url, d.text) for d in read(warc)[0]] == [(d.url, d.text) for d in read(arc)[0]]


# --- legacy charsets -------------------------------------------------------------------------------------------

# Hand-written sentences, each in an encoding its language was (and is) served in.
TEXTS = {
    "ja": "昨日の午後、私は駅の近くにある小さな本屋へ行きました。店の奥には古い地図や旅行の本がたくさん並んでいて、"
          "店主のおじいさんが丁寧に説明してくれました。帰り道に雨が降り始めたので、喫茶店で温かいコーヒーを飲みました。",
    "zh": "上个周末我们一家人去了城外的湖边散步。天气很好，湖面上有很多小船，孩子们在草地上放风筝。"
          "中午我们在附近的小饭馆吃了鱼和青菜，味道非常新鲜。",
    "zh-tw": "今天早上我在市場買了新鮮的水果和蔬菜。老闆很熱情，還送給我兩顆橘子。回家以後，我把廚房整理乾淨，"
             "準備晚上請朋友們來吃飯。",
    "ru": "Вчера вечером мы гуляли по старому парку у реки. Листья уже пожелтели, и под ногами тихо шуршала осенняя "
          "трава. Мой брат рассказывал о своей новой работе в библиотеке, где он разбирает старые книги и письма.",
    "ar": "ذهبنا صباح يوم الجمعة إلى السوق القديم في وسط المدينة. كانت الشوارع مزدحمة بالناس، ورائحة الخبز الطازج "
          "تملأ المكان. اشترت أمي الزيتون والجبن والتمر، ثم جلسنا في مقهى صغير نشرب الشاي بالنعناع.",
    "pl": "Wczoraj po południu pojechaliśmy rowerami nad jezioro. Woda była zimna, ale słońce świeciło mocno, więc "
          "długo siedzieliśmy na pomoście. Babcia przygotowała kanapki z żółtym serem i ogórkiem.",
    "el": "Το πρωί πήγαμε με το πλοίο στο μικρό νησί απέναντι. Η θάλασσα ήταν ήρεμη και το νερό πολύ καθαρό. "
          "Φάγαμε ψάρι σε μια ταβέρνα δίπλα στο λιμάνι και το απόγευμα περπατήσαμε στα στενά δρομάκια.",
    "fr": "Le café de la gare ouvre à sept heures, même le dimanche. Les habitués y prennent un croissant et lisent "
          "le journal près de la fenêtre, où l'on voit passer les trains de marchandises vers la côte.",
}
CHARSETS = [
    ("ja", "EUC-JP"), ("ja", "Shift_JIS"), ("zh", "GBK"), ("zh", "GB18030"), ("zh", "GB2312"), ("zh-tw", "Big5"),
    ("ru", "windows-1251"), ("ru", "KOI8-R"), ("ru", "ISO-8859-5"), ("ar", "windows-1256"), ("pl", "ISO-8859-2"),
    ("el", "ISO-8859-7"), ("fr", "ISO-8859-1"), ("fr", "ISO-8859-15"),
]
# A wrong HTTP charset: what a server sends by default (Apache's ISO-8859-1) or a UTF-8 one on a legacy page.
WRONG = {"ISO-8859-1": "UTF-8", "ISO-8859-15": "UTF-8"}


def charset_variants(lang: str, charset: str) -> dict[str, bytes]:
    """The same page, its charset in the HTTP header, only in <meta>, nowhere, and a wrong header beside <meta>;
    for the languages a Latin-1 decoding would garble, a wrong header and no <meta> too."""
    text = TEXTS[lang]
    plain = html(text).encode(charset)
    meta = html(text, f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">').encode(charset)
    meta5 = html(text, f'<meta charset="{charset.lower()}">').encode(charset)
    wrong = WRONG.get(charset, "ISO-8859-1")
    variants = {
        "header": http_block(plain, f"text/html; charset={charset}"),
        "meta": http_block(meta, "text/html"),
        "meta5": http_block(meta5, "text/html"),
        "neither": http_block(plain, "text/html"),
        "wrong_header_and_meta": http_block(meta, f"text/html; charset={wrong}"),
        "utf8_header_no_meta": http_block(plain, "text/html; charset=utf-8"),
    }
    if lang not in ("pl", "fr"):  # Polish read as Latin-1 is still plausible Latin text: no way to tell
        variants["latin1_header_no_meta"] = http_block(plain, "text/html; charset=ISO-8859-1")
    return variants


def http_block(body: bytes, content_type: str) -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n\r\n".encode() + body


@pytest.mark.parametrize(("lang", "charset"), CHARSETS, ids=[c for _, c in CHARSETS])
def test_a_page_in_a_legacy_charset_reads_the_same_wherever_its_charset_is_declared(tmp_path, lang, charset):
    variants = charset_variants(lang, charset)
    urls = [f"http://{name.replace('_', '-')}.example/" for name in variants]
    records = [record("WARC/1.0", [("WARC-Type", "response"), ("WARC-Target-URI", url),
                                   ("Content-Type", "application/http; msgtype=response")], block)
               for url, block in zip(urls, variants.values(), strict=True)]
    path = tmp_path / "charsets.warc"
    path.write_bytes(b"".join(records))
    docs, skips = read(path)
    assert skips.total == 0
    assert {d.url: d.text for d in docs} == {url: TEXTS[lang] for url in urls}


# --- records cut short -----------------------------------------------------------------------------------------

LONG = " ".join(f"Paragraph {i} says something about the river and the bridge." for i in range(60))


def response(url: str, n: int) -> bytes:
    return record("WARC/1.0", [("WARC-Type", "response"), ("WARC-Target-URI", url), ("WARC-Record-ID", f"<urn:r:{n}>"),
                               ("Content-Type", "application/http; msgtype=response")],
                  http_block(html(LONG).encode(), "text/html"))


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_page_cut_by_the_end_of_the_file_keeps_its_text_flagged(tmp_path, gzipped):
    first, last = response("http://whole.example/", 1), response("http://cut.example/", 2)
    cut = last[: len(last) * 2 // 3]  # inside the HTML
    path = tmp_path / ("cut.warc.gz" if gzipped else "cut.warc")
    if gzipped:
        member = gzip.compress(last, mtime=0)
        path.write_bytes(gzip.compress(first, mtime=0) + member[: len(member) * 3 // 4])
    else:
        path.write_bytes(first + cut)
    docs, skips = read(path)
    assert [d.url for d in docs] == ["http://whole.example/", "http://cut.example/"]
    whole, partial = docs
    assert "truncated" not in json.loads(whole.meta) and json.loads(partial.meta)["truncated"] is True
    assert partial.text.startswith("Paragraph 0 says") and len(partial.text) < len(whole.text)
    assert dict(skips.counts) == {"truncated_record_kept": 1}
    assert skips.examples["truncated_record_kept"].startswith(f"{path}:")
    if gzipped:
        assert "gzip member" in skips.examples["truncated_record_kept"]


def test_a_record_cut_inside_its_headers_gives_nothing_and_is_counted(tmp_path):
    first, last = response("http://whole.example/", 1), response("http://cut.example/", 2)
    path = tmp_path / "cut.warc.gz"
    member = gzip.compress(last[:150], mtime=0)  # the WARC headers only, then the file ends
    path.write_bytes(gzip.compress(first, mtime=0) + member[:-12])
    docs, skips = read(path)
    assert [d.url for d in docs] == ["http://whole.example/"]
    assert dict(skips.counts) == {"truncated_gzip": 1}


def test_a_wet_record_cut_short_keeps_its_text_flagged(tmp_path):
    text = ("Une ligne de texte tout à fait lisible, écrite pour ce test.\n" * 20).encode()
    whole = record("WARC/1.0", [("WARC-Type", "conversion"), ("WARC-Target-URI", "https://a.example/"),
                                ("Content-Type", "text/plain")], text)
    cut = record("WARC/1.0", [("WARC-Type", "conversion"), ("WARC-Target-URI", "https://b.example/"),
                              ("Content-Type", "text/plain")], text)
    path = tmp_path / "cut.wet"
    path.write_bytes(whole + cut[: len(cut) // 2 + 1])  # also inside a two-byte character
    skips = SkipCounter()
    docs = list(iter_wet_documents(path, skips))
    assert [d.url for d in docs] == ["https://a.example/", "https://b.example/"]
    assert json.loads(docs[1].meta)["truncated"] is True and docs[1].text.startswith("Une ligne")
    assert dict(skips.counts) == {"truncated_record_kept": 1}


# --- pages stored without HTTP headers, in segments, or without a Content-Type ---------------------------------


def resource(url: str, content_type: str, block: bytes) -> bytes:
    return record("WARC/1.0", [("WARC-Type", "resource"), ("WARC-Target-URI", url), ("WARC-Date", "2024-01-02T03:04:05Z"),
                               ("WARC-Record-ID", f"<urn:uuid:res-{url}>"), ("Content-Type", content_type)], block)


def test_html_pages_stored_as_resource_records_are_read(tmp_path):
    """wget (`--warc-file` on local or FTP pages), warcit and Webrecorder uploads store a page as a `resource` record:
    no HTTP headers, the WARC Content-Type is the page's. wget's own log, also a resource, is no page."""
    river, station = "http://river.example/", "http://station.example/"
    path = tmp_path / "resources.warc"
    path.write_bytes(
        resource(river, "text/html; charset=UTF-8", html(PAGES[river]).encode())
        + resource(station, "text/html; charset=windows-1251", html(PAGES[station]).encode("cp1251"))
        + resource("metadata://gnu.org/wget/log", "text/plain", b"wget log\n")
    )
    assert detect_commoncrawl_kind(path) == "warc"
    docs, skips = read(path)
    assert [(d.url, d.text) for d in docs] == [(river, PAGES[river]), (station, PAGES[station])]
    assert json.loads(docs[1].meta)["charset"] == "cp1251" and "http_status" not in json.loads(docs[1].meta)
    assert skips.total == 0


def test_a_segmented_record_keeps_its_first_segment_flagged_and_counts_the_rest(tmp_path):
    url = "http://river.example/"
    block = http_block(html(LONG).encode(), "text/html")
    half = len(block) // 2
    first = record("WARC/1.0", [("WARC-Type", "response"), ("WARC-Target-URI", url), ("WARC-Record-ID", "<urn:s:1>"),
                                ("WARC-Segment-Number", "1"), ("Content-Type", "application/http; msgtype=response")],
                   block[:half])
    rest = record("WARC/1.0", [("WARC-Type", "continuation"), ("WARC-Target-URI", url), ("WARC-Record-ID", "<urn:s:2>"),
                               ("WARC-Segment-Origin-ID", "<urn:s:1>"), ("WARC-Segment-Number", "2"),
                               ("WARC-Segment-Total-Length", str(len(block)))], block[half:])
    path = tmp_path / "segments.warc"
    path.write_bytes(first + rest)
    [doc], skips = read(path)
    assert doc.text.startswith("Paragraph 0 says") and json.loads(doc.meta)["truncated"] is True
    assert dict(skips.counts) == {"truncated_record_kept": 1, "continuation": 1}
    assert "<urn:s:1>" in skips.examples["continuation"]


def test_an_html_page_without_a_content_type_is_read(tmp_path):
    body = b"<!-- generated -->\n" + html(PAGES["http://river.example/"]).encode()
    path = tmp_path / "untyped.warc"
    path.write_bytes(record("WARC/1.0", [("WARC-Type", "response"), ("WARC-Target-URI", "http://river.example/"),
                                         ("Content-Type", "application/http; msgtype=response")],
                            b"HTTP/1.1 200 OK\r\nServer: old\r\n\r\n" + body))
    docs, skips = read(path)
    assert [d.text for d in docs] == [PAGES["http://river.example/"]] and skips.total == 0


# --- byte-order marks and UTF-16 declarations ------------------------------------------------------------------

RU = TEXTS["ru"]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (html(RU, '<meta charset="utf-16">').encode("utf-16"), "text/html"),  # little-endian, with its mark
        (codecs.BOM_UTF16_BE + html(RU).encode("utf-16-be"), "text/html"),
        (html(RU).encode("utf-16"), "text/html; charset=ISO-8859-1"),  # the mark wins over a server default
        (codecs.BOM_UTF8 + html(RU).encode(), "text/html; charset=ISO-8859-1"),
        (html(RU).encode("utf-32"), "text/html"),
    ],
    ids=["utf16le_meta", "utf16be", "utf16_wrong_header", "utf8_wrong_header", "utf32"],
)
def test_a_byte_order_mark_says_the_encoding_whatever_the_headers_say(tmp_path, body, content_type):
    path = tmp_path / "bom.warc"
    path.write_bytes(record("WARC/1.0", [("WARC-Type", "response"), ("WARC-Target-URI", "http://station.example/"),
                                         ("Content-Type", "application/http; msgtype=response")],
                            http_block(body, content_type)))
    [doc], skips = read(path)
    assert doc.text == RU and skips.total == 0


@pytest.mark.parametrize("pad", ["", " "], ids=["as_is", "one_more_byte"])  # one of them decodes as UTF-16 unharmed
@pytest.mark.parametrize("where", ["meta", "header"])
def test_a_page_declared_utf16_but_written_in_utf8_reads_as_utf8(tmp_path, where, pad):
    """A `<meta charset="utf-16">` copied into an ASCII page (browsers read it as UTF-8), or a UTF-16 header on one."""
    text = PAGES["http://river.example/"]
    body = html(text, '<meta charset="utf-16">' if where == "meta" else "").encode() + pad.encode()
    content_type = "text/html; charset=utf-16" if where == "header" else "text/html"
    path = tmp_path / "utf16.warc"
    path.write_bytes(record("WARC/1.0", [("WARC-Type", "response"), ("WARC-Target-URI", "http://cafe.example/"),
                                         ("Content-Type", "application/http; msgtype=response")],
                            http_block(body, content_type)))
    [doc], _ = read(path)
    assert doc.text == text


# --- variants that were already read right: kept as regression guards ------------------------------------------

XHTML = ('<?xml version="1.0" encoding="windows-1251"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
         '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml"><head>'
         f'<title>T</title></head><body><div><p>{RU}</p></div></body></html>')


@pytest.mark.parametrize(
    ("block", "text"),
    [
        (b"HTTP/2 200\r\ncontent-type: text/html\r\n\r\n" + html(RU).encode(), RU),
        (b"HTTP/1.1 200\r\nContent-Type: text/html\r\nContent-Encoding: br\r\n\r\n"
         + pytest.importorskip("brotli").compress(html(RU).encode()), RU),
        (http_block(XHTML.encode("cp1251"), "application/xhtml+xml"), RU),
        (http_block(f"<title>T</title><p>{RU}</p>".encode(), "text/html"), RU),  # no <html>, no <body>
        (http_block(html(RU, '<meta charset="utf-8">').encode("cp1251"), "text/html"), RU),  # the meta lies
    ],
    ids=["http2", "brotli", "xhtml_xml_declaration", "no_html_element", "meta_utf8_bytes_cp1251"],
)
def test_pages_other_readers_get_right_are_read_right(tmp_path, block, text):
    path = tmp_path / "variants.warc"
    path.write_bytes(record("WARC/1.1", [("WARC-Type", "response"), ("WARC-Target-URI", "http://station.example/"),
                                         ("Content-Type", "application/http; msgtype=response")], block))
    [doc], skips = read(path)
    assert doc.text == text and skips.total == 0


def three_responses() -> list[bytes]:
    return [response(f"http://p{i}.example/", i) for i in range(3)]


@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
@pytest.mark.parametrize("delta", [-40, 40], ids=["content_length_short", "content_length_long"])
def test_a_content_length_off_by_a_little_costs_no_page(tmp_path, packing, delta):
    """In a file gzipped whole too (before, it lost every record after): the next record is found in the stream,
    searched for from inside the record, since it does not end where its Content-Length says."""
    records = three_responses()
    length = len(http_block(html(LONG).encode(), "text/html"))
    records[0] = records[0].replace(b"Content-Length: %d" % length, b"Content-Length: %d" % (length + delta))
    path = tmp_path / ("off.warc" if packing == "plain" else "off.warc.gz")
    packed = {"plain": b"".join(records), "per_record": b"".join(gzip.compress(r, mtime=0) for r in records),
              "whole": gzip.compress(b"".join(records), mtime=0)}
    path.write_bytes(packed[packing])
    docs, skips = read(path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(3)]
    assert dict(skips.counts) == {"warc_read_error": 1} and skips.examples["warc_read_error"].startswith(f"{path}:0:")
    if packing == "whole":
        assert skips.examples["warc_read_error"].endswith(f"reading resumes at offset 0+{len(records[0])}")


def test_a_gzip_member_corrupt_in_the_middle_of_the_file_costs_only_its_record(tmp_path):
    members = [bytearray(gzip.compress(r, mtime=0)) for r in three_responses()]
    middle = len(members[1]) // 2
    members[1][middle : middle + 8] = b"\xff" * 8
    path = tmp_path / "corrupt.warc.gz"
    path.write_bytes(b"".join(members))
    docs, skips = read(path)
    assert [d.url for d in docs] == ["http://p0.example/", "http://p2.example/"]
    assert dict(skips.counts) == {"warc_read_error": 1}
    assert "reading resumes at offset" in skips.examples["warc_read_error"]


def test_a_revisit_record_is_counted_not_read_twice(tmp_path):
    url = "http://station.example/"
    revisit = record("WARC/1.0", [("WARC-Type", "revisit"), ("WARC-Target-URI", url), ("WARC-Refers-To", "<urn:r:0>"),
                                  ("WARC-Profile", "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"),
                                  ("Content-Type", "application/http; msgtype=response")],
                     b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n")
    path = tmp_path / "revisit.warc"
    path.write_bytes(response(url, 0) + revisit)
    docs, skips = read(path)
    assert [d.url for d in docs] == [url] and dict(skips.counts) == {"revisit": 1}


@pytest.mark.parametrize("eol", ["\r\n", "\n"], ids=["crlf", "lf"])
def test_an_uncompressed_warc_1_0_reads_the_same_in_crlf_and_bare_lf(tmp_path, eol):
    records = [record("WARC/1.0", [("WARC-Type", "response"), ("WARC-Target-URI", url),
                                   ("Content-Type", "application/http; msgtype=response")],
                      f"HTTP/1.1 200 OK{eol}Content-Type: text/html{eol}{eol}".encode() + body, eol)
               for url, body in pages().items()]
    path = tmp_path / "plain.warc"
    path.write_bytes(b"".join(records))
    docs, skips = read(path)
    assert [(d.url, d.text) for d in docs] == list(PAGES.items()) and skips.total == 0
