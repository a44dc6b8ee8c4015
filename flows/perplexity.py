"""The `kenlm-train` and `perplexity` flows: per-language KenLM models, then tag every document with its
perplexity (a cached signal dataset) and filter by percentile buckets (a cheap, re-tunable step)."""

from __future__ import annotations

import shutil
from pathlib import Path

from prefect import flow, get_run_logger

from flows.common import StagePlan, input_ref, make_plan, parts_stage, publish, shard_task, up_to_date
from flows.config import PipelineConfig, load_config
from flows.resolve import planned_ref, ref_of, upstream_dataset
from storage.dataset import InputRef
from storage.fingerprint import hash_file
from storage.runs import record_stage
from tasks import kenlm_train
from tasks.perplexity import stage as ppl

STAGE_VERSION = "1"
tag_task = shard_task(ppl.tag_perplexity_shard, "perplexity-tag-shard")
filter_task = shard_task(ppl.filter_perplexity_shard, "perplexity-filter-shard")


def kenlm_configured(cfg: PipelineConfig) -> bool:
    return bool(cfg.kenlm_train.references or cfg.kenlm_train.reference_dataset)


def perplexity_active(cfg: PipelineConfig) -> bool:
    tag = cfg.perplexity.tag
    return cfg.perplexity.enabled and (kenlm_configured(cfg) or bool(tag.models) or bool(tag.models_dir))


def plan_kenlm_train(cfg: PipelineConfig, _src: InputRef | None = None) -> StagePlan | None:
    if not kenlm_configured(cfg):
        return None
    sources = kenlm_train.reference_sources(cfg.kenlm_train)
    raw = [InputRef("raw", hash_file(p), str(Path(p).resolve())) for lang in sorted(sources) for p in sources[lang]]
    params = cfg.kenlm_train.fingerprint_params()
    return make_plan(cfg, "kenlm-train", STAGE_VERSION, params, raw, [r.fingerprint for r in raw])


@flow(name="kenlm-train")
def kenlm_train_flow(config: PipelineConfig | str = "configs/demo.yaml", force: bool = False) -> str | None:
    """Train an order-N KenLM model per reference language (lmplz + build_binary); returns the models dataset."""
    cfg = load_config(config)
    plan = plan_kenlm_train(cfg)
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


def _tag_params(cfg: PipelineConfig, models: InputRef | None) -> ppl.PerplexityParams:
    params = cfg.perplexity.tag
    if models is not None and not params.models and not params.models_dir:
        params = params.model_copy(update={"models_dir": models.path})
    return params


def _models_ref(cfg: PipelineConfig) -> InputRef | None:
    return planned_ref(cfg, "kenlm-train") if kenlm_configured(cfg) else None


def _model_inputs(cfg: PipelineConfig, models: InputRef | None) -> list[InputRef]:
    if models is not None:
        return [models]
    found = ppl.resolve_models(cfg.perplexity.tag)
    return [InputRef("raw", hash_file(p), str(Path(p).resolve())) for _, p in sorted(found.items())]


def _tags_fingerprint_params(cfg: PipelineConfig, models: InputRef | None) -> dict:
    params = _tag_params(cfg, models).fingerprint_params()
    params.pop("models_dir", None)  # the models are inputs, fingerprinted by content, not by path
    params.pop("models", None)
    return params


def plan_perplexity(cfg: PipelineConfig, src: InputRef | None) -> StagePlan | None:
    if not perplexity_active(cfg) or src is None:
        return None
    models = _models_ref(cfg)
    tags = make_plan(cfg, "perplexity-tags", STAGE_VERSION, _tags_fingerprint_params(cfg, models),
                     [src, *_model_inputs(cfg, models)])
    tags_ref = ref_of(cfg, "perplexity-tags", tags.fingerprint)
    return make_plan(cfg, "perplexity", STAGE_VERSION, cfg.perplexity.filter.fingerprint_params(), [tags_ref])


@flow(name="perplexity")
def perplexity_flow(
    config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None, force: bool = False
) -> str:
    """Tag documents with KenLM perplexity, then keep the configured percentile buckets; returns the kept dataset."""
    cfg = load_config(config)
    input_path = input_path or upstream_dataset(cfg, "perplexity")
    if not perplexity_active(cfg):
        get_run_logger().info("perplexity: disabled or no KenLM model configured; documents pass through unchanged")
        record_stage(cfg.data_root, cfg.name, "perplexity", input_path)
        return input_path
    models_path = kenlm_train_flow(config=cfg) if kenlm_configured(cfg) else None
    models = input_ref(models_path) if models_path else None
    tag_params = _tag_params(cfg, models)
    tags = parts_stage(
        cfg,
        stage="perplexity-tags",
        stage_version=STAGE_VERSION,
        params=_tags_fingerprint_params(cfg, models),
        input_path=input_path,
        extra_inputs=_model_inputs(cfg, models),
        task=tag_task,
        call_for=lambda i, part, w: {"in_part": str(part), "out_part": str(w.part_path(i)), "params": tag_params},
        result_type=ppl.PerplexityTagResult,
        summarize=ppl.summarize_tag,
        force=force,
    )
    flt = cfg.perplexity.filter

    def cutoffs(_plan: StagePlan) -> dict:
        found = ppl.compute_cutoffs(tags, flt.head_percentile, flt.tail_percentile, flt.default_lang)
        return {"cutoffs": {lang: list(v) for lang, v in found.items()}}

    return parts_stage(
        cfg,
        stage="perplexity",
        stage_version=STAGE_VERSION,
        params=flt.fingerprint_params(),
        input_path=tags,
        task=filter_task,
        call_for=lambda i, part, w: {
            "in_part": str(part),
            "out_part": str(w.part_path(i)),
            "rejected_part": str(w.rejected_path(i)),
            "params": flt,
        },
        result_type=ppl.PerplexityFilterResult,
        summarize=ppl.summarize_filter,
        force=force,
        before=cutoffs,
    )
