"""Lineage: follow manifests' `inputs` from any dataset back to the raw files it was built from."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from storage.dataset import DatasetError, is_dataset, read_manifest

RAW = "raw"


@dataclass
class LineageNode:
    stage: str
    fingerprint: str
    path: str
    rows: int | None = None
    exists: bool = True
    children: list[LineageNode] = field(default_factory=list)


def lineage(path: str | os.PathLike, _seen: set[str] | None = None) -> LineageNode:
    """The tree of a dataset's inputs down to raw files. Missing datasets appear with `exists=False`."""
    p = Path(path)
    if not is_dataset(p) and p.exists():
        # a checkpoint (or any file) inside a published training run: the run's manifest is its lineage
        p = next((a for a in p.resolve().parents if is_dataset(a)), p)
    manifest = read_manifest(p)
    seen = _seen if _seen is not None else set()
    node = LineageNode(manifest.stage, manifest.fingerprint, str(p), rows=manifest.rows)
    for ref in manifest.inputs:
        if ref.stage == RAW:
            node.children.append(LineageNode(RAW, ref.fingerprint, ref.path, exists=Path(ref.path).exists()))
        elif ref.path in seen:
            node.children.append(LineageNode(ref.stage, ref.fingerprint, ref.path))
        else:
            seen.add(ref.path)
            try:
                node.children.append(lineage(ref.path, seen))
            except DatasetError:
                node.children.append(LineageNode(ref.stage, ref.fingerprint, ref.path, exists=False))
    return node


def ancestors(path: str | os.PathLike) -> list[Path]:
    """Every dataset (not raw file) that `path` was built from."""
    out: list[Path] = []

    def walk(node: LineageNode) -> None:
        for child in node.children:
            if child.stage != RAW and child.exists:
                out.append(Path(child.path))
                walk(child)

    walk(lineage(path))
    return out


def raw_files(path: str | os.PathLike) -> list[str]:
    out: list[str] = []

    def walk(node: LineageNode) -> None:
        for child in node.children:
            if child.stage == RAW:
                out.append(child.path)
            else:
                walk(child)

    walk(lineage(path))
    return sorted(set(out))
