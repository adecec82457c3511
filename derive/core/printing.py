"""Expressions as a terminal shows them: `W·P/(BW·n)`, `x^2`, and with every symbol's value in its unit.

Used by the solver's messages and by the sheet renderer alike, so it depends on neither.
"""

from __future__ import annotations

import re

import sympy
from sympy.printing.str import StrPrinter

from derive.core.symbols import Sym, lookup
from derive.core.units import format_quantity


class _TextPrinter(StrPrinter):
    """Formulas as a terminal shows them: `W·P/(BW·n)`, `x^2`."""

    def _print_Mul(self, expr: sympy.Mul) -> str:
        return re.sub(r"(?<!\*)\*(?!\*)", "·", super()._print_Mul(expr))

    def _print_Pow(self, expr: sympy.Pow, rational: bool = False) -> str:
        return super()._print_Pow(expr, rational).replace("**", "^")

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        return "τ" if expr.name == "tau" else expr.name


class _SubstitutedPrinter(_TextPrinter):
    """The same formula with every symbol replaced by its value and unit."""

    def __init__(self, values: dict[Sym, sympy.Expr]) -> None:
        super().__init__()
        self.values = values

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        sym = lookup(expr)
        value = sym.value if sym.value is not None else self.values.get(sym)
        if value is None:
            return super()._print_Symbol(expr)
        text = format_quantity(value, sym.unit)
        return f"({text})" if " " in text and sym.unit else text


def text(expr: sympy.Expr) -> str:
    return _TextPrinter().doprint(expr)


def substituted(expr: sympy.Expr, values: dict[Sym, sympy.Expr]) -> str:
    return _SubstitutedPrinter(values).doprint(expr)
