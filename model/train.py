"""Training runs — pretraining on token shards, supervised fine-tuning (SFT) and LoRA on chat examples — as one
resumable loop, plus the checkpoints it writes (DESIGN §3) and the evaluation of Assistant-turn perplexity.

    python -m model.train --config run.json            # one process
    torchrun --standalone --nproc_per_node 8 -m model.train --config run.json   # DDP, one GPU per process
    train(run_cfg) -> TrainResult                      # in-process (tests, benchmarks)

`run.json` (see `RunConfig`; `tasks.training.make_run_config` writes it):
`{"mode": "pretrain"|"sft"|"lora", "run_dir", "tokenizer": tokenizer.json, "data": {"train", "val",
"vocab_size", "tokenizer_sha256"}, "init_from": checkpoint (sft, lora), "params": {...}, "model": {...} (optional
ModelConfig; pretrain resolves it from params.preset / params.model / params.block_size and the tokenizer),
"resume": true}`.

The loop: AdamW (fused on CUDA; decay on matrices and embeddings only), linear warmup then cosine decay to
min_lr, gradient accumulation and clipping, bf16 autocast and torch.compile on a GPU (never on CPU unless asked),
DistributedDataParallel under torchrun. Every `log_interval` steps one JSON line (loss, lr, tokens/s, MFU, and
with experts each layer's share of routed tokens in that window, rank 0's) goes to stdout and to `<run_dir>/metrics.jsonl`; validation losses, sample generations and checkpoints are JSON lines
too, and `<run_dir>/loss.png` is drawn at the end.

Checkpoints: `<run_dir>/step-000500/` holds `model.safetensors` + `config.json` (LoRA: only
`adapter_model.safetensors` + `adapter_config.json`), `optimizer.pt` (a flat dict of tensors keyed
`<parameter name>/<state name>`, read with `torch.load(weights_only=True)`) and `state.json` (step, tokens seen,
model config, settings, the data stream's position, the RNG states of torch / numpy / Python as JSON lists, one
per rank, and the tokenizer). A checkpoint is written into `.tmp-step-000500-<pid>/` and renamed, then the text
file `latest` is replaced to name it; only complete checkpoints ever carry a `step-` name, so a run killed while
saving leaves a temporary folder that is ignored (and removed by the next run). The last `keep_last` are kept.

Resuming continues the same data stream (the samplers are pure functions of their position), the same schedule
and the same RNG, so on CPU a run of 2N steps and a run of N steps + resume + N steps end with bitwise identical
weights. Under DDP each rank's RNG is restored too; the data position must then be resumed with the same world
size.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import math
import os
import random
import re
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

from model.checkpoint import WEIGHTS_NAME, load_config, load_model, save_model
from model.config import ModelConfig, device_peak_flops, flops_per_token, mfu
from model.generate import generate
from model.sft import TRAIN_ON, SftBatchStream, SftExamples, assistant_loss, assistant_prompt, masked_nll
from model.transformer import GPT
from storage.fingerprint import hash_file
from storage.tokens import RandomWindowSampler, TokenShards, iter_sequential_windows

log = logging.getLogger(__name__)

RUN_MODES = ("pretrain", "sft", "lora")
STATE_FORMAT = 1
STEP_PREFIX = "step-"
STEP_RE = re.compile(r"^step-(\d+)$")
LATEST = "latest"
OPTIMIZER_NAME = "optimizer.pt"
STATE_NAME = "state.json"
METRICS_NAME = "metrics.jsonl"
LOSS_PLOT = "loss.png"
TMP_PREFIX = ".tmp-"
VOCAB_MULTIPLE = 64  # pad the embedding to a multiple of 64 rows (nanoGPT's 50304): faster matmuls, same model
DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "q_b_proj", "kv_a_proj", "kv_b_proj",
                        "gate_proj", "up_proj", "down_proj"]  # names a model lacks are skipped (model.lora)


class CheckpointMismatch(ValueError):
    """A checkpoint that does not belong to the run asking for it (other model config, mode, tokenizer)."""


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
    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: list(DEFAULT_LORA_TARGETS))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"run.json params: unknown field(s) {', '.join(unknown)}")
        settings = cls(**data)
        if settings.train_on not in TRAIN_ON:
            raise ValueError(f"train_on={settings.train_on!r} is not one of {', '.join(TRAIN_ON)}")
        for name, options in (("device", ("auto", "cpu", "cuda")), ("dtype", ("auto", "float32", "bfloat16")),
                              ("compile", ("auto", "on", "off"))):
            if getattr(settings, name) not in options:
                raise ValueError(f"{name}={getattr(settings, name)!r} is not one of {', '.join(options)}")
        return settings

    def lora_signature(self) -> dict:
        return {"rank": self.rank, "alpha": self.alpha, "dropout": self.dropout,
                "target_modules": list(self.target_modules)}


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
# checkpoint folders


def checkpoint_name(step: int) -> str:
    return f"{STEP_PREFIX}{step:06d}"


def list_checkpoints(run_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """Complete checkpoints of a run, oldest first (temporary folders of an interrupted save never match)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    found = []
    for p in run_dir.iterdir():
        m = STEP_RE.match(p.name)
        if m and p.is_dir() and (p / STATE_NAME).is_file():
            found.append((int(m.group(1)), p))
    return sorted(found)


def latest_checkpoint(run_dir: str | os.PathLike) -> Path | None:
    """The checkpoint `latest` names, or a newer complete one (a run killed between the rename and the pointer
    update leaves the pointer one behind)."""
    run_dir = Path(run_dir)
    candidates = list_checkpoints(run_dir)
    pointer = run_dir / LATEST
    if pointer.is_file():
        target = run_dir / pointer.read_text(encoding="utf-8").strip()
        m = STEP_RE.match(target.name)
        if m and (target / STATE_NAME).is_file():
            candidates.append((int(m.group(1)), target))
    return max(candidates)[1] if candidates else None


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """A checkpoint folder itself, or the `latest` checkpoint of a run folder."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such checkpoint or run folder")
    if (path / WEIGHTS_NAME).is_file() or (path / "adapter_config.json").is_file():
        return path
    found = latest_checkpoint(path)
    if found is None:
        raise FileNotFoundError(f"{path}: not a checkpoint (no {WEIGHTS_NAME} or adapter) and no complete "
                                f"checkpoint inside")
    return found


def read_state(checkpoint: str | os.PathLike) -> dict | None:
    path = Path(checkpoint) / STATE_NAME
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: unreadable checkpoint state ({exc})") from exc


def weights_sha256(checkpoint: str | os.PathLike) -> str:
    return hash_file(Path(checkpoint) / WEIGHTS_NAME)


def write_json_atomically(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _fsync_tree(folder: Path) -> None:
    for p in [*folder.iterdir(), folder]:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def publish_checkpoint(run_dir: Path, step: int, tmp: Path, keep_last: int) -> Path:
    """Rename a fully written temporary folder to step-NNNNNN, point `latest` at it, prune old ones."""
    final = run_dir / checkpoint_name(step)
    _fsync_tree(tmp)
    if final.exists():  # the same step saved again (a resumed run that re-reached it)
        old = run_dir / f"{TMP_PREFIX}old-{final.name}-{os.getpid()}"
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
    pointer_tmp = run_dir / f"{TMP_PREFIX}{LATEST}-{os.getpid()}"
    pointer_tmp.write_text(final.name + "\n", encoding="utf-8")
    os.replace(pointer_tmp, run_dir / LATEST)
    for _, old in list_checkpoints(run_dir)[:-keep_last]:
        if old != final:
            shutil.rmtree(old, ignore_errors=True)
    return final


def remove_stale_temporaries(run_dir: Path) -> list[Path]:
    """Temporary folders and files an interrupted save left behind."""
    stale = [p for p in run_dir.glob(f"{TMP_PREFIX}*")] if run_dir.is_dir() else []
    for p in stale:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    return stale


def config_difference(a: dict, b: dict, a_name: str, b_name: str) -> str:
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return "; ".join(f"{k}: {a_name} {a.get(k)!r}, {b_name} {b.get(k)!r}" for k in keys)


def _check_same_config(found: ModelConfig, requested: ModelConfig, where: Path, requested_from: str) -> None:
    a, b = found.to_dict(), requested.to_dict()
    if a != b:
        raise CheckpointMismatch(
            f"checkpoint {where} has another model config than {requested_from}: "
            f"{config_difference(a, b, 'checkpoint', 'requested')} "
            f"(checkpoint config {json.dumps(a, sort_keys=True)}; requested {json.dumps(b, sort_keys=True)})"
        )


# ------------------------------------------------------------------------------------------------------------
# optimizer state as plain tensors, RNG state as plain JSON


def optimizer_tensors(optimizer: torch.optim.Optimizer, names: dict[int, str]) -> dict[str, torch.Tensor]:
    """The optimizer's per-parameter state as {"<param name>/<key>": tensor}: no pickled Python objects."""
    out: dict[str, torch.Tensor] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            for key, value in optimizer.state.get(p, {}).items():
                t = value if isinstance(value, torch.Tensor) else torch.tensor(value)
                out[f"{names[id(p)]}/{key}"] = t.detach().cpu().contiguous()
    return out


def load_optimizer_tensors(optimizer: torch.optim.Optimizer, names: dict[int, str],
                           tensors: dict[str, torch.Tensor], where: Path) -> None:
    """Put saved state back through `load_state_dict`, which moves and casts it the way the optimizer wants."""
    current = optimizer.state_dict()
    state: dict[int, dict[str, torch.Tensor]] = {}
    index = 0
    used = set()
    for group in optimizer.param_groups:
        for p in group["params"]:
            prefix = f"{names[id(p)]}/"
            entry = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
            if entry:
                state[index] = entry
                used.update(prefix + k for k in entry)
            index += 1
    unused = sorted(set(tensors) - used)
    if unused or len(state) != index:
        raise CheckpointMismatch(f"{where / OPTIMIZER_NAME} does not match this model's trainable parameters "
                                 f"({index - len(state)} without state, unexpected {unused[:3]})")
    optimizer.load_state_dict({"state": state, "param_groups": current["param_groups"]})


def rng_state(device: torch.device) -> dict:
    np_state = np.random.get_state()
    py_state = random.getstate()
    state = {
        "torch": torch.get_rng_state().tolist(),
        "numpy": [np_state[0], np_state[1].tolist(), int(np_state[2]), int(np_state[3]), float(np_state[4])],
        "python": [py_state[0], list(py_state[1]), py_state[2]],
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device).tolist()
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(torch.tensor(state["cuda"], dtype=torch.uint8), device)


# ------------------------------------------------------------------------------------------------------------
# hardware


@dataclass
class _Dist:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    owns_group: bool = False

    @property
    def main(self) -> bool:
        return self.rank == 0


def _setup_distributed(device_request: str) -> _Dist:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1 or "RANK" not in os.environ:
        return _Dist()
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = device_request != "cpu" and torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local)
    owns = False
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if cuda else "gloo")
        owns = True
    return _Dist(rank, world, local, owns)


def _pick_device(request: str, d: _Dist) -> torch.device:
    if request == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but torch sees no CUDA device (use device 'auto' or 'cpu')")
    if request == "cuda" or (request == "auto" and torch.cuda.is_available()):
        return torch.device("cuda", d.local_rank)
    return torch.device("cpu")


def _autocast_dtype(request: str, device: torch.device) -> torch.dtype | None:
    if request == "bfloat16":
        return torch.bfloat16
    if request == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def _autocast(device: torch.device, dtype: torch.dtype | None):
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


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


# ------------------------------------------------------------------------------------------------------------
# data


def _shard_folder(path: str, split: str) -> TokenShards | None:
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such token shard folder")
    if not any(folder.glob("shard-*.bin")) and (folder / split).is_dir():
        folder = folder / split
    shards = TokenShards(folder)
    return shards if len(shards) else None


class _TokenData:
    """Pretraining: random windows of the train shards; validation: the val shards in order."""

    def __init__(self, run: RunConfig, block: int, d: _Dist, pad_id: int):
        s = run.settings
        paths = run.train_data if isinstance(run.train_data, list) else None
        train = paths if paths is not None else _shard_folder(run.train_data, "train")
        if train is None:
            raise ValueError(f"{run.train_data}: no complete token shards to train on")
        self.sampler = RandomWindowSampler(train, block, s.batch_size, seed=s.seed, rank=d.rank,
                                           world_size=d.world_size)
        self.val = None
        if run.val_data:
            self.val = run.val_data if isinstance(run.val_data, list) else _shard_folder(run.val_data, "val")
        self.block, self.batch_size, self.pad_id = block, s.batch_size, pad_id

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        x, y = self.sampler.next_batch()
        return torch.from_numpy(x), torch.from_numpy(y), x.size

    def state_dict(self) -> dict:
        return {"kind": "windows", **self.sampler.state_dict()}

    def load_state_dict(self, state: dict, rank: int) -> None:
        state = {k: v for k, v in state.items() if k != "kind"}
        self.sampler.load_state_dict({**state, "rank": rank})

    @torch.no_grad()
    def evaluate(self, model: nn.Module, device: torch.device, dtype: torch.dtype | None,
                 max_batches: int) -> float | None:
        if self.val is None:
            return None
        total, count = 0.0, 0
        model.eval()
        try:
            windows = iter_sequential_windows(self.val, self.block, self.batch_size, pad_id=self.pad_id)
            for b, (x, y) in enumerate(windows):
                if b >= max_batches:
                    break
                with _autocast(device, dtype):
                    nll, n = masked_nll(model, torch.from_numpy(x).to(device), torch.from_numpy(y).to(device))
                total += float(nll)
                count += n
        finally:
            model.train()
        return total / count if count else None


class _ChatData:
    """SFT / LoRA: padded batches of chat examples; validation: the Assistant-turn loss of the val examples."""

    def __init__(self, run: RunConfig, max_tokens: int, d: _Dist, tokenizer: Any, pad_to: int | None):
        s = run.settings
        self.train = SftExamples(run.train_data, tokenizer, max_tokens, s.train_on).require_examples("training")
        self.stream = SftBatchStream(len(self.train), s.batch_size, seed=s.seed, rank=d.rank,
                                     world_size=d.world_size)
        self.val = SftExamples(run.val_data, tokenizer, max_tokens, "assistant") if run.val_data else None
        if self.val is not None and not len(self.val):
            self.val = None
        self.batch_size, self.pad_to = s.batch_size, pad_to

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        indices = self.stream.next_indices()
        x, y = self.train.batch(indices, self.pad_to)
        return x, y, sum(len(self.train.inputs[i]) for i in indices)

    def state_dict(self) -> dict:
        return {"kind": "chat", **self.stream.state_dict()}

    def load_state_dict(self, state: dict, rank: int) -> None:
        self.stream.load_state_dict({k: v for k, v in state.items() if k != "kind"})

    def evaluate(self, model: nn.Module, device: torch.device, dtype: torch.dtype | None,
                 max_batches: int) -> float | None:
        if self.val is None:
            return None
        return assistant_loss(model, self.val, self.batch_size, max_batches, device, dtype)[0]


# ------------------------------------------------------------------------------------------------------------
# metrics


class _Metrics:
    """One JSON object per line, to stdout and to metrics.jsonl (rank 0 only)."""

    def __init__(self, run_dir: Path, enabled: bool, resume_step: int | None):
        self.path = run_dir / METRICS_NAME
        self.enabled = enabled
        if enabled and resume_step is not None and self.path.is_file():
            # drop what a killed run logged after the checkpoint we resume from: the curve stays one run
            kept = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                    if line.strip() and json.loads(line).get("step", 0) <= resume_step]
            write_text = "".join(line + "\n" for line in kept)
            tmp = self.path.with_name(self.path.name + ".partial")
            tmp.write_text(write_text, encoding="utf-8")
            os.replace(tmp, self.path)
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


def read_metrics(path: str | os.PathLike) -> Iterator[dict]:
    """The JSON records of a run's metrics.jsonl (or of its stdout), in order."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def plot_loss_curve(metrics_path: Path, out_path: Path, title: str = "") -> Path | None:
    """Train (and validation) loss against step from metrics.jsonl, as a PNG (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train, val = [], []
    for line in metrics_path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
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
    tmp = out_path.with_name(f"{TMP_PREFIX}{out_path.name}")
    fig.savefig(tmp, format="png")
    plt.close(fig)
    os.replace(tmp, out_path)
    return out_path


# ------------------------------------------------------------------------------------------------------------
# the run


def load_run_tokenizer(path: str | os.PathLike) -> tuple[Any, Path]:
    """The tokenizer and its tokenizer.json path (a file or the tokenizer dataset folder)."""
    # the one loader that keeps typed "<|endoftext|>" as text (see tasks/tokenizer.py); imported here only
    from tasks.tokenizer import load_tokenizer, tokenizer_file

    return load_tokenizer(path), tokenizer_file(path)


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


def train(run_cfg: RunConfig | dict | str | os.PathLike, *, stop_at: int | None = None) -> TrainResult:
    """Run (or resume) the training run described by run_cfg (a RunConfig, the run.json dict, or its path).

    stop_at: stop after this step (with a checkpoint) as if interrupted; the schedule still ends at max_steps.
    """
    run = RunConfig.coerce(run_cfg)
    d = _setup_distributed(run.settings.device)
    try:
        return _Trainer(run, d).fit(stop_at)
    finally:
        if d.owns_group and dist.is_initialized():
            dist.destroy_process_group()


class _Trainer:
    def __init__(self, run: RunConfig, d: _Dist):
        self.run, self.d, self.s = run, d, run.settings
        self.run_dir = run.run_dir
        self.device = _pick_device(self.s.device, d)
        self.amp_dtype = _autocast_dtype(self.s.dtype, self.device)
        self.compile = self.s.compile == "on" or (self.s.compile == "auto" and self.device.type == "cuda")
        if self.device.type == "cuda":  # float32 matmuls outside autocast may use TF32 tensor cores
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True

    # -- setup ------------------------------------------------------------------------------------------------

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
            model = load_model(resume if resume is not None else base)
        else:
            from model.lora import apply_lora, load_adapter_weights

            model = apply_lora(load_model(base), self.s.rank, self.s.alpha, self.s.dropout, self.s.target_modules)
            if resume is not None:
                load_adapter_weights(model, resume)
        return model.to(self.device).train()

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

    # -- the loop ---------------------------------------------------------------------------------------------

    def fit(self, stop_at: int | None) -> TrainResult:
        run, s, d = self.run, self.s, self.d
        t_start = time.perf_counter()
        tokenizer, tok_file = load_run_tokenizer(run.tokenizer)
        tok_sha = hash_file(tok_file)
        _check_tokenizer(run, tokenizer, tok_file, tok_sha)
        self.tokenizer, self.tok_sha = tokenizer, tok_sha
        if d.main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(self.run_dir)
        if d.world_size > 1:
            dist.barrier()
        resume = self._resume_point()
        cfg, base = self._model_config(tokenizer.get_vocab_size(), resume)
        block = s.block_size if s.block_size is not None else cfg.block_size
        if block > cfg.block_size:
            raise ValueError(f"block_size={block} is longer than the model's block_size={cfg.block_size}")
        self.cfg = cfg
        torch.manual_seed(s.seed + d.rank)
        np.random.seed((s.seed + d.rank) % 2**32)
        random.seed(s.seed + d.rank)

        pad_id = tokenizer.token_to_id("<|pad|>")
        self.eot_id = tokenizer.token_to_id("<|endoftext|>")
        if run.mode == "pretrain":
            data: _TokenData | _ChatData = _TokenData(run, block, d, pad_id)
        else:
            data = _ChatData(run, block + 1, d, tokenizer, block if self.compile else None)
        self.data = data

        model = self._build_model(cfg, base, resume)
        names = {id(p): n for n, p in model.named_parameters()}
        fused = self.device.type == "cuda"
        optimizer = torch.optim.AdamW(_trainable_groups(model, s.weight_decay), lr=s.learning_rate,
                                      betas=(s.beta1, s.beta2), fused=fused or None)
        step, tokens_seen, last_val = 0, 0, None
        if resume is not None:
            state = read_state(resume) or {}
            load_optimizer_tensors(optimizer, names, torch.load(resume / OPTIMIZER_NAME, weights_only=True,
                                                                map_location="cpu"), resume)
            data.load_state_dict(state["data"], d.rank)
            rngs = state["rng"]
            if len(rngs) != d.world_size:
                raise CheckpointMismatch(f"checkpoint {resume} was written by {len(rngs)} process(es); resume it "
                                         f"with the same number, not {d.world_size}")
            set_rng_state(rngs[d.rank], self.device)
            step, tokens_seen, last_val = state["step"], state["tokens_seen"], state.get("val_loss")
        self.base_sha = weights_sha256(base) if base is not None else None
        self.tok_info = {"path": str(tok_file.resolve()), "sha256": tok_sha, "vocab_size": tokenizer.get_vocab_size()}

        train_model: nn.Module = torch.compile(model) if self.compile else model
        if d.world_size > 1:
            train_model = nn.parallel.DistributedDataParallel(
                train_model, device_ids=[d.local_rank] if self.device.type == "cuda" else None,
                # an expert that no token of this rank chose gets no gradient in this step
                find_unused_parameters=cfg.n_experts > 0,
                # the buffers are functions of the config (ALiBi slopes, BigBird blocks) or per-rank statistics
                # (expert usage counts): nothing to copy from rank 0 before every forward
                broadcast_buffers=False)

        metrics = _Metrics(self.run_dir, d.main, step if resume is not None else None)
        flops = flops_per_token(cfg, block)
        if run.mode == "lora":  # frozen weights get no gradient: forward + activation gradients only (≈ 4N)
            flops = 2 * flops_per_token(cfg, block, training=False)
        peak = device_peak_flops(torch.cuda.get_device_name(self.device)) if self.device.type == "cuda" else None
        n_params = sum(p.numel() for p in model.parameters())
        n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        metrics.emit("start", mode=run.mode, step=step, max_steps=s.max_steps, run_dir=str(self.run_dir),
                     resumed_from=str(resume) if resume else None, parameters=n_params, trainable=n_trainable,
                     device=str(self.device), dtype=str(self.amp_dtype or torch.float32).replace("torch.", ""),
                     compile=self.compile, world_size=d.world_size, block_size=block,
                     batch_tokens=s.batch_size * block * s.grad_accum * d.world_size,
                     truncated_examples=getattr(getattr(data, "train", None), "truncated", None))

        last_loss: float | None = None
        train_time, train_tokens = 0.0, 0
        window_time, window_tokens = 0.0, 0
        end = s.max_steps if stop_at is None else min(stop_at, s.max_steps)
        if step >= end:
            log.info("%s is already at step %d (stop at %d): nothing to train", resume, step, end)
        params = [p for p in model.parameters() if p.requires_grad]
        gpt = model.get_base_model() if hasattr(model, "get_base_model") else model  # under a peft wrapper
        moe = cfg.n_experts > 0
        while step < end:
            t0 = time.perf_counter()
            if moe and window_tokens == 0:  # a new logging window: count only its training tokens
                gpt.reset_expert_usage()
            lr = learning_rate(step, s)
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss_sum = torch.zeros((), device=self.device)
            step_tokens = 0
            for micro in range(s.grad_accum):
                x, y, n = data.next_batch()
                x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
                sync = micro == s.grad_accum - 1
                no_sync = train_model.no_sync() if d.world_size > 1 and not sync else contextlib.nullcontext()
                with no_sync, _autocast(self.device, self.amp_dtype):
                    # padding takes no part in the MoE load-balancing loss
                    routing = {"routing_mask": x != pad_id} if moe else {}
                    loss = train_model(x, targets=y, **routing).loss / s.grad_accum
                loss.backward()
                loss_sum += loss.detach()
                step_tokens += n
            grad_norm = torch.nn.utils.clip_grad_norm_(params, s.grad_clip) if s.grad_clip > 0 else None
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            step_tokens *= d.world_size
            tokens_seen += step_tokens
            window_tokens += step_tokens

            if step % s.log_interval == 0 or step == end:
                last_loss = float(loss_sum)  # waits for the device: the timing below is real
                window_time += time.perf_counter() - t0
                tps = window_tokens / window_time if window_time > 0 else None
                util = mfu(tps / d.world_size, flops, peak) if tps is not None else None
                metrics.emit("train", step=step, loss=round(last_loss, 6), lr=lr,
                             grad_norm=round(float(grad_norm), 6) if grad_norm is not None else None,
                             tokens_per_s=round(tps, 1) if tps else None,
                             mfu=round(util, 4) if util is not None else None, tokens_seen=tokens_seen,
                             elapsed_s=round(time.perf_counter() - t_start, 3),
                             **({"expert_usage": [[round(float(u), 4) for u in layer] for layer in gpt.expert_usage()]}
                                if moe else {}))
                train_time += window_time
                train_tokens += window_tokens
                window_time, window_tokens = 0.0, 0
            else:
                window_time += time.perf_counter() - t0

            final = step == end
            if d.main and ((s.eval_interval and step % s.eval_interval == 0) or final):
                val = data.evaluate(model, self.device, self.amp_dtype, s.eval_batches)
                if val is not None:
                    last_val = val
                    metrics.emit("eval", step=step, val_loss=round(val, 6), val_ppl=round(math.exp(min(val, 50)), 3))
            if d.main and s.sample_interval and (step % s.sample_interval == 0 or final):
                metrics.emit("sample", step=step, prompt=s.sample_prompt, text=self._sample(model, step))
            if step % s.checkpoint_interval == 0 or final:
                path = self._save(model, optimizer, names, step, tokens_seen, last_loss, last_val)
                if d.main:
                    metrics.emit("checkpoint", step=step, path=str(path))

        checkpoint = latest_checkpoint(self.run_dir)
        seconds = time.perf_counter() - t_start
        tps = train_tokens / train_time if train_time > 0 else None
        plot = None
        if d.main:
            plot = plot_loss_curve(metrics.path, self.run_dir / LOSS_PLOT, f"{run.mode} — {self.run_dir.name}") \
                if metrics.path.is_file() else None
            metrics.emit("done", step=step, checkpoint=str(checkpoint), train_loss=last_loss, val_loss=last_val,
                         tokens_per_s=round(tps, 1) if tps else None, seconds=round(seconds, 2))
        util = mfu(tps / d.world_size, flops, peak) if tps else None
        return TrainResult(
            run_dir=str(self.run_dir), checkpoint=str(checkpoint), step=step, tokens_seen=tokens_seen,
            train_loss=last_loss, val_loss=last_val, tokens_per_s=tps, mfu=util, seconds=seconds,
            metrics_path=str(metrics.path), loss_plot=str(plot) if plot else None,
            resumed_from=str(resume) if resume else None,
        )

    # -- pieces -----------------------------------------------------------------------------------------------

    def _sample(self, model: nn.Module, step: int) -> str:
        """A short generation for the log, from its own generator so the training RNG stream is untouched."""
        tok, s = self.tokenizer, self.s
        if self.run.mode == "pretrain":
            prompt = tok.encode(s.sample_prompt, add_special_tokens=False).ids if s.sample_prompt else []
            prompt = prompt or [self.eot_id]
        else:
            prompt = assistant_prompt(tok, [{"role": "User", "text": s.sample_prompt}])
        prompt = prompt[-(self.cfg.block_size // 2):]
        budget = min(s.sample_tokens, self.cfg.block_size - len(prompt) + 1)
        generator = torch.Generator(device=self.device).manual_seed(s.seed + step)
        new = generate(model, [prompt], budget, temperature=0.8, top_k=50, stop_tokens=[self.eot_id],
                       pad_token_id=tok.token_to_id("<|pad|>"), generator=generator)[0]
        return tok.decode(new, skip_special_tokens=True)

    def _save(self, model: nn.Module, optimizer: torch.optim.Optimizer, names: dict[int, str], step: int,
              tokens_seen: int, train_loss: float | None, val_loss: float | None) -> Path:
        d = self.d
        rng = rng_state(self.device)
        if d.world_size > 1:
            gathered: list[Any] = [None] * d.world_size
            dist.all_gather_object(gathered, rng)
            rngs = gathered
        else:
            rngs = [rng]
        final = self.run_dir / checkpoint_name(step)
        if d.main:
            tmp = self.run_dir / f"{TMP_PREFIX}{final.name}-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            if self.run.mode == "lora":
                from model.lora import save_adapter

                save_adapter(model, tmp)
            else:
                save_model(model, tmp)
            torch.save(optimizer_tensors(optimizer, names), tmp / OPTIMIZER_NAME)
            write_json_atomically(tmp / STATE_NAME, {
                "format": STATE_FORMAT,
                "mode": self.run.mode,
                "step": step,
                "tokens_seen": tokens_seen,
                "config": self.cfg.to_dict(),
                "settings": dataclasses.asdict(self.s),
                "data": self.data.state_dict(),
                "rng": rngs,
                "world_size": d.world_size,
                "tokenizer": self.tok_info,
                "init_from": str(self.run.init_from) if self.run.init_from else None,
                "base_model_sha256": self.base_sha,
                "train_loss": train_loss,
                "val_loss": val_loss,
                "saved_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            })
            publish_checkpoint(self.run_dir, step, tmp, self.s.keep_last)
        if d.world_size > 1:
            dist.barrier()
        return final


# ------------------------------------------------------------------------------------------------------------
# inference and evaluation


def load_for_inference(checkpoint: str | os.PathLike, adapter: str | os.PathLike | None = None,
                       device: torch.device | str = "cpu") -> tuple[GPT, dict]:
    """A plain GPT in eval mode from a checkpoint (or run folder), with a LoRA adapter merged in when given.
    Returns it with {"checkpoint", "adapter", "state", "adapter_state"}."""
    ckpt = resolve_checkpoint(checkpoint)
    from model.lora import check_adapter_base, is_adapter_dir, load_adapter

    if is_adapter_dir(ckpt) and not (ckpt / WEIGHTS_NAME).is_file():
        raise ValueError(f"{ckpt} holds a LoRA adapter, not a model: pass its base checkpoint as the checkpoint "
                         f"and this folder as the adapter")
    model = load_model(ckpt, device=device)
    info: dict[str, Any] = {"checkpoint": str(ckpt), "adapter": None, "state": read_state(ckpt) or {},
                            "adapter_state": None}
    if adapter is not None:
        adapter_dir = resolve_checkpoint(adapter)
        check_adapter_base(ckpt, adapter_dir)
        model = load_adapter(model, adapter_dir).merge_and_unload()
        info["adapter"], info["adapter_state"] = str(adapter_dir), read_state(adapter_dir) or {}
    return model.eval(), info


def recorded_tokenizer(info: dict) -> str | None:
    """The tokenizer path recorded by training (adapter's first, then the checkpoint's), if any."""
    for state in (info.get("adapter_state") or {}, info.get("state") or {}):
        path = (state.get("tokenizer") or {}).get("path")
        if path:
            return path
    return None


def _as_tokenizer(tokenizer: Any) -> Any:
    if isinstance(tokenizer, (str, os.PathLike)):
        return load_run_tokenizer(Path(tokenizer))[0]
    return tokenizer


def _assistant_nll(checkpoint: str | os.PathLike, adapter: str | os.PathLike | None, sft_val_parquet: Any,
                   tokenizer: Any, batch_size: int, device: str) -> tuple[float, int, dict]:
    model, info = load_for_inference(checkpoint, adapter, device)
    tok = _as_tokenizer(tokenizer)
    examples = SftExamples(sft_val_parquet, tok, model.config.block_size + 1).require_examples("validation")
    loss, count = assistant_loss(model, examples, batch_size, device=device)
    return loss, count, info


def evaluate_assistant_perplexity(checkpoint: str | os.PathLike, adapter: str | os.PathLike | None = None, *,
                                  sft_val_parquet: str | os.PathLike | Sequence[str | os.PathLike],
                                  tokenizer: Any, batch_size: int = 8, device: str = "cpu") -> float:
    """exp(mean loss) over the Assistant turns (text + end token) of the held-out SFT examples."""
    loss, _, _ = _assistant_nll(checkpoint, adapter, sft_val_parquet, tokenizer, batch_size, device)
    return math.exp(loss)


@dataclass
class PerplexityTable:
    """Assistant-turn perplexity of several models on the same held-out examples."""

    rows: list[dict]

    def markdown(self) -> str:
        lines = ["| model | checkpoint | Assistant loss | perplexity | vs base |", "|---|---|---:|---:|---:|"]
        for r in self.rows:
            where = r["checkpoint"] + (f" + {r['adapter']}" if r.get("adapter") else "")
            change = f"{r['change_vs_base']:+.1%}" if r.get("change_vs_base") is not None else ""
            lines.append(f"| {r['model']} | {where} | {r['loss']:.4f} | {r['perplexity']:.2f} | {change} |")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {r["model"]: {k: v for k, v in r.items() if k != "model"} for r in self.rows}


def perplexity_table(sft_val_parquet: str | os.PathLike | Sequence[str | os.PathLike], tokenizer: Any,
                     base: str | os.PathLike, sft: str | os.PathLike | None = None,
                     lora: str | os.PathLike | None = None, lora_base: str | os.PathLike | None = None,
                     batch_size: int = 8, device: str = "cpu") -> PerplexityTable:
    """Base vs SFT vs LoRA on the sft-data val split. lora is an adapter (or LoRA run folder); its base is
    lora_base, by default the checkpoint its training started from (recorded in its state.json)."""
    tok = _as_tokenizer(tokenizer)
    entries: list[tuple[str, Any, Any]] = [("base", base, None)]
    if sft is not None:
        entries.append(("sft", sft, None))
    if lora is not None:
        adapter_dir = resolve_checkpoint(lora)
        recorded = (read_state(adapter_dir) or {}).get("init_from")
        lora_base = lora_base or recorded
        if lora_base is None:
            raise ValueError(f"{adapter_dir}: no base checkpoint recorded; pass lora_base")
        entries.append(("lora", lora_base, adapter_dir))
    rows = []
    for name, ckpt, adapter in entries:
        loss, count, info = _assistant_nll(ckpt, adapter, sft_val_parquet, tok, batch_size, device)
        rows.append({"model": name, "checkpoint": info["checkpoint"], "adapter": info["adapter"],
                     "loss": loss, "perplexity": math.exp(loss), "tokens": count})
    base_ppl = rows[0]["perplexity"]
    for r in rows:
        r["change_vs_base"] = None if r["model"] == "base" else r["perplexity"] / base_ppl - 1.0
    return PerplexityTable(rows)


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
