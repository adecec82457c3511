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
    "queueing",
    "disaggregated",
    "step_budget",
    "training",
    "speculative",
)


@cache
def library() -> Library:
    """Every library formula, defined and unit-checked once."""
    from derive.core.library import LIBRARY, Formula, Library

    modules = [importlib.import_module(f"formulas.{module}") for module in MODULES]
    # In the order of MODULES and of each module's definitions, whichever module a caller imported first: the
    # registry's own order follows imports, and `derive formulas --json` must not.
    ordered = Library()
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, Formula) and LIBRARY.defining(value.defines.symbol) is value:
                if value.name not in ordered:
                    ordered.add(value)
    for formula in LIBRARY:  # defined outside formulas/ (none today): after, in registration order
        if formula.name not in ordered:
            ordered.add(formula)
    return ordered
