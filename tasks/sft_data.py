"""The `sft-data` stage: WhatsApp messages → multi-turn chat examples for fine-tuning (DESIGN §4).

The person to imitate becomes `Assistant`, everyone else `User`. Media, deleted, system and poll messages are
dropped (counted by kind); consecutive messages of one role are merged into one turn, newline-joined, so turns
alternate as they will in a chat (in a group chat, several people's messages in a row form one User turn).
A chat is cut into sessions where the silence between two kept messages is longer than `session_gap_hours`.
Every Assistant turn that has at least one turn before it in its session ends one example, which takes as many
of the preceding turns as fit in `block_size` tokens (and `max_context_turns`, when set). Earlier Assistant turns
inside that context are trained too, so a turn can be seen in several examples, each time with a different
amount of context.

Train/val is split by session (a salted hash of chat_id and session number), so no conversation is in both;
when there are at least two sessions each split gets one. Output: `train.parquet` and `val.parquet` with
`example_id, chat_id, session, text, turns (list<struct<role, text>>), n_tokens`; `model.sft.encode_example`
turns `turns` into ids and the per-token loss mask.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from model.sft import ASSISTANT, USER, ChatTokens, encode_turn, format_turns
from storage.parquet import ParquetShardWriter, iter_batches, read_schema
from tasks.tokenizer import load_tokenizer
from tasks.training import SftDataParams

STAGE = "sft-data"
STAGE_VERSION = "1"
SPLITS = ("train", "val")
log = logging.getLogger(__name__)

TURN_TYPE = pa.struct([pa.field("role", pa.string(), nullable=False), pa.field("text", pa.string(), nullable=False)])
SFT_SCHEMA = pa.schema(
    [
        pa.field("example_id", pa.string(), nullable=False),
        pa.field("chat_id", pa.string(), nullable=False),
        pa.field("session", pa.int64(), nullable=False),
        pa.field("text", pa.string(), nullable=False),  # readable only: special strings typed in chats look alike
        pa.field("turns", pa.list_(TURN_TYPE), nullable=False),
        pa.field("n_tokens", pa.int32(), nullable=False),
    ]
)
_MESSAGE_COLUMNS = ["chat_id", "index", "timestamp", "author", "text", "kind"]


@dataclass
class SftDataResult:
    """What the stage wrote and why rows went missing: the counts go to the manifest."""

    train_path: str
    val_path: str
    target_author: str  # as written in the chats (the most frequent spelling that matched)
    authors: dict = field(default_factory=dict)  # author → messages, every chat
    messages_in: int = 0
    messages_used: int = 0
    dropped: dict = field(default_factory=dict)  # reason → messages
    skipped_turns: dict = field(default_factory=dict)  # reason → Assistant turns that end no example
    chats: int = 0
    sessions: dict = field(default_factory=dict)  # split → sessions with at least one example
    examples: dict = field(default_factory=dict)  # split → examples
    tokens: dict = field(default_factory=dict)  # split → tokens of all examples
    assistant_turns: int = 0

    def counts(self) -> dict:
        return {
            "in": self.messages_in,
            "out": sum(self.examples.values()),
            "messages_used": self.messages_used,
            **{f"examples_{s}": self.examples.get(s, 0) for s in SPLITS},
            **{f"dropped_{k}": v for k, v in sorted(self.dropped.items())},
            **{f"skipped_{k}": v for k, v in sorted(self.skipped_turns.items())},
        }

    def stats(self) -> dict:
        return {"target_author": self.target_author, "authors": self.authors, "chats": self.chats,
                "sessions": self.sessions, "tokens": self.tokens, "assistant_turns": self.assistant_turns}


@dataclass
class _Message:
    index: int
    timestamp: object
    author: str | None
    text: str
    kind: str


def _read_messages(parts: list[str]) -> tuple[dict[str, list[_Message]], Counter, int]:
    """Messages per chat, messages per author, messages read."""
    chats: dict[str, list[_Message]] = defaultdict(list)
    authors: Counter = Counter()
    total = 0
    for part in parts:
        names = set(read_schema(part).names)
        missing = [c for c in _MESSAGE_COLUMNS if c not in names]
        if missing:
            raise ValueError(f"{part}: not a WhatsApp messages part (no {', '.join(missing)} column)")
        for batch in iter_batches(Path(part), columns=_MESSAGE_COLUMNS):
            for row in batch.to_pylist():
                total += 1
                if row["author"] is not None:
                    authors[row["author"]] += 1
                chats[row["chat_id"]].append(
                    _Message(row["index"], row["timestamp"], row["author"], row["text"] or "", row["kind"])
                )
    return chats, authors, total


def count_authors(messages_parts: list[str]) -> Counter:
    """Messages per author in WhatsApp messages Parquet parts (system lines have none)."""
    authors: Counter = Counter()
    for part in messages_parts:
        for batch in iter_batches(Path(part), columns=["author"]):
            authors.update(a for a in batch.column("author").to_pylist() if a is not None)
    return authors


def _match_target(target: str | None, authors: Counter) -> set[str]:
    listing = ", ".join(f"{a!r} ({n})" for a, n in authors.most_common()) or "none"
    if not target or not target.strip():
        raise ValueError(f"sft-data: set target_author, the person to imitate; authors found: {listing}")
    key = target.strip().casefold()
    matched = {a for a in authors if a.strip().casefold() == key}
    if not matched:
        raise ValueError(f"sft-data: no messages by {target!r} (compared case-insensitively, trimmed); "
                         f"authors found, with message counts: {listing}")
    return matched


def _sessions(messages: list[_Message], gap_hours: float) -> list[list[_Message]]:
    gap = timedelta(hours=gap_hours)
    sessions: list[list[_Message]] = []
    previous = None
    for m in messages:
        if not sessions or (previous is not None and m.timestamp is not None and m.timestamp - previous > gap):
            sessions.append([])
        sessions[-1].append(m)
        if m.timestamp is not None:
            previous = m.timestamp
    return sessions


def _turns(messages: list[_Message], targets: set[str]) -> list[dict]:
    turns: list[dict] = []
    for m in messages:
        role = ASSISTANT if m.author in targets else USER
        if turns and turns[-1]["role"] == role:
            turns[-1]["text"] += "\n" + m.text
        else:
            turns.append({"role": role, "text": m.text})
    return turns


def _unit_hash(*parts: object) -> float:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def build_sft_examples(messages_parts: list[str], tokenizer_path: str, params: SftDataParams,
                       out_dir: str) -> SftDataResult:
    """Build `<out_dir>/train.parquet` and `<out_dir>/val.parquet` from WhatsApp messages Parquet parts.

    Raises ValueError listing the authors found (with message counts) when target_author matches none of them,
    and when no example can be built at all.
    """
    tokenizer = load_tokenizer(tokenizer_path)
    tokens = ChatTokens.from_tokenizer(tokenizer)
    chats, authors, total = _read_messages([str(p) for p in messages_parts])
    targets = _match_target(params.target_author, authors)
    result = SftDataResult(
        train_path=str(Path(out_dir) / "train.parquet"), val_path=str(Path(out_dir) / "val.parquet"),
        target_author=max(targets, key=lambda a: authors[a]), authors=dict(authors.most_common()),
        messages_in=total, chats=len(chats),
    )
    drop_kinds = set(params.drop_kinds)
    dropped: Counter = Counter()
    skipped: Counter = Counter()
    by_session: dict[tuple[str, int], list[dict]] = {}

    for chat_id in sorted(chats):
        kept: list[_Message] = []
        for m in sorted(chats[chat_id], key=lambda m: m.index):
            if m.kind in drop_kinds:
                dropped[m.kind] += 1
            elif m.author is None:
                dropped["no_author"] += 1
            elif not m.text.strip():
                dropped["empty"] += 1
            else:
                kept.append(m)
        result.messages_used += len(kept)
        for s, session in enumerate(_sessions(kept, params.session_gap_hours)):
            turns = _turns(session, targets)
            lengths = [len(encode_turn(tokenizer, t["role"], t["text"], tokens=tokens)[0]) for t in turns]
            rows = []
            for i, turn in enumerate(turns):
                if turn["role"] != ASSISTANT:
                    continue
                result.assistant_turns += 1
                if i == 0:
                    skipped["opens_session"] += 1
                    continue
                if lengths[i] > params.block_size:
                    skipped["longer_than_block"] += 1
                    continue
                start, size = i, lengths[i]
                while (start > 0 and size + lengths[start - 1] <= params.block_size
                       and (params.max_context_turns is None or i - start < params.max_context_turns)):
                    start -= 1
                    size += lengths[start]
                if start == i:
                    skipped["no_context_fits"] += 1
                    continue
                window = [dict(t) for t in turns[start:i + 1]]
                rows.append({
                    "example_id": hashlib.sha256(f"{chat_id}:{s}:{i}".encode()).hexdigest()[:16],
                    "chat_id": chat_id, "session": s, "text": format_turns(window), "turns": window,
                    "n_tokens": size,
                })
            if rows:
                by_session[(chat_id, s)] = rows

    splits = _split_sessions(list(by_session), params)
    result.dropped = dict(sorted(dropped.items()))
    result.skipped_turns = dict(sorted(skipped.items()))
    if not by_session:
        raise ValueError(
            f"sft-data: no example could be built (empty SFT set): {total} messages read, "
            f"{result.messages_used} kept, {sum(authors[a] for a in targets)} by {result.target_author!r}, "
            f"dropped {result.dropped or 'none'}, Assistant turns skipped {result.skipped_turns or 'none'}; "
            f"check target_author, block_size={params.block_size} and session_gap_hours={params.session_gap_hours}"
        )
    os.makedirs(out_dir, exist_ok=True)
    for split, path in (("train", result.train_path), ("val", result.val_path)):
        keys = [k for k in by_session if splits[k] == split]
        with ParquetShardWriter(path, SFT_SCHEMA) as writer:
            for key in keys:
                writer.write_rows(by_session[key])
        result.sessions[split] = len(keys)
        result.examples[split] = sum(len(by_session[k]) for k in keys)
        result.tokens[split] = sum(r["n_tokens"] for k in keys for r in by_session[k])
    log.info("sft-data: %d train / %d val examples from %d sessions of %d chats (%r as Assistant)",
             result.examples["train"], result.examples["val"], len(by_session), result.chats, result.target_author)
    return result


def _split_sessions(keys: list[tuple[str, int]], params: SftDataParams) -> dict[tuple[str, int], str]:
    """Val when the salted hash of (chat_id, session) falls below val_fraction; with two or more sessions, the
    lowest hash is moved to val (or the highest to train) so that neither split is empty."""
    score = {k: _unit_hash(params.split_salt, *k) for k in keys}
    split = {k: "val" if score[k] < params.val_fraction else "train" for k in keys}
    if len(keys) >= 2 and params.val_fraction > 0:
        if "val" not in split.values():
            split[min(keys, key=score.__getitem__)] = "val"
        if "train" not in split.values():
            split[max(keys, key=score.__getitem__)] = "train"
    return split
