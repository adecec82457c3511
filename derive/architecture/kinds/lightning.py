"""Lightning attention (MiniMax-01): linear attention with a fixed per-head decay, a d_h x d_h state per head."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from derive.core.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class Lightning(Kind):
    """Lightning attention (MiniMax-01, arXiv:2501.08313): linear attention with a fixed decay per head.

    Parameters after transformers' MiniMaxLightningAttention: qkv_proj (d to 3 n_h d_h), output_gate (d to
    n_h d_h, a sigmoid gate), out_proj (n_h d_h to d), all without bias, and an RMSNorm over n_h d_h; the decay
    rates are buffers. It keeps no convolution.

    State per sequence: one d_h x d_h matrix kv = sum_t exp(-s (T - t)) k_t^T v_t per head, as vLLM's
    MiniMaxText01LinearAttention sizes it (model_executor/layers/mamba/linear_attn.py, state shape
    (num_heads, head_dim, head_dim), and MambaStateShapeCalculator.linear_attention_state_shape). A token
    decays and adds k^T v (one MAC a state value) and reads q kv (another).
    """

    heads: int
    head_dim: int

    tag = "ltn"
    names = {"ltn": "lightning-attention"}
    label = "lightning attention (linear, decayed)"

    def shapes(self) -> dict[Sym, int]:
        return {n.n_h: self.heads, n.d_h: self.head_dim}

    def weights(self, s: Resolve) -> sympy.Expr:
        inner = s(n.n_h) * s(n.d_h)
        return 3 * n.d.symbol * inner + n.d.symbol * inner + inner * n.d.symbol  # qkv, output gate, out

    def norms(self, s: Resolve) -> sympy.Expr:
        return s(n.n_h) * s(n.d_h)

    def state_values(self, s: Resolve) -> sympy.Expr:
        return s(n.n_h) * s(n.d_h) ** 2

    def state_macs(self, s: Resolve) -> sympy.Expr:
        return 2 * self.state_values(s)

    def head_count(self) -> int:
        return self.heads

    def head_width(self) -> int:
        return self.head_dim


def read(k: Keys, spec: Spec) -> Lightning:
    hidden, heads = k.int("hidden_size"), k.int("num_attention_heads")
    if k.has("head_dim"):
        return Lightning(heads, k.int("head_dim"))
    if hidden % heads:
        raise CatalogError(
            f"config for {k.name}: {k.spelt('num_attention_heads')}={heads} does not divide "
            f"{k.spelt('hidden_size')}={hidden}",
            "Give 'head_dim' explicitly or fix the head count",
        )
    return Lightning(heads, hidden // heads)
