"""The dimension checker: walks a SymPy expression and returns its unit.

Every symbol's unit comes from its declaration. Terms of a sum, branches of a
Max, Min or Piecewise, and the two sides of a comparison must agree; arguments
of transcendental functions must be pure numbers. A mismatch raises a UnitError
that names the offending term.
"""

from __future__ import annotations

import sympy

from derive.core.errors import UnitError
from derive.core.symbols import lookup
from derive.core.unit_system import DIMENSIONLESS, Unit
from derive.core.units import unit

# Rounding a count keeps what it counts: floor(bytes free / bytes per sequence) is sequences.
_UNIT_PRESERVING = (sympy.floor, sympy.ceiling, sympy.Abs)


def unit_of(expr: sympy.Basic) -> Unit:
    """The unit of `expr`, or a UnitError naming the term that does not fit."""
    if isinstance(expr, sympy.Symbol):
        return unit(lookup(expr).unit)
    if expr.is_Number or expr in (sympy.true, sympy.false) or isinstance(expr, sympy.NumberSymbol):
        return DIMENSIONLESS
    if isinstance(expr, sympy.Add):
        return _agreeing(expr.args, "terms of a sum")
    if isinstance(expr, sympy.Mul):
        result = DIMENSIONLESS
        for arg in expr.args:
            result = result * unit_of(arg)
        return result
    if isinstance(expr, sympy.Pow):
        return _power(expr)
    if isinstance(expr, (sympy.Max, sympy.Min)):
        return _agreeing(expr.args, f"arguments of {type(expr).__name__}")
    if isinstance(expr, sympy.Piecewise):
        for _, condition in expr.args:
            unit_of(condition)
        return _agreeing([value for value, _ in expr.args], "branches of a Piecewise")
    if isinstance(expr, sympy.core.relational.Relational):
        _agreeing(expr.args, "sides of a comparison")
        return DIMENSIONLESS
    if isinstance(expr, (sympy.And, sympy.Or, sympy.Not)):
        for arg in expr.args:
            unit_of(arg)
        return DIMENSIONLESS
    if isinstance(expr, _UNIT_PRESERVING):
        return unit_of(expr.args[0])
    if isinstance(expr, sympy.Function):
        for arg in expr.args:
            if unit_of(arg).dimensionality:
                raise UnitError(
                    f"the argument of {type(expr).__name__} must be a pure number, but `{arg}` is {_name(unit_of(arg))}"
                )
        return DIMENSIONLESS
    raise UnitError(f"cannot check the units of `{expr}` ({type(expr).__name__})")


def _agreeing(args: tuple[sympy.Basic, ...] | list[sympy.Basic], what: str) -> Unit:
    # An exact zero is a quantity of every dimension: Max(floor(...), 0) sequences is a count of sequences.
    args = [arg for arg in args if not (arg.is_Number and arg == 0)] or list(args)
    units = [unit_of(arg) for arg in args]
    first = units[0]
    for arg, u in zip(args[1:], units[1:], strict=False):
        if u.dimensionality != first.dimensionality:
            raise UnitError(f"{what} disagree: `{args[0]}` is {_name(first)} but `{arg}` is {_name(u)}")
    return first


def _power(expr: sympy.Pow) -> Unit:
    base, exponent = expr.args
    base_unit = unit_of(base)
    if exponent.is_Number:
        power = float(exponent) if not exponent.is_Integer else int(exponent)
        return base_unit**power
    if base_unit.dimensionality or unit_of(exponent).dimensionality:
        raise UnitError(f"`{expr}`: a symbolic power needs a pure-number base and exponent")
    return DIMENSIONLESS


def _name(u: Unit) -> str:
    return f"[{format(u, 'C')}]" if u.dimensionality else "a pure number"
