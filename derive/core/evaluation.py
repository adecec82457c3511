"""Substitution: values for a model, an accelerator and the user's settings.

Values are exact SymPy numbers in base units, keyed by Sym. A symbol without a
value is resolved through the library formula that defines it, so evaluating
the knee pulls in the weight bytes, which pull in the parameter count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sympy

from derive.core.errors import DeriveError
from derive.core.library import LIBRARY, Library
from derive.core.symbols import Sym, symbols_of

Values = dict[Sym, sympy.Expr]


def resolve(sym: Sym, values: Mapping[Sym, sympy.Expr], library: Library = LIBRARY) -> sympy.Expr:
    """The value of one symbol: given, a constant, or computed from its formula."""
    if sym.value is not None:
        return sym.value
    if sym in values:
        return values[sym]
    defining = library.defining(sym.symbol)
    if defining is None:
        raise DeriveError(
            f"no value for {sym.key} ({sym.meaning})",
            f"Pass it with --set {sym.key}=VALUE",
        )
    value = evaluate(defining.expr, values, library)
    if isinstance(values, dict):
        values[sym] = value  # remember: later formulas reuse it
    return value


# Past this exponent a rational power is taken in 40-digit floats: (1 - 8/256)^(10^7) exactly has
# millions of digits and takes minutes (found by the property tests: derive experts at a huge batch hung).
_EXACT_POWER_LIMIT = 4096


def evaluate(expr: sympy.Expr, values: Mapping[Sym, sympy.Expr], library: Library = LIBRARY) -> sympy.Expr:
    """`expr` with every symbol replaced by its value, exact (but for huge rational powers)."""
    substitution = {sym.symbol: resolve(sym, values, library) for sym in symbols_of(expr)}
    return _substitute(sympy.sympify(expr), substitution)


def _substitute(expr: sympy.Basic, substitution: dict[sympy.Symbol, sympy.Expr]) -> sympy.Basic:
    if isinstance(expr, sympy.Symbol):
        return substitution.get(expr, expr)
    if not expr.args:
        return expr
    args = [_substitute(arg, substitution) for arg in expr.args]
    if isinstance(expr, sympy.Pow):
        base, exponent = args
        if base.is_Rational and not base.is_Integer and exponent.is_Integer and abs(exponent) > _EXACT_POWER_LIMIT:
            return sympy.Float(base, 40) ** exponent
        # A rational power whose exponent has huge terms (a LambertW knee's batch, say) sends sympy after exact
        # roots for minutes (Inkling 2's knee took over three): past the same limit it is taken in 40 digits.
        huge = exponent.is_Rational and not exponent.is_Integer
        if base.is_Rational and huge and max(abs(exponent.p), exponent.q) > _EXACT_POWER_LIMIT:
            return sympy.Float(base, 40) ** sympy.Float(exponent, 40)
    return expr.func(*args)


def inline(expr: sympy.Expr, unknown: Sym, library: Library = LIBRARY) -> sympy.Expr:
    """Replace defined symbols by their definitions wherever that brings `unknown` in."""
    changed = True
    while changed:
        changed = False
        for sym in symbols_of(expr):
            defining = library.defining(sym.symbol)
            if sym != unknown and defining is not None and depends_on(defining.expr, unknown, library):
                expr = expr.xreplace({sym.symbol: defining.expr})
                changed = True
    return expr


def inline_all(expr: sympy.Expr, unknowns: Sequence[Sym], library: Library = LIBRARY) -> sympy.Expr:
    """`inline` for several unknowns at once: each symbol defined in terms of an unknown other than itself replaced
    by its definition, a pass at a time, until none is left; an unknown itself stays (derive/planning.py keeps a
    step's switch so).

    Unevaluated (under sympy.evaluate(False)) the tree is the one inlining each unknown in turn gives, for unknowns
    without formulas of their own, in a few passes over it instead of several a symbol: a sweep or a plan inlines a
    dozen unknowns into one deep tree.
    """
    while True:
        found = {}
        for sym in symbols_of(expr):
            defining = library.defining(sym.symbol)
            if (
                defining is not None
                and sym not in unknowns
                and any(sym != unknown and _symbol_depends_on(sym, unknown, library) for unknown in unknowns)
            ):
                found[sym.symbol] = defining.expr
        if not found:
            return expr
        expr = expr.xreplace(found)


def depends_on(expr: sympy.Expr, unknown: Sym, library: Library = LIBRARY) -> bool:
    return any(_symbol_depends_on(sym, unknown, library) for sym in symbols_of(expr))


def _symbol_depends_on(sym: Sym, unknown: Sym, library: Library) -> bool:
    """Whether `sym` is `unknown` or is defined (through any chain of formulas) in terms of it; memoised."""
    key = (sym, unknown)
    known = library.dependencies.get(key)
    if known is None:
        defining = library.defining(sym.symbol)
        known = sym == unknown or (defining is not None and depends_on(defining.expr, unknown, library))
        library.dependencies[key] = known
    return known


def over(expr: sympy.Expr, variable: Sym, values: Mapping[Sym, sympy.Expr], library: Library = LIBRARY):  # type: ignore[no-untyped-def]
    """`expr` as a numpy function of `variable`, every other symbol at its value.

    Definitions that depend on the variable are inlined first, so a value computed
    at one batch (the KV bytes, say) is not reused at another.
    """
    import numpy  # noqa: F401  (lambdify's backend)

    inlined = inline(sympy.sympify(expr), variable, library)
    others = {s: v for s, v in values.items() if s != variable}
    fixed = {sym.symbol: resolve(sym, dict(others), library) for sym in symbols_of(inlined) if sym != variable}
    return sympy.lambdify(variable.symbol, inlined.xreplace(fixed), "numpy")
