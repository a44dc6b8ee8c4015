"""The module names are the ones peft's LoRA targets (DESIGN §5): adapters attach, start as a no-op, train
only themselves, and generation runs through the wrapped model."""

from __future__ import annotations

import pytest
import torch

from model import GPT, ModelConfig, generate

peft = pytest.importorskip("peft")

TARGETS = {
    "full": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "mla": ["q_proj", "kv_a_proj", "kv_b_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "linear": ["q_proj", "v_proj", "o_proj", "up_proj", "down_proj"],
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("attention", list(TARGETS))
def test_lora_attaches_to_the_projection_names(attention):
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=64, block_size=32, d_model=32, n_heads=4, n_layers=2, attention=attention,
                      position="rope" if attention == "mla" else "learned", mlp="swiglu", n_experts=2,
                      n_experts_per_token=1)
    model = GPT(cfg).eval()
    x = torch.randint(0, 64, (2, 10))
    with torch.no_grad():
        base_logits = model(x).logits
    lora = peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS[attention]))
    trainable = {n for n, p in lora.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    assert any("experts.1.down_proj.lora_A" in n for n in trainable)
    with torch.no_grad():
        torch.testing.assert_close(lora(x).logits, base_logits)  # lora_B starts at zero
    lora.train()
    lora(x, targets=x).loss.backward()
    assert all(p.grad is not None for n, p in lora.named_parameters() if n in trainable and "lora_B" in n)
    assert len(generate(lora, [[1, 2, 3]], max_new_tokens=4)[0]) == 4
