"""Fine-tuning one base model three ways — full SFT, LoRA, QLoRA (NF4 base with double quantization) — through
`model.train`: the base model's weight memory, the peak memory of the run, trainable parameters and tokens/s.

Each run is its own process, so its peak memory is its own: on CPU the peak RSS, which includes the libraries'
few hundred MB (peft and bitsandbytes too for LoRA and QLoRA), so the RSS when training starts (libraries
imported) and the growth from there are printed beside it; on CUDA `torch.cuda.max_memory_allocated`. On CPU
QLoRA's peak still holds the float base, which is loaded from the checkpoint before it is quantized; a GPU never
holds it (layers are quantized one by one on the device).
The base is a llama-style model (RoPE, RMSNorm, SwiGLU, untied head) with random weights: memory and throughput
do not depend on what it learned. Data: the sft-data examples of the example WhatsApp chats (Sam as the
Assistant), batches of 8 padded examples of up to 256 tokens. All runs: LoRA rank 8 on every projection,
torch.compile off (the same code path for the three), bf16 autocast on a GPU.

    .venv/bin/python bench/bench_finetune.py --quick
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import summary  # noqa: E402  (headline figures for bench/run_all.py)

from model import GPT, ModelConfig, count_parameters, save_model  # noqa: E402
from model.qlora import weight_bytes  # noqa: E402
from tasks.training import LoraParams, SftParams, write_run_config  # noqa: E402
from tests.support import build_chat_world, world_run_config  # noqa: E402

MODES = {"sft": "full SFT", "lora": "LoRA", "qlora": "QLoRA (NF4)"}
SIZES = {  # (d_model, n_layers, n_heads, steps): quick takes about 75 s on a 2-core CPU
    "quick": (512, 4, 8, 8),
    "full": (768, 6, 12, 20),
}


def base_checkpoint(root: Path, vocab: int, size: tuple[int, int, int, int]) -> tuple[Path, ModelConfig]:
    d_model, n_layers, n_heads, _ = size
    cfg = ModelConfig.preset("llama-style", vocab_size=64 * -(-vocab // 64), block_size=256, d_model=d_model,
                             n_layers=n_layers, n_heads=n_heads)
    torch.manual_seed(0)
    return save_model(GPT(cfg), root / "base"), cfg


def run_configs(world, root: Path, base: Path, steps: int, device: str) -> dict[str, Path]:
    common = dict(max_steps=steps, batch_size=8, warmup_steps=2, log_interval=1, eval_interval=0, eval_batches=1,
                  sample_interval=0, checkpoint_interval=steps, keep_last=1, device=device, compile="off")
    params = {
        "sft": SftParams(learning_rate=1e-3, min_lr=1e-4, **common),
        "lora": LoraParams(rank=8, alpha=16, **common),
        "qlora": LoraParams(rank=8, alpha=16, quantize="nf4", **common),
    }
    paths = {}
    for name, p in params.items():
        run = world_run_config(world, "sft" if name == "sft" else "lora", root / name, p, init_from=base)
        paths[name] = write_run_config(run, root / f"{name}.json")
    return paths


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(run_json: str, threads: int) -> None:
    """One training run in this process; prints one JSON line: throughput, trainable parameters, memory."""
    from model.train import train

    if threads:
        torch.set_num_threads(threads)
    run = json.loads(Path(run_json).read_text())
    cuda = run["params"]["device"] == "cuda"
    if run["mode"] == "lora":
        import model.lora  # noqa: F401  peft (and bitsandbytes): their memory is counted at the start, not as training's
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start_rss = rss_mb()
    with contextlib.redirect_stdout(io.StringIO()):  # the run's JSON lines
        result = train(run_json)
    rows = [json.loads(line) for line in open(result.metrics_path)]
    start = next(r for r in rows if r["event"] == "start")
    steady = [r["tokens_per_s"] for r in rows if r["event"] == "train"][1:]  # the first step warms up
    print(json.dumps({
        "tokens_per_s": statistics.median(steady),
        "trainable": start["trainable"],
        "quantized_weight_bytes": start.get("quantized_weight_bytes"),
        "peak_mb": (torch.cuda.max_memory_allocated() / 2**20 if cuda
                    else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "start_rss_mb": start_rss,
        "seconds": result.seconds,
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small model, few steps (about a minute on CPU)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads (default 1: steadier numbers on a shared machine; 0 = torch's default)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # run.json of one run, in its own process
    args = parser.parse_args()
    if args.child:
        child(args.child, args.threads)
        return

    device = "cuda" if torch.cuda.is_available() else "cpu"
    size = SIZES["quick" if args.quick else "full"]
    root = Path(tempfile.mkdtemp(prefix="bench-finetune-"))
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            world = build_chat_world(root, block=256, repeat_first=20, repeat_rest=0)
        base, cfg = base_checkpoint(root, world.tokens_stats["vocab_size"], size)
        full_bytes = weight_bytes(GPT(cfg))
        results = {}
        for name, run_json in run_configs(world, root, base, size[3], device).items():
            out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(run_json), "--threads", str(args.threads)],
                                 check=True, capture_output=True, text=True, cwd=ROOT)
            results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(root, ignore_errors=True)

    where = (torch.cuda.get_device_name(0) + ", bf16 autocast" if device == "cuda"
             else f"CPU, {args.threads or torch.get_num_threads()} thread(s)")
    peak = "peak CUDA alloc" if device == "cuda" else "peak RSS"
    print(f"\nFine-tuning a llama-style base ({count_parameters(cfg) / 1e6:.2f} M parameters: d_model {size[0]}, "
          f"{size[1]} layers) on {where}; {size[3]} steps of 8 chat examples; torch {torch.__version__}")
    header = (f"{'mode':12} {'device':6} {'base weights':>13} {peak:>16} {'RSS at start':>13} {'growth':>10} "
              f"{'trainable':>10} {'tok/s':>7} {'vs SFT':>7}")
    print(header)
    print("-" * len(header))
    sft_tps = results["sft"]["tokens_per_s"]
    for name, r in results.items():
        weights = r["quantized_weight_bytes"] or full_bytes
        start = (f"{r['start_rss_mb']:10.0f} MB {r['peak_mb'] - r['start_rss_mb']:7.0f} MB" if device == "cpu"
                 else f"{'':>13} {'':>10}")
        print(f"{MODES[name]:12} {device:6} {weights / 2**20:10.2f} MB {r['peak_mb']:13.0f} MB {start} "
              f"{r['trainable']:10,d} {r['tokens_per_s']:7.0f} {r['tokens_per_s'] / sft_tps:6.2f}x")
        summary.record(f"{MODES[name]} fine-tuning, {device}", "tokens/s", r["tokens_per_s"], "full SFT",
                       sft_tps if name != "sft" else None, peak_mb=r["peak_mb"],
                       note=f"base weights {weights / 2**20:.1f} MB")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
