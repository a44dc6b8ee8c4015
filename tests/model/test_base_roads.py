"""The other road, end to end for each architecture the importer reads: a random small Llama / Qwen2 / Mistral
saved by transformers → `chatlike model import` → SFT, LoRA and QLoRA on the example chats → `chatlike model
export` to Hugging Face (transformers' logits equal chatlike's) and to GGUF (read back by gguf's reader)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from flows.cli import app
from model.checkpoint import load_model
from model.evaluation import load_for_inference
from model.train import train
from storage.chat_format import assistant_prompt, load_tokenizer
from tasks.training import LoraParams, SftParams, make_run_config
from tests.support import quiet_params, save_hf_base, tiny_world

pytestmark = pytest.mark.usefixtures("one_torch_thread")
runner = CliRunner()

ARCHITECTURES = {
    "llama": ("LlamaForCausalLM", {"tie_word_embeddings": False}),
    "qwen2": ("Qwen2ForCausalLM", {}),  # q/k/v biases, tied embeddings
    "mistral": ("MistralForCausalLM", {"sliding_window": None}),  # Mistral 7B v0.2+: no window
}
CONVERSATION = [("User", "Hey Sam, are you free on Saturday?"), ("Assistant", "Yes! What's the plan?"),
                ("User", "Dinner at mine, 8pm?")]


def _cli(*args: str) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def _finetune(mode: str, base: Path, run_dir: Path, **overrides) -> Path:
    world = tiny_world()  # the sft-data examples of "Sam"; runs encode them with the base's tokenizer
    cls = SftParams if mode == "sft" else LoraParams
    params = quiet_params(cls, max_steps=4, checkpoint_interval=4, learning_rate=3e-3, min_lr=3e-4, **overrides)
    run = make_run_config(mode, params, run_dir, base / "tokenizer.json", world.sft.train_path, world.sft.val_path,
                          init_from=base)
    result = train(run)
    assert result.step == 4 and result.train_loss is not None
    return Path(result.checkpoint)


def _hf_logits(folder: Path, ids: list[int]) -> torch.Tensor:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0]


def _our_logits(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0]


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_import_finetune_three_ways_and_export(tmp_path, arch):
    import gguf

    architecture, config = ARCHITECTURES[arch]
    (tmp_path / "hf").mkdir()
    save_hf_base(tmp_path / "hf", architecture, max_position_embeddings=128, **config)
    base = tmp_path / "base"
    _cli("model", "import", tmp_path / "hf", "--out", base)
    prompt = assistant_prompt(load_tokenizer(base), CONVERSATION)

    # full SFT → a Hugging Face folder that computes what the checkpoint computes
    sft = _finetune("sft", base, tmp_path / "sft")
    sft_model = load_model(sft)
    assert not torch.equal(sft_model.lm_head.weight, load_model(base).lm_head.weight)  # it trained
    _cli("model", "export", sft, "--format", "hf", "--out", tmp_path / "sft-hf")
    torch.testing.assert_close(_hf_logits(tmp_path / "sft-hf", prompt), _our_logits(sft_model, prompt),
                               atol=1e-4, rtol=0)

    # LoRA → exported with the adapter merged in
    lora = _finetune("lora", base, tmp_path / "lora", rank=4, dropout=0.0)
    _cli("model", "export", base, "--adapter", lora, "--format", "hf", "--out", tmp_path / "lora-hf")
    merged, _ = load_for_inference(base, lora)
    torch.testing.assert_close(_hf_logits(tmp_path / "lora-hf", prompt), _our_logits(merged, prompt),
                               atol=1e-4, rtol=0)

    # QLoRA (NF4 base) → its adapter merged onto the full-precision base, as GGUF
    qlora = _finetune("lora", base, tmp_path / "qlora", rank=4, dropout=0.0, quantize="nf4")
    _cli("model", "export", base, "--adapter", qlora, "--format", "gguf", "--quant", "f16",
         "--out", tmp_path / "qlora-gguf")
    reader = gguf.GGUFReader(tmp_path / "qlora-gguf" / "model-f16.gguf")
    expected_arch = "qwen2" if arch == "qwen2" else "llama"
    field = reader.fields["general.architecture"]
    assert bytes(field.parts[field.data[0]]).decode() == expected_arch
    merged, _ = load_for_inference(base, qlora)
    embedding = next(t for t in reader.tensors if t.name == "token_embd.weight")
    torch.testing.assert_close(torch.from_numpy(embedding.data.astype("float32")),
                               merged.embed_tokens.weight.detach().half().float(), atol=0, rtol=0)
    down = next(t for t in reader.tensors if t.name == "blk.0.ffn_down.weight")  # adapted by QLoRA's LoRA
    torch.testing.assert_close(torch.from_numpy(down.data.astype("float32")),
                               merged.layers[0].mlp.down_proj.weight.detach().half().float(), atol=0, rtol=0)
