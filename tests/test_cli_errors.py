"""Every bad input: exit code 2, one line on stderr that says what is wrong, nothing on stdout."""

from __future__ import annotations

import pytest

VALID_LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 100,
}


def assert_error(result, message: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0] == "derive: error: " + message


def test_unknown_model_lists_known_and_suggests(run):
    assert_error(
        run("kv", "--model", "llama3-7b"),
        "unknown model 'llama3-7b'. Did you mean 'llama3-70b'? Known: gpt2, llama2-7b, llama2-13b, "
        "llama2-70b, llama3-8b, llama3-70b, llama3.1-70b, llama3.1-405b, mistral-7b, mixtral-8x7b, deepseek-v3, "
        "qwen3-8b, qwen3-30b-a3b, qwen3-vl-8b, qwen3.5-27b, qwen3.5-35b-a3b, gpt-oss-20b, llama4-scout, "
        "gemma4-26b-a4b, deepseek-v3.2, deepseek-v4-flash, glm-5, kimi-k2, minimax-m2.5, nemotron3-nano, "
        "step-3.7-flash (see 'derive models')",
    )


def test_unknown_gpu_lists_known_and_suggests(run):
    assert_error(
        run("knee", "--model", "llama70b", "--gpu", "h1000"),
        "unknown GPU 'h1000'. Did you mean 'h100'? Known: h100, h100-pcie, h200, b200, gb200, a100, "
        "a100-40gb, l40s, mi300x, mi325x, rtx4090 (see 'derive gpus')",
    )


def test_missing_config_file(run, tmp_path):
    path = tmp_path / "nowhere" / "config.json"
    assert_error(
        run("kv", "--config", str(path)),
        f"no config.json at '{path}'. Pass a config.json file or the folder that holds it",
    )


def test_malformed_json(run, write_config):
    path = write_config('{"model_type": "llama", "hidden_size": 64')
    assert_error(
        run("kv", "--config", str(path)),
        f"'{path}' is not valid JSON (line 1, column 42: Expecting ',' delimiter). "
        "Fix the file or download the config.json again",
    )


def test_binary_file(run, write_config):
    path = write_config(b"\x00\xff\xfe\x01")
    assert_error(run("kv", "--config", str(path)), f"'{path}' is not a text file. Pass a Hugging Face config.json")


def test_config_not_an_object(run, write_config):
    assert_error(
        run("params", "--config", str(write_config("[1, 2]"))),
        "config for model is not a JSON object. Pass a Hugging Face config.json",
    )


def test_missing_key_is_named(run, write_config):
    config = {k: v for k, v in VALID_LLAMA.items() if k != "intermediate_size"}
    assert_error(
        run("kv", "--config", str(write_config(config))),
        "config for model lacks 'intermediate_size', which a llama model needs. "
        "Add 'intermediate_size' to the config.json",
    )


def test_not_a_decoder(run, write_config):
    assert_error(
        run("params", "--config", str(write_config({"model_type": "bert"}))),
        "config for model: model_type 'bert' is not a decoder-only language model (bidirectional encoder that "
        "also has a causal-LM head (in the masked-LM mapping)). derive reads decoders: pass the config of a "
        "causal language model",
    )


def test_heads_must_divide_hidden(run, write_config):
    assert_error(
        run("params", "--config", str(write_config({**VALID_LLAMA, "num_attention_heads": 5}))),
        "config for model: num_attention_heads=5 does not divide hidden_size=64. "
        "Give 'head_dim' explicitly or fix the head count",
    )


def test_negative_shape_in_config(run, write_config):
    assert_error(
        run("params", "--config", str(write_config({**VALID_LLAMA, "num_hidden_layers": -2}))),
        "config for model: 'num_hidden_layers' is -2, not a whole number from 1 to 1,000,000,000. "
        "Fix the value in the config.json",
    )


@pytest.mark.parametrize(("option", "value"), [("--batch", "0"), ("--batch", "-3"), ("--context", "0")])
def test_non_positive_counts(run, option, value):
    assert_error(
        run("kv", "--model", "gpt2", option, value),
        f"{option} must be a whole number of at least 1, got {value}. For example {option} 16",
    )


def test_non_numeric_context(run):
    assert_error(
        run("kv", "--model", "gpt2", "--context", "lots"),
        "--context must be a whole number of at least 1, got 'lots'. For example --context 16",
    )


def test_wrong_dimension_for_bandwidth(run):
    assert_error(
        run("knee", "--model", "llama70b", "--bandwidth", "3 TFLOP/s"),
        "--bandwidth '3 TFLOP/s' is a compute rate (FLOP/second), not a bandwidth (byte/second). "
        "Give it in byte/second or a prefixed form, for example '3.35 TB/s'",
    )


def test_quantity_without_unit(run):
    assert_error(
        run("knee", "--model", "llama70b", "--flops", "3"),
        "--flops '3' has no unit. Write it with one, for example '989 TFLOP/s'",
    )


def test_model_that_does_not_fit(run):
    assert_error(
        run("knee", "--model", "llama3.1-405b", "--tp", "1"),
        "llama3.1-405b in bf16 needs 811.7 GB of weights plus 1.057 GB per sequence at 2,048 tokens, "
        "more than the 80 GB of 1 x h100. Use --tp 16 or more, a smaller --dtype, or a shorter --context",
    )


def test_no_model(run):
    assert_error(run("kv"), "no model given. Pass --model NAME (see 'derive models') or --config PATH")


def test_model_and_config_together(run, write_config):
    assert_error(
        run("kv", "--model", "gpt2", "--config", str(write_config(VALID_LLAMA))),
        "--model and --config both given. Pass one of them",
    )


def test_dtype_without_a_datasheet_peak(run):
    assert_error(
        run("knee", "--model", "llama70b", "--gpu", "a100", "--dtype", "fp8"),
        "a100 has no fp8 peak in its datasheet. Pass --flops with the figure to use, or --dtype fp32/bf16/fp16/int8-sq",
    )


def _commands(group, prefix=()):  # type: ignore[no-untyped-def]
    import click

    for name, command in group.commands.items():
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def test_every_command_has_help(run):
    import cli

    names = list(_commands(cli.cli))
    assert len(names) >= 25
    for path in names:
        result = run(*path, "--help")
        assert result.exit_code == 0, path
        assert "Usage: derive " + " ".join(path) in result.stdout
        summary = result.stdout.split("\n\n")[1].strip()
        assert summary and not summary.startswith("Options"), path  # a sentence saying what it does


def test_an_echoed_control_character_keeps_the_error_on_one_line(run):
    """The fuzz test drew '\\x1e' (a record separator, a line break to str.splitlines): the error echoes it escaped."""
    result = run("params", "--model", "llama3-8b", "--check", "\x1e")
    assert result.exit_code == 2 and "unexpected extra argument (\\x1e)" in result.stderr
    assert len(result.stderr.splitlines()) == 1


# Inputs refused since a review ran the commands as a hostile user would (stop 45): each one line, exit 2.
REFUSED = [
    # click keeps an option's last value: `--gpu h100 --gpu b200` would plan on b200 alone, and say nothing.
    (
        ["plan", "--model", "llama3-8b", "--gpu", "h100", "--gpu", "b200", "--tpot", "30 ms"],
        "--gpu is given more than once: give it once (several go in one, comma-separated). Run 'derive plan --help' "
        "for the options",
    ),
    (
        ["crossover", "kv-weights", "--model", "llama3-8b", "--model", "llama3-70b"],
        "--model is given more than once: give it once. Run 'derive crossover kv-weights --help' for the options",
    ),
    # eval, solve and sweep refuse an option their quantity never reads, as sweep refuses an axis: the output would
    # be the same without it, as if it applied.
    (
        ["eval", "kv_bytes", "--model", "llama3-8b", "--flops", "1 TFLOP/s"],
        "kv_bytes does not depend on --flops. Drop --flops: it changes nothing here",
    ),
    (
        ["solve", "kv_bytes = weight_bytes", "--for", "context", "--model", "llama3-8b", "--bandwidth", "5 TB/s"],
        "'kv_bytes = weight_bytes' does not depend on --bandwidth. Drop --bandwidth: it changes nothing here",
    ),
    (
        ["solve", "kv_bytes = weight_bytes", "--for", "context", "--model", "llama3-8b", "--context", "4096"],
        "--context is what 'kv_bytes = weight_bytes' is solved for. Drop --context",
    ),
    (
        ["sweep", "kv_bytes", "--model", "llama3-8b", "--batch", "1,2", "--power", "1 W"],
        "kv_bytes does not depend on --power. Drop --power: it changes nothing",
    ),
    # A quantity given by --set and by its own option, or by --set twice: neither silently wins.
    (
        ["eval", "kv_bytes", "--model", "llama3-8b", "--set", "batch=16", "--batch", "4"],
        "--set batch and --batch both give sequences decoded together. Give it one way, not both",
    ),
    (
        ["eval", "kv_bytes", "--model", "llama3-8b", "--set", "batch=16", "--set", "batch=4"],
        "--set batch is given twice. Give batch once",
    ),
    (
        ["sweep", "predict", "--model", "llama3-8b", "--batch", "1:1000000", "--context", "1:8000"],
        "the grid has 8,000,000,000 points (1,000,000 batch x 8,000 context), more than the 1,000,000,000 one sweep "
        "evaluates. Narrow an axis (START:STOP:STEP with a larger step, or fewer values), or split the sweep",
    ),
    # A request past the config's positions, as kv and fit refuse a --context past them (Llama 3 8B: 8,192).
    (
        ["predict", "--model", "llama3-8b", "--prompt", "20000"],
        "a 20,000-token prompt and a 256-token reply reach 20,256 tokens, beyond the 8,192 positions of llama3-8b's "
        "config. Pass a shorter prompt or reply, or --allow-long-context to size them anyway",
    ),
    # MBU above 1 can come from bytes read as another format (bf16 for int4: 4x at most); 1 ns cannot.
    (
        ["utilisation", "--model", "llama3-8b", "--step-time", "1 ns"],
        "--step-time 1 ns is 4.561 million times shorter than the 4.561 ms the step's bytes take at peak bandwidth: "
        "no step beats the roofline, and no weight or cache format read as another explains more than 4x. Check the "
        "time's unit (ms, us) and --batch, --context, --dtype and --kv-dtype",
    ),
]


@pytest.mark.parametrize(("args", "message"), REFUSED, ids=[" ".join(a[:2]) for a, _ in REFUSED])
def test_refused_in_one_line(run, args, message):
    assert_error(run(*args), message)


def test_what_the_refusals_spare_still_runs(run):
    assert run("predict", "--model", "llama3-8b", "--json", "--json").exit_code == 0  # a flag twice is the flag
    assert run("eval", "step_time", "--model", "llama3-8b", "--bandwidth", "5 TB/s").exit_code == 0  # read: kept
    long = ("--model", "llama3-8b", "--prompt", "20000", "--allow-long-context")
    assert run("predict", *long).exit_code == 0 and run("plan", *long, "--tpot", "50 ms").exit_code == 0
