"""The formula type: a unit-checked, cited SymPy expression, and the library of them.

A Formula defines one quantity (a Sym) as an expression of others. Its units are
checked when it is created, so a formula whose sides disagree fails at import
with a message that names the term.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.core.dimensions import unit_of
from derive.core.errors import DeriveError, UnitError
from derive.core.symbols import Sym
from derive.core.units import unit


@dataclass(frozen=True)
class Formula:
    """`defines` = `expr`, with a source.

    counts: the expression is a pure count of what `defines` is measured in
    (parameters from a config's shapes, say); its terms must then be pure numbers.
    """

    defines: Sym
    expr: sympy.Expr
    source: str
    counts: bool = False

    def __post_init__(self) -> None:
        self.check()

    @property
    def name(self) -> str:
        return self.defines.key

    @property
    def meaning(self) -> str:
        return self.defines.meaning

    @property
    def unit(self) -> str:
        return self.defines.unit

    @property
    def equation(self) -> sympy.Eq:
        return sympy.Eq(self.defines.symbol, self.expr, evaluate=False)

    def check(self) -> None:
        """Raise UnitError if the expression's unit is not the declared one."""
        try:
            found = unit_of(self.expr)
        except UnitError as exc:
            raise UnitError(f"formula {self.name}: {exc.message}") from None
        if self.counts:
            if found.dimensionality:
                raise UnitError(
                    f"formula {self.name}: a count must be a pure number, but `{self.expr}` is [{format(found, 'C')}]"
                )
            return
        declared = unit(self.unit)
        if self.expr == 0:
            return  # zero is a quantity of every dimension: a dense model's routed-expert bytes
        if found.dimensionality != declared.dimensionality:
            raise UnitError(
                f"formula {self.name}: the right side `{self.expr}` is [{format(found, 'C') or '1'}] "
                f"but {self.name} is declared in [{self.unit or '1'}]"
            )


class Library:
    """Formulas by name, and by the symbol each defines."""

    def __init__(self) -> None:
        self._by_name: dict[str, Formula] = {}
        self._by_symbol: dict[sympy.Symbol, Formula] = {}
        # (symbol, unknown) -> whether the symbol's definition reaches the unknown (see evaluate.inline).
        self.dependencies: dict[tuple[Sym, Sym], bool] = {}

    def add(self, formula: Formula) -> Formula:
        if formula.name in self._by_name and self._by_name[formula.name] != formula:
            raise UnitError(f"formula {formula.name} is defined twice")
        self._by_name[formula.name] = formula
        self._by_symbol[formula.defines.symbol] = formula
        self.dependencies.clear()  # a new definition can make new chains
        return formula

    def extended(self, formulas: tuple[Formula, ...] | list[Formula]) -> Library:
        """A copy of this library with a model's own formulas, which replace the library's of the same name.

        A hybrid model defines kv_bytes_per_sequence as a sum over its layer kinds; every derivation that
        looks the formula up in its work's library then uses the model's.
        """
        copy = Library()
        copy._by_name, copy._by_symbol = dict(self._by_name), dict(self._by_symbol)
        for f in formulas:
            copy._by_name[f.name] = f
            copy._by_symbol[f.defines.symbol] = f
        return copy

    def get(self, name: str) -> Formula:
        try:
            return self._by_name[name]
        except KeyError:
            from derive.core.names import closest

            raise DeriveError(
                f"unknown formula '{name}'",
                f"{closest(name, self._by_name)}Run 'derive formulas' to list them",
            ) from None

    def defining(self, symbol: sympy.Symbol) -> Formula | None:
        return self._by_symbol.get(symbol)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)


LIBRARY = Library()


def formula(defines: Sym, expr: sympy.Expr, source: str) -> Formula:
    """Define, check and register a library formula (the formulas/ modules use this)."""
    return LIBRARY.add(Formula(defines, sympy.sympify(expr), source))


def larger(*terms: sympy.Expr) -> sympy.Expr:
    """Max of terms no one of which bounds the others (a roofline's two sides), built without SymPy's search.

    sympy.Max compares every pair of its arguments under the symbols' assumptions to drop the dominated ones:
    most of a formula module's import time. The formulas' terms never dominate one another (memory time against
    compute time), so the result is the same Max; tests/test_formula_library.py rebuilds each one to show it.
    Numbers alone are compared as usual.
    """
    return _extremum(sympy.Max, terms)


def smaller(*terms: sympy.Expr) -> sympy.Expr:
    """Min of terms no one of which bounds the others, as `larger` builds a Max."""
    return _extremum(sympy.Min, terms)


def _extremum(kind: type[sympy.Max] | type[sympy.Min], terms: tuple[sympy.Expr, ...]) -> sympy.Expr:
    return kind(*terms, evaluate=all(sympy.sympify(t).is_number for t in terms))
