"""QA's findings on the command line, one test each: ignored options, wrong advice, garbled help, JSON keys that
depend on the path, text that disagrees with the values used."""

from __future__ import annotations

import json
import re

import pytest

import derive
from derive.inputs import INPUTS


def _one_error_line(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, (result.exit_code, result.stdout[-300:], result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("derive: error: "), result.stderr
    return str(lines[0])


@pytest.mark.parametrize("command", ["kv-weights", "prefill"])
def test_crossovers_offer_no_context_they_solve_for(run, command):
    """A crossover solves for a length: a --context would change nothing, so it is neither offered nor listed."""
    help_text = run("crossover", command, "--help").stdout
    assert "--context" not in help_text and "--allow-long-context" not in help_text
    _one_error_line(run("crossover", command, "--model", "llama3-8b", "-s", "100"))
    shown = json.loads(run("crossover", command, "--model", "llama3-8b", "--json").stdout)
    assert "context" not in shown["inputs"]


def test_predict_sizes_its_default_tp_at_prompt_plus_output_and_names_its_own_options(run):
    line = _one_error_line(run("predict", "--model", "qwen3.5-27b", "--memory", "5 GB", "--prompt", "8000"))
    assert f"at {8000 + INPUTS['output'].default:,} tokens" in line
    assert "--prompt/--output" in line and "--context" not in line


def test_a_fit_error_prints_the_digits_that_tell_need_from_memory(run):
    args = ["--model", "deepseek-v3", "--gpu", "h200", "--dtype", "fp8", "--tp", "4", "--dp", "2", "--batch", "1528"]
    line = _one_error_line(run("predict", *args, "--prompt", "2047", "--output", "2"))
    needed, held = re.search(r"needs ([\d.,]+ \w+) .* more than its ([\d.,]+ \w+)", line).groups()  # type: ignore[union-attr]
    assert needed != held


def test_a_default_tp_error_names_a_degree_that_splits_the_heads_and_it_runs(run):
    line = _one_error_line(run("fit", "--model", "gpt2", "--memory", "0.05 GB"))
    assert "split at most" not in line
    suggested = re.search(r"Pass --tp (\d+)", line).group(1)  # type: ignore[union-attr]
    assert run("fit", "--model", "gpt2", "--memory", "0.05 GB", "--tp", suggested).exit_code == 0


def test_set_tp_meets_the_same_rule_as_the_option(run):
    by_option = _one_error_line(run("eval", "max_batch_by_memory", "--model", "llama70b", "--tp", "3"))
    by_set = _one_error_line(run("eval", "max_batch_by_memory", "--model", "llama70b", "--set", "tp=3"))
    assert by_set == by_option.replace("--tp 3", "--set tp=3")


@pytest.mark.parametrize("group", ["crossover", "simulate"])
def test_a_group_alone_prints_its_help_as_click_does(run, group):
    result = run(group)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"Usage: derive {group} ") and "\nCommands:\n" in result.stderr
    assert "\\n" not in result.stderr and "error" not in result.stderr


@pytest.mark.parametrize(
    ("options", "ignored"),
    [
        (["--rate", "5 req/s", "--load", "0.5"], "--rate and --load"),
        (["--arrivals", "all", "--rate", "5 req/s"], "--rate would be ignored"),
        (["--arrivals", "all", "--load", "0.5"], "--load would be ignored"),
    ],
)
def test_simulate_refuses_arrival_options_it_would_ignore(run, options, ignored):
    line = _one_error_line(run("simulate", "batching", "--model", "gpt2", "--requests", "5", *options))
    assert ignored in line


@pytest.mark.parametrize(
    ("batch", "verb"), [("1", "1 sequence at this context needs"), ("2", "2 sequences at this context need ")]
)
def test_a_batch_past_memory_is_said_in_grammar(run, batch, verb):
    assert verb in run("intensity", "--model", "llama405b", "--batch", batch).stdout


def test_compare_says_and_does_that_overrides_apply_to_gpu_alone(run):
    said = " ".join(run("compare", "--help").stdout.split())
    assert "--bandwidth, --flops and --memory override --gpu's alone" in said
    ratio = derive.compare("llama70b", "h100", vs="b200", bandwidth="1 TB/s").results["bandwidth_ratio"]
    assert ratio == derive.gpu("b200").bandwidth / derive.gpu("h100", bandwidth="1 TB/s").bandwidth


PATHS = {
    "tensor parallelism": {"tp": 2},
    "expert parallelism": {"tp": 2, "ep": 2},
    "a draft": {"tp": 2, "draft_tokens": 4, "acceptance": "0.7", "draft_cost": "0.05"},
}


def test_predict_gives_the_same_keys_on_every_path():
    keys = {path: set(derive.predict("mixtral-8x7b", batch=8, **kw).results) for path, kw in PATHS.items()}
    wanted = {"ttft_floor", "ttft", "tpot_floor", "tpot", "throughput_floor", "throughput"}
    wanted |= {"e2e_latency_floor", "e2e_latency"}
    assert all(wanted <= found for found in keys.values()), keys


@pytest.mark.parametrize("path", ["expert parallelism", "a draft"])
def test_predict_throughput_and_latency_on_a_layout_come_from_its_own_step(path):
    predicted = derive.predict("mixtral-8x7b", batch=8, **PATHS[path])
    r, tau = predicted.results, float(predicted.values["tokens_per_step"])
    for suffix in ("_floor", ""):
        tpot, ttft = (r[f"{name}{suffix}"].to("s").magnitude for name in ("tpot", "ttft"))
        assert r[f"throughput{suffix}"].to("token/s").magnitude == pytest.approx(r["sequences"].magnitude * tau / tpot)
        end = ttft + (INPUTS["output"].default - 1) * tpot / tau
        assert r[f"e2e_latency{suffix}"].to("s").magnitude == pytest.approx(end)


def test_json_inputs_are_what_the_command_computed(run):
    predicted = json.loads(run("predict", "--model", "llama3-8b", "--json").stdout)["inputs"]
    assert "context" not in predicted and predicted["prompt"] == INPUTS["prompt"].default
    counted = json.loads(run("params", "--model", "gpt2", "--json").stdout)["inputs"]
    assert set(counted) == {"model", "defaults"}


def test_a_drafts_tau_is_not_called_no_speculative_decoding(run):
    text = run("predict", "--model", "llama3-8b", "--draft-tokens", "4", "--acceptance", "0.7", "--draft-cost", "0.05")
    assert "no speculative decoding" not in text.stdout


def test_predict_shows_one_d_p_the_one_it_used(run):
    text = run("predict", "--model", "mixtral-8x7b", "--tp", "1", "--ep", "2", "--dp", "2", "--batch", "8").stdout
    shown = re.findall(r"^\s+d_p\s+= (\d+)", text, re.MULTILINE)
    assert shown and set(shown) == {"2"}, shown


def test_a_length_past_the_configs_positions_is_said_wherever_it_is_reached(run):
    """Llama 3 8B's and 70B's configs stop at 8,192 positions (max_position_embeddings): predict, plan and the
    KV-weight crossover say so in the same words when a sequence (or the crossover) runs past them."""
    limit = "beyond the 8,192 positions of"
    long = ("--prompt", "100000", "--allow-long-context")  # refused without it (tests/test_cli_errors.py)
    assert limit in run("predict", "-m", "llama3-8b", *long).stdout
    planned = run("plan", "-m", "llama3-8b", "--tpot", "50 ms", *long, "--gpu", "h100").stdout
    assert f"100,256 tokens is {limit} llama3-8b's config" in planned
    past = json.loads(run("crossover", "kv-weights", "-m", "llama70b", "-b", "16", "--json").stdout)
    assert past["results"]["crossover_context"]["value"] > 8192 and any(limit in n for n in past["notes"])
    within = json.loads(run("crossover", "kv-weights", "-m", "llama70b", "-b", "64", "--json").stdout)
    assert within["results"]["crossover_context"]["value"] < 8192 and not any(limit in n for n in within["notes"])


def test_an_answer_for_other_inputs_says_so_under_the_question_as_asked(run):
    """kv-sizing-13b asks about Llama 2 13B on an 80 GB A100; with -m llama70b -g h100 the title stays the question
    as asked, and the sheet says which inputs it answers for instead (and shows no unset tp)."""
    own = run("answer", "kv-sizing-13b").stdout
    other = run("answer", "kv-sizing-13b", "-m", "llama70b", "-g", "h100").stdout
    assert "Answered for other inputs" not in own
    assert "`model=llama70b` (the question's: `llama2-13b`), `gpu=h100` (the question's: `a100`)" in other
    assert "tp=None" not in other
    assert "Answered for other inputs" in run("answer", "kv-sizing-13b", "-m", "llama70b", "--format", "tex").stdout
