"""RWKV-4's channel mixing (RwkvFeedForward): a squared-ReLU MLP gated by a sigmoid receptance, on a token shift."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Resolve
from derive.architecture.kinds.mlp import DenseMLP
from derive.architecture.spec import Spec
from formulas import notation as n


@dataclass(frozen=True)
class ChannelMix(DenseMLP):
    """RWKV-4's channel mixing (arXiv:2305.13048, sec. 4.2), as transformers' RwkvFeedForward.

    key (d -> d_ff) and value (d_ff -> d) around a squared ReLU, times sigmoid(receptance(x)) with receptance
    d -> d, no biases; two token-shift mixes (time_mix_key, time_mix_receptance, d each). Its shifted token is
    part of the layer's recurrent state, held by the time-mixing kind (time_mix.py).
    """

    label = "RWKV-4 channel mixing"

    def weights(self, s: Resolve) -> sympy.Expr:
        d, f = n.d.symbol, s(n.d_ff)
        return 2 * d * f + d * d + 2 * d


def read(k: Keys, spec: Spec) -> ChannelMix:
    """d_ff is intermediate_size, or 4 x hidden_size where the config leaves it out (RwkvFeedForward)."""
    return ChannelMix(k.int("intermediate_size", 4 * k.int("hidden_size")), gated=False)
