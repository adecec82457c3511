"""What the tests of issue 15's answer pages share: each answer built once, and a wrong answer found by the
quantity it prints."""

from __future__ import annotations

from functools import cache

from derive import answers
from derive.core.sheet import Prose


@cache
def built(question: str, model: str | None = None, **overrides: object) -> answers.Answer:
    """The answer to `question` at its defaults, or for `model` and the other inputs given."""
    inputs = {**({"model": model} if model else {}), **overrides}
    return answers.answer(question, inputs or None)


def placeholder(answer: answers.Answer, name: str) -> Prose:
    """The one wrong answer of `answer` that prints the quantity `name`."""
    (found,) = [w for w in answer.wrong_answers if "{" + name + "}" in w.text]
    return found


def wrong(question: str, name: str, model: str | None = None, **overrides: object) -> Prose:
    return placeholder(built(question, model, **overrides), name)


def value(item: Prose, name: str):  # type: ignore[no-untyped-def]
    return item.quantities[name].number
