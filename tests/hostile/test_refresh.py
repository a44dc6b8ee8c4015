"""The nightly refresh under faults: a new export lands in the inbox while a run is in flight, and the next run is
SIGKILLed twice before it finishes. Nothing is half-published, the file that arrived late is neither lost nor
half-read, and the refreshed corpus is byte-identical to building everything from scratch."""

from __future__ import annotations

import json
import os
import shutil
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

pytestmark = pytest.mark.slow

BLOG = ROOT / "examples" / "text" / "blog_posts.jsonl"
CHATS = ROOT / "examples" / "whatsapp"
STAGES = ["ingest", "clean", "langid-tags", "langid", "dedup-exact", "dedup-minhash", "dedup-suffix-array"]

DRIVER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from flows.pipeline import pipeline_flow
    pipeline_flow(config=sys.argv[1], stop_after="dedup")
    """
)


def _cfg(tmp_path: Path, name: str, inbox: Path) -> Path:
    cfg = {
        "name": name,
        "data_root": str(tmp_path / name),
        "ingest": {"inputs": [{"path": str(inbox / "whatsapp"), "kind": "whatsapp"},
                              {"path": str(inbox / "web" / "*.jsonl"), "kind": "jsonl"}]},
        "quality": {"enabled": False},  # the example blog posts are short; this test is about the refresh
    }
    p = tmp_path / f"{name}.yaml"
    p.write_text(json.dumps(cfg))
    return p


def _drop(inbox: Path, chats: list[str], web: dict[str, list[dict]]) -> None:
    """Deliver exports the way a sync tool does: written beside under a hidden name, then renamed into place."""
    for sub in ("whatsapp", "web"):
        (inbox / sub).mkdir(parents=True, exist_ok=True)
    for name in chats:
        shutil.copy(CHATS / name, inbox / "whatsapp" / f".{name}.part")
        os.replace(inbox / "whatsapp" / f".{name}.part", inbox / "whatsapp" / name)
    for name, rows in web.items():
        (inbox / "web" / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _files(data_root: Path, name: str) -> dict[str, list[tuple[str, str]]]:
    pointer = read_run_pointer(data_root, name)["stages"]
    return {s: [(f.name, f.sha256) for f in read_manifest(pointer[s]["path"]).files] for s in STAGES}


def _wait_for_temp(proc: subprocess.Popen, data: Path, stage: str, timeout: float = 180) -> bool:
    """Poll until `stage` has a temp dataset (it is working) or the run exits; True when caught in flight."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if list((data / stage).glob(".*.tmp")):
            return True
        time.sleep(0.01)
    return False


def test_refresh_survives_a_late_export_and_kills_and_matches_a_scratch_build(tmp_path, prefect_harness):
    from prefect.settings import PREFECT_API_URL

    posts = [json.loads(line) for line in BLOG.read_text(encoding="utf-8").splitlines()]
    inbox = tmp_path / "inbox"
    _drop(inbox, ["sam_priya_android_en_24h.txt", "coloc_ios_fr_seconds.txt"], {"2025-05.jsonl": posts[:3]})
    cfg = _cfg(tmp_path, "nightly", inbox)
    data = tmp_path / "nightly"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(root=str(ROOT)))
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PREFECT_LOGGING_LEVEL": "ERROR"}

    def start() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(script), str(cfg)], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    # Night 1: the next export arrives while ingest is working. This run read the files it planned, no more.
    run = start()
    assert _wait_for_temp(run, data, "ingest"), "the first run ended before ingest was caught in flight"
    copied = {**posts[0], "id": "mirror-of-blog-1", "url": "https://mirror.example.net/sourdough"}
    _drop(inbox, ["sam_yassine_android_us_12h_darija.txt"], {"2025-06.jsonl": [copied, posts[6]]})
    _, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    first = read_manifest(read_run_pointer(data, "nightly")["stages"]["ingest"]["path"])
    assert first.counts["files_in"] == 3

    # Night 2 picks the late files up, but is SIGKILLed twice: while ingesting, and while deduplicating.
    killed = 0
    for stage in ("ingest", "dedup-exact"):
        run = start()
        if _wait_for_temp(run, data, stage):
            run.send_signal(signal.SIGKILL)
        run.communicate(timeout=300)
        killed += run.returncode == -signal.SIGKILL
        for d in list_datasets(data):  # whatever was interrupted, no visible half-dataset exists
            assert (d / "manifest.json").is_file()
    assert killed >= 1, "no run was caught in flight"
    run = start()
    _, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    assert list_temp_dirs(data) == []

    ingest = read_manifest(read_run_pointer(data, "nightly")["stages"]["ingest"]["path"])
    assert ingest.counts["files_in"] == 5
    shards = {s["name"]: s.get("reused_from") for s in ingest.stats["shards"]}
    assert sum(v is not None for v in shards.values()) >= 3  # the first night's files were not read again

    # The late crawl page that copies a known document is caught as a duplicate of it, not lost or kept twice.
    from storage.parquet import iter_rows, parquet_files

    exact = read_manifest(read_run_pointer(data, "nightly")["stages"]["dedup-exact"]["path"])
    mirror = [r for r in iter_rows(parquet_files(exact.path, "rejected")) if r["url"] == copied["url"]]
    assert len(mirror) == 1 and mirror[0]["reason"] == "exact_duplicate"

    # From scratch on the same inbox: the same bytes in every dataset.
    from flows.pipeline import pipeline_flow

    pipeline_flow(config=str(_cfg(tmp_path, "scratch", inbox)), stop_after="dedup")
    assert _files(data, "nightly") == _files(tmp_path / "scratch", "scratch")
