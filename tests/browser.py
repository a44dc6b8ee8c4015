"""Drive `chatlike chat --web` the way a person does, from the tests and from scripts/chat_web_screenshot.py:
`ChatWebProcess` runs the command in its own process group, `Chromium` is a headless Chromium (Debian's `chromium`
package, which scripts/setup_test.sh installs; nothing is downloaded at run time) driven over the Chrome DevTools
Protocol with a small websocket client."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from websockets.sync.client import connect

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chatlike_command() -> list[str]:
    """The installed `chatlike` entry point beside this interpreter, else the module it runs."""
    script = Path(sys.executable).parent / "chatlike"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "flows.cli"]


def process_group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process we may not signal still exists
        return True
    return True


def stop_process_group(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
    """Send `sig` to the process group `proc` leads; after `timeout` seconds, SIGKILL. Returns its exit code."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()


class ChatWebProcess:
    """`chatlike chat --web ARGS` in a new session (its own process group), stdout and stderr in files under
    `log_dir`. `url` is the address the server printed once it listens."""

    def __init__(self, args: list[str], log_dir: Path, timeout: float = 120):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stdout_path, self.stderr_path = log_dir / "server.out", log_dir / "server.err"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen([*chatlike_command(), "chat", "--web", *args], stdout=out, stderr=err,
                                         start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.url = self._wait_for_address(timeout)

    def _wait_for_address(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(r"at (http://\S+?)/?\s", self.stdout)
            if found:
                return found.group(1)
            if self.proc.poll() is not None:
                raise RuntimeError(f"chatlike chat --web exited with code {self.proc.returncode}:\n{self.stderr}")
            time.sleep(0.1)
        self.stop(signal.SIGKILL)
        raise TimeoutError(f"chatlike chat --web printed no address in {timeout:.0f} s:\n{self.stderr}")

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        return stop_process_group(self.proc, sig, timeout)

    def __enter__(self) -> ChatWebProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def find_chromium() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


class CdpError(RuntimeError):
    pass


class Chromium:
    """A headless Chromium with one page, driven over the DevTools Protocol: navigate, evaluate JavaScript, click,
    type (real input events) and take screenshots. A context manager: leaving it ends the browser's whole process
    group and removes nothing (the profile lives in `profile_dir`)."""

    def __init__(self, profile_dir: Path, width: int = 900, height: int = 760, scale: float = 1.0,
                 executable: str | None = None, timeout: float = 30):
        executable = executable or find_chromium()
        if executable is None:
            raise FileNotFoundError(f"no Chromium found ({', '.join(BROWSERS)}); install Debian's chromium package")
        profile_dir.mkdir(parents=True, exist_ok=True)
        args = [executable, "--headless", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
                "--remote-debugging-port=0", f"--user-data-dir={profile_dir}", f"--window-size={width},{height}",
                "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium's sandbox refuses to run as root
        self.log_path = profile_dir.parent / f"{profile_dir.name}.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._ws = connect(self._page_websocket(profile_dir, timeout), max_size=None, open_timeout=timeout)
        except BaseException:
            stop_process_group(self.proc, timeout=5)
            raise
        self._next_id = 0
        self.call("Page.enable")
        # the page gets exactly width x height (headless --window-size also counts the absent browser frame)
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=scale,
                  mobile=False)

    def _page_websocket(self, profile_dir: Path, timeout: float) -> str:
        """The page target's websocket address: the port from DevToolsActivePort, the target from /json/list."""
        active = profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with code {self.proc.returncode}: "
                                   f"{self.log_path.read_text(errors='replace')[-2000:]}")
            lines = active.read_text().split() if active.is_file() else []
            if len(lines) == 2:
                with urllib.request.urlopen(f"http://127.0.0.1:{lines[0]}/json/list", timeout=5) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                if pages:
                    return pages[0]["webSocketDebuggerUrl"]
            time.sleep(0.1)
        raise TimeoutError(f"chromium opened no DevTools port in {timeout:.0f} s")

    def call(self, method: str, **params) -> dict:
        """Send one DevTools command and return its result (events that arrive meanwhile are dropped)."""
        self._next_id += 1
        ident = self._next_id
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=60))
            if message.get("id") == ident:
                if "error" in message:
                    raise CdpError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise CdpError(f"{expression[:80]}: {details.get('exception', {}).get('description') or details['text']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 15, interval: float = 0.02):
        """Poll a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression!r} still false after {timeout:.0f} s")
            time.sleep(interval)

    def goto(self, url: str, timeout: float = 15) -> None:
        self.call("Page.navigate", url=url)
        self.wait_for(f"location.href.startsWith({json.dumps(url)}) && document.readyState === 'complete'",
                      timeout)

    def click(self, selector: str) -> None:
        """A left click in the middle of the element, as mouse events (what a person's click sends)."""
        box = self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                            f".getBoundingClientRect(); return {{x: r.x + r.width / 2, y: r.y + r.height / 2}}; }})()")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"], button="left", clickCount=1)

    def type_text(self, text: str) -> None:
        """Type into the focused element (one input event, as an input method sends it)."""
        self.call("Input.insertText", text=text)

    def key(self, key: str, code: int) -> None:
        """Press and release one key on the focused element (`key` as the DOM names it, `code` its key code)."""
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code,
                      nativeVirtualKeyCode=code)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self._ws.close()
        finally:
            stop_process_group(self.proc, timeout=10)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
