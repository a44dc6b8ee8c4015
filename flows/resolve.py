"""Which dataset a stage reads when it runs on its own: the output its upstream stage would produce for this
config, found by chaining the stages' plans (fingerprints) from the raw inputs — not whatever ran last."""

from __future__ import annotations

from flows.config import PipelineConfig
from storage.dataset import InputRef, dataset_dir, is_dataset

CHAT_STAGES = ("sft-data", "sft", "lora")


class MissingInputError(ValueError):
    """A stage's input dataset has not been built for this config yet."""


def ref_of(cfg: PipelineConfig, stage: str, fingerprint: str) -> InputRef:
    return InputRef(stage, fingerprint, str(dataset_dir(cfg.data_root, stage, fingerprint)))


def planned_ref(cfg: PipelineConfig, stage: str) -> InputRef | None:
    """The dataset `stage` produces under this config (it may not exist yet); None if nothing feeds it."""
    from flows.registry import get_stage

    spec = get_stage(stage)
    src = planned_ref(cfg, spec.upstream) if spec.upstream else None
    plan = spec.plan(cfg, src)
    if plan is None:  # a disabled stage passes its input through; a skipped one makes nothing
        return src if spec.passes_through else None
    return ref_of(cfg, plan.stage, plan.fingerprint)


def planned_output(cfg: PipelineConfig, stage: str) -> tuple[str, bool]:
    """(dataset path of `stage` under this config, whether it exists)."""
    ref = planned_ref(cfg, stage)
    if ref is None:
        hint = " (sft-data, sft and lora need sft_data.target_author)" if stage in CHAT_STAGES else ""
        raise MissingInputError(f"'{stage}' makes no dataset under config '{cfg.name}'{hint}")
    return ref.path, is_dataset(ref.path)


def upstream_dataset(cfg: PipelineConfig, stage: str) -> str:
    from flows.registry import get_stage

    up = get_stage(stage).upstream
    assert up is not None, f"stage {stage} has no upstream"
    path, ok = planned_output(cfg, up)
    if not ok:
        raise MissingInputError(
            f"'{stage}' reads the output of '{up}', which does not exist yet for config '{cfg.name}' "
            f"(expected {path}); run: chatlike run --config <config> --stop-after {up}"
        )
    return path
