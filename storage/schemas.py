"""Arrow schemas of the datasets every stage exchanges: documents and WhatsApp chat messages (DESIGN §3)."""

from __future__ import annotations

import pyarrow as pa

# Columns every document dataset starts with; later stages append their own (lang, quality_*, perplexity…).
DOCUMENT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("url", pa.string()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("meta", pa.string()),
    ]
)

MESSAGE_KINDS = ("text", "media", "deleted", "edited", "system", "poll")

MESSAGE_SCHEMA = pa.schema(
    [
        pa.field("chat_id", pa.string(), nullable=False),
        pa.field("index", pa.int64(), nullable=False),
        # naive local time, exactly as written in the export
        pa.field("timestamp", pa.timestamp("us")),
        pa.field("author", pa.string()),
        pa.field("text", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        # the replied message's index as a string ("#<source id>" when it is not in the chat); None when the
        # source does not record replies (WhatsApp .txt exports)
        pa.field("reply_to", pa.string()),
    ]
)

# Rejected rows keep every column of the input plus why they were dropped.
REJECT_REASON_FIELD = pa.field("reason", pa.string(), nullable=False)


def with_reason(schema: pa.Schema) -> pa.Schema:
    """The schema of a stage's `rejected/` side dataset: the input schema plus a `reason` column."""
    if schema.get_field_index("reason") >= 0:
        return schema
    return schema.append(REJECT_REASON_FIELD)
