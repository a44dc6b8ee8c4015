"""QLoRA: the frozen base in 4-bit NF4 with double quantization (bitsandbytes), LoRA adapters in float32 that
learn the Assistant turns, an adapter that merges onto the full-precision base and resumes exactly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from model import GPT, ModelConfig, load_model
from model.chat import SamplingOptions, load_chat
from model.checkpoint import load_optimizer_tensors, optimizer_tensors
from model.evaluation import load_for_inference
from model.lora import load_adapter, load_adapter_weights, merge_adapter
from model.qlora import apply_qlora, paged_adamw, quantize_nf4, restore_paged_state, weight_bytes
from model.sft import SftExamples, assistant_loss
from model.train import DEFAULT_LORA_TARGETS, train
from storage.chat_format import load_tokenizer
from storage.checkpoints import CheckpointMismatch
from tests.support import BLOCK, pretrained_checkpoint, quiet_params, run_config, tiny_world

bnb = pytest.importorskip("bitsandbytes")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

NF4_BLOCK, ABSMAX_BLOCK = 64, 256  # weights per 4-bit block; 8-bit absmax values per second-level block


def _qlora(**overrides):
    from tasks.training import LoraParams

    return quiet_params(LoraParams, **{"rank": 4, "alpha": 8, "learning_rate": 1e-2, "min_lr": 1e-3,
                                       "quantize": "nf4", **overrides})


def _val_examples() -> SftExamples:
    w = tiny_world()
    return SftExamples(w.sft.val_path, load_tokenizer(w.tokenizer), BLOCK + 1, "assistant")


@pytest.fixture(scope="module")
def qlora_run():
    torch.set_num_threads(1)
    run_dir = tiny_world().root / "runs" / "qlora"
    return train(run_config("lora", run_dir, _qlora(max_steps=30, checkpoint_interval=30, eval_interval=30,
                                                    sample_interval=30), init_from=pretrained_checkpoint()))


def test_projections_are_nf4_with_double_quantization_and_only_lora_trains():
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=64, block_size=32, d_model=256, n_heads=4, n_layers=2))
    full = weight_bytes(model)
    kept = {n: p.numel() * 4 for n, p in model.named_parameters() if not n.endswith("_proj.weight")}
    quantized_weights = sum(p.numel() for n, p in model.named_parameters() if n.endswith("_proj.weight"))
    adapted, report = apply_qlora(model, 4, 8, 0.0, DEFAULT_LORA_TARGETS)

    layers = {n: m for n, m in adapted.named_modules() if isinstance(m, bnb.nn.Linear4bit)}
    assert len(layers) == report.layers == 12  # q k v o up down in 2 layers
    for layer in layers.values():
        weight, state = layer.weight, layer.weight.quant_state
        assert weight.quant_type == "nf4" and weight.compress_statistics and not weight.requires_grad
        assert state.nested and state.blocksize == NF4_BLOCK and state.state2.blocksize == ABSMAX_BLOCK
        assert state.absmax.dtype == torch.uint8  # the block scales are themselves quantized to 8 bits
        assert weight.dtype == torch.uint8 and weight.numel() * 2 == state.shape.numel()  # two weights a byte
        assert layer.compute_dtype == torch.float32  # on CPU
    base = adapted.get_base_model()
    assert type(base.embed_tokens) is torch.nn.Embedding and type(base.lm_head) is torch.nn.Linear
    assert {type(m).__name__ for n, m in adapted.named_modules() if n.endswith("q_proj")} == {"Linear4bit"}
    trainable = {n: p for n, p in adapted.named_parameters() if p.requires_grad}
    assert trainable and all("lora_A" in n or "lora_B" in n for n in trainable)
    assert all(p.dtype == torch.float32 for p in trainable.values())

    # 4 bits a weight + an 8-bit absmax per 64 weights + a float32 scale per 256 absmax (and per-layer code
    # tables): under the 4.5 bits a single float32 absmax per block would cost
    assert report.weights_before == full
    bits = 8 * (report.weights_after - sum(kept.values())) / quantized_weights
    assert 4 + 8 / NF4_BLOCK < bits < 4 + 32 / NF4_BLOCK
    assert report.ratio < 0.2  # the whole base, embeddings and norms included


def test_quantized_forward_is_the_dequantized_model_and_close_to_full_precision():
    base = pretrained_checkpoint()
    full = load_model(base)
    quantized = load_model(base)
    quantize_nf4(quantized, DEFAULT_LORA_TARGETS)
    dequantized = load_model(base)
    for name, layer in quantized.named_modules():
        if isinstance(layer, bnb.nn.Linear4bit):
            weight = bnb.functional.dequantize_4bit(layer.weight.data, layer.weight.quant_state)
            dequantized.get_submodule(name).weight.data.copy_(weight)
    x = torch.randint(0, 400, (2, 50), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        got, want, exact = quantized(x).logits, full(x).logits, dequantized(x).logits
        step = quantized(x[:1, :1]).logits  # one token in eval mode: the inference path of bitsandbytes
    torch.testing.assert_close(got, exact, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(step, exact[:1, :1], atol=1e-4, rtol=1e-4)
    assert 0 < (got - want).norm() / want.norm() < 0.05  # NF4's error, diluted by the unquantized embeddings
    for name, layer in quantized.named_modules():  # training after an eval forward: still double-quantized
        if isinstance(layer, bnb.nn.Linear4bit):
            assert layer.weight.quant_state.nested, name


def test_a_qlora_run_learns_the_assistant_turns_and_saves_only_the_adapter(qlora_run):
    base = pretrained_checkpoint()
    quantized_base = load_model(base)
    quantize_nf4(quantized_base, DEFAULT_LORA_TARGETS)
    before = assistant_loss(quantized_base, _val_examples())[0]
    assert qlora_run.val_loss < before - 0.003  # the Assistant-turn loss of the held-out chats falls

    ckpt = qlora_run.checkpoint
    assert set(os.listdir(ckpt)) == {"adapter_model.safetensors", "adapter_config.json", "optimizer.pt",
                                     "state.json"}
    adapter = load_file(os.path.join(ckpt, "adapter_model.safetensors"))
    assert adapter and all(("lora_A" in k or "lora_B" in k) and t.dtype == torch.float32 for k, t in adapter.items())
    state = json.loads(open(os.path.join(ckpt, "state.json")).read())
    assert state["quantize"] == "nf4" and state["settings"]["quantize"] == "nf4"
    start = next(json.loads(line) for line in open(qlora_run.metrics_path) if '"start"' in line)
    assert start["quantize"] == "nf4" and start["quantized_weight_bytes"] < start["base_weight_bytes"]
    samples = [json.loads(line) for line in open(qlora_run.metrics_path) if '"sample"' in line]
    assert len(samples) == 1 and isinstance(samples[0]["text"], str)  # generation on the quantized model


def test_the_adapter_merges_onto_the_full_precision_base(qlora_run, tmp_path):
    base = pretrained_checkpoint()
    merged = load_model(merge_adapter(base, qlora_run.run_dir, tmp_path / "merged"))
    adapted = load_adapter(load_model(base), qlora_run.checkpoint).eval()
    trained_on = load_model(base)
    quantized, _ = apply_qlora(trained_on, 4, 8, 0.0, DEFAULT_LORA_TARGETS)
    load_adapter_weights(quantized, qlora_run.checkpoint)
    x = torch.randint(0, 400, (2, 50), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        got, want, as_trained = merged(x).logits, adapted(x).logits, quantized.eval()(x).logits
        plain = load_model(base)(x).logits
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)  # merged = full-precision base + adapter
    assert (got - plain).abs().max() > 1e-3  # the adapter does change the model
    assert (got - as_trained).norm() / as_trained.norm() < 0.05  # close to what training saw, up to NF4

    model, info = load_for_inference(base, adapter=qlora_run.run_dir)
    torch.testing.assert_close(model(x).logits, got, atol=1e-5, rtol=1e-5)
    assert info["adapter_state"]["quantize"] == "nf4"
    session, _ = load_chat(base, adapter=qlora_run.run_dir, device="cpu",
                           options=SamplingOptions(temperature=0, max_new_tokens=8))
    assert isinstance(session.reply("Are we still on for Saturday?"), str)


def test_a_qlora_run_with_the_paged_optimizer_resumes_exactly(tmp_path):
    base = pretrained_checkpoint()
    params = _qlora(max_steps=6, checkpoint_interval=3, paged_optimizer=True)
    straight = train(run_config("lora", tmp_path / "a", params, init_from=base))
    train(run_config("lora", tmp_path / "b", params, init_from=base), stop_at=3)
    resumed = train(run_config("lora", tmp_path / "b", params, init_from=base))
    assert resumed.resumed_from and resumed.step == 6
    a = load_file(os.path.join(straight.checkpoint, "adapter_model.safetensors"))
    b = load_file(os.path.join(resumed.checkpoint, "adapter_model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    moments = torch.load(os.path.join(resumed.checkpoint, "optimizer.pt"), weights_only=True)
    assert {k.rsplit("/", 1)[1] for k in moments} == {"step", "state1", "state2"}  # bitsandbytes' AdamW
    with pytest.raises(CheckpointMismatch, match="LoRA settings"):
        train(run_config("lora", tmp_path / "b", _qlora(max_steps=8, checkpoint_interval=3, quantize="none",
                                                         paged_optimizer=True), init_from=base))


def test_paged_optimizer_state_comes_back_as_bitsandbytes_keeps_it():
    torch.manual_seed(0)
    weights = torch.nn.Parameter(torch.randn(64, 32))
    names = {id(weights): "w"}
    optimizer = paged_adamw([{"params": [weights], "weight_decay": 0.1}], 1e-2, (0.9, 0.95))
    for _ in range(2):
        (weights ** 2).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    saved = optimizer_tensors(optimizer, names)
    copy = torch.nn.Parameter(weights.detach().clone())
    restored = paged_adamw([{"params": [copy], "weight_decay": 0.1}], 1e-2, (0.9, 0.95))
    load_optimizer_tensors(restored, {id(copy): "w"}, saved, Path("optimizer.pt"))
    restore_paged_state(restored)
    assert restored.state[copy]["step"] == 2 and isinstance(restored.state[copy]["step"], int)
    for p, opt in ((weights, optimizer), (copy, restored)):
        (p ** 2).sum().backward()
        opt.step()
    assert torch.equal(weights, copy)


def test_quantize_is_for_lora_runs_only(tmp_path):
    from tasks.training import SftParams

    run = run_config("sft", tmp_path / "sft", quiet_params(SftParams), init_from=pretrained_checkpoint())
    run["params"]["quantize"] = "nf4"
    with pytest.raises(ValueError, match="quantize applies to lora runs"):
        train(run)
