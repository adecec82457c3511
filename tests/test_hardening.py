"""Issue 12's bad inputs, each a regression test named after what it was, and a generated table across commands.

Every case exits 2 with one line on stderr and nothing on stdout (tests/test_bad_inputs.py `check`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from tests.test_bad_inputs import check


def _leaf_commands(group=cli.cli, prefix=()):  # type: ignore[no-untyped-def]
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _leaf_commands(command, prefix + (name,))
        else:
            yield prefix + (name,), {p.opts[0] for p in command.params if getattr(p, "opts", None)}


# What each command needs beyond the option under test to run at all.
BASE = {
    "sweep": ["predict", "--model", "llama3-8b"],
    "eval": ["kv_bytes", "--model", "llama3-8b"],
    "solve": ["kv_bytes = weight_bytes", "--for", "context", "--model", "llama3-8b"],
    "claim": ["--model", "llama3-8b", "--claim", "1000 token/s"],
    "compare": ["--model", "llama3-8b", "--vs", "h200"],
    "experts": ["--model", "mixtral-8x7b"],
    "simulate batching": ["--model", "gpt2", "--requests", "5"],
    "plan": ["--model", "llama3-8b", "--tpot", "50 ms", "--gpu", "h100"],
}
BAD_COUNTS = ["0", "-5", "1.5", "abc", "nan", "inf", "1e400", "99999999999999"]
BAD_QUANTITIES = {
    "--bandwidth": ["1e400 TB/s", "1e-400 TB/s", "3 TFLOP/s", "3", "nan TB/s", "-1 TB/s", "0 TB/s"],
    "--memory": ["1e400 GB", "80", "80 GB/s", "1e-30 GB"],
    "--flops": ["1e400", "1e400 TFLOP/s", "989 TB/s", "1e-30 FLOP/s"],
    "--power": ["700", "1e400 W", "700 J"],
}


def _cases():  # type: ignore[no-untyped-def]
    for path, options in _leaf_commands():
        name = " ".join(path)
        base = list(path) + BASE.get(name, ["--model", "llama3-8b"] if "--model" in options else [])
        for option in ("--batch", "--context", "--tp", "--prompt", "--output", "--tokens"):
            if option in options:
                for value in BAD_COUNTS:
                    yield base + [option, value]
        for option, values in BAD_QUANTITIES.items():
            if option in options:
                for value in values:
                    yield base + [option, value]


CASES = list(_cases())


@pytest.mark.parametrize("args", CASES, ids=[" ".join(a)[:70] for a in CASES])
def test_generated_bad_value(run, args):
    result = run(*args)
    assert result.exit_code == 2, (args, result.stdout[-200:], result.stderr)
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("derive: error: ")


# The examples of issue 12, by name.
NAMED = {
    "set_context_abc": (["answer", "kv-sizing-13b", "--set", "context=abc"], "--set context must be a whole number"),
    "set_context_0": (["answer", "kv-sizing-13b", "--set", "context=0"], "got 0"),
    "set_context_negative": (["answer", "kv-sizing-13b", "--set", "context=-5"], "got -5"),
    "set_context_fraction": (["answer", "kv-sizing-13b", "--set", "context=1.5"], "Round it: --set context=2"),
    "set_tp_0": (["answer", "vendor-claim", "--set", "tp=0"], "--set tp must be a whole number"),
    "set_tp_negative": (["answer", "vendor-claim", "--set", "tp=-1"], "got -1"),
    "set_batch_1e9": (["answer", "energy-per-token", "--set", "batch=1e9"], "sanity bound for batch"),
    "set_count_0": (["answer", "kv-sizing-13b", "--set", "count=0"], "--set count must be a whole number"),
    "set_latency_infinite": (["answer", "decode-floor-70b", "--set", "allreduce_latency=1e400 s"], "sanity bound"),
    "set_fraction_nan": (["answer", "decode-floor-70b", "--set", "achieved_bandwidth=nan"], "achieved_bandwidth"),
    "sweep_out_missing_folder": (
        ["sweep", "predict", "--model", "llama3-8b", "--out", "/nonexistent/dir/out.csv"],
        "the folder '/nonexistent/dir' does not exist",
    ),
    "sheets_out_unwritable": (["sheets", "--out", "/proc/x"], "nothing can be written"),
    "sheets_out_missing_parent": (["sheets", "--out", "/nonexistent/a/b"], "does not exist"),
    "answer_out_missing_parent": (["answer", "kv-sizing-13b", "--out", "/nonexistent/x"], "does not exist"),
    "measure_out_checked_first": (["measure", "--quick", "--out", "/nonexistent/m.json"], "does not exist"),
    "simulate_figure_missing_folder": (
        ["simulate", "batching", "--model", "gpt2", "--figure", "/nonexistent/a.svg"],
        "does not exist",
    ),
    "bandwidth_infinite": (["knee", "--model", "llama3-8b", "--bandwidth", "1e400 TB/s"], "sanity bound"),
    "memory_infinite": (["knee", "--model", "llama3-8b", "--memory", "1e400 GB"], "sanity bound"),
    "flops_infinite": (["knee", "--model", "llama3-8b", "--flops", "1e400 TFLOP/s"], "sanity bound"),
    "bandwidth_underflow": (["knee", "--model", "llama3-8b", "--bandwidth", "1e-400 TB/s"], "sanity bound"),
    "recompute_nan": (["utilisation", "--model", "llama3-8b", "--recompute", "nan"], "--recompute must be a number"),
    "load_nan": (["simulate", "batching", "--model", "gpt2", "--load", "nan"], "--load must be a number"),
    "context_past_positions": (
        ["knee", "--model", "llama3-8b", "--context", "10000000"],
        "beyond the 8,192 positions of llama3-8b",
    ),
    "sweep_tp_splits_heads": (["sweep", "predict", "--model", "llama3-8b", "--tp", "3"], "does not divide the 32"),
    # Found by tests/test_command_fuzz.py: a fraction over zero was a ZeroDivisionError.
    "batch_zero_over_zero": (["kv", "--model", "llama3-8b", "--batch", "0/0"], "must be a whole number"),
    "set_fraction_over_zero": (["answer", "decode-floor-70b", "--set", "achieved_bandwidth=1/0"], "achieved_bandwidth"),
}


@pytest.mark.parametrize("name", NAMED)
def test_issue_12_example(run, name):
    args, fragment = NAMED[name]
    check(run(*args), fragment)


def test_deeply_nested_config_is_one_line(run, tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    check(run("params", "--config", str(path)), "nests too deeply")


@pytest.mark.parametrize(
    "content",
    ['{"phases": 3, "machine": 1}', "not json", '{"machine": {}, "plan": {}, "phases": [{"name": "decode"}]}', "[]"],
)
def test_malformed_measured_file_is_one_line(run, tmp_path, content):
    path = tmp_path / "m.json"
    path.write_text(content)
    check(run("simulate", "batching", "--model", "gpt2", "--measured", str(path)), "is not a 'derive measure --out'")


def test_long_context_is_allowed_when_asked(run):
    result = run("knee", "--model", "llama3-8b", "--context", "10000", "--allow-long-context")
    assert result.exit_code == 0 and "beyond the 8,192 positions" in result.stdout


def test_a_failed_sweep_leaves_no_file(run, tmp_path):
    out = tmp_path / "grid.csv"
    check(run("sweep", "predict", "--model", "llama3-8b", "--tp", "3", "--out", str(out)), "does not divide")
    assert not out.exists() and not list(tmp_path.iterdir())


def test_answer_out_makes_its_folder_but_not_parents(run, tmp_path):
    assert run("answer", "kv-sizing-13b", "--out", str(tmp_path / "sheets")).exit_code == 0
    assert (tmp_path / "sheets" / "kv-sizing-13b.md").is_file()
    assert not list(Path(tmp_path / "sheets").glob(".*.part"))


def test_help_shows_quantities_as_written_and_they_parse(run):
    text = run("knee", "--help").stdout
    assert "--bandwidth '3.35 TB/s'" in text and "TB/S" not in text
    assert run("knee", "--model", "llama3-8b", "--bandwidth", "3.35 TB/s").exit_code == 0
    assert run("simulate", "batching", "--model", "gpt2", "--requests", "5", "--rate", "100 req/s").exit_code == 0


def test_the_tables_hold_at_least_250_bad_inputs():
    from tests.test_bad_inputs import COMMANDS, CONFIGS

    assert len(CASES) + len(NAMED) + len(COMMANDS) + len(CONFIGS) >= 250


def test_a_model_that_does_not_fit_is_an_error_never_a_negative_count(run):
    # Issue 12: "B_max = -92 sequences" was shown (Llama 3 70B's 141 GB on one 80 GB H100); then 0 sequences with exit
    # 0. A model that does not fit is bad input like any other: one line, exit 2, on a layout as on tensor parallelism.
    result = run("fit", "--model", "llama3-70b", "--tp", "1")
    assert result.exit_code == 2 and result.stdout == "" and "= -" not in result.stderr
    assert result.stderr == (
        "derive: error: llama3-70b in bf16 does not fit: its weights (141.1 GB) leave no room for one 2,048-token "
        "sequence in 80 GB. Add accelerators (--tp) or use a smaller --dtype\n"
    )
    on_layout = run("fit", "--model", "deepseek-v3", "--gpu", "l40s", "--tp", "1", "--ep", "2", "--dp", "2")
    assert on_layout.exit_code == 2 and "does not fit on tp1 ep2 pp1 dp2" in on_layout.stderr


def test_a_given_rate_is_not_called_a_share_of_capacity(run):
    result = run("simulate", "batching", "--model", "gpt2", "--requests", "5", "--rate", "5 req/s")
    assert "Poisson at 5 per second, seed" in result.stdout and "of continuous capacity" not in result.stdout


def test_a_claim_needs_whole_users(run):
    result = run("claim", "--model", "llama3-8b", "--gpu", "h200", "--claim", "100 token/s")
    assert "needs at least 1 user at once" in result.stdout and "0.3" not in result.stdout.split("users")[0][-10:]


def test_a_config_is_named_for_its_model_not_its_folder(run, tmp_path):
    # Issue 12: titles and errors named the folder a config.json was saved in.
    config = json.loads((Path(__file__).parent.parent / "formulas" / "models" / "llama3-8b.json").read_text())
    config["_name_or_path"] = "meta-llama/Meta-Llama-3-8B"
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "config.json").write_text(json.dumps(config))
    result = run("params", "--config", str(tmp_path / "tmp"), "--json")
    assert json.loads(result.stdout)["inputs"]["model"] == "Meta-Llama-3-8B"
