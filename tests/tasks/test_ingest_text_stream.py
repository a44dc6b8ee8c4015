"""The plain-text reader of ingest reads a file a few MiB at a time: for any input it gives what reading the whole
file at once gave (the same documents, ids, urls, skips and errors, to the line, byte and character), whatever the
chunk size, and splitting by paragraph or line holds one piece in memory, not the file."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.ingest import InputFile, iter_text_documents
from tasks.params import IngestParams
from tasks.records import Document, InputFileError, SkipCounter, stable_id

ROOT = Path(__file__).resolve().parents[2]
SPLITS = ("file", "paragraph", "line")
CHUNKS = (1, 2, 3, 4, 5, 6, 7, 64, None)  # None: the module's default chunk size


# --- the reader as it was before streaming (reads the whole file), kept as the reference -----------------------

_UTF16_32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def _old_decode_text_file(path: Path, data: bytes) -> str:
    if data.startswith(_UTF16_32_BOMS[:2]):
        encoding = "utf-32"
    elif data.startswith(_UTF16_32_BOMS[2:]):
        encoding = "utf-16"
    else:
        encoding, data = "utf-8", data.removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        if encoding != "utf-8":
            raise InputFileError(f"{path}: not {encoding.upper()} text after its byte-order mark ({e.reason})") from e
        line = data[: e.start].count(b"\n") + 1
        raise InputFileError(f"{path}:{line}: not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})") from e
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise InputFileError(f"{path}:{line}: a NUL character (character {nul}): binary data, or UTF-16 text "
                             "without a byte-order mark, not a text file")
    return text


def _old_iter_text_documents(f: InputFile, params: IngestParams, skips: SkipCounter):
    path = Path(f.path)
    text = _old_decode_text_file(path, path.read_bytes())
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if params.text_split == "file":
        pieces = [text]
    elif params.text_split == "paragraph":
        pieces = [p for p in text.split("\n\n")]
    else:
        pieces = text.split("\n")
    if not text.strip():
        skips.skip("no_records", str(path), "an empty file" if not text else "only whitespace")
    for i, piece in enumerate(pieces):
        if not piece.strip():
            continue
        yield Document(
            id=stable_id(f.source, f.sha256, str(i)),
            text=piece,
            source=f.source,
            url=f"file://{Path(f.path).name}#{i}" if len(pieces) > 1 else f"file://{Path(f.path).name}",
            meta=json.dumps({"file": Path(f.path).name, "piece": i}),
        )


def _cut(piece: str, max_chars: int) -> list[str]:
    """The documented cut of a piece longer than `max_chars`: each part ends after the last paragraph break within
    `max_chars` characters, else the last line break, else the last space, else after `max_chars` characters."""
    parts = []
    while len(piece) > max_chars:
        window = piece[:max_chars]
        end = next((window.rindex(sep) + len(sep) for sep in ("\n\n", "\n", " ") if sep in window), max_chars)
        parts.append(piece[:end])
        piece = piece[end:]
    return [*parts, piece]


def _old_iter_cut_documents(f: InputFile, params: IngestParams, skips: SkipCounter, _max_chars: int):
    """The reference's documents, each one longer than `_max_chars` replaced by the non-blank parts of its `_cut`,
    numbered <piece>.<part> in id and url, with `part` in meta; counted once per piece, once the file has decoded."""
    name = Path(f.path).name
    for doc in list(_old_iter_text_documents(f, params, skips)):
        if len(doc.text) <= _max_chars:
            yield doc
            continue
        piece = json.loads(doc.meta)["piece"]
        kept = [(k, part) for k, part in enumerate(_cut(doc.text, _max_chars)) if part.strip()]
        for k, part in kept:
            yield Document(id=stable_id(f.source, f.sha256, f"{piece}.{k}"), text=part, source=f.source,
                           url=f"file://{name}#{piece}.{k}", meta=json.dumps({"file": name, "piece": piece, "part": k}))
        skips.skip("too_long_split_kept", f.path if params.text_split == "file" else f"{f.path}#{piece}",
                   f"{len(doc.text):,} characters, more than the {_max_chars:,} a document may hold: kept as "
                   f"{len(kept)} documents cut at paragraph or line breaks")


# --- comparing the two ---------------------------------------------------------------------------------------


def _outcome(reader, path: Path, split: str, **kw):
    """What a reader gives for a file: its documents, or the error with the documents given before it, and the
    skips (counts and examples)."""
    f = InputFile(path=str(path), kind="text", source="text", sha256="0" * 64)
    skips = SkipCounter()
    docs, error = [], None
    try:
        for doc in reader(f, IngestParams(text_split=split), skips, **kw):
            docs.append(doc.as_row())
    except InputFileError as e:
        error = str(e)
    return docs, error, dict(skips.counts), dict(skips.examples)


def _assert_same(path: Path, data: bytes, splits=SPLITS, chunks=CHUNKS, max_chars: int | None = None) -> None:
    """The streaming reader gives what the reference gives; with `max_chars`, the reference cut as documented."""
    path.write_bytes(data)
    cap = {} if max_chars is None else {"_max_chars": max_chars}
    reference = _old_iter_text_documents if max_chars is None else _old_iter_cut_documents
    for split in splits:
        want_docs, want_error, *want_skips = _outcome(reference, path, split, **cap)
        for chunk in chunks:
            kw = cap if chunk is None else {"_chunk_bytes": chunk, **cap}
            docs, error, *skips = _outcome(iter_text_documents, path, split, **kw)
            where = f"{data!r} split={split} chunk={chunk} max_chars={max_chars}"
            assert error == want_error, where
            assert skips == want_skips, where
            if want_error is None:
                assert docs == want_docs, where
            # else: documents read before the error may have been given (ingest_file drops them: an empty part)


CASES = {
    "crlf": b"one\r\ntwo\r\n\r\nthree\r\n",
    "lone cr": b"one\rtwo\r\rthree\r",
    "cr then lf far apart": b"a\r\r\n\n\rb\n\r",
    "newline runs": b"a\n\nb\n\n\nc\n\n\n\nd\n\n\n\n\ne",
    "leading and trailing newlines": b"\n\n\na\n\n\n",
    "crlf runs": b"a\r\n\r\n\r\nb\r\n\r\n\r\n\r\nc",
    "multibyte utf-8": "caf\u00e9 \u20ac\n\n\U0001f600 na\u00efve\n\u4e2d\u6587\n".encode(),
    "utf-8 bom": codecs.BOM_UTF8 + "first\n\nsecond \u00e9\r\n".encode(),
    "utf-8 bom twice": codecs.BOM_UTF8 * 2 + b"text",
    "utf-8 bom only": codecs.BOM_UTF8,
    "utf-16-le": codecs.BOM_UTF16_LE + "one\r\n\r\ntwo \U0001f600\nthree".encode("utf-16-le"),
    "utf-16-be": codecs.BOM_UTF16_BE + "one\n\ntwo \u00e9\r\rthree\n".encode("utf-16-be"),
    "utf-32-le": codecs.BOM_UTF32_LE + "one\n\n\ntwo \U0001f600\n".encode("utf-32-le"),
    "utf-32-be": codecs.BOM_UTF32_BE + "one\r\ntwo\n\nthree".encode("utf-32-be"),
    "utf-16 bom only": codecs.BOM_UTF16_LE,
    "utf-16 odd length": codecs.BOM_UTF16_LE + "abc".encode("utf-16-le") + b"x",
    "utf-16 lone high surrogate at the end": codecs.BOM_UTF16_LE + "ab".encode("utf-16-le") + b"\x3d\xd8",
    "utf-16 lone high surrogate inside": codecs.BOM_UTF16_BE + b"\xd8\x3d\x00a\x00\n",
    "utf-16 lone low surrogate": codecs.BOM_UTF16_LE + b"a\x00\x00\xdcb\x00",
    "utf-32 out of range": codecs.BOM_UTF32_LE + "a\n".encode("utf-32-le") + b"\x00\x00\x11\x00",
    "utf-32 truncated": codecs.BOM_UTF32_BE + "a\n".encode("utf-32-be") + b"\x00\x00",
    "utf-16 with nul": codecs.BOM_UTF16_LE + "a\nb\n\x00c".encode("utf-16-le"),
    "latin-1": "ok line\ncaf\u00e9 au lait\n".encode("latin-1"),
    "invalid at the start": b"\xffabc",
    "invalid after bom": codecs.BOM_UTF8 + b"a\nb\n\xc3(",
    "truncated at the end": "line\n\u20ac".encode()[:-1],
    "bad continuation": b"a\n\n\xe2\x82\nb",
    "surrogate encoded in utf-8": b"a\n\xed\xa0\x80\n",
    "overlong": b"ab\n\xc0\xaf",
    "nul": b"one\ntwo\r\nthr\x00ee\n",
    "nul on the first line": b"\x00",
    "nul with crs": b"a\r\r\rb\n\x00",
    "nul then invalid utf-8": b"a\n\x00\nb\n\xff\n",
    "invalid utf-8 then nul": b"a\n\xff\n\x00",
    "two nuls": b"a\n\n\x00\x00\n\x00",
    "empty": b"",
    "whitespace only": b" \n\t\r\n  \n\n",
    "one newline": b"\n",
    "one cr": b"\r",
    "no final newline": b"first\n\nsecond\nlast words",
    "one line": b"just one line",
    "unicode whitespace": "\u00a0\n\u2028\n\n\u3000x\n\x1c".encode(),
}


@pytest.mark.parametrize("data", CASES.values(), ids=CASES.keys())
def test_tricky_inputs_read_as_before(tmp_path, data):
    _assert_same(tmp_path / "in.txt", data)


_TOKENS = [b"\r", b"\n", b"\r\n", b"\n\n", b"a", b"bc", b" ", b"\t", "\u00e9".encode(), "\u20ac".encode(),
           "\U0001f600".encode(), "\u2028".encode(), b"\x00", b"\xff", b"\xe2\x82", b"\x80", codecs.BOM_UTF8]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=st.sampled_from([b"", codecs.BOM_UTF8]), body=st.lists(st.sampled_from(_TOKENS), max_size=24))
def test_utf8_bytes_read_as_before(tmp_path, head, body):
    _assert_same(tmp_path / "in.txt", head + b"".join(body), chunks=(1, 2, 3, 5, 7))


_CHARS = st.sampled_from(["\r", "\n", "\r\n", "a", " ", "\u00e9", "\U0001f600", "\x00"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(encoding=st.sampled_from(["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]),
       text=st.lists(_CHARS, max_size=16), damage=st.sampled_from([b"", b"x", b"\x00\xd8", b"\x00\xdc\x00",
                                                                   b"\xff\xff\xff\xff"]),
       at=st.integers(min_value=0, max_value=64))
def test_utf16_and_utf32_read_as_before(tmp_path, encoding, text, damage, at):
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE,
           "utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE}[encoding]
    body = "".join(text).encode(encoding)
    at = min(at, len(body))
    _assert_same(tmp_path / "in.txt", bom + body[:at] + damage + body[at:], chunks=(1, 2, 3, 5, 7))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=st.sampled_from([b"", codecs.BOM_UTF8]), body=st.lists(st.sampled_from(_TOKENS), max_size=32),
       max_chars=st.integers(min_value=1, max_value=8))
def test_pieces_longer_than_a_document_may_be_are_cut_as_documented(tmp_path, head, body, max_chars):
    """Whatever the chunk size, a piece over the limit gives the parts the documented cut gives on the whole text;
    a file that cannot be read counts no cut piece (ingest_file keeps none of its documents)."""
    _assert_same(tmp_path / "in.txt", head + b"".join(body), chunks=(1, 2, 3, 5, 7, None), max_chars=max_chars)


CUT_CASES = {
    "a separator across chunks right after a full piece": b"abc\n\nd",
    "crlf paragraphs": b"ab cd\r\n\r\nef\r\ngh ij\r\n",
    "no break at all": b"abcdefghij",
    "spaces only": b"a  b  c  d e",
    "newline runs": b"\n\n\n\n\nab\n\n\ncd ef\n\n\n\n",
    "utf-16": codecs.BOM_UTF16_LE + "one two\n\nthree \U0001f600 four\nfive".encode("utf-16-le"),
    "cannot be read after a long piece": b"a long first line\n\nthen \xff",
}


@pytest.mark.parametrize("data", CUT_CASES.values(), ids=CUT_CASES.keys())
@pytest.mark.parametrize("max_chars", range(1, 9))
def test_tricky_inputs_cut_as_documented(tmp_path, data, max_chars):
    _assert_same(tmp_path / "in.txt", data, max_chars=max_chars)


def test_blank_is_what_strip_leaves_empty():
    """The reader tells a blank piece without stripping it: the same characters as str.strip() removes."""
    assert [c for c in map(chr, range(0x110000)) if c.isspace()] == [
        c for c in map(chr, range(0x110000)) if not c.strip()]


def test_ids_urls_and_pieces_count_blank_pieces(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_bytes(b"a\n\n\n\nb\n\n\nc")
    docs, error, counts, _ = _outcome(iter_text_documents, p, "paragraph", _chunk_bytes=1)
    assert error is None and counts == {}
    assert [(d["text"], d["url"], json.loads(d["meta"])["piece"]) for d in docs] == [
        ("a", "file://notes.txt#0", 0), ("b", "file://notes.txt#2", 2), ("\nc", "file://notes.txt#3", 3)]
    assert docs[1]["id"] == stable_id("text", "0" * 64, "2")


def test_errors_name_line_byte_and_character(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(codecs.BOM_UTF8 + b"one\ntwo\r\n" + b"x" * 20 + b"\xe9\n")
    assert _outcome(iter_text_documents, p, "line", _chunk_bytes=3)[1] == (
        f"{p}:3: not UTF-8 text (byte 29: b'\\xe9')")
    p.write_bytes(b"one\rtwo\n" + b"y" * 10 + b"\x00")
    assert _outcome(iter_text_documents, p, "paragraph", _chunk_bytes=4)[1] == (
        f"{p}:2: a NUL character (character 18): binary data, or UTF-16 text without a byte-order mark, "
        "not a text file")


def test_an_error_after_documents_were_read_leaves_an_empty_part(tmp_path):
    """The error may now come after some documents were given: the shard still writes none of them."""
    from storage.parquet import iter_rows
    from tasks.ingest import _TEXT_CHUNK_BYTES, ingest_file

    p = tmp_path / "late.txt"
    p.write_bytes(b"a line of text\n" * (2 * _TEXT_CHUNK_BYTES // 15) + b"caf\xe9\n")
    f = InputFile(path=str(p), kind="text", source="text", sha256="0" * 64)
    out = tmp_path / "part-00000.parquet"
    result = ingest_file(f, str(out), None, IngestParams(text_split="line"))
    assert result.docs_out == 0 and list(iter_rows(out)) == [] and result.extra["skipped"] == {}
    assert result.info["error"] == (f"{p}:{2 * _TEXT_CHUNK_BYTES // 15 + 1}: not UTF-8 text "
                                    f"(byte {2 * _TEXT_CHUNK_BYTES // 15 * 15 + 3}: b'\\xe9')")


_MEMORY_CHILD = textwrap.dedent("""
    import resource, sys
    from tasks.ingest import InputFile, ingest_file, iter_text_documents
    from tasks.params import IngestParams
    from tasks.records import SkipCounter

    how, path, out = sys.argv[1:]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    f = InputFile(path=path, kind="text", source="text", sha256="0" * 64)
    params = IngestParams(text_split="paragraph")
    if how == "shard":
        docs = ingest_file(f, out, None, params).docs_out
    else:
        docs = sum(1 for _ in iter_text_documents(f, params, SkipCounter()))
    print(docs, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
""")


def _memory_growth(how: str, path: Path, out: Path) -> tuple[int, int]:
    """(documents, how far the peak RSS of a fresh process rose while it read `path`), in a child process."""
    done = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, how, str(path), str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    docs, growth = map(int, done.stdout.split())
    return docs, growth


def test_a_large_file_split_by_paragraph_is_read_in_bounded_memory(tmp_path):
    """~200 MB of paragraphs: reading it whole held its bytes, its text and the list of its paragraphs (the peak
    rose by some 3x the file). Now the reader holds a few MiB, and the shard function's peak is the Parquet
    writer's row-group buffer (up to 64 M characters), the same for a 50 MB as for a 200 MB file."""
    para = ("Lorem ipsum dolor sit amet, caf\u00e9 consectetur adipiscing elit. " * 60).encode() + b"\r\n\r\n"
    block = para * 256
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    with open(small, "wb") as s, open(large, "wb") as g:
        for n in range(200_000_000 // len(block)):
            g.write(block)
            if n < 50_000_000 // len(block):
                s.write(block)
    size = large.stat().st_size
    docs, reader_growth = _memory_growth("reader", large, tmp_path / "unused.parquet")
    assert docs == size // len(para)
    assert reader_growth < size // 8, reader_growth / 1e6
    docs, shard_growth = _memory_growth("shard", large, tmp_path / "large.parquet")
    assert docs == size // len(para)
    _, small_growth = _memory_growth("shard", small, tmp_path / "small.parquet")
    # RSS still rises over the first few row groups (the small file has two): 60 MB of slack, against the
    # ~3x the file (600 MB) this grew by when the file was held whole
    assert shard_growth < size and shard_growth < small_growth + 60_000_000, (shard_growth / 1e6,
                                                                              small_growth / 1e6)


# --- documents over the largest size: parts -----------------------------------------------------------------


def test_a_long_paragraph_is_cut_at_line_breaks_and_numbered_within_its_piece(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_bytes(b"intro\n\nline one\nline two\nline three\n\nend")
    docs, error, counts, examples = _outcome(iter_text_documents, p, "paragraph", _max_chars=20)
    assert error is None
    assert [(d["text"], d["url"], json.loads(d["meta"])) for d in docs] == [
        ("intro", "file://notes.txt#0", {"file": "notes.txt", "piece": 0}),
        ("line one\nline two\n", "file://notes.txt#1.0", {"file": "notes.txt", "piece": 1, "part": 0}),
        ("line three", "file://notes.txt#1.1", {"file": "notes.txt", "piece": 1, "part": 1}),
        ("end", "file://notes.txt#2", {"file": "notes.txt", "piece": 2})]
    assert docs[1]["id"] == stable_id("text", "0" * 64, "1.0") and docs[0]["id"] == stable_id("text", "0" * 64, "0")
    assert counts == {"too_long_split_kept": 1}
    assert examples == {"too_long_split_kept": f"{p}#1: 28 characters, more than the 20 a document may hold: kept "
                                                "as 2 documents cut at paragraph or line breaks"}


def test_a_file_over_the_largest_document_is_kept_whole_in_documents_cut_at_paragraph_breaks(tmp_path):
    """Ten copies of Tiny Shakespeare in one file, read as one document (`file`): 11 M characters is more than a
    document may hold, so it gives two, the first ending at a blank line, which together are the file's text."""
    from storage.parquet import iter_rows
    from tasks.ingest import ingest_file
    from tests.conftest import shared_file

    plays = shared_file("text", "char-rnn_tinyshakespeare_input.txt").read_text(encoding="utf-8") * 10
    p = tmp_path / "plays.txt"
    p.write_text(plays, encoding="utf-8")
    f = InputFile(path=str(p), kind="text", source="text", sha256="0" * 64)
    out = tmp_path / "part-00000.parquet"
    result = ingest_file(f, str(out), None, IngestParams(text_split="file"))
    rows = list(iter_rows(out))
    assert "".join(r["text"] for r in rows) == plays
    assert [(r["url"], json.loads(r["meta"])) for r in rows] == [
        ("file://plays.txt#0.0", {"file": "plays.txt", "piece": 0, "part": 0}),
        ("file://plays.txt#0.1", {"file": "plays.txt", "piece": 0, "part": 1})]
    assert rows[0]["text"].endswith("\n\n") and 9_999_000 < len(rows[0]["text"]) <= 10_000_000
    assert result.docs_out == 2 and result.extra["skipped"] == {"too_long_split_kept": 1}
    assert result.info["skip_examples"] == {"too_long_split_kept": (
        f"{p}: {len(plays):,} characters, more than the 10,000,000 a document may hold: kept as 2 documents cut at "
        "paragraph or line breaks")}


def test_a_json_record_over_the_largest_document_is_kept_in_parts_with_its_url_and_time(tmp_path):
    from tasks.ingest import iter_jsonl_documents

    text = "First paragraph here.\n\nSecond one, a little longer.\n\nthe end"
    p = tmp_path / "pages.jsonl"
    p.write_text(json.dumps({"text": "short", "url": "https://a.example/"}) + "\n" + json.dumps(
        {"text": text, "url": "https://b.example/", "timestamp": "2024-05-01T10:00:00Z", "lang": "en"}) + "\n")
    f = InputFile(path=str(p), kind="jsonl", source="jsonl", sha256="0" * 64)
    skips = SkipCounter()
    docs = [d.as_row() for d in iter_jsonl_documents(f, IngestParams(), skips, _max_chars=30)]
    assert [d["text"] for d in docs] == ["short", "First paragraph here.\n\n", "Second one, a little longer.\n\n",
                                         "the end"]
    assert [d["id"] for d in docs] == [stable_id("jsonl", "0" * 64, n) for n in ("1", "2.0", "2.1", "2.2")]
    assert {(d["url"], d["timestamp"].isoformat()) for d in docs[1:]} == {("https://b.example/",
                                                                          "2024-05-01T10:00:00+00:00")}
    assert [json.loads(d["meta"]) for d in docs] == [{"_line": 1}] + [
        {"_line": 2, "_part": k, "lang": "en"} for k in range(3)]
    assert dict(skips.counts) == {"too_long_split_kept": 1}
    assert skips.examples["too_long_split_kept"] == (f"{p}:2: {len(text)} characters, more than the 30 a document "
                                                     "may hold: kept as 3 documents cut at paragraph or line breaks")


def test_a_json_record_over_the_largest_document_is_kept_whole_in_parts(tmp_path):
    """Ten copies of Tiny Shakespeare as one JSON record's text, between two short records: two documents for
    it, cut at a blank line, which together are its text; the records around it are as they were."""
    from storage.parquet import iter_rows
    from tasks.ingest import ingest_file
    from tests.conftest import shared_file

    plays = shared_file("text", "char-rnn_tinyshakespeare_input.txt").read_text(encoding="utf-8") * 10
    p = tmp_path / "books.jsonl"
    p.write_text("\n".join(json.dumps({"text": t, "url": u}) for t, u in (
        ("before", "https://a.example/"), (plays, "https://b.example/"), ("after", None))) + "\n", encoding="utf-8")
    f = InputFile(path=str(p), kind="jsonl", source="jsonl", sha256="0" * 64)
    out = tmp_path / "part-00000.parquet"
    result = ingest_file(f, str(out), None, IngestParams())
    rows = list(iter_rows(out))
    assert [(r["url"], json.loads(r["meta"])) for r in rows] == [
        ("https://a.example/", {"_line": 1}), ("https://b.example/", {"_line": 2, "_part": 0}),
        ("https://b.example/", {"_line": 2, "_part": 1}), (None, {"_line": 3})]
    assert [rows[0]["text"], "".join(r["text"] for r in rows[1:3]), rows[3]["text"]] == ["before", plays, "after"]
    assert rows[1]["text"].endswith("\n\n") and len(rows[1]["text"]) <= 10_000_000
    assert result.docs_out == 4 and result.extra["skipped"] == {"too_long_split_kept": 1}
