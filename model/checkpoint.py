"""Saving and loading model weights as safetensors plus config.json (DESIGN §3, Checkpoints).

Never pickles: a checkpoint is a plain tensor file any safetensors reader can open and a JSON config. A tied
output head is stored once (as embed_tokens.weight) and re-tied on load. Files are written under a temporary
name and renamed, so a killed save leaves the previous files intact.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
import torch.nn as nn
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from model.config import ModelConfig
from model.transformer import GPT

WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"
_TIED_HEAD = "lm_head.weight"


def unwrap_model(model: nn.Module) -> GPT:
    """The GPT inside a torch.compile (`_orig_mod`) and/or DistributedDataParallel (`module`) wrapper."""
    while not isinstance(model, GPT):
        inner = getattr(model, "_orig_mod", None)
        if inner is None:
            inner = getattr(model, "module", None)
        if not isinstance(inner, nn.Module):
            raise TypeError(f"expected a GPT (possibly compiled or DDP-wrapped), got {type(model).__name__}")
        model = inner
    return model


def _write_atomically(path: Path, write) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def save_model(model: nn.Module, directory: str | os.PathLike) -> Path:
    """Write <directory>/model.safetensors and <directory>/config.json; returns the directory."""
    gpt = unwrap_model(model)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {name: t.detach().contiguous() for name, t in gpt.state_dict().items()}
    if gpt.config.tie_embeddings:
        del state[_TIED_HEAD]  # the same tensor as embed_tokens.weight; safetensors refuses shared storage
    metadata = {"format": "pt", "tie_embeddings": str(gpt.config.tie_embeddings)}
    _write_atomically(directory / WEIGHTS_NAME, lambda p: save_file(state, str(p), metadata=metadata))
    config_json = json.dumps(gpt.config.to_dict(), indent=2, sort_keys=True) + "\n"
    _write_atomically(directory / CONFIG_NAME, lambda p: p.write_text(config_json))
    return directory


def load_config(directory: str | os.PathLike) -> ModelConfig:
    path = Path(directory) / CONFIG_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no model config here (expected a directory written by save_model)")
    try:
        return ModelConfig.from_dict(json.loads(path.read_text()))
    except (json.JSONDecodeError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a valid model config: {exc}") from exc


def load_model(directory: str | os.PathLike, device: torch.device | str = "cpu",
               dtype: torch.dtype | None = None) -> GPT:
    """Rebuild the GPT described by config.json and fill it from model.safetensors (in eval mode)."""
    directory = Path(directory)
    config = load_config(directory)
    weights = directory / WEIGHTS_NAME
    if not weights.is_file():
        raise FileNotFoundError(f"{weights}: weights file missing")
    try:
        state = load_file(str(weights), device=str(device))
    except SafetensorError as exc:
        raise ValueError(f"{weights}: cannot read the safetensors file: {exc}") from exc

    with torch.device(device):
        model = GPT(config)
    expected = model.state_dict()
    allowed_missing = {_TIED_HEAD} if config.tie_embeddings else set()
    missing = sorted(set(expected) - set(state) - allowed_missing)
    unexpected = sorted(set(state) - set(expected))
    wrong_shape = sorted(f"{n} {tuple(state[n].shape)} != {tuple(expected[n].shape)}"
                         for n in set(state) & set(expected) if state[n].shape != expected[n].shape)
    if missing or unexpected or wrong_shape:
        problems = [f"missing {missing}" if missing else "", f"unexpected {unexpected}" if unexpected else "",
                    f"wrong shapes {wrong_shape}" if wrong_shape else ""]
        raise ValueError(f"{weights} does not match {directory / CONFIG_NAME}: "
                         + "; ".join(p for p in problems if p))
    model.load_state_dict(state, strict=False)  # only the tied head may be absent, checked above
    if config.tie_embeddings:
        model.lm_head.weight = model.embed_tokens.weight
    model = model.to(device=device, dtype=dtype)  # every buffer too, wherever it was made
    return model.eval()
