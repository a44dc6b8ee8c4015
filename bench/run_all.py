"""Run every benchmark in bench/ (quick mode by default), print their tables one after another, then one
summary table: stage, our throughput, the peer's on the same input, the ratio, peak memory.

    .venv/bin/python bench/run_all.py [--full] [name ...]

Each benchmark adds its headline figures through `bench/summary.py`; the summary is also written to
bench/results/summary.txt.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import summary  # noqa: E402


def main(argv: list[str]) -> int:
    full = "--full" in argv
    names = [a for a in argv if not a.startswith("--")]
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        scripts = [s for s in scripts if any(n in s.stem for n in names)]
    failed = []
    rss: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        figures_file = Path(tmp) / "figures.jsonl"
        env = {**os.environ, summary.ENV: str(figures_file)}
        for script in scripts:
            print(f"\n=== {script.stem} ===", flush=True)
            t0 = time.monotonic()
            args = [sys.executable, str(script)] + ([] if full else ["--quick"])
            proc = subprocess.Popen(args, cwd=HERE.parent, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            rss[script.stem.removeprefix("bench_")] = usage.ru_maxrss / 1024
            print(f"({time.monotonic() - t0:.1f} s)", flush=True)
            if proc.returncode != 0:
                failed.append(script.stem)
        text = summary.table(summary.read(figures_file), rss)
    mode = "full" if full else "quick (--full for the large inputs)"
    print(f"\n=== summary: {mode}, {os.cpu_count()} CPU(s) ===\n{text}")
    out = HERE / "results" / "summary.txt"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
