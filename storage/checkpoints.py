"""Checkpoint folders of a training run (DESIGN §3, Checkpoints): their names, the `latest` pointer, `state.json`,
and publishing a fully written folder under its final name. Plain files and folders only: the tensors inside are
written by `model.checkpoint` (and `model.lora` for adapters).

A run folder holds `step-000500/` folders; one exists under that name only once complete, because it is written
as `.tmp-step-000500-<pid>/` and renamed. The text file `latest` then names it. A run killed between the rename
and the pointer update leaves `latest` one behind, so readers also look for newer complete folders; a run killed
while saving leaves a `.tmp-` folder that readers ignore and the next run removes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from storage.atomic import fsync_tree, write_json_atomic, write_text_atomic
from storage.chat_format import TOKENIZER_FILE
from storage.fingerprint import hash_file

STEP_PREFIX = "step-"
STEP_RE = re.compile(r"^step-(\d+)$")
LATEST = "latest"
BEST = "best"  # written by early stopping: the checkpoint with the lowest validation loss
TMP_PREFIX = ".tmp-"
STATE_NAME = "state.json"
STATE_FORMAT = 1
WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"
OPTIMIZER_NAME = "optimizer.pt"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"


class CheckpointMismatch(ValueError):
    """A checkpoint that does not belong to the run asking for it (other model config, mode, tokenizer)."""


def checkpoint_name(step: int) -> str:
    return f"{STEP_PREFIX}{step:06d}"


def is_adapter_dir(path: str | os.PathLike) -> bool:
    return (Path(path) / ADAPTER_CONFIG).is_file()


def list_checkpoints(run_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """Complete checkpoints of a run, oldest first (temporary folders of an interrupted save never match)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    found = []
    for p in run_dir.iterdir():
        m = STEP_RE.match(p.name)
        if m and p.is_dir() and (p / STATE_NAME).is_file():
            found.append((int(m.group(1)), p))
    return sorted(found)


def latest_checkpoint(run_dir: str | os.PathLike) -> Path | None:
    """The checkpoint `latest` names, or a newer complete one (a run killed between the rename and the pointer
    update leaves the pointer one behind)."""
    run_dir = Path(run_dir)
    candidates = list_checkpoints(run_dir)
    pointer = run_dir / LATEST
    if pointer.is_file():
        target = run_dir / pointer.read_text(encoding="utf-8").strip()
        m = STEP_RE.match(target.name)
        if m and (target / STATE_NAME).is_file():
            candidates.append((int(m.group(1)), target))
    return max(candidates)[1] if candidates else None


def best_checkpoint(run_dir: str | os.PathLike) -> Path | None:
    """The checkpoint the `best` pointer names (a run with early stopping), if it is complete."""
    pointer = Path(run_dir) / BEST
    if not pointer.is_file():
        return None
    target = Path(run_dir) / pointer.read_text(encoding="utf-8").strip()
    return target if STEP_RE.match(target.name) and (target / STATE_NAME).is_file() else None


def mark_best(run_dir: str | os.PathLike, checkpoint: Path) -> None:
    write_text_atomic(Path(run_dir) / BEST, checkpoint.name + "\n")


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """A checkpoint folder itself, or what a run folder hands on: its best checkpoint when early stopping marked
    one, else its latest."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such checkpoint or run folder")
    if (path / WEIGHTS_NAME).is_file() or is_adapter_dir(path):
        return path
    found = best_checkpoint(path) or latest_checkpoint(path)
    if found is None:
        raise FileNotFoundError(f"{path}: not a checkpoint (no {WEIGHTS_NAME} or adapter) and no complete "
                                f"checkpoint inside")
    return found


def read_state(checkpoint: str | os.PathLike) -> dict | None:
    """A checkpoint's state.json, or None for a folder without one (a bare model or peft folder)."""
    path = Path(checkpoint) / STATE_NAME
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: unreadable checkpoint state ({exc})") from exc


def write_state(checkpoint: str | os.PathLike, state: dict[str, Any]) -> Path:
    """Write state.json (compact JSON and a newline), flushed to disk before it takes its name."""
    return write_json_atomic(Path(checkpoint) / STATE_NAME, state, durable=True)


def checkpoint_tokenizer(checkpoint: str | os.PathLike) -> Path:
    """The tokenizer.json a checkpoint works with: the one inside its folder (an imported base carries its own),
    else the one its state.json records (training runs record the tokenizer they were trained with)."""
    checkpoint = Path(checkpoint)
    inside = checkpoint / TOKENIZER_FILE
    if inside.is_file():
        return inside
    recorded = ((read_state(checkpoint) or {}).get("tokenizer") or {}).get("path")
    if not recorded:
        raise ValueError(f"{checkpoint}: no {TOKENIZER_FILE} inside and none recorded in {STATE_NAME}; "
                         f"pass the tokenizer explicitly")
    path = Path(recorded)
    if path.is_dir():
        path = path / TOKENIZER_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{checkpoint}: the tokenizer its {STATE_NAME} records ({path}) is gone")
    return path


def weights_sha256(checkpoint: str | os.PathLike) -> str:
    return hash_file(Path(checkpoint) / WEIGHTS_NAME)


def config_difference(a: dict, b: dict, a_name: str, b_name: str) -> str:
    """The keys on which two configs differ, each with both values: `d_model: checkpoint 32, requested 64`."""
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return "; ".join(f"{k}: {a_name} {a.get(k)!r}, {b_name} {b.get(k)!r}" for k in keys)


def new_checkpoint_folder(run_dir: Path, step: int) -> Path:
    """An empty temporary folder to write the checkpoint of `step` into (then `publish_checkpoint` it)."""
    tmp = run_dir / f"{TMP_PREFIX}{checkpoint_name(step)}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def replace_folder(tmp: Path, final: Path) -> Path:
    """Rename a fully written folder to `final`, replacing a folder already there (moved aside, then removed)."""
    fsync_tree(tmp)
    if final.exists():
        old = final.with_name(f"{TMP_PREFIX}old-{final.name}-{os.getpid()}")
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
    return final


def publish_checkpoint(run_dir: Path, step: int, tmp: Path, keep_last: int) -> Path:
    """Rename a fully written temporary folder to step-NNNNNN, point `latest` at it, prune old ones (never the
    best one)."""
    final = replace_folder(tmp, run_dir / checkpoint_name(step))  # a resumed run may save a step again
    write_text_atomic(run_dir / LATEST, final.name + "\n")
    best = best_checkpoint(run_dir)
    for _, old in list_checkpoints(run_dir)[:-keep_last]:
        if old not in (final, best):
            shutil.rmtree(old, ignore_errors=True)
    return final


def remove_stale_temporaries(run_dir: Path) -> list[Path]:
    """Temporary folders and files an interrupted save left behind."""
    stale = list(run_dir.glob(f"{TMP_PREFIX}*")) if run_dir.is_dir() else []
    for p in stale:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    return stale
