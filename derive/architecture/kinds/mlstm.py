"""xLSTM's mLSTM layer (xLSTM 7B): a matrix memory per head with exponential input and forget gates."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from derive.core.symbols import Sym, define
from formulas import notation as n

d_qk = define("mlstm_qk_width", "d_qk", "", r"d_{qk}", "mLSTM query/key width over all heads (qk_dim_factor x hidden)")
d_mv = define("mlstm_v_width", "d_mv", "", r"d_{mv}", "mLSTM value width over all heads (v_dim_factor x hidden)")


@dataclass(frozen=True)
class MLstm(Kind):
    """xLSTM's mLSTM layer (Beck et al. 2024, arXiv:2405.04517, sec. 2.3; xLSTM 7B, arXiv:2503.13427).

    Parameters after transformers' xLSTMLayer: q and k (d -> d_qk), v and the output gate ogate_preact
    (d -> d_mv), the input and forget gates igate_preact and fgate_preact (d -> n_h, with bias), a d_mv-wide
    multi-head norm (multihead_norm), out_proj (d_mv -> d); no other biases (use_bias false). weight_mode
    "fused" builds the same matrices stacked.

    State per sequence (transformers' mlstm_recurrent_step_native; xLSTMCache): per head the memory C
    (d_qk/n_h x d_mv/n_h), the normaliser n (d_qk/n_h) and the max stabiliser m (1), in
    inference_state_dtype (float32). No convolution. Per token: C = f C + i k v^T and h = C^T q, two
    multiply-accumulates a memory value, one each for n and n.q.
    """

    heads: int
    qk_width: int
    v_width: int

    tag = "mlstm"
    names = {"mlstm": "mLSTM"}
    label = "mLSTM matrix memory (xLSTM)"

    def shapes(self) -> dict[Sym, int]:
        return {n.n_h: self.heads, d_qk: self.qk_width, d_mv: self.v_width}

    def weights(self, s: Resolve) -> sympy.Expr:
        d, h, qk, v = n.d.symbol, s(n.n_h), s(d_qk), s(d_mv)
        return 2 * d * qk + 2 * d * v + 2 * (d * h + h) + v * d

    def norms(self, s: Resolve) -> sympy.Expr:
        return s(d_mv)

    def state_values(self, s: Resolve) -> sympy.Expr:
        h, qk, v = s(n.n_h), s(d_qk), s(d_mv)
        return qk * v / h + qk + h

    def state_macs(self, s: Resolve) -> sympy.Expr:
        return 2 * s(d_qk) * s(d_mv) / s(n.n_h) + 2 * s(d_qk)

    def head_count(self) -> int:
        return self.heads


def read(k: Keys, spec: Spec) -> MLstm:
    """d_qk = int(hidden x qk_dim_factor), d_mv = int(hidden x v_dim_factor), as xLSTMLayer computes them."""
    hidden, heads = k.int("hidden_size"), k.int("num_attention_heads")
    qk, v = int(hidden * k.get("qk_dim_factor", 0.5)), int(hidden * k.get("v_dim_factor", 1.0))
    if qk % heads or v % heads:
        raise CatalogError(
            f"config for {k.name}: {k.spelt('num_attention_heads')}={heads} does not divide the mLSTM widths "
            f"{qk} and {v}",
            "Fix the head count or qk_dim_factor / v_dim_factor",
        )
    return MLstm(heads, qk, v)
