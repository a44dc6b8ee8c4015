"""End to end through a real Prefect server and process worker on loopback, deployed from prefect.yaml."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from storage.dataset import read_manifest
from storage.runs import read_run_pointer
from tests.conftest import ROOT
from tests.flows.test_training import _cfg as _training_config

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def local_prefect(tmp_path):
    from flows.serve import start_local_prefect

    home = tmp_path / "prefect-home"
    env = {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "INFO"}
    local = start_local_prefect(ROOT, port=_free_port(), log_dir=tmp_path / "logs", extra_env=env)
    yield local
    local.stop()
    for name in ("server", "worker-chatlike-cpu"):
        log = tmp_path / "logs" / f"{name}.log"
        if log.exists():
            sys.stderr.write(f"--- {name}.log (tail) ---\n{log.read_text()[-3000:]}\n")


def _prefect(local, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "prefect", *args], cwd=ROOT, env=local.env, capture_output=True, text=True, timeout=timeout
    )


def test_deployment_run_pipeline_manual_end_to_end(tmp_path, local_prefect):
    cfg_path = _training_config(tmp_path)  # the example chats and prose, every stage through lora, tiny model
    ls = _prefect(local_prefect, "deployment", "ls")
    assert ls.returncode == 0, ls.stderr
    for name in ("ingest/default", "clean/default", "pipeline/manual", "pipeline/nightly"):
        assert name in ls.stdout.replace("\n", " ") or name.split("/")[1] in ls.stdout, ls.stdout

    r = _prefect(local_prefect, "deployment", "run", "pipeline/manual", "--param", f"config={cfg_path}", "--watch",
                 "--watch-timeout", "240")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Completed" in r.stdout

    pointer = read_run_pointer(tmp_path / "data", "train")
    ingest = read_manifest(pointer["stages"]["ingest"]["path"])
    clean = read_manifest(pointer["stages"]["clean"]["path"])
    assert ingest.counts["files_in"] == 6 and clean.counts["in"] == ingest.counts["out"] > 0
    encode = read_manifest(pointer["stages"]["encode"]["path"])  # the whole data chain ran in the worker
    assert encode.counts["tokens_train"] > 0
    lora = read_manifest(pointer["stages"]["lora"]["path"])  # and the three training runs
    assert lora.counts["steps"] == 6 and set(lora.stats["assistant_perplexity"]) == {"base", "sft", "lora"}

    # A single stage through its own deployment: up to date, so it reuses the same dataset.
    r = _prefect(local_prefect, "deployment", "run", "clean/default", "--param", f"config={cfg_path}", "--watch",
                 "--watch-timeout", "240")
    assert r.returncode == 0 and "Completed" in r.stdout, r.stdout + r.stderr
    assert read_run_pointer(tmp_path / "data", "train")["stages"]["clean"]["path"] == clean.path

    # The nightly deployment carries its cron schedule.
    r = _prefect(local_prefect, "deployment", "inspect", "pipeline/nightly")
    assert r.returncode == 0 and "0 3 * * *" in r.stdout, r.stdout
