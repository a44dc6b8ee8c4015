"""MinHash on labelled near-duplicates made here (not the MinHash articles' own labels): copies of news articles
with typos, inserted and deleted words and sentences, reordered sentences and boilerplate. Recall at each
similarity follows the 14 × 8 S-curve, every close copy is found, nothing unrelated is joined, and a threshold
moves the curve where it says."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from storage.parquet import iter_rows
from tasks.dedup.evaluation import (
    NearDuplicateEditor,
    evaluate_pairs,
    make_labelled_corpus,
    pairs_from_duplicates,
)
from tasks.dedup.minhash import candidate_probability, jaccard, minhash_dedup_local, similarity_at
from tasks.dedup.params import MinhashDedupParams
from tasks.dedup.sidefiles import write_documents
from tests.conftest import shared_file


def article_texts() -> list[str]:
    """The MinHash news articles, without those labelled as near-duplicates of each other."""
    train = shared_file("text", "MinHash_articles_1000.train")
    labelled = set(shared_file("text", "MinHash_articles_1000.truth").read_text(encoding="utf-8").split())
    texts = []
    for line in train.read_text(encoding="utf-8").splitlines():
        doc_id, _, text = line.partition(" ")
        if text and doc_id not in labelled:
            texts.append(text)
    return texts


def run_minhash(tmp: Path, docs: list[tuple[str, str]], params: MinhashDedupParams, n_parts: int = 3):
    ins = [
        str(write_documents(tmp / "in" / f"part-{i:05d}.parquet", docs[i::n_parts])) for i in range(n_parts)
    ]
    outs = [str(tmp / "out" / f"part-{i:05d}.parquet") for i in range(n_parts)]
    rej = [str(tmp / "rejected" / f"part-{i:05d}.parquet") for i in range(n_parts)]
    minhash_dedup_local(ins, outs, rej, str(tmp / "work"), params)
    rows = [r for p in rej for r in iter_rows(Path(p))]
    return pairs_from_duplicates((r["id"], r["duplicate_of"]) for r in rows), rows


@pytest.fixture(scope="module")
def labelled():
    return make_labelled_corpus(article_texts(), seed=11, pairs=400, singles=150)


def test_the_edits_are_realistic_and_span_the_s_curve(labelled):
    kinds = {k for p in labelled.pairs for k in p.edits}
    assert kinds == {
        "typo",
        "insert_word",
        "delete_word",
        "insert_sentence",
        "delete_sentence",
        "swap_sentences",
        "boilerplate",
    }
    sims = sorted(p.jaccard for p in labelled.pairs)
    # pairs on both sides of the 14 × 8 midpoint (0.685) and inside the transition
    assert sum(s < 0.5 for s in sims) >= 50 and sum(s >= 0.9 for s in sims) >= 50
    assert sum(0.55 <= s < 0.85 for s in sims) >= 60
    editor = NearDuplicateEditor(random.Random(0))
    text = "One sentence here. Another one follows! And a third? Yes."
    assert editor.edit(text, 0) == (text, [])


def test_recall_follows_the_s_curve_and_precision_is_full(tmp_path, labelled):
    params = MinhashDedupParams()
    found, rows = run_minhash(tmp_path, labelled.docs, params)
    ev = evaluate_pairs(labelled.pairs, found, params.bands, params.rows)
    print("\n" + ev.table())
    # as many pairs found as the S-curve predicts at their own similarities (4 binomial standard deviations)
    assert abs(ev.found_labelled - ev.expected_found) <= 4 * ev.expected_sd + 1
    for band in ev.bands:
        if band.pairs >= 20:
            sd = (band.predicted * (1 - band.predicted) / band.pairs) ** 0.5
            assert abs(band.recall - band.predicted) <= 4 * sd + 0.05, band
    by_band = {(b.low, b.high): b for b in ev.bands}
    assert by_band[(0.9, 1.0)].recall == 1.0 and by_band[(0.8, 0.9)].recall >= 0.9
    assert by_band[(0.0, 0.3)].found == 0
    # nothing but labelled copies is put together; every removal names its own original
    assert ev.unlabelled_found == [] and ev.precision == 1.0
    for r in rows:
        assert r["reason"] == "minhash_duplicate"
        assert {r["id"][:4], r["duplicate_of"][:4]} == {"orig", "copy"}
        assert r["id"][5:] == r["duplicate_of"][5:]


def test_a_lower_threshold_finds_heavier_edits_and_verification_keeps_precision(tmp_path, labelled):
    loose = MinhashDedupParams(threshold=0.5)
    assert (loose.bands, loose.rows) == (22, 5) and similarity_at(0.5, 22, 5) == pytest.approx(0.5, abs=0.01)
    found_default, _ = run_minhash(tmp_path / "default", labelled.docs, MinhashDedupParams())
    found_loose, _ = run_minhash(tmp_path / "loose", labelled.docs, loose)
    default = evaluate_pairs(labelled.pairs, found_default, 14, 8)
    lower = evaluate_pairs(labelled.pairs, found_loose, loose.bands, loose.rows)
    print("\nthreshold 0.5 (22 × 5):\n" + lower.table())
    assert lower.found_labelled > default.found_labelled
    assert abs(lower.found_labelled - lower.expected_found) <= 4 * lower.expected_sd + 1
    # verification by true Jaccard drops candidates below its threshold, and only those
    checked = loose.model_copy(update={"verify": True, "jaccard_threshold": 0.6})
    found_checked, _ = run_minhash(tmp_path / "checked", labelled.docs, checked)
    verified = evaluate_pairs(labelled.pairs, found_checked, loose.bands, loose.rows)
    assert verified.unlabelled_found == []
    for p in labelled.pairs:
        pair = frozenset((p.original, p.copy))
        if pair in found_checked:
            assert p.jaccard >= 0.6
        elif pair in found_loose:
            assert p.jaccard < 0.6


def test_copies_differing_in_numbers_and_accents_are_found(tmp_path):
    base = (
        "Le café de la gare ouvre à 7 heures et ferme à 19 heures ; le menu du jour coûte 12 euros et "
        "comprend une entrée, un plat et un dessert préparés par la cheffe avec des produits du marché."
    )
    copy = base.replace("7", "8").replace("19", "20").replace("12", "14").replace("é", "e").replace("à", "a")
    assert jaccard(base, copy) == 1.0 and jaccard(base, copy, normalize=False) < 0.3
    docs = [("a", base), ("b", copy), ("c", "Une tout autre histoire, sans aucun rapport avec un café.")]
    found, rows = run_minhash(tmp_path / "n", docs, MinhashDedupParams(), n_parts=1)
    assert found == {frozenset(("a", "b"))} and rows[0]["duplicate_of"] == "a"
    found_raw, _ = run_minhash(tmp_path / "raw", docs, MinhashDedupParams(normalize=False), n_parts=1)
    assert found_raw == set()


def test_threshold_picks_bands_and_rows_for_the_midpoint():
    assert (MinhashDedupParams().bands, MinhashDedupParams().rows) == (14, 8)
    assert MinhashDedupParams().midpoint == pytest.approx(similarity_at(0.5, 14, 8))
    for t in (0.5, 0.6, 0.7, 0.8, 0.9):
        p = MinhashDedupParams(threshold=t)
        assert p.num_perm <= 112 and abs(p.midpoint - t) < 0.03
        assert candidate_probability(p.midpoint, p.bands, p.rows) == pytest.approx(0.5)
    assert MinhashDedupParams(threshold=0.7, bands=20, rows=10).num_perm <= 200
    with pytest.raises(ValueError, match="threshold"):
        MinhashDedupParams(threshold=1.5)
