"""How a long-running command (`chatlike run`, `eval`, `serve`, `chat --web`) stops on SIGINT and SIGTERM: with
its whole process tree, promptly, whoever sends the signal (Ctrl-C, `kill`, systemd, docker).

The first signal raises KeyboardInterrupt in the main thread, so SIGTERM takes the same road as Ctrl-C: `finally`
blocks and atexit hooks stop what the command started (training process trees, the temporary Prefect server, the
server and workers of `chatlike serve`). Whatever is still running `grace_s` later, or when a second signal
arrives, is killed: every descendant gets SIGKILL and the command exits.

Only the `chatlike` script's own process gets these handlers (`own_this_process`): a command invoked inside
another program, as the tests do, leaves that program's signals alone.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

STOP_GRACE_S = 10.0
_received: list[int] = []
_owned = False


def own_this_process() -> None:
    """Called by the `chatlike` script: this process is the command's, its signal handlers may be replaced."""
    global _owned
    _owned = True


def owns_this_process() -> bool:
    return _owned


def stop_on_signals(grace_s: float = STOP_GRACE_S) -> None:
    """Install the handlers (in the script's own process, main thread). Prefect turns a SIGTERM that arrives
    during a flow run into its own exception, then sends the signal again once the run has unwound: that is the
    first one seen here."""
    if not owns_this_process() or threading.current_thread() is not threading.main_thread():
        return
    from tasks.training import descendant_pids  # now, not in the deadline's thread

    def handler(signum: int, frame) -> None:
        if _received:
            kill_tree_and_exit(signum, descendant_pids)
        _received.append(signum)
        threading.Thread(target=_deadline, args=(grace_s, signum, descendant_pids), name="stop-deadline",
                         daemon=True).start()
        raise KeyboardInterrupt

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)


def stopped_by() -> int | None:
    """The signal that asked this process to stop, if one did."""
    return _received[0] if _received else None


def _deadline(grace_s: float, signum: int, descendant_pids) -> None:
    time.sleep(grace_s)
    print(f"still running {grace_s:.0f} s after {signal.Signals(signum).name}: killing every child process",
          file=sys.stderr, flush=True)
    kill_tree_and_exit(signum, descendant_pids)


def kill_tree_and_exit(signum: int, descendant_pids) -> None:
    for pid in descendant_pids(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    os._exit(128 + signum)
