"""The lineage graph (storage/lineage.py) as a picture and a table: datasets as boxes (stage, fingerprint, rows or
tokens, bytes, share kept) in layers from left to right — a dataset's layer is its longest path from the raw files —
with arrows from each input to what was built from it. For `chatlike lineage --png` and the `pipeline-lineage`
artifact, since Prefect's open-source UI draws no asset graph. matplotlib only (no graphviz); the same graph gives
the same bytes.

Layout (Sugiyama's, simplified): layers; a point per layer for edges that skip layers, so they run in lanes of their
own instead of through boxes; a few barycentre sweeps to order each layer; vertical positions pulled towards the
neighbours' and kept apart. A picture of more than `LAYERS_PER_BAND` layers wraps onto bands below, like lines of
text, the edges that cross the wrap running through the gap between the bands.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from storage.atomic import write_atomic
from storage.lineage import GraphNode, LineageGraph, display_order, human_bytes, node_figures

LAYERS_PER_BAND = 8

# Sizes in inches (the axes are drawn one unit to the inch).
BOX_W, BOX_H, RAW_H = 1.6, 0.74, 0.56
COL_W = BOX_W + 0.55
LANE_H = 0.13  # the height an edge passing through a layer takes
GAP = 0.16  # between two things in a layer
WRAP_LANE = 0.11  # between the edges that run through the gap between two bands
MARGIN = 0.3

COLOURS = {  # fill, border
    "dataset": ("#dbe8fb", "#3b7dd8"),
    "tags": ("#eef3fa", "#7ea3d6"),
    "run": ("#fde7cf", "#e08a2c"),
    "raw": ("#eeeeee", "#8a8a8a"),
    "missing": ("#ffffff", "#d0312d"),
}


@dataclass(eq=False)  # compared by identity: items link to each other
class _Item:
    """A node, or the point where an edge that skips layers crosses one."""

    key: str
    layer: int
    height: float
    node: GraphNode | None = None
    y: float = 0.0
    up: list[_Item] = field(default_factory=list)  # neighbours in the layer before
    down: list[_Item] = field(default_factory=list)  # and after


@dataclass
class _Layout:
    layers: list[list[_Item]]
    paths: list[list[_Item]]  # one per edge: its input, the points of the layers it skips, its consumer


def layer_of(graph: LineageGraph) -> dict[str, int]:
    """Each node's layer: a dataset's longest path from the raw files; a node without inputs (raw files, a missing
    dataset) just left of the first dataset that reads it."""
    inputs: dict[str, list[str]] = {k: [] for k in graph.nodes}
    readers: dict[str, list[str]] = {k: [] for k in graph.nodes}
    for src, dst in graph.edges:
        inputs[dst].append(src)
        readers[src].append(dst)
    depth: dict[str, int] = {}

    def longest(key: str, stack: frozenset[str]) -> int:
        if key not in depth:
            ins = [k for k in inputs[key] if k not in stack]  # a cycle (a hand-edited manifest) is cut
            depth[key] = 1 + max(longest(k, stack | {key}) for k in ins) if ins else 0
        return depth[key]

    for key in graph.nodes:
        longest(key, frozenset())
    layer = dict(depth)
    for key in graph.nodes:
        if not inputs[key] and readers[key]:
            layer[key] = max(0, min(depth[r] for r in readers[key]) - 1)
    return layer


def layout(graph: LineageGraph) -> _Layout:
    layer = layer_of(graph)
    items = {k: _Item(k, layer[k], RAW_H if n.is_raw else BOX_H, node=n) for k, n in graph.nodes.items()}
    passing: dict[str, _Item] = {}  # the edges of one input share their pass-through points (one lane, not many)
    paths = []
    for src, dst in graph.edges:
        if layer[dst] <= layer[src]:
            continue  # only a cycle does this; its edge is left out of the picture
        path = [items[src]]
        path += [passing.setdefault(f"{src}->@{i}", _Item(f"{src}->@{i}", i, LANE_H))
                 for i in range(layer[src] + 1, layer[dst])]
        path.append(items[dst])
        for a, b in pairwise(path):
            if b not in a.down:
                a.down.append(b)
                b.up.append(a)
        paths.append(path)
    layers: list[list[_Item]] = [[] for _ in range(max(layer.values(), default=0) + 1)]
    for item in [*items.values(), *passing.values()]:
        layers[item.layer].append(item)
    rank = {k: i for i, k in enumerate(sorted(graph.nodes, key=lambda k: display_order(graph.nodes[k])))}
    for row in layers:  # start from a stable order; a pass-through point sorts with its input
        row.sort(key=lambda it: (rank[it.key.split("->")[0]] if it.node is None else rank[it.key], it.key))
    _order(layers)
    _place(layers)
    return _Layout(layers, paths)


def _order(layers: list[list[_Item]], sweeps: int = 8) -> None:
    """Barycentre heuristic: each layer sorted by the mean position of its neighbours, alternately left to right
    (inputs) and right to left (readers); ties keep the current order, so the result is deterministic."""
    for sweep in range(sweeps):
        forward = sweep % 2 == 0
        for row in layers[1:] if forward else layers[-2::-1]:
            where = {id(it): i for r in layers for i, it in enumerate(r)}
            row.sort(key=lambda it: (_centre(it.up if forward else it.down, where, where[id(it)]), where[id(it)]))


def _centre(near: list[_Item], where: dict[int, int], own: int) -> float:
    return sum(where[id(n)] for n in near) / len(near) if near else own


def _place(layers: list[list[_Item]], passes: int = 24) -> None:
    """Vertical positions: stacked, then each pulled towards the mean of its neighbours' while keeping the order
    and the gaps (an isotonic regression per layer), so chains run straight."""
    for row in layers:
        y = 0.0
        for it in row:
            y += it.height / 2
            it.y = y
            y += it.height / 2 + GAP
    for p in range(passes):
        for row in layers if p % 2 == 0 else layers[::-1]:
            want = [sum(n.y for n in it.up + it.down) / len(it.up + it.down) if it.up or it.down else it.y
                    for it in row]
            for it, y in zip(row, _keep_apart(want, [it.height for it in row]), strict=True):
                it.y = y
    low = min((it.y - it.height / 2 for row in layers for it in row), default=0.0)
    for row in layers:
        for it in row:
            it.y -= low


def _keep_apart(want: list[float], heights: list[float]) -> list[float]:
    """The positions nearest `want` (least squares) that keep this order and at least GAP between neighbours."""
    offsets, off = [], 0.0
    for i, h in enumerate(heights):
        if i:
            off += (heights[i - 1] + h) / 2 + GAP
        offsets.append(off)
    blocks: list[list[float]] = []  # pool adjacent violators: [sum, count] of z = want - offset
    for w, o in zip(want, offsets, strict=True):
        blocks.append([w - o, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    fitted = [b[0] / b[1] for b in blocks for _ in range(int(b[1]))]
    return [z + o for z, o in zip(fitted, offsets, strict=True)]


def lineage_png(graph: LineageGraph, path: str | os.PathLike, title: str = "", dpi: int = 100) -> Path:
    """Draw the graph into a PNG at `path` (written whole, then renamed into place); returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    lay = layout(graph)
    n_layers = len(lay.layers)
    n_bands = max(1, -(-n_layers // LAYERS_PER_BAND))
    per_band = max(1, -(-n_layers // n_bands))  # bands of equal width: 18 layers are 3 bands of 6, not 8 + 8 + 2
    band_of = [layer // per_band for layer in range(n_layers)]
    wraps: list[list[_Item]] = [[] for _ in range(n_bands)]  # what edges leave band b from, down to band b + 1
    for p in lay.paths:
        for a, b in pairwise(p):
            if band_of[b.layer] != band_of[a.layer] and a not in wraps[band_of[a.layer]]:
                wraps[band_of[a.layer]].append(a)
    top_of, height_of = [], []
    for b in range(n_bands):
        rows = [it for row in lay.layers[b * per_band:(b + 1) * per_band] for it in row]
        top = min(it.y - it.height / 2 for it in rows)
        top_of.append(top)
        height_of.append(max(it.y + it.height / 2 for it in rows) - top)
    gaps = [0.45 + WRAP_LANE * len(w) for w in wraps]
    header = 0.75 if title else 0.45
    side = MARGIN + WRAP_LANE * max((len(w) for w in wraps), default=0)
    width = side * 2 + (per_band - 1) * COL_W + BOX_W
    height = header + sum(height_of) + sum(gaps[:-1]) + MARGIN
    band_y = [header + sum(height_of[:b]) + sum(gaps[:b]) for b in range(n_bands)]

    def xy(it: _Item) -> tuple[float, float]:  # centre, in inches from the top left
        b = band_of[it.layer]
        return side + BOX_W / 2 + (it.layer - b * per_band) * COL_W, band_y[b] + it.y - top_of[b]

    fig = plt.figure(figsize=(width, height), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    if title:
        ax.text(MARGIN, 0.3, title, fontsize=11, fontweight="bold", va="center")
    ax.text(MARGIN, header - 0.2, "blue: dataset (light: tags) · orange: training run · grey: raw files · "
            "layers left to right: longest path from the raw files", fontsize=7, color="#555555", va="center")

    routes: dict[str, tuple[float, float, float]] = {}  # the item an edge wraps after → (gap y, right x, left x)
    for band, leaving in enumerate(wraps):
        for lane, it in enumerate(sorted(leaving, key=lambda it: (xy(it)[1], it.key))):
            routes[it.key] = (band_y[band] + height_of[band] + 0.22 + WRAP_LANE * lane,
                              width - side + 0.12 + WRAP_LANE * lane, side - 0.12 - WRAP_LANE * lane)
    for p in lay.paths:
        _draw_edge(ax, p, xy, band_of, routes)
    for row in lay.layers:
        for it in row:
            if it.node is not None:
                _draw_box(ax, it.node, *xy(it), it.height, graph.roots == [it.key], FancyBboxPatch)

    out = Path(path)

    def save(tmp: Path) -> None:
        fig.savefig(tmp, dpi=dpi, format="png", metadata={"Software": None})

    write_atomic(out, save, keep_suffix=True)
    plt.close(fig)
    return out


def _draw_edge(ax, path: list[_Item], xy, band_of: list[int], routes: dict[str, tuple[float, float, float]]) -> None:
    """A polyline: out of the input's right side, straight through the layers it skips, into the reader's left
    side with a horizontal arrowhead; across a wrap (`routes`: its lane in the gap below the band): right, down
    into the gap, left, down, and on."""
    pts: list[tuple[float, float]] = []
    for i, it in enumerate(path):
        x, y = xy(it)
        half = 0.0 if it.node is None else BOX_W / 2
        if i and band_of[path[i - 1].layer] != band_of[it.layer]:
            gap_y, right, left = routes[path[i - 1].key]
            py = pts[-1][1]
            pts += [(right, py), (right, gap_y), (left, gap_y), (left, y)]
        if i == 0:
            pts += [(x + half, y), (x + half + 0.12, y)]
        elif i == len(path) - 1:
            pts += [(x - half - 0.14, y), (x - half, y)]
        else:
            pts += [(x - BOX_W / 2, y), (x + BOX_W / 2, y)]
    colour = "#7a7a7a"
    xs, ys = zip(*pts[:-1], strict=True)
    ax.plot(xs, ys, color=colour, lw=0.9, solid_joinstyle="round", zorder=1)
    ax.annotate("", xy=pts[-1], xytext=pts[-2], zorder=1,
                arrowprops=dict(arrowstyle="-|>", color=colour, lw=0.9, shrinkA=0, shrinkB=0, mutation_scale=9))


def _kind(node: GraphNode) -> str:
    if not node.exists:
        return "missing"
    if node.is_raw:
        return "raw"
    if node.run:
        return "run"
    return "tags" if node.stage.endswith("-tags") else "dataset"


def _draw_box(ax, node: GraphNode, x: float, y: float, h: float, is_root: bool, patch) -> None:
    fill, edge = COLOURS[_kind(node)]
    ax.add_patch(patch((x - BOX_W / 2, y - h / 2), BOX_W, h, boxstyle="round,pad=0,rounding_size=0.07",
                       facecolor=fill, edgecolor=edge, lw=2.0 if is_root else 1.0,
                       linestyle="--" if not node.exists else "-", zorder=2))
    if node.is_raw:
        many = len(node.raw_files) > 1
        lines = [(f"{len(node.raw_files)} raw files" if many else "raw file", "bold", 8, "#222222"),
                 (_fit(Path(node.path).name if many else Path(node.raw_files[0]).name), "normal", 7, "#333333"),
                 (human_bytes(node.bytes) + ("" if node.exists else " · missing"), "normal", 7, "#555555")]
    else:
        figures = node_figures(node)
        kept = [f for f in figures if f.startswith("kept ")]
        rest = [f for f in figures if f not in kept]
        lines = [(node.stage, "bold", 8, "#111111"), (node.fingerprint[:8], "mono", 7, "#666666"),
                 (" · ".join(rest), "normal", 7, "#333333")]
        if kept:
            lines.append((kept[0] + " of its input", "normal", 7, "#1f6e2e"))
    step = 0.145
    first = y - step * (len(lines) - 1) / 2
    for i, (text, style, size, colour) in enumerate(lines):
        ax.text(x, first + i * step, text, ha="center", va="center", fontsize=size, color=colour, zorder=3,
                fontweight="bold" if style == "bold" else "normal",
                family="monospace" if style == "mono" else "sans-serif")


def _fit(text: str, chars: int = 26) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def lineage_markdown(graph: LineageGraph) -> str:
    """The graph's datasets as a markdown table (stage, fingerprint, figures, inputs), in layer order."""
    layer = layer_of(graph)
    lines = ["| stage | fingerprint | rows / tokens | bytes | kept | inputs |", "|---|---|---:|---:|---:|---|"]
    for node in sorted(graph.datasets, key=lambda n: (layer[n.key], display_order(n))):
        size = f"{node.rows:,} rows" if node.rows is not None else (
            f"{node.tokens:,} tokens" if node.tokens is not None else "")
        kept = f"{node.kept:.0%}" if node.kept is not None else ""
        inputs = ", ".join(_input_name(graph.nodes[k]) for k in sorted(graph.inputs_of(node.key),
                                                                       key=lambda k: display_order(graph.nodes[k])))
        missing = " (missing)" if not node.exists else ""
        lines.append(f"| {node.stage}{missing} | `{node.fingerprint[:16]}` | {size} | {human_bytes(node.bytes)} | "
                     f"{kept} | {inputs} |")
    return "\n".join(lines) + "\n"


def _input_name(node: GraphNode) -> str:
    if node.is_raw:
        return f"{len(node.raw_files)} raw files" if len(node.raw_files) > 1 else f"`{Path(node.raw_files[0]).name}`"
    return f"{node.stage} `{node.fingerprint[:8]}`"
