"""`chatlike serve`: a local Prefect server on 127.0.0.1, the chatlike work pools, every deployment from
`prefect.yaml`, and a process worker per pool — what `make serve` runs.

Prefect's API has no login: whoever reaches it can run any deployment with any config. So it listens on
loopback unless `--allow-remote` says otherwise (`exposure_warning`).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from flows.temporary_server import server_environment

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0  # then SIGKILL: a worker asked to stop waits for its flow runs, and for ever once the server is gone
POOLS = {"chatlike-cpu": None, "chatlike-gpu": 1}  # pool → concurrency limit (GPU stages one at a time)


def _prefect() -> list[str]:
    return [sys.executable, "-m", "prefect"]


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or "localhost": an address only this machine can reach."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: only "localhost" is known to stay on this machine
        return False


def exposure_warning(host: str, port: int, allow_remote: bool, exposes: str, protect: str) -> str | None:
    """None for a loopback host; the warning to print when `allow_remote` lets a server listen beyond this
    machine; ValueError (a one-line refusal) otherwise. `exposes` says what anyone reaching it can do."""
    if is_loopback(host):
        return None
    if not allow_remote:
        raise ValueError(f"--host {host} is not a loopback address, and {exposes}; pass --allow-remote to serve it "
                         f"beyond this machine anyway")
    return f"warning: listening on {host}:{port}, reachable beyond this machine: {exposes}. {protect}"


PREFECT_EXPOSES = ("Prefect's API has no login: anyone who reaches the port can run any deployment with any config, "
                   "i.e. read any file this server can read into a dataset")
PREFECT_PROTECT = ("Protect it: set PREFECT_SERVER_API_AUTH_STRING='user:password' (Prefect's basic auth; clients then "
                   "need PREFECT_API_AUTH_STRING) and put it behind a reverse proxy with TLS, or let only a reverse "
                   "proxy with TLS and its own authentication reach it.")


def wait_healthy(api_url: str, timeout: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the Prefect server exited with code {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"{api_url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.5)
    raise TimeoutError(f"the Prefect server at {api_url} did not become healthy in {timeout:.0f} s")


@dataclass
class LocalPrefect:
    """A server + workers started by us; `stop()` ends them (and their children)."""

    api_url: str
    env: dict
    processes: list[subprocess.Popen] = field(default_factory=list)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM to every process group we started and every descendant (the flow runs a worker started),
        SIGKILL to what is left after grace_s. A worker turns SIGTERM into a graceful stop that waits for its
        flow runs and keeps retrying the API while the server shuts down (25 s and more), hence the deadline."""
        from tasks.training import terminate_process_groups

        terminate_process_groups(self.processes, grace_s)


def start_local_prefect(
    project_dir: str | os.PathLike,
    host: str = "127.0.0.1",
    port: int = 4200,
    log_dir: str | os.PathLike | None = None,
    extra_env: dict | None = None,
    deploy: bool = True,
) -> LocalPrefect:
    project = Path(project_dir).resolve()
    api_url = f"http://{host}:{port}/api"
    env = server_environment({**os.environ, **(extra_env or {})})  # the task run recorder's writes batched
    env.update(
        PREFECT_API_URL=api_url,
        CHATLIKE_PROJECT_DIR=str(project),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_UI_API_URL=api_url,
    )
    if env.get("PREFECT_SERVER_API_AUTH_STRING"):  # the server asks for it: our own clients and workers send it
        env.setdefault("PREFECT_API_AUTH_STRING", env["PREFECT_SERVER_API_AUTH_STRING"])
    logs = Path(log_dir) if log_dir else project / ".prefect" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    local = LocalPrefect(api_url=api_url, env=env)

    def spawn(name: str, args: list[str]) -> subprocess.Popen:
        out = open(logs / f"{name}.log", "ab")
        p = subprocess.Popen(args, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        local.processes.append(p)
        return p

    def run(args: list[str]) -> None:
        r = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"`prefect {' '.join(args[3:])}` failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")

    try:
        server = spawn("server", [*_prefect(), "server", "start", "--host", host, "--port", str(port)])
        wait_healthy(api_url, proc=server)
        for pool, limit in POOLS.items():
            run([*_prefect(), "work-pool", "create", pool, "--type", "process", "--overwrite"])
            if limit:
                run([*_prefect(), "work-pool", "set-concurrency-limit", pool, str(limit)])
        if deploy:
            run([*_prefect(), "--no-prompt", "deploy", "--all"])
        for pool in POOLS:
            spawn(f"worker-{pool}", [*_prefect(), "worker", "start", "--pool", pool, "--type", "process"])
    except BaseException:
        local.stop()
        raise
    return local


def serve_forever(project_dir: str | os.PathLike, host: str = "127.0.0.1", port: int = 4200) -> None:
    """Start everything, wait until SIGINT or SIGTERM (see flows/shutdown.py) or until a process dies, then stop
    them all."""
    local = start_local_prefect(project_dir, host, port)
    ui = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    print(f"Prefect UI: {ui}   (API {local.api_url})")
    print(f"Run a deployment:  PREFECT_API_URL={local.api_url} prefect deployment run 'pipeline/manual' --watch")
    print("Logs in .prefect/logs/. Ctrl-C or SIGTERM stops the server and the workers.", flush=True)
    try:
        while all(p.poll() is None for p in local.processes):
            time.sleep(1)
        bad = [p for p in local.processes if p.poll() is not None]
        raise RuntimeError(f"a Prefect process exited (code {bad[0].returncode}); see .prefect/logs/")
    except KeyboardInterrupt:
        pass
    finally:
        local.stop()
