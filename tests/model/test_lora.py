"""LoRA runs: only the adapter trains and is saved, the merged checkpoint computes the same logits, resuming
is exact, and an adapter never lands on another base model."""

from __future__ import annotations

import os

import pytest
import torch
from safetensors.torch import load_file

from model import GPT, ModelConfig, load_model
from model.evaluation import load_for_inference, perplexity_table
from model.lora import apply_lora, check_adapter_base, load_adapter, merge_adapter
from model.metrics import read_metrics
from model.train import train
from tasks.training import LoraParams, PretrainParams
from tests.support import pretrained_checkpoint, quiet_params, run_config, tiny_world

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _lora(**overrides):
    return quiet_params(LoraParams, **{"rank": 4, "alpha": 8, "learning_rate": 1e-2, "min_lr": 1e-3, **overrides})


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory):
    torch.set_num_threads(1)
    run_dir = tmp_path_factory.mktemp("lora") / "run"
    return train(run_config("lora", run_dir, _lora(max_steps=30, checkpoint_interval=30, eval_interval=30,
                                                  sample_interval=30),
                            init_from=pretrained_checkpoint()))


def test_only_the_adapter_trains_and_is_saved(lora_run):
    base = pretrained_checkpoint()
    ckpt = lora_run.checkpoint
    names = set(os.listdir(ckpt))
    assert {"adapter_model.safetensors", "adapter_config.json", "optimizer.pt", "state.json"} == names
    adapter = load_file(os.path.join(ckpt, "adapter_model.safetensors"))
    assert adapter and all("lora_A" in k or "lora_B" in k for k in adapter)
    assert not any("lm_head" in k or "embed_tokens" in k for k in adapter)
    assert any(t.abs().sum() > 0 for k, t in adapter.items() if "lora_B" in k)  # it did learn
    samples = [r for r in read_metrics(lora_run.metrics_path) if r["event"] == "sample"]
    assert len(samples) == 1 and isinstance(samples[0]["text"], str)  # generation through the peft wrapper
    small = os.path.getsize(os.path.join(ckpt, "adapter_model.safetensors"))
    assert small < 0.25 * os.path.getsize(base / "model.safetensors")
    optimizer = torch.load(os.path.join(ckpt, "optimizer.pt"), weights_only=True)
    assert all("lora_" in k for k in optimizer)
    # the base checkpoint the run started from is untouched
    assert sorted(os.listdir(base)) == ["config.json", "model.safetensors", "optimizer.pt", "state.json"]


def test_merged_checkpoint_has_the_adapted_models_logits(lora_run, tmp_path):
    base = pretrained_checkpoint()
    merged_dir = merge_adapter(base, lora_run.run_dir, tmp_path / "merged")
    assert {"model.safetensors", "config.json", "state.json"} <= set(os.listdir(merged_dir))
    merged = load_model(merged_dir)
    adapted = load_adapter(load_model(base), lora_run.checkpoint).eval()
    x = torch.randint(0, 400, (2, 50), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want, got, plain = adapted(x).logits, merged(x).logits, load_model(base)(x).logits
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert (want - plain).abs().max() > 1e-3  # the adapter does change the model
    assert merged.lm_head.weight is merged.embed_tokens.weight


def test_lora_resume_is_exact(tmp_path):
    base = pretrained_checkpoint()
    straight = train(run_config("lora", tmp_path / "a", _lora(max_steps=6, checkpoint_interval=3), init_from=base))
    train(run_config("lora", tmp_path / "b", _lora(max_steps=6, checkpoint_interval=3), init_from=base), stop_at=3)
    resumed = train(run_config("lora", tmp_path / "b", _lora(max_steps=6, checkpoint_interval=3), init_from=base))
    a = load_file(os.path.join(straight.checkpoint, "adapter_model.safetensors"))
    b = load_file(os.path.join(resumed.checkpoint, "adapter_model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="LoRA settings"):
        train(run_config("lora", tmp_path / "b", _lora(max_steps=8, rank=8), init_from=base))


def test_lora_refuses_a_tied_output_head():
    model = GPT(ModelConfig(vocab_size=64, block_size=16, d_model=16, n_heads=2, n_layers=1))
    with pytest.raises(ValueError, match="tie_embeddings=True"):
        apply_lora(model, 4, 8, 0.0, ["q_proj", "lm_head"])
    with pytest.raises(ValueError, match="none of the LoRA target modules"):
        apply_lora(model, 4, 8, 0.0, ["query", "value"])
    untied = GPT(ModelConfig(vocab_size=64, block_size=16, d_model=16, n_heads=2, n_layers=1, tie_embeddings=False))
    wrapped = apply_lora(untied, 4, 8, 0.0, ["q_proj", "lm_head", "gate_proj"])  # absent gate_proj is skipped
    assert any("lm_head.lora_A" in n for n, _ in wrapped.named_parameters())


def test_an_adapter_for_another_base_model_is_refused(lora_run, tmp_path):
    other = train(run_config("pretrain", tmp_path / "other", quiet_params(PretrainParams, max_steps=2, seed=9)))
    with pytest.raises(ValueError, match="is for another base model.*other weights"):
        check_adapter_base(other.checkpoint, lora_run.checkpoint)
    with pytest.raises(ValueError, match="holds a LoRA adapter, not a model"):
        load_for_inference(lora_run.checkpoint)


def test_perplexity_table_compares_base_and_lora(lora_run):
    w = tiny_world()
    table = perplexity_table(w.sft.val_path, w.tokenizer, pretrained_checkpoint(), lora=lora_run.run_dir)
    rows = {r["model"]: r for r in table.rows}
    assert rows["lora"]["perplexity"] < rows["base"]["perplexity"]
    assert rows["lora"]["change_vs_base"] < 0 and rows["base"]["change_vs_base"] is None
    assert "| lora |" in table.markdown() and set(table.as_dict()) == {"base", "lora"}


@pytest.mark.parametrize("overrides", [
    dict(position="rope", n_kv_heads=2, mlp="swiglu", tie_embeddings=False),
    dict(attention="mla", position="rope", mla_q_lora_rank=16, n_experts=3, n_experts_per_token=2,
         n_shared_experts=1),
    dict(attention="mla", position="alibi"),
    dict(attention="linear", position="none", norm_position="post"),
    dict(attention="sliding_window", window_size=4, n_sink_tokens=1, position="relative"),
], ids=["gqa-rope-swiglu", "mla-q-lora-moe", "mla-alibi", "linear-post-norm", "sliding-window-relative"])
def test_default_targets_train_and_merge_for_every_attention_family(overrides, tmp_path):
    """The default target list adapts each attention family's projections; trained, saved and merged on disk,
    the plain checkpoint computes what the adapted model computes."""
    from model import save_model
    from model.lora import save_adapter
    from model.train import DEFAULT_LORA_TARGETS

    torch.manual_seed(0)
    save_model(GPT(ModelConfig(vocab_size=64, block_size=32, d_model=32, n_heads=4, n_layers=2, **overrides)),
               tmp_path / "base")
    adapted = apply_lora(load_model(tmp_path / "base"), 4, 8, 0.0, DEFAULT_LORA_TARGETS).train()
    adapted_names = {n.split(".lora_A")[0].rsplit(".", 1)[-1] for n, _ in adapted.named_parameters() if "lora_A" in n}
    attention_names = {"mla": {"kv_a_proj", "kv_b_proj", "o_proj"}, "linear": {"q_proj", "k_proj", "v_proj"}}
    assert attention_names.get(overrides.get("attention"), {"q_proj", "k_proj", "v_proj", "o_proj"}) <= adapted_names
    optimizer = torch.optim.AdamW([p for p in adapted.parameters() if p.requires_grad], lr=1e-2)
    x = torch.randint(0, 64, (2, 17), generator=torch.Generator().manual_seed(1))
    for _ in range(3):
        adapted(x[:, :-1], targets=x[:, 1:]).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    save_adapter(adapted, tmp_path / "adapter")
    merged = load_model(merge_adapter(tmp_path / "base", tmp_path / "adapter", tmp_path / "merged"))
    adapted.eval()
    with torch.no_grad():
        want, got = adapted(x).logits, merged(x).logits
        assert (want - load_model(tmp_path / "base")(x).logits).abs().max() > 1e-3
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
