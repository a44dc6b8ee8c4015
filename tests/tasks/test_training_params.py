"""The training params models agree with the trainer's settings (the shared builders live in tests/support.py)."""

from __future__ import annotations

import dataclasses

from tasks.training import LoraParams, PretrainParams, SftDataParams, SftParams


def test_params_models_match_the_trainer_settings():
    from model.train import TrainSettings

    fields = {f.name: f.default for f in dataclasses.fields(TrainSettings)}
    for cls in (PretrainParams, SftParams, LoraParams):
        dumped = cls().run_params()
        assert set(dumped) <= set(fields), f"{cls.__name__} has fields the trainer does not know"
        TrainSettings.from_dict(dumped)


def test_lora_params_default_targets_are_the_model_projection_names():
    """Every projection of every attention family and MLP, never the output head or the router."""
    from model import GPT, ModelConfig
    from model.lora import linear_module_names
    from model.train import DEFAULT_LORA_TARGETS

    targets = set(LoraParams().target_modules)
    assert targets == set(DEFAULT_LORA_TARGETS)
    small = dict(n_layers=1, d_model=64, n_heads=4, vocab_size=64, n_experts=2, n_experts_per_token=1)
    found = set()
    for overrides in (dict(), dict(attention="mla", n_kv_heads=None),
                      dict(attention="mla", n_kv_heads=None, mla_q_lora_rank=16),
                      dict(attention="linear", position="none")):
        names = linear_module_names(GPT(ModelConfig.preset("llama-style", **small, **overrides)))
        assert names - {"lm_head", "router"} <= targets, overrides
        found |= names
    assert targets <= found


def test_sft_data_params_refuse_unknown_kinds():
    import pytest

    with pytest.raises(ValueError, match="unknown message kind"):
        SftDataParams(drop_kinds=["media", "stickers"])


def test_a_model_dropout_outside_0_to_1_is_refused_naming_it():
    import pytest

    from model.train import TrainSettings

    for value in (-0.1, 1.0):
        with pytest.raises(ValueError, match="model_dropout"):
            SftParams(model_dropout=value)
        with pytest.raises(ValueError, match="model_dropout"):
            LoraParams(model_dropout=value)
        with pytest.raises(ValueError, match="model_dropout"):
            TrainSettings.from_dict({"model_dropout": value})
    assert SftParams(model_dropout=0.2).model_dropout == 0.2 and SftParams().model_dropout is None
