"""Training throughput of the model variants (forward + backward tokens/s), printed as tables.

CPU table: every attention / position / MLP / MoE variant at about the parameter count of the `tiny` preset,
with the plain GPT-2-style model as the baseline. Accelerator table (CUDA only): the `gpt2-124m` preset in
nanoGPT's bench.py setting (batch 12 x 1024 tokens, bf16 autocast, torch.compile, AdamW step), with MFU, next to
the figure the nanoGPT README reports for that setting.

    .venv/bin/python bench/bench_model.py --quick
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import summary  # noqa: E402  (headline figures for bench/run_all.py)

from model import GPT, ModelConfig, count_parameters, device_peak_flops, flops_per_token, mfu  # noqa: E402

# Every variant starts from the tiny preset (d_model 128, 4 layers, 4 heads, vocab 2048); `equal_parameters`
# then sets its MLP hidden size (an expert's, for MoE) so that its parameter count (active parameters, for MoE)
# is the baseline's to within one hidden unit per layer.
VARIANTS: dict[str, dict] = {
    "gpt2-style (learned, GELU, LayerNorm)": {},
    "sinusoidal": dict(position="sinusoidal"),
    "relative (T5 buckets)": dict(position="relative"),
    "alibi": dict(position="alibi"),
    "rope": dict(position="rope"),
    "post-norm, ReLU": dict(norm_position="post", mlp="relu"),
    "llama-style (RoPE, RMSNorm, SwiGLU, GQA 2)": dict(position="rope", norm="rmsnorm", mlp="swiglu",
                                                      n_kv_heads=2, bias=False),
    "multi-query + GeGLU": dict(position="rope", n_kv_heads=1, mlp="geglu"),
    "sliding window 64 + 4 sinks": dict(attention="sliding_window", window_size=64, n_sink_tokens=4,
                                        position="rope"),
    "linear attention (elu+1)": dict(attention="linear", position="none"),
    "bigbird (16-token blocks, 1+3+2)": dict(attention="bigbird", bigbird_block_size=16, position="rope"),
    "MLA (latent 64, decoupled RoPE)": dict(attention="mla", position="rope", mla_kv_lora_rank=64),
    "MoE 4 experts top-1": dict(n_experts=4, n_experts_per_token=1),
    "MoE 8 experts top-2 + 1 shared": dict(n_experts=8, n_experts_per_token=2, n_shared_experts=1),
}

# nanoGPT README (Dec 2022): torch.compile "cutting down iteration time from ~250ms / iter to 135ms / iter"
# for bench.py's default setting (GPT-2 124M, batch 12, block 1024, bf16) on an A100.
NANOGPT_REFERENCE = dict(device="A100 (nanoGPT README, compiled)", ms_per_iter=135.0, batch=12, seq=1024,
                         peak=312e12)


def equal_parameters(cfg: ModelConfig, target: int) -> ModelConfig:
    """cfg with the MLP hidden size (d_ff, or moe_d_ff with experts) whose parameter count (active, with experts)
    is closest to target: what a variant saves in attention or positions goes to its MLP, and the reverse."""
    field = "moe_d_ff" if cfg.n_experts else "d_ff"

    def gap(hidden: int) -> int:
        return abs(count_parameters(cfg.replace(**{field: hidden}), active_only=True) - target)

    return cfg.replace(**{field: min(range(1, 16 * cfg.d_model + 1), key=gap)})


def throughput(model: torch.nn.Module, batch: int, seq: int, steps: int, warmup: int, device: str,
               optimizer: torch.optim.Optimizer | None = None, autocast_dtype: torch.dtype | None = None) -> float:
    """Tokens per second of forward + backward (+ optimizer step when one is given) on random tokens, from the
    median step time (robust to other processes sharing the machine)."""
    vocab = model.config.vocab_size if hasattr(model, "config") else model._orig_mod.config.vocab_size
    x = torch.randint(0, vocab, (batch, seq + 1), device=device)
    inputs, targets = x[:, :-1], x[:, 1:]

    def step() -> None:
        with torch.autocast(device_type=device.split(":")[0], dtype=autocast_dtype or torch.bfloat16,
                            enabled=autocast_dtype is not None):
            loss = model(inputs, targets=targets).loss
        loss.backward()
        if optimizer is not None:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True) if optimizer is not None else model.zero_grad(set_to_none=True)

    def synchronize() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        synchronize()
        start = time.perf_counter()
        step()
        synchronize()
        times.append(time.perf_counter() - start)
    return batch * seq / statistics.median(times)


def cpu_table(batch: int, seq: int, steps: int, rounds: int) -> None:
    """Variants are measured in interleaved rounds and keep their best round, so a burst of load from another
    process on a shared machine hurts one round of every variant rather than all rounds of one variant."""
    base = ModelConfig.preset("tiny", block_size=max(256, seq))
    target = count_parameters(base)
    print(f"\nCPU forward+backward at the tiny preset's {target / 1e6:.3f}M parameters (MoE: active), batch {batch} x "
          f"{seq} tokens, median of {steps} steps, best of {rounds} rounds, {torch.get_num_threads()} thread(s), "
          f"torch {torch.__version__}")
    models = {}
    for name, overrides in VARIANTS.items():
        torch.manual_seed(0)
        models[name] = GPT(equal_parameters(base.replace(**overrides), target)).train()
    best = dict.fromkeys(VARIANTS, 0.0)
    for _ in range(rounds):
        for name, model in models.items():
            best[name] = max(best[name], throughput(model, batch, seq, steps, warmup=1, device="cpu"))
    header = (f"{'variant':44} {'params':>8} {'active':>8} {'MLP hidden':>10} {'tokens/s':>9} {'vs base':>8} "
              f"{'GFLOP/tok':>9}")
    print(header)
    print("-" * len(header))
    baseline = best[next(iter(VARIANTS))]
    for name, model in models.items():
        cfg = model.config
        hidden = f"{cfg.expert_hidden}/expert" if cfg.n_experts else str(cfg.ffn_hidden)
        print(f"{name:44} {count_parameters(cfg) / 1e6:7.3f}M {count_parameters(cfg, active_only=True) / 1e6:7.3f}M"
              f" {hidden:>10} {best[name]:9.0f} {best[name] / baseline:7.2f}x {flops_per_token(cfg, seq) / 1e9:9.4f}")
    slowest = min(best, key=best.__getitem__)
    summary.record("model fwd+bwd, tiny size, CPU", "tokens/s, 1 thread", baseline,
                   f"slowest variant: {slowest}"[:30], best[slowest])


def accelerator_table(device: str, preset: str, batch: int, seq: int, steps: int, compile_model: bool) -> None:
    cfg = ModelConfig.preset(preset)
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"
    peak = device_peak_flops(name)
    torch.manual_seed(0)
    model = GPT(cfg).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=device.startswith("cuda"))
    runner = torch.compile(model) if compile_model else model
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    tps = throughput(runner, batch, seq, steps, warmup=3, device=device, optimizer=optimizer,
                     autocast_dtype=torch.bfloat16)
    fpt = flops_per_token(cfg, seq)
    ours = mfu(tps, fpt, peak)
    ref = NANOGPT_REFERENCE
    ref_tps = ref["batch"] * ref["seq"] / (ref["ms_per_iter"] / 1000)
    ref_mfu = mfu(ref_tps, flops_per_token(ModelConfig.preset("gpt2-124m"), ref["seq"]), ref["peak"])
    print(f"\n{preset} training step (fwd+bwd+AdamW), batch {batch} x {seq}, bf16 autocast, "
          f"torch.compile={compile_model}, {fpt / 1e6:.0f} MFLOP/token")
    header = f"{'run':40} {'tokens/s':>10} {'ms/iter':>8} {'MFU':>7}"
    print(header)
    print("-" * len(header))
    mfu_text = f"{ours:7.1%}" if ours is not None else f"{'n/a':>7}"
    print(f"{'this model on ' + name:40} {tps:10.0f} {batch * seq / tps * 1000:8.1f} {mfu_text}")
    print(f"{'gpt2-124m on ' + ref['device']:40} {ref_tps:10.0f} {ref['ms_per_iter']:8.1f} {ref_mfu:7.1%}")
    summary.record(f"{preset} train step on {name}"[:34], "tokens/s", tps, f"nanoGPT on {ref['device']}"[:30],
                   ref_tps, note=f"MFU {ours:.1%}" if ours is not None else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small batch and few steps (about a minute on CPU)")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--seq", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads (default 1: stable numbers on a shared machine; 0 = torch's default)")
    parser.add_argument("--skip-cpu", action="store_true", help="only the accelerator table")
    parser.add_argument("--accelerator-preset", default="gpt2-124m")
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.skip_cpu:
        cpu_table(batch=args.batch or (4 if args.quick else 8), seq=args.seq or (128 if args.quick else 256),
                  steps=args.steps or (3 if args.quick else 10), rounds=args.rounds or (3 if args.quick else 5))
    if torch.cuda.is_available():
        accelerator_table("cuda", args.accelerator_preset, batch=12, seq=1024, steps=10 if args.quick else 30,
                          compile_model=True)
    else:
        print(f"\nNo CUDA GPU present (torch {torch.__version__}, torch.cuda.is_available() is False): the "
              f"{args.accelerator_preset} bf16 + torch.compile tokens/s and MFU table was NOT measured. On a GPU "
              f"machine run: .venv/bin/python bench/bench_model.py --skip-cpu")


if __name__ == "__main__":
    main()
