"""`chatlike chat --web`: a real server process on a tiny pretrained checkpoint, driven by a real headless Chromium
over the DevTools Protocol (the reply grows on the page while it is sampled), its event stream read over HTTP,
reset and settings, the address it listens on, and SIGINT / SIGTERM stopping its whole process tree."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from flows.chat_web import Conversations, build_app, is_loopback, persona_name
from flows.cli_chat import chat_app
from model.chat import load_chat
from model.train import train
from storage.dataset import DatasetWriter, InputRef
from tasks.training import LoraParams
from tests.browser import ChatWebProcess, Chromium, find_chromium, process_group_alive
from tests.support import pretrained_checkpoint, quiet_params, run_config

REPLY_TOKENS = 64  # the tiny model babbles up to the budget: long enough to watch a reply grow
MESSAGE = "Hey Sam, are you free on Saturday?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on `port`, from /proc/net/tcp and tcp6 (hex, as the kernel has it)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


@pytest.fixture(scope="module")
def persona_checkpoint(tmp_path_factory) -> Path:
    """A checkpoint inside a published run whose lineage names the person: the tiny pretrained checkpoint in an
    `sft` dataset that reads an `sft-data` dataset with target author Sam, as the pipeline publishes them."""
    root = tmp_path_factory.mktemp("persona-data")
    sft_fp, run_fp = "a" * 64, "b" * 64
    with DatasetWriter(root, "sft-data", "1", sft_fp, {"target_author": "sam"}, []) as w:
        sft_data = w.publish({"in": 0, "out": 0}, {"target_author": "Sam"})
    with DatasetWriter(root, "sft", "1", run_fp, {}, [InputRef("sft-data", sft_fp, str(sft_data))]) as w:
        shutil.copytree(pretrained_checkpoint(), w.tmp / "step-000030")
        run = w.publish({"steps": 30})
    return run / "step-000030"


@pytest.fixture(scope="module")
def server(persona_checkpoint, tmp_path_factory):
    args = ["--checkpoint", str(persona_checkpoint), "--port", str(free_port()), "--temperature", "1.0",
            "--max-new-tokens", str(REPLY_TOKENS)]
    with ChatWebProcess(args, tmp_path_factory.mktemp("chat-web")) as process:
        yield process


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


def open_conversation(client: httpx.Client) -> str:
    r = client.post("/api/conversations")
    assert r.status_code == 200, r.text
    return r.json()["id"]


def read_events(response: httpx.Response) -> tuple[list[tuple[str, dict]], int]:
    """The events of a streamed reply and how many network reads brought the token events."""
    events, buffer, reads_with_tokens = [], "", 0
    for chunk in response.iter_text():
        buffer += chunk
        *complete, buffer = buffer.split("\n\n")
        parsed = []
        for raw in complete:
            fields = dict(line.split(": ", 1) for line in raw.splitlines())
            parsed.append((fields["event"], json.loads(fields["data"])))
        reads_with_tokens += any(kind == "token" for kind, _ in parsed)
        events += parsed
    return events, reads_with_tokens


def test_the_page_streams_a_reply_in_a_real_browser(server, client, tmp_path):
    if find_chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; CI must run the browser test (scripts/setup_test.sh installs it)")
        pytest.skip("chromium is not installed (scripts/setup_test.sh installs it: apt-get install chromium)")
    with Chromium(tmp_path / "profile") as browser:
        browser.goto(server.url + "/")
        browser.wait_for("document.body.dataset.ready === 'true'")
        assert browser.evaluate("document.getElementById('name').textContent") == "Sam"  # from the lineage
        assert browser.evaluate("document.title") == "Chat with Sam"
        assert "step-000030" in browser.evaluate("document.getElementById('model').textContent")

        browser.click("#message")
        browser.type_text(MESSAGE)
        browser.click("#send")
        last_reply = ("(() => { const m = [...document.querySelectorAll('.message.assistant')].pop();"
                      " return m ? [m.dataset.state, m.querySelector('.text').textContent] : null; })()")
        seen: list[str] = []  # the reply's text each time it changed while streaming
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = browser.evaluate(last_reply)
            if state and state[0] != "streaming":
                break
            if state and state[1] and (not seen or seen[-1] != state[1]):
                seen.append(state[1])
        assert state[0] == "done", state
        final = state[1]
        conversation = client.get(f"/api/conversations/{browser.evaluate('state.id')}").json()
        assert conversation["turns"][0] == {"role": "User", "text": MESSAGE}
        assert conversation["turns"][1]["text"].lstrip() == final
        assert len(seen) >= 2, f"the reply did not grow while it was sampled: {seen}"
        assert all(final.startswith(partial) for partial in seen) and len(seen[0]) < len(final)
        browser.screenshot(tmp_path / "chat-web.png")
        assert (tmp_path / "chat-web.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        conversation_id = browser.evaluate("state.id")
        assert browser.evaluate("document.getElementById('temperature').value") == "1"
        browser.evaluate("document.getElementById('temperature').focus()")
        browser.key("ArrowLeft", 37)  # one step (0.05) down, as a person does it with the keyboard
        browser.wait_for("state.settings.temperature < 1")
        assert client.get(f"/api/conversations/{conversation_id}").json()["settings"]["temperature"] == 0.95

        browser.click("#reset")
        browser.wait_for("document.querySelectorAll('.message').length === 0 && !!document.querySelector('.notice')")
        assert client.get(f"/api/conversations/{conversation_id}").json()["turns"] == []


def test_replies_stream_as_server_sent_events(client):
    conversation = open_conversation(client)
    with client.stream("POST", f"/api/conversations/{conversation}/messages", json={"text": MESSAGE}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events, reads_with_tokens = read_events(r)
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "done" and set(kinds[:-1]) == {"token"}
    tokens = [data["text"] for kind, data in events if kind == "token"]
    assert 2 <= len(tokens) <= REPLY_TOKENS
    assert reads_with_tokens >= 2, "every token arrived in one read: the reply was not streamed"
    done = events[-1][1]
    assert "".join(tokens) == done["reply"]
    assert isinstance(done["finished"], bool)
    turns = client.get(f"/api/conversations/{conversation}").json()["turns"]
    assert turns == [{"role": "User", "text": MESSAGE}, {"role": "Assistant", "text": done["reply"]}]


def test_reset_settings_and_one_reply_at_a_time(client):
    first, second = open_conversation(client), open_conversation(client)
    r = client.put(f"/api/conversations/{first}/settings", json={"temperature": 0, "top_p": 0.5})
    assert r.status_code == 200 and r.json()["temperature"] == 0 and r.json()["top_p"] == 0.5
    assert client.get(f"/api/conversations/{second}").json()["settings"]["temperature"] == 1.0  # its own settings
    r = client.put(f"/api/conversations/{first}/settings", json={"top_p": 0})
    assert r.status_code == 422 and "top_p" in r.json()["detail"]

    def reply(conversation: str) -> str:
        with client.stream("POST", f"/api/conversations/{conversation}/messages", json={"text": "hi"}) as r:
            return read_events(r)[0][-1][1]["reply"]

    greedy = reply(first)
    client.post(f"/api/conversations/{first}/reset").raise_for_status()
    assert client.get(f"/api/conversations/{first}").json()["turns"] == []
    assert reply(first) == greedy  # temperature 0 and a forgotten history: the same reply again

    with client.stream("POST", f"/api/conversations/{second}/messages", json={"text": "hello"}) as r:
        pieces = r.iter_text()
        assert "event: done" not in next(pieces)  # the reply has started, and goes on
        assert client.post(f"/api/conversations/{second}/messages", json={"text": "again"}).status_code == 409
        assert client.post(f"/api/conversations/{second}/reset").status_code == 409
        assert "event: done" in "".join(pieces)
    assert client.post(f"/api/conversations/{second}/reset").status_code == 200
    assert client.post("/api/conversations/nope/reset").status_code == 404


def test_listens_on_loopback_by_default_and_names_the_persona(server, client, persona_checkpoint):
    port = int(server.url.rsplit(":", 1)[1])
    if os.path.exists("/proc/net/tcp"):
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only
    assert "warning" not in server.stderr
    info = client.get("/api/info").json()
    assert info["name"] == "Sam" and info["checkpoint"] == str(persona_checkpoint) and info["adapter"] is None
    assert persona_name({"checkpoint": str(pretrained_checkpoint()), "adapter": None}) is None  # no sft-data
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")


def test_sigint_stops_the_server_and_its_process_tree(tmp_path):
    process = ChatWebProcess(["--checkpoint", str(pretrained_checkpoint()), "--port", str(free_port()),
                              "--name", "Sam"], tmp_path)
    assert httpx.get(process.url + "/api/info").json()["name"] == "Sam"
    os.killpg(process.proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    assert process.proc.wait(timeout=30) == 0, process.stderr
    assert "server stopped" in process.stdout
    assert not process_group_alive(process.proc.pid)
    with pytest.raises(httpx.ConnectError):
        httpx.get(process.url + "/api/info")


def test_another_host_warns_and_sigterm_stops_the_server(tmp_path):
    port = free_port()
    process = ChatWebProcess(["--checkpoint", str(pretrained_checkpoint()), "--host", "0.0.0.0", "--allow-remote",
                              "--port", str(port)], tmp_path)
    try:
        assert f"warning: listening on 0.0.0.0:{port}, reachable beyond this machine" in process.stderr
        if os.path.exists("/proc/net/tcp"):
            assert listening_addresses(port) == {"00000000"}
        conversation = httpx.post(f"http://127.0.0.1:{port}/api/conversations").json()["id"]
        with httpx.stream("POST", f"http://127.0.0.1:{port}/api/conversations/{conversation}/messages",
                          json={"text": MESSAGE}, timeout=30) as r:
            pieces = r.iter_text()
            next(pieces)  # a reply is being streamed: the stop must not wait for a reader that is gone
            process.proc.send_signal(signal.SIGTERM)  # what a supervisor sends: the main process only
            rest = "".join(pieces)
        assert "event: done" in rest or "the server is stopping" in rest
        assert process.proc.wait(timeout=30) == 0, process.stderr
        assert not process_group_alive(process.proc.pid)
    finally:
        process.stop(signal.SIGKILL)


def test_the_page_names_the_adapter(tmp_path):
    lora = train(run_config("lora", tmp_path / "lora", quiet_params(LoraParams, max_steps=2, rank=2),
                            init_from=pretrained_checkpoint()))
    session, info = load_chat(pretrained_checkpoint(), lora.run_dir, device="cpu")
    with TestClient(build_app(Conversations(session), info, "Sam")) as client:
        about = client.get("/api/info").json()
        assert about["adapter"] == lora.checkpoint and about["checkpoint"] == str(pretrained_checkpoint())
        assert "info.adapter" in client.get("/").text  # the page shows it beside the checkpoint


def test_command_line_errors_are_one_line(tmp_path):
    runner = CliRunner()
    r = runner.invoke(chat_app, ["--checkpoint", str(pretrained_checkpoint()), "--web", "--once", "hi"])
    assert r.exit_code == 2 and "--web and --once exclude each other" in r.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = runner.invoke(chat_app, ["--checkpoint", str(pretrained_checkpoint()), "--web", "--port", str(port)])
    assert r.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in r.stderr
    assert r.stderr.strip().count("\n") == 0
