"""Records that readers yield and the counter of skipped input, shared by every ingest reader.

A reader never drops input silently: each skipped record goes through `SkipCounter.skip`, which counts it under
a reason (for the manifest) and logs the first occurrence of each reason with its location.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

log = logging.getLogger(__name__)

# Sources whose documents are conversations ("Author: text" lines): the chat rule set of the quality stage, the
# author prefixes language ID ignores, persona-eval's chat snippets. Instagram's come from the Messenger reader.
CHAT_SOURCES = ("whatsapp", "telegram", "messenger", "instagram", "discord")
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """`text` with lone UTF-16 surrogates (a `\\ud83d` escape without its pair, as tools that re-save JSON write
    them) as U+FFFD: UTF-8, and so Parquet, cannot hold them."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def stable_id(*parts: str) -> str:
    """A stable document id: the first 16 bytes of sha256 over the parts (source, locator…), in hex."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:32]


@dataclass
class Document:
    """One row of the document schema (storage.schemas.DOCUMENT_SCHEMA) before it is written."""

    id: str
    text: str
    source: str
    url: str | None = None
    timestamp: datetime | None = None  # timezone-aware UTC, or None
    meta: str | None = None  # JSON string

    def as_row(self) -> dict:
        return {
            "id": self.id,
            "text": self.text,
            "source": self.source,
            "url": self.url,
            "timestamp": self.timestamp,
            "meta": self.meta,
        }


@dataclass
class SkipCounter:
    """Counts skipped records per reason; logs the first of each reason with where it happened."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def skip(self, reason: str, where: str, detail: str = "") -> None:
        self.counts[reason] += 1
        if reason not in self.examples:
            self.examples[reason] = f"{where}: {detail}" if detail else where
            log.warning("skipped a record (%s) at %s%s", reason, where, f": {detail}" if detail else "")

    def merge(self, other: SkipCounter) -> None:
        self.counts.update(other.counts)
        for reason, example in other.examples.items():
            self.examples.setdefault(reason, example)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class InputFileError(ValueError):
    """A whole input file cannot be read; the message names the file and what is wrong with it."""


@contextlib.contextmanager
def read_errors(path: object, expected: str = "a file") -> Iterator[None]:
    """Turn the OSError of opening or reading `path` into a one-line InputFileError naming it (`expected`: what
    a directory given instead should have been)."""
    try:
        yield
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected {expected}") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e.strerror or e})") from None
