"""QLoRA (Dettmers et al. 2023): the base model's projection layers frozen in 4-bit NormalFloat (NF4) with double
quantization, and LoRA adapters (model.lora, peft) trained in full precision on top. Also the paged AdamW that
QLoRA pairs with it.

The quantized layers are bitsandbytes' `Linear4bit` (NF4, blocks of 64 weights, each block's absmax quantized
again to 8 bits in blocks of 256: `compress_statistics=True`); their compute dtype is the run's (bfloat16 under
autocast on a GPU, float32 on CPU). Embeddings, norms, the MoE router and the output head stay as they are. peft
wraps each quantized layer with its own bitsandbytes LoRA layer, so the adapter is saved in peft's format and
merges onto the unquantized base checkpoint with `model.lora.merge_adapter`, as a LoRA adapter does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn as nn

from model.lora import apply_lora, lora_targets
from model.transformer import GPT

if TYPE_CHECKING:
    from peft import PeftModel

log = logging.getLogger(__name__)

# Left in full precision even when named as LoRA targets: the output head (QLoRA keeps it; tied, it is the
# embedding) and the MoE router, whose few weights decide which expert a token goes to.
KEPT_PRECISE = ("lm_head", "router")


def _bitsandbytes():
    try:
        import bitsandbytes
    except ImportError as exc:
        raise ImportError("quantize='nf4' (QLoRA) needs bitsandbytes: pip install 'bitsandbytes>=0.50' "
                          "(make setup installs it)") from exc
    return bitsandbytes


@dataclass(frozen=True)
class Nf4Report:
    """What quantizing did: layers replaced, and the bytes the base model's weights take before and after."""

    layers: int
    weights_before: int
    weights_after: int

    @property
    def ratio(self) -> float:
        return self.weights_after / self.weights_before


def weight_bytes(model: nn.Module) -> int:
    """Bytes of the model's parameters (a tied matrix counted once), a 4-bit layer's with its quantization
    state (block absmax, their second-level scales, the code tables)."""
    seen: set[tuple[int, int]] = set()
    total = 0

    def add(t: torch.Tensor) -> None:
        nonlocal total
        key = (t.untyped_storage().data_ptr(), t.storage_offset())
        if key not in seen:
            seen.add(key)
            total += t.numel() * t.element_size()

    for p in model.parameters():
        add(p)
        state = getattr(p, "quant_state", None)
        while state is not None:  # the absmax of a double-quantized layer has a state of its own (state2)
            for t in (state.absmax, state.code, getattr(state, "offset", None)):
                if isinstance(t, torch.Tensor):
                    add(t)
            state = getattr(state, "state2", None)
    return total


def default_compute_dtype(device: torch.device) -> torch.dtype:
    """bfloat16 on a GPU that has it, float32 elsewhere (CPU)."""
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def quantize_nf4(model: GPT, target_modules: Sequence[str], device: torch.device | str = "cpu",
                 compute_dtype: torch.dtype | None = None) -> Nf4Report:
    """Replace the model's linear layers named in target_modules (last name component, as for LoRA; never the
    output head or the router) by frozen NF4 layers with double quantization, in place, and move the model to
    `device`. Each layer is quantized on the device, one at a time, so a GPU never holds the full-precision base."""
    bnb = _bitsandbytes()
    device = torch.device(device)
    compute_dtype = compute_dtype or default_compute_dtype(device)
    names = [n for n in lora_targets(model, target_modules) if n not in KEPT_PRECISE]
    before = weight_bytes(model)
    replaced = 0
    for full_name, module in list(model.named_modules()):
        if type(module) is not nn.Linear or full_name.rsplit(".", 1)[-1] not in names:
            continue
        with torch.device("meta"):  # the float weight Linear4bit would allocate is replaced right away
            layer = bnb.nn.Linear4bit(module.in_features, module.out_features, bias=module.bias is not None,
                                      compute_dtype=compute_dtype, compress_statistics=True, quant_type="nf4")
        layer.weight = bnb.nn.Params4bit(module.weight.data, requires_grad=False, compress_statistics=True,
                                         quant_type="nf4", module=layer).to(device)  # quantizes here
        if module.bias is not None:
            layer.bias = nn.Parameter(module.bias.data.to(device), requires_grad=False)
        # On a CPU with AVX512-BF16, bitsandbytes repacks a layer on its first forward in eval mode into a bf16
        # inference layout, undoing double quantization and leaving the layer in that layout for training too.
        layer.support_avx512bf16_for_cpu = False
        model.set_submodule(full_name, layer)
        replaced += 1
    model.to(device)
    model.requires_grad_(False)
    # peft wraps a bitsandbytes 4-bit layer with its own LoRA layer (peft.tuners.lora.bnb.Linear4bit) only when
    # the model says it is loaded in 4 bits, as transformers' quantized models do.
    model.is_loaded_in_4bit = True
    after = weight_bytes(model)
    log.info("NF4: %d linear layers quantized; base weights %.2f MB -> %.2f MB", replaced, before / 1e6,
             after / 1e6)
    return Nf4Report(layers=replaced, weights_before=before, weights_after=after)


def apply_qlora(model: GPT, rank: int, alpha: float, dropout: float, target_modules: Sequence[str],
                device: torch.device | str = "cpu",
                compute_dtype: torch.dtype | None = None) -> tuple[PeftModel, Nf4Report]:
    """The base quantized to NF4 (`quantize_nf4`), then wrapped with fresh LoRA adapters in float32: only they
    train."""
    report = quantize_nf4(model, target_modules, device, compute_dtype)
    return apply_lora(model, rank, alpha, dropout, target_modules).to(device), report


def is_quantized(model: nn.Module) -> bool:
    return any(type(m).__name__ == "Linear4bit" and hasattr(m.weight, "quant_state") for m in model.modules())


# ------------------------------------------------------------------------------------------------------------
# the paged optimizer


def paged_adamw(groups: list[dict], lr: float, betas: tuple[float, float]) -> torch.optim.Optimizer:
    """bitsandbytes' PagedAdamW (32-bit state): on CUDA, moments of large parameters live in unified memory,
    which the driver pages out to CPU RAM when the GPU runs short instead of failing. On CPU there is nothing
    to page and bitsandbytes runs the same optimizer unpaged."""
    bnb = _bitsandbytes()
    return bnb.optim.PagedAdamW(groups, lr=lr, betas=betas)


def restore_paged_state(optimizer: torch.optim.Optimizer) -> None:
    """After `load_state_dict` from plain tensors: the step count is an int again, as bitsandbytes keeps it,
    and on CUDA the moments go back into paged buffers (loading gives ordinary device tensors)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state.get(p)
            if not state:
                continue
            if isinstance(state.get("step"), torch.Tensor):
                state["step"] = int(state["step"].item())
            if p.device.type != "cuda":
                continue
            for key in ("state1", "state2"):
                value = state.get(key)
                if isinstance(value, torch.Tensor) and not getattr(value, "is_paged", False):
                    buffer = optimizer.get_state_buffer(p, dtype=value.dtype)  # paged where bnb pages
                    buffer.copy_(value)
                    state[key] = buffer


__all__ = ["KEPT_PRECISE", "Nf4Report", "apply_qlora", "default_compute_dtype", "is_quantized", "paged_adamw",
           "quantize_nf4", "restore_paged_state", "weight_bytes"]
