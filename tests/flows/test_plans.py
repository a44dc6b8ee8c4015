"""Stage plans (flows.plans): versions come from the code they version, every file a stage reads is in its
fingerprint, and planning needs no Prefect."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flows import plans
from flows.config import load_config

ROOT = Path(__file__).resolve().parents[2]

# The datasets the demo config makes, in DAG order.
DEMO_DATASETS = ["ingest", "clean", "langid-tags", "langid", "quality-tags", "quality", "kenlm-train",
                 "perplexity-tags", "perplexity", "dedup-exact", "dedup-minhash", "dedup-suffix-array", "sample",
                 "tokenizer", "encode", "pretrain", "sft-data", "sft", "lora"]
CHAIN = DEMO_DATASETS[: DEMO_DATASETS.index("tokenizer") + 1]
AFTER_TOKENIZER = ["encode", "pretrain", "sft-data", "sft", "lora"]


def _fingerprints(cfg) -> dict[str, str]:
    planner = plans.Planner(cfg)
    return {name: planner.plan(name).fingerprint for name in DEMO_DATASETS}


def _downstream(start: str) -> set[str]:
    """What a change to `start` must invalidate in the demo DAG (written out, not derived from the plans)."""
    if start in CHAIN:
        if start == "kenlm-train":
            i = DEMO_DATASETS.index("perplexity-tags")
            return {"kenlm-train", *CHAIN[i:], *AFTER_TOKENIZER}
        i = CHAIN.index(start)
        return {*(s for s in CHAIN[i:] if s != "kenlm-train"), *AFTER_TOKENIZER}
    return {
        "encode": {"encode", "pretrain", "sft", "lora"},
        "pretrain": {"pretrain", "sft", "lora"},
        "sft-data": {"sft-data", "sft", "lora"},
        "sft": {"sft"},
        "lora": {"lora"},
    }[start]


VERSIONS = [  # (module, constant, the datasets whose own version it is)
    ("tasks.ingest", "STAGE_VERSION", ["ingest"]),
    ("tasks.clean", "STAGE_VERSION", ["clean"]),
    ("tasks.langid.stage", "STAGE_VERSION", ["langid-tags"]),
    ("tasks.langid.stage", "FILTER_STAGE_VERSION", ["langid"]),
    ("tasks.quality.stage", "STAGE_VERSION", ["quality-tags"]),
    ("tasks.quality.stage", "FILTER_STAGE_VERSION", ["quality"]),
    ("tasks.kenlm_train", "STAGE_VERSION", ["kenlm-train"]),
    ("tasks.perplexity.stage", "STAGE_VERSION", ["perplexity-tags", "perplexity"]),
    ("tasks.dedup.exact", "STAGE_VERSION", ["dedup-exact"]),
    ("tasks.dedup.minhash", "STAGE_VERSION", ["dedup-minhash"]),
    ("tasks.dedup.suffix_array", "STAGE_VERSION", ["dedup-suffix-array"]),
    ("tasks.sample", "STAGE_VERSION", ["sample"]),
    ("tasks.tokenizer", "STAGE_VERSION", ["tokenizer"]),
    ("tasks.encode", "STAGE_VERSION", ["encode"]),
    ("tasks.sft_data", "STAGE_VERSION", ["sft-data"]),
    ("tasks.training", "STAGE_VERSION", ["pretrain", "sft", "lora"]),
]


@pytest.fixture(scope="module")
def demo():
    return load_config(ROOT / "configs" / "demo.yaml").model_copy(update={"data_root": "unused-data-root"})


@pytest.mark.parametrize(("module", "constant", "owned"), VERSIONS, ids=[f"{m}.{c}" for m, c, _ in VERSIONS])
def test_bumping_a_stage_version_changes_its_fingerprint_and_its_descendants_only(demo, monkeypatch, module,
                                                                                   constant, owned):
    import importlib

    before = _fingerprints(demo)
    mod = importlib.import_module(module)
    monkeypatch.setattr(mod, constant, getattr(mod, constant) + "-bumped")
    after = _fingerprints(demo)
    changed = {name for name in DEMO_DATASETS if before[name] != after[name]}
    expected = set().union(*(_downstream(o) for o in owned))
    assert changed == expected


def test_versions_are_the_ones_stated_in_the_code(demo):
    from tasks import clean
    from tasks.langid import stage as langid

    planner = plans.Planner(demo)
    assert planner.plan("clean").stage_version == clean.STAGE_VERSION
    assert planner.plan("langid").stage_version == langid.FILTER_STAGE_VERSION


def test_training_runs_declare_every_dataset_they_read(demo):
    planner = plans.Planner(demo)
    tokenizer = planner.plan("tokenizer").ref
    assert planner.plan("pretrain").inputs == (planner.plan("encode").ref,)  # encoded with `tokenizer`
    for stage in ("sft", "lora"):
        assert planner.plan(stage).inputs == (planner.plan("pretrain").ref, planner.plan("sft-data").ref)
    assert planner.plan("sft-data").inputs == (planner.plan("ingest").ref, tokenizer)
    assert planner.plan("encode").inputs == (planner.plan("dedup-suffix-array").ref, tokenizer)


def _config(tmp_path: Path, **sections) -> Path:
    import yaml

    doc = tmp_path / "in.txt"
    if not doc.exists():
        doc.write_text("A small document about the harbour and its boats.\n", encoding="utf-8")
    cfg = {"name": "t", "data_root": str(tmp_path / "data"), "ingest": {"inputs": [{"path": str(doc), "kind": "text"}]},
           **sections}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _fp(path: Path, stage: str) -> str:
    return plans.Planner(load_config(path)).plan(stage).fingerprint


def test_raw_files_read_by_a_stage_are_in_its_fingerprint(tmp_path):
    ref = tmp_path / "ref-en.txt"
    ref.write_text("the boats are in the harbour\n", encoding="utf-8")
    cfg = _config(tmp_path, kenlm_train={"references": {"en": [str(ref)]}})
    ingest, kenlm = _fp(cfg, "ingest"), _fp(cfg, "kenlm-train")
    (tmp_path / "in.txt").write_text("Another text.\n", encoding="utf-8")
    assert _fp(cfg, "ingest") != ingest
    ref.write_text("the ships are in the port\n", encoding="utf-8")
    assert _fp(cfg, "kenlm-train") != kenlm


@pytest.mark.parametrize("with_references", [False, True])
def test_explicit_perplexity_models_are_in_the_fingerprint(tmp_path, with_references):
    model = tmp_path / "en.arpa"
    model.write_text("\\data\\\nngram 1=1\n\n\\1-grams:\n-1.0\t<unk>\n\n\\end\\\n", encoding="utf-8")
    sections = {"perplexity": {"tag": {"models": {"en": str(model)}}}}
    if with_references:  # kenlm-train is configured too: the explicit model still decides the scores
        ref = tmp_path / "ref-en.txt"
        ref.write_text("the boats are in the harbour\n", encoding="utf-8")
        sections["kenlm_train"] = {"references": {"en": [str(ref)]}}
    cfg = _config(tmp_path, **sections)
    before = _fp(cfg, "perplexity-tags")
    assert any(i.stage == "raw" and i.path == str(model.resolve())
               for i in plans.Planner(load_config(cfg)).plan("perplexity-tags").inputs)
    model.write_text(model.read_text(encoding="utf-8").replace("-1.0", "-2.0"), encoding="utf-8")
    assert _fp(cfg, "perplexity-tags") != before


def test_a_fine_tuning_dropout_changes_that_runs_fingerprint_only(demo):
    before = _fingerprints(demo)
    for stage in ("sft", "lora"):
        section = getattr(demo, stage).model_copy(update={"model_dropout": 0.1})
        changed = _fingerprints(demo.model_copy(update={stage: section}))
        assert {s for s in DEMO_DATASETS if changed[s] != before[s]} == {stage}


def test_a_stage_run_on_a_given_dataset_is_planned_from_it(demo, tmp_path):
    from storage.dataset import DatasetWriter

    with DatasetWriter(str(tmp_path), "ingest", "1", "f" * 64, {}, []) as w:
        (w.tmp / "x.json").write_text("{}")
        given = w.publish({}, {})
    planned = plans.Planner(demo).plan("clean")
    from_given = plans.plan_stage(demo, "clean", {"ingest": given})
    assert from_given.inputs[0].fingerprint == "f" * 64 and from_given.fingerprint != planned.fingerprint


def test_switched_off_stages_pass_their_input_through(tmp_path):
    cfg = load_config(_config(tmp_path, langid={"enabled": False}, quality={"enabled": False}))
    planner = plans.Planner(cfg)
    assert planner.plan("langid") is None and planner.plan("quality-tags") is None
    assert planner.ref("quality") == planner.ref("clean")
    assert planner.plan("perplexity-tags") is None  # no KenLM model configured
    assert planner.plan("dedup-exact").inputs[0] == planner.ref("clean")


def test_planning_needs_no_prefect():
    code = "import sys, flows.plans; assert 'prefect' not in sys.modules, 'flows.plans imported prefect'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def _imported_base(tmp_path: Path) -> Path:
    """A folder shaped like `chatlike model import`'s output (planning reads only its files' bytes)."""
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text('{"d_model": 32}', encoding="utf-8")
    (base / "model.safetensors").write_bytes(b"weights, version 1")
    (base / "tokenizer.json").write_text('{"model": "v1"}', encoding="utf-8")
    return base


def test_an_imported_base_replaces_tokenizer_encode_and_pretrain_for_the_chat_stages(tmp_path):
    base = _imported_base(tmp_path)
    path = _config(tmp_path, sft_data={"target_author": "Sam"}, sft={"base": str(base)})
    cfg = load_config(path)
    planner = plans.Planner(cfg)
    assert planner.plan("pretrain") is None  # nothing reads it
    assert planner.plan("tokenizer") is not None  # a data stage: still runs when asked
    assert planner.plan("sft-data").inputs == (planner.plan("ingest").ref, plans.raw_ref(base / "tokenizer.json"))
    for stage in ("sft", "lora"):  # lora.base follows sft.base
        plan = planner.plan(stage)
        assert [i.path for i in plan.inputs] == [str((base / "config.json").resolve()),
                                                 str((base / "model.safetensors").resolve()),
                                                 planner.plan("sft-data").path]
        assert plan.details["base"] == str(base)
    assert plans.upstream_of(cfg, "sft-data") == "ingest" and plans.upstream_of(cfg, "sft") == "sft-data"
    with pytest.raises(plans.MissingInputError, match="fine-tune the imported model"):
        plans.planned_output(cfg, "pretrain")

    # every file of the base is in the fingerprints of what reads it; the base's path is not
    stages = ("sft-data", "sft", "lora")
    before = {s: _fp(path, s) for s in stages}
    (base / "model.safetensors").write_bytes(b"weights, version 2")
    after_weights = {s: _fp(path, s) for s in stages}
    assert after_weights["sft-data"] == before["sft-data"]
    assert after_weights["sft"] != before["sft"] and after_weights["lora"] != before["lora"]
    (base / "config.json").write_text('{"d_model": 64}', encoding="utf-8")
    assert _fp(path, "sft") != after_weights["sft"]
    (base / "tokenizer.json").write_text('{"model": "v2"}', encoding="utf-8")
    assert all(_fp(path, s) != after_weights[s] for s in stages)
    fps = {s: _fp(path, s) for s in stages}
    moved = tmp_path / "moved-base"
    base.rename(moved)
    cfg_moved = _config(tmp_path, sft_data={"target_author": "Sam"}, sft={"base": str(moved)})
    assert {s: _fp(cfg_moved, s) for s in stages} == fps


@pytest.mark.parametrize(("sections", "message"), [
    ({"sft": {"base": "/no/such/model"}}, "sft.base: /no/such/model: no such checkpoint"),
    ({"sft": {"base": "BASE"}, "lora": {"base": "pretrain"}}, "sft.base .* and lora.base .* differ"),
])
def test_a_bad_base_is_a_clear_error(tmp_path, sections, message):
    base = _imported_base(tmp_path)
    sections = {k: {kk: str(base) if vv == "BASE" else vv for kk, vv in v.items()} for k, v in sections.items()}
    cfg = load_config(_config(tmp_path, sft_data={"target_author": "Sam"}, **sections))
    with pytest.raises(ValueError, match=message):
        plans.Planner(cfg).plan("sft")
