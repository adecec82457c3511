"""The project's one unit registry, and quantity parsing and formatting.

Values inside derive are exact SymPy numbers in coherent base units (byte,
second, FLOP, token, sequence, parameter, joule). Units are read, checked and
printed by derive.core.unit_system over formulas/units.txt; pint, built from the
same file, is imported only to hand the API's results over as pint quantities.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING

import sympy

from derive.core.errors import UnitError
from derive.core.unit_system import DIMENSIONLESS, Unit, UnitSyntaxError, compact, parse

if TYPE_CHECKING:
    import pint

# "FLOPS" (capital S) is this field's spelling of FLOP per second; pint would
# read it as the plural of FLOP, so it is rewritten before parsing.
_FLOPS_RATE = re.compile(r"FLOPS\b")
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


@lru_cache(maxsize=1)
def registry() -> pint.UnitRegistry:
    """pint's registry over formulas/units.txt, for the API's quantities (pint is imported here, lazily)."""
    import pint

    path = files("formulas").joinpath("units.txt")
    return pint.UnitRegistry(str(path), autoconvert_offset_to_baseunit=False)


@lru_cache(maxsize=512)
def unit(text: str) -> Unit:
    """Parse a unit expression such as 'byte/token' ('' is dimensionless)."""
    try:
        return parse(_FLOPS_RATE.sub("FLOP/s", text))
    except (UnitSyntaxError, RecursionError) as exc:
        raise UnitError(f"unknown unit '{text}'", _known_units_hint()) from exc


@lru_cache(maxsize=512)
def to_base_factor(text: str) -> sympy.Rational:
    """The exact factor that converts a value in `text` units to base units."""
    factor = unit(text).factor
    # A whole power's factor is exact; repr() of a fractional power's is the shortest decimal that round-trips.
    if isinstance(factor, float):
        return sympy.Rational(repr(factor))
    return sympy.Rational(factor.numerator, factor.denominator)


@lru_cache(maxsize=512)
def base_unit_text(text: str) -> str:
    """The coherent base unit of `text`, as JSON output names it ('byte/second')."""
    base = unit(text).base()
    return format(base, "C") if base != DIMENSIONLESS else ""


def same_dimension(a: str, b: str) -> bool:
    return unit(a).dimensionality == unit(b).dimensionality


def parse_quantity(text: str, expected: str, option: str = "") -> sympy.Rational:
    """Read '3.35 TB/s' as an exact value in the base units of `expected`.

    A number without a unit, a quantity of another dimension, or one that is not
    positive is an error that shows what was expected: '3' could mean 3 FLOP/s or
    3 PFLOP/s, and guessing is how calculators go wrong.
    """
    where = f"{option} " if option else ""
    match = _NUMBER.match(str(text))
    if not match:
        raise UnitError(
            f"{where}'{text}' is not a quantity",
            f"Write a number and a unit, for example '{_example(expected)}'",
        )
    number, unit_text = match.groups()
    if unit_text and unit_text.startswith("/"):
        unit_text = "1" + unit_text  # '10 /s' is ten per second
    value = sympy.Rational(number)
    if not unit_text and not unit(expected).dimensionality:  # a ratio: a bare number is the whole of it
        if value <= 0:
            raise UnitError(f"{where}'{text}' must be positive", "For example '1'")
        return value
    if not unit_text:
        raise UnitError(
            f"{where}'{text}' has no unit",
            f"Write it with one, for example '{_example(expected)}'",
        )
    if value <= 0:
        raise UnitError(f"{where}'{text}' must be positive", f"For example '{_example(expected)}'")
    try:
        given = unit(unit_text)
    except UnitError as error:  # say which option carried it
        raise UnitError(f"{where}'{text}': {error.message}", error.hint) from None
    if given.dimensionality != unit(expected).dimensionality:
        raise UnitError(
            f"{where}'{text}' is {_dimension_words(given)}, not {_dimension_words(unit(expected))}",
            f"Give it in {expected} or a prefixed form, for example '{_example(expected)}'",
        )
    return value * to_base_factor(unit_text) / to_base_factor(expected)


def format_quantity(value: object, unit_text: str, digits: int = 4) -> str:
    """A value in base units printed readably: 1.68e9 byte -> '1.68 GB', 5.85e11 parameter -> '585.3 billion'."""
    try:  # a sheet prints its givens in Markdown, LaTeX, its appendix and the book: the same few hundred values
        return _format_remembered(type(value).__qualname__, value, unit_text, digits)
    except TypeError:  # unhashable
        return _format_quantity(value, unit_text, digits)


@lru_cache(maxsize=8192)
def _format_remembered(kind: str, value: object, unit_text: str, digits: int) -> str:
    return _format_quantity(value, unit_text, digits)  # `kind` in the key: 1 and 1.0 are equal, and print apart


# Units printed the way the trade quotes them: a token's price per million tokens.
_QUOTED = {"USD/token": (1e6, "USD per million tokens")}


def _format_quantity(value: object, unit_text: str, digits: int) -> str:
    exact = sympy.sympify(value)
    number = float(exact)
    if unit_text in _QUOTED:
        scale, words = _QUOTED[unit_text]
        return f"{_format_number(number * scale, digits)} {words}"
    if not unit_text:
        # A whole pure number (a config's 28,672 or 128,256) prints exactly: a rounded shape makes the
        # substitution's arithmetic false on its face.
        return _format_count(number, bool(exact.is_integer), digits)
    magnitude, units_of = number, unit(unit_text)
    # Prefixes for bytes, FLOPs, joules and watts above 1, and for seconds below 1 (ms, µs): never 'mFLOP/B'.
    leading = _leading(unit_text)
    if _prefixable(unit_text) and number != 0 and (abs(number) >= 1) != (leading == "second"):
        magnitude, units_of = compact(number, units_of)
    units = _plural(format(units_of, "~P"), number)
    if units.startswith("1/"):
        units = "per " + units[2:]
    if not _prefixable(unit_text):
        return f"{_format_count(number, exact.is_integer, digits)} {units}"
    return f"{_format_number(float(magnitude), digits)} {units}"


def _format_count(number: float, whole: bool, digits: int) -> str:
    """Counts: exact with separators when whole and below a trillion, else in words ('585.3 billion')."""
    if whole and abs(number) < 1e12:
        return f"{int(number):,}"
    for scale, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if abs(number) >= scale:
            return f"{_format_number(number / scale, digits)} {word}"
    return _format_number(number, digits)


def _leading(unit_text: str) -> str:
    return unit_text.split("/")[0].split("*")[0].strip()


_COUNTED = ("sequence", "token", "parameter")


def _plural(units: str, number: object) -> str:
    """'56 sequences', '1 sequence': only a leading count unit takes the plural."""
    head, sep, tail = units.partition("/")
    if head in _COUNTED and number != 1:
        head += "s"
    return head + sep + tail


def counted(number: int, singular: str, plural: str | None = None) -> str:
    """'1 copy', '3 copies', '1,024 h100s': a whole count and its noun, plural but for one."""
    return f"{number:,} {singular if number == 1 else plural or singular + 's'}"


def _prefixable(unit_text: str) -> bool:
    # Counts of sequences, tokens and parameters read better without prefixes
    # ('148 sequence', not '148 sequence'), bytes, FLOPs and rates with them.
    return _leading(unit_text) in {"byte", "FLOP", "joule", "second", "watt", "B", "s", "J", "W"}


def _format_number(number: float, digits: int) -> str:
    if number == 0:
        return "0"
    if abs(number) >= 1e6 or abs(number) < 1e-3:
        return f"{number:.{digits - 1}e}"
    rounded = float(f"{number:.{digits}g}")
    # A small factor just off a whole number (fp8-block's 1.000244 bytes a weight) keeps the digits that show it is
    # not one: printed as '1', the product it multiplies reads false on its face.
    if rounded.is_integer() and number != rounded and abs(number) < 10:
        rounded = float(f"{number:.{digits + 3}g}")
    return f"{int(rounded):,}" if rounded.is_integer() else f"{rounded:,}"


_DIMENSION_NAMES = {
    "byte/second": "a bandwidth",
    "FLOP/second": "a compute rate",
    "byte": "an amount of memory",
    "FLOP": "an amount of compute",
    "second": "a time",
    "watt": "a power",
    "joule": "an energy",
    "token/second": "a token rate",
    "token": "a token count",
    "sequence": "a sequence count",
    "parameter": "a parameter count",
}


def _dimension_words(u: Unit) -> str:
    if not u.dimensionality:
        return "a plain number"
    base = format(u.base(), "C")
    for key, name in _DIMENSION_NAMES.items():
        if unit(key).dimensionality == u.dimensionality:
            return f"{name} ({base})"
    return f"a quantity in {base}"


_EXAMPLES = {
    "byte/second": "3.35 TB/s",
    "FLOP/second": "989 TFLOP/s",
    "byte": "80 GB",
    "watt": "700 W",
    "token/second": "1000 token/s",
    "sequence/second": "20 req/s",
    "second": "50 ms",
}


def _example(expected: str) -> str:
    for key, example in _EXAMPLES.items():
        if same_dimension(key, expected):
            return example
    return f"1 {expected}"


def _known_units_hint() -> str:
    return (
        "Known units: byte (B, with k M G T P or Ki Mi Gi Ti), bit (b), FLOP, MAC, second (s, ms), "
        "token, sequence, parameter, joule (J), watt (W), USD; 'TFLOPS' means TFLOP/s"
    )
