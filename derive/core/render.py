"""Rendering a Sheet: terminal text and the JSON contract.

Rounding happens here and only here; the sheet keeps exact values.
"""

from __future__ import annotations

import json
from typing import Any

import sympy
from sympy.printing.latex import LatexPrinter

from derive.core.printing import substituted, text
from derive.core.sheet import Compute, Given, Heading, Note, Sheet, Solve
from derive.core.solving import Solution
from derive.core.symbols import Sym, lookup
from derive.core.units import base_unit_text, format_quantity


def how(solution: Solution) -> str:
    """In words, how a closed form was found."""
    if solution.kind == "limit":
        return f"the limit of {text(solution.lhs)} as {text(solution.variable.symbol)} → ∞"
    solved = f"{text(solution.lhs)} = {text(solution.rhs)}, solved for {text(solution.variable.symbol)}"
    return solved + (f" ({solution.regime})" if solution.regime else "")


def latex(expr: sympy.Expr) -> str:
    names = {s: lookup(s).latex for s in expr.free_symbols}
    return LatexPrinter({"symbol_names": names, "mul_symbol": "dot"}).doprint(expr)


def _value_text(value: Any, unit_text: str) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return format_quantity(value, unit_text)


def givens_in_order(sheet: Sheet) -> list[Given]:
    """The givens that the sheet's formulas use, in the order they first appear."""
    given = {step.sym: step for step in sheet.steps if isinstance(step, Given) and not step.inline}
    computed: set[Sym] = set()
    shown: list[Given] = []
    for step in sheet.steps:
        expr = (
            step.expr if isinstance(step, Compute) else step.solution.closed_form if isinstance(step, Solve) else None
        )
        if expr is None:
            continue
        for s in sorted(expr.free_symbols, key=lambda x: x.name):
            sym = lookup(s)
            if sym in computed or sym.value is not None:
                continue
            step_given = given.get(sym)
            if step_given is not None and step_given not in shown:
                shown.append(step_given)
        if isinstance(step, (Compute, Solve)):
            computed.add(step.defines)
    return shown


def _worked(
    defines: Sym, expr: sympy.Expr, value: Any, values: dict[Sym, Any], after_formula: str, after_value: str = ""
) -> list[str]:
    """Three lines: symbolic, substituted (at the values the step was computed with), result (handcalcs' order)."""
    name = text(defines.symbol)
    pad = " " * len(name)
    return [
        f"  {name} = {text(expr)}   {after_formula}".rstrip(),
        f"  {pad} = {substituted(expr, values)}",
        f"  {pad} = {_value_text(value, defines.unit)}   {after_value}".rstrip(),
    ]


def render_text(sheet: Sheet) -> str:
    lines = [sheet.title]
    defaults = sheet.inputs.get("defaults")
    if isinstance(defaults, list) and defaults:
        chosen = ", ".join(f"{k}={sheet.inputs[k]}" for k in defaults if k in sheet.inputs)
        lines.append(f"defaults used: {chosen}")
    lines += ["", "Given"]
    givens = givens_in_order(sheet)
    width = max((len(text(g.sym.symbol)) for g in givens), default=1)
    for g in givens:
        note = f"  [{g.note}]" if g.note and g.note not in g.sym.meaning else ""
        lines.append(
            f"  {text(g.sym.symbol):<{width}} = {format_quantity(g.value, g.sym.unit):<26} {g.sym.meaning}{note}"
        )
    for step in sheet.steps:
        if isinstance(step, Heading):
            lines += ["", step.text]
        elif isinstance(step, Compute):
            lines += _worked(
                step.defines, step.expr, step.value, step.inputs or sheet.values, f"({step.defines.meaning})"
            )
        elif isinstance(step, Solve):
            lines.append(f"  {step.defines.meaning}: {how(step.solution)}")
            note = f"({step.note})" if step.note else ""
            if step.solution.closed_form is sympy.nan:  # no root at all: nothing to substitute
                lines.append(f"  {text(step.defines.symbol)} = none   {note}")
            else:
                lines += _worked(
                    step.defines, step.solution.closed_form, step.value, step.inputs or sheet.values, "", note
                )
        elif isinstance(step, Given) and step.inline:
            lines.append(f"  {text(step.sym.symbol)} = {format_quantity(step.value, step.sym.unit)}   ({step.note})")
        elif isinstance(step, Note):
            lines.append(f"  {step.text}")
    lines += ["", "Results"]
    for result in sheet.results.values():
        lines.append(f"  {result.name:<26} {_value_text(result.value, result.unit)}")
    if sheet.notes:
        lines += ["", "Notes"] + [f"  - {note}" for note in sheet.notes]
    return "\n".join(lines) + "\n"


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    exact = sympy.sympify(value)
    if exact.is_Integer:
        return int(exact)
    return float(exact)


def _closed_form(expr: sympy.Expr | None) -> sympy.Expr | None:
    """A result's formula as JSON shows it: none where there is none (a solve whose sides never meet leaves NaN)."""
    return None if expr is None or expr.has(sympy.nan) else expr


def _unsolved(sheet: Sheet) -> list[str]:
    """Why each solve the sheet worked found no value: the text sheet says it on the solve's line, JSON in its notes."""
    said = []
    for step in sheet.steps:
        if isinstance(step, Solve) and step.value is None:
            why = "; ".join(part for part in (step.solution.regime, step.note) if part)
            said.append(f"{step.defines.key}: none" + (f" ({why})" if why else ""))
    return said


def to_json(sheet: Sheet) -> str:
    """The --json contract: command, inputs, results {name: value, unit, symbolic, latex}, notes."""
    results = {}
    for result in sheet.results.values():
        shown = _closed_form(result.expr)
        results[result.name] = {
            "value": _json_value(result.value),
            "unit": base_unit_text(result.unit) if result.unit else None,
            "symbolic": text(shown) if shown is not None else None,
            "latex": latex(shown) if shown is not None else None,
        }
    notes = [*_unsolved(sheet), *sheet.notes]
    payload = {"command": sheet.command, "inputs": sheet.inputs, "results": results, "notes": notes}
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def listing_json(command: str, name: str, rows: Any, notes: list[str] | None = None) -> str:
    """A catalog or a report in the --json contract: one result holding the rows, no unit of its own."""
    results = {name: {"value": rows, "unit": None, "symbolic": None, "latex": None}}
    payload = {"command": command, "inputs": {}, "results": results, "notes": notes or []}
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def answer_json(answer: Any) -> str:
    """An answer as JSON: the question, its inputs, the headline results and each section's results."""

    def results_of(results: dict) -> dict:  # type: ignore[type-arg]
        return {
            r.name: {
                "value": _json_value(r.value),
                "unit": base_unit_text(r.unit) if r.unit else None,
                "symbolic": text(_closed_form(r.expr)) if _closed_form(r.expr) is not None else None,
                "latex": latex(_closed_form(r.expr)) if _closed_form(r.expr) is not None else None,
            }
            for r in results.values()
        }

    payload = {
        "command": "answer",
        "inputs": {k: answer.inputs[k] for k in answer.question.changeable if k in answer.inputs},
        "results": results_of(answer.results),
        "notes": [note for s in answer.sections for note in s.sheet.notes],
        "question": {"id": answer.question.id, "title": answer.question.title, "source": answer.question.source},
        "sections": {s.title: results_of(s.sheet.results) for s in answer.sections},
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
