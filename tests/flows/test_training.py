"""pretrain → sft-data → sft → lora in the pipeline on the example chats: runs published as datasets with
checkpoints, metrics and an evaluation table; a second run is up to date; the chat CLI answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from storage.dataset import read_manifest
from storage.lineage import raw_files
from tests.conftest import ROOT

TRAIN = {"max_steps": 6, "batch_size": 2, "eval_interval": 3, "eval_batches": 2, "checkpoint_interval": 3,
         "log_interval": 2, "sample_interval": 0, "warmup_steps": 1}


def _cfg(tmp_path: Path) -> Path:
    cfg = {
        "name": "train", "data_root": str(tmp_path / "data"),
        "ingest": {"inputs": [{"path": str(ROOT / "examples" / "whatsapp"), "kind": "whatsapp"},
                              {"path": str(ROOT / "examples" / "text" / "*.txt"), "kind": "text"}],
                   "text_split": "paragraph"},
        "sample": {"min_bytes": 1_000_000},
        "tokenizer": {"vocab_size": 400, "min_frequency": 1},
        "encode": {"val_fraction": 0.2},
        "pretrain": {**TRAIN, "block_size": 64, "model": {"d_model": 32, "n_layers": 1, "n_heads": 2}},
        "sft_data": {"target_author": "sam", "block_size": 64},
        "sft": TRAIN,
        "lora": {**TRAIN, "rank": 2},
    }
    p = tmp_path / "train.yaml"
    p.write_text(json.dumps(cfg))
    return p


def test_training_stages_publish_runs_and_evaluate(tmp_path, prefect_harness):
    from flows.cli import app
    from flows.pipeline import pipeline_flow

    cfg = _cfg(tmp_path)
    out = pipeline_flow(config=str(cfg))
    pre = read_manifest(out["pretrain"])
    assert pre.counts["steps"] == 6
    assert (Path(out["pretrain"]) / "latest").read_text().strip() == "step-000006"
    assert (Path(out["pretrain"]) / "step-000006" / "model.safetensors").is_file()
    assert (Path(out["pretrain"]) / "loss.png").is_file()
    assert not list(Path(out["pretrain"]).glob(".tmp*"))
    sft_data = read_manifest(out["sft-data"])
    assert sft_data.stats["target_author"] == "Sam" and sft_data.counts["out"] > 0
    lora = read_manifest(out["lora"])
    assert (Path(out["lora"]) / "step-000006" / "adapter_model.safetensors").is_file()
    assert set(lora.stats["assistant_perplexity"]) == {"base", "sft", "lora"}
    assert {i.stage for i in lora.inputs} == {"pretrain", "sft-data"}
    assert any(f.endswith(".txt") for f in raw_files(out["lora"]))  # lineage reaches the raw exports
    assert raw_files(Path(out["sft"]) / "step-000006") == raw_files(out["sft"])  # from a checkpoint too

    again = pipeline_flow(config=str(cfg), start_at="pretrain")
    assert again["lora"] == out["lora"] and (Path(out["lora"]) / "manifest.json").stat().st_mtime_ns == \
        (Path(out["lora"]) / "manifest.json").stat().st_mtime_ns

    r = CliRunner().invoke(app, ["chat", "--checkpoint", out["sft"], "--once", "Hi Sam!", "--max-new-tokens", "8"])
    assert r.exit_code == 0, r.output
    assert r.output.strip()


def test_chat_stages_are_skipped_until_a_target_author_is_named(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow
    from flows.plans import MissingInputError, planned_output, planned_ref
    from flows.training import chat_stages_active

    p = _cfg(tmp_path)
    cfg = json.loads(p.read_text())
    del cfg["sft_data"]["target_author"]
    p.write_text(json.dumps(cfg))
    out = pipeline_flow(config=str(p), only=["ingest", "sft-data", "sft", "lora"])
    assert out["sft-data"] is None and out["sft"] is None and out["lora"] is None
    assert sorted(d.name for d in (tmp_path / "data").iterdir()) == ["ingest", "runs"]

    from flows.config import load_config

    loaded = load_config(p)
    assert not chat_stages_active(loaded)
    assert planned_ref(loaded, "lora") is None and planned_ref(loaded, "pretrain") is not None
    with pytest.raises(MissingInputError, match="need sft_data.target_author"):
        planned_output(loaded, "sft")


def _base_checkpoint(root: Path) -> Path:
    """A random small Llama saved by transformers, imported as `chatlike model import` does."""
    from model.hf import import_hf
    from tests.support import save_hf_base

    (root / "hf").mkdir()
    save_hf_base(root / "hf", "LlamaForCausalLM", tie_word_embeddings=False)
    return import_hf(root / "hf", root / "imported-base")


def test_persona_from_an_imported_base_skips_pretrain_and_uses_the_base_tokenizer(tmp_path, prefect_harness):
    import yaml

    from flows.pipeline import pipeline_flow

    base = _base_checkpoint(tmp_path)
    cfg = yaml.safe_load((ROOT / "configs" / "persona-from-base.yaml").read_text(encoding="utf-8"))
    cfg["data_root"] = str(tmp_path / "data")
    cfg["ingest"]["inputs"] = [{"path": str(ROOT / "examples" / "whatsapp"), "kind": "whatsapp"}]
    cfg["sft_data"]["block_size"] = 64
    cfg["sft"] = {**TRAIN, "base": str(base)}
    cfg["lora"] = {**TRAIN, "rank": 2}
    path = tmp_path / "persona.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")

    out = pipeline_flow(config=str(path), only=["ingest", "pretrain", "sft-data", "sft", "lora"])
    assert out["pretrain"] is None  # asked for, but nothing reads it on this road
    assert sorted(d.name for d in (tmp_path / "data").iterdir()) == ["ingest", "lora", "runs", "sft", "sft-data"]
    sft_data = read_manifest(out["sft-data"])
    assert [i.path for i in sft_data.inputs if i.stage == "raw"] == [str((base / "tokenizer.json").resolve())]
    for stage in ("sft", "lora"):
        manifest = read_manifest(out[stage])
        assert {i.stage for i in manifest.inputs} == {"raw", "sft-data"}
        state = json.loads((Path(out[stage]) / "step-000006" / "state.json").read_text())
        assert state["init_from"] == str(base.resolve())
        assert state["tokenizer"]["path"] == str((base / "tokenizer.json").resolve())
    assert set(read_manifest(out["lora"]).stats["assistant_perplexity"]) == {"base", "sft", "lora"}
