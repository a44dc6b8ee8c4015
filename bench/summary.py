"""One line per headline figure of a benchmark, collected by `bench/run_all.py` into one summary table.

A benchmark calls `record(...)` for the figures that belong in the summary (ours, and the peer's on the same
input where a peer exists). Records go to the JSON-lines file named by $CHATLIKE_BENCH_SUMMARY (set by
run_all.py); when a benchmark runs on its own the call does nothing.
"""

from __future__ import annotations

import json
import os
import resource
from dataclasses import asdict, dataclass

ENV = "CHATLIKE_BENCH_SUMMARY"


@dataclass
class Figure:
    stage: str  # e.g. "dedup (MinHash)"
    measure: str  # what is counted, e.g. "docs/s per core"
    ours: float
    peer: str | None = None  # e.g. "datatrove MinHash"
    peer_value: float | None = None
    peak_mb: float | None = None  # ours, when the benchmark measured it
    peer_peak_mb: float | None = None
    note: str = ""


def record(stage: str, measure: str, ours: float, peer: str | None = None, peer_value: float | None = None,
           peak_mb: float | None = None, peer_peak_mb: float | None = None, note: str = "") -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    figure = Figure(stage, measure, float(ours), peer, None if peer_value is None else float(peer_value),
                    peak_mb, peer_peak_mb, note)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(asdict(figure)) + "\n")


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read(path: str | os.PathLike) -> list[Figure]:
    figures = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            figures = [Figure(**json.loads(line)) for line in fh if line.strip()]
    return figures


def _num(v: float | None) -> str:
    if v is None:
        return ""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


def table(figures: list[Figure], rss_by_script: dict[str, float] | None = None) -> str:
    """The one summary table: stage, measure, ours, peer, ratio, peak memory (ours / peer), note."""
    rows = []
    for f in figures:
        ratio = f"{f.ours / f.peer_value:.1f}×" if f.peer_value else ""
        peak = " / ".join(_num(v) for v in (f.peak_mb, f.peer_peak_mb) if v is not None)
        rows.append((f.stage, f.measure, _num(f.ours), f.peer or "", _num(f.peer_value), ratio, peak, f.note))
    titles = ("stage", "measure", "ours", "peer", "peer value", "ratio", "peak MB", "note")
    widths = [max(len(r[i]) for r in [titles, *rows]) for i in range(len(titles))]
    left = (True, True, False, True, False, False, False, True)  # text columns left, numbers right

    def line(cells: tuple[str, ...]) -> str:
        return " ".join(c.ljust(w) if lj else c.rjust(w) for c, w, lj in zip(cells, widths, left, strict=True)).rstrip()

    head = line(titles)
    lines = [head, "-" * len(head), *(line(r) for r in rows)]
    if rss_by_script:
        lines += ["", "peak RSS of each benchmark process (ours and its peers together): "
                  + ", ".join(f"{k} {v:,.0f} MB" for k, v in rss_by_script.items())]
    return "\n".join(lines)
