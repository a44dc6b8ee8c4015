"""One conversation from several copies of it: a WhatsApp `.txt` export and the database (`msgstore.db`,
`ChatStorage.sqlite`) that holds the same chat, or two exports of it made at different times.

Two chats are the same conversation when, where their times overlap, most messages of the one with fewer
messages there have a counterpart in the other: same text (compared after Unicode and whitespace
normalisation), same author up to a consistent renaming (the database says "me" and phone numbers, the export
says contact names), and the same time within the coarser copy's precision (a `.txt` export from Android writes
minutes: a database message at 21:05:42 is the export's 21:05). Databases store UTC and are often read with the
default zone, so a whole offset between the copies (a multiple of 15 minutes, found from messages whose text
occurs once in each) is allowed and removed first.

The merged chat keeps one copy of each message: the exact copy's timestamp (moved into the export's local time
by that offset), text and reply, the export's author names (what the user sees and names the persona by), and
the messages that only one copy has, in time order. Its `chat_id` and `source_file` are those of the copy with
exact timestamps (else the first given), so they stay stable when another export is added.

`chat_from_rows` reads a chat back from the messages dataset (what sft-data merges), where the reader's stats are
gone: a chat whose rows record replies or sub-second times came from a database or Telegram (exact); otherwise
its precision is what its timestamps show.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from storage.parquet import iter_batches, read_schema
from storage.schemas import MESSAGE_KINDS
from tasks.whatsapp.parser import ChatMessage, WhatsAppChat

MIN_SHARED = 0.8  # share of the smaller copy's overlapping messages that must have a counterpart
MIN_MATCHES = 3
_OFFSET_STEP = 900  # seconds: time zones are whole quarter hours
_MAX_OFFSET = 14 * 3600
_INVISIBLE = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_SPACES = re.compile(r"\s+")
_PHONE = re.compile(r"^\+?[\d\s\-().]{6,}$")


def normalize_text(text: str) -> str:
    """Text as compared across copies: NFC, no direction marks, runs of white space as one space, trimmed."""
    return _SPACES.sub(" ", _INVISIBLE.sub("", unicodedata.normalize("NFC", text))).strip()


def normalize_author(author: str | None) -> str | None:
    """An author as compared across copies: a phone number as its digits, a name case-folded and trimmed."""
    if author is None:
        return None
    author = _INVISIBLE.sub("", unicodedata.normalize("NFC", author)).strip()
    if _PHONE.match(author) and sum(c.isdigit() for c in author) >= 6:
        return re.sub(r"\D", "", author)
    return author.casefold()


def is_exact(chat: WhatsAppChat) -> bool:
    """Whether a chat's timestamps are exact (a database, Telegram) rather than a `.txt` export's."""
    return bool(chat.stats.get("exact_timestamps"))


_MESSAGE_COLUMNS = ["chat_id", "index", "timestamp", "author", "text", "kind"]
_OPTIONAL_COLUMNS = ["source_file", "reply_to"]  # parts of ingest version 1 have no reply_to


def read_chat_rows(parts: list[str]) -> tuple[dict[str, list[dict]], int]:
    """Message rows per chat of messages parts (storage.schemas.MESSAGE_SCHEMA), and how many rows were read."""
    chats: dict[str, list[dict]] = defaultdict(list)
    total = 0
    for part in parts:
        names = set(read_schema(part).names)
        missing = [c for c in _MESSAGE_COLUMNS if c not in names]
        if missing:
            raise ValueError(f"{part}: not a WhatsApp messages part (no {', '.join(missing)} column)")
        columns = _MESSAGE_COLUMNS + [c for c in _OPTIONAL_COLUMNS if c in names]
        for batch in iter_batches(Path(part), columns=columns):
            for row in batch.to_pylist():
                total += 1
                chats[row["chat_id"]].append(row)
    return chats, total


def merge_chat_rows(rows_by_chat: dict[str, list[dict]]) -> list[WhatsAppChat]:
    """The chats of `read_chat_rows` with copies of one conversation merged (`merge_chats`); a merged chat's
    `stats` name its copies (`merged_from`: chat_id, source_file). Chats are taken in chat_id order, so the
    result does not depend on the order of files."""
    return merge_chats([chat_from_rows(rows_by_chat[chat_id]) for chat_id in sorted(rows_by_chat)])


def merge_copies(rows_by_chat: dict[str, list[dict]]) -> tuple[dict[str, list[ChatMessage]], list[dict]]:
    """Every chat's messages, with copies of one conversation merged (`merge_chat_rows`), and one record per
    merged chat: the chat_id it keeps, its copies (chat_id, source_file), the messages they shared (kept once)
    and the time offset found between them."""
    chats = merge_chat_rows(rows_by_chat)
    merged = [
        {"chat_id": c.chat_id, "copies": c.stats["merged_from"], "shared_messages": c.stats["merged_shared_messages"],
         "offset_seconds": c.stats["merged_offset_seconds"]}
        for c in chats if "merged_from" in c.stats
    ]
    return {c.chat_id: c.messages for c in chats}, merged


def chat_from_rows(rows: list[dict]) -> WhatsAppChat:
    """One chat of the messages dataset (rows of storage.schemas.MESSAGE_SCHEMA, one chat_id) as a chat, in index
    order. Exact timestamps are recognised from the rows: a `.txt` export records no replies and writes whole
    seconds, a database writes milliseconds."""
    rows = sorted(rows, key=lambda r: r["index"])
    messages = [
        ChatMessage(r["chat_id"], r["index"], r["timestamp"], r["author"], r["text"] or "", r["kind"],
                    r.get("source_file") or "", r.get("reply_to"))
        for r in rows
    ]
    exact = any(m.reply_to is not None or (m.timestamp is not None and m.timestamp.microsecond) for m in messages)
    first = messages[0] if messages else None
    return WhatsAppChat(
        chat_id=first.chat_id if first else "",
        source_file=first.source_file if first else "",
        messages=messages,
        stats={"exact_timestamps": exact},
    )


def precision(chat: WhatsAppChat) -> timedelta:
    """How coarse a chat's timestamps are: exact, seconds (iOS exports), or minutes (Android exports)."""
    if is_exact(chat):
        return timedelta(0)
    stamps = [m.timestamp for m in chat.messages if m.timestamp is not None]
    if stamps and all(t.second == 0 and t.microsecond == 0 for t in stamps):
        return timedelta(minutes=1)
    return timedelta(seconds=1)


@dataclass
class ChatMatch:
    """How two copies line up: pairs of message positions (a, b), the offset added to b's times, and the
    author renaming a → b that the pairs show."""

    pairs: list[tuple[int, int]]
    offset: timedelta
    authors: dict[str | None, str | None]


def merge_chats(chats: list[WhatsAppChat]) -> list[WhatsAppChat]:
    """The chats with every group of copies of one conversation merged into one chat (see module docstring);
    chats that repeat no other come back unchanged, in the order given."""
    out: list[WhatsAppChat] = []
    sketches: list[_Sketch] = []
    for chat in chats:
        sketch = _Sketch.of(chat)
        for position, kept in enumerate(out):
            if not sketches[position].may_match(sketch):
                continue
            merged = _merge_pair(kept, chat)
            if merged is not None:
                out[position] = merged
                sketches[position] = _Sketch.of(merged)
                break
        else:
            out.append(chat)
            sketches.append(sketch)
    return out


@dataclass
class _Sketch:
    """What rules a pair of chats out cheaply, before messages are paired: their time spans (widened by the
    largest offset and a minute) and the texts they hold. Many chats of one phone share neither."""

    start: datetime | None
    end: datetime | None
    texts: set[str]

    @classmethod
    def of(cls, chat: WhatsAppChat) -> _Sketch:
        stamps = [m.timestamp for m in chat.messages if m.timestamp is not None]
        texts = {normalize_text(m.text) for m in chat.messages if m.kind in ("text", "edited", "poll")}
        return cls(min(stamps, default=None), max(stamps, default=None), texts)

    def may_match(self, other: _Sketch) -> bool:
        if None in (self.start, self.end, other.start, other.end):
            return False
        slack = timedelta(seconds=_MAX_OFFSET + _OFFSET_STEP, minutes=1)
        if self.start > other.end + slack or other.start > self.end + slack:
            return False
        small, large = sorted((self.texts, other.texts), key=len)
        return sum(text in large for text in small) >= MIN_MATCHES


def _merge_pair(a: WhatsAppChat, b: WhatsAppChat) -> WhatsAppChat | None:
    # the exact copy (a database) is the base; its times are moved into the other's local time
    base, other = (b, a) if is_exact(b) and not is_exact(a) else (a, b)
    match = match_chats(other, base)
    if match is None:
        return None
    return _combine(base, other, match)


def match_chats(export: WhatsAppChat, exact: WhatsAppChat) -> ChatMatch | None:
    """How `exact`'s messages pair with `export`'s, or None when they are not the same conversation."""
    a, b = export.messages, exact.messages
    if not a or not b:
        return None
    tolerance = max(precision(export), precision(exact))
    offset = _offset(a, b)
    pairs = _pair(a, b, offset, tolerance)
    if len(pairs) < MIN_MATCHES:
        return None
    votes: dict[str | None, Counter] = defaultdict(Counter)
    for i, j in pairs:
        votes[normalize_author(a[i].author)][normalize_author(b[j].author)] += 1
    renaming = {author: counts.most_common(1)[0][0] for author, counts in votes.items()}
    agreeing = sum(counts.most_common(1)[0][1] for counts in votes.values())
    targets = [t for t in renaming.values() if t is not None]
    if agreeing < 0.9 * len(pairs) or len(set(targets)) != len(targets):
        return None  # authors do not line up one to one: two chats that share some texts
    consistent = [(i, j) for i, j in pairs if renaming[normalize_author(a[i].author)] == normalize_author(b[j].author)]
    if not _covers_overlap(a, b, consistent, offset, tolerance):
        return None
    authors = {}
    for i, j in consistent:
        authors.setdefault(b[j].author, a[i].author)
    return ChatMatch(consistent, offset, authors)


def _offset(a: list[ChatMessage], b: list[ChatMessage]) -> timedelta:
    """The whole quarter-hour offset to add to b's times to read them in a's local time (0 when unclear)."""
    def unique(messages):
        counts = Counter(normalize_text(m.text) for m in messages if m.kind in ("text", "edited"))
        return {
            normalize_text(m.text): m.timestamp
            for m in messages
            if m.kind in ("text", "edited") and m.timestamp is not None and counts[normalize_text(m.text)] == 1
        }

    in_a, in_b = unique(a), unique(b)
    steps = Counter()
    for text, stamp in in_a.items():
        other = in_b.get(text)
        if other is not None and len(text) >= 2:
            seconds = (stamp - other).total_seconds()
            if abs(seconds) <= _MAX_OFFSET + _OFFSET_STEP:
                steps[round(seconds / _OFFSET_STEP)] += 1
    if not steps:
        return timedelta(0)
    step, votes = steps.most_common(1)[0]
    if votes < MIN_MATCHES or votes < 0.5 * sum(steps.values()):
        return timedelta(0)
    return timedelta(seconds=step * _OFFSET_STEP)


def _close(export_time: datetime | None, exact_time: datetime | None, tolerance: timedelta) -> bool:
    """Whether an exact time reads as the export's time: within the same minute (or second) the export shows."""
    if export_time is None or exact_time is None:
        return False
    gap = exact_time - export_time
    if tolerance >= timedelta(minutes=1):
        return timedelta(0) <= gap < tolerance
    return abs(gap) <= max(tolerance, timedelta(seconds=1))


def _pair(a: list[ChatMessage], b: list[ChatMessage], offset: timedelta, tolerance: timedelta) -> list[tuple[int, int]]:
    """Pairs (i, j) of messages that are one message: first by text, then messages without comparable text
    (media, deleted, system: placeholders differ between copies) by kind and time, in order."""
    shifted = [m.timestamp + offset if m.timestamp is not None else None for m in b]
    by_text: dict[str, list[int]] = defaultdict(list)
    for j, m in enumerate(b):
        if m.kind in ("text", "edited", "poll"):
            by_text[normalize_text(m.text)].append(j)
    used_b: set[int] = set()
    pairs = []
    for i, m in enumerate(a):
        if m.kind not in ("text", "edited", "poll"):
            continue
        for j in by_text.get(normalize_text(m.text), ()):
            if j not in used_b and _close(m.timestamp, shifted[j], tolerance):
                pairs.append((i, j))
                used_b.add(j)
                break
    by_kind: dict[str, list[int]] = defaultdict(list)
    for j, m in enumerate(b):
        if j not in used_b and m.kind in ("media", "deleted", "system"):
            by_kind[m.kind].append(j)
    for i, m in enumerate(a):
        if m.kind not in ("media", "deleted", "system"):
            continue
        for j in by_kind.get(m.kind, ()):
            if j not in used_b and _close(m.timestamp, shifted[j], tolerance) and (
                m.kind == "system" or normalize_author(m.author) is not None
            ):
                pairs.append((i, j))
                used_b.add(j)
                break
    return sorted(pairs)


def _covers_overlap(
    a: list[ChatMessage], b: list[ChatMessage], pairs: list[tuple[int, int]], offset: timedelta, tolerance: timedelta
) -> bool:
    """Whether, over the time both copies cover, most messages of the copy with fewer there are paired."""
    times_a = [m.timestamp for m in a if m.timestamp is not None]
    times_b = [m.timestamp + offset for m in b if m.timestamp is not None]
    start = max(min(times_a), min(times_b) - tolerance)
    end = min(max(times_a) + tolerance, max(times_b))
    if start > end:
        return False
    in_a = [i for i, m in enumerate(a) if m.timestamp is not None and start <= m.timestamp <= end]
    in_b = [j for j, m in enumerate(b) if m.timestamp is not None and start <= m.timestamp + offset <= end]
    paired_a = {i for i, _ in pairs}
    paired_b = {j for _, j in pairs}
    shared_a = sum(i in paired_a for i in in_a)
    shared_b = sum(j in paired_b for j in in_b)
    if len(in_a) <= len(in_b):
        return bool(in_a) and shared_a >= MIN_SHARED * len(in_a)
    return shared_b >= MIN_SHARED * len(in_b)


def _combine(base: WhatsAppChat, other: WhatsAppChat, match: ChatMatch) -> WhatsAppChat:
    """`base` (exact) and `other` as one chat: paired messages once (base's copy, other's author name and an
    "edited" kind either copy knows), unpaired ones of both, in time order; replies re-pointed."""
    pair_of_base = {j: i for i, j in match.pairs}
    paired_other = {i for i, _ in match.pairs}
    names = dict(match.authors)
    entries: list[tuple[datetime | None, int, int, ChatMessage, str | None]] = []  # time, source, position, …
    for j, m in enumerate(base.messages):
        stamp = m.timestamp + match.offset if m.timestamp is not None else None
        author = names.get(m.author, m.author) if m.author is not None else None
        kind = m.kind
        i = pair_of_base.get(j)
        if i is not None:
            partner = other.messages[i]
            author = partner.author if m.author is not None else None
            if partner.kind == "edited" and kind == "text":
                kind = "edited"
        entries.append((stamp, 0, j, ChatMessage(base.chat_id, 0, stamp, author, m.text, kind, base.source_file, m.reply_to), "base"))
    for i, m in enumerate(other.messages):
        if i in paired_other:
            continue
        reply = m.reply_to if m.reply_to is None or m.reply_to.startswith("#") else None
        entries.append((m.timestamp, 1, i, ChatMessage(base.chat_id, 0, m.timestamp, m.author, m.text, m.kind, base.source_file, reply), "other"))
    entries.sort(key=lambda e: (e[0] is None, e[0] or datetime.min, e[1], e[2]))
    new_index = {(origin, position): k for k, (_, _, position, _, origin) in enumerate(entries)}
    forwarded = sorted(
        [new_index[("base", j)] for j in base.stats.get("forwarded_indexes", [])]
        + [new_index[("other", i)] for i in other.stats.get("forwarded_indexes", []) if i not in paired_other]
    )
    messages = []
    for k, (_, _, _, message, origin) in enumerate(entries):
        message.index = k
        if origin == "base" and message.reply_to is not None and not message.reply_to.startswith("#"):
            message.reply_to = str(new_index[("base", int(message.reply_to))])
        messages.append(message)
    return WhatsAppChat(
        chat_id=base.chat_id,
        source_file=base.source_file,
        messages=messages,
        stats={**_merged_stats(base, other, match, messages), "forwarded_indexes": forwarded, "forwarded": len(forwarded)},
        path=base.path,
    )


def _merged_stats(base: WhatsAppChat, other: WhatsAppChat, match: ChatMatch, messages: list[ChatMessage]) -> dict:
    kinds = Counter(m.kind for m in messages)
    authors = Counter(m.author for m in messages if m.author is not None)
    stamps = [m.timestamp for m in messages if m.timestamp is not None]
    stats = dict(base.stats)
    stats.update(
        messages=len(messages),
        kinds={k: kinds.get(k, 0) for k in MESSAGE_KINDS},
        authors=dict(authors),
        first_timestamp=min(stamps).isoformat() if stamps else None,
        last_timestamp=max(stamps).isoformat() if stamps else None,
        merged_from=[*base.stats.get("merged_from", [{"chat_id": base.chat_id, "source_file": base.source_file}]),
                     *other.stats.get("merged_from", [{"chat_id": other.chat_id, "source_file": other.source_file}])],
        merged_shared_messages=base.stats.get("merged_shared_messages", 0)
        + other.stats.get("merged_shared_messages", 0) + len(match.pairs),
        merged_offset_seconds=int(match.offset.total_seconds()),
    )
    return stats
