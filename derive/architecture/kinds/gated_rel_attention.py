"""Inkling 2's attention (Inkling2SlidingAttention, Inkling2FullAttention): relative-position logits, short convs on
k and v, a sigmoid output gate, a sink projection, and on full layers convs with per-token taps and separate q/k/v
inputs (`[layers.kinds] full = "gated_rel_attention"`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Resolve
from derive.architecture.kinds.rel_attention import RelativeAttention, d_rel
from derive.architecture.kinds.rel_attention import read as read_relative
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from formulas import notation as n


@dataclass(frozen=True)
class GatedRelativeAttention(RelativeAttention):
    """transformers' Inkling2SlidingAttention / Inkling2FullAttention with the decoder layer's parts around them.

    As Inkling's (kinds/rel_attention.py): q_proj.linear (d -> n_h d_h), k_proj.linear and v_proj.linear
    (d -> n_kv d_h), each followed (k, v) by a depthwise conv of c_cv taps over n_kv d_h channels, no bias;
    relative_position_bias.linear (d -> n_h d_rel) and its bank proj (d_rel x R_rel); the layer's
    post_attention_convolution and post_mlp_convolution (depthwise, c_cv taps, d channels). Beside those:
    o_proj.gate_proj (d -> n_h d_h, a sigmoid gate on the attention output: the entry's gate = "output", counted as
    a doubled q_proj), o_proj.linear (n_h d_h -> d), sink_proj (d -> n_h, a sink logit per head and token). Norms:
    q_proj.norm.scale (n_h x d_h) and relative_position_bias.norm.scale (n_h x d_rel), learned scales before an L2
    clip; the key's L2 clip and the value's RMSNorm have no weights.

    `dynamic` (full layers, Inkling2FullAttention): the k and v convs' taps are static_weight (c_cv x n_kv d_h, the
    same count as a depthwise conv) plus per-token taps from weight_proj (d -> n_kv c_cv, one set a KV head); and
    the layer (Inkling2FullDecoderLayer) feeds q, k and v from three inputs: k_input_layernorm and
    v_input_layernorm beside the q_input_layernorm that takes input_layernorm's place, and an attention_input of
    3 learned d-wide queries where a sliding layer has 1. The entry counts each layer's two norms and its two
    d-wide queries (attention_input's first, mlp_input's) outside the mixer (`norms`, `vectors`); this kind
    counts the 2 further norms and 2 further queries of a full layer in its norms.

    Cache and conv state as Inkling's: a key and a value per KV head for each token in the span; four conv
    windows a layer, (c_cv - 1)(2 n_kv d_h + 2 d) values. Not in the FLOPs: the relative-logit bank's
    n_h d_rel R_rel multiply-accumulates a token, the sink logits' softmax, and the attention residuals (each
    layer's learned queries attend over the blocks finished so far: 2 d MACs a query and block).
    """

    dynamic: bool = False

    names = {
        "grel": "gated relative-logit full-attention",
        "grelswa": "gated relative-logit sliding-window",
    }

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "g" + super().tag

    @property
    def label(self) -> str:  # type: ignore[override]
        shown = super().label + ", output gate and sink projection"
        return shown + (", per-token conv taps" if self.dynamic else "")

    def weights(self, s: Resolve) -> sympy.Expr:
        d = n.d.symbol
        taps = 2 * d * s(n.n_kv) * s(n.c_cv) if self.dynamic else 0  # k and v weight_proj
        return super().weights(s) + d * s(n.n_h) + taps  # sink_proj

    def norms(self, s: Resolve) -> sympy.Expr:
        scales = s(n.n_h) * s(n.d_h) + s(n.n_h) * s(d_rel)  # q_proj.norm.scale, relative_position_bias.norm.scale
        inputs = 4 * n.d.symbol if self.dynamic else 0  # k/v_input_layernorm; attention_input's 2 further queries
        return super().norms(s) + scales + inputs

    def notes(self) -> tuple[str, ...]:
        return (
            "Inkling 2's residual short convs (post_attention_convolution, post_mlp_convolution) are counted with "
            "the attention layers, whose conv windows they share in the state",
            "Inkling 2's attention residuals (each layer's learned d-wide queries over the blocks of "
            "n_layers_per_attn_res_block layers finished so far) are counted with the norms; their few MACs a "
            "token are not in the FLOPs",
        )


def read(k: Keys, spec: Spec) -> GatedRelativeAttention:
    """As rel_attention.py reads it (the entry names the window and the heads' keys per type); `dynamic` for the full
    layers' per-token conv taps and three inputs. `first` names the layer_types entry the first layer must have: the
    entry's `first_norms` leaves out the attention_input query a first layer lacks, which is exact only there."""
    plain = read_relative(k, spec)
    first, given = spec.raw("first"), k.texts("layer_types")
    if first and given and given[0] != first:
        raise CatalogError(
            f"config for {k.name}: '{k.spelt('layer_types')}' starts with {given[0]!r}",
            f"derive counts a first layer of type {first!r} (no attention_input; a full first layer lacks its 3 "
            "queries, which derive cannot tell apart)",
        )
    return GatedRelativeAttention(
        **{f.name: getattr(plain, f.name) for f in fields(plain)},
        dynamic=spec.flag(k, "dynamic"),
    )
