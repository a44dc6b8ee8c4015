"""The `langid` and `quality` flows, both "tag, then filter": the signals (fastText labels, quality_* columns)
are a cached dataset of their own, so re-tuning a threshold re-runs only the cheap filter step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect import flow, get_run_logger

from flows.common import StagePlan, make_plan, parts_stage, shard_task
from flows.config import PipelineConfig, load_config
from flows.resolve import ref_of, upstream_dataset
from storage.dataset import InputRef
from storage.runs import record_stage
from tasks.langid import stage as langid
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
    tag_params: Any, tag_task: Any, tag_result: type, tag_summary: Callable,
    filter_params: Any, filter_task: Any, filter_result: type, filter_summary: Callable,
) -> str:
    tags = parts_stage(
        cfg, stage=f"{stage}-tags", stage_version=STAGE_VERSION, params=tag_params.fingerprint_params(),
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


def plan_langid(cfg: PipelineConfig, src: InputRef | None) -> StagePlan | None:
    if not cfg.langid.enabled:
        return None
    return _plan_tag_filter(cfg, "langid", cfg.langid.tag, cfg.langid.filter, src)


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
    return _tag_then_filter(
        cfg, "langid", input_path, force,
        tag_params=cfg.langid.tag, tag_task=langid_tag_task, tag_result=langid.LangidShardResult,
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
