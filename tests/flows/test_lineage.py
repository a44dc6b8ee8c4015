"""The lineage as a picture: the PNG of `chatlike lineage --png` (valid, sized, the same bytes twice, a demo-sized
graph wrapped onto bands), the text tree and errors of the command, and the `pipeline-lineage` artifact."""

from __future__ import annotations

import asyncio
from pathlib import Path

import matplotlib.image as mpimg
from typer.testing import CliRunner

from flows.cli import app
from flows.lineage_report import LAYERS_PER_BAND, layer_of, lineage_markdown, lineage_png
from storage.lineage import GraphNode, LineageGraph, lineage_graph
from tests.flows.test_pipeline import _config
from tests.storage.test_lineage import build_chain

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_png_of_a_small_chain_is_valid_sized_and_deterministic(tmp_path):
    d = build_chain(tmp_path)
    graph = lineage_graph(d["join"], d["pretrain"])
    assert layer_of(graph)[str(d["ingest"].resolve())] == 1 and layer_of(graph)[str(d["join"].resolve())] == 4
    first = lineage_png(graph, tmp_path / "a.png", title="small chain")
    second = lineage_png(lineage_graph(d["join"], d["pretrain"]), tmp_path / "b.png", title="small chain")
    assert first.read_bytes()[:8] == PNG_MAGIC and first.read_bytes() == second.read_bytes()
    height, width, _ = mpimg.imread(first).shape
    assert 600 < width < 1600 and 250 < height < 900  # 5 layers in one band, 3 rows at most
    assert not list(tmp_path.glob("*.partial*"))
    table = lineage_markdown(graph)
    assert "| clean | `2222222222222222` | 8 rows |" in table and "| 80% | ingest `11111111` |" in table


def test_a_demo_sized_graph_wraps_onto_bands():
    """20 datasets in a chain, a model trained beside, edges that skip layers: three bands of at most 8 layers."""
    nodes, edges = {}, []
    for i in range(20):
        nodes[f"d{i}"] = GraphNode(f"d{i}", f"stage-{i}", f"{i:02d}" * 32, f"data/stage-{i}/x", rows=100 - i,
                                   bytes=1000 * (100 - i), kept=(100 - i) / (101 - i) if i else None)
        if i:
            edges.append((f"d{i - 1}", f"d{i}"))
    nodes["raw"] = GraphNode("raw", "raw", "", "examples", bytes=9000, raw_files=[f"f{i}" for i in range(12)])
    edges += [("raw", "d0"), ("d1", "d15"), ("d3", "d19"), ("d2", "d12")]
    graph = LineageGraph(nodes, sorted(edges), ["d19"])
    assert max(layer_of(graph).values()) == 20
    png = lineage_png(graph, Path("/tmp") / f"lineage-test-{id(graph)}.png")
    try:
        height, width, _ = mpimg.imread(png).shape
        assert width < 100 * (2.2 * LAYERS_PER_BAND + 1)  # wrapped: no wider than one band
        assert height > 3 * 100 * 0.74  # three bands of boxes
    finally:
        png.unlink()


def test_cli_prints_the_tree_draws_the_png_and_names_a_bad_path(tmp_path):
    d = build_chain(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["lineage", str(d["pretrain"] / "step-000010")])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("pretrain 66666666 · 2.0 kB · ")
    assert lines[1].startswith("└─ quality-tags 44444444 · 8 rows")
    assert any("├─ raw chat.txt · 22 B" in line for line in lines)

    out = tmp_path / "pics" / "pretrain.png"
    r = runner.invoke(app, ["lineage", str(d["pretrain"]), "--png", str(out)])
    assert r.exit_code == 0, r.output
    assert f"{out}: 5 datasets, " in r.output
    assert out.read_bytes()[:8] == PNG_MAGIC and not list(out.parent.glob("*.partial*"))

    r = runner.invoke(app, ["lineage", str(tmp_path / "raw" / "chat.txt"), "--png", str(out)])
    assert r.exit_code == 2 and "chat.txt: not a dataset, nor inside one" in r.output
    assert "Traceback" not in r.output and len([x for x in r.output.splitlines() if x.strip()]) <= 2


def test_pipeline_publishes_the_lineage_artifact(tmp_path, prefect_harness):
    from prefect.client.orchestration import get_client

    from flows.pipeline import pipeline_flow

    out = pipeline_flow(config=str(_config(tmp_path)), stop_after="clean")
    png = tmp_path / "data" / "runs" / "t-lineage.png"
    assert png.read_bytes()[:8] == PNG_MAGIC

    async def fetch():
        async with get_client() as client:
            r = await client.request("POST", "/artifacts/filter",
                                     json={"artifacts": {"key": {"any_": ["pipeline-lineage"]}}, "limit": 20,
                                           "sort": "CREATED_DESC"})
            return r.json()

    arts = [a for a in asyncio.run(fetch()) if Path(out["clean"]).name in (a.get("data") or "")]
    assert arts, "no pipeline-lineage artifact for this run"
    data = arts[0]["data"]
    assert data.startswith("# Lineage of 't'") and "data:image/png;base64," in data
    assert f"| clean | `{Path(out['clean']).name}` | 3 rows |" in data
    assert f"ingest `{Path(out['ingest']).name[:8]}` |" in data
    assert "`docs.jsonl`, `story.txt`" in data  # ingest's two raw files, by name
