"""A mixture of experts: a router, E routed experts of which each token uses k, and shared experts."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.errors import CatalogError
from derive.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class MoE(Kind):
    """A mixture of experts: a router, E routed experts of which each token uses k, and shared experts.

    expert_bias: gpt-oss biases its experts' gate_up and down projections. router_bias: a learned router bias
    that is a parameter (gpt-oss); DeepSeek's e_score_correction_bias is a buffer in transformers and is
    counted only where `router_bias` says so. router_scales: Gemma 4's router has a d-wide and an E-wide scale.
    shared_gate: Qwen's sigmoid gate on the shared expert (one d-wide row). correction_bias: DeepSeek-V3's
    aux-loss-free routing keeps an E-wide e_score_correction_bias per MoE layer, stored in the checkpoint.
    """

    experts: int
    top_k: int
    width: int
    gated: bool = True
    expert_bias: bool = False
    router_bias: bool = False
    router_scales: bool = False
    correction_bias: bool = False
    shared: int = 0
    shared_width: int = 0
    shared_gate: bool = False

    label = "mixture of experts"

    def shapes(self) -> dict[Sym, int]:
        out = {n.E: self.experts, n.k_e: self.top_k, n.d_e: self.width}
        if self.shared:
            out.update({n.E_s: self.shared, n.d_s: self.shared_width})
        return out

    def expert(self, s: Resolve) -> sympy.Expr:
        d, f = n.d.symbol, s(n.d_e)
        total = (3 if self.gated else 2) * d * f
        if self.expert_bias:
            total += (2 * f if self.gated else f) + d
        return total

    def router(self, s: Resolve) -> sympy.Expr:
        d, e = n.d.symbol, s(n.E)
        return e * d + (e if self.router_bias else 0) + ((d + e) if self.router_scales else 0)

    def shared_experts(self, s: Resolve) -> sympy.Expr:
        if not self.shared:
            return sympy.Integer(0)
        d = n.d.symbol
        return s(n.E_s) * (3 if self.gated else 2) * d * s(n.d_s) + (d if self.shared_gate else 0)


def read(k: Keys, spec: Spec) -> MoE:
    """Experts, top-k and widths from the shared keys; shared experts where the config gives a count or a width."""
    experts, top_k = k.int("num_experts"), k.int("num_experts_per_tok")
    if top_k > experts:
        raise CatalogError(
            f"config for {k.name}: {k.spelt('num_experts_per_tok')}={top_k} routes each token to more experts than "
            f"the {experts} of {k.spelt('num_experts')}",
            f"Fix '{k.spelt('num_experts_per_tok')}': at most {experts}",
        )
    width = k.int("moe_intermediate_size")
    shared_width = k.int("shared_expert_intermediate_size", 0, minimum=0)
    if "shared" in spec:
        shared = spec.number(k, "shared", 0)
    else:
        shared = k.int("n_shared_experts", 1 if shared_width else 0, minimum=0)
    return MoE(
        experts,
        top_k,
        width,
        gated=spec.flag(k, "gated", True),
        expert_bias=spec.flag(k, "expert_bias"),
        router_bias=spec.flag(k, "router_bias"),
        router_scales=spec.flag(k, "router_scales"),
        correction_bias=spec.flag(k, "correction_bias"),
        shared=shared,
        shared_width=(shared_width or width) if shared else 0,
        shared_gate=spec.flag(k, "shared_gate"),
    )
