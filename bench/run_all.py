"""Run every benchmark in bench/ (quick mode by default) and print their tables one after another.

    .venv/bin/python bench/run_all.py [--full] [name ...]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    full = "--full" in argv
    names = [a for a in argv if not a.startswith("--")]
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        scripts = [s for s in scripts if any(n in s.stem for n in names)]
    failed = []
    for script in scripts:
        print(f"\n=== {script.stem} ===", flush=True)
        t0 = time.monotonic()
        args = [sys.executable, str(script)] + ([] if full else ["--quick"])
        r = subprocess.run(args, cwd=HERE.parent)
        print(f"({time.monotonic() - t0:.1f} s)", flush=True)
        if r.returncode != 0:
            failed.append(script.stem)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
