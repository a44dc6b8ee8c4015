"""The texts likeness is measured on: the held-out conversations of sft-data (each of the person's real replies
with the turns before it, which is what the models are asked to continue), the distinct turns of the training
sessions by role (what the who-said-it classifier learns from and what memorisation compares with), and
chat-sized snippets of corpus documents that are not chats (the classifier's "not this chat" class).
"""

from __future__ import annotations

import hashlib
import heapq
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from storage.chat_format import ASSISTANT, USER
from storage.parquet import count_rows, iter_batches, parquet_files
from tasks.cleaning import CleanRules, clean_text
from tasks.records import CHAT_SOURCES

# documents of tasks.records.CHAT_SOURCES are conversations, never "not this chat"
_MAX_DOCS = 2000  # documents read for snippets at most: several snippets come from one document past this


@dataclass(frozen=True)
class HeldOutTurn:
    """One of the person's real replies in a held-out session, with the turns before it (its example's window)."""

    prompt_id: str  # the sft-data example that ends with this reply
    chat_id: str
    session: int
    context: tuple[dict, ...]  # {"role", "text"} turns, the last one a User turn
    reply: str

    @property
    def user_turn(self) -> str:
        return self.context[-1]["text"]


@dataclass(frozen=True)
class ChatTurns:
    """Distinct turns of some sessions by role: the person's (Assistant) and everyone else's (User)."""

    person: list[str]
    others: list[str]


def _unit_hash(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "big")


def read_held_out(val_parquet: str | os.PathLike, max_prompts: int, seed: int = 0) -> list[HeldOutTurn]:
    """The held-out replies of the person, at most `max_prompts` of them (a salted-hash sample, kept in file
    order). Raises ValueError in one line when there are none: likeness is only measured on held-out sessions."""
    path = Path(val_parquet)
    if not path.is_file() or count_rows(path) == 0:
        raise ValueError(f"persona-eval: {path} holds no held-out examples (the chats form a single session, or "
                         f"sft_data.val_fraction is 0): likeness is measured on held-out sessions only")
    turns: list[HeldOutTurn] = []
    for batch in iter_batches(path, columns=["example_id", "chat_id", "session", "turns"]):
        for row in batch.to_pylist():
            window = row["turns"]
            if len(window) < 2 or window[-1]["role"] != ASSISTANT or window[-2]["role"] != USER:
                raise ValueError(f"{path}: example {row['example_id']} does not end with a User turn and the "
                                 f"Assistant's reply (not an sft-data split)")
            turns.append(HeldOutTurn(row["example_id"], row["chat_id"], int(row["session"]),
                                     tuple({"role": t["role"], "text": t["text"]} for t in window[:-1]),
                                     window[-1]["text"]))
    if len(turns) > max_prompts:
        keep = {t.prompt_id for t in sorted(turns, key=lambda t: _unit_hash(seed, t.prompt_id))[:max_prompts]}
        turns = [t for t in turns if t.prompt_id in keep]
    return turns


def read_chat_turns(parquet: str | os.PathLike) -> ChatTurns:
    """The distinct turns of an sft-data split by role. A turn is in every example whose window covers it, so
    turns are counted once per (chat, session, text)."""
    seen: set[tuple] = set()
    person: list[str] = []
    others: list[str] = []
    for batch in iter_batches(Path(parquet), columns=["chat_id", "session", "turns"]):
        for row in batch.to_pylist():
            for turn in row["turns"]:
                key = (row["chat_id"], row["session"], turn["role"], turn["text"])
                if key in seen or not turn["text"].strip():
                    continue
                seen.add(key)
                (person if turn["role"] == ASSISTANT else others).append(turn["text"])
    return ChatTurns(person, others)


def hash_sample(texts: Sequence[str], n: int, seed: int = 0) -> list[str]:
    """At most `n` of the texts, chosen by a salted hash of their position and text, kept in their order."""
    if len(texts) <= n:
        return list(texts)
    keep = set(sorted(range(len(texts)), key=lambda i: _unit_hash(seed, i, texts[i]))[:n])
    return [t for i, t in enumerate(texts) if i in keep]


def _chat_parts(ingest_dir: Path) -> set[str]:
    """Names of the document parts that came from chat exports (their messages part holds messages)."""
    return {p.name for p in parquet_files(ingest_dir, "messages") if count_rows(p) > 0}


def corpus_snippets(ingest_dir: str | os.PathLike, count: int, word_lengths: Sequence[int], seed: int = 0,
                    clean_rules: CleanRules | None = None) -> list[str]:
    """`count` snippets of documents that are not chats, each as many words long as a length drawn from
    `word_lengths` (the person's turns: the snippets look like messages, not pages). Documents are a salted-hash
    sample of the ingested ones (chat exports and `whatsapp` sources left out), cleaned with `clean_rules` as
    sft-data cleans the messages. Fewer snippets come back when the corpus has too little text; none without
    documents."""
    if count <= 0 or not word_lengths:
        return []
    folder = Path(ingest_dir)
    chat_parts = _chat_parts(folder)
    parts = [p for p in parquet_files(folder) if p.name not in chat_parts]
    wanted = min(count, _MAX_DOCS)
    heap: list[tuple[int, str]] = []  # the `wanted` documents of smallest hash (negated: heapq is a min-heap)
    for batch in iter_batches(parts, columns=["id", "source", "text"]):
        for doc_id, source, text in zip(*(batch.column(c).to_pylist() for c in ("id", "source", "text")),
                                        strict=True):
            if source in CHAT_SOURCES or not text or not text.strip():
                continue
            key = -_unit_hash(seed, doc_id)
            if len(heap) < wanted:
                heapq.heappush(heap, (key, text))
            elif key > heap[0][0]:
                heapq.heapreplace(heap, (key, text))
    docs = [text for _, text in sorted(heap, reverse=True)]
    rng = np.random.default_rng(seed)
    lengths = np.asarray(word_lengths, dtype=np.int64)
    per_doc = -(-count // max(len(docs), 1))
    snippets: list[str] = []
    for text in docs:
        if clean_rules is not None:
            text = clean_text(text, clean_rules)[0]
        words = text.split()
        for _ in range(per_doc):
            if not words or len(snippets) == count:
                break
            n = int(lengths[rng.integers(len(lengths))])
            start = int(rng.integers(max(len(words) - n, 0) + 1))
            snippets.append(" ".join(words[start:start + n]))
    return snippets


def word_count(text: str) -> int:
    return len(text.split())
