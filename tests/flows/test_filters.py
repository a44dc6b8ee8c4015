"""langid and quality in the pipeline: signals cached, thresholds re-tuned without recomputing them."""

from __future__ import annotations

import json
from pathlib import Path

from storage.dataset import read_manifest
from storage.parquet import iter_rows, parquet_files
from tests.conftest import ROOT


def _cfg(tmp_path: Path, quality_filter: dict | None = None, **langid_filter) -> Path:
    cfg = {
        "name": "f", "data_root": str(tmp_path / "data"),
        "ingest": {"inputs": [{"path": str(ROOT / "examples" / "whatsapp"), "kind": "whatsapp"},
                              {"path": str(ROOT / "examples" / "commoncrawl" / "*.wet.gz"), "kind": "wet"},
                              {"path": str(ROOT / "examples" / "text" / "*.txt"), "kind": "text"}]},
        "langid": {"filter": langid_filter},
        "quality": {"filter": quality_filter or {}},
    }
    p = tmp_path / "f.yaml"
    p.write_text(json.dumps(cfg))
    return p


def test_langid_and_quality_tag_then_filter(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow

    out = pipeline_flow(config=str(_cfg(tmp_path)), stop_after="quality")
    tags = read_manifest(read_manifest(out["langid"]).inputs[0].path)
    assert tags.stage == "langid-tags"
    rows = list(iter_rows(parquet_files(out["langid"])))
    langs = {r["lang"] for r in rows}
    assert {"en", "fr"} <= langs
    assert all(r["lang_score"] >= 0.65 for r in rows)
    q = read_manifest(out["quality"])
    assert read_manifest(q.inputs[0].path).stage == "quality-tags"
    kept = list(iter_rows(parquet_files(out["quality"])))
    assert any(r["source"] == "whatsapp" for r in kept), "chat conversations must survive the quality rules"
    rejected = list(iter_rows(parquet_files(out["quality"], "rejected")))
    assert rejected and all(r["reason"].startswith("quality_") for r in rejected)
    assert any(c.startswith("quality_") for c in q.counts) or any(k.startswith("dropped_") for k in q.counts)

    mtime = (Path(tags.path) / "manifest.json").stat().st_mtime_ns
    only_en = pipeline_flow(config=str(_cfg(tmp_path, keep_languages=["en"])), stop_after="langid")
    assert only_en["langid"] != out["langid"]
    assert {r["lang"] for r in iter_rows(parquet_files(only_en["langid"]))} == {"en"}
    dropped = {r["reason"] for r in iter_rows(parquet_files(only_en["langid"], "rejected"))}
    assert "lang_not_kept" in dropped
    assert (Path(tags.path) / "manifest.json").stat().st_mtime_ns == mtime  # fastText did not run again

    # re-tuning a quality threshold re-runs only the filter: the signals dataset is reused as it is
    quality_tags = read_manifest(q.inputs[0].path)
    q_mtime = (Path(quality_tags.path) / "manifest.json").stat().st_mtime_ns
    looser = pipeline_flow(
        config=str(_cfg(tmp_path, quality_filter={"web": {"min_words": 5, "min_c4_sentences": 1}})),
        stop_after="quality",
    )
    assert looser["quality"] != out["quality"]
    assert read_manifest(looser["quality"]).inputs[0].path == quality_tags.path
    assert (Path(quality_tags.path) / "manifest.json").stat().st_mtime_ns == q_mtime  # signals not recomputed
    assert read_manifest(looser["quality"]).counts["out"] >= q.counts["out"]


def test_langid_train_stage_feeds_the_combined_predictor(tmp_path, prefect_harness):
    import csv

    from flows.pipeline import pipeline_flow
    from tests.conftest import shared_file

    doda = shared_file("langid", "DODa_ongoing_02.csv")
    labelled = tmp_path / "labelled"
    labelled.mkdir()
    with open(doda, encoding="utf-8") as fh:
        darija = [row["darija"] for row in csv.DictReader(fh) if row.get("darija")]
    (labelled / "ary.txt").write_text("\n".join(darija[:3000]) + "\n")
    for lang in ("en", "fr"):
        src = shared_file("langid", f"lingua_sentences_{lang}.txt")
        (labelled / f"{lang}.txt").write_text(src.read_text(encoding="utf-8"))
    p = _cfg(tmp_path)
    cfg = json.loads(p.read_text())
    cfg["langid"]["train"] = {"data": [str(labelled)], "owned_labels": ["ary"], "epochs": 10, "calibration_folds": 0,
                              "min_score": 0.5}
    p.write_text(json.dumps(cfg))
    out = pipeline_flow(config=str(p), stop_after="langid")
    model = read_manifest(out["langid-train"])
    assert model.stats["owned_labels"] == ["ary"] and (Path(out["langid-train"]) / "model.bin").is_file()
    tags = read_manifest(read_manifest(out["langid"]).inputs[0].path)
    assert tags.params["own_model"] == model.fingerprint
    langs = {r["lang"] for r in iter_rows(parquet_files(tags.path))}
    assert "ary" in langs and "en" in langs  # the Darija chat is recognised, English still English

    # rerunning the stage retrains the same model, byte for byte, and so tags the same way
    first = (Path(out["langid-train"]) / "model.bin").read_bytes()
    again = pipeline_flow(config=str(p), only=["langid-train"], force=True)
    assert again["langid-train"] == out["langid-train"]
    assert (Path(again["langid-train"]) / "model.bin").read_bytes() == first
