"""Which dataset a stage reads when it runs on its own: the output its upstream stage would produce for this
config, found by computing that stage's plan (fingerprint) — not whatever ran last."""

from __future__ import annotations

from flows.config import PipelineConfig
from storage.dataset import dataset_dir


class MissingInputError(ValueError):
    """A stage's input dataset has not been built for this config yet."""


def planned_output(cfg: PipelineConfig, stage: str) -> tuple[str, bool]:
    """(dataset path of `stage` under this config, whether it exists)."""
    from flows.registry import get_stage

    spec = get_stage(stage)
    src = None
    if spec.upstream:
        src, ok = planned_output(cfg, spec.upstream)
        if not ok:
            return src, False
    plan = spec.plan(cfg, src)
    existing = plan.existing
    return str(existing or dataset_dir(cfg.data_root, stage, plan.fingerprint)), existing is not None


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
