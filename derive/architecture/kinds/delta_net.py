"""Linear attention as a gated delta-net (Qwen3.5, Qwen3-Next): a fixed state per value head, and a causal conv."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.symbols import Sym
from formulas import notation as n


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
    names = {"lin": "linear-attention"}
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

    def head_count(self) -> int:
        return self.value_heads


def read(k: Keys, spec: Spec) -> GatedDeltaNet:
    return GatedDeltaNet(
        k.int("linear_num_key_heads"),
        k.int("linear_num_value_heads"),
        k.int("linear_key_head_dim"),
        k.int("linear_value_head_dim"),
        k.int("linear_conv_kernel_dim", 4),
    )
