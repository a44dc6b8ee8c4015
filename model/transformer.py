"""The decoder-only transformer (DESIGN §5): one file of small modules, chosen by `ModelConfig`.

Read top to bottom: norms, positions, which keys a query may see, the three attention families (softmax
attention with any number of key/value heads and a full, sliding-window or BigBird pattern; linear attention;
multi-head latent attention), MLPs and mixture of experts, the block, the model.

Every attention module receives the *positions* of its queries and keys rather than assuming that tensor
index == position. Left-padded prompts start at position 0 after their padding, and a KV cache keeps the
position of each cached key, so a padded, cached, step-by-step forward sees exactly what an unpadded full
forward sees (the tests check this for every variant).

Module names follow the Llama/Hugging Face convention (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
down_proj, lm_head) so that peft's LoRA can target them by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from model.config import ModelConfig, count_parameters

# ------------------------------------------------------------------------------------------------------------
# norms


class RMSNorm(nn.Module):
    """x / rms(x) * weight: LayerNorm without centring or bias (Zhang & Sennrich 2019)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()  # the mean square overflows / loses precision in half precision
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def make_norm(cfg: ModelConfig, dim: int) -> nn.Module:
    if cfg.norm == "rmsnorm":
        return RMSNorm(dim, cfg.norm_eps)
    return nn.LayerNorm(dim, eps=cfg.norm_eps, bias=cfg.bias)


# ------------------------------------------------------------------------------------------------------------
# positions: added to the embeddings (learned, sinusoidal), rotating queries and keys (RoPE), or a bias on the
# attention scores (relative, ALiBi). All are functions of integer positions of shape (B or 1, T).


def _inverse_frequencies(dim: int, theta: float, device: torch.device) -> torch.Tensor:
    # computed on the fly in float32: a buffer would be rounded if the model is cast to bfloat16
    return theta ** (-torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim)


def scale_rope_frequencies(inv_freq: torch.Tensor, cfg: ModelConfig) -> torch.Tensor:
    """RoPE frequencies stretched for long contexts (`ModelConfig.rope_scaling`): position interpolation
    ("linear") or Llama 3.1's rule ("llama3"), which leaves the high frequencies alone, divides the low ones by
    the factor and interpolates in between, by wavelength measured against the original context length."""
    if cfg.rope_scaling == "linear":
        return inv_freq / cfg.rope_scaling_factor
    if cfg.rope_scaling != "llama3":
        return inv_freq
    factor, original = cfg.rope_scaling_factor, cfg.rope_original_max_positions
    low, high = cfg.rope_low_freq_factor, cfg.rope_high_freq_factor
    wavelength = 2 * math.pi / inv_freq
    smooth = ((original / wavelength - low) / (high - low)).clamp(0.0, 1.0)  # 0: long waves, 1: short waves
    blended = (1 - smooth) * inv_freq / factor + smooth * inv_freq
    scaled = torch.where(wavelength > original / low, inv_freq / factor, blended)
    return torch.where(wavelength < original / high, inv_freq, scaled)


class SinusoidalPositions(nn.Module):
    """Fixed sin/cos features of the position (Vaswani et al. 2017), added to the token embeddings."""

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model

    def forward(self, pos: torch.Tensor) -> torch.Tensor:
        angles = pos[..., None].float() * _inverse_frequencies(self.d_model, 10000.0, pos.device)  # (B, T, ⌈d/2⌉)
        features = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)  # sin, cos interleaved
        return features[..., : self.d_model]  # (B, T, d_model)


class RotaryEmbedding(nn.Module):
    """RoPE (Su et al. 2021): rotate pairs of query/key features by position-dependent angles, so that the
    score q·k depends only on the distance between the two positions."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg, self.dim = cfg, cfg.rotary_dim

    def forward(self, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inv_freq = scale_rope_frequencies(_inverse_frequencies(self.dim, self.cfg.rope_theta, pos.device), self.cfg)
        angles = pos[..., None].float() * inv_freq  # (B, T, dim/2)
        angles = torch.cat((angles, angles), dim=-1)[:, None]  # (B, 1, T, dim): broadcast over heads
        return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Rotate (B, H, T, dim) features; feature i pairs with feature i + dim/2 ("rotate half" layout)."""
    cos, sin = rope
    first, second = x.chunk(2, dim=-1)
    rotated = torch.cat((-second, first), dim=-1)
    return (x * cos + rotated * sin).type_as(x)


class RelativePositionBias(nn.Module):
    """T5's relative attention bias: one learned scalar per head for each bucket of the distance q - k.
    Distances below num_buckets/2 have a bucket each; longer ones share log-spaced buckets up to max_distance.
    One table is shared by all layers, as in T5."""

    def __init__(self, n_heads: int, num_buckets: int, max_distance: int):
        super().__init__()
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    def bucket(self, distance: torch.Tensor) -> torch.Tensor:
        exact = self.num_buckets // 2
        distance = distance.clamp(min=0)  # causal: keys are never after the query
        log_ratio = torch.log(distance.clamp(min=exact).float() / exact) / math.log(self.max_distance / exact)
        far = (exact + (log_ratio * (self.num_buckets - exact)).long()).clamp(max=self.num_buckets - 1)
        return torch.where(distance < exact, distance, far)

    def forward(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        distance = q_pos[:, :, None] - k_pos[:, None, :]  # (B, Tq, Tk)
        return self.relative_attention_bias(self.bucket(distance)).permute(0, 3, 1, 2)  # (B, H, Tq, Tk)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi head slopes: a geometric sequence starting at 2^(-8/n); for n not a power of two, the slopes of
    the next power of two fill in every other value (Press et al. 2022)."""

    def geometric(n: int) -> list[float]:
        start = 2 ** (-8 / n)
        return [start ** (i + 1) for i in range(n)]

    closest = 2 ** math.floor(math.log2(n_heads))
    slopes = geometric(closest) + geometric(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


class ALiBi(nn.Module):
    """Attention with linear biases: score -= slope_h * (q_pos - k_pos); no position parameters at all."""

    def __init__(self, n_heads: int):
        super().__init__()
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def forward(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        distance = (q_pos[:, :, None] - k_pos[:, None, :]).float()  # (B, Tq, Tk)
        return -self.slopes.float()[:, None, None] * distance[:, None]  # (B, H, Tq, Tk)


@dataclass
class AttentionInputs:
    """What every attention layer of one forward call shares: positions of the new tokens, which of them are
    real (None: all, no padding), the RoPE angles, and the score bias module (relative / ALiBi)."""

    q_pos: torch.Tensor  # (B or 1, T) int64
    q_valid: torch.Tensor | None  # (B, T) bool
    rope: tuple[torch.Tensor, torch.Tensor] | None
    position_bias: nn.Module | None
    plain_causal: bool  # no padding and no cache: index == position, the fused causal kernel applies


# ------------------------------------------------------------------------------------------------------------
# which keys a query may see


def bigbird_block_table(n_blocks: int, n_global: int, n_window: int, n_random: int, seed: int) -> torch.Tensor:
    """(n_blocks, n_blocks) bool: may query block i see key block j. Causal BigBird (Zaheer et al. 2020):
    the first n_global blocks, the n_window blocks ending at i, and n_random earlier blocks drawn with a
    generator seeded by `seed`, so the pattern is the same on every run and every machine."""
    cpu = torch.device("cpu")  # the seeded CPU generator makes the draw identical everywhere
    table = torch.zeros(n_blocks, n_blocks, dtype=torch.bool, device=cpu)
    generator = torch.Generator(device=cpu).manual_seed(seed)
    for i in range(n_blocks):
        table[i, : min(n_global, i + 1)] = True
        table[i, max(0, i - n_window + 1) : i + 1] = True
        candidates = torch.arange(n_global, max(n_global, i - n_window + 1), device=cpu)
        picked = candidates[torch.randperm(len(candidates), generator=generator, device=cpu)[:n_random]]
        table[i, picked] = True
    return table


class AttentionPattern(nn.Module):
    """Causal visibility as a function of positions: all earlier keys ("full"), the last window_size keys plus
    the first n_sink_tokens ("sliding_window"), or BigBird's global + window + random blocks ("bigbird")."""

    def __init__(self, cfg: ModelConfig, layer_idx: int):
        super().__init__()
        self.kind = cfg.attention if cfg.attention in ("sliding_window", "bigbird") else "full"
        self.window, self.n_sink = cfg.window_size, cfg.n_sink_tokens
        self.block = cfg.bigbird_block_size
        if self.kind == "bigbird":
            n_blocks = math.ceil(cfg.block_size / cfg.bigbird_block_size)
            table = bigbird_block_table(n_blocks, cfg.bigbird_global_blocks, cfg.bigbird_window_blocks,
                                        cfg.bigbird_random_blocks, cfg.bigbird_seed + layer_idx)
            # a function of the config, not a weight; drawn on the CPU, kept where the model is being built
            self.register_buffer("blocks", table.to(torch.get_default_device()), persistent=False)

    def forward(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        q, k = q_pos[:, :, None], k_pos[:, None, :]
        allowed = k <= q  # (B, Tq, Tk)
        if self.kind == "sliding_window":
            allowed = allowed & ((q - k < self.window) | (k < self.n_sink))
        elif self.kind == "bigbird":
            allowed = allowed & self.blocks[q // self.block, k // self.block]
        return allowed


def softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pattern: AttentionPattern,
                      ctx: AttentionInputs, k_pos: torch.Tensor, k_valid: torch.Tensor | None,
                      dropout_p: float) -> torch.Tensor:
    """softmax(q kᵀ / sqrt(d) + bias) v over the keys the pattern allows. q: (B, H, Tq, d); k, v: (B, Hkv, Tk, ·)
    with Hkv dividing H (query head h reads key/value head h // (H / Hkv)). Returns (B, H, Tq, d_v)."""
    if k.shape[1] != q.shape[1]:
        repeat = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
    if ctx.plain_causal and pattern.kind == "full" and ctx.position_bias is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)
    allowed = pattern(ctx.q_pos, k_pos)
    if k_valid is not None:
        allowed = allowed & k_valid[:, None, :]
    # a padding query sees no key at all; let it see every key so its (unused) output is not NaN
    allowed = allowed | ~allowed.any(dim=-1, keepdim=True)
    mask = allowed[:, None]  # (B, 1, Tq, Tk)
    if ctx.position_bias is not None:
        bias = ctx.position_bias(ctx.q_pos, k_pos).to(q.dtype)  # (B, H, Tq, Tk)
        mask = bias.masked_fill(~mask, float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)


def _extend_cache(cache: dict | None, ctx: AttentionInputs, **new: torch.Tensor) -> tuple[dict, torch.Tensor,
                                                                                           torch.Tensor | None]:
    """Append this step's tensors (time on dim -2), positions and validity to a layer cache; return all of them.
    Without a cache, the keys are just this step's tokens."""
    if cache is None:
        return new, ctx.q_pos, ctx.q_valid
    new["pos"], new["valid"] = ctx.q_pos, ctx.q_valid  # with a cache both are (B, T), see GPT._inputs
    for name, value in new.items():
        if name in cache:
            value = torch.cat((cache[name], value), dim=-1 if name in ("pos", "valid") else -2)
        cache[name] = value
    return cache, cache["pos"], cache["valid"]


# ------------------------------------------------------------------------------------------------------------
# attention


class CausalSelfAttention(nn.Module):
    """Softmax attention; n_heads query heads share n_kv_heads key/value heads (multi-head when equal,
    multi-query at 1, grouped-query in between), which shrinks the KV cache by n_heads / n_kv_heads.
    The pattern (full, sliding window with sinks, BigBird) only changes the mask. The cache holds rotated keys
    and values; a sliding window drops the keys no future query can see."""

    def __init__(self, cfg: ModelConfig, layer_idx: int):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=cfg.has_qkv_bias)
        self.k_proj = nn.Linear(cfg.d_model, cfg.kv_heads * cfg.head_dim, bias=cfg.has_qkv_bias)
        self.v_proj = nn.Linear(cfg.d_model, cfg.kv_heads * cfg.head_dim, bias=cfg.has_qkv_bias)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=cfg.bias)
        self.pattern = AttentionPattern(cfg, layer_idx)
        self.dropout_p = cfg.dropout
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, ctx: AttentionInputs, cache: dict | None) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, hd)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, hd)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, hd)
        if ctx.rope is not None:
            q, k = apply_rotary(q, ctx.rope), apply_rotary(k, ctx.rope)
        kv, k_pos, k_valid = _extend_cache(cache, ctx, k=k, v=v)
        y = softmax_attention(q, kv["k"], kv["v"], self.pattern, ctx, k_pos, k_valid,
                              self.dropout_p if self.training else 0.0)
        if cache is not None and self.pattern.kind == "sliding_window":
            self._forget_outside_window(cache)
        y = y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim)  # (B, T, H*hd)
        return self.resid_dropout(self.o_proj(y))

    def _forget_outside_window(self, cache: dict) -> None:
        """Keep only sink tokens and the last window_size keys of each row: nothing older can be seen again."""
        pos, valid = cache["pos"], cache["valid"]
        newest = pos.masked_fill(~valid, -1).amax(dim=1, keepdim=True)  # (B, 1)
        needed = valid & ((pos < self.pattern.n_sink) | (pos > newest - self.pattern.window))  # (B, L)
        keep = needed.any(dim=0)  # a column goes only when no row needs it (rows differ by their padding)
        if not keep.all():
            for name in ("k", "v"):
                cache[name] = cache[name][:, :, keep]
            cache["pos"], cache["valid"] = pos[:, keep], valid[:, keep]


class LinearAttention(nn.Module):
    """Causal linear attention (Katharopoulos et al. 2020): exp(q·k) is replaced by φ(q)·φ(k) with φ = elu + 1,
    so all earlier keys are summarised by a state S = Σ φ(k) vᵀ and a normaliser z = Σ φ(k):
    y = φ(q) S / φ(q) z. Training walks the sequence in chunks (exact quadratic form inside a chunk, the state
    between chunks); generation is the same walk one token at a time, and the cache is just (S, z)."""

    eps = 1e-6

    def __init__(self, cfg: ModelConfig, layer_idx: int):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=cfg.has_qkv_bias)
        self.k_proj = nn.Linear(cfg.d_model, cfg.kv_heads * cfg.head_dim, bias=cfg.has_qkv_bias)
        self.v_proj = nn.Linear(cfg.d_model, cfg.kv_heads * cfg.head_dim, bias=cfg.has_qkv_bias)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=cfg.bias)
        self.feature_map = (lambda t: F.elu(t) + 1) if cfg.linear_feature_map == "elu" else F.relu
        self.chunk = cfg.linear_chunk_size
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, ctx: AttentionInputs, cache: dict | None) -> torch.Tensor:
        B, T, _ = x.shape
        repeat = self.n_heads // self.n_kv_heads
        q = self.feature_map(self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2))
        k = self.feature_map(self.k_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2))
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)  # (B, H, T, hd)
        if ctx.q_valid is not None:  # padding contributes nothing to the state
            keep = ctx.q_valid[:, None, :, None].to(k.dtype)
            k, v = k * keep, v * keep
        # the running sums are kept in float32: in bfloat16 a long sequence's small updates would be rounded away
        if cache is not None and "state" in cache:
            state, norm = cache["state"], cache["norm"]
        else:
            state = k.new_zeros(B, self.n_heads, self.head_dim, self.head_dim, dtype=torch.float32)  # Σ φ(k) vᵀ
            norm = k.new_zeros(B, self.n_heads, self.head_dim, dtype=torch.float32)  # Σ φ(k)
        outputs = []
        for start in range(0, T, self.chunk):
            qc, kc, vc = (t[:, :, start : start + self.chunk] for t in (q, k, v))  # (B, H, c, hd)
            scores = (qc @ kc.transpose(-1, -2)).tril()  # (B, H, c, c): causal inside the chunk
            numerator = qc @ state.to(qc.dtype) + scores @ vc  # (B, H, c, hd)
            denominator = (qc @ norm.to(qc.dtype)[..., None]).squeeze(-1) + scores.sum(-1)  # (B, H, c)
            outputs.append(numerator / (denominator[..., None] + self.eps))
            state = state + (kc.transpose(-1, -2) @ vc).float()
            norm = norm + kc.sum(dim=2).float()
        if cache is not None:
            cache["state"], cache["norm"] = state, norm
        y = torch.cat(outputs, dim=2).transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim)
        return self.resid_dropout(self.o_proj(y))


class MultiHeadLatentAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V2, 2024). Keys and values of all heads are re-expanded from one
    small latent c = norm(W_dkv x) per token, and only c is cached (kv_lora_rank numbers per token instead of
    2 * n_heads * head_dim). RoPE would tie the expanded keys to positions, so position enters through a
    separate "decoupled" rotary part: a small rotated query per head and one rotated key shared by all heads,
    cached beside the latent. Queries may also pass through a low-rank bottleneck (mla_q_lora_rank).
    The cache is up-projected at every step (simple); the paper's weight absorption is an inference speed-up
    with the same result."""

    def __init__(self, cfg: ModelConfig, layer_idx: int):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.nope_dim, self.rope_dim, self.v_dim = cfg.head_dim, cfg.mla_rope_dim, cfg.mla_v_dim
        self.kv_rank = cfg.mla_kv_rank
        q_out = cfg.n_heads * (self.nope_dim + self.rope_dim)
        if cfg.mla_q_lora_rank:
            self.q_a_proj = nn.Linear(cfg.d_model, cfg.mla_q_lora_rank, bias=cfg.bias)
            self.q_a_norm = RMSNorm(cfg.mla_q_lora_rank, cfg.norm_eps)
            self.q_b_proj = nn.Linear(cfg.mla_q_lora_rank, q_out, bias=cfg.bias)
        else:
            self.q_proj = nn.Linear(cfg.d_model, q_out, bias=cfg.bias)
        self.kv_a_proj = nn.Linear(cfg.d_model, self.kv_rank + self.rope_dim, bias=cfg.bias)
        self.kv_a_norm = RMSNorm(self.kv_rank, cfg.norm_eps)
        self.kv_b_proj = nn.Linear(self.kv_rank, cfg.n_heads * (self.nope_dim + self.v_dim), bias=cfg.bias)
        self.o_proj = nn.Linear(cfg.n_heads * self.v_dim, cfg.d_model, bias=cfg.bias)
        self.pattern = AttentionPattern(cfg, layer_idx)
        self.dropout_p = cfg.dropout
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, ctx: AttentionInputs, cache: dict | None) -> torch.Tensor:
        B, T, _ = x.shape
        H, nope, rope = self.n_heads, self.nope_dim, self.rope_dim
        q = self.q_b_proj(self.q_a_norm(self.q_a_proj(x))) if hasattr(self, "q_b_proj") else self.q_proj(x)
        q = q.view(B, T, H, nope + rope).transpose(1, 2)  # (B, H, T, nope + rope)
        latent, k_rope = self.kv_a_proj(x).split([self.kv_rank, rope], dim=-1)
        latent = self.kv_a_norm(latent)  # (B, T, kv_rank): all the cache keeps, with k_rope
        k_rope = k_rope[:, None]  # (B, 1, T, rope): one rotary key for all heads
        if rope:
            q_nope, q_rope = q.split([nope, rope], dim=-1)
            q = torch.cat((q_nope, apply_rotary(q_rope, ctx.rope)), dim=-1)
            k_rope = apply_rotary(k_rope, ctx.rope)
        kv, k_pos, k_valid = _extend_cache(cache, ctx, latent=latent, k_rope=k_rope)
        L = kv["latent"].shape[1]
        expanded = self.kv_b_proj(kv["latent"]).view(B, L, H, nope + self.v_dim).transpose(1, 2)
        k_nope, v = expanded.split([nope, self.v_dim], dim=-1)  # (B, H, L, nope), (B, H, L, v_dim)
        k = torch.cat((k_nope, kv["k_rope"].expand(B, H, L, rope)), dim=-1)  # (B, H, L, nope + rope)
        y = softmax_attention(q, k, v, self.pattern, ctx, k_pos, k_valid, self.dropout_p if self.training else 0.0)
        y = y.transpose(1, 2).reshape(B, T, H * self.v_dim)
        return self.resid_dropout(self.o_proj(y))


def make_attention(cfg: ModelConfig, layer_idx: int) -> nn.Module:
    if cfg.attention == "linear":
        return LinearAttention(cfg, layer_idx)
    if cfg.attention == "mla":
        return MultiHeadLatentAttention(cfg, layer_idx)
    return CausalSelfAttention(cfg, layer_idx)


# ------------------------------------------------------------------------------------------------------------
# feed-forward


_ACTIVATIONS = {"relu": F.relu, "leaky_relu": F.leaky_relu, "silu": F.silu, "gelu": F.gelu, "swiglu": F.silu,
                "geglu": F.gelu}  # leaky_relu: slope 0.01 below zero


class MLP(nn.Module):
    """down(act(up(x))), or with a gate (SwiGLU / GeGLU, Shazeer 2020): down(act(gate(x)) * up(x))."""

    def __init__(self, cfg: ModelConfig, hidden: int):
        super().__init__()
        self.act = _ACTIVATIONS[cfg.mlp]
        self.gate_proj = nn.Linear(cfg.d_model, hidden, bias=cfg.bias) if cfg.is_gated else None
        self.up_proj = nn.Linear(cfg.d_model, hidden, bias=cfg.bias)
        self.down_proj = nn.Linear(hidden, cfg.d_model, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gate_proj is not None:
            hidden = self.act(self.gate_proj(x)) * self.up_proj(x)
        else:
            hidden = self.act(self.up_proj(x))
        return self.dropout(self.down_proj(hidden))


class MixtureOfExperts(nn.Module):
    """Each token goes to its top-k experts (weights: router softmax renormalised over the chosen k) plus the
    shared experts, if any (DeepSeekMoE). Returns the output and the Switch Transformer load-balancing loss
    n_experts * Σ_e (share of routed slots taken by e) * (mean router probability of e), which is 1 when routing
    is uniform; `routed` (B, T) bool, when given, names the tokens that count in it and in `expert_counts`
    (padding does not). `expert_counts` accumulates routed tokens per expert until reset (see GPT.expert_usage).
    Experts run one after another on their own tokens: clear and exact, not the fastest."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.top_k = cfg.n_experts_per_token
        self.router = nn.Linear(cfg.d_model, cfg.n_experts, bias=False)
        self.experts = nn.ModuleList(MLP(cfg, cfg.expert_hidden) for _ in range(cfg.n_experts))
        shared = cfg.n_shared_experts * cfg.expert_hidden
        self.shared_experts = MLP(cfg, shared) if shared else None
        self.register_buffer("expert_counts", torch.zeros(cfg.n_experts, dtype=torch.long), persistent=False)

    def forward(self, x: torch.Tensor, routed: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, D = x.shape
        tokens = x.reshape(B * T, D)
        probs = self.router(tokens).float().softmax(dim=-1)  # (N, E)
        weights, chosen = probs.topk(self.top_k, dim=-1)  # (N, k)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            token_idx, slot = (chosen == e).nonzero(as_tuple=True)
            if token_idx.numel():
                contribution = expert(tokens[token_idx]) * weights[token_idx, slot, None]
                out = out.index_add(0, token_idx, contribution.to(out.dtype))
        if self.shared_experts is not None:
            out = out + self.shared_experts(tokens)
        if routed is not None and bool(routed.any()):
            keep = routed.reshape(B * T)
            chosen, probs = chosen[keep], probs[keep]
        counts = torch.bincount(chosen.flatten(), minlength=len(self.experts))
        aux_loss = len(self.experts) * (counts.float() / chosen.numel() * probs.mean(dim=0)).sum()
        with torch.no_grad():
            self.expert_counts += counts
        return out.view(B, T, D), aux_loss


# ------------------------------------------------------------------------------------------------------------
# the model


class Block(nn.Module):
    """One layer: attention then feed-forward, each with a residual connection and a norm before (pre-norm,
    GPT-2 onwards) or after (post-norm, the original transformer)."""

    def __init__(self, cfg: ModelConfig, layer_idx: int):
        super().__init__()
        self.pre_norm = cfg.norm_position == "pre"
        self.attn_norm = make_norm(cfg, cfg.d_model)
        self.attn = make_attention(cfg, layer_idx)
        self.mlp_norm = make_norm(cfg, cfg.d_model)
        self.mlp = MixtureOfExperts(cfg) if cfg.n_experts else MLP(cfg, cfg.ffn_hidden)

    def _feed_forward(self, x: torch.Tensor, routed: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        if isinstance(self.mlp, MixtureOfExperts):
            return self.mlp(x, routed)
        return self.mlp(x), None

    def forward(self, x: torch.Tensor, ctx: AttentionInputs, cache: dict | None, routed: torch.Tensor | None = None):
        if self.pre_norm:
            x = x + self.attn(self.attn_norm(x), ctx, cache)
            h, aux = self._feed_forward(self.mlp_norm(x), routed)
            return x + h, aux
        x = self.attn_norm(x + self.attn(x, ctx, cache))
        h, aux = self._feed_forward(x, routed)
        return self.mlp_norm(x + h), aux


class ModelOutput(NamedTuple):
    logits: torch.Tensor  # (B, T, vocab), or (B, 1, vocab) with only_last=True
    loss: torch.Tensor | None  # cross-entropy (+ moe_aux_loss_coef * aux_loss), when targets are given
    aux_loss: torch.Tensor | None  # MoE load-balancing loss averaged over layers, None without experts


class InferenceCache:
    """Generation state: one dict per layer (keys/values, MLA latents or the linear-attention state, with the
    position and validity of each cached key), the next position of every row, and how many columns were fed."""

    def __init__(self, n_layers: int):
        self.layers: list[dict[str, torch.Tensor]] = [{} for _ in range(n_layers)]
        self.next_pos: torch.Tensor | None = None  # (B,)
        self.length = 0

    def num_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for layer in self.layers for t in layer.values())


class GPT(nn.Module):
    """Decoder-only transformer language model configured by ModelConfig."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        config.validate()
        self.config = cfg = config
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.embed_positions: nn.Module | None = None
        if cfg.position == "learned":
            self.embed_positions = nn.Embedding(cfg.block_size, cfg.d_model)
        elif cfg.position == "sinusoidal":
            self.embed_positions = SinusoidalPositions(cfg.d_model)
        self.rotary = RotaryEmbedding(cfg) if cfg.rotary_dim else None
        self.position_bias: nn.Module | None = None
        if cfg.position == "relative":
            self.position_bias = RelativePositionBias(cfg.n_heads, cfg.relative_num_buckets,
                                                      cfg.relative_max_distance)
        elif cfg.position == "alibi":
            self.position_bias = ALiBi(cfg.n_heads)
        self.dropout = nn.Dropout(cfg.dropout)
        self.layers = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.norm = make_norm(cfg, cfg.d_model) if cfg.norm_position == "pre" else None
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        self.apply(self._init_weights)
        # GPT-2: residual output projections scaled by 1/sqrt(2 * n_layers) keep the residual stream's variance
        # from growing with depth
        for name, param in self.named_parameters():
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                nn.init.normal_(param, mean=0.0, std=cfg.init_std / math.sqrt(2 * cfg.n_layers))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)

    # --------------------------------------------------------------------------------------------------------

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, cache: InferenceCache | None = None,
                only_last: bool = False, routing_mask: torch.Tensor | None = None) -> ModelOutput:
        """idx: (B, T) token ids. targets: (B, T) next-token ids, -100 where no loss is wanted.
        attention_mask: (B, T) 1 for real tokens, 0 for (left) padding, for the tokens of idx only (a cache
        remembers the earlier ones). cache: an InferenceCache to read and extend (generation).
        only_last: compute logits for the last position only (saves the vocab projection when sampling).
        routing_mask: (B, T) true for the tokens that count in the MoE load-balancing loss and expert usage (not
        padding); default: those of attention_mask, else all."""
        B, T = idx.shape
        if only_last and targets is not None:
            raise ValueError("only_last=True computes one position's logits; it cannot be combined with targets")
        past = cache.length if cache is not None else 0
        if past + T > self.config.block_size:
            raise ValueError(f"sequence of {past + T} tokens is longer than block_size={self.config.block_size}")
        ctx = self._inputs(B, T, idx.device, attention_mask, cache)

        x = self.embed_tokens(idx)  # (B, T, d_model)
        if self.embed_positions is not None:
            x = x + self.embed_positions(ctx.q_pos).to(x.dtype)  # sinusoids are float32; weights may be bf16
        x = self.dropout(x)
        aux_losses = []
        routed = routing_mask.to(device=idx.device, dtype=torch.bool) if routing_mask is not None else ctx.q_valid
        for i, layer in enumerate(self.layers):
            x, aux = layer(x, ctx, cache.layers[i] if cache is not None else None, routed)
            if aux is not None:
                aux_losses.append(aux)
        if self.norm is not None:
            x = self.norm(x)
        if only_last:
            x = x[:, -1:]
        logits = self.lm_head(x)  # (B, T, vocab)

        aux_loss = torch.stack(aux_losses).mean() if aux_losses else None
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=-100)
            if aux_loss is not None:
                loss = loss + self.config.moe_aux_loss_coef * aux_loss
        return ModelOutput(logits, loss, aux_loss)

    def _inputs(self, B: int, T: int, device: torch.device, attention_mask: torch.Tensor | None,
                cache: InferenceCache | None) -> AttentionInputs:
        """Positions count real tokens only: a left-padded row starts at position 0 after its padding."""
        valid = attention_mask.to(device=device, dtype=torch.bool) if attention_mask is not None else None
        if cache is None:
            if valid is None:
                q_pos = torch.arange(T, device=device)[None]  # (1, T)
            else:
                q_pos = (valid.long().cumsum(dim=1) - 1).clamp(min=0)
        else:
            valid = torch.ones(B, T, dtype=torch.bool, device=device) if valid is None else valid
            start = cache.next_pos if cache.next_pos is not None else torch.zeros(B, dtype=torch.long, device=device)
            q_pos = (start[:, None] + valid.long().cumsum(dim=1) - 1).clamp(min=0)  # (B, T)
            cache.next_pos = start + valid.long().sum(dim=1)
            cache.length += T
        rope = self.rotary(q_pos) if self.rotary is not None else None
        plain = cache is None and valid is None
        return AttentionInputs(q_pos, valid, rope, self.position_bias, plain_causal=plain)

    # --------------------------------------------------------------------------------------------------------

    def new_cache(self) -> InferenceCache:
        return InferenceCache(self.config.n_layers)

    def num_parameters(self, active_only: bool = False) -> int:
        """Trainable parameters, tied weights counted once; active_only: what one token uses (MoE top-k)."""
        if active_only:
            return count_parameters(self.config, active_only=True)
        return sum(p.numel() for p in self.parameters())

    def expert_usage(self) -> list[torch.Tensor]:
        """Per MoE layer, the share of routed tokens each expert received since the last reset."""
        usage = []
        for layer in self.layers:
            if isinstance(layer.mlp, MixtureOfExperts):
                counts = layer.mlp.expert_counts.float()
                usage.append(counts / counts.sum().clamp(min=1))
        return usage

    def reset_expert_usage(self) -> None:
        for layer in self.layers:
            if isinstance(layer.mlp, MixtureOfExperts):
                layer.mlp.expert_counts.zero_()
