"""The worker processes of `runner.kind: process`: one pool for the whole command, and its early start.

This module imports neither Prefect nor the stage flows, so that `chatlike run` can start the workers before it
imports them: the workers start and import the shard code while the command imports Prefect and waits for its
server, instead of in the first stage (measured: a worker takes ~0.8 s to import the shard code here, which the
first stage paid on every run, one process or two). A Dask cluster's workers are told to import it too."""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import threading
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from tasks.params import RunnerParams
from tasks.shard_drivers import share_cores, warm_up, warm_up_dask_worker

log = logging.getLogger(__name__)
# the stages that run shards on the configured runner (the others run one task in the command's process), and the
# modules of their shard functions, which a worker imports when it first runs one of them (tests/flows/test_workers.py
# checks that every shard task of the flows is here)
SHARD_MODULES: dict[str, tuple[str, ...]] = {
    "ingest": ("tasks.ingest",),
    "clean": ("tasks.clean",),
    "langid": ("tasks.langid.stage",),
    "quality": ("tasks.quality.stage",),
    "perplexity": ("tasks.perplexity.stage",),
    "dedup": ("tasks.dedup.exact", "tasks.dedup.minhash", "tasks.dedup.suffix_array", "tasks.dedup.bloom"),
    "sample": ("tasks.sample",),
    "encode": ("tasks.encode",),
}

_POOL: tuple[int, ProcessPoolExecutor] | None = None


def process_pool(workers: int) -> ProcessPoolExecutor:
    """The worker processes of `runner.kind: process`: one pool for the whole command, started by the first stage
    that needs it (or by `start_workers`) and kept until the command exits. Starting workers (spawned: the parent
    runs threads) and importing the stage code in them costs seconds, which a pool per stage paid on every stage,
    and on each of the three to four steps of a dedup stage (measured: `sample` of 7,481 documents took 9.4 s with
    its own pool, 0.4 s of it work). A pool broken by a killed worker is replaced on the next call."""
    global _POOL
    if _POOL is not None and (_POOL[0] != workers or getattr(_POOL[1], "_broken", False)):
        _POOL[1].shutdown(wait=False, cancel_futures=True)
        _POOL = None
    if _POOL is None:
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=share_cores,  # in tasks: a worker never imports Prefect (2 s, 60 MB each)
            initargs=(workers,),
        )
        atexit.register(pool.shutdown, wait=True, cancel_futures=True)
        _POOL = (workers, pool)
    return _POOL[1]


def pool_workers(runner: RunnerParams) -> int:
    return runner.workers or os.cpu_count() or 1


def start_workers(runner: RunnerParams, stages: Sequence[str]) -> bool:
    """When a stage among `stages` runs shards, get the runner's workers ready now and return at once (True).
    `runner.kind: process`: start every worker of the pool, each importing the shard code of those stages
    (`SHARD_MODULES`). `dask`: in a background thread, import the Dask client here and have every worker of the
    cluster import it (`Client.run`); a cluster that cannot be reached is left for the first stage to report.
    Nothing for threads."""
    modules = tuple(m for stage in stages for m in SHARD_MODULES.get(stage, ()))
    if not modules:
        return False
    if runner.kind == "process":
        workers = pool_workers(runner)
        pool = process_pool(workers)
        for _ in range(workers):  # a pool starts a worker per task submitted while none is idle
            pool.submit(warm_up, modules)
        return True
    if runner.kind == "dask":
        threading.Thread(target=_warm_dask_workers, args=(str(runner.dask_address), modules), daemon=True,
                         name="chatlike-dask-warm-up").start()
        return True
    return False


def _warm_dask_workers(address: str, modules: tuple[str, ...]) -> None:
    """Every worker of the cluster imports the shard code and takes its share of its machine's cores for
    HuggingFace tokenizers' thread pool, as a process worker does (`warm_up_dask_worker`)."""
    try:
        from distributed import Client

        with Client(address, set_as_default=False, timeout=30) as client:
            addresses = list(client.scheduler_info()["workers"])
            per_host = Counter(_host(address) for address in addresses)
            client.run(warm_up_dask_worker, modules, {address: per_host[_host(address)] for address in addresses})
    except Exception:  # noqa: BLE001 - only a head start: the stage connects again and reports what is wrong
        log.debug("could not start the Dask workers early at %s", address, exc_info=True)


def _host(address: str) -> str:
    """A Dask worker's machine, from its address ("tcp://10.0.0.5:40123" → "tcp://10.0.0.5")."""
    return address.rsplit(":", 1)[0]
