"""The `sft-data` stage: WhatsApp messages → multi-turn chat examples for fine-tuning (DESIGN §4).

Copies of one chat (exported again later, or from a `.txt` export and the phone's database) are merged into one
conversation first by `tasks.chat_merge.merge_chats`, so no message is trained twice; the manifest lists the
merged chats and counts the shared messages dropped (`dropped_duplicate`).

The person to imitate becomes `Assistant`, everyone else `User`. Their name is matched ignoring case, surrounding
spaces, Unicode form and invisible marks, and a phone number by its digits; an author who may be them but is not
matched (another spelling, "Sam 🇫🇷" for "Sam", or a phone database's owner left as "me") stays `User`, with a
warning, and is listed in the manifest's `unmatched_spellings`. Media, deleted, system and poll messages are
dropped (counted by kind); consecutive messages of one role are merged into one turn, newline-joined, so turns
alternate as they will in a chat (in a group chat, several people's messages in a row form one User turn).
A chat is cut into sessions where the silence between two kept messages is longer than `session_gap_hours`.
Every Assistant turn that has at least one turn before it in its session ends one example, which takes as many
of the preceding turns as fit in `block_size` tokens (and `max_context_turns`, when set); when not even the turn
just before fits (a long burst in a busy group), it keeps that turn's last messages that fit (`context_cut`).
Earlier Assistant turns inside that context are trained too, so a turn can be seen in several examples, each time
with a different amount of context.

Train/val is split by session (a salted hash of chat_id and session number), so no conversation is in both;
when there are at least two sessions each split gets one. Output: `train.parquet` and `val.parquet` with
`example_id, chat_id, session, text, turns (list<struct<role, text>>), n_tokens`;
`storage.chat_format.encode_example` turns `turns` into ids and the per-token loss mask.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from storage.chat_format import ASSISTANT, USER, ChatTokens, encode_turn, format_turns, load_tokenizer
from storage.parquet import ParquetShardWriter, iter_batches
from tasks.chat_merge import merge_copies, read_chat_rows
from tasks.chat_merge import normalize_author as same_person
from tasks.cleaning import CleanRules, clean_text
from tasks.training import SftDataParams
from tasks.whatsapp.classify import normalize_author
from tasks.whatsapp.documents import clock_outliers, split_sessions
from tasks.whatsapp.parser import ChatMessage

STAGE = "sft-data"
STAGE_VERSION = "5"  # 3: copies of a chat across sources merged (tasks.chat_merge); 4: a phone-number target
# matches by its digits, a reply whose context turn is too long keeps that turn's last messages; 5: a message
# whose time alone jumps away and back cuts no session
SPLITS = ("train", "val")
DATABASE_OWNER = "me"  # the phone owner's name in a database when ingest.database_owner is not set
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
    context_cut: int = 0  # examples whose context is the last messages of a turn too long to fit whole
    clock_outliers: int = 0  # messages whose time jumps away and back: no session is cut at them
    exports_merged: int = 0  # copies of a chat found elsewhere too (another export, a database), merged into it
    merged_chats: list = field(default_factory=list)  # one entry per merged chat: its copies, shared messages
    # authors not matched who may be the target, trained as User turns: another spelling, a database's "me"
    unmatched_spellings: dict = field(default_factory=dict)

    def counts(self) -> dict:
        return {
            "in": self.messages_in,
            "out": sum(self.examples.values()),
            "messages_used": self.messages_used,
            "exports_merged": self.exports_merged,
            "context_cut": self.context_cut,
            "clock_outliers": self.clock_outliers,
            **{f"examples_{s}": self.examples.get(s, 0) for s in SPLITS},
            **{f"dropped_{k}": v for k, v in sorted(self.dropped.items())},
            **{f"skipped_{k}": v for k, v in sorted(self.skipped_turns.items())},
        }

    def stats(self) -> dict:
        return {"target_author": self.target_author, "authors": self.authors, "chats": self.chats,
                "sessions": self.sessions, "tokens": self.tokens, "assistant_turns": self.assistant_turns,
                "merged_chats": self.merged_chats, "unmatched_spellings": self.unmatched_spellings}


def count_authors(messages_parts: list[str]) -> Counter:
    """Messages per author in WhatsApp messages Parquet parts (system lines have none)."""
    authors: Counter = Counter()
    for part in messages_parts:
        for batch in iter_batches(Path(part), columns=["author"]):
            authors.update(a for a in batch.column("author").to_pylist() if a is not None)
    return authors


def _author_key(author: str) -> str:
    """What tells one person: the name NFC, without invisible marks, trimmed and case-folded; a phone number by its
    digits (an export writes "+33 6 12 34 56 78", a database "33612345678")."""
    return same_person(normalize_author(author))


def _match_target(names: list[str], authors: Counter, total: int, files: list[str]) -> set[str]:
    if not total:
        raise ValueError("sft-data: the messages dataset is empty (no WhatsApp or Telegram message read); "
                         "check ingest's inputs")
    if not authors:
        raise ValueError(f"sft-data: no message by any person to imitate: the {total} messages read are all system "
                         f"lines (no author), in {_file_list(files)}; check ingest's inputs")
    listing = ", ".join(f"{a!r} ({n})" for a, n in authors.most_common())
    if not names:
        raise ValueError(f"sft-data: set target_author, the person to imitate; authors found: {listing}")
    keys = {_author_key(name) for name in names}
    matched = {a for a in authors if _author_key(a) in keys}
    if not matched:
        target = names[0] if len(names) == 1 else names
        raise ValueError(f"sft-data: no messages by {target!r} (compared case-insensitively, trimmed, "
                         "Unicode-normalised, phone numbers by their digits); "
                         f"authors found, with message counts: {listing}")
    return matched


def _unmatched_spellings(targets: set[str], authors: Counter) -> dict[str, int]:
    """Authors the target does not match who may be the same person: the same letters and digits ("Sam 🇫🇷" for
    "Sam"), or a phone database's owner left as "me" (ingest.database_owner not set)."""
    def letters(author: str) -> str:
        return "".join(c for c in _author_key(author) if c.isalnum())

    spelled = {letters(a) for a in targets} - {""}
    return {a: n for a, n in authors.most_common()
            if a not in targets and (letters(a) in spelled or _author_key(a) == DATABASE_OWNER)}


def _file_list(names: list[str], most: int = 5) -> str:
    """The first `most` file names, for an error message."""
    if not names:
        return "no file"
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _turns(messages: list[ChatMessage], targets: set[str]) -> list[dict]:
    turns: list[dict] = []
    for m in messages:
        role = ASSISTANT if m.author in targets else USER
        if turns and turns[-1]["role"] == role:
            turns[-1]["text"] += "\n" + m.text
        else:
            turns.append({"role": role, "text": m.text})
    return turns


def _keep(m: ChatMessage, drop_kinds: set[str], clean_rules: CleanRules | None) -> tuple[ChatMessage, str | None]:
    """The message as trained (cleaned with `clean_rules`), and why it is left out (None: it is kept)."""
    if m.kind in drop_kinds:
        return m, m.kind
    if m.author is None:
        return m, "no_author"
    if not m.text.strip():
        return m, "empty"
    if clean_rules is not None:
        text = clean_text(m.text, clean_rules)[0].strip()
        if not text:
            return m, "empty_after_clean"
        m = replace(m, text=text)
    return m, None


def _counts(counter: Counter) -> str:
    return ", ".join(f"{k} {n}" for k, n in counter.most_common())


def _unit_hash(*parts: object) -> float:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def build_sft_examples(messages_parts: list[str], tokenizer_path: str, params: SftDataParams,
                       out_dir: str, clean_rules: CleanRules | None = None) -> SftDataResult:
    """Build `<out_dir>/train.parquet` and `<out_dir>/val.parquet` from WhatsApp messages Parquet parts.

    Copies of one chat (a chat exported again later, an export and the phone's database) are merged into one
    conversation first; the messages they share are counted once, and as `dropped["duplicate"]`. With
    `clean_rules` (the clean stage's), every message text is cleaned like the pretraining corpus (links, e-mails,
    phone numbers, mentions, control characters…); a message left empty is dropped as `empty_after_clean`.

    Raises ValueError listing the authors found (with message counts) when target_author matches none of them;
    one saying so when the messages are empty or all system lines, or the target has no text message (naming the
    files); and one with the counts above when no example can be built at all.
    """
    tokenizer = load_tokenizer(tokenizer_path)
    tokens = ChatTokens.from_tokenizer(tokenizer)
    rows_by_chat, total = read_chat_rows([str(p) for p in messages_parts])
    chats, merged = merge_copies(rows_by_chat)
    folded = len(rows_by_chat) - len(chats)
    shared = sum(m["shared_messages"] for m in merged)
    if folded:
        log.info("sft-data: %d chat(s) are copies of a chat found elsewhere too (another export, a database); "
                 "merged, %d shared messages kept once", folded, shared)
    # after the merge: a database's "me" and phone numbers are the export's names by now
    authors = Counter(m.author for messages in chats.values() for m in messages if m.author is not None)
    files = sorted({m.source_file for messages in chats.values() for m in messages})
    targets = _match_target(params.target_names(), authors, total, files)
    result = SftDataResult(
        train_path=str(Path(out_dir) / "train.parquet"), val_path=str(Path(out_dir) / "val.parquet"),
        target_author=max(targets, key=lambda a: authors[a]), authors=dict(authors.most_common()),
        messages_in=total, chats=len(chats), exports_merged=folded, merged_chats=merged,
        unmatched_spellings=_unmatched_spellings(targets, authors),
    )
    if result.unmatched_spellings:
        owner = any(_author_key(a) == DATABASE_OWNER for a in result.unmatched_spellings)
        log.warning("sft-data: %s may be %r too but not matched: their messages are User turns%s",
                    ", ".join(f"{a!r} ({n})" for a, n in result.unmatched_spellings.items()), result.target_author,
                    f"; {DATABASE_OWNER!r} is a phone database's owner: name them with ingest.database_owner"
                    if owner else "; if they are, list every name in sft_data.target_author")
    drop_kinds = set(params.drop_kinds)
    dropped: Counter = Counter({"duplicate": shared} if shared else {})
    target_dropped: Counter = Counter()
    skipped: Counter = Counter()
    by_session: dict[tuple[str, int], list[dict]] = {}

    for chat_id in sorted(chats):
        kept: list[ChatMessage] = []
        for m in sorted(chats[chat_id], key=lambda m: m.index):
            m, reason = _keep(m, drop_kinds, clean_rules)
            if reason is None:
                kept.append(m)
                continue
            dropped[reason] += 1
            if m.author in targets:
                target_dropped[reason] += 1
        result.messages_used += len(kept)
        gap = timedelta(hours=params.session_gap_hours)
        outliers = clock_outliers(kept, gap)
        result.clock_outliers += len(outliers)
        sessions = split_sessions(kept, gap, outliers)
        for s, session in enumerate(sessions):
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
                window = [dict(t) for t in turns[start:i + 1]]
                if start == i:  # the turn before is too long: its last messages that fit, else nothing
                    tail = _tail_that_fits(tokenizer, tokens, turns[i - 1], params.block_size - lengths[i])
                    if tail is None:
                        skipped["no_context_fits"] += 1
                        continue
                    result.context_cut += 1
                    window, size = [tail[0], *window], size + tail[1]
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
        by_target = sum(authors[a] for a in targets)
        where = _file_list(sorted({m.source_file for messages in chats.values() for m in messages if m.author in targets}))
        if sum(target_dropped.values()) == by_target:
            raise ValueError(f"sft-data: {result.target_author!r} has no text message to train on: their {by_target} "
                             f"messages in {where} are all dropped ({_counts(target_dropped)})")
        raise ValueError(
            f"sft-data: no example could be built (empty SFT set): {total} messages read, "
            f"{result.messages_used} kept, {by_target} by {result.target_author!r} in {where}, "
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


def _tail_that_fits(tokenizer, tokens: ChatTokens, turn: dict, budget: int) -> tuple[dict, int] | None:
    """The turn cut to its last lines (the last messages of a burst, in a busy group) that fit in `budget` tokens,
    and its length; None when not even its last line fits. Lines are kept whole: no message is cut."""
    lines = turn["text"].split("\n")

    def length(k: int) -> int:  # the turn of its last k lines
        return len(encode_turn(tokenizer, turn["role"], "\n".join(lines[-k:]), tokens=tokens)[0])

    lo, hi = 0, len(lines) - 1  # the whole turn does not fit; find the most lines that do
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if length(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return None
    return {"role": turn["role"], "text": "\n".join(lines[-lo:])}, length(lo)


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
