"""What a dedup method decides about each document — keep it, drop it as a duplicate of a survivor, or cut
spans out of it — and how those decisions are applied to a shard (through the shared `filter_shard` driver).

Every method leaves two records of what it removed, so a user can always answer "why is this gone and what was
kept instead?": whole documents go to the shard's `rejected` part with `reason` and `duplicate_of` (the
survivor's id); pieces cut out of kept documents (paragraphs, repeated substrings) go to an optional `spans`
part: one row per removed span with the document id, character offsets in the text as it was, the removed
text, the reason and the survivor's id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import pyarrow as pa

from storage.parquet import ParquetShardWriter
from tasks.shard_drivers import DUPLICATE_OF_FIELD, ShardCounts, Summary, Verdicts, filter_shard

# One row per span removed from a document that was kept.
SPAN_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("start", pa.int64(), nullable=False),  # character offsets in the text before removal
        pa.field("end", pa.int64(), nullable=False),
        pa.field("bytes", pa.int64(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        DUPLICATE_OF_FIELD,
    ]
)


@dataclass
class SpanRemoval:
    """A piece of a kept document to cut out: character offsets [start, end) of the original text."""

    start: int
    end: int
    reason: str
    duplicate_of: str | None = None


@dataclass
class Decision:
    """What to do with one document: keep (with optional spans removed) or drop it for `reason`."""

    drop_reason: str | None = None
    duplicate_of: str | None = None
    spans: list[SpanRemoval] = field(default_factory=list)


KEEP = Decision()


def cut_spans(text: str, spans: Sequence[SpanRemoval]) -> str:
    """The text with the given (non-overlapping, any order) character spans removed."""
    if not spans:
        return text
    pieces = []
    pos = 0
    for s in sorted(spans, key=lambda s: s.start):
        if s.start > pos:
            pieces.append(text[pos : s.start])
        pos = max(pos, s.end)
    pieces.append(text[pos:])
    return "".join(pieces)


def apply_decisions(
    in_part: str,
    out_part: str,
    rejected_part: str,
    decide: Callable[[int, str, str], Decision],
    spans_part: str | None = None,
    min_chars_after: int = 1,
    emptied_reason: str = "emptied",
) -> ShardCounts:
    """Apply per-document decisions to one Parquet part.

    `decide(row_index, doc_id, text)` says keep / drop / cut spans. A kept document whose text ends up
    shorter than `min_chars_after` characters (stripped) after its spans are cut is dropped with
    `emptied_reason`; its survivor is the `duplicate_of` of the longest span removed. Removed spans go to
    `spans_part` when given; `extra` counts them (`spans_removed`, `span_bytes_removed`, per reason) and the
    documents they changed (`docs_modified`).
    """
    row0 = 0
    spans_out = ParquetShardWriter(spans_part, SPAN_SCHEMA) if spans_part else nullcontext()
    with spans_out as spans_writer:

        def verdicts(batch: pa.RecordBatch, counts: ShardCounts) -> Verdicts:
            nonlocal row0
            texts = batch.column("text").to_pylist()
            new_texts = list(texts)
            reasons: list[str | None] = []
            survivors: list[str | None] = []
            changed = False
            for j, (doc_id, text) in enumerate(zip(batch.column("id").to_pylist(), texts, strict=True)):
                d = decide(row0 + j, doc_id, text)
                reason, survivor = d.drop_reason, d.duplicate_of
                if reason is None and d.spans:
                    new = cut_spans(text, d.spans)
                    if len(new.strip()) < max(min_chars_after, 1):
                        reason = emptied_reason
                        survivor = max(d.spans, key=lambda s: s.end - s.start).duplicate_of
                    else:
                        for s in sorted(d.spans, key=lambda s: s.start):
                            piece = text[s.start : s.end]
                            nbytes = len(piece.encode("utf-8"))
                            counts.tally_each("spans_removed", [s.reason])
                            counts.tally_each("span_bytes_removed", {s.reason: nbytes})
                            if spans_writer is not None:
                                spans_writer.write_row({"id": doc_id, "reason": s.reason, "start": s.start,
                                                        "end": s.end, "bytes": nbytes, "text": piece,
                                                        "duplicate_of": s.duplicate_of})
                        new_texts[j] = new
                        changed = True
                        counts.tally("docs_modified")
                reasons.append(reason)
                survivors.append(survivor if reason is not None else None)
            row0 += len(texts)
            return Verdicts(reasons, columns={"text": new_texts} if changed else {}, duplicate_of=survivors)

        return filter_shard(in_part, out_part, rejected_part, verdicts, duplicates=True, required=("id", "text"),
                            hint="not a document dataset")


def dedup_stats(total: ShardCounts, _shards: Sequence[ShardCounts]) -> dict:
    """Stats every dedup method reports: bytes per reason, documents modified, the share of bytes removed."""
    return {
        "docs_modified": total.extra.get("docs_modified", 0),
        "dropped_bytes": dict(sorted(total.dropped_bytes.items())),
        "span_bytes_removed": dict(sorted(total.extra.get("span_bytes_removed", {}).items())),
        "bytes_removed_fraction": round(1 - total.bytes_out / total.bytes_in, 6) if total.bytes_in else 0.0,
    }


# counts: `in`, `out`, `bytes_in`, `bytes_out`, `dropped_<reason>` (documents), `spans_removed_<reason>`
DEDUP_SUMMARY = Summary(counted={"dropped": {}, "spans_removed": {}}, stats=dedup_stats)
