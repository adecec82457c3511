"""Attention that reads another layer's keys and values (Gemma 4's KV-shared layers, Kolibri 1.1's kv_source_layers):
it has no k/v projections and caches nothing of its own."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.attention import Attention
from derive.architecture.kinds.attention import read as read_attention
from derive.architecture.kinds.base import FULL, Kind, Resolve, Span
from derive.architecture.spec import Spec
from derive.core.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class SharedKVAttention(Kind):
    """Softmax attention over keys and values another layer computed and cached.

    transformers builds only q_proj (with its q_norm) and o_proj on such a layer: Gemma4TextAttention with
    is_kv_shared_layer reads the cache of the last earlier layer of its type; Kolibri1_1Attention takes
    shared_kv_states[kv_source_layer]; Gemma4UnifiedAssistant's layers read the backbone's cache. Its cache is
    zero values per token: the source layer already holds those keys and values (vLLM's KV-sharing layers allocate
    no cache of their own, kv_sharing_target_layer_name). Its attention arithmetic is the source's shape: n_h
    query heads each score d_h-wide keys and sum d_h-wide values over the span it attends to.
    """

    attention: Attention

    softmax = True
    names = {
        "kvs": "KV-shared full-attention",
        "kvsswa": "KV-shared sliding-window",
        "kvschunk": "KV-shared chunked-attention",
    }

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "kvs" + {"full": "", "sliding": "swa", "chunked": "chunk"}[self.attention.window.kind]

    @property
    def label(self) -> str:  # type: ignore[override]
        return self.attention.label + ", keys and values of an earlier layer"

    def shapes(self) -> dict[Sym, int]:
        return self.attention.shapes()

    def weights(self, s: Resolve) -> sympy.Expr:
        a, d, nh, dh = self.attention, n.d.symbol, s(n.n_h), s(n.d_h)
        gated = 2 if a.gate == "output" else 1
        value = s(n.d_hv) if a.value_dim else dh
        total = d * nh * dh * gated + nh * value * d  # q_proj and o_proj only
        if a.qkv_bias:
            total += nh * dh * gated
        if a.out_bias:
            total += d
        if a.sinks:
            total += nh
        if a.gate == "head":
            total += nh * d
        if a.gate_bias:
            total += nh
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        qk = self.attention.qk_norm
        q = {"head": s(n.d_h), "layer": s(n.n_h) * s(n.d_h)}.get(qk, sympy.Integer(0))  # the q_norm only
        return (2 * q if self.attention.qk_norm_bias else q) + self.attention.head_vectors * s(n.d_h)

    def qk_normed(self) -> int:
        return int(bool(self.attention.qk_norm))

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return self.attention.attention_macs(s)

    def span(self) -> Span:
        return self.attention.span()

    def head_count(self) -> int:
        return self.attention.heads

    def kv_head_count(self) -> int:
        return 0  # it caches no heads of its own

    def head_width(self) -> int:
        return self.attention.head_dim

    def window_tokens(self) -> int:
        return self.attention.window_tokens()


def read(k: Keys, spec: Spec, span: Span = FULL) -> SharedKVAttention:
    """The shared attention keys, the entry's `[attention]` settings, and the span of the layer type it is."""
    return SharedKVAttention(read_attention(k, spec, span))
