"""Export a chatlike checkpoint as one GGUF file, the format llama.cpp and ollama run, written with ggml's own
`gguf` package: weights (F16, or Q8_0 where a row splits into 32-value blocks), the hyper-parameters, the
byte-level BPE tokenizer and a chat template that reproduces chatlike's turn format.

Only configurations that compute exactly what llama.cpp computes are exported. Llama's recipe (RoPE, RMSNorm
before each sub-layer, SwiGLU, any number of key/value heads, no biases, every earlier token visible) becomes
GGUF's "llama" architecture; the same with q/k/v biases becomes "qwen2". Anything else is refused with the
feature that does not map.

Two layouts differ from ours. llama.cpp's "llama" rotates adjacent feature pairs (2i, 2i+1), while our model,
like Hugging Face's, pairs feature i with i + head_dim/2 ("rotate half"); the rows of q_proj and k_proj are
reordered within each head so that the same pairs meet (attention scores are unchanged, since queries and keys
get the same order). "qwen2" rotates halves as we do (llama.cpp's NEOX rope type), so it is written as is.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import torch
from safetensors.torch import load_file

from model.checkpoint import load_config
from model.config import ModelConfig
from model.transformer import scale_rope_frequencies
from storage.atomic import write_atomic
from storage.chat_format import BOS, EOT, JINJA_CHAT_TEMPLATE, PAD, SEP
from storage.checkpoints import WEIGHTS_NAME, checkpoint_tokenizer, is_adapter_dir, resolve_checkpoint

log = logging.getLogger(__name__)

Q8_BLOCK = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0][0]  # values per Q8_0 block (32)


@dataclass(frozen=True)
class Quantization:
    """How the 2-D weights of a file are stored; norms, biases and the RoPE factors always stay F32."""

    file_type: gguf.LlamaFileType
    matrix_type: gguf.GGMLQuantizationType


QUANTIZATIONS = {
    "f16": Quantization(gguf.LlamaFileType.MOSTLY_F16, gguf.GGMLQuantizationType.F16),
    "q8_0": Quantization(gguf.LlamaFileType.MOSTLY_Q8_0, gguf.GGMLQuantizationType.Q8_0),
}

# The chat format of storage.chat_format as a Jinja template (llama.cpp's --jinja, and any runtime that reads
# tokenizer.chat_template); it knows the roles user and assistant only.
CHAT_TEMPLATE = JINJA_CHAT_TEMPLATE


# ------------------------------------------------------------------------------------------------------------
# which GGUF architecture a config is


def gguf_architecture(cfg: ModelConfig) -> str:
    """"llama" or "qwen2" for a config llama.cpp computes exactly; a ValueError naming the feature otherwise."""
    refusals = [
        (cfg.position != "rope", f"position={cfg.position!r}: GGUF's llama architecture uses RoPE"),
        (cfg.attention in ("linear", "bigbird", "mla"),
         f"attention={cfg.attention!r}: llama.cpp's llama and qwen2 use plain softmax attention over every "
         f"earlier token"),
        (cfg.attention == "sliding_window" and cfg.window_size < cfg.block_size,
         f"attention='sliding_window' with window_size={cfg.window_size} < block_size={cfg.block_size}: "
         f"llama.cpp's llama and qwen2 attend to every earlier token"),
        (cfg.norm != "rmsnorm", f"norm={cfg.norm!r}: GGUF's llama architecture uses RMSNorm"),
        (cfg.norm_position != "pre",
         f"norm_position={cfg.norm_position!r}: GGUF's llama architecture normalises before each sub-layer"),
        (cfg.mlp != "swiglu", f"mlp={cfg.mlp!r}: GGUF's llama architecture uses a SwiGLU MLP"),
        (cfg.n_experts > 0, f"n_experts={cfg.n_experts}: mixture-of-experts layers are not exported to GGUF"),
        (cfg.bias, "bias=True: Llama and Qwen2 have no biases on o_proj, the MLP or the norms "
                   "(qkv_bias=True with bias=False maps onto qwen2)"),
    ]
    for refused, reason in refusals:
        if refused:
            raise ValueError(reason)
    if not cfg.has_qkv_bias:
        return "llama"
    if cfg.rope_scaling == "llama3":
        raise ValueError("rope_scaling='llama3' with qkv_bias=True: llama.cpp's qwen2 architecture takes no "
                         "per-frequency RoPE factors")
    return "qwen2"


# ------------------------------------------------------------------------------------------------------------
# tensors


def interleave_rope_rows(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """Reorder the output rows (and bias entries) of a query or key projection from the rotate-half layout to
    adjacent pairs: within each head, row i goes to 2i and row i + head_dim/2 to 2i + 1."""
    head_dim = weight.shape[0] // n_heads
    by_head = weight.reshape(n_heads, 2, head_dim // 2, *weight.shape[1:])  # (H, half, pair, ...)
    return by_head.swapaxes(1, 2).reshape(weight.shape)


def rope_frequency_factors(cfg: ModelConfig) -> np.ndarray:
    """Llama 3.1's RoPE scaling as llama.cpp takes it: one divisor per frequency (rope_freqs.weight), computed
    from our own scaling rule so the two cannot drift apart."""
    dim = cfg.rotary_dim
    inv_freq = cfg.rope_theta ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return (inv_freq / scale_rope_frequencies(inv_freq, cfg)).to(torch.float32).numpy()


def gguf_tensors(state: dict[str, torch.Tensor], cfg: ModelConfig, arch: str) -> Iterator[tuple[str, np.ndarray]]:
    """(GGUF name, float32 array) for every tensor of the file, in llama.cpp's layout. Every tensor of the
    checkpoint must be used exactly once."""
    names = gguf.TENSOR_NAMES
    T = gguf.MODEL_TENSOR
    unused = dict(state)

    def take(key: str) -> np.ndarray:
        return unused.pop(key).float().numpy()

    yield names[T.TOKEN_EMBD] + ".weight", take("embed_tokens.weight")
    if cfg.rope_scaling == "llama3":
        yield names[T.ROPE_FREQS] + ".weight", rope_frequency_factors(cfg)
    per_layer = [(T.ATTN_NORM, "attn_norm.weight"), (T.ATTN_Q, "attn.q_proj.weight"),
                 (T.ATTN_K, "attn.k_proj.weight"), (T.ATTN_V, "attn.v_proj.weight"),
                 (T.ATTN_OUT, "attn.o_proj.weight"), (T.FFN_NORM, "mlp_norm.weight"),
                 (T.FFN_GATE, "mlp.gate_proj.weight"), (T.FFN_UP, "mlp.up_proj.weight"),
                 (T.FFN_DOWN, "mlp.down_proj.weight")]
    if cfg.has_qkv_bias:
        per_layer += [(T.ATTN_Q, "attn.q_proj.bias"), (T.ATTN_K, "attn.k_proj.bias"), (T.ATTN_V, "attn.v_proj.bias")]
    heads = {T.ATTN_Q: cfg.n_heads, T.ATTN_K: cfg.kv_heads}
    for i in range(cfg.n_layers):
        for kind, ours in per_layer:
            array = take(f"layers.{i}.{ours}")
            if arch == "llama" and kind in heads:
                array = interleave_rope_rows(array, heads[kind])
            yield names[kind].format(bid=i) + "." + ours.rsplit(".", 1)[1], array
    yield names[T.OUTPUT_NORM] + ".weight", take("norm.weight")
    if not cfg.tie_embeddings:  # tied: llama.cpp reads the output head from token_embd
        yield names[T.OUTPUT] + ".weight", take("lm_head.weight")
    if unused:
        raise ValueError(f"checkpoint tensors with no place in GGUF's {arch} layout: {sorted(unused)}")


def encode_tensor(name: str, array: np.ndarray, quant: Quantization) -> tuple[np.ndarray, gguf.GGMLQuantizationType]:
    """The stored form of one tensor: F32 for 1-D tensors (norms, biases, RoPE factors), as llama.cpp expects;
    2-D weights in the file's type, except that Q8_0 needs rows made of whole 32-value blocks (others: F16)."""
    if array.ndim == 1 or name.endswith("_norm.weight"):
        return array.astype(np.float32), gguf.GGMLQuantizationType.F32
    qtype = quant.matrix_type
    if qtype == gguf.GGMLQuantizationType.Q8_0 and array.shape[-1] % Q8_BLOCK:
        qtype = gguf.GGMLQuantizationType.F16
    return gguf.quants.quantize(array, qtype), qtype


# ------------------------------------------------------------------------------------------------------------
# the tokenizer


@dataclass(frozen=True)
class GgufVocab:
    """A byte-level BPE tokenizer as GGUF's "gpt2" tokenizer model stores it."""

    tokens: list[str]
    token_types: list[int]
    merges: list[str]
    pre: str
    bos: int
    eos: int
    pad: int


def _parts(pre_tokenizer: dict | None) -> list[dict]:
    """A tokenizer.json pre-tokenizer and, for a Sequence, its members."""
    if not pre_tokenizer:
        return []
    members = pre_tokenizer.get("pretokenizers") or []
    return [pre_tokenizer, *(m for member in members for m in _parts(member))]


def llama_cpp_pre_tokenizer(pre_tokenizer: dict | None) -> str:
    """The name of the llama.cpp split rule closest to a tokenizer.json's pre-tokenizer.

    llama.cpp cannot read a split regex from the file: it knows a fixed list of rules by name. GPT-2's
    ByteLevel regex is "gpt-2". Our `chat` rule is the GPT-4 (cl100k) regex with three extensions (combining
    marks stay with their letter, up to two digits inside a word, the curly apostrophe in contractions); the
    nearest rule llama.cpp knows is the GPT-4 one, which it calls "llama-bpe" (Llama 3 uses cl100k's regex).
    Text that relies on an extension (Arabizi such as "sa7a", vowelled Arabic) is split more finely there: a
    valid encoding, but not the one the model was trained on. Single-digit splitting (Qwen2's regex) is "qwen2".
    """
    parts = _parts(pre_tokenizer)
    if any(p.get("type") == "ByteLevel" and p.get("use_regex", True) for p in parts):
        return "gpt-2"
    patterns = [p["pattern"].get("Regex", "") for p in parts if p.get("type") == "Split"
                and isinstance(p.get("pattern"), dict)]
    if any(r"\p{N}{1,3}" in pattern for pattern in patterns):
        return "llama-bpe"
    if any(r"\p{N}|" in pattern for pattern in patterns):
        return "qwen2"
    log.warning("gguf: no llama.cpp split rule matches this pre-tokenizer (%s); writing 'llama-bpe', so "
                "llama.cpp may split text differently from the model's tokenizer", patterns or pre_tokenizer)
    return "llama-bpe"


def read_vocab(tokenizer_path: Path, vocab_size: int) -> GgufVocab:
    """The tokens (padded with unused ones up to the model's vocab_size), their types (the special tokens as
    CONTROL), the merges, the split rule and the chat format's special ids of a byte-level BPE tokenizer.json."""
    spec = json.loads(tokenizer_path.read_text(encoding="utf-8"))
    model = spec.get("model") or {}
    byte_level = any(p.get("type") == "ByteLevel" for p in _parts(spec.get("pre_tokenizer")))
    if model.get("type") != "BPE" or model.get("byte_fallback") or not byte_level:
        kind = model.get("type", "unknown")
        if model.get("byte_fallback") or any(p.get("type") == "Metaspace" for p in _parts(spec.get("pre_tokenizer"))):
            kind = "SentencePiece-style BPE with byte fallback"
        raise ValueError(f"{tokenizer_path}: the tokenizer is {kind}, not byte-level BPE; GGUF export writes "
                         f"byte-level BPE vocabularies only (llama.cpp's 'gpt2' tokenizer model)")

    ids = dict(model["vocab"])
    added = {t["content"]: t for t in spec.get("added_tokens", [])}
    ids.update({content: t["id"] for content, t in added.items()})
    size = max(ids.values()) + 1
    if size > vocab_size:
        raise ValueError(f"{tokenizer_path}: the tokenizer has {size} ids but the model's vocab_size is "
                         f"{vocab_size}")
    # ids the tokenizer never produces (the model's vocab rounded up, e.g. to 50304) get placeholder tokens
    tokens = [f"[PAD{i}]" for i in range(vocab_size)]
    types = [int(gguf.TokenType.UNUSED)] * vocab_size
    for token, i in ids.items():
        tokens[i] = token
        special = added.get(token, {}).get("special")
        types[i] = int(gguf.TokenType.CONTROL if special else
                       gguf.TokenType.USER_DEFINED if token in added else gguf.TokenType.NORMAL)
    missing = [s for s in (BOS, SEP, EOT, PAD) if s not in ids]
    if missing:
        raise ValueError(f"{tokenizer_path}: the tokenizer lacks the special token(s) {', '.join(missing)} "
                         f"the chat format needs")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return GgufVocab(tokens, types, merges, llama_cpp_pre_tokenizer(spec.get("pre_tokenizer")),
                     bos=ids[BOS], eos=ids[EOT], pad=ids[PAD])


# ------------------------------------------------------------------------------------------------------------
# the file


def _add_hyper_parameters(writer: gguf.GGUFWriter, cfg: ModelConfig, quant: Quantization, name: str) -> None:
    writer.add_name(name)
    writer.add_file_type(quant.file_type)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_context_length(cfg.block_size)
    writer.add_embedding_length(cfg.d_model)
    writer.add_block_count(cfg.n_layers)
    writer.add_feed_forward_length(cfg.ffn_hidden)
    writer.add_head_count(cfg.n_heads)
    writer.add_head_count_kv(cfg.kv_heads)
    writer.add_rope_dimension_count(cfg.rotary_dim)
    writer.add_rope_freq_base(cfg.rope_theta)
    writer.add_layer_norm_rms_eps(cfg.norm_eps)
    if cfg.rope_scaling == "linear":
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(cfg.rope_scaling_factor)
    # "llama3" scaling travels as the rope_freqs.weight tensor instead


def _add_tokenizer(writer: gguf.GGUFWriter, vocab: GgufVocab) -> None:
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(vocab.pre)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.token_types)
    writer.add_token_merges(vocab.merges)
    writer.add_bos_token_id(vocab.bos)
    writer.add_eos_token_id(vocab.eos)
    writer.add_pad_token_id(vocab.pad)
    # the chat template writes <|startoftext|> before every turn itself; a runtime adding one would double it
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)


def gguf_file_name(quant: str) -> str:
    return f"model-{quant}.gguf"


def _default_name(checkpoint: Path) -> str:
    if checkpoint.name.startswith("step-"):
        return f"chatlike {checkpoint.parent.name} {checkpoint.name}"
    return f"chatlike {checkpoint.name}"


def export_gguf(checkpoint_dir: str | os.PathLike, out_dir: str | os.PathLike, quant: str = "f16", *,
                name: str | None = None) -> Path:
    """Write `<out_dir>/model-<quant>.gguf` for a checkpoint folder (model.safetensors + config.json, its
    tokenizer inside or recorded in state.json) or a run folder (its latest checkpoint); returns the file.
    quant: "f16" or "q8_0". name: general.name (default: from the checkpoint's folder). The file appears
    whole or not at all."""
    if quant not in QUANTIZATIONS:
        raise ValueError(f"quant={quant!r} is not one of {', '.join(map(repr, QUANTIZATIONS))}")
    quantization = QUANTIZATIONS[quant]
    checkpoint = resolve_checkpoint(checkpoint_dir)
    if is_adapter_dir(checkpoint) and not (checkpoint / WEIGHTS_NAME).is_file():
        raise ValueError(f"{checkpoint}: a LoRA adapter, not a model; merge it into its base model first "
                         f"(chatlike model export --adapter)")
    cfg = load_config(checkpoint)
    try:
        arch = gguf_architecture(cfg)
    except ValueError as exc:
        raise ValueError(f"{checkpoint}: cannot export to GGUF: {exc}") from None
    vocab = read_vocab(checkpoint_tokenizer(checkpoint), cfg.vocab_size)
    state = load_file(str(checkpoint / WEIGHTS_NAME))

    writer = gguf.GGUFWriter(None, arch)
    _add_hyper_parameters(writer, cfg, quantization, name or _default_name(checkpoint))
    _add_tokenizer(writer, vocab)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    n_params = 0
    for tensor_name, array in gguf_tensors(state, cfg, arch):
        data, qtype = encode_tensor(tensor_name, array, quantization)
        writer.add_tensor(tensor_name, data, raw_dtype=qtype)
        n_params += math.prod(array.shape)

    def write(tmp: Path) -> None:
        try:
            writer.write_header_to_file(path=tmp)
            writer.write_kv_data_to_file()
            writer.write_tensors_to_file()
        finally:
            writer.close()

    path = write_atomic(Path(out_dir) / gguf_file_name(quant), write)  # model-<quant>.gguf.partial, renamed
    log.info("gguf: wrote %s (%s, %s, %.2f M parameters, %.1f MB)", path, arch, quant, n_params / 1e6,
             path.stat().st_size / 1e6)
    return path


__all__ = ["CHAT_TEMPLATE", "QUANTIZATIONS", "GgufVocab", "encode_tensor", "export_gguf", "gguf_architecture",
           "gguf_file_name", "gguf_tensors", "interleave_rope_rows", "llama_cpp_pre_tokenizer", "read_vocab",
           "rope_frequency_factors"]
