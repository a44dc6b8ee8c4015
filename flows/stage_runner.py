"""How a stage runs under Prefect: skip it when its planned dataset is up to date, map its shard tasks over the
configured task runner (resuming and reusing finished shards through the dataset writer), and publish the
dataset as a Prefect asset with its report."""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.assets import materialize
from prefect.assets.core import add_asset_metadata
from prefect.futures import as_completed
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from prefect.types.names import MAX_ASSET_KEY_LENGTH, RESTRICTED_ASSET_CHARACTERS

from flows.config import PipelineConfig
from flows.plans import StagePlan
from flows.report import report
from flows.workers import pool_workers, process_pool
from storage.atomic import DiskFullError
from storage.dataset import REJECTED, DatasetWriter, read_manifest
from storage.parquet import parquet_files
from storage.runs import record_stage
from tasks.params import RunnerParams
from tasks.shard_drivers import ShardCounts, call_shard

MAX_ASSET_DEPS = 50  # raw input files beyond this are summarised, not listed one by one


def up_to_date(cfg: PipelineConfig, plan: StagePlan, force: bool) -> str | None:
    """The existing dataset when the stage has nothing to do (and points the run at it), else None."""
    existing = plan.existing
    if existing is None or force:
        return None
    get_run_logger().info("%s: up to date (%s), nothing to do", plan.stage, existing)
    record_stage(cfg.data_root, cfg.name, plan.stage, existing)
    return str(existing)


def build_task_runner(runner: RunnerParams) -> TaskRunner:
    """The Prefect task runner of `runner.kind: thread` (a task run per shard, shown in the UI)."""
    return ThreadPoolTaskRunner(max_workers=runner.workers or os.cpu_count() or 1)


def dask_client(address: str) -> Any:
    """A client of the Dask cluster at `address` (connecting costs ~20 ms: one per stage step, closed after it)."""
    try:
        from distributed import Client
    except ImportError as e:
        raise RuntimeError("runner.kind 'dask' needs distributed: pip install 'chatlike[dask]'") from e
    try:
        return Client(address, set_as_default=False, timeout=30)
    except OSError as e:
        raise RuntimeError(f"runner.dask_address {address}: cannot reach the Dask scheduler ({e})") from e


def shard_key(*parts: object) -> str:
    """The content key of one shard's work: everything its output bytes depend on (never paths of this run)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _as_record(result: Any) -> dict:
    return result.as_record() if hasattr(result, "as_record") else dataclasses.asdict(result)


def _from_record(result_type: type, record: object) -> Any | None:
    """A shard's result rebuilt from its record, or None when the record is of an older format (the shard is
    then computed again)."""
    if not isinstance(record, dict):
        return None
    try:
        if hasattr(result_type, "from_record"):
            return result_type.from_record(record)
        return result_type(**record)
    except (KeyError, TypeError, ValueError):
        return None


def run_shards(
    shard_task: Any,
    calls: Sequence[dict],
    names: Sequence[str],
    writer: DatasetWriter,
    runner: RunnerParams,
    *,
    result_type: type = ShardCounts,
    keys: Sequence[str | None] | None = None,
    outputs: Sequence[Sequence[str | os.PathLike]] | None = None,
) -> list:
    """Run `shard_task(**call)` for every call, in parallel on the configured runner.

    A shard whose result was recorded by an earlier, interrupted run of the same dataset is not redone. With
    `keys` (each shard's content key, see `shard_key`) and `outputs` (the files each call writes), a shard that
    an earlier published dataset of this stage already computed from the same content is not redone either:
    its files are linked into this dataset (the nightly refresh processes only new input files). Results
    come back in the order of `calls`, whatever order the shards finish in. A shard whose record cannot be
    read back as `result_type` (a record of an older format) is computed again.
    """
    results: list = [_from_record(result_type, writer.finished_shard(name)) for name in names]
    todo = [i for i, r in enumerate(results) if r is None]
    if todo and keys is not None and outputs is not None:
        reused = 0
        for i in list(todo):
            record = writer.reuse_shard(names[i], keys[i], i,
                                        accept=lambda r: _from_record(result_type, r) is not None)
            if record is not None:
                results[i] = _from_record(result_type, record)
                todo.remove(i)
                reused += 1
        if reused:
            get_run_logger().info("%s: %d of %d shard(s) unchanged since an earlier run, reused; %d to compute",
                                  writer.stage, reused, len(calls), len(todo))
    if not todo:
        return results
    with contextlib.ExitStack() as stack:
        advance = stack.enter_context(_progress(writer.stage, len(calls), len(calls) - len(todo)))
        # process and dask: plain calls of the shard function on long-lived workers; the stage's flow run is what
        # the Prefect UI shows, not a task run per shard (each cost a round trip to the API and state changes)
        if runner.kind == "process":
            pool = process_pool(pool_workers(runner))
            futures = {pool.submit(shard_task.fn, **calls[i]): i for i in todo}
            done = concurrent.futures.as_completed(futures)
        elif runner.kind == "dask":
            from distributed import as_completed as dask_completed

            client = stack.enter_context(dask_client(str(runner.dask_address)))
            # one `map` call: the scheduler sees the stage's shards as one group and hands each to the next free
            # worker. Submitted one by one, they were spread over the workers as they came (unequal parts: one
            # worker idle while the other still had several; measured 1.77 s instead of 1.53 for 8 tasks)
            mapped = client.map(call_shard, [shard_task.fn] * len(todo), [calls[i] for i in todo], pure=False,
                                key=[f"{writer.stage}-{names[i]}-{os.urandom(6).hex()}" for i in todo])
            futures = dict(zip(mapped, todo, strict=True))
            # a failed stage leaves nothing running on the cluster
            stack.callback(lambda: client.cancel([f for f in futures if not f.done()]))
            done = dask_completed(list(futures), loop=client.loop)
        else:
            task_runner = stack.enter_context(build_task_runner(runner))
            futures = {task_runner.submit(shard_task, parameters=calls[i]): i for i in todo}
            done = as_completed(list(futures))
        for future in done:
            i = futures[future]
            try:
                results[i] = future.result()
            except DiskFullError as exc:  # names the file; the stage is what the user reruns
                raise DiskFullError(f"{writer.stage}: {exc}") from exc
            except BrokenProcessPool as exc:
                raise RuntimeError(f"{writer.stage}: a worker process died ({exc}); rerun to resume") from exc
            files = outputs[i] if outputs is not None else []
            writer.record_shard(names[i], _as_record(results[i]), keys[i] if keys is not None else None, files)
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
    """A file's Prefect asset key: `file://` and its absolute path. Prefect refuses spaces, '%', quotes and
    brackets in a key and keys past 512 characters, and WhatsApp names its exports "WhatsApp Chat with X.txt":
    such characters (and non-ASCII ones) become '_', and a key so changed or shortened ends with a hash of the
    real path, so that two paths never share a key."""
    real = str(Path(path).resolve())
    safe = "".join(c if " " < c < "\x7f" and c not in RESTRICTED_ASSET_CHARACTERS else "_" for c in real)
    key = "file://" + safe
    if safe != real or len(key) > MAX_ASSET_KEY_LENGTH:
        tag = "~" + hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        key = "file://" + safe[-(MAX_ASSET_KEY_LENGTH - len("file://") - len(tag)):] + tag
    return key


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


def shard_task(fn: Callable, name: str) -> Any:
    """A thin Prefect task around a plain shard function (retries for transient I/O errors only)."""
    return task(fn, name=name, retries=0)



def parts_stage(
    cfg: PipelineConfig,
    plan: StagePlan,
    *,
    task: Any,
    call_for: Callable[[int, Path, DatasetWriter], dict],
    summarize: Callable[[list[ShardCounts]], tuple[dict, dict]],
    force: bool = False,
    before: Callable[[StagePlan], dict] | None = None,
) -> str:
    """A stage that maps one shard task over the Parquet parts of its first input dataset (the common case).

    `call_for(i, part, writer)` gives the task's keyword arguments for part i; `before(plan)` may compute
    dataset-wide values first (e.g. percentile cut-offs) that are added to every call and to the stats.
    """
    if done := up_to_date(cfg, plan, force):
        return done
    input_path = plan.inputs[0].path
    extra_inputs = plan.inputs[1:]
    parts = parquet_files(input_path)
    shared = before(plan) if before else {}
    part_sha = {f.name: f.sha256 for f in read_manifest(input_path).files}
    context = [plan.stage, plan.stage_version, plan.params, [i.fingerprint for i in extra_inputs],
               {k: v for k, v in shared.items() if _jsonable(v)}]
    with plan.writer() as w:
        calls = [{**call_for(i, p, w), **shared} for i, p in enumerate(parts)]
        shas = [part_sha.get(p.relative_to(input_path).as_posix()) for p in parts]
        keys = [shard_key(*context, sha) if sha else None for sha in shas]
        outputs = [[w.tmp / f"part-{i:05d}.parquet", w.tmp / REJECTED / f"part-{i:05d}.parquet"]
                   for i in range(len(parts))]
        results = run_shards(task, calls, [p.stem for p in parts], w, cfg.runner, keys=keys, outputs=outputs)
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
