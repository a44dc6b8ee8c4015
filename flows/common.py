"""What every stage flow shares: plan the output (fingerprint), skip when up to date, map shard tasks over a
configurable task runner with per-shard resume, publish as a Prefect asset, and report as an artifact."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.assets import materialize
from prefect.assets.core import add_asset_metadata
from prefect.futures import as_completed
from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from flows.config import PipelineConfig
from storage.dataset import DatasetWriter, InputRef, Manifest, find_dataset, read_manifest
from storage.fingerprint import fingerprint
from storage.parquet import parquet_files
from storage.runs import record_stage
from tasks.params import RunnerParams

MAX_ASSET_DEPS = 50  # raw input files beyond this are summarised, not listed one by one


@dataclass
class StagePlan:
    """Everything that determines a stage's output, computed before any work is done."""

    stage: str
    stage_version: str
    params: dict
    inputs: list[InputRef]
    raw_hashes: list[str]
    fingerprint: str
    data_root: str

    @property
    def existing(self) -> Path | None:
        return find_dataset(self.data_root, self.stage, self.fingerprint)

    def writer(self) -> DatasetWriter:
        return DatasetWriter(self.data_root, self.stage, self.stage_version, self.fingerprint, self.params, self.inputs)


def make_plan(
    cfg: PipelineConfig,
    stage: str,
    stage_version: str,
    params: dict,
    inputs: Sequence[InputRef],
    raw_hashes: Sequence[str] = (),
) -> StagePlan:
    inputs = list(inputs)
    fp = fingerprint(
        stage,
        stage_version,
        params,
        input_fingerprints=[i.fingerprint for i in inputs if i.stage != "raw"],
        raw_hashes=list(raw_hashes),
    )
    return StagePlan(stage, stage_version, params, inputs, list(raw_hashes), fp, cfg.data_root)


def input_ref(path: str | os.PathLike) -> InputRef:
    m = read_manifest(path)
    return InputRef(stage=m.stage, fingerprint=m.fingerprint, path=str(Path(path)))


def up_to_date(cfg: PipelineConfig, plan: StagePlan, force: bool) -> str | None:
    """The existing dataset when the stage has nothing to do (and points the run at it), else None."""
    existing = plan.existing
    if existing is None or force:
        return None
    get_run_logger().info("%s: up to date (%s), nothing to do", plan.stage, existing)
    record_stage(cfg.data_root, cfg.name, plan.stage, existing)
    return str(existing)


def build_task_runner(runner: RunnerParams) -> TaskRunner:
    workers = runner.workers or os.cpu_count() or 1
    if runner.kind == "process":
        return ProcessPoolTaskRunner(max_workers=workers)
    if runner.kind == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError as e:
            raise RuntimeError("runner.kind 'dask' needs prefect-dask: pip install 'chatlike[dask]'") from e
        return DaskTaskRunner(address=runner.dask_address)
    return ThreadPoolTaskRunner(max_workers=workers)


def run_shards(
    shard_task: Any,
    calls: Sequence[dict],
    names: Sequence[str],
    writer: DatasetWriter,
    result_type: type,
    runner: RunnerParams,
) -> list:
    """Run `shard_task(**call)` for every call, in parallel on the configured runner.

    A shard whose result was recorded by an earlier, interrupted run of the same dataset is not redone.
    Results come back in the order of `calls`, whatever order the shards finish in.
    """
    results: list = [None] * len(calls)
    todo: list[int] = []
    for i, name in enumerate(names):
        record = writer.shard_record(name)
        if record.is_file():
            results[i] = result_type(**json.loads(record.read_text(encoding="utf-8")))
        else:
            todo.append(i)
    if todo:
        with build_task_runner(runner) as task_runner, _progress(writer.stage, len(calls), len(calls) - len(todo)) as advance:
            futures = {task_runner.submit(shard_task, parameters=calls[i]): i for i in todo}
            for future in as_completed(list(futures)):
                i = futures[future]
                results[i] = future.result()
                record = writer.shard_record(names[i])
                tmp = record.with_suffix(".json.partial")
                tmp.write_text(json.dumps(dataclasses.asdict(results[i])), encoding="utf-8")
                os.replace(tmp, record)
                advance()
    return results


@contextmanager
def _progress(stage: str, total: int, done: int) -> Iterator[Callable[[], None]]:
    """A rich progress bar over shards when a person is watching a terminal; silent otherwise."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(f"{stage}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True) as bar:
        task_id = bar.add_task(stage, total=total, completed=done)
        yield lambda: bar.advance(task_id)


def asset_key(path: str | os.PathLike) -> str:
    return Path(path).resolve().as_uri()


def publish(
    cfg: PipelineConfig,
    plan: StagePlan,
    writer: DatasetWriter,
    counts: dict,
    stats: dict,
    force: bool = False,
) -> str:
    """Publish the dataset inside a Prefect materialization (an asset event linking it to its inputs)."""
    key = asset_key(writer.final)
    deps = [asset_key(i.path) for i in plan.inputs[:MAX_ASSET_DEPS]]

    def _publish() -> str:
        path = writer.publish(counts, stats, replace=force)
        manifest = read_manifest(path)
        add_asset_metadata(
            key,
            {"stage": plan.stage, "fingerprint": plan.fingerprint, "rows": manifest.rows, "counts": counts},
        )
        return str(path)

    publish_task = materialize(key, asset_deps=deps, name=f"publish-{plan.stage}")(_publish)
    path = publish_task()
    record_stage(cfg.data_root, cfg.name, plan.stage, path)
    report(path)
    return path


def _fmt(v: object) -> str:
    return f"{v:,}" if isinstance(v, int) else str(v)


def manifest_markdown(m: Manifest) -> str:
    """A human summary of a dataset: inputs → output, counts (removal reasons included), timing."""
    lines = [f"# {m.stage} — `{m.fingerprint[:16]}`", "", f"**Output:** `{m.path}`  ", f"**Rows:** {m.rows:,}  "]
    lines.append(f"**Took:** {m.seconds:.2f} s on {m.host}, code {m.code_version}")
    lines += ["", "## Inputs", ""]
    raw = [i for i in m.inputs if i.stage == "raw"]
    for i in m.inputs:
        if i.stage != "raw":
            lines.append(f"- {i.stage} `{i.fingerprint[:16]}` — `{i.path}`")
    if raw:
        lines.append(f"- {len(raw)} raw file(s): " + ", ".join(f"`{Path(i.path).name}`" for i in raw[:20]))
    lines += ["", "## Counts", "", "| count | value |", "|---|---:|"]
    lines += [f"| {k} | {_fmt(v)} |" for k, v in m.counts.items()]
    if "in" in m.counts and "out" in m.counts and m.counts["in"]:
        kept = m.counts["out"] / m.counts["in"]
        lines += ["", f"Kept {kept:.1%} of the input rows."]
    return "\n".join(lines) + "\n"


def report(path: str | os.PathLike) -> None:
    m = read_manifest(path)
    create_markdown_artifact(
        key=f"{m.stage.replace('_', '-')}-report",
        markdown=manifest_markdown(m),
        description=f"{m.stage} dataset {m.fingerprint[:16]}",
    )
    counts = m.counts
    rate = ""
    if m.seconds > 0 and "in" in counts:
        rate = f", {counts['in'] / m.seconds:,.0f} rows/s"
        if "bytes_in" in counts:
            rate += f", {counts['bytes_in'] / m.seconds / 1e6:,.2f} MB/s"
    get_run_logger().info(
        "%s: published %s (%s rows in, %s out%s)", m.stage, path, counts.get("in"), counts.get("out"), rate
    )


def shard_task(fn: Callable, name: str) -> Any:
    """A thin Prefect task around a plain shard function (retries for transient I/O errors only)."""
    return task(fn, name=name, retries=0)



def parts_stage(
    cfg: PipelineConfig,
    *,
    stage: str,
    stage_version: str,
    params: dict,
    input_path: str,
    task: Any,
    call_for: Callable[[int, Path, DatasetWriter], dict],
    result_type: type,
    summarize: Callable[[list], tuple[dict, dict]],
    force: bool = False,
    extra_inputs: Sequence[InputRef] = (),
    before: Callable[[StagePlan], dict] | None = None,
) -> str:
    """A stage that maps one shard task over the Parquet parts of its input dataset (the common case).

    `call_for(i, part, writer)` gives the task's keyword arguments for part i; `before(plan)` may compute
    dataset-wide values first (e.g. percentile cut-offs) that are added to every call and to the stats.
    """
    plan = make_plan(cfg, stage, stage_version, params, [input_ref(input_path), *extra_inputs])
    if done := up_to_date(cfg, plan, force):
        return done
    parts = parquet_files(input_path)
    shared = before(plan) if before else {}
    with plan.writer() as w:
        calls = [{**call_for(i, p, w), **shared} for i, p in enumerate(parts)]
        results = run_shards(task, calls, [p.stem for p in parts], w, result_type, cfg.runner)
        counts, stats = summarize(results)
        if shared:
            stats = {**stats, **{k: v for k, v in shared.items() if _jsonable(v)}}
        return publish(cfg, plan, w, counts, stats, force)


def _jsonable(value: object) -> bool:
    try:
        json.dumps(value)
        return True
    except TypeError:
        return False
