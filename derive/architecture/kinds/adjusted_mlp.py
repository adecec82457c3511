"""A gated MLP whose width the model shrinks from the configured one (LFM2: `[mlp] kind = "adjusted_mlp"`)."""

from __future__ import annotations

from dataclasses import replace

from derive.architecture.keys import Keys
from derive.architecture.kinds import mlp
from derive.architecture.kinds.mlp import DenseMLP
from derive.architecture.spec import Spec


def width(configured: int, multiplier: float | None, multiple_of: int) -> int:
    """transformers' Lfm2MLP (after Llama's reference FeedForward): int(2w/3); then, only where a multiplier is
    given, int(multiplier x w) rounded up to a multiple of `multiple_of`."""
    shrunk = int(2 * configured / 3)
    if multiplier is None:
        return shrunk
    shrunk = int(multiplier * shrunk)
    return multiple_of * ((shrunk + multiple_of - 1) // multiple_of)


def read(k: Keys, spec: Spec) -> DenseMLP:
    """The dense MLP as kinds/mlp.py reads it, its width adjusted where the `adjust` flag key is true.

    Settings: `adjust` (the flag key), `multiplier` and `multiple_of` (the keys of the factor and the rounding).
    """
    dense = mlp.read(k, spec)
    if not spec.flag(k, "adjust"):
        return dense
    multiplier = k.get(spec.raw("multiplier", "block_ffn_dim_multiplier"))
    if multiplier is not None and (isinstance(multiplier, bool) or not isinstance(multiplier, int | float)):
        raise k.fail(spec.raw("multiplier", "block_ffn_dim_multiplier"), multiplier, "not a number")
    multiple_of = k.int(spec.raw("multiple_of", "block_multiple_of"), 256)
    return replace(dense, width=width(dense.width, multiplier, multiple_of))
