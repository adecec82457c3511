"""A dense MLP: gated (gate, up, down: SwiGLU, GeGLU) or plain (up, down: GPT-2, relu^2)."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class DenseMLP(Kind):
    """A dense MLP: gated (gate, up, down: SwiGLU, GeGLU) or plain (up, down: GPT-2, relu^2)."""

    width: int
    gated: bool = True
    bias: bool = False
    scalars: int = 0  # learned scalars of its activation (Apertus's xIELU: alpha_p and alpha_n)
    sub_norm: bool = False  # a norm over the intermediate before down_proj (BitNet)
    scales: int = 0  # learned intermediate-wide vectors (Dory's nGPT suv_gate and suv_up)

    label = "dense MLP"

    def shapes(self) -> dict[Sym, int]:
        return {n.d_ff: self.width}

    def weights(self, s: Resolve) -> sympy.Expr:
        d, f = n.d.symbol, s(n.d_ff)
        total = (3 if self.gated else 2) * d * f
        if self.bias:
            total += (2 * f + d) if self.gated else (f + d)
        return total + self.scalars

    def norms(self, s: Resolve) -> sympy.Expr:
        return (int(self.sub_norm) + self.scales) * s(n.d_ff)

    def dense_mlps(self) -> int:
        return 1

    def activation_values(self, s: Resolve) -> sympy.Expr:
        # act(gate)·up reads two d_ff-wide halves and writes one; a plain activation reads one and writes one.
        return (3 if self.gated else 2) * s(n.d_ff)


def read(k: Keys, spec: Spec) -> DenseMLP:
    """intermediate_size wide; gated unless the family entry says not, biased where it says."""
    hidden = k.int("hidden_size")
    width = k.int("intermediate_size", spec.number(k, "width_factor", 0) * hidden or None)
    divisor = spec.number(k, "width_divisor", 1)  # RecurrentGemma's MLP is intermediate_size // 2 wide
    return DenseMLP(
        width // divisor,
        spec.flag(k, "gated", True),
        spec.flag(k, "bias"),
        scalars=spec.number(k, "scalars", 0),
        sub_norm=spec.flag(k, "sub_norm"),
        scales=spec.number(k, "scales", 0),
    )
