"""Lineage: follow manifests' `inputs` from any dataset back to the raw files it was built from — as a tree
(`lineage`), or as a graph of datasets and edges in which a shared input appears once (`lineage_graph`), which
`chatlike lineage` prints as a text tree and `flows/lineage_png.py` draws."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from storage.dataset import REJECTED, DatasetError, InputRef, is_dataset, read_manifest

RAW = "raw"
RUN_FILE = "run.json"  # what a training run (a folder of checkpoints) has and a dataset has not


@dataclass
class LineageNode:
    stage: str
    fingerprint: str
    path: str
    rows: int | None = None
    exists: bool = True
    children: list[LineageNode] = field(default_factory=list)


def dataset_of(path: str | os.PathLike) -> Path:
    """The dataset folder `path` names or lies in (a checkpoint, or any file, inside a published training run)."""
    p = Path(path)
    if is_dataset(p):
        return p
    if p.exists():
        found = next((a for a in p.resolve().parents if is_dataset(a)), None)
        if found is not None:
            return found
        raise DatasetError(f"{p}: not a dataset, nor inside one (no manifest.json here or in a folder above)")
    raise DatasetError(f"{p}: not a dataset (no such file or folder)")


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


# ------------------------------------------------------------------------------------------ the lineage graph

GROUP_RAW_OVER = 3  # a dataset read from more raw files than this shows them as one "N raw files" node


@dataclass
class GraphNode:
    """A dataset (or training run) of the lineage graph, or its raw input files (`stage == "raw"`)."""

    key: str  # the resolved dataset path; "raw:<file>" for one raw file, "raw:<consumer key>" for a group
    stage: str
    fingerprint: str
    path: str
    rows: int | None = None  # kept rows (side datasets such as rejected/ excluded); None when it has no rows
    tokens: int | None = None  # token shards only
    bytes: int | None = None  # its files, rejected/ left out; a raw node: the files that exist
    kept: float | None = None  # rows / rows of its one input dataset with rows, where it is not more
    exists: bool = True
    raw_files: list[str] = field(default_factory=list)  # a raw node: the file(s) it stands for
    run: bool = False  # a training run (a folder of checkpoints) rather than a dataset

    @property
    def is_raw(self) -> bool:
        return self.stage == RAW


@dataclass
class LineageGraph:
    nodes: dict[str, GraphNode]  # by key
    edges: list[tuple[str, str]]  # (input key, consumer key), sorted
    roots: list[str]  # the keys of the datasets the walk started from

    def inputs_of(self, key: str) -> list[str]:
        return [src for src, dst in self.edges if dst == key]

    @property
    def datasets(self) -> list[GraphNode]:
        return [n for n in self.nodes.values() if not n.is_raw]


def lineage_graph(*paths: str | os.PathLike, group_raw_over: int = GROUP_RAW_OVER) -> LineageGraph:
    """The datasets `paths` (datasets, or checkpoints inside training runs) were built from, walked upward through
    their manifests' inputs, with the raw files as leaves. Each dataset appears once however many read it; a
    missing input dataset is a node with `exists=False`; raw files are grouped per dataset beyond `group_raw_over`."""
    nodes: dict[str, GraphNode] = {}
    edges: set[tuple[str, str]] = set()
    roots = []
    for path in paths:
        root = dataset_of(path)
        key = _key(root)
        if key not in roots:
            roots.append(key)
        _walk(root, nodes, edges, group_raw_over)
    return LineageGraph(nodes, sorted(edges), roots)


def _key(path: Path) -> str:
    return str(path.resolve())


def _walk(path: Path, nodes: dict[str, GraphNode], edges: set[tuple[str, str]], group_raw_over: int) -> str:
    key = _key(path)
    if key in nodes:
        return key
    m = read_manifest(path)
    kept_files = [f for f in m.files if not f.name.startswith(f"{REJECTED}/")]
    tokens = sum(f.tokens or 0 for f in m.files) if any(f.tokens is not None for f in m.files) else None
    has_rows = any(f.rows is not None for f in m.files if "/" not in f.name)
    node = GraphNode(key, m.stage, m.fingerprint, str(path), rows=m.rows if has_rows else None, tokens=tokens,
                     bytes=sum(f.bytes for f in kept_files), run=any(f.name == RUN_FILE for f in m.files))
    nodes[key] = node  # before the inputs: a cycle (a hand-edited manifest) cannot recurse forever
    raw = [ref for ref in m.inputs if ref.stage == RAW]
    if len(raw) > group_raw_over:
        files = sorted(ref.path for ref in raw)
        group = GraphNode(f"{RAW}:{key}", RAW, "", str(Path(os.path.commonpath(files)) if files else ""),
                          bytes=sum(_size(f) or 0 for f in files), exists=all(Path(f).exists() for f in files),
                          raw_files=files)
        nodes[group.key] = group
        edges.add((group.key, key))
    else:
        for ref in raw:
            raw_key = f"{RAW}:{Path(ref.path).resolve()}"
            nodes.setdefault(raw_key, GraphNode(raw_key, RAW, ref.fingerprint, ref.path, bytes=_size(ref.path),
                                                exists=Path(ref.path).exists(), raw_files=[ref.path]))
            edges.add((raw_key, key))
    input_rows = []
    for ref in m.inputs:
        if ref.stage == RAW:
            continue
        where = _locate(ref, path)
        if is_dataset(where):
            try:
                src = _walk(where, nodes, edges, group_raw_over)
            except DatasetError:  # an unreadable manifest: shown as missing rather than failing the whole picture
                src = _missing(ref, where, nodes)
        else:
            src = _missing(ref, where, nodes)
        edges.add((src, key))
        if nodes[src].rows:
            input_rows.append(nodes[src].rows)
    # A share kept means something for one input of rows (a filter, a sample), not for a join of several
    # (persona-eval) nor for a row count of another kind (sft-data's examples from ingest's documents).
    if len(input_rows) == 1 and node.rows is not None and node.rows <= input_rows[0]:
        node.kept = node.rows / input_rows[0]
    return key


def _locate(ref: InputRef, consumer: Path) -> Path:
    """Where an input dataset is: its recorded path (relative ones are relative to where the run ran), else the
    same `<stage>/<fingerprint16>` folder under the consumer's data root (a data root moved or read from elsewhere)."""
    recorded = Path(ref.path)
    if is_dataset(recorded):
        return recorded
    beside = consumer.parent.parent / ref.stage / recorded.name
    return beside if is_dataset(beside) else recorded


def _missing(ref: InputRef, where: Path, nodes: dict[str, GraphNode]) -> str:
    key = _key(where)
    nodes.setdefault(key, GraphNode(key, ref.stage, ref.fingerprint, ref.path, exists=False))
    return key


def _size(path: str) -> int | None:
    try:
        return Path(path).stat().st_size
    except OSError:
        return None


def human_bytes(n: int | None) -> str:
    if n is None:
        return ""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} B"


def node_figures(node: GraphNode) -> list[str]:
    """What a node shows besides its name: rows or tokens, bytes, the share of its main input's rows kept."""
    out = []
    if node.is_raw and len(node.raw_files) > 1:
        out.append(f"{len(node.raw_files)} files")
    if node.rows is not None:
        out.append(f"{node.rows:,} rows")
    if node.tokens is not None:
        out.append(f"{node.tokens:,} tokens")
    if node.bytes is not None:
        out.append(human_bytes(node.bytes))
    if node.kept is not None:
        out.append(f"kept {node.kept:.0%}")
    if not node.exists:
        out.append("missing")
    return out


def node_title(node: GraphNode) -> str:
    """`clean df75bfca`, `raw harbour_notes.txt`, `raw (10 files)`."""
    if node.is_raw:
        return f"{RAW} {Path(node.raw_files[0]).name}" if len(node.raw_files) == 1 else f"{len(node.raw_files)} raw files"
    return f"{node.stage} {node.fingerprint[:8]}"


def lineage_lines(graph: LineageGraph, root: str | None = None) -> list[str]:
    """The graph as an indented text tree from `root` (the first root by default) down to the raw files, one line
    per dataset or raw file; a dataset read twice is expanded the first time and marked "(above)" after."""
    lines: list[str] = []
    seen: set[str] = set()

    def raw_line(file: str) -> str:
        figures = [human_bytes(_size(file)) or "missing"]
        return " · ".join([f"{RAW} {Path(file).name}", *figures, file])

    def add(key: str, prefix: str, guide: str, below: str) -> None:
        node = graph.nodes[key]
        if key in seen:
            lines.append(f"{prefix}{guide}{node_title(node)} (above)")
            return
        seen.add(key)
        lines.append(prefix + guide + " · ".join([node_title(node), *node_figures(node), node.path]))
        items: list[tuple[str, str]] = []  # ("node", key) or ("file", raw path): a raw group lists its files
        for child in _tree_children(graph, key):
            if graph.nodes[child].is_raw:
                items += [("file", f) for f in graph.nodes[child].raw_files]
            else:
                items.append(("node", child))
        for i, (kind, value) in enumerate(items):
            last = i == len(items) - 1
            if kind == "file":
                lines.append(f"{prefix}{below}{'└─ ' if last else '├─ '}{raw_line(value)}")
            else:
                add(value, prefix + below, "└─ " if last else "├─ ", "   " if last else "│  ")

    add(root or graph.roots[0], "", "", "")
    return lines


def _tree_children(graph: LineageGraph, key: str) -> list[str]:
    """A node's inputs in a stable order: datasets by stage and fingerprint, then raw files."""
    return sorted(graph.inputs_of(key), key=lambda k: display_order(graph.nodes[k]))


def display_order(node: GraphNode) -> tuple:
    """Datasets by stage and fingerprint, then raw files by path."""
    return (True, "", "", node.raw_files) if node.is_raw else (False, node.stage, node.fingerprint, [node.path])
