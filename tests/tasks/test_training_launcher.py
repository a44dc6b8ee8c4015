"""The training launcher: lines arrive while the child runs, exit codes come back, and an interrupted caller
takes the whole process group down with it (children of the child included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tasks.training import run_streaming, training_command


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is dead for our purpose
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_dead(pids, timeout=5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def _interrupt_once_pids_are_printed(child: str, grace_s: float) -> list[int]:
    """Run `child` (Python code that prints "pids P1 P2…") through run_streaming and interrupt the caller as soon
    as the pids arrive, as Ctrl-C would; returns them."""
    pids: list[int] = []

    def log(line: str) -> None:
        if line.startswith("pids"):
            pids.extend(int(p) for p in line.split()[1:])
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_streaming([sys.executable, "-c", child], log, grace_s=grace_s)
    return pids


def _start_launcher(code: str, **popen) -> subprocess.Popen:
    """A separate Python process running `code`, with the project importable."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen([sys.executable, "-c", code], env=env, **popen)


def _pids_written(pids_file: Path, launcher: subprocess.Popen) -> list[int]:
    """The pids that the launcher's training process printed ("pids P1 P2…", written to `pids_file`)."""
    deadline = time.monotonic() + 60
    while not (pids_file.exists() and pids_file.read_text().startswith("pids")):
        assert time.monotonic() < deadline and launcher.poll() is None, launcher.stderr and launcher.stderr.read()
        time.sleep(0.05)
    return [int(p) for p in pids_file.read_text().split()[1:]]


def test_lines_are_streamed_as_they_are_printed(tmp_path):
    go = tmp_path / "go"
    child = (
        "import os, time\n"
        "print('first', flush=True)\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
        "print('second')\n"
    )
    seen: list[str] = []

    def log(line: str) -> None:
        seen.append(line)
        if line == "first":
            go.touch()  # the child waits for this: it only finishes if 'first' arrived while it was running

    assert run_streaming([sys.executable, "-c", child], log) == 0
    assert seen == ["first", "second"]


def test_exit_code_is_returned_or_raised_with_the_last_lines():
    child = "import sys\nfor i in range(100): print('line', i)\nprint('boom', file=sys.stderr)\nsys.exit(3)"
    assert run_streaming([sys.executable, "-c", child], lambda line: None, check=False) == 3
    with pytest.raises(RuntimeError, match=r"exited with code 3(.|\n)*line 99\nboom"):
        run_streaming([sys.executable, "-c", child], lambda line: None)


def test_keyboard_interrupt_kills_the_process_group(tmp_path):
    child = (
        "import os, subprocess, sys, time\n"
        "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('pids', os.getpid(), grandchild.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    start = time.monotonic()
    pids = _interrupt_once_pids_are_printed(child, grace_s=5)
    assert len(pids) == 2
    assert _wait_dead(pids), "the child or its child survived"
    assert time.monotonic() - start < 30


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period():
    child = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )

    def log(line: str) -> None:
        raise RuntimeError("caller failed")

    start = time.monotonic()
    with pytest.raises(RuntimeError, match="caller failed"):
        run_streaming([sys.executable, "-c", child], log, grace_s=0.5)
    assert time.monotonic() - start < 10


def test_training_command_uses_torchrun_for_several_processes():
    assert training_command(["--config", "r.json"], 1)[1:] == ["-m", "model.train", "--config", "r.json"]
    cmd = training_command(["--config", "r.json"], 4)
    assert cmd[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=4"]
    assert cmd[-4:] == ["-m", "model.train", "--config", "r.json"]
    with pytest.raises(ValueError):
        training_command([], 0)


def test_sigterm_to_a_prefect_flow_process_kills_the_training_tree(tmp_path):
    """How a cancelled deployment run ends: the worker sends SIGTERM to the flow-run process, where Prefect's
    `capture_sigterm` turns it into an exception; the launcher must then take the training tree down too."""
    training = (
        "import os, subprocess, sys, time\n"
        "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('pids', os.getpid(), grandchild.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    pids_file = tmp_path / "pids"
    flow_process = (
        "import sys\n"
        "from prefect.utilities.engine import capture_sigterm\n"
        "from tasks.training import run_streaming\n"
        "def log(line):\n"
        f"    open({str(pids_file)!r}, 'w').write(line)\n"
        "with capture_sigterm():\n"
        f"    run_streaming([sys.executable, '-c', {training!r}], log, grace_s=5)\n"
    )
    launcher = _start_launcher(flow_process, stderr=subprocess.PIPE, text=True)
    try:
        pids = _pids_written(pids_file, launcher)
        launcher.send_signal(signal.SIGTERM)
        # Prefect re-delivers the signal to itself once the exception has unwound (our cleanup included)
        assert launcher.wait(timeout=30) == -signal.SIGTERM
        # the training process runs in its own session: only the launcher's cleanup can have ended it
        assert _wait_dead(pids), "the training process or its child survived the flow's SIGTERM"
    finally:
        if launcher.poll() is None:
            launcher.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_a_launcher_killed_with_sigkill_takes_the_training_process_with_it(tmp_path):
    """SIGKILL (or the OOM killer) leaves the launcher no time to clean up; the training process must not go on
    running (and holding GPUs) on its own."""
    pids_file = tmp_path / "pids"
    training = "import os, time\nprint('pids', os.getpid(), flush=True)\ntime.sleep(60)\n"
    launcher_code = (
        "import sys\n"
        "from tasks.training import run_streaming\n"
        f"run_streaming([sys.executable, '-c', {training!r}], lambda line: open({str(pids_file)!r}, 'w').write(line))\n"
    )
    launcher = _start_launcher(launcher_code)
    try:
        pids = _pids_written(pids_file, launcher)
        launcher.kill()
        launcher.wait()
        assert _wait_dead(pids), "the training process outlived its SIGKILLed launcher"
    finally:
        if launcher.poll() is None:
            launcher.kill()


def test_workers_in_sessions_of_their_own_are_stopped_too():
    """torchrun starts each worker with start_new_session=True, outside its process group; if torchrun itself
    does not stop them (here it ignores SIGTERM until it is killed), the launcher still must."""
    child = (
        "import os, signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
        "print('pids', os.getpid(), worker.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    pids = _interrupt_once_pids_are_printed(child, grace_s=1)
    assert len(pids) == 2
    assert _wait_dead(pids), "a worker outside the process group survived"


def test_descendants_are_found_through_every_generation():
    from tasks.training import descendant_pids

    child = (
        "import os, subprocess, sys, time\n"
        "inner = \"import os, subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
        "'import time; time.sleep(30)']); print(p.pid, flush=True); time.sleep(30)\"\n"
        "p = subprocess.Popen([sys.executable, '-c', inner], stdout=subprocess.PIPE, text=True)\n"
        "print(p.pid, p.stdout.readline().strip(), flush=True)\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        grandchild, great = map(int, proc.stdout.readline().split())
        assert {grandchild, great} <= set(descendant_pids(proc.pid))
        assert descendant_pids(great) == []
    finally:
        from tasks.training import terminate_process_group

        terminate_process_group(proc, grace_s=2)
    assert _wait_dead([proc.pid, grandchild, great])
