"""Griffin's recurrent block (RecurrentGemma): a real-gated linear recurrent unit, a d_lru-wide state, a causal conv."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Kind, Resolve
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from derive.core.symbols import Sym, define
from formulas import notation as n

d_lru = define("lru_width", "d_lru", "", r"d_{lru}", "width of the RG-LRU recurrence (Griffin's recurrent block)")


@dataclass(frozen=True)
class Rglru(Kind):
    """Griffin's recurrent block (De et al. 2024, arXiv:2402.19427, sec. 2.4), as RecurrentGemma builds it.

    Parameters after transformers' RecurrentGemmaRecurrentBlock: linear_y and linear_x (d to d_lru, with bias),
    linear_out (d_lru to d, with bias), a depthwise conv_1d over d_lru channels (c_cv taps, with bias), and the
    RG-LRU: a d_lru-wide recurrent_param and two block-diagonal gates (input and recurrence) of n_h blocks, each
    (d_lru/n_h)^2 weights and d_lru/n_h biases a block.

    State per sequence (transformers' _setup_cache): the recurrence h_t = a_t h_{t-1} + sqrt(1 - a_t^2) (i_t x_t),
    one value per channel (d_lru, kept in fp32), and the conv window of c_cv - 1 inputs over d_lru channels (in
    the activation dtype). The update is elementwise: one multiply-accumulate a state value a token.
    """

    width: int
    blocks: int
    conv_kernel: int

    tag = "lru"
    names = {"lru": "RG-LRU recurrent"}
    label = "RG-LRU recurrence (Griffin)"

    def shapes(self) -> dict[Sym, int]:
        return {d_lru: self.width, n.n_h: self.blocks, n.c_cv: self.conv_kernel}

    def weights(self, s: Resolve) -> sympy.Expr:
        d, w = n.d.symbol, s(d_lru)
        projections = 2 * (d * w + w) + w * d + d  # linear_y, linear_x, linear_out (with biases)
        conv = w * s(n.c_cv) + w
        gates = 2 * (w**2 / s(n.n_h) + w)  # input and recurrence gates: n_h blocks of (w/n_h)^2, and biases
        return projections + conv + gates + w  # and recurrent_param

    def state_values(self, s: Resolve) -> sympy.Expr:
        return s(d_lru)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return s(d_lru) * (s(n.c_cv) - 1)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        return self.state_values(s)

    def head_count(self) -> int:
        return self.blocks


def read(k: Keys, spec: Spec) -> Rglru:
    hidden = k.int("hidden_size")
    width, blocks = k.int("lru_width", hidden), k.int("num_attention_heads")
    if width % blocks:
        raise CatalogError(
            f"config for {k.name}: {k.spelt('num_attention_heads')}={blocks} does not divide "
            f"{k.spelt('lru_width')}={width}",
            "The RG-LRU gates are block-diagonal, one block a head: fix the head count or the width",
        )
    return Rglru(width, blocks, k.int("conv1d_width", 4))
