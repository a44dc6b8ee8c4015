"""What every stage flow shares: plan the output (fingerprint), skip when up to date, map shard tasks over a
configurable task runner with per-shard resume, publish as a Prefect asset, and report as an artifact."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.assets import materialize
from prefect.assets.core import add_asset_metadata
from prefect.futures import as_completed
from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from flows.config import PipelineConfig
from flows.plans import StagePlan
from flows.report import bar
from storage.atomic import atomic_path, write_text_atomic
from storage.dataset import REJECTED, DatasetWriter, Manifest, read_manifest
from storage.parquet import parquet_files
from storage.runs import record_stage
from tasks.params import RunnerParams
from tasks.shard_drivers import ShardCounts

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


def shard_key(*parts: object) -> str:
    """The content key of one shard's work: everything its output bytes depend on (never paths of this run)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _reusable_shards(data_root: str | os.PathLike, stage: str) -> dict[str, tuple[Path, dict]]:
    """Shards of the published datasets of `stage`, by content key (for incremental reruns)."""
    found: dict[str, tuple[Path, dict]] = {}
    for mf in sorted(Path(data_root, stage).glob("*/manifest.json")):
        try:
            shards = json.loads(mf.read_text(encoding="utf-8")).get("stats", {}).get("shards") or []
        except (OSError, json.JSONDecodeError):
            continue
        for entry in shards:
            if isinstance(entry, dict) and entry.get("key"):
                found.setdefault(entry["key"], (mf.parent, entry))
    return found


_INDEX = re.compile(r"\d{5}")


def _renumbered(rel: str, index: int) -> str:
    """`rejected/part-00003.parquet` as the file of shard `index` (the last 5-digit number is the shard's)."""
    folder, _, name = rel.rpartition("/")
    matches = list(_INDEX.finditer(name))
    if matches:
        m = matches[-1]
        name = f"{name[: m.start()]}{index:05d}{name[m.end():]}"
    return f"{folder}/{name}" if folder else name


def _link_or_copy(src: Path, dst: Path) -> None:
    with atomic_path(dst) as tmp:
        try:
            os.link(src, tmp)  # datasets are immutable: sharing the bytes is safe
        except OSError:
            shutil.copy2(src, tmp)


def _as_record(result: Any) -> dict:
    return result.as_record() if hasattr(result, "as_record") else dataclasses.asdict(result)


def _from_record(result_type: type, entry: object) -> Any | None:
    """A shard's result rebuilt from its record, or None when the record is of an older format (the shard is
    then computed again)."""
    try:
        record = entry["result"]  # type: ignore[index]
        if hasattr(result_type, "from_record"):
            return result_type.from_record(record)
        return result_type(**record)
    except (KeyError, TypeError, ValueError):
        return None


def _write_record(writer: DatasetWriter, name: str, result: Any, key: str | None, files: Sequence[Path],
                  reused_from: str | None = None) -> None:
    record = writer.shard_record(name)
    entry = {"result": _as_record(result), "key": key,
             "files": [f.relative_to(writer.tmp).as_posix() for f in files if f.is_file()]}
    if reused_from:
        entry["reused_from"] = reused_from
    write_text_atomic(record, json.dumps(entry))


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
    results: list = [None] * len(calls)
    todo: list[int] = []
    for i, name in enumerate(names):
        record = writer.shard_record(name)
        try:
            results[i] = _from_record(result_type, json.loads(record.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError):
            results[i] = None
        if results[i] is None:
            todo.append(i)
    if todo and keys is not None and outputs is not None:
        earlier = _reusable_shards(writer.data_root, writer.stage)
        reused = 0
        for i in list(todo):
            hit = earlier.get(keys[i]) if keys[i] else None
            if hit is None:
                continue
            old_dir, entry = hit
            result = _from_record(result_type, entry)
            sources = [old_dir / rel for rel in entry.get("files", [])]
            if result is None or not all(src.is_file() for src in sources):
                continue
            files = []
            for src, rel in zip(sources, entry["files"], strict=True):
                dst = writer.tmp / _renumbered(rel, i)
                _link_or_copy(src, dst)
                files.append(dst)
            results[i] = result
            _write_record(writer, names[i], results[i], keys[i], files, reused_from=old_dir.name)
            todo.remove(i)
            reused += 1
        if reused:
            get_run_logger().info("%s: %d of %d shard(s) unchanged since an earlier run, reused; %d to compute",
                                  writer.stage, reused, len(calls), len(todo))
    if todo:
        with build_task_runner(runner) as task_runner, _progress(writer.stage, len(calls), len(calls) - len(todo)) as advance:
            futures = {task_runner.submit(shard_task, parameters=calls[i]): i for i in todo}
            for future in as_completed(list(futures)):
                i = futures[future]
                results[i] = future.result()
                files = [Path(f) for f in outputs[i]] if outputs is not None else []
                _write_record(writer, names[i], results[i], keys[i] if keys is not None else None, files)
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
        total = m.counts["in"]
        lines += ["", f"Kept {m.counts['out'] / total:.1%} of the input rows.", "",
                  "| rows | share | |", "|---|---:|---|", f"| kept | {m.counts['out'] / total:.1%} | "
                  f"`{bar(m.counts['out'] / total)}` |"]
        for k, v in sorted(m.counts.items(), key=lambda kv: -kv[1] if isinstance(kv[1], int) else 0):
            if k.startswith(("dropped_", "skipped_")) and isinstance(v, int) and v:
                lines.append(f"| {k} | {v / total:.1%} | `{bar(v / total)}` |")
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
