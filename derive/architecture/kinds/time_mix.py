"""RWKV-4's time mixing (RwkvSelfAttention): a WKV recurrence in place of attention, with a one-token shift."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.symbols import Sym, define
from formulas import notation as n

d_att = define("rwkv_attention_width", "d_att", "", r"d_{att}", "width of RWKV-4's time mixing (attention_hidden_size)")


@dataclass(frozen=True)
class TimeMix(Kind):
    """RWKV-4's time mixing (Peng et al. 2023, arXiv:2305.13048, sec. 4.2), as transformers' RwkvSelfAttention.

    Parameters: key, value, receptance (d -> d_att) and output (d_att -> d), no biases; time_decay and time_first
    (d_att each) and three token-shift mixes time_mix_key/value/receptance (d each), elementwise but multiplying
    every token, so counted with the weights.

    State per sequence (transformers' RwkvModel.forward: five hidden-wide tensors a layer): the WKV numerator,
    denominator and running maximum (d_att each, float32), and the previous token's input for the token shift of
    this block's time mixing and of its channel mixing (d each, in the activation dtype; the channel mix is read
    as the layer's MLP, so its shift is held here, with the layer's state). The update is elementwise: a few
    multiply-accumulates a channel; counted as one a WKV value.
    """

    width: int

    tag = "rwkv"
    names = {"rwkv": "RWKV time-mix"}
    label = "RWKV-4 time mixing (WKV recurrence)"

    def shapes(self) -> dict[Sym, int]:
        return {d_att: self.width}

    def weights(self, s: Resolve) -> sympy.Expr:
        d, w = n.d.symbol, s(d_att)
        return 3 * d * w + w * d + 2 * w + 3 * d

    def state_values(self, s: Resolve) -> sympy.Expr:
        return 3 * s(d_att)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return 2 * n.d.symbol  # the shifted token of the time mix and of the channel mix

    def state_macs(self, s: Resolve) -> sympy.Expr:
        return self.state_values(s)

    def head_count(self) -> int:
        return 1


def read(k: Keys, spec: Spec) -> TimeMix:
    """d_att is attention_hidden_size, or hidden_size where the config leaves it out (RwkvConfig)."""
    return TimeMix(k.int("attention_hidden_size", k.int("hidden_size")))
