"""Where a training run computes: the process group under torchrun, the device, the autocast dtype, and the
wrappers (torch.compile, DistributedDataParallel) the training forward goes through.

Under `torchrun` each process reads RANK / WORLD_SIZE / LOCAL_RANK from its environment, takes the GPU of its
local rank, and joins a NCCL group (gloo on CPU); a plain `python -m model.train` is rank 0 of 1.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn


@dataclass
class Distributed:
    """This process's place in the run: rank 0 of 1 without torchrun."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    owns_group: bool = False  # this process started the group, so it ends it

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's `obj`, in rank order (on every rank)."""
        if self.world_size == 1:
            return [obj]
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, obj)
        return gathered

    def close(self) -> None:
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()


def setup_distributed(device_request: str) -> Distributed:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1 or "RANK" not in os.environ:
        return Distributed()
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = device_request != "cpu" and torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local)
    owns = False
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if cuda else "gloo")
        owns = True
    return Distributed(rank, world, local, owns)


def pick_device(request: str, d: Distributed) -> torch.device:
    """`auto`: this rank's GPU when there is one, else the CPU."""
    if request == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but torch sees no CUDA device (use device 'auto' or 'cpu')")
    if request == "cuda" or (request == "auto" and torch.cuda.is_available()):
        return torch.device("cuda", d.local_rank)
    return torch.device("cpu")


def allow_tf32() -> None:
    """On a GPU, float32 matmuls outside autocast may use TF32 tensor cores."""
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True


def autocast_dtype(request: str, device: torch.device) -> torch.dtype | None:
    """bfloat16 when asked, or on `auto` where the GPU supports it; None = plain float32."""
    if request == "bfloat16":
        return torch.bfloat16
    if request == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def autocast(device: torch.device, dtype: torch.dtype | None):
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def use_compile(request: str, device: torch.device) -> bool:
    """`auto`: compile on a GPU, never on CPU (compiling costs more than a CPU run gains)."""
    return request == "on" or (request == "auto" and device.type == "cuda")


def wrap_for_training(model: nn.Module, compile_model: bool, d: Distributed, device: torch.device,
                      has_experts: bool) -> nn.Module:
    """The module the training forward goes through: compiled and/or DDP-wrapped. Checkpoints and evaluation
    keep using the plain model."""
    wrapped: nn.Module = torch.compile(model) if compile_model else model
    if d.world_size > 1:
        wrapped = nn.parallel.DistributedDataParallel(
            wrapped, device_ids=[d.local_rank] if device.type == "cuda" else None,
            # an expert that no token of this rank chose gets no gradient in this step
            find_unused_parameters=has_experts,
            # the buffers are functions of the config (ALiBi slopes, BigBird blocks) or per-rank statistics
            # (expert usage counts): nothing to copy from rank 0 before every forward
            broadcast_buffers=False)
    return wrapped


def no_sync(model: nn.Module, d: Distributed, last_micro_step: bool):
    """Skip DDP's gradient all-reduce on every micro-step but the last of an optimizer step."""
    if d.world_size > 1 and not last_micro_step:
        return model.no_sync()
    return contextlib.nullcontext()
