"""LoRA through `peft` on the transformer's own projection names (DESIGN §5), adapter files, and merging an
adapter into a plain checkpoint.

peft wraps `GPT` directly: the target names are module names of model/transformer.py (`q_proj`, `k_proj`,
`v_proj`, `o_proj`, `gate_proj`, `up_proj`, `down_proj`, and MLA's `q_a_proj`, `q_b_proj`, `kv_a_proj`,
`kv_b_proj`). A tied output head is the token embedding itself, so adapting `lm_head` would silently adapt the
input embedding too: refused. An adapter folder holds `adapter_model.safetensors` + `adapter_config.json` (peft's
own format, safetensors only); a training checkpoint adds `optimizer.pt` and `state.json`, which records the base
checkpoint's config and the sha256 of its weights so that an adapter is never applied to another base model.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch.nn as nn
from peft import LoraConfig, PeftModel, get_peft_model, set_peft_model_state_dict
from safetensors import SafetensorError
from safetensors.torch import load_file

from model.checkpoint import load_config, load_model, save_model, unwrap_model
from model.transformer import GPT
from storage.checkpoints import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    STATE_FORMAT,
    TMP_PREFIX,
    config_difference,
    is_adapter_dir,
    read_state,
    replace_folder,
    resolve_checkpoint,
    weights_sha256,
    write_state,
)

_TIED = ("lm_head", "embed_tokens")


def linear_module_names(model: nn.Module) -> set[str]:
    """Last name component of every nn.Linear in the model: what a LoRA target name can match."""
    return {name.rsplit(".", 1)[-1] for name, m in model.named_modules() if isinstance(m, nn.Linear)}


def lora_targets(model: GPT, requested: Sequence[str]) -> list[str]:
    """The requested names that exist in this model; an error for a tied head or when none exists."""
    if model.config.tie_embeddings:
        tied = [n for n in requested if n in _TIED]
        if tied:
            raise ValueError(f"LoRA target {tied[0]!r} is refused: with tie_embeddings=True lm_head is the token "
                             f"embedding matrix, so adapting it would change the input embedding too")
    available = linear_module_names(model)
    present = [n for n in requested if n in available]
    if not present:
        raise ValueError(f"none of the LoRA target modules {list(requested)} is in this model; its linear layers "
                         f"are {', '.join(sorted(available))}")
    return present


def apply_lora(model: GPT, rank: int, alpha: float, dropout: float, target_modules: Sequence[str]) -> PeftModel:
    """Wrap the model with fresh LoRA adapters (B = 0, so the output is unchanged); only they train."""
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, bias="none",
                        target_modules=lora_targets(model, target_modules))
    wrapped = get_peft_model(model, config)
    leaked = [n for n, p in wrapped.named_parameters() if p.requires_grad and "lora_" not in n]
    if leaked:  # pragma: no cover - peft guarantees this; the check documents the contract
        raise RuntimeError(f"LoRA left base parameters trainable: {leaked[:5]}")
    return wrapped


def save_adapter(model: PeftModel, directory: str | os.PathLike) -> Path:
    """Write only the adapter: adapter_model.safetensors + adapter_config.json."""
    directory = Path(directory)
    model.save_pretrained(str(directory), safe_serialization=True)
    (directory / "README.md").unlink(missing_ok=True)  # peft's generated model card says nothing about this run
    return directory


def load_adapter(model: GPT, adapter_dir: str | os.PathLike, trainable: bool = False) -> PeftModel:
    """The base model wrapped with the saved adapter."""
    adapter_dir = Path(adapter_dir)
    if not is_adapter_dir(adapter_dir) or not (adapter_dir / ADAPTER_WEIGHTS).is_file():
        raise FileNotFoundError(f"{adapter_dir}: not a LoRA adapter (expected {ADAPTER_WEIGHTS} and {ADAPTER_CONFIG})")
    try:
        return PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=trainable)
    except (RuntimeError, ValueError, KeyError, SafetensorError) as exc:
        raise ValueError(f"{adapter_dir}: this adapter does not fit the base model ({exc})") from exc


def load_adapter_weights(model: PeftModel, adapter_dir: str | os.PathLike) -> None:
    """Fill a model already wrapped by `apply_lora` (same settings) with saved adapter weights (resume)."""
    weights = load_file(str(Path(adapter_dir) / ADAPTER_WEIGHTS), device=str(next(model.parameters()).device))
    result = set_peft_model_state_dict(model, weights)
    missing = [k for k in result.missing_keys if "lora_" in k]
    if missing or result.unexpected_keys:
        raise ValueError(f"{adapter_dir}: adapter weights do not match the LoRA settings of this run "
                         f"(missing {missing[:3]}, unexpected {list(result.unexpected_keys)[:3]})")


def check_adapter_base(checkpoint_dir: str | os.PathLike, adapter_dir: str | os.PathLike) -> None:
    """Refuse an adapter trained on another base model: other config, or other weights (sha256 of the base's
    model.safetensors, as recorded in the adapter checkpoint's state.json)."""
    checkpoint_dir, adapter_dir = Path(checkpoint_dir), Path(adapter_dir)
    state = read_state(adapter_dir)
    if not state:
        return  # a bare peft folder: shapes are still checked when it is loaded
    base_state_config = state.get("config")
    base_config = load_config(checkpoint_dir).to_dict()
    if base_state_config is not None and base_state_config != base_config:
        raise ValueError(f"adapter {adapter_dir} is for another base model: it was trained on "
                         f"{state.get('init_from')} whose config differs from {checkpoint_dir}'s: "
                         f"{config_difference(base_state_config, base_config, 'adapter base', 'checkpoint')}")
    recorded = state.get("base_model_sha256")
    if recorded and recorded != weights_sha256(checkpoint_dir):
        raise ValueError(f"adapter {adapter_dir} is for another base model: it was trained on "
                         f"{state.get('init_from')} (weights sha256 {recorded[:12]}…), and {checkpoint_dir} has "
                         f"other weights")


def merge_adapter(checkpoint_dir: str | os.PathLike, adapter_dir: str | os.PathLike,
                  out_dir: str | os.PathLike) -> Path:
    """Fold the adapter into the base weights (W + alpha/r · B A) and write a plain checkpoint — model.safetensors,
    config.json and state.json, as a pretrain checkpoint has — that `model.checkpoint.load_model` reads. The
    folders may be run folders (their `latest` checkpoint is used). Written to a temporary folder, then renamed."""
    base = resolve_checkpoint(checkpoint_dir)
    adapter = resolve_checkpoint(adapter_dir)
    check_adapter_base(base, adapter)
    merged = unwrap_model(load_adapter(load_model(base), adapter).merge_and_unload())
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(f"{TMP_PREFIX}{out_dir.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    save_model(merged, tmp)
    adapter_state, base_state = read_state(adapter) or {}, read_state(base) or {}
    write_state(tmp, {
        "format": STATE_FORMAT,
        "mode": "merged",
        "step": adapter_state.get("step", 0),
        "tokens_seen": adapter_state.get("tokens_seen", 0),
        "config": merged.config.to_dict(),
        "tokenizer": adapter_state.get("tokenizer") or base_state.get("tokenizer"),
        "merged_from": {"base": str(base), "base_model_sha256": weights_sha256(base), "adapter": str(adapter)},
    })
    return replace_folder(tmp, out_dir)


__all__ = [
    "ADAPTER_CONFIG", "ADAPTER_WEIGHTS", "apply_lora", "check_adapter_base", "is_adapter_dir", "linear_module_names",
    "load_adapter", "load_adapter_weights", "lora_targets", "merge_adapter", "save_adapter",
]

