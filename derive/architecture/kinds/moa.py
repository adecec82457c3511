"""JetMoE's mixture of attention heads (MoA): routed query/output experts over one shared key and value."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from derive.core.symbols import Sym, define
from formulas import notation as n

E_a = define("attention_experts", "E_a", "", r"E_{a}", "attention experts of a mixture of attention heads (JetMoE)")
k_a = define("attention_experts_per_token", "k_a", "", r"k_{a}", "attention experts each token is routed to (MoA)")


@dataclass(frozen=True)
class MixtureOfAttention(Kind):
    """JetMoE's mixture of attention heads (Shen et al. 2024, arXiv:2404.07413, sec. 2.2), as JetMoeAttention.

    Parameters: kv_proj (d -> 2 n_kv d_h, no bias), shared by every expert; per attention expert an input_linear
    (d -> n_kv d_h: its queries) and an output_linear (n_kv d_h -> d); a router (d -> E_a, no bias) and one
    d-wide output bias. A token is routed to k_a experts, each giving n_kv query heads over the shared keys
    and values: n_h = k_a n_kv query heads.

    Cache per token (JetMoeAttention.forward: key and value of n_kv heads, repeated k_a times only at compute):
    2 n_kv d_h. Scores and weighted values: k_a n_kv heads of d_h each. A token's matmul work uses k_a of the
    E_a experts; `skipped` is what it does not touch (counted in the total, left out of active only once the
    shared build asks a mixer for it).
    """

    experts: int
    top_k: int
    kv_heads: int
    head_dim: int

    tag = "moa"
    names = {"moa": "mixture-of-attention-heads"}
    label = "mixture of attention heads"
    softmax = True

    def shapes(self) -> dict[Sym, int]:
        return {E_a: self.experts, k_a: self.top_k, n.n_kv: self.kv_heads, n.d_h: self.head_dim}

    def expert(self, s: Resolve) -> sympy.Expr:
        return 2 * n.d.symbol * s(n.n_kv) * s(n.d_h)

    def weights(self, s: Resolve) -> sympy.Expr:
        d, width = n.d.symbol, s(n.n_kv) * s(n.d_h)
        return d * 2 * width + s(E_a) * self.expert(s) + s(E_a) * d + d

    def skipped(self, s: Resolve) -> sympy.Expr:
        """Expert parameters a token does not use (E_a - k_a of the experts)."""
        return (s(E_a) - s(k_a)) * self.expert(s)

    def cached_values(self, s: Resolve) -> sympy.Expr:
        return 2 * s(n.n_kv) * s(n.d_h)

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return s(k_a) * s(n.n_kv) * 2 * s(n.d_h)

    def head_count(self) -> int:
        return self.top_k * self.kv_heads

    def kv_head_count(self) -> int:
        return self.kv_heads

    def head_width(self) -> int:
        return self.head_dim

    def plain(self) -> bool:
        return True


def read(k: Keys, spec: Spec) -> MixtureOfAttention:
    """Experts and top-k from the shared MoE keys (JetMoE's MoA and MoE share num_local_experts and
    num_experts_per_tok); the value heads from num_key_value_heads, their width from head_dim (kv_channels)."""
    experts, top_k = k.int("num_experts"), k.int("num_experts_per_tok")
    if top_k > experts:
        raise CatalogError(
            f"config for {k.name}: {k.spelt('num_experts_per_tok')}={top_k} is more than the {experts} experts",
            f"Fix '{k.spelt('num_experts_per_tok')}'",
        )
    return MixtureOfAttention(experts, top_k, k.int("num_key_value_heads"), k.int("head_dim"))
