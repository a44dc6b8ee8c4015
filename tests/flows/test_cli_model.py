"""`chatlike model import` / `export`: a Hugging Face base becomes a checkpoint to chat with, a checkpoint with a
LoRA adapter leaves as one merged Hugging Face model, and mistakes are one line with exit code 2."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from tokenizers import Tokenizer
from typer.testing import CliRunner

from flows.cli import app
from model import GPT, ModelConfig, load_model, save_model
from model.evaluation import load_for_inference
from model.lora import apply_lora, save_adapter
from storage.checkpoints import read_state
from tests.support import save_hf_base

pytestmark = pytest.mark.usefixtures("one_torch_thread")
runner = CliRunner()


@pytest.fixture()
def imported(tmp_path):
    (tmp_path / "hf").mkdir()
    save_hf_base(tmp_path / "hf", "LlamaForCausalLM", tie_word_embeddings=True)
    result = runner.invoke(app, ["model", "import", str(tmp_path / "hf"), "--out", str(tmp_path / "base")])
    assert result.exit_code == 0, result.output
    assert "LlamaForCausalLM" in result.output and "vocabulary 300 → 304" in result.output
    return tmp_path / "base"


def test_an_imported_model_chats_without_naming_its_tokenizer(imported):
    result = runner.invoke(app, ["chat", "--checkpoint", str(imported), "--once", "hi", "--temperature", "0",
                                 "--max-new-tokens", "4"])
    assert result.exit_code == 0, result.output


def test_export_with_an_adapter_is_the_merged_model(imported, tmp_path):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    adapted = apply_lora(load_model(imported), rank=2, alpha=4, dropout=0.0,
                         target_modules=["q_proj", "v_proj", "down_proj"])
    with torch.no_grad():  # an untrained adapter is the identity: give it something to merge
        for name, p in adapted.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.1)
    save_adapter(adapted, tmp_path / "adapter")  # a bare peft folder: the tokenizer comes from the base

    out = tmp_path / "exported"
    result = runner.invoke(app, ["model", "export", str(imported), "--adapter", str(tmp_path / "adapter"),
                                 "--format", "hf", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter", "base", "exported", "hf"]  # merge removed

    merged, _ = load_for_inference(imported, tmp_path / "adapter")
    plain = load_model(imported)
    theirs = AutoModelForCausalLM.from_pretrained(out).eval()
    ids = torch.randint(0, 300, (2, 16), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(theirs(ids).logits, merged(ids).logits, atol=1e-4, rtol=0)
        assert (theirs(ids).logits - plain(ids).logits).abs().max() > 1e-2  # the adapter is in it
    exported_vocab = Tokenizer.from_file(str(out / "tokenizer.json")).get_vocab()
    assert exported_vocab == Tokenizer.from_file(str(imported / "tokenizer.json")).get_vocab()
    assert read_state(imported)["tokenizer"]["path"] == str((imported / "tokenizer.json").resolve())


@pytest.mark.skipif(importlib.util.find_spec("model.gguf") is None, reason="model/gguf.py is not there yet")
def test_export_gguf_goes_through_the_same_command(imported, tmp_path):
    result = runner.invoke(app, ["model", "export", str(imported), "--format", "gguf", "--quant", "q8_0",
                                 "--out", str(tmp_path / "gguf")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "gguf").exists()


def test_mistakes_are_one_line_with_exit_code_2(tmp_path):
    learned = save_model(GPT(ModelConfig(vocab_size=64, block_size=16, n_layers=1, n_heads=2, d_model=16)),
                         tmp_path / "learned")
    cases = [
        (["model", "import", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")], "no such Hugging Face model"),
        (["model", "import", str(tmp_path), "--out", str(tmp_path / "x"), "--dtype", "float16"], "dtype='float16'"),
        (["model", "export", str(learned), "--out", str(tmp_path / "x")], "position='learned' has no Llama"),
        (["model", "export", str(learned), "--format", "onnx", "--out", str(tmp_path / "x")], "--format 'onnx'"),
        (["model", "export", str(learned), "--quant", "q8_0", "--out", str(tmp_path / "x")], "only --format gguf"),
        (["model", "export", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")], "no such checkpoint"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr and result.stderr.strip().count("\n") == 0, (args, result.stderr)
    assert not (tmp_path / "x").exists()
