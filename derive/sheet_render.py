"""Markdown and LaTeX answer sheets: one jinja2 template each, and the filters they use.

Numbers are rounded here (format_quantity) and nowhere else; the templates never
hold a number of their own.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import sympy
from sympy.printing.latex import LatexPrinter

from derive.core.render import givens_in_order, how, latex
from derive.core.sheet import Compute, Figure, Given, Heading, Note, Prose, Quantity, Section, Sheet, Solve, Table
from derive.core.symbols import Sym, lookup
from derive.core.units import format_quantity

_TEX_SPECIALS = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    "·": r"$\cdot$",
    "²": r"$^2$",
    "µ": r"$\mu$",
    "→": r"$\to$",
    "×": r"$\times$",
    "≈": r"$\approx$",
    "τ": r"$\tau$",
    "—": "---",
    "–": r"\textendash{}",
    "’": "'",
    "≤": r"$\le$",
    "≥": r"$\ge$",
    "∞": r"$\infty$",
    "/": r"/\allowbreak{}",  # a path or a unit may break after a slash
}


def tex_escape(text: str) -> str:
    """Text as LaTeX: specials escaped, `code` (Markdown's backticks) as typewriter type."""
    parts = re.split(r"`([^`]+)`", str(text))
    return "".join(rf"\texttt{{{_escape(p)}}}" if i % 2 else _escape(p) for i, p in enumerate(parts))


def _escape(text: str) -> str:
    # '-{}-' keeps an option's '--' from becoming an en dash.
    return "".join(_TEX_SPECIALS.get(ch, ch) for ch in text).replace("--", "-{}-")


def quantity_text(value: Any, unit: str = "") -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return format_quantity(value, unit)


def quantity_latex(value: Any, unit: str = "") -> str:
    """'1.678 GB/sequence' as LaTeX math: 1.678\\,\\mathrm{GB/sequence}."""
    text = quantity_text(value, unit)
    if value is None or isinstance(value, str):
        return rf"\text{{{tex_escape(text)}}}"
    number, _, units = text.partition(" ")
    mantissa, e, exponent = number.partition("e")
    number_tex = mantissa.replace(",", "{,}")
    if e:
        number_tex += rf"\times 10^{{{int(exponent)}}}"
    if not units:
        return number_tex
    units_tex = (
        units.replace(" ", r"\ ")
        .replace("·", r"\cdot ")
        .replace("²", "^{2}")
        .replace("³", "^{3}")
        .replace("µ", r"\mu ")
        .replace("%", r"\%")
    )
    return rf"{number_tex}\,\mathrm{{{units_tex}}}"


class _SubstitutedLatex(LatexPrinter):
    def __init__(self, values: dict[Sym, sympy.Expr]) -> None:
        super().__init__({"mul_symbol": "dot"})
        self.values = values

    def _print_Symbol(self, expr: sympy.Symbol, style: str = "plain") -> str:
        sym = lookup(expr)
        value = sym.value if sym.value is not None else self.values.get(sym)
        if value is None:
            return sym.latex
        return rf"\left({quantity_latex(value, sym.unit)}\right)" if sym.unit else quantity_latex(value, "")


def substituted_latex(expr: sympy.Expr, values: dict[Sym, sympy.Expr]) -> str:
    return _SubstitutedLatex(values).doprint(expr)


def prose(item: Prose, fmt: str) -> str:
    """The prose with each {name} replaced by its rounded, formatted quantity."""
    pieces = []
    for literal, name, _, _ in string.Formatter().parse(item.text):
        pieces.append(tex_escape(literal) if fmt == "tex" else literal)
        if name is not None:
            q = item.quantities[name]
            pieces.append(f"${quantity_latex(q.value, q.unit)}$" if fmt == "tex" else quantity_text(q.value, q.unit))
    return "".join(pieces)


def sentence(text: str) -> str:
    """First letter capitalised, the rest kept ('KV-cache bytes', not 'Kv-cache bytes')."""
    return text[:1].upper() + text[1:]


def step_kind(step: object) -> str:
    return type(step).__name__.lower()


@lru_cache(maxsize=2)
def environment(fmt: str):  # type: ignore[no-untyped-def]
    import jinja2

    options: dict[str, Any] = dict(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    if fmt == "tex":  # LaTeX is full of braces: use delimiters it never writes
        options.update(
            block_start_string="((*",
            block_end_string="*))",
            variable_start_string="(((",
            variable_end_string=")))",
            comment_start_string="((=",
            comment_end_string="=))",
        )
    env = jinja2.Environment(**options)
    env.filters.update(
        latex=latex,
        subs=substituted_latex,
        q=quantity_text,
        qtex=quantity_latex,
        tex=tex_escape,
        prose=prose,
        kind=step_kind,
        how=how,
        sentence=sentence,
    )
    env.filters.update(words=lambda name: str(name).replace("_", " "))
    env.globals.update(givens=givens_in_order, lookup=lookup, headline=headline)
    env.globals.update(listed_once=ListedOnce, worked_once=worked_once, cases=CASES)
    return env


class ListedOnce:
    """What one answer's appendix has not listed yet: a symbol at the same value is tabled once, a note said once."""

    def __init__(self) -> None:
        self.listed: set[object] = set()

    def _new(self, items: list[Any], key: Callable[[Any], object]) -> list[Any]:
        new = [item for item in items if key(item) not in self.listed]
        self.listed.update(key(item) for item in new)
        return new

    def givens(self, givens: list[Any]) -> list[Any]:
        return self._new(givens, lambda g: (g.sym.key, str(g.value)))

    def notes(self, notes: list[str]) -> list[str]:
        return self._new(notes, str)


def _shape(sheet: Sheet) -> tuple[str, ...]:
    """The symbols a sheet computes, in order: two sheets of one shape work the same steps."""
    return tuple(step.defines.key for step in sheet.steps if isinstance(step, (Compute, Solve)))


CASES = "abcdefgh"


def worked_once(sections: list[Section]) -> list[tuple[Section, list[Section], Table | None]]:
    """An answer's sections with repeats folded: a section that works the same steps as an earlier one (the same
    symbols computed, in order) is not worked again; its inputs and results join the first's as a column of one
    table, on the rows where the cases differ (issue 28: four near-identical derivations in one answer)."""
    groups: list[tuple[Section, list[Section]]] = []
    for section in sections:
        first = next((g for g in groups if _shape(g[0].sheet) == _shape(section.sheet)), None)
        if first is None or not _shape(section.sheet):
            groups.append((section, []))
        else:
            first[1].append(section)
    return [(first, rest, _cases_table([first, *rest]) if rest else None) for first, rest in groups]


def _cases_table(cases: list[Section]) -> Table:
    columns: list[dict[str, Quantity]] = []
    meanings: dict[str, str] = {}
    for case in cases:
        column: dict[str, Quantity] = {}
        for step in case.sheet.steps:
            if isinstance(step, Given):
                column[step.sym.key] = Quantity(step.value, step.sym.unit)
                meanings.setdefault(step.sym.key, step.sym.meaning)
            elif isinstance(step, (Compute, Solve)):
                column[step.defines.key] = Quantity(step.value, step.defines.unit)
                meanings.setdefault(step.defines.key, step.defines.meaning)
        columns.append(column)
    rows = tuple(
        (Quantity(sentence(meanings[key])), *(column.get(key, Quantity(None)) for column in columns))
        for key in meanings
        if len({str(column.get(key, Quantity(None)).value) for column in columns}) > 1
    )
    return Table(("quantity", *(f"({CASES[i]})" for i in range(len(cases)))), rows, first_width=0.5)


HEADLINE = 8  # the numbers an answer's page shows (issue 15: the 4 to 8 that carry it)


def headline(answer: Any) -> list[Any]:
    """The answer's first results that have a value: the numbers its page leads with."""
    return [r for r in answer.results.values() if r.value is not None][:HEADLINE]


def render(answer: Any, fmt: str, figures_dir: str = "figures") -> str:
    template = environment(fmt).get_template(f"sheet.{fmt}.j2")
    return template.render(answer=answer, figures=figures_dir)


def render_sheet(sheet: Sheet, fmt: str) -> str:
    """One command's derivation as Markdown ('md') or a LaTeX fragment ('tex'): the API's to_markdown/to_latex."""
    return environment(fmt).get_template(f"derivation.{fmt}.j2").render(sheet=sheet)


def render_book(answers: list[Any], figures_dir: str = "figures") -> str:
    """The book: a page an answer, then the models' shared quantities derived once, then each derivation citing
    them (derive/model_facts.py)."""
    from derive.catalog import load_model
    from derive.model_facts import Facts

    facts = Facts([section.sheet for a in answers for section in a.sections], lambda name: load_model(name).title)
    return (
        environment("tex")
        .get_template("book.tex.j2")
        .render(answers=answers, figures=figures_dir, models=list(facts.groups.values()), cite=facts.cited)
    )


__all__ = [
    "Compute",
    "Figure",
    "Given",
    "Heading",
    "Note",
    "Quantity",
    "Sheet",
    "Solve",
    "render",
    "render_book",
    "render_sheet",
]
