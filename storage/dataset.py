"""Datasets on disk: `<data_root>/<stage>/<fingerprint16>/` with part files and a manifest (DESIGN §3).

A dataset exists only once its `manifest.json` is there. `DatasetWriter` fills a hidden sibling directory
`.<fingerprint16>.tmp` and renames it into place, which is atomic on one filesystem. The temp directory's
name depends only on the fingerprint, so a run killed mid-way is resumed: shard files that were completed
(each is itself renamed into place) are kept, half-written ones are never under their final name.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import re
import shutil
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from storage.atomic import atomic_path, write_text_atomic
from storage.fingerprint import FP_DIR_LEN, canonical_json, hash_file

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
REJECTED = "rejected"
SHARDS = ".shards"  # the writer's record of finished shards, until publish
_SHARD_INDEX = re.compile(r"\d{5}")


class DatasetError(ValueError):
    """A dataset is missing, incomplete, locked by another run, or its manifest is unreadable."""


@dataclass(frozen=True)
class InputRef:
    """One input of a dataset: another dataset (stage, fingerprint, path) or a raw file (stage 'raw')."""

    stage: str
    fingerprint: str
    path: str


@dataclass
class FileEntry:
    name: str
    bytes: int
    sha256: str
    rows: int | None = None
    tokens: int | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Manifest:
    stage: str
    stage_version: str
    fingerprint: str
    params: dict
    inputs: list[InputRef]
    files: list[FileEntry]
    counts: dict
    stats: dict
    started_at: str
    finished_at: str
    seconds: float
    host: str
    code_version: str
    schema_version: int = SCHEMA_VERSION
    path: str = field(default="", compare=False)

    @property
    def rows(self) -> int:
        """Rows of the kept data: the top-level parts (side datasets such as rejected/ or messages/ excluded)."""
        return sum(f.rows or 0 for f in self.files if "/" not in f.name)

    def to_json(self) -> str:
        data = {
            "schema_version": self.schema_version,
            "stage": self.stage,
            "stage_version": self.stage_version,
            "fingerprint": self.fingerprint,
            "params": self.params,
            "inputs": [asdict(i) for i in self.inputs],
            "files": [f.as_dict() for f in self.files],
            "counts": self.counts,
            "stats": self.stats,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "seconds": self.seconds,
            "host": self.host,
            "code_version": self.code_version,
        }
        return json.dumps(json.loads(canonical_json(data)), indent=2, ensure_ascii=False) + "\n"


def dataset_dir(data_root: str | os.PathLike, stage: str, fp: str) -> Path:
    return Path(data_root) / stage / fp[:FP_DIR_LEN]


def is_dataset(path: str | os.PathLike) -> bool:
    return (Path(path) / MANIFEST).is_file()


def find_dataset(data_root: str | os.PathLike, stage: str, fp: str) -> Path | None:
    """The complete dataset for this fingerprint, or None."""
    path = dataset_dir(data_root, stage, fp)
    return path if is_dataset(path) else None


def read_manifest(path: str | os.PathLike) -> Manifest:
    """Load `manifest.json` of a dataset directory (or the manifest file itself)."""
    p = Path(path)
    mf = p if p.name == MANIFEST else p / MANIFEST
    if not mf.is_file():
        raise DatasetError(f"{p}: not a dataset (no {MANIFEST}; an interrupted run leaves none)")
    try:
        data = json.loads(mf.read_text(encoding="utf-8"))
        return Manifest(
            stage=data["stage"],
            stage_version=data["stage_version"],
            fingerprint=data["fingerprint"],
            params=data.get("params", {}),
            inputs=[InputRef(**i) for i in data.get("inputs", [])],
            files=[FileEntry(**f) for f in data.get("files", [])],
            counts=data.get("counts", {}),
            stats=data.get("stats", {}),
            started_at=data.get("started_at", ""),
            finished_at=data.get("finished_at", ""),
            seconds=data.get("seconds", 0.0),
            host=data.get("host", ""),
            code_version=data.get("code_version", ""),
            schema_version=data.get("schema_version", SCHEMA_VERSION),
            path=str(mf.parent),
        )
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise DatasetError(f"{mf}: unreadable manifest ({e})") from e


def code_version() -> str:
    """The installed chatlike version plus the git commit when running from a checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("chatlike")
    except PackageNotFoundError:
        v = "unknown"
    head = Path(__file__).resolve().parent.parent / ".git" / "HEAD"
    try:
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            ref_file = head.parent / ref[5:]
            ref = ref_file.read_text().strip() if ref_file.exists() else ""
        if ref:
            v += f"+g{ref[:10]}"
    except OSError:
        pass
    return v


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class DatasetWriter:
    """Builds one dataset in a temp directory and publishes it atomically.

        with DatasetWriter(root, "clean", "1", fp, params, inputs) as w:
            ...write files under w.tmp (e.g. w.part_path(i))...
            path = w.publish(counts={...}, stats={...})

    Leaving the block without `publish` (an exception) keeps completed shard files in the temp directory for
    a resumed run but publishes nothing. Two runs cannot write the same dataset at once (a file lock).
    """

    def __init__(
        self,
        data_root: str | os.PathLike,
        stage: str,
        stage_version: str,
        fp: str,
        params: Mapping,
        inputs: list[InputRef],
    ):
        self.data_root = Path(data_root)
        self.stage = stage
        self.stage_version = stage_version
        self.fingerprint = fp
        self.params = dict(params)
        self.inputs = list(inputs)
        self.final = dataset_dir(data_root, stage, fp)
        self.tmp = self.final.parent / f".{fp[:FP_DIR_LEN]}.tmp"
        self._lock_fd: int | None = None
        self._earlier: dict[str, tuple[Path, dict]] | None = None
        self._started = _now()
        self._t0 = time.monotonic()
        self.published: Path | None = None

    def __enter__(self) -> DatasetWriter:
        self.tmp.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.tmp / ".lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise DatasetError(f"{self.final}: another run is writing this dataset right now") from None
        for stale in self.tmp.rglob("*.partial"):  # left by a killed writer; never reused
            stale.unlink(missing_ok=True)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def part_path(self, index: int, subdir: str = "", ext: str = "parquet") -> Path:
        folder = self.tmp / subdir if subdir else self.tmp
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"part-{index:05d}.{ext}"

    def rejected_path(self, index: int) -> Path:
        return self.part_path(index, REJECTED)

    def has_part(self, path: Path) -> bool:
        """Whether a shard file was completed by this or an earlier (killed) run of the same dataset."""
        return path.is_file()

    def shard_record(self, name: str) -> Path:
        """Where a shard task's result is kept until publish, so a resumed run can skip finished shards."""
        folder = self.tmp / SHARDS
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{name}.json"

    def finished_shard(self, name: str) -> dict | None:
        """The result a run of this dataset recorded for shard `name` (an interrupted run's too), else None."""
        record = self.tmp / SHARDS / f"{name}.json"
        try:
            entry = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        return entry.get("result") if isinstance(entry, dict) else None

    def record_shard(self, name: str, result: Mapping, key: str | None, files: Sequence[str | os.PathLike] = (),
                     reused_from: str | None = None) -> None:
        """Keep shard `name`'s result, its content key (see `shard_key`) and the files it wrote."""
        entry: dict = {"result": dict(result), "key": key,
                       "files": [Path(f).relative_to(self.tmp).as_posix() for f in files if Path(f).is_file()]}
        if reused_from:
            entry["reused_from"] = reused_from
        write_text_atomic(self.shard_record(name), json.dumps(entry))

    def reuse_shard(self, name: str, key: str | None, index: int,
                    accept: Callable[[dict], bool] = lambda _result: True) -> dict | None:
        """Take shard `name` from an earlier published dataset of this stage that computed a shard from the same
        content `key`: its files are linked in (renumbered as shard `index`) and its result recorded and
        returned. None when no earlier dataset has it, its files are gone, or `accept` refuses its result (a
        result of an older format)."""
        if not key:
            return None
        if self._earlier is None:
            self._earlier = _published_shards(self.data_root, self.stage)
        hit = self._earlier.get(key)
        if hit is None:
            return None
        old_dir, entry = hit
        rels = entry.get("files", [])
        sources = [old_dir / rel for rel in rels]
        result = entry.get("result")
        if not isinstance(result, dict) or not accept(result) or not all(src.is_file() for src in sources):
            return None
        files = [self.tmp / _renumbered(rel, index) for rel in rels]
        for src, dst in zip(sources, files, strict=True):
            _link_or_copy(src, dst)
        self.record_shard(name, entry["result"], key, files, reused_from=old_dir.name)
        return entry["result"]

    def _shard_entries(self) -> list[dict]:
        """The shard records that carry a content key: kept in the manifest so a later dataset of the same stage
        can reuse a shard computed from the same content (name, key, its files, its result)."""
        folder = self.tmp / SHARDS
        entries = []
        for record in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                entry = json.loads(record.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            if isinstance(entry, dict) and entry.get("key"):
                entries.append({"name": record.stem, **entry})
        return entries

    def as_published(self, value: Any) -> Any:
        """`value` (text, or lists and dicts of it) with paths inside the temporary folder named where they will
        be once the dataset is published, so reports and manifests never point into a folder that is gone."""
        if isinstance(value, str):
            return value.replace(str(self.tmp), str(self.final))
        if isinstance(value, Mapping):
            return {k: self.as_published(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.as_published(v) for v in value]
        return value

    def publish(self, counts: Mapping, stats: Mapping | None = None, replace: bool = False) -> Path:
        """Write the manifest and rename the temp directory into place; returns the dataset path.

        With `replace`, an existing dataset of the same fingerprint is swapped out (a forced rerun).
        """
        if self.published:
            return self.published
        files: list[FileEntry] = []
        for f in sorted(self.tmp.rglob("*")):
            rel = f.relative_to(self.tmp).as_posix()
            if not f.is_file() or f.name == MANIFEST or f.name.endswith(".partial"):
                continue
            if any(part.startswith(".") for part in rel.split("/")):
                continue  # bookkeeping of the writer (.lock, .shards/), not part of the dataset
            entry = FileEntry(name=rel, bytes=f.stat().st_size, sha256=hash_file(f))
            if f.suffix == ".parquet":
                from storage.parquet import count_rows

                entry.rows = count_rows(f)
            elif f.suffix == ".bin" and f.with_suffix(".idx").is_file():
                from storage.tokens import count_tokens

                entry.tokens = count_tokens(f)
            files.append(entry)
        stats = self.as_published(dict(stats or {}))
        shards = self._shard_entries()
        if shards:
            stats["shards"] = self.as_published(shards)
        manifest = Manifest(
            stage=self.stage,
            stage_version=self.stage_version,
            fingerprint=self.fingerprint,
            params=self.params,
            inputs=self.inputs,
            files=files,
            counts=dict(counts),
            stats=stats,
            started_at=self._started,
            finished_at=_now(),
            seconds=round(time.monotonic() - self._t0, 3),
            host=socket.gethostname() or platform.node(),
            code_version=code_version(),
        )
        shutil.rmtree(self.tmp / SHARDS, ignore_errors=True)
        write_text_atomic(self.tmp / MANIFEST, manifest.to_json(), durable=True)
        if self.final.exists() and replace:
            old = self.final.parent / f".{self.final.name}.old"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(self.final, old)
            shutil.rmtree(old, ignore_errors=True)
        if self.final.exists():
            # Another run published the same fingerprint first; its content is identical by construction.
            if is_dataset(self.final):
                shutil.rmtree(self.tmp, ignore_errors=True)
                self.published = self.final
                return self.final
            shutil.rmtree(self.final)
        (self.tmp / ".lock").unlink(missing_ok=True)
        os.replace(self.tmp, self.final)
        _fsync_dir(self.final.parent)
        self.published = self.final
        return self.final


def _published_shards(data_root: str | os.PathLike, stage: str) -> dict[str, tuple[Path, dict]]:
    """Shards of the published datasets of `stage`, by content key (for incremental reruns)."""
    found: dict[str, tuple[Path, dict]] = {}
    for mf in sorted(Path(data_root, stage).glob(f"*/{MANIFEST}")):
        try:
            shards = json.loads(mf.read_text(encoding="utf-8")).get("stats", {}).get("shards") or []
        except (OSError, json.JSONDecodeError):
            continue
        for entry in shards:
            if isinstance(entry, dict) and entry.get("key"):
                found.setdefault(entry["key"], (mf.parent, entry))
    return found


def _renumbered(rel: str, index: int) -> str:
    """`rejected/part-00003.parquet` as the file of shard `index` (the last 5-digit number is the shard's)."""
    folder, _, name = rel.rpartition("/")
    matches = list(_SHARD_INDEX.finditer(name))
    if matches:
        m = matches[-1]
        name = f"{name[: m.start()]}{index:05d}{name[m.end():]}"
    return f"{folder}/{name}" if folder else name


def _link_or_copy(src: Path, dst: Path) -> None:
    """Datasets are immutable, so a reused shard shares the bytes (a hard link) where the filesystem allows."""
    with atomic_path(dst) as tmp:
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copy2(src, tmp)


def list_datasets(data_root: str | os.PathLike) -> list[Path]:
    """Every complete dataset under a data root (any stage)."""
    root = Path(data_root)
    if not root.is_dir():
        return []
    return sorted(p.parent for p in root.glob(f"*/*/{MANIFEST}") if not p.parent.name.startswith("."))


def list_temp_dirs(data_root: str | os.PathLike) -> list[Path]:
    root = Path(data_root)
    return sorted(p for p in root.glob("*/.*.tmp") if p.is_dir()) if root.is_dir() else []
