"""The formula library: one cost family a module, each formula a few lines.

`library()` loads every module in MODULES, which defines (and so unit-checks)
every formula, and returns the whole library. Nothing else decides which
formulas exist: `derive formulas`, `derive check`, `derive eval` and every
derivation see the same set.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from derive.core.library import Library

MODULES = (
    "memory",
    "reads",
    "flops",
    "roofline",
    "prefill",
    "intensity",
    "moe",
    "collectives",
    "sharding",
    "energy",
    "utilisation",
    "claim",
    "attention_memory",
    "ratios",
    "roofline_points",
    "launch",
    "fusion",
    "static_batching",
    "calibrated",
    "layout",
    "step_budget",
    "training",
)


@cache
def library() -> Library:
    """Every library formula, defined and unit-checked once."""
    from derive.core.library import LIBRARY

    for module in MODULES:
        importlib.import_module(f"formulas.{module}")
    return LIBRARY
