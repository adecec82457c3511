"""Zamba2's Mamba-2 mixer: the Mamba-2 kind, its head width always expand x hidden / heads (Zamba2Config)."""

from __future__ import annotations

from derive.architecture.keys import Keys
from derive.architecture.kinds.mamba2 import Mamba2
from derive.architecture.kinds.mamba2 import read as read_mamba2
from derive.architecture.spec import Spec


def read(k: Keys, spec: Spec) -> Mamba2:
    """Zamba2Config.__post_init__ sets mamba_headdim = int(mamba_expand x hidden_size) // n_mamba_heads whatever a
    config gives, and Zamba2MambaMixer's conv1d always has a bias: the Mamba-2 kind with those (its keys renamed by
    the entry's `[zamba2_mamba] keys`)."""
    inner = int(k.get("mamba_expand", 2) * k.int("hidden_size"))
    heads = k.int("mamba_num_heads")
    if inner % heads:
        raise k.fail("mamba_num_heads", heads, f"not a divisor of the Mamba inner width {inner}")
    return read_mamba2(k.overlay({k.spelt("mamba_head_dim"): inner // heads}), spec)
