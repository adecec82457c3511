"""A mixture of experts behind a gated RMSNorm (A.X K2): the norm's low-rank gate MLP counted with the block."""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Resolve
from derive.architecture.kinds.gated_latent import r_gn
from derive.architecture.kinds.moe import MoE
from derive.architecture.kinds.moe import read as read_moe
from derive.architecture.spec import Spec
from derive.core.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class GatedNormMoE(MoE):
    """A MoE block whose layer norms its input with a gated RMSNorm (modeling_axk2: AXK2DecoderLayer's
    post_attention_layernorm is an AXK2GatedRMSNorm only where mlp_layer_types is "sparse").

    The gate, sigmoid(fc2(fc1(x))) with fc1 d -> r_gn and fc2 r_gn -> d, is a per-token matmul every token
    takes, as the router is: its 2 d r_gn weights are counted with the router. Its d-wide weight stands in for
    the plain post-attention norm, so the layer's norm count is unchanged. It keeps no cache or state.
    """

    norm_rank: int = 0

    def shapes(self) -> dict[Sym, int]:
        return {**super().shapes(), r_gn: self.norm_rank}

    def router(self, s: Resolve) -> sympy.Expr:
        return super().router(s) + 2 * n.d.symbol * s(r_gn)


def read(k: Keys, spec: Spec) -> GatedNormMoE:
    """The shared MoE keys, and the gate's rank from the entry's `norm_rank` (a key)."""
    moe = read_moe(k, spec)
    return GatedNormMoE(**{f.name: getattr(moe, f.name) for f in fields(moe)}, norm_rank=spec.number(k, "norm_rank", 0))
