"""The `dedup` flows: exact → MinHash LSH → Bloom filter → suffix array, each its own flow, dataset and manifest,
run in the configured order; `dedup` chains them and returns the last one's dataset.

Every method is split into phases that pass paths: per-part map steps, per-partition steps and small global
steps, all on the configured task runner. Intermediate files live in the writer's hidden `.work/` folder, so
an interrupted run resumes phase by phase and nothing but the documents is published.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from prefect import get_run_logger

from flows.config import PipelineConfig, load_config
from flows.flow_decorator import flow
from flows.plans import DEDUP_STAGES, Planner, dedup_method_input, flow_planner
from flows.stage_runner import publish, run_shards, shard_task, up_to_date
from storage.dataset import DatasetWriter
from storage.parquet import parquet_files
from storage.runs import record_stage
from tasks.dedup import bloom, exact, minhash, suffix_array
from tasks.shard_drivers import ShardCounts

STAGE_NAMES = DEDUP_STAGES


exact_hash_task = shard_task(exact.exact_hash_shard, "dedup-exact-hash")
exact_select_task = shard_task(exact.exact_select, "dedup-exact-select")
exact_filter_task = shard_task(exact.exact_filter_shard, "dedup-exact-filter")
minhash_signature_task = shard_task(minhash.minhash_signature_shard, "dedup-minhash-signatures")
minhash_bucket_task = shard_task(minhash.minhash_bucket_partition, "dedup-minhash-buckets")
minhash_cluster_task = shard_task(minhash.minhash_cluster, "dedup-minhash-cluster")
minhash_filter_task = shard_task(minhash.minhash_filter_shard, "dedup-minhash-filter")
bloom_task = shard_task(bloom.bloom_dedup_shard, "dedup-bloom-shard")
suffix_array_find_task = shard_task(suffix_array.suffix_array_find_group, "dedup-suffix-array-group")
suffix_array_filter_task = shard_task(suffix_array.suffix_array_filter_shard, "dedup-suffix-array-filter")


def _outputs(w: DatasetWriter, i: int) -> dict:
    return {"out_part": str(w.part_path(i)), "rejected_part": str(w.rejected_path(i))}


def _run_exact(cfg: PipelineConfig, parts: list[Path], w: DatasetWriter, work: Path) -> tuple[dict, dict]:
    p = cfg.dedup.exact
    run = lambda task, calls, names, rtype: run_shards(task, calls, names, w, cfg.runner, result_type=rtype)  # noqa: E731
    n = len(parts)
    run(exact_hash_task, [{"in_part": str(pt), "part_index": i, "work_dir": str(work), "params": p} for i, pt in enumerate(parts)],
        [f"hash-{i:05d}" for i in range(n)], exact.ExactHashResult)
    sel_dir = work / "selection"
    sel_dir.mkdir(exist_ok=True)
    selections = run(
        exact_select_task,
        [{"hash_files": exact.hash_partition_files(work, k), "selection_out": str(exact.selection_path(sel_dir, k)), "params": p}
         for k in range(p.partitions)],
        [f"select-{k:03d}" for k in range(p.partitions)], exact.ExactSelectResult,
    )
    sel_files = [str(exact.selection_path(sel_dir, k)) for k in range(p.partitions)]
    results = run(
        exact_filter_task,
        [{"in_part": str(pt), "part_index": i, "selection_files": sel_files, **_outputs(w, i), "params": p,
          "spans_part": str(w.part_path(i, "spans"))} for i, pt in enumerate(parts)],
        [f"filter-{i:05d}" for i in range(n)], ShardCounts,
    )
    return exact.summarize_exact(results, selections)


def _run_minhash(cfg: PipelineConfig, parts: list[Path], w: DatasetWriter, work: Path) -> tuple[dict, dict]:
    p = cfg.dedup.minhash
    run = lambda task, calls, names, rtype: run_shards(task, calls, names, w, cfg.runner, result_type=rtype)  # noqa: E731
    n = len(parts)
    run(minhash_signature_task,
        [{"in_part": str(pt), "part_index": i, "work_dir": str(work), "params": p} for i, pt in enumerate(parts)],
        [f"signatures-{i:05d}" for i in range(n)], minhash.MinhashSignatureResult)
    buckets = run(
        minhash_bucket_task,
        [{"bucket_files": minhash.bucket_files(work, k), "pairs_out": str(minhash.pairs_path(work, k)), "params": p,
          "shingles_dir": str(minhash.shingles_dir(work)) if p.verify else None} for k in range(p.partitions)],
        [f"buckets-{k:03d}" for k in range(p.partitions)], minhash.MinhashBucketResult,
    )
    clusters_file = str(work / "clusters.parquet")
    pair_files = [str(minhash.pairs_path(work, k)) for k in range(p.partitions)]
    (cluster,) = run(minhash_cluster_task,
                     [{"pair_files": pair_files, "docs_files": minhash.docs_files(work), "clusters_out": clusters_file}],
                     ["cluster"], minhash.MinhashClusterResult)
    results = run(
        minhash_filter_task,
        [{"in_part": str(pt), "part_index": i, "clusters_file": clusters_file, **_outputs(w, i), "params": p}
         for i, pt in enumerate(parts)],
        [f"filter-{i:05d}" for i in range(n)], ShardCounts,
    )
    return minhash.summarize_minhash(results, buckets, cluster, p)


def _run_bloom(cfg: PipelineConfig, parts: list[Path], w: DatasetWriter, work: Path) -> tuple[dict, dict]:
    p = cfg.dedup.bloom
    results = []
    previous = None
    for i, pt in enumerate(parts):  # sequential by design: each part is checked against everything before it
        filter_out = str(work / f"filter-{i:05d}.bloom")
        (r,) = run_shards(
            bloom_task,
            [{"in_part": str(pt), "part_index": i, "filter_in": previous, "filter_out": filter_out, **_outputs(w, i),
              "params": p, "spans_part": str(w.part_path(i, "spans"))}],
            [f"bloom-{i:05d}"], w, cfg.runner,
        )
        results.append(r)
        if previous is not None:  # part i read it; the survivor keys beside it stay for the later parts
            Path(previous).unlink(missing_ok=True)
        previous = filter_out
    return bloom.summarize_bloom(results, p)


def _run_suffix_array(cfg: PipelineConfig, parts: list[Path], w: DatasetWriter, work: Path) -> tuple[dict, dict]:
    p = cfg.dedup.suffix_array
    plan = suffix_array.plan_suffix_array_groups([str(pt) for pt in parts], p)
    if plan.message:
        get_run_logger().warning("dedup-suffix-array: %s", plan.message)
    plan_parts = [str(work / "plan" / f"part-{i:05d}.parquet") for i in range(len(parts))]
    # one suffix array per group (one worker each), then every part's cuts at once
    groups = run_shards(
        suffix_array_find_task,
        [{"in_parts": [str(parts[i]) for i in g], "part_indices": list(g),
          "plan_parts": [plan_parts[i] for i in g], "params": p} for g in plan.groups],
        [f"group-{k:03d}" for k in range(len(plan.groups))], w, cfg.runner,
        result_type=suffix_array.SuffixArrayGroupResult,
    )
    results = run_shards(
        suffix_array_filter_task,
        [{"in_part": str(pt), "part_index": i, "plan_part": plan_parts[i], **_outputs(w, i), "params": p,
          "spans_part": str(w.part_path(i, "spans"))} for i, pt in enumerate(parts)],
        [f"filter-{i:05d}" for i in range(len(parts))], w, cfg.runner,
    )
    for g, group in zip(plan.groups, groups, strict=True):
        if g:
            results[g[0]].info["group"] = group.stats
    return suffix_array.summarize_suffix_array(results, plan)


RUNNERS: dict[str, Callable[..., tuple[dict, dict]]] = {
    "exact": _run_exact, "minhash": _run_minhash, "bloom": _run_bloom, "suffix_array": _run_suffix_array,
}


def run_method(cfg: PipelineConfig, method: str, input_path: str, force: bool = False) -> str:
    """One dedup method over a documents dataset; returns its output dataset."""
    plan = Planner(cfg, {dedup_method_input(cfg, method): input_path}).plan(STAGE_NAMES[method])
    if done := up_to_date(cfg, plan, force):
        return done
    parts = parquet_files(input_path)
    with plan.writer() as w:
        work = w.tmp / ".work"
        work.mkdir(exist_ok=True)
        counts, stats = RUNNERS[method](cfg, parts, w, work)
        path = publish(cfg, plan, w, counts, stats, force)
        shutil.rmtree(Path(path) / ".work", ignore_errors=True)
        return path


def _method_flow(method: str):
    @flow(name=STAGE_NAMES[method])
    def method_flow(
        config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None, force: bool = False
    ) -> str:
        cfg = load_config(config)
        source = dedup_method_input(cfg, method)
        return run_method(cfg, method, input_path or Planner(cfg).require(source, STAGE_NAMES[method]).path, force)

    method_flow.__doc__ = f"Deduplicate documents with the {method.replace('_', ' ')} method; returns its dataset."
    return method_flow


dedup_exact_flow = _method_flow("exact")
dedup_minhash_flow = _method_flow("minhash")
dedup_bloom_flow = _method_flow("bloom")
dedup_suffix_array_flow = _method_flow("suffix_array")
METHOD_FLOWS = {"exact": dedup_exact_flow, "minhash": dedup_minhash_flow, "bloom": dedup_bloom_flow,
                "suffix_array": dedup_suffix_array_flow}


@flow(name="dedup")
def dedup_flow(
    config: PipelineConfig | str = "configs/demo.yaml", input_path: str | None = None, force: bool = False
) -> str:
    """Run the configured dedup methods in order, each reading the previous one's output."""
    cfg = load_config(config)
    path = flow_planner(cfg, "dedup", input_path).ref("perplexity").path
    for method in cfg.dedup.methods:
        path = METHOD_FLOWS[method](config=cfg, input_path=path, force=force)
    record_stage(cfg.data_root, cfg.name, "dedup", path)
    return path
