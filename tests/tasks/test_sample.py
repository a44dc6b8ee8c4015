"""The sample stage as plain functions: a hash sample of document ids that is deterministic, stays stable when the
corpus grows, and is held within byte bounds by moving one threshold."""

from __future__ import annotations

import json

import pytest

from storage.parquet import ParquetShardWriter, iter_rows, read_schema
from storage.schemas import DOCUMENT_SCHEMA
from tasks.sample import (
    BOUND_FILE,
    KEY_COLUMN,
    SampleParams,
    apply_byte_bound,
    document_key,
    nominal_threshold,
    sample_shard,
    summarize_sample,
)
from tests.conftest import shared_file


def doc(i: int, text: str | None = None) -> dict:
    return {
        "id": f"doc-{i:06d}",
        "text": text if text is not None else f"document {i} " + "x" * (i % 50),
        "source": "text",
        "url": None,
        "timestamp": None,
        "meta": None,
    }


def write_parts(folder, docs_per_part):
    paths = []
    for i, docs in enumerate(docs_per_part):
        path = folder / f"part-{i:05d}.parquet"
        with ParquetShardWriter(path, DOCUMENT_SCHEMA) as w:
            w.write_rows(docs)
        paths.append(str(path))
    return paths


def run_sample(in_parts, out_dir, params):
    results = [
        sample_shard(p, str(out_dir / f"part-{i:05d}.parquet"), params) for i, p in enumerate(in_parts)
    ]
    bound = apply_byte_bound(results, params)
    rows = [r for res in results for r in iter_rows(res.part)]
    return results, bound, rows


def ids_of(rows):
    return {r["id"] for r in rows}


def test_membership_is_decided_by_the_hash_of_the_id_alone(tmp_path):
    docs = [doc(i) for i in range(4_000)]
    parts = write_parts(tmp_path / "in", [docs[:1_500], docs[1_500:]])
    params = SampleParams(fraction=0.05)
    results, bound, rows = run_sample(parts, tmp_path / "out", params)
    threshold = nominal_threshold(0.05)
    expected = {d["id"] for d in docs if document_key("sample", d["id"]) < threshold}
    assert ids_of(rows) == expected
    assert 150 < len(expected) < 250  # ~5 % of 4,000
    assert bound.rule == "fraction"
    assert all(r[KEY_COLUMN] == document_key("sample", r["id"]) for r in rows)
    assert read_schema(results[0].part).names == [*DOCUMENT_SCHEMA.names, KEY_COLUMN]
    by_id = {d["id"]: d for d in docs}
    assert all(r["text"] == by_id[r["id"]]["text"] for r in rows)  # rows are copied whole
    counts, stats = summarize_sample(results, bound)
    assert counts["in"] == 4_000 and counts["out"] == len(expected)
    assert counts["bytes_out"] == sum(len(r["text"].encode()) for r in rows)


def test_same_input_gives_the_same_bytes_and_another_salt_another_sample(tmp_path):
    parts = write_parts(tmp_path / "in", [[doc(i) for i in range(2_000)]])
    run_sample(parts, tmp_path / "a", SampleParams(fraction=0.1))
    run_sample(parts, tmp_path / "b", SampleParams(fraction=0.1))
    assert (tmp_path / "a" / "part-00000.parquet").read_bytes() == (
        tmp_path / "b" / "part-00000.parquet"
    ).read_bytes()
    *_, salted = run_sample(parts, tmp_path / "c", SampleParams(fraction=0.1, salt="other"))
    *_, plain = run_sample(parts, tmp_path / "d", SampleParams(fraction=0.1))
    assert ids_of(salted) != ids_of(plain)


def test_yesterdays_sample_is_inside_todays_when_the_corpus_grows(tmp_path):
    old_docs = [doc(i) for i in range(3_000)]
    new_docs = old_docs + [doc(i) for i in range(3_000, 6_000)]
    # the grown corpus is also laid out differently over parts: membership must not care
    old_parts = write_parts(tmp_path / "old", [old_docs[:1_000], old_docs[1_000:]])
    new_parts = write_parts(tmp_path / "new", [new_docs[::3], new_docs[1::3], new_docs[2::3]])
    params = SampleParams(fraction=0.03)
    *_, old = run_sample(old_parts, tmp_path / "old-out", params)
    *_, new = run_sample(new_parts, tmp_path / "new-out", params)
    assert ids_of(old) < ids_of(new)
    assert ids_of(new) - ids_of(old) == {r["id"] for r in new if int(r["id"][4:]) >= 3_000}


def test_max_bytes_keeps_the_smallest_keys_and_samples_stay_nested(tmp_path):
    docs = [doc(i) for i in range(5_000)]
    parts = write_parts(tmp_path / "in", [docs[:2_500], docs[2_500:]])
    unbounded = SampleParams(fraction=0.2)
    results, bound, full = run_sample(parts, tmp_path / "full", unbounded)
    full_bytes = sum(len(r["text"].encode()) for r in full)
    params = SampleParams(fraction=0.2, max_bytes=full_bytes // 3)
    results, bound, kept = run_sample(parts, tmp_path / "bounded", params)
    kept_bytes = sum(len(r["text"].encode()) for r in kept)
    assert bound.rule == "max_bytes" and bound.effective_fraction < 0.2
    assert params.max_bytes - 100 < kept_bytes <= params.max_bytes  # full up to less than one document
    assert max(r[KEY_COLUMN] for r in kept) < min(r[KEY_COLUMN] for r in full if r["id"] not in ids_of(kept))
    assert ids_of(kept) < ids_of(full)
    counts, stats = summarize_sample(results, bound)
    assert counts["out"] == len(kept) and counts["bytes_out"] == kept_bytes
    assert stats["bound_rule"] == "max_bytes" and stats["nominal_docs"] == len(full)

    # the corpus grows under the same byte bound: the threshold moves down, so of the documents both corpora
    # hold, the new sample keeps a subset of the old one (samples stay nested, never reshuffled)
    grown = write_parts(tmp_path / "grown", [docs, [doc(i) for i in range(5_000, 10_000)]])
    _, grown_bound, grown_rows = run_sample(grown, tmp_path / "grown-out", params)
    assert grown_bound.threshold < bound.threshold
    assert ids_of(grown_rows) & {d["id"] for d in docs} <= ids_of(kept)


def test_min_bytes_raises_the_threshold_for_a_small_corpus(tmp_path):
    docs = [doc(i) for i in range(1_000)]
    parts = write_parts(tmp_path / "in", [docs[:400], docs[400:]])
    corpus_bytes = sum(len(d["text"].encode()) for d in docs)
    params = SampleParams(fraction=0.01, min_bytes=corpus_bytes // 4)
    results, bound, rows = run_sample(parts, tmp_path / "out", params)
    got = sum(len(r["text"].encode()) for r in rows)
    assert bound.rule == "min_bytes" and bound.effective_fraction > 0.01
    assert params.min_bytes <= got < params.min_bytes + 100
    keys = sorted(document_key("sample", d["id"]) for d in docs)
    assert sorted(r[KEY_COLUMN] for r in rows) == keys[: len(rows)]  # the smallest keys, in any part
    assert ids_of(rows) >= {
        d["id"] for d in docs if document_key("sample", d["id"]) < nominal_threshold(0.01)
    }

    # a min_bytes the whole corpus cannot reach takes the whole corpus
    params = SampleParams(fraction=0.01, min_bytes=10 * corpus_bytes, max_bytes=100 * corpus_bytes)
    *_, rows = run_sample(parts, tmp_path / "all", params)
    assert ids_of(rows) == {d["id"] for d in docs}


def test_a_killed_byte_bound_resumes_to_the_same_parts(tmp_path):
    docs = [doc(i) for i in range(3_000)]
    parts = write_parts(tmp_path / "in", [docs[:1_000], docs[1_000:2_000], docs[2_000:]])
    params = SampleParams(fraction=0.3, max_bytes=20_000)
    _, bound, rows = run_sample(parts, tmp_path / "clean-run", params)
    out = tmp_path / "killed"
    results = [sample_shard(p, str(out / f"part-{i:05d}.parquet"), params) for i, p in enumerate(parts)]
    # as if killed after the threshold was recorded and one part rewritten
    (out / BOUND_FILE).write_text(json.dumps(bound.__dict__))
    from tasks.sample import _filter_part

    _filter_part(results[0].part, results[0].part, params.salt, bound.threshold)
    resumed = apply_byte_bound(results, params)
    assert resumed == bound
    for i in range(3):
        name = f"part-{i:05d}.parquet"
        assert (out / name).read_bytes() == (tmp_path / "clean-run" / name).read_bytes()


def test_bad_params_and_bad_parts_are_explained(tmp_path):
    with pytest.raises(ValueError, match="min_bytes .* is above max_bytes"):
        SampleParams(min_bytes=10, max_bytes=5)
    with pytest.raises(ValueError, match="fraction"):
        SampleParams(fraction=0)
    bad = tmp_path / "part-00000.parquet"
    import pyarrow as pa

    with ParquetShardWriter(bad, pa.schema([("body", pa.string())])) as w:
        w.write_row({"body": "no id, no text"})
    with pytest.raises(ValueError, match="not a document part .*'id' or 'text'"):
        sample_shard(str(bad), str(tmp_path / "out.parquet"), SampleParams())
    with pytest.raises(ValueError, match="no parts"):
        apply_byte_bound([], SampleParams())


def test_real_text_sample_is_about_the_asked_fraction(tmp_path):
    text = shared_file("text", "char-rnn_tinyshakespeare_input.txt").read_text(encoding="utf-8")
    docs = [doc(i, t) for i, t in enumerate(text.split("\n\n"))]
    parts = write_parts(tmp_path / "in", [docs[: len(docs) // 2], docs[len(docs) // 2 :]])
    results, bound, rows = run_sample(parts, tmp_path / "out", SampleParams(fraction=0.05))
    assert abs(len(rows) / len(docs) - 0.05) < 0.01  # 7,222 speeches
    counts, _ = summarize_sample(results, bound)
    assert counts["bytes_in"] == len(text.encode()) - 2 * (len(docs) - 1)
