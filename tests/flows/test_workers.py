"""The process runner's workers started at a run's start (flows/workers.py), before any stage needs them."""

from __future__ import annotations

import os

from flows import workers
from tasks.params import RunnerParams

# asked with a builtin, so that the question itself imports nothing in the worker
PROBE = ("tasks.shard_drivers", "tasks.ingest", "tasks.encode", "tasks.dedup.minhash", "prefect")
IMPORTED = f"[m for m in {PROBE!r} if m in __import__('sys').modules]"


def test_a_process_run_starts_every_worker_with_the_shard_code_imported_before_any_stage(monkeypatch):
    monkeypatch.setattr(workers, "_POOL", None)
    assert workers.start_workers(RunnerParams(kind="process", workers=2), ["ingest", "clean", "encode"])
    pool = workers.process_pool(2)
    try:
        # both workers were started by the warm-up alone
        assert len(pool._processes) == 2
        pids = {p.pid for p in pool._processes.values()}
        answers = [pool.submit(eval, IMPORTED).result() for _ in range(6)]
        # the shard code of the run's stages, not of the others (MinHash), and never Prefect
        assert answers == [["tasks.shard_drivers", "tasks.ingest", "tasks.encode"]] * 6
        assert {p.pid for p in pool._processes.values()} == pids
    finally:
        pool.shutdown(wait=True)
        monkeypatch.setattr(workers, "_POOL", None)


def test_nothing_is_started_for_other_runners_or_runs_without_sharded_stages(monkeypatch):
    monkeypatch.setattr(workers, "_POOL", None)
    assert not workers.start_workers(RunnerParams(kind="thread"), ["ingest"])
    assert not workers.start_workers(RunnerParams(kind="process", workers=2), ["pretrain", "sft", "lora"])
    assert workers._POOL is None


def test_a_dask_run_has_the_clusters_workers_import_the_shard_code_in_the_background():
    import time

    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        probe = "'tasks.clean' in __import__('sys').modules"
        assert set(client.run(eval, probe).values()) == {False}
        assert workers.start_workers(RunnerParams(kind="dask", dask_address=cluster.scheduler_address), ["clean"])
        deadline = time.monotonic() + 60
        while set(client.run(eval, probe).values()) != {True} and time.monotonic() < deadline:
            time.sleep(0.1)
        assert set(client.run(eval, probe).values()) == {True}
        # two workers on this machine: each takes half its cores for HF tokenizers' threads (unless set already)
        threads = "__import__('os').environ.get('RAYON_NUM_THREADS')"
        expected = os.environ.get("RAYON_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // 2)))
        assert set(client.run(eval, threads).values()) == {expected}



def test_every_shard_task_of_the_flows_has_its_module_warmed_up():
    import importlib

    from prefect import Task

    warmed = {m for modules in workers.SHARD_MODULES.values() for m in modules}
    shard_modules = set()
    for name in ("ingest", "clean", "filters", "perplexity", "dedup", "tokens"):
        flows_module = importlib.import_module(f"flows.{name}")
        shard_modules |= {obj.fn.__module__ for obj in vars(flows_module).values()
                          if isinstance(obj, Task) and obj.fn.__module__.startswith("tasks.")}
    assert len(shard_modules) >= 10
    assert shard_modules <= warmed, shard_modules - warmed
