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


EXAMPLES = [e for e in _examples() if e[0] != "measure"]
# A quantity that reads the option: eval, solve and sweep refuse an option their quantity does not read.
_STEP = ["step_time", "--model", "llama3-8b"]
_SOLVED = ["step_time = 20 ms", "--for", "batch", "--model", "llama3-8b"]
READS = {
    **{("eval", option): _STEP for option in ("--bandwidth", "--flops")},
    ("eval", "--power"): ["energy_per_token", "--model", "llama3-8b"],
    ("eval", "--memory"): ["max_batch_by_memory", "--model", "llama3-8b"],
    **{("solve", o): _SOLVED for o in ("--bandwidth", "--flops")},
    ("solve", "--power"): ["energy_per_token = 1 J/token", "--for", "batch", "--model", "llama3-8b"],
    ("sweep", "--power"): ["energy_per_token", "--model", "llama3-8b"],
}  # measure has no quantity options; it runs for a minute


@pytest.mark.parametrize(("command", "option", "example"), EXAMPLES, ids=[f"{c} {o}" for c, o, _ in EXAMPLES])
def test_every_quantity_example_in_help_runs_as_shown(run, command, option, example):
    base = READS.get((command, option)) or BASE.get(command, ["--model", "llama3-8b"])
    if option in base:  # the example stands in for the base's own value: an option is given once
        at = base.index(option)
        base = base[:at] + base[at + 2 :]
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
