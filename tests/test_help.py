"""Every command's --help, and every example it shows, run as a user would paste them."""

from __future__ import annotations

import pytest

import cli
from tests.test_hardening import BASE, _leaf_commands

COMMANDS = sorted(" ".join(path) for path, _ in _leaf_commands())


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_one_page_that_names_the_command(run, command):
    result = run(*command.split(), "--help")
    assert result.exit_code == 0 and result.stderr == ""
    assert f"Usage: derive {command}" in result.stdout
    assert "(E.G." not in result.stdout and "TB/S" not in result.stdout  # metavars as written


def _examples():  # type: ignore[no-untyped-def]
    for path, _ in _leaf_commands():
        command = cli.cli
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        for param in command.params:
            example = getattr(param.type, "example", None)
            if example:
                yield " ".join(path), param.opts[0], example


EXAMPLES = [e for e in _examples() if e[0] != "measure"]  # measure has no quantity options; it runs for a minute


@pytest.mark.parametrize(("command", "option", "example"), EXAMPLES, ids=[f"{c} {o}" for c, o, _ in EXAMPLES])
def test_every_quantity_example_in_help_runs_as_shown(run, command, option, example):
    base = BASE.get(command, ["--model", "llama3-8b"])
    result = run(*command.split(), *base, option, example)
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "kv_bytes", "--model", "llama3-8b", "--set", "batch=16"],
        ["eval", "memory_time", "--model", "llama3-8b", "--set", "bandwidth=3.35 TB/s"],
        ["answer", "kv-sizing-13b", "--set", "context=4096"],
        ["answer", "vendor-claim", "--set", "tp=4"],
        ["solve", "kv_bytes = weight_bytes", "--for", "context", "--model", "llama3-8b"],
    ],
)
def test_the_set_examples_in_help_run(run, args):
    result = run(*args)
    assert result.exit_code == 0, result.stderr
