"""GGUF export: every tensor and every hyper-parameter read back with ggml's own reader equals the checkpoint's
(after llama.cpp's pair order for RoPE and the F16 / Q8_0 cast), the tokenizer and chat template travel inside
the file, configurations llama.cpp would compute differently are refused by name, and (slow) llama.cpp itself,
through llama-cpp-python, gives our logits and our greedy continuation."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import gguf
import jinja2
import numpy as np
import pytest
import torch

from model import GPT, ModelConfig, save_model
from model.generate import generate
from model.gguf import CHAT_TEMPLATE, export_gguf, gguf_architecture
from model.transformer import apply_rotary
from storage.chat_format import BOS, EOT, PAD, SEP, format_turns, load_tokenizer
from tasks.tokenizer import TokenizerParams, train_tokenizer

TEXTS = [
    "Hello there, how are you doing today? I'm fine, thanks! See you at 10am.",
    "Are you free on Saturday? We could go to the beach, or the cinema if it rains.",
    "wach nta mzyan? sa7a 3lach 2day, mashi mochkil",
    "Tu viens ce soir ? On mange chez moi vers 20h, apporte du pain s'il te plaît.",
] * 20
LLAMA = dict(vocab_size=320, block_size=64, n_layers=2, n_heads=4, n_kv_heads=2, d_model=64, position="rope",
             norm="rmsnorm", mlp="swiglu", bias=False, tie_embeddings=False, norm_eps=1e-6)
F16, F32, Q8_0 = gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.Q8_0


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory) -> Path:
    """A byte-level BPE of our own tokenizer stage (chat split rule), 300 ids: fewer than the model's 320."""
    out = tmp_path_factory.mktemp("tokenizer")
    return Path(train_tokenizer(TEXTS, out, TokenizerParams(vocab_size=300, heldout_fraction=0)).path)


def make_checkpoint(root: Path, tokenizer: Path, seed: int = 0, model: GPT | None = None, **overrides) -> Path:
    if model is None:
        torch.manual_seed(seed)
        model = GPT(ModelConfig(**{**LLAMA, **overrides}))
        with torch.no_grad():  # biases start at zero: give them values, so a missing or misplaced bias shows
            for name, p in model.named_parameters():
                if name.endswith((".bias", "norm.weight")):
                    p.add_(torch.randn_like(p) * 0.1)
    folder = save_model(model, root / "checkpoint")
    shutil.copy(tokenizer, folder / "tokenizer.json")
    return folder


def read(path: Path) -> tuple[dict, dict[str, gguf.ReaderTensor]]:
    reader = gguf.GGUFReader(path)
    return {k: f.contents() for k, f in reader.fields.items()}, {t.name: t for t in reader.tensors}


def values(t: gguf.ReaderTensor) -> np.ndarray:
    """A tensor of the file as float32, in our (out, in) order."""
    return gguf.quants.dequantize(t.data, t.tensor_type).reshape(tuple(reversed([int(n) for n in t.shape])))


def pairs_adjacent(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Rows of a q/k projection in llama.cpp's order, written index by index: in each head, row i of the
    rotate-half layout goes to 2i and row i + head_dim/2 to 2i + 1."""
    head_dim = w.shape[0] // n_heads
    out = np.empty_like(w)
    for h in range(n_heads):
        for i in range(head_dim // 2):
            out[h * head_dim + 2 * i] = w[h * head_dim + i]
            out[h * head_dim + 2 * i + 1] = w[h * head_dim + i + head_dim // 2]
    return out


def expected_tensors(folder: Path, arch: str) -> dict[str, np.ndarray]:
    from safetensors.torch import load_file

    cfg = ModelConfig(**json.loads((folder / "config.json").read_text()))
    state = {k: v.float().numpy() for k, v in load_file(str(folder / "model.safetensors")).items()}
    out = {"token_embd.weight": state["embed_tokens.weight"], "output_norm.weight": state["norm.weight"]}
    if not cfg.tie_embeddings:
        out["output.weight"] = state["lm_head.weight"]
    ours = {"attn_norm": "attn_norm", "attn_q": "attn.q_proj", "attn_k": "attn.k_proj", "attn_v": "attn.v_proj",
            "attn_output": "attn.o_proj", "ffn_norm": "mlp_norm", "ffn_gate": "mlp.gate_proj",
            "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    for i in range(cfg.n_layers):
        for theirs, name in ours.items():
            for kind in ("weight", "bias"):
                if f"layers.{i}.{name}.{kind}" in state:
                    value = state[f"layers.{i}.{name}.{kind}"]
                    if arch == "llama" and theirs in ("attn_q", "attn_k"):
                        value = pairs_adjacent(value, cfg.n_heads if theirs == "attn_q" else cfg.kv_heads)
                    out[f"blk.{i}.{theirs}.{kind}"] = value
    return out


# ------------------------------------------------------------------------------------------------------------
# tensors


def test_f16_file_holds_every_weight_in_llama_cpp_layout(tmp_path, tokenizer_json):
    folder = make_checkpoint(tmp_path, tokenizer_json)
    path = export_gguf(folder, tmp_path / "out")
    assert path == tmp_path / "out" / "model-f16.gguf"
    assert sorted(p.name for p in path.parent.iterdir()) == ["model-f16.gguf"]
    _, tensors = read(path)
    expected = expected_tensors(folder, "llama")
    assert set(tensors) == set(expected)
    for name, want in expected.items():
        t = tensors[name]
        if want.ndim == 1:  # norms (and biases) stay float32, as llama.cpp expects
            assert t.tensor_type == F32, name
            np.testing.assert_array_equal(values(t), want, err_msg=name)
        else:
            assert t.tensor_type == F16, name
            np.testing.assert_array_equal(values(t), want.astype(np.float16).astype(np.float32), err_msg=name)


def test_q8_0_file_quantizes_whole_blocks_and_stays_within_the_q8_0_error(tmp_path, tokenizer_json):
    folder = make_checkpoint(tmp_path, tokenizer_json)
    _, tensors = read(export_gguf(folder, tmp_path / "out", quant="q8_0"))
    expected = expected_tensors(folder, "llama")
    quantized = set()
    for name, want in expected.items():
        t, got = tensors[name], values(tensors[name])
        if want.ndim == 1:
            assert t.tensor_type == F32, name
        elif want.shape[1] % 32:  # down_proj reads d_ff = 170 features: no whole 32-value blocks, so F16
            assert t.tensor_type == F16, name
            np.testing.assert_array_equal(got, want.astype(np.float16).astype(np.float32), err_msg=name)
        else:
            assert t.tensor_type == Q8_0, name
            quantized.add(name.split(".")[-2])
            ours = gguf.quants.dequantize(gguf.quants.quantize(want, Q8_0), Q8_0)
            np.testing.assert_array_equal(got, ours, err_msg=name)
            # a block stores round(w / d) with d = max|w| / 127 (d itself in f16): error <= d/2 plus d's rounding
            blocks = want.reshape(-1, 32)
            bound = np.abs(blocks).max(axis=1, keepdims=True) / 127 * (0.5 + 127 * 2.0 ** -11) + 1e-12
            assert (np.abs(got.reshape(-1, 32) - blocks) <= bound).all(), name
    assert quantized == {"token_embd", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "output"}
    assert "ffn_down" not in quantized


def test_pair_order_gives_the_same_attention_scores_as_rotate_half():
    """The reason for the q/k row order: llama.cpp's RoPE on (2i, 2i+1) pairs of the reordered projections
    gives the scores our rotate-half RoPE gives on the original ones."""
    torch.manual_seed(0)
    n_heads, head_dim, T, d = 2, 8, 5, 16
    wq, wk, x = torch.randn(n_heads * head_dim, d), torch.randn(n_heads * head_dim, d), torch.randn(T, d)
    angles = torch.arange(T)[:, None].float() * 10000.0 ** (-torch.arange(0, head_dim, 2).float() / head_dim)
    rope = (torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin())

    def heads(w):  # (H, T, head_dim)
        return (x @ w.T).view(T, n_heads, head_dim).transpose(0, 1)

    ours = apply_rotary(heads(wq), rope) @ apply_rotary(heads(wk), rope).transpose(-1, -2)

    def rope_adjacent(v):  # llama.cpp's LLAMA_ROPE_TYPE_NORM: rotate (v[2i], v[2i+1]) by angle i
        even, odd = v[..., 0::2], v[..., 1::2]
        cos, sin = angles.cos(), angles.sin()
        return torch.stack((even * cos - odd * sin, even * sin + odd * cos), -1).flatten(-2)

    q2 = torch.from_numpy(pairs_adjacent(wq.numpy(), n_heads))
    k2 = torch.from_numpy(pairs_adjacent(wk.numpy(), n_heads))
    theirs = rope_adjacent(heads(q2)) @ rope_adjacent(heads(k2)).transpose(-1, -2)
    torch.testing.assert_close(theirs, ours, rtol=1e-5, atol=1e-5)


def test_qwen2_keeps_the_row_order_and_its_qkv_biases(tmp_path, tokenizer_json):
    folder = make_checkpoint(tmp_path, tokenizer_json, qkv_bias=True)
    fields, tensors = read(export_gguf(folder, tmp_path / "out"))
    assert fields["general.architecture"] == "qwen2"
    assert fields["qwen2.attention.head_count_kv"] == 2
    expected = expected_tensors(folder, "qwen2")
    assert {"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.1.attn_v.bias"} <= set(expected)
    assert set(tensors) == set(expected)
    for name, want in expected.items():
        cast = want if want.ndim == 1 else want.astype(np.float16).astype(np.float32)
        np.testing.assert_array_equal(values(tensors[name]), cast, err_msg=name)


def test_tied_head_is_left_to_token_embd_and_llama3_scaling_travels_as_rope_freqs(tmp_path, tokenizer_json):
    cfg = dict(tie_embeddings=True, rope_scaling="llama3", rope_scaling_factor=8.0, rope_original_max_positions=32,
               rope_low_freq_factor=1.0, rope_high_freq_factor=4.0, rope_theta=10000.0)
    folder = make_checkpoint(tmp_path, tokenizer_json, **cfg)
    fields, tensors = read(export_gguf(folder, tmp_path / "out"))
    assert "output.weight" not in tensors
    assert not any(k.startswith("llama.rope.scaling") for k in fields)
    # Llama 3.1's rule per frequency, written out: keep short waves, divide long ones by 8, blend in between
    head_dim = 16
    factors = []
    for i in range(0, head_dim, 2):
        wavelength = 2 * np.pi * 10000.0 ** (i / head_dim)
        if wavelength < 32 / 4.0:
            factors.append(1.0)
        elif wavelength > 32 / 1.0:
            factors.append(8.0)
        else:
            smooth = (32 / wavelength - 1.0) / (4.0 - 1.0)
            factors.append(1 / ((1 - smooth) / 8.0 + smooth))
    t = tensors["rope_freqs.weight"]
    assert t.tensor_type == F32
    np.testing.assert_allclose(values(t), factors, rtol=1e-6)
    assert 1.0 in factors and 8.0 in factors and any(1 < f < 8 for f in factors)  # all three regions


def test_linear_rope_scaling_is_metadata(tmp_path, tokenizer_json):
    folder = make_checkpoint(tmp_path, tokenizer_json, rope_scaling="linear", rope_scaling_factor=2.0)
    fields, tensors = read(export_gguf(folder, tmp_path / "out"))
    assert fields["llama.rope.scaling.type"] == "linear"
    assert fields["llama.rope.scaling.factor"] == 2.0
    assert "rope_freqs.weight" not in tensors


# ------------------------------------------------------------------------------------------------------------
# metadata, tokenizer, chat template


def test_metadata_describes_the_model_and_carries_the_tokenizer(tmp_path, tokenizer_json):
    folder = make_checkpoint(tmp_path, tokenizer_json, n_layers=3, rope_theta=500000.0, block_size=48)
    fields, _ = read(export_gguf(folder, tmp_path / "out", quant="q8_0", name="sam"))
    tok = load_tokenizer(tokenizer_json)
    assert {k: v for k, v in fields.items() if k.startswith(("general.", "llama."))} == {
        "general.architecture": "llama", "general.name": "sam", "general.file_type": 7,
        "general.quantization_version": 2,
        "llama.vocab_size": 320, "llama.context_length": 48, "llama.embedding_length": 64,
        "llama.block_count": 3, "llama.feed_forward_length": 170, "llama.attention.head_count": 4,
        "llama.attention.head_count_kv": 2, "llama.rope.dimension_count": 16, "llama.rope.freq_base": 500000.0,
        "llama.attention.layer_norm_rms_epsilon": pytest.approx(1e-6),
    }
    vocab = tok.get_vocab()
    assert len(vocab) == 300
    tokens, types = fields["tokenizer.ggml.tokens"], fields["tokenizer.ggml.token_type"]
    assert len(tokens) == len(types) == 320
    assert all(tokens[i] == t for t, i in vocab.items())
    assert tokens[300:] == [f"[PAD{i}]" for i in range(300, 320)]  # the model's ids the tokenizer never makes
    specials = {tok.token_to_id(s) for s in (BOS, SEP, EOT, PAD)}
    assert [i for i, t in enumerate(types) if t == gguf.TokenType.CONTROL] == sorted(specials)
    assert set(types[300:]) == {gguf.TokenType.UNUSED}
    assert set(types[:300]) - {gguf.TokenType.CONTROL} == {gguf.TokenType.NORMAL}
    merges = json.loads(tokenizer_json.read_text())["model"]["merges"]
    assert fields["tokenizer.ggml.merges"] == [m if isinstance(m, str) else " ".join(m) for m in merges]
    assert fields["tokenizer.ggml.model"] == "gpt2"
    assert fields["tokenizer.ggml.pre"] == "llama-bpe"  # our chat split rule extends GPT-4's (Llama 3's)
    assert fields["tokenizer.ggml.bos_token_id"] == tok.token_to_id(BOS)
    assert fields["tokenizer.ggml.eos_token_id"] == tok.token_to_id(EOT)
    assert fields["tokenizer.ggml.padding_token_id"] == tok.token_to_id(PAD)
    assert fields["tokenizer.ggml.add_bos_token"] is False
    assert fields["tokenizer.chat_template"] == CHAT_TEMPLATE


def test_gpt2_split_rule_is_named_gpt_2(tmp_path):
    info = train_tokenizer(TEXTS, tmp_path / "tok", TokenizerParams(vocab_size=280, heldout_fraction=0,
                                                                    pretokenizer="gpt2"))
    folder = make_checkpoint(tmp_path, Path(info.path))
    fields, _ = read(export_gguf(folder, tmp_path / "out"))
    assert fields["tokenizer.ggml.pre"] == "gpt-2"


def test_chat_template_renders_chatlike_turns():
    template = jinja2.Environment().from_string(CHAT_TEMPLATE)
    messages = [{"role": "user", "content": "Hey Sam, free on Saturday?"},
                {"role": "assistant", "content": "Of course! 🙂"}, {"role": "user", "content": "<|endoftext|> ok"}]
    turns = [("User", m["content"]) if m["role"] == "user" else ("Assistant", m["content"]) for m in messages]
    assert template.render(messages=messages, add_generation_prompt=False) == format_turns(turns)
    assert (template.render(messages=messages, add_generation_prompt=True)
            == format_turns(turns) + "<|startoftext|>Assistant<|separator|>")


def test_sentencepiece_style_tokenizer_is_refused(tmp_path, tokenizer_json):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE(vocab={"<unk>": 0, "▁a": 1, BOS: 2, SEP: 3, EOT: 4, PAD: 5}, merges=[],
                               byte_fallback=True, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    folder = make_checkpoint(tmp_path, tokenizer_json)
    tok.save(str(folder / "tokenizer.json"))
    with pytest.raises(ValueError, match="SentencePiece-style BPE with byte fallback, not byte-level BPE"):
        export_gguf(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------------------
# refusals and the file's life


@pytest.mark.parametrize(("overrides", "feature"), [
    ({"position": "learned"}, "position='learned': GGUF's llama architecture uses RoPE"),
    ({"norm": "layernorm"}, "norm='layernorm'"),
    ({"norm_position": "post"}, "norm_position='post'"),
    ({"mlp": "gelu"}, "mlp='gelu'"),
    ({"mlp": "geglu"}, "mlp='geglu'"),
    ({"n_experts": 4}, "n_experts=4"),
    ({"attention": "mla", "n_kv_heads": None}, "attention='mla'"),
    ({"attention": "bigbird"}, "attention='bigbird'"),
    ({"attention": "sliding_window", "window_size": 16},
     "attention='sliding_window' with window_size=16 < block_size=64"),
    ({"bias": True}, "bias=True"),
    ({"qkv_bias": True, "rope_scaling": "llama3", "rope_scaling_factor": 8.0}, "rope_scaling='llama3'"),
])
def test_configs_llama_cpp_would_compute_differently_are_refused_by_name(overrides, feature):
    with pytest.raises(ValueError, match="^" + re.escape(feature)):
        gguf_architecture(ModelConfig(**{**LLAMA, **overrides}))


def test_a_window_covering_the_whole_block_is_full_attention():
    assert gguf_architecture(ModelConfig(**{**LLAMA, "attention": "sliding_window", "window_size": 64})) == "llama"
    assert gguf_architecture(ModelConfig(**{**LLAMA, "n_kv_heads": 1, "qkv_bias": True})) == "qwen2"


def test_refusal_names_the_checkpoint_and_writes_nothing(tmp_path, tokenizer_json):
    folder = make_checkpoint(tmp_path, tokenizer_json, position="alibi")
    with pytest.raises(ValueError, match=f"^{re.escape(str(folder))}: cannot export to GGUF: position='alibi'"):
        export_gguf(folder, tmp_path / "out")
    with pytest.raises(ValueError, match="quant='q4_k' is not one of 'f16', 'q8_0'"):
        export_gguf(folder, tmp_path / "out", quant="q4_k")
    assert not (tmp_path / "out").exists()


def test_an_interrupted_export_leaves_no_file_and_keeps_the_previous_one(tmp_path, tokenizer_json, monkeypatch):
    folder = make_checkpoint(tmp_path, tokenizer_json)
    previous = export_gguf(folder, tmp_path / "out").read_bytes()

    def killed(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf.GGUFWriter, "write_tensors_to_file", killed)
    with pytest.raises(KeyboardInterrupt):
        export_gguf(folder, tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["model-f16.gguf"]
    assert (tmp_path / "out" / "model-f16.gguf").read_bytes() == previous


# ------------------------------------------------------------------------------------------------------------
# llama.cpp runs the file (slow: needs llama-cpp-python, which scripts/setup_test.sh builds for `make test`)


def llama_cpp_module():
    try:
        import llama_cpp
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("llama-cpp-python is not installed; CI must run the GGUF end-to-end tests "
                        "(make test installs it through scripts/setup_test.sh)")
        pytest.skip("llama-cpp-python is not installed (bash scripts/setup_test.sh builds it, ~7 min on 2 cores)")
    return llama_cpp


SEQUENCE_SEED = 7


def decisive_model(cfg: ModelConfig, steps: int = 150) -> tuple[GPT, list[int]]:
    """A model trained to continue one fixed random sequence, so that its greedy choices win by a clear margin
    (a random model's near-ties could flip under F16 rounding and make the comparison meaningless)."""
    torch.manual_seed(SEQUENCE_SEED)
    sequence = torch.randint(4, 300, (cfg.block_size,))
    model = GPT(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    for _ in range(steps):
        loss = model(sequence[None, :-1], targets=sequence[None, 1:]).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05, f"the model did not learn its sequence (loss {loss.item():.3f})"
    return model.eval(), sequence.tolist()


def llama_cpp_greedy(llm, prompt: list[int], n: int) -> tuple[np.ndarray, list[int]]:
    """Feed token ids (no text, so llama.cpp's split rule plays no part), then pick the argmax n times."""
    llm.reset()
    llm.eval(prompt)
    prompt_logits = np.array(llm.scores[: len(prompt)])
    out = []
    for _ in range(n):
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(token)
        llm.eval([token])
    return prompt_logits, out


def f16_rounded(model: GPT) -> GPT:
    """Our model with the 2-D weights rounded to F16 as the file stores them (norms and biases stay F32)."""
    rounded = GPT(model.config).eval()
    rounded.load_state_dict(model.state_dict())
    with torch.no_grad():
        for p in rounded.parameters():
            if p.ndim == 2:
                p.copy_(p.half().float())
    return rounded


CASES = {
    "llama-gqa-untied": dict(),
    "llama-mqa-tied-llama3-rope": dict(n_kv_heads=1, tie_embeddings=True, rope_scaling="llama3",
                                       rope_scaling_factor=8.0, rope_original_max_positions=32),
    "llama-mha-linear-rope": dict(n_kv_heads=None, rope_scaling="linear", rope_scaling_factor=2.0),
    "qwen2-qkv-bias": dict(qkv_bias=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("quant", ["f16", "q8_0"])
@pytest.mark.parametrize("case", list(CASES))
def test_llama_cpp_gives_our_logits_and_greedy_continuation(tmp_path, tokenizer_json, one_torch_thread, case, quant):
    llama_cpp = llama_cpp_module()
    model, sequence = decisive_model(ModelConfig(**{**LLAMA, **CASES[case]}))
    path = export_gguf(make_checkpoint(tmp_path, tokenizer_json, model=model), tmp_path / "out", quant=quant)
    prompt, n_new = sequence[:8], 40

    ours = generate(model, [prompt], n_new, temperature=0)[0]
    with torch.no_grad():
        logits = model(torch.tensor([prompt + ours[:-1]])).logits[0]
    top2 = logits.topk(2, dim=-1).values
    assert (top2[len(prompt) - 1:, 0] - top2[len(prompt) - 1:, 1]).min() > 2.0  # every choice is clear-cut
    assert ours == sequence[8: 8 + n_new]

    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, n_batch=64, logits_all=True, n_threads=1, verbose=False)
    try:
        their_logits, theirs = llama_cpp_greedy(llm, prompt, n_new)
    finally:
        llm.close()
    assert theirs == ours
    with torch.no_grad():
        reference = (f16_rounded(model) if quant == "f16" else model)(torch.tensor([prompt])).logits[0].numpy()
    # llama.cpp also rounds activations before its F16 / Q8_0 matrix products; measured here at most 0.09 %
    # (F16) and 1.8 % (Q8_0) of the largest logit. Without the q/k row order, or with the RoPE scaling left out,
    # logits differ by 25-90 % and the continuations part within 6 tokens.
    tolerance = 0.005 if quant == "f16" else 0.05
    np.testing.assert_allclose(their_logits, reference, atol=tolerance * np.abs(reference).max(), rtol=0)


@pytest.mark.slow
def test_llama_cpp_reads_the_tokenizer_as_ours(tmp_path, tokenizer_json):
    """Text through llama.cpp's own tokenizer: on text where its split rule and ours agree, the same ids; the
    special tokens are single control tokens; detokenizing gives the bytes back."""
    llama_cpp = llama_cpp_module()
    torch.manual_seed(0)
    path = export_gguf(make_checkpoint(tmp_path, tokenizer_json), tmp_path / "out")
    tok = load_tokenizer(tokenizer_json)
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, vocab_only=True, verbose=False)
    try:
        for text in ["Hello there, how are you doing today?", "Tu viens ce soir ? On mange chez moi vers 8h.",
                     "I'm fine, thanks!\n\nSee you at 10 am 🙂"]:
            ids = tok.encode(text, add_special_tokens=False).ids
            assert llm.tokenize(text.encode(), add_bos=False, special=False) == ids, text
            assert llm.detokenize(ids) == text.encode()
        # digits inside a word are our chat rule's own extension: llama.cpp's GPT-4 rule splits them off, which
        # is another encoding of the same bytes
        text = "vers 20h, sa7a"
        theirs = llm.tokenize(text.encode(), add_bos=False, special=False)
        assert theirs != tok.encode(text, add_special_tokens=False).ids
        assert llm.detokenize(theirs) == text.encode()
        for special in (BOS, SEP, EOT, PAD):
            assert llm.tokenize(special.encode(), add_bos=False, special=True) == [tok.token_to_id(special)]
        assert llm.token_bos() == tok.token_to_id(BOS) and llm.token_eos() == tok.token_to_id(EOT)
    finally:
        llm.close()
