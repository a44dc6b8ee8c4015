"""kenlm-train → perplexity in the pipeline: models built once, tags cached, filter re-tunable cheaply."""

from __future__ import annotations

import json
from pathlib import Path

from storage.dataset import list_datasets, read_manifest
from storage.parquet import iter_rows, parquet_files
from tests.conftest import ROOT
from tests.flows.test_pipeline import _config


def _ppl_config(tmp_path: Path, **filter_params) -> Path:
    p = _config(tmp_path)
    cfg = json.loads(p.read_text())
    cfg["kenlm_train"] = {"references": {"en": [str(ROOT / "examples" / "reference" / "en.txt")]}}
    cfg["perplexity"] = {"tag": {"default_lang": "en"}, "filter": {"default_lang": "en", **filter_params}}
    p.write_text(json.dumps(cfg))
    return p


def test_perplexity_stage_tags_then_filters_and_retunes_without_rescoring(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow

    out = pipeline_flow(config=str(_ppl_config(tmp_path)), stop_after="perplexity")
    m = read_manifest(out["perplexity"])
    assert m.stage == "perplexity"
    (tags_ref,) = m.inputs
    assert tags_ref.stage == "perplexity-tags"
    tags = read_manifest(tags_ref.path)
    assert {i.stage for i in tags.inputs} == {"langid", "kenlm-train"}
    assert m.stats["cutoffs"]["en"][0] <= m.stats["cutoffs"]["en"][1]
    rows = list(iter_rows(parquet_files(out["perplexity"])))
    assert rows and all(r["ppl_bucket"] in ("head", "middle") and r["perplexity"] > 0 for r in rows)
    rejected = list(iter_rows(parquet_files(out["perplexity"], "rejected")))
    assert all(r["reason"] == "perplexity_tail" for r in rejected)
    assert m.counts["in"] == len(rows) + len(rejected) == read_manifest(out["langid"]).rows

    tags_mtime = (Path(tags_ref.path) / "manifest.json").stat().st_mtime_ns
    kenlm = [d for d in list_datasets(tmp_path / "data") if d.parent.name == "kenlm-train"]
    assert len(kenlm) == 1 and (kenlm[0] / "en" / "model.binary").exists()

    retuned = pipeline_flow(
        config=str(_ppl_config(tmp_path, keep_buckets=["head", "middle", "tail"])), stop_after="perplexity"
    )
    assert retuned["perplexity"] != out["perplexity"]
    assert read_manifest(retuned["perplexity"]).counts["out"] == m.counts["in"]
    assert (Path(tags_ref.path) / "manifest.json").stat().st_mtime_ns == tags_mtime  # signals not recomputed
    assert len([d for d in list_datasets(tmp_path / "data") if d.parent.name == "kenlm-train"]) == 1


def test_perplexity_without_models_passes_documents_through(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow

    out = pipeline_flow(config=str(_config(tmp_path)), stop_after="perplexity")
    assert out["perplexity"] == out["quality"] == out["langid"]  # quality is off in this config
