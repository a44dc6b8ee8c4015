"""Common Crawl readers: real WET/WARC files from ../shared/data, our own examples, and broken records."""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import io
import json
import re
import tracemalloc
import zlib
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from fastwarc.stream_io import BrotliWriter, ZstdWriter

from storage.schemas import DOCUMENT_SCHEMA
from tasks import commoncrawl
from tasks.commoncrawl import (
    detect_commoncrawl_kind,
    iter_commoncrawl_documents,
    iter_warc_documents,
    iter_wet_documents,
)
from tasks.records import InputFileError, SkipCounter, stable_id

ROOT = Path(__file__).resolve().parents[2]
CC = ROOT / ".." / "shared" / "data" / "commoncrawl"
EXAMPLES = ROOT / "examples" / "commoncrawl"

needs_cc = pytest.mark.skipif(
    not CC.is_dir(),
    reason=f"shared Common Crawl test data not found at {CC} (it lives outside the repository)",
)

WHIRLWIND_URL = "https://an.wikipedia.org/wiki/Escopete"
# A sentence of the article body, as it is in the WET file.
ESCOPETE = (
    "Escopete ye un municipio d'a provincia de Guadalachara, en a comunidat autonoma de Castiella-La Mancha"
)


def read(reader, path):
    skips = SkipCounter()
    docs = list(reader(path, skips))
    return docs, skips


def read_with_peak(path: Path):
    """`read(iter_warc_documents, path)` and the peak of Python's memory meanwhile (tracemalloc)."""
    tracemalloc.start()
    try:
        docs, skips = read(iter_warc_documents, path)
        return docs, skips, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- real files -------------------------------------------------------------------------------------------


@needs_cc
def test_whirlwind_wet_is_the_aragonese_wikipedia_page():
    docs, skips = read(iter_wet_documents, CC / "whirlwind-python_whirlwind.warc.wet.gz")
    assert skips.total == 0
    [doc] = docs
    assert doc.source == "commoncrawl"
    assert doc.url == WHIRLWIND_URL
    assert doc.timestamp == datetime(2024, 5, 18, 1, 58, 10, tzinfo=timezone.utc)
    assert ESCOPETE in doc.text
    assert doc.text.startswith("Escopete - Biquipedia, a enciclopedia libre")
    meta = json.loads(doc.meta)
    assert meta["warc_record_id"] == "<urn:uuid:ba729a40-ff84-4085-8d48-0a5b2ee0c42d>"
    assert meta["content_length"] == 4456
    assert meta["language"] == "spa"  # Common Crawl's own (wrong) guess for Aragonese, kept as written
    assert doc.id == stable_id("commoncrawl", WHIRLWIND_URL, meta["warc_record_id"])


@needs_cc
def test_whirlwind_warc_gives_the_main_text_without_the_wiki_menus():
    docs, skips = read(iter_warc_documents, CC / "whirlwind-python_whirlwind.warc.gz")
    assert skips.total == 0
    [doc] = docs
    assert doc.url == WHIRLWIND_URL
    assert ESCOPETE in doc.text
    # main_content drops the navigation that the WET text (made without it) still has
    assert "Menú principal" not in doc.text
    assert (
        "Menú principal" in read(iter_wet_documents, CC / "whirlwind-python_whirlwind.warc.wet.gz")[0][0].text
    )
    meta = json.loads(doc.meta)
    assert meta["warc_record_id"] == "<urn:uuid:2aabeff2-67f5-4608-8466-e87c6296e2b6>"
    assert meta["http_status"] == 200 and meta["charset"] == "utf-8"


@needs_cc
def test_resiliparse_warcfile_yields_its_16_html_pages_in_their_charsets():
    docs, skips = read(iter_warc_documents, CC / "resiliparse_warcfile.warc.gz")
    assert skips.total == 0
    assert len(docs) == 16
    assert len({d.id for d in docs}) == 16
    by_url = {d.url: d for d in docs}
    russian = by_url["http://01spb.ru/company/"]
    assert json.loads(russian.meta)["charset"] == "cp1251"
    assert "О компании" in russian.text
    assert "Hovenier in Oosterbeek" in by_url["http://0900-hovenier.nl/gelderland/oosterbeek/"].text
    assert "KUNSHAN STANLEY TRADING" in by_url["http://037426.cn/"].text  # a gb2312-declared page
    assert all(d.text == d.text.strip() and d.text for d in docs)
    assert all(d.timestamp.year == 2020 and d.timestamp.tzinfo is not None for d in docs)


@needs_cc
def test_dolma_wget_warc_urls_lose_their_angle_brackets():
    docs, skips = read(iter_warc_documents, CC / "dolma_sample-0000.warc.gz")
    assert skips.total == 0
    assert len(docs) == 22
    assert all(d.url.startswith("https://") and "<" not in d.url and ">" not in d.url for d in docs)
    team = docs[0]
    assert team.url == "https://www.semanticscholar.org/research/research-team"
    assert "Semantic Scholar Research Team" in team.text
    # a chunked HTTP body, decoded by us
    weld = next(d for d in docs if d.url == "https://www.cs.washington.edu/people/faculty/weld")
    assert "206-543-9196" in weld.text


@needs_cc
@pytest.mark.parametrize(
    ("name", "skipped"),
    [
        ("warcio_example.warc.gz", {"revisit": 1}),
        ("warcio_example-bad-non-chunked.warc.gz", {"revisit": 1}),
        ("warcio_example-iana.org-chunked.warc", {}),
        ("warcio_example-trunc.warc", {"warc_read_error": 1}),
        ("warcio_example-wget-bad-target-uri.warc.gz", {}),
    ],
)
def test_warcio_examples_do_not_crash_and_count_what_they_skip(name, skipped):
    docs, skips = read(iter_warc_documents, CC / name)
    assert dict(skips.counts) == skipped
    [doc] = docs
    if "iana" in name:
        assert doc.url == "http://www.iana.org/"
        assert "Internet Assigned Numbers Authority" in doc.text
    else:
        assert doc.url == "http://example.com/"  # wget's `<http://example.com/>` too
        assert doc.text.startswith("Example Domain")  # gzip Content-Encoding undone
    for reason in skipped:
        assert skips.examples[reason].startswith(f"{CC / name}:")


@needs_cc
def test_truncated_warcio_example_reports_where_the_file_breaks():
    _, skips = read(iter_warc_documents, CC / "warcio_example-trunc.warc")
    assert skips.examples["warc_read_error"].startswith(f"{CC / 'warcio_example-trunc.warc'}:1197:")


@needs_cc
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("whirlwind-python_whirlwind.warc.wet.gz", "wet"),
        ("whirlwind-python_whirlwind.warc.gz", "warc"),
        ("whirlwind-python_whirlwind.warc.wat.gz", None),
        ("resiliparse_warcfile.warc.gz", "warc"),
        ("dolma_sample-0000.warc.gz", "warc"),
        ("warcio_example-iana.org-chunked.warc", "warc"),
        ("warcio_example-trunc.warc", "warc"),
        ("dolma_cc_en_head-0091.jsonl.gz", None),
    ],
)
def test_detect_commoncrawl_kind_on_real_files(name, kind):
    assert detect_commoncrawl_kind(CC / name) == kind


@needs_cc
def test_reading_a_file_with_the_wrong_reader_says_so():
    with pytest.raises(InputFileError, match="is a WARC file"):
        read(iter_wet_documents, CC / "whirlwind-python_whirlwind.warc.gz")
    with pytest.raises(InputFileError, match="is a WET file"):
        read(iter_warc_documents, CC / "whirlwind-python_whirlwind.warc.wet.gz")
    with pytest.raises(InputFileError, match="not a Common Crawl WET or WARC"):
        read(iter_commoncrawl_documents, CC / "whirlwind-python_whirlwind.warc.wat.gz")


@needs_cc
def test_a_jsonl_file_is_not_warc():
    path = CC / "dolma_cc_en_head-0091.jsonl.gz"
    with pytest.raises(InputFileError, match="not a WARC file") as err:
        read(iter_warc_documents, path)
    assert str(path) in str(err.value)


@needs_cc
def test_documents_fit_the_document_schema():
    docs, _ = read(iter_warc_documents, CC / "dolma_sample-0000.warc.gz")
    table = pa.Table.from_pylist([d.as_row() for d in docs], schema=DOCUMENT_SCHEMA)
    assert table.num_rows == 22


# --- unreadable files ---------------------------------------------------------------------------------------


def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nope.warc.gz"
    with pytest.raises(InputFileError, match="nope.warc.gz: cannot open"):
        read(iter_warc_documents, path)
    with pytest.raises(InputFileError, match="nope.warc.gz"):
        detect_commoncrawl_kind(path)


@pytest.mark.parametrize(
    "content", [b"", b"just some text\nnot a warc\n", gzip.compress(b'{"text": "hi"}\n')]
)
def test_non_warc_files_raise_input_file_error(tmp_path, content):
    path = tmp_path / "crawl.warc.gz"
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=str(path)):
        read(iter_warc_documents, path)
    with pytest.raises(InputFileError, match=str(path)):
        read(iter_wet_documents, path)
    assert detect_commoncrawl_kind(path) is None


# --- hand-made broken records -------------------------------------------------------------------------------


def warc_record(warc_type: str, uri: str | None, block: bytes, n: int) -> bytes:
    headers = [
        f"WARC-Type: {warc_type}",
        "WARC-Date: 2024-01-02T03:04:05Z",
        f"WARC-Record-ID: <urn:test:{n}>",
    ]
    if uri is not None:
        headers.append(f"WARC-Target-URI: {uri}")
    msgtype = "application/http; msgtype=response" if warc_type in ("response", "revisit") else "text/plain"
    headers += [f"Content-Type: {msgtype}", f"Content-Length: {len(block)}"]
    return ("WARC/1.0\r\n" + "\r\n".join(headers) + "\r\n\r\n").encode() + block + b"\r\n\r\n"


def http(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n").encode() + body


PAGE = "<html><head><title>T</title></head><body><main><p>{}</p></main></body></html>"
GOOD = PAGE.format("A perfectly ordinary paragraph about rivers and bridges.").encode()
LATIN1 = PAGE.format("Le café de la gare ouvre à sept heures, même le dimanche.").encode("latin-1")

BROKEN = [
    # (uri, HTTP block, why it must be skipped or None when it must be kept)
    ("http://ok.example/", http(GOOD, "Content-Type: text/html; charset=utf-8"), None),
    ("http://latin.example/", http(LATIN1, "Content-Type: text/html"), None),
    (
        "http://chunks.example/",
        http(b"zz\r\nnot chunks", "Content-Type: text/html", "Transfer-Encoding: chunked"),
        "bad_chunked_encoding",
    ),
    (
        "http://gzip.example/",
        http(b"not gzip at all", "Content-Type: text/html", "Content-Encoding: gzip"),
        "bad_content_encoding",
    ),
    ("http://png.example/", http(b"\x89PNG\r\n\x1a\n" + bytes(40), "Content-Type: image/png"), "not_html"),
    (
        "http://gone.example/",
        http(b"<html><body>Not here</body></html>", "Content-Type: text/html", status="404 Not Found"),
        "http_status",
    ),
    ("http://blank.example/", http(b"   ", "Content-Type: text/html"), "empty_payload"),
    (
        "http://nomain.example/",
        http(b"<html><body><script>var x = 1;</script></body></html>", "Content-Type: text/html"),
        "empty_text",
    ),
    ("not a url at all", http(GOOD, "Content-Type: text/html"), "bad_target_uri"),
    (None, http(GOOD, "Content-Type: text/html"), "missing_target_uri"),
    ("http://garbled.example/", b"SOMETHING ELSE\r\n\r\n" + GOOD, "not_http_response"),
]


def write_warc(path: Path, records: list[bytes], gzipped: bool) -> None:
    if gzipped:
        path.write_bytes(b"".join(gzip.compress(r, mtime=0) for r in records))
    else:
        path.write_bytes(b"".join(records))


@pytest.mark.parametrize("gzipped", [False, True])
def test_each_broken_record_is_one_counted_skip(tmp_path, gzipped):
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0)]
    records += [warc_record("response", uri, block, i + 1) for i, (uri, block, _) in enumerate(BROKEN)]
    records.append(warc_record("revisit", "http://ok.example/", http(b"", "Content-Type: text/html"), 98))
    # the file ends in the middle of the last record
    records.append(
        warc_record("response", "http://cut.example/", http(GOOD * 20, "Content-Type: text/html"), 99)[:400]
    )
    path = tmp_path / ("broken.warc.gz" if gzipped else "broken.warc")
    write_warc(path, records, gzipped)

    docs, skips = read(iter_warc_documents, path)

    assert [d.url for d in docs] == ["http://ok.example/", "http://latin.example/", "http://cut.example/"]
    assert "rivers and bridges" in docs[0].text
    assert "Le café de la gare ouvre à sept heures, même le dimanche." in docs[1].text
    # the page the file ends in keeps the text it has, flagged
    assert "rivers and bridges" in docs[2].text and json.loads(docs[2].meta)["truncated"] is True
    assert all("truncated" not in json.loads(d.meta) for d in docs[:2])
    expected = {why: 1 for _, _, why in BROKEN if why} | {"revisit": 1, "truncated_record_kept": 1}
    assert dict(skips.counts) == expected
    assert all(example.startswith(f"{path}:") for example in skips.examples.values())


def test_wet_records_with_bad_text_are_skipped(tmp_path):
    records = [
        warc_record("warcinfo", None, b"software: test\r\n", 0),
        warc_record("conversion", "https://fine.example/", "Une page tout à fait lisible.\n".encode(), 1),
        warc_record("conversion", "https://bytes.example/", b"\xff\xfe broken \xc3", 2),
        warc_record("conversion", "https://empty.example/", b"\n\n  \n", 3),
        warc_record("conversion", "<https://wrapped.example/>", b"wget style\n", 4),
        warc_record("conversion", "mailto:someone", b"no web page\n", 5),
    ]
    path = tmp_path / "small.wet"
    write_warc(path, records, gzipped=False)
    assert detect_commoncrawl_kind(path) == "wet"
    docs, skips = read(iter_wet_documents, path)
    assert [(d.url, d.text) for d in docs] == [
        ("https://fine.example/", "Une page tout à fait lisible."),
        ("https://wrapped.example/", "wget style"),
    ]
    assert dict(skips.counts) == {"undecodable_text": 1, "empty_text": 1, "bad_target_uri": 1}
    assert "language" not in json.loads(docs[0].meta)


def test_kind_of_a_file_with_only_warcinfo_comes_from_its_name(tmp_path):
    info = warc_record("warcinfo", None, b"software: test\r\n", 0)
    for name, kind in [("x.wet.gz", "wet"), ("x.warc.gz", "warc"), ("x.warc.wat.gz", None), ("x.bin", None)]:
        write_warc(tmp_path / name, [info], gzipped=True)
        assert detect_commoncrawl_kind(tmp_path / name) == kind


# --- the project's own examples -----------------------------------------------------------------------------


def test_example_wet_has_pages_of_every_quality():
    docs, skips = read(iter_commoncrawl_documents, EXAMPLES / "sample.wet.gz")
    assert skips.total == 0
    assert 15 <= len(docs) <= 30
    langs = [json.loads(d.meta)["language"] for d in docs]
    assert langs.count("eng") >= 5 and langs.count("fra") >= 5
    texts = [d.text for d in docs]
    assert len(set(texts)) == len(texts) - 1  # one exact duplicate (the mirrored soup recipe)
    assert any("cheap flights cheap flights" in t for t in texts)
    assert any("Tout accepter" in t for t in texts)
    assert any(len(t) < 50 for t in texts)
    assert len({d.id for d in docs}) == len(docs)


def test_example_warc_has_html_pages_and_records_to_skip():
    docs, skips = read(iter_commoncrawl_documents, EXAMPLES / "sample.warc.gz")
    assert dict(skips.counts) == {"not_html": 1, "http_status": 1, "revisit": 1}
    assert len(docs) == 4
    village = next(d for d in docs if "saint-aubin" in d.url)
    assert json.loads(village.meta)["charset"] == "cp1252"  # found in <meta>, not in the HTTP header
    assert "Le village de Saint-Aubin-des-Prés apparaît" in village.text
    assert all("Invented page written for" not in d.text for d in docs)  # the footer is not main content


def test_examples_are_reproducible():
    spec = importlib.util.spec_from_file_location("make_examples", EXAMPLES / "make_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build_wet() == (EXAMPLES / "sample.wet.gz").read_bytes()
    assert module.build_warc() == (EXAMPLES / "sample.warc.gz").read_bytes()


@needs_cc
def test_a_wat_file_is_neither_wet_nor_warc():
    path = CC / "whirlwind-python_whirlwind.warc.wat.gz"
    with pytest.raises(InputFileError, match=r"no response or revisit or request records \(found 1 metadata"):
        read(iter_warc_documents, path)
    with pytest.raises(InputFileError, match="no conversion records"):
        read(iter_wet_documents, path)


# --- broken framing in the middle of a file: the records after it are still read ---------------------------


def five_pages() -> list[bytes]:
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0)]
    records += [
        warc_record("response", f"http://p{i}.example/", http(GOOD, "Content-Type: text/html"), i) for i in range(1, 6)
    ]
    return records


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize(
    ("damage", "skipped", "kept"),
    [
        # a line of garbage where the third record should start
        (lambda r: b"@@@@ not a record header\r\n\r\n", {"warc_read_error": 1}, (1, 3, 4, 5)),
        # the record cut inside its headers, running straight into the next record
        (lambda r: r[:150], {"not_http_response": 1, "warc_read_error": 1}, (1, 3, 4, 5)),
        # a Content-Length far past the record's end, and the file's: it runs over every record after it, and ends
        # where the next one starts (its page whole, not flagged); counted as the framing error it is
        (lambda r: r.replace(b"Content-Length: ", b"Content-Length: 9", 1), {"warc_read_error": 1}, (1, 2, 3, 4, 5)),
    ],
    ids=["garbage", "cut_header", "content_length_too_long"],
)
def test_a_broken_record_in_the_middle_costs_only_that_record(tmp_path, gzipped, damage, skipped, kept):
    records = five_pages()
    records[2] = damage(records[2])
    path = tmp_path / ("middle.warc.gz" if gzipped else "middle.warc")
    write_warc(path, records, gzipped)
    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in kept]
    if kept[1] == 2:  # what the record read into (the next records) is not part of its page
        assert docs[1].text == docs[0].text and "truncated" not in json.loads(docs[1].meta)
    assert dict(skips.counts) == skipped
    assert all(example.startswith(f"{path}:") for example in skips.examples.values())
    if "warc_read_error" in skipped:
        assert "reading resumes at offset" in skips.examples["warc_read_error"]


def test_a_whole_file_gzip_warc_is_read_like_a_per_record_one(tmp_path):
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(gzip.compress(b"".join(five_pages()), mtime=0))
    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(1, 6)]
    assert skips.total == 0


# --- a file gzipped whole, damaged or cut short: the records before the damage are kept -----------------------

WORDS = ("river bridge boat stone water bank mill road town field cart horse bell lane wall gate ferry reed willow "
         "heron barge lock weir meadow orchard chapel market baker miller tanner cooper").split()


def varied_text(seed: int, words: int = 700) -> str:
    """Words in an order of their own for each seed, so that gzip cannot fold a file of such pages into a few
    hundred bytes: the file is a few KB, as small WARCs gzipped whole are, all of it in FastWARC's first read."""
    out, x = [], seed
    for _ in range(words):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(f"{WORDS[x % len(WORDS)]}{x % 997}")
    return " ".join(out)


def six_varied_pages() -> list[bytes]:
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0)]
    records += [warc_record("response", f"http://p{i}.example/", http(PAGE.format(varied_text(i)).encode(),
                                                                         "Content-Type: text/html"), i)
                for i in range(1, 7)]
    return records


def gzip_whole(data: bytes, marks: list[int]) -> tuple[bytes, list[int]]:
    """`data` as one gzip stream, flushed whole at each inflated offset in `marks`, and the offset in the file where
    the compressed data after each mark starts: a new deflate block, whose first byte we can damage or cut."""
    deflater = zlib.compressobj(6, zlib.DEFLATED, 31)
    out, at, edges = b"", 0, []
    for mark in marks:
        out += deflater.compress(data[at:mark]) + deflater.flush(zlib.Z_FULL_FLUSH)
        edges.append(len(out))
        at = mark
    return out + deflater.compress(data[at:]) + deflater.flush(), edges


def starts_of(records: list[bytes]) -> list[int]:
    return [sum(map(len, records[:i])) for i in range(len(records))]


# A deflate block's first byte read as "not the last block, of type 3": no such type, zlib stops right there.
BAD_BLOCK = 0b110


@pytest.mark.parametrize("damaged", [2, 4, 6])
def test_a_whole_file_gzip_warc_damaged_early_keeps_every_record_before_the_damage(tmp_path, damaged):
    records = six_varied_pages()
    starts = starts_of(records)
    inside = starts[damaged] + len(records[damaged]) // 2  # the middle of the damaged page's record
    data, [edge] = gzip_whole(b"".join(records), [inside])
    assert len(data) < 16 << 10  # within FastWARC's first read buffer, as it was lost whole
    data = bytearray(data)
    data[edge] = BAD_BLOCK
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(data)

    assert detect_commoncrawl_kind(path) == "warc"
    docs, skips = read(iter_warc_documents, path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i)) for i in range(1, damaged)]
    assert dict(skips.counts) == {"warc_read_error": 1}
    example = skips.examples["warc_read_error"]
    # the damage's offset in the file; the lost record's: its gzip member (the whole file) and where it is inflated
    assert example.startswith(f"{path}:{edge}: the gzip stream does not inflate from here")
    assert f"from the record at {path}:0+{starts[damaged]} on" in example
    assert all(json.loads(d.meta)["offset"] == 0 for d in docs)


def test_a_whole_file_gzip_warc_damaged_in_its_first_record_names_the_file_and_the_offset(tmp_path):
    records = six_varied_pages()
    data, [edge] = gzip_whole(b"".join(records), [40])  # inside the warcinfo record's headers
    data = bytearray(data)
    data[edge] = BAD_BLOCK
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(data)
    with pytest.raises(InputFileError) as err:
        read(iter_warc_documents, path)
    assert str(err.value).startswith(f"{path}:{edge}: the gzip stream is corrupt (")
    assert str(err.value).endswith("), before its first whole record")


@pytest.mark.parametrize(
    ("cut", "kept", "skipped"),
    [
        ("in_page", 4, {"truncated_record_kept": 1}),  # its text up to the cut, flagged
        ("in_headers", 3, {"truncated_gzip": 1}),  # nothing usable left of it
        ("between_records", 3, {"truncated_gzip": 1}),  # no record is cut, but the stream does not end
        ("in_trailer", 6, {"truncated_gzip": 1}),  # every record whole, the gzip stream not
    ],
)
def test_a_whole_file_gzip_warc_cut_short_keeps_its_records_and_counts_the_cut(tmp_path, cut, kept, skipped):
    records = six_varied_pages()
    starts = starts_of(records)
    marks = {"in_page": starts[4] + len(records[4]) // 2, "in_headers": starts[4] + 40, "between_records": starts[4]}
    data, edges = gzip_whole(b"".join(records), [marks.get(cut, starts[4])])
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(data[: len(data) - 4] if cut == "in_trailer" else data[: edges[0]])

    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(1, kept + 1)]
    assert dict(skips.counts) == skipped
    [example] = skips.examples.values()
    if cut == "in_page":
        assert json.loads(docs[-1].meta)["truncated"] is True
        assert varied_text(4).startswith(docs[-1].text[:-20]) and len(docs[-1].text) < len(varied_text(4))
        assert example.startswith(f"{path}:0+{starts[4]}: http://p4.example/: the file ends inside this record's gzip")
    elif cut == "in_headers":
        assert example.startswith(f"{path}:0+{starts[4]}: the file ends inside this record's gzip member")
    else:
        assert example.startswith(f"{path}:{path.stat().st_size}: the file ends inside its gzip stream, after the last")
    assert all("truncated" not in json.loads(d.meta) for d in docs[:3])


def test_a_corrupt_first_gzip_member_costs_only_its_record(tmp_path):
    members = [bytearray(gzip.compress(r, mtime=0)) for r in six_varied_pages()[1:4]]
    members[0][len(members[0]) // 2 : len(members[0]) // 2 + 8] = b"\xff" * 8
    path = tmp_path / "first.warc.gz"
    path.write_bytes(b"".join(members))
    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == ["http://p2.example/", "http://p3.example/"]
    assert dict(skips.counts) == {"warc_read_error": 1}
    assert skips.examples["warc_read_error"].endswith(f"reading resumes at offset {len(members[0])}")


# --- garbage between records: skipped to the next version line, never to one inside a page ---------------------

# What a WARC writer leaves when it dies in the middle of a record and another run appends to the file.
GARBAGE = b"\x00\x17\x8f half a record\r\nWARC/1.0 and more of it, no version line\r\nContent-Length: 12\r\n\r\n"


def page_quoting_a_record() -> bytes:
    """A page about WARC files that shows a record in a <pre>: its block holds a version line at the start of a line,
    then the quoted record's headers and its (escaped) page."""
    quoted = warc_record("response", "http://quoted.example/",
                         http(b"&lt;p&gt;The page of the quoted record&lt;/p&gt;", "Content-Type: text/html"), 77)
    body = PAGE.format("A WARC file is a list of records such as this one:").encode()
    body = body.replace(b"</main>", b"<pre>" + quoted + b"</pre></main>")
    return warc_record("response", "http://quoting.example/", http(body, "Content-Type: text/html"), 2)


def pack(records: list[bytes], packing: str) -> bytes:
    data = b"".join(records)
    return gzip.compress(data, mtime=0) if packing == "whole" else data


def place(path: Path, offset: int, packing: str) -> str:
    """How a skip names an offset: in the file, or in the one gzip stream of a file gzipped whole."""
    return f"{path}:{offset}" if packing == "plain" else f"{path}:0+{offset}"


@pytest.mark.parametrize("eol", ["crlf", "lf"])
@pytest.mark.parametrize("size", [1, 200], ids=["a_few_lines", "over_the_bytes_held"])  # 200 x 16 KB: 3 MiB
@pytest.mark.parametrize("packing", ["plain", "whole"])
def test_garbage_after_a_record_is_skipped_to_the_next_record_and_counted_once(tmp_path, packing, size, eol):
    """Reading resumes at the next version line after the garbage, searched for from the end of the record before it
    (by its Content-Length): the record that page quotes is no record, though its version line starts a line. Before,
    a file gzipped whole lost every record after the garbage, and a plain one gave the quoted page as a document; with
    WARC headers in bare LF, FastWARC's quirks mode read past the garbage without a count."""
    garbage = GARBAGE * size if size == 1 else (GARBAGE + bytes(range(256)) * 64) * size
    records = six_varied_pages()[:2] + [page_quoting_a_record()] + six_varied_pages()[2:]
    if eol == "lf":
        records = [warc_headers_in_bare_lf(r) for r in records]
    records.insert(3, garbage)
    starts = starts_of(records)
    path = tmp_path / ("garbage.warc" if packing == "plain" else "garbage.warc.gz")
    path.write_bytes(pack(records, packing))

    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == ["http://p1.example/", "http://quoting.example/"] + [
        f"http://p{i}.example/" for i in range(2, 7)
    ]
    assert all(d.text == varied_text(i) for d, i in zip(docs[2:], range(2, 7), strict=True))
    assert dict(skips.counts) == {"warc_read_error": 1}
    assert skips.examples["warc_read_error"] == (
        f"{place(path, starts[3], packing)}: {len(garbage)} bytes after the record at {place(path, starts[2], packing)}"
        f" are no WARC record (Invalid WARC header); reading resumes at offset "
        + (f"{starts[4]}" if packing == "plain" else f"0+{starts[4]}")
    )


class SkipsInOrder(SkipCounter):
    """Every skip's reason and place, in order (a `SkipCounter` keeps the first of each reason)."""

    def __init__(self) -> None:
        super().__init__()
        self.places: list[tuple[str, str]] = []

    def skip(self, reason: str, where: str, detail: str = "") -> None:
        self.places.append((reason, where))
        super().skip(reason, where, detail)


def test_garbage_then_a_corrupt_block_in_a_whole_file_gzip_stream_keeps_the_records_between_them(tmp_path):
    """zlib finds the corrupt block when it inflates ahead of FastWARC, before FastWARC meets the garbage."""
    records = six_varied_pages()[:3] + [GARBAGE] + six_varied_pages()[3:]
    starts = starts_of(records)
    data, [edge] = gzip_whole(b"".join(records), [starts[6] + len(records[6]) // 2])
    data = bytearray(data)
    data[edge] = BAD_BLOCK
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(data)
    skips = SkipsInOrder()
    docs = list(iter_warc_documents(path, skips))
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i)) for i in range(1, 5)]
    assert skips.places == [("warc_read_error", f"{path}:0+{starts[3]}"), ("warc_read_error", f"{path}:{edge}")]


@pytest.mark.parametrize("eol", ["crlf", "lf"])
@pytest.mark.parametrize("packing", ["plain", "whole"])
def test_garbage_at_the_end_of_a_file_is_counted_with_its_length(tmp_path, packing, eol):
    """Before, in bare LF, FastWARC's quirks mode ended the file at the garbage without a word."""
    records = [warc_headers_in_bare_lf(r) if eol == "lf" else r for r in six_varied_pages()] + [GARBAGE]
    path = tmp_path / ("end.warc" if packing == "plain" else "end.warc.gz")
    path.write_bytes(pack(records, packing))
    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(1, 7)]
    assert dict(skips.counts) == {"warc_read_error": 1}
    assert skips.examples["warc_read_error"].startswith(
        f"{place(path, starts_of(records)[-1], packing)}: {len(GARBAGE)} bytes after the record at "
    )
    assert "; nothing readable after it" in skips.examples["warc_read_error"]


def test_a_version_line_inside_a_page_is_never_a_record_start(tmp_path):
    """Records are read by their Content-Length: the quoted record is part of its page."""
    path = tmp_path / "quoting.warc.gz"
    path.write_bytes(pack([page_quoting_a_record(), six_varied_pages()[1]], "whole"))
    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == ["http://quoting.example/", "http://p1.example/"] and skips.total == 0


# --- a page damaged inside a gzip stream that zlib finds broken only at its end: its block digest says so ---------


def with_block_digest(record: bytes, algorithm: str = "sha1", encoding: str = "base32") -> bytes:
    """The record with a `WARC-Block-Digest` header for its block, written as `algorithm:` and the digest in
    `encoding` (base32 as most crawlers write it, base16, base64, or base32 in lower case)."""
    blank_line = re.search(rb"\n(\r?\n)", record)  # the end of the WARC headers
    end, eol = blank_line.end(), blank_line.group(1)
    length = int(re.search(rb"Content-Length: (\d+)", record[:end]).group(1))
    digest = hashlib.new(algorithm.replace("-", ""), record[end : end + length]).digest()
    value = {"base32": base64.b32encode(digest), "base32-lower": base64.b32encode(digest).lower(),
             "base16": digest.hex().encode(), "base64": base64.b64encode(digest)}[encoding]
    return record[: end - len(eol)] + b"WARC-Block-Digest: %s:%s" % (algorithm.encode(), value) + eol * 2 + record[end:]


def warc_headers_in_bare_lf(record: bytes) -> bytes:
    """The record with its WARC headers and the newlines that end it in bare LF (ClueWeb, home-made WARCs)."""
    end = record.index(b"\r\n\r\n") + 4
    return record[:end].replace(b"\r\n", b"\n") + record[end:-4] + b"\n\n"


def stored_gzip(data: bytes) -> bytes:
    """`data` as one gzip stream of stored deflate blocks: a byte changed in the file is the same byte changed in what
    it inflates to, which zlib finds only at the stream's end, by its checksum, after every record has been read."""
    deflater = zlib.compressobj(0, zlib.DEFLATED, 31)
    return deflater.compress(data) + deflater.flush()


def damage_a_letter_of(data: bytearray, text: str) -> None:
    at = data.index(text[200:260].encode())
    at += next(i for i, c in enumerate(text[200:260]) if c.isalpha())
    data[at] ^= 0x20  # the same letter in the other case


@pytest.mark.parametrize(
    ("digest", "eol"),
    [
        (("sha1", "base32"), "crlf"),  # Common Crawl, Heritrix, wget, warcio
        (("sha1", "base32"), "lf"),
        (("sha1", "base32-lower"), "crlf"),
        (("sha256", "base16"), "crlf"),
        (("sha-256", "base32"), "crlf"),
        (("sha512", "base64"), "crlf"),
        (("md5", "base16"), "crlf"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, tuple) else v,
)
def test_a_page_damaged_in_a_whole_file_gzip_stream_is_dropped_by_its_block_digest(tmp_path, digest, eol):
    """Before, the damaged page was kept as read; only the checksum error at the stream's end was counted."""
    records = [with_block_digest(r, *digest) for r in six_varied_pages()]
    if eol == "lf":
        records = [warc_headers_in_bare_lf(r) for r in records]
    data = bytearray(stored_gzip(b"".join(records)))
    damage_a_letter_of(data, varied_text(3))
    path = tmp_path / "damaged.warc.gz"
    path.write_bytes(data)

    docs, skips = read(iter_warc_documents, path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i)) for i in (1, 2, 4, 5, 6)]
    assert dict(skips.counts) == {"warc_digest_mismatch": 1, "warc_read_error": 1}
    assert skips.examples["warc_digest_mismatch"].startswith(
        f"{path}:0+{starts_of(records)[3]}: http://p3.example/: its block does not match its WARC-Block-Digest ("
    )
    assert "incorrect data check" in skips.examples["warc_read_error"]


@pytest.mark.parametrize("declared", ["blake3:AAAA", "sha1:not-a-digest", ""], ids=["unknown", "unreadable", "none"])
def test_a_page_whose_block_digest_cannot_be_checked_is_kept_as_read(tmp_path, declared):
    records = six_varied_pages()
    if declared:
        records = [r.replace(b"Content-Length", b"WARC-Block-Digest: %s\r\nContent-Length" % declared.encode(), 1)
                   for r in records]
    data = bytearray(stored_gzip(b"".join(records)))
    damage_a_letter_of(data, varied_text(3))
    path = tmp_path / "damaged.warc.gz"
    path.write_bytes(data)
    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(1, 7)]
    assert docs[2].text != varied_text(3) and dict(skips.counts) == {"warc_read_error": 1}


def test_a_wet_record_damaged_in_a_whole_file_gzip_stream_is_dropped_by_its_block_digest(tmp_path):
    records = [with_block_digest(warc_record("conversion", f"https://t{i}.example/", varied_text(i).encode(), i))
               for i in range(1, 4)]
    data = bytearray(stored_gzip(b"".join(records)))
    damage_a_letter_of(data, varied_text(2))
    path = tmp_path / "damaged.warc.wet.gz"
    path.write_bytes(data)
    docs, skips = read(iter_wet_documents, path)
    assert [d.url for d in docs] == ["https://t1.example/", "https://t3.example/"]
    assert dict(skips.counts) == {"warc_digest_mismatch": 1, "warc_read_error": 1}


@needs_cc
@pytest.mark.parametrize(
    ("name", "reader"),
    [
        ("resiliparse_warcfile.warc.gz", iter_warc_documents),  # Common Crawl
        ("dolma_sample-0000.warc.gz", iter_warc_documents),  # wget
        ("warcio_example-trunc.warc", iter_warc_documents),  # a Content-Length that runs into the next record
        ("whirlwind-python_whirlwind.warc.wet.gz", iter_wet_documents),
    ],
)
def test_real_warcs_gzipped_whole_give_the_documents_they_give_as_they_are(tmp_path, name, reader):
    """Their block digests (sha1, base32) are checked, and no page is dropped by them; the record whose Content-Length
    is off is not judged by its digest (the framing error after it is counted, as in the plain file)."""
    raw = (CC / name).read_bytes()
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(gzip.compress(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, mtime=0))
    docs, skips = read(reader, path)
    expected, expected_skips = read(reader, CC / name)
    assert [(d.url, d.text) for d in docs] == [(d.url, d.text) for d in expected]
    assert dict(skips.counts) == dict(expected_skips.counts)


# --- a file gzipped whole whose first record is too big to tell it from a member per record ---------------------


def big_first_record() -> bytes:
    """A film stored as a `resource` record: 9 MiB, past the 8 MiB inflated to tell a file gzipped whole from gzip
    per record."""
    return warc_record("resource", "http://films.example/river.mp4", b"\x00\x00\x00\x18ftypmp42isom" * (9 << 16), 0)


@pytest.mark.parametrize("damage", ["corrupt_deflate_block", "garbage"])
def test_a_whole_file_gzip_warc_whose_first_record_is_big_is_read_as_one_stream(tmp_path, damage):
    """Before, FastWARC read it: a corrupt block made the file unreadable, and garbage lost every record after it."""
    records = [big_first_record()] + six_varied_pages()[1:]
    if damage == "garbage":
        records.insert(3, GARBAGE)
    starts = starts_of(records)
    data, [edge] = gzip_whole(b"".join(records), [starts[4] + len(records[4]) // 2])
    if damage == "corrupt_deflate_block":
        data = bytearray(data)
        data[edge] = BAD_BLOCK
    path = tmp_path / "big.warc.gz"
    path.write_bytes(data)

    assert detect_commoncrawl_kind(path) == "warc"
    docs, skips = read(iter_warc_documents, path)
    kept = range(1, 4) if damage == "corrupt_deflate_block" else range(1, 7)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i)) for i in kept]
    assert dict(skips.counts) == {"warc_read_error": 1}
    if damage == "garbage":
        assert skips.examples["warc_read_error"].startswith(f"{path}:0+{starts[3]}: {len(GARBAGE)} bytes after")
    else:
        assert skips.examples["warc_read_error"].startswith(f"{path}:{edge}: the gzip stream does not inflate")


@pytest.mark.parametrize("after", [b"", bytes(64), b"@@" + GARBAGE], ids=["nothing", "zero_padding", "garbage"])
def test_a_big_first_record_in_its_own_gzip_member_leaves_the_members_after_it_to_fastwarc(tmp_path, after):
    records = [big_first_record()] + six_varied_pages()[1:]
    members = [gzip.compress(r, mtime=0) for r in records]
    path = tmp_path / "members.warc.gz"
    path.write_bytes(members[0] + after + b"".join(members[1:]))
    assert detect_commoncrawl_kind(path) == "warc"
    docs, skips = read(iter_warc_documents, path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i)) for i in range(1, 7)]
    assert [json.loads(d.meta)["offset"] for d in docs] == [o + len(after) for o in starts_of(members)[1:]]
    if after.startswith(b"@@"):
        assert dict(skips.counts) == {"warc_read_error": 1}
        assert skips.examples["warc_read_error"].startswith(f"{path}:{len(members[0])}: no WARC record here")
    else:
        assert skips.total == 0


# --- languages --------------------------------------------------------------------------------------------


@needs_cc
def test_warc_documents_carry_the_languages_of_common_crawls_metadata_records():
    docs, _ = read(iter_warc_documents, CC / "resiliparse_warcfile.warc.gz")
    languages = {d.url: json.loads(d.meta)["language"] for d in docs}
    assert languages["http://01spb.ru/company/"] == "rus"
    assert languages["http://0900-hovenier.nl/gelderland/oosterbeek/"] == "nld"
    assert languages["http://037426.cn/"] == "eng,zho"  # in CLD2's order
    [page] = read(iter_warc_documents, CC / "whirlwind-python_whirlwind.warc.gz")[0]
    assert json.loads(page.meta)["language"] == "spa"  # as the WET record of the same page says
    # wget's WARC has no metadata records: no language rather than a guess
    wget_docs = read(iter_warc_documents, CC / "dolma_sample-0000.warc.gz")[0]
    assert all("language" not in json.loads(d.meta) for d in wget_docs)


def test_a_language_header_on_the_response_itself_is_kept(tmp_path):
    record = warc_record("response", "http://lang.example/", http(GOOD, "Content-Type: text/html"), 1)
    record = record.replace(b"Content-Type: application/http",
                            b"WARC-Identified-Content-Language: eng\r\nContent-Type: application/http")
    metadata = warc_record("metadata", "http://lang.example/", b"languages-cld2: {\"languages\": []}\r\n", 2)
    path = tmp_path / "lang.warc"
    write_warc(path, [record, metadata], gzipped=False)
    [doc] = read(iter_warc_documents, path)[0]
    assert json.loads(doc.meta)["language"] == "eng"


# --- a Content-Length that runs past its record, over the records after it -----------------------------------


def seven_short_pages(kind: str = "response") -> list[bytes]:
    """A warcinfo and six pages (or WET texts) whose blocks take four digits to write: a Content-Length that runs
    over the records after one of them, or past the end of the file, still takes four, so the records after it lie
    where they lie in the file with the right Content-Length."""
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0)]
    for i in range(1, 7):
        text = varied_text(i, 150)
        block = http(PAGE.format(text).encode(), "Content-Type: text/html") if kind == "response" else text.encode()
        records.append(warc_record(kind, f"http://p{i}.example/", block, i))
    return records


def with_content_length(record: bytes, length: int) -> bytes:
    m = re.search(rb"Content-Length: (\d+)\r?\n", record)
    assert len(m.group(1)) == len(b"%d" % length), "the damage must not move the records after it"
    return record[: m.start(1)] + b"%d" % length + record[m.end(1) :]


def declared_length(record: bytes) -> int:
    return int(re.search(rb"Content-Length: (\d+)\r?\n", record).group(1))


# How the records' WARC headers end their lines: all in CRLF; all in bare LF (ClueWeb09, some wget WARCs: read in
# FastWARC's quirks mode); or CRLF up to the damaged record and bare LF after it (a file two writers wrote).
EOLS = ["crlf", "lf", "lf_after"]


def in_line_endings(records: list[bytes], eol: str, bad: int) -> list[bytes]:
    first_in_lf = {"crlf": len(records), "lf": 0, "lf_after": bad + 1}[eol]
    return records[:first_in_lf] + [warc_headers_in_bare_lf(r) for r in records[first_in_lf:]]


def packed(records: list[bytes], packing: str) -> bytes:
    """Plain, a gzip member per record, or one gzip stream. The members are of stored deflate blocks: their size does
    not depend on the digits of a Content-Length, so the members after the damaged one start where they start in the
    file with the right one, and the documents' offsets can be compared."""
    if packing == "per_record":
        return b"".join(stored_gzip(r) for r in records)
    return gzip.compress(b"".join(records), mtime=0) if packing == "whole" else b"".join(records)


def place_in(path: Path, records: list[bytes], i: int, packing: str) -> str:
    """How a skip names where record `i` starts: in the file, at its gzip member, or inside the one gzip stream."""
    if packing == "per_record":
        return f"{path}:{sum(len(stored_gzip(r)) for r in records[:i])}"
    start = sum(map(len, records[:i]))
    return f"{path}:0+{start}" if packing == "whole" and start else f"{path}:{start}"


def comparable_docs(path: Path, reader=iter_warc_documents) -> tuple[list[tuple], SkipCounter]:
    docs, skips = read(reader, path)
    return [(d.id, d.url, d.text, d.timestamp, json.loads(d.meta)) for d in docs], skips


# The damaged record, and how many of the records after it its Content-Length runs over (None: past the file's end).
SWALLOWS = {"one": (2, 1), "several": (2, 3), "past_the_end": (4, None)}


@pytest.mark.parametrize("eol", EOLS)
@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
@pytest.mark.parametrize("swallows", list(SWALLOWS))
@pytest.mark.parametrize("limit", ["real", "below_its_content_length"])
def test_a_content_length_past_its_record_costs_none_of_the_records_it_runs_over(tmp_path, monkeypatch, packing,
                                                                                 swallows, eol, limit):
    """The record ends where the next record's version line begins, and every record after it reads as in the file
    with the right Content-Length: same ids, texts and meta. The damaged page keeps its text, whole (the two newlines
    that end a record come before the next one), and is counted once, as the framing error it is. Before, a file
    gzipped whole lost the records a Content-Length ran over up to its end, and on every path the page took in the
    text of the records it ran over. With WARC headers in bare LF, FastWARC's quirks mode read on to the next version
    line it found: the records run over were lost without a count (and with CRLF before them, every one in bare LF).
    A Content-Length past `MAX_PAYLOAD` (lowered here below it, above every page) is read the same: its page is
    within the limit, where the next record starts."""
    bad, over = SWALLOWS[swallows]
    records = in_line_endings(seven_short_pages(), eol, bad)
    # 10 bytes into the record after the last one it runs over: FastWARC finds no record where it says it ends
    length = declared_length(records[bad]) + sum(map(len, records[bad + 1 : bad + 1 + over])) + 10 if over else 9999
    assert over or sum(map(len, records[bad:])) < length
    if limit == "below_its_content_length":
        ceiling = max(map(declared_length, records))  # every page is shorter than its block
        assert length - len(http(b"", "Content-Type: text/html")) > ceiling
        monkeypatch.setattr("tasks.commoncrawl.MAX_PAYLOAD", ceiling)
    damaged = records[:bad] + [with_content_length(records[bad], length)] + records[bad + 1 :]
    good_path, path = tmp_path / "good.warc.gz", tmp_path / "damaged.warc.gz"
    good_path.write_bytes(packed(records, packing))
    path.write_bytes(packed(damaged, packing))

    expected, _ = comparable_docs(good_path)
    docs, skips = comparable_docs(path)
    assert [d[1] for d in docs] == [f"http://p{i}.example/" for i in range(1, 7)]
    for doc, right in zip(docs, expected, strict=True):
        if doc[1] == f"http://p{bad}.example/":  # its meta keeps the Content-Length its header says
            assert doc[4]["content_length"] == length
            doc[4]["content_length"] = right[4]["content_length"]
        assert doc == right
    assert dict(skips.counts) == {"warc_read_error": 1}
    example = skips.examples["warc_read_error"]
    assert example.startswith(place_in(path, damaged, bad, packing) + ": ")
    resumed = place_in(path, damaged, bad + 1, packing).split(":", 1)[1]
    assert example.endswith(f"reading resumes at offset {resumed}")


@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
@pytest.mark.parametrize("delta", [-40, 40], ids=["content_length_short", "content_length_long"])
def test_a_content_length_off_by_a_little_reads_the_same_in_bare_lf_as_in_crlf(tmp_path, packing, delta):
    """ClueWeb09's WARC headers end in bare LF, read in FastWARC's quirks mode, which read on to the next version line
    it found without a word: 40 bytes short, the framing error went uncounted; 40 bytes long, the next record was lost
    uncounted, its start taken into the page. Now the same pages come out as from the same records in CRLF, and the
    one framing error is counted there and here alike."""
    bad = 2
    results = {}
    for eol in ("crlf", "lf"):
        records = in_line_endings(seven_short_pages(), eol, bad)
        records[bad] = with_content_length(records[bad], declared_length(records[bad]) + delta)
        path = tmp_path / f"{eol}.warc.gz"
        path.write_bytes(packed(records, packing))
        docs, skips = comparable_docs(path)
        for doc in docs:
            del doc[4]["offset"]  # records in bare LF are shorter
        results[eol] = docs, dict(skips.counts), skips.examples["warc_read_error"]
        assert skips.examples["warc_read_error"].startswith(place_in(path, records, bad, packing) + ": ")
    assert [d[1] for d in results["lf"][0]] == [f"http://p{i}.example/" for i in range(1, 7)]
    assert results["lf"][:2] == results["crlf"][:2] and results["lf"][1] == {"warc_read_error": 1}


@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
@pytest.mark.parametrize("damaged", ["the_page_before", "the_quoting_page"])
def test_a_record_quoted_in_a_page_is_never_read_as_a_record_whatever_content_length_runs_over_it(
    tmp_path, packing, damaged
):
    """A page quotes a record in a <pre>, inside a line. When the Content-Length of the page before it runs over it,
    reading resumes where the page starts, not at the version line it quotes. When its own Content-Length runs over the
    record after it, it ends where that record starts, after the two newlines that end a record: the record it quotes
    is followed by the rest of the page, not by a record. Before, the quoted record was read as a record there."""
    records = seven_short_pages()
    records.insert(3, page_quoting_a_record())
    records.insert(4, warc_record("metadata", "http://quoting.example/", b"fetchTimeMs: 12\r\n", 8))
    bad = 2 if damaged == "the_page_before" else 3
    length = declared_length(records[bad]) + len(records[bad + 1]) + 10
    damaged_records = records[:bad] + [with_content_length(records[bad], length)] + records[bad + 1 :]
    good_path, path = tmp_path / "good.warc.gz", tmp_path / "damaged.warc.gz"
    good_path.write_bytes(packed(records, packing))
    path.write_bytes(packed(damaged_records, packing))
    expected, _ = comparable_docs(good_path)
    docs, skips = comparable_docs(path)
    assert [d[1] for d in docs] == ["http://p1.example/", "http://p2.example/", "http://quoting.example/"] + [
        f"http://p{i}.example/" for i in range(3, 7)
    ]
    assert [d[:4] for d in docs] == [d[:4] for d in expected]
    assert all("truncated" not in d[4] for d in docs)
    assert dict(skips.counts) == {"warc_read_error": 1}


@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
@pytest.mark.parametrize("swallows", ["one", "past_the_end"])
def test_a_wet_record_whose_content_length_runs_over_the_next_keeps_its_own_text_only(tmp_path, packing, swallows):
    records = seven_short_pages("conversion")
    bad, over = SWALLOWS[swallows]
    length = declared_length(records[bad]) + sum(map(len, records[bad + 1 : bad + 1 + over])) + 10 if over else 9999
    damaged = records[:bad] + [with_content_length(records[bad], length)] + records[bad + 1 :]
    path = tmp_path / "damaged.wet.gz"
    path.write_bytes(packed(damaged, packing))
    docs, skips = read(iter_wet_documents, path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i, 150)) for i in range(1, 7)]
    assert all("truncated" not in json.loads(d.meta) for d in docs)
    assert dict(skips.counts) == {"warc_read_error": 1}


@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
def test_a_record_cut_short_that_runs_straight_into_the_next_keeps_its_text_flagged(tmp_path, packing):
    """A writer that died inside a page, and another run that appended to the file: the next record's version line
    comes inside a line of the page. The page ends there, flagged as cut short, counted once (the framing error)."""
    records = seven_short_pages()
    cut = records[2][: len(records[2]) * 2 // 3]  # inside its HTML, no newline before what follows
    damaged = records[:2] + [cut] + records[3:]
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(packed(damaged, packing))
    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == [f"http://p{i}.example/" for i in range(1, 7)]
    page = docs[1]
    assert json.loads(page.meta)["truncated"] is True and "WARC" not in page.text
    assert varied_text(2, 150).startswith(page.text[:-20]) and len(page.text) < len(varied_text(2, 150))
    assert all("truncated" not in json.loads(d.meta) for d in docs if d is not page)
    assert [d.text for d in docs[2:]] == [varied_text(i, 150) for i in range(3, 7)]
    assert dict(skips.counts) == {"warc_read_error": 1}


# --- a gzip member whose checksum fails: it inflates whole, but a byte of it may be wrong --------------------------


def member_with_a_bad_checksum(record: bytes, checksum: str) -> bytes:
    """The record's gzip member with its CRC32 (over what it inflates to) or its ISIZE (how long that is) off by one
    bit: zlib inflates it to its end, and fails only at its last bytes."""
    member = bytearray(gzip.compress(record, mtime=0))
    member[-8 if checksum == "crc32" else -4] ^= 0x01
    return bytes(member)


@pytest.mark.parametrize("checksum", ["crc32", "isize"])
@pytest.mark.parametrize("words", [150, 30000], ids=["small", "past_fastwarcs_read"])  # 30000: an 80 KB member
@pytest.mark.parametrize("damaged", [2, 6], ids=["middle", "last"])
def test_a_gzip_member_whose_checksum_fails_keeps_its_page_marked_and_is_counted_once(tmp_path, checksum, words,
                                                                                        damaged):
    """The page inflates whole: it is kept, marked `gzip_checksum_failed` in its meta; the member is counted once,
    where zlib finds it broken. Before, a small member was counted twice (FastWARC's error after the record before
    it, then the member inflated again), and a member past FastWARC's 64 KiB read was counted as `unreadable_record`
    and then broke the whole file with an OSError."""
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0)]
    records += [warc_record("response", f"http://p{i}.example/",
                            http(PAGE.format(varied_text(i, words)).encode(), "Content-Type: text/html"), i)
                for i in range(1, 7)]
    members = [gzip.compress(r, mtime=0) for r in records]
    members[damaged] = member_with_a_bad_checksum(records[damaged], checksum)
    path = tmp_path / "checksum.warc.gz"
    path.write_bytes(b"".join(members))

    docs, skips = read(iter_warc_documents, path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i, words)) for i in range(1, 7)]
    assert [json.loads(d.meta).get("gzip_checksum_failed", False) for d in docs] == [i == damaged for i in range(1, 7)]
    assert all("truncated" not in json.loads(d.meta) for d in docs)
    assert dict(skips.counts) == {"warc_read_error": 1}
    where, detail = skips.examples["warc_read_error"].split(": ", 1)
    end = sum(map(len, members[: damaged + 1]))
    assert where.startswith(f"{path}:") and end - 8 <= int(where.rsplit(":", 1)[1]) < end  # in the member's trailer
    assert ("incorrect data check" if checksum == "crc32" else "incorrect length check") in detail


def test_a_page_whose_member_checksum_fails_and_whose_block_digest_disagrees_is_dropped_and_counted_once(tmp_path):
    """A letter changed inside a member of stored deflate blocks: the member inflates, its CRC32 fails, and the page's
    `WARC-Block-Digest` says which page it is. The page is dropped; the member's damage is its one count."""
    records = [with_block_digest(r) for r in six_varied_pages()]
    members = [bytearray(stored_gzip(r)) for r in records]
    damage_a_letter_of(members[3], varied_text(3))
    path = tmp_path / "damaged.warc.gz"
    path.write_bytes(b"".join(members))
    docs, skips = read(iter_warc_documents, path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i)) for i in (1, 2, 4, 5, 6)]
    assert all("gzip_checksum_failed" not in json.loads(d.meta) for d in docs)
    assert dict(skips.counts) == {"warc_read_error": 1}
    assert "incorrect data check" in skips.examples["warc_read_error"]


@pytest.mark.parametrize("before", ["nothing", "a_corrupt_member"])
def test_a_big_gzip_member_whose_checksum_fails_keeps_its_mark_where_reading_starts_at_it(tmp_path, before):
    """Where a round of reading starts at the member (the file's first, or the one after a corrupt member), the member
    is inflated by us, not by FastWARC. Before, a page past the 1 MiB of it held lost its `gzip_checksum_failed`."""
    big = warc_record("response", "http://big.example/",
                      http(PAGE.format(varied_text(7, 200_000)).encode(), "Content-Type: text/html"), 7)
    members = [member_with_a_bad_checksum(big, "crc32")] + [gzip.compress(r, mtime=0) for r in six_varied_pages()[1:4]]
    if before == "a_corrupt_member":
        corrupt = bytearray(gzip.compress(six_varied_pages()[4], mtime=0))
        corrupt[len(corrupt) // 2 : len(corrupt) // 2 + 8] = b"\xff" * 8
        members.insert(0, bytes(corrupt))
    path = tmp_path / "big.warc.gz"
    path.write_bytes(b"".join(members))
    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == ["http://big.example/", "http://p1.example/", "http://p2.example/",
                                     "http://p3.example/"]
    assert docs[0].text == varied_text(7, 200_000) and len(big) > 1 << 20
    assert [json.loads(d.meta).get("gzip_checksum_failed", False) for d in docs] == [True, False, False, False]
    assert dict(skips.counts) == {"warc_read_error": 1 if before == "nothing" else 2}


def test_a_gzip_member_whose_checksum_fails_is_inflated_again_in_bounded_memory(tmp_path, monkeypatch):
    """Its page is inflated again by zlib, in chunks, and only the payload is held; past `MAX_PAYLOAD` (here lowered to
    1 MiB, from 32 MiB) it is not read at all, and the record is counted. Before, the whole member was held, and a copy
    of the payload besides (here 2 x 24 MiB)."""
    monkeypatch.setattr("tasks.commoncrawl.MAX_PAYLOAD", 1 << 20)
    body = b"<html><body><main><p>" + b"a page of one word " * ((24 << 20) // 19) + b"</p></main></body></html>"
    huge = warc_record("response", "http://huge.example/", http(body, "Content-Type: text/html"), 9)
    member = bytearray(gzip.compress(huge, compresslevel=1, mtime=0))
    member[-8] ^= 0x01  # its CRC32
    pages = [gzip.compress(r, mtime=0) for r in six_varied_pages()[1:4]]
    path = tmp_path / "huge.warc.gz"
    path.write_bytes(pages[0] + member + b"".join(pages[1:]))
    docs, skips, peak = read_with_peak(path)
    assert [d.url for d in docs] == ["http://p1.example/", "http://p2.example/", "http://p3.example/"]
    assert dict(skips.counts) == {"payload_too_large": 1, "warc_read_error": 1}
    assert skips.examples["payload_too_large"].startswith(f"{path}:{len(pages[0])}: http://huge.example/: ")
    assert "incorrect data check" in skips.examples["warc_read_error"]
    assert len(body) > 24 << 20 and peak < 8 << 20


# --- a record whose payload is past `MAX_PAYLOAD`: skipped unread, on every path ---------------------------------


def test_the_payload_limit_is_the_32_mib_the_docs_say():
    assert commoncrawl.MAX_PAYLOAD == 32 << 20
    assert "`MAX_PAYLOAD` (32 MiB" in commoncrawl.__doc__


def a_huge_page(n: int) -> bytes:
    """A response whose payload is a page of some 24 MiB (of one word, so that gzip folds it into a few KB)."""
    body = b"<html><body><main><p>" + b"a page of one word " * ((24 << 20) // 19) + b"</p></main></body></html>"
    return warc_record("response", "http://huge.example/", http(body, "Content-Type: text/html"), n)


@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
def test_a_record_past_the_payload_limit_is_skipped_unread_and_the_records_after_it_are_read(tmp_path, monkeypatch,
                                                                                               packing):
    """A 24 MiB page between two good ones, past `MAX_PAYLOAD` (here lowered to 1 MiB, from 32 MiB): it is counted as
    `payload_too_large` with its place, its reader drained in chunks without holding it, and the page after it is read.
    Before, only a page inflated again from a gzip member whose checksum fails was bounded: FastWARC's own read held
    the whole payload (a 2 GB record, or a Content-Length that says so, 2 GB of memory) and kept the page."""
    monkeypatch.setattr("tasks.commoncrawl.MAX_PAYLOAD", 1 << 20)
    pages = seven_short_pages()
    records = [pages[0], pages[1], a_huge_page(9), pages[2]]
    members = [gzip.compress(r, compresslevel=1, mtime=0) for r in records]  # `packed` would store 24 MiB
    path = tmp_path / "huge.warc.gz"
    path.write_bytes(b"".join(members) if packing == "per_record" else packed(records, packing))
    docs, skips, peak = read_with_peak(path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i, 150)) for i in (1, 2)]
    assert dict(skips.counts) == {"payload_too_large": 1}
    where = place_in(path, records, 2, packing) if packing != "per_record" else f"{path}:{len(b''.join(members[:2]))}"
    assert skips.examples["payload_too_large"].startswith(f"{where}: http://huge.example/: ")
    assert len(records[2]) > 24 << 20 and peak < 8 << 20


@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
def test_a_big_page_whose_content_length_runs_past_the_limit_and_the_file_is_read_again_up_to_the_next_record(
    tmp_path, monkeypatch, packing
):
    """A 3 MiB page whose Content-Length (9999999) runs past the end of the file, over the pages after it, and past
    `MAX_PAYLOAD` (here 4 MiB): the next record starts within the limit, so the page ends there, whole, and is read
    again from the file, its gzip member, or (no longer held: past the 1 MiB a stream we inflate holds) its gzip
    stream inflated again; the pages after it are read, and the framing error is counted once, as with a short
    Content-Length."""
    monkeypatch.setattr("tasks.commoncrawl.MAX_PAYLOAD", 4 << 20)
    pages = seven_short_pages()
    big = warc_record("response", "http://big.example/",
                      http(PAGE.format(varied_text(9, 400_000)).encode(), "Content-Type: text/html"), 9)
    records = [*pages[:2], big, *pages[2:4]]
    damaged = [*pages[:2], with_content_length(big, 9_999_999), *pages[2:4]]
    assert 3 << 20 < declared_length(big) < 4 << 20 and sum(map(len, damaged[2:])) < 9_999_999
    good_path, path = tmp_path / "good.warc.gz", tmp_path / "damaged.warc.gz"
    good_path.write_bytes(packed(records, packing))
    path.write_bytes(packed(damaged, packing))
    expected, _ = comparable_docs(good_path)
    docs, skips = comparable_docs(path)
    assert [d[1] for d in docs] == ["http://p1.example/", "http://big.example/", "http://p2.example/",
                                    "http://p3.example/"]
    assert [d[:4] for d in docs] == [d[:4] for d in expected]
    assert all("truncated" not in d[4] for d in docs)
    assert dict(skips.counts) == {"warc_read_error": 1}


def test_a_wet_record_past_the_payload_limit_is_skipped_unread(tmp_path, monkeypatch):
    monkeypatch.setattr("tasks.commoncrawl.MAX_PAYLOAD", 4 << 10)
    records = seven_short_pages("conversion")[:4]
    records[2] = warc_record("conversion", "http://huge.example/", b"a text of one word " * 1000, 9)
    path = tmp_path / "huge.wet"
    path.write_bytes(b"".join(records))
    docs, skips = read(iter_wet_documents, path)
    assert [d.url for d in docs] == ["http://p1.example/", "http://p3.example/"]
    assert dict(skips.counts) == {"payload_too_large": 1}
    assert skips.examples["payload_too_large"].startswith(f"{path}:{starts_of(records)[2]}: http://huge.example/: ")


# --- an HTTP body that decodes past `MAX_DECODED_BODY`: stopped there, whatever its Content-Encoding -----------


def content_encoded(parts: Iterable[bytes], encoding: str) -> bytes:
    """A body as its Content-Encoding says, compressed a part at a time: a bomb of zeros is never held whole by the
    test either."""
    if encoding == "gzip":
        deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(map(deflater.compress, parts)) + deflater.flush()
    out = io.BytesIO()
    writer = {"br": BrotliWriter, "zstd": ZstdWriter}[encoding](out)
    for part in parts:
        writer.write(part)
    writer.close()
    return out.getvalue()


def a_bomb(n: int, mib: int, encoding: str) -> bytes:
    """A response whose body, `mib` MiB of zeros, is stored in a thousandth of that (gzip: 1 KB a MiB; zstd: some
    30 bytes; Brotli: under 2)."""
    body = content_encoded((bytes(1 << 20) for _ in range(mib)), encoding)
    return warc_record("response", "http://bomb.example/",
                       http(body, "Content-Type: text/html", f"Content-Encoding: {encoding}"), n)


@pytest.mark.parametrize("encoding", ["br", "zstd"])
def test_a_brotli_or_zstd_body_that_decodes_past_the_real_limit_is_stopped_there(tmp_path, encoding):
    """The real `MAX_DECODED_BODY` (32 MiB): a body of 128 MiB of zeros, stored in a few KB, is counted where it is
    and decoded no further than the limit; the pages around it are read. Before, it was decoded whole (here 128 MiB
    held; a hostile record of a few KB could take gigabytes)."""
    assert commoncrawl.MAX_DECODED_BODY == 32 << 20
    pages = seven_short_pages()
    records = [*pages[:2], a_bomb(9, 128, encoding), pages[2]]
    path = tmp_path / "bomb.warc"
    path.write_bytes(b"".join(records))
    docs, skips, peak = read_with_peak(path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i, 150)) for i in (1, 2)]
    assert dict(skips.counts) == {"bad_content_encoding": 1}
    assert skips.examples["bad_content_encoding"] == (
        f"{path}:{starts_of(records)[2]}: http://bomb.example/: {encoding}: decoded body larger than 32 MiB"
    )
    assert len(records[2]) < (128 << 20) // 1000 and peak < 40 << 20


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd"])
def test_a_body_of_exactly_the_limit_is_kept_and_one_byte_more_is_not(tmp_path, monkeypatch, encoding):
    """The same bound for every encoding (`MAX_DECODED_BODY` lowered to 1 MiB, from 32 MiB)."""
    monkeypatch.setattr("tasks.commoncrawl.MAX_DECODED_BODY", 1 << 20)
    head, tail = b"<html><body><main><p>", b"</p></main></body></html>"
    fill = (b"a page of one word " * (1 << 16))[: (1 << 20) - len(head) - len(tail)]
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0)]
    for i, extra in enumerate((b"", b"!"), 1):
        body = content_encoded([head, fill, extra, tail], encoding)
        block = http(body, "Content-Type: text/html", f"Content-Encoding: {encoding}")
        records.append(warc_record("response", f"http://p{i}.example/", block, i))
    path = tmp_path / "limit.warc"
    path.write_bytes(b"".join(records))
    docs, skips = read(iter_warc_documents, path)
    assert [(d.url, len(d.text)) for d in docs] == [("http://p1.example/", len(fill.strip()))]
    assert dict(skips.counts) == {"bad_content_encoding": 1}
    assert skips.examples["bad_content_encoding"].endswith(f"http://p2.example/: {encoding}: decoded body larger "
                                                           "than 1 MiB")


@pytest.mark.parametrize(("encoding", "after"), [("br", b""), ("zstd", b""), ("br", b"\r\n")],
                         ids=["br", "zstd", "br_then_crlf"])
def test_brotli_and_zstd_pages_read_their_text(tmp_path, encoding, after):
    """A short page and one of 3 MiB (decoded in several reads); bytes after a Brotli stream are no part of it, as
    FastWARC reads it whole: decoding ends with the stream, as before, instead of failing on them."""
    texts = [varied_text(1, 150), varied_text(2, 400_000)]
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0)]
    for i, text in enumerate(texts, 1):
        body = content_encoded([PAGE.format(text).encode()], encoding) + after
        block = http(body, "Content-Type: text/html", f"Content-Encoding: {encoding}")
        records.append(warc_record("response", f"http://p{i}.example/", block, i))
    path = tmp_path / "pages.warc"
    path.write_bytes(b"".join(records))
    docs, skips = read(iter_warc_documents, path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", t) for i, t in enumerate(texts, 1)]
    assert len(texts[1]) > 3 << 20 and skips.total == 0


# --- WARC headers in bare LF, and records that no reader counted ----------------------------------------------


@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
def test_records_in_bare_lf_after_records_in_crlf_are_all_read(tmp_path, packing):
    """A file two writers wrote (one run appended to another's): strict mode read a record in bare LF as one garbled
    header, and lost it (then counted the framing error after it). It is read again in quirks mode."""
    records = in_line_endings(seven_short_pages(), "lf_after", 2)
    path = tmp_path / "two_writers.warc.gz"
    path.write_bytes(packed(records, packing))
    docs, skips = read(iter_warc_documents, path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", varied_text(i, 150)) for i in range(1, 7)]
    assert [json.loads(d.meta)["offset"] for d in docs] == [int(place_in(path, records, i, packing).rsplit(":", 1)[1]
                                                            .split("+")[0]) for i in range(1, 7)]
    assert skips.total == 0


# A text about WARC files, with a version line of its own after a blank line, then no header field.
QUOTES_A_VERSION_LINE = "Web archives keep pages in one format:\n\nWARC/1.0\nis its version line, then its fields.\n"


@pytest.mark.parametrize("eol", ["crlf", "lf"])
@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
def test_a_version_line_a_text_quotes_after_a_blank_line_is_no_record_start(tmp_path, packing, eol):
    """The text's Content-Length runs over the record after it: it ends where the next record starts, which is where
    a version line is followed by WARC header fields (WARC-Type, WARC-Record-ID…), not by prose. Before, the text was
    cut at the line it quotes, without a mark, in a plain file or a gzip stream."""
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0)]
    texts = [varied_text(i, 150) + ("\n\n" + QUOTES_A_VERSION_LINE + varied_text(9, 40) if i == 2 else "")
             for i in range(1, 5)]
    records += [warc_record("conversion", f"http://p{i}.example/", t.encode(), i) for i, t in enumerate(texts, 1)]
    bad = 2
    records = in_line_endings(records, eol, bad)
    records[bad] = with_content_length(records[bad], declared_length(records[bad]) + len(records[bad + 1]) + 10)
    path = tmp_path / "quotes.wet.gz"
    path.write_bytes(packed(records, packing))
    docs, skips = read(iter_wet_documents, path)
    assert [(d.url, d.text) for d in docs] == [(f"http://p{i}.example/", t.strip()) for i, t in enumerate(texts, 1)]
    assert all("truncated" not in json.loads(d.meta) for d in docs)
    assert dict(skips.counts) == {"warc_read_error": 1}


@pytest.mark.parametrize("eol", ["crlf", "lf"])
@pytest.mark.parametrize("packing", ["plain", "per_record", "whole"])
@pytest.mark.parametrize("cut", [10, 30, 150], ids=["after_its_version_line", "in_its_warc_type", "before_its_length"])
def test_a_file_that_ends_inside_a_records_warc_headers_counts_it_as_cut(tmp_path, packing, eol, cut):
    """A writer that died in a record's headers, its member or file closed: FastWARC gives the record as it stands.
    Before, it was counted for what it lacked (no target URI, no HTTP status line) or, cut before its WARC-Type, not
    at all."""
    records = [warc_headers_in_bare_lf(r) if eol == "lf" else r for r in seven_short_pages()[:4]]
    records[-1] = records[-1][:cut]
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(packed(records, packing))
    docs, skips = read(iter_warc_documents, path)
    assert [d.url for d in docs] == ["http://p1.example/", "http://p2.example/"]
    assert dict(skips.counts) == {"truncated_record": 1}
    assert skips.examples["truncated_record"] == (
        f"{place_in(path, records, 3, packing)}: the file ends inside this record's WARC headers"
    )


@pytest.mark.parametrize("reader", [iter_warc_documents, iter_wet_documents], ids=["warc", "wet"])
def test_a_record_of_a_type_warc_does_not_know_is_counted(tmp_path, reader):
    """A misspelt WARC-Type may hide a page: before, it was passed over like a request or a metadata record."""
    kind = "response" if reader is iter_warc_documents else "conversion"
    records = seven_short_pages(kind)[:4]
    records[2] = records[2].replace(f"WARC-Type: {kind}".encode(), f"WARC-Type: {kind}s".encode())
    path = tmp_path / "typo.warc"
    path.write_bytes(b"".join(records))
    docs, skips = read(reader, path)
    assert [d.url for d in docs] == ["http://p1.example/", "http://p3.example/"]
    assert dict(skips.counts) == {"unknown_record_type": 1}
    assert skips.examples["unknown_record_type"] == f"{path}:{starts_of(records)[2]}: WARC-Type '{kind}s'"
