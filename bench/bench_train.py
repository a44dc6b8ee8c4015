"""The training loop's throughput (pretrain, SFT, LoRA) and the quality figure of the demo chain, as tables.

1. CPU pretraining with `model.train.train` on the tiny and small presets: tokens/s of the whole loop (data,
   schedule, clipping, logging) next to a bare forward + backward + AdamW step on the same shapes
   (bench_model.throughput), so the loop's own overhead shows; MFU is n/a on a CPU (no known peak).
2. CPU fine-tuning steps/s: full SFT vs LoRA (rank 8 on every projection) from the tiny checkpoint.
3. Assistant-turn perplexity on the held-out chats: the pretrained tiny model, after SFT, after LoRA.
4. CUDA only: gpt2-124m pretraining through the same loop with bf16 autocast, torch.compile and fused AdamW:
   tokens/s, ms/iter, MFU and peak memory, beside nanoGPT's README figure for that setting.

Data: a 400-id tokenizer and token shards of the example WhatsApp chats (examples/whatsapp), and their sft-data
examples with Sam as the Assistant. Throughput does not depend on the text; the quality table is a demo on
10 KB of chat, not a language model.

    .venv/bin/python bench/bench_train.py --quick
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import summary  # noqa: E402  (headline figures for bench/run_all.py)
from bench_model import NANOGPT_REFERENCE, throughput  # noqa: E402

from model import GPT, ModelConfig, count_parameters, flops_per_token, mfu  # noqa: E402
from model.evaluation import perplexity_table  # noqa: E402
from model.train import train  # noqa: E402
from tasks.training import LoraParams, PretrainParams, SftParams  # noqa: E402
from tests.support import ChatWorld, build_chat_world, world_run_config  # noqa: E402


def steady_rate(metrics_path: str) -> tuple[float, float]:
    """(tokens/s, steps/s): medians over the logged steps after the first window (warm-up, compilation), robust
    to bursts of load from other processes on a shared machine."""
    rows = [r for r in map(json.loads, open(metrics_path)) if r["event"] == "train"][1:]
    times = [(b["elapsed_s"] - a["elapsed_s"]) / (b["step"] - a["step"]) for a, b in zip(rows, rows[1:], strict=False)]
    return statistics.median(r["tokens_per_s"] for r in rows), 1.0 / max(statistics.median(times), 1e-9)


def common(steps: int, log_every: int, **kw) -> dict:
    return dict(max_steps=steps, log_interval=log_every, eval_interval=0, eval_batches=4, sample_interval=0,
                checkpoint_interval=steps, keep_last=1, **kw)


def pretrain_table(world: ChatWorld, root: Path, quick: bool) -> None:
    rows = []
    for preset, batch, block, steps in (("tiny", 8, 256, 12 if quick else 40), ("small", 4, 256, 6 if quick else 16)):
        params = PretrainParams(preset=preset, block_size=block, batch_size=batch, device="cpu", warmup_steps=2,
                                model={"vocab_size": ModelConfig.preset(preset).vocab_size},
                                **common(steps, 1))
        run = world_run_config(world, "pretrain", root / f"pretrain-{preset}", params)
        result = train(run)
        loop_tps, steps_per_s = steady_rate(result.metrics_path)
        cfg = ModelConfig.preset(preset, block_size=block)
        torch.manual_seed(0)
        model = GPT(cfg).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        # the best of two medians: a burst of load from another process on a shared machine spoils one, not both
        bare = max(throughput(model, batch, block, steps=3 if quick else 8, warmup=1, device="cpu",
                              optimizer=optimizer) for _ in range(2))
        rows.append((preset, count_parameters(cfg), batch * block, loop_tps, steps_per_s, bare))
    print(f"\nCPU pretraining through model.train ({torch.get_num_threads()} thread(s), torch {torch.__version__}); "
          f"bare = forward + backward + AdamW on random tokens, same shapes")
    header = f"{'preset':8} {'params':>8} {'tok/step':>9} {'loop tok/s':>11} {'steps/s':>8} {'bare tok/s':>11} " \
             f"{'loop/bare':>9} {'MFU':>5}"
    print(header)
    print("-" * len(header))
    for preset, n, tokens, loop_tps, sps, bare in rows:
        print(f"{preset:8} {n / 1e6:7.2f}M {tokens:9d} {loop_tps:11.0f} {sps:8.2f} {bare:11.0f} "
              f"{loop_tps / bare:8.0%} {'n/a':>5}")
        summary.record(f"pretrain loop, {preset} preset, CPU", "tokens/s", loop_tps, "bare fwd+bwd+AdamW step",
                       bare)


def demo_base(world: ChatWorld, root: Path, quick: bool) -> Path:
    """The tiny preset pretrained on the chats: the base that SFT and LoRA start from."""
    steps = 120 if quick else 400
    params = PretrainParams(preset="tiny", block_size=256, batch_size=8, device="cpu", learning_rate=3e-3,
                            min_lr=3e-4, warmup_steps=10, **common(steps, 20))
    run = world_run_config(world, "pretrain", root / "demo-base", params)
    return Path(train(run).checkpoint)


def finetune_table(world: ChatWorld, root: Path, base: Path, quick: bool) -> tuple[Path, Path]:
    steps = 60 if quick else 200
    sft_params = SftParams(batch_size=8, device="cpu", learning_rate=1e-3, min_lr=1e-4, warmup_steps=5,
                           **common(steps, 1))
    lora_params = LoraParams(batch_size=8, device="cpu", learning_rate=5e-3, min_lr=5e-4, warmup_steps=5,
                             rank=8, alpha=16, **common(steps, 1))
    out = {}
    for mode, params in (("sft", sft_params), ("lora", lora_params)):
        run = world_run_config(world, mode, root / mode, params, init_from=base)
        t0 = time.perf_counter()
        result = train(run)
        tps, sps = steady_rate(result.metrics_path)
        start = next(r for r in map(json.loads, open(result.metrics_path)) if r["event"] == "start")
        out[mode] = (result, tps, sps, start["trainable"], start["parameters"], time.perf_counter() - t0)
    print(f"\nCPU fine-tuning from the tiny checkpoint (pretrained {base.name}), batch 8 chat examples (padded), "
          f"{steps} steps")
    header = f"{'mode':6} {'trainable':>10} {'of':>8} {'steps/s':>8} {'tok/s':>8} {'vs SFT':>7} {'adapter/ckpt size':>18}"
    print(header)
    print("-" * len(header))
    sft_sps = out["sft"][2]
    for mode, (result, tps, sps, trainable, total, _) in out.items():
        ckpt = Path(result.checkpoint)
        weights = ckpt / ("adapter_model.safetensors" if mode == "lora" else "model.safetensors")
        print(f"{mode:6} {trainable:10,d} {total / 1e6:7.2f}M {sps:8.2f} {tps:8.0f} {sps / sft_sps:6.2f}x "
              f"{weights.stat().st_size / 1e6:15.2f} MB")
        summary.record(f"{mode} fine-tuning, tiny preset, CPU", "tokens/s", tps)
    return Path(out["sft"][0].run_dir), Path(out["lora"][0].run_dir)


def quality_table(world: ChatWorld, base: Path, sft: Path, lora: Path) -> None:
    table = perplexity_table(world.sft.val_path, world.tokenizer, base, sft, lora)
    print(f"\nAssistant-turn perplexity on the held-out sessions ({world.sft.examples['val']} examples, "
          f"{table.rows[0]['tokens']} Assistant tokens)")
    print(table.markdown())


def gpu_table(world: ChatWorld, root: Path, quick: bool) -> None:
    name = torch.cuda.get_device_name(0)
    steps = 30 if quick else 80
    params = PretrainParams(preset="gpt2-124m", block_size=1024, batch_size=12, device="cuda", dtype="bfloat16",
                            compile="on", learning_rate=6e-4, min_lr=6e-5, warmup_steps=5,
                            model={"vocab_size": 50304}, **common(steps, 10))
    run = world_run_config(world, "pretrain", root / "gpt2", params)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.cuda.reset_peak_memory_stats()
    result = train(run)
    tps, sps = steady_rate(result.metrics_path)
    cfg = ModelConfig.preset("gpt2-124m")
    rows = [r for r in map(json.loads, open(result.metrics_path)) if r["event"] == "train"]
    util = rows[-1]["mfu"]
    ref = NANOGPT_REFERENCE
    ref_tps = ref["batch"] * ref["seq"] / (ref["ms_per_iter"] / 1000)
    ref_mfu = mfu(ref_tps, flops_per_token(cfg, ref["seq"]), ref["peak"])
    memory = torch.cuda.max_memory_allocated() / 2**30
    print(f"\ngpt2-124m pretraining through model.train on {name}: batch 12 x 1024, bf16 autocast, torch.compile, "
          f"fused AdamW, {steps} steps (last window)")
    header = f"{'run':44} {'tokens/s':>10} {'ms/iter':>8} {'MFU':>7} {'max mem':>9}"
    print(header)
    print("-" * len(header))
    print(f"{'model.train on ' + name:44} {tps:10.0f} {1000 / sps:8.1f} "
          f"{(f'{util:.1%}' if util is not None else 'n/a'):>7} {memory:7.1f} GiB")
    print(f"{'nanoGPT bench.py on ' + ref['device']:44} {ref_tps:10.0f} {ref['ms_per_iter']:8.1f} {ref_mfu:7.1%} "
          f"{'':>9}")
    summary.record("pretrain gpt2-124m, GPU", "tokens/s", tps, f"nanoGPT on {ref['device']}"[:30], ref_tps,
                   peak_mb=memory * 1024, note=f"MFU {util:.1%}" if util is not None else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few steps (under 3 minutes on a 2-core CPU)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads (default 1: steadier numbers on a shared machine; 0 = torch's default)")
    parser.add_argument("--gpu-only", action="store_true", help="only the CUDA pretraining table")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    root = Path(tempfile.mkdtemp(prefix="bench-train-"))
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the runs' JSON lines; the tables are printed after
            world = build_chat_world(root, block=256, repeat_first=20, repeat_rest=0)
        if not args.gpu_only:
            _quiet(pretrain_table, world, root, args.quick)
            tiny = _quiet(demo_base, world, root, args.quick)
            sft, lora = _quiet(finetune_table, world, root, tiny, args.quick)
            quality_table(world, tiny, sft, lora)
        if torch.cuda.is_available():
            _quiet(gpu_table, world, root, args.quick)
        else:
            print("\nNo CUDA GPU present (torch.cuda.is_available() is False): the gpt2-124m pretraining table "
                  "(bf16 autocast, torch.compile, fused AdamW: tokens/s, MFU, peak memory) was NOT measured; "
                  "run this script on a GPU machine for it")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


def _quiet(fn, *args):
    """Run fn with the training runs' JSON lines hidden; only the table lines it prints come through."""
    real = sys.stdout
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        result = fn(*args)
    real.write("".join(line + "\n" for line in buffer.getvalue().splitlines() if not line.startswith("{")))
    return result


if __name__ == "__main__":
    main()
