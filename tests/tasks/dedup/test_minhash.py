"""MinHash LSH: signatures equal datasketch's, every labelled near-duplicate pair of the MinHash articles is
found (precision printed), clusters and survivors are deterministic across partitions and shard orders."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.parquet import iter_rows
from tasks.dedup.minhash import (
    band_keys,
    bucket_files,
    candidate_probability,
    connected_components,
    docs_files,
    minhash_bucket_partition,
    minhash_cluster,
    minhash_dedup_local,
    minhash_signature_shard,
    pairs_path,
    permutations,
    s_curve,
    shingle_hashes,
    signatures,
    similarity_at,
    summarize_minhash,
)
from tasks.dedup.params import MinhashDedupParams
from tasks.dedup.sidefiles import write_documents
from tasks.dedup.text import batch_ngram_hashes, batch_word_hashes, ngram_hashes, word_hashes, words
from tests.conftest import shared_file


def read_articles(name: str) -> list[tuple[str, str]]:
    """`tNNN text` per line → (id, text)."""
    out = []
    with open(shared_file("text", name), encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                doc_id, text = line.rstrip("\n").split(" ", 1)
                out.append((doc_id, text))
    return out


def read_truth(name: str) -> set[frozenset[str]]:
    with open(shared_file("text", name), encoding="utf-8") as fh:
        return {frozenset(line.split()) for line in fh if line.strip()}


def run_minhash(tmp: Path, docs: list[tuple[str, str]], params: MinhashDedupParams, n_parts: int = 1):
    ins = [
        str(write_documents(tmp / "in" / f"part-{i:05d}.parquet", docs[i::n_parts])) for i in range(n_parts)
    ]
    outs = [str(tmp / "out" / f"part-{i:05d}.parquet") for i in range(n_parts)]
    rej = [str(tmp / "rejected" / f"part-{i:05d}.parquet") for i in range(n_parts)]
    filtered, buckets, cluster = minhash_dedup_local(ins, outs, rej, str(tmp / "work"), params)
    return ins, outs, rej, filtered, buckets, cluster


def cluster_pairs(clusters_file: Path) -> set[frozenset[str]]:
    """Every pair of documents that ended up in the same cluster (survivor included)."""
    groups: dict[str, set[str]] = {}
    for r in iter_rows(clusters_file):
        groups.setdefault(r["duplicate_of"], {r["duplicate_of"]}).add(r["id"])
    return {frozenset(p) for g in groups.values() for p in itertools.combinations(sorted(g), 2)}


def test_signatures_equal_datasketch_with_the_same_shingle_hashes():
    from datasketch import MinHash

    a, b = permutations(112, 1)
    texts = [
        "the quick brown fox jumps over the lazy dog near the river bank today",
        "short text",
        "",
        "Ünïcödé wörds, punctuation! and 123 numbers 456 in a somewhat longer sentence here",
    ]
    shingles = [shingle_hashes(t, 5) for t in texts]
    sig = signatures(shingles, a, b)
    assert sig.shape == (4, 112) and sig.dtype == np.uint32
    for s, row in zip(shingles, sig, strict=True):
        ref = MinHash(num_perm=112, seed=1, hashfunc=int)
        ref.update_batch(s.tolist())
        assert np.array_equal(ref.hashvalues.astype(np.uint32), row)
    assert len(shingles[1]) == 1  # shorter than 5 words: one shingle of all its words
    assert (sig[2] == 2**32 - 1).all()  # no words: the empty signature


def test_signatures_estimate_jaccard():
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(5000)]
    base = [rng.choice(vocab) for _ in range(400)]
    near = list(base)
    for i in rng.sample(range(400), 20):
        near[i] = rng.choice(vocab)
    sh = [shingle_hashes(" ".join(base), 5), shingle_hashes(" ".join(near), 5)]
    a, b = permutations(112, 1)
    sig = signatures(sh, a, b)
    true_j = len(np.intersect1d(sh[0], sh[1])) / len(np.union1d(sh[0], sh[1]))
    est = float((sig[0] == sig[1]).mean())
    assert abs(est - true_j) < 0.15


def test_s_curve():
    p = MinhashDedupParams()
    assert p.num_perm == 112
    assert p.lsh_threshold == pytest.approx((1 / 14) ** (1 / 8))
    assert candidate_probability(0.0, 14, 8) == 0.0 and candidate_probability(1.0, 14, 8) == 1.0
    assert candidate_probability(p.lsh_threshold, 14, 8) == pytest.approx(1 - np.exp(-1), abs=0.02)
    half = similarity_at(0.5, 14, 8)
    assert candidate_probability(half, 14, 8) == pytest.approx(0.5)
    assert 0.68 < half < 0.69
    probs = [q for _, q in s_curve(14, 8)]
    assert probs == sorted(probs)
    assert candidate_probability(0.9, 14, 8) > 0.999 and candidate_probability(0.3, 14, 8) < 0.001


def test_band_keys_equal_exactly_when_band_rows_equal():
    sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [5, 2, 3, 4]], dtype=np.uint32)
    keys = band_keys(sig, bands=2, rows=2)
    assert keys[0, 0] == keys[1, 0] and keys[0, 1] != keys[1, 1]
    assert keys[0, 1] == keys[2, 1] and keys[0, 0] != keys[2, 0]
    # the same rows in a different band give a different key
    assert (
        band_keys(np.array([[7, 7, 7, 7]], dtype=np.uint32), 2, 2)[0, 0]
        != band_keys(np.array([[7, 7, 7, 7]], dtype=np.uint32), 2, 2)[0, 1]
    )


def test_connected_components_label_is_smallest_member():
    edges = np.array([[5, 6], [1, 2], [2, 3], [3, 4], [6, 7], [0, 0]])
    label, _ = connected_components(edges, 9)
    assert label.tolist() == [0, 1, 1, 1, 1, 5, 5, 5, 8]


@pytest.mark.parametrize("name", ["MinHash_articles_1000", "MinHash_articles_100"])
def test_finds_every_labelled_pair_with_default_bands(tmp_path, name):
    """14 bands × 8 rows (threshold ≈ 0.72) find every labelled pair: their word 5-gram Jaccard is ≈ 0.96,
    where the candidate probability is > 0.9999."""
    docs = read_articles(f"{name}.train")
    truth = read_truth(f"{name}.truth")
    params = MinhashDedupParams()
    _, outs, rej, filtered, buckets, cluster = run_minhash(tmp_path, docs, params, n_parts=3)
    found = cluster_pairs(tmp_path / "work" / "clusters.parquet")
    missed = truth - found
    assert not missed, f"missed labelled pairs: {sorted(map(sorted, missed))}"
    precision = len(found & truth) / len(found)
    print(f"\n{name}: {len(truth)} labelled pairs, {len(found)} found, recall 1.0, precision {precision:.3f}")
    assert precision >= 0.9
    # one document of each pair is dropped, the other kept: the one first in corpus order
    order = {doc_id: (i % 3, i // 3) for i, (doc_id, _) in enumerate(docs)}
    rejected = {r["id"]: r for p in rej for r in iter_rows(Path(p))}
    for pair in truth:
        first, second = sorted(pair, key=order.__getitem__)
        assert second in rejected and first not in rejected
        assert rejected[second]["reason"] == "minhash_duplicate"
        assert rejected[second]["duplicate_of"] == first
    json.dumps([dataclasses.asdict(r) for r in [*filtered, *buckets, cluster]])
    counts, stats = summarize_minhash(filtered, buckets, cluster, params)
    assert counts["in"] == len(docs) and counts["dropped_minhash_duplicate"] == len(found)
    assert counts["out"] == len(docs) - len(found)
    assert stats["s_curve"]["0.90"] > 0.999


def test_verification_rejects_low_jaccard_candidates(tmp_path):
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(3000)]
    base = [rng.choice(vocab) for _ in range(300)]
    half = base[:150] + [rng.choice(vocab) for _ in range(150)]  # Jaccard ≈ 0.33
    near = list(base)
    near[100] = "changed"  # Jaccard ≈ 0.97
    docs = [("base", " ".join(base)), ("half", " ".join(half)), ("near", " ".join(near))]
    # 112 bands of 1 row: nearly any overlap makes a candidate, so only verification separates them
    loose = MinhashDedupParams(bands=112, rows=1, partitions=2)
    _, outs, *_ = run_minhash(tmp_path / "loose", docs, loose)
    assert [r["id"] for r in iter_rows(Path(outs[0]))] == ["base"]
    strict = loose.model_copy(update={"verify": True, "jaccard_threshold": 0.8})
    _, outs, _, _, buckets, _ = run_minhash(tmp_path / "strict", docs, strict)
    assert [r["id"] for r in iter_rows(Path(outs[0]))] == ["base", "half"]
    assert sum(b.rejected_pairs for b in buckets) >= 1


def test_partitions_and_shard_order_do_not_change_the_result(tmp_path):
    docs = read_articles("MinHash_articles_100.train")
    a = run_minhash(tmp_path / "a", docs, MinhashDedupParams(partitions=1), n_parts=1)
    b = run_minhash(tmp_path / "b", docs, MinhashDedupParams(partitions=5), n_parts=1)
    assert pq.read_table(tmp_path / "a" / "work" / "clusters.parquet").equals(
        pq.read_table(tmp_path / "b" / "work" / "clusters.parquet")
    )
    assert Path(a[1][0]).read_bytes() == Path(b[1][0]).read_bytes()

    # signature shards finishing in another order, bucket files listed backwards: same bytes
    params = MinhashDedupParams(partitions=3)
    ins = [str(write_documents(tmp_path / "c" / f"in-{i}.parquet", docs[i::4])) for i in range(4)]
    results = {}
    for label, order in (("fwd", [0, 1, 2, 3]), ("rev", [3, 1, 0, 2])):
        work = tmp_path / label
        for i in order:
            minhash_signature_shard(ins[i], i, str(work), params)
        pairs = []
        for k in range(params.partitions):
            files = bucket_files(work, k)
            minhash_bucket_partition(
                files[::-1] if label == "rev" else files, str(pairs_path(work, k)), params
            )
            pairs.append(str(pairs_path(work, k)))
        minhash_cluster(
            pairs[::-1] if label == "rev" else pairs, docs_files(work), str(work / "clusters.parquet")
        )
        results[label] = hashlib.sha256((work / "clusters.parquet").read_bytes()).hexdigest()
    assert results["fwd"] == results["rev"]


def test_lsh_candidates_agree_with_datasketch_lsh(tmp_path):
    from datasketch import MinHash, MinHashLSH

    docs = read_articles("MinHash_articles_1000.train")
    params = MinhashDedupParams()
    run_minhash(tmp_path, docs, params)
    ours = cluster_pairs(tmp_path / "work" / "clusters.parquet")
    a, b = permutations(params.num_perm, params.seed)
    lsh = MinHashLSH(num_perm=params.num_perm, params=(params.bands, params.rows))
    theirs: set[frozenset[str]] = set()
    for doc_id, text in docs:
        m = MinHash(num_perm=params.num_perm, seed=params.seed, hashfunc=int)
        m.update_batch(shingle_hashes(text, params.ngram).tolist())
        theirs |= {frozenset((doc_id, other)) for other in lsh.query(m)}
        lsh.insert(doc_id, m)
    assert ours == theirs


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(alphabet="ab cé\n.", max_size=40), max_size=8), st.integers(min_value=1, max_value=6))
def test_batch_ngrams_equal_one_text_at_a_time(texts, n):
    """The vectorised batch path (whole batch at once) hashes exactly like one text at a time."""
    word_h, counts = batch_word_hashes(texts)
    grams, per_text = batch_ngram_hashes(word_h, counts, n)
    singles = [ngram_hashes(word_hashes(words(t)), n) for t in texts]
    assert per_text.tolist() == [len(s) for s in singles]
    assert grams.tolist() == [h for s in singles for h in s.tolist()]


def test_empty_and_wordless_parts(tmp_path):
    docs = [("a", "one two three four five six"), ("b", "!!! ???"), ("c", "one two three four five six")]
    params = MinhashDedupParams(partitions=2)
    ins = [
        str(write_documents(tmp_path / "in-0.parquet", [])),
        str(write_documents(tmp_path / "in-1.parquet", docs)),
    ]
    outs = [str(tmp_path / f"o{i}.parquet") for i in range(2)]
    rej = [str(tmp_path / f"r{i}.parquet") for i in range(2)]
    filtered, _, cluster = minhash_dedup_local(ins, outs, rej, str(tmp_path / "w"), params)
    assert [r["id"] for r in iter_rows(Path(outs[1]))] == ["a", "b"]
    assert filtered[0].docs_in == 0 and cluster.duplicates == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=80))
def test_connected_components_equal_union_find(edges):
    parent = list(range(41))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for u, v in edges:
        ru, rv = find(u), find(v)
        parent[max(ru, rv)] = min(ru, rv)
    label, _ = connected_components(np.array(edges, dtype=np.int64).reshape(-1, 2), 41)
    assert label.tolist() == [min(x for x in range(41) if find(x) == find(y)) for y in range(41)]
