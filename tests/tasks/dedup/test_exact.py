"""Exact dedup: one survivor per group of identical documents, chosen by corpus order whatever the order the
shards finish in; CCNet-style paragraph removal; byte-identical reruns."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.parquet import iter_rows
from tasks.dedup.exact import (
    exact_dedup_local,
    exact_filter_shard,
    exact_hash_shard,
    exact_select,
    hash_partition_files,
    selection_path,
    summarize_exact,
)
from tasks.dedup.params import ExactDedupParams
from tasks.dedup.sidefiles import write_documents
from tasks.dedup.text import normalize_document, normalize_text
from tasks.shard_drivers import ShardInputError

PARTS = [
    [("a1", "The ferry leaves at 7.\nBring a coat."), ("u1", "A unique first document.")],
    [
        ("a2", "the FERRY leaves at 8!\n\n  bring a coat"),
        ("u2", "Another unique one."),
        ("a3", "The ferry leaves at 7. Bring a coat."),
    ],
    [("a4", "The ferry leaves at 7.\nBring a coat."), ("e1", "😂😂"), ("e2", "👍")],
]


def _write_parts(tmp: Path, parts=PARTS) -> list[str]:
    return [str(write_documents(tmp / "in" / f"part-{i:05d}.parquet", docs)) for i, docs in enumerate(parts)]


def _run(tmp: Path, params: ExactDedupParams, parts=PARTS, hash_order=None, file_order=None) -> list[str]:
    """Run the three phases; `hash_order` = order the shards are hashed in, `file_order` reverses file lists."""
    ins = _write_parts(tmp, parts)
    order = hash_order or range(len(ins))
    for i in order:
        exact_hash_shard(ins[i], i, str(tmp / "hashes"), params)
    selections = []
    for k in range(params.partitions):
        files = hash_partition_files(tmp / "hashes", k)
        if file_order == "reversed":
            files = files[::-1]
        out = selection_path(tmp / "selection", k)
        exact_select(files, str(out), params)
        selections.append(str(out))
    outs = []
    for i, part in enumerate(ins):
        o = tmp / "out" / f"part-{i:05d}.parquet"
        exact_filter_shard(
            part,
            i,
            selections,
            str(o),
            str(tmp / "rejected" / f"part-{i:05d}.parquet"),
            params,
            str(tmp / "spans" / f"part-{i:05d}.parquet"),
        )
        outs.append(str(o))
    return outs


def _sha(paths) -> list[str]:
    return [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths]


def _ids(paths) -> list[str]:
    return [r["id"] for p in paths for r in iter_rows(Path(p), ["id"])]


def test_normalisation_is_ccnet_like():
    assert normalize_text("  Héllo, WORLD!  It's 2024. ") == "hello world it s 0000"
    assert normalize_document("A.\n\n  b  \n") == "a\nb"


def _ccnet_normalisation(text: str) -> str:
    """The normalisation written step by step (NFD, accents, digits, punctuation, whitespace)."""
    import re
    import unicodedata

    text = unicodedata.normalize("NFD", text.lower())
    text = re.sub(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]", "", text)
    text = re.sub(r"\d", "0", text)
    text = re.sub(r"[^\w\s]+", " ", text)
    return re.sub(r"\s+", " ", text).strip()


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet=st.characters(max_codepoint=0x7F)), st.text()))
def test_normalisation_matches_its_step_by_step_definition(text):
    # the fast path (ASCII, one substitution for punctuation and spaces) must key documents as the steps do
    assert normalize_text(text) == _ccnet_normalisation(text)


def test_keeps_exactly_one_of_identical_documents_the_first_in_corpus_order(tmp_path):
    params = ExactDedupParams(partitions=3)
    outs = _run(tmp_path, params)
    kept = _ids(outs)
    # a1, a2 (digits → 0; punctuation, case and blank lines ignored) and a4 are one document; a3 has the same
    # words on one line, and exact dedup keeps the line structure, so it is a different document
    assert kept == ["a1", "u1", "u2", "a3", "e1", "e2"]
    rejected = [r for i in range(3) for r in iter_rows(tmp_path / "rejected" / f"part-{i:05d}.parquet")]
    assert {(r["id"], r["reason"], r["duplicate_of"]) for r in rejected} == {
        ("a2", "exact_duplicate", "a1"),
        ("a4", "exact_duplicate", "a1"),
    }
    # rejected rows keep every input column plus the reason and the survivor
    assert pq.read_schema(tmp_path / "rejected" / "part-00001.parquet").names[-2:] == [
        "reason",
        "duplicate_of",
    ]


def test_survivor_does_not_depend_on_shard_or_file_order(tmp_path):
    params = ExactDedupParams(partitions=2, paragraphs=True)
    a = _run(tmp_path / "a", params)
    b = _run(tmp_path / "b", params, hash_order=[2, 0, 1], file_order="reversed")
    assert _sha(a) == _sha(b)
    sel_a = _sha(sorted((tmp_path / "a" / "selection").glob("*.parquet")))
    sel_b = _sha(sorted((tmp_path / "b" / "selection").glob("*.parquet")))
    assert sel_a == sel_b


def test_rerun_gives_identical_bytes(tmp_path):
    params = ExactDedupParams(paragraphs=True)
    first = _run(tmp_path / "1", params)
    second = _run(tmp_path / "2", params)
    assert _sha(first) == _sha(second)
    assert _sha(sorted((tmp_path / "1" / "rejected").glob("*"))) == _sha(
        sorted((tmp_path / "2" / "rejected").glob("*"))
    )


def test_paragraph_mode_cuts_repeated_boilerplate_and_records_it(tmp_path):
    footer = "Subscribe to our newsletter for more stories like this one."
    parts = [
        [("p1", f"First story about harbours.\n{footer}"), ("p2", f"Second story about ferries.\n{footer}")],
        [("p3", f"{footer}\nThird story about lighthouses."), ("p4", footer.upper())],
    ]
    ins = _write_parts(tmp_path, parts)
    outs = [str(tmp_path / f"o{i}.parquet") for i in range(2)]
    rej = [str(tmp_path / f"r{i}.parquet") for i in range(2)]
    spans = [str(tmp_path / f"s{i}.parquet") for i in range(2)]
    results = exact_dedup_local(
        ins, outs, rej, str(tmp_path / "work"), ExactDedupParams(paragraphs=True), spans
    )
    texts = {r["id"]: r["text"] for p in outs for r in iter_rows(Path(p))}
    assert texts == {
        "p1": f"First story about harbours.\n{footer}",
        "p2": "Second story about ferries.\n",
        "p3": "Third story about lighthouses.",
    }
    removed = [r for p in spans for r in iter_rows(Path(p))]
    assert [(r["id"], r["text"], r["duplicate_of"]) for r in removed] == [
        ("p2", footer, "p1"),
        ("p3", footer + "\n", "p1"),
    ]
    (gone,) = [r for p in rej for r in iter_rows(Path(p))]
    # p4 is only the footer: a document-level duplicate of nothing, emptied by the paragraph rule
    assert (gone["id"], gone["reason"], gone["duplicate_of"]) == ("p4", "exact_emptied", "p1")
    # what the flow records per shard: dataclasses.asdict → JSON
    json.dumps([dataclasses.asdict(r) for r in results])
    counts, stats = summarize_exact(results)
    assert counts["in"] == 4 and counts["out"] == 3
    assert counts["dropped_exact_emptied"] == 1
    assert counts["spans_removed_exact_duplicate_paragraph"] == 2
    assert stats["span_bytes_removed"]["exact_duplicate_paragraph"] == 2 * len(footer) + 1


def test_text_without_letters_is_compared_as_written(tmp_path):
    # emoji-only messages normalise to nothing; they must not all collapse into one "duplicate"
    parts = [[("x", "😂😂"), ("y", "👍"), ("z", "😂😂")]]
    outs = _run(tmp_path, ExactDedupParams(), parts=parts)
    assert _ids(outs) == ["x", "y"]


def test_empty_input_part(tmp_path):
    outs = _run(tmp_path, ExactDedupParams(), parts=[[], [("a", "text")]])
    assert _ids(outs) == ["a"]


def test_unreadable_part_fails_naming_the_file(tmp_path):
    bad = tmp_path / "part-00000.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(ShardInputError, match="part-00000.parquet: cannot read"):
        exact_hash_shard(str(bad), 0, str(tmp_path / "h"), ExactDedupParams())
    no_text = tmp_path / "part-00001.parquet"
    pq.write_table(pa.table({"id": ["a"]}), no_text)
    with pytest.raises(ShardInputError, match="part-00001.parquet: no column text"):
        exact_hash_shard(str(no_text), 1, str(tmp_path / "h"), ExactDedupParams())
