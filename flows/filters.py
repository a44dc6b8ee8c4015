"""The `langid` and `quality` flows, both "tag, then filter": the signals (fastText labels, quality_* columns)
are a cached dataset of their own, so re-tuning a threshold re-runs only the cheap filter step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import get_run_logger

from flows.config import PipelineConfig, load_config
from flows.flow_decorator import flow
from flows.plans import Planner, flow_planner, own_langid_model_trained
from flows.stage_runner import parts_stage, publish, shard_task, up_to_date
from storage.runs import record_stage
from tasks.langid import stage as langid
from tasks.langid.train import train_langid_model
from tasks.quality import stage as quality

langid_tag_task = shard_task(langid.tag_langid_shard, "langid-tag-shard")
langid_filter_task = shard_task(langid.filter_langid_shard, "langid-filter-shard")
quality_tag_task = shard_task(quality.tag_quality_shard, "quality-tag-shard")
quality_filter_task = shard_task(quality.filter_quality_shard, "quality-filter-shard")


def _tag_then_filter(
    cfg: PipelineConfig, planner: Planner, stage: str, force: bool, *,
    tag_params: Any, tag_task: Any, tag_summary: Callable,
    filter_params: Any, filter_task: Any, filter_summary: Callable,
) -> str:
    tags = parts_stage(
        cfg, planner.plan(f"{stage}-tags"), task=tag_task,
        call_for=lambda i, part, w: {"in_part": str(part), "out_part": str(w.part_path(i)), "params": tag_params},
        summarize=tag_summary, force=force,
    )
    return parts_stage(
        cfg, Planner(cfg, {f"{stage}-tags": tags}).plan(stage), task=filter_task,
        call_for=lambda i, part, w: {"in_part": str(part), "out_part": str(w.part_path(i)),
                                     "rejected_part": str(w.rejected_path(i)), "params": filter_params},
        summarize=filter_summary, force=force,
    )


# ------------------------------------------------------------------------------------------- langid-train


@flow(name="langid-train")
def langid_train_flow(config: PipelineConfig | str = "configs/demo.yaml", force: bool = False) -> str | None:
    """Train an own fastText language model from labelled text (e.g. Darija `ary` in both scripts); the
    `langid` stage then consults it for its labels and the default model for everything else."""
    cfg = load_config(config)
    plan = Planner(cfg).plan("langid-train")
    if plan is None:
        get_run_logger().info("langid-train: no labelled data configured (langid.train.data); skipped")
        return None
    if done := up_to_date(cfg, plan, force):
        return done
    t = cfg.langid.train
    with plan.writer() as w:
        metrics = train_langid_model(
            t.data, w.tmp / "model.bin", owned_labels=t.owned_labels, epochs=t.epochs, dim=t.dim,
            min_score=t.min_score, calibration_folds=t.calibration_folds, seed=t.seed, threads=t.threads,
        )
        counts = {"in": metrics.train_examples + metrics.valid_examples, "out": len(metrics.labels)}
        return publish(cfg, plan, w, counts, metrics.as_dict() | {"model_path": "model.bin"}, force)


# ------------------------------------------------------------------------------------------------ langid


@flow(name="langid")
def langid_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None,
                force: bool = False) -> str:
    """Tag every document's language with fastText (own model combined when configured), then keep the
    configured languages above the score threshold; returns the kept dataset."""
    cfg = load_config(config)
    planner = flow_planner(cfg, "langid", input_path)
    if not cfg.langid.enabled:
        get_run_logger().info("langid: disabled; documents pass through")
        return _pass_through(cfg, "langid", planner.ref("clean").path)
    tag_params = cfg.langid.tag
    if own_langid_model_trained(cfg):
        own = langid_train_flow(config=cfg)
        planner = Planner(cfg, {"clean": planner.ref("clean").path, "langid-train": own})
        tag_params = tag_params.model_copy(update={"own_model_path": str(Path(own) / "model.bin")})
    return _tag_then_filter(
        cfg, planner, "langid", force,
        tag_params=tag_params, tag_task=langid_tag_task, tag_summary=langid.TAG_SUMMARY,
        filter_params=cfg.langid.filter, filter_task=langid_filter_task, filter_summary=langid.FILTER_SUMMARY,
    )


def _pass_through(cfg: PipelineConfig, stage: str, input_path: str) -> str:
    record_stage(cfg.data_root, cfg.name, stage, input_path)
    return input_path


@flow(name="quality")
def quality_flow(config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None,
                 force: bool = False) -> str:
    """Compute C4 / Gopher quality and repetition signals per document (rule set per source), then filter
    with per-rule thresholds; returns the kept dataset."""
    cfg = load_config(config)
    planner = flow_planner(cfg, "quality", input_path)
    if not cfg.quality.enabled:
        get_run_logger().info("quality: disabled; documents pass through")
        return _pass_through(cfg, "quality", planner.ref("langid").path)
    return _tag_then_filter(
        cfg, planner, "quality", force,
        tag_params=cfg.quality.tag, tag_task=quality_tag_task, tag_summary=quality.TAG_SUMMARY,
        filter_params=cfg.quality.filter, filter_task=quality_filter_task, filter_summary=quality.FILTER_SUMMARY,
    )
