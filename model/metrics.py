"""What a training run reports: one JSON object per line (`start`, `train`, `eval`, `sample`, `checkpoint`,
`done`) to stdout and to `<run_dir>/metrics.jsonl`, the throughput those lines quote, and the loss curve drawn
from them as `<run_dir>/loss.png`.

Only rank 0 writes. A resumed run first drops what a killed run logged after the checkpoint it resumes from, so
the file stays the record of one run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storage.atomic import atomic_path, write_text_atomic

METRICS_NAME = "metrics.jsonl"
LOSS_PLOT = "loss.png"


class MetricsLog:
    """One JSON object per line, to stdout and to metrics.jsonl (when enabled: rank 0 only)."""

    def __init__(self, run_dir: Path, enabled: bool, resume_step: int | None):
        self.path = run_dir / METRICS_NAME
        self.enabled = enabled
        if enabled and resume_step is not None and self.path.is_file():
            kept = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                    if line.strip() and json.loads(line).get("step", 0) <= resume_step]
            write_text_atomic(self.path, "".join(line + "\n" for line in kept))
        elif enabled and resume_step is None:
            self.path.unlink(missing_ok=True)

    def emit(self, event: str, **fields: Any) -> None:
        if not self.enabled:
            return
        line = json.dumps({"event": event, **fields}, ensure_ascii=False)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


class Throughput:
    """Training tokens and seconds, per logging window and over the whole run (steps only: not the time spent
    evaluating, sampling or saving)."""

    def __init__(self) -> None:
        self.window_tokens, self.window_seconds = 0, 0.0
        self.total_tokens, self.total_seconds = 0, 0.0

    @property
    def window_open(self) -> bool:
        """Whether the current window has counted a step yet."""
        return self.window_tokens > 0

    def add(self, tokens: int, seconds: float) -> None:
        self.window_tokens += tokens
        self.window_seconds += seconds

    def close_window(self) -> float | None:
        """Tokens/s of the window now ending; its counts go to the run's totals."""
        rate = self.window_tokens / self.window_seconds if self.window_seconds > 0 else None
        self.total_tokens += self.window_tokens
        self.total_seconds += self.window_seconds
        self.window_tokens, self.window_seconds = 0, 0.0
        return rate

    def overall(self) -> float | None:
        return self.total_tokens / self.total_seconds if self.total_seconds > 0 else None


def read_metrics(path: str | os.PathLike) -> Iterator[dict]:
    """The JSON records of a run's metrics.jsonl (or of its stdout), in order."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def plot_loss_curve(metrics_path: Path, out_path: Path, title: str = "") -> Path | None:
    """Train (and validation) loss against step from metrics.jsonl, as a PNG (matplotlib, Agg backend)."""
    import matplotlib  # only rank 0 at the end of a run draws: no need to load it in every process

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train, val = [], []
    for rec in read_metrics(metrics_path):
        if rec.get("event") == "train" and rec.get("loss") is not None:
            train.append((rec["step"], rec["loss"]))
        elif rec.get("event") == "eval" and rec.get("val_loss") is not None:
            val.append((rec["step"], rec["val_loss"]))
    if not train and not val:
        return None
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    if train:
        ax.plot(*zip(*train, strict=True), label="train loss")
    if val:
        ax.plot(*zip(*val, strict=True), marker="o", label="validation loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats / token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        with atomic_path(out_path, keep_suffix=True) as tmp:
            fig.savefig(tmp, format="png")
    finally:
        plt.close(fig)
    return out_path
