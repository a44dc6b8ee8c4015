"""Hugging Face checkpoints in and out: `import_hf` turns a Llama-family model folder (Llama 2/3 incl. Llama 3.1's
RoPE scaling, SmolLM2, TinyLlama, Qwen2, Mistral) into a chatlike checkpoint to fine-tune, and `export_hf` writes a
chatlike checkpoint as a folder that `transformers.AutoModelForCausalLM.from_pretrained` loads, with a tokenizer
whose chat template renders exactly the SFT format.

The mapping is exact, not approximate: a Llama layer is a chatlike pre-norm block with RoPE ("rotate half"
layout, as Hugging Face stores it), RMSNorm and a SwiGLU MLP, so the weights only change names
(`model.layers.3.self_attn.q_proj.weight` ↔ `layers.3.attn.q_proj.weight`) and the two models compute the same
logits. Whatever does not map is refused with the file and the field that stands in the way, never approximated.

An imported checkpoint carries its own `tokenizer.json`, the source's plus the chat format's special tokens it
lacks (`storage.chat_format.SPECIAL_TOKENS`); the embedding (and an untied output head) grows to cover them, new
rows set to the mean of the source rows. Weights are read tensor by tensor from the safetensors shards into a
model allocated once, so the source is never held in memory beside it. Both directions write a temporary sibling
folder and rename it: the output is whole or absent.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from tokenizers import AddedToken, Tokenizer

from model.checkpoint import load_config, save_model
from model.config import ModelConfig
from model.transformer import GPT
from storage.chat_format import (
    ASSISTANT,
    BOS,
    EOT,
    JINJA_CHAT_TEMPLATE,
    PAD,
    SEP,
    SPECIAL_TOKENS,
    TOKENIZER_FILE,
    USER,
    ChatTokens,
    assistant_prompt,
    load_tokenizer,
)
from storage.checkpoints import (
    CONFIG_NAME,
    STATE_FORMAT,
    TMP_PREFIX,
    WEIGHTS_NAME,
    checkpoint_tokenizer,
    replace_folder,
    resolve_checkpoint,
    write_state,
)
from storage.fingerprint import hash_file

log = logging.getLogger(__name__)

HF_ARCHITECTURES = ("LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM")
_MODEL_TYPES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM"}
HF_INDEX = "model.safetensors.index.json"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}

# What transformers assumes when config.json leaves a field out (the same for the three architectures, but for
# Mistral's window).
_HF_DEFAULTS: dict[str, Any] = {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False,
                                "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
                                "initializer_range": 0.02}
_MISTRAL_DEFAULT_WINDOW = 4096

# The chat format of storage/chat_format.py as a Jinja template: each message is <|startoftext|> + role +
# <|separator|> + content + <|endoftext|>; the generation prompt is an open Assistant header.
CHAT_TEMPLATE = JINJA_CHAT_TEMPLATE  # the chat format as transformers renders it


# ------------------------------------------------------------------------------------------------------------
# weight names: chatlike's module names are Llama's, under other parents


_LAYER_PARTS = {"attn_norm": "input_layernorm", "attn": "self_attn", "mlp_norm": "post_attention_layernorm",
                "mlp": "mlp"}


def hf_weight_name(name: str) -> str:
    """The Llama / Qwen2 / Mistral name of a chatlike tensor: `layers.3.attn.q_proj.weight` →
    `model.layers.3.self_attn.q_proj.weight`, `norm.weight` → `model.norm.weight`; `lm_head.weight` stays."""
    if name.startswith("lm_head."):
        return name
    parts = name.split(".")
    if parts[0] == "layers":
        parts[2] = _LAYER_PARTS[parts[2]]
    return "model." + ".".join(parts)


def _skippable(hf_name: str, tied: bool) -> bool:
    """Source tensors with no chatlike counterpart that lose nothing: RoPE tables older checkpoints stored
    (recomputed from the config) and the output head of a tied model (the embedding itself)."""
    return hf_name.endswith("rotary_emb.inv_freq") or (tied and hf_name == "lm_head.weight")


# ------------------------------------------------------------------------------------------------------------
# config.json -> ModelConfig


@dataclass(frozen=True)
class HfSource:
    """A Hugging Face model folder as chatlike reads it."""

    folder: Path
    architecture: str
    config: ModelConfig  # with the source's vocabulary (before the chat tokens are added)
    weight_files: list[Path]
    dtype: str | None  # what config.json says the weights are stored in


def _read_json(path: Path) -> dict:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing (expected a Hugging Face model folder)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc


def _architecture(raw: dict, path: Path) -> str:
    names = raw.get("architectures") or []
    name = names[0] if names else _MODEL_TYPES.get(raw.get("model_type", ""))
    if name not in HF_ARCHITECTURES:
        shown = f"architectures={names!r}" if names else f"model_type={raw.get('model_type')!r}"
        raise ValueError(f"{path}: {shown} cannot be imported; chatlike maps {', '.join(HF_ARCHITECTURES)}")
    return name


def _rope_fields(raw: dict, path: Path) -> dict[str, Any]:
    """RoPE fields of ModelConfig from `rope_parameters` (transformers 5) or `rope_theta` + `rope_scaling` (4.x)."""
    key = "rope_parameters" if raw.get("rope_parameters") else "rope_scaling"
    params = raw.get(key) or {}
    theta = params.get("rope_theta", raw.get("rope_theta", _HF_DEFAULTS["rope_theta"]))
    partial = params.get("partial_rotary_factor", raw.get("partial_rotary_factor", 1.0))
    if partial != 1.0:
        raise ValueError(f"{path}: partial_rotary_factor={partial} cannot be mapped: chatlike rotates every "
                         f"feature of a head")
    kind = params.get("rope_type", params.get("type", "default"))

    def need(name: str) -> Any:
        if name not in params:
            raise ValueError(f"{path}: {key} of rope_type {kind!r} lacks {name!r}")
        return params[name]

    fields: dict[str, Any] = {"rope_theta": float(theta)}
    if kind == "default":
        return fields
    if kind == "linear":
        return {**fields, "rope_scaling": "linear", "rope_scaling_factor": float(need("factor"))}
    if kind == "llama3":
        return {**fields, "rope_scaling": "llama3", "rope_scaling_factor": float(need("factor")),
                "rope_low_freq_factor": float(need("low_freq_factor")),
                "rope_high_freq_factor": float(need("high_freq_factor")),
                "rope_original_max_positions": int(need("original_max_position_embeddings"))}
    raise ValueError(f"{path}: {key} rope_type={kind!r} cannot be mapped; chatlike's RoPE scaling knows 'default', "
                     f"'linear' and 'llama3'")


def _bias_fields(raw: dict, architecture: str, path: Path) -> dict[str, Any]:
    if architecture == "Qwen2ForCausalLM":  # q/k/v carry biases, o_proj and the MLP do not
        return {"bias": False, "qkv_bias": True}
    if architecture == "MistralForCausalLM":
        return {"bias": False}
    attention = raw.get("attention_bias", _HF_DEFAULTS["attention_bias"])
    mlp = raw.get("mlp_bias", _HF_DEFAULTS["mlp_bias"])
    if attention != mlp:
        raise ValueError(f"{path}: attention_bias={attention} with mlp_bias={mlp} cannot be mapped: chatlike's "
                         f"`bias` puts biases on attention and MLP alike")
    return {"bias": bool(attention)}


def _attention_fields(raw: dict, architecture: str, path: Path) -> dict[str, Any]:
    if architecture == "Qwen2ForCausalLM":
        sliding = [t for t in raw.get("layer_types") or [] if t != "full_attention"]
        if raw.get("use_sliding_window") or sliding:
            shown = f"layer_types {sliding[0]!r}" if sliding else f"use_sliding_window={raw['use_sliding_window']}"
            raise ValueError(f"{path}: {shown} cannot be mapped: Qwen2 slides its window from layer max_window_layers "
                             f"on, chatlike in all layers or none")
    if architecture != "MistralForCausalLM":
        return {"attention": "full"}
    window = raw.get("sliding_window", _MISTRAL_DEFAULT_WINDOW)
    if window is None or window >= raw["max_position_embeddings"]:
        return {"attention": "full"}  # a window as long as the context hides nothing
    return {"attention": "sliding_window", "window_size": int(window)}


def hf_model_config(hf_dir: str | os.PathLike) -> tuple[str, ModelConfig, str | None]:
    """The architecture, the equivalent ModelConfig (source vocabulary) and the stored dtype of a Hugging Face
    model folder's config.json. A field that cannot be mapped is a one-line ValueError naming it."""
    path = Path(hf_dir) / CONFIG_NAME
    raw = _read_json(path)
    architecture = _architecture(raw, path)
    missing = [k for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                           "intermediate_size", "max_position_embeddings") if raw.get(k) is None]
    if missing:
        raise ValueError(f"{path}: lacks {', '.join(missing)}")
    d_model, n_heads = raw["hidden_size"], raw["num_attention_heads"]
    head_dim = raw.get("head_dim")
    if head_dim is not None and head_dim * n_heads != d_model:
        raise ValueError(f"{path}: head_dim={head_dim} cannot be mapped: chatlike's heads have hidden_size / "
                         f"num_attention_heads = {d_model}/{n_heads} features")
    act = raw.get("hidden_act", _HF_DEFAULTS["hidden_act"])
    if act not in ("silu", "swish"):
        raise ValueError(f"{path}: hidden_act={act!r} cannot be mapped: chatlike's SwiGLU gates with silu")
    fields = dict(
        vocab_size=raw["vocab_size"], block_size=raw["max_position_embeddings"], n_layers=raw["num_hidden_layers"],
        n_heads=n_heads, d_model=d_model, n_kv_heads=raw.get("num_key_value_heads") or n_heads,
        position="rope", norm="rmsnorm", norm_position="pre", mlp="swiglu", d_ff=raw["intermediate_size"],
        norm_eps=float(raw.get("rms_norm_eps", _HF_DEFAULTS["rms_norm_eps"])), dropout=0.0,
        tie_embeddings=bool(raw.get("tie_word_embeddings", _HF_DEFAULTS["tie_word_embeddings"])),
        init_std=float(raw.get("initializer_range", _HF_DEFAULTS["initializer_range"])),
        **_rope_fields(raw, path), **_bias_fields(raw, architecture, path),
        **_attention_fields(raw, architecture, path),
    )
    try:
        config = ModelConfig(**fields)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    return architecture, config, raw.get("dtype") or raw.get("torch_dtype")


def _weight_files(folder: Path) -> list[Path]:
    index = folder / HF_INDEX
    if index.is_file():
        shards = sorted(set(_read_json(index).get("weight_map", {}).values()))
        if not shards:
            raise ValueError(f"{index}: its weight_map names no file")
        return [folder / name for name in shards]
    if (folder / WEIGHTS_NAME).is_file():
        return [folder / WEIGHTS_NAME]
    raise FileNotFoundError(f"{folder}: no {WEIGHTS_NAME} nor {HF_INDEX} (only safetensors weights are imported; "
                            f"pickled pytorch_model.bin files are not)")


def read_hf_source(hf_dir: str | os.PathLike) -> HfSource:
    folder = Path(hf_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such Hugging Face model folder")
    architecture, config, dtype = hf_model_config(folder)
    return HfSource(folder, architecture, config, _weight_files(folder), dtype)


# ------------------------------------------------------------------------------------------------------------
# import


def add_chat_tokens(tokenizer: Tokenizer) -> dict[str, int]:
    """Register the chat format's special tokens the tokenizer lacks (ids after its last one); returns the added
    {token: id}. Tokens it has already (Qwen2's `<|endoftext|>`) keep their ids."""
    missing = [s for s in SPECIAL_TOKENS if tokenizer.token_to_id(s) is None]
    tokenizer.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in missing])
    return {s: tokenizer.token_to_id(s) for s in missing}


def _id_count(tokenizer: Tokenizer) -> int:
    """One more than the largest id (ids may leave gaps, so the count can be smaller)."""
    return max(tokenizer.get_vocab(with_added_tokens=True).values()) + 1


@torch.no_grad()
def _copy_vocab_rows(target: torch.Tensor, source: torch.Tensor, fresh_rows: list[int]) -> None:
    """Source rows into the (possibly taller) target, then every fresh row (an added token's, or beyond the
    source) set to the mean of the source rows: the new tokens start as an average token."""
    target[: source.shape[0]].copy_(source)
    if fresh_rows:
        target[fresh_rows] = source.mean(dim=0, dtype=torch.float32).to(target.dtype)


@torch.no_grad()
def _stream_weights(model: GPT, source: HfSource, fresh_rows: list[int]) -> None:
    """Fill the model tensor by tensor from the safetensors shards (each read, copied, dropped)."""
    tied = model.config.tie_embeddings
    targets = {hf_weight_name(name): t for name, t in model.state_dict().items()}
    if tied:
        del targets["lm_head.weight"]  # the embedding itself
    vocab_tensors = {"model.embed_tokens.weight", "lm_head.weight"}
    filled: set[str] = set()
    for file in source.weight_files:
        try:
            with safe_open(str(file), framework="pt") as shard:
                for name in shard.keys():
                    if name not in targets:
                        if _skippable(name, tied):
                            continue
                        raise ValueError(f"{file}: tensor {name!r} has no place in a {source.architecture} as "
                                         f"{source.folder / CONFIG_NAME} describes it")
                    tensor, target = shard.get_tensor(name), targets[name]
                    grows = name in vocab_tensors and tensor.shape[0] <= target.shape[0]  # the chat tokens' rows
                    if tensor.shape[1:] != target.shape[1:] or (tensor.shape[0] != target.shape[0] and not grows):
                        raise ValueError(f"{file}: {name} has shape {tuple(tensor.shape)}, but "
                                         f"{source.folder / CONFIG_NAME} implies {tuple(target.shape)}")
                    if name in vocab_tensors:
                        _copy_vocab_rows(target, tensor, fresh_rows)
                    else:
                        target.copy_(tensor)
                    filled.add(name)
        except SafetensorError as exc:
            raise ValueError(f"{file}: cannot read the safetensors file ({exc})") from exc
    missing = sorted(set(targets) - filled)
    if missing:
        raise ValueError(f"{source.folder}: the weights lack {len(missing)} tensor(s) the config implies, e.g. "
                         f"{', '.join(missing[:3])}")


def _empty_model(config: ModelConfig, dtype: torch.dtype) -> GPT:
    """A GPT whose tensors are allocated but not initialised (every one is overwritten from the source)."""
    with torch.device("meta"):
        model = GPT(config)
    model = model.to(dtype).to_empty(device="cpu")
    if any(True for _ in model.buffers()):  # pragma: no cover - the Llama-family configs have none
        raise RuntimeError("this model variant has buffers that an import would leave uninitialised")
    if config.tie_embeddings:  # moving off the meta device gives each module its own tensor: tie them again
        model.lm_head.weight = model.embed_tokens.weight
    return model.eval()


@contextmanager
def _temporary_sibling(final: Path) -> Iterator[Path]:
    """A fresh folder beside `final` to write into; removed if the writing fails (the caller renames it)."""
    tmp = final.with_name(f"{TMP_PREFIX}{final.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def import_hf(hf_dir: str | os.PathLike, out_dir: str | os.PathLike, dtype: str = "float32") -> Path:
    """Convert a Hugging Face Llama / Qwen2 / Mistral folder (config.json, model.safetensors or shards with their
    index, tokenizer.json) into a chatlike checkpoint: model.safetensors + config.json, tokenizer.json with the
    chat tokens, and state.json ("mode": "imported", where it came from). Weights are stored as `dtype`
    ("float32", the default, or "bfloat16"). Returns the checkpoint folder."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not one of {', '.join(map(repr, DTYPES))}")
    source = read_hf_source(hf_dir)
    tok_path = source.folder / TOKENIZER_FILE
    if not tok_path.is_file():
        raise FileNotFoundError(f"{tok_path}: missing (a slow tokenizer alone is not read; save the fast one with "
                                f"transformers' AutoTokenizer.from_pretrained(folder).save_pretrained(folder))")
    try:
        tokenizer = Tokenizer.from_file(str(tok_path))
    except Exception as exc:  # the library raises its own exception types for malformed JSON
        raise ValueError(f"{tok_path}: not a Hugging Face tokenizer.json ({exc})") from exc
    added = add_chat_tokens(tokenizer)
    source_vocab = source.config.vocab_size
    config = source.config.replace(vocab_size=max(source_vocab, _id_count(tokenizer)))
    fresh_rows = sorted(set(added.values()) | set(range(source_vocab, config.vocab_size)))

    out_dir = Path(out_dir)
    final_tokenizer = out_dir.resolve() / TOKENIZER_FILE
    with _temporary_sibling(out_dir) as tmp:
        model = _empty_model(config, DTYPES[dtype])
        _stream_weights(model, source, fresh_rows)
        save_model(model, tmp)
        del model
        tokenizer.save(str(tmp / TOKENIZER_FILE))
        write_state(tmp, {
            "format": STATE_FORMAT,
            "mode": "imported",
            "step": 0,
            "tokens_seen": 0,
            "config": config.to_dict(),
            "tokenizer": {"path": str(final_tokenizer), "sha256": hash_file(tmp / TOKENIZER_FILE),
                          "vocab_size": tokenizer.get_vocab_size()},
            "imported_from": {
                "folder": str(source.folder.resolve()),
                "architecture": source.architecture,
                "dtype": source.dtype,
                "vocab_size": source_vocab,
                "weights_sha256": {f.name: hash_file(f) for f in source.weight_files},
                "tokenizer_sha256": hash_file(tok_path),
                "added_tokens": added,
            },
        })
        log.info("imported %s (%s) into %s; added tokens %s", source.folder, source.architecture, out_dir, added)
        return replace_folder(tmp, out_dir)


# ------------------------------------------------------------------------------------------------------------
# export


def hf_architecture(config: ModelConfig) -> str:
    """The transformers class that computes what this config computes, or a one-line ValueError naming the
    feature that has no equivalent: Llama (full attention, with biases everywhere or nowhere), Qwen2 (q/k/v
    biases only) or Mistral (a sliding window shorter than the context, no biases)."""
    c = config
    refusals = [
        (c.position != "rope", f"position={c.position!r} has no Llama equivalent (Llama uses RoPE)"),
        (c.norm != "rmsnorm", f"norm={c.norm!r} has no Llama equivalent (Llama uses RMSNorm)"),
        (c.norm_position != "pre", f"norm_position={c.norm_position!r} has no Llama equivalent (Llama normalises "
                                   f"before each sublayer)"),
        (c.mlp != "swiglu", f"mlp={c.mlp!r} has no Llama equivalent (Llama uses a SwiGLU MLP)"),
        (c.n_experts > 0, f"n_experts={c.n_experts} (a mixture of experts) has no Llama equivalent (Llama's MLP is "
                          f"dense)"),
        (c.attention not in ("full", "sliding_window"),
         f"attention={c.attention!r} has no Llama equivalent (Llama uses full causal softmax attention, Mistral a "
         f"sliding window)"),
        (c.n_sink_tokens > 0, f"n_sink_tokens={c.n_sink_tokens} (attention sinks) has no Mistral equivalent"),
        (c.bias and not c.has_qkv_bias, "bias=True with qkv_bias=False (biases on o_proj and the MLP but not on "
                                        "q/k/v) has no Llama, Qwen2 or Mistral equivalent"),
    ]
    for refused, reason in refusals:
        if refused:
            raise ValueError(reason)
    sliding = c.attention == "sliding_window" and c.window_size < c.block_size
    if sliding:
        if c.has_qkv_bias:
            raise ValueError(f"a sliding window (window_size={c.window_size}) with biases has no equivalent "
                             f"(Mistral has no biases; Qwen2 slides its window in some layers only)")
        return "MistralForCausalLM"
    if c.has_qkv_bias and not c.bias:
        return "Qwen2ForCausalLM"
    return "LlamaForCausalLM"


def _rope_parameters(config: ModelConfig) -> dict[str, Any]:
    params: dict[str, Any] = {"rope_type": "default", "rope_theta": config.rope_theta}
    if config.rope_scaling == "linear":
        params.update(rope_type="linear", factor=config.rope_scaling_factor)
    elif config.rope_scaling == "llama3":
        params.update(rope_type="llama3", factor=config.rope_scaling_factor,
                      low_freq_factor=config.rope_low_freq_factor, high_freq_factor=config.rope_high_freq_factor,
                      original_max_position_embeddings=config.rope_original_max_positions)
    return params


def hf_config(config: ModelConfig, architecture: str, tokens: ChatTokens, dtype: torch.dtype) -> Any:
    """The transformers config object of `architecture` equal to `config`, with the chat format's special ids."""
    import transformers  # seconds to import: only exports pay for it

    common = dict(
        architectures=[architecture], dtype=str(dtype).removeprefix("torch."), vocab_size=config.vocab_size,
        hidden_size=config.d_model, intermediate_size=config.ffn_hidden, num_hidden_layers=config.n_layers,
        num_attention_heads=config.n_heads, num_key_value_heads=config.kv_heads, hidden_act="silu",
        max_position_embeddings=config.block_size, rms_norm_eps=config.norm_eps,
        tie_word_embeddings=config.tie_embeddings, rope_parameters=_rope_parameters(config),
        initializer_range=config.init_std, bos_token_id=tokens.bos, eos_token_id=tokens.eot,
        pad_token_id=tokens.pad,
    )
    if architecture == "Qwen2ForCausalLM":
        return transformers.Qwen2Config(**common, use_sliding_window=False, sliding_window=None)
    if architecture == "MistralForCausalLM":
        return transformers.MistralConfig(**common, head_dim=config.head_dim, sliding_window=config.window_size)
    return transformers.LlamaConfig(**common, head_dim=config.head_dim, attention_bias=config.bias,
                                    mlp_bias=config.bias)


def _hf_tensors(checkpoint: Path) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors under their Hugging Face names (a tied head is stored once, as the embedding)."""
    with safe_open(str(checkpoint / WEIGHTS_NAME), framework="pt") as weights:
        return {hf_weight_name(name): weights.get_tensor(name) for name in weights.keys()}


def _prefix_every_piece(node: Any) -> None:
    """SentencePiece-style tokenizers (Metaspace, prepend_scheme "first") put '▁' before the first word of the
    whole string only. chatlike encodes each piece between special tokens on its own, so each gets one; scheme
    "always" does the same when transformers encodes the rendered template in one piece."""
    if isinstance(node, dict):
        if node.get("type") == "Metaspace" and node.get("prepend_scheme") == "first":
            node["prepend_scheme"] = "always"
        for child in node.values():
            _prefix_every_piece(child)
    elif isinstance(node, list):
        for child in node:
            _prefix_every_piece(child)


_PROBE = [(USER, "Hello there, are we still on for 10am?"), (ASSISTANT, "yes! see you there 🙂"), (USER, "ok")]


def hf_tokenizer(tokenizer_path: Path, block_size: int) -> Any:
    """The checkpoint's tokenizer for transformers: bos/eos/pad and <|separator|> named, the chat template set,
    checked to give exactly the ids of chatlike's own encoding (`storage.chat_format`) on a probe conversation."""
    from transformers import PreTrainedTokenizerFast

    data = json.loads(tokenizer_path.read_text(encoding="utf-8"))
    _prefix_every_piece(data.get("pre_tokenizer"))
    wrapped = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(data)), bos_token=BOS,
                                      eos_token=EOT, pad_token=PAD, additional_special_tokens=[SEP],
                                      chat_template=CHAT_TEMPLATE, model_max_length=block_size)
    ours = load_tokenizer(tokenizer_path)
    messages = [{"role": role.lower(), "content": text} for role, text in _PROBE]
    rendered = wrapped.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    if list(rendered) != assistant_prompt(ours, _PROBE):
        raise ValueError(f"{tokenizer_path}: encoding the rendered chat template in one piece gives other ids than "
                         f"chatlike's turn-by-turn encoding, so the exported chat template would not be our format")
    return wrapped


def export_hf(checkpoint_dir: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """Write a chatlike checkpoint (or a run folder's latest) as a Hugging Face model folder: config.json,
    model.safetensors, generation_config.json, and the tokenizer (tokenizer.json, tokenizer_config.json,
    chat_template.jinja) whose chat template renders the SFT format. Returns the folder."""
    from transformers import GenerationConfig

    from model.chat import SamplingOptions

    checkpoint = resolve_checkpoint(checkpoint_dir)
    config = load_config(checkpoint)
    architecture = hf_architecture(config)
    tok_path = checkpoint_tokenizer(checkpoint)
    tokenizer = load_tokenizer(tok_path)
    tokens = ChatTokens.from_tokenizer(tokenizer)
    if tokenizer.get_vocab_size() > config.vocab_size:
        raise ValueError(f"{tok_path} has {tokenizer.get_vocab_size()} ids, more than the model's "
                         f"{config.vocab_size}: not the tokenizer {checkpoint} was trained with")
    wrapped_tokenizer = hf_tokenizer(tok_path, config.block_size)
    tensors = _hf_tensors(checkpoint)
    dtype = tensors["model.embed_tokens.weight"].dtype

    out_dir = Path(out_dir)
    with _temporary_sibling(out_dir) as tmp:
        hf_config(config, architecture, tokens, dtype).save_pretrained(tmp)
        save_file(tensors, str(tmp / WEIGHTS_NAME), metadata={"format": "pt"})
        del tensors
        defaults = SamplingOptions()  # `chatlike chat`'s sampling, so the persona answers alike in both
        GenerationConfig(bos_token_id=tokens.bos, eos_token_id=tokens.eot, pad_token_id=tokens.pad,
                         do_sample=True, temperature=defaults.temperature, top_k=defaults.top_k,
                         top_p=defaults.top_p).save_pretrained(tmp)
        wrapped_tokenizer.save_pretrained(tmp)
        log.info("exported %s as %s to %s", checkpoint, architecture, out_dir)
        return replace_folder(tmp, out_dir)


__all__ = [
    "CHAT_TEMPLATE", "DTYPES", "HF_ARCHITECTURES", "HfSource", "add_chat_tokens", "export_hf", "hf_architecture",
    "hf_config", "hf_model_config", "hf_tokenizer", "hf_weight_name", "import_hf", "read_hf_source",
]
