"""`chatlike serve`: a local Prefect server on 127.0.0.1, the chatlike work pools, every deployment from
`prefect.yaml`, and a process worker per pool — what `make serve` runs."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

POOLS = {"chatlike-cpu": None, "chatlike-gpu": 1}  # pool → concurrency limit (GPU stages one at a time)


def _prefect() -> list[str]:
    return [sys.executable, "-m", "prefect"]


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

    def stop(self) -> None:
        for p in reversed(self.processes):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for p in reversed(self.processes):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


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
    env = {**os.environ, **(extra_env or {})}
    env.update(
        PREFECT_API_URL=api_url,
        CHATLIKE_PROJECT_DIR=str(project),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_UI_API_URL=api_url,
    )
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
    local = start_local_prefect(project_dir, host, port)
    ui = f"http://{host}:{port}"
    print(f"Prefect UI: {ui}   (API {local.api_url})")
    print(f"Run a deployment:  PREFECT_API_URL={local.api_url} prefect deployment run 'pipeline/manual' --watch")
    print("Logs in .prefect/logs/. Ctrl-C stops the server and the workers.")
    try:
        while all(p.poll() is None for p in local.processes):
            time.sleep(1)
        bad = [p for p in local.processes if p.poll() is not None]
        raise RuntimeError(f"a Prefect process exited (code {bad[0].returncode}); see .prefect/logs/")
    except KeyboardInterrupt:
        pass
    finally:
        local.stop()
