"""The nightly refresh: new files in the input folders are picked up, only they are parsed, cleaned and tagged
(earlier shards are reused), new documents are deduplicated against the existing corpus, and the result is
byte-identical to building everything from scratch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from storage.dataset import read_manifest
from storage.parquet import iter_rows, parquet_files
from storage.runs import read_run_pointer
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

BLOG = ROOT / "examples" / "text" / "blog_posts.jsonl"
CHATS = ROOT / "examples" / "whatsapp"


def _cfg(tmp_path: Path, name: str, inbox: Path) -> Path:
    cfg = {
        "name": name,
        "data_root": str(tmp_path / name),
        "ingest": {"inputs": [{"path": str(inbox / "whatsapp"), "kind": "whatsapp"},
                              {"path": str(inbox / "web" / "*.jsonl"), "kind": "jsonl"}]},
        "quality": {"enabled": False},  # the example blog posts are short; this test is about reuse
    }
    p = tmp_path / f"{name}.yaml"
    p.write_text(json.dumps(cfg))
    return p


def _inbox(root: Path, chats: list[str], web: dict[str, list[dict]]) -> Path:
    (root / "whatsapp").mkdir(parents=True, exist_ok=True)
    (root / "web").mkdir(parents=True, exist_ok=True)
    for name in chats:
        shutil.copy(CHATS / name, root / "whatsapp" / name)
    for name, rows in web.items():
        (root / "web" / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def _shards(dataset: str) -> dict[str, str | None]:
    """shard name → the dataset it was reused from (None: computed in this run)."""
    return {s["name"]: s.get("reused_from") for s in read_manifest(dataset).stats.get("shards", [])}


def _files(data_root: Path, name: str, stages: list[str]) -> dict[str, list[tuple[str, str]]]:
    pointer = read_run_pointer(data_root, name)["stages"]
    return {s: [(f.name, f.sha256) for f in read_manifest(pointer[s]["path"]).files] for s in stages}


def test_nightly_refresh_processes_only_new_files_and_dedups_them_against_the_corpus(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow

    posts = [json.loads(line) for line in BLOG.read_text(encoding="utf-8").splitlines()]
    inbox = _inbox(tmp_path / "inbox", ["sam_priya_android_en_24h.txt", "coloc_ios_fr_seconds.txt"],
                   {"2025-05.jsonl": posts[:3]})
    cfg = _cfg(tmp_path, "nightly", inbox)
    first = pipeline_flow(config=str(cfg), stop_after="dedup")

    # The next night: one more export, and a crawl file with one page already in the corpus and one new page.
    copied = {**posts[0], "id": "mirror-of-blog-1", "url": "https://mirror.example.net/sourdough"}
    _inbox(inbox, ["sam_yassine_android_us_12h_darija.txt"], {"2025-06.jsonl": [copied, posts[6]]})
    second = pipeline_flow(config=str(cfg), stop_after="dedup")

    assert second["ingest"] != first["ingest"]
    ingest = read_manifest(second["ingest"])
    assert ingest.counts["files_in"] == 5
    reused = _shards(second["ingest"])
    assert sum(v is not None for v in reused.values()) == 3 and sum(v is None for v in reused.values()) == 2
    for stage in ("clean", "langid-tags"):  # downstream, too, only the new files' shards are computed
        pointer = read_run_pointer(tmp_path / "nightly", "nightly")["stages"][stage]["path"]
        shards = _shards(pointer)
        assert sum(v is None for v in shards.values()) == 2, (stage, shards)

    exact = read_manifest(read_run_pointer(tmp_path / "nightly", "nightly")["stages"]["dedup-exact"]["path"])
    rejected = list(iter_rows(parquet_files(exact.path, "rejected")))
    mirror = [r for r in rejected if r["url"] == copied["url"]]
    assert len(mirror) == 1 and mirror[0]["reason"] == "exact_duplicate"
    kept = {r["id"]: r for r in iter_rows(parquet_files(exact.path))}
    assert kept[mirror[0]["duplicate_of"]]["url"] == posts[0]["url"]  # the existing document survives
    assert any(r["url"] == posts[6]["url"] for r in kept.values())  # the new page is in

    # From scratch on the same files: the same bytes in every dataset.
    scratch = pipeline_flow(config=str(_cfg(tmp_path, "scratch", inbox)), stop_after="dedup")
    assert all(v is None for v in _shards(scratch["ingest"]).values())  # another data root: nothing to reuse
    stages = ["ingest", "clean", "langid-tags", "langid", "dedup-exact", "dedup-minhash", "dedup-suffix-array"]
    assert _files(tmp_path / "nightly", "nightly", stages) == _files(tmp_path / "scratch", "scratch", stages)
