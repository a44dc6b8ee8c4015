"""`chatlike whatsapp parse PATH`: one JSON object per message on stdout; a file it cannot read is one line on
stderr and exit code 2."""

from __future__ import annotations

import inspect
import json
import zipfile
from datetime import datetime
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from flows.cli_whatsapp import whatsapp_app
from tasks.records import InputFileError
from tasks.whatsapp import parse_whatsapp_export
from tests.tasks.whatsapp.test_formats import LOCALE_EXPORTS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "whatsapp"
SHARED = ROOT.parent / "shared" / "data" / "whatsapp"


def runner() -> CliRunner:
    # Click before 8.2 mixes stderr into stdout unless told not to; later versions keep them apart
    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:
        return CliRunner(mix_stderr=False)
    return CliRunner()


def parse(*args: str | Path):
    return runner().invoke(whatsapp_app, ["parse", *map(str, args)])


def rows(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.iterdir()))
def test_every_example_prints_one_json_object_per_message(name):
    result = parse(EXAMPLES / name)
    assert result.exit_code == 0, result.stderr
    chat = parse_whatsapp_export(EXAMPLES / name)
    printed = rows(result)
    assert len(printed) == len(chat.messages) == len(result.stdout.splitlines())
    assert all(list(row) == ["timestamp", "author", "text", "kind"] for row in printed)
    assert printed == [
        {"timestamp": m.timestamp.isoformat(), "author": m.author, "text": m.text, "kind": m.kind}
        for m in chat.messages
    ]
    assert any("\n" in row["text"] for row in printed)  # multi-line texts stay on their message's line
    assert result.stderr == ""


def test_the_first_line_of_an_android_example():
    result = parse(EXAMPLES / "sam_priya_android_en_24h.txt")
    first_text = next(row for row in rows(result) if row["kind"] == "text")
    assert set(first_text) == {"timestamp", "author", "text", "kind"}
    assert first_text["author"] in {"Sam", "Priya"}
    assert datetime.fromisoformat(first_text["timestamp"]).tzinfo is None


def test_a_shared_export_with_emoji_authors_is_printed_unescaped():
    path = SHARED / "chat-miner_test_mmddyyyy_12hrs.txt"
    if not path.exists():
        pytest.skip(f"shared sample data not found at {path}")
    target = json.loads((SHARED / "chat-miner_target.json").read_text(encoding="utf-8"))
    result = parse(path)
    assert result.exit_code == 0, result.stderr
    assert "🤓" in result.stdout  # ensure_ascii=False
    texts = [
        {"timestamp": r["timestamp"], "author": r["author"], "message": r["text"].replace("\n", " ")}
        for r in rows(result)
        if r["kind"] == "text"
    ]
    assert sorted(texts, key=lambda r: r["timestamp"]) == sorted(target, key=lambda r: r["timestamp"])
    assert {r["kind"] for r in rows(result)} == {"text", "system"}
    assert all(r["author"] is None for r in rows(result) if r["kind"] == "system")


@pytest.mark.parametrize("name", sorted(LOCALE_EXPORTS))
def test_exports_written_by_other_locales_print_their_messages(tmp_path, name):
    text, expected = LOCALE_EXPORTS[name]
    path = tmp_path / f"{name}.txt"
    path.write_text(text, encoding="utf-8")
    result = parse(path)
    assert result.exit_code == 0, result.stderr
    assert [(r["timestamp"], r["author"], r["kind"]) for r in rows(result)] == [
        (when.isoformat(), author, kind) for when, author, kind in expected
    ]


def test_the_unknown_format_error_shows_lines_that_look_almost_like_headers(tmp_path):
    path = tmp_path / "korean_android.txt"
    path.write_text("2023년 3월 15일 오후 10:30, 민수 : 안녕\n2023년 3월 15일 오후 10:31, 지은 : 반가워\n", encoding="utf-8")
    error = one_line_error(parse(path))
    assert str(path) in error and '"2023년 3월 15일 오후 10:30, 민수 : 안녕"' in error


def test_date_order_chooses_only_when_the_dates_cannot(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text("03/04/21, 10:00 - Sam: hi\n05/04/21, 10:00 - Kim: hello\n", encoding="utf-8")
    default = parse(path)
    assert rows(default)[0]["timestamp"] == "2021-04-03T10:00:00"
    assert "no day above 12" in default.stderr and default.exit_code == 0
    chosen = parse(path, "--date-order", "mdy")
    assert rows(chosen)[0]["timestamp"] == "2021-03-04T10:00:00"
    path.write_text("25/12/21, 10:00 - Sam: hi\n", encoding="utf-8")
    decided = parse(path, "--date-order", "mdy")
    assert rows(decided)[0]["timestamp"] == "2021-12-25T10:00:00"
    assert "ignored" in decided.stderr  # the dates said day first


def test_an_unknown_date_order_is_a_usage_error(tmp_path):
    result = parse(EXAMPLES / "sam_priya_android_en_24h.txt", "--date-order", "yesterday")
    assert result.exit_code == 2 and result.stdout == ""


def one_line_error(result) -> str:
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_an_unknown_format_names_the_file_and_shows_its_first_lines(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("# Shopping list\n\n- eggs\n- milk: 2 l\n", encoding="utf-8")
    error = one_line_error(parse(path))
    assert str(path) in error and "no WhatsApp message header" in error
    assert '"# Shopping list" | "- eggs" | "- milk: 2 l"' in error


def test_a_zip_without_an_export_inside_shows_the_lines_of_its_text(tmp_path):
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello there\n")
    error = one_line_error(parse(path))
    assert str(path) in error and '"hello there"' in error


@pytest.mark.parametrize(
    "name, content, reason",
    [
        ("absent.txt", None, "no such file"),
        ("export.zip", b"PK\x03\x04 truncated archive", "not a readable zip archive"),
        ("picture.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary data"),
        ("empty.txt", b"\n\n", "empty file"),
        ("impossible.txt", b"31/02/2021, 10:00 - Sam: hi\n", "no line with a valid date"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_line_and_exit_2(tmp_path, name, content, reason):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    error = one_line_error(parse(path))
    assert error.startswith("error: ") and str(path) in error and reason in error


def test_a_directory_is_one_line_and_exit_2(tmp_path):
    error = one_line_error(parse(tmp_path))
    assert "is a directory" in error


def test_mounted_under_a_root_with_debug():
    """How `chatlike` mounts it: `chatlike whatsapp parse PATH`, and `chatlike --debug …` raises instead."""
    root = typer.Typer()

    @root.callback()
    def main(debug: bool = typer.Option(False, "--debug")) -> None:
        pass

    root.add_typer(whatsapp_app, name="whatsapp")
    ok = runner().invoke(root, ["whatsapp", "parse", str(EXAMPLES / "coloc_ios_fr_seconds.txt")])
    assert ok.exit_code == 0 and len(ok.stdout.splitlines()) == 52
    debug = runner().invoke(root, ["--debug", "whatsapp", "parse", "absent.txt"])
    assert isinstance(debug.exception, InputFileError)


def test_an_export_without_years_warns_and_takes_the_export_year(tmp_path):
    path = tmp_path / "old.txt"
    path.write_text("Dec 30, 8:11 PM - Ana: hola\nDec 31, 8:12 PM - Bo: hi there\nJan 2, 9:00 AM - Ana: ok\n")
    guessed = parse(path)
    assert guessed.exit_code == 0
    assert "give no year" in guessed.stderr and "--export-year" in guessed.stderr
    told = parse(path, "--export-year", "2013")
    assert told.exit_code == 0 and told.stderr == ""
    # the last message is of 2013; the year turns between the second and the third
    assert [row["timestamp"] for row in rows(told)] == [
        "2012-12-30T20:11:00", "2012-12-31T20:12:00", "2013-01-02T09:00:00"]
