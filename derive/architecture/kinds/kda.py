"""Kimi delta attention (Kimi Linear): a gated delta rule with a per-channel decay, a d x d state per head."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class KimiDelta(Kind):
    """Kimi delta attention (Kimi Linear, arXiv:2510.26692): Qwen's gated delta rule, its decay per channel.

    n_lv heads of one width d_lv for queries, keys and values alike. Parameters after transformers'
    KimiLinearDeltaAttention: q_proj, k_proj, v_proj (d to n_lv d_lv each), a depthwise conv over the three
    (3 n_lv d_lv channels, c_cv taps, no bias), the forget gate (f_a_proj d to d_lv, f_b_proj d_lv to
    n_lv d_lv, an n_lv d_lv-wide dt_bias, an n_lv-wide A_log), b_proj (d to n_lv), the output gate (g_a_proj
    d to d_lv, g_b_proj d_lv to n_lv d_lv), a d_lv-wide gated norm, o_proj; no biases. full_rank_gate: the
    forget and output gates are each one d to n_lv d_lv projection (f_proj, g_proj) instead of the d_lv-rank
    pair (Ling 2.5's BailingHybridKimiDeltaAttention; Kimi's use_full_rank_gate).

    State per sequence, as vLLM sizes it (MambaStateShapeCalculator.kda_state_shape in
    model_executor/layers/mamba/mamba_utils.py): a (n_lv, d_lv, d_lv) recurrent state, kept in fp32
    (kda_state_dtype), and a conv window of c_cv - 1 inputs over the 3 n_lv d_lv conv channels, in the cache dtype.
    S_t = (I - b k k^T) Diag(a_t) S + b k v^T, o = S^T q: three state-sized products a token, as the gated
    delta-net (the per-channel decay is elementwise).
    """

    heads: int
    head_dim: int
    conv_kernel: int
    full_rank_gate: bool = False

    tag = "kda"
    names = {"kda": "Kimi-delta-attention"}
    label = "Kimi delta attention (linear)"

    def shapes(self) -> dict[Sym, int]:
        return {n.n_lv: self.heads, n.d_lv: self.head_dim, n.c_cv: self.conv_kernel}

    def weights(self, s: Resolve) -> sympy.Expr:
        d, dh, nh = n.d.symbol, s(n.d_lv), s(n.n_lv)
        inner = nh * dh
        projections = 3 * d * inner + inner * d  # q, k, v and o
        conv = 3 * inner * s(n.c_cv)
        gate = d * inner if self.full_rank_gate else d * dh + dh * inner  # f_proj or f_a, f_b (g likewise)
        forget = gate + inner + nh  # and dt_bias, A_log
        return projections + conv + forget + d * nh + gate  # and b_proj, the output gate

    def norms(self, s: Resolve) -> sympy.Expr:
        return s(n.d_lv)

    def state_values(self, s: Resolve) -> sympy.Expr:
        return s(n.n_lv) * s(n.d_lv) ** 2

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return 3 * s(n.n_lv) * s(n.d_lv) * (s(n.c_cv) - 1)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        return 3 * self.state_values(s)

    def head_count(self) -> int:
        return self.heads

    def head_width(self) -> int:
        return self.head_dim


def read(k: Keys, spec: Spec) -> KimiDelta:
    return KimiDelta(
        k.int("linear_num_heads"),
        k.int("linear_head_dim"),
        k.int("linear_conv_kernel_dim", 4),
        full_rank_gate=spec.flag(k, "full_rank_gate"),
    )
