"""How much the demo persona chats like the person: the whole persona-eval table (who said it, the classifier
two-sample AUC, memorisation, style, Assistant-turn perplexity) for base, SFT and LoRA, from a pipeline run of
configs/demo.yaml in a temporary data root.

    .venv/bin/python bench/bench_likeness.py --quick   # the demo as it is (tiny preset, ~1 M parameters)
    .venv/bin/python bench/bench_likeness.py           # also the same chats on the `small` preset (~30 M; slow on CPU)
    .venv/bin/python bench/bench_likeness.py --small   # the `small` preset only
    .venv/bin/python bench/bench_likeness.py --quick --sft-dropout 0.1,0.2,0.3   # SFT's dropout chosen by loss

The demo's aims (issue 17): AUC on the non-memorised replies <= 0.8, memorisation <= 10 %, and the share of SFT's
replies attributed to the person >= 80 % of the share of the person's own held-out replies (the ceiling).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import summary  # noqa: E402  (headline figures for bench/run_all.py)

CHATLIKE = Path(sys.executable).with_name("chatlike")
# The `small` preset (vocabulary from the demo's tokenizer, the demo's context), trained longer.
SMALL = {"preset": "small", "block_size": 128, "max_steps": 600}


def run_demo(data_root: Path, name: str, pretrain: dict | None = None, sft: dict | None = None) -> dict:
    """Run every stage of configs/demo.yaml (with `pretrain` and `sft` overrides) and return the persona-eval
    figures, with SFT's held-out Assistant loss (its best evaluation)."""
    cfg = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text(encoding="utf-8"))
    data_root.mkdir(parents=True, exist_ok=True)
    cfg.update(name=name, data_root=str(data_root))
    if pretrain:
        cfg["pretrain"] = {**cfg["pretrain"], **pretrain}
    if sft:
        cfg["sft"] = {**cfg.get("sft", {}), **sft}
    path = data_root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    t0 = time.perf_counter()
    subprocess.run([str(CHATLIKE), "run", "--config", str(path)], check=True, cwd=ROOT, capture_output=True)
    seconds = time.perf_counter() - t0
    out = subprocess.run([str(CHATLIKE), "status", "--config", str(path), "--path", "persona-eval"], check=True,
                         cwd=ROOT, capture_output=True, text=True).stdout.strip()
    figures = json.loads((Path(out) / "likeness.json").read_text(encoding="utf-8"))
    figures["table"] = (Path(out) / "likeness.md").read_text(encoding="utf-8")
    figures["pipeline_seconds"] = seconds
    sft_run = subprocess.run([str(CHATLIKE), "status", "--config", str(path), "--path", "sft"], check=True,
                             cwd=ROOT, capture_output=True, text=True).stdout.strip()
    latest = (Path(sft_run) / "latest").read_text(encoding="utf-8").strip()  # the newest checkpoint's folder
    state = json.loads((Path(sft_run) / latest / "state.json").read_text(encoding="utf-8"))
    figures["sft_best"] = state.get("best") or {}
    return figures


def dropout_sweep(root: Path, values: list[float]) -> None:
    """SFT of the demo with each model dropout (the data stages and pretrain are shared): the held-out Assistant
    loss that chooses it, beside what it does to recitation and likeness."""
    print("\n=== SFT dropout, chosen by the held-out Assistant loss (tiny preset) ===\n")
    head = (f"{'dropout':>8} {'best val loss':>14} {'at step':>8} {'memorised':>10} {'AUC':>6} {'AUC unmem.':>11} "
            f"{'said by person':>15}")
    print(head + "\n" + "-" * len(head))
    for value in values:
        figures = run_demo(root / "sweep", "bench-sweep", sft={"model_dropout": value} if value else None)
        best, sft = figures["sft_best"], figures["rows"]["sft"]
        auc_unmem = sft["auc_unmemorised"]
        print(f"{value:>8g} {best.get('val_loss', float('nan')):>14.4f} {best.get('step', 0):>8} "
              f"{sft['memorised']:>10.1%} {sft['auc']:>6.3f} "
              f"{(f'{auc_unmem:.3f}' if auc_unmem is not None else '—'):>11} {sft['said_by_person']:>15.1%}",
              flush=True)


def aims(figures: dict) -> list[str]:
    rows = figures["rows"]
    sft, ceiling = rows["sft"], rows["person"]["said_by_person"]
    lines = []
    for model in ("sft", "lora"):
        r = rows.get(model)
        if r is None:
            continue
        auc = r["auc_unmemorised"]
        lines.append(f"{model}: AUC without memorised {auc if auc is None else round(auc, 3)} (aim <= 0.8), "
                     f"memorised {r['memorised']:.1%} (aim <= 10 %; the person's own held-out replies: "
                     f"{rows['person']['memorised']:.1%})")
    lines.append(f"sft: said by the person {sft['said_by_person']:.1%} = {sft['said_by_person'] / ceiling:.0%} of "
                 f"the ceiling {ceiling:.1%} (aim >= 80 %)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the demo as it is (tiny preset) only")
    parser.add_argument("--small", action="store_true", help="the same chats on the `small` preset only")
    parser.add_argument("--sft-dropout", default="",
                        help="comma-separated sft.model_dropout values to compare (0: the base's own, none)")
    args = parser.parse_args()
    variants: dict[str, dict | None] = {} if args.small else {"tiny preset (the demo)": None}
    if not args.quick:
        variants["small preset"] = SMALL
    root = Path(tempfile.mkdtemp(prefix="bench-likeness-"))
    try:
        if args.sft_dropout:
            dropout_sweep(root, [float(v) for v in args.sft_dropout.split(",")])
            return
        for label, pretrain in variants.items():
            figures = run_demo(root / label.split()[0], f"bench-{label.split()[0]}", pretrain)
            print(f"\n=== {label}: pipeline {figures['pipeline_seconds']:.0f} s ===\n")
            print(figures["table"])
            print("\n".join(aims(figures)))
            sft = figures["rows"]["sft"]
            summary.record(f"persona likeness, {label}", "SFT two-sample AUC (0.5 = like the person)",
                           sft["auc"], note=f"said by the person {sft['said_by_person']:.0%}, "
                                            f"memorised {sft['memorised']:.0%}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
