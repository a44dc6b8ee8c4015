"""The temporary Prefect server of a command that runs flows in the foreground (`chatlike run`, `chatlike eval`)
when no PREFECT_API_URL names one: the server Prefect's ephemeral mode starts (the same uvicorn command, the same
SQLite database in Prefect's home), started by the command itself, first.

Prefect starts its own when the first flow runs, so its start-up (4–5 s) follows the command's imports instead
of overlapping them, and to start a subprocess it imports the server's code into the command (the FastAPI app
and the database models: 3 s of CPU). `chatlike run` of the demo with every stage up to date took 22 s with
Prefect's, 11 s with this one (with the lighter imports of the same change).
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0
SERVER_LOG = "temporary-server.log"  # in the Prefect home

# The server's task run recorder (task runs and their states, from the events clients send) writes each event as
# it arrives, from the message handler itself. On SQLite those writes contend with the API's for the one write
# lock, and about one flow run in twenty-five stalled for 60 s (the busy timeout: "database is locked" in the
# server's log, the recorder's write failing and retried) and half of them waited ~2 s more; measured on the
# tests' small pipeline (ingest + clean), 80 runs in one server: 230-490 s with the default, 78 s with the
# recorder off, 88 s with writes batched (at most every second). Batched, task runs still reach the UI, a
# second later. Variables the user has set win.
SERVER_SETTINGS = {
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "500",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
}


def server_environment(env: dict[str, str]) -> dict[str, str]:
    """`env` with SERVER_SETTINGS where it sets none of them."""
    return {**SERVER_SETTINGS, **env}


def listening_socket() -> socket.socket:
    """A TCP socket listening on a free loopback port, for uvicorn to serve on. With TCP_NODELAY, which the
    connections it accepts inherit: uvicorn reads a socket handed to it as a Unix one and leaves Nagle's algorithm
    on, and each small response then waited for the client's delayed ACK (measured: 0.40 s a subflow run instead
    of 0.15 s)."""
    listening = socket.socket()
    try:
        listening.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        listening.bind(("127.0.0.1", 0))
        listening.listen(128)
    except OSError:
        listening.close()
        raise
    return listening


class TemporaryServer:
    """A Prefect server on a free loopback port for this command only: `start()` returns at once, `wait()`
    blocks until it answers, `stop()` ends it (also at exit). The port is bound here and the listening socket
    handed to uvicorn (`--fd`), so no other process can take the port while the server starts."""

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start(self) -> None:
        with listening_socket() as listening:
            self.port = listening.getsockname()[1]
            env = {**server_environment(dict(os.environ)), "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                   "PREFECT__SERVER_FINAL": "1"}
            # the server's own log (its services' errors, with tracebacks) goes to a file in the Prefect home,
            # not into the command's output, where errors are one line
            home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
            home.mkdir(parents=True, exist_ok=True)
            self.log_path = home / SERVER_LOG
            with open(self.log_path, "wb") as out:  # the latest command's server only
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
                     "--fd", str(listening.fileno()), "--log-level", "error", "--lifespan", "on"],
                    env=env, pass_fds=[listening.fileno()], stdout=out, stderr=subprocess.STDOUT,
                )
        atexit.register(self.stop)
        log.info("Starting temporary server on http://127.0.0.1:%d", self.port)

    def wait(self, timeout: float) -> None:
        """Until the server answers its health check."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise RuntimeError(f"the temporary Prefect server exited with code {code} before it was ready "
                                   f"(its log: {self.log_path})")
            try:  # the connection waits in the socket's queue until the server accepts it
                with urllib.request.urlopen(f"{self.api_url}/health", timeout=1) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                time.sleep(0.05)
        raise TimeoutError(f"the temporary Prefect server did not answer within {timeout:.0f} s "
                           "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        log.info("Stopping temporary server on http://127.0.0.1:%d", self.port)
        process.terminate()
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()



def start_temporary_server() -> TemporaryServer | None:
    """Starts the command's server unless PREFECT_API_URL names one, and points Prefect at it (before Prefect is
    imported: it reads its settings then)."""
    if os.environ.get("PREFECT_API_URL"):
        return None
    server = TemporaryServer()
    server.start()
    os.environ["PREFECT_API_URL"] = server.api_url
    return server


@contextmanager
def temporary_server_ready(server: TemporaryServer | None) -> Iterator[None]:
    """Around the command's flows: waits for the server. When the user's Prefect settings name a server (a
    profile, prefect.toml), that one is used instead, as Prefect would. The server stops at exit, after Prefect
    has sent the last logs and events (its services drain before atexit hooks run)."""
    if server is None:
        yield
        return
    theirs = _configured_api_url()
    if theirs:
        server.stop()
        del os.environ["PREFECT_API_URL"]
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: theirs}):
            yield
        return
    server.wait(float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS") or 90))
    yield


def _configured_api_url() -> str | None:
    """The API URL the user's Prefect settings name, read without the variable `start_temporary_server` set."""
    from prefect.settings.models.root import Settings

    ours = os.environ.pop("PREFECT_API_URL", None)
    try:
        return Settings().api.url
    finally:
        if ours is not None:
            os.environ["PREFECT_API_URL"] = ours
