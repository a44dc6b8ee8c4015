"""The `clean` flow: documents → cleaned documents, one shard task per input part."""

from __future__ import annotations

from flows.config import PipelineConfig, load_config
from flows.flow_decorator import flow
from flows.plans import flow_planner
from flows.stage_runner import parts_stage, shard_task
from tasks import clean as clean_stage

clean_shard_task = shard_task(clean_stage.clean_shard, "clean-shard")


@flow(name="clean")
def clean_flow(
    config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None, force: bool = False
) -> str:
    """Apply the cleaning rules to the ingested documents; returns the cleaned dataset's path."""
    cfg = load_config(config)
    return parts_stage(
        cfg,
        flow_planner(cfg, "clean", input_path).plan("clean"),
        task=clean_shard_task,
        call_for=lambda i, part, w: {
            "in_part": str(part),
            "out_part": str(w.part_path(i)),
            "rejected_part": str(w.rejected_path(i)),
            "params": cfg.clean,
        },
        summarize=clean_stage.SUMMARY,
        force=force,
    )
