"""`chatlike chat --web`: the chat in a browser. One page (`flows/web/chat.html`) talks to a small FastAPI app;
each page load opens its own conversation, and a reply streams to it as server-sent events while a worker
thread generates it, so the server keeps answering other requests.

The server listens on 127.0.0.1; another `--host` needs `--allow-remote` (there is no login) and gets a warning.
SIGINT and SIGTERM end open streams, stop the server and return normally: the command exits with code 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import signal
import socket
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel, Field

from flows.serve import exposure_warning, is_loopback
from model.chat import ChatSession
from storage.dataset import DatasetError, read_manifest
from storage.lineage import LineageNode, lineage

log = logging.getLogger(__name__)

PAGE = Path(__file__).resolve().parent / "web" / "chat.html"
DEFAULT_NAME = "Assistant"
MAX_CONVERSATIONS = 64  # the oldest conversation is forgotten beyond this (each holds its history and cache)


def persona_name(info: dict) -> str | None:
    """The person a fine-tuned model imitates: sft-data's target author, found in the lineage of the adapter or
    the checkpoint (`info` from `load_chat`). None for a model whose lineage has no sft-data dataset (a pretrained
    checkpoint, or a run made outside the pipeline)."""

    def find(node: LineageNode) -> str | None:
        for child in node.children:
            if child.stage == "sft-data" and child.exists:
                return read_manifest(child.path).stats.get("target_author")
            found = find(child)
            if found:
                return found
        return None

    for path in (info.get("adapter"), info.get("checkpoint")):
        if not path:
            continue
        try:
            name = find(lineage(path))
        except (DatasetError, OSError, ValueError):  # not inside a published run
            continue
        if name:
            return name
    return None


CHAT_EXPOSES = ("the chat page has no login: anyone who reaches the port can talk to the model, and draw out what "
                "it learned from the chats it was trained on")
CHAT_PROTECT = "Protect it: let only a reverse proxy with TLS and authentication reach it."


# ------------------------------------------------------------------------------------------------------------
# conversations


@dataclass
class Conversation:
    session: ChatSession
    replying: threading.Lock = field(default_factory=threading.Lock)  # one reply at a time


class Conversations:
    """The open conversations, one per page load, each a ChatSession on the one loaded model. Replies are
    generated one at a time (`generating`): on a CPU two at once only share the same cores."""

    def __init__(self, template: ChatSession, limit: int = MAX_CONVERSATIONS):
        self.template = template
        self.limit = limit
        self.generating = threading.Lock()
        self.stopping = threading.Event()  # set when the server shuts down: open replies end
        self._open: OrderedDict[str, Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def new(self) -> tuple[str, ChatSession]:
        t = self.template
        session = ChatSession(t.model, t.tokenizer, dataclasses.replace(t.options))
        key = uuid.uuid4().hex
        with self._lock:
            self._open[key] = Conversation(session)
            while len(self._open) > self.limit:
                self._open.popitem(last=False)
        return key, session

    def get(self, key: str) -> Conversation:
        with self._lock:
            conversation = self._open.get(key)
            if conversation is None:
                raise HTTPException(404, f"no conversation {key!r} (forgotten after {self.limit} newer ones, "
                                         f"or the server restarted): reload the page")
            self._open.move_to_end(key)
            return conversation


# ------------------------------------------------------------------------------------------------------------
# the web app


class Message(BaseModel):
    text: str = Field(min_length=1, max_length=20_000)


class Settings(BaseModel):
    """A conversation's sampling options, as the page's controls show them."""

    temperature: float
    top_p: float = Field(description="1: no nucleus cut")
    top_k: int = Field(description="0: no top-k cut")
    max_new_tokens: int = Field(description="the reply budget: what was asked, at most half the model's window")

    @classmethod
    def of(cls, session: ChatSession) -> Settings:
        o = session.options
        return cls(temperature=o.temperature, top_p=o.top_p if o.top_p is not None else 1.0, top_k=o.top_k or 0,
                   max_new_tokens=session.max_new_tokens)


class SettingsChange(BaseModel):
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = Field(None, description="0: no top-k cut")


class ServerInfo(BaseModel):
    name: str
    checkpoint: str
    adapter: str | None
    tokenizer: str | None
    dtype: str | None
    block_size: int
    settings: Settings  # what a new conversation starts with


class Turn(BaseModel):
    role: str
    text: str


class ConversationView(BaseModel):
    id: str
    turns: list[Turn]
    settings: Settings


def _event(kind: str, data: dict) -> str:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


class ReplyStream:
    """One reply being written: a worker thread runs the model and hands each piece of text to `events()` through a
    queue. A closed connection or a stopping server ends the generation at the next piece. The conversation's
    `replying` lock, taken by the caller, is released when the worker ends."""

    def __init__(self, conversations: Conversations, conversation: Conversation, text: str):
        self.conversations, self.conversation, self.text = conversations, conversation, text
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[tuple[str, dict]] = asyncio.Queue()
        self.abandoned = threading.Event()
        threading.Thread(target=self._work, name="chat-reply", daemon=True).start()

    def _put(self, kind: str, data: dict) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens any more
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, data))

    def _work(self) -> None:
        session, stopping = self.conversation.session, self.conversations.stopping
        end: tuple[str, dict] = ("error", {"message": "abandoned"})
        try:
            with self.conversations.generating, contextlib.closing(session.stream(self.text)) as pieces:
                for piece in pieces:
                    if self.abandoned.is_set() or stopping.is_set():
                        break
                    self._put("token", {"text": piece})
                else:
                    end = ("done", {"reply": session.turns[-1]["text"], "finished": session.last_reply_finished})
            if end[0] != "done" and stopping.is_set():
                end = ("error", {"message": "the server is stopping"})
        except Exception as e:  # noqa: BLE001 - the page shows what went wrong
            log.exception("reply failed")
            end = ("error", {"message": f"{type(e).__name__}: {e}"})
        finally:
            # free the conversation before saying the reply ended: a client that resets or writes again as soon
            # as it reads `done` must not be told a reply is still being written
            self.conversation.replying.release()
            self._put(*end)

    async def events(self) -> AsyncIterator[str]:
        """Server-sent events: `token` per generated piece, then `done` (the whole reply, and whether it ended by
        itself rather than at the token budget) or `error`."""
        try:
            while True:
                kind, data = await self.queue.get()
                yield _event(kind, data)
                if kind != "token":
                    return
        finally:
            self.abandoned.set()


def _take(conversation: Conversation) -> None:
    if not conversation.replying.acquire(blocking=False):
        raise HTTPException(409, "a reply is still being written in this conversation")


def build_app(conversations: Conversations, info: dict, name: str) -> FastAPI:
    """The page and its API: GET /, GET /api/info, POST /api/conversations, POST /api/conversations/{id}/messages
    (an event stream), POST …/reset, PUT …/settings, GET /api/conversations/{id}."""
    app = FastAPI(title=f"chatlike: chat with {name}", docs_url=None, redoc_url=None, openapi_url=None)
    template = conversations.template

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(PAGE, media_type="text/html")

    def view(key: str, session: ChatSession) -> ConversationView:
        turns = [Turn(role=t["role"], text=t["text"]) for t in session.turns]
        return ConversationView(id=key, turns=turns, settings=Settings.of(session))

    @app.get("/api/info")
    def about() -> ServerInfo:
        return ServerInfo(name=name, checkpoint=info["checkpoint"], adapter=info.get("adapter"),
                          tokenizer=info.get("tokenizer"), dtype=info.get("dtype"), block_size=template.block_size,
                          settings=Settings.of(template))

    @app.post("/api/conversations")
    def open_conversation() -> ConversationView:
        return view(*conversations.new())

    @app.get("/api/conversations/{key}")
    def show(key: str) -> ConversationView:
        return view(key, conversations.get(key).session)

    @app.post("/api/conversations/{key}/messages")
    async def send(key: str, message: Message) -> StreamingResponse:
        conversation = conversations.get(key)
        _take(conversation)
        stream = ReplyStream(conversations, conversation, message.text)
        return StreamingResponse(stream.events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    @app.post("/api/conversations/{key}/reset")
    def reset(key: str) -> ConversationView:
        conversation = conversations.get(key)
        _take(conversation)
        try:
            conversation.session.reset()
        finally:
            conversation.replying.release()
        return view(key, conversation.session)

    @app.put("/api/conversations/{key}/settings")
    def settings(key: str, change: SettingsChange) -> Settings:
        conversation = conversations.get(key)
        changes = change.model_dump(exclude_none=True)
        if "top_k" in changes:
            changes["top_k"] = changes["top_k"] or None
        _take(conversation)
        try:
            conversation.session.set_options(**changes)
        except ValueError as e:
            raise HTTPException(422, str(e)) from e
        finally:
            conversation.replying.release()
        return Settings.of(conversation.session)

    return app


# ------------------------------------------------------------------------------------------------------------
# serving


class ChatServer(uvicorn.Server):
    """uvicorn's server, with two changes for a command run in a terminal or by a supervisor: the first SIGINT or
    SIGTERM also ends the replies being streamed (uvicorn waits for open connections before it stops), and the
    signal is not raised again once the server has stopped, so a requested stop exits with code 0."""

    def __init__(self, config: uvicorn.Config, conversations: Conversations):
        super().__init__(config)
        self.conversations = conversations

    def handle_exit(self, sig, frame) -> None:
        self.conversations.stopping.set()
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket, so that a busy port is a one-line error here rather than a log line inside uvicorn."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    sock.listen(128)
    return sock


def serve_chat(session: ChatSession, info: dict, host: str = "127.0.0.1", port: int = 8765,
               name: str | None = None, allow_remote: bool = False) -> None:
    """Serve the chat page for this loaded model until SIGINT or SIGTERM. `name` defaults to the person the model
    was fine-tuned on (see `persona_name`), else "Assistant". A host other than loopback is refused (ValueError)
    unless `allow_remote`."""
    name = name or persona_name(info) or DEFAULT_NAME
    exposure_warning(host, port, allow_remote, CHAT_EXPOSES, CHAT_PROTECT)  # refuses before listening
    sock = listen(host, port)
    bound_port = sock.getsockname()[1]
    warning = exposure_warning(host, bound_port, allow_remote, CHAT_EXPOSES, CHAT_PROTECT)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    conversations = Conversations(session)
    config = uvicorn.Config(build_app(conversations, info, name), log_level="warning", access_log=False,
                            timeout_graceful_shutdown=5, lifespan="off")
    server = ChatServer(config, conversations)
    shown = f"[{host}]" if ":" in host else host
    where = info["checkpoint"] + (f" + {info['adapter']}" if info.get("adapter") else "")
    print(f"chat with {name} ({where}) at http://{shown}:{bound_port}/   Ctrl-C stops the server", flush=True)
    server.run(sockets=[sock])
    print("server stopped", flush=True)


__all__ = ["ChatServer", "Conversations", "build_app", "is_loopback", "persona_name", "serve_chat"]
