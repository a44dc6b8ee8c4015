"""Hostile inputs to the ingest stage (issue 18, items 1 and 9, and the cases that already worked): each case
asserts what the user sees — the exit code and the one line naming the file, or the skip counted with its reason
in the run summary."""

from __future__ import annotations

import gzip
import json
import logging
import os
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from storage.dataset import list_datasets, read_manifest
from storage.runs import read_run_pointer
from tasks.ingest import InputFile, ingest_file, resolve_inputs
from tasks.params import IngestParams, InputSpec
from tasks.records import InputFileError
from tests.conftest import ROOT
from tests.tasks.test_commoncrawl import GOOD, a_bomb, http, warc_record

GOOD_JSONL = '{"text": "A perfectly readable document about rivers and bridges."}\n'


def _config(tmp_path: Path, inputs: list[dict], **ingest) -> Path:
    cfg = {"name": "hostile", "data_root": str(tmp_path / "data"), "ingest": {"inputs": inputs, **ingest}}
    p = tmp_path / "hostile.yaml"
    p.write_text(json.dumps(cfg))
    return p


@pytest.fixture(autouse=True)
def _console_logging_left_alone(monkeypatch):
    """`chatlike run` points Prefect's console log at the stderr of the moment; in this process that is CliRunner's
    capture, closed after each call. `test_chatlike_run_fails_on_unreadable_inputs` runs the real command."""
    monkeypatch.setattr("flows.cli._quiet_tracebacks", lambda: None)


def _run(cfg: Path, *extra: str):
    """`chatlike run` of the ingest stage in this process (the session's Prefect harness), as a user runs it."""
    return CliRunner().invoke(app, ["run", "--config", str(cfg), "--stop-after", "ingest", *extra])


def _error(r) -> list[str]:
    """What `chatlike` printed as its error: from the "error:" line on (Prefect's log lines come before it)."""
    lines = r.stderr.strip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    assert len(starts) == 1, r.stderr
    return [lines[starts[0]].removeprefix("error: ")] + lines[starts[0] + 1:]


def _status(cfg: Path):
    return CliRunner().invoke(app, ["status", "--config", str(cfg)])


def _ingest(tmp_path: Path, path: Path, kind: str, **params):
    f = InputFile(path=str(path), kind=kind, source=kind, sha256="0" * 64)
    return ingest_file(f, str(tmp_path / "out" / "part-00000.parquet"), None, IngestParams(**params))


def _bad_inputs(tmp_path: Path) -> list[tuple[Path, str, str]]:
    """Four files the ingest stage cannot read: (path, kind, what the error says)."""
    bad = tmp_path / "bad"
    bad.mkdir()
    with zipfile.ZipFile(bad / "slip.zip", "w") as z:
        z.writestr("../../evil.txt", "12/01/2024, 10:00 - Sam: hi\n")
    with zipfile.ZipFile(bad / "photos.zip", "w") as z:
        z.writestr("IMG-0001.jpg", b"\xff\xd8\xff\xe0")
    (bad / "notes.txt").write_text("Just a text file, nothing like a WARC file.\n")
    return [
        (bad / "slip.zip", "whatsapp", "zip slip"),
        (bad / "photos.zip", "whatsapp", "no chat text file"),
        (Path("/bin/ls"), "whatsapp", "not a WhatsApp chat export"),
        (bad / "notes.txt", "warc", "not a WARC file"),
    ]


# --- item 1: an unreadable input fails the run (or, with on_unreadable: skip, shows where the user looks) ------


def test_unreadable_inputs_fail_the_run_naming_every_file_and_publish_nothing(tmp_path, prefect_harness):
    (tmp_path / "good.jsonl").write_text(GOOD_JSONL)
    bad = _bad_inputs(tmp_path)
    cfg = _config(tmp_path, [{"path": str(tmp_path / "good.jsonl")}]
                  + [{"path": str(p), "kind": kind} for p, kind, _ in bad])

    r = _run(cfg)

    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = _error(r)
    assert lines[0].startswith("4 input files cannot be read") and len(lines) == 5
    for path, _, why in bad:
        named = [line for line in lines if line.startswith(f"{path}: ")]
        assert len(named) == 1 and why in named[0], (path, lines)
    assert list_datasets(tmp_path / "data") == []
    assert "ingest" not in read_run_pointer(tmp_path / "data", "hostile").get("stages", {})

    again = _run(cfg)  # nothing was published: the rerun fails again instead of saying "up to date"
    assert again.exit_code == 2 and _error(again)[0].startswith("4 input files cannot be read")


def test_a_rerun_after_fixing_the_input_reads_it_again(tmp_path, prefect_harness):
    notes = tmp_path / "notes.txt"
    notes.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    cfg = _config(tmp_path, [{"path": str(notes), "kind": "text"}])
    assert _run(cfg).exit_code == 2

    notes.write_text("café au lait\n")
    r = _run(cfg)

    assert r.exit_code == 0, r.output
    m = read_manifest(read_run_pointer(tmp_path / "data", "hostile")["stages"]["ingest"]["path"])
    assert m.counts["out"] == 1 and m.counts["files_unreadable"] == 0


def test_on_unreadable_skip_goes_on_and_lists_the_files_in_the_summary_status_and_artifact(tmp_path, prefect_harness):
    (tmp_path / "good.jsonl").write_text(GOOD_JSONL)
    bad = _bad_inputs(tmp_path)
    inputs = [{"path": str(tmp_path / "good.jsonl")}] + [{"path": str(p), "kind": kind} for p, kind, _ in bad]
    cfg = _config(tmp_path, inputs, on_unreadable="skip")

    r = _run(cfg)

    assert r.exit_code == 0, r.output
    assert "unreadable_files=4" in r.output  # the stage's row in the summary table
    listed = [line.strip() for line in r.output.splitlines() if line.startswith("  ")]
    for path, _, why in bad:
        assert len([line for line in listed if line.startswith(f"{path}: ") and why in line]) == 1, path
    status = _status(cfg)
    assert status.exit_code == 0 and all(str(p) in status.output.replace("\n", " ") for p, _, _ in bad)
    path = read_run_pointer(tmp_path / "data", "hostile")["stages"]["ingest"]["path"]
    m = read_manifest(path)
    assert m.counts["out"] == 1 and m.counts["files_unreadable"] == 4

    from flows.report import manifest_markdown

    artifact = manifest_markdown(m)
    assert "## Unreadable files" in artifact and all(str(p) in artifact for p, _, _ in bad)

    # back to the default: the dataset published under `skip` is not served as up to date
    fail = _run(_config(tmp_path, inputs))
    assert fail.exit_code == 2 and _error(fail)[0].startswith("4 input files cannot be read")


@pytest.mark.slow
def test_chatlike_run_fails_on_unreadable_inputs(tmp_path):
    bad = _bad_inputs(tmp_path)
    cfg = _config(tmp_path, [{"path": str(p), "kind": kind} for p, kind, _ in bad])
    r = subprocess.run([sys.executable, "-m", "flows.cli", "run", "--config", str(cfg), "--stop-after", "ingest"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    error = r.stderr[r.stderr.index("error: "):].splitlines()
    assert error[0] == ("error: 4 input files cannot be read (fix or remove them, or set ingest.on_unreadable: skip "
                        "to ingest the others):")
    assert [line.split(": ")[0] for line in error[1:]] == [str(p) for p, _, _ in bad]


def test_on_unreadable_is_fail_unless_set_to_skip():
    from pydantic import ValidationError

    assert IngestParams().on_unreadable == "fail"
    with pytest.raises(ValidationError, match="on_unreadable"):
        IngestParams(on_unreadable="ignore")


# --- item 9: silent drops -------------------------------------------------------------------------------------


def test_the_same_file_listed_twice_with_another_kind_is_a_config_error_naming_both(tmp_path):
    chat = tmp_path / "chat.txt"
    chat.write_text("12/01/2024, 10:00 - Sam: hi\n")
    params = IngestParams(inputs=[InputSpec(path=str(tmp_path), kind="whatsapp"),
                                  InputSpec(path=str(chat), kind="text")])
    with pytest.raises(InputFileError) as e:
        resolve_inputs(params)
    message = str(e.value)
    assert "ingest.inputs[0]" in message and "ingest.inputs[1]" in message and str(chat) in message
    assert "whatsapp" in message and "text" in message and "\n" not in message

    same = IngestParams(inputs=[InputSpec(path=str(tmp_path), kind="whatsapp"), InputSpec(path=str(chat))])
    assert [(f.path, f.kind) for f in resolve_inputs(same)] == [(str(chat), "whatsapp")]


def _members(records: list[bytes]) -> list[bytes]:
    return [gzip.compress(r, mtime=0) for r in records]


def test_a_wet_file_with_no_records_is_a_warned_and_counted_skip(tmp_path, caplog):
    path = tmp_path / "empty.wet.gz"
    path.write_bytes(b"".join(_members([warc_record("warcinfo", None, b"software: test\r\n", 0)])))

    with caplog.at_level(logging.WARNING):
        result = _ingest(tmp_path, path, "wet")

    assert result.docs_out == 0 and result.info["error"] is None
    assert result.extra["skipped"] == {"no_records": 1}
    assert str(path) in result.info["skip_examples"]["no_records"]
    assert any(str(path) in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


@pytest.mark.parametrize("kind", ["wet", "warc"])
def test_a_truncated_gzip_member_is_counted_as_truncated_gzip(tmp_path, kind):
    if kind == "wet":
        records = [warc_record("conversion", f"https://e{i}.example/", b"Some readable text here.\n" * 30, i + 1)
                   for i in range(3)]
    else:
        records = [warc_record("response", f"http://e{i}.example/", http(GOOD, "Content-Type: text/html"), i + 1)
                   for i in range(3)]
    members = _members([warc_record("warcinfo", None, b"software: test\r\n", 0), *records])
    path = tmp_path / f"cut.{kind}.gz"
    path.write_bytes(b"".join(members[:-1]) + members[-1][: len(members[-1]) // 2])  # a download cut short

    result = _ingest(tmp_path, path, kind)

    assert result.docs_out == 2
    assert result.extra["skipped"] == {"truncated_gzip": 1}
    assert result.info["skip_examples"]["truncated_gzip"].startswith(f"{path}:{len(b''.join(members[:-1]))}")


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip_per_record"])
def test_a_warc_record_past_the_payload_limit_is_counted_and_the_pages_around_it_are_kept(tmp_path, monkeypatch,
                                                                                          gzipped):
    """A response too big to be a web page (a film, a disk image; or a Content-Length that says so) is skipped without
    being read into memory, counted as `payload_too_large` where it is; the pages before and after it are read.
    `MAX_PAYLOAD` is lowered to 1 MiB (from 32 MiB) so that a 3 MiB page is past it."""
    monkeypatch.setattr("tasks.commoncrawl.MAX_PAYLOAD", 1 << 20)
    huge = http(b"<html><body><p>" + b"a page of one word " * ((3 << 20) // 19) + b"</p></body></html>",
                "Content-Type: text/html")
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0),
               warc_record("response", "http://before.example/", http(GOOD, "Content-Type: text/html"), 1),
               warc_record("response", "http://huge.example/", huge, 2),
               warc_record("response", "http://after.example/", http(GOOD, "Content-Type: text/html"), 3)]
    stored = _members(records) if gzipped else records
    path = tmp_path / ("huge.warc.gz" if gzipped else "huge.warc")
    path.write_bytes(b"".join(stored))

    result = _ingest(tmp_path, path, "warc")

    assert result.docs_out == 2 and result.info["error"] is None
    assert result.extra["skipped"] == {"payload_too_large": 1}
    offset = len(b"".join(stored[:2]))
    assert result.info["skip_examples"]["payload_too_large"].startswith(f"{path}:{offset}: http://huge.example/: ")


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd"])
def test_a_compressed_body_that_decodes_past_the_limit_is_counted_and_the_pages_around_it_are_kept(
    tmp_path, monkeypatch, encoding
):
    """A decompression bomb: 64 MiB of zeros stored in a few KB (gzip: 64 KB), past `MAX_DECODED_BODY` (here lowered
    to 1 MiB, from 32 MiB). Whatever its Content-Encoding, it is decoded no further than the limit and counted as
    `bad_content_encoding` where it is; the pages before and after it are read. Before, only gzip and deflate were
    bounded: a Brotli or zstd body was decoded whole, however big."""
    monkeypatch.setattr("tasks.commoncrawl.MAX_DECODED_BODY", 1 << 20)
    records = [warc_record("warcinfo", None, b"software: test\r\n", 0),
               warc_record("response", "http://before.example/", http(GOOD, "Content-Type: text/html"), 1),
               a_bomb(2, 64, encoding),
               warc_record("response", "http://after.example/", http(GOOD, "Content-Type: text/html"), 3)]
    path = tmp_path / "bomb.warc.gz"
    path.write_bytes(b"".join(_members(records)))

    tracemalloc.start()
    try:
        result = _ingest(tmp_path, path, "warc")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert result.docs_out == 2 and result.info["error"] is None
    assert result.extra["skipped"] == {"bad_content_encoding": 1}
    offset = len(b"".join(_members(records[:2])))
    assert result.info["skip_examples"]["bad_content_encoding"] == (
        f"{path}:{offset}: http://bomb.example/: {encoding}: decoded body larger than 1 MiB"
    )
    assert len(records[2]) < 80 << 10 and peak < 8 << 20


def test_an_empty_wet_is_shown_in_the_run_summary(tmp_path, prefect_harness):
    (tmp_path / "good.jsonl").write_text(GOOD_JSONL)
    empty = tmp_path / "empty.wet.gz"
    empty.write_bytes(b"".join(_members([warc_record("warcinfo", None, b"software: test\r\n", 0)])))
    cfg = _config(tmp_path, [{"path": str(tmp_path / "good.jsonl")}, {"path": str(empty), "kind": "wet"}])

    r = _run(cfg)

    assert r.exit_code == 0, r.output
    assert "no_records=1" in r.output


# --- cases that already worked: they must keep working ----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("{tmp}/nope.jsonl", "ingest.inputs[0].path: '{tmp}/nope.jsonl' does not exist"),
        ("{tmp}/*.warc.gz", "ingest.inputs[0].path: '{tmp}/*.warc.gz' matches no file"),
        ("{tmp}/chats.txt", "ingest.inputs[0].path: '{tmp}/chats.txt' matches no file"),  # a folder, empty
        ("{tmp}/data.xyz", "{tmp}/data.xyz: cannot tell what kind of input this is"),
    ],
    ids=["missing-path", "glob-matching-nothing", "empty-folder-named-like-a-file", "unknown-kind"],
)
def test_inputs_that_name_nothing_readable_are_one_line_errors(tmp_path, prefect_harness, path, message):
    (tmp_path / "chats.txt").mkdir()
    (tmp_path / "data.xyz").write_text("?")
    cfg = _config(tmp_path, [{"path": path.format(tmp=tmp_path)}])

    r = _run(cfg)

    assert r.exit_code == 2, r.output
    error = _error(r)
    assert len(error) == 1 and error[0].startswith(message.format(tmp=tmp_path))


@pytest.mark.parametrize("inputs", [[{"path": ""}], [{"path": "  "}], []], ids=["empty-path", "blank-path", "no-inputs"])
def test_an_empty_path_or_no_input_is_a_config_error(tmp_path, prefect_harness, inputs):
    r = _run(_config(tmp_path, inputs))
    assert r.exit_code == 2
    expected = "ingest.inputs is empty" if not inputs else "'ingest.inputs.0.path': is empty"
    error = _error(r)
    assert len(error) == 1 and expected in error[0]


def test_undecodable_text_fails_the_run_naming_the_file_and_line(tmp_path, prefect_harness):
    notes = tmp_path / "notes.txt"
    notes.write_bytes("first line\ncaf\xe9 au lait\n".encode("latin-1"))
    r = _run(_config(tmp_path, [{"path": str(notes), "kind": "text"}]))
    assert r.exit_code == 2
    assert _error(r)[1:] == [f"{notes}:2: not UTF-8 text (byte 14: b'\\xe9')"]


def test_a_jsonl_file_with_bad_lines_is_read_and_the_skips_are_counted_in_the_summary(tmp_path, prefect_harness):
    p = tmp_path / "mixed.jsonl"
    p.write_text(GOOD_JSONL + '{"text": broken\n' + "[1, 2]\n" + GOOD_JSONL.replace("rivers", "lakes"))
    r = _run(_config(tmp_path, [{"path": str(p)}]))
    assert r.exit_code == 0, r.output
    assert "bad_json=1" in r.output and "not_an_object=1" in r.output
    m = read_manifest(read_run_pointer(tmp_path / "data", "hostile")["stages"]["ingest"]["path"])
    assert m.counts["out"] == 2 and m.stats["skip_examples"]["bad_json"].startswith(f"{p}:2")


def test_a_truncated_jsonl_gz_keeps_what_was_read_and_counts_the_damage(tmp_path):
    p = tmp_path / "cut.jsonl.gz"
    payload = gzip.compress("".join(json.dumps({"text": f"line {i} " * 20}) + "\n" for i in range(200)).encode())
    p.write_bytes(payload[: len(payload) // 2])
    result = _ingest(tmp_path, p, "jsonl")
    assert 0 < result.docs_out < 200 and result.extra["skipped"] == {"truncated_gzip": 1}
    assert result.info["skip_examples"]["truncated_gzip"].startswith(f"{p}:")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_a_file_without_read_permission_is_named(tmp_path):
    p = tmp_path / "secret.jsonl"
    p.write_text(GOOD_JSONL)
    p.chmod(0)
    with pytest.raises(InputFileError, match=f"{p}: cannot be read \\(permission denied\\)"):
        resolve_inputs(IngestParams(inputs=[InputSpec(path=str(p))]))


def test_file_names_as_whatsapp_writes_them_are_ingested(tmp_path, prefect_harness):
    """'WhatsApp Chat with José.txt' (spaces, non-ASCII) and names with '%', '#' or brackets: Prefect refuses such
    characters in asset keys, so they once failed the publish. Two names differing only there stay two keys."""
    from flows.stage_runner import asset_key

    inbox = tmp_path / "WhatsApp exports [2025]"
    inbox.mkdir()
    chat = (ROOT / "examples" / "whatsapp" / "sam_priya_android_en_24h.txt").read_bytes()
    for name in ("WhatsApp Chat with José.txt", "WhatsApp Chat with Jos#.txt", "100% chat.txt"):
        (inbox / name).write_bytes(chat)
    r = _run(_config(tmp_path, [{"path": str(inbox), "kind": "whatsapp"}]))
    assert r.exit_code == 0, r.stderr
    keys = {asset_key(p) for p in inbox.iterdir()}
    assert len(keys) == 3 and all(" " not in k and "%" not in k for k in keys)
    assert asset_key(tmp_path / "plain.txt") == (tmp_path / "plain.txt").resolve().as_uri()  # unchanged otherwise
