"""The `pipeline` flow: the stage flows as subflows, in DAG order, passing dataset paths between them."""

from __future__ import annotations

from prefect import flow, get_run_logger

from flows.config import PipelineConfig, load_config
from flows.registry import get_stage, select_stages


@flow(name="pipeline")
def pipeline_flow(
    config: PipelineConfig | str = "configs/demo.yaml",
    start_at: str | None = None,
    stop_after: str | None = None,
    only: list[str] | None = None,
    force: bool = False,
) -> dict[str, str]:
    """Run the selected stages; up-to-date stages are skipped. Returns stage → dataset path."""
    cfg = load_config(config)
    stages = select_stages(start_at, stop_after, only)
    get_run_logger().info("pipeline '%s': %s", cfg.name, " → ".join(stages))
    outputs: dict[str, str] = {}
    for name in stages:
        spec = get_stage(name)
        kwargs: dict = {"config": cfg, "force": force}
        if spec.upstream is not None:
            # The upstream output when it ran here (a data edge in the run graph), else found by its plan.
            kwargs["input_path"] = outputs.get(spec.upstream)
        outputs[name] = spec.flow(**kwargs)
    return outputs
