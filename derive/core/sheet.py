"""A worked answer is data: a list of typed steps, and the named results they produce.

Steps hold exact values; rounding happens only when a step is rendered. A Work
object builds a sheet step by step, evaluating each formula as it goes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import sympy

from derive.core.evaluation import Values, evaluate
from derive.core.library import LIBRARY, Formula, Library
from derive.core.solving import Solution
from derive.core.symbols import Sym, symbols_of


def _may_vanish(factor: sympy.Basic) -> bool:
    """A switch (a Min or a Max) or a difference of counts: the factors Work._without_absent looks at."""
    if isinstance(factor, (sympy.Min, sympy.Max)):
        return True
    return isinstance(factor, sympy.Add) and any(term.could_extract_minus_sign() for term in factor.args)


@functools.lru_cache(maxsize=4096)
def _vanishes(factor: sympy.Expr, values: tuple[tuple[sympy.Symbol, sympy.Expr], ...]) -> bool:
    """Whether `factor` is zero at `values`, in floating point: a count can be a power of 10^7 tokens, which exact
    arithmetic takes minutes over. Cached: the same switches come back step after step."""
    return factor.xreplace({symbol: sympy.N(value) for symbol, value in values}).is_zero is True


@functools.lru_cache(maxsize=4096)
def _pruned(expr: sympy.Expr, zero: frozenset[sympy.Basic]) -> sympy.Expr:
    """`expr` with the `zero` parts at zero (Work._without_absent), unless that leaves it undefined; cached, as the
    same formulas come back sheet after sheet and rebuilding a large one is slow."""
    shown = expr.xreplace(dict.fromkeys(zero, sympy.Integer(0)))
    return expr if shown.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo) else shown


@dataclass(frozen=True)
class Heading:
    text: str


@dataclass(frozen=True)
class Given:
    """A value the sheet starts from; `inline` ones are set part-way (B = B_max) and shown there."""

    sym: Sym
    value: sympy.Expr
    note: str = ""
    inline: bool = False


@dataclass(frozen=True)
class Compute:
    """defines = expr = (expr with values) = value."""

    defines: Sym
    expr: sympy.Expr
    value: sympy.Expr
    source: str = ""
    # The values its symbols had when it was computed: a later given (another batch, a new context) must not
    # change the substitution a line shows.
    inputs: dict[Sym, sympy.Expr] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Solve:
    """The closed form of an equation for an unknown, then its value (None: no solution)."""

    solution: Solution
    defines: Sym
    value: sympy.Expr | None
    note: str = ""
    inputs: dict[Sym, sympy.Expr] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Note:
    text: str


Step = Heading | Given | Compute | Solve | Note


@dataclass(frozen=True)
class Result:
    """A named output: a value in base units (None where it does not exist) or a word."""

    name: str
    unit: str
    value: sympy.Expr | str | None
    expr: sympy.Expr | None = None

    @property
    def number(self) -> sympy.Expr:
        """The value where it must be a number (a question's arithmetic on its own results)."""
        if isinstance(self.value, (int, float)) and not isinstance(self.value, bool):
            return sympy.sympify(self.value)
        if not isinstance(self.value, sympy.Expr):
            raise TypeError(f"result {self.name} is {self.value!r}, not a number")
        return self.value


@dataclass
class Sheet:
    command: str
    title: str
    inputs: dict[str, object]
    steps: list[Step] = field(default_factory=list)
    results: dict[str, Result] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    values: Values = field(default_factory=dict)
    # Inputs given as a point the sheet makes (decode's zero recomputation in HFU): their zeros stay in the worked
    # formulas, where the model's own zeros are taken out (Work._without_absent).
    kept: set[Sym] = field(default_factory=set)


class Work:
    """Builds a Sheet: records givens, evaluates formulas, keeps every value exact."""

    def __init__(self, sheet: Sheet, library: Library = LIBRARY) -> None:
        self.sheet, self.library = sheet, library

    @property
    def values(self) -> Values:
        return self.sheet.values

    def heading(self, text: str) -> None:
        self.sheet.steps.append(Heading(text))

    def note(self, text: str) -> None:
        self.sheet.notes.append(text)

    def given(self, sym: Sym, value: object, note: str = "", inline: bool = False, keep: bool = False) -> sympy.Expr:
        """`sym` at `value`; `keep`: a zero the sheet means to show stays in its formulas (Work._without_absent)."""
        exact = sympy.sympify(value)
        self.values[sym] = exact
        self.sheet.steps.append(Given(sym, exact, note, inline))
        if keep:
            self.sheet.kept.add(sym)
        return exact

    def compute(self, formula: Formula, result: str | None = None) -> sympy.Expr:
        value = evaluate(formula.expr, self.values, self.library)
        self.values[formula.defines] = value
        shown = self._without_absent(formula.expr)
        if shown == 0 and result:  # asked for, a term the model lacks is worked whole: why it is nothing
            shown = formula.expr
        if shown != 0 or formula.expr == 0:  # else the model lacks the term altogether: it is not worked
            self.sheet.steps.append(Compute(formula.defines, shown, value, formula.source, self._snapshot(shown)))
        if result:
            self.result(result, formula.defines, value, formula.expr)
        return value

    def solve(self, lhs: sympy.Expr, rhs: sympy.Expr, unknown: Sym):  # type: ignore[no-untyped-def]
        """lhs = rhs solved for `unknown` in this work's library, the piece that holds picked at its values."""
        from derive.core.evaluation import evaluate
        from derive.core.solving import solve

        return solve(lhs, rhs, unknown, self.library, at=lambda expr: evaluate(expr, self.values, self.library))

    def root(self, solution: Solution) -> sympy.Expr | None:
        """The solution's closed form at this work's values, where it is a finite positive real; else None (no root
        where the quantity can be: a negative batch, a complex Lambert W)."""
        from derive.core.evaluation import evaluate

        value = evaluate(solution.closed_form, self.values, self.library)
        return value if value.is_finite and value.is_real and value > 0 else None

    def solved(
        self, solution: Solution, defines: Sym, value: sympy.Expr | None, note: str = "", result: str | None = None
    ) -> None:
        if value is not None:
            self.values[defines] = value
        self.sheet.steps.append(Solve(solution, defines, value, note, self._snapshot(solution.closed_form)))
        if result:
            self.result(result, defines, value, solution.closed_form)

    def _without_absent(self, expr: sympy.Expr) -> sympy.Expr:
        """`expr` as this model works it: every quantity the model makes zero (a count of layers its config lacks,
        the routed experts' time a dense model computes to) taken out with the terms it multiplies, so a dense model's
        sheet does not carry 0·t for the experts' or the latent attention's time, nor list their constants. A zero
        given to be kept (Work.given's keep: HFU's recomputed share in decode) stays. The value is the same."""
        zero: dict[sympy.Basic, sympy.Expr] = {
            s.symbol: sympy.Integer(0)
            for s in symbols_of(expr)
            if s.value is None and s not in self.sheet.kept and s in self.values and self.values[s].is_zero is True
        }
        # A factor that is zero here takes its product with it: a switch off, Min(1, n - 1) on one accelerator (the
        # all-reduce it gates is not worked), or a count that cancels, L_sx - L_x where every MoE layer has shared
        # experts.
        for product in expr.atoms(sympy.Mul):
            for factor in product.args:
                if not _may_vanish(factor):
                    continue
                counts = symbols_of(factor)  # pure numbers only: a sum of times is not a switch
                if any(sym.unit or sym not in self.values or sym in self.sheet.kept for sym in counts):
                    continue
                if _vanishes(factor, tuple((sym.symbol, self.values[sym]) for sym in counts)):
                    zero[product] = sympy.Integer(0)
        if not zero:
            return expr
        return _pruned(expr, frozenset(zero))

    def _snapshot(self, expr: sympy.Expr | None) -> dict[Sym, sympy.Expr]:
        if expr is None:
            return {}
        return {sym: self.values[sym] for sym in symbols_of(expr) if sym in self.values}

    def result(
        self, name: str, sym: Sym | None, value: sympy.Expr | str | None, expr: sympy.Expr | None = None, unit: str = ""
    ) -> None:
        self.sheet.results[name] = Result(name, sym.unit if sym else unit, value, expr)


@dataclass(frozen=True)
class Quantity:
    """A value for prose: exact, in base units; rounded only when rendered."""

    value: sympy.Expr | str | None
    unit: str = ""

    @property
    def number(self) -> sympy.Expr:
        """The value where prose does arithmetic on it (a wrong answer's figure from the right one)."""
        if isinstance(self.value, (int, float)) and not isinstance(self.value, bool):
            return sympy.sympify(self.value)
        if not isinstance(self.value, sympy.Expr):
            raise TypeError(f"{self.value!r} is not a number")
        return self.value


@dataclass(frozen=True)
class Prose:
    """Text whose numbers are computed: '{weights} of weights' with weights=Quantity(...).

    kind: 'summary' (the short answer), 'text', 'takeaway' or 'caveat'.
    """

    kind: str
    text: str
    quantities: dict[str, Quantity] = field(default_factory=dict)


@dataclass(frozen=True)
class Figure:
    """A picture drawn from computed arrays: `draw(path_stem)` writes SVG and PNG."""

    name: str
    caption: str
    draw: object = field(compare=False)  # Callable[[Path], None]; kept untyped for the dataclass


@dataclass(frozen=True)
class Table:
    """Computed quantities in rows under a header: one row a case, where prose would repeat one sentence."""

    header: tuple[str, ...]
    rows: tuple[tuple[Quantity, ...], ...]
    first_width: float | None = None  # the first column wrapped at this share of the line, else its natural width

    def __post_init__(self) -> None:
        if any(len(row) != len(self.header) for row in self.rows):
            raise ValueError(f"every row needs {len(self.header)} cells, one a column of {self.header}")


@dataclass(frozen=True)
class Section:
    """A titled part of an answer: its own worked sheet, with prose (and a table of cases) before and after."""

    title: str
    sheet: Sheet
    intro: tuple[Prose, ...] = ()
    outro: tuple[Prose, ...] = ()
    table: Table | None = None  # shown after the intro
