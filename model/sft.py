"""Chat examples for supervised fine-tuning (DESIGN §4 sft-data, §5): targets from the loss masks of the chat
format (`storage.chat_format`), padded batches from the sft-data Parquet, a resumable batch stream, and the
Assistant-turn loss.

A token the mask does not train (by default the User turns, the role names and the special tokens around them)
gets the target -100, the ignore index of the cross-entropy, as does padding. Batches are right-padded; a causal
model never looks right, so padding needs no attention mask.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from storage.chat_format import ChatTokens, encode_example
from storage.parquet import iter_rows
from storage.tokens import IGNORE_INDEX

STREAM_STATE_VERSION = 1


def shift_labels(ids: Sequence[int], mask: Sequence[int]) -> tuple[list[int], list[int]]:
    """Inputs ids[:-1] and targets ids[1:], a target being -100 where its token is not trained."""
    x = list(ids[:-1])
    y = [t if m else IGNORE_INDEX for t, m in zip(ids[1:], mask[1:], strict=True)]
    return x, y


# ------------------------------------------------------------------------------------------------------------
# examples of one split, batches, and the order they are drawn in


class SftExamples:
    """The tokenised examples of sft-data Parquet file(s) (their `turns` column), ready to batch.

    An example longer than max_tokens (the model's block size + 1: inputs are ids[:-1]) keeps its last
    max_tokens ids, so the Assistant turn it ends with stays whole; `truncated` counts them.
    """

    def __init__(self, parquet: str | os.PathLike | Sequence[str | os.PathLike], tokenizer: Any,
                 max_tokens: int, train_on: str = "assistant"):
        paths = [Path(parquet)] if isinstance(parquet, (str, os.PathLike)) else [Path(p) for p in parquet]
        for p in paths:
            if not p.is_file():
                raise FileNotFoundError(f"{p}: no such SFT examples file (expected the sft-data stage's Parquet)")
        self.paths = paths
        self.tokens = ChatTokens.from_tokenizer(tokenizer)
        self.max_width = max_tokens - 1  # the longest input a batch can hold (the model's block size)
        self.inputs: list[np.ndarray] = []
        self.targets: list[np.ndarray] = []
        self.truncated = 0
        for row in iter_rows(paths, columns=["turns"]):
            ids, mask = encode_example(tokenizer, row["turns"], train_on)
            if len(ids) > max_tokens:
                ids, mask = ids[-max_tokens:], mask[-max_tokens:]
                self.truncated += 1
            x, y = shift_labels(ids, mask)
            self.inputs.append(np.asarray(x, dtype=np.int64))
            self.targets.append(np.asarray(y, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.inputs)

    def require_examples(self, what: str) -> SftExamples:
        if not self.inputs:
            raise ValueError(f"{', '.join(map(str, self.paths))}: the {what} SFT set is empty (no examples); "
                             f"check the sft-data stage's target_author, block_size and session settings")
        if not any((t != IGNORE_INDEX).any() for t in self.targets):
            raise ValueError(f"{', '.join(map(str, self.paths))}: no {what} SFT example has a token to train on")
        return self

    def batch(self, indices: Sequence[int], pad_to: int | None = None,
              multiple: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, y) int64 tensors of shape (len(indices), width), right-padded with the pad id / -100; width is
        the longest example's length rounded up to `multiple` (at most the block size), or pad_to (fixed shapes
        for torch.compile)."""
        width = max(len(self.inputs[i]) for i in indices)
        if multiple > 1:
            width = max(width, min(-(-width // multiple) * multiple, self.max_width))
        if pad_to is not None:
            width = max(width, pad_to)
        x = np.full((len(indices), width), self.tokens.pad, dtype=np.int64)
        y = np.full((len(indices), width), IGNORE_INDEX, dtype=np.int64)
        for row, i in enumerate(indices):
            n = len(self.inputs[i])
            x[row, :n] = self.inputs[i]
            y[row, :n] = self.targets[i]
        return torch.from_numpy(x), torch.from_numpy(y)


class SftBatchStream:
    """Which examples make up batch k of a rank: epoch e = k // batches_per_epoch shuffles all examples with a
    generator seeded by (seed, e), the same on every rank, and rank r takes its own slice of each global batch.
    Like `RandomWindowSampler`, the stream is a pure function of its settings and k, so the state to resume is
    the number of batches drawn. The last batch of an epoch wraps around to the start of the permutation so that
    every batch is full."""

    def __init__(self, num_examples: int, batch_size: int, seed: int = 0, rank: int = 0, world_size: int = 1):
        if num_examples < 1:
            raise ValueError("cannot draw batches from an empty SFT set")
        if batch_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"invalid batch_size={batch_size} / rank={rank} / world_size={world_size}")
        self.num_examples, self.batch_size = num_examples, batch_size
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.batches_per_epoch = math.ceil(num_examples / (batch_size * world_size))
        self.batches = 0
        self._epoch = -1
        self._perm = np.zeros(0, dtype=np.int64)

    def next_indices(self) -> list[int]:
        epoch, k = divmod(self.batches, self.batches_per_epoch)
        if epoch != self._epoch:
            self._perm = np.random.default_rng([self.seed, epoch]).permutation(self.num_examples)
            self._epoch = epoch
        start = (k * self.world_size + self.rank) * self.batch_size
        self.batches += 1
        return [int(self._perm[(start + i) % self.num_examples]) for i in range(self.batch_size)]

    def state_dict(self) -> dict:
        return {"version": STREAM_STATE_VERSION, "seed": self.seed, "world_size": self.world_size,
                "batch_size": self.batch_size, "examples": self.num_examples, "batches": self.batches}

    def load_state_dict(self, state: dict) -> None:
        if state.get("version") != STREAM_STATE_VERSION:
            raise ValueError(f"SFT batch stream state version {state.get('version')!r} is not {STREAM_STATE_VERSION}")
        mine = self.state_dict()
        for key in ("seed", "world_size", "batch_size", "examples"):
            if state.get(key) != mine[key]:
                raise ValueError(f"cannot resume the SFT batch stream: saved {key}={state.get(key)!r}, "
                                 f"this run has {mine[key]!r}")
        batches = state.get("batches")
        if not isinstance(batches, int) or batches < 0:
            raise ValueError(f"SFT batch stream state has no valid 'batches' count: {batches!r}")
        self.batches = batches


def width_multiple(device: torch.device) -> int:
    """What a padded batch's width is rounded up to on `device`. On a GPU every new batch shape costs an
    attention plan (about 0.1 s each on an H200 with torch 2.11, against ~15 ms for a whole step of an 11.7M model):
    widths in steps of 64 keep the shapes few. A CPU gains nothing from extra padding."""
    return 64 if device.type == "cuda" else 1


# ------------------------------------------------------------------------------------------------------------
# loss on the trained tokens only


def masked_nll(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Summed next-token negative log-likelihood over the targets that are not -100, and how many there are."""
    logits = model(x).logits
    nll = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), ignore_index=IGNORE_INDEX, reduction="sum")
    return nll, int((y != IGNORE_INDEX).sum())


@torch.no_grad()
def assistant_loss(model: torch.nn.Module, examples: SftExamples, batch_size: int = 8,
                   max_batches: int | None = None, device: torch.device | str = "cpu",
                   autocast_dtype: torch.dtype | None = None) -> tuple[float, int]:
    """Mean loss per trained token over the examples in file order (the first max_batches batches), and the
    number of tokens it averages. With examples built with train_on="assistant" this is the Assistant-turn loss;
    exp() of it is their perplexity."""
    device = torch.device(device)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for b, start in enumerate(range(0, len(examples), batch_size)):
            if max_batches is not None and b >= max_batches:
                break
            x, y = examples.batch(range(start, min(start + batch_size, len(examples))),
                                  multiple=width_multiple(device))
            autocast = (torch.autocast(device.type, dtype=autocast_dtype) if autocast_dtype is not None
                        else contextlib.nullcontext())
            with autocast:
                nll, n = masked_nll(model, x.to(device), y.to(device))
            total += float(nll)
            count += n
    finally:
        model.train(was_training)
    if count == 0:
        raise ValueError("no trained tokens to evaluate (the SFT set is empty or has no Assistant turn)")
    return total / count, count


__all__ = ["SftBatchStream", "SftExamples", "assistant_loss", "masked_nll", "shift_labels", "width_multiple"]
