"""sample → tokenizer → encode in the pipeline: shards decode back to the corpus, manifests carry token counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from storage.dataset import read_manifest
from storage.parquet import iter_rows, parquet_files
from storage.tokens import TokenShards, iter_documents
from tasks.tokenizer import EOT, load_tokenizer, special_token_ids
from tests.conftest import ROOT


def _token_config(tmp_path: Path) -> Path:
    cfg = {
        "name": "tok", "data_root": str(tmp_path / "data"),
        "ingest": {"inputs": [{"path": str(ROOT / "examples" / "text" / "*.txt"), "kind": "text"},
                              {"path": str(ROOT / "examples" / "text" / "blog_posts.jsonl")}],
                   "text_split": "paragraph"},
        "quality": {"enabled": False},  # paragraphs of a few sentences: below the web quality thresholds
        "sample": {"fraction": 0.5, "min_bytes": 1000},
        "tokenizer": {"vocab_size": 300, "min_frequency": 1},
        "encode": {"val_fraction": 0.2},
    }
    p = tmp_path / "tok.yaml"
    p.write_text(json.dumps(cfg))
    return p


def test_encoded_shards_decode_to_the_corpus(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow

    out = pipeline_flow(config=str(_token_config(tmp_path)), stop_after="encode")
    enc = read_manifest(out["encode"])
    assert {i.stage for i in enc.inputs} == {"dedup-suffix-array", "tokenizer"}
    assert enc.counts["tokens_train"] > 0 and enc.counts["tokens_val"] > 0
    bins = [f for f in enc.files if f.name.endswith(".bin")]
    assert bins and all(f.tokens for f in bins)
    assert sum(f.tokens for f in bins) == enc.counts["tokens_train"] + enc.counts["tokens_val"]

    tok = load_tokenizer(Path(out["tokenizer"]) / "tokenizer.json")
    eot = special_token_ids(tok)[EOT]
    assert enc.stats["eot_id"] == eot
    corpus = sorted(r["text"] for r in iter_rows(parquet_files(out["dedup"])))
    decoded = []
    for split in ("train", "val"):
        for shard in TokenShards(Path(out["encode"]) / split).paths:
            raw = np.memmap(shard, dtype=np.uint16, mode="r")  # nanoGPT-style plain read
            assert raw.size > 0
            for doc in iter_documents(shard):
                assert int(doc[-1]) == eot
                decoded.append(tok.decode(list(map(int, doc[:-1]))))
    assert sorted(decoded) == corpus

    sample = read_manifest(out["sample"])
    assert 0 < sample.counts["out"] <= sample.counts["in"]
