"""A mixture of experts whose router also scores its shared experts and has a global scale (Inkling)."""

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
class SinkMoE(MoE):
    """transformers' InklingMoE: InklingTopkRouter's weight has E + E_s rows (the E_s shared experts are scored as
    sink rows: their sigmoid logits weight the shared experts' outputs) and one learned global_scale; the E_s
    shared experts are d_e wide like the routed ones (InklingSharedExperts). Every token runs all E_s shared
    experts and its k_e routed ones.
    """

    sink_rows: bool = True
    global_scale: bool = True

    label = "mixture of experts, shared experts scored by the router"

    def router(self, s: Resolve) -> sympy.Expr:
        sinks = s(n.E_s) * n.d.symbol if self.sink_rows and self.shared else 0
        return super().router(s) + sinks + (1 if self.global_scale else 0)


def read(k: Keys, spec: Spec) -> SinkMoE:
    """As moe.py reads it; `sink_rows` (the router scores the shared experts) and `global_scale` (default true)."""
    moe = read_moe(k, spec)
    return SinkMoE(
        **{f.name: getattr(moe, f.name) for f in fields(moe)},
        sink_rows=spec.flag(k, "sink_rows", True),
        global_scale=spec.flag(k, "global_scale", True),
    )
