"""The `clean` stage: apply the switchable cleaning rules to every document; drop what ends up empty."""

from __future__ import annotations

from collections.abc import Sequence

from tasks.cleaning import clean_text
from tasks.params import CleanParams
from tasks.shard_drivers import ShardCounts, Summary, map_shard

STAGE = "clean"
STAGE_VERSION = "1"


def clean_shard(in_part: str, out_part: str, rejected_part: str, params: CleanParams) -> ShardCounts:
    """Clean one Parquet part into `out_part`; rows that end up too short go to `rejected_part` with a reason.

    `extra["rules"]` counts, per rule, the documents it changed."""

    def clean(original: str, counts: ShardCounts) -> tuple[str, str | None]:
        text, fired = clean_text(original, params.rules)
        counts.tally_each("rules", fired)
        if len(text) < max(params.min_chars, 1):
            return text, "empty_after_clean" if not text else "too_short"
        return text, None

    return map_shard(in_part, out_part, rejected_part, clean)


def clean_stats(total: ShardCounts, _shards: Sequence[ShardCounts]) -> dict:
    return {"rules_fired": dict(sorted(total.extra.get("rules", {}).items()))}


SUMMARY = Summary(stats=clean_stats)
