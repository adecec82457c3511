"""Softmax attention: MHA, GQA or MQA, over all tokens, a sliding window or a chunk."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import FULL, Kind, Resolve, Span
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from derive.core.symbols import Sym
from formulas import notation as n


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
    qk_norm_bias: bool = False  # the q/k norms are LayerNorms with a bias (Persimmon, StableLM)
    value_dim: int = 0  # a value head narrower or wider than the query/key head (MiMo-V2); 0: the same
    head_vectors: int = 0  # learned head_dim-wide vectors a layer (DiffLlama's four lambdas)
    head_scales: int = 0  # learned n_h x d_h-wide vectors a layer (Dory's nGPT sqk and s_gate)
    sub_norm: bool = False  # a norm over the heads' output before o_proj (BitNet)
    gate_bias: bool = False  # the per-head output gate has a bias (Beam)
    shape_tag: str = ""  # tags n_kv, d_h (and n_h) when another attention kind of the model differs

    softmax = True
    names = {"full": "full-attention", "swa": "sliding-window", "chunk": "chunked-attention"}

    @property
    def tag(self) -> str:  # type: ignore[override]
        return {"full": "full", "sliding": "swa", "chunked": "chunk"}[self.window.kind] + self.shape_tag

    @property
    def label(self) -> str:  # type: ignore[override]
        what = {"full": "full attention", "sliding": "sliding-window attention", "chunked": "chunked attention"}
        return what[self.window.kind] + (f" ({self.shape_tag})" if self.shape_tag else "")

    def shapes(self) -> dict[Sym, int]:
        out = {n.n_h: self.heads, n.n_kv: self.kv_heads, n.d_h: self.head_dim}
        if self.value_dim:
            out[n.d_hv] = self.value_dim
        if self.window.symbol is not None:
            out[self.window.symbol] = self.window.tokens
        return out

    def _value_width(self, s: Resolve) -> sympy.Expr:
        return s(n.d_hv) if self.value_dim else s(n.d_h)

    def weights(self, s: Resolve) -> sympy.Expr:
        d, nh, nkv, dh = n.d.symbol, s(n.n_h), s(n.n_kv), s(n.d_h)
        q, k = nh * dh, nkv * dh
        v = 0 if self.k_eq_v else nkv * self._value_width(s)
        out = nh * self._value_width(s)
        gated = 2 if self.gate == "output" else 1  # q_proj doubled: a query and a gate per channel
        total = d * q * gated + d * (k + v) + out * d
        if self.qkv_bias:
            total += q * gated + k + v
        if self.out_bias:
            total += d
        if self.sinks:
            total += nh  # one learned sink logit per head (gpt-oss)
        if self.gate == "head":
            total += nh * d
        if self.gate_bias:  # one bias a head on the gate, per-head or per-channel (Beam)
            total += nh
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        nh, nkv, dh = s(n.n_h), s(n.n_kv), s(n.d_h)
        widths = {"head": 2 * dh, "layer": (nh + nkv) * dh}.get(self.qk_norm, sympy.Integer(0))
        total = (2 * widths if self.qk_norm_bias else widths) + self.head_vectors * dh + self.head_scales * nh * dh
        return total + (nh * self._value_width(s) if self.sub_norm else 0)

    def qk_normed(self) -> int:
        return int(bool(self.qk_norm))

    def cached_values(self, s: Resolve) -> sympy.Expr:
        # Gemma 4's k_eq_v layers still cache a value: the raw key, normed without RoPE (modeling_gemma4).
        return s(n.n_kv) * (s(n.d_h) + self._value_width(s))

    def span(self) -> Span:
        return self.window

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return s(n.n_h) * (s(n.d_h) + self._value_width(s))  # q.k and the weighted sum of v, per head

    def head_count(self) -> int:
        return self.heads

    def kv_head_count(self) -> int:
        return self.kv_heads

    def head_width(self) -> int:
        return self.head_dim

    def plain(self) -> bool:
        return self.window.kind == "full"

    def window_tokens(self) -> int:
        return self.window.tokens


def read_heads(k: Keys, spec: Spec) -> tuple[int, int, int]:
    """Query heads, KV heads and head width from the shared keys (every attention-like kind reads them so)."""
    hidden, heads = k.int("hidden_size"), k.int("num_attention_heads")
    kv_heads = 1 if spec.flag(k, "multi_query") else k.int("num_key_value_heads", heads)
    kv_heads *= spec.number(k, "kv_heads_factor", 1)  # MiMo-V2's sliding layers: twice the KV heads
    k.divides("num_attention_heads", heads, k.spelt("num_key_value_heads"), kv_heads)
    if k.has("head_dim"):
        head_dim = k.int("head_dim")
    elif hidden % heads and spec.flag(k, "head_dim_floor"):
        head_dim = hidden // heads  # the family's config class rounds down (Glm4MoeConfig's default: 4096 // 96)
    elif hidden % heads:
        raise CatalogError(
            f"config for {k.name}: {k.spelt('num_attention_heads')}={heads} does not divide "
            f"{k.spelt('hidden_size')}={hidden}",
            "Give 'head_dim' explicitly or fix the head count",
        )
    else:
        head_dim = hidden // heads
    return heads, kv_heads, head_dim


def read(k: Keys, spec: Spec, window: Span) -> Attention:
    """Heads, KV heads and head width from the shared keys; biases, norms and gates as the family entry says."""
    heads, kv_heads, head_dim = read_heads(k, spec)
    return Attention(
        heads,
        kv_heads,
        head_dim,
        window,
        qkv_bias=spec.flag(k, "qkv_bias"),
        out_bias=spec.flag(k, "out_bias"),
        qk_norm=spec.text(k, "qk_norm"),
        sinks=spec.flag(k, "sinks"),
        gate=spec.text(k, "gate"),
        k_eq_v=spec.flag(k, "k_eq_v"),
        qk_norm_bias=spec.flag(k, "qk_norm_bias"),
        value_dim=k.int("v_head_dim") if k.has("v_head_dim") and k.int("v_head_dim") != head_dim else 0,
        head_vectors=spec.number(k, "head_vectors", 0),
        head_scales=spec.number(k, "head_scales", 0),
        sub_norm=spec.flag(k, "sub_norm"),
        gate_bias=spec.flag(k, "gate_bias"),
        shape_tag=spec.text(k, "tag"),
    )
