"""ModelConfig: validation messages, JSON round trip, presets, and the analytic parameter / FLOPs / MFU numbers
checked against real models (built on the meta device, so the 124M preset costs no memory)."""

from __future__ import annotations

import json

import pytest
import torch

from model import (
    GPT,
    ModelConfig,
    count_parameters,
    device_peak_flops,
    flops_per_token,
    matmul_parameters,
    mfu,
)
from model.config import PRESETS

TINY = dict(vocab_size=64, block_size=32, d_model=32, n_heads=4, n_layers=2)


@pytest.mark.parametrize("overrides, message", [
    (dict(d_model=30), "d_model=30 is not divisible by n_heads=4"),
    (dict(n_kv_heads=3), "n_kv_heads=3 must divide n_heads=4"),
    (dict(n_kv_heads=0), "n_kv_heads=0 must divide"),
    (dict(n_kv_heads=8), "n_kv_heads=8 must divide"),
    (dict(position="rotary"), "position='rotary' is not one of"),
    (dict(attention="sparse"), "attention='sparse' is not one of"),
    (dict(norm="batchnorm"), "norm='batchnorm' is refused: it normalises over the batch"),
    (dict(rope_scaling="llama3"), "rope_scaling='llama3' needs position='rope'"),
    (dict(position="rope", rope_scaling="yarn"), "rope_scaling='yarn' is not one of"),
    (dict(position="rope", rope_scaling="linear", rope_scaling_factor=0.5), "rope_scaling_factor=0.5 must be >= 1"),
    (dict(attention="mla", qkv_bias=True), "qkv_bias applies to q_proj"),
    (dict(norm_position="middle"), "norm_position='middle'"),
    (dict(mlp="tanh"), "mlp='tanh'"),
    (dict(vocab_size=0), "vocab_size=0 must be >= 1"),
    (dict(n_layers="2"), "n_layers must be int"),
    (dict(bias=1), "bias must be bool"),
    (dict(d_ff=None, n_heads=None), "n_heads must not be None"),
    (dict(dropout=1.0), r"dropout=1.0 must be in \[0, 1\)"),
    (dict(n_experts=2, n_experts_per_token=3), "n_experts_per_token=3 must be between 1 and n_experts=2"),
    (dict(n_shared_experts=1), "n_shared_experts=1 needs n_experts > 0"),
    (dict(n_sink_tokens=2), "only applies to attention='sliding_window'"),
    (dict(attention="linear", position="alibi"), "cannot be applied"),
    (dict(attention="mla", n_kv_heads=2), "n_kv_heads=2 does not apply"),
    (dict(attention="mla", mla_rope_head_dim=4), "position is not 'rope'"),
    (dict(position="rope", d_model=36), "odd"),
    (dict(position="relative", relative_num_buckets=32, relative_max_distance=16), "relative_max_distance=16"),
    (dict(window_size=0), "window_size=0 must be >= 1"),
    (dict(norm_eps=0.0), "norm_eps"),
])
def test_invalid_configs_explain_themselves(overrides, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**{**TINY, **overrides})


def test_json_round_trip_keeps_derived_sizes_unresolved():
    cfg = ModelConfig.preset("llama-style", n_layers=2)
    data = json.loads(json.dumps(cfg.to_dict()))
    assert data["n_kv_heads"] == 2 and data["d_ff"] is None
    assert ModelConfig.from_dict(data) == cfg


def test_unknown_fields_are_an_error_with_a_suggestion():
    with pytest.raises(ValueError, match="'n_layer' \\(did you mean 'n_layers'\\?\\)"):
        ModelConfig.from_dict({**TINY, "n_layer": 3})


def test_presets_and_overrides():
    assert ModelConfig.preset("tiny", vocab_size=512).vocab_size == 512
    with pytest.raises(ValueError, match="unknown model preset 'huge'; available: tiny, small"):
        ModelConfig.preset("huge")
    with pytest.raises(ValueError, match="n_kv_heads=3"):
        ModelConfig.preset("llama-style", n_kv_heads=3)


def _real_count(cfg: ModelConfig) -> int:
    with torch.device("meta"):
        return GPT(cfg).num_parameters()


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_parameter_counts(name):
    cfg = ModelConfig.preset(name)
    assert count_parameters(cfg) == _real_count(cfg)


def test_preset_sizes_are_what_their_names_promise():
    assert 0.9e6 < count_parameters(ModelConfig.preset("tiny")) < 1.2e6
    assert 25e6 < count_parameters(ModelConfig.preset("small")) < 35e6
    gpt2 = ModelConfig.preset("gpt2-124m")
    assert count_parameters(gpt2) == 124_475_904  # nanoGPT's GPT-2 small with vocab 50304
    assert matmul_parameters(gpt2) == 123_689_472  # nanoGPT's "number of parameters: 123.69M" (no wpe)


@pytest.mark.parametrize("overrides", [
    dict(d_ff=50, bias=False),
    dict(mlp="swiglu", ffn_multiple_of=48),
    dict(mlp="geglu", norm="rmsnorm", tie_embeddings=False),
    dict(mlp="silu", bias=False, qkv_bias=True, position="rope", n_kv_heads=2),
    dict(mlp="leaky_relu", qkv_bias=False),
    dict(n_kv_heads=1, position="relative", relative_num_buckets=12),
    dict(attention="mla", position="rope", mla_q_lora_rank=20, mla_kv_lora_rank=10, mla_rope_head_dim=2,
         mla_v_head_dim=3),
    dict(attention="mla", position="learned", bias=False, norm="layernorm"),
    dict(n_experts=5, n_experts_per_token=2, n_shared_experts=2, moe_d_ff=40, mlp="swiglu"),
    dict(attention="linear", norm_position="post", n_kv_heads=2),
    dict(attention="bigbird", bigbird_block_size=3, position="sinusoidal"),
])
def test_parameter_formula_matches_the_model(overrides):
    cfg = ModelConfig(**{**TINY, "d_model": 48, "n_heads": 4, "n_layers": 3, **overrides})
    assert count_parameters(cfg) == _real_count(cfg)


def test_gated_mlps_keep_the_parameter_count_of_the_plain_one():
    gelu, swiglu = ModelConfig(**{**TINY, "d_model": 96}), ModelConfig(**{**TINY, "d_model": 96, "mlp": "swiglu"})
    assert swiglu.ffn_hidden == 256  # 2/3 of 4 * 96
    assert abs(count_parameters(swiglu) / count_parameters(gelu) - 1) < 0.01


def test_flops_per_token_follows_palm_and_nanogpt():
    gpt2 = ModelConfig.preset("gpt2-124m")
    assert flops_per_token(gpt2) == 6 * 123_689_472 + 12 * 12 * 12 * 64 * 1024
    assert flops_per_token(gpt2, training=False) == flops_per_token(gpt2) / 3
    window = gpt2.replace(attention="sliding_window", window_size=128)
    assert flops_per_token(window) == 6 * 123_689_472 + 12 * 12 * 12 * 64 * 128
    moe = ModelConfig(**{**TINY, "n_experts": 8, "n_experts_per_token": 2, "bias": False})
    dense = ModelConfig(**{**TINY, "d_ff": 2 * moe.ffn_hidden, "bias": False})
    # 2 active experts cost what one MLP twice as wide costs, plus the router (d_model x n_experts)
    assert flops_per_token(moe) - flops_per_token(dense) == 6 * TINY["n_layers"] * 32 * 8


def test_mfu_uses_the_device_peak_table():
    assert device_peak_flops("NVIDIA H200") == 989e12
    assert device_peak_flops("NVIDIA H100 80GB HBM3") == 989e12
    assert device_peak_flops("NVIDIA H100 PCIe") == 756e12
    assert device_peak_flops("NVIDIA A100-SXM4-40GB") == 312e12
    assert device_peak_flops("cpu") is None
    assert mfu(1000.0, 1e9, 1e13) == pytest.approx(0.1)
    assert mfu(1000.0, 1e9, None) is None
