"""Inkling's attention (InklingAttention): GQA with relative-position logits and short convs on k and v, and the
layer's two residual short convs (`[layers.kinds] full = "rel_attention"`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.attention import Attention
from derive.architecture.kinds.attention import read as read_attention
from derive.architecture.kinds.base import FULL, Resolve, Span
from derive.architecture.spec import Spec
from derive.core.symbols import Sym, define
from formulas import notation as n

d_rel = define("relative_dim", "d_rel", "", r"d_{rel}", "width of each head's relative-position state (Inkling)")
R_rel = define(
    "relative_extent", "R_rel", "", r"R_{rel}", "backward distances a relative-logit profile covers (Inkling)"
)


@dataclass(frozen=True)
class RelativeAttention(Attention):
    """transformers' InklingAttention with the InklingDecoderLayer around it.

    Attention: q_proj (d -> n_h d_h), k_proj and v_proj (d -> n_kv d_h), o_proj, per-head q/k RMSNorms (as the
    entry's `qk_norm` says). Relative-position logits: r_proj (d -> n_h d_rel) gives each head a d_rel-wide state
    that mixes rel_logits_proj.proj (d_rel x R_rel, a bank of bias-by-distance profiles; R_rel is the sliding
    window on sliding layers, rel_extent on full ones) into a bias per backward distance. Short convs: k_sconv and
    v_sconv (depthwise, c_cv taps, no bias, n_kv d_h channels each) after k_proj and v_proj; and the layer's
    attn_sconv and mlp_sconv (depthwise, c_cv taps, d channels each) on the attention and the MLP outputs, which
    this kind holds since every layer has one (their weights and their conv windows are counted here).

    Cache: a key and a value per KV head for each token in its span, as plain attention. State: the four convs'
    windows, c_cv - 1 inputs of each conv's channels per sequence ((c_cv - 1)(2 n_kv d_h + 2 d); transformers
    keeps number_of_conv_states = 4 conv caches a layer). The relative-logit bank is counted with the weights;
    its per-token product (n_h d_rel R_rel multiply-accumulates) is not in the attention FLOPs.
    """

    relative: int = 0  # d_rel
    extent: int = 0  # R_rel
    conv_kernel: int = 0  # c_cv

    names = {"rel": "relative-logit full-attention", "relswa": "relative-logit sliding-window"}

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "rel" + {"full": "", "sliding": "swa", "chunked": "chunk"}[self.window.kind]

    @property
    def label(self) -> str:  # type: ignore[override]
        return super().label + " with relative-position logits and short convs"

    def shapes(self) -> dict[Sym, int]:
        return {**super().shapes(), d_rel: self.relative, R_rel: self.extent, n.c_cv: self.conv_kernel}

    def _conv_channels(self, s: Resolve) -> sympy.Expr:
        return 2 * s(n.n_kv) * s(n.d_h) + 2 * n.d.symbol  # k_sconv, v_sconv; attn_sconv, mlp_sconv

    def weights(self, s: Resolve) -> sympy.Expr:
        relative = n.d.symbol * s(n.n_h) * s(d_rel) + s(d_rel) * s(R_rel)  # r_proj, rel_logits_proj.proj
        return super().weights(s) + relative + self._conv_channels(s) * s(n.c_cv)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return self._conv_channels(s) * (s(n.c_cv) - 1)

    def plain(self) -> bool:
        return False  # it keeps conv windows beside its cache

    def notes(self) -> tuple[str, ...]:
        return (
            "Inkling's residual short convs (attn_sconv, mlp_sconv) are counted with the attention layers, "
            "whose conv windows they share in the state",
        )


def read(k: Keys, spec: Spec) -> RelativeAttention:
    """The attention keys (renamed per layer type by the entry); `window` names the sliding window's key for a
    sliding type, `extent` the relative extent's key (a sliding layer's extent is its window)."""
    window = Span("sliding", k.int(spec.raw("window"))) if spec.raw("window") else FULL
    plain = read_attention(k, spec, window)
    extent = window.tokens if window.kind == "sliding" else k.int(spec.raw("extent", "rel_extent"))
    return RelativeAttention(
        **{f.name: getattr(plain, f.name) for f in fields(plain)},
        relative=k.int(spec.raw("relative", "d_rel")),
        extent=extent,
        conv_kernel=k.int(spec.raw("conv_kernel", "conv_kernel_size")),
    )
