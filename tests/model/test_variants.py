"""Every architecture variant of model/transformer.py, and sensible combinations, on a tiny model: causality,
KV cache == full forward (also for left-padded batches), gradients reach every parameter, the analytic parameter
count, a safetensors round trip, and a few AdamW steps that learn a repeated sequence."""

from __future__ import annotations

import pytest
import torch

from model import GPT, ModelConfig, count_parameters, load_model, save_model
from model.transformer import MixtureOfExperts

BASE = dict(vocab_size=64, block_size=32, d_model=32, n_heads=4, n_layers=2)
SLIDING = dict(attention="sliding_window", window_size=4)
BIGBIRD = dict(attention="bigbird", bigbird_block_size=2, bigbird_global_blocks=1, bigbird_window_blocks=2,
               bigbird_random_blocks=1)
RELATIVE = dict(position="relative", relative_num_buckets=8, relative_max_distance=16)
MOE = dict(n_experts=4, n_experts_per_token=2)


pytestmark = pytest.mark.usefixtures("one_torch_thread")

VARIANTS: dict[str, dict] = {
    # positions (with full multi-head attention)
    "learned-gelu-layernorm": dict(),
    "no-positions": dict(position="none"),
    "sinusoidal": dict(position="sinusoidal"),
    "relative": dict(RELATIVE),
    "rope": dict(position="rope"),
    "alibi": dict(position="alibi"),
    "alibi-6-heads": dict(position="alibi", d_model=48, n_heads=6),  # slopes for a non-power-of-two
    # key/value heads
    "multi-query-rope": dict(position="rope", n_kv_heads=1),
    "grouped-query-relative": dict(RELATIVE, n_kv_heads=2),
    # norms, MLPs, dropout, bias, tying
    "rmsnorm-swiglu-nobias-untied": dict(norm="rmsnorm", mlp="swiglu", bias=False, tie_embeddings=False),
    "post-norm-relu": dict(norm_position="post", mlp="relu"),
    "post-norm-rmsnorm-geglu": dict(norm_position="post", norm="rmsnorm", mlp="geglu"),
    "dropout": dict(dropout=0.1),
    "leaky-relu": dict(mlp="leaky_relu"),
    "silu-post-norm-rmsnorm": dict(mlp="silu", norm_position="post", norm="rmsnorm"),
    "qwen2-like-qkv-bias": dict(position="rope", norm="rmsnorm", mlp="swiglu", n_kv_heads=2, bias=False,
                                qkv_bias=True),
    "llama3-rope-scaling": dict(position="rope", norm="rmsnorm", mlp="swiglu", bias=False, rope_scaling="llama3",
                                rope_scaling_factor=8.0, rope_original_max_positions=16, rope_theta=500.0),
    "linear-rope-scaling-gqa": dict(position="rope", n_kv_heads=2, rope_scaling="linear", rope_scaling_factor=2.0),
    "llama-like": dict(position="rope", norm="rmsnorm", mlp="swiglu", n_kv_heads=2, bias=False,
                       tie_embeddings=False, ffn_multiple_of=16),
    # sliding window
    "sliding-window": dict(SLIDING),
    "sliding-window-sinks-alibi": dict(SLIDING, n_sink_tokens=2, position="alibi"),
    "sliding-window-sinks-rope-gqa": dict(SLIDING, n_sink_tokens=1, position="rope", n_kv_heads=2),
    # linear attention
    "linear": dict(attention="linear", linear_chunk_size=5),
    "linear-relu-sinusoidal-mqa": dict(attention="linear", linear_feature_map="relu", position="sinusoidal",
                                       n_kv_heads=1, linear_chunk_size=8),
    # BigBird
    "bigbird": dict(BIGBIRD),
    "bigbird-rope-gqa": dict(BIGBIRD, position="rope", n_kv_heads=2),
    "bigbird-relative-post-norm": {**BIGBIRD, **RELATIVE, "norm_position": "post"},
    # multi-head latent attention
    "mla-rope": dict(attention="mla", position="rope"),
    "mla-rope-q-lora": dict(attention="mla", position="rope", mla_q_lora_rank=16, mla_kv_lora_rank=12,
                            mla_rope_head_dim=4, mla_v_head_dim=6),
    "mla-learned": dict(attention="mla"),
    "mla-alibi-nobias": dict(attention="mla", position="alibi", bias=False),
    # mixture of experts
    "moe-top2": dict(MOE),
    "moe-top1-shared-swiglu-rope": dict(MOE, n_experts_per_token=1, n_shared_experts=1, mlp="swiglu",
                                        position="rope", moe_d_ff=24),
    "moe-mla-post-norm": dict(MOE, attention="mla", position="rope", norm_position="post"),
    "moe-sliding-window-untied": {**MOE, **SLIDING, "n_sink_tokens": 2, "tie_embeddings": False},
    # more combinations across the families
    "gqa-alibi": dict(position="alibi", n_kv_heads=2),
    "no-positions-mqa-nobias": dict(position="none", n_kv_heads=1, bias=False),
    "sliding-window-relative": {**SLIDING, **RELATIVE},
    "sliding-window-sinks-mqa-post-norm": dict(SLIDING, n_sink_tokens=1, n_kv_heads=1, norm_position="post"),
    "linear-gqa-moe-post-norm": dict(MOE, attention="linear", n_kv_heads=2, linear_chunk_size=4,
                                     norm_position="post"),
    "linear-no-positions-swiglu-rmsnorm": dict(attention="linear", position="none", mlp="swiglu", norm="rmsnorm",
                                               linear_chunk_size=3),
    "bigbird-alibi-moe-shared": {**BIGBIRD, **MOE, "position": "alibi", "n_shared_experts": 1},
    "bigbird-2-global-no-random-sinusoidal": dict(BIGBIRD, bigbird_global_blocks=2, bigbird_random_blocks=0,
                                                 position="sinusoidal"),
    "mla-relative-geglu": dict(RELATIVE, attention="mla", mlp="geglu"),
    "mla-no-positions-rmsnorm-untied": dict(attention="mla", position="none", norm="rmsnorm", tie_embeddings=False),
    "mla-rope-q-lora-moe-shared-dropout": dict(MOE, attention="mla", position="rope", mla_q_lora_rank=16,
                                              n_shared_experts=1, dropout=0.1),
    "moe-every-expert-gqa-rope-rmsnorm-geglu": dict(n_experts=2, n_experts_per_token=2, n_kv_heads=2,
                                                   position="rope", norm="rmsnorm", mlp="geglu"),
}


def make_model(name: str, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(ModelConfig(**{**BASE, **VARIANTS[name]}))


def random_tokens(*shape: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, BASE["vocab_size"], shape, generator=torch.Generator().manual_seed(seed))


parametrize_variants = pytest.mark.parametrize("name", list(VARIANTS))


@parametrize_variants
def test_parameter_count_matches_formula(name):
    model = make_model(name)
    assert model.num_parameters() == count_parameters(model.config)
    if model.config.n_experts:  # active = total minus the experts a token does not use
        moe = next(m for m in model.modules() if isinstance(m, MixtureOfExperts))
        per_expert = sum(p.numel() for p in moe.experts[0].parameters())
        idle = model.config.n_layers * (model.config.n_experts - model.config.n_experts_per_token) * per_expert
        assert count_parameters(model.config, active_only=True) == model.num_parameters() - idle


@parametrize_variants
def test_future_tokens_do_not_change_earlier_logits(name):
    model = make_model(name).eval()
    x = random_tokens(2, 16)
    changed = x.clone()
    t = 9
    changed[:, t] = (x[:, t] + 1) % BASE["vocab_size"]
    with torch.no_grad():
        before, after = model(x).logits, model(changed).logits
    torch.testing.assert_close(after[:, :t], before[:, :t], atol=1e-5, rtol=0)
    assert not torch.allclose(after[:, t], before[:, t], atol=1e-4)


@parametrize_variants
def test_kv_cache_steps_match_full_forward(name):
    model = make_model(name).eval()
    x = random_tokens(2, 20)
    with torch.no_grad():
        full = model(x).logits
        cache = model.new_cache()
        pieces = [model(x[:, :6], cache=cache).logits, model(x[:, 6:9], cache=cache).logits]  # prefill, chunk
        pieces += [model(x[:, t : t + 1], cache=cache).logits for t in range(9, 20)]  # one token at a time
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=0)


@parametrize_variants
def test_left_padded_batch_matches_each_row_alone(name):
    """A left-padded batch, in one forward with a mask and through the cache token by token, gives every row
    the logits that row gets on its own without padding."""
    model = make_model(name).eval()
    lengths, extra, pad = [11, 5, 16], 4, 3
    rows = [random_tokens(n + extra, seed=10 + i) for i, n in enumerate(lengths)]
    width = max(lengths)
    ids = torch.full((len(rows), width), pad)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, (row, n) in enumerate(zip(rows, lengths, strict=True)):
        ids[i, width - n :], mask[i, width - n :] = row[:n], 1
    with torch.no_grad():
        alone = [model(row[None]).logits[0] for row in rows]
        padded = model(ids, attention_mask=mask).logits
        cache = model.new_cache()
        prefill = model(ids, attention_mask=mask, cache=cache).logits
        steps = [model(torch.stack([row[n + j] for row, n in zip(rows, lengths, strict=True)])[:, None], cache=cache).logits
                 for j in range(extra - 1)]
    for i, n in enumerate(lengths):
        torch.testing.assert_close(padded[i, width - n :], alone[i][:n], atol=1e-5, rtol=0)
        torch.testing.assert_close(prefill[i, width - n :], alone[i][:n], atol=1e-5, rtol=0)
        for j, step in enumerate(steps):
            torch.testing.assert_close(step[i, 0], alone[i][n + j], atol=1e-5, rtol=0)


@parametrize_variants
def test_gradients_reach_every_parameter(name):
    model = make_model(name).train()
    x = random_tokens(4, 16)
    loss = model(x[:, :-1], targets=x[:, 1:]).loss
    loss.backward()
    unrouted = set()
    for module in model.modules():
        if isinstance(module, MixtureOfExperts):
            assert int((module.expert_counts > 0).sum()) >= module.top_k
            unrouted |= {id(p) for e, expert in enumerate(module.experts) if module.expert_counts[e] == 0
                         for p in expert.parameters()}
    for pname, param in model.named_parameters():
        if id(param) in unrouted:  # an expert no token chose gets no gradient, by design
            assert param.grad is None, pname
        else:
            assert param.grad is not None and param.grad.abs().sum() > 0, f"no gradient for {pname}"


@parametrize_variants
def test_safetensors_round_trip_gives_identical_logits(name, tmp_path):
    model = make_model(name).eval()
    save_model(model, tmp_path / "ckpt")
    loaded = load_model(tmp_path / "ckpt")
    assert loaded.config == model.config
    x = random_tokens(2, 12)
    with torch.no_grad():
        assert torch.equal(loaded(x).logits, model(x).logits)


@parametrize_variants
def test_adamw_learns_a_repeated_sequence(name):
    model = make_model(name).train()
    sequence = torch.arange(8).repeat(4)[None]  # (1, 32): 0 1 2 ... 7 0 1 2 ...
    inputs, targets = sequence[:, :-1], sequence[:, 1:]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        loss = model(inputs, targets=targets).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0], losses


@pytest.mark.parametrize("name", ["sliding-window", "sliding-window-sinks-alibi", "bigbird", "bigbird-rope-gqa"])
def test_sparse_patterns_differ_from_full_attention_only_where_keys_are_hidden(name):
    """Same weights, attention='full': identical while every earlier key is still visible, different after."""
    sparse = make_model(name).eval()
    full = GPT(sparse.config.replace(attention="full", n_sink_tokens=0)).eval()
    full.load_state_dict(sparse.state_dict())
    x = random_tokens(2, 24)
    with torch.no_grad():
        a, b = sparse(x).logits, full(x).logits
    first_hidden = 4  # window_size=4 hides key 0 from query 4; BigBird (blocks of 2) hides a block from query 4 on
    torch.testing.assert_close(a[:, :first_hidden], b[:, :first_hidden], atol=1e-5, rtol=0)
    assert not torch.allclose(a[:, -1], b[:, -1], atol=1e-4)


def _logits_at_offset(model: GPT, x: torch.Tensor, offset: int) -> torch.Tensor:
    cache = model.new_cache()
    cache.next_pos = torch.full((x.shape[0],), offset)  # pretend `offset` tokens came before
    with torch.no_grad():
        return model(x, cache=cache).logits


@pytest.mark.parametrize("name", ["rope", "alibi", "relative", "no-positions", "multi-query-rope",
                                  "grouped-query-relative", "mla-rope", "mla-rope-q-lora", "mla-alibi-nobias"])
def test_relative_positions_depend_only_on_distances(name):
    """RoPE, ALiBi and T5 buckets see only q - k: shifting every position leaves the logits unchanged."""
    model = make_model(name).eval()
    x = random_tokens(2, 12)
    torch.testing.assert_close(_logits_at_offset(model, x, 7), _logits_at_offset(model, x, 0), atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", ["learned-gelu-layernorm", "sinusoidal", "mla-learned"])
def test_absolute_positions_change_with_a_shift(name):
    model = make_model(name).eval()
    x = random_tokens(2, 12)
    assert not torch.allclose(_logits_at_offset(model, x, 7), _logits_at_offset(model, x, 0), atol=1e-4)


@parametrize_variants
def test_bfloat16_autocast_trains_and_generates(name):
    """The GPU recipe (bf16 autocast) on CPU: no dtype clashes in masks, biases, caches or expert mixing."""
    model = make_model(name).train()
    x = random_tokens(2, 12)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(x[:, :-1], targets=x[:, 1:]).loss
        loss.backward()
        model.eval()
        with torch.no_grad():
            cache = model.new_cache()
            model(x[:, :8], attention_mask=torch.ones(2, 8), cache=cache)
            step = model(x[:, 8:9], cache=cache).logits
    assert torch.isfinite(loss) and torch.isfinite(step).all()


@parametrize_variants
def test_right_padded_batch_matches_each_row_alone(name):
    """SFT-style batches padded on the right, with an attention mask: real tokens are unaffected by padding."""
    model = make_model(name).eval()
    lengths = [7, 13]
    rows = [random_tokens(n, seed=20 + i) for i, n in enumerate(lengths)]
    ids = torch.full((2, max(lengths)), 3)
    mask = torch.zeros(2, max(lengths), dtype=torch.long)
    for i, (row, n) in enumerate(zip(rows, lengths, strict=True)):
        ids[i, :n], mask[i, :n] = row, 1
    with torch.no_grad():
        padded = model(ids, attention_mask=mask).logits
        for i, (row, n) in enumerate(zip(rows, lengths, strict=True)):
            torch.testing.assert_close(padded[i, :n], model(row[None]).logits[0], atol=1e-5, rtol=0)


@parametrize_variants
def test_bfloat16_weights_train_and_generate(name):
    """A model cast to bfloat16 (load_model(dtype=...)) without autocast: every buffer, position table and
    cached state must follow the weights' dtype (or be cast where it meets them)."""
    model = make_model(name).to(torch.bfloat16)
    x = random_tokens(2, 12)
    loss = model(x[:, :-1], targets=x[:, 1:]).loss
    loss.backward()
    model.eval()
    with torch.no_grad():
        full = model(x).logits
        cache = model.new_cache()
        model(x[:, :8], attention_mask=torch.ones(2, 8), cache=cache)
        step = model(x[:, 8:9], cache=cache).logits
    assert torch.isfinite(loss) and full.dtype == step.dtype == torch.bfloat16
    torch.testing.assert_close(step[:, 0].float(), full[:, 8].float(), atol=0.1, rtol=0.05)
