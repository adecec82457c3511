"""A mixture of experts whose router also picks zero experts: identity slots that do no work (LongCat-Flash)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Resolve
from derive.architecture.kinds.moe import MoE
from derive.architecture.kinds.moe import read as read_moe
from derive.architecture.spec import Spec
from derive.core.symbols import Sym, define
from formulas import notation as n

E_z = define("zero_experts", "E_z", "", r"E_{z}", "zero-computation experts the router may pick (LongCat-Flash)")


@dataclass(frozen=True)
class ZeroExpertMoE(MoE):
    """transformers' LongcatFlashMoE: E routed experts and E_z zero experts, whose output is the token itself.

    The router (LongcatFlashTopkRouter.classifier) scores E + E_z slots: (E + E_z) x d weights. Only the E real
    experts hold parameters. A token's top-k may include zero experts (LongCat-Flash, arXiv:2509.01322,
    sec. 2.2), so the k_e routed experts counted active are an upper bound on what a token runs.
    """

    zero: int = 0

    def shapes(self) -> dict[Sym, int]:
        return {**super().shapes(), E_z: self.zero}

    def router(self, s: Resolve) -> sympy.Expr:
        return super().router(s) + s(E_z) * n.d.symbol + (s(E_z) if self.router_bias else 0)


def read(k: Keys, spec: Spec) -> ZeroExpertMoE:
    moe = read_moe(k, spec)
    zero = k.int(spec.raw("zero", "zero_expert_num"), 0, minimum=0)
    return ZeroExpertMoE(**{f.name: getattr(moe, f.name) for f in fields(moe)}, zero=zero)
