"""A mixture of experts whose block adds one d-wide output bias after the experts (JetMoE's JetMoeMoE)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Resolve
from derive.architecture.kinds.moe import MoE
from derive.architecture.kinds.moe import read as read_moe
from derive.architecture.spec import Spec
from formulas import notation as n


@dataclass(frozen=True)
class BiasedMoE(MoE):
    """transformers' JetMoeMoE: E gated experts (input_linear d -> 2 d_e, output_linear d_e -> d, no biases),
    a router d -> E without bias, and `bias`, one d-wide vector added to the block's output for every token.
    That bias is on every token's path, as the router is, so it is counted with the router's parameters."""

    def router(self, s: Resolve) -> sympy.Expr:
        return super().router(s) + n.d.symbol


def read(k: Keys, spec: Spec) -> BiasedMoE:
    moe = read_moe(k, spec)
    return BiasedMoE(**{f.name: getattr(moe, f.name) for f in fields(moe)})
