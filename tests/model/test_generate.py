"""Generation: sampling options, the repetition penalty and the n-gram ban, stop tokens, batched left-padded prompts through the KV cache of every
attention type (== recomputing the whole sequence each step), and what each cache keeps."""

from __future__ import annotations

import pytest
import torch

from model import GPT, ModelConfig, generate, sample_next_token
from model.generate import ban_repeated_ngrams, penalize_repetition
from model.transformer import MixtureOfExperts

# Untied and with a larger init: a fresh tied model greedily repeats the last prompt token, which would make
# "cached generation == recomputation" too easy to pass.
BASE = dict(vocab_size=48, block_size=48, d_model=32, n_heads=4, n_layers=2, tie_embeddings=False, init_std=0.1)
ATTENTION_VARIANTS = {
    "full-learned": dict(),
    "gqa-rope": dict(position="rope", n_kv_heads=2),
    "sliding-window-sinks": dict(attention="sliding_window", window_size=4, n_sink_tokens=2, position="alibi"),
    "linear": dict(attention="linear", linear_chunk_size=4),
    "bigbird": dict(attention="bigbird", bigbird_block_size=2, bigbird_window_blocks=2, bigbird_random_blocks=1,
                    position="rope"),
    "mla": dict(attention="mla", position="rope", mla_kv_lora_rank=8),
    "moe-relative": dict(n_experts=3, n_experts_per_token=2, position="relative", relative_num_buckets=8,
                         relative_max_distance=16),
}
PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [1, 2], [30, 31, 32, 33]]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def make_model(overrides: dict, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(ModelConfig(**{**BASE, **overrides})).eval()


def greedy_without_cache(model: GPT, prompt: list[int], n: int) -> list[int]:
    tokens = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            tokens.append(int(model(torch.tensor([tokens])).logits[0, -1].argmax()))
    return tokens[len(prompt):]


# ------------------------------------------------------------------------------------------------------------
# sampling


def test_temperature_zero_and_top_k_one_are_greedy():
    logits = torch.randn(5, 40, generator=torch.Generator().manual_seed(0))
    greedy = logits.argmax(dim=-1)
    assert torch.equal(sample_next_token(logits, temperature=0), greedy)
    for seed in range(5):
        generator = torch.Generator().manual_seed(seed)
        assert torch.equal(sample_next_token(logits, top_k=1, generator=generator), greedy)
        assert torch.equal(sample_next_token(logits, top_p=1e-6, generator=generator), greedy)


def test_top_k_and_top_p_keep_only_the_likely_tokens():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    logits = probs.log().expand(4000, -1)
    generator = torch.Generator().manual_seed(0)
    top2 = sample_next_token(logits, top_k=2, generator=generator)
    assert set(top2.tolist()) == {0, 1}
    nucleus = sample_next_token(logits, top_p=0.9, generator=generator)  # 0.5 + 0.3 < 0.9 <= 0.5 + 0.3 + 0.15
    assert set(nucleus.tolist()) == {0, 1, 2}
    plain = sample_next_token(logits, generator=generator)
    assert set(plain.tolist()) == {0, 1, 2, 3}
    assert abs((plain == 0).float().mean().item() - 0.5) < 0.05


@pytest.mark.parametrize("kwargs", [dict(temperature=-1.0), dict(top_k=0), dict(top_p=0.0), dict(top_p=1.5)])
def test_invalid_sampling_options_are_rejected(kwargs):
    with pytest.raises(ValueError):
        sample_next_token(torch.zeros(1, 4), **kwargs)


def test_repetition_penalty_lowers_the_probability_of_seen_tokens():
    logits = torch.tensor([[2.0, -1.0, 0.5, 0.0, 1.0], [2.0, -1.0, 0.5, 0.0, 1.0]])
    seen = [[0, 1, 1], []]
    penalized = penalize_repetition(logits, seen, 2.0)
    assert penalized[0].tolist() == [1.0, -2.0, 0.5, 0.0, 1.0]  # positive divided, negative multiplied
    assert torch.equal(penalized[1], logits[1])  # nothing seen, nothing changes
    before, after = logits[0].softmax(-1), penalized[0].softmax(-1)
    assert (after[[0, 1]] < before[[0, 1]]).all() and (after[2:] > before[2:]).all()
    assert torch.equal(penalize_repetition(logits, seen, 1.0), logits)
    assert penalize_repetition(logits, seen, 0.5)[0, 0] == 4.0  # below 1 it encourages repetition


def test_no_repeat_ngram_bans_what_would_complete_a_seen_ngram():
    logits = torch.zeros(1, 8)
    banned = lambda seen, n: torch.isinf(ban_repeated_ngrams(logits, [seen], n)[0]).nonzero().flatten().tolist()  # noqa: E731
    assert banned([1, 2, 3, 1, 2, 4, 1, 2], 3) == [3, 4]  # "1 2" was followed by 3 and by 4
    assert banned([1, 2, 3, 1, 2], 2) == [3]  # after 2 came 3
    assert banned([5, 6, 5], 1) == [5, 6]  # unigrams: every seen token
    assert banned([1, 2], 3) == [] and banned([1, 2, 3], 0) == []


@pytest.mark.parametrize("name", ["full-learned", "gqa-rope"])
def test_generation_never_repeats_a_banned_ngram(name):
    model = make_model(ATTENTION_VARIANTS[name])
    free = generate(model, PROMPTS, max_new_tokens=30, temperature=0)
    assert any(has_repeated_ngram(row, 3) for row in free)  # greedy loops without the ban
    for kwargs in (dict(temperature=0), dict(temperature=1.0, generator=torch.Generator().manual_seed(0))):
        rows = generate(model, PROMPTS, max_new_tokens=30, no_repeat_ngram=3, **kwargs)
        assert all(len(row) == 30 and not has_repeated_ngram(row, 3) for row in rows)


def has_repeated_ngram(tokens: list[int], n: int) -> bool:
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return len(set(grams)) < len(grams)


def test_repetition_penalty_in_generation():
    model = make_model(ATTENTION_VARIANTS["full-learned"])
    free = generate(model, PROMPTS, max_new_tokens=20, temperature=0)
    assert generate(model, PROMPTS, max_new_tokens=20, temperature=0, repetition_penalty=1.0,
                    no_repeat_ngram=0) == free  # the defaults change nothing
    assert any(len(set(row)) < len(row) for row in free)
    # a huge penalty pushes every seen token below the unseen ones with a positive logit: no token comes twice
    penalized = generate(model, PROMPTS, max_new_tokens=20, temperature=0, repetition_penalty=1e6)
    assert all(len(set(row)) == len(row) == 20 for row in penalized)
    mild = generate(model, PROMPTS, max_new_tokens=20, temperature=0, repetition_penalty=1.3)
    assert sum(len(set(r)) for r in free) < sum(len(set(r)) for r in mild) < sum(len(set(r)) for r in penalized)
    with pytest.raises(ValueError, match="repetition_penalty"):
        generate(model, PROMPTS, 4, repetition_penalty=0)
    with pytest.raises(ValueError, match="no_repeat_ngram"):
        generate(model, PROMPTS, 4, no_repeat_ngram=-1)


# ------------------------------------------------------------------------------------------------------------
# generate()


@pytest.mark.parametrize("name", list(ATTENTION_VARIANTS))
def test_cached_batched_generation_equals_recomputing_each_row(name):
    model = make_model(ATTENTION_VARIANTS[name])
    generated = generate(model, PROMPTS, max_new_tokens=12, temperature=0)
    assert generated == [greedy_without_cache(model, p, 12) for p in PROMPTS]


def test_top_k_one_generation_equals_greedy_and_seeds_reproduce():
    model = make_model(ATTENTION_VARIANTS["gqa-rope"])
    greedy = generate(model, PROMPTS, max_new_tokens=8, temperature=0)
    assert generate(model, PROMPTS, max_new_tokens=8, top_k=1) == greedy
    sample = lambda seed: generate(model, PROMPTS, 8, temperature=1.5, top_p=0.95,  # noqa: E731
                                   generator=torch.Generator().manual_seed(seed))
    assert sample(3) == sample(3)
    assert sample(3) != sample(4)


def test_stop_tokens_end_each_row_and_are_not_returned():
    model = make_model(ATTENTION_VARIANTS["full-learned"])
    free = generate(model, PROMPTS, max_new_tokens=10, temperature=0)
    stop = free[0][2]
    stopped = generate(model, PROMPTS, max_new_tokens=10, temperature=0, stop_tokens=[stop, 999])
    for row, tokens in zip(stopped, free, strict=True):
        expected = tokens[: tokens.index(stop)] if stop in tokens else tokens
        assert row == expected
    assert 0 < len(stopped[0]) < 10


def test_max_new_tokens_and_block_size_limits():
    model = make_model(ATTENTION_VARIANTS["full-learned"]).train()
    assert [len(r) for r in generate(model, PROMPTS, max_new_tokens=5)] == [5, 5, 5]
    assert generate(model, PROMPTS, max_new_tokens=0) == [[], [], []]
    assert model.training  # the caller's mode is restored
    with pytest.raises(ValueError, match="block_size"):
        generate(model, PROMPTS, max_new_tokens=BASE["block_size"])
    with pytest.raises(ValueError, match="at least one token"):
        generate(model, [[1], []], max_new_tokens=2)


# ------------------------------------------------------------------------------------------------------------
# what the caches keep


def feed(model: GPT, prompt_len: int, steps: int):
    cache = model.new_cache()
    x = torch.randint(0, BASE["vocab_size"], (2, prompt_len + steps), generator=torch.Generator().manual_seed(0))
    sizes = []
    with torch.no_grad():
        model(x[:, :prompt_len], cache=cache)
        for t in range(prompt_len, prompt_len + steps):
            model(x[:, t : t + 1], cache=cache)
            sizes.append(cache.num_bytes())
    return cache, sizes


def test_sliding_window_cache_keeps_only_window_and_sinks():
    cfg = ATTENTION_VARIANTS["sliding-window-sinks"]
    cache, sizes = feed(make_model(cfg), prompt_len=10, steps=25)
    layer = cache.layers[0]
    assert layer["k"].shape[2] == cfg["window_size"] + cfg["n_sink_tokens"]
    assert layer["pos"][0].tolist() == [0, 1, 31, 32, 33, 34]  # sinks, then the newest window
    assert len(set(sizes)) == 1  # constant memory however long the generation


def test_linear_attention_cache_is_a_fixed_size_state():
    cache, sizes = feed(make_model(ATTENTION_VARIANTS["linear"]), prompt_len=5, steps=10)
    assert set(cache.layers[0]) == {"state", "norm"}
    assert cache.layers[0]["state"].shape == (2, 4, 8, 8)  # (B, heads, head_dim, head_dim)
    assert len(set(sizes)) == 1


def test_mla_cache_holds_the_latent_and_the_shared_rotary_key():
    model = make_model(ATTENTION_VARIANTS["mla"])
    cache, _ = feed(model, prompt_len=5, steps=3)
    layer = cache.layers[0]
    assert set(layer) == {"latent", "k_rope", "pos", "valid"}
    assert layer["latent"].shape == (2, 8, 8)  # (B, tokens, mla_kv_lora_rank)
    assert layer["k_rope"].shape == (2, 1, 8, 4)  # one rotary key for all heads, head_dim // 2 features
    full_attention_cache, _ = feed(make_model(ATTENTION_VARIANTS["full-learned"]), prompt_len=5, steps=3)
    assert cache.num_bytes() < full_attention_cache.num_bytes()


def test_grouped_query_cache_stores_only_the_kv_heads():
    cache, _ = feed(make_model(ATTENTION_VARIANTS["gqa-rope"]), prompt_len=5, steps=2)
    assert cache.layers[0]["k"].shape == (2, 2, 7, 8)  # (B, n_kv_heads, tokens, head_dim)


# ------------------------------------------------------------------------------------------------------------
# mixture of experts bookkeeping


def test_moe_usage_statistics_and_balancing_loss():
    model = make_model(dict(n_experts=4, n_experts_per_token=2, moe_aux_loss_coef=0.1))
    x = torch.randint(0, BASE["vocab_size"], (2, 16), generator=torch.Generator().manual_seed(0))
    model.reset_expert_usage()
    out = model(x[:, :-1], targets=x[:, 1:])
    usage = model.expert_usage()
    assert len(usage) == BASE["n_layers"]
    for shares in usage:
        torch.testing.assert_close(shares.sum(), torch.tensor(1.0))
    cross_entropy = torch.nn.functional.cross_entropy(out.logits.flatten(0, 1), x[:, 1:].flatten())
    torch.testing.assert_close(out.loss, cross_entropy + 0.1 * out.aux_loss)
    model.reset_expert_usage()
    assert all(int(layer.mlp.expert_counts.sum()) == 0 for layer in model.layers)

    for module in model.modules():  # a router that cannot tell experts apart: perfectly balanced loss of 1
        if isinstance(module, MixtureOfExperts):
            torch.nn.init.zeros_(module.router.weight)
    torch.testing.assert_close(model(x).aux_loss, torch.tensor(1.0))


def test_padding_takes_no_part_in_the_balancing_loss_or_expert_usage():
    model = make_model(dict(n_experts=4, n_experts_per_token=2))
    real = torch.randint(1, BASE["vocab_size"], (1, 10), generator=torch.Generator().manual_seed(1))
    padded = torch.cat([real, torch.zeros(1, 6, dtype=torch.long)], dim=1)  # right padding, as SFT batches
    model.reset_expert_usage()
    alone = model(real).aux_loss
    counts_alone = [layer.mlp.expert_counts.clone() for layer in model.layers]
    model.reset_expert_usage()
    with_padding = model(padded, routing_mask=padded != 0).aux_loss
    torch.testing.assert_close(with_padding, alone)
    for layer, counts in zip(model.layers, counts_alone, strict=True):
        assert torch.equal(layer.mlp.expert_counts, counts)
    # without the mask the padding is routed and counted like any token
    model.reset_expert_usage()
    model(padded)
    assert int(model.layers[0].mlp.expert_counts.sum()) == 16 * 2


def test_dense_model_has_no_aux_loss():
    model = make_model(dict())
    x = torch.randint(0, BASE["vocab_size"], (1, 8))
    out = model(x, targets=x)
    assert out.aux_loss is None and model.expert_usage() == []
