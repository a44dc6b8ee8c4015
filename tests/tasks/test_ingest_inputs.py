"""The JSONL and plain-text readers of ingest on inputs as other tools write them: compressed dumps of Dolma,
datatrove, RedPajama, OSCAR and C4, and the damage real files carry (a cut-short download, a byte-order mark, a line
that is not UTF-8, lone surrogates, a JSON array where JSON lines were expected, binary data given as text). Each
case goes through `ingest_file`, which writes the Parquet part, and asserts the documents or the counted skip."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage.parquet import iter_rows
from tasks.ingest import InputFile, detect_kind, ingest_file
from tasks.params import IngestParams
from tasks.records import InputFileError


def _ingest(tmp_path: Path, path: Path, kind: str = "jsonl", **params):
    f = InputFile(path=str(path), kind=kind, source=kind, sha256="0" * 64)
    out = tmp_path / "out" / "part-00000.parquet"
    result = ingest_file(f, str(out), None, IngestParams(**params))
    return result, list(iter_rows(out))


def _lines(*records: object) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _zstd(data: bytes) -> bytes:
    out = pa.BufferOutputStream()
    with pa.CompressedOutputStream(out, "zstd") as stream:
        stream.write(data)
    return out.getvalue().to_pybytes()


# bzip2 at level 1 cuts its stream into 100 kB blocks, so a cut-short file still holds whole blocks
COMPRESSORS = {"gz": lambda b: gzip.compress(b, mtime=0), "bz2": lambda b: bz2.compress(b, 1), "xz": lzma.compress,
               "zst": _zstd}
CODEC_NAMES = {"gz": "gzip", "bz2": "bz2", "xz": "xz", "zst": "zst"}


# --- compression ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["jsonl.gz", "jsonl.bz2", "jsonl.xz", "jsonl.zst", "json.zst", "ndjson.xz"])
def test_compressed_json_lines_are_found_and_read(tmp_path, suffix):
    """The Pile and SlimPajama ship .jsonl.zst, OSCAR .jsonl.zst, Dolma and C4 .json.gz, others .bz2 or .xz."""
    path = tmp_path / f"docs.{suffix}"
    path.write_bytes(COMPRESSORS[suffix.rsplit(".", 1)[1]](_lines({"text": "first"}, {"text": "second"})))
    assert detect_kind(path) == "jsonl"
    result, rows = _ingest(tmp_path, path)
    assert [r["text"] for r in rows] == ["first", "second"] and result.extra["skipped"] == {}


def test_compression_is_told_by_the_bytes_not_the_name(tmp_path):
    gzipped = tmp_path / "renamed.jsonl"  # gzip data without .gz (a download saved under another name)
    gzipped.write_bytes(gzip.compress(_lines({"text": "gzip inside"})))
    plain = tmp_path / "plain.jsonl.gz"  # already decompressed, the name kept
    plain.write_bytes(_lines({"text": "plain inside"}))
    assert [r["text"] for r in _ingest(tmp_path, gzipped)[1]] == ["gzip inside"]
    assert [r["text"] for r in _ingest(tmp_path, plain)[1]] == ["plain inside"]


@pytest.mark.parametrize("codec", ["gz", "bz2", "xz", "zst"])  # gz already worked
def test_a_cut_short_compressed_file_keeps_the_records_before_and_counts_the_cut(tmp_path, codec):
    records = [{"text": f"record {i} " + "words " * 50} for i in range(1000)]
    data = COMPRESSORS[codec](_lines(*records))
    path = tmp_path / f"cut.jsonl.{codec}"
    path.write_bytes(data[: len(data) * 2 // 3])
    result, rows = _ingest(tmp_path, path)
    assert result.info["error"] is None
    assert 0 < len(rows) < 1000 and [r["text"] for r in rows] == [r["text"] for r in records[: len(rows)]]
    assert result.extra["skipped"] == {f"truncated_{CODEC_NAMES[codec]}": 1}
    assert result.info["skip_examples"][f"truncated_{CODEC_NAMES[codec]}"].startswith(f"{path}:{len(rows) + 1}:")


# --- lines ------------------------------------------------------------------------------------------------------


def test_a_byte_order_mark_does_not_cost_the_first_record(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _lines({"text": "first"}, {"text": "second"}))
    result, rows = _ingest(tmp_path, path)
    assert [r["text"] for r in rows] == ["first", "second"] and result.extra["skipped"] == {}


def test_a_line_that_is_not_utf8_is_counted_and_the_lines_after_it_are_read(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(_lines({"text": "one"}) + b'{"text": "caf\xe9 latin-1"}\n' + _lines({"text": "three"}))
    result, rows = _ingest(tmp_path, path)
    assert [r["text"] for r in rows] == ["one", "three"]
    assert result.extra["skipped"] == {"not_utf8": 1}
    assert result.info["skip_examples"]["not_utf8"] == f"{path}:2: byte 13: b'\\xe9'"


def test_line_ends_blank_lines_and_unicode_line_separators_already_worked(tmp_path):
    path = tmp_path / "ends.jsonl"
    path.write_bytes(b"\n  \n" + _lines({"text": "crlf"}).replace(b"\n", b"\r\n") + b"\r\n"
                     + '{"text": "a\u2028b\u0085c"}\n'.encode() + b'{"text": "no final newline"}')
    result, rows = _ingest(tmp_path, path)
    assert [r["text"] for r in rows] == ["crlf", "a\u2028b\u0085c", "no final newline"]
    assert [json.loads(r["meta"])["_line"] for r in rows] == [3, 5, 6] and result.extra["skipped"] == {}


def test_lone_surrogates_become_replacement_characters_and_the_part_is_written(tmp_path):
    path = tmp_path / "surrogates.jsonl"
    path.write_bytes(b'{"text": "cut emoji \\ud83d here", "title": "\\udc00", "url": "https://e.org/\\uDFFF"}\n'
                     b'{"text": "a pair \\ud83d\\ude00 stays"}\n')
    result, rows = _ingest(tmp_path, path)
    assert result.docs_out == 2
    assert [r["text"] for r in rows] == ["cut emoji \ufffd here", "a pair \U0001f600 stays"]
    assert json.loads(rows[0]["meta"])["title"] == "\ufffd" and rows[0]["url"] == "https://e.org/\ufffd"


@pytest.mark.parametrize("line", [
    '{"text": "deep", "metadata": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}",
    '{"text": "a huge integer", "n": ' + "9" * 5000 + "}",
], ids=["nested-5000-deep", "integer-of-5000-digits"])
def test_json_python_cannot_parse_is_a_counted_bad_line(tmp_path, line):
    path = tmp_path / "hard.jsonl"
    path.write_bytes(line.encode() + b"\n" + _lines({"text": "after"}))
    result, rows = _ingest(tmp_path, path)
    assert [r["text"] for r in rows] == ["after"] and result.extra["skipped"] == {"bad_json": 1}


def test_nan_and_infinity_are_null_so_meta_stays_json(tmp_path):
    path = tmp_path / "nan.jsonl"
    path.write_bytes(b'{"text": "scored", "score": NaN, "hi": Infinity, "lo": -Infinity}\n')
    _, rows = _ingest(tmp_path, path)

    def refuse(constant):
        raise ValueError(constant)

    assert json.loads(rows[0]["meta"], parse_constant=refuse) == {"_line": 1, "score": None, "hi": None, "lo": None}


# --- files that are not JSON lines --------------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "says"), [
    (json.dumps([{"text": "a"}, {"text": "b"}]), "a JSON array of 2 objects, not JSON lines"),
    (json.dumps([{"text": "a"}, {"text": "b"}], indent=2), "pretty-printed JSON, not JSON lines"),
    (json.dumps({"text": "a"}, indent=2), "pretty-printed JSON, not JSON lines"),
], ids=["array", "pretty-array", "pretty-object"])
def test_a_file_that_is_not_json_lines_is_an_error_naming_it(tmp_path, content, says):
    path = tmp_path / "export.jsonl"
    path.write_text(content, newline="")
    result, rows = _ingest(tmp_path, path)
    assert rows == [] and result.info["error"].startswith(f"{path}:1: {says}")


def test_classic_mac_line_ends_are_line_ends(tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_bytes(b'{"text": "a"}\r{"text": "b\\nc"}\r\r{"text": "d"}\r\n{"text": "e"}\n')
    result, rows = _ingest(tmp_path, path)
    assert [r["text"] for r in rows] == ["a", "b\nc", "d", "e"] and result.info["error"] is None
    assert [json.loads(r["meta"])["_line"] for r in rows] == [1, 2, 4, 5]  # the blank line counted


def test_utf16_json_lines_are_an_error_naming_the_file(tmp_path):
    path = tmp_path / "powershell.jsonl"  # what Windows PowerShell 5's `>` writes
    path.write_bytes(_lines({"text": "a"}).decode().encode("utf-16"))
    result, rows = _ingest(tmp_path, path)
    assert rows == [] and result.info["error"].startswith(f"{path}: UTF-16 or UTF-32 text")


# --- records as other tools write them ---------------------------------------------------------------------------


def test_url_and_time_are_read_where_common_corpora_keep_them(tmp_path):
    path = tmp_path / "corpora.jsonl"
    path.write_bytes(_lines(
        {"text": "datatrove", "id": "d1", "metadata": {"url": "https://dt.example/", "date": "2024-02-01T10:00:00Z"}},
        {"text": "redpajama", "meta": {"url": "https://rp.example/", "timestamp": "2019-04-25T12:57:54"}},
        {"content": "oscar", "warc_headers": {"warc-target-uri": "https://os.example/",
                                              "warc-date": "2022-11-26T10:00:00Z"}},
        {"text": "c4", "url": "https://c4.example/", "timestamp": "2019-04-25T12:57:54Z"},
    ))
    result, rows = _ingest(tmp_path, path)
    assert [(r["text"], r["url"]) for r in rows] == [
        ("datatrove", "https://dt.example/"), ("redpajama", "https://rp.example/"), ("c4", "https://c4.example/")]
    assert [r["timestamp"] for r in rows] == [datetime(2024, 2, 1, 10, tzinfo=timezone.utc),
                                              datetime(2019, 4, 25, 12, 57, 54, tzinfo=timezone.utc),
                                              datetime(2019, 4, 25, 12, 57, 54, tzinfo=timezone.utc)]
    # OSCAR's text is `content`: the skip says which fields the record has and what to set
    assert result.extra["skipped"] == {"no_text_field": 1}
    example = result.info["skip_examples"]["no_text_field"]
    assert example.startswith(f"{path}:3:") and "content" in example and "ingest.jsonl_text_field" in example
    _, oscar = _ingest(tmp_path, path, jsonl_text_field="content")
    assert [(r["text"], r["url"], r["timestamp"]) for r in oscar] == [
        ("oscar", "https://os.example/", datetime(2022, 11, 26, 10, tzinfo=timezone.utc))]


def test_timestamps_in_the_shapes_dumps_write_them(tmp_path):
    at = datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)
    shapes = {"iso-z": "2023-11-14T22:13:20Z", "space": "2023-11-14 22:13:20", "offset": "2023-11-15T00:13:20+02:00",
              "seconds": 1700000000, "ms": 1700000000000, "us": 1700000000000000, "ns": 1700000000000000000,
              "seconds-as-string": "1700000000", "ms-as-string": "1700000000000"}
    path = tmp_path / "times.jsonl"
    path.write_bytes(_lines(*({"text": name, "timestamp": value} for name, value in shapes.items()),
                            {"text": "a date", "timestamp": "20231114"}, {"text": "a bool", "timestamp": True}))
    result, rows = _ingest(tmp_path, path)
    times = {r["text"]: r["timestamp"] for r in rows}
    assert {name: times[name] for name in shapes} == dict.fromkeys(shapes, at)
    assert times["a date"] == datetime(2023, 11, 14, tzinfo=timezone.utc)
    assert times["a bool"] is None and result.extra["skipped"] == {"bad_timestamp_kept": 1}


def test_a_text_field_that_is_not_a_string_says_what_it_is(tmp_path):
    path = tmp_path / "types.jsonl"
    path.write_bytes(_lines({"text": None}, {"text": ["a", "b"]}, {"text": "kept"}))
    result, rows = _ingest(tmp_path, path)
    assert [r["text"] for r in rows] == ["kept"] and result.extra["skipped"] == {"no_text_field": 2}
    assert result.info["skip_examples"]["no_text_field"] == f"{path}:1: 'text' is null, not a string"


# --- empty files --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "content", "kind"), [
    ("empty.jsonl", b"", "jsonl"), ("blank.jsonl", b"\n \n", "jsonl"), ("empty.jsonl.gz", gzip.compress(b""), "jsonl"),
    ("empty.txt", b"", "text"), ("blank.txt", b" \n\t\n", "text"),
], ids=["empty-jsonl", "blank-lines-jsonl", "empty-jsonl-gz", "empty-txt", "blank-txt"])
def test_a_file_that_gives_nothing_is_counted(tmp_path, name, content, kind):
    path = tmp_path / name
    path.write_bytes(content)
    result, rows = _ingest(tmp_path, path, kind)
    assert rows == [] and result.info["error"] is None
    assert result.extra["skipped"] == {"no_records": 1} and result.docs_in == 1
    assert result.info["skip_examples"]["no_records"].startswith(f"{path}: ")


# --- plain text ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_text_with_a_byte_order_mark_is_read(tmp_path, encoding):
    path = tmp_path / "notepad.txt"
    text = "Caf\u00e9 \u201cquoted\u201d \U0001f600\r\nsecond line\r\n"
    bom = "\ufeff" if encoding == "utf-16-be" else ""  # "utf-16" and "utf-32" write one themselves
    path.write_bytes((bom + text).encode(encoding))
    result, rows = _ingest(tmp_path, path, "text")
    assert [r["text"] for r in rows] == ["Caf\u00e9 \u201cquoted\u201d \U0001f600\nsecond line\n"]


@pytest.mark.parametrize(("content", "line"), [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00", 1),  # a binary given as text
    ("first line\nsecond line\n".encode("utf-16-le"), 1),  # UTF-16 without a byte-order mark
    (b"prose\nmore prose\nthen \x00 a NUL\n", 3),
], ids=["binary", "utf16-without-bom", "nul-in-prose"])
def test_text_with_nul_bytes_is_an_error_naming_the_file_and_line(tmp_path, content, line):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    result, rows = _ingest(tmp_path, path, "text")
    assert rows == [] and result.info["error"].startswith(f"{path}:{line}: a NUL character")


def test_windows_1252_text_already_was_an_error_naming_the_line(tmp_path):
    path = tmp_path / "legacy.txt"
    path.write_bytes("plain first line\nCaf\u00e9 \u201cquoted\u201d\n".encode("cp1252"))
    result, _ = _ingest(tmp_path, path, "text")
    assert result.info["error"] == f"{path}:2: not UTF-8 text (byte 20: b'\\xe9')"


def test_whatsapp_export_year_dates_an_export_whose_headers_give_no_year(tmp_path):
    path = tmp_path / "old.txt"
    path.write_text("Mar 5, 8:11 PM - Ana: hola, que tal\nMar 5, 8:12 PM - Bo: hi there, all good\n")
    messages = tmp_path / "out" / "messages-00000.parquet"
    f = InputFile(path=str(path), kind="whatsapp", source="whatsapp", sha256="0" * 64)
    result = ingest_file(f, str(tmp_path / "out" / "part-00000.parquet"), str(messages),
                         IngestParams(export_year=2013))
    assert result.docs_out == 1
    assert {row["timestamp"].year for row in iter_rows(messages)} == {2013}


def test_messenger_and_discord_exports_are_found_in_their_folders(tmp_path):
    from tasks.ingest import resolve_inputs
    from tasks.params import InputSpec
    from tests.tasks.test_discord import DM
    from tests.tasks.test_messenger import msg, thread, write

    chat = tmp_path / "inbox" / "messages" / "inbox" / "priya_1"
    write(chat, thread([msg("Priya", 2, "and you?")]), "message_1.json")
    write(chat, thread([msg("Priya", 0, "hi"), msg("Sam", 1, "hello")]), "message_2.json")
    (chat / "photos").mkdir()
    (chat / "photos" / "1.jpg").write_bytes(b"\xff\xd8\xff\xe0")
    insta = tmp_path / "inbox" / "your_instagram_activity" / "messages" / "inbox" / "kim_2"
    write(insta, thread([msg("Kim", 0, "yo")]))
    (tmp_path / "inbox" / "discord.json").write_text(json.dumps(DM), encoding="utf-8")
    files = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(tmp_path / "inbox"))]))
    # message_2.json is read with message_1.json (one chat), the photo has no text
    assert sorted((Path(f.path).name, f.kind, f.source) for f in files) == [
        ("discord.json", "discord", "discord"), ("message_1.json", "messenger", "instagram"),
        ("message_1.json", "messenger", "messenger")]
    messenger = next(f for f in files if f.source == "messenger")
    before = messenger.sha256  # the shard's key covers every part: a changed later part reruns it
    write(chat, thread([msg("Priya", 0, "hi!"), msg("Sam", 1, "hello")]), "message_2.json")
    again = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(tmp_path / "inbox"))]))
    assert next(f for f in again if f.source == "messenger").sha256 != before
    with pytest.raises(InputFileError, match=r"1\.jpg: cannot tell what kind"):  # named itself, it is an error
        resolve_inputs(IngestParams(inputs=[InputSpec(path=str(chat / "photos" / "1.jpg"))]))


# ------------------------------------------------------------------------------------------------ chat exports


def _ingest_chats(tmp_path: Path, files: list) -> tuple[list, list[dict], list[dict]]:
    """Every input through `ingest_file`, with its messages part: the results, the document rows, the message rows
    (each sorted, to compare what several files give with what one gives)."""
    results, docs, messages = [], [], []
    for i, f in enumerate(files):
        part, msgs = tmp_path / "out" / f"part-{i:05d}.parquet", tmp_path / "out" / f"messages-{i:05d}.parquet"
        results.append(ingest_file(f, str(part), str(msgs), IngestParams()))
        docs += list(iter_rows(part))
        messages += list(iter_rows(msgs))
    key = json.dumps
    return results, sorted(docs, key=lambda r: key(r, default=str)), sorted(messages, key=lambda r: key(r, default=str))


def test_a_messenger_zip_gives_the_documents_and_messages_of_its_folder(tmp_path):
    from storage.fingerprint import hash_file
    from tasks.ingest import resolve_inputs
    from tasks.params import InputSpec
    from tests.tasks.test_messenger import _download, _zip

    folder = _download(tmp_path / "facebook-zoe-2024-05-01")
    archive = _zip(folder, tmp_path / "facebook-zoe-2024-05-01.zip")
    (folder / "your_facebook_activity" / "messages" / "autofill_information.json").unlink()  # no chat: no kind
    assert detect_kind(archive) == "messenger"
    [zipped] = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(archive))]))
    assert (zipped.kind, zipped.source, zipped.sha256) == ("messenger", "messenger", hash_file(archive))
    unzipped = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(folder))]))
    assert sorted(Path(f.path).name for f in unzipped) == ["Jana_7.json", "message_1.json", "message_1.json"]
    [result], docs, messages = _ingest_chats(tmp_path / "zip", [zipped])
    _, folder_docs, folder_messages = _ingest_chats(tmp_path / "folder", unzipped)
    assert result.info["error"] is None and len(result.info["stats"]) == 3 and len(messages) == 11
    assert docs == folder_docs and messages == folder_messages
    insta = _zip(_download(tmp_path / "instagram-zoe-2024-05-01", instagram=True), tmp_path / "insta.zip")
    [f] = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(insta))]))
    assert (f.kind, f.source) == ("messenger", "instagram")  # told by the folder inside the zip


def test_a_discord_package_zip_gives_the_documents_and_messages_of_its_folder(tmp_path):
    import zipfile

    from tasks.ingest import resolve_inputs
    from tasks.params import InputSpec
    from tests.tasks.test_discord import _package

    base = _package(tmp_path)
    archive = tmp_path / "package.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(base.parent.rglob("*")):
            z.write(f, f.relative_to(base.parent).as_posix())
        z.writestr("README.txt", "Your data package")
    assert detect_kind(archive) == "discord"
    [zipped] = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(archive))]))
    unzipped = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(base))]))  # channel.json, index.json: read with
    assert sorted(Path(f.path).name for f in unzipped) == ["messages.csv", "messages.json"]
    _, docs, messages = _ingest_chats(tmp_path / "zip", [zipped])
    _, folder_docs, folder_messages = _ingest_chats(tmp_path / "folder", unzipped)
    assert docs == folder_docs and messages == folder_messages and len(messages) == 6


def test_a_zip_that_is_no_messenger_or_discord_download_stays_a_whatsapp_export(tmp_path):
    import zipfile

    chat, empty = tmp_path / "WhatsApp Chat - Kim.zip", tmp_path / "photos.zip"
    with zipfile.ZipFile(chat, "w") as z:
        z.writestr("_chat.txt", "14/03/2024, 18:02 - Sam: hi\n14/03/2024, 18:03 - Kim: hello\n")
        z.writestr("IMG-0001.jpg", b"\xff\xd8\xff")
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("IMG-0001.jpg", b"\xff\xd8\xff")
    assert detect_kind(chat) == detect_kind(empty) == "whatsapp"
    f = InputFile(path=str(empty), kind="whatsapp", source="whatsapp", sha256="0" * 64)
    [result], _, _ = _ingest_chats(tmp_path, [f])
    assert "no chat text file (_chat.txt or *.txt) inside the archive" in result.info["error"]


def test_discord_chat_exporter_csv_text_and_partitions_are_found(tmp_path):
    from tasks.ingest import resolve_inputs
    from tasks.params import InputSpec
    from tests.tasks.test_discord import EXPORTER_CSV, GUILD, PLAIN_TEXT

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "Hiking Club - Trips - general [9100].txt").write_text(PLAIN_TEXT, encoding="utf-8")
    (inbox / "Direct Messages - Private - Kim [5001].csv").write_text(EXPORTER_CSV, encoding="utf-8")
    base = "Hiking Club - Trips - general [9100]"
    (inbox / f"{base}.json").write_text(json.dumps({**GUILD, "messages": GUILD["messages"][:8]}))
    (inbox / f"{base} [part 2].json").write_text(json.dumps({**GUILD, "messages": GUILD["messages"][8:]}))
    (inbox / "WhatsApp Chat with Kim.txt").write_text("14/03/2024, 18:02 - Sam: hi\n14/03/2024, 18:03 - Kim: yo\n")
    (inbox / "notes.txt").write_text("Guild: minutes of the meeting\n")
    files = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(inbox))]))
    assert sorted((Path(f.path).name, f.kind) for f in files) == [
        ("Direct Messages - Private - Kim [5001].csv", "discord"), (f"{base}.json", "discord"),
        (f"{base}.txt", "discord"), ("WhatsApp Chat with Kim.txt", "whatsapp"), ("notes.txt", "text")]
    partitioned = next(f for f in files if f.path.endswith(".json"))
    results, _, messages = _ingest_chats(tmp_path, [f for f in files if f.kind == "discord"])
    assert all(r.info["error"] is None for r in results)
    # both parts, one chat: the 11 messages of GUILD that read (test_discord's fixture)
    read = [m for m in messages if m["source_file"] == f"{base}.json"]
    assert len(read) == 11 and len({m["chat_id"] for m in read}) == 1
    before = partitioned.sha256  # the shard's key covers every part
    (inbox / f"{base} [part 2].json").write_text(json.dumps({**GUILD, "messages": GUILD["messages"][9:]}))
    again = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(inbox))]))
    assert next(f for f in again if f.path.endswith(".json")).sha256 != before


def test_a_cut_messenger_file_is_ingested_with_the_cut_counted(tmp_path):
    from tests.tasks.test_messenger import msg, thread, write

    path = write(tmp_path / "inbox" / "x_1", thread([msg("Ana", i, f"message {i}") for i in range(4)], "x",
                                                    ("Ana", "Bo")))
    path.write_bytes(path.read_bytes()[:-300])
    f = InputFile(path=str(path), kind="messenger", source="messenger", sha256="0" * 64)
    [result], docs, messages = _ingest_chats(tmp_path, [f])
    assert result.info["error"] is None and result.extra["skipped"] == {"messenger_truncated_export": 1}
    [stats] = result.info["stats"].values()
    assert stats["truncated"] is True and stats["truncated_at_byte"] < path.stat().st_size
    assert len(docs) == 1 and 0 < len(messages) < 4
    assert "#byte " in result.info["skip_examples"]["messenger_truncated_export"]


def test_a_phones_databases_folder_reads_msgstore_with_the_names_of_wa_db_beside_it(tmp_path):
    """WhatsApp keeps msgstore.db and wa.db side by side: the folder as an input gives the chats of msgstore.db with
    wa.db's names (wa.db is no input of its own: before, it was read as a database and refused), and a new wa.db
    makes the shard run again."""
    from tasks.ingest import resolve_inputs
    from tasks.params import InputSpec
    from tests.tasks.whatsapp.test_database import _android_db, _wa_db

    folder = tmp_path / "databases"
    folder.mkdir()
    _android_db(folder / "msgstore.db")
    files = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(folder))]))
    without_names = files[0].sha256
    _wa_db(folder / "wa.db", [("447700900123@s.whatsapp.net", "Sam Lee", "Sam")])
    files = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(folder))]))
    assert [(Path(f.path).name, f.kind) for f in files] == [("msgstore.db", "whatsapp-db")]
    assert files[0].sha256 != without_names
    out = tmp_path / "out" / "part-00000.parquet"
    messages = tmp_path / "messages" / "part-00000.parquet"
    ingest_file(files[0], str(out), str(messages), IngestParams())
    authors = set(pq.read_table(messages, columns=["author"]).column("author").to_pylist())
    assert "Sam Lee" in authors and "447700900123" not in authors


# --- a wa.db that is not beside its msgstore.db ------------------------------------------------------------------


def _phone(folder: Path, names: list[tuple[str, str, str]] | None = None) -> Path:
    """A copy of a phone's `databases/` folder: its msgstore.db and, given `names`, the wa.db beside it."""
    from tests.tasks.whatsapp.test_database import _android_db, _wa_db

    folder.mkdir(parents=True)
    if names is not None:
        _wa_db(folder / "wa.db", names)
    return _android_db(folder / "msgstore.db")


def _contacts(folder: Path, name: str = "Sam Lee") -> Path:
    """A wa.db kept apart from its msgstore.db, naming Sam (447700900123, a person of `_android_db`'s chats)."""
    from tests.tasks.whatsapp.test_database import _wa_db

    folder.mkdir(parents=True, exist_ok=True)
    return _wa_db(folder / "wa.db", [("447700900123@s.whatsapp.net", name, "Sam")])


def _authors(tmp_path: Path, f: InputFile) -> set[str]:
    [result], _, messages = _ingest_chats(tmp_path, [f])
    assert result.info["error"] is None
    return {m["author"] for m in messages}


def _resolve(*specs: dict) -> list[InputFile]:
    from tasks.ingest import resolve_inputs

    return resolve_inputs(IngestParams(inputs=list(specs)))


def test_the_contacts_key_names_the_chats_from_a_wa_db_kept_elsewhere_and_wins_over_the_one_beside(tmp_path):
    db = _phone(tmp_path / "backup", names=[("447700900123@s.whatsapp.net", "Sammy (old phone)", "Sam")])
    wa = _contacts(tmp_path / "contacts")
    [f] = _resolve({"path": str(db), "contacts": str(wa)})
    assert (f.path, f.kind, f.contacts) == (str(db), "whatsapp-db", str(wa))
    authors = _authors(tmp_path, f)
    assert "Sam Lee" in authors and not authors & {"447700900123", "Sammy (old phone)"}


@pytest.mark.parametrize("listed", ["files", "folders", "glob"])
def test_a_wa_db_listed_apart_names_the_only_msgstore_db_of_the_run_without_one(tmp_path, caplog, listed):
    """The user lists the phone's two databases from different folders: wa.db is the names of the one msgstore.db
    that has none beside it (an iOS ChatStorage.sqlite holds its own names and takes none), said in the log."""
    from tests.tasks.whatsapp.test_database import _ios_db

    db = _phone(tmp_path / "backup")
    wa = _contacts(tmp_path / "contacts")
    (tmp_path / "iphone").mkdir()
    ios = _ios_db(tmp_path / "iphone" / "ChatStorage.sqlite")
    specs = {"files": [db, wa, ios], "folders": [db.parent, wa.parent, ios.parent],
             "glob": [tmp_path / "**" / "*.db", ios]}[listed]
    with caplog.at_level("INFO", logger="tasks.ingest"):
        files = _resolve(*({"path": str(p)} for p in specs))
    assert sorted((Path(f.path).name, f.contacts) for f in files) == [("ChatStorage.sqlite", None),
                                                                      ("msgstore.db", str(wa))]
    [paired] = [r for r in caplog.records if str(wa) in r.getMessage()]
    assert str(db) in paired.getMessage() and paired.levelname == "INFO"
    authors = _authors(tmp_path, next(f for f in files if f.path == str(db)))
    assert "Sam Lee" in authors and "447700900123" not in authors


def test_a_wa_db_no_single_msgstore_db_can_take_is_counted_and_warned_and_the_run_goes_on(tmp_path, caplog):
    """Two databases without names and one wa.db apart: which phone's names they are cannot be told. The wa.db is
    not guessed onto either; the log says how to pair it, the manifest counts it (with the how in its example)
    and the databases are read with numbers."""
    from tasks.ingest import SUMMARY, check_readable, unreadable_files

    first, second = _phone(tmp_path / "phone-a"), _phone(tmp_path / "phone-b")
    wa = _contacts(tmp_path / "contacts")
    with caplog.at_level("INFO", logger="tasks.ingest"):
        files = _resolve({"path": str(first)}, {"path": str(second)}, {"path": str(wa.parent)})
    assert all(f.contacts is None for f in files)
    [warning] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert str(wa) in warning.getMessage() and "contacts:" in warning.getMessage()
    results, _, messages = _ingest_chats(tmp_path, files)
    check_readable(unreadable_files(results), IngestParams())  # nothing stops the run
    counts, stats = SUMMARY(results)
    assert counts["skipped_whatsapp_contacts_unpaired"] == 1 and counts["files_unreadable"] == 0
    assert "contacts:" in stats["skip_examples"]["whatsapp_contacts_unpaired"]
    assert stats["per_file"][str(first)]["documents"] > 0 and stats["per_file"][str(second)]["documents"] > 0
    assert "447700900123" in {m["author"] for m in messages}


def test_a_wa_db_with_no_database_in_the_run_is_counted_not_fatal(tmp_path, caplog):
    from tasks.ingest import SUMMARY

    wa = _contacts(tmp_path / "contacts")
    with caplog.at_level("WARNING", logger="tasks.ingest"):
        files = _resolve({"path": str(wa)})
    assert [r for r in caplog.records if str(wa) in r.getMessage()]
    results, docs, _ = _ingest_chats(tmp_path, files)
    counts, stats = SUMMARY(results)
    assert counts["skipped_whatsapp_contacts_unpaired"] == 1 and counts["files_unreadable"] == 0 and not docs


@pytest.mark.parametrize("contacts, wrong", [
    ("missing/wa.db", "does not exist"),
    ("contacts", "a folder"),
    ("backup/msgstore.db", "msgstore.db"),
    ("notes.txt", "not an SQLite database"),
])
def test_a_contacts_key_that_is_no_wa_db_is_a_one_line_error(tmp_path, monkeypatch, contacts, wrong):
    monkeypatch.chdir(tmp_path)
    _phone(tmp_path / "backup")
    _contacts(tmp_path / "contacts")
    (tmp_path / "notes.txt").write_text("not a database\n")
    with pytest.raises(InputFileError) as e:
        _resolve({"path": "notes.txt", "kind": "text"}, {"path": "backup/msgstore.db", "contacts": contacts})
    message = str(e.value)
    assert "\n" not in message and message.startswith("ingest.inputs[1].contacts: ")
    assert contacts in message and wrong in message


@pytest.mark.parametrize("spec", [{"path": "chat.txt", "kind": "text"}, {"path": "chat.txt"}])
def test_a_contacts_key_on_an_input_that_is_no_whatsapp_database_is_an_error(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    _contacts(tmp_path / "contacts")
    (tmp_path / "chat.txt").write_text("14/03/2024, 18:02 - Sam: Hey\n")
    with pytest.raises(InputFileError, match=r"^ingest\.inputs\[0\]\.contacts: .*chat\.txt"):
        _resolve({**spec, "contacts": "contacts/wa.db"})


def test_the_content_hash_of_a_database_covers_the_wa_db_it_takes_its_names_from(tmp_path):
    """A new wa.db, wherever it lies, gives the chats other names: the shard is read again."""
    db = _phone(tmp_path / "backup")
    alone = _resolve({"path": str(db)})[0].sha256
    wa = _contacts(tmp_path / "contacts")
    named = _resolve({"path": str(db), "contacts": str(wa)})[0].sha256
    paired = next(f for f in _resolve({"path": str(db)}, {"path": str(wa)}) if f.path == str(db)).sha256
    assert named == paired != alone
    wa.unlink()
    _contacts(tmp_path / "contacts", name="Samuel Lee")
    assert _resolve({"path": str(db), "contacts": str(wa)})[0].sha256 not in (named, alone)
    assert next(f for f in _resolve({"path": str(db)}, {"path": str(wa)}) if f.path == str(db)).sha256 != paired
