"""Fault tolerance: a stage process killed at random points (and inside publish) leaves no dataset; the rerun
produces byte-identical outputs and no leftover temp data. Disk full on publish leaves no partial dataset."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from storage.dataset import list_datasets, list_temp_dirs, read_manifest
from storage.runs import read_run_pointer
from tests.conftest import ROOT

DRIVER = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    stage, config, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode != "none":
        real_replace = os.replace
        def replace(a, b):
            # "manifest": die as publish renames the manifest into the temp dir; "rename": as the temp dir
            # itself is renamed into place
            if (mode == "manifest" and str(b).endswith("manifest.json")) or (mode == "rename" and str(a).endswith(".tmp")):
                os.kill(os.getpid(), signal.SIGKILL)
            return real_replace(a, b)
        os.replace = replace
    from flows.pipeline import pipeline_flow
    pipeline_flow(config=config, only=[stage])
    """
)

STAGES = ["ingest", "clean", "langid", "quality", "perplexity", "dedup", "sample", "tokenizer", "encode"]


def _cfg(tmp_path: Path, name: str) -> Path:
    cfg = {
        "name": name,
        "data_root": str(tmp_path / name),
        "ingest": {"inputs": [{"path": str(ROOT / "examples" / "whatsapp"), "kind": "whatsapp"},
                              {"path": str(ROOT / "examples" / "commoncrawl" / "*.wet.gz"), "kind": "wet"},
                              {"path": str(ROOT / "examples" / "text" / "*.jsonl")}]},
        "kenlm_train": {"references": {"en": [str(ROOT / "examples" / "reference" / "en.txt")]}},
        "perplexity": {"tag": {"default_lang": "en"}, "filter": {"default_lang": "en"}},
        "sample": {"min_bytes": 100_000},
        "tokenizer": {"vocab_size": 400, "min_frequency": 1},
        "encode": {"val_fraction": 0.2},
    }
    p = tmp_path / f"{name}.yaml"
    p.write_text(json.dumps(cfg))
    return p


def _files(data_root: Path, name: str) -> dict[str, list[tuple[str, str]]]:
    out = {}
    for stage, entry in read_run_pointer(data_root, name)["stages"].items():
        m = read_manifest(entry["path"])
        out[stage] = [(f.name, f.sha256) for f in m.files]
    return out


@pytest.mark.slow
def test_killed_stages_rerun_to_identical_bytes(tmp_path, prefect_harness):
    from prefect.settings import PREFECT_API_URL

    from flows.pipeline import pipeline_flow

    reference = pipeline_flow(config=str(_cfg(tmp_path, "ref")), stop_after="encode")
    assert set(STAGES) <= set(reference)
    cfg = _cfg(tmp_path, "run")
    data = tmp_path / "run"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(root=str(ROOT)))
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PREFECT_LOGGING_LEVEL": "ERROR"}
    rng = random.Random(1234)
    killed = 0
    for stage in STAGES:
        # kills inside its publish (manifest write, final rename), then at a random moment while it works: the
        # publish kills first, since a random kill that lands after a fast stage published leaves nothing to kill
        for mode in ("manifest", "rename", "none"):
            proc = subprocess.Popen([sys.executable, str(script), stage, str(cfg), mode], cwd=ROOT,
                                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if mode == "none":
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and proc.poll() is None:
                    if list(data.glob(f"{stage}*/.*.tmp")) or list(data.glob("*/.*.tmp")):
                        time.sleep(rng.uniform(0, 0.4))
                        break
                    time.sleep(0.005)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
            code = proc.wait(timeout=120)
            killed += code == -signal.SIGKILL
            # whatever was interrupted, no visible half-dataset of this stage exists
            for d in list_datasets(data):
                assert (d / "manifest.json").is_file()
        r = subprocess.run([sys.executable, str(script), stage, str(cfg), "none"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert list_temp_dirs(data) == [], f"leftover temp data after rerunning {stage}"
    assert killed >= 2 * len(STAGES)  # at least the two publish kills of every stage really happened
    got, want = _files(data, "run"), _files(tmp_path / "ref", "ref")
    for stage in STAGES:
        assert got[stage] == want[stage], stage


def test_disk_full_on_publish_leaves_no_dataset_and_a_clear_error(tmp_path, monkeypatch):
    from storage.dataset import DatasetWriter
    from storage.parquet import ParquetShardWriter
    from storage.schemas import DOCUMENT_SCHEMA

    rows = [{"id": str(i), "text": "x" * 100, "source": "t", "url": None, "timestamp": None, "meta": None} for i in range(10)]

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    with DatasetWriter(tmp_path, "clean", "1", "c" * 64, {}, []) as w:
        with ParquetShardWriter(w.part_path(0), DOCUMENT_SCHEMA) as pw:
            pw.write_rows(rows)
        monkeypatch.setattr("storage.dataset.os.fsync", full)
        with pytest.raises(OSError, match=r"manifest\.json: cannot write it: the disk is full"):
            w.publish({"in": 10, "out": 10})
    assert list_datasets(tmp_path) == []
    assert not (tmp_path / "clean" / ("c" * 16)).exists()
    monkeypatch.undo()
    with DatasetWriter(tmp_path, "clean", "1", "c" * 64, {}, []) as w:  # space is back: the rerun publishes
        assert w.has_part(w.part_path(0))  # the finished part survived and is reused
        path = w.publish({"in": 10, "out": 10})
    assert read_manifest(path).rows == 10 and list_temp_dirs(tmp_path) == []
