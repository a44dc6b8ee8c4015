"""Hugging Face in and out. An imported Llama / Qwen2 / Mistral computes transformers' logits and greedy
continuations, carries the chat tokens and says where it came from; what does not map is refused by field. An
exported chatlike model loads with `AutoModelForCausalLM` and computes our logits, and its tokenizer's chat template
gives exactly the ids of our chat format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from model import GPT, ModelConfig, load_model, save_model
from model.chat import SamplingOptions, load_chat
from model.generate import generate
from model.hf import export_hf, hf_architecture, import_hf
from storage.chat_format import (
    EOT,
    PAD,
    SPECIAL_TOKENS,
    assistant_prompt,
    encode_example,
    load_tokenizer,
)
from storage.checkpoints import checkpoint_tokenizer, read_state, write_state
from storage.fingerprint import hash_file
from tasks.tokenizer import TokenizerParams, train_tokenizer
from tests.support import HF_TEXTS, save_hf_base

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 16}  # scaled within 24 tokens
BASES = {
    "llama-tied": ("LlamaForCausalLM", dict(tie_word_embeddings=True)),
    "llama-3.1-rope": ("LlamaForCausalLM", dict(rope_parameters=LLAMA3_ROPE)),
    "llama-linear-rope-biases": ("LlamaForCausalLM", dict(rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                                           "rope_theta": 10000.0},
                                                          attention_bias=True, mlp_bias=True)),
    # Qwen2 pads its matrix beyond the tokenizer and has <|endoftext|> already; saved in shards with an index
    "qwen2-sharded": ("Qwen2ForCausalLM", dict(vocab_size=320, tie_word_embeddings=True, shard=True,
                                               special_tokens=("<|endoftext|>", "<|im_start|>"))),
    "mistral-window-6": ("MistralForCausalLM", dict(sliding_window=6)),  # shorter than the 24-token inputs
}


def _base(name: str, root: Path):
    architecture, options = BASES[name]
    folder = root / "hf"
    folder.mkdir()
    return save_hf_base(folder, architecture, **options)


def _grow_like(hf_model, ours: GPT) -> None:
    """Give the transformers model the imported vocabulary (our rows for the chat tokens), so that both are the
    same function on every id and greedy decoding can be compared token for token."""
    hf_model.resize_token_embeddings(ours.config.vocab_size, mean_resizing=False)
    with torch.no_grad():
        hf_model.get_input_embeddings().weight.copy_(ours.embed_tokens.weight)
        hf_model.get_output_embeddings().weight.copy_(ours.lm_head.weight)


@pytest.mark.parametrize("name", BASES)
def test_imported_model_computes_transformers_logits_and_greedy_text(name, tmp_path):
    base = _base(name, tmp_path)
    ours = load_model(import_hf(base.folder, tmp_path / "imported"))
    ids = torch.randint(0, base.vocab, (2, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        theirs = base.model(ids).logits
        torch.testing.assert_close(ours(ids).logits[..., :base.vocab], theirs[..., :base.vocab], atol=1e-4, rtol=0)

        _grow_like(base.model, ours)
        torch.testing.assert_close(ours(ids).logits, base.model(ids).logits, atol=1e-4, rtol=0)
    prompts = [ids[0, :8].tolist(), ids[1, :5].tolist()]  # of different lengths: ours pads them into one batch
    greedy = generate(ours, prompts, 16, temperature=0)
    for prompt, new in zip(prompts, greedy, strict=True):
        out = base.model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                                  do_sample=False, max_new_tokens=16)
        assert out[0, len(prompt):].tolist() == new


def test_import_adds_the_chat_tokens_and_records_its_source(tmp_path):
    base = _base("qwen2-sharded", tmp_path)
    out = import_hf(base.folder, tmp_path / "imported")
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors", "state.json",
                                                     "tokenizer.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]

    source = json.loads((base.folder / "tokenizer.json").read_text())
    source_ids = {t["content"]: t["id"] for t in source["added_tokens"]}
    tok = load_tokenizer(out)  # the chat format's tokenizer loader accepts it
    assert tok.token_to_id(EOT) == source_ids[EOT]  # Qwen2's own <|endoftext|> is kept...
    added = {s: tok.token_to_id(s) for s in SPECIAL_TOKENS if s != EOT}
    assert sorted(added.values()) == [300, 301, 302]  # ...and only the missing three are added, after its ids
    assert checkpoint_tokenizer(out) == out / "tokenizer.json"

    state = read_state(out)
    shards = sorted(p.name for p in base.folder.glob("*.safetensors"))
    assert len(shards) > 1 and (base.folder / "model.safetensors.index.json").is_file()
    assert state["mode"] == "imported" and state["step"] == 0
    assert state["imported_from"]["architecture"] == "Qwen2ForCausalLM"
    assert state["imported_from"]["folder"] == str(base.folder.resolve())
    assert state["imported_from"]["weights_sha256"] == {s: hash_file(base.folder / s) for s in shards}
    assert state["imported_from"]["added_tokens"] == added
    assert state["tokenizer"] == {"path": str((out / "tokenizer.json").resolve()),
                                  "sha256": hash_file(out / "tokenizer.json"), "vocab_size": 303}

    model = load_model(out)
    cfg = model.config
    assert (cfg.vocab_size, cfg.n_kv_heads, cfg.qkv_bias, cfg.bias, cfg.tie_embeddings) == (320, 2, True, False, True)
    source_rows = base.model.get_input_embeddings().weight.detach()
    for i in added.values():  # inside Qwen2's padding: the mean of the source rows, not the padding's own values
        torch.testing.assert_close(model.embed_tokens.weight[i], source_rows.mean(dim=0))

    session, info = load_chat(out, device="cpu", options=SamplingOptions(temperature=0, max_new_tokens=4))
    assert info["tokenizer"] == str(out / "tokenizer.json")  # found without --tokenizer
    assert isinstance(session.reply("hi"), str)


def test_import_grows_an_untied_vocabulary_and_can_store_bfloat16(tmp_path):
    base = _base("llama-3.1-rope", tmp_path)
    out = import_hf(base.folder, tmp_path / "imported", dtype="bfloat16")
    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        assert {f.get_slice(name).get_dtype() for name in f.keys()} == {"BF16"}
    model = load_model(out, dtype=torch.bfloat16)
    assert model.config.vocab_size == base.vocab + 4
    head = base.model.lm_head.weight.detach()
    torch.testing.assert_close(model.lm_head.weight[: base.vocab], head.to(torch.bfloat16), atol=0, rtol=0)
    torch.testing.assert_close(model.lm_head.weight[base.vocab:].float(), head.mean(dim=0).expand(4, -1),
                               atol=1e-2, rtol=0)
    cfg = model.config
    assert (cfg.rope_scaling, cfg.rope_scaling_factor, cfg.rope_original_max_positions) == ("llama3", 8.0, 16)
    assert cfg.block_size == 64 and cfg.rope_theta == 500000.0


def _with_config(tmp_path: Path, architecture: str, **fields) -> Path:
    """A folder holding only a config.json: a mapping error is raised before any weight is read."""
    import transformers

    folder = tmp_path / "hf"
    config_class = getattr(transformers, architecture.replace("ForCausalLM", "Config"))
    config_class(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 max_position_embeddings=64).save_pretrained(folder)
    raw = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**raw, "architectures": [architecture], **fields}))
    return folder


@pytest.mark.parametrize(("architecture", "fields", "message"), [
    ("LlamaForCausalLM", {"head_dim": 8}, "head_dim=8 cannot be mapped"),
    ("LlamaForCausalLM", {"hidden_act": "gelu"}, "hidden_act='gelu' cannot be mapped"),
    ("LlamaForCausalLM", {"attention_bias": True}, "attention_bias=True with mlp_bias=False cannot be mapped"),
    ("LlamaForCausalLM", {"rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4}},
     "rope_type='yarn' cannot be mapped"),
    ("LlamaForCausalLM", {"rope_scaling": {"type": "dynamic", "factor": 2.0}, "rope_parameters": None},
     "rope_scaling rope_type='dynamic' cannot be mapped"),
    ("Qwen2ForCausalLM", {"use_sliding_window": True, "sliding_window": 16}, "use_sliding_window=True"),
    ("LlamaForCausalLM", {"architectures": ["GPTNeoXForCausalLM"]}, "architectures=['GPTNeoXForCausalLM'] cannot be"),
])
def test_fields_that_do_not_map_are_refused_by_name(architecture, fields, message, tmp_path):
    folder = _with_config(tmp_path, architecture, **fields)
    with pytest.raises(ValueError) as raised:
        import_hf(folder, tmp_path / "imported")
    text = str(raised.value)
    assert text.startswith(f"{folder / 'config.json'}: ") and message in text and "\n" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]  # nothing written


def test_missing_weights_and_legacy_rope_fields(tmp_path):
    # transformers 4.x wrote rope_theta and rope_scaling at the top level (as Llama 3.1's config.json still does)
    folder = _with_config(tmp_path, "LlamaForCausalLM", rope_parameters=None, rope_theta=500000.0,
                          rope_scaling={k: v for k, v in LLAMA3_ROPE.items() if k != "rope_theta"})
    with pytest.raises(FileNotFoundError, match="no model.safetensors nor model.safetensors.index.json"):
        import_hf(folder, tmp_path / "imported")
    from model.hf import hf_model_config

    _, cfg, _ = hf_model_config(folder)
    assert (cfg.rope_theta, cfg.rope_scaling, cfg.rope_high_freq_factor) == (500000.0, "llama3", 4.0)


def test_windows_as_long_as_the_context_are_full_attention(tmp_path):
    from model.hf import hf_model_config

    for window, attention in ((None, "full"), (64, "full"), (63, "sliding_window")):
        folder = _with_config(tmp_path / str(window), "MistralForCausalLM", sliding_window=window,
                              num_key_value_heads=None)
        architecture, cfg, _ = hf_model_config(folder)
        assert (architecture, cfg.attention, cfg.block_size) == ("MistralForCausalLM", attention, 64)
    assert cfg.window_size == 63 and cfg.bias is False and cfg.n_kv_heads == 4  # kv heads default to the heads


# ------------------------------------------------------------------------------------------------------------
# export


LLAMA_STYLE = dict(vocab_size=320, block_size=64, n_layers=2, n_heads=4, n_kv_heads=2, d_model=64, position="rope",
                   norm="rmsnorm", mlp="swiglu", bias=False, tie_embeddings=False, norm_eps=1e-6)
EXPORTS = {
    "llama-style": ("LlamaForCausalLM", {}),
    "tied-llama3-rope": ("LlamaForCausalLM", dict(tie_embeddings=True, rope_scaling="llama3", rope_scaling_factor=4.0,
                                                  rope_original_max_positions=16)),
    "llama-biases": ("LlamaForCausalLM", dict(bias=True, n_kv_heads=None)),
    "qwen2-like": ("Qwen2ForCausalLM", dict(qkv_bias=True, rope_theta=1e6)),
    "mistral-like": ("MistralForCausalLM", dict(attention="sliding_window", window_size=6)),
}


@pytest.fixture(scope="module")
def our_tokenizer(tmp_path_factory) -> Path:
    """Our tokenizer stage's byte-level BPE, 300 ids with the chat tokens at 0-3."""
    out = tmp_path_factory.mktemp("tokenizer")
    return Path(train_tokenizer(HF_TEXTS, out, TokenizerParams(vocab_size=300, heldout_fraction=0)).path)


def _checkpoint(root: Path, tokenizer: Path, **overrides) -> Path:
    """A random chatlike checkpoint whose state.json records its tokenizer, as a training run's does."""
    torch.manual_seed(0)
    model = GPT(ModelConfig(**{**LLAMA_STYLE, **overrides}))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias") or "norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    folder = save_model(model, root / "checkpoint")
    write_state(folder, {"mode": "pretrain", "tokenizer": {"path": str(tokenizer)}})
    return folder


@pytest.mark.parametrize("name", EXPORTS)
def test_exported_model_loads_in_transformers_with_our_logits(name, our_tokenizer, tmp_path):
    from transformers import AutoModelForCausalLM

    architecture, overrides = EXPORTS[name]
    checkpoint = _checkpoint(tmp_path, our_tokenizer, **overrides)
    out = export_hf(checkpoint, tmp_path / "hf")
    assert json.loads((out / "config.json").read_text())["architectures"] == [architecture]
    theirs = AutoModelForCausalLM.from_pretrained(out).eval()
    ours = load_model(checkpoint)
    ids = torch.randint(0, 320, (2, 24), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(theirs(ids).logits, ours(ids).logits, atol=1e-4, rtol=0)
    prompt = ids[0, :6].tolist()
    new = theirs.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=12)[0, len(prompt):].tolist()
    eot = load_tokenizer(our_tokenizer).token_to_id(EOT)  # generation_config.json stops there, as chat does
    assert new[: new.index(eot) if eot in new else None] == generate(ours, [prompt], 12, temperature=0,
                                                                     stop_tokens=[eot])[0]


def test_exported_tokenizer_renders_our_chat_format(our_tokenizer, tmp_path):
    from jinja2.exceptions import TemplateError
    from transformers import AutoTokenizer, GenerationConfig

    out = export_hf(_checkpoint(tmp_path, our_tokenizer), tmp_path / "hf")
    theirs = AutoTokenizer.from_pretrained(out)
    ours = load_tokenizer(our_tokenizer)
    turns = [("User", "are we still on for saturday? 🙂"), ("Assistant", "yes!\nsee you at 10am"),
             ("User", "On mange chez moi vers 20h")]
    messages = [{"role": role.lower(), "content": text} for role, text in turns]
    rendered = theirs.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    assert rendered == assistant_prompt(ours, turns)
    assert theirs.apply_chat_template(messages, tokenize=True, return_dict=False) == encode_example(ours, turns)[0]
    with pytest.raises(TemplateError, match="not 'system'"):
        theirs.apply_chat_template([{"role": "system", "content": "be nice"}, *messages])

    assert (theirs.eos_token, theirs.pad_token) == (EOT, PAD)
    generation = GenerationConfig.from_pretrained(out)
    assert (generation.eos_token_id, generation.pad_token_id) == (ours.token_to_id(EOT), ours.token_to_id(PAD))


def test_a_sentencepiece_style_tokenizer_keeps_our_chat_ids(tmp_path):
    """Metaspace with prepend_scheme "first" (Mistral, TinyLlama) puts '▁' before the first word of a string only;
    our turns encode each piece on its own. The exported tokenizer must give the ids the model was tuned on."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer

    from model.hf import add_chat_tokens

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
    tok.decoder = decoders.Metaspace(prepend_scheme="first")
    tok.train_from_iterator(HF_TEXTS, trainers.BpeTrainer(vocab_size=280, special_tokens=["<s>", "</s>"],
                                                          show_progress=False))
    add_chat_tokens(tok)
    tok.save(str(tmp_path / "tokenizer.json"))
    out = export_hf(_checkpoint(tmp_path, tmp_path / "tokenizer.json"), tmp_path / "hf")
    turns = [("User", "are we still on for saturday?"), ("Assistant", "yes, see you there")]
    messages = [{"role": role.lower(), "content": text} for role, text in turns]
    rendered = AutoTokenizer.from_pretrained(out).apply_chat_template(messages, add_generation_prompt=True,
                                                                       tokenize=True, return_dict=False)
    assert rendered == assistant_prompt(load_tokenizer(tmp_path / "tokenizer.json"), turns)


def test_an_imported_model_round_trips(tmp_path):
    from transformers import AutoModelForCausalLM

    base = _base("llama-3.1-rope", tmp_path)
    out = export_hf(import_hf(base.folder, tmp_path / "imported"), tmp_path / "exported")
    again = AutoModelForCausalLM.from_pretrained(out).eval()
    ids = torch.randint(0, base.vocab, (2, 24), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(again(ids).logits[..., :base.vocab], base.model(ids).logits, atol=1e-4, rtol=0)
    assert again.config.rope_parameters["rope_type"] == "llama3"
    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        names = set(f.keys())
    with safe_open(str(base.folder / "model.safetensors"), framework="pt") as f:
        assert names == set(f.keys())  # the same tensor names transformers writes


@pytest.mark.parametrize(("overrides", "message"), [
    (dict(position="learned"), "position='learned' has no Llama equivalent (Llama uses RoPE)"),
    (dict(norm="layernorm"), "norm='layernorm' has no Llama equivalent"),
    (dict(norm_position="post"), "norm_position='post' has no Llama equivalent"),
    (dict(mlp="gelu"), "mlp='gelu' has no Llama equivalent"),
    (dict(n_experts=4), "n_experts=4 (a mixture of experts) has no Llama equivalent"),
    (dict(attention="mla", n_kv_heads=None), "attention='mla' has no Llama equivalent"),
    (dict(attention="sliding_window", window_size=8, n_sink_tokens=2), "n_sink_tokens=2 (attention sinks)"),
    (dict(bias=True, qkv_bias=False), "bias=True with qkv_bias=False"),
    (dict(attention="sliding_window", window_size=8, qkv_bias=True), "a sliding window (window_size=8) with biases"),
])
def test_configs_without_a_hugging_face_equivalent_are_refused_by_feature(overrides, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        hf_architecture(ModelConfig(**{**LLAMA_STYLE, **overrides}))


def test_export_writes_whole_folders_only(our_tokenizer, tmp_path):
    assert hf_architecture(ModelConfig(**{**LLAMA_STYLE, "attention": "sliding_window", "window_size": 64})) == \
        "LlamaForCausalLM"  # a window as long as the block is full attention
    refused = _checkpoint(tmp_path / "a", our_tokenizer, position="learned")
    with pytest.raises(ValueError, match="position='learned'"):
        export_hf(refused, tmp_path / "out")
    assert not (tmp_path / "out").exists()

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "stale.txt").write_text("from an earlier export")
    out = export_hf(_checkpoint(tmp_path / "b", our_tokenizer), tmp_path / "out")
    assert not (out / "stale.txt").exists() and (out / "model.safetensors").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "out"]  # no temporary folder left
    shutil.rmtree(out)
