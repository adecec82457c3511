"""Worked answers: a question, its inputs, and an Answer built from the library.

A question module in reports/questions/ declares a Question (id, text, source,
default inputs, which inputs a user may change) and a builder that returns an
Answer: a short answer, sections of worked steps, figures, takeaways, the common
wrong answers (each with the number it gives), the follow-up, and caveats.
Every number in it is computed; the prose only names where each one goes.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import sympy

from derive.core.errors import DeriveError
from derive.core.sheet import Figure, Prose, Quantity, Result, Section

# Inputs every question understands, with the option that sets each.
COMMON_INPUTS = ("model", "gpu", "tp", "batch", "context", "dtype", "kv_dtype", "prompt", "output")


@dataclass(frozen=True)
class Question:
    id: str
    title: str  # the question as asked
    source: str  # where it comes from (seed document and number)
    level: str
    kind: str  # what sort of answer: sizing, crossover, diagnosis, ...
    defaults: Mapping[str, Any]
    changeable: tuple[str, ...]
    build: Callable[[Inputs], Answer] = field(compare=False, repr=False)


@dataclass(frozen=True)
class FollowUp:
    """The question an interviewer asks next, and its answer computed like the rest."""

    question: str
    answer: Prose


@dataclass
class Answer:
    question: Question
    inputs: Inputs
    summary: Prose
    sections: list[Section] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    takeaways: list[Prose] = field(default_factory=list)
    caveats: list[Prose] = field(default_factory=list)
    results: dict[str, Result] = field(default_factory=dict)
    # What a candidate commonly says instead, each with the number it gives and why it is wrong.
    wrong_answers: list[Prose] = field(default_factory=list)
    follow_up: FollowUp | None = None

    @property
    def changed(self) -> list[tuple[str, Any, Any]]:
        """(input, value, the question's) for each input the user set other than the question asks: the title is
        the question as asked, and the answer is for these."""
        defaults = self.question.defaults
        return [
            (key, self.inputs[key], defaults.get(key))
            for key in self.question.changeable
            if self.inputs.get(key) is not None and str(self.inputs[key]) != str(defaults.get(key))
        ]

    def headline(self, name: str, value: sympy.Expr | str | None, unit: str = "") -> Quantity:
        """Record a headline result (for --format json) and return it for prose."""
        self.results[name] = Result(name, unit, value)
        return Quantity(value, unit)


class Inputs(dict):  # type: ignore[type-arg]
    """A question's inputs: its defaults, overridden by the user's options and --set."""

    def setup(self, **overrides: Any):  # type: ignore[no-untyped-def]
        """A derivations.Setup from these inputs, through the one scenario builder (derive/scenario.py).

        A context the user set (not the question's own) must fit the model's positions, as on the CLI."""
        from derive import scenario
        from derive.recipes import QUESTION_DTYPE

        values = {key: value for key, value in {**self, **overrides}.items() if value is not None}
        return scenario.build(values, given=getattr(self, "given", ()), dtype_option=QUESTION_DTYPE)


def assumed(inputs: Mapping[str, Any], key: str, unit: str = "") -> sympy.Expr:
    """A question's input ('5 us', '0.85', or an int from --set) as an exact value in base units, validated."""
    from derive.core import validate

    value = inputs[key]
    if isinstance(value, int) and not isinstance(value, bool):
        return sympy.Integer(value)
    if not unit:
        return validate.number(value, key, f"--set {key}")
    return validate.quantity(str(value).strip(), unit, f"--set {key}")


@lru_cache(maxsize=1)
def questions() -> dict[str, Question]:
    """Every question of the banks installed under the 'derive.questions' entry point (this project's is
    reports/questions/, pyproject.toml), by id, in the seed documents' order. The engine names no bank itself."""
    from importlib.metadata import entry_points

    found: dict[str, Question] = {}
    for bank in entry_points(group="derive.questions"):
        package = bank.load()
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            question = getattr(module, "QUESTION", None)
            if isinstance(question, Question):
                found[question.id] = question
    if not found:
        raise DeriveError(
            "no question bank is installed (the 'derive.questions' entry point)",
            "Install derive with pip install -e . from its source, which registers reports/questions",
        )
    return dict(sorted(found.items(), key=lambda item: _seed_order(item[1].source)))


def _seed_order(source: str) -> tuple[int, ...]:
    """'Seed 004, question 11' sorts as (4, 11): the book follows the seed documents."""
    return tuple(int(n) for n in re.findall(r"\d+", source)) or (999,)


def question(question_id: str) -> Question:
    bank = questions()
    if question_id not in bank:
        from derive.core.names import closest

        raise DeriveError(
            f"unknown question '{question_id}'", f"{closest(question_id, bank)}Run 'derive answer --list' to see them"
        )
    return bank[question_id]


def answer(question_id: str, overrides: Mapping[str, Any] | None = None) -> Answer:
    """Build one answer; `overrides` may only touch the inputs the question lets a user change."""
    q = question(question_id)
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    fixed = sorted(set(overrides) - set(q.changeable))
    if fixed:
        raise DeriveError(
            f"question {q.id} does not take {', '.join(fixed)}",
            f"It takes: {', '.join(q.changeable) or 'no inputs'}",
        )
    inputs = {**q.defaults, **overrides}
    if q.defaults.get("tp") is not None and "tp" not in overrides and "model" in overrides:
        # The question's tensor-parallel degree was chosen for its own model: for another, the smallest
        # degree that holds the weights and one sequence (the rule every command uses).
        inputs["tp"] = None
    built = Inputs(inputs)
    built.given = set(overrides)  # type: ignore[attr-defined]
    return q.build(built)


def write(answer: Answer, out: Path, figures_dir: str = "figures") -> list[Path]:
    """Write ID.md, ID.tex and the figures of one answer under `out`."""
    from derive.core.validate import atomic, make_folder, output_folder
    from derive.sheet_render import render

    make_folder(output_folder(out))  # the folder itself, inside one that exists (never its parents)
    written = []
    for figure in answer.figures:
        stem = out / figures_dir / f"{answer.question.id}-{figure.name}"
        figure.draw(stem)  # type: ignore[operator]
        written += [stem.with_suffix(".svg"), stem.with_suffix(".png")]
    for fmt in ("md", "tex"):
        path = out / f"{answer.question.id}.{fmt}"
        with atomic(path) as stream:
            stream.write(render(answer, fmt, figures_dir))  # type: ignore[attr-defined]
        written.append(path)
    return written


def write_all(
    out: Path, progress: Callable[[str], None] = lambda _: None, only: Sequence[str] | None = None
) -> list[Path]:
    """Every question at its defaults (or `only` those ids), and book.tex gathering them; `progress` hears each
    question's id."""
    from derive.core.validate import atomic, make_folder, output_folder
    from derive.sheet_render import render_book

    ids = list(questions()) if not only else list(dict.fromkeys(question(q.strip()).id for q in only))
    make_folder(output_folder(out))  # before any question runs: an unwritable folder fails first
    answers, written = [], []
    for qid, (item, files) in zip(ids, _each_question(ids, out), strict=True):
        progress(qid)
        answers.append(item)
        written += files
    book = out / "book.tex"
    with atomic(book) as stream:
        stream.write(render_book(answers))  # type: ignore[attr-defined]
    return written + [book]


def _write_question(qid: str, out: Path) -> tuple[Answer, list[Path]]:
    """One question answered and written; the answer comes back without its drawing code (which need not pickle)."""
    item = answer(qid)
    files = write(item, out)
    drawn = [Figure(figure.name, figure.caption, None) for figure in item.figures]
    return dataclasses.replace(item, figures=drawn), files


# What forked workers inherit: the questions' ids and the folder (a worker gets an index).
_PENDING: list[tuple[str, Path]] = []


def _each_question(ids: list[str], out: Path) -> Iterator[tuple[Answer, list[Path]]]:
    """Each question written, in order: in forked workers where the platform forks and has cores to spare (the
    questions are independent, and their figures, matplotlib's layout and text, are most of `derive sheets`)."""
    import multiprocessing
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2 or len(ids) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for qid in ids:
            yield _write_question(qid, out)
        return
    import formulas
    from derive.figures import pyplot

    formulas.library()  # the library defined and matplotlib imported once, before the fork
    pyplot()
    yield _write_question(ids[0], out)  # the first here: the caches it fills (models, compiles) are inherited
    _PENDING[:] = [(qid, out) for qid in ids[1:]]
    try:
        with multiprocessing.get_context("fork").Pool(min(cores, 8)) as pool:
            yield from pool.imap(_write_pending, range(len(ids) - 1))
    finally:
        _PENDING.clear()


def _write_pending(index: int) -> tuple[Answer, list[Path]]:
    return _write_question(*_PENDING[index])
