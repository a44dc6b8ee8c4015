"""The stages of the pipeline in DAG order, each with its flow, its upstream stage and its planner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flows.clean import clean_flow, plan_clean
from flows.common import StagePlan
from flows.config import PipelineConfig
from flows.dedup import dedup_flow, plan_dedup
from flows.filters import (
    langid_flow,
    langid_train_flow,
    plan_langid,
    plan_langid_train,
    plan_quality,
    quality_flow,
)
from flows.ingest import ingest_flow, plan_ingest
from flows.perplexity import kenlm_train_flow, perplexity_flow, plan_kenlm_train, plan_perplexity
from flows.tokens import encode_flow, plan_encode, plan_sample, plan_tokenizer, sample_flow, tokenizer_flow
from flows.training import (
    lora_flow,
    plan_lora,
    plan_pretrain,
    plan_sft,
    plan_sft_data,
    pretrain_flow,
    sft_data_flow,
    sft_flow,
)
from storage.dataset import InputRef


@dataclass(frozen=True)
class StageSpec:
    name: str
    flow: Callable[..., str]
    upstream: str | None
    # The plan of the stage's output from its input's reference (None: the stage passes its input through,
    # or, when `passes_through` is False, makes nothing and stages downstream of it have no input).
    plan: Callable[[PipelineConfig, InputRef | None], StagePlan | None]
    passes_through: bool = True


STAGES: tuple[StageSpec, ...] = (
    StageSpec("ingest", ingest_flow, None, lambda cfg, _src: plan_ingest(cfg)[0]),
    StageSpec("clean", clean_flow, "ingest", lambda cfg, src: plan_clean(cfg, src)),
    StageSpec("langid-train", langid_train_flow, None, plan_langid_train),
    StageSpec("langid", langid_flow, "clean", plan_langid),
    StageSpec("quality", quality_flow, "langid", plan_quality),
    StageSpec("kenlm-train", kenlm_train_flow, None, plan_kenlm_train),
    StageSpec("perplexity", perplexity_flow, "quality", plan_perplexity),
    StageSpec("dedup", dedup_flow, "perplexity", plan_dedup),
    StageSpec("sample", sample_flow, "dedup", plan_sample),
    StageSpec("tokenizer", tokenizer_flow, "sample", plan_tokenizer),
    StageSpec("encode", encode_flow, "tokenizer", plan_encode),
    StageSpec("pretrain", pretrain_flow, "encode", plan_pretrain, passes_through=False),
    StageSpec("sft-data", sft_data_flow, "tokenizer", plan_sft_data, passes_through=False),
    StageSpec("sft", sft_flow, "sft-data", plan_sft, passes_through=False),
    StageSpec("lora", lora_flow, "sft-data", plan_lora, passes_through=False),
)
STAGE_NAMES = tuple(s.name for s in STAGES)


class UnknownStageError(ValueError):
    pass


def get_stage(name: str) -> StageSpec:
    for spec in STAGES:
        if spec.name == name:
            return spec
    raise UnknownStageError(f"no stage named '{name}'; the stages are: {', '.join(STAGE_NAMES)}")


def select_stages(start_at: str | None = None, stop_after: str | None = None, only: list[str] | None = None) -> list[str]:
    """The stages to run, in DAG order, honouring --start-at / --stop-after / --only."""
    for name in [start_at, stop_after, *(only or [])]:
        if name is not None:
            get_stage(name)
    if only:
        return [s for s in STAGE_NAMES if s in only]
    names = list(STAGE_NAMES)
    first = names.index(start_at) if start_at else 0
    last = names.index(stop_after) if stop_after else len(names) - 1
    if first > last:
        raise ValueError(f"--start-at {start_at} comes after --stop-after {stop_after}")
    return names[first : last + 1]
