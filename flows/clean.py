"""The `clean` flow: documents → cleaned documents, one shard task per input part."""

from __future__ import annotations

from prefect import flow

from flows.common import input_ref, make_plan, publish, run_shards, shard_task, up_to_date
from flows.config import PipelineConfig, load_config
from flows.resolve import upstream_dataset
from storage.parquet import parquet_files
from tasks import clean as clean_stage

clean_shard_task = shard_task(clean_stage.clean_shard, "clean-shard")


def plan_clean(cfg: PipelineConfig, input_path: str):
    return make_plan(
        cfg, clean_stage.STAGE, clean_stage.STAGE_VERSION, cfg.clean.fingerprint_params(), [input_ref(input_path)]
    )


@flow(name="clean")
def clean_flow(
    config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None, force: bool = False
) -> str:
    """Apply the cleaning rules to the ingested documents; returns the cleaned dataset's path."""
    cfg = load_config(config)
    input_path = input_path or upstream_dataset(cfg, "clean")
    plan = plan_clean(cfg, input_path)
    if done := up_to_date(cfg, plan, force):
        return done
    parts = parquet_files(input_path)
    with plan.writer() as w:
        calls = [
            {
                "in_part": str(p),
                "out_part": str(w.part_path(i)),
                "rejected_part": str(w.rejected_path(i)),
                "params": cfg.clean,
            }
            for i, p in enumerate(parts)
        ]
        results = run_shards(
            clean_shard_task, calls, [p.stem for p in parts], w, clean_stage.CleanShardResult, cfg.runner
        )
        counts, stats = clean_stage.summarize(results)
        return publish(cfg, plan, w, counts, stats, force)
