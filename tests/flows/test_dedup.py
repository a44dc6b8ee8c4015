"""The dedup chain in the pipeline: each method its own dataset; duplicates removed with reason and survivor."""

from __future__ import annotations

import json
from pathlib import Path

from storage.dataset import read_manifest
from storage.parquet import iter_rows, parquet_files

BASE = (
    "The ferry leaves the harbour at seven every morning and the fishermen carry crates of ice to their boats "
    "while the baker opens the shutters of the shop on the corner of the square near the church. In the "
    "afternoon the wind changes, the water turns from green to grey and the small sailing boats come back one "
    "after another while children sit on the sea wall and count them, arguing about which one is the fastest"
)
BOILER = " Subscribe to our newsletter for weekly updates about the harbour, the ferry timetable and local events."


QUOTING = (
    "Letters to the editor this week were about the new timetable, the closed library, the price of parking near "
    "the station, the noise of the night buses and the long wait for a doctor, and one reader wrote a poem.\n"
    + BASE.split(". ")[0]
)


def _dedup_config(tmp_path: Path, methods: list[str], quoting: bool = False) -> Path:
    docs = [
        {"text": BASE + " number one."},
        {"text": BASE + " number one."},  # exact copy
        {"text": BASE.replace("seven", "eight") + " number one."},  # near copy
        {"text": "A completely different story about mountains, snow, skiing and warm soup in a small wooden hut." + BOILER},
        {"text": "Another unrelated text about gardening: tomatoes, basil, mint and a stubborn chilli plant on a balcony." + BOILER},
    ]
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    (inputs / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    files = [{"path": str(inputs / "docs.jsonl")}]
    if quoting:  # a second input file: its document's second paragraph is the first sentence of the first one
        (inputs / "more.jsonl").write_text(json.dumps({"text": QUOTING}) + "\n")
        files.append({"path": str(inputs / "more.jsonl")})
    cfg = {
        "name": "d", "data_root": str(tmp_path / "data"),
        "ingest": {"inputs": files},
        "quality": {"enabled": False},  # two-sentence documents: below the web quality thresholds
        "dedup": {"methods": methods, "suffix_array": {"min_bytes": 60}},
    }
    p = tmp_path / "d.yaml"
    p.write_text(json.dumps(cfg))
    return p


def test_dedup_chain_removes_exact_near_and_substring_duplicates(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow

    out = pipeline_flow(config=str(_dedup_config(tmp_path, ["exact", "minhash", "suffix_array"])), stop_after="dedup")
    final = read_manifest(out["dedup"])
    assert final.stage == "dedup-suffix-array"
    minhash_ds = read_manifest(final.inputs[0].path)
    exact_ds = read_manifest(minhash_ds.inputs[0].path)
    assert (minhash_ds.stage, exact_ds.stage) == ("dedup-minhash", "dedup-exact")
    assert exact_ds.counts["dropped_exact_duplicate"] == 1 and exact_ds.counts["out"] == 4
    assert minhash_ds.counts["dropped_minhash_duplicate"] == 1 and minhash_ds.counts["out"] == 3
    rejected = list(iter_rows(parquet_files(minhash_ds.path, "rejected")))
    kept_ids = {r["id"] for r in iter_rows(parquet_files(exact_ds.path))}
    assert rejected[0]["duplicate_of"] in kept_ids and "eight" in rejected[0]["text"]
    texts = [r["text"] for r in iter_rows(parquet_files(out["dedup"]))]
    assert sum("Subscribe to our newsletter" in t for t in texts) == 1  # boilerplate kept once
    assert final.counts.get("spans_removed_suffix_array_repeat", 0) >= 1
    # the group's suffix array (its own task) and the per-part cuts (tasks of their own) report together
    assert final.stats["windows"] >= 1 and final.stats["plan"]["groups"] == 1
    assert final.stats["peak_memory_estimate"] > 0 and final.stats["suffix_array_mb_per_s"] > 0
    assert not any(p.name == ".work" for p in Path(out["dedup"]).iterdir())
    assert read_manifest(out["dedup"]).files and all(not f.name.startswith(".") for f in final.files)


def test_changing_one_method_keeps_the_earlier_ones(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow

    first = pipeline_flow(config=str(_dedup_config(tmp_path, ["exact", "minhash"])), stop_after="dedup")
    exact_path = read_manifest(first["dedup"]).inputs[0].path
    mtime = (Path(exact_path) / "manifest.json").stat().st_mtime_ns
    p = _dedup_config(tmp_path, ["exact", "minhash"])
    cfg = json.loads(p.read_text())
    cfg["dedup"]["minhash"] = {"bands": 20, "rows": 5}
    p.write_text(json.dumps(cfg))
    second = pipeline_flow(config=str(p), stop_after="dedup")
    assert second["dedup"] != first["dedup"]
    assert read_manifest(second["dedup"]).inputs[0].path == exact_path
    assert (Path(exact_path) / "manifest.json").stat().st_mtime_ns == mtime


def test_all_four_methods_in_the_pipeline_name_their_survivors(tmp_path, prefect_harness):
    """exact → MinHash → Bloom → suffix array: four datasets chained by lineage; Bloom cuts the quoted
    paragraph and names the document it came from, across the per-part calls of its flow."""
    from flows.pipeline import pipeline_flow

    methods = ["exact", "minhash", "bloom", "suffix_array"]
    out = pipeline_flow(config=str(_dedup_config(tmp_path, methods, quoting=True)), stop_after="dedup")
    chain = [read_manifest(out["dedup"])]
    while chain[-1].stage != "dedup-exact":
        chain.append(read_manifest(chain[-1].inputs[0].path))
    assert [m.stage for m in reversed(chain)] == [f"dedup-{m.replace('_', '-')}" for m in methods]
    bloom_ds = next(m for m in chain if m.stage == "dedup-bloom")
    assert len(parquet_files(bloom_ds.path)) == 2  # one Bloom task per part, the filter carried over
    assert bloom_ds.counts["spans_removed_bloom_duplicate_paragraph"] == 1
    assert bloom_ds.stats["error_rate"] == 0.01 and bloom_ds.stats["checks"] > 0
    (span,) = list(iter_rows(parquet_files(bloom_ds.path, "spans")))
    first = next(r for r in iter_rows(parquet_files(bloom_ds.path)) if r["text"].startswith("The ferry"))
    assert span["reason"] == "bloom_duplicate_paragraph" and span["duplicate_of"] == first["id"]
    assert span["text"] == BASE.split(". ")[0]
    quoted = next(r for r in iter_rows(parquet_files(out["dedup"])) if r["text"].startswith("Letters"))
    assert "The ferry" not in quoted["text"]
    for m in chain:  # every removal has a reason and a survivor
        for r in iter_rows(parquet_files(m.path, "rejected")):
            assert r["reason"].startswith(m.stage.removeprefix("dedup-").replace("-", "_")) and r["duplicate_of"]
