"""Training runs — pretraining on token shards, supervised fine-tuning (SFT) and LoRA on chat examples — as one
resumable loop.

    python -m model.train --config run.json            # one process
    torchrun --standalone --nproc_per_node 8 -m model.train --config run.json   # DDP, one GPU per process
    train(run_cfg) -> TrainResult                      # in-process (tests, benchmarks)

`run.json` (see `RunConfig`; `tasks.training.make_run_config` writes it):
`{"mode": "pretrain"|"sft"|"lora", "run_dir", "tokenizer": tokenizer.json, "data": {"train", "val",
"vocab_size", "tokenizer_sha256"}, "init_from": checkpoint (sft, lora), "params": {...}, "model": {...} (optional
ModelConfig; pretrain resolves it from params.preset / params.model / params.block_size and the tokenizer),
"resume": true}`.

The loop, as nanoGPT's: schedule (linear warmup, then cosine decay to min_lr), micro-steps (gradient
accumulation; bf16 autocast, torch.compile and DistributedDataParallel where `model.hardware` says so), clip,
step (AdamW, fused on CUDA; decay on matrices and embeddings only), log, eval, sample, save. The pieces live
beside it: batches in `model.batches`, metrics.jsonl and loss.png in `model.metrics`, tensors of a checkpoint in
`model.checkpoint`, its folders and state.json in `storage.checkpoints` (DESIGN §3), evaluation of trained
models in `model.evaluation`.

A checkpoint `<run_dir>/step-000500/` holds the weights (LoRA: only the adapter), `optimizer.pt` and
`state.json`: step, tokens seen, model config, settings, the data stream's position, the RNG states of every
rank, and the tokenizer. Resuming continues the same data stream, the same schedule and the same RNG, so on CPU a
run of 2N steps and a run of N steps + resume + N steps end with bitwise identical weights. Under DDP each rank's
RNG is restored too; the data position must then be resumed with the same world size.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from model.batches import BatchSource, ChatBatches, TokenBatches
from model.checkpoint import (
    load_config,
    load_model,
    load_optimizer,
    rng_state,
    save_model,
    save_optimizer,
    set_rng_state,
)
from model.config import ModelConfig, device_peak_flops, flops_per_token, mfu
from model.generate import generate
from model.hardware import (
    Distributed,
    allow_tf32,
    autocast,
    autocast_dtype,
    no_sync,
    pick_device,
    setup_distributed,
    use_compile,
    wrap_for_training,
)
from model.metrics import LOSS_PLOT, MetricsLog, Throughput, plot_loss_curve
from model.sft import width_multiple
from model.transformer import GPT
from storage.chat_format import TRAIN_ON, assistant_prompt, load_tokenizer, tokenizer_file
from storage.checkpoints import (
    STATE_FORMAT,
    CheckpointMismatch,
    config_difference,
    latest_checkpoint,
    mark_best,
    new_checkpoint_folder,
    publish_checkpoint,
    read_state,
    remove_stale_temporaries,
    resolve_checkpoint,
    weights_sha256,
    write_state,
)
from storage.fingerprint import hash_file
from storage.tokens import IGNORE_INDEX

log = logging.getLogger(__name__)

RUN_MODES = ("pretrain", "sft", "lora")
QUANTIZE = ("none", "nf4")  # how a LoRA run holds its frozen base: as it is, or QLoRA's 4-bit NormalFloat
VOCAB_MULTIPLE = 64  # pad the embedding to a multiple of 64 rows (nanoGPT's 50304): faster matmuls, same model
DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "q_b_proj", "kv_a_proj", "kv_b_proj",
                        "gate_proj", "up_proj", "down_proj"]  # names a model lacks are skipped (model.lora)


# ------------------------------------------------------------------------------------------------------------
# configuration of a run


@dataclass
class TrainSettings:
    """Every training knob (the union of tasks.training's PretrainParams, SftParams and LoraParams)."""

    max_steps: int = 200
    batch_size: int = 8
    grad_accum: int = 1
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    warmup_steps: int = 20
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    log_interval: int = 10
    eval_interval: int = 50
    eval_batches: int = 20
    checkpoint_interval: int = 100
    keep_last: int = 3
    sample_interval: int = 100
    sample_prompt: str = ""
    sample_tokens: int = 48
    early_stop_patience: int = 0
    seed: int = 1337
    device: str = "auto"
    dtype: str = "auto"
    compile: str = "auto"
    nproc: int = 1
    # pretrain: the model
    preset: str = "tiny"
    model: dict = field(default_factory=dict)
    block_size: int | None = None
    # sft / lora
    train_on: str = "assistant"
    model_dropout: float | None = None  # the model's dropout while fine-tuning; None: the base's
    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: list(DEFAULT_LORA_TARGETS))
    # lora: QLoRA (the frozen base in 4-bit NF4 with double quantization) and a paged optimizer
    quantize: str = "none"
    paged_optimizer: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"run.json params: unknown field(s) {', '.join(unknown)}")
        settings = cls(**data)
        if settings.train_on not in TRAIN_ON:
            raise ValueError(f"train_on={settings.train_on!r} is not one of {', '.join(TRAIN_ON)}")
        if settings.model_dropout is not None and not 0.0 <= settings.model_dropout < 1.0:
            raise ValueError(f"model_dropout={settings.model_dropout} must be in [0, 1)")
        for name, options in (("device", ("auto", "cpu", "cuda")), ("dtype", ("auto", "float32", "bfloat16")),
                              ("compile", ("auto", "on", "off")), ("quantize", QUANTIZE)):
            if getattr(settings, name) not in options:
                raise ValueError(f"{name}={getattr(settings, name)!r} is not one of {', '.join(options)}")
        return settings

    def lora_signature(self) -> dict:
        return {"rank": self.rank, "alpha": self.alpha, "dropout": self.dropout,
                "target_modules": list(self.target_modules), "quantize": self.quantize,
                "paged_optimizer": self.paged_optimizer}


@dataclass
class RunConfig:
    """What `run.json` says: the mode, where to write, the data, the tokenizer, the settings."""

    mode: str
    run_dir: Path
    tokenizer: Path
    train_data: str | list[str]
    settings: TrainSettings
    val_data: str | list[str] | None = None
    init_from: Path | None = None
    vocab_size: int | None = None  # of the token shards (encode manifest), checked against the tokenizer
    tokenizer_sha256: str | None = None
    model: dict | None = None
    resume: bool = True

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        known = {"mode", "run_dir", "tokenizer", "data", "init_from", "params", "model", "resume"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"run.json: unknown key(s) {', '.join(unknown)}")
        missing = [k for k in ("mode", "run_dir", "tokenizer", "data") if data.get(k) is None]
        if missing:
            raise ValueError(f"run.json: missing {', '.join(missing)}")
        if data["mode"] not in RUN_MODES:
            raise ValueError(f"run.json: mode {data['mode']!r} is not one of {', '.join(RUN_MODES)}")
        d = dict(data["data"])
        unknown = sorted(set(d) - {"train", "val", "vocab_size", "tokenizer_sha256"})
        if unknown:
            raise ValueError(f"run.json data: unknown key(s) {', '.join(unknown)}")
        if not d.get("train"):
            raise ValueError("run.json data: no 'train' data")
        if data["mode"] != "pretrain" and not data.get("init_from"):
            raise ValueError(f"run.json: a {data['mode']} run needs init_from (the checkpoint to fine-tune)")
        if data["mode"] != "lora" and (data.get("params") or {}).get("quantize", "none") != "none":
            raise ValueError(f"run.json params: quantize applies to lora runs (QLoRA); a {data['mode']} run trains "
                             f"every weight, which must stay in full precision")
        return cls(
            mode=data["mode"], run_dir=Path(data["run_dir"]), tokenizer=Path(data["tokenizer"]),
            train_data=d["train"], val_data=d.get("val"), vocab_size=d.get("vocab_size"),
            tokenizer_sha256=d.get("tokenizer_sha256"),
            init_from=Path(data["init_from"]) if data.get("init_from") else None,
            settings=TrainSettings.from_dict(data.get("params") or {}), model=data.get("model"),
            resume=bool(data.get("resume", True)),
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> RunConfig:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such run config")
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from exc

    @classmethod
    def coerce(cls, value: RunConfig | dict | str | os.PathLike) -> RunConfig:
        if isinstance(value, RunConfig):
            return value
        if isinstance(value, dict):
            return cls.from_dict(value)
        return cls.load(value)


@dataclass
class TrainResult:
    run_dir: str
    checkpoint: str  # the newest checkpoint folder (LoRA: the adapter's)
    step: int
    tokens_seen: int
    train_loss: float | None
    val_loss: float | None
    tokens_per_s: float | None  # this invocation's training throughput (all ranks)
    mfu: float | None  # None on a device without a known peak (CPU)
    seconds: float
    metrics_path: str
    loss_plot: str | None
    resumed_from: str | None = None


# ------------------------------------------------------------------------------------------------------------
# the schedule, the model, the optimizer groups


def learning_rate(step: int, s: TrainSettings) -> float:
    """Learning rate of optimiser step `step` (0-based): linear warmup, then cosine from the peak to min_lr."""
    if step < s.warmup_steps:
        return s.learning_rate * (step + 1) / s.warmup_steps
    if step >= s.max_steps:
        return s.min_lr
    progress = (step - s.warmup_steps) / max(1, s.max_steps - s.warmup_steps)
    return s.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (s.learning_rate - s.min_lr)


def resolve_model_config(settings: TrainSettings, tokenizer_vocab: int) -> ModelConfig:
    """Pretraining: the preset with the tokenizer's vocabulary (rounded up to a multiple of 64), the run's block
    size, and any explicit `model` fields on top."""
    overrides = dict(settings.model)
    overrides.setdefault("vocab_size", VOCAB_MULTIPLE * math.ceil(tokenizer_vocab / VOCAB_MULTIPLE))
    if settings.block_size is not None:
        overrides.setdefault("block_size", settings.block_size)
    return ModelConfig.preset(settings.preset, **overrides)


def _check_same_config(found: ModelConfig, requested: ModelConfig, where: Path, requested_from: str) -> None:
    a, b = found.to_dict(), requested.to_dict()
    if a != b:
        raise CheckpointMismatch(
            f"checkpoint {where} has another model config than {requested_from}: "
            f"{config_difference(a, b, 'checkpoint', 'requested')} "
            f"(checkpoint config {json.dumps(a, sort_keys=True)}; requested {json.dumps(b, sort_keys=True)})"
        )


def _check_tokenizer(run: RunConfig, tokenizer: Any, tok_file: Path, sha: str) -> None:
    vocab = tokenizer.get_vocab_size()
    if run.tokenizer_sha256 and run.tokenizer_sha256 != sha:
        raise ValueError(f"tokenizer {tok_file} (sha256 {sha[:12]}…, {vocab} ids) is not the one the token shards "
                         f"were encoded with (sha256 {run.tokenizer_sha256[:12]}…, {run.vocab_size} ids)")
    if run.vocab_size is not None and run.vocab_size != vocab:
        raise ValueError(f"tokenizer {tok_file} has {vocab} ids but the token shards were encoded with a "
                         f"{run.vocab_size}-id tokenizer")


def _trainable_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


# ------------------------------------------------------------------------------------------------------------
# the run


def train(run_cfg: RunConfig | dict | str | os.PathLike, *, stop_at: int | None = None) -> TrainResult:
    """Run (or resume) the training run described by run_cfg (a RunConfig, the run.json dict, or its path).

    stop_at: stop after this step (with a checkpoint) as if interrupted; the schedule still ends at max_steps.
    """
    run = RunConfig.coerce(run_cfg)
    d = setup_distributed(run.settings.device)
    try:
        return Trainer(run, d).fit(stop_at)
    finally:
        d.close()


class Trainer:
    """One invocation of a run: set up (or resume) everything, then `fit` up to a step."""

    def __init__(self, run: RunConfig, d: Distributed):
        self.run, self.d, self.s = run, d, run.settings
        self.run_dir = run.run_dir
        self.device = pick_device(self.s.device, d)
        self.amp_dtype = autocast_dtype(self.s.dtype, self.device)
        self.compile = use_compile(self.s.compile, self.device)
        if self.device.type == "cuda":
            allow_tf32()

    # -- the loop ---------------------------------------------------------------------------------------------

    def fit(self, stop_at: int | None) -> TrainResult:
        s, d = self.s, self.d
        self.t_start = time.perf_counter()
        end = s.max_steps if stop_at is None else min(stop_at, s.max_steps)
        self._setup(end)
        if self.early_stopped:  # a run that stopped early is finished
            end = self.step
        while self.step < end:
            t0 = time.perf_counter()
            if self.moe and not self.clock.window_open:  # a new logging window: count only its training tokens
                self.gpt.reset_expert_usage()
            lr = learning_rate(self.step, s)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            loss, tokens = self._micro_steps()
            grad_norm = nn.utils.clip_grad_norm_(self.params, s.grad_clip) if s.grad_clip > 0 else None
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.step += 1
            self.tokens_seen += tokens
            final = self.step == end

            if self.step % s.log_interval == 0 or final:
                self._log_step(loss, tokens, t0, lr, grad_norm)
            else:
                self.clock.add(tokens, time.perf_counter() - t0)
            improved = False
            if (s.eval_interval and self.step % s.eval_interval == 0) or final:
                improved = self._evaluate()
            if d.main and s.sample_interval and (self.step % s.sample_interval == 0 or final):
                self.metrics.emit("sample", step=self.step, prompt=s.sample_prompt, text=self._sample())
            best_so_far = improved and s.early_stop_patience > 0  # kept on disk: it may be what the run hands on
            if self.step % s.checkpoint_interval == 0 or final or best_so_far or self.early_stopped:
                self._save()
            if self.early_stopped:
                break
        return self._finish()

    def _micro_steps(self) -> tuple[torch.Tensor, int]:
        """Forward and backward over grad_accum micro-batches: their loss (summed on the device, not synchronised)
        and the tokens of all ranks. Every trained token of the step weighs the same, whichever micro-batch and
        rank it is in: a micro-batch's mean loss is scaled by its share of the step's trained tokens, counted over
        all ranks (DDP then averages the ranks' gradients, hence the world size)."""
        s, d = self.s, self.d
        batches = [self.data.next_batch() for _ in range(s.grad_accum)]
        trained = [int((y != IGNORE_INDEX).sum()) for _, y, _ in batches]
        step_trained = sum(d.gather(sum(trained)))
        loss_sum = torch.zeros((), device=self.device)
        tokens = 0
        for micro, ((x, y, n), targets) in enumerate(zip(batches, trained, strict=True)):
            x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
            routing = {"routing_mask": x != self.pad_id} if self.moe else {}  # padding takes no part in MoE balance
            with no_sync(self.train_model, d, micro == s.grad_accum - 1), autocast(self.device, self.amp_dtype):
                out = self.train_model(x, targets=y if targets else None, **routing)
                # a micro-batch with nothing to train still runs backward, so every rank reduces the same graph
                loss = out.loss * (targets * d.world_size / step_trained) if targets else out.logits.sum() * 0.0
            loss.backward()
            loss_sum += loss.detach()
            tokens += n
        return loss_sum, tokens * d.world_size

    def _log_step(self, loss: torch.Tensor, tokens: int, t0: float, lr: float, grad_norm: torch.Tensor | None) -> None:
        self.last_loss = float(loss)  # waits for the device, so the step's time counted next is real
        self.clock.add(tokens, time.perf_counter() - t0)
        tps = self.clock.close_window()
        util = mfu(tps / self.d.world_size, self.flops, self.peak) if tps is not None else None
        experts = ({"expert_usage": [[round(float(u), 4) for u in layer] for layer in self.gpt.expert_usage()]}
                   if self.moe else {})
        self.metrics.emit("train", step=self.step, loss=round(self.last_loss, 6), lr=lr,
                          grad_norm=round(float(grad_norm), 6) if grad_norm is not None else None,
                          tokens_per_s=round(tps, 1) if tps else None,
                          mfu=round(util, 4) if util is not None else None, tokens_seen=self.tokens_seen,
                          elapsed_s=round(time.perf_counter() - self.t_start, 3), **experts)

    def _evaluate(self) -> bool:
        """The validation loss (computed on rank 0, known to every rank); whether it is the best so far. With
        early stopping, the run ends once it has not improved for `early_stop_patience` evaluations."""
        val = None
        if self.d.main:
            val = self.data.evaluate(self.model, self.device, self.amp_dtype, self.s.eval_batches)
            if val is not None:
                self.metrics.emit("eval", step=self.step, val_loss=round(val, 6),
                                  val_ppl=round(math.exp(min(val, 50)), 3))
        val = self.d.gather(val)[0]  # every rank takes the same decision
        if val is None:
            return False
        self.last_val = val
        improved = self.best_val is None or val < self.best_val
        if improved:
            self.best_val, self.best_step, self.evals_since_best = val, self.step, 0
        else:
            self.evals_since_best += 1
        patience = self.s.early_stop_patience
        self.early_stopped = bool(patience) and self.evals_since_best >= patience
        if self.early_stopped and self.d.main:
            self.metrics.emit("early_stop", step=self.step, best_step=self.best_step,
                              best_val_loss=round(self.best_val, 6))
        return improved

    def _sample(self) -> str:
        """A short generation for the log, from its own generator so the training RNG stream is untouched."""
        tok, s = self.tokenizer, self.s
        if self.run.mode == "pretrain":
            prompt = tok.encode(s.sample_prompt, add_special_tokens=False).ids if s.sample_prompt else []
            prompt = prompt or [self.eot_id]
        else:
            prompt = assistant_prompt(tok, [{"role": "User", "text": s.sample_prompt}])
        prompt = prompt[-(self.cfg.block_size // 2):]
        budget = min(s.sample_tokens, self.cfg.block_size - len(prompt) + 1)
        generator = torch.Generator(device=self.device).manual_seed(s.seed + self.step)
        new = generate(self.model, [prompt], budget, temperature=0.8, top_k=50, stop_tokens=[self.eot_id],
                       pad_token_id=self.pad_id, generator=generator)[0]
        return tok.decode(new, skip_special_tokens=True)

    def _save(self) -> None:
        """A checkpoint of this step: written by rank 0 into a temporary folder, then published."""
        d = self.d
        rngs = d.gather(rng_state(self.device))
        if d.main:
            tmp = new_checkpoint_folder(self.run_dir, self.step)
            if self.run.mode == "lora":
                from model.lora import save_adapter

                save_adapter(self.model, tmp)
            else:
                save_model(self.model, tmp)
            save_optimizer(self.optimizer, self.names, tmp)
            write_state(tmp, {
                "format": STATE_FORMAT,
                "mode": self.run.mode,
                "step": self.step,
                "tokens_seen": self.tokens_seen,
                "config": self.cfg.to_dict(),
                "settings": dataclasses.asdict(self.s),
                "data": self.data.state_dict(),
                "rng": rngs,
                "world_size": d.world_size,
                "tokenizer": self.tok_info,
                "init_from": str(self.run.init_from) if self.run.init_from else None,
                **({"quantize": self.s.quantize} if self.run.mode == "lora" else {}),
                "base_model_sha256": self.base_sha,
                "train_loss": self.last_loss,
                "val_loss": self.last_val,
                "best": {"step": self.best_step, "val_loss": self.best_val, "evals_since": self.evals_since_best},
                "early_stopped": self.early_stopped,
                "saved_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            })
            path = publish_checkpoint(self.run_dir, self.step, tmp, self.s.keep_last)
            if self.s.early_stop_patience and self.best_step == self.step:
                mark_best(self.run_dir, path)  # what the run hands on: its best checkpoint, not its last
        d.barrier()
        if d.main:
            self.metrics.emit("checkpoint", step=self.step, path=str(path))

    def _finish(self) -> TrainResult:
        d = self.d
        checkpoint = resolve_checkpoint(self.run_dir)  # the best one when early stopping marked it
        seconds = time.perf_counter() - self.t_start
        tps = self.clock.overall()
        plot = None
        if d.main:
            if self.metrics.path.is_file():
                plot = plot_loss_curve(self.metrics.path, self.run_dir / LOSS_PLOT,
                                       f"{self.run.mode} — {self.run_dir.name}")
            self.metrics.emit("done", step=self.step, checkpoint=str(checkpoint), train_loss=self.last_loss,
                              val_loss=self.last_val, tokens_per_s=round(tps, 1) if tps else None,
                              seconds=round(seconds, 2))
        util = mfu(tps / d.world_size, self.flops, self.peak) if tps else None
        return TrainResult(
            run_dir=str(self.run_dir), checkpoint=str(checkpoint), step=self.step, tokens_seen=self.tokens_seen,
            train_loss=self.last_loss, val_loss=self.last_val, tokens_per_s=tps, mfu=util, seconds=seconds,
            metrics_path=str(self.metrics.path), loss_plot=str(plot) if plot else None,
            resumed_from=str(self.resume) if self.resume else None,
        )

    # -- set-up -----------------------------------------------------------------------------------------------

    def _setup(self, end: int) -> None:
        """Tokenizer, model, optimizer, data and metrics of this invocation, restored from the latest checkpoint
        when there is one; logs the `start` line."""
        run, s, d = self.run, self.s, self.d
        self.tokenizer = load_tokenizer(run.tokenizer)
        tok_file = tokenizer_file(run.tokenizer)
        self.tok_sha = hash_file(tok_file)
        _check_tokenizer(run, self.tokenizer, tok_file, self.tok_sha)
        self.tok_info = {"path": str(tok_file.resolve()), "sha256": self.tok_sha,
                         "vocab_size": self.tokenizer.get_vocab_size()}
        if d.main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(self.run_dir)
        d.barrier()
        self.resume = self._resume_point()
        cfg, base = self._model_config(self.tokenizer.get_vocab_size(), self.resume)
        block = s.block_size if s.block_size is not None else cfg.block_size
        if block > cfg.block_size:
            raise ValueError(f"block_size={block} is longer than the model's block_size={cfg.block_size}")
        self.cfg, self.moe = cfg, cfg.n_experts > 0
        torch.manual_seed(s.seed + d.rank)
        np.random.seed((s.seed + d.rank) % 2**32)
        random.seed(s.seed + d.rank)

        self.pad_id = self.tokenizer.token_to_id("<|pad|>")
        self.eot_id = self.tokenizer.token_to_id("<|endoftext|>")
        if run.mode == "pretrain":
            self.data: BatchSource = TokenBatches(run.train_data, run.val_data, block, s.batch_size, s.seed, d,
                                                  self.pad_id)
        else:
            self.data = ChatBatches(run.train_data, run.val_data, self.tokenizer, block + 1, s.batch_size, s.seed,
                                    s.train_on, d, block if self.compile else None, width_multiple(self.device))

        self.quantized: dict = {}  # QLoRA: what quantizing the base did, for the start line
        self.model = self._build_model(cfg, base, self.resume)
        self.gpt = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model  # peft
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.names = {id(p): n for n, p in self.model.named_parameters()}
        self.optimizer = self._make_optimizer()
        self.step, self.tokens_seen, self.last_loss, self.last_val = 0, 0, None, None
        self.best_val, self.best_step, self.evals_since_best, self.early_stopped = None, None, 0, False
        if self.resume is not None:
            self._restore(self.resume)
        self.base_sha = weights_sha256(base) if base is not None else None
        self.train_model = wrap_for_training(self.model, self.compile, d, self.device, self.moe)

        self.metrics = MetricsLog(self.run_dir, d.main, self.step if self.resume is not None else None)
        self.clock = Throughput()
        self.flops = flops_per_token(cfg, block)
        if run.mode == "lora":  # frozen weights get no gradient: forward + activation gradients only (≈ 4N)
            self.flops = 2 * flops_per_token(cfg, block, training=False)
        self.peak = device_peak_flops(torch.cuda.get_device_name(self.device)) if self.device.type == "cuda" else None
        self.metrics.emit(
            "start", mode=run.mode, step=self.step, max_steps=s.max_steps, run_dir=str(self.run_dir),
            resumed_from=str(self.resume) if self.resume else None,
            parameters=sum(p.numel() for p in self.model.parameters()), **self.quantized,
            trainable=sum(p.numel() for p in self.params), device=str(self.device),
            dtype=str(self.amp_dtype or torch.float32).replace("torch.", ""), compile=self.compile,
            world_size=d.world_size, block_size=block, batch_tokens=s.batch_size * block * s.grad_accum * d.world_size,
            truncated_examples=getattr(getattr(self.data, "train", None), "truncated", None))
        if self.step >= end:
            log.info("%s is already at step %d (stop at %d): nothing to train", self.resume, self.step, end)

    def _restore(self, checkpoint: Path) -> None:
        """Optimizer, data position, RNG and counters from a checkpoint of this run."""
        state = read_state(checkpoint) or {}
        load_optimizer(self.optimizer, self.names, checkpoint)
        if self.s.paged_optimizer:
            from model.qlora import restore_paged_state

            restore_paged_state(self.optimizer)
        self.data.load_state_dict(state["data"], self.d.rank)
        rngs = state["rng"]
        if len(rngs) != self.d.world_size:
            raise CheckpointMismatch(f"checkpoint {checkpoint} was written by {len(rngs)} process(es); resume it "
                                     f"with the same number, not {self.d.world_size}")
        set_rng_state(rngs[self.d.rank], self.device)
        self.step, self.tokens_seen, self.last_val = state["step"], state["tokens_seen"], state.get("val_loss")
        best = state.get("best") or {}
        self.best_val, self.best_step = best.get("val_loss"), best.get("step")
        self.evals_since_best, self.early_stopped = best.get("evals_since", 0), bool(state.get("early_stopped"))

    def _resume_point(self) -> Path | None:
        ckpt = latest_checkpoint(self.run_dir)
        if ckpt is None:
            return None
        if not self.run.resume:
            raise ValueError(f"{self.run_dir} already holds checkpoints (latest {ckpt.name}) and resume is off: "
                             f"starting over there would mix two runs; use a new run_dir or delete the old one")
        state = read_state(ckpt) or {}
        if state.get("mode") != self.run.mode:
            raise CheckpointMismatch(f"{self.run_dir} holds a {state.get('mode')!r} run (latest checkpoint {ckpt}), "
                                     f"not a {self.run.mode!r} one; use another run_dir")
        trained_with = (state.get("tokenizer") or {}).get("sha256")
        if trained_with and trained_with != self.tok_sha:
            raise CheckpointMismatch(f"checkpoint {ckpt} was trained with another tokenizer (sha256 "
                                     f"{trained_with[:12]}…) than {self.run.tokenizer} (sha256 {self.tok_sha[:12]}…); "
                                     f"resume with the run's own tokenizer or use another run_dir")
        if self.run.mode == "lora":
            saved = TrainSettings.from_dict(state.get("settings", {})).lora_signature()
            if saved != self.s.lora_signature():
                raise CheckpointMismatch(f"checkpoint {ckpt} was trained with LoRA settings {saved}, this run asks "
                                         f"for {self.s.lora_signature()}")
        return ckpt

    def _model_config(self, tokenizer_vocab: int, resume: Path | None) -> tuple[ModelConfig, Path | None]:
        run = self.run
        base = None
        if run.mode == "pretrain":
            if run.model is not None:
                cfg, source = ModelConfig.from_dict(run.model), "run.json's model"
            else:
                cfg, source = resolve_model_config(self.s, tokenizer_vocab), (
                    f"preset {self.s.preset!r} with {self.s.model or 'no overrides'}")
        else:
            base = resolve_checkpoint(run.init_from)
            cfg, source = load_config(base), f"the base checkpoint {base}"
            if self.s.model_dropout is not None:
                cfg = dataclasses.replace(cfg, dropout=self.s.model_dropout)
                source += f" with model_dropout {self.s.model_dropout}"
            trained_with = ((read_state(base) or {}).get("tokenizer") or {}).get("sha256")
            if trained_with and trained_with != self.tok_sha:
                raise ValueError(f"tokenizer {run.tokenizer} (sha256 {self.tok_sha[:12]}…) is not the one {base} was "
                                 f"trained with (sha256 {trained_with[:12]}…)")
            if run.model is not None:
                _check_same_config(cfg, ModelConfig.from_dict(run.model), base, "run.json's model")
        if resume is not None:
            state = read_state(resume) or {}
            _check_same_config(ModelConfig.from_dict(state["config"]), cfg, resume, source)
        if tokenizer_vocab > cfg.vocab_size:
            raise ValueError(f"the tokenizer has {tokenizer_vocab} ids but the model only {cfg.vocab_size} "
                             f"embeddings (vocab_size); use the tokenizer the model was trained with")
        return cfg, base

    def _build_model(self, cfg: ModelConfig, base: Path | None, resume: Path | None) -> nn.Module:
        mode = self.run.mode
        if mode == "pretrain":
            model = load_model(resume) if resume is not None else GPT(cfg)
        elif mode == "sft":
            model = load_model(resume) if resume is not None else load_model(base, dropout=self.s.model_dropout)
        else:
            from model.lora import apply_lora, load_adapter_weights

            s = self.s
            if s.quantize == "nf4":
                from model.qlora import apply_qlora

                model, report = apply_qlora(load_model(base, dropout=s.model_dropout), s.rank, s.alpha, s.dropout,
                                            s.target_modules, self.device, self.amp_dtype or torch.float32)
                self.quantized = {"quantize": "nf4", "quantized_layers": report.layers,
                                  "base_weight_bytes": report.weights_before,
                                  "quantized_weight_bytes": report.weights_after}
            else:
                model = apply_lora(load_model(base, dropout=s.model_dropout), s.rank, s.alpha, s.dropout,
                                   s.target_modules)
            if resume is not None:
                load_adapter_weights(model, resume)
        return model.to(self.device).train()

    def _make_optimizer(self) -> torch.optim.Optimizer:
        """AdamW over the trainable parameters (fused on CUDA), or bitsandbytes' paged AdamW when asked."""
        s = self.s
        groups = _trainable_groups(self.model, s.weight_decay)
        if s.paged_optimizer:
            from model.qlora import paged_adamw

            if self.device.type != "cuda":
                log.info("paged_optimizer: paging needs CUDA; on %s bitsandbytes' PagedAdamW runs unpaged",
                         self.device)
            return paged_adamw(groups, s.learning_rate, (s.beta1, s.beta2))
        return torch.optim.AdamW(groups, lr=s.learning_rate, betas=(s.beta1, s.beta2),
                                 fused=self.device.type == "cuda" or None)


# ------------------------------------------------------------------------------------------------------------
# command line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.train", description="Run or resume a training run.")
    parser.add_argument("--config", required=True, help="run.json (see model/train.py)")
    parser.add_argument("--stop-at", type=int, default=None, help="stop after this step, with a checkpoint")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        train(args.config, stop_at=args.stop_at)
    except (ValueError, FileNotFoundError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
