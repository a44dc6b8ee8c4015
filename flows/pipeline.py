"""The `pipeline` flow: the stage flows as subflows, in DAG order, passing dataset paths between them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from flows.config import PipelineConfig, load_config
from flows.flow_decorator import flow
from flows.plans import upstream_of
from flows.registry import select_stages, stage_flow
from flows.report import funnel, funnel_markdown, funnel_png, png_markdown
from storage.dataset import is_dataset, read_manifest
from storage.runs import read_run_pointer


@contextmanager
def foreground_run_settings() -> Iterator[None]:
    """Prefect settings for a pipeline run in the foreground (`chatlike run`, the tests): no flow-run heartbeats.

    Heartbeats let a server notice that a run a worker started has crashed; nobody watches them for a run in the
    foreground, and each flow run waits for its heartbeat thread at exit — about one second per subflow, measured
    (1.15 s per flow run with heartbeats, 0.19 s without). Set PREFECT_FLOWS_HEARTBEAT_FREQUENCY to keep them.
    """
    if os.environ.get("PREFECT_FLOWS_HEARTBEAT_FREQUENCY"):
        yield
        return
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


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
        kwargs: dict = {"config": cfg, "force": force}
        upstream = upstream_of(cfg, name)
        if upstream is not None:
            # The upstream output when it ran here (a data edge in the run graph), else found by its plan.
            kwargs["input_path"] = outputs.get(upstream)
        outputs[name] = stage_flow(name)(**kwargs)
    _funnel_artifact(cfg)
    _lineage_artifact(cfg)
    if outputs.get("persona-eval"):
        get_run_logger().info("persona-eval: %s", read_manifest(outputs["persona-eval"]).stats.get("summary"))
    return outputs


def _funnel_artifact(cfg: PipelineConfig) -> None:
    """The data funnel of this config's datasets as a table and a chart (`pipeline-funnel` artifact)."""
    steps = funnel(cfg.data_root, cfg.name)
    if not steps:
        return
    png = funnel_png(steps, Path(cfg.data_root) / "runs" / f"{cfg.name}-funnel.png")
    markdown = f"# Data funnel of '{cfg.name}'\n\n{funnel_markdown(steps)}\n"
    if png is not None:
        markdown += png_markdown(png, "documents and bytes kept per stage") + "\n"
    create_markdown_artifact(key="pipeline-funnel", markdown=markdown,
                             description=f"documents and bytes kept per stage ({cfg.name})")


def _lineage_artifact(cfg: PipelineConfig) -> None:
    """The run's datasets and their edges as a picture and a table (`pipeline-lineage` artifact): Prefect's
    open-source UI shows the asset events only as a feed, so the graph is drawn here from the manifests."""
    from flows.lineage_report import lineage_markdown, lineage_png
    from storage.lineage import lineage_graph

    stages = read_run_pointer(cfg.data_root, cfg.name).get("stages", {})
    paths = [entry["path"] for _, entry in sorted(stages.items()) if is_dataset(entry["path"])]
    if not paths:
        return
    graph = lineage_graph(*paths)
    png = lineage_png(graph, Path(cfg.data_root) / "runs" / f"{cfg.name}-lineage.png",
                      title=f"Lineage of the datasets of '{cfg.name}'")
    markdown = (f"# Lineage of '{cfg.name}'\n\n{png_markdown(png, 'the datasets of this run and their inputs')}\n\n"
                f"{lineage_markdown(graph)}")
    create_markdown_artifact(key="pipeline-lineage", markdown=markdown,
                             description=f"the datasets of '{cfg.name}', their inputs down to the raw files")
