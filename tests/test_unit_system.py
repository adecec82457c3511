"""derive's unit algebra (derive/core/unit_system.py) reads, converts and spells units as pint does.

pint, built from the same formulas/units.txt, is the reference: every unit a symbol declares, every
prefixed and plural spelling of every unit, compound expressions, and values across 40 decades. The
algebra differs from pint only where pint rounds a factor through floats (a nanohour, a USD per hour):
the algebra's factors are exact.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import sympy

from derive.core.errors import UnitError
from derive.core.unit_system import _registry, compact, parse
from derive.core.units import format_quantity, registry, unit

_REG = _registry()
_SPELLINGS = sorted({p + u + s for p in _REG.prefixes for u in _REG.units for s in ("", "s")})
_COMPOUNDS = sorted(
    {
        f"{a}{op}{b}"
        for a, b in itertools.product(
            ["byte", "GB", "FLOP", "token", "MAC", "W", "h", "percent", "1"],
            ["s", "token", "sequence", "parameter", "ms", "J", "B", "(s*token)", "s**2", "h"],
        )
        for op in ("/", "*", " ", "^2/")
    }
    | {"B/s/s", "GB**0.5", "token/(second*sequence)", "FLOP*sequence/token**2", "2 3", "e9", "furlong", "%", ""}
)


def _declared_units() -> list[str]:
    import formulas

    return sorted({f.unit for f in formulas.library()} | {"byte/second", "FLOP/second", "USD/second"})


def _pint_parse(text: str):
    try:
        return registry().Unit(text)
    except Exception:
        return None


def test_parses_as_pint_does():
    for text in _SPELLINGS + _COMPOUNDS:
        theirs = _pint_parse(text)
        try:
            ours = unit(text)
        except UnitError:
            assert theirs is None, f"pint reads {text!r}"
            continue
        assert theirs is not None, f"pint refuses {text!r}"
        assert format(ours, "C") == format(theirs, "C")
        assert format(ours, "~P") == format(theirs, "~P")
        base = registry().Quantity(1, theirs).to_base_units()
        assert format(ours.base(), "C") == format(base.units, "C")
        assert float(ours.factor) == pytest.approx(float(base.magnitude), rel=1e-15)


def test_dimensions_agree_exactly_when_pints_do():
    """Two spellings share a dimension in the algebra exactly when they do in pint: the same partition."""
    pairs = {
        (frozenset(dict(theirs.dimensionality).items()), parse(t).dimensionality)
        for t in _SPELLINGS + _COMPOUNDS
        if (theirs := _pint_parse(t))
    }
    assert len({p for p, _ in pairs}) == len({o for _, o in pairs}) == len(pairs)


def test_factors_are_exact():
    # pint gives 1388888888888889/5000000000000000000 for an hour's reciprocal; the algebra's is exact
    assert parse("USD/h").factor == Fraction(1, 3600)
    assert parse("GiB").factor == 2**30
    assert parse("Gb/s").factor == Fraction(10**9, 8)


def test_compact_prefixes_as_pint_does():
    """The prefix a printed value takes ('1.678 GB/sequence', '23.87 ms') is pint's to_compact's, over 40 decades."""
    for unit_text, decade in itertools.product(_declared_units(), range(-15, 25, 2)):
        for mantissa in (1.0, 9.999, -3.2):
            value = mantissa * 10.0**decade
            theirs = registry().Quantity(value, unit_text).to_compact()
            magnitude, ours = compact(value, parse(unit_text))
            assert format(ours, "~P") == format(theirs.units, "~P"), (unit_text, value)
            assert magnitude == pytest.approx(float(theirs.magnitude), rel=1e-12)


def test_printed_values():
    assert format_quantity(1_677_721_600, "byte/sequence") == "1.678 GB/sequence"
    assert format_quantity(sympy.Rational(2387, 100000), "second") == "23.87 ms"
    assert format_quantity(sympy.Integer(3 * 10**15), "FLOP/second") == "3 PFLOP/s"
    assert format_quantity(2.5e-7, "second/sequence") == "250 ns/sequence"


@pytest.mark.parametrize("text", ["1/0", "B/0.0", "1/(0*B)", "B**1e400", "10**999999999", "(B", "B)", "**", "0 B"])
def test_unreadable_units_are_unit_errors(text):
    """Found by the fuzz test ('1/0' divided by zero); a huge power would never finish."""
    with pytest.raises(UnitError, match="unknown unit"):
        unit(text)
