"""The `langid` and `quality` flows, both "tag, then filter": the signals (fastText labels, quality_* columns)
are a cached dataset of their own, so re-tuning a threshold re-runs only the cheap filter step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from flows.common import StagePlan, make_plan, parts_stage, publish, shard_task, up_to_date
from flows.config import PipelineConfig, load_config
from flows.resolve import planned_ref, ref_of, upstream_dataset
from storage.dataset import InputRef
from storage.fingerprint import hash_file
from storage.runs import record_stage
from tasks.langid import stage as langid
from tasks.langid.train import TRAINING_RECIPE, train_langid_model
from tasks.quality import stage as quality

STAGE_VERSION = "1"
langid_tag_task = shard_task(langid.tag_langid_shard, "langid-tag-shard")
langid_filter_task = shard_task(langid.filter_langid_shard, "langid-filter-shard")
quality_tag_task = shard_task(quality.tag_quality_shard, "quality-tag-shard")
quality_filter_task = shard_task(quality.filter_quality_shard, "quality-filter-shard")


def _plan_tag_filter(cfg: PipelineConfig, stage: str, tag_params: Any, filter_params: Any, src: InputRef | None):
    if src is None:
        return None
    tags = make_plan(cfg, f"{stage}-tags", STAGE_VERSION, tag_params.fingerprint_params(), [src])
    return make_plan(cfg, stage, STAGE_VERSION, filter_params.fingerprint_params(),
                     [ref_of(cfg, f"{stage}-tags", tags.fingerprint)])


def _tag_then_filter(
    cfg: PipelineConfig, stage: str, input_path: str, force: bool, *,
    tag_params: Any, tag_task: Any, tag_result: type, tag_summary: Callable, tag_fingerprint: dict | None = None,
    filter_params: Any, filter_task: Any, filter_result: type, filter_summary: Callable,
) -> str:
    tags = parts_stage(
        cfg, stage=f"{stage}-tags", stage_version=STAGE_VERSION,
        params=tag_fingerprint if tag_fingerprint is not None else tag_params.fingerprint_params(),
        input_path=input_path, task=tag_task,
        call_for=lambda i, part, w: {"in_part": str(part), "out_part": str(w.part_path(i)), "params": tag_params},
        result_type=tag_result, summarize=tag_summary, force=force,
    )
    return parts_stage(
        cfg, stage=stage, stage_version=STAGE_VERSION, params=filter_params.fingerprint_params(),
        input_path=tags, task=filter_task,
        call_for=lambda i, part, w: {"in_part": str(part), "out_part": str(w.part_path(i)),
                                     "rejected_part": str(w.rejected_path(i)), "params": filter_params},
        result_type=filter_result, summarize=filter_summary, force=force,
    )


# ------------------------------------------------------------------------------------------- langid-train


def _training_files(cfg: PipelineConfig) -> list[Path]:
    files: list[Path] = []
    for entry in cfg.langid.train.data:
        path = Path(entry.split("=", 1)[1] if "=" in entry and not Path(entry).exists() else entry)
        if path.is_dir():
            files += sorted(f for f in path.rglob("*") if f.is_file() and not f.name.startswith("."))
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"langid.train.data: '{entry}' does not exist")
    return files


def plan_langid_train(cfg: PipelineConfig, _src: InputRef | None = None) -> StagePlan | None:
    if not cfg.langid.train.data:
        return None
    raw = [InputRef("raw", hash_file(f), str(f.resolve())) for f in _training_files(cfg)]
    params = {**cfg.langid.train.fingerprint_params(), "recipe": TRAINING_RECIPE}  # a new recipe retrains
    return make_plan(cfg, "langid-train", STAGE_VERSION, params, raw, [r.fingerprint for r in raw])


@flow(name="langid-train")
def langid_train_flow(config: PipelineConfig | str = "configs/demo.yaml", force: bool = False) -> str | None:
    """Train an own fastText language model from labelled text (e.g. Darija `ary` in both scripts); the
    `langid` stage then consults it for its labels and the default model for everything else."""
    cfg = load_config(config)
    plan = plan_langid_train(cfg)
    if plan is None:
        get_run_logger().info("langid-train: no labelled data configured (langid.train.data); skipped")
        return None
    if done := up_to_date(cfg, plan, force):
        return done
    t = cfg.langid.train
    with plan.writer() as w:
        metrics = train_langid_model(
            t.data, w.tmp / "model.bin", owned_labels=t.owned_labels, epochs=t.epochs, dim=t.dim,
            min_score=t.min_score, calibration_folds=t.calibration_folds, seed=t.seed,
        )
        counts = {"in": metrics.train_examples + metrics.valid_examples, "out": len(metrics.labels)}
        return publish(cfg, plan, w, counts, metrics.as_dict() | {"model_path": "model.bin"}, force)


# ------------------------------------------------------------------------------------------------ langid


def _own_model_ref(cfg: PipelineConfig) -> InputRef | None:
    return planned_ref(cfg, "langid-train") if cfg.langid.train.data and not cfg.langid.tag.own_model_path else None


def _langid_tag_fingerprint(cfg: PipelineConfig) -> dict:
    params = cfg.langid.tag.fingerprint_params()
    own = _own_model_ref(cfg)
    if own is not None:
        params["own_model"] = own.fingerprint  # the trained model, by the fingerprint of its dataset
    return params


def plan_langid(cfg: PipelineConfig, src: InputRef | None) -> StagePlan | None:
    if not cfg.langid.enabled or src is None:
        return None
    tags = make_plan(cfg, "langid-tags", STAGE_VERSION, _langid_tag_fingerprint(cfg), [src])
    return make_plan(cfg, "langid", STAGE_VERSION, cfg.langid.filter.fingerprint_params(),
                     [ref_of(cfg, "langid-tags", tags.fingerprint)])


def plan_quality(cfg: PipelineConfig, src: InputRef | None) -> StagePlan | None:
    if not cfg.quality.enabled:
        return None
    return _plan_tag_filter(cfg, "quality", cfg.quality.tag, cfg.quality.filter, src)


@flow(name="langid")
def langid_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None,
                force: bool = False) -> str:
    """Tag every document's language with fastText (own model combined when configured), then keep the
    configured languages above the score threshold; returns the kept dataset."""
    cfg = load_config(config)
    input_path = input_path or upstream_dataset(cfg, "langid")
    if not cfg.langid.enabled:
        get_run_logger().info("langid: disabled; documents pass through")
        record_stage(cfg.data_root, cfg.name, "langid", input_path)
        return input_path
    tag_params = cfg.langid.tag
    if _own_model_ref(cfg) is not None:
        own = langid_train_flow(config=cfg)
        tag_params = tag_params.model_copy(update={"own_model_path": str(Path(own) / "model.bin")})
    return _tag_then_filter(
        cfg, "langid", input_path, force,
        tag_params=tag_params, tag_fingerprint=_langid_tag_fingerprint(cfg), tag_task=langid_tag_task, tag_result=langid.LangidShardResult,
        tag_summary=langid.summarize_langid_tags,
        filter_params=cfg.langid.filter, filter_task=langid_filter_task, filter_result=langid.LangidFilterResult,
        filter_summary=langid.summarize_langid_filter,
    )


@flow(name="quality")
def quality_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None,
                 force: bool = False) -> str:
    """Compute C4 / Gopher quality and repetition signals per document (rule set per source), then filter
    with per-rule thresholds; returns the kept dataset."""
    cfg = load_config(config)
    input_path = input_path or upstream_dataset(cfg, "quality")
    if not cfg.quality.enabled:
        get_run_logger().info("quality: disabled; documents pass through")
        record_stage(cfg.data_root, cfg.name, "quality", input_path)
        return input_path
    return _tag_then_filter(
        cfg, "quality", input_path, force,
        tag_params=cfg.quality.tag, tag_task=quality_tag_task, tag_result=quality.QualityTagResult,
        tag_summary=quality.summarize_quality_tags,
        filter_params=cfg.quality.filter, filter_task=quality_filter_task,
        filter_result=quality.QualityFilterResult, filter_summary=quality.summarize_quality_filter,
    )
