"""The flow of every pipeline stage, by name (the plans, upstream stages and order live in `flows.plans`)."""

from __future__ import annotations

from collections.abc import Callable

from flows.clean import clean_flow
from flows.dedup import dedup_flow
from flows.evaluation import persona_eval_flow
from flows.filters import langid_flow, langid_train_flow, quality_flow
from flows.ingest import ingest_flow
from flows.perplexity import kenlm_train_flow, perplexity_flow
from flows.plans import STAGE_NAMES, UPSTREAM, UnknownStageError, check_stage, select_stages
from flows.tokens import encode_flow, sample_flow, tokenizer_flow
from flows.training import lora_flow, pretrain_flow, sft_data_flow, sft_flow

__all__ = ["FLOWS", "STAGE_NAMES", "UPSTREAM", "UnknownStageError", "select_stages", "stage_flow"]

FLOWS: dict[str, Callable[..., str | None]] = {
    "ingest": ingest_flow,
    "clean": clean_flow,
    "langid-train": langid_train_flow,
    "langid": langid_flow,
    "quality": quality_flow,
    "kenlm-train": kenlm_train_flow,
    "perplexity": perplexity_flow,
    "dedup": dedup_flow,
    "sample": sample_flow,
    "tokenizer": tokenizer_flow,
    "encode": encode_flow,
    "pretrain": pretrain_flow,
    "sft-data": sft_data_flow,
    "sft": sft_flow,
    "lora": lora_flow,
    "persona-eval": persona_eval_flow,
}
assert tuple(FLOWS) == STAGE_NAMES, "every stage of flows.plans has its flow, in DAG order"


def stage_flow(name: str) -> Callable[..., str | None]:
    return FLOWS[check_stage(name)]
