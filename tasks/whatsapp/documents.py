"""Turning a parsed chat into corpus documents: one document per conversation session.

A session ends where two consecutive messages are more than `session_gap_hours` apart. A document holds the
session's typed messages as `Author: text` lines; media, deleted and system messages are left out of the text
and only counted in `meta`. Time zones: exports carry local time without an offset, and the document schema
wants UTC, so the local wall-clock time is written as if it were UTC (no conversion). That keeps every session
in the order and at the hour the participants saw, which is what later stages use the timestamp for.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from datetime import timedelta, timezone
from urllib.parse import quote

from storage.schemas import MESSAGE_KINDS
from tasks.records import Document, SkipCounter, stable_id
from tasks.whatsapp.parser import ChatMessage, WhatsAppChat

# Kinds whose text a person wrote and that go into document text.
DOCUMENT_KINDS = ("text", "edited", "poll")
SOURCE = "whatsapp"


def pseudonym(author: str, salt: str = "") -> str:
    """A stable stand-in for an author name: "Person-" and 8 hex digits of sha256(salt, name)."""
    digest = hashlib.sha256(f"{salt}\x00{author}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"Person-{digest[:8]}"


class AuthorPseudonyms:
    """Replaces a chat's author names by pseudonyms, as authors and where they are @mentioned in text."""

    def __init__(self, authors: list[str], salt: str = "") -> None:
        self.names = {a: pseudonym(a, salt) for a in authors}
        mentions: dict[str, str] = {}
        for author, alias in self.names.items():
            mentions[author] = alias
            digits = re.sub(r"\D", "", author)
            # non-contacts are mentioned by their number without spaces: "@447700900123"
            if author.lstrip().startswith("+") and len(digits) >= 6:
                mentions[digits] = alias
        first_names = Counter(a.split()[0] for a in authors if a.split())
        for author, alias in self.names.items():
            first = author.split()[0] if author.split() else ""
            if len(first) >= 2 and first_names[first] == 1 and first not in mentions:
                mentions[first] = alias
        self._mentions = mentions
        alternatives = "|".join(re.escape(m) for m in sorted(mentions, key=len, reverse=True))
        # "@Kim" or, as Android writes it, "@\u2068Kim Lee\u2069"
        self._mention_re = re.compile(rf"@(\u2068)?({alternatives})(?(1)\u2069|(?!\w))") if mentions else None

    def author(self, name: str) -> str:
        return self.names.get(name) or pseudonym(name)

    def text(self, text: str) -> str:
        if self._mention_re is None or "@" not in text:
            return text
        return self._mention_re.sub(self._replace_mention, text)

    def _replace_mention(self, m: re.Match) -> str:
        alias = self._mentions[m.group(2)]
        return f"@\u2068{alias}\u2069" if m.group(1) else f"@{alias}"

    def file_name(self, name: str) -> str:
        """The export's file name ("WhatsApp Chat with Sam Lee.txt") without the names in it."""
        for author in sorted(self.names, key=len, reverse=True):
            name = re.sub(rf"(?<!\w){re.escape(author)}(?!\w)", self.names[author], name)
        return name


def clock_outliers(messages: list[ChatMessage], gap: timedelta) -> set[int]:
    """Positions of messages whose time alone jumps away: more than `gap` from the message before, while the
    message after is within `gap` of that one again (a phone with a wrong clock, an edited or mis-read time).
    Messages are in the chat's order, so such a time says nothing about a silence."""
    known = [i for i, m in enumerate(messages) if m.timestamp is not None]
    return {b for a, b, c in zip(known, known[1:], known[2:], strict=False)
            if abs(messages[b].timestamp - messages[a].timestamp) > gap
            and abs(messages[c].timestamp - messages[a].timestamp) <= gap}


def split_sessions(messages: list[ChatMessage], gap: timedelta,
                   outliers: set[int] | None = None) -> list[list[ChatMessage]]:
    """Consecutive runs of messages (file order) with no silence longer than `gap` inside. A clock outlier (see
    `clock_outliers`; computed unless given) stays in its session and cuts none: the next gap is measured from
    the message before it."""
    if outliers is None:
        outliers = clock_outliers(messages, gap)
    sessions: list[list[ChatMessage]] = []
    previous = None
    for i, message in enumerate(messages):
        ts = None if i in outliers else message.timestamp
        if not sessions or (previous is not None and ts is not None and ts - previous > gap):
            sessions.append([])
        sessions[-1].append(message)
        if ts is not None:
            previous = ts
    return sessions


def chat_to_documents(
    chat: WhatsAppChat,
    *,
    session_gap_hours: float = 6.0,
    pseudonymize: bool = False,
    salt: str = "",
    skips: SkipCounter | None = None,
) -> list[Document]:
    """One document per conversation session of `chat` (see module docstring for what goes in).

    `url` is `whatsapp://<export file name, %-encoded>#<chat_id>/<session index>`; session indexes count
    every session, so a session without typed text (skipped, counted in `skips`) leaves a gap. With
    `pseudonymize`, author names become "Person-<hash>" (stable for a given salt) in the text, in @mentions,
    in `meta` and in the file name inside `url`.
    """
    if session_gap_hours <= 0:
        raise ValueError(f"session_gap_hours must be positive, got {session_gap_hours}")
    authors = list(dict.fromkeys(m.author for m in chat.messages if m.author is not None))
    names = AuthorPseudonyms(authors, salt) if pseudonymize else None
    file_name = names.file_name(chat.source_file) if names else chat.source_file
    documents = []
    for index, session in enumerate(split_sessions(chat.messages, timedelta(hours=session_gap_hours))):
        lines = []
        for m in session:
            if m.kind in DOCUMENT_KINDS and m.author is not None:
                author = names.author(m.author) if names else m.author
                text = names.text(m.text) if names else m.text
                lines.append(f"{author}: {text}")
        if not lines:
            if skips is not None:
                skips.skip("whatsapp_session_without_text", f"{chat.path or chat.source_file}#{index}")
            continue
        kinds = Counter(m.kind for m in session)
        session_authors = list(dict.fromkeys(m.author for m in session if m.author is not None))
        stamps = [m.timestamp for m in session if m.timestamp is not None]
        meta = {
            "chat_id": chat.chat_id,
            "session": index,
            "messages": len(session),
            "kinds": {k: kinds.get(k, 0) for k in MESSAGE_KINDS},
            "authors": [names.author(a) for a in session_authors] if names else session_authors,
            "first_message": min(stamps).isoformat() if stamps else None,
            "last_message": max(stamps).isoformat() if stamps else None,
            "source_file": file_name,
            "pseudonymized": pseudonymize,
        }
        first = session[0].timestamp
        documents.append(
            Document(
                id=stable_id(SOURCE, chat.chat_id, str(index)),
                text=unicodedata.normalize("NFC", "\n".join(lines)),
                source=SOURCE,
                url=f"whatsapp://{quote(file_name)}#{chat.chat_id}/{index}",
                timestamp=first.replace(tzinfo=timezone.utc) if first is not None else None,
                meta=json.dumps(meta, ensure_ascii=False, sort_keys=True),
            )
        )
    return documents
