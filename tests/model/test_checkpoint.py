"""safetensors checkpoints: tied heads stored once and re-tied, wrappers unwrapped, mismatches reported with the
file name, and nothing but a tensor file and a JSON config on disk."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from model import GPT, ModelConfig, load_model, save_model

TINY = dict(vocab_size=64, block_size=32, d_model=32, n_heads=4, n_layers=2)


def make_model(**overrides) -> GPT:
    torch.manual_seed(0)
    return GPT(ModelConfig(**{**TINY, **overrides})).eval()


def stored_names(directory) -> set[str]:
    with safe_open(str(directory / "model.safetensors"), framework="pt") as f:
        return set(f.keys())


def test_tied_head_is_stored_once_and_retied(tmp_path):
    model = make_model(tie_embeddings=True)
    save_model(model, tmp_path)
    assert "lm_head.weight" not in stored_names(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    loaded = load_model(tmp_path)
    assert loaded.lm_head.weight is loaded.embed_tokens.weight
    assert loaded.num_parameters() == model.num_parameters()


def test_untied_head_is_stored_and_stays_separate(tmp_path):
    model = make_model(tie_embeddings=False)
    save_model(model, tmp_path)
    assert "lm_head.weight" in stored_names(tmp_path)
    loaded = load_model(tmp_path)
    assert loaded.lm_head.weight is not loaded.embed_tokens.weight
    assert torch.equal(loaded.lm_head.weight, model.lm_head.weight)


def test_config_json_is_the_config(tmp_path):
    model = make_model(position="rope", attention="mla")
    save_model(model, tmp_path)
    assert json.loads((tmp_path / "config.json").read_text()) == model.config.to_dict()


def test_compiled_and_ddp_style_wrappers_are_unwrapped(tmp_path):
    model = make_model()

    class Wrapper(torch.nn.Module):  # what DistributedDataParallel looks like from outside
        def __init__(self, module):
            super().__init__()
            self.module = module

    save_model(Wrapper(torch.compile(model)), tmp_path)  # compile is lazy: nothing is compiled here
    x = torch.randint(0, 64, (1, 8))
    with torch.no_grad():
        assert torch.equal(load_model(tmp_path)(x).logits, model(x).logits)


def test_load_to_bfloat16(tmp_path):
    save_model(make_model(), tmp_path)
    loaded = load_model(tmp_path, dtype=torch.bfloat16)
    assert loaded.embed_tokens.weight.dtype == torch.bfloat16
    assert not loaded.training


def test_mismatched_config_names_the_files(tmp_path):
    save_model(make_model(), tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "d_model": 64}))
    with pytest.raises(ValueError, match=r"model\.safetensors does not match .*config\.json: wrong shapes"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**config, "n_layers": 3}))
    with pytest.raises(ValueError, match=r"missing \['layers\.2\."):
        load_model(tmp_path)


def test_missing_or_broken_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model config here"):
        load_model(tmp_path)
    save_model(make_model(), tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not a tensor file")
    with pytest.raises(ValueError, match="cannot read the safetensors file"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(ValueError, match="not a valid model config"):
        load_model(tmp_path)


def test_every_tensor_is_built_on_the_requested_device():
    """load_model(device=...) builds the model inside torch.device(...): buffers made from the config (BigBird's
    block table, ALiBi slopes) must land there too, not on the CPU."""
    with torch.device("meta"):
        model = GPT(ModelConfig(**{**TINY, "attention": "bigbird", "bigbird_block_size": 4, "position": "alibi"}))
    assert {t.device.type for t in [*model.parameters(), *model.buffers()]} == {"meta"}
