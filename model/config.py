"""The typed configuration of the transformer (DESIGN §5) and the numbers derived from it without building
the model: presets, the analytic parameter count, training FLOPs per token and model FLOPs utilisation.

Every architecture knob lives in `ModelConfig`; `model/transformer.py` only reads it. Fields that depend on
other fields (`n_kv_heads`, `d_ff`, the MLA sizes) stay `None` in the config and are resolved by properties,
so a preset overridden with a new `d_model` does not keep stale derived sizes.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
from dataclasses import dataclass
from typing import Any

POSITIONS = ("none", "learned", "sinusoidal", "relative", "rope", "alibi")
ATTENTIONS = ("full", "sliding_window", "linear", "bigbird", "mla")
NORMS = ("layernorm", "rmsnorm")
ROPE_SCALINGS = ("none", "linear", "llama3")
NORM_POSITIONS = ("pre", "post")
MLPS = ("relu", "leaky_relu", "silu", "gelu", "swiglu", "geglu")
GATED_MLPS = ("swiglu", "geglu")
LINEAR_FEATURE_MAPS = ("elu", "relu")
# 16.8 M ids: 64 times the largest vocabularies in use (256 k); a config asking for more is damaged or hostile.
MAX_VOCAB_SIZE = 1 << 24
# The fields a config.json must hold: without them it describes some other model than the weights beside it.
SIZE_FIELDS = ("vocab_size", "block_size", "n_layers", "n_heads", "d_model")


@dataclass
class ModelConfig:
    """Every knob of the decoder-only transformer. Sizes are in tokens / features / heads."""

    vocab_size: int = 50304
    block_size: int = 1024  # the largest number of positions a sequence (prompt + generated) may use
    n_layers: int = 12
    n_heads: int = 12
    d_model: int = 768
    # None: as many key/value heads as query heads (multi-head); 1: multi-query; in between: grouped-query.
    n_kv_heads: int | None = None

    position: str = "learned"  # one of POSITIONS
    rope_theta: float = 10000.0
    # RoPE frequency scaling for contexts longer than pretraining: "linear" divides every frequency by
    # rope_scaling_factor (position interpolation); "llama3" (Llama 3.1) divides only the low frequencies, whose
    # wavelength exceeds rope_original_max_positions / rope_low_freq_factor, keeps those shorter than
    # .../ rope_high_freq_factor, and blends smoothly in between.
    rope_scaling: str = "none"  # one of ROPE_SCALINGS
    rope_scaling_factor: float = 1.0
    rope_low_freq_factor: float = 1.0
    rope_high_freq_factor: float = 4.0
    rope_original_max_positions: int = 8192
    relative_num_buckets: int = 32  # T5 relative attention bias
    relative_max_distance: int = 128

    attention: str = "full"  # one of ATTENTIONS
    window_size: int = 256  # sliding_window: a query sees itself and the window_size - 1 tokens before it ...
    n_sink_tokens: int = 0  # ... plus the first n_sink_tokens of the sequence ("attention sinks")
    linear_feature_map: str = "elu"  # linear attention kernel: elu(x) + 1 or relu(x)
    linear_chunk_size: int = 64  # linear attention trains chunk by chunk: quadratic inside, recurrent between
    bigbird_block_size: int = 64
    bigbird_global_blocks: int = 1  # the first blocks, seen by every later query
    bigbird_window_blocks: int = 3  # a query block sees itself and the blocks just before it
    bigbird_random_blocks: int = 2  # plus this many earlier blocks drawn at random (fixed by bigbird_seed)
    bigbird_seed: int = 0
    # Multi-head latent attention (DeepSeek-V2). None picks the paper's proportions from the head size.
    mla_kv_lora_rank: int | None = None  # size of the compressed KV latent (the only thing cached): 4 * head_dim
    mla_q_lora_rank: int = 0  # 0: queries projected directly; > 0: through a low-rank bottleneck of this size
    mla_rope_head_dim: int | None = None  # decoupled RoPE key/query part per head: head_dim // 2
    mla_v_head_dim: int | None = None  # value size per head: head_dim

    norm: str = "layernorm"  # one of NORMS
    norm_position: str = "pre"  # "pre": x + f(norm(x)), final norm; "post": norm(x + f(x)), no final norm
    norm_eps: float = 1e-5

    mlp: str = "gelu"  # one of MLPS
    d_ff: int | None = None  # None: 4 * d_model, or 2/3 of that for gated MLPs (same parameter count)
    ffn_multiple_of: int = 1  # round the default d_ff up to a multiple of this (Llama uses 256)

    dropout: float = 0.0
    bias: bool = True  # biases in linear layers and LayerNorm (never in the router or lm_head)
    qkv_bias: bool | None = None  # biases on the query/key/value projections; None: as `bias` (Qwen2: True)
    tie_embeddings: bool = True  # lm_head shares the token embedding matrix

    n_experts: int = 0  # 0: dense MLP; > 0: mixture of experts in every layer
    n_experts_per_token: int = 2  # top-k routing
    n_shared_experts: int = 0  # experts every token goes through (DeepSeekMoE)
    moe_d_ff: int | None = None  # hidden size of one expert; None: d_ff
    moe_aux_loss_coef: float = 0.01  # weight of the load-balancing loss added to the training loss

    init_std: float = 0.02

    def __post_init__(self) -> None:
        self.validate()

    # ----------------------------------------------------------------------------------------------------
    # derived sizes

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def has_qkv_bias(self) -> bool:
        return self.bias if self.qkv_bias is None else self.qkv_bias

    @property
    def is_gated(self) -> bool:
        return self.mlp in GATED_MLPS

    @property
    def ffn_hidden(self) -> int:
        if self.d_ff is not None:
            return self.d_ff
        hidden = 4 * self.d_model
        if self.is_gated:  # three matrices instead of two: keep the parameter count of the 4x MLP
            hidden = int(2 * hidden / 3)
        return self.ffn_multiple_of * math.ceil(hidden / self.ffn_multiple_of)

    @property
    def expert_hidden(self) -> int:
        return self.ffn_hidden if self.moe_d_ff is None else self.moe_d_ff

    @property
    def mla_kv_rank(self) -> int:
        return 4 * self.head_dim if self.mla_kv_lora_rank is None else self.mla_kv_lora_rank

    @property
    def mla_rope_dim(self) -> int:
        """Per-head size of the decoupled RoPE part; 0 when positions do not come from RoPE."""
        if self.position != "rope":
            return 0
        return self.head_dim // 2 if self.mla_rope_head_dim is None else self.mla_rope_head_dim

    @property
    def mla_v_dim(self) -> int:
        return self.head_dim if self.mla_v_head_dim is None else self.mla_v_head_dim

    @property
    def rotary_dim(self) -> int:
        """Features per head that RoPE rotates (0 without RoPE)."""
        if self.position != "rope":
            return 0
        return self.mla_rope_dim if self.attention == "mla" else self.head_dim

    # ----------------------------------------------------------------------------------------------------
    # validation

    def validate(self) -> None:
        """Raise ValueError naming the field and what would be accepted."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            expected = _FIELD_TYPES[f.name]
            optional = expected.endswith("| None")
            if value is None:
                if not optional:
                    raise ValueError(f"ModelConfig.{f.name} must not be None")
                continue
            kind = expected.split(" ")[0]
            ok = {
                "int": isinstance(value, int) and not isinstance(value, bool),
                "float": isinstance(value, (int, float)) and not isinstance(value, bool),
                "bool": isinstance(value, bool),
                "str": isinstance(value, str),
            }[kind]
            if not ok:
                raise ValueError(f"ModelConfig.{f.name} must be {expected}, got {value!r}")

        _choice("position", self.position, POSITIONS)
        _choice("attention", self.attention, ATTENTIONS)
        if self.norm == "batchnorm":
            raise ValueError("norm='batchnorm' is refused: it normalises over the batch, so a token's output would "
                             "depend on the other sequences of its batch and on future tokens of its own (it leaks "
                             "across the causal mask), and generation one sequence at a time would see other "
                             f"statistics than training; use one of {', '.join(map(repr, NORMS))}")
        _choice("norm", self.norm, NORMS)
        _choice("rope_scaling", self.rope_scaling, ROPE_SCALINGS)
        _choice("norm_position", self.norm_position, NORM_POSITIONS)
        _choice("mlp", self.mlp, MLPS)
        _choice("linear_feature_map", self.linear_feature_map, LINEAR_FEATURE_MAPS)
        for name in ("vocab_size", "block_size", "n_layers", "n_heads", "d_model", "ffn_multiple_of",
                     "window_size", "linear_chunk_size", "bigbird_block_size", "bigbird_window_blocks",
                     "relative_num_buckets", "relative_max_distance"):
            _at_least(name, getattr(self, name), 1)
        for name in ("n_sink_tokens", "bigbird_global_blocks", "bigbird_random_blocks", "mla_q_lora_rank",
                     "n_experts", "n_shared_experts"):
            _at_least(name, getattr(self, name), 0)
        for name in ("d_ff", "moe_d_ff", "mla_kv_lora_rank", "mla_v_head_dim"):
            if getattr(self, name) is not None:
                _at_least(name, getattr(self, name), 1)

        if self.vocab_size > MAX_VOCAB_SIZE:
            raise ValueError(f"vocab_size={self.vocab_size} must be <= {MAX_VOCAB_SIZE:,} (2**24)")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}: "
                             f"every head needs d_model / n_heads features")
        if self.n_kv_heads is not None:
            if not 1 <= self.n_kv_heads <= self.n_heads or self.n_heads % self.n_kv_heads:
                raise ValueError(f"n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads} "
                                 f"(1 = multi-query, n_heads = multi-head, a divisor in between = grouped-query)")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout={self.dropout} must be in [0, 1)")
        if self.norm_eps <= 0:
            raise ValueError(f"norm_eps={self.norm_eps} must be > 0")
        if self.init_std <= 0:
            raise ValueError(f"init_std={self.init_std} must be > 0")
        if self.rope_theta <= 0:
            raise ValueError(f"rope_theta={self.rope_theta} must be > 0")
        if self.rope_scaling != "none":
            if self.position != "rope":
                raise ValueError(f"rope_scaling={self.rope_scaling!r} needs position='rope', not {self.position!r}")
            if self.rope_scaling_factor < 1:
                raise ValueError(f"rope_scaling_factor={self.rope_scaling_factor} must be >= 1")
        if self.rope_scaling == "llama3":
            _at_least("rope_original_max_positions", self.rope_original_max_positions, 1)
            if not 0 < self.rope_low_freq_factor < self.rope_high_freq_factor:
                raise ValueError(f"rope_low_freq_factor={self.rope_low_freq_factor} must be > 0 and below "
                                 f"rope_high_freq_factor={self.rope_high_freq_factor}")
        if self.position == "relative" and self.relative_max_distance <= self.relative_num_buckets // 2:
            raise ValueError(f"relative_max_distance={self.relative_max_distance} must be larger than "
                             f"relative_num_buckets // 2 = {self.relative_num_buckets // 2} (the exact buckets)")

        if self.n_sink_tokens and self.attention != "sliding_window":
            raise ValueError(f"n_sink_tokens={self.n_sink_tokens} only applies to attention='sliding_window', "
                             f"not {self.attention!r}")
        if self.attention == "linear" and self.position in ("relative", "alibi", "rope"):
            raise ValueError(f"attention='linear' never forms the score matrix, so position={self.position!r} "
                             f"cannot be applied; use 'none', 'learned' or 'sinusoidal'")
        if self.attention == "mla":
            if self.n_kv_heads not in (None, self.n_heads):
                raise ValueError(f"attention='mla' shares one latent between all heads; n_kv_heads="
                                 f"{self.n_kv_heads} does not apply (leave it None)")
            if self.mla_rope_head_dim is not None and self.position != "rope":
                raise ValueError("mla_rope_head_dim is set but position is not 'rope'")
            if self.mla_rope_head_dim is not None:
                _at_least("mla_rope_head_dim", self.mla_rope_head_dim, 2)
            if self.qkv_bias is not None:
                raise ValueError("qkv_bias applies to q_proj/k_proj/v_proj; attention='mla' projects through a "
                                 "latent instead (leave it None and use `bias`)")
        if self.rotary_dim % 2:
            raise ValueError(f"RoPE rotates pairs of features, but the rotated size per head is {self.rotary_dim} "
                             f"(odd); choose an even head_dim / mla_rope_head_dim")

        if self.n_experts:
            if not 1 <= self.n_experts_per_token <= self.n_experts:
                raise ValueError(f"n_experts_per_token={self.n_experts_per_token} must be between 1 and "
                                 f"n_experts={self.n_experts}")
            if self.moe_aux_loss_coef < 0:
                raise ValueError(f"moe_aux_loss_coef={self.moe_aux_loss_coef} must be >= 0")
        elif self.n_shared_experts:
            raise ValueError(f"n_shared_experts={self.n_shared_experts} needs n_experts > 0 (a mixture of experts)")

    # ----------------------------------------------------------------------------------------------------
    # serialisation and presets

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict with every field (None for sizes derived from other fields)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Build from `to_dict` output (e.g. config.json); unknown keys are an error, missing keys default."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            hints = [f"{k!r} (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(k, known, n=1)) else repr(k)
                     for k in unknown]
            raise ValueError(f"unknown ModelConfig field(s): {', '.join(hints)}")
        return cls(**data)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> ModelConfig:
        """A named starting point (see PRESETS) with any field overridden, e.g. preset('tiny', vocab_size=512)."""
        if name not in PRESETS:
            raise ValueError(f"unknown model preset {name!r}; available: {', '.join(PRESETS)}")
        return cls.from_dict({**PRESETS[name], **overrides})

    def replace(self, **changes: Any) -> ModelConfig:
        return dataclasses.replace(self, **changes)


_FIELD_TYPES = {f.name: str(f.type) for f in dataclasses.fields(ModelConfig)}


def _choice(name: str, value: str, options: tuple[str, ...]) -> None:
    if value not in options:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(map(repr, options))}")


def _at_least(name: str, value: int, minimum: int) -> None:
    if value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}")


PRESETS: dict[str, dict[str, Any]] = {
    # CPU demo: ~1 M parameters, trains in minutes on a laptop.
    "tiny": dict(vocab_size=2048, block_size=256, n_layers=4, n_heads=4, d_model=128),
    # ~30 M parameters with the project's 16k tokenizer.
    "small": dict(vocab_size=16384, block_size=1024, n_layers=6, n_heads=8, d_model=512),
    # nanoGPT's GPT-2 small: 124.48 M parameters (123.69 M without position embeddings, as nanoGPT prints).
    "gpt2-124m": dict(vocab_size=50304, block_size=1024, n_layers=12, n_heads=12, d_model=768,
                      position="learned", mlp="gelu", norm="layernorm", norm_position="pre", bias=True,
                      tie_embeddings=True, dropout=0.0),
    # The Llama recipe at the "small" scale: RoPE, RMSNorm, SwiGLU, grouped-query attention, no biases, untied.
    "llama-style": dict(vocab_size=16384, block_size=1024, n_layers=6, n_heads=8, n_kv_heads=2, d_model=512,
                        position="rope", norm="rmsnorm", mlp="swiglu", ffn_multiple_of=64, bias=False,
                        tie_embeddings=False, norm_eps=1e-6),
}


# --------------------------------------------------------------------------------------------------------
# analytic counts


def _linear(n_in: int, n_out: int, bias: bool) -> int:
    return n_in * n_out + (n_out if bias else 0)


def _norm_params(cfg: ModelConfig, dim: int) -> int:
    return dim * (2 if cfg.norm == "layernorm" and cfg.bias else 1)


def _mlp_params(cfg: ModelConfig, hidden: int) -> int:
    n_in = 2 if cfg.is_gated else 1
    return n_in * _linear(cfg.d_model, hidden, cfg.bias) + _linear(hidden, cfg.d_model, cfg.bias)


def _attention_params(cfg: ModelConfig) -> int:
    d, h, b = cfg.d_model, cfg.n_heads, cfg.bias
    if cfg.attention != "mla":
        hd = cfg.head_dim
        qkv = cfg.has_qkv_bias
        return (_linear(d, h * hd, qkv) + 2 * _linear(d, cfg.kv_heads * hd, qkv) + _linear(h * hd, d, b))
    nope, rope, vd, rank = cfg.head_dim, cfg.mla_rope_dim, cfg.mla_v_dim, cfg.mla_kv_rank
    if cfg.mla_q_lora_rank:
        q = (_linear(d, cfg.mla_q_lora_rank, b) + cfg.mla_q_lora_rank
             + _linear(cfg.mla_q_lora_rank, h * (nope + rope), b))
    else:
        q = _linear(d, h * (nope + rope), b)
    kv = _linear(d, rank + rope, b) + rank + _linear(rank, h * (nope + vd), b)
    return q + kv + _linear(h * vd, d, b)


def _ffn_params(cfg: ModelConfig, active_only: bool) -> int:
    if not cfg.n_experts:
        return _mlp_params(cfg, cfg.ffn_hidden)
    routed = cfg.n_experts_per_token if active_only else cfg.n_experts
    shared = _mlp_params(cfg, cfg.n_shared_experts * cfg.expert_hidden) if cfg.n_shared_experts else 0
    return cfg.d_model * cfg.n_experts + routed * _mlp_params(cfg, cfg.expert_hidden) + shared


def count_parameters(cfg: ModelConfig, active_only: bool = False) -> int:
    """Exact number of trainable parameters of `GPT(cfg)`, from the config alone (tied weights once).

    active_only: count only what one token uses (top-k of the routed experts), as MoE papers report.
    """
    d = cfg.d_model
    layer = 2 * _norm_params(cfg, d) + _attention_params(cfg) + _ffn_params(cfg, active_only)
    total = cfg.vocab_size * d + cfg.n_layers * layer
    if cfg.position == "learned":
        total += cfg.block_size * d
    if cfg.position == "relative":
        total += cfg.relative_num_buckets * cfg.n_heads
    if cfg.norm_position == "pre":
        total += _norm_params(cfg, d)
    if not cfg.tie_embeddings:
        total += cfg.vocab_size * d
    return total


def check_fits_in_memory(cfg: ModelConfig, memory_bytes: int | None = None) -> None:
    """Refuse a config whose float32 parameters alone exceed this machine's memory (the sizes are named), before
    PyTorch's allocator fails deep inside the model or the kernel kills the process."""
    if memory_bytes is None:
        memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    needed = 4 * count_parameters(cfg)
    if needed > memory_bytes:
        sizes = ", ".join(f"{name}={getattr(cfg, name):,}" for name in SIZE_FIELDS if name != "block_size")
        raise ValueError(f"{sizes} make {needed // 4:,} parameters ({needed / 1e9:,.1f} GB in float32), more than "
                         f"this machine's {memory_bytes / 1e9:,.1f} GB of memory")


def matmul_parameters(cfg: ModelConfig) -> int:
    """Parameters one token multiplies with (the N of 6N): active parameters without the lookup tables
    (position embeddings, relative bias, and the input embedding when it is not the tied output head)."""
    n = count_parameters(cfg, active_only=True)
    if cfg.position == "learned":
        n -= cfg.block_size * cfg.d_model
    if cfg.position == "relative":
        n -= cfg.relative_num_buckets * cfg.n_heads
    if not cfg.tie_embeddings:
        n -= cfg.vocab_size * cfg.d_model
    return n


def attended_keys(cfg: ModelConfig, seq_len: int) -> int:
    """Keys a query attends to in the PaLM-style estimate (which counts the full seq_len for causal attention,
    as nanoGPT does); sparse patterns see fewer. Linear attention costs a head_dim x head_dim state per token."""
    if cfg.attention == "sliding_window":
        return min(seq_len, cfg.window_size + cfg.n_sink_tokens)
    if cfg.attention == "bigbird":
        blocks = cfg.bigbird_global_blocks + cfg.bigbird_window_blocks + cfg.bigbird_random_blocks
        return min(seq_len, blocks * cfg.bigbird_block_size)
    if cfg.attention == "linear":
        return cfg.head_dim
    return seq_len


def flops_per_token(cfg: ModelConfig, seq_len: int | None = None, training: bool = True) -> float:
    """Model FLOPs per token (PaLM, appendix B): 6N for the weight matmuls forward and backward plus
    6 * L * H * (d_qk + d_v) * T for attention scores and the weighted sum (= 12 * L * H * Q * T when the
    query/key and value head sizes are both Q). training=False gives the forward-only third of it."""
    seq_len = cfg.block_size if seq_len is None else seq_len
    if cfg.attention == "mla":
        qk, v = cfg.head_dim + cfg.mla_rope_dim, cfg.mla_v_dim
    else:
        qk = v = cfg.head_dim
    total = 6 * matmul_parameters(cfg) + 6 * cfg.n_layers * cfg.n_heads * (qk + v) * attended_keys(cfg, seq_len)
    return float(total if training else total / 3)


# Dense bf16 tensor-core peaks (no 2:4 sparsity), from the vendors' data sheets; longest names first so that
# "H100 PCIe" wins over "H100".
PEAK_BF16_FLOPS: dict[str, float] = {
    "H100 PCIE": 756e12,
    "H200": 989e12,
    "H100": 989e12,
    "A100": 312e12,
}


def device_peak_flops(device_name: str) -> float | None:
    """Peak bf16 FLOP/s for a device name such as torch.cuda.get_device_name(); None when unknown (e.g. CPU)."""
    upper = device_name.upper()
    for key, peak in PEAK_BF16_FLOPS.items():
        if key in upper:
            return peak
    return None


def mfu(tokens_per_second: float, flops_per_token_: float, peak_flops: float | None) -> float | None:
    """Model FLOPs utilisation in [0, 1]: achieved model FLOP/s over the device peak; None without a peak."""
    if peak_flops is None or peak_flops <= 0:
        return None
    return tokens_per_second * flops_per_token_ / peak_flops


__all__ = [
    "ATTENTIONS", "MAX_VOCAB_SIZE", "MLPS", "NORMS", "POSITIONS", "PRESETS", "ROPE_SCALINGS", "SIZE_FIELDS", "ModelConfig",
    "attended_keys", "check_fits_in_memory", "count_parameters",
    "device_peak_flops", "flops_per_token", "matmul_parameters", "mfu",
]
