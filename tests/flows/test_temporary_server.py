"""The temporary Prefect server of `chatlike run` and `chatlike eval` (flows/temporary_server.py): started by the
command before its imports, every log and flow run reaches it, nothing of it is left afterwards, and a server
that the user's Prefect settings name is used instead."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from flows.temporary_server import listening_socket, server_environment
from tests.conftest import ROOT

CHATLIKE = [sys.executable, "-m", "flows.cli"]


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_") and k != "DO_NOT_TRACK"}
    return {**env, **extra}


def _config(folder: Path) -> Path:
    cfg = {"name": "temp-server", "data_root": str(folder / "data"),
           "ingest": {"inputs": [{"path": str(ROOT / "examples" / "whatsapp"), "kind": "whatsapp"}]}}
    path = folder / "temp-server.yaml"
    path.write_text(json.dumps(cfg))
    return path


def _servers_of(prefect_home: Path) -> list[psutil.Process]:
    """The uvicorn processes serving the Prefect database of this home (other tests may run servers too)."""
    found = []
    for p in psutil.process_iter():
        try:
            if "uvicorn" in " ".join(p.cmdline()) and p.environ().get("PREFECT_HOME") == str(prefect_home):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def test_connections_to_the_servers_socket_do_not_wait_for_delayed_acks():
    with listening_socket() as listening:
        with socket.create_connection(listening.getsockname()) as client:
            accepted, _ = listening.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                client.sendall(b"ping")
                assert accepted.recv(4) == b"ping"


@pytest.mark.slow
def test_chatlike_run_records_its_runs_and_logs_in_its_own_server_and_leaves_nothing_running(tmp_path):
    r = subprocess.run([*CHATLIKE, "run", "--config", str(_config(tmp_path)), "--stop-after", "clean"],
                       cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not _servers_of(tmp_path / ".prefect")
    # the server's own log is a file in the Prefect home, not the command's output
    assert (tmp_path / ".prefect" / "temporary-server.log").is_file()
    # the database of the server, beside the data root: the three flow runs finished, and the logs the stages
    # wrote reached it before it stopped
    with sqlite3.connect(tmp_path / ".prefect" / "prefect.db") as db:
        runs = dict(db.execute("select flow.name, flow_run.state_type from flow_run join flow on flow.id = flow_run.flow_id"))
        logs = [m for (m,) in db.execute("select message from log")]
        tasks = db.execute("select name, state_type from task_run").fetchall()
    assert runs == {"pipeline": "COMPLETED", "ingest": "COMPLETED", "clean": "COMPLETED"}
    # the shard tasks too, in their final states: the server's task run recorder writes in batches
    # (SERVER_SETTINGS) and flushes the last one when the command stops it
    assert {name.split("-")[0] for name, _ in tasks} >= {"ingest", "clean"}, tasks
    assert {state for _, state in tasks} == {"COMPLETED"}, tasks
    assert any(m.startswith("pipeline 'temp-server': ingest → clean") for m in logs), logs[:5]


def test_the_server_settings_yield_to_the_users():
    mine = {"PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "1"}
    env = server_environment(mine)
    assert env["PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE"] == "1"
    assert env["PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL"] == "1"


@pytest.mark.slow
def test_a_server_named_in_the_users_prefect_profile_is_used_instead(tmp_path, prefect_harness):
    from prefect import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.settings import PREFECT_API_URL

    home = tmp_path / "my-prefect"
    home.mkdir()
    (home / "profiles.toml").write_text(
        f'active = "mine"\n\n[profiles.mine]\nPREFECT_API_URL = "{PREFECT_API_URL.value()}"\n')
    cfg = _config(tmp_path)
    r = subprocess.run([*CHATLIKE, "run", "--config", str(cfg), "--stop-after", "ingest"], cwd=tmp_path,
                       env=_env(PREFECT_HOME=str(home)), capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["pipeline"])))
    assert any(run.parameters.get("config") == str(cfg) for run in runs)
