"""Run pointers: `<data_root>/runs/<config-name>.json` maps each stage to the dataset the last run used."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from storage.atomic import write_text_atomic
from storage.dataset import DatasetError, is_dataset, read_manifest


def run_pointer_path(data_root: str | os.PathLike, config_name: str) -> Path:
    return Path(data_root) / "runs" / f"{config_name}.json"


def read_run_pointer(data_root: str | os.PathLike, config_name: str) -> dict:
    path = run_pointer_path(data_root, config_name)
    if not path.is_file():
        return {"config": config_name, "stages": {}}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: unreadable run pointer ({e})") from e


def record_stage(data_root: str | os.PathLike, config_name: str, stage: str, dataset: str | os.PathLike) -> None:
    """Point `stage` of this config's run at `dataset` (atomic replace of the pointer file)."""
    path = run_pointer_path(data_root, config_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    pointer = read_run_pointer(data_root, config_name)
    manifest = read_manifest(dataset)
    pointer.setdefault("stages", {})[stage] = {
        "path": str(Path(dataset)),
        "fingerprint": manifest.fingerprint,
        "rows": manifest.rows,
        "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    write_text_atomic(path, json.dumps(pointer, indent=2, sort_keys=True) + "\n", unique=True)


def all_pointed_datasets(data_root: str | os.PathLike) -> set[Path]:
    """Datasets any run pointer refers to, plus everything they were built from (kept by `gc`)."""
    from storage.lineage import ancestors

    keep: set[Path] = set()
    runs = Path(data_root) / "runs"
    for pointer_file in sorted(runs.glob("*.json")) if runs.is_dir() else []:
        try:
            pointer = json.loads(pointer_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            continue
        for entry in pointer.get("stages", {}).values():
            p = Path(entry["path"])
            if is_dataset(p):
                keep.add(p.resolve())
                keep.update(a.resolve() for a in ancestors(p))
    return keep
