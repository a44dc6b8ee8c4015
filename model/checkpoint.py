"""The tensors of a checkpoint (DESIGN §3, Checkpoints): model weights as safetensors plus config.json, the
optimizer's state as a flat dict of tensors, and the RNG states as plain JSON. The folders they go in, their
names and state.json are `storage.checkpoints`' business.

Never pickles: the weights are a plain tensor file any safetensors reader can open and a JSON config; a tied
output head is stored once (as embed_tokens.weight) and re-tied on load. `optimizer.pt` holds only tensors keyed
`<parameter name>/<state name>` and is read with `torch.load(weights_only=True)`. Files are written under a
temporary name and renamed, so a killed save leaves the previous files intact.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import random
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from model.config import SIZE_FIELDS, ModelConfig, check_fits_in_memory
from model.transformer import GPT
from storage.atomic import write_atomic, write_text_atomic
from storage.checkpoints import CONFIG_NAME, OPTIMIZER_NAME, WEIGHTS_NAME, CheckpointMismatch

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


def save_model(model: nn.Module, directory: str | os.PathLike) -> Path:
    """Write <directory>/model.safetensors and <directory>/config.json; returns the directory."""
    gpt = unwrap_model(model)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {name: t.detach().contiguous() for name, t in gpt.state_dict().items()}
    if gpt.config.tie_embeddings:
        del state[_TIED_HEAD]  # the same tensor as embed_tokens.weight; safetensors refuses shared storage
    metadata = {"format": "pt", "tie_embeddings": str(gpt.config.tie_embeddings)}
    write_atomic(directory / WEIGHTS_NAME, lambda p: save_file(state, str(p), metadata=metadata))
    write_text_atomic(directory / CONFIG_NAME, json.dumps(gpt.config.to_dict(), indent=2, sort_keys=True) + "\n")
    return directory


def load_config(directory: str | os.PathLike) -> ModelConfig:
    path = Path(directory) / CONFIG_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no model config here (expected a directory written by save_model)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object of ModelConfig fields, found {type(data).__name__}")
        missing = [name for name in SIZE_FIELDS if name not in data]
        if missing:
            raise ValueError(f"missing field(s) {', '.join(missing)}")
        config = ModelConfig.from_dict(data)
        check_fits_in_memory(config)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a valid model config: {exc}") from exc
    return config


def load_model(directory: str | os.PathLike, device: torch.device | str = "cpu",
               dtype: torch.dtype | None = None, dropout: float | None = None) -> GPT:
    """Rebuild the GPT described by config.json and fill it from model.safetensors (in eval mode); `dropout`
    replaces the config's (what a fine-tuning run trains with)."""
    directory = Path(directory)
    config = load_config(directory)
    if dropout is not None:
        config = dataclasses.replace(config, dropout=dropout)
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


def save_optimizer(optimizer: torch.optim.Optimizer, names: dict[int, str], directory: Path) -> Path:
    """Write <directory>/optimizer.pt (into a checkpoint folder that is still temporary)."""
    path = directory / OPTIMIZER_NAME
    torch.save(optimizer_tensors(optimizer, names), path)
    return path


def load_optimizer(optimizer: torch.optim.Optimizer, names: dict[int, str], directory: Path) -> None:
    path = directory / OPTIMIZER_NAME
    what_to_do = (f"delete this checkpoint folder to resume from an earlier one, or the run folder {directory.parent} "
                  f"to start over")
    try:
        tensors = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError:  # PyTorch's message suggests loading it unsafely: never repeat it
        raise ValueError(f"{path}: not a chatlike checkpoint: it contains pickled Python objects, which chatlike "
                         f"refuses to load for safety; {what_to_do}") from None
    except (RuntimeError, EOFError, OSError) as exc:
        raise ValueError(f"{path}: damaged or not a PyTorch tensor file ({_first_line(exc)}); {what_to_do}") from None
    if not isinstance(tensors, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in tensors.items()):
        raise ValueError(f"{path}: not a chatlike checkpoint (expected a flat dict of named tensors, found "
                         f"{type(tensors).__name__}); {what_to_do}")
    load_optimizer_tensors(optimizer, names, tensors, directory)


def _first_line(exc: BaseException) -> str:
    return next(iter(str(exc).strip().splitlines()), type(exc).__name__)


def rng_state(device: torch.device) -> dict:
    """The RNG states of torch (and CUDA on a GPU), numpy and Python, as JSON-ready lists."""
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
