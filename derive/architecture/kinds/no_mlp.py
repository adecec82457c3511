"""No MLP: a block that is only its mixer and a norm (Mamba, Falcon-Mamba, Mamba-2: `[mlp] kind = "no_mlp"`)."""

from __future__ import annotations

from derive.architecture.keys import Keys
from derive.architecture.spec import Spec


def read(k: Keys, spec: Spec) -> None:
    """transformers' MambaBlock (Mamba2Block, FalconMambaBlock) is `x + mixer(norm(x))`: nothing after the mixer."""
    return None
