"""storage/lineage.py's graph: from real datasets' manifests up to the raw files, a shared input once, raw files
grouped, the share kept, checkpoints, missing and moved inputs, and the text tree `chatlike lineage` prints."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storage.dataset import DatasetError, DatasetWriter, InputRef
from storage.fingerprint import hash_file
from storage.lineage import RAW, lineage_graph, lineage_lines
from storage.parquet import ParquetShardWriter
from storage.schemas import DOCUMENT_SCHEMA
from tests.storage.test_dataset import ROWS


def _dataset(root: Path, stage: str, fp_char: str, inputs: list[InputRef], rows: int | None = None,
             files: dict[str, bytes] | None = None) -> Path:
    with DatasetWriter(root, stage, "1", fp_char * 64, {}, inputs) as w:
        if rows is not None:
            with ParquetShardWriter(w.part_path(0), DOCUMENT_SCHEMA) as pw:
                pw.write_rows(ROWS[:rows])
        for name, data in (files or {}).items():
            (w.tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (w.tmp / name).write_bytes(data)
        return w.publish({"in": rows or 0, "out": rows or 0})


def _ref(path: Path, stage: str, fp_char: str) -> InputRef:
    return InputRef(stage, fp_char * 64, str(path))


def _raw(path: Path) -> InputRef:
    return InputRef(RAW, hash_file(path), str(path))


def build_chain(tmp_path: Path) -> dict[str, Path]:
    """ingest (2 raw files, 10 rows) → clean (8) → tags (8, also reads refs: 5 raw files) → join (reads clean and
    tags) and pretrain (a training run with a checkpoint, reads tags)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ["chat.txt", "notes.txt", *(f"ref{i}.txt" for i in range(5))]:
        (raw / name).write_text(f"some text of {name}\n")
    root = tmp_path / "data"
    out = {"ingest": _dataset(root, "ingest", "1", [_raw(raw / "chat.txt"), _raw(raw / "notes.txt")], rows=10)}
    out["clean"] = _dataset(root, "clean", "2", [_ref(out["ingest"], "ingest", "1")], rows=8)
    out["refs"] = _dataset(root, "kenlm-train", "3", [_raw(raw / f"ref{i}.txt") for i in range(5)],
                           files={"en/model.binary": b"\0" * 500})
    out["tags"] = _dataset(root, "quality-tags", "4",
                           [_ref(out["clean"], "clean", "2"), _ref(out["refs"], "kenlm-train", "3")], rows=8)
    out["join"] = _dataset(root, "persona-eval", "5",
                           [_ref(out["clean"], "clean", "2"), _ref(out["tags"], "quality-tags", "4")], rows=6)
    out["pretrain"] = _dataset(root, "pretrain", "6", [_ref(out["tags"], "quality-tags", "4")],
                               files={"run.json": b"{}", "step-000010/model.safetensors": b"\1" * 2000})
    return out


def _by_stage(graph) -> dict[str, object]:
    return {n.stage: n for n in graph.nodes.values() if not n.is_raw}


def test_the_graph_walks_up_to_the_raw_files_with_a_shared_input_once(tmp_path):
    d = build_chain(tmp_path)
    graph = lineage_graph(d["join"])
    stages = sorted(n.stage for n in graph.nodes.values() if not n.is_raw)
    assert stages == ["clean", "ingest", "kenlm-train", "persona-eval", "quality-tags"]  # clean read twice, once here
    name = {k: (n.stage if not n.is_raw else ",".join(Path(f).name for f in n.raw_files))
            for k, n in graph.nodes.items()}
    edges = sorted((name[a], name[b]) for a, b in graph.edges)
    assert edges == sorted([
        ("chat.txt", "ingest"), ("notes.txt", "ingest"),
        ("ingest", "clean"),
        (",".join(f"ref{i}.txt" for i in range(5)), "kenlm-train"),  # more than 3 raw files: one group node
        ("clean", "quality-tags"), ("kenlm-train", "quality-tags"),
        ("clean", "persona-eval"), ("quality-tags", "persona-eval"),
    ])
    node = _by_stage(graph)
    assert node["clean"].rows == 8 and node["clean"].kept == pytest.approx(0.8)
    assert node["quality-tags"].kept == 1.0  # kenlm-train has no rows: clean is its one input of rows
    assert node["persona-eval"].kept is None  # a join of two inputs of rows: no share is meaningful
    assert node["kenlm-train"].rows is None and node["kenlm-train"].bytes == 500
    assert node["ingest"].fingerprint == "1" * 64 and node["ingest"].bytes > 0
    assert graph.roots == [str(d["join"].resolve())]


def test_a_checkpoint_starts_at_its_training_run_and_several_roots_share_one_graph(tmp_path):
    d = build_chain(tmp_path)
    graph = lineage_graph(d["pretrain"] / "step-000010" / "model.safetensors")
    assert graph.nodes[graph.roots[0]].stage == "pretrain" and graph.nodes[graph.roots[0]].run
    assert graph.nodes[graph.roots[0]].bytes == 2002
    both = lineage_graph(d["join"], d["pretrain"], d["clean"])
    assert len(both.roots) == 3 and len(both.datasets) == 6
    assert len(both.edges) == len(set(both.edges))


def test_missing_and_moved_inputs(tmp_path):
    d = build_chain(tmp_path)
    moved = tmp_path / "data"
    # an input recorded under a path that is gone, its dataset still under the same data root: found there
    late = _dataset(moved, "langid", "7", [InputRef("clean", "2" * 64, "elsewhere/clean/" + d["clean"].name)], rows=8)
    assert _by_stage(lineage_graph(late))["clean"].exists
    shutil.rmtree(d["ingest"])
    node = _by_stage(lineage_graph(d["clean"]))
    assert not node["ingest"].exists and node["ingest"].stage == "ingest"
    with pytest.raises(DatasetError, match="not a dataset"):
        lineage_graph(tmp_path / "nowhere")
    with pytest.raises(DatasetError, match="nor inside one"):
        lineage_graph(tmp_path / "raw" / "chat.txt")


def test_text_tree(tmp_path):
    d = build_chain(tmp_path)
    lines = lineage_lines(lineage_graph(d["join"]))
    assert lines[0].startswith("persona-eval 55555555 · 6 rows · ")
    assert lines[1].startswith("├─ clean 22222222 · 8 rows · ") and "kept 80%" in lines[1]
    assert lines[2].startswith("│  └─ ingest 11111111 · 10 rows")
    assert lines[3].startswith("│     ├─ raw chat.txt · 22 B · ") and lines[3].endswith("chat.txt")
    assert lines[4].startswith("│     └─ raw notes.txt")
    assert lines[5].startswith("└─ quality-tags 44444444")
    assert lines[6] == "   ├─ clean 22222222 (above)"
    assert lines[7].startswith("   └─ kenlm-train 33333333 · 500 B")
    assert [line.split(" · ")[0] for line in lines[8:]] == [
        "      ├─ raw ref0.txt", "      ├─ raw ref1.txt", "      ├─ raw ref2.txt", "      ├─ raw ref3.txt",
        "      └─ raw ref4.txt"]
