"""The shard drivers on small parts written here: what they count, what they write, and how counts add up."""

from __future__ import annotations

import pyarrow as pa
import pytest

from storage.parquet import ParquetShardWriter, iter_rows, read_schema
from storage.schemas import DOCUMENT_SCHEMA
from tasks.shard_drivers import (
    ShardCounts,
    ShardInputError,
    Summary,
    Verdicts,
    filter_shard,
    map_shard,
    summarize,
    tag_shard,
)

TEXTS = ["short", "a much longer text", "été", "drop me"]


def _part(path, texts=TEXTS):
    with ParquetShardWriter(path, DOCUMENT_SCHEMA) as w:
        for i, text in enumerate(texts):
            w.write_row({"id": str(i), "text": text, "source": "text", "url": None, "timestamp": None, "meta": None})
    return str(path)


def _bytes(*texts: str) -> int:
    return sum(len(t.encode("utf-8")) for t in texts)


def test_tag_keeps_every_row_and_adds_the_declared_columns(tmp_path):
    src = _part(tmp_path / "in.parquet")
    length = pa.field("length", pa.int32())

    def tag(batch, counts):
        texts = batch.column("text").to_pylist()
        counts.tally_each("first_letters", [t[0] for t in texts])
        return {"length": [len(t) for t in texts]}

    counts = tag_shard(src, str(tmp_path / "out.parquet"), [length], tag)
    rows = list(iter_rows(tmp_path / "out.parquet"))
    assert [r["length"] for r in rows] == [5, 18, 3, 7] and [r["text"] for r in rows] == TEXTS
    assert read_schema(tmp_path / "out.parquet").names == [*DOCUMENT_SCHEMA.names, "length"]
    assert (counts.docs_in, counts.docs_out, counts.bytes_in, counts.bytes_out) == (4, 4, _bytes(*TEXTS), None)
    assert counts.extra["first_letters"] == {"s": 1, "a": 1, "é": 1, "d": 1}
    # tagging a tagged part replaces the column where it stands
    tag_shard(str(tmp_path / "out.parquet"), str(tmp_path / "again.parquet"), [length], tag)
    assert read_schema(tmp_path / "again.parquet").names == read_schema(tmp_path / "out.parquet").names


def test_tag_that_rewrites_text_counts_bytes_out(tmp_path):
    src = _part(tmp_path / "in.parquet")
    counts = tag_shard(src, str(tmp_path / "out.parquet"), [], lambda b, c: {"text": [t[:2] for t in b.column("text").to_pylist()]},
                       rewrites_text=True)
    assert [r["text"] for r in iter_rows(tmp_path / "out.parquet")] == ["sh", "a ", "ét", "dr"]
    assert counts.bytes_out == _bytes("sh", "a ", "ét", "dr")
    assert read_schema(tmp_path / "out.parquet") == DOCUMENT_SCHEMA


def test_filter_counts_by_reason_and_writes_rejected_rows_beside(tmp_path):
    src = _part(tmp_path / "in.parquet")

    def reasons(batch, counts):
        return ["too_short" if len(t) < 4 else "banned" if t.startswith("drop") else None
                for t in batch.column("text").to_pylist()]

    counts = filter_shard(src, str(tmp_path / "kept.parquet"), str(tmp_path / "rej.parquet"), reasons)
    assert [r["text"] for r in iter_rows(tmp_path / "kept.parquet")] == ["short", "a much longer text"]
    assert [(r["id"], r["reason"]) for r in iter_rows(tmp_path / "rej.parquet")] == [("2", "too_short"), ("3", "banned")]
    assert (counts.docs_in, counts.docs_out) == (4, 2)
    assert (counts.bytes_in, counts.bytes_out) == (_bytes(*TEXTS), _bytes("short", "a much longer text"))
    assert counts.dropped == {"too_short": 1, "banned": 1}
    assert counts.dropped_bytes == {"too_short": _bytes("été"), "banned": _bytes("drop me")}


def test_filter_with_new_columns_and_survivors(tmp_path):
    src = _part(tmp_path / "in.parquet")
    bucket = pa.field("bucket", pa.string())

    def verdicts(batch, counts):
        n = batch.num_rows
        return Verdicts([None, "duplicate", None, "duplicate"], columns={"bucket": ["x"] * n},
                        duplicate_of=[None, "0", None, "2"])

    filter_shard(src, str(tmp_path / "kept.parquet"), str(tmp_path / "rej.parquet"), verdicts, fields=[bucket],
                 duplicates=True)
    rejected = list(iter_rows(tmp_path / "rej.parquet"))
    assert [(r["id"], r["reason"], r["duplicate_of"], r["bucket"]) for r in rejected] == [
        ("1", "duplicate", "0", "x"), ("3", "duplicate", "2", "x")]
    assert [r["bucket"] for r in iter_rows(tmp_path / "kept.parquet")] == ["x", "x"]


def test_filter_needs_its_columns_and_names_the_file(tmp_path):
    src = _part(tmp_path / "in.parquet")
    with pytest.raises(ShardInputError, match=r"in.parquet: no `score` column \(tag first\)"):
        filter_shard(src, str(tmp_path / "k.parquet"), str(tmp_path / "r.parquet"), lambda b, c: [None] * b.num_rows,
                     required=("score",), hint="tag first")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(ShardInputError, match="bad.parquet: cannot read"):
        tag_shard(str(bad), str(tmp_path / "o.parquet"), [], lambda b, c: {})
    assert not (tmp_path / "k.parquet").exists() and not (tmp_path / "o.parquet").exists()


def test_map_rewrites_text_or_drops_with_a_reason(tmp_path):
    src = _part(tmp_path / "in.parquet")

    def upper_or_drop(text, counts):
        counts.tally("seen")
        return (text.upper(), None) if len(text) > 4 else (text, "too_short")

    counts = map_shard(src, str(tmp_path / "out.parquet"), str(tmp_path / "rej.parquet"), upper_or_drop)
    assert [r["text"] for r in iter_rows(tmp_path / "out.parquet")] == ["SHORT", "A MUCH LONGER TEXT", "DROP ME"]
    assert [(r["text"], r["reason"]) for r in iter_rows(tmp_path / "rej.parquet")] == [("été", "too_short")]
    assert (counts.docs_in, counts.docs_out, counts.dropped, counts.extra["seen"]) == (4, 3, {"too_short": 1}, 4)
    assert counts.bytes_out == _bytes("SHORT", "A MUCH LONGER TEXT", "DROP ME")


def test_summarize_adds_shards_up_and_flattens_counters():
    a = ShardCounts(docs_in=3, docs_out=2, bytes_in=30, bytes_out=20, dropped={"x": 1}, extra={"n": 2, "per": {"en": 2}})
    b = ShardCounts(docs_in=2, docs_out=1, bytes_in=10, bytes_out=5, dropped={"x": 1, "y": 0},
                    extra={"per": {"en": 1, "fr": 1}})
    counts, stats = summarize([a, b], counted={"n": 0, "per": {}, "dropped": {}, "missing": 0},
                              stats=lambda total, shards: {"shards": len(shards), "per": total.extra["per"]})
    assert counts == {"in": 5, "out": 3, "bytes_in": 40, "bytes_out": 25, "n": 2, "per_en": 3, "per_fr": 1,
                      "dropped_x": 2, "dropped_y": 0, "missing": 0}
    assert stats == {"shards": 2, "per": {"en": 3, "fr": 1}}
    # a stage that does not report bytes out has no `bytes_out` count
    assert "bytes_out" not in Summary(counted={})([ShardCounts(docs_in=1, bytes_out=None)])[0]


def test_counts_round_trip_through_a_record_and_old_records_are_refused():
    counts = ShardCounts(part="p", docs_in=1, dropped={"x": 1}, extra={"per": {"en": 1}}, info={"index": 3})
    assert ShardCounts.from_record(counts.as_record()) == counts
    with pytest.raises(ValueError):
        ShardCounts.from_record({"part": "p", "docs_in": 1, "rules": {}})  # a result of an older format
