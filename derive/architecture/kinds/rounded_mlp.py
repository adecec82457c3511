"""A gated MLP whose width is hidden x a factor, rounded up to a multiple (xLSTM's ffn_proj_factor)."""

from __future__ import annotations

from derive.architecture.keys import Keys
from derive.architecture.kinds.mlp import DenseMLP
from derive.architecture.spec import Spec


def read(k: Keys, spec: Spec) -> DenseMLP:
    """width = ceil(hidden x factor / m) x m, with the factor and m under the keys the entry's [mlp] names
    (`factor`, `multiple`), as xLSTMFeedForward's round_up_to_next_multiple_of computes it."""
    hidden = k.int("hidden_size")
    factor = k.get(spec.raw("factor", "ffn_proj_factor"))
    multiple = k.int(spec.raw("multiple", "ffn_round_up_to_multiple_of"))
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor <= 0:
        raise k.fail(spec.raw("factor", "ffn_proj_factor"), factor, "not a positive number")
    width = int(((hidden * factor + multiple - 1) // multiple) * multiple)
    return DenseMLP(width, spec.flag(k, "gated", True), spec.flag(k, "bias"))
