"""Hostile processes and places (issue 18, items 5, 8, 10, 11): SIGTERM and SIGINT to the long-running commands,
a Prefect home outside the checkout, servers asked to listen beyond this machine, a data root nobody can write.

The signal tests start each command as a supervisor does (a session of its own), wait until it is up, collect
every process of its tree, send the signal to the command's main process only (as `kill`, systemd or docker do)
and check that the command exits soon and that none of its tree is left. `chatlike chat --web` has the same
tests in tests/flows/test_chat_web.py; the training launcher's are in tests/tasks/test_training_launcher.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from flows.chat_web import CHAT_EXPOSES, CHAT_PROTECT
from flows.cli import app
from flows.cli_chat import chat_app
from flows.serve import PREFECT_EXPOSES, PREFECT_PROTECT, exposure_warning
from tests.browser import chatlike_command
from tests.conftest import ROOT

STOP_BOUND_S = 20  # the commands give their children 5-10 s before SIGKILL; the rest is a busy 2-core machine
UP_TIMEOUT_S = 300


class Command:
    """`chatlike ARGS` in a session of its own; its output (stdout and stderr) read line by line as it comes."""

    def __init__(self, args: list[str], cwd: Path, env: dict):
        self.proc = subprocess.Popen([*chatlike_command(), *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.lines: list[str] = []
        self.seen: list[psutil.Process] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self._reader.start()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_until(self, ready, what: str, timeout: float = UP_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.proc.poll() is None, f"exited with {self.proc.returncode} before {what}:\n{self.output}"
            assert time.monotonic() < deadline, f"no {what} after {timeout} s:\n{self.output}"
            time.sleep(0.1)

    def tree(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)

    def stop(self, sig: int) -> tuple[int, float, list[psutil.Process]]:
        """Send `sig` to the main process; its exit code, the seconds it took, and what is left of its tree."""
        tree = self.seen = self.tree()
        start = time.monotonic()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            code = None
        seconds = time.monotonic() - start
        _, alive = psutil.wait_procs(tree, timeout=5)
        self._reader.join(timeout=5)
        return code, seconds, alive

    def kill(self) -> None:
        """Whatever is left of the tree, however the test went."""
        for p in [*self.seen, *(self.tree() if self.proc.poll() is None else [])]:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _clean_env(**extra: str) -> dict:
    """The test process's environment without Prefect's variables: the command has to set them itself."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_") and k != "DO_NOT_TRACK"}
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


def _pipeline_config(folder: Path, data_root: str = "data") -> Path:
    cfg = {"name": "hostile", "data_root": data_root,
           "ingest": {"inputs": [{"path": str(ROOT / "examples" / "whatsapp"), "kind": "whatsapp"},
                                 {"path": str(ROOT / "examples" / "text" / "*.txt"), "kind": "text"}]}}
    path = folder / "hostile.yaml"
    path.write_text(json.dumps(cfg))
    return path


def _is_ephemeral_server(p: psutil.Process) -> bool:
    try:
        return "uvicorn" in p.cmdline()
    except psutil.NoSuchProcess:
        return False


def _describe(processes: list[psutil.Process]) -> list[str]:
    return [f"{p.pid} {' '.join(p.cmdline()[:6])}" for p in processes if p.is_running()]


# ------------------------------------------------------------------------------------------------------------
# chatlike run: SIGTERM in the middle of a run, started outside the checkout with HOME elsewhere


@dataclass
class StoppedRun:
    folder: Path
    home: Path
    server_env: dict
    code: int | None
    seconds: float
    left: list[psutil.Process]
    output: str


@pytest.fixture(scope="module")
def run_stopped_by_sigterm(tmp_path_factory) -> StoppedRun:
    folder = tmp_path_factory.mktemp("outside-the-checkout")
    home = folder / "home"
    home.mkdir()
    command = Command(["run", "--config", str(_pipeline_config(folder))], folder, _clean_env(HOME=str(home)))
    try:
        command.wait_until(lambda: "Beginning flow run" in command.output, "flow run")
        server = next((p for p in command.tree() if _is_ephemeral_server(p)), None)
        assert server is not None, _describe(command.tree())
        server_env = server.environ()
        code, seconds, left = command.stop(signal.SIGTERM)
        return StoppedRun(folder, home, server_env, code, seconds, left, command.output)
    finally:
        command.kill()


@pytest.mark.slow
def test_sigterm_stops_chatlike_run_and_its_prefect_server(run_stopped_by_sigterm):
    run = run_stopped_by_sigterm
    assert run.code == 128 + signal.SIGTERM and run.seconds < STOP_BOUND_S, (run.code, run.seconds, run.output)
    assert not run.left, f"left running: {_describe(run.left)}"
    assert "Traceback" not in run.output


@pytest.mark.slow
def test_chatlike_run_outside_the_checkout_keeps_prefect_beside_the_data_root_without_analytics(
        run_stopped_by_sigterm):
    run = run_stopped_by_sigterm
    assert not (run.home / ".prefect").exists(), "Prefect wrote into the user's home"
    prefect_home = run.folder / ".prefect"  # beside the data root `data/`
    assert (prefect_home / "prefect.db").is_file()
    assert run.server_env["PREFECT_HOME"] == str(prefect_home)
    assert run.server_env["PREFECT_SERVER_ANALYTICS_ENABLED"].lower() == "false"
    assert run.server_env["DO_NOT_TRACK"] == "1"
    assert "telemetry" not in run.output.lower()


def test_the_users_prefect_home_wins_and_analytics_stay_off(tmp_path):
    """What Prefect itself reads in a command's process, where the user has set PREFECT_HOME."""
    mine = tmp_path / "my-prefect"
    code = ("from pathlib import Path\n"
            "from flows.cli import _prefect_environment\n"
            "_prefect_environment(Path('data').resolve().parent / '.prefect')\n"
            "from prefect.settings import get_current_settings\n"
            "s = get_current_settings()\n"
            "print(s.home, s.server.analytics_enabled)\n")
    env = _clean_env(HOME=str(tmp_path), PREFECT_HOME=str(mine), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(mine), "False"]
    assert not (tmp_path / ".prefect").exists()


# ------------------------------------------------------------------------------------------------------------
# chatlike run: SIGINT while Prefect's ephemeral server starts


@pytest.mark.slow
def test_sigint_stops_chatlike_run_while_its_prefect_server_starts(tmp_path):
    command = Command(["run", "--config", str(_pipeline_config(tmp_path))], tmp_path,
                      _clean_env(HOME=str(tmp_path)))
    try:
        command.wait_until(lambda: any(map(_is_ephemeral_server, command.tree())), "Prefect server process")
        code, seconds, left = command.stop(signal.SIGINT)
    finally:
        command.kill()
    assert code == 128 + signal.SIGINT and seconds < STOP_BOUND_S, (code, seconds, command.output)
    assert not left, f"left running: {_describe(left)}"


# ------------------------------------------------------------------------------------------------------------
# chatlike serve: SIGTERM stops the server and both workers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_sigterm_stops_chatlike_serve_with_its_server_and_workers(tmp_path):
    port = _free_port()
    env = _clean_env(HOME=str(tmp_path), PREFECT_HOME=str(tmp_path / "prefect-home"))
    command = Command(["serve", "--port", str(port)], ROOT, env)
    try:
        command.wait_until(lambda: "Prefect UI:" in command.output, "'Prefect UI:' line")
        started = " ".join(" ".join(p.cmdline()) for p in command.tree())
        assert "server start" in started and started.count("worker start") == 2, started
        code, seconds, left = command.stop(signal.SIGTERM)
    finally:
        command.kill()
    assert code == 128 + signal.SIGTERM and seconds < STOP_BOUND_S, (code, seconds, command.output)
    assert not left, f"left running: {_describe(left)}"
    assert not _port_open(port)


# ------------------------------------------------------------------------------------------------------------
# servers beyond loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.org"])
def test_serve_refuses_a_host_beyond_loopback_without_allow_remote(host):
    r = CliRunner().invoke(app, ["serve", "--host", host, "--port", str(_free_port())])
    assert r.exit_code == 2
    assert f"--host {host} is not a loopback address" in r.stderr and "--allow-remote" in r.stderr
    assert r.stderr.strip().count("\n") == 0


def test_chat_web_refuses_a_host_beyond_loopback_before_loading_the_model(tmp_path):
    r = CliRunner().invoke(chat_app, ["--checkpoint", str(tmp_path / "none"), "--web", "--host", "0.0.0.0"])
    assert r.exit_code == 2
    assert "--host 0.0.0.0 is not a loopback address" in r.stderr and "--allow-remote" in r.stderr
    assert r.stderr.strip().count("\n") == 0


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "localhost"])
def test_loopback_hosts_need_no_permission_and_get_no_warning(host):
    assert exposure_warning(host, 4200, False, PREFECT_EXPOSES, PREFECT_PROTECT) is None


def test_allow_remote_says_what_is_exposed_and_how_to_protect_it():
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_SERVER_API_AUTH_STRING

    warning = exposure_warning("0.0.0.0", 4200, True, PREFECT_EXPOSES, PREFECT_PROTECT)
    assert warning.startswith("warning: listening on 0.0.0.0:4200, reachable beyond this machine")
    assert "anyone who reaches the port can run any deployment with any config" in warning
    assert "read any file this server can read" in warning
    for setting in (PREFECT_SERVER_API_AUTH_STRING, PREFECT_API_AUTH_STRING):  # the advice names real settings
        assert setting.name in warning
    assert "reverse proxy with TLS" in warning
    chat = exposure_warning("0.0.0.0", 8765, True, CHAT_EXPOSES, CHAT_PROTECT)
    assert "anyone who reaches the port can talk to the model" in chat and "reverse proxy" in chat


# ------------------------------------------------------------------------------------------------------------
# a data root nobody can write


@pytest.mark.parametrize("command", ["run", "eval"])
def test_an_unwritable_data_root_is_named_before_prefect_starts(tmp_path, command):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")  # a path below a file cannot be created, not even by root
    data_root = blocker / "data"
    cfg = _pipeline_config(tmp_path, data_root=str(data_root))
    r = CliRunner().invoke(app, [command, "--config", str(cfg)])
    assert r.exit_code == 2, r.output
    assert f"data_root {data_root}: cannot write there" in r.stderr
    assert r.stderr.strip().count("\n") == 0
    assert "Starting temporary server" not in r.output
