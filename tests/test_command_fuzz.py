"""Hypothesis writes command lines, options and values of every kind: none gives an internal error.

Every run ends in exit 0 or in one line on stderr with exit 2. `HYPOTHESIS_PROFILE=long` runs
100,000 examples (FUZZ_EXAMPLES=N for another count); CI runs 200.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cli
from tests.test_hardening import _leaf_commands

SLOW = {"measure", "sheets", "check", "answer"}  # minutes each, or no options worth fuzzing
LEAVES = [(path, sorted(o for o in options if o.startswith("--"))) for path, options in _leaf_commands()]
LEAVES = [(path, options) for path, options in LEAVES if " ".join(path) not in SLOW]

MODELS = ["llama3-8b", "gpt2", "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b", "qwen3.5-27b", "nemotron3-nano", "x"]
VALUES = st.one_of(
    st.sampled_from(
        ["0", "1", "2", "3", "8", "64", "-1", "1.5", "1e3", "1e400", "nan", "inf", "", " ", "abc", "2,048", "1_024"]
    ),
    st.sampled_from(["3.35 TB/s", "1 TB/s", "80 GB", "700 W", "20 ms", "10 /s", "1000 token/s", "5 us", "3 TFLOP/s"]),
    st.sampled_from(["20 req/s", "h100=2 USD/h", "h100=2", "b200=-1 USD/h", "50 ms", "1 ms", "h100,b200"]),
    st.sampled_from(MODELS + ["h100", "h200", "a100", "l40s", "b200", "fp8", "bf16", "int4", "poisson", "all"]),
    st.sampled_from(["batch=16", "context=abc", "tp=0", "bandwidth=1 TB/s", "kv_bytes = weight_bytes", "8:256"]),
    st.text(max_size=6),
)


@st.composite
def command_lines(draw):  # type: ignore[no-untyped-def]
    path, options = draw(st.sampled_from(LEAVES))
    args = list(path)
    if path == ("sweep",):
        args.append(draw(st.sampled_from(["predict", "kv_bytes", "nope"])))
    if path in (("eval",),):
        args.append(draw(st.sampled_from(["kv_bytes", "step_time", "nope"])))
    if path in (("solve",),):
        args += [draw(st.sampled_from(["kv_bytes = weight_bytes", "tpot = 20 ms", "x"])), "--for", "context"]
    args += ["--model", draw(st.sampled_from(MODELS))] if "--model" in options else []
    for option in draw(st.lists(st.sampled_from(options), max_size=3)) if options else []:
        args.append(option)
        if option not in ("--json", "--floor", "--quiet", "--allow-long-context", "--quick", "--list"):
            args.append(draw(VALUES))
    return args


LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", 100_000 if LONG else 200)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(command_lines())
def test_no_command_line_gives_an_internal_error(args):
    # In a scratch folder: a drawn --out or --figure value ('8', '700 W') is a file name the command may write.
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch):
        result = CliRunner().invoke(cli.cli, args, prog_name="derive")
    assert result.exit_code in (0, 2), (args, result.stderr[-300:], repr(result.exception))
    if result.exit_code == 2:
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("derive: error: "), (
            args,
            result.stderr,
        )
