"""The symbol type: a SymPy symbol that knows its unit, its LaTeX and its meaning.

Expressions stay free of units (units inside SymPy expressions do not simplify);
each symbol declares its unit here, in coherent base units, and the checker in
derive.core.dimensions reads it back when it walks an expression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import sympy

from derive.core.errors import UnitError
from derive.core.units import to_base_factor, unit

_BY_SYMBOL: dict[sympy.Symbol, Sym] = {}
_BY_KEY: dict[str, Sym] = {}


@dataclass(frozen=True)
class Sym:
    """A named quantity.

    key:     the long name users type (`--set context=4096`, `derive eval`).
    name:    the short name in printed formulas (`S`).
    unit:    its unit in base units ('token/sequence'; '' for a pure number).
    latex:   how a sheet writes it.
    meaning: one line saying what it is.
    value:   set only for constants (2 FLOPs per multiply-accumulate).
    signed:  may be negative (a fitted growth rate); every other quantity is positive, as SymPy assumes.
    """

    key: str
    name: str
    unit: str
    latex: str
    meaning: str
    value: sympy.Rational | None = field(default=None, compare=False)
    signed: bool = False

    @cached_property
    def symbol(self) -> sympy.Symbol:
        return sympy.Symbol(self.name, real=True) if self.signed else sympy.Symbol(self.name, positive=True)

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # Unpickled in another process (derive sheets' workers send their answers back), a symbol is that
        # process's own, defined there if it was not yet: values are keyed by symbol, and printing looks symbols up.
        return (define, (self.key, self.name, self.unit, self.latex, self.meaning, self.value, self.signed))


def define(
    key: str, name: str, unit_text: str, latex: str, meaning: str, value: object = None, signed: bool = False
) -> Sym:
    """Create and register a symbol; its unit must be in base units so values stay coherent. `signed`: it may be
    negative (SymPy takes every other symbol as positive)."""
    unit(unit_text)  # an unknown unit fails here, at definition
    if to_base_factor(unit_text) != 1:
        raise UnitError(
            f"symbol {key}: unit '{unit_text}' is not in base units", "Declare it in byte, second, FLOP, ..."
        )
    sym = Sym(key, name, unit_text, latex, meaning, None if value is None else sympy.Rational(value), signed)
    existing = _BY_KEY.get(key) or _BY_SYMBOL.get(sym.symbol)
    if existing is not None:
        if existing == sym:
            return existing
        raise UnitError(f"symbol {name} ({key}) is defined twice, differently", "Give each symbol one definition")
    _BY_KEY[key] = sym
    _BY_SYMBOL[sym.symbol] = sym
    return sym


def constant(key: str, name: str, value: object, unit_text: str, latex: str, meaning: str) -> Sym:
    """A symbol with a fixed value: shown by name in formulas, by value in substitutions."""
    return define(key, name, unit_text, latex, meaning, value)


def tagged(base: Sym, tag: str, meaning: str = "") -> Sym:
    """The same quantity for one kind of layer: `L` -> `L_swa` ("... (swa layers)"); `base` itself for no tag."""
    if not tag:
        return base
    latex = f"{base.latex}^{{\\mathrm{{{tag}}}}}"
    return define(
        f"{base.key}_{tag}", f"{base.name}_{tag}", base.unit, latex, meaning or f"{base.meaning} ({tag} layers)"
    )


def alias(key: str, sym: Sym) -> None:
    """Another key users may type for the same quantity ('kv_read_bytes' for 'kv_bytes')."""
    if key in _BY_KEY and _BY_KEY[key] is not sym:
        raise UnitError(f"alias {key} already names {_BY_KEY[key].key}", "Choose another alias")
    _BY_KEY[key] = sym


def lookup(symbol: sympy.Symbol) -> Sym:
    try:
        return _BY_SYMBOL[symbol]
    except KeyError:
        raise UnitError(f"'{symbol}' is not a declared symbol", "Declare it with derive.core.symbols.define") from None


def by_key(key: str) -> Sym | None:
    return _BY_KEY.get(key)


def all_symbols() -> list[Sym]:
    return list(_BY_SYMBOL.values())


def symbols_of(expr: sympy.Basic) -> list[Sym]:
    """The declared symbols an expression uses, in a stable order."""
    return sorted((lookup(s) for s in expr.free_symbols), key=lambda s: s.name)
