"""Sampling text from a GPT with a KV cache: batched prompts of different lengths (left-padded, with an
attention mask), temperature / top-k / top-p sampling, stop tokens and a budget of new tokens.

Every attention variant keeps its own cache (keys and values, MLA latents, the linear-attention state, a
sliding window's last keys plus sinks), so each step feeds only the newest token.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from model.transformer import GPT


def sample_next_token(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                      top_p: float | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw one token per row from (B, vocab) logits. temperature 0 is greedy (argmax). top_k keeps the k most
    likely tokens; top_p keeps the smallest set of most likely tokens whose probability reaches p (nucleus
    sampling, Holtzman et al. 2020); both may be combined (top-k first). Returns (B,) int64."""
    if temperature < 0:
        raise ValueError(f"temperature={temperature} must be >= 0 (0 = greedy)")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k={top_k} must be >= 1")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p={top_p} must be in (0, 1]")
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits.float() / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth_largest = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth_largest, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        sorted_probs = sorted_logits.softmax(dim=-1)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # probability of the more likely tokens
        drop_sorted = mass_before >= top_p  # the most likely token always stays (mass_before = 0)
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    probs = logits.softmax(dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)


def left_pad(prompts: Sequence[Sequence[int]], pad_token_id: int,
             device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Stack prompts of different lengths right-aligned: (B, T) ids and (B, T) attention mask (1 = real)."""
    if not prompts or any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_token_id, dtype=torch.long)
    mask = torch.zeros(len(prompts), width, dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt):] = torch.tensor(list(prompt), dtype=torch.long)
        mask[row, width - len(prompt):] = 1
    return ids.to(device), mask.to(device)


@torch.no_grad()
def generate(model: GPT, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, stop_tokens: Iterable[int] = (),
             pad_token_id: int = 0, generator: torch.Generator | None = None) -> list[list[int]]:
    """Continue each prompt (a list of token ids) by up to max_new_tokens sampled tokens.

    A row stops at its first stop token, which is not included in the result. Returns the new tokens of each
    prompt. The model is put in eval mode for the call and restored afterwards.
    """
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be >= 0")
    device = next(model.parameters()).device
    ids, mask = left_pad(prompts, pad_token_id, device)
    fed = ids.shape[1] + max(max_new_tokens - 1, 0)  # the last sampled token is never fed back
    if fed > model.config.block_size:
        raise ValueError(f"the longest prompt ({ids.shape[1]} tokens) plus max_new_tokens={max_new_tokens} "
                         f"needs {fed} positions, more than block_size={model.config.block_size}")
    stop = set(stop_tokens)
    results: list[list[int]] = [[] for _ in prompts]
    finished = [False] * len(prompts)
    was_training = model.training
    model.eval()
    try:
        cache = model.new_cache()
        logits = model(ids, attention_mask=mask, cache=cache, only_last=True).logits[:, -1]  # (B, vocab)
        for step in range(max_new_tokens):
            next_token = sample_next_token(logits, temperature, top_k, top_p, generator)  # (B,)
            for row, token in enumerate(next_token.tolist()):
                if finished[row]:
                    continue
                if token in stop:
                    finished[row] = True
                else:
                    results[row].append(token)
            if all(finished) or step == max_new_tokens - 1:
                break
            logits = model(next_token[:, None], cache=cache).logits[:, -1]
    finally:
        model.train(was_training)
    return results
