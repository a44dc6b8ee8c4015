"""Suffix-array dedup: repeated substrings of ≥ 100 bytes cut from all but their first occurrence, shorter
repeats left alone, UTF-8 kept valid, memory bounded by groups of shards and an up-front estimate."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tasks.dedup.suffix_array as suffix_array_module
from storage.parquet import iter_rows
from tasks.dedup.params import SuffixArrayDedupParams
from tasks.dedup.sidefiles import write_documents
from tasks.dedup.suffix_array import (
    adjacent_repeats,
    estimate_memory_bytes,
    find_repeats,
    plan_suffix_array_groups,
    suffix_array_dedup_group,
    summarize_suffix_array,
)

BOILERPLATE_150 = (
    "This website uses cookies to give you the best experience. By continuing to browse you agree to our "
    "cookie policy and the terms of use. Thank you all!"
)
REPEAT_90 = "Posted in Uncategorized by the editorial team of the harbour gazette, comments are closed."


def _unique(i: int, n: int = 60) -> str:
    """Text that shares no long substring with any other document (digits make every word distinct)."""
    rng = random.Random(i)
    return " ".join(f"{rng.choice('bcdfghjklmnp')}{i}x{j}{rng.randint(0, 9999)}" for j in range(n))


def _run(tmp: Path, parts_docs, params: SuffixArrayDedupParams, label: str = "run"):
    ins = [str(write_documents(tmp / "in" / f"part-{i:05d}.parquet", d)) for i, d in enumerate(parts_docs)]
    plan = plan_suffix_array_groups(ins, params)
    results = []
    base = tmp / label
    for group in plan.groups:
        results += suffix_array_dedup_group(
            [ins[i] for i in group],
            group,
            [str(base / "out" / f"part-{i:05d}.parquet") for i in group],
            [str(base / "rejected" / f"part-{i:05d}.parquet") for i in group],
            params,
            [str(base / "spans" / f"part-{i:05d}.parquet") for i in group],
        )
    return plan, results, base


def test_boilerplate_of_150_bytes_goes_a_90_byte_repeat_stays(tmp_path):
    assert len(BOILERPLATE_150.encode()) == 150 and len(REPEAT_90.encode()) == 90
    docs = [
        (f"d{i}", f"{_unique(i)}\n{BOILERPLATE_150}\n{_unique(100 + i)}\n{REPEAT_90}\n{_unique(200 + i)}")
        for i in range(5)
    ]
    plan, results, base = _run(tmp_path, [docs[:2], docs[2:]], SuffixArrayDedupParams())
    assert not plan.split
    kept = {r["id"]: r["text"] for p in sorted((base / "out").glob("*.parquet")) for r in iter_rows(p)}
    assert list(kept) == ["d0", "d1", "d2", "d3", "d4"]
    assert BOILERPLATE_150 in kept["d0"]
    for i in range(1, 5):
        assert BOILERPLATE_150 not in kept[f"d{i}"]
        # a repeat may reach a few bytes past the boilerplate where neighbours happen to agree, no further
        assert len(kept[f"d{i}"]) >= len(docs[i][1]) - 150 - 8
    assert all(REPEAT_90 in t for t in kept.values())
    spans = [r for p in sorted((base / "spans").glob("*.parquet")) for r in iter_rows(p)]
    assert [r["id"] for r in spans] == ["d1", "d2", "d3", "d4"]
    assert all(r["duplicate_of"] == "d0" and r["reason"] == "suffix_array_repeat" for r in spans)
    assert all(BOILERPLATE_150 in r["text"] for r in spans)
    json.dumps([dataclasses.asdict(r) for r in results] + [plan.stats()])
    counts, stats = summarize_suffix_array(results, plan)
    assert counts["in"] == counts["out"] == 5
    assert counts["spans_removed_suffix_array_repeat"] == 4
    assert 4 * 150 < stats["span_bytes_removed"]["suffix_array_repeat"] < 4 * 160
    assert stats["plan"]["groups"] == 1 and stats["suffix_array_mb_per_s"] > 0


def test_documents_left_too_short_are_dropped_with_the_survivor(tmp_path):
    long_text = _unique(1, n=40)
    docs = [("first", long_text), ("copy", long_text + " ok"), ("other", _unique(2))]
    _, results, base = _run(tmp_path, [docs], SuffixArrayDedupParams())
    kept = [r["id"] for r in iter_rows(base / "out" / "part-00000.parquet")]
    assert kept == ["first", "other"]
    (rej,) = list(iter_rows(base / "rejected" / "part-00000.parquet"))
    assert (rej["id"], rej["reason"], rej["duplicate_of"]) == ("copy", "suffix_array_too_short", "first")
    assert results[0].dropped == {"suffix_array_too_short": 1}


def test_cuts_never_split_a_utf8_character(tmp_path):
    # 0xA9 ends both "é" (C3 A9) and "©" (C2 A9): byte-wise the repeat starts inside a character
    shared = "©" + " ".join(f"ünïcödé{i} wörds ☃ repeated across documents" for i in range(4))
    docs = [("a", "café" + shared[1:] + _unique(1)), ("b", _unique(2) + " " + shared + " tail " + _unique(3))]
    _, _, base = _run(tmp_path, [docs], SuffixArrayDedupParams())
    kept = {r["id"]: r["text"] for r in iter_rows(base / "out" / "part-00000.parquet")}
    assert kept["a"].startswith("café")
    assert "repeated across documents" not in kept["b"]
    (span,) = list(iter_rows(base / "spans" / "part-00000.parquet"))
    original = docs[1][1]
    assert original[span["start"] : span["end"]] == span["text"]
    assert len(span["text"].encode()) == span["bytes"] >= 100


def test_groups_of_shards_bound_memory_and_say_so(tmp_path):
    docs = [(f"d{i}", f"{_unique(i)} {BOILERPLATE_150} {_unique(50 + i)}") for i in range(4)]
    sizes = sorted(len(t.encode()) for _, t in docs)
    params = SuffixArrayDedupParams(max_group_bytes=sizes[-1] + sizes[-2] + 2)
    assert params.max_group_bytes < 3 * sizes[0]
    plan, results, base = _run(tmp_path, [docs[:2], docs[2:3], docs[3:]], params)
    assert plan.groups == [[0], [1, 2]]
    assert "2 groups" in plan.message and "not removed" in plan.message
    _, stats = summarize_suffix_array(results, plan)
    assert stats["plan"]["cross_group_repeats_detected"] is False
    kept = {r["id"]: r["text"] for p in sorted((base / "out").glob("*.parquet")) for r in iter_rows(p)}
    # the first document of each group keeps the boilerplate: repeats across groups are not seen
    assert sorted(k for k, t in kept.items() if BOILERPLATE_150 in t) == ["d0", "d2"]


def test_refuses_when_the_estimate_exceeds_memory(tmp_path):
    text = _unique(0, n=12_000)
    part = write_documents(tmp_path / "big.parquet", [("big", text)])
    assert estimate_memory_bytes(len(text.encode()), 1) > 1 << 20
    with pytest.raises(MemoryError, match="max_group_bytes"):
        suffix_array_dedup_group(
            [str(part)],
            [0],
            [str(tmp_path / "o.parquet")],
            [str(tmp_path / "r.parquet")],
            SuffixArrayDedupParams(max_memory_bytes=1 << 20),
        )
    assert not (tmp_path / "o.parquet").exists()


def test_rerun_gives_identical_bytes(tmp_path):
    docs = [(f"d{i}", f"{_unique(i % 3)} {BOILERPLATE_150} {_unique(10 + i)}") for i in range(6)]
    _, _, a = _run(tmp_path, [docs[:3], docs[3:]], SuffixArrayDedupParams(), "a")
    _, _, b = _run(tmp_path, [docs[:3], docs[3:]], SuffixArrayDedupParams(), "b")
    for sub in ("out", "rejected", "spans"):
        for pa_, pb in zip(sorted((a / sub).glob("*")), sorted((b / sub).glob("*")), strict=True):
            assert hashlib.sha256(pa_.read_bytes()).digest() == hashlib.sha256(pb.read_bytes()).digest()


def _brute_force_removed(texts: list[bytes], k: int) -> list[set[int]]:
    """Byte offsets to remove: every k-byte window seen at an earlier offset of the concatenation."""
    seen: set[bytes] = set()
    removed: list[set[int]] = []
    for t in texts:
        cut: set[int] = set()
        for p in range(len(t) - k + 1):
            w = t[p : p + k]
            if w in seen:
                cut.update(range(p, p + k))
            seen.add(w)
        removed.append(cut)
    return removed


def _cut_offsets(texts: list[bytes], k: int) -> list[set[int]]:
    """The byte offsets `find_repeats` cuts from each document; each span's survivor comes no later than its
    document, and the document stays valid UTF-8 without the span."""
    got: list[set[int]] = [set() for _ in texts]
    for d, spans in find_repeats(texts, k).by_doc().items():
        for s, e, survivor in spans:
            got[d].update(range(s, e))
            assert survivor <= d
            (texts[d][:s] + texts[d][e:]).decode("utf-8")
    return got


@contextlib.contextmanager
def _without_compiled_helper():
    """`find_repeats` as on a machine where `make setup` did not build repeats.c: from pydivsufsort's LCP array."""
    suffix_array_module._repeats_library()
    saved = suffix_array_module._repeats_lib[0]
    suffix_array_module._repeats_lib[0] = None
    try:
        yield
    finally:
        suffix_array_module._repeats_lib[0] = saved


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="ab", min_size=0, max_size=60), min_size=1, max_size=6),
    st.integers(min_value=8, max_value=12),
)
def test_find_repeats_equals_brute_force(docs, k):
    texts = [d.encode() for d in docs]
    assert _cut_offsets(texts, k) == _brute_force_removed(texts, k)
    with _without_compiled_helper():
        assert _cut_offsets(texts, k) == _brute_force_removed(texts, k)


def test_make_setup_builds_the_compiled_helper():
    """The text-order pass (repeats.c) is what runs here, not the slower LCP-array fallback."""
    assert suffix_array_module._repeats_library() is not None, "run make setup (it builds .venv/lib/" \
        "libchatlike_repeats.so)"


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("k", [1, 7, 100, 300])
def test_the_compiled_helper_finds_the_pairs_the_lcp_array_finds(k, wide):
    """Over a text long enough to be cut into one range per thread (every range starts its comparisons afresh):
    boilerplate, near-copies, separators inside repeats, multi-byte characters, runs of one byte, 64-bit offsets."""
    rng = random.Random(k)
    pieces = [BOILERPLATE_150.encode(), REPEAT_90.encode(), "Grüße aus Köln, 日本語の文章です。".encode() * 3,
              b"z" * 400, b"ab" * 150]
    docs = []
    for i in range(1500):
        doc = bytearray(_unique(i, 12).encode())
        for _ in range(rng.randint(0, 3)):
            piece = rng.choice(pieces)
            doc[rng.randint(0, len(doc)):0] = piece[: rng.randint(1, len(piece))]
        docs.append(bytes(doc))
    data = np.frombuffer(bytearray(b"\xff".join(docs) + b"\xff"), dtype=np.uint8)
    import pydivsufsort

    sa = pydivsufsort.divsufsort(data)
    if wide:
        sa = sa.astype(np.int64)
    assert len(data) > 4 << 16  # several ranges on a machine with two cores or more
    fast = adjacent_repeats(data, sa, k)
    with _without_compiled_helper():
        slow = adjacent_repeats(data, sa, k)
    assert fast.any() and np.array_equal(fast, slow)


def _snapped(removed: set[int], text: bytes) -> set[int]:
    """The removed byte offsets as ranges, each moved inward off the middle of a UTF-8 character."""
    out: set[int] = set()
    for s in sorted(o for o in removed if o - 1 not in removed):
        e = s
        while e in removed:
            e += 1
        while s < e and text[s] & 0xC0 == 0x80:
            s += 1
        while e > s and e < len(text) and text[e] & 0xC0 == 0x80:
            e -= 1
        out.update(range(s, e))
    return out


@settings(max_examples=80, deadline=None)
@given(
    # é, © and ĩ end in the same byte, é and ê begin with the same: a repeat can begin or end inside a character
    st.lists(
        st.lists(st.sampled_from(["©aaaaaaaaa", "ĩaaaaaaaaa", "aaaaaaaaaé", "aaaaaaaaaê", "€", "😀b"]), max_size=5)
        .map("".join),
        min_size=1,
        max_size=6,
    ),
    st.integers(min_value=8, max_value=12),
)
def test_find_repeats_cuts_whole_characters_only(docs, k):
    """Multi-byte characters: every cut is the brute-force set of repeated windows, moved inward to character
    boundaries, so each document stays valid UTF-8 after the cut."""
    texts = [d.encode() for d in docs]
    expected = [_snapped(r, t) for r, t in zip(_brute_force_removed(texts, k), texts, strict=True)]
    assert _cut_offsets(texts, k) == expected


def test_empty_parts_and_short_documents(tmp_path):
    plan, results, base = _run(tmp_path, [[], [("a", "tiny"), ("b", "")], []], SuffixArrayDedupParams())
    assert [r["id"] for r in iter_rows(base / "out" / "part-00001.parquet")] == ["a", "b"]
    assert sum(r.docs_in for r in results) == 2 and plan.groups == [[0, 1, 2]]
