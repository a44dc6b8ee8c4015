"""The `clean` stage: apply the switchable cleaning rules to every document; drop what ends up empty."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from storage.parquet import ParquetShardWriter, iter_batches, read_schema
from storage.schemas import with_reason
from tasks.cleaning import clean_text
from tasks.params import CleanParams

STAGE = "clean"
STAGE_VERSION = "1"


@dataclass
class CleanShardResult:
    part: str
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    dropped: dict = field(default_factory=dict)
    rules: dict = field(default_factory=dict)


def clean_shard(in_part: str, out_part: str, rejected_part: str, params: CleanParams) -> CleanShardResult:
    """Clean one Parquet part into `out_part`; rows that end up too short go to `rejected_part` with a reason."""
    schema = read_schema(in_part)
    result = CleanShardResult(part=out_part)
    rules: Counter = Counter()
    dropped: Counter = Counter()
    with (
        ParquetShardWriter(out_part, schema) as kept,
        ParquetShardWriter(rejected_part, with_reason(schema)) as rejected,
    ):
        for batch in iter_batches(in_part):
            for row in batch.to_pylist():
                result.docs_in += 1
                original = row["text"]
                result.bytes_in += len(original.encode("utf-8"))
                text, fired = clean_text(original, params.rules)
                rules.update(fired)
                if len(text) < max(params.min_chars, 1):
                    reason = "empty_after_clean" if not text else "too_short"
                    dropped[reason] += 1
                    rejected.write_row({**row, "reason": reason})
                    continue
                row["text"] = text
                result.bytes_out += len(text.encode("utf-8"))
                result.docs_out += 1
                kept.write_row(row)
    result.dropped = dict(dropped)
    result.rules = dict(rules)
    return result


def summarize(results: list[CleanShardResult]) -> tuple[dict, dict]:
    dropped: Counter = Counter()
    rules: Counter = Counter()
    for r in results:
        dropped.update(r.dropped)
        rules.update(r.rules)
    counts = {
        "in": sum(r.docs_in for r in results),
        "out": sum(r.docs_out for r in results),
        "bytes_in": sum(r.bytes_in for r in results),
        "bytes_out": sum(r.bytes_out for r in results),
        **{f"dropped_{k}": v for k, v in sorted(dropped.items())},
    }
    stats = {"rules_fired": dict(sorted(rules.items()))}
    return counts, stats
