"""Bloom-filter dedup (BFF-style): the real false-positive rate, Dolma's expected duplicate paragraph spans,
near-duplicate documents dropped, state carried over between parts through filter files."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import random
from pathlib import Path

import pytest

from storage.parquet import iter_rows
from tasks.dedup.bloom import (
    BloomDeduper,
    bloom_dedup_parts,
    bloom_dedup_shard,
    estimate_keys,
    measure_false_positive_rate,
    summarize_bloom,
)
from tasks.dedup.params import BloomDedupParams
from tasks.dedup.sidefiles import write_documents
from tests.conftest import shared_file


def dolma_fixture() -> tuple[list[dict], list[list[tuple[int, int]]]]:
    docs_path = shared_file("text", "dolma_dedup_documents_000.json.gz")
    expected_path = shared_file("text", "dolma_expected_dedupe-paragraphs.json.gz")
    with gzip.open(docs_path, "rt", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    with gzip.open(expected_path, "rt", encoding="utf-8") as fh:
        expected = [json.loads(line) for line in fh]
    assert [d["id"] for d in docs] == [e["id"] for e in expected]
    spans = []
    for d, e in zip(docs, expected, strict=True):
        n = len(d["text"])
        # Dolma's spans are character offsets covering the paragraph and its newline; its last span may end one
        # past the text (the newline the last line does not have), so compare clipped to the text
        spans.append([(s, min(t, n)) for s, t, _ in e["attributes"]["bff_duplicate_paragraph_spans"]])
    return docs, spans


def test_false_positive_rate_is_the_configured_one():
    full = measure_false_positive_rate(capacity=20_000, error_rate=0.01, probes=20_000)
    print(f"\nBloom filter at capacity: measured false-positive rate {full.rate:.4f} (configured 0.01)")
    assert 0.006 <= full.rate <= 0.014
    half = measure_false_positive_rate(capacity=20_000, error_rate=0.01, probes=20_000, fill=0.5)
    assert half.rate < full.rate / 4  # far below the rate at capacity
    tight = measure_false_positive_rate(capacity=5_000, error_rate=0.001, probes=40_000)
    assert tight.rate <= 0.0025


def test_dolma_expected_duplicate_paragraph_spans():
    docs, expected = dolma_fixture()
    deduper = BloomDeduper(BloomDedupParams(unit="paragraph", capacity=10_000, error_rate=0.001))
    found = []
    for d in docs:
        check = deduper.check(d["id"], d["text"])
        found.append([(p.start, p.end) for p in check.paragraphs if p.fraction >= 1.0])
    assert found == expected
    assert sum(map(len, expected)) == 43  # the second advocatesaz.org page repeats the first one's navigation


def test_dolma_documents_listed_twice():
    """Dolma's fixture config lists the documents twice: the second time every paragraph has been seen, so the
    expected spans are those of the first pass, and the second copy of every document is a duplicate."""
    docs, expected = dolma_fixture()
    deduper = BloomDeduper(BloomDedupParams(unit="paragraph", capacity=10_000, error_rate=0.001))
    first = [deduper.check(d["id"], d["text"]) for d in docs]
    second = [deduper.check(d["id"], d["text"]) for d in docs]
    assert [[(p.start, p.end) for p in c.paragraphs if p.fraction >= 1.0] for c in first] == expected
    for d, c in zip(docs, second, strict=True):
        assert len(c.paragraphs) == sum(1 for line in d["text"].split("\n") if line.strip())
        assert all(p.fraction == 1.0 for p in c.paragraphs)
        assert c.duplicated_fraction == 1.0


def test_shard_on_dolma_fixture_cuts_spans_and_names_the_survivor(tmp_path):
    docs, expected = dolma_fixture()
    part = write_documents(tmp_path / "in.parquet", [(d["id"], d["text"]) for d in docs])
    params = BloomDedupParams(unit="paragraph", track_survivors=True)
    (result,) = bloom_dedup_parts(
        [str(part)],
        [str(tmp_path / "out.parquet")],
        [str(tmp_path / "rej.parquet")],
        params,
        [str(tmp_path / "s.parquet")],
    )
    spans = list(iter_rows(tmp_path / "s.parquet"))
    assert [(r["start"], r["end"]) for r in spans] == expected[1]
    assert {r["id"] for r in spans} == {docs[1]["id"]}
    assert {r["duplicate_of"] for r in spans} == {docs[0]["id"]}
    kept = {r["id"]: r["text"] for r in iter_rows(tmp_path / "out.parquet")}
    assert (
        len(kept) == 10
    )  # about half of the second page is navigation: below 0.8, so it is cut, not dropped
    assert "PPAA Home" not in kept[docs[1]["id"]] and "PPAA Home" in kept[docs[0]["id"]]
    json.dumps(dataclasses.asdict(result))
    counts, _ = summarize_bloom([result], params)
    assert counts["spans_removed_bloom_duplicate_paragraph"] == 43


def _article(rng: random.Random, vocab: list[str], paragraphs: int = 6, words: int = 40) -> str:
    return "\n".join(" ".join(rng.choice(vocab) for _ in range(words)) for _ in range(paragraphs))


def test_ngram_mode_drops_near_duplicates_and_cuts_copied_paragraphs(tmp_path):
    rng = random.Random(1)
    vocab = [f"word{i}" for i in range(2000)]
    original = _article(rng, vocab)
    paras = original.split("\n")
    near = "\n".join(paras[:5] + [paras[5].replace(paras[5].split()[3], "CHANGED", 1)])  # ~95 % seen
    quoting = _article(rng, vocab, paragraphs=5) + "\n" + paras[2]  # one copied paragraph in 6
    fresh = _article(rng, vocab)
    part = write_documents(
        tmp_path / "in.parquet", [("orig", original), ("near", near), ("quote", quoting), ("new", fresh)]
    )
    params = BloomDedupParams(capacity=100_000, track_survivors=True)
    (result,) = bloom_dedup_parts(
        [str(part)],
        [str(tmp_path / "o.parquet")],
        [str(tmp_path / "r.parquet")],
        params,
        [str(tmp_path / "s.parquet")],
    )
    kept = {r["id"]: r["text"] for r in iter_rows(tmp_path / "o.parquet")}
    assert set(kept) == {"orig", "quote", "new"}
    assert kept["quote"] == quoting[: -len(paras[2])]  # the copied paragraph is cut (its newline stays)
    (rej,) = list(iter_rows(tmp_path / "r.parquet"))
    assert (rej["id"], rej["reason"], rej["duplicate_of"]) == ("near", "bloom_duplicate", "orig")
    (span,) = list(iter_rows(tmp_path / "s.parquet"))
    assert (span["id"], span["text"], span["duplicate_of"]) == ("quote", paras[2], "orig")
    assert result.extra["checks"] > 0


def _chained_parts(tmp_path: Path) -> list[str]:
    rng = random.Random(2)
    vocab = [f"w{i}" for i in range(500)]
    base = [_article(rng, vocab, paragraphs=3, words=20) for _ in range(6)]
    parts_docs = [
        [("a", base[0]), ("b", base[1]), ("c", base[0])],
        [("d", base[1] + "\n" + base[2]), ("e", base[3])],
        [("f", base[3]), ("g", base[4] + "\n" + base[0])],
    ]
    return [str(write_documents(tmp_path / "in" / f"{i}.parquet", d)) for i, d in enumerate(parts_docs)]


def _run_chain(ins: list[str], folder: Path, params: BloomDedupParams) -> None:
    previous = None
    for i, part in enumerate(ins):
        state = str(folder / f"filter-{i}.bloom")
        bloom_dedup_shard(
            part,
            i,
            previous,
            state,
            str(folder / f"{i}.parquet"),
            str(folder / f"r{i}.parquet"),
            params,
            str(folder / f"s{i}.parquet"),
        )
        previous = state


def test_parts_chained_through_filter_files_equal_one_pass(tmp_path):
    ins = _chained_parts(tmp_path)
    params = BloomDedupParams(capacity=50_000)
    one = tmp_path / "one"
    bloom_dedup_parts(
        ins,
        [str(one / f"{i}.parquet") for i in range(3)],
        [str(one / f"r{i}.parquet") for i in range(3)],
        params,
        [str(one / f"s{i}.parquet") for i in range(3)],
    )
    _run_chain(ins, tmp_path / "chain", params)

    def sha(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    for name in [f"{k}{i}.parquet" for k in ("", "r", "s") for i in range(3)]:
        assert sha(one / name) == sha(tmp_path / "chain" / name), name
    kept = [r["id"] for i in range(3) for r in iter_rows(one / f"{i}.parquet")]
    assert kept == ["a", "b", "d", "e", "g"]
    # survivors are named across parts: c copies a (part 0), f copies e (part 1)
    rejected = {
        r["id"]: (r["reason"], r["duplicate_of"]) for i in range(3) for r in iter_rows(one / f"r{i}.parquet")
    }
    assert rejected == {"c": ("bloom_duplicate", "a"), "f": ("bloom_duplicate", "e")}
    cut = [(r["id"], r["duplicate_of"]) for i in range(3) for r in iter_rows(one / f"s{i}.parquet")]
    assert sorted(set(cut)) == [("d", "b"), ("g", "a")]
    with pytest.raises(ValueError, match="capacity"):
        bloom_dedup_shard(
            ins[1],
            1,
            str(tmp_path / "chain" / "filter-0.bloom"),
            None,
            str(tmp_path / "x.parquet"),
            str(tmp_path / "xr.parquet"),
            params.model_copy(update={"capacity": 123}),
        )


def test_survivors_need_the_earlier_parts_files_and_can_be_turned_off(tmp_path):
    ins = _chained_parts(tmp_path)
    params = BloomDedupParams(capacity=50_000)
    _run_chain(ins[:2], tmp_path / "chain", params)
    (tmp_path / "chain" / "filter-0.bloom.survivors.npz").unlink()
    with pytest.raises(
        ValueError, match=r"filter-0\.bloom\.survivors\.npz: survivors of an earlier Bloom part"
    ):
        bloom_dedup_shard(
            ins[2],
            2,
            str(tmp_path / "chain" / "filter-1.bloom"),
            None,
            str(tmp_path / "x.parquet"),
            str(tmp_path / "xr.parquet"),
            params,
        )
    # an empty part in the chain changes nothing
    with_empty = [ins[0], str(write_documents(tmp_path / "in" / "empty.parquet", [])), ins[1], ins[2]]
    _run_chain(with_empty, tmp_path / "gap", params)
    rows = [r for i in range(4) for r in iter_rows(tmp_path / "gap" / f"r{i}.parquet")]
    assert [(r["id"], r["duplicate_of"]) for r in rows] == [("c", "a"), ("f", "e")]
    off = params.model_copy(update={"track_survivors": False})
    _run_chain(ins, tmp_path / "off", off)
    assert not list((tmp_path / "off").glob("*.survivors.npz"))
    rows = [r for i in range(3) for r in iter_rows(tmp_path / "off" / f"r{i}.parquet")]
    assert [(r["id"], r["duplicate_of"]) for r in rows] == [("c", None), ("f", None)]


def test_survivor_index_spilled_into_sorted_runs_names_the_same_survivors(tmp_path, monkeypatch):
    """Keys move from a dict into sorted runs that merge as they grow; any spill size gives the same output."""
    import tasks.dedup.bloom as bloom_module

    docs, _ = dolma_fixture()
    corpus = [(d["id"], d["text"]) for d in docs] + [(d["id"] + "-copy", d["text"]) for d in docs]
    part = write_documents(tmp_path / "in.parquet", corpus)
    outputs = {}
    for spill in (1 << 20, 7):
        monkeypatch.setattr(bloom_module, "_FLUSH_KEYS", spill)
        folder = tmp_path / str(spill)
        bloom_dedup_parts(
            [str(part)],
            [str(folder / "o.parquet")],
            [str(folder / "r.parquet")],
            BloomDedupParams(capacity=100_000),
            [str(folder / "s.parquet")],
        )
        outputs[spill] = [list(iter_rows(folder / n)) for n in ("o.parquet", "r.parquet", "s.parquet")]
    assert outputs[7] == outputs[1 << 20]
    # the survivor is the document where most of the copy's text survives: its original, except for the
    # second advocatesaz.org page, whose navigation (most of its n-grams) survives in the first page only
    survivors = [d["id"] for d in docs]
    survivors[1] = docs[0]["id"]
    rejected = outputs[7][1]
    assert [(r["id"], r["reason"], r["duplicate_of"]) for r in rejected] == [
        (d["id"] + "-copy", "bloom_duplicate", s) for d, s in zip(docs, survivors, strict=True)
    ]


def test_full_filter_fails_with_an_actionable_message(tmp_path):
    rng = random.Random(3)
    part = write_documents(
        tmp_path / "in.parquet", [("a", _article(rng, [f"w{i}" for i in range(900)], 4, 60))]
    )
    with pytest.raises(ValueError, match="raise dedup bloom capacity or set scalable"):
        bloom_dedup_parts(
            [str(part)],
            [str(tmp_path / "o.parquet")],
            [str(tmp_path / "r.parquet")],
            BloomDedupParams(capacity=50),
        )
    # a scalable filter grows instead
    bloom_dedup_parts(
        [str(part)],
        [str(tmp_path / "o.parquet")],
        [str(tmp_path / "r.parquet")],
        BloomDedupParams(capacity=50, scalable=True),
    )
    assert [r["id"] for r in iter_rows(tmp_path / "o.parquet")] == ["a"]


def test_estimated_keys_bound_what_the_filter_receives(tmp_path):
    docs, _ = dolma_fixture()
    part = write_documents(tmp_path / "in.parquet", [(d["id"], d["text"]) for d in docs])
    for unit in ("ngram", "paragraph"):
        params = BloomDedupParams(unit=unit, capacity=100_000)
        (result,) = bloom_dedup_parts(
            [str(part)], [str(tmp_path / f"o-{unit}.parquet")], [str(tmp_path / f"r-{unit}.parquet")], params
        )
        estimate = estimate_keys([str(part)], params)
        assert result.extra["checks"] <= estimate <= 2 * result.extra["checks"]
