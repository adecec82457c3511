"""Closed forms: an equation between library expressions, solved for any symbol.

The solution is SymPy's, from the library's own expressions (never typed a
second time), and its unit is checked against the unknown's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import mpmath
import sympy

from derive.core.dimensions import unit_of
from derive.core.errors import DeriveError, UnitError
from derive.core.evaluation import inline
from derive.core.library import LIBRARY, Library
from derive.core.printing import text
from derive.core.symbols import Sym
from derive.core.units import unit


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
    regime: str = ""  # for a piecewise equation: the piece the closed form holds on, or why none does

    def positive(self, value_of: Callable[[sympy.Expr], sympy.Expr]) -> tuple[Solution, sympy.Expr | None]:
        """The root that is real and positive at the given values (a quadratic has two), and its value."""
        # A piecewise equation solved at the problem's values holds only on its chosen piece: that root first,
        # and the other pieces' roots never (they solve an equation that does not hold there).
        candidates = (self.closed_form,) if self.regime.startswith("on the piece") else self.roots
        for root in candidates or (self.closed_form,):
            value = value_of(root)
            if value.is_finite and value.is_real and value > 0:
                return replace(self, closed_form=root), value
        return self, None


def solve(
    lhs: sympy.Expr,
    rhs: sympy.Expr,
    unknown: Sym,
    library: Library = LIBRARY,
    at: Callable[[sympy.Expr], sympy.Expr] | None = None,
) -> Solution:
    """Solve lhs = rhs for `unknown`, inlining definitions that contain it.

    Where Min or Max of the unknown make the equation piecewise (a sliding window caps the cache at
    Min(S, W)), each piece is solved in closed form and a root is kept only on the piece where it holds:
    `at` evaluates an expression at the problem's values, and picks that piece. Without `at` the closed
    form is a Piecewise of the pieces' roots, each under its condition.

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
        return _closed(lhs, rhs, lhs_in, rhs_in, unknown, at)
    except DeriveError:
        if at is None:
            raise
        return _numeric(lhs, rhs, lhs_in - rhs_in, unknown, at)


def _closed(lhs, rhs, lhs_in, rhs_in, unknown, at) -> Solution:  # type: ignore[no-untyped-def]
    pieces = _pieces(lhs_in - rhs_in, unknown.symbol)
    if len(pieces) == 1:
        real = _roots(lhs_in, rhs_in, unknown)
        if not real:
            raise DeriveError(
                f"SymPy finds no closed form for {unknown.key} in `{lhs} = {rhs}`",
                "Evaluate it numerically with 'derive eval' over a range instead",
            )
        _check_unit(real[0], unknown)
        return Solution(unknown, "solve", lhs, rhs, unknown, real[0], tuple(real))
    return _piecewise(lhs, rhs, lhs_in, rhs_in, unknown, pieces, at)


# Where a numeric root is looked for: a unknown between 2^-20 and 2^60 of its base unit.
_BRACKET = tuple(sympy.Rational(2**e) if e >= 0 else sympy.Rational(1, 2**-e) for e in range(-20, 61))  # not Pow: cheap


def _numeric(
    lhs: sympy.Expr, rhs: sympy.Expr, difference: sympy.Expr, unknown: Sym, at: Callable[[sympy.Expr], sympy.Expr]
) -> Solution:
    """No closed form: the first positive crossing of the two sides, found numerically at the problem's values.

    A MoE prompt pass reads the experts its S_p tokens touch while a window caps its attention: the
    crossover is then transcendental on every piece. The root is a number, and the sheet says so.
    """
    found = _crossing(difference, unknown, at)
    if found is None:
        raise DeriveError(
            f"no {unknown.key} solves `{lhs} = {rhs}` here: the two sides do not cross "
            f"between 2^-20 and 2^60{(' ' + unknown.unit) if unknown.unit else ''}",
            "Check the inputs, or evaluate both sides with 'derive eval' over a range",
        )
    root, bracket = found
    return Solution(
        unknown,
        "solve",
        lhs,
        rhs,
        unknown,
        root,
        (root,),
        f"no closed form: found numerically, by regula falsi in {bracket}, where the two sides change order",
    )


def _crossing(
    difference: sympy.Expr, unknown: Sym, at: Callable[[sympy.Expr], sympy.Expr]
) -> tuple[sympy.Float, str] | None:
    """The first positive zero of `difference` at the problem's values and the bracket it was found in, or None
    where its sign does not change between 2^-20 and 2^60."""
    symbol = unknown.symbol
    # Every other symbol at its value once (none depends on the unknown: those were inlined), then one compiled
    # function of the unknown in 30-digit floats: exact rationals make every probe rebuild huge powers.
    known = difference.xreplace({s: at(s) for s in difference.free_symbols if s != symbol})
    gap = sympy.lambdify(symbol, known, modules="mpmath")

    def gap_at(value: object) -> float:
        with mpmath.workdps(30):
            return float(gap(mpmath.mpf(str(value))))

    def sign(gap: float) -> int:
        return (gap > 0) - (gap < 0)

    low, low_gap = _BRACKET[0], gap_at(_BRACKET[0])
    gaps = [low_gap]
    for high in _BRACKET[1:]:
        high_gap = gap_at(high)
        gaps.append(high_gap)
        if sign(high_gap) != sign(low_gap):
            break
        low, low_gap = high, high_gap
    else:
        if not any(gaps):  # step_time = memory_time wherever memory binds: no one value is the answer
            raise DeriveError(
                f"the two sides are equal at every {unknown.key} tried (2^-20 to 2^60): no single value solves it",
                "Solve for another quantity, or equate quantities that differ",
            )
        return None
    bracket = f"[{float(low):.4g}, {float(high):.4g}]" + (f" {unknown.unit}" if unknown.unit else "")
    # Regula falsi with the Illinois step inside the bracket: about ten probes to 15 digits, where halving
    # takes fifty; the bracket always holds the sign change.
    a, fa, b, fb, side = float(low), low_gap, float(high), high_gap, 0
    for _ in range(200):
        if fa == 0 or fb == 0 or b - a <= 1e-15 * b:
            break
        c = (a * fb - b * fa) / (fb - fa) if fb != fa else (a + b) / 2
        if not a < c < b:
            c = (a + b) / 2
        fc = gap_at(c)
        if sign(fc) == sign(fa):
            a, fa = c, fc
            fb = fb / 2 if side == -1 else fb
            side = -1
        else:
            b, fb = c, fc
            fa = fa / 2 if side == 1 else fa
            side = 1
    low, high = (a, a) if fa == 0 else (b, b) if fb == 0 else (a, b)
    return sympy.Float((low + high) / 2, 15), bracket


def _roots(lhs: sympy.Expr, rhs: sympy.Expr, unknown: Sym) -> list[sympy.Expr]:
    """The positive real roots of lhs = rhs in `unknown`, symbolic: the same equation (the same model's formulas, on
    any accelerator) is solved once a process (sympy.solve of a quadratic takes most of a second)."""
    return list(_cached_roots(lhs, rhs, unknown))


@functools.lru_cache(maxsize=256)
def _cached_roots(lhs: sympy.Expr, rhs: sympy.Expr, unknown: Sym) -> tuple[sympy.Expr, ...]:
    return tuple(_solved_roots(lhs, rhs, unknown))


def _solved_roots(lhs: sympy.Expr, rhs: sympy.Expr, unknown: Sym) -> list[sympy.Expr]:
    lambert = _lambert(lhs - rhs, unknown.symbol)
    if lambert is not None:
        return lambert
    if any(p.exp.has(unknown.symbol) for p in (lhs - rhs).atoms(sympy.Pow)):
        return []  # an exponential Lambert's form does not cover: sympy.solve takes minutes to give up
    linear = _linear(lhs - rhs, unknown.symbol)
    if linear is not None:
        return [linear] if not linear.is_nonpositive and linear.is_real is not False else []
    try:
        roots = sympy.solve(sympy.Eq(lhs, rhs), unknown.symbol, simplify=False, rational=False)
    except NotImplementedError:
        roots = []
    return [_tidy(r) for r in roots if not r.is_nonpositive and r.is_real is not False]


def _linear(expr: sympy.Expr, x: sympy.Symbol) -> sympy.Expr | None:
    """The root of an equation whose numerator is linear in x, -c0/c1 with common factors cancelled, or None.

    Every knee and crossover in the library is of this form; sympy.solve reaches the same root (a test holds
    them equal) at three to five times the cost, most of a cold `derive knee`.
    """
    numerator, denominator = sympy.fraction(sympy.together(expr))
    expanded = sympy.expand(numerator)
    if not expanded.is_polynomial(x):
        return None
    poly = sympy.Poly(expanded, x)
    if poly.degree() != 1:
        return None
    slope, offset = poly.all_coeffs()
    root = _tidy(-offset / slope)
    if denominator.has(x) and denominator.xreplace({x: root}).is_zero:
        return None  # the root is a pole of the equation: let sympy.solve say what holds
    return root


def _lambert(expr: sympy.Expr, x: sympy.Symbol) -> list[sympy.Expr] | None:
    """Roots of A + G·x + C·q^(r·x) = 0 through Lambert's W, or None when `expr` is not of that form.

    A MoE step reads the experts its tokens touch, E·(1 - (1 - k/E)^(B·tau)): the knee then sets a line
    in B against an exponential of B. SymPy's solve splits the power's base and gives up (or takes a
    minute); the form has a textbook closed form. With u = x + A/G: u·q^(-r·u) = -C·q^(-r·A/G)/G, so
    x = -A/G - W(z)/(r·ln q) with z = C·r·ln(q)·q^(-r·A/G)/G. Both real branches are returned, the
    principal one first: for a concave read curve (q < 1) it is the larger root.
    """
    powers = [p for p in expr.atoms(sympy.Pow) if p.exp.has(x) and not p.base.has(x)]
    bases = {p.base for p in powers}
    if len(bases) != 1:
        return None
    (q,) = bases
    rates = {sympy.cancel(p.exp / x) for p in powers}
    if len(rates) != 1 or any(rate.has(x) for rate in rates):
        return None
    (r,) = rates
    y = sympy.Dummy("y", positive=True)
    linear = sympy.expand(expr.xreplace({q ** (r * x): y}))
    if linear.has(q ** (r * x)) or not linear.is_polynomial(x, y):
        return None
    poly = sympy.Poly(linear, x, y)
    if poly.total_degree() != 1:
        return None
    A, G, C = (poly.coeff_monomial(m) for m in (1, x, y))
    if G == 0 or C == 0:
        return None
    log_q = r * sympy.log(q)
    z = C * log_q * q ** (-r * A / G) / G
    return [-A / G - sympy.LambertW(z, branch) / log_q for branch in (0, -1)]


def _check_unit(closed: sympy.Expr, unknown: Sym) -> None:
    found = unit_of(closed)
    if found.dimensionality != unit(unknown.unit).dimensionality:
        raise UnitError(f"the solution for {unknown.key} is [{format(found, 'C')}], not [{unknown.unit}]")


Piece = tuple[dict[sympy.Basic, sympy.Expr], tuple[sympy.Rel, ...]]


def _pieces(expr: sympy.Expr, symbol: sympy.Symbol) -> list[Piece]:
    """Each way of resolving the Min/Max terms that contain `symbol`: the replacement, and when it holds."""
    extremes = [e for e in expr.atoms(sympy.Min, sympy.Max) if e.has(symbol)]
    pieces: list[Piece] = [({}, ())]
    for extreme in sorted(extremes, key=sympy.default_sort_key):
        grown: list[Piece] = []
        for chosen in extreme.args:
            others = [a for a in extreme.args if a != chosen]
            if isinstance(extreme, sympy.Min):
                conditions = tuple(sympy.Le(chosen, o, evaluate=False) for o in others)
            else:
                conditions = tuple(sympy.Ge(chosen, o, evaluate=False) for o in others)
            grown += [({**swap, extreme: chosen}, held + conditions) for swap, held in pieces]
        pieces = grown
    return pieces


# Operations past which a curved piece is left to the numeric crossing: sympy.solve takes minutes on a quadratic
# this large, and seconds at most on the library's own (a prompt pass's crossover in S_p: under 60).
_LARGE = 80


def _curved_and_large(difference: sympy.Expr, symbol: sympy.Symbol, root: sympy.Expr, at) -> bool:  # type: ignore[no-untyped-def]
    """Whether `difference` is large and, at the values, not a line in `symbol` around `root`."""
    if sympy.count_ops(difference) <= _LARGE:
        return False
    points = [
        float(at(difference.xreplace({symbol: root * f}))) for f in (sympy.Rational(1, 2), 1, sympy.Rational(3, 2))
    ]
    bend = points[0] - 2 * points[1] + points[2]
    return abs(bend) > 1e-9 * max(abs(p) for p in points) + 1e-300


def _swapped(expr: sympy.Expr, swap: dict[sympy.Basic, sympy.Expr]) -> sympy.Expr:
    """`expr` with every extremum of `swap` resolved, those inside another's chosen argument too (a step's o_1 inside
    the Max of streaming and computing): xreplace swaps the outer one whole, so again until none is left."""
    for _ in range(len(swap) + 1):
        resolved = expr.xreplace(swap)
        if resolved == expr:
            break
        expr = resolved
    return expr


def _piecewise(lhs, rhs, lhs_in, rhs_in, unknown, pieces, at) -> Solution:  # type: ignore[no-untyped-def]
    """Solve each piece; keep the roots that satisfy their piece's conditions. With `at`, the first piece whose root
    holds at the values is the answer, and the pieces after it are not solved."""
    symbol = unknown.symbol
    branches: list[tuple[sympy.Expr, sympy.Basic, tuple[sympy.Rel, ...]]] = []
    if at is not None:  # solve first the piece that holds at the crossing, found numerically: often one of 2^k
        found = _crossing(lhs_in - rhs_in, unknown, at)
        if found is None:  # no piece's root can hold: the sides never meet at these values
            where = f"the two sides do not cross between 2^-20 and 2^60{(' ' + unknown.unit) if unknown.unit else ''}"
            return Solution(unknown, "solve", lhs, rhs, unknown, sympy.nan, (), where)
        pieces = sorted(pieces, key=lambda piece: not _holds(piece[1], symbol, found[0], at))
    for index, (swap, conditions) in enumerate(pieces):
        if (
            at is not None
            and found is not None
            and index == 0
            and _curved_and_large(_swapped(lhs_in - rhs_in, swap), symbol, found[0], at)
        ):
            # The piece that holds at the crossing is not a line and too large for sympy.solve (a calibrated step
            # between one row and two, formulas/calibrated.py o_1, whose weights read grow with the batch): the
            # crossing is its root.
            return _numeric(lhs, rhs, lhs_in - rhs_in, unknown, at)
        for root in _roots(_swapped(lhs_in, swap), _swapped(rhs_in, swap), unknown):
            if unit_of(root).dimensionality != unit(unknown.unit).dimensionality:
                continue  # a count inlined as a pure number (parameters from shapes): not a solution in units
            # Unevaluated: SymPy's canonical forms of these relations cost seconds and change nothing at the values.
            held = sympy.And(*[c.xreplace({symbol: root}) for c in conditions], evaluate=False)
            branches.append((root, held, conditions))
            if at is not None:
                value = at(root)
                if value.is_finite and value.is_real and value > 0 and bool(at(held)):
                    roots = tuple(r for r, _, _ in branches)
                    where = f"on the piece where {_words(conditions)}"
                    return Solution(unknown, "solve", lhs, rhs, unknown, root, roots, where)
    if not branches:
        raise DeriveError(
            f"SymPy finds no closed form for {unknown.key} in `{lhs} = {rhs}` on any of its pieces",
            "Evaluate it numerically with 'derive eval' over a range instead",
        )
    roots = tuple(root for root, _, _ in branches)
    closed = sympy.Piecewise(*[(root, held) for root, held, _ in branches], evaluate=False)
    if at is not None:  # every piece's root falls outside its piece: the crossing itself, found numerically
        return _numeric(lhs, rhs, lhs_in - rhs_in, unknown, at)
    return Solution(unknown, "solve", lhs, rhs, unknown, closed, roots, "piecewise: each root on its piece")


def _holds(
    conditions: tuple[sympy.Rel, ...], symbol: sympy.Symbol, value: sympy.Expr, at: Callable[[sympy.Expr], sympy.Expr]
) -> bool:
    return all(bool(at(c.xreplace({symbol: value}))) for c in conditions)


def _words(conditions: tuple[sympy.Rel, ...]) -> str:
    return " and ".join(f"{_text(c.lhs)} {'≤' if isinstance(c, sympy.Le) else '≥'} {_text(c.rhs)}" for c in conditions)


def _text(expr: sympy.Basic) -> str:
    return text(expr)


@functools.lru_cache(maxsize=1024)
def asymptote(expr: sympy.Expr, variable: Sym, defines: Sym, library: Library = LIBRARY) -> Solution:
    """The limit of `expr` as `variable` grows without bound, unit-checked against `defines`. Cached by library (one
    a model, derive/derivations/common.py model_library): a limit is symbolic, so every accelerator's sheet of a
    model takes the same one."""
    inlined = _split_extremes(saturated(inline(expr, variable, library), variable))
    closed = _limit(inlined, variable.symbol)
    if closed.has(sympy.oo, sympy.zoo, sympy.nan, sympy.Limit):
        raise DeriveError(f"{defines.key} has no finite limit as {variable.key} grows", "")
    found = unit_of(closed)
    if found.dimensionality != unit(defines.unit).dimensionality:
        raise UnitError(f"the limit for {defines.key} is [{format(found, 'C')}], not [{defines.unit}]")
    return Solution(defines, "limit", expr, None, variable, closed)


def saturated(expr: sympy.Expr, variable: Sym) -> sympy.Expr:
    """`expr` as `variable` grows, with each q^(c·variable) taken to 0.

    The library's only powers of a workload variable are probabilities that an expert is still
    untouched, (1 - k/E)^(B·tau), with 0 < q < 1: at a large enough batch every expert is read.
    SymPy cannot take that limit while q's sign is unknown to it.
    """
    fading = {p: sympy.Integer(0) for p in expr.atoms(sympy.Pow) if p.exp.has(variable.symbol)}
    return expr.xreplace(fading)


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
    # A Max inside a sum (a pipeline's p slots and its sends): where the expression falls as the extreme grows
    # (every quantity positive), x/(p·Max(f, g) + c) is Min(x/(p·f + c), x/(p·g + c)); where it rises, the same.
    for extreme in sorted(expr.atoms(sympy.Max, sympy.Min), key=sympy.default_sort_key):
        stand_in = sympy.Dummy("extreme", positive=True)
        replaced = expr.xreplace({extreme: stand_in})
        if replaced.has(extreme):
            continue  # nested in another extreme: split that one first
        numerator, denominator = sympy.fraction(sympy.together(replaced))
        below, above = stand_in in denominator.free_symbols, stand_in in numerator.free_symbols
        if below == above:
            continue
        grows = _positive(sympy.diff(denominator if below else numerator, stand_in)).is_positive
        if grows:
            flipped = sympy.Min if isinstance(extreme, sympy.Max) == below else sympy.Max
            return flipped(*[_split_extremes(replaced.xreplace({stand_in: arg})) for arg in extreme.args])
    return expr


def _positive(expr: sympy.Expr) -> sympy.Expr:
    """`expr` with every symbol taken positive (quantities here are), so SymPy can tell a sign."""
    return expr.xreplace({s: sympy.Dummy(s.name, positive=True) for s in expr.free_symbols})


def _limit(expr: sympy.Expr, symbol: sympy.Symbol) -> sympy.Expr:
    if isinstance(expr, (sympy.Max, sympy.Min)):
        return type(expr)(*[_limit(arg, symbol) for arg in expr.args])
    return _rational_limit(expr, symbol) or sympy.limit(expr, symbol, sympy.oo)


def _rational_limit(expr: sympy.Expr, x: sympy.Symbol) -> sympy.Expr | None:
    """The limit at infinity of a ratio of two polynomials in x of one degree: the ratio of their leading
    coefficients, or None for any other form (sympy.limit's Gruntz algorithm takes those).

    Every quantity is positive, so a leading coefficient has the sign its form shows; the numerator and
    denominator are split as written (not over a common denominator), which keeps the printed form short.
    """
    numerator, denominator = sympy.fraction(expr)
    parts = [sympy.expand(part) for part in (numerator, denominator)]
    if not all(part.is_polynomial(x) for part in parts):
        return None
    degrees = [sympy.degree(part, x) for part in parts]
    if degrees[0] != degrees[1] or degrees[0] < 1:
        return None
    top, bottom = (part.coeff(x, degrees[0]) for part in parts)
    return top / bottom
