"""A mixture of experts whose every expert, routed and shared, ends in its own d-wide RMSNorm (ERGO)."""

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
class NormedMoE(MoE):
    """transformers' ErgoMoE: routed experts (ErgoExperts: up_proj and down_proj, ungated relu^2) each followed by
    its own d-wide norm (post_expert_norm, an E x d weight), and shared experts (ErgoSharedExpert) with one d-wide
    norm after them. A routed expert's norm is counted with that expert, so a token counts only the k_e it uses;
    the shared experts' norm is an inner norm of the block."""

    def expert(self, s: Resolve) -> sympy.Expr:
        return super().expert(s) + n.d.symbol

    def norms(self, s: Resolve) -> sympy.Expr:
        return n.d.symbol if self.shared else sympy.Integer(0)


def read(k: Keys, spec: Spec) -> NormedMoE:
    moe = read_moe(k, spec)
    return NormedMoE(**{f.name: getattr(moe, f.name) for f in fields(moe)})
