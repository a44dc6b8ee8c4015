"""ingest (text, JSONL) and clean as plain functions: what ends up in the documents, what is skipped and why."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from storage.parquet import iter_rows
from tasks.clean import clean_shard
from tasks.ingest import InputFile, ingest_file, resolve_inputs
from tasks.params import CleanParams, IngestParams, InputSpec
from tasks.records import InputFileError


def _ingest(tmp_path, path, kind, **params):
    f = InputFile(path=str(path), kind=kind, source=kind, sha256="0" * 64)
    out = tmp_path / "out" / "part-00000.parquet"
    result = ingest_file(f, str(out), None, IngestParams(**params))
    return result, list(iter_rows(out))


def test_jsonl_keeps_url_timestamp_and_extra_fields(tmp_path):
    p = tmp_path / "docs.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "Bonjour le monde", "url": "https://ex.fr/a", "timestamp": "2024-05-01T10:00:00+02:00", "lang_hint": "fr"}) + "\n")
        fh.write(json.dumps({"text": "epoch seconds", "timestamp": 1700000000, "metadata": {"url": "https://ex.org/m"}}) + "\n")
    result, rows = _ingest(tmp_path, p, "jsonl")
    assert result.docs_out == 2 and result.info["error"] is None
    assert rows[0]["url"] == "https://ex.fr/a"
    assert rows[0]["timestamp"] == datetime(2024, 5, 1, 8, 0, tzinfo=timezone.utc)
    assert json.loads(rows[0]["meta"])["lang_hint"] == "fr"
    assert rows[1]["url"] == "https://ex.org/m"
    assert rows[1]["timestamp"] == datetime.fromtimestamp(1700000000, tz=timezone.utc)
    assert rows[0]["id"] != rows[1]["id"]


def test_jsonl_broken_records_are_skipped_and_counted_with_location(tmp_path):
    p = tmp_path / "mixed.jsonl"
    p.write_text('{"text": "good one"}\n{"text": broken\n[1, 2]\n{"body": "no text"}\n\n{"text": "good two"}\n')
    result, rows = _ingest(tmp_path, p, "jsonl")
    assert [r["text"] for r in rows] == ["good one", "good two"]
    assert result.extra["skipped"] == {"bad_json": 1, "not_an_object": 1, "no_text_field": 1}
    assert result.info["skip_examples"]["bad_json"].startswith(f"{p}:2")
    assert result.info["skip_examples"]["no_text_field"].startswith(f"{p}:4")


def test_truncated_gzip_keeps_what_was_read_and_counts_the_damage(tmp_path):
    p = tmp_path / "cut.jsonl.gz"
    payload = gzip.compress("".join(json.dumps({"text": f"line {i} " * 20}) + "\n" for i in range(200)).encode())
    p.write_bytes(payload[: len(payload) // 2])
    result, rows = _ingest(tmp_path, p, "jsonl")
    assert 0 < len(rows) < 200
    assert result.extra["skipped"] == {"truncated_gzip": 1}


def test_text_split_modes(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_bytes("\ufeffFirst paragraph\nstill first.\r\n\r\nSecond paragraph.\n\n\n".encode())
    _, whole = _ingest(tmp_path, p, "text")
    assert len(whole) == 1 and whole[0]["text"].startswith("First paragraph")
    _, paras = _ingest(tmp_path, p, "text", text_split="paragraph")
    assert [r["text"].strip() for r in paras] == ["First paragraph\nstill first.", "Second paragraph."]
    _, lines = _ingest(tmp_path, p, "text", text_split="line")
    assert len(lines) == 3


def test_non_utf8_text_file_is_reported_with_its_path_and_line(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes("ok line\ncaf\xe9 au lait\n".encode("latin-1"))
    result, rows = _ingest(tmp_path, p, "text")
    assert rows == [] and result.docs_out == 0
    assert f"{p}:2: not UTF-8" in result.info["error"]


def test_missing_and_empty_inputs_are_clear_errors(tmp_path):
    with pytest.raises(InputFileError, match=r"ingest\.inputs\[0\]\.path: '.*nope.txt' does not exist"):
        resolve_inputs(IngestParams(inputs=[InputSpec(path=str(tmp_path / "nope.txt"))]))
    with pytest.raises(InputFileError, match="matches no file"):
        resolve_inputs(IngestParams(inputs=[InputSpec(path=str(tmp_path / "*.jsonl"))]))
    with pytest.raises(InputFileError, match="ingest.inputs is empty"):
        resolve_inputs(IngestParams())
    odd = tmp_path / "data.xyz"
    odd.write_text("?")
    with pytest.raises(InputFileError, match=r"data\.xyz: cannot tell what kind"):
        resolve_inputs(IngestParams(inputs=[InputSpec(path=str(odd))]))


def test_resolve_inputs_expands_dirs_and_globs_once_each(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    (tmp_path / "b.txt").write_text("plain prose, not a chat export\n")
    files = resolve_inputs(
        IngestParams(inputs=[InputSpec(path=str(tmp_path / "*.jsonl")), InputSpec(path=str(tmp_path), kind="auto")])
    )
    assert [(f.path.split("/")[-1], f.kind) for f in files] == [("a.jsonl", "jsonl"), ("b.txt", "text")]


@pytest.mark.parametrize("path", ["", "   "])
def test_an_empty_input_path_is_an_error_not_the_working_directory(path):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="is empty: name a file, a folder or a glob"):
        InputSpec(path=path)


def test_a_folder_input_skips_hidden_files_and_folders_and_the_data_root(tmp_path):
    for name in ("notes.txt", "sub/more.txt", ".env", ".ssh/id_rsa", "sub/.git/config", "data/clean/x/part.txt",
                 ".prefect/prefect.db"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("plain prose, not a chat export\n")
    params = IngestParams(inputs=[InputSpec(path=str(tmp_path), kind="text"),
                                  InputSpec(path=str(tmp_path / "**" / "*.txt"), kind="text")])
    files = resolve_inputs(params, exclude=[tmp_path / "data"])
    assert sorted(str(Path(f.path).relative_to(tmp_path)) for f in files) == ["notes.txt", "sub/more.txt"]


def test_clean_shard_normalises_and_rejects_with_reason(tmp_path):
    from storage.parquet import ParquetShardWriter
    from storage.schemas import DOCUMENT_SCHEMA

    src = tmp_path / "in.parquet"
    base = {"source": "text", "url": None, "timestamp": None, "meta": None}
    with ParquetShardWriter(src, DOCUMENT_SCHEMA) as w:
        w.write_rows([
            {"id": "1", "text": "Cafe\u0301   au\u00a0lait\r\n\n\n\nnext\x07 line  ", **base},
            {"id": "2", "text": " \t \n ", **base},
            {"id": "3", "text": "tiny", **base},
        ])
    r = clean_shard(str(src), str(tmp_path / "out.parquet"), str(tmp_path / "rej.parquet"), CleanParams(min_chars=5))
    kept = list(iter_rows(tmp_path / "out.parquet"))
    assert [k["text"] for k in kept] == ["Café au lait\n\nnext line"]
    rejected = {r["id"]: r["reason"] for r in iter_rows(tmp_path / "rej.parquet")}
    assert rejected == {"2": "empty_after_clean", "3": "too_short"}
    assert (r.docs_in, r.docs_out) == (3, 1)
    assert r.extra["rules"]["unicode_nfc"] == 1


# --- WhatsApp and Common Crawl through ingest, then clean ----------------------------------------------------

SHARED = __import__("pathlib").Path(__file__).resolve().parents[2].parent / "shared" / "data"


def test_whatsapp_export_becomes_messages_and_one_document_per_session(tmp_path):
    export = tmp_path / "WhatsApp Chat with Kim.txt"
    export.write_text(
        "25/12/2021, 10:00 - Messages and calls are end-to-end encrypted. Tap to learn more.\n"
        "25/12/2021, 10:01 - Sam: Merry Christmas @\u2068Kim Lee\u2069!\n"
        "25/12/2021, 10:02 - Kim Lee: <Media omitted>\n"
        "25/12/2021, 10:03 - Kim Lee: thanks, you too\nsee you tonight\n"
        "26/12/2021, 09:00 - Sam: This message was deleted\n"
        "26/12/2021, 09:01 - Sam: call me on +44 7700 900123\n",
        encoding="utf-8",
    )
    f = InputFile(path=str(export), kind="whatsapp", source="whatsapp", sha256="0" * 64)
    docs_part, msgs_part = tmp_path / "docs.parquet", tmp_path / "msgs.parquet"
    result = ingest_file(f, str(docs_part), str(msgs_part), IngestParams(session_gap_hours=6))
    assert (result.extra["messages"], result.docs_out, result.info["error"]) == (6, 2, None)
    assert result.info["stats"]["kinds"] == {"text": 3, "media": 1, "deleted": 1, "edited": 0, "system": 1, "poll": 0}
    messages = list(iter_rows(msgs_part))
    assert [m["kind"] for m in messages] == ["system", "text", "media", "text", "deleted", "text"]
    assert messages[3]["text"] == "thanks, you too\nsee you tonight"
    docs = list(iter_rows(docs_part))
    # media, deleted and system messages stay out of the documents
    assert [d["text"] for d in docs] == [
        "Sam: Merry Christmas @\u2068Kim Lee\u2069!\nKim Lee: thanks, you too\nsee you tonight",
        "Sam: call me on +44 7700 900123",
    ]

    cleaned = tmp_path / "clean.parquet"
    r = clean_shard(str(docs_part), str(cleaned), str(tmp_path / "rejected.parquet"), CleanParams())
    assert [d["text"] for d in iter_rows(cleaned)] == [
        "Sam: Merry Christmas !\nKim Lee: thanks, you too\nsee you tonight",
        "Sam: call me on",
    ]
    assert r.extra["rules"] == {"mentions": 1, "phone_numbers": 1, "whitespace": 1}


def test_switched_off_rules_keep_what_they_remove_and_emptied_documents_are_dropped(tmp_path):
    from storage.parquet import ParquetShardWriter
    from storage.schemas import DOCUMENT_SCHEMA
    from tasks.clean import SUMMARY as summarize
    from tasks.cleaning import CleanRules

    src = tmp_path / "in.parquet"
    base = {"source": "text", "url": None, "timestamp": None, "meta": None}
    with ParquetShardWriter(src, DOCUMENT_SCHEMA) as w:
        w.write_rows([
            {"id": "1", "text": "<Media omitted>\nhttps://example.com/x", **base},
            {"id": "2", "text": "mail me at kim@example.com or see www.example.org", **base},
        ])
    params = CleanParams(rules=CleanRules(links=False))
    r = clean_shard(str(src), str(tmp_path / "out.parquet"), str(tmp_path / "rej.parquet"), params)
    assert [d["text"] for d in iter_rows(tmp_path / "out.parquet")] == [
        "https://example.com/x",
        "mail me at or see www.example.org",
    ]
    r2 = clean_shard(str(src), str(tmp_path / "out2.parquet"), str(tmp_path / "rej2.parquet"), CleanParams())
    assert [d["id"] for d in iter_rows(tmp_path / "out2.parquet")] == ["2"]
    assert [(d["id"], d["reason"]) for d in iter_rows(tmp_path / "rej2.parquet")] == [("1", "empty_after_clean")]
    counts, stats = summarize([r, r2])
    assert counts["dropped_empty_after_clean"] == 1 and counts["in"] == 4 and counts["out"] == 3
    assert stats["rules_fired"] == {"emails": 2, "links": 2, "media_placeholders": 2, "whitespace": 3}


@pytest.mark.skipif(not (SHARED / "commoncrawl").is_dir(), reason=f"shared data not found at {SHARED}")
@pytest.mark.parametrize(
    ("name", "kind", "documents", "skips"),
    [
        ("resiliparse_warcfile.warc.gz", "warc", 16, {}),
        ("whirlwind-python_whirlwind.warc.wet.gz", "wet", 1, {}),
        ("warcio_example-trunc.warc", "warc", 1, {"warc_read_error": 1}),
        ("warcio_example.warc.gz", "warc", 1, {"revisit": 1}),
        ("whirlwind-python_whirlwind.warc.wat.gz", "warc", 0, None),  # not WARC: the file is reported
    ],
)
def test_common_crawl_files_through_ingest(tmp_path, name, kind, documents, skips):
    path = SHARED / "commoncrawl" / name
    f = InputFile(path=str(path), kind=kind, source="commoncrawl", sha256="0" * 64)
    result = ingest_file(f, str(tmp_path / "part.parquet"), None, IngestParams())
    assert result.docs_out == documents == len(list(iter_rows(tmp_path / "part.parquet")))
    if skips is None:
        assert result.info["error"] is not None and str(path) in result.info["error"]
    else:
        assert result.info["error"] is None and result.extra["skipped"] == skips
        assert all(example.startswith(f"{path}:") for example in result.info["skip_examples"].values())


@pytest.mark.skipif(not (SHARED / "commoncrawl").is_dir(), reason=f"shared data not found at {SHARED}")
@pytest.mark.parametrize(
    ("name", "documents"),
    [("dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz", 697), ("dolma_cc_en_head-0091.jsonl.gz", 10)],
)
def test_dolma_jsonl_files_keep_the_page_url_and_crawl_time(tmp_path, name, documents):
    path = SHARED / "commoncrawl" / name
    result, rows = _ingest(tmp_path, path, "jsonl")
    assert (result.docs_out, result.info["error"], result.extra["skipped"]) == (documents, None, {})
    assert all(r["url"].startswith("http") for r in rows)
    assert all(r["timestamp"] is not None and r["timestamp"].tzinfo is not None for r in rows)
    assert len({r["id"] for r in rows}) == documents
