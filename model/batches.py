"""Where a training run's batches and its validation loss come from: random windows of token shards
(pretraining) or padded batches of chat examples (SFT, LoRA).

Both are pure functions of their position (how many batches were drawn), so a checkpoint stores that position
(`state_dict`) and a resumed run continues the same stream. Under DDP each rank draws its own part of every
global batch; validation runs on rank 0 only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import torch
import torch.nn as nn

from model.hardware import Distributed, autocast
from model.sft import SftBatchStream, SftExamples, assistant_loss, masked_nll
from storage.tokens import RandomWindowSampler, TokenShards, iter_sequential_windows


class BatchSource(Protocol):
    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Inputs, targets (-100 where nothing is trained) and the number of real tokens in them."""

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict, rank: int) -> None: ...

    def evaluate(self, model: nn.Module, device: torch.device, dtype: torch.dtype | None,
                 max_batches: int) -> float | None:
        """Mean validation loss per trained token, or None without validation data."""


def _shard_folder(path: str, split: str) -> TokenShards | None:
    """The complete shards of a folder, or of its `split` subfolder (an encode dataset); None when there are none."""
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such token shard folder")
    if not any(folder.glob("shard-*.bin")) and (folder / split).is_dir():
        folder = folder / split
    shards = TokenShards(folder)
    return shards if len(shards) else None


class TokenBatches:
    """Pretraining: random windows of the train shards; validation: the val shards in order."""

    def __init__(self, train: str | list[str], val: str | list[str] | None, block: int, batch_size: int,
                 seed: int, d: Distributed, pad_id: int):
        shards = train if isinstance(train, list) else _shard_folder(train, "train")
        if shards is None:
            raise ValueError(f"{train}: no complete token shards to train on")
        self.sampler = RandomWindowSampler(shards, block, batch_size, seed=seed, rank=d.rank,
                                           world_size=d.world_size)
        self.val = None
        if val:
            self.val = val if isinstance(val, list) else _shard_folder(val, "val")
        self.block, self.batch_size, self.pad_id = block, batch_size, pad_id

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
                with autocast(device, dtype):
                    nll, n = masked_nll(model, torch.from_numpy(x).to(device), torch.from_numpy(y).to(device))
                total += float(nll)
                count += n
        finally:
            model.train()
        return total / count if count else None


class ChatBatches:
    """SFT / LoRA: padded batches of chat examples; validation: the Assistant-turn loss of the val examples.

    max_tokens is the model's block size + 1 (inputs are ids[:-1]); pad_to fixes the batch width (for
    torch.compile, which would recompile for every new width); otherwise widths are rounded up to `multiple`
    (sft.width_multiple: few shapes on a GPU)."""

    def __init__(self, train: str | list[str], val: str | list[str] | None, tokenizer: Any, max_tokens: int,
                 batch_size: int, seed: int, train_on: str, d: Distributed, pad_to: int | None,
                 multiple: int = 1):
        self.train = SftExamples(train, tokenizer, max_tokens, train_on).require_examples("training")
        self.stream = SftBatchStream(len(self.train), batch_size, seed=seed, rank=d.rank, world_size=d.world_size)
        self.val = SftExamples(val, tokenizer, max_tokens, "assistant") if val else None
        if self.val is not None and not len(self.val):
            self.val = None
        self.batch_size, self.pad_to, self.multiple = batch_size, pad_to, multiple

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        indices = self.stream.next_indices()
        x, y = self.train.batch(indices, self.pad_to, self.multiple)
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
