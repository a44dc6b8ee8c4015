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


def _assert_same(path: Path, data: bytes, splits=SPLITS, chunks=CHUNKS) -> None:
    path.write_bytes(data)
    for split in splits:
        want_docs, want_error, *want_skips = _outcome(_old_iter_text_documents, path, split)
        for chunk in chunks:
            kw = {} if chunk is None else {"_chunk_bytes": chunk}
            docs, error, *skips = _outcome(iter_text_documents, path, split, **kw)
            where = f"{data!r} split={split} chunk={chunk}"
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
    assert shard_growth < size and shard_growth < small_growth + 40_000_000, (shard_growth / 1e6,
                                                                              small_growth / 1e6)
