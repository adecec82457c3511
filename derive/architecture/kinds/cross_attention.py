"""Gated cross-attention to image features (Mllama's MllamaTextCrossAttention): text queries, vision keys/values."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.attention import read_heads
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class CrossAttention(Kind):
    """A decoder layer that attends to the vision tower's output instead of to the text (Llama 3.2 Vision).

    Parameters after transformers' MllamaCrossAttentionDecoderLayer: q_proj (d -> n_h d_h), k_proj and v_proj
    (d -> n_kv d_h, over the projected image features), o_proj, no biases; q_norm and k_norm over one head
    (d_h each); two learned scalar tanh gates (cross_attn_attn_gate, cross_attn_mlp_gate).

    Cache: the layer keeps the image tokens' keys and values (2 n_kv d_h per image token), computed once per
    image and never grown by text tokens, so nothing per token of text context; its size is the image's token
    count, which the text config does not give, and is left out (a note says so). Scores per text token are
    over the image tokens, likewise not counted in the per-context attention FLOPs.
    """

    heads: int
    kv_heads: int
    head_dim: int

    tag = "xattn"
    names = {"xattn": "cross-attention"}
    label = "gated cross-attention to image features"

    def shapes(self) -> dict[Sym, int]:
        return {n.n_h: self.heads, n.n_kv: self.kv_heads, n.d_h: self.head_dim}

    def qk_normed(self) -> int:
        return 1  # q_norm and k_norm, always

    def weights(self, s: Resolve) -> sympy.Expr:
        d, q, kv = n.d.symbol, s(n.n_h) * s(n.d_h), s(n.n_kv) * s(n.d_h)
        return 2 * d * q + 2 * d * kv + 2  # q, o, k, v and the two scalar gates

    def norms(self, s: Resolve) -> sympy.Expr:
        return 2 * s(n.d_h)

    def head_count(self) -> int:
        return self.heads

    def kv_head_count(self) -> int:
        return self.kv_heads

    def head_width(self) -> int:
        return self.head_dim

    def notes(self) -> tuple[str, ...]:
        return (
            "the cross-attention layers' keys and values of the image tokens (2 x KV heads x head_dim each, once "
            "per image) are left out of the cache: they do not grow with the text",
        )


def read(k: Keys, spec: Spec) -> CrossAttention:
    return CrossAttention(*read_heads(k, spec))
