"""Every option a command offers changes its output or its validation: an ignored option is not offered."""

from __future__ import annotations

import pytest

from tests.test_hardening import BASE, _leaf_commands

# A value for each option that differs from its default, chosen to matter for the base run.
VALUES = {
    "--model": ["llama3-70b"],
    "--gpu": ["h200"],
    "--bandwidth": ["1 TB/s"],
    "--flops": ["100 TFLOP/s"],
    "--memory": ["100 MB"],
    "--power": ["300 W"],
    "--context": ["512"],
    "--dtype": ["fp8"],
    "--kv-dtype": ["fp8"],
    "--batch": ["4"],
    "--prompt": ["512"],
    "--output": ["64"],
    "--floor": [],
    "--check": [],
    "--json": [],
    "--tp": ["4"],
    # A layout beyond tensor parallelism, each degree with the others it needs (on the MoE base below).
    "--pp": ["2", "--tp", "1"],
    "--ep": ["8", "--dp", "8", "--tp", "1"],
    "--dp": ["4", "--ep", "8", "--tp", "2"],
    "--tokens": ["64"],
    "--link": ["50 GB/s"],
    "--claim": ["2000 token/s"],
    "--vs": ["b200"],
    "--step-time": ["30 ms"],
    "--recompute": ["0.5"],
    "--requests": ["7"],
    "--replies": ["8:64"],
    "--arrivals": ["all"],
    "--rate": ["5 req/s"],
    "--load": ["0.5"],
    "--max-wait": ["1 ms"],
    "--seed": ["1"],
    "--measured": ["reports/data/measured-machine.json"],
    "--set": ["batch=16"],
    "--for": ["batch"],
    "--tpot": ["20 ms"],
    "--ttft": ["30 ms"],
    "--max-batch": ["8"],
    "--max-gpus": ["1"],
    "--price": ["h100=5 USD/h"],
    # A draft is its three figures together (derive/speculation.py); --mtp runs on a config that ships MTP modules.
    "--draft-tokens": ["4", "--acceptance", "0.7", "--draft-cost", "0.05"],
    "--acceptance": ["0.7", "--draft-tokens", "4", "--draft-cost", "0.05"],
    "--draft-cost": ["0.05", "--draft-tokens", "4", "--acceptance", "0.7"],
    "--mtp": [],
}
MTP_BASE = ["--model", "deepseek-v3", "--gpu", "b200", "--dtype", "fp8"]  # its config ships one MTP module
# Options whose effect is elsewhere than stdout, or that need a base of their own.
SEPARATE = {"--config", "--allow-long-context", "--out", "--figure", "--quiet", "--help", "--list", "--format"}
SKIP_COMMANDS = {"measure", "sheets", "models", "gpus", "formulas", "check", "answer"}
# For eval and solve, a formula that reads each accelerator option.
FORMULA_FOR = {
    "--gpu": "step_time",
    "--bandwidth": "step_time",
    "--flops": "compute_time",
    "--tp": "step_time",
    "--memory": "max_batch_by_memory",
    "--power": "energy_per_token",
    "--context": "step_time",
    "--pp": "layout_tpot",  # a layout past tensor parallelism reaches the plan's own step
}
SOLVE_FOR = {
    "--pp": ("layout_tpot = 20 ms", "batch"),
    "--memory": ("max_batch_by_memory = 10 sequence", "context"),
    "--power": ("energy_per_token = 1 J/token", "batch"),
}


def _cases():  # type: ignore[no-untyped-def]
    for path, options in _leaf_commands():
        name = " ".join(path)
        if name in SKIP_COMMANDS:
            continue
        base = list(path) + BASE.get(name, ["--model", "llama3-8b"])
        if name == "shard":
            base += ["--tp", "2"]
        if name == "predict":  # expert and attention data parallelism mean something for a mixture of experts
            base = ["predict", "--model", "mixtral-8x7b"]
        for option in sorted(o for o in options - SEPARATE if o.startswith("--")):
            if option == "--mtp":
                yield name, [*path, *MTP_BASE, *(["--tpot", "50 ms"] if name == "plan" else [])], option
                continue
            if name == "sweep":
                # The sweep reads what its target reads: energy per token is the one that reads the power.
                target = "energy_per_token" if option == "--power" else "predict"
                yield name, ["sweep", target, "--model", "llama3-8b"], option
            else:
                yield name, base, option


CASES = list(_cases())
_BASELINES: dict[tuple[str, ...], object] = {}


def _baseline(run, base):  # type: ignore[no-untyped-def]
    """A command's run without the option, once a process: commands are deterministic, and each has many options."""
    key = tuple(base)
    if key not in _BASELINES:
        _BASELINES[key] = run(*base)
    return _BASELINES[key]


@pytest.mark.parametrize(("name", "base", "option"), CASES, ids=[f"{n} {o}" for n, _, o in CASES])
def test_option_changes_the_output(run, name, base, option):
    if option == "--model" and "--model" in base:
        args = [*base[: base.index("--model")], *base[base.index("--model") + 2 :], option, VALUES[option][0]]
    elif option == "--for":
        args = [a for a in base] + []
        args[args.index("--for") + 1] = "batch"
        args += ["--set", "context=4096"]
    else:
        args = [*base, option, *VALUES[option]]
    if name in ("eval", "solve") and option in FORMULA_FOR:
        # A generic command reads what its formula reads: try each option on a formula that reads it.
        base = ["eval", FORMULA_FOR[option], "--model", "llama3-8b"]
        if name == "solve":
            equation, unknown = SOLVE_FOR.get(option, (f"{FORMULA_FOR[option]} = 1 s", "batch"))
            base = ["solve", equation, "--for", unknown, "--model", "llama3-8b"]
        args = [*base, option, *VALUES[option]]
    before, after = _baseline(run, base), run(*args)
    assert before.exit_code == 0, before.stderr
    assert (after.exit_code, after.stdout) != (before.exit_code, before.stdout), f"{option} changed nothing"


@pytest.mark.parametrize(("name", "options"), [(" ".join(p), o) for p, o in _leaf_commands() if "--context" in o])
def test_allow_long_context_changes_the_validation(run, name, options):
    base = name.split() + BASE.get(name, ["--model", "llama3-8b"]) + ["--context", "100000"]
    refused, allowed = run(*base), run(*base, "--allow-long-context")
    assert refused.exit_code == 2 and "positions" in refused.stderr
    assert allowed.exit_code != 2 or "positions" not in allowed.stderr
