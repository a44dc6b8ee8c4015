"""The stage flows and the pipeline under one Prefect test harness: outputs, skipping, reruns, artifacts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from storage.dataset import list_datasets, read_manifest
from storage.parquet import iter_rows, parquet_files
from storage.runs import read_run_pointer

JSONL = [
    {"text": "A long enough first document about boats and harbours.", "url": "https://ex.org/1"},
    {"text": "   "},
    {"text": "Second document, all about bread and ovens and flour.", "url": "https://ex.org/2"},
]


def _config(tmp_path: Path, **clean) -> Path:
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    (inputs / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in JSONL))
    (inputs / "story.txt").write_text("Once upon a time.\n\nThe end of a short story here.\n")
    cfg = {
        "name": "t",
        "data_root": str(tmp_path / "data"),
        "ingest": {
            "inputs": [{"path": str(inputs / "docs.jsonl")}, {"path": str(inputs / "story.txt"), "kind": "text"}],
            "text_split": "paragraph",
        },
        "clean": {"min_chars": 20, **clean},
        # one-sentence documents fall below every web quality threshold (tests/flows/test_filters.py covers quality)
        "quality": {"enabled": False},
        # tiny corpus: sample all of it, a small vocabulary, a visible validation split
        "sample": {"min_bytes": 100_000},
        "tokenizer": {"vocab_size": 300, "min_frequency": 1},
        "encode": {"val_fraction": 0.3},
    }
    p = tmp_path / "t.yaml"
    p.write_text(json.dumps(cfg))
    return p


@pytest.fixture()
def pipeline(prefect_harness):
    from flows.pipeline import pipeline_flow

    return pipeline_flow


def test_pipeline_builds_every_stage_and_records_the_run(tmp_path, pipeline):
    cfg_path = _config(tmp_path)
    out = pipeline(config=str(cfg_path), stop_after="clean")
    assert set(out) == {"ingest", "clean"}
    ingest, clean = read_manifest(out["ingest"]), read_manifest(out["clean"])
    assert ingest.counts["out"] == 5 and ingest.counts["files_in"] == 2
    assert clean.counts == {**clean.counts, "in": 5, "out": 3, "dropped_empty_after_clean": 1, "dropped_too_short": 1}
    texts = sorted(r["text"] for r in iter_rows(parquet_files(out["clean"])))
    assert texts[0].startswith("A long enough first document")
    reasons = sorted(r["reason"] for r in iter_rows(parquet_files(out["clean"], "rejected")))
    assert reasons == ["empty_after_clean", "too_short"]
    assert clean.inputs[0].path == out["ingest"]
    assert {i.stage for i in ingest.inputs} == {"raw"}
    pointer = read_run_pointer(tmp_path / "data", "t")
    assert pointer["stages"]["clean"]["path"] == out["clean"] and pointer["stages"]["clean"]["rows"] == 3


def test_second_run_is_skipped_and_a_changed_param_recomputes_only_downstream(tmp_path, pipeline):
    cfg_path = _config(tmp_path)
    first = pipeline(config=str(cfg_path), stop_after="clean")
    stamp = {s: (Path(p) / "manifest.json").stat().st_mtime_ns for s, p in first.items()}
    again = pipeline(config=str(cfg_path), stop_after="clean")
    assert again == first
    assert {s: (Path(p) / "manifest.json").stat().st_mtime_ns for s, p in again.items()} == stamp
    changed = _config(tmp_path, min_chars=1)
    third = pipeline(config=str(changed), stop_after="clean")
    assert third["ingest"] == first["ingest"]
    assert (Path(third["ingest"]) / "manifest.json").stat().st_mtime_ns == stamp["ingest"]
    assert third["clean"] != first["clean"]
    assert read_manifest(third["clean"]).counts["out"] == 4
    assert len(list_datasets(tmp_path / "data")) == 3  # the old clean output stays until gc


def test_only_a_stage_reads_its_planned_input_and_errors_clearly_when_missing(tmp_path, pipeline):
    from flows.plans import MissingInputError

    cfg_path = _config(tmp_path)
    with pytest.raises(MissingInputError, match="'clean' reads the output of 'ingest', which does not exist yet"):
        pipeline(config=str(cfg_path), only=["clean"])
    first = pipeline(config=str(cfg_path), stop_after="ingest")
    assert set(first) == {"ingest"}
    second = pipeline(config=str(cfg_path), only=["clean"])
    assert set(second) == {"clean"}
    assert read_manifest(second["clean"]).inputs[0].path == first["ingest"]


def test_force_recomputes_into_the_same_place(tmp_path, pipeline):
    cfg_path = _config(tmp_path)
    first = pipeline(config=str(cfg_path), stop_after="clean")
    before = read_manifest(first["clean"]).finished_at, (Path(first["clean"]) / "manifest.json").stat().st_mtime_ns
    forced = pipeline(config=str(cfg_path), only=["clean"], force=True)
    assert forced["clean"] == first["clean"]
    assert (Path(forced["clean"]) / "manifest.json").stat().st_mtime_ns != before[1]
    for f in read_manifest(first["clean"]).files:
        assert (Path(first["clean"]) / f.name).exists()


def test_a_corrupt_input_file_fails_ingest_or_with_skip_is_reported_and_the_rest_processed(tmp_path, pipeline):
    from tasks.records import InputFileError

    cfg_path = _config(tmp_path)
    bad = tmp_path / "in" / "bad.txt"
    bad.write_bytes(b"valid start\n\xff\xfe broken bytes\n")
    cfg = json.loads(cfg_path.read_text())
    cfg["ingest"]["inputs"].append({"path": str(bad), "kind": "text"})
    cfg_path.write_text(json.dumps(cfg))
    with pytest.raises(InputFileError, match="bad.txt:2: not UTF-8"):
        pipeline(config=str(cfg_path), stop_after="ingest")
    assert list_datasets(tmp_path / "data") == []
    cfg["ingest"]["on_unreadable"] = "skip"
    cfg_path.write_text(json.dumps(cfg))
    out = pipeline(config=str(cfg_path), stop_after="ingest")
    m = read_manifest(out["ingest"])
    assert m.counts["files_unreadable"] == 1 and m.counts["out"] == 5
    assert "bad.txt:2: not UTF-8" in m.stats["unreadable_files"][str(bad)]


def test_stage_publishes_a_report_artifact_and_an_asset_event(tmp_path, pipeline):
    from prefect.client.orchestration import get_client

    out = pipeline(config=str(_config(tmp_path)), stop_after="clean")

    key = Path(out["clean"]).resolve().as_uri()

    async def fetch():
        async with get_client() as client:
            arts = await client.request(
                "POST", "/artifacts/filter",
                json={"artifacts": {"key": {"any_": ["clean-report"]}}, "limit": 50, "sort": "CREATED_DESC"},
            )
            for _ in range(40):  # events reach the server asynchronously
                events = (await client.request(
                    "POST", "/events/filter",
                    json={"filter": {"event": {"prefix": ["prefect.asset."]}, "resource": {"id": [key]}}, "limit": 50},
                )).json()
                if events.get("events"):
                    break
                await asyncio.sleep(0.5)
            return arts.json(), events

    arts, events = asyncio.run(fetch())
    mine = [a for a in arts if out["clean"] in (a.get("data") or "")]
    assert mine, "no clean-report artifact mentions the clean dataset"
    assert "dropped_too_short" in mine[0]["data"] and "## Inputs" in mine[0]["data"]
    assert "| dropped_too_short | 20.0% |" in mine[0]["data"]  # 1 of 5 rows, with its bar
    materialized = [e for e in events.get("events", []) if e["event"] == "prefect.asset.materialization.succeeded"
                    and e["resource"]["prefect.resource.id"] == key]
    assert materialized, "no asset materialization event for the clean dataset"
    related = {r["prefect.resource.id"] for r in materialized[0]["related"]}
    assert Path(out["ingest"]).resolve().as_uri() in related


def test_pipeline_publishes_the_data_funnel_as_table_and_chart(tmp_path, pipeline):
    from prefect.client.orchestration import get_client

    from flows.report import funnel

    out = pipeline(config=str(_config(tmp_path)), stop_after="langid")
    steps = funnel(tmp_path / "data", "t")
    assert [s.stage for s in steps] == ["ingest", "clean", "langid"]
    assert steps[0].docs_out == 5 and steps[1].docs_out == 3 == steps[1].docs_in - 2
    assert steps[1].removed == {"empty_after_clean": 1, "too_short": 1}
    png = tmp_path / "data" / "runs" / "t-funnel.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    async def fetch():
        async with get_client() as client:
            r = await client.request("POST", "/artifacts/filter",
                                     json={"artifacts": {"key": {"any_": ["pipeline-funnel"]}}, "limit": 20,
                                           "sort": "CREATED_DESC"})
            return r.json()

    arts = [a for a in asyncio.run(fetch()) if "'t'" in (a.get("data") or "")]
    assert arts, "no pipeline-funnel artifact for this run"
    data = arts[0]["data"]
    assert "| clean | 5 | 3 | 60% |" in data and "data:image/png;base64," in data
    assert out["langid"]
