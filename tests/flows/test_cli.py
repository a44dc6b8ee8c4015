"""The `chatlike` command line: one-line errors with exit code 2, status, lineage, gc."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.conftest import ROOT
from tests.flows.test_pipeline import _config

CHATLIKE = [sys.executable, "-m", "flows.cli"]


def _run(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([*CHATLIKE, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--config", "nope.yaml"], "nope.yaml: config file not found"),
        (["run", "--only", "tokenise"], "no stage named 'tokenise'; the stages are: ingest, clean, langid-train, langid"),
        (["lineage", "/definitely/not/here"], "not a dataset"),
    ],
)
def test_errors_are_one_clear_line_and_exit_code_2(args, message):
    r = _run(*args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    assert len([line for line in r.stderr.splitlines() if line.strip()]) <= 2  # one message (maybe wrapped)


def test_bad_config_key_is_named(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("ingest:\n  inputz: []\n")
    r = _run("run", "--config", str(p))
    assert r.returncode == 2 and "unknown key 'ingest.inputz'" in r.stderr


def test_debug_shows_the_traceback():
    r = _run("--debug", "run", "--config", "nope.yaml")
    assert r.returncode != 0 and "Traceback" in r.stderr


def test_status_lineage_and_gc_after_a_run(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow

    cfg_path = _config(tmp_path)
    out = pipeline_flow(config=str(cfg_path), stop_after="clean")
    old = pipeline_flow(config=str(_config(tmp_path, min_chars=2)), stop_after="clean")["clean"]
    pipeline_flow(config=str(_config(tmp_path)), stop_after="clean")  # the pointer is back on the first clean output
    runner = CliRunner()

    r = runner.invoke(app, ["status", "--config", str(cfg_path), "--json"])
    assert r.exit_code == 0, r.output
    pointer = json.loads(r.output)
    assert pointer["stages"]["clean"]["path"] == out["clean"] and pointer["stages"]["clean"]["rows"] == 3

    r = runner.invoke(app, ["status", "--config", str(cfg_path)])
    assert r.exit_code == 0 and "clean" in r.output and "too_short=1" in r.output

    r = runner.invoke(app, ["lineage", out["clean"]])
    assert r.exit_code == 0, r.output
    assert "ingest" in r.output and "docs.jsonl" in r.output and "story.txt" in r.output

    r = runner.invoke(app, ["gc", "--config", str(cfg_path), "--yes"])
    assert r.exit_code == 0, r.output
    assert old.split("/")[-1] in r.output
    from pathlib import Path

    assert not Path(old).exists() and Path(out["clean"]).exists() and Path(out["ingest"]).exists()
    r = runner.invoke(app, ["gc", "--config", str(cfg_path), "--yes"])
    assert "nothing to delete" in r.output
