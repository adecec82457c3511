"""MLA variants: a fused query-and-gate projection (A.X K2), an output gate and sinks (HY V4), a rope-key norm
and a sliding window (dots3), optionally with a DSA indexer."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import FULL, Resolve, Span
from derive.architecture.kinds.latent import LatentAttention, latent_shapes
from derive.architecture.spec import Spec
from derive.core.symbols import Sym, define
from formulas import notation as n

r_gn = define("gated_norm_rank", "r_gn", "", r"r_{gn}", "rank of a gated RMSNorm's low-rank gate MLP (A.X K2)")


@dataclass(frozen=True)
class GatedLatentAttention(LatentAttention):
    """Multi-head latent attention with the parts some families add around it.

    fused_gate (A.X K2, modeling_axk2 AXK2Attention): no q_b_proj; q_gate_proj takes [q_a_layernorm(q_a), q_a]
    (2 r_q wide) to n_h (d_nope + d_rope + d_v): each head's query and a sigmoid gate on its output.
    out_gate (HY V4, modeling_hy_v4): gate_proj d -> n_h d_v, a sigmoid gate on the heads' output.
    sinks (HY V4): one learned sink logit per head. rope_norm (dots3, k_rope_only_layernorm): a d_rope-wide RMSNorm
    on the rotary key. window (dots3's sliding_attention layers): the layer attends to and caches at most the last
    S_win tokens. norm_rank (A.X K2's AXK2GatedRMSNorm on the layer input): RMSNorm(x) * sigmoid(fc2(fc1(x))),
    fc1 d -> r_gn and fc2 r_gn -> d; its d-wide weight is one of the layer's norms.

    The cache is MLA's (DeepSeek-V2, arXiv:2405.04434, sec. 2.1): r_kv + d_rope values per token (plus the
    indexer's d_idx-wide key on a layer with its own indexer), over the window where the layer slides. None of
    these additions caches anything: the gates and the rope norm act on the current token only.
    """

    fused_gate: bool = False
    out_gate: bool = False
    sinks: bool = False
    rope_norm: bool = False
    norm_rank: int = 0
    window: Span = FULL

    names = {"swmla": "sliding-window latent-attention"}

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "swmla" if self.window.kind == "sliding" else super().tag

    @property
    def label(self) -> str:  # type: ignore[override]
        return "sliding-window latent attention (MLA)" if self.window.kind == "sliding" else super().label

    def shapes(self) -> dict[Sym, int]:
        out = super().shapes()
        if self.norm_rank:
            out[r_gn] = self.norm_rank
        if self.window.symbol is not None:
            out[self.window.symbol] = self.window.tokens
        return out

    def weights(self, s: Resolve) -> sympy.Expr:
        d, nh, nope, rope, dv = n.d.symbol, s(n.n_h), s(n.d_nope), s(n.d_rope), s(n.d_v)
        total = super().weights(s)
        if self.fused_gate:  # q_gate_proj (2 r_q -> n_h (d_nope + d_rope + d_v)) in place of q_b_proj
            total += 2 * s(n.r_q) * nh * (nope + rope + dv) - s(n.r_q) * nh * (nope + rope)
        if self.out_gate:
            total += d * nh * dv
        if self.sinks:
            total += nh
        if self.norm_rank:
            total += 2 * d * s(r_gn)
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        return super().norms(s) + (s(n.d_rope) if self.rope_norm else 0)

    def span(self) -> Span:
        return self.window

    def plain(self) -> bool:
        return super().plain() and self.window.kind == "full"

    def window_tokens(self) -> int:
        return self.window.tokens


def read(k: Keys, spec: Spec) -> GatedLatentAttention:
    """DeepSeek's MLA keys; the entry's `[gated_latent]` (and `[gated_latent.TYPE]`) says which parts are added:
    `fused_gate`, `out_gate`, `sinks`, `rope_norm`, `norm_rank` (a key), `window` (a key: the layer slides),
    `indexed` (default true: an indexer wherever the config gives index_topk)."""
    window = spec.raw("window")
    return GatedLatentAttention(
        **latent_shapes(k, spec, spec.flag(k, "indexed", True)),
        fused_gate=spec.flag(k, "fused_gate"),
        out_gate=spec.flag(k, "out_gate"),
        sinks=spec.flag(k, "sinks"),
        rope_norm=spec.flag(k, "rope_norm"),
        norm_rank=spec.number(k, "norm_rank", 0),
        window=Span("sliding", k.int(window)) if window else FULL,
    )
