"""A Mamba-1 mixer (Mamba, Falcon-Mamba, Jamba): a d_in x d_st selective state, input-dependent dt, B and C."""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.symbols import Sym, define
from formulas import notation as n

d_in = define("mamba_inner", "d_in", "", r"d_{in}", "Mamba-1 inner width (expand x hidden): channels of the scan")
r_dt = define("dt_rank", "r_dt", "", r"r_{dt}", "Mamba-1 rank of the time-step (dt) projection")


@dataclass(frozen=True)
class Mamba1(Kind):
    """A Mamba-1 mixer (Gu and Dao 2023, arXiv:2312.00752, alg. 2): one d_st-wide state per inner channel.

    Parameters after transformers' MambaMixer (and FalconMambaMixer, JambaMambaMixer): in_proj d -> 2 d_in
    (x and the gate z), a depthwise conv1d of c_cv taps (+ bias), x_proj d_in -> r_dt + 2 d_st (dt, B, C),
    dt_proj r_dt -> d_in with a bias, A_log (d_in x d_st), D (d_in), out_proj d_in -> d. proj_bias: in_proj
    and out_proj carry biases (use_bias). inner_norms: Jamba's RMSNorms over dt (r_dt), B and C (d_st each);
    Falcon-Mamba's are weightless (buffers), so not counted.

    State per sequence, as vLLM's MambaSpec holds it for a Mamba-1 layer (mamba_utils.py,
    MambaStateShapeCalculator.mamba1_state_shape): the SSM state h, d_in x d_st (kept in the state dtype,
    fp32), and the conv window, the last c_cv - 1 inputs of the d_in conv channels ((c_cv - 1) x d_in).
    """

    inner: int
    state: int
    rank: int
    conv_kernel: int
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = False

    tag = "ssm1"
    names = {"ssm1": "Mamba-1"}
    label = "Mamba-1 state space"

    def shapes(self) -> dict[Sym, int]:
        return {d_in: self.inner, n.d_st: self.state, r_dt: self.rank, n.c_cv: self.conv_kernel}

    def weights(self, s: Resolve) -> sympy.Expr:
        d, inner, state, rank = n.d.symbol, s(d_in), s(n.d_st), s(r_dt)
        total = (
            d * 2 * inner  # in_proj: x and z
            + inner * s(n.c_cv)  # depthwise conv
            + inner * (rank + 2 * state)  # x_proj: dt, B, C
            + rank * inner
            + inner  # dt_proj and its bias
            + inner * state  # A_log
            + inner  # D
            + inner * d  # out_proj
        )
        if self.conv_bias:
            total += inner
        if self.proj_bias:
            total += 2 * inner + d
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        return s(r_dt) + 2 * s(n.d_st) if self.inner_norms else sympy.Integer(0)

    def state_values(self, s: Resolve) -> sympy.Expr:
        return s(d_in) * s(n.d_st)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return s(d_in) * (s(n.c_cv) - 1)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        # h = exp(dt A) h + dt B x, y = C h: a decay-and-write and a read per state value (arXiv:2312.00752, alg. 2).
        return 2 * self.state_values(s)


def read(k: Keys, spec: Spec) -> Mamba1:
    """d_in = expand x hidden, or the `inner` key where the entry names one and the config gives it (MambaConfig
    keeps a given intermediate_size; Jamba's mixer always takes mamba_expand x hidden); r_dt = ceil(hidden / 16)
    for "auto", as the config classes compute them."""
    hidden = k.int("hidden_size")
    inner = spec.raw("inner")
    rank = k.get("time_step_rank", "auto")
    return Mamba1(
        k.int(inner) if inner and k.has(inner) else k.int("expand", 2) * hidden,
        k.int("state_size"),
        math.ceil(hidden / 16) if rank == "auto" else k.int("time_step_rank"),
        k.int("conv_kernel"),
        conv_bias=spec.flag(k, "conv_bias", True),
        proj_bias=spec.flag(k, "proj_bias"),
        inner_norms=spec.flag(k, "inner_norms"),
    )
