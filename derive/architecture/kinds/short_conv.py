"""A gated short convolution (LFM2, LFM3): B, C and x from one projection, a depthwise causal conv, no state."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class ShortConv(Kind):
    """LFM2's gated short convolution: y = out_proj(C * conv(B * x)), a depthwise conv of c_cv taps over d.

    Parameters after transformers' Lfm2ShortConv (and Lfm3ShortConv): in_proj d -> 3d (B, C, x), a depthwise
    conv1d of c_cv = conv_L_cache taps over the d channels, out_proj d -> d; `conv_bias` gives all three a bias.

    It keeps no recurrent state, only its conv window: the last c_cv - 1 inputs of the d channels per
    sequence, as vLLM's ShortConvSpec holds it (mamba_utils.py, MambaStateShapeCalculator.short_conv_state_shape:
    conv_state_shape = (L_cache - 1, hidden_size)). Its conv taps are weights: its arithmetic per token is in
    the matmul FLOPs, not in a state update.
    """

    conv_kernel: int
    bias: bool = False

    tag = "conv"
    names = {"conv": "short-convolution"}
    label = "gated short convolution"

    def shapes(self) -> dict[Sym, int]:
        return {n.c_cv: self.conv_kernel}

    def weights(self, s: Resolve) -> sympy.Expr:
        d = n.d.symbol
        total = d * 3 * d + d * s(n.c_cv) + d * d
        if self.bias:
            total += 3 * d + d + d
        return total

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return n.d.symbol * (s(n.c_cv) - 1)


def read(k: Keys, spec: Spec) -> ShortConv:
    bias = spec.flag(k, "bias") if "bias" in spec else k.flag("conv_bias", False)
    return ShortConv(k.int("conv_L_cache"), bias=bias)
