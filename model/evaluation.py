"""Trained models after training: loading one for inference (with a LoRA adapter merged in), the Assistant-turn
perplexity of base, SFT and LoRA models on the held-out sft-data examples, as a table, and their replies to the
held-out User turns (what the persona-eval stage compares with the person's real replies).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from model.checkpoint import load_model
from model.generate import generate
from model.hardware import Distributed, pick_device
from model.sft import SftExamples, assistant_loss
from model.transformer import GPT
from storage.chat_format import ASSISTANT, ChatTokens, encode_turn, load_tokenizer, turn_header
from storage.checkpoints import (
    WEIGHTS_NAME,
    checkpoint_tokenizer,
    is_adapter_dir,
    read_state,
    resolve_checkpoint,
)


def load_for_inference(checkpoint: str | os.PathLike, adapter: str | os.PathLike | None = None,
                       device: torch.device | str = "cpu") -> tuple[GPT, dict]:
    """A plain GPT in eval mode from a checkpoint (or run folder), with a LoRA adapter merged in when given.
    Returns it with {"checkpoint", "adapter", "state", "adapter_state"}."""
    ckpt = resolve_checkpoint(checkpoint)
    if is_adapter_dir(ckpt) and not (ckpt / WEIGHTS_NAME).is_file():
        raise ValueError(f"{ckpt} holds a LoRA adapter, not a model: pass its base checkpoint as the checkpoint "
                         f"and this folder as the adapter")
    model = load_model(ckpt, device=device)
    info: dict[str, Any] = {"checkpoint": str(ckpt), "adapter": None, "state": read_state(ckpt) or {},
                            "adapter_state": None}
    if adapter is not None:
        # peft takes seconds to import: only runs with an adapter pay for it
        from model.lora import check_adapter_base, load_adapter

        adapter_dir = resolve_checkpoint(adapter)
        check_adapter_base(ckpt, adapter_dir)
        model = load_adapter(model, adapter_dir).merge_and_unload()
        info["adapter"], info["adapter_state"] = str(adapter_dir), read_state(adapter_dir) or {}
    return model.eval(), info


def recorded_tokenizer(info: dict) -> str | None:
    """The tokenizer a loaded model works with (`info` from `load_for_inference`): the one its adapter's training
    recorded, else the checkpoint's own `tokenizer.json` (an imported base carries one), else the one the
    checkpoint's state.json records; None when there is none. A recorded tokenizer that is gone raises
    FileNotFoundError."""
    adapter_path = ((info.get("adapter_state") or {}).get("tokenizer") or {}).get("path")
    if adapter_path:
        return adapter_path
    try:
        return str(checkpoint_tokenizer(info["checkpoint"]))
    except ValueError:  # neither inside nor recorded
        return None


def _as_tokenizer(tokenizer: Any) -> Any:
    if isinstance(tokenizer, (str, os.PathLike)):
        return load_tokenizer(Path(tokenizer))
    return tokenizer


def assistant_nll(checkpoint: str | os.PathLike, adapter: str | os.PathLike | None, sft_val_parquet: Any,
                  tokenizer: Any, batch_size: int, device: str) -> tuple[float, int, dict]:
    """Mean loss over the Assistant turns of the held-out examples, the tokens it averages, and what was loaded."""
    model, info = load_for_inference(checkpoint, adapter, device)
    tok = _as_tokenizer(tokenizer)
    examples = SftExamples(sft_val_parquet, tok, model.config.block_size + 1).require_examples("validation")
    loss, count = assistant_loss(model, examples, batch_size, device=device)
    return loss, count, info


def evaluate_assistant_perplexity(checkpoint: str | os.PathLike, adapter: str | os.PathLike | None = None, *,
                                  sft_val_parquet: str | os.PathLike | Sequence[str | os.PathLike],
                                  tokenizer: Any, batch_size: int = 8, device: str = "cpu") -> float:
    """exp(mean loss) over the Assistant turns (text + end token) of the held-out SFT examples."""
    loss, _, _ = assistant_nll(checkpoint, adapter, sft_val_parquet, tokenizer, batch_size, device)
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
        loss, count, info = assistant_nll(ckpt, adapter, sft_val_parquet, tok, batch_size, device)
        rows.append({"model": name, "checkpoint": info["checkpoint"], "adapter": info["adapter"],
                     "loss": loss, "perplexity": math.exp(loss), "tokens": count})
    base_ppl = rows[0]["perplexity"]
    for r in rows:
        r["change_vs_base"] = None if r["model"] == "base" else r["perplexity"] / base_ppl - 1.0
    return PerplexityTable(rows)


# ------------------------------------------------------------------------------------------------------------
# replies to held-out turns


@dataclass(frozen=True)
class GeneratedReply:
    text: str
    tokens: int
    finished: bool  # the model ended its turn (else it was cut at max_new_tokens)


def reply_prompt(tokenizer: Any, turns: Sequence[Mapping[str, str]], budget: int,
                 tokens: ChatTokens | None = None) -> list[int]:
    """The turns before a reply and an open Assistant header, in at most `budget` tokens: the newest whole turns
    that fit (the newest one alone cut to its header and its last tokens when it does not), as a chat keeps its
    history; only the header when not even that fits."""
    tokens = tokens or ChatTokens.from_tokenizer(tokenizer)
    header = turn_header(tokens, ASSISTANT)
    room = budget - len(header)
    kept: list[list[int]] = []
    used = 0
    for turn in reversed(turns):
        ids = encode_turn(tokenizer, turn["role"], turn["text"], tokens=tokens)[0]
        if used + len(ids) > room:
            head = turn_header(tokens, turn["role"])
            if not kept and room > len(head):
                kept.append(head + ids[len(head):][-(room - len(head)):])
            break
        kept.append(ids)
        used += len(ids)
    return [t for ids in reversed(kept) for t in ids] + header


@torch.no_grad()
def held_out_replies(checkpoint: str | os.PathLike, adapter: str | os.PathLike | None,
                     contexts: Sequence[Sequence[Mapping[str, str]]], tokenizer: Any, *, max_new_tokens: int,
                     temperature: float, top_k: int | None, top_p: float | None, seed: int, batch_size: int = 32,
                     device: str = "auto") -> list[GeneratedReply]:
    """One sampled reply per conversation (its turns so far, ending with a User turn). Every model called with the
    same contexts and settings samples under the same seed and the same batches (prompts of similar length
    together), so base, SFT and LoRA are compared on equal terms. A reply ends at `<|endoftext|>` (or a new turn's
    `<|startoftext|>`) or after max_new_tokens, at most half the model's block size as in a chat."""
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    where = pick_device(device, Distributed())
    model, _ = load_for_inference(checkpoint, adapter, where)
    tok = _as_tokenizer(tokenizer)
    tokens = ChatTokens.from_tokenizer(tok)
    new = max(1, min(max_new_tokens, model.config.block_size // 2))
    budget = model.config.block_size - new + 1  # the last sampled token is never fed back
    prompts = [reply_prompt(tok, turns, budget, tokens) for turns in contexts]
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), i))
    generator = torch.Generator(device=where).manual_seed(seed)
    replies: list[GeneratedReply | None] = [None] * len(prompts)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        outputs = generate(model, [prompts[i] for i in rows], new, temperature=temperature, top_k=top_k,
                           top_p=top_p, stop_tokens=[tokens.eot, tokens.bos], pad_token_id=tokens.pad,
                           generator=generator)
        for i, ids in zip(rows, outputs, strict=True):
            replies[i] = GeneratedReply(tok.decode(ids, skip_special_tokens=True).strip(), len(ids), len(ids) < new)
    return [r for r in replies if r is not None]
