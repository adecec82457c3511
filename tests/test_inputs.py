"""Inputs declared once (derive/inputs.py): the CLI's options are built from the table, and the API, the Setup,
the scenario and the question bank are checked against it."""

from __future__ import annotations

import dataclasses
import inspect

import click
import pytest

import cli
from derive import api, scenario
from derive.answers import questions
from derive.derivations.common import Setup
from derive.inputs import DEFAULTS, INPUTS, OVERRIDES

# Keywords of the API that are a command's own argument, not a shared input (the formula, the equation, ...).
OWN = {"name", "equation", "for_", "settings", "check", "vs", "claim", "link", "step_time", "recompute"}


def _commands():  # type: ignore[no-untyped-def]
    def walk(group, path):  # type: ignore[no-untyped-def]
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from walk(command, [*path, name])
            else:
                yield [*path, name], command

    yield from walk(cli.cli, [])


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_every_shared_option_is_built_from_the_table(name):
    """Wherever a command offers a shared input under its own name, the option is the table's: same flag, same
    help, same default (the sweep's list-valued axes and simulate's seats are other inputs, named apart)."""
    declared = INPUTS[name]
    offered = 0
    for path, command in _commands():
        for param in command.params:
            if param.name == name and isinstance(param, click.Option) and path[0] not in ("sweep", "answer"):
                if path[0] == "plan" and name == "gpu" or path[0] == "simulate" and name in ("batch", "rate"):
                    continue  # the plan's --gpu is a list; simulate's --batch counts seats, its --rate is arrivals
                offered += 1
                assert declared.option in param.opts, (path, param.opts)
                assert param.help == declared.text, (path, param.help)
    assert offered, f"{name} is declared but no command offers it"


def test_the_scenario_takes_its_defaults_and_units_from_the_table():
    assert scenario.DEFAULTS is DEFAULTS and scenario.OVERRIDES is OVERRIDES
    assert DEFAULTS == {
        "gpu": "h100",
        "dtype": "bf16",
        "context": 2048,
        "batch": 1,
        "prompt": 2048,
        "output": 256,
        "tokens": 1,
    }


def test_every_workload_input_is_a_field_of_the_setup():
    fields = {f.name for f in dataclasses.fields(Setup)}
    # Less a model path, the accelerator's figures and the plan's own targets.
    workload = {n for n, i in INPUTS.items() if not i.command} - {"config", "bandwidth", "flops", "memory", "power"}
    assert workload <= fields, workload - fields


def test_every_api_keyword_is_a_declared_input_or_the_commands_own():
    """No API function takes a shared input under another name (`derive.gpu(memory=...)` builds an accelerator)."""
    for name, function in inspect.getmembers(api, inspect.isfunction):
        if name.startswith("_") or function.__module__ != "derive.api" or name in ("gpu", "sheets", "measure"):
            continue
        for keyword in inspect.signature(function).parameters:
            if keyword in INPUTS or keyword in OWN:
                continue
            command = {"simulate_batching": "simulate", "plan": "plan", "sweep": "sweep", "answer": "answer"}.get(name)
            assert command is not None, f"derive.{name}({keyword}=...) is not in derive/inputs.py"


def test_every_question_changes_only_declared_inputs_or_its_own():
    for question in questions().values():
        undeclared = [c for c in question.changeable if c not in INPUTS and c not in question.defaults]
        assert not undeclared, (question.id, undeclared)
