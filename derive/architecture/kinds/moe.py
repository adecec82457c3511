"""A mixture of experts: a router, E routed experts of which each token uses k, and shared experts."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from derive.core.symbols import Sym
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
    latent_width: int = 0  # the experts work in this narrower width, projected into and out of it (Nemotron 3 Super)
    latent_bias: bool = False
    shared_bias: bool = False  # the shared experts' projections have biases (ERNIE 4.5 with use_bias)
    shared_fused: bool = False  # the shared experts are one MLP E_s x d_s wide: one down_proj bias (ERNIE 4.5)

    label = "mixture of experts"

    def shapes(self) -> dict[Sym, int]:
        out = {n.E: self.experts, n.k_e: self.top_k, n.d_e: self.width}
        if self.shared:
            out.update({n.E_s: self.shared, n.d_s: self.shared_width})
        if self.latent_width:
            out[n.d_lat] = self.latent_width
        return out

    def expert(self, s: Resolve) -> sympy.Expr:
        d, f = s(n.d_lat) if self.latent_width else n.d.symbol, s(n.d_e)
        total = (3 if self.gated else 2) * d * f
        if self.expert_bias:
            total += (2 * f if self.gated else f) + d
        return total

    def token_weights(self, s: Resolve) -> sympy.Expr:
        return self.router(s) + s(n.k_e) * self.expert(s) + self.shared_experts(s) + self.latent_projections(s)

    def layer_params(self, s: Resolve) -> sympy.Expr:
        # The correction bias is left out: transformers keeps it as a buffer (build.py counts it apart).
        everything = self.router(s) + s(n.E) * self.expert(s) + self.shared_experts(s) + self.latent_projections(s)
        return everything + self.norms(s)

    def latent_projections(self, s: Resolve) -> sympy.Expr:
        """d -> d_lat before the experts and d_lat -> d after them (transformers' NemotronHMoE fc1/fc2_latent_proj)."""
        if not self.latent_width:
            return sympy.Integer(0)
        d, lat = n.d.symbol, s(n.d_lat)
        return 2 * d * lat + ((lat + d) if self.latent_bias else 0)

    def router(self, s: Resolve) -> sympy.Expr:
        d, e = n.d.symbol, s(n.E)
        return e * d + (e if self.router_bias else 0) + ((d + e) if self.router_scales else 0)

    def dense_mlps(self) -> int:
        return 1 if self.shared else 0  # the shared experts, one fused MLP (TensorRT-LLM, vLLM)

    def activation_values(self, s: Resolve) -> sympy.Expr:
        # The shared experts' activations; the routed experts' belong to their MoE kernel (formulas/calibrated.py).
        return s(n.E_s) * (3 if self.gated else 2) * s(n.d_s) if self.shared else sympy.Integer(0)

    def shared_experts(self, s: Resolve) -> sympy.Expr:
        if not self.shared:
            return sympy.Integer(0)
        d, f = n.d.symbol, s(n.d_s)
        bias = ((2 * f + d) if self.gated else (f + d)) if self.shared_bias else 0
        fused = d * (s(n.E_s) - 1) if self.shared_bias and self.shared_fused else 0  # one down_proj bias, not E_s
        return s(n.E_s) * ((3 if self.gated else 2) * d * f + bias) - fused + (d if self.shared_gate else 0)


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
        latent_width=k.int("moe_latent_size", 0, minimum=0),
        latent_bias=spec.flag(k, "latent_bias"),
        shared_bias=spec.flag(k, "shared_bias"),
        shared_fused=spec.flag(k, "shared_fused"),
    )
