"""Doge's dynamic-mask attention: softmax attention plus a learned per-head mask from the values (DogeAttention)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.attention import Attention
from derive.architecture.kinds.attention import read as read_attention
from derive.architecture.kinds.base import FULL, Resolve, Span
from derive.architecture.spec import Spec
from formulas import notation as n


@dataclass(frozen=True)
class DynamicMaskAttention(Attention):
    """transformers' DogeAttention: GQA attention (q, k, v, o; head q/k norms as the entry says) and a dynamic
    mask: dt_proj (n_kv d_h -> n_kv over the value states, biased with attention_bias) and A (n_kv), giving each
    KV head a learned bias over key positions; past keep_window_size tokens only the top keep_window_size keys are kept.

    The cache is plain attention's (a key and a value per KV head, every token); the mask adds n_kv x n_kv d_h
    multiply-accumulates a token, counted with the weights.
    """

    def weights(self, s: Resolve) -> sympy.Expr:
        kv = s(n.n_kv)
        return super().weights(s) + kv * kv * s(n.d_h) + kv + (kv if self.qkv_bias else 0)


def read(k: Keys, spec: Spec) -> DynamicMaskAttention:
    """As attention; a sliding window where the config gives sliding_window (DogeModel's mask)."""
    window = Span("sliding", k.int("sliding_window")) if k.has("sliding_window") else FULL
    plain = read_attention(k, spec, window)
    return DynamicMaskAttention(**{f.name: getattr(plain, f.name) for f in fields(plain)})
