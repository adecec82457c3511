"""Layer kinds: each mixer (how tokens talk) and MLP owns its parameter, cache and FLOP formulas.

A kind is a small frozen record of its shapes, in the counts a config gives. Its
formulas are SymPy expressions over shape symbols; `sym(base)` names the symbol
this layer uses for a base shape (tagged when another layer of the model has a
different value for it, as Gemma 4's global layers have other head counts).
Per-layer counts are pure numbers: the model multiplies them by its layer counts.

Sources for the shapes are transformers' modeling files, one per family; cache
and state sizes follow vLLM's `kv_cache_interface.py` (one spec per layer kind).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from derive.symbols import Sym
from formulas import notation as n

Resolve = Callable[[Sym], sympy.Symbol]


@dataclass(frozen=True)
class Span:
    """How many tokens of its sequence a layer attends to and caches: all, a window, a chunk."""

    kind: str  # "full", "sliding", "chunked"
    tokens: int = 0

    @property
    def symbol(self) -> Sym | None:
        return {"full": None, "sliding": n.S_win, "chunked": n.S_chunk}[self.kind]

    def of(self, context: sympy.Expr) -> sympy.Expr:
        """The tokens held at `context`: all of them, or at most the window (chunk)."""
        return context if self.symbol is None else sympy.Min(context, self.symbol.symbol)

    def prompt_mean(self, prompt: sympy.Expr) -> sympy.Expr:
        """Tokens attended to, averaged over a causal prompt: p/2 for full, min(p,W) - min(p,W)^2/(2p) for a window.

        A chunk of C tokens restarts every C tokens; averaged over whole chunks it is C/2, and the window
        form is the same shape, so it serves as an upper bound there.
        """
        if self.symbol is None:
            return prompt / 2
        held = sympy.Min(prompt, self.symbol.symbol)
        return held - held**2 / (2 * prompt)


FULL = Span("full")


class Kind:
    """What every layer part answers: its shapes, parameters and per-token costs (zero where it has none)."""

    tag: str = ""  # how its layer-count symbol is tagged in a hybrid model (L_swa, L_lin, ...)
    label: str = ""  # how the derivation names it

    def shapes(self) -> dict[Sym, int]:
        return {}

    def weights(self, s: Resolve) -> sympy.Expr:
        """Parameters that do arithmetic per token (matmuls, biases, convolutions), one layer."""
        return sympy.Integer(0)

    def norms(self, s: Resolve) -> sympy.Expr:
        """Normalisation parameters inside the part, one layer (elementwise: no matmul)."""
        return sympy.Integer(0)

    def cached_values(self, s: Resolve) -> sympy.Expr:
        """Values one layer caches per token of context (K and V, a latent, indexer keys)."""
        return sympy.Integer(0)

    def span(self) -> Span:
        return FULL

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        """Multiply-accumulates per query token per attended token, one layer (all heads, scores and values)."""
        return sympy.Integer(0)

    def state_values(self, s: Resolve) -> sympy.Expr:
        """Values of the fixed-size recurrent state one sequence keeps in one layer."""
        return sympy.Integer(0)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        """Values of the convolution window one sequence keeps in one layer (cached in the KV dtype)."""
        return sympy.Integer(0)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        """Multiply-accumulates per token to update and read the recurrent state, one layer."""
        return sympy.Integer(0)

    def describe(self) -> str:
        return self.label


@dataclass(frozen=True)
class Attention(Kind):
    """Softmax attention: MHA, GQA or MQA, over all tokens, a sliding window or a chunk.

    qk_norm: "" none, "head" (one d_h-wide norm for q and one for k, Qwen3), "layer" (norms over all
    heads, MiniMax M2). gate: "" none, "output" (q_proj doubled into a query and a sigmoid gate, Qwen3.5),
    "head" (one gate per head from the hidden state, Step-3.7). k_eq_v: the key projection also gives
    the value (Gemma 4's global layers): no v_proj; the cache still holds a key and a value.
    """

    heads: int
    kv_heads: int
    head_dim: int
    window: Span = FULL
    qkv_bias: bool = False
    out_bias: bool = False
    qk_norm: str = ""
    sinks: bool = False
    gate: str = ""
    k_eq_v: bool = False
    shape_tag: str = ""  # tags n_kv, d_h (and n_h) when another attention kind of the model differs

    @property
    def tag(self) -> str:  # type: ignore[override]
        return {"full": "full", "sliding": "swa", "chunked": "chunk"}[self.window.kind] + self.shape_tag

    @property
    def label(self) -> str:  # type: ignore[override]
        what = {"full": "full attention", "sliding": "sliding-window attention", "chunked": "chunked attention"}
        return what[self.window.kind] + (f" ({self.shape_tag})" if self.shape_tag else "")

    def shapes(self) -> dict[Sym, int]:
        out = {n.n_h: self.heads, n.n_kv: self.kv_heads, n.d_h: self.head_dim}
        if self.window.symbol is not None:
            out[self.window.symbol] = self.window.tokens
        return out

    def weights(self, s: Resolve) -> sympy.Expr:
        d, nh, nkv, dh = n.d.symbol, s(n.n_h), s(n.n_kv), s(n.d_h)
        q, kv = nh * dh, nkv * dh
        values = 1 if self.k_eq_v else 2
        total = d * q * (2 if self.gate == "output" else 1) + values * d * kv + q * d
        if self.qkv_bias:
            total += q + values * kv
        if self.out_bias:
            total += d
        if self.sinks:
            total += nh  # one learned sink logit per head (gpt-oss)
        if self.gate == "head":
            total += nh * d
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        nh, nkv, dh = s(n.n_h), s(n.n_kv), s(n.d_h)
        if self.qk_norm == "head":
            return 2 * dh
        if self.qk_norm == "layer":
            return (nh + nkv) * dh
        return sympy.Integer(0)

    def cached_values(self, s: Resolve) -> sympy.Expr:
        # Gemma 4's k_eq_v layers still cache a value: the raw key, normed without RoPE (modeling_gemma4).
        return 2 * s(n.n_kv) * s(n.d_h)

    def span(self) -> Span:
        return self.window

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return 2 * s(n.n_h) * s(n.d_h)  # q.k and the weighted sum of v, per head


@dataclass(frozen=True)
class Indexer:
    """DeepSeek sparse attention's lightning indexer (V3.2, GLM-5): it scores every cached token and keeps top-k."""

    heads: int
    head_dim: int
    topk: int


@dataclass(frozen=True)
class LatentAttention(Kind):
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2), optionally sparse (DeepSeek V3.2, GLM-5).

    The cache holds the kv_lora_rank-wide latent and the rotary key per token (DeepSeek-V2, arXiv:2405.04434,
    sec. 2.1); with the up-projections absorbed, each head scores against that (r_kv + d_rope)-wide entry and sums
    r_kv-wide values. A sparse layer attends to the indexer's top-k tokens and caches the indexer's keys too.
    """

    heads: int
    q_lora_rank: int
    kv_lora_rank: int
    nope_dim: int
    rope_dim: int
    v_dim: int
    qkv_bias: bool = False
    indexer: Indexer | None = None

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "dsa" if self.indexer else "mla"

    @property
    def label(self) -> str:  # type: ignore[override]
        return "sparse latent attention (MLA + indexer)" if self.indexer else "latent attention (MLA)"

    def shapes(self) -> dict[Sym, int]:
        out = {n.n_h: self.heads, n.r_kv: self.kv_lora_rank, n.d_nope: self.nope_dim, n.d_rope: self.rope_dim}
        out[n.d_v] = self.v_dim
        if self.q_lora_rank:
            out[n.r_q] = self.q_lora_rank
        if self.indexer:
            out.update({n.n_idx: self.indexer.heads, n.d_idx: self.indexer.head_dim, n.S_top: self.indexer.topk})
        return out

    def weights(self, s: Resolve) -> sympy.Expr:
        d, nh, rkv, nope, rope, dv = n.d.symbol, s(n.n_h), s(n.r_kv), s(n.d_nope), s(n.d_rope), s(n.d_v)
        q_width = nh * (nope + rope)
        query = d * s(n.r_q) + s(n.r_q) * q_width if self.q_lora_rank else d * q_width
        total = query + d * (rkv + rope) + rkv * nh * (nope + dv) + nh * dv * d  # q, kv_a (+rope), kv_b, o
        if self.indexer:
            ni, di = s(n.n_idx), s(n.d_idx)
            q_in = s(n.r_q) if self.q_lora_rank else d
            total += q_in * ni * di + d * di + d * ni + di  # wq_b, wk, weights_proj, the k_norm's bias
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        latent = s(n.r_kv) + (s(n.r_q) if self.q_lora_rank else 0)
        return latent + (s(n.d_idx) if self.indexer else 0)  # the indexer's k_norm weight

    def cached_values(self, s: Resolve) -> sympy.Expr:
        return s(n.r_kv) + s(n.d_rope) + (s(n.d_idx) if self.indexer else 0)

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return s(n.n_h) * (2 * s(n.r_kv) + s(n.d_rope))  # score over r_kv + d_rope, value sum over r_kv

    def indexer_macs(self, s: Resolve) -> sympy.Expr:
        return s(n.n_idx) * s(n.d_idx) if self.indexer else sympy.Integer(0)


@dataclass(frozen=True)
class CompressedAttention(Kind):
    """DeepSeek V4's attention: one shared key-value head over a sliding window, plus compressed entries.

    ratio 0: the window only. Otherwise every `ratio` tokens are compressed into one entry the layer also
    caches and attends to; with an indexer (compressed sparse attention, ratio 4) a query attends to the
    indexer's top-k compressed entries, without one (heavily compressed, ratio 128) to all of them.
    Parameters after transformers' modeling_deepseek_v4: sinks, q_a/q_b with a q norm, kv_proj with its norm,
    the grouped output LoRA (o_a, o_b), and each compressor's position bias, kv and gate projections and norm.
    """

    heads: int
    q_lora_rank: int
    head_dim: int
    out_groups: int
    out_lora_rank: int
    window: Span
    ratio: int = 0
    indexer: Indexer | None = None

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "swa" if not self.ratio else ("csa" if self.indexer else "hca")

    @property
    def label(self) -> str:  # type: ignore[override]
        if not self.ratio:
            return "sliding-window attention (shared KV head)"
        return f"{'sparse ' if self.indexer else ''}compressed attention (1 entry per {self.ratio} tokens)"

    def shapes(self) -> dict[Sym, int]:
        out = {n.n_h: self.heads, n.r_q: self.q_lora_rank, n.d_h: self.head_dim, n.S_win: self.window.tokens}
        out.update({n.g_o: self.out_groups, n.r_o: self.out_lora_rank})
        if self.ratio:
            out[n.m_c] = self.ratio
        if self.indexer:
            out.update({n.n_idx: self.indexer.heads, n.d_idx: self.indexer.head_dim, n.S_top: self.indexer.topk})
        return out

    def weights(self, s: Resolve) -> sympy.Expr:
        d, nh, rq, dh = n.d.symbol, s(n.n_h), s(n.r_q), s(n.d_h)
        total = nh + d * rq + rq * nh * dh + d * dh + s(n.r_o) * nh * dh + d * s(n.g_o) * s(n.r_o)
        if self.ratio:
            width = 2 * dh if self.indexer else dh  # the sparse compressor keeps two entries per position
            total += s(n.m_c) * width + 2 * d * width
        if self.indexer:
            ni, di = s(n.n_idx), s(n.d_idx)
            total += s(n.m_c) * 2 * di + 2 * d * 2 * di + rq * ni * di + d * ni
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        total = s(n.r_q) + s(n.d_h)
        if self.ratio:
            total += s(n.d_h)
        if self.indexer:
            total += s(n.d_idx)
        return total

    def cached_values(self, s: Resolve) -> sympy.Expr:
        return s(n.d_h)  # the window's entries: one head whose key is also its value

    def span(self) -> Span:
        return self.window

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return 2 * s(n.n_h) * s(n.d_h)

    def compressed_values(self, s: Resolve) -> sympy.Expr:
        """Values cached per compressed entry (with the indexer's key for a sparse layer)."""
        if not self.ratio:
            return sympy.Integer(0)
        return s(n.d_h) + (s(n.d_idx) if self.indexer else 0)

    def indexer_macs(self, s: Resolve) -> sympy.Expr:
        return s(n.n_idx) * s(n.d_idx) if self.indexer else sympy.Integer(0)


@dataclass(frozen=True)
class GatedDeltaNet(Kind):
    """Linear attention as Qwen3.5's gated delta-net: a d_lk x d_lv state per value head, and a causal conv.

    Parameters after transformers' Qwen3_5GatedDeltaNet: in_proj_qkv, in_proj_z, in_proj_a and _b,
    conv1d (no bias), dt_bias and A_log, a d_lv-wide gated norm, out_proj.
    """

    key_heads: int
    value_heads: int
    key_dim: int
    value_dim: int
    conv_kernel: int

    tag = "lin"
    label = "linear attention (gated delta-net)"

    def shapes(self) -> dict[Sym, int]:
        return {
            n.n_lk: self.key_heads,
            n.n_lv: self.value_heads,
            n.d_lk: self.key_dim,
            n.d_lv: self.value_dim,
            n.c_cv: self.conv_kernel,
        }

    def _conv_width(self, s: Resolve) -> sympy.Expr:
        return 2 * s(n.n_lk) * s(n.d_lk) + s(n.n_lv) * s(n.d_lv)

    def weights(self, s: Resolve) -> sympy.Expr:
        d, values = n.d.symbol, s(n.n_lv) * s(n.d_lv)
        conv = self._conv_width(s)
        return d * conv + d * values + 2 * d * s(n.n_lv) + conv * s(n.c_cv) + 2 * s(n.n_lv) + values * d

    def norms(self, s: Resolve) -> sympy.Expr:
        return s(n.d_lv)

    def state_values(self, s: Resolve) -> sympy.Expr:
        return s(n.n_lv) * s(n.d_lk) * s(n.d_lv)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return self._conv_width(s) * (s(n.c_cv) - 1)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        # S_t = a_t S (I - b k k^T) + b v k^T, o = S_t q: three state-sized products a token
        # (Yang et al. 2024, "Gated Delta Networks", arXiv:2412.06464, eq. 10).
        return 3 * self.state_values(s)


@dataclass(frozen=True)
class Mamba2(Kind):
    """A Mamba-2 mixer (Nemotron-H): a d_m x d_st state per head, B and C shared by groups, a causal conv.

    Parameters after transformers' NemotronHMamba2Mixer: in_proj (z, x, B, C, dt), conv1d (+ bias),
    dt_bias, A_log, D, a gated norm over the inner width, out_proj.
    """

    heads: int
    head_dim: int
    state: int
    groups: int
    conv_kernel: int
    conv_bias: bool = True
    proj_bias: bool = False

    tag = "ssm"
    label = "Mamba-2 state space"

    def shapes(self) -> dict[Sym, int]:
        return {
            n.n_m: self.heads,
            n.d_m: self.head_dim,
            n.d_st: self.state,
            n.g_m: self.groups,
            n.c_cv: self.conv_kernel,
        }

    def _inner(self, s: Resolve) -> sympy.Expr:
        return s(n.n_m) * s(n.d_m)

    def _conv_width(self, s: Resolve) -> sympy.Expr:
        return self._inner(s) + 2 * s(n.g_m) * s(n.d_st)

    def weights(self, s: Resolve) -> sympy.Expr:
        d, inner, conv = n.d.symbol, self._inner(s), self._conv_width(s)
        projected = 2 * inner + 2 * s(n.g_m) * s(n.d_st) + s(n.n_m)  # z, x, B, C and dt
        total = d * projected + conv * s(n.c_cv) + 3 * s(n.n_m) + inner * d
        if self.conv_bias:
            total += conv
        if self.proj_bias:
            total += projected + d
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        return self._inner(s)

    def state_values(self, s: Resolve) -> sympy.Expr:
        return self._inner(s) * s(n.d_st)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return self._conv_width(s) * (s(n.c_cv) - 1)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        # h = exp(dt A) h + dt x B^T, y = h C: a decay-and-write and a read per state value
        # (Dao and Gu 2024, "Transformers are SSMs", arXiv:2405.21060, sec. 3).
        return 2 * self.state_values(s)


@dataclass(frozen=True)
class DenseMLP(Kind):
    """A dense MLP: gated (gate, up, down: SwiGLU, GeGLU) or plain (up, down: GPT-2, relu^2)."""

    width: int
    gated: bool = True
    bias: bool = False

    label = "dense MLP"

    def shapes(self) -> dict[Sym, int]:
        return {n.d_ff: self.width}

    def weights(self, s: Resolve) -> sympy.Expr:
        d, f = n.d.symbol, s(n.d_ff)
        total = (3 if self.gated else 2) * d * f
        if self.bias:
            total += (2 * f + d) if self.gated else (f + d)
        return total


@dataclass(frozen=True)
class MoE(Kind):
    """A mixture of experts: a router, E routed experts of which each token uses k, and shared experts.

    expert_bias: gpt-oss biases its experts' gate_up and down projections. router_bias: a learned router bias
    that is a parameter (gpt-oss); DeepSeek's e_score_correction_bias is a buffer in transformers and is
    counted only where `router_bias` says so. router_scales: Gemma 4's router has a d-wide and an E-wide scale.
    shared_gate: Qwen's sigmoid gate on the shared expert (one d-wide row). correction_bias: DeepSeek-V3's
    aux-loss-free routing keeps an E-wide e_score_correction_bias per MoE layer, stored in the checkpoint.
    """

    experts: int
    top_k: int
    width: int
    gated: bool = True
    expert_bias: bool = False
    router_bias: bool = False
    router_scales: bool = False
    correction_bias: bool = False
    shared: int = 0
    shared_width: int = 0
    shared_gate: bool = False

    label = "mixture of experts"

    def shapes(self) -> dict[Sym, int]:
        out = {n.E: self.experts, n.k_e: self.top_k, n.d_e: self.width}
        if self.shared:
            out.update({n.E_s: self.shared, n.d_s: self.shared_width})
        return out

    def expert(self, s: Resolve) -> sympy.Expr:
        d, f = n.d.symbol, s(n.d_e)
        total = (3 if self.gated else 2) * d * f
        if self.expert_bias:
            total += (2 * f if self.gated else f) + d
        return total

    def router(self, s: Resolve) -> sympy.Expr:
        d, e = n.d.symbol, s(n.E)
        return e * d + (e if self.router_bias else 0) + ((d + e) if self.router_scales else 0)

    def shared_experts(self, s: Resolve) -> sympy.Expr:
        if not self.shared:
            return sympy.Integer(0)
        d = n.d.symbol
        return s(n.E_s) * (3 if self.gated else 2) * d * s(n.d_s) + (d if self.shared_gate else 0)
