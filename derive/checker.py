"""`derive check`: import every formula module, re-check every formula, build every model's counts.

A module whose formula has inconsistent units fails to import; the check
reports it by name instead of stopping.
"""

from __future__ import annotations

import importlib

from derive.core.errors import DeriveError
from formulas import MODULES as _LIBRARY_MODULES

# The formula modules `derive check` imports: the library's own list (tests may add one).
MODULES = [f"formulas.{name}" for name in _LIBRARY_MODULES]


def run(modules: list[str] | None = None) -> tuple[str, int]:
    """A report of every formula with its unit, and the number of failures."""
    from derive.catalog import load_model, model_names
    from derive.core.library import LIBRARY
    from derive.core.printing import text

    lines, failures = [], 0
    for name in modules or MODULES:
        try:
            importlib.import_module(name)
        except DeriveError as exc:
            lines.append(f"FAIL {name}: {exc}")
            failures += 1
    for formula in LIBRARY:
        try:
            formula.check()
            lines.append(
                f"ok   {formula.name:<28} [{formula.unit or '1'}]  {formula.defines.name} = {text(formula.expr)}"
            )
        except DeriveError as exc:
            lines.append(f"FAIL {formula.name}: {exc}")
            failures += 1
    for name in model_names():
        try:
            count = len(load_model(name).formulas.all())
            lines.append(f"ok   {name:<28} {count} count formulas from its config")
        except DeriveError as exc:
            lines.append(f"FAIL {name}: {exc}")
            failures += 1
    lines.append(f"{len(LIBRARY)} library formulas, {len(model_names())} models: {failures} failed")
    return "\n".join(lines) + "\n", failures
