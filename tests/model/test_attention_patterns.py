"""The masks and biases behind the attention variants, checked against hand-written expectations."""

from __future__ import annotations

import torch

from model import ModelConfig
from model.transformer import AttentionPattern, RelativePositionBias, alibi_slopes, bigbird_block_table


def allowed_keys(cfg: ModelConfig, query: int, length: int) -> list[int]:
    pattern = AttentionPattern(cfg, layer_idx=0)
    pos = torch.arange(length)[None]
    return pattern(pos, pos)[0, query].nonzero().flatten().tolist()


def test_full_pattern_is_causal():
    cfg = ModelConfig(vocab_size=8, block_size=16, d_model=8, n_heads=2, n_layers=1)
    assert allowed_keys(cfg, 5, 8) == [0, 1, 2, 3, 4, 5]


def test_sliding_window_sees_the_last_window_keys_and_the_sinks():
    cfg = ModelConfig(vocab_size=8, block_size=16, d_model=8, n_heads=2, n_layers=1, attention="sliding_window",
                      window_size=3, n_sink_tokens=2)
    assert allowed_keys(cfg, 7, 10) == [0, 1, 5, 6, 7]
    assert allowed_keys(cfg, 2, 10) == [0, 1, 2]


def test_bigbird_blocks_are_global_window_and_seeded_random():
    table = bigbird_block_table(n_blocks=10, n_global=1, n_window=2, n_random=2, seed=0)
    assert torch.equal(table, bigbird_block_table(10, 1, 2, 2, seed=0))  # deterministic
    assert not torch.equal(table, bigbird_block_table(10, 1, 2, 2, seed=1))  # the seed matters
    assert not table.triu(diagonal=1).any()  # causal
    for i in range(10):
        seen = set(table[i].nonzero().flatten().tolist())
        assert {0, i, max(i - 1, 0)} <= seen  # global block, own block, previous block
        assert len(seen - {0, i, i - 1}) == min(2, max(0, i - 2))  # random blocks among the rest


def test_bigbird_pattern_maps_positions_to_blocks():
    cfg = ModelConfig(vocab_size=8, block_size=32, d_model=8, n_heads=2, n_layers=1, attention="bigbird",
                      bigbird_block_size=4, bigbird_global_blocks=1, bigbird_window_blocks=1,
                      bigbird_random_blocks=0)
    assert allowed_keys(cfg, 13, 16) == [0, 1, 2, 3, 12, 13]  # global block 0, own block up to itself


def test_relative_buckets_are_exact_then_logarithmic():
    bias = RelativePositionBias(n_heads=2, num_buckets=8, max_distance=16)
    buckets = bias.bucket(torch.tensor([0, 1, 2, 3, 4, 5, 6, 8, 15, 16, 100, -3])).tolist()
    assert buckets == [0, 1, 2, 3, 4, 4, 5, 6, 7, 7, 7, 0]


def test_alibi_slopes():
    assert alibi_slopes(8).tolist() == [2.0 ** -i for i in range(1, 9)]
    six = alibi_slopes(6)  # the 4 power-of-two slopes, then every other slope of the 8-head sequence
    torch.testing.assert_close(six, torch.tensor([2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]))
