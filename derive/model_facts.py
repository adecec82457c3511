"""A model's own derived quantities, derived once for the book and cited from every answer that uses them.

Weight bytes, cache per token, FLOPs per token and the parameter counts behind them depend only on the
config and the stored formats; the answers derive them again and again (Llama 3 70B's cache per token
some sixteen times). The book's appendix derives each once, in a section per model and formats, and
each answer's derivation cites that section in one line instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sympy

from derive.core.sheet import Compute, Given, Sheet, Step
from derive.core.symbols import Sym, lookup
from formulas import notation as sym

# The stored formats a model's quantities depend on (weights, cache, experts as shipped, recurrent state).
_FORMATS = (sym.b_w, sym.b_kv, sym.b_x, sym.b_st)


@dataclass(frozen=True)
class Reference:
    """A run of a sheet's steps that the book derives once, in the model section `label`."""

    label: str
    title: str
    steps: tuple[Compute, ...]


@dataclass
class ModelFacts:
    """One model: the config values and the worked steps every answer shares, each with the formats it assumed."""

    label: str
    model: str
    title: str
    givens: list[Given] = field(default_factory=list)
    steps: list[Compute] = field(default_factory=list)
    formats: dict[int, str] = field(default_factory=dict)  # id(step) -> "bf16 weights", where it rests on one

    @property
    def values(self) -> dict[Sym, sympy.Expr]:
        """What a worked step shows where it kept no inputs of its own (the templates read sheet.values)."""
        return {g.sym: g.value for g in self.givens} | {s.defines: s.value for s in self.steps}

    def format_of(self, step: Compute) -> str:
        return self.formats.get(id(step), "")


def _is_config(step: Given) -> bool:
    return step.sym in _FORMATS or step.note.startswith(("config", "from the config"))


def _model_steps(sheet: Sheet) -> tuple[dict[Sym, Given], list[Compute]]:
    """The sheet's config givens, and its computed steps that rest on nothing else (constants aside)."""
    base = {s.sym: s for s in sheet.steps if isinstance(s, Given) and not s.inline and _is_config(s)}
    known: set[Sym] = set(base)
    found: list[Compute] = []
    for step in sheet.steps:
        if isinstance(step, Given) and step.sym not in base:
            known.discard(step.sym)  # a workload value given under a config symbol's name is not the config's
        if not isinstance(step, Compute):
            continue
        used = {lookup(s) for s in step.expr.free_symbols}
        if all(u in known or u.value is not None for u in used):
            found.append(step)
            known.add(step.defines)
        else:
            known.discard(step.defines)
    return base, found


def _formats(step: Compute, base: dict[Sym, Given]) -> str:
    """The stored formats a step rests on, in words: 'bf16 weights', 'fp8 cache'."""
    used = {lookup(s) for s in step.expr.free_symbols}
    return ", ".join(
        f"{base[f].note.split(':')[0].split(',')[0]} {what}"
        for f, what in zip(_FORMATS, ("weights", "cache", "experts", "state"), strict=True)
        if f in used and f in base
    )


class Facts:
    """Every model quantity the book's answers derive, one section per model, each step kept once."""

    def __init__(self, sheets: list[Sheet], title_of) -> None:  # type: ignore[no-untyped-def]
        self.groups: dict[str, ModelFacts] = {}
        self._keys: dict[tuple[str, Sym, sympy.Expr], str] = {}
        for sheet in sheets:
            model = sheet.inputs.get("model")
            if not isinstance(model, str):
                continue
            base, steps = _model_steps(sheet)
            if not steps:
                continue
            group = self.groups.get(model)
            if group is None:
                group = self.groups[model] = ModelFacts(f"m:{model}", model, title_of(model))
            for step in steps:
                if (model, step.defines, step.value) in self._keys:
                    continue
                self._keys[(model, step.defines, step.value)] = group.label
                group.steps.append(step)
                group.formats[id(step)] = _formats(step, base)
                for s in sorted(step.expr.free_symbols, key=lambda x: x.name):
                    given = base.get(lookup(s))
                    if (
                        given is not None
                        and given.sym not in _FORMATS
                        and given.sym not in {g.sym for g in group.givens}
                    ):
                        group.givens.append(given)

    def cited(self, sheet: Sheet) -> Sheet:
        """The sheet with each run of shared model steps replaced by one Reference to its model section."""
        model = sheet.inputs.get("model")
        if not isinstance(model, str):
            return sheet
        steps: list[Step | Reference] = []
        for step in sheet.steps:
            # The same quantity of the same model with the same value is the section's, however this sheet got it.
            label = self._keys.get((model, step.defines, step.value)) if isinstance(step, Compute) else None
            if label is None:
                steps.append(step)
                continue
            last = steps[-1] if steps else None
            if isinstance(last, Reference) and last.label == label:
                steps[-1] = replace(last, steps=(*last.steps, step))  # type: ignore[arg-type]
            else:
                steps.append(Reference(label, self.groups[model].title, (step,)))  # type: ignore[arg-type]
        return replace(sheet, steps=steps)  # type: ignore[arg-type]
