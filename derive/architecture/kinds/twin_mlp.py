"""A layer's dense MLPs when it has more than one of one shape, each with its own weights (LongCat-Flash's two)."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Resolve
from derive.architecture.kinds.mlp import DenseMLP
from derive.architecture.kinds.mlp import read as read_mlp
from derive.architecture.spec import Spec


@dataclass(frozen=True)
class TwinMLP(DenseMLP):
    """`copies` dense MLPs of width d_ff in one layer (transformers' LongcatFlashDecoderLayer.mlps: two
    LongcatFlashMLP, gate/up/down without bias, one after each of the layer's two attentions)."""

    copies: int = 2

    label = "dense MLPs"

    def weights(self, s: Resolve) -> sympy.Expr:
        return self.copies * super().weights(s)

    def norms(self, s: Resolve) -> sympy.Expr:
        return self.copies * super().norms(s)

    def dense_mlps(self) -> int:
        return self.copies

    def activation_values(self, s: Resolve) -> sympy.Expr:
        return self.copies * super().activation_values(s)


def read(k: Keys, spec: Spec) -> TwinMLP:
    """The plain MLP's reading (intermediate_size, gated, bias), `copies` times (default 2)."""
    one = read_mlp(k, spec)
    return TwinMLP(one.width, one.gated, one.bias, one.scalars, one.sub_norm, copies=spec.number(k, "copies", 2))
