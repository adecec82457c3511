"""Closed forms: an equation between library expressions, solved for any symbol.

The solution is SymPy's, from the library's own expressions (never typed a
second time), and its unit is checked against the unknown's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import sympy

from derive.dimensions import unit_of
from derive.errors import DeriveError, UnitError
from derive.evaluate import inline
from derive.formula import LIBRARY, Library
from derive.symbols import Sym
from derive.units import unit


@dataclass(frozen=True)
class Solution:
    """A closed form and how it was found.

    kind 'solve': lhs = rhs solved for `variable`; kind 'limit': lhs as `variable` grows
    without bound. `defines` is the quantity the closed form gives.
    """

    defines: Sym
    kind: str
    lhs: sympy.Expr
    rhs: sympy.Expr | None
    variable: Sym
    closed_form: sympy.Expr
    roots: tuple[sympy.Expr, ...] = ()

    def positive(self, value_of: Callable[[sympy.Expr], sympy.Expr]) -> tuple[Solution, sympy.Expr | None]:
        """The root that is real and positive at the given values (a quadratic has two), and its value."""
        for root in self.roots or (self.closed_form,):
            value = value_of(root)
            if value.is_finite and value.is_real and value > 0:
                return replace(self, closed_form=root), value
        return self, None


def solve(lhs: sympy.Expr, rhs: sympy.Expr, unknown: Sym, library: Library = LIBRARY) -> Solution:
    """Solve lhs = rhs for `unknown`, inlining definitions that contain it.

    Raises DeriveError when SymPy finds no closed form, or when the equation's
    sides disagree in units.
    """
    lhs_unit, rhs_unit = unit_of(lhs), unit_of(rhs)
    if lhs_unit.dimensionality != rhs_unit.dimensionality:
        raise UnitError(
            f"the two sides disagree in units: `{lhs}` is [{format(lhs_unit, 'C')}], "
            f"`{rhs}` is [{format(rhs_unit, 'C')}]",
            "Equate two quantities of the same dimension",
        )
    lhs_in, rhs_in = inline(lhs, unknown, library), inline(rhs, unknown, library)
    if unknown.symbol not in (lhs_in - rhs_in).free_symbols:
        raise DeriveError(
            f"{unknown.key} does not appear in `{lhs} = {rhs}`",
            "Solve for a symbol that one side depends on",
        )
    try:
        roots = sympy.solve(sympy.Eq(lhs_in, rhs_in), unknown.symbol, simplify=False, rational=False)
    except NotImplementedError:
        roots = []
    real = [r for r in roots if not r.is_nonpositive and r.is_real is not False]
    if not real:
        raise DeriveError(
            f"SymPy finds no closed form for {unknown.key} in `{lhs} = {rhs}`",
            "Evaluate it numerically with 'derive eval' over a range instead",
        )
    real = [_tidy(r) for r in real]
    closed = real[0]
    found = unit_of(closed)
    if found.dimensionality != unit(unknown.unit).dimensionality:
        raise UnitError(f"the solution for {unknown.key} is [{format(found, 'C')}], not [{unknown.unit}]")
    return Solution(unknown, "solve", lhs, rhs, unknown, closed, tuple(real))


def asymptote(expr: sympy.Expr, variable: Sym, defines: Sym, library: Library = LIBRARY) -> Solution:
    """The limit of `expr` as `variable` grows without bound, unit-checked against `defines`."""
    inlined = _split_extremes(inline(expr, variable, library))
    closed = _limit(inlined, variable.symbol)
    if closed.has(sympy.oo, sympy.zoo, sympy.nan, sympy.Limit):
        raise DeriveError(f"{defines.key} has no finite limit as {variable.key} grows", "")
    found = unit_of(closed)
    if found.dimensionality != unit(defines.unit).dimensionality:
        raise UnitError(f"the limit for {defines.key} is [{format(found, 'C')}], not [{defines.unit}]")
    return Solution(defines, "limit", expr, None, variable, closed)


def _tidy(expr: sympy.Expr) -> sympy.Expr:
    """Common factors cancelled (n, tau), and -x/(y - z) read as x/(z - y).

    sympy.solve is called without its own simplify, which costs a cold start
    ten times what cancelling does.
    """
    if expr.is_rational_function():
        expr = sympy.cancel(expr)
    numerator, denominator = sympy.fraction(expr)
    if numerator.could_extract_minus_sign() and denominator.is_Add:
        return sympy.expand(-numerator) / sympy.expand(-denominator)
    return expr


def _split_extremes(expr: sympy.Expr) -> sympy.Expr:
    """Rewrite x/Max(f, g) as Min(x/f, x/g) (all quantities positive), so each branch has a limit.

    SymPy's gruntz cannot take limits through Max or Min of several variables.
    """
    for extreme in expr.atoms(sympy.Max, sympy.Min):
        power = expr.as_powers_dict().get(extreme)
        if power is None:
            continue
        flipped = sympy.Min if (isinstance(extreme, sympy.Max)) == (power < 0) else sympy.Max
        rest = expr / extreme**power
        return flipped(*[_split_extremes(rest * arg**power) for arg in extreme.args])
    return expr


def _limit(expr: sympy.Expr, symbol: sympy.Symbol) -> sympy.Expr:
    if isinstance(expr, (sympy.Max, sympy.Min)):
        return type(expr)(*[_limit(arg, symbol) for arg in expr.args])
    return sympy.limit(expr, symbol, sympy.oo)
