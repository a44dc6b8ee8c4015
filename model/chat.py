"""A multi-turn chat with a trained model: the conversation is kept as turns, rendered in the SFT format
(`<|startoftext|>User<|separator|>…<|endoftext|>`) and followed by an open Assistant header; the reply is sampled
with the KV cache until `<|endoftext|>` or the token budget.

The prompt plus the reply budget must fit the model's block size, so the oldest turns are dropped first; a
single message longer than that keeps its end. Each reply re-reads the kept history (one batched forward fills
the cache), which keeps positions right when old turns fall out of the window.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from model.evaluation import load_for_inference, recorded_tokenizer
from model.generate import generate
from model.transformer import GPT
from storage.chat_format import (
    ASSISTANT,
    USER,
    ChatTokens,
    encode_turn,
    load_tokenizer,
    tokenizer_file,
    turn_header,
)


@dataclass
class SamplingOptions:
    temperature: float = 0.8
    top_k: int | None = 50
    top_p: float | None = 0.95
    max_new_tokens: int = 128
    seed: int | None = None

    def validate(self) -> SamplingOptions:
        if self.temperature < 0:
            raise ValueError(f"temperature={self.temperature} must be >= 0 (0 = greedy)")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k={self.top_k} must be >= 1")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p} must be in (0, 1]")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={self.max_new_tokens} must be >= 1")
        return self


class ChatSession:
    """A conversation with one model: `reply(message)` returns the Assistant's answer and remembers both."""

    def __init__(self, model: GPT, tokenizer: Any, options: SamplingOptions | None = None):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.options = (options or SamplingOptions()).validate()
        self.tokens = ChatTokens.from_tokenizer(tokenizer)
        self.block_size = model.config.block_size
        # room for the reply: what was asked, but never more than half the window (the history needs some)
        self.max_new_tokens = min(self.options.max_new_tokens, self.block_size // 2)
        device = next(model.parameters()).device
        self.generator = torch.Generator(device=device)
        if self.options.seed is not None:
            self.generator.manual_seed(self.options.seed)
        else:
            self.generator.seed()
        self.history: list[tuple[str, list[int]]] = []  # (role, ids of the whole turn)
        self.turns: list[dict] = []  # the same turns as text
        self.last_reply_finished = False  # the last reply ended with <|endoftext|>, not at the token budget

    def reset(self) -> None:
        self.history.clear()
        self.turns.clear()

    def _turn_ids(self, role: str, text: str) -> list[int]:
        return encode_turn(self.tokenizer, role, text, tokens=self.tokens)[0]

    def prompt_ids(self) -> list[int]:
        """The kept history plus the open Assistant header, within block_size - max_new_tokens + 1 tokens (the last
        sampled token is never fed back, so it needs no position)."""
        header = turn_header(self.tokens, ASSISTANT)
        budget = self.block_size - self.max_new_tokens + 1 - len(header)
        kept: list[list[int]] = []
        used = 0
        for _, ids in reversed(self.history):
            if used + len(ids) > budget:
                break
            kept.append(ids)
            used += len(ids)
        if not kept and self.history:  # the newest message alone is too long: its header and its end
            head = turn_header(self.tokens, self.history[-1][0])
            kept.append(head + self.history[-1][1][len(head):][-(budget - len(head)):])
        return [t for ids in reversed(kept) for t in ids] + header

    def reply(self, message: str) -> str:
        self.history.append((USER, self._turn_ids(USER, message)))
        self.turns.append({"role": USER, "text": message})
        o = self.options
        new = generate(self.model, [self.prompt_ids()], self.max_new_tokens, temperature=o.temperature,
                       top_k=o.top_k, top_p=o.top_p, stop_tokens=[self.tokens.eot], pad_token_id=self.tokens.pad,
                       generator=self.generator)[0]
        self.last_reply_finished = len(new) < self.max_new_tokens  # generate stops early only at a stop token
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        self.history.append((ASSISTANT, self._turn_ids(ASSISTANT, text)))
        self.turns.append({"role": ASSISTANT, "text": text})
        return text


def load_chat(checkpoint: str | os.PathLike, adapter: str | os.PathLike | None = None,
              tokenizer: str | os.PathLike | None = None, device: str = "auto",
              options: SamplingOptions | None = None) -> tuple[ChatSession, dict]:
    """A ChatSession on a checkpoint (or run folder), optionally with a LoRA adapter merged in. The tokenizer
    defaults to the checkpoint's own (see `recorded_tokenizer`). Returns the session and what was loaded."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model, info = load_for_inference(checkpoint, adapter, device)
    try:
        tok_path = tokenizer or recorded_tokenizer(info)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{exc}; pass --tokenizer") from exc
    if tok_path is None:
        raise ValueError(f"{info['checkpoint']} has no tokenizer.json and records none (no state.json); "
                         f"pass --tokenizer")
    if not Path(tok_path).exists():
        raise FileNotFoundError(f"tokenizer {tok_path} (recorded in the checkpoint) is gone; pass --tokenizer")
    tok, tok_file = load_tokenizer(tok_path), tokenizer_file(tok_path)
    if tok.get_vocab_size() > model.config.vocab_size:
        raise ValueError(f"tokenizer {tok_file} has {tok.get_vocab_size()} ids, more than the model's "
                         f"{model.config.vocab_size}: not the tokenizer this model was trained with")
    info["tokenizer"] = str(tok_file)
    return ChatSession(model, tok, options), info


__all__ = ["ChatSession", "SamplingOptions", "load_chat"]
