"""Scale-out: the data stages on a Dask cluster (several worker processes on loopback), and on the command's own
worker processes (`runner.kind: process`), give byte-identical datasets to the single-process run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage.dataset import read_manifest
from storage.runs import read_run_pointer
from tasks.shard_drivers import ShardCounts, ShardInputError
from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def _cfg(tmp_path: Path, name: str, runner: dict) -> Path:
    cfg = {
        "name": name,
        "data_root": str(tmp_path / name),
        "runner": runner,
        "ingest": {"inputs": [{"path": str(ROOT / "examples" / "whatsapp"), "kind": "whatsapp"},
                              {"path": str(ROOT / "examples" / "commoncrawl" / "*.wet.gz"), "kind": "wet"},
                              {"path": str(ROOT / "examples" / "text" / "*.jsonl")}]},
        "kenlm_train": {"references": {"en": [str(ROOT / "examples" / "reference" / "en.txt")]}},
        "perplexity": {"tag": {"default_lang": "en"}, "filter": {"default_lang": "en"}},
        "dedup": {"methods": ["exact", "minhash", "bloom", "suffix_array"], "bloom": {"capacity": 100_000}},
        "sample": {"min_bytes": 100_000},
        "tokenizer": {"vocab_size": 400, "min_frequency": 1},
        "encode": {"val_fraction": 0.2},
    }
    p = tmp_path / f"{name}.yaml"
    p.write_text(json.dumps(cfg))
    return p


def test_dask_cluster_outputs_are_byte_identical_to_single_process(tmp_path, prefect_harness):
    from distributed import LocalCluster

    from flows.pipeline import pipeline_flow

    local = pipeline_flow(config=str(_cfg(tmp_path, "local", {"kind": "thread", "workers": 1})), stop_after="encode")
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        dask = pipeline_flow(config=str(_cfg(tmp_path, "dask", {"kind": "dask", "dask_address": cluster.scheduler_address})),
                             stop_after="encode")
    _assert_identical(tmp_path, "local", "dask", local, dask)


def test_process_runner_outputs_are_byte_identical_and_its_workers_outlive_a_stage(tmp_path, prefect_harness):
    from flows import workers as worker_pool
    from flows.pipeline import pipeline_flow

    local = pipeline_flow(config=str(_cfg(tmp_path, "local", {"kind": "thread", "workers": 1})), stop_after="encode")
    procs = pipeline_flow(config=str(_cfg(tmp_path, "procs", {"kind": "process", "workers": 2})), stop_after="encode")
    _assert_identical(tmp_path, "local", "procs", local, procs)
    # one pool served every stage: its two workers are the processes that ran the shards, still alive
    workers, pool = worker_pool._POOL
    assert workers == 2 and len(pool._processes) == 2
    # the workers ran every stage without importing Prefect (2 s and 60 MB each): they import only tasks code
    assert pool.submit(eval, "'prefect' in __import__('sys').modules").result() is False
    assert pool.submit(eval, "'tasks.quality.stage' in __import__('sys').modules").result() is True
    pids = {p.pid for p in pool._processes.values()}
    assert {pool.submit(_pid).result() for _ in range(8)} <= pids
    assert all(p.is_alive() for p in pool._processes.values())
    # the workers share the cores: the tokenizers' thread pool of each gets its share, not every core
    import os

    share = str(max(1, (os.cpu_count() or 1) // 2))
    assert pool.submit(_rayon_threads).result() == os.environ.get("RAYON_NUM_THREADS", share)


def _rayon_threads() -> str | None:
    import os

    return os.environ.get("RAYON_NUM_THREADS")


def _pid() -> int:
    import os

    return os.getpid()


def _assert_identical(tmp_path: Path, a_name: str, b_name: str, a_out: dict, b_out: dict) -> None:
    assert set(a_out) == set(b_out)
    compared = 0
    for stage in read_run_pointer(tmp_path / a_name, a_name)["stages"]:
        a = read_manifest(read_run_pointer(tmp_path / a_name, a_name)["stages"][stage]["path"])
        b = read_manifest(read_run_pointer(tmp_path / b_name, b_name)["stages"][stage]["path"])
        assert a.fingerprint == b.fingerprint, stage
        assert [(f.name, f.sha256) for f in a.files] == [(f.name, f.sha256) for f in b.files], stage
        compared += len(a.files)
    assert compared > 20


def _shard(key: str, workers: int) -> ShardCounts:
    """A shard function whose keywords share names with `Client.submit`'s own (key, workers)."""
    if key == "bad":
        raise ShardInputError(f"/data/{key}.parquet: cannot read this Parquet part")
    return ShardCounts(part=key, docs_in=workers)


def _timed_shard(seconds: float) -> ShardCounts:
    """A shard that keeps its worker busy for `seconds` (as real shards do: Python holding the GIL) and says
    which worker process ran it."""
    import os
    import time

    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    return ShardCounts(part=str(os.getpid()))


def test_dask_runner_returns_results_in_call_order_and_surfaces_a_workers_error(tmp_path):
    from distributed import LocalCluster
    from prefect import task

    from flows.stage_runner import run_shards
    from storage.dataset import DatasetWriter
    from tasks.params import RunnerParams

    shard = task(_shard)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        runner = RunnerParams(kind="dask", dask_address=cluster.scheduler_address)
        calls = [{"key": f"k{i}", "workers": i} for i in range(6)]
        with DatasetWriter(tmp_path, "probe", "1", "f" * 64, {}, []) as w:
            results = run_shards(shard, calls, [f"part-{i:05d}" for i in range(6)], w, runner)
        assert [(r.part, r.docs_in) for r in results] == [(c["key"], c["workers"]) for c in calls]
        with DatasetWriter(tmp_path, "probe", "1", "e" * 64, {}, []) as w, \
                pytest.raises(ShardInputError, match=r"/data/bad\.parquet: cannot read"):
            run_shards(shard, [{"key": "bad", "workers": 1}], ["part-00000"], w, runner)
        # parts of unequal size: while one worker holds the long part the other takes the short ones (at most one
        # waits behind it: the scheduler may give a worker one task ahead of the one it runs)
        calls = [{"seconds": 2.0}] + [{"seconds": 0.25}] * 6
        with DatasetWriter(tmp_path, "probe", "1", "d" * 64, {}, []) as w:
            results = run_shards(task(_timed_shard), calls, [f"part-{i:05d}" for i in range(7)], w, runner)
        long_worker = results[0].part
        assert sum(r.part == long_worker for r in results[1:]) <= 1
