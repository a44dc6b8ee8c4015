"""Sampling text from a GPT with a KV cache: batched prompts of different lengths (left-padded, with an
attention mask), temperature / top-k / top-p sampling, a repetition penalty and a no-repeat n-gram ban, stop
tokens and a budget of new tokens.

Every attention variant keeps its own cache (keys and values, MLA latents, the linear-attention state, a
sliding window's last keys plus sinks), so each step feeds only the newest token. `sample_tokens` is the loop
itself, one step per `next()`, on a cache the caller owns: `generate` collects it, and a chat streams it and
keeps the cache for the next turn.

The repetition penalty and the n-gram ban look at the tokens generated in this call, not at the prompt: a reply
may repeat the words it answers ("Saturday? yes, Saturday works"), and the special tokens of a chat prompt must
keep their probability; what they fight is a small model looping on its own output.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import torch

from model.transformer import GPT, InferenceCache


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


def check_repetition_options(repetition_penalty: float, no_repeat_ngram: int) -> None:
    if not repetition_penalty > 0:
        raise ValueError(f"repetition_penalty={repetition_penalty} must be > 0 (1 = off)")
    if no_repeat_ngram < 0:
        raise ValueError(f"no_repeat_ngram={no_repeat_ngram} must be >= 0 (0 = off)")


def penalize_repetition(logits: torch.Tensor, seen: Sequence[Sequence[int]], penalty: float) -> torch.Tensor:
    """CTRL's repetition penalty (Keskar et al. 2019): the logit of every token in a row's `seen` list is divided by
    `penalty` when positive and multiplied by it when negative, so penalty > 1 makes that token less likely
    whatever the logit's sign. (B, vocab) logits, one list per row; returns new float logits."""
    logits = logits.float().clone()
    if penalty == 1.0:
        return logits
    for row, tokens in enumerate(seen):
        if tokens:
            ids = torch.tensor(sorted(set(tokens)), device=logits.device)
            picked = logits[row, ids]
            logits[row, ids] = torch.where(picked > 0, picked / penalty, picked * penalty)
    return logits


def ban_repeated_ngrams(logits: torch.Tensor, seen: Sequence[Sequence[int]], n: int) -> torch.Tensor:
    """Set to -inf every token that would complete an n-gram already present in the row's `seen` list: the tokens
    that followed each earlier occurrence of its last n - 1 tokens (n = 1: every seen token). n = 0 is off."""
    logits = logits.float().clone()
    if n <= 0:
        return logits
    for row, tokens in enumerate(seen):
        if len(tokens) < n:
            continue
        prefix = list(tokens[len(tokens) - n + 1:]) if n > 1 else []
        banned = {tokens[i + n - 1] for i in range(len(tokens) - n + 1) if list(tokens[i:i + n - 1]) == prefix}
        logits[row, sorted(banned)] = float("-inf")
    return logits


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
def sample_tokens(model: GPT, cache: InferenceCache, ids: torch.Tensor, max_new_tokens: int, *,
                  attention_mask: torch.Tensor | None = None, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None, repetition_penalty: float = 1.0, no_repeat_ngram: int = 0,
                  generator: torch.Generator | None = None) -> Iterator[torch.Tensor]:
    """Feed (B, T) ids into `cache` (which may already hold earlier tokens), then yield max_new_tokens sampled
    (B,) tokens one at a time. A token is fed back only when the next one is asked for, so the last one never
    is, and a caller that stops early (a stop token, a closed stream) leaves the cache holding exactly the tokens
    it was given plus those it consumed except the last. The model must be in eval mode."""
    check_repetition_options(repetition_penalty, no_repeat_ngram)
    fed = cache.length + ids.shape[1] + max(max_new_tokens - 1, 0)  # the last sampled token is never fed back
    if fed > model.config.block_size:
        raise ValueError(f"{cache.length} cached + {ids.shape[1]} new tokens plus max_new_tokens={max_new_tokens} "
                         f"need {fed} positions, more than block_size={model.config.block_size}")
    if max_new_tokens == 0:
        return
    logits = model(ids, attention_mask=attention_mask, cache=cache, only_last=True).logits[:, -1]  # (B, vocab)
    generated: list[list[int]] = [[] for _ in range(ids.shape[0])]
    for step in range(max_new_tokens):
        if repetition_penalty != 1.0:
            logits = penalize_repetition(logits, generated, repetition_penalty)
        if no_repeat_ngram:
            logits = ban_repeated_ngrams(logits, generated, no_repeat_ngram)
        next_token = sample_next_token(logits, temperature, top_k, top_p, generator)  # (B,)
        for row, token in enumerate(next_token.tolist()):
            generated[row].append(token)
        yield next_token
        if step == max_new_tokens - 1:
            break
        logits = model(next_token[:, None], cache=cache).logits[:, -1]


def generate(model: GPT, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, repetition_penalty: float = 1.0,
             no_repeat_ngram: int = 0, stop_tokens: Iterable[int] = (), pad_token_id: int = 0,
             generator: torch.Generator | None = None) -> list[list[int]]:
    """Continue each prompt (a list of token ids) by up to max_new_tokens sampled tokens.

    A row stops at its first stop token, which is not included in the result. repetition_penalty (> 1 to
    discourage) and no_repeat_ngram (n > 0 bans repeating any n-gram) apply to each row's generated tokens.
    Returns the new tokens of each prompt. The model is put in eval mode for the call and restored afterwards.
    """
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be >= 0")
    check_repetition_options(repetition_penalty, no_repeat_ngram)
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
        steps = sample_tokens(model, model.new_cache(), ids, max_new_tokens, attention_mask=mask,
                              temperature=temperature, top_k=top_k, top_p=top_p,
                              repetition_penalty=repetition_penalty, no_repeat_ngram=no_repeat_ngram,
                              generator=generator)
        for next_token in steps:
            for row, token in enumerate(next_token.tolist()):
                if finished[row]:
                    continue
                if token in stop:
                    finished[row] = True
                else:
                    results[row].append(token)
            if all(finished):
                break
    finally:
        model.train(was_training)
    return results
