"""Reports: each dataset's summary (inputs → output, counts, removal reasons) as a `<stage>-report` artifact and a
log line; the data funnel (documents and bytes kept after each filtering stage) as a table, a
chart, and a Prefect artifact; and PNG files embedded in markdown artifacts so the Prefect UI shows them."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from storage.atomic import write_atomic
from storage.dataset import Manifest, is_dataset, read_manifest
from storage.runs import read_run_pointer

# The datasets that keep or drop documents, in pipeline order (tag datasets keep every row and are left out).
FUNNEL_STAGES = (
    "ingest", "clean", "langid", "quality", "perplexity",
    "dedup-exact", "dedup-minhash", "dedup-bloom", "dedup-suffix-array",
)


@dataclass
class FunnelStep:
    stage: str
    docs_in: int
    docs_out: int
    bytes_out: int | None
    removed: dict[str, int]

    @property
    def kept(self) -> float | None:
        return self.docs_out / self.docs_in if self.docs_in else None


def funnel(data_root: str | os.PathLike, config_name: str) -> list[FunnelStep]:
    """The funnel of the last run of a config, from its run pointer and the manifests it points at."""
    stages = read_run_pointer(data_root, config_name).get("stages", {})
    steps = []
    for stage in FUNNEL_STAGES:
        entry = stages.get(stage)
        if entry is None or not is_dataset(entry["path"]):
            continue
        counts = read_manifest(entry["path"]).counts
        bytes_out = counts.get("bytes_out")  # text bytes (ingest counts the raw files' bytes: not comparable)
        removed = {k.split("_", 1)[1]: int(v) for k, v in counts.items()
                   if k.startswith(("dropped_", "skipped_")) and isinstance(v, int) and v}
        steps.append(FunnelStep(stage, int(counts.get("in", 0)), int(counts.get("out", 0)), bytes_out, removed))
    return steps


def bar(fraction: float, width: int = 24) -> str:
    """A fraction as a text bar (renders in any markdown viewer and terminal)."""
    full = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * full + "░" * (width - full)


def funnel_markdown(steps: list[FunnelStep]) -> str:
    """A markdown table: documents in → out per stage, share of the raw documents still there, reasons."""
    if not steps:
        return "_No data stage has run for this config yet._\n"
    start = steps[0].docs_in or 1
    lines = ["| stage | docs in | docs out | kept | of raw | bytes out | removed (reasons) |",
             "|---|---:|---:|---:|---|---:|---|"]
    for s in steps:
        kept = f"{s.kept:.0%}" if s.kept is not None else ""
        reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(s.removed.items(), key=lambda kv: -kv[1]))
        size = f"{s.bytes_out:,}" if s.bytes_out is not None else ""
        lines.append(f"| {s.stage} | {s.docs_in:,} | {s.docs_out:,} | {kept} | `{bar(s.docs_out / start)}` "
                     f"{s.docs_out / start:.0%} | {size} | {reasons} |")
    return "\n".join(lines) + "\n"


def funnel_png(steps: list[FunnelStep], path: str | os.PathLike) -> Path | None:
    """Documents and bytes left after each stage as a bar chart (matplotlib, Agg); None without steps."""
    if not steps:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [s.stage for s in steps]
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.45 * len(steps) + 1.4), sharey=True)
    y = list(range(len(steps)))[::-1]
    axes[0].barh(y, [s.docs_out for s in steps], color="#3b7dd8")
    axes[0].set_title("documents kept")
    sizes = [s.bytes_out or 0 for s in steps]
    scale, unit = (1e6, "MB") if max(sizes) >= 1e6 else (1e3, "kB")
    axes[1].barh(y, [b / scale for b in sizes], color="#e08a2c")
    axes[1].set_title(f"{unit} of text kept (blank: not measured)")
    axes[0].set_yticks(y, names)
    for ax in axes:
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, lambda tmp: fig.savefig(tmp, dpi=90), keep_suffix=True)
    plt.close(fig)
    return out


def png_markdown(path: str | os.PathLike, alt: str) -> str:
    """An image the Prefect UI can show: the PNG inlined as a data URI (the UI cannot read local files)."""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"![{alt}](data:image/png;base64,{data})"


def _fmt(v: object) -> str:
    return f"{v:,}" if isinstance(v, int) else str(v)


def unreadable_files(m: Manifest) -> dict[str, str]:
    """The input files a dataset was published without because they could not be read at all (ingest with
    `on_unreadable: skip`) → why."""
    return m.stats.get("unreadable_files") or {}


def manifest_markdown(m: Manifest) -> str:
    """A human summary of a dataset: inputs → output, counts (removal reasons included), timing."""
    lines = [f"# {m.stage} — `{m.fingerprint[:16]}`", "", f"**Output:** `{m.path}`  ", f"**Rows:** {m.rows:,}  "]
    lines.append(f"**Took:** {m.seconds:.2f} s on {m.host}, code {m.code_version}")
    lines += ["", "## Inputs", ""]
    raw = [i for i in m.inputs if i.stage == "raw"]
    for i in m.inputs:
        if i.stage != "raw":
            lines.append(f"- {i.stage} `{i.fingerprint[:16]}` — `{i.path}`")
    if raw:
        lines.append(f"- {len(raw)} raw file(s): " + ", ".join(f"`{Path(i.path).name}`" for i in raw[:20]))
    lines += ["", "## Counts", "", "| count | value |", "|---|---:|"]
    lines += [f"| {k} | {_fmt(v)} |" for k, v in m.counts.items()]
    if "in" in m.counts and "out" in m.counts and m.counts["in"]:
        total = m.counts["in"]
        lines += ["", f"Kept {m.counts['out'] / total:.1%} of the input rows.", "",
                  "| rows | share | |", "|---|---:|---|", f"| kept | {m.counts['out'] / total:.1%} | "
                  f"`{bar(m.counts['out'] / total)}` |"]
        for k, v in sorted(m.counts.items(), key=lambda kv: -kv[1] if isinstance(kv[1], int) else 0):
            if k.startswith(("dropped_", "skipped_")) and isinstance(v, int) and v:
                lines.append(f"| {k} | {v / total:.1%} | `{bar(v / total)}` |")
    if unreadable := unreadable_files(m):
        lines += ["", f"## Unreadable files ({len(unreadable)}, skipped)", ""]
        lines += [f"- {why}" for why in unreadable.values()]
    return "\n".join(lines) + "\n"


def report(path: str | os.PathLike) -> None:
    m = read_manifest(path)
    create_markdown_artifact(
        key=f"{m.stage.replace('_', '-')}-report",
        markdown=manifest_markdown(m),
        description=f"{m.stage} dataset {m.fingerprint[:16]}",
    )
    counts = m.counts
    rate = ""
    if m.seconds > 0 and "in" in counts:
        rate = f", {counts['in'] / m.seconds:,.0f} rows/s"
        if "bytes_in" in counts:
            rate += f", {counts['bytes_in'] / m.seconds / 1e6:,.2f} MB/s"
    get_run_logger().info(
        "%s: published %s (%s rows in, %s out%s)", m.stage, path, counts.get("in"), counts.get("out"), rate
    )
