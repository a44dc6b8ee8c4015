"""storage/: fingerprints, atomic publish, resume, byte-identical reruns, Parquet round-trip, pointers, lineage."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from datetime import datetime, timezone

import pyarrow.parquet as pq
import pytest

from storage.dataset import (
    DatasetError,
    DatasetWriter,
    InputRef,
    find_dataset,
    is_dataset,
    list_datasets,
    list_temp_dirs,
    read_manifest,
)
from storage.fingerprint import canonical_json, fingerprint, hash_file
from storage.lineage import lineage, raw_files
from storage.parquet import ParquetShardWriter, iter_rows, parquet_files
from storage.runs import all_pointed_datasets, read_run_pointer, record_stage
from storage.schemas import DOCUMENT_SCHEMA, with_reason

ROWS = [
    {
        "id": f"doc{i}",
        "text": f"Document number {i} — café ☕ \n second line",
        "source": "text",
        "url": None if i % 2 else f"https://example.org/{i}",
        "timestamp": datetime(2025, 1, 1, 12, i % 60, tzinfo=timezone.utc) if i % 3 else None,
        "meta": '{"k": 1}',
    }
    for i in range(100)
]


def test_fingerprint_is_stable_under_key_order_and_sensitive_to_everything():
    base = fingerprint("clean", "1", {"a": 1, "b": [1, 2], "c": {"x": True}}, ["in1"], ["raw1"])
    assert base == fingerprint("clean", "1", {"c": {"x": True}, "b": [1, 2], "a": 1}, ["in1"], ["raw1"])
    assert len(base) == 64
    variants = [
        fingerprint("dedup", "1", {"a": 1, "b": [1, 2], "c": {"x": True}}, ["in1"], ["raw1"]),
        fingerprint("clean", "2", {"a": 1, "b": [1, 2], "c": {"x": True}}, ["in1"], ["raw1"]),
        fingerprint("clean", "1", {"a": 2, "b": [1, 2], "c": {"x": True}}, ["in1"], ["raw1"]),
        fingerprint("clean", "1", {"a": 1, "b": [2, 1], "c": {"x": True}}, ["in1"], ["raw1"]),
        fingerprint("clean", "1", {"a": 1, "b": [1, 2], "c": {"x": False}}, ["in1"], ["raw1"]),
        fingerprint("clean", "1", {"a": 1, "b": [1, 2], "c": {"x": True}}, ["in2"], ["raw1"]),
        fingerprint("clean", "1", {"a": 1, "b": [1, 2], "c": {"x": True}}, ["in1"], ["raw2"]),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_canonical_json_rejects_values_it_cannot_fingerprint():
    with pytest.raises(TypeError, match="cannot fingerprint"):
        canonical_json({"x": object()})


def _write_dataset(root, rows=ROWS, parts=3, fp="f" * 64):
    with DatasetWriter(root, "clean", "1", fp, {"p": 1}, [InputRef("raw", "abc", "/x/in.txt")]) as w:
        for i in range(parts):
            with ParquetShardWriter(w.part_path(i), DOCUMENT_SCHEMA) as pw:
                pw.write_rows(rows[i::parts])
        with ParquetShardWriter(w.rejected_path(0), with_reason(DOCUMENT_SCHEMA)) as rej:
            rej.write_row({**rows[0], "reason": "too_short"})
        return w.publish({"in": len(rows) + 1, "out": len(rows), "dropped_too_short": 1}, {"note": "x"})


def test_written_rows_read_back_identically(tmp_path):
    path = _write_dataset(tmp_path)
    assert is_dataset(path)
    got = sorted(iter_rows(parquet_files(path)), key=lambda r: int(r["id"][3:]))
    assert got == ROWS
    rejected = list(iter_rows(parquet_files(path, "rejected")))
    assert [r["reason"] for r in rejected] == ["too_short"]
    m = read_manifest(path)
    assert m.rows == 100  # rejected rows are not counted as kept
    assert m.counts["dropped_too_short"] == 1
    names = [f.name for f in m.files]
    assert names == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet", "rejected/part-00000.parquet"]
    for f in m.files:
        assert hash_file(path / f.name) == f.sha256
    # zstd, and readable by plain pyarrow without our library
    meta = pq.ParquetFile(path / "part-00000.parquet").metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert pq.read_table(path / "part-00001.parquet").schema.equals(DOCUMENT_SCHEMA)


def test_large_shard_streams_in_row_groups(tmp_path):
    rows = ({"id": str(i), "text": "x" * 50, "source": "s", "url": None, "timestamp": None, "meta": None} for i in range(50_000))
    with ParquetShardWriter(tmp_path / "part-00000.parquet", DOCUMENT_SCHEMA, row_group_rows=8192) as w:
        w.write_rows(rows)
    pf = pq.ParquetFile(tmp_path / "part-00000.parquet")
    assert pf.metadata.num_rows == 50_000
    assert pf.metadata.num_row_groups == 7  # bounded memory: never more than one group buffered


def test_large_documents_cut_row_groups_by_size_not_only_by_count(tmp_path):
    page = "word " * 20_000  # 100,000 characters: 8,192 such pages would be 800 MB in one row group
    rows = ({"id": str(i), "text": page, "source": "s", "url": None, "timestamp": None, "meta": None} for i in range(30))
    with ParquetShardWriter(tmp_path / "part-00000.parquet", DOCUMENT_SCHEMA, row_group_chars=1_000_000) as w:
        w.write_rows(rows)
    pf = pq.ParquetFile(tmp_path / "part-00000.parquet")
    assert pf.metadata.num_rows == 30
    assert [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)] == [10, 10, 10]


def test_rerun_produces_byte_identical_files(tmp_path):
    a = _write_dataset(tmp_path / "a")
    b = _write_dataset(tmp_path / "b")
    for f in read_manifest(a).files:
        assert (a / f.name).read_bytes() == (b / f.name).read_bytes(), f.name


KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from storage.dataset import DatasetWriter, InputRef
    from storage.parquet import ParquetShardWriter
    from storage.schemas import DOCUMENT_SCHEMA
    from tests.storage.test_dataset import ROWS
    kill_at = sys.argv[1]
    with DatasetWriter({data!r}, "clean", "1", "f" * 64, {{"p": 1}}, [InputRef("raw", "abc", "/x/in.txt")]) as w:
        for i in range(3):
            pw = ParquetShardWriter(w.part_path(i), DOCUMENT_SCHEMA)
            pw.write_rows(ROWS[i::3][:10])
            if kill_at == f"mid-part-{{i}}":
                pw._flush()
                os.kill(os.getpid(), signal.SIGKILL)
            pw.write_rows(ROWS[i::3][10:])
            pw.close()
            if kill_at == f"after-part-{{i}}":
                os.kill(os.getpid(), signal.SIGKILL)
        if kill_at == "before-publish":
            os.kill(os.getpid(), signal.SIGKILL)
        w.publish({{"in": 100, "out": 100}})
    """
)


@pytest.mark.parametrize("kill_at", ["mid-part-0", "after-part-0", "mid-part-2", "before-publish"])
def test_killed_writer_leaves_no_dataset_and_rerun_is_identical(tmp_path, kill_at):
    from tests.conftest import ROOT

    data = tmp_path / "data"
    script = tmp_path / "writer.py"
    script.write_text(KILLED_WRITER.format(root=str(ROOT), data=str(data)))
    proc = subprocess.run([sys.executable, str(script), kill_at], cwd=ROOT)
    assert proc.returncode == -signal.SIGKILL
    assert list_datasets(data) == []
    assert find_dataset(data, "clean", "f" * 64) is None
    assert not any(p.name.endswith(".parquet") for p in (data / "clean").iterdir())  # only the hidden temp dir
    # The rerun resumes in the same temp dir (the lock died with the process) and publishes.
    proc = subprocess.run([sys.executable, str(script), "none"], cwd=ROOT)
    assert proc.returncode == 0
    (published,) = list_datasets(data)
    assert list_temp_dirs(data) == []
    reference = tmp_path / "ref"
    script2 = tmp_path / "ref.py"
    script2.write_text(KILLED_WRITER.format(root=str(ROOT), data=str(reference)))
    assert subprocess.run([sys.executable, str(script2), "none"], cwd=ROOT).returncode == 0
    (ref,) = list_datasets(reference)
    for f in read_manifest(ref).files:
        assert (published / f.name).read_bytes() == (ref / f.name).read_bytes()
    assert not any(p.name.endswith(".partial") for p in published.rglob("*"))


def test_second_writer_of_the_same_dataset_is_refused(tmp_path):
    fp = "a" * 64
    with DatasetWriter(tmp_path, "clean", "1", fp, {}, []):
        with pytest.raises(DatasetError, match="another run is writing"):
            with DatasetWriter(tmp_path, "clean", "1", fp, {}, []):
                pass


def test_exception_inside_writer_publishes_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with DatasetWriter(tmp_path, "clean", "1", "b" * 64, {}, []) as w:
            with ParquetShardWriter(w.part_path(0), DOCUMENT_SCHEMA) as pw:
                pw.write_rows(ROWS[:5])
                raise RuntimeError("disk on fire")
    assert list_datasets(tmp_path) == []
    assert not list((tmp_path / "clean").glob("*/part-00000.parquet"))


def test_forced_publish_replaces_and_plain_publish_keeps_existing(tmp_path):
    first = _write_dataset(tmp_path)
    mtime = (first / "manifest.json").stat().st_mtime_ns
    again = _write_dataset(tmp_path)
    assert again == first and (first / "manifest.json").stat().st_mtime_ns == mtime
    with DatasetWriter(tmp_path, "clean", "1", "f" * 64, {"p": 1}, []) as w:
        with ParquetShardWriter(w.part_path(0), DOCUMENT_SCHEMA) as pw:
            pw.write_rows(ROWS[:1])
        w.publish({"in": 1, "out": 1}, replace=True)
    assert read_manifest(first).rows == 1
    assert not list(tmp_path.glob("clean/.*"))


def test_unreadable_manifest_is_a_clear_error(tmp_path):
    d = tmp_path / "clean" / "x"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text("{not json")
    with pytest.raises(DatasetError, match=r"manifest.json: unreadable manifest"):
        read_manifest(d)
    with pytest.raises(DatasetError, match="not a dataset"):
        read_manifest(tmp_path)


def test_run_pointer_and_lineage_back_to_raw_files(tmp_path):
    raw = tmp_path / "chat.txt"
    raw.write_text("hello")
    with DatasetWriter(tmp_path / "d", "ingest", "1", "1" * 64, {}, [InputRef("raw", hash_file(raw), str(raw))]) as w:
        with ParquetShardWriter(w.part_path(0), DOCUMENT_SCHEMA) as pw:
            pw.write_rows(ROWS[:4])
        ingest = w.publish({"in": 4, "out": 4})
    with DatasetWriter(tmp_path / "d", "clean", "1", "2" * 64, {}, [InputRef("ingest", "1" * 64, str(ingest))]) as w:
        with ParquetShardWriter(w.part_path(0), DOCUMENT_SCHEMA) as pw:
            pw.write_rows(ROWS[:3])
        clean = w.publish({"in": 4, "out": 3})
    record_stage(tmp_path / "d", "demo", "ingest", ingest)
    record_stage(tmp_path / "d", "demo", "clean", clean)
    pointer = read_run_pointer(tmp_path / "d", "demo")
    assert pointer["stages"]["clean"]["rows"] == 3
    assert pointer["stages"]["ingest"]["path"] == str(ingest)
    tree = lineage(clean)
    assert tree.stage == "clean" and tree.children[0].stage == "ingest"
    assert tree.children[0].children[0].path == str(raw)
    assert raw_files(clean) == [str(raw)]
    assert all_pointed_datasets(tmp_path / "d") == {ingest.resolve(), clean.resolve()}


# ------------------------------------------------------------------------------------ shard records and reuse


def _write_part(path, rows):
    with ParquetShardWriter(path, DOCUMENT_SCHEMA) as w:
        w.write_rows(rows)


def test_a_resumed_writer_finds_the_shards_an_interrupted_run_finished(tmp_path):
    with DatasetWriter(tmp_path, "clean", "1", "a" * 64, {}, []) as w:
        _write_part(w.part_path(0), ROWS[:3])
        w.record_shard("part-00000", {"docs_in": 3}, key="k0", files=[w.part_path(0)])
    # killed before publish: a new writer of the same dataset resumes
    with DatasetWriter(tmp_path, "clean", "1", "a" * 64, {}, []) as w:
        assert w.finished_shard("part-00000") == {"docs_in": 3}
        assert w.finished_shard("part-00001") is None
        path = w.publish({"in": 3, "out": 3})
    shards = read_manifest(path).stats["shards"]
    assert shards == [{"name": "part-00000", "result": {"docs_in": 3}, "key": "k0", "files": ["part-00000.parquet"]}]


def test_a_later_dataset_reuses_a_shard_computed_from_the_same_content(tmp_path):
    with DatasetWriter(tmp_path, "clean", "1", "a" * 64, {}, []) as w:
        _write_part(w.part_path(0), ROWS[:3])
        _write_part(w.rejected_path(0), ROWS[3:4])
        w.record_shard("part-00000", {"docs_in": 4}, key="same-content",
                       files=[w.part_path(0), w.rejected_path(0)])
        first = w.publish({"in": 4})
    with DatasetWriter(tmp_path, "clean", "1", "b" * 64, {}, []) as w:
        assert w.reuse_shard("part-00002", "other-content", 2) is None
        assert w.reuse_shard("part-00002", "same-content", 2) == {"docs_in": 4}
        assert w.finished_shard("part-00002") == {"docs_in": 4}
        second = w.publish({"in": 4})
    assert (second / "part-00002.parquet").read_bytes() == (first / "part-00000.parquet").read_bytes()
    assert (second / "rejected" / "part-00002.parquet").read_bytes() == (first / "rejected" / "part-00000.parquet").read_bytes()
    (entry,) = read_manifest(second).stats["shards"]
    assert entry["reused_from"] == "a" * 16 and entry["files"] == ["part-00002.parquet", "rejected/part-00002.parquet"]


def test_a_shard_whose_files_are_gone_is_not_reused(tmp_path):
    with DatasetWriter(tmp_path, "clean", "1", "a" * 64, {}, []) as w:
        _write_part(w.part_path(0), ROWS[:3])
        w.record_shard("part-00000", {"docs_in": 3}, key="k", files=[w.part_path(0)])
        first = w.publish({"in": 3})
    (first / "part-00000.parquet").unlink()
    with DatasetWriter(tmp_path, "clean", "1", "b" * 64, {}, []) as w:
        assert w.reuse_shard("part-00000", "k", 0) is None
        assert not w.part_path(0).exists()


def test_a_published_manifest_never_names_the_temporary_folder(tmp_path):
    with DatasetWriter(tmp_path, "kenlm-train", "1", "c" * 64, {}, []) as w:
        model = w.tmp / "en" / "model.binary"
        model.parent.mkdir()
        model.write_bytes(b"x")
        w.record_shard("part-00000", {"part": str(w.part_path(0))}, key="k")
        path = w.publish({"in": 1}, {"models": {"en": str(model)}, "note": [f"read {model}"]})
    text = (path / "manifest.json").read_text(encoding="utf-8")
    assert ".tmp" not in text
    stats = read_manifest(path).stats
    assert stats["models"]["en"] == str(path / "en" / "model.binary")
    assert stats["shards"][0]["result"]["part"] == str(path / "part-00000.parquet")
