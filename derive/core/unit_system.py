"""The project's units as a small algebra over formulas/units.txt: parse, multiply, compare, format.

formulas/units.txt is written in pint's definitions-file format and stays the one registry. This module
reads it and does what the checker, the option parser and the printer need (dimensions, exact factors to
base units, pint's compact and pretty spellings), so a command that never hands a pint quantity to a user
does not import pint: pint and the numpy it brings cost more than a third of a cold start. The API's
results are pint quantities built from the same file (`derive.core.units.registry`), and
tests/test_unit_system.py checks this algebra against pint on every unit text the project uses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from importlib.resources import files

Exponent = int | float
Factor = Fraction | float


class UnitSyntaxError(ValueError):
    """A unit expression this registry cannot read: an unknown name, a stray token, a scale factor."""


@dataclass(frozen=True)
class _Prefix:
    name: str
    factor: Fraction
    symbol: str


@dataclass(frozen=True)
class _Definition:
    name: str
    symbol: str
    factor: Factor  # to base units
    dims: tuple[tuple[str, Exponent], ...]  # base dimension -> exponent
    base: tuple[tuple[str, Exponent], ...]  # base unit name -> exponent


@dataclass(frozen=True)
class _Registry:
    prefixes: dict[str, _Prefix]  # every spelling (name, symbol, alias), '' first
    units: dict[str, _Definition]  # every spelling
    by_name: dict[str, _Definition]  # canonical names


def _add(into: dict[str, Exponent], items: tuple[tuple[str, Exponent], ...], times: Exponent = 1) -> None:
    for key, exponent in items:
        total = into.get(key, 0) + exponent * times
        if total:
            into[key] = total
        else:
            into.pop(key, None)


_LARGEST_POWER = 64  # a unit's power; a bigger one is a typo, and 10**(10**9) would not finish

_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|(?P<name>[^\W\d]\w*)|(?P<op>\*\*|[-*/^()%]))"
)


class _Parser:
    """Products, ratios, powers and parentheses of names and numbers, as pint reads a unit expression."""

    def __init__(self, text: str, name_of: Callable[[str], str]) -> None:
        self.tokens: list[tuple[str, str]] = []
        position, text = 0, text.strip()
        while position < len(text):
            match = _TOKEN.match(text, position)
            if not match or match.end() == position:
                raise UnitSyntaxError(text)
            kind = match.lastgroup or ""
            value = match.group(kind)
            self.tokens.append(("name", "percent") if value == "%" else (kind, value))
            position = match.end()
        self.at = 0
        self.name_of = name_of

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise UnitSyntaxError("unexpected end")
        self.at += 1
        return token

    def whole(self) -> tuple[Factor, dict[str, Exponent]]:
        value = self.product()
        if self.peek() is not None:
            raise UnitSyntaxError(str(self.peek()))
        return value

    def product(self) -> tuple[Factor, dict[str, Exponent]]:
        scale, terms = self.power()
        while (token := self.peek()) is not None and token != ("op", ")"):
            divide = token == ("op", "/")
            if token in (("op", "*"), ("op", "/")):
                self.take()
            elif token[0] == "op" and token[1] != "(":
                raise UnitSyntaxError(token[1])
            other_scale, other = self.power()
            if divide and other_scale == 0:
                raise UnitSyntaxError("a division by zero")
            scale = scale / other_scale if divide else scale * other_scale
            _add(terms, tuple(other.items()), -1 if divide else 1)
        return scale, terms

    def power(self) -> tuple[Factor, dict[str, Exponent]]:
        scale, terms = self.atom()
        if self.peek() in (("op", "**"), ("op", "^")):
            self.take()
            sign = -1 if self.peek() == ("op", "-") else 1
            if sign < 0:
                self.take()
            kind, text = self.take()
            if kind != "number":
                raise UnitSyntaxError(text)
            exponent: Exponent = sign * (int(text) if text.isdigit() else float(text))
            if not abs(exponent) <= _LARGEST_POWER:  # also nan and inf ('B**1e400')
                raise UnitSyntaxError(f"a power of {text}")
            scale = scale**exponent if isinstance(exponent, int) else float(scale) ** exponent
            terms = {key: value * exponent for key, value in terms.items()}
        return scale, terms

    def atom(self) -> tuple[Factor, dict[str, Exponent]]:
        kind, text = self.take()
        if kind == "number":
            return Fraction(text), {}
        if kind == "name":
            return Fraction(1), {self.name_of(text): 1}
        if text == "(":
            value = self.product()
            if self.take() != ("op", ")"):
                raise UnitSyntaxError(text)
            return value
        raise UnitSyntaxError(text)


@lru_cache(maxsize=1)
def _registry() -> _Registry:
    prefixes: dict[str, _Prefix] = {"": _Prefix("", Fraction(1), "")}
    units: dict[str, _Definition] = {}
    by_name: dict[str, _Definition] = {}
    text = files("formulas").joinpath("units.txt").read_text(encoding="utf-8")
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, value, *spellings = (part.strip() for part in line.split("="))
        if name.endswith("-"):
            factor, _ = _Parser(value, _no_names).whole()
            symbol = spellings[0].rstrip("-") if spellings else ""
            prefix = _Prefix(name[:-1], Fraction(factor), symbol)
            for spelling in (name, *spellings):
                prefixes.setdefault(spelling.rstrip("-"), prefix)
            continue
        symbol = spellings[0] if spellings and spellings[0] != "_" else name
        if value.startswith("["):
            definition = _Definition(name, symbol, Fraction(1), ((value, 1),), ((name, 1),))
        else:
            factor, terms = _Parser(value, lambda spelled: units[spelled].name).whole()
            dims: dict[str, Exponent] = {}
            base: dict[str, Exponent] = {}
            for term, exponent in terms.items():
                _add(dims, by_name[term].dims, exponent)
                _add(base, by_name[term].base, exponent)
                factor *= by_name[term].factor ** exponent
            definition = _Definition(name, symbol, factor, tuple(sorted(dims.items())), tuple(base.items()))
        by_name[name] = definition
        for spelling in (name, *spellings):
            if spelling != "_":
                units.setdefault(spelling, definition)
    return _Registry(prefixes, units, by_name)


def _no_names(name: str) -> str:
    raise UnitSyntaxError(name)


@lru_cache(maxsize=1024)
def _canonical(spelled: str) -> str:
    """A spelled name ('GB', 'tokens', 'µs') as its canonical prefixed name ('gigabyte'), as pint resolves it."""
    reg = _registry()
    candidates: list[tuple[str, str]] = []
    for suffix in ("", "s"):
        if not spelled.endswith(suffix):
            continue
        for spelling, prefix in reg.prefixes.items():
            if not spelled.startswith(spelling):
                continue
            rest = spelled[len(spelling) : len(spelled) - len(suffix)]
            if suffix and len(rest) == 1:
                continue
            if rest in reg.units and (prefix.name, reg.units[rest].name) not in candidates:
                candidates.append((prefix.name, reg.units[rest].name))
    # ('kilo', 'gram') over ('', 'kilogram'), as pint prefers
    candidates = [c for c in candidates if not (c[0] == "" and any(p and p + u == c[1] for p, u in candidates))]
    if not candidates:
        raise UnitSyntaxError(spelled)
    return "".join(candidates[0])


@lru_cache(maxsize=1024)
def _split(canonical: str) -> tuple[_Prefix, _Definition]:
    reg = _registry()
    if canonical in reg.by_name:
        return reg.prefixes[""], reg.by_name[canonical]
    for spelling, prefix in reg.prefixes.items():
        if spelling == prefix.name and spelling and canonical.startswith(spelling):
            rest = canonical[len(spelling) :]
            if rest in reg.by_name:
                return prefix, reg.by_name[rest]
    raise UnitSyntaxError(canonical)


_SUPERSCRIPTS = str.maketrans("0123456789-.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⋅")


class Unit:
    """A product of powers of canonical unit names ('gigabyte', 'second': -1), in the order written."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[str, Exponent] | tuple[tuple[str, Exponent], ...] = ()) -> None:
        items = terms.items() if isinstance(terms, dict) else terms
        self.terms: tuple[tuple[str, Exponent], ...] = tuple((k, v) for k, v in items if v)

    def __mul__(self, other: Unit) -> Unit:
        out = dict(self.terms)
        _add(out, other.terms)
        return Unit(out)

    def __truediv__(self, other: Unit) -> Unit:
        out = dict(self.terms)
        _add(out, other.terms, -1)
        return Unit(out)

    def __pow__(self, exponent: Exponent) -> Unit:
        return Unit({key: value * exponent for key, value in self.terms})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unit) and dict(self.terms) == dict(other.terms)

    def __hash__(self) -> int:
        return hash(frozenset(self.terms))

    def __repr__(self) -> str:
        return f"<Unit('{self:C}')>"

    @property
    def dimensionality(self) -> tuple[tuple[str, Exponent], ...]:
        """Base dimensions and their powers, () for a pure number: equal exactly when two units convert."""
        dims: dict[str, Exponent] = {}
        for name, exponent in self.terms:
            _add(dims, _split(name)[1].dims, exponent)
        return tuple(sorted(dims.items()))

    @property
    def factor(self) -> Factor:
        """What one of this unit is in base units (exact where the powers are whole)."""
        out: Factor = Fraction(1)
        for name, exponent in self.terms:
            prefix, definition = _split(name)
            step = prefix.factor * definition.factor
            out = out * step**exponent if isinstance(exponent, int) else float(out) * float(step) ** exponent
        return out

    def base(self) -> Unit:
        """The same dimension in base units (byte, second, FLOP, ...)."""
        out: dict[str, Exponent] = {}
        for name, exponent in self.terms:
            _add(out, _split(name)[1].base, exponent)
        return Unit(out)

    def unprefixed(self) -> Unit:
        """Each term without its prefix ('kilowatt/hour' -> 'watt/hour'), as pint's to_compact starts."""
        out: dict[str, Exponent] = {}
        for name, exponent in self.terms:
            _add(out, ((_split(name)[1].name, exponent),))
        return Unit(out)

    def prefixed(self, old: str, prefix: str) -> Unit:
        """`old` renamed with `prefix` in its place."""
        return Unit(tuple((prefix + key if key == old else key, value) for key, value in self.terms))

    def __format__(self, spec: str) -> str:
        """pint's spellings: 'C' ('byte/second**2'), '~P' ('B/s²'); a pure number is 'dimensionless' or ''."""
        pretty = "~" in spec
        if not self.terms:
            return "" if pretty else "dimensionless"
        ordered = sorted(self.terms, key=lambda term: term[0])

        def written(name: str, exponent: Exponent) -> str:
            shown = _symbol(name) if pretty else name
            if abs(exponent) == 1:
                return shown
            power = f"{abs(exponent):n}"
            return shown + power.translate(_SUPERSCRIPTS) if "P" in spec else f"{shown}**{power}"

        top = ("·" if "P" in spec else "*").join(written(n, e) for n, e in ordered if e > 0) or "1"
        bottom = [written(n, e) for n, e in ordered if e < 0]
        return "/".join([top, *bottom])


def _symbol(canonical: str) -> str:
    prefix, definition = _split(canonical)
    return prefix.symbol + definition.symbol


DIMENSIONLESS = Unit()


@lru_cache(maxsize=1024)
def parse(text: str) -> Unit:
    """A unit expression such as 'token/(second*sequence)' or 'GB/s' ('' is a pure number)."""
    if not text.strip():
        return DIMENSIONLESS
    scale, terms = _Parser(text, _canonical).whole()
    if scale != 1:
        raise UnitSyntaxError(f"a unit has no scale factor: {text}")
    return Unit(terms)


# SI powers of ten a compact value may take (pint's to_compact: binary prefixes are never chosen).
def _si_prefixes() -> list[tuple[int, str]]:
    out = {0: ""}
    for prefix in _registry().prefixes.values():
        power = math.log10(prefix.factor) if prefix.factor > 0 else 0
        if prefix.name and power == int(power):
            out[int(power)] = prefix.name
    return sorted(out.items())


def compact(magnitude: float, unit: Unit) -> tuple[float, Unit]:
    """The same value with an SI prefix on its leading unit that puts it in [1, 1000): pint's to_compact."""
    if not unit.terms or magnitude == 0 or math.isnan(magnitude) or math.isinf(magnitude):
        return magnitude, unit
    plain = unit.unprefixed()
    numerators = [term for term in plain.terms if term[1] > 0]
    name, power = (numerators or list(plain.terms))[0]
    decade = math.log10(abs(magnitude * _ratio(unit, plain))) / float(power) / 3
    step = (math.floor(decade) if power > 0 else math.ceil(decade)) * 3
    prefixes = _si_prefixes()
    index = next((i for i, (p, _) in enumerate(prefixes) if p >= step), -1)
    chosen = plain.prefixed(name, prefixes[index][1])
    return magnitude * _ratio(unit, chosen), chosen


def _ratio(a: Unit, b: Unit) -> float:
    """How many b one a is."""
    fa, fb = a.factor, b.factor
    if isinstance(fa, Fraction) and isinstance(fb, Fraction):
        return float(fa / fb)
    return float(fa) / float(fb)
