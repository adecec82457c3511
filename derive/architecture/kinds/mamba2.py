"""A Mamba-2 mixer (Nemotron-H): a d_m x d_st state per head, B and C shared by groups, a causal conv."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.symbols import Sym
from formulas import notation as n


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
    proj_bias: bool = False  # in_proj's bias
    out_bias: bool = False  # out_proj's bias (Nemotron-H's use_bias sets both; Falcon-H1 sets them apart)
    norm: bool = True  # the gated RMSNorm over the inner width (Falcon-H1 without mamba_rms_norm: none)

    tag = "ssm"
    names = {"ssm": "Mamba-2"}
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
            total += projected
        if self.out_bias:
            total += d
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        return self._inner(s) if self.norm else sympy.Integer(0)

    def state_values(self, s: Resolve) -> sympy.Expr:
        return self._inner(s) * s(n.d_st)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return self._conv_width(s) * (s(n.c_cv) - 1)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        # h = exp(dt A) h + dt x B^T, y = h C: a decay-and-write and a read per state value
        # (Dao and Gu 2024, "Transformers are SSMs", arXiv:2405.21060, sec. 3).
        return 2 * self.state_values(s)

    def head_count(self) -> int:
        return self.heads


def read(k: Keys, spec: Spec) -> Mamba2:
    return Mamba2(
        k.int("mamba_num_heads"),
        k.int("mamba_head_dim"),
        k.int("ssm_state_size"),
        k.int("n_groups"),
        k.int("conv_kernel"),
        conv_bias=spec.flag(k, "conv_bias", True),
        proj_bias=spec.flag(k, "proj_bias"),
        out_bias=spec.flag(k, "out_bias") if "out_bias" in spec else spec.flag(k, "proj_bias"),
        norm=spec.flag(k, "norm", True),
    )
