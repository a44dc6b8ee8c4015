"""The `kenlm-train` and `perplexity` flows: per-language KenLM models, then tag every document with its
perplexity (a cached signal dataset) and filter by percentile buckets (a cheap, re-tunable step)."""

from __future__ import annotations

import shutil

from prefect import get_run_logger

from flows.config import PipelineConfig, load_config
from flows.flow_decorator import flow
from flows.plans import (
    Planner,
    StagePlan,
    flow_planner,
    kenlm_configured,
    perplexity_active,
    perplexity_tag_params,
)
from flows.stage_runner import parts_stage, publish, shard_task, up_to_date
from storage.runs import record_stage
from tasks import kenlm_train
from tasks.perplexity import stage as ppl

tag_task = shard_task(ppl.tag_perplexity_shard, "perplexity-tag-shard")
filter_task = shard_task(ppl.filter_perplexity_shard, "perplexity-filter-shard")


@flow(name="kenlm-train")
def kenlm_train_flow(config: PipelineConfig | str = "configs/demo.yaml", force: bool = False) -> str | None:
    """Train an order-N KenLM model per reference language (lmplz + build_binary); returns the models dataset."""
    cfg = load_config(config)
    plan = Planner(cfg).plan("kenlm-train")
    if plan is None:
        get_run_logger().info("kenlm-train: no reference corpus configured (kenlm_train.references); skipped")
        return None
    if done := up_to_date(cfg, plan, force):
        return done
    with plan.writer() as w:
        work = w.tmp / ".work"  # hidden: never part of the dataset
        work.mkdir(exist_ok=True)
        try:
            infos = kenlm_train.train_reference_models(cfg.kenlm_train, w.tmp, temp_dir=work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        counts, stats = kenlm_train.summarize(infos)
        return publish(cfg, plan, w, counts, stats, force)


@flow(name="perplexity")
def perplexity_flow(
    config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None, force: bool = False
) -> str:
    """Tag documents with KenLM perplexity, then keep the configured percentile buckets; returns the kept dataset."""
    cfg = load_config(config)
    planner = flow_planner(cfg, "perplexity", input_path)
    documents = planner.ref("quality").path
    if not perplexity_active(cfg):
        get_run_logger().info("perplexity: disabled or no KenLM model configured; documents pass through unchanged")
        record_stage(cfg.data_root, cfg.name, "perplexity", documents)
        return documents
    models_path = kenlm_train_flow(config=cfg) if kenlm_configured(cfg) else None
    if models_path is not None:
        planner = Planner(cfg, {"quality": documents, "kenlm-train": models_path})
    tag_params = perplexity_tag_params(cfg, models_path)
    tags = parts_stage(
        cfg,
        planner.plan("perplexity-tags"),
        task=tag_task,
        call_for=lambda i, part, w: {"in_part": str(part), "out_part": str(w.part_path(i)), "params": tag_params},
        summarize=ppl.TAG_SUMMARY,
        force=force,
    )
    flt = cfg.perplexity.filter

    def cutoffs(_plan: StagePlan) -> dict:
        found = ppl.compute_cutoffs(tags, flt.head_percentile, flt.tail_percentile, flt.default_lang)
        return {"cutoffs": {lang: list(v) for lang, v in found.items()}}

    return parts_stage(
        cfg,
        Planner(cfg, {"perplexity-tags": tags}).plan("perplexity"),
        task=filter_task,
        call_for=lambda i, part, w: {
            "in_part": str(part),
            "out_part": str(w.part_path(i)),
            "rejected_part": str(w.rejected_path(i)),
            "params": flt,
        },
        summarize=ppl.FILTER_SUMMARY,
        force=force,
        before=cutoffs,
    )
