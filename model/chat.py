"""A multi-turn chat with a trained model: the conversation is kept as turns, rendered in the SFT format
(`<|startoftext|>User<|separator|>…<|endoftext|>`) and followed by an open Assistant header; the reply is sampled
with the KV cache and streamed as text until `<|endoftext|>` or `<|startoftext|>` (a model that opens a new turn
has finished its reply) or the token budget.

The prompt plus the reply budget must fit the model's block size, so the oldest turns are dropped first; a
single message longer than that keeps its end. The KV cache outlives a reply: the next turn feeds only what is
new (the end of the reply, the User turn, the Assistant header). When old turns must be dropped, the kept ones
no longer start where the cache does, and the cache is rebuilt from them, so every position stays right.
A turn's ids are the ones the model saw or sampled, never a re-encoding of the decoded text, so a kept cache
and a rebuilt one hold the same tokens.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from model.evaluation import load_for_inference, recorded_tokenizer
from model.generate import check_repetition_options, sample_tokens
from model.transformer import GPT, InferenceCache
from storage.chat_format import (
    ASSISTANT,
    USER,
    ChatTokens,
    encode_turn,
    load_tokenizer,
    tokenizer_file,
    turn_header,
)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class SamplingOptions:
    temperature: float = 0.8
    top_k: int | None = 50
    top_p: float | None = 0.95
    max_new_tokens: int = 128
    seed: int | None = None
    repetition_penalty: float = 1.0  # CTRL-style, on the tokens of the reply so far; 1 = off
    no_repeat_ngram: int = 0  # never repeat an n-gram of the reply so far; 0 = off

    def validate(self) -> SamplingOptions:
        if self.temperature < 0:
            raise ValueError(f"temperature={self.temperature} must be >= 0 (0 = greedy)")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k={self.top_k} must be >= 1")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p} must be in (0, 1]")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={self.max_new_tokens} must be >= 1")
        check_repetition_options(self.repetition_penalty, self.no_repeat_ngram)
        return self


class ChatSession:
    """A conversation with one model: `stream(message)` yields the Assistant's answer as it is sampled,
    `reply(message)` returns it whole; both remember the message and the answer.

    reuse_cache=False re-reads the whole kept history for every reply (the reference the kept cache is tested
    against)."""

    def __init__(self, model: GPT, tokenizer: Any, options: SamplingOptions | None = None, *,
                 reuse_cache: bool = True):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.tokens = ChatTokens.from_tokenizer(tokenizer)
        self.stop_tokens = frozenset((self.tokens.eot, self.tokens.bos))
        self.block_size = model.config.block_size
        self.reuse_cache = reuse_cache
        self.device = next(model.parameters()).device
        self.generator = torch.Generator(device=self.device)
        self.options = SamplingOptions()
        self.set_options(**dataclasses.asdict((options or SamplingOptions()).validate()))
        if self.options.seed is None:
            self.generator.seed()
        self.history: list[tuple[str, list[int]]] = []  # (role, ids of the whole turn)
        self.turns: list[dict] = []  # the same turns as text
        self.reply_options: list[SamplingOptions] = []  # what each Assistant turn was sampled with
        self.last_reply_finished = False  # the last reply ended at a stop token, not at the token budget
        self.last_prefill_tokens = 0  # tokens fed before the last reply's first sampled token
        self._cache: InferenceCache | None = None
        self._cached_ids: list[int] = []  # the tokens self._cache holds, in order
        self._streaming = False  # a reply is being sampled: history and cache are in flux

    def set_options(self, **changes: Any) -> SamplingOptions:
        """Change sampling options between turns (temperature=0.5, top_p=0.9, …); a new seed restarts the
        random stream. Raises ValueError for an unknown name or a bad value and then changes nothing."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(SamplingOptions)})
        if unknown:
            raise ValueError(f"unknown sampling option(s) {', '.join(unknown)}; expected some of "
                             f"{', '.join(f.name for f in dataclasses.fields(SamplingOptions))}")
        self.options = dataclasses.replace(self.options, **changes).validate()
        # room for the reply: what was asked, but never more than half the window (the history needs some)
        self.max_new_tokens = min(self.options.max_new_tokens, self.block_size // 2)
        if changes.get("seed") is not None:
            self.generator.manual_seed(changes["seed"])
        return self.options

    def reset(self) -> None:
        self.history.clear()
        self.turns.clear()
        self.reply_options.clear()
        self._cache, self._cached_ids = None, []

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

    def _cache_for(self, prompt: list[int]) -> tuple[InferenceCache, list[int]]:
        """The cache to continue and the prompt tokens it still lacks: the kept cache when it holds the start of
        this prompt, else a new one (first turn, reuse off, or old turns dropped)."""
        cached = self._cached_ids
        if (self.reuse_cache and self._cache is not None and len(cached) < len(prompt)
                and prompt[:len(cached)] == cached):
            return self._cache, prompt[len(cached):]
        return self.model.new_cache(), prompt

    def _new_text(self, reply: list[int], shown: str, last: bool = False) -> str:
        """What the reply's text adds to what was shown: nothing while it ends in a character cut across tokens
        (the replacement character), unless this is the last call (a reply cut at the budget may end so)."""
        text = self.tokenizer.decode(reply, skip_special_tokens=True)
        if (text.endswith("\ufffd") and not last) or not text.startswith(shown):
            return ""
        return text[len(shown):]

    def stream(self, message: str) -> Iterator[str]:
        """Add the User message and yield the Assistant's reply as text pieces while it is sampled. A piece is
        released once the text decodes cleanly (a character split across tokens waits for its last byte). When
        the iterator is exhausted, or closed early, the reply so far is in the history, as `reply` leaves it.
        Nothing happens before the first piece is asked for; one reply streams at a time."""
        if self._streaming:
            raise RuntimeError("a reply is still being streamed: exhaust or close it before the next message")
        user_ids = self._turn_ids(USER, message)
        self._streaming = True
        self.history.append((USER, user_ids))
        self.turns.append({"role": USER, "text": message})
        options = self.options
        prompt = self.prompt_ids()
        cache, new = self._cache_for(prompt)
        self._cache, self._cached_ids = None, []  # until the reply is recorded, the cache is in flux
        self.last_prefill_tokens = len(new)
        steps = sample_tokens(self.model, cache, torch.tensor([new], device=self.device), self.max_new_tokens,
                              temperature=options.temperature, top_k=options.top_k, top_p=options.top_p,
                              repetition_penalty=options.repetition_penalty,
                              no_repeat_ngram=options.no_repeat_ngram, generator=self.generator)
        reply: list[int] = []
        shown = ""  # the text yielded so far
        finished = False
        try:
            for step in steps:
                token = int(step[0])
                if token in self.stop_tokens:
                    finished = True
                    break
                reply.append(token)
                if piece := self._new_text(reply, shown):
                    shown += piece
                    yield piece
            if piece := self._new_text(reply, shown, last=True):
                shown += piece
                yield piece
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):  # a forward may have stopped half-way through the layers
                cache = None
            raise
        finally:
            steps.close()
            self.last_reply_finished = finished
            self.history.append((ASSISTANT, turn_header(self.tokens, ASSISTANT) + reply + [self.tokens.eot]))
            self.turns.append({"role": ASSISTANT, "text": shown})
            self.reply_options.append(options)
            if self.reuse_cache and cache is not None:
                self._cache, self._cached_ids = cache, (prompt + reply)[:cache.length]
            self._streaming = False

    def reply(self, message: str) -> str:
        return "".join(self.stream(message))

    def transcript(self) -> list[dict]:
        """The turns as {"role", "text"}, an Assistant turn with the sampling options it was drawn with."""
        options = iter(self.reply_options)
        return [{**turn, "sampling": dataclasses.asdict(next(options))} if turn["role"] == ASSISTANT else dict(turn)
                for turn in self.turns]


def save_transcript(session: ChatSession, info: dict, path: str | os.PathLike) -> Path:
    """Write the conversation to `path`: Markdown when it ends in .md, else JSON lines (a first line with the
    model, adapter, tokenizer and current sampling options, then one line per turn). Returns the path."""
    path = Path(path)
    settings = {"checkpoint": info.get("checkpoint"), "adapter": info.get("adapter"),
                "tokenizer": info.get("tokenizer"), "dtype": info.get("dtype"),
                "sampling": dataclasses.asdict(session.options)}
    turns = session.transcript()
    if path.suffix.lower() in (".md", ".markdown"):
        lines = ["# chatlike chat", ""]
        lines += [f"- {key}: {value}" for key, value in settings.items() if key != "sampling"]
        lines += [f"- sampling: {_options_text(settings['sampling'])}", ""]
        for turn in turns:
            note = ""
            if "sampling" in turn and turn["sampling"] != settings["sampling"]:
                note = f" ({_options_text(turn['sampling'])})"
            lines += [f"**{turn['role']}**{note}: {turn['text']}", ""]
        text = "\n".join(lines)
    else:
        text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in [{"settings": settings}, *turns])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _options_text(options: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in options.items())


def inference_dtype(dtype: str, device: str) -> torch.dtype:
    """The torch dtype for --dtype on `device`: auto is bfloat16 on a CUDA device that supports it, else float32;
    float16 needs a CUDA device."""
    if dtype == "auto":
        on_cuda = str(device).startswith("cuda")
        return torch.bfloat16 if on_cuda and torch.cuda.is_bf16_supported() else torch.float32
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of auto, {', '.join(DTYPES)}")
    if dtype == "float16" and not str(device).startswith("cuda"):
        raise ValueError(f"dtype float16 needs a CUDA device, not {device}: use bfloat16 or float32 on the CPU")
    return DTYPES[dtype]


def load_chat(checkpoint: str | os.PathLike, adapter: str | os.PathLike | None = None,
              tokenizer: str | os.PathLike | None = None, device: str = "auto",
              options: SamplingOptions | None = None, dtype: str = "auto", *,
              reuse_cache: bool = True) -> tuple[ChatSession, dict]:
    """A ChatSession on a checkpoint (or run folder), optionally with a LoRA adapter merged in, with weights in
    `dtype` (see `inference_dtype`). The tokenizer defaults to the checkpoint's own (see `recorded_tokenizer`).
    Returns the session and what was loaded: {"checkpoint", "adapter", "tokenizer", "dtype", …}."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    torch_dtype = inference_dtype(dtype, device)
    # a half-precision model is cast on the CPU first, so the device never holds the float32 copy
    model, info = load_for_inference(checkpoint, adapter, device if torch_dtype == torch.float32 else "cpu")
    model = model.to(device=device, dtype=torch_dtype)
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
    info["dtype"] = str(torch_dtype).removeprefix("torch.")
    return ChatSession(model, tok, options, reuse_cache=reuse_cache), info


__all__ = ["ChatSession", "SamplingOptions", "inference_dtype", "load_chat", "save_transcript"]
