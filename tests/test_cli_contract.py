"""Every named command prints the --json contract with the result names issue 3 fixes."""

from __future__ import annotations

import json

import pytest

CASES = [
    (["params", "--model", "gpt2"], {"total_params", "active_params", "embedding_params"}),
    (["kv", "--model", "llama70b"], {"kv_bytes_per_token", "kv_bytes_per_sequence", "kv_bytes"}),
    (
        ["flops", "--model", "llama3-8b"],
        {"flops_per_token", "attention_flops_per_token", "attention_equals_weights_context", "non_arithmetic_params"},
    ),
    (["fit", "--model", "llama2-13b", "--tp", "2"], {"weight_bytes", "kv_bytes_per_sequence", "max_sequences"}),
    (
        ["intensity", "--model", "llama70b", "--batch", "16"],
        {"qkv_intensity", "attention_intensity", "mlp_intensity", "lm_head_intensity", "ridge_intensity", "flip_batch"},
    ),
    (
        ["crossover", "kv-weights", "--model", "llama70b", "--batch", "16"],
        {"crossover_context", "kv_bytes_at_crossover"},
    ),
    (["crossover", "prefill", "--model", "llama70b"], {"ridge_intensity", "compute_bound_prompt_tokens"}),
    (
        ["predict", "--model", "llama70b", "--tp", "2", "--prompt", "4096", "--output", "256"],
        {"ttft", "tpot", "throughput", "e2e_latency"},
    ),
    (
        ["experts", "--model", "deepseek-v3", "--batch", "64"],
        {"experts_touched", "params_read_per_step", "bytes_read_per_step"},
    ),
    (
        ["shard", "--model", "llama70b", "--tp", "8", "--tokens", "4096", "--link", "nvlink"],
        {"flops", "weight_bytes", "activation_bytes", "allreduce_bytes", "binding"},
    ),
    (["energy", "--model", "llama70b", "--gpu", "h100"], {"joules_per_token"}),
    (
        ["compare", "--model", "llama70b", "--gpu", "h100", "--vs", "b200"],
        {"bandwidth_ratio", "compute_ratio", "capacity_ratio", "max_throughput_ratio"},
    ),
    (
        ["claim", "--model", "llama70b", "--gpu", "h200", "--tp", "1", "--claim", "1000 token/s"],
        {"floor_tokens_per_s_per_user", "required_bits_per_weight", "required_tokens_per_pass"},
    ),
    (["utilisation", "--model", "llama70b", "--step-time", "36 ms"], {"mbu", "mfu", "hfu"}),
    (["attention-memory", "--model", "llama3-8b", "--context", "8192"], {"naive_score_bytes", "flash_bytes"}),
    (["eval", "step_time", "--model", "llama70b", "--set", "batch=16"], {"step_time"}),
    (["solve", "kv_bytes = weight_bytes", "--for", "context", "--model", "llama70b", "--set", "batch=16"], {"context"}),
]


@pytest.mark.parametrize(("args", "names"), CASES, ids=[" ".join(a[:2]) for a, _ in CASES])
def test_json_contract(run, args, names):
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert set(payload) == {"command", "inputs", "results", "notes"}
    assert names <= set(payload["results"])
    for value in payload["results"].values():
        assert set(value) == {"value", "unit", "symbolic", "latex"}
        assert value["value"] is None or isinstance(value["value"], (int, float, str))


def test_shard_binds_on_network_over_a_slow_link_at_prefill(run):
    # Seed 000: "over slow inter-node links the network binds".
    payload = json.loads(
        run("shard", "--model", "llama70b", "--tp", "8", "--tokens", "4096", "--link", "12.5 GB/s", "--json").stdout
    )
    assert payload["results"]["binding"]["value"] == "network"


def test_claim_needs_a_rate(run):
    result = run("claim", "--model", "llama70b", "--claim", "1000 GB/s")
    assert result.exit_code == 2
    assert "is a bandwidth (byte/second), not a token rate (token/second)" in result.stderr


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["models", "--json"], "models"),
        (["gpus", "--json"], "gpus"),
        (["formulas", "--json"], "formulas"),
        (["check", "--json"], "checks"),
        (["answer", "kv-sizing-13b", "--format", "json"], "max_sequences"),
    ],
)
def test_catalogs_reports_and_answers_follow_the_contract(run, args, name):
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert {"command", "inputs", "results", "notes"} <= set(payload)
    assert name in payload["results"]
    for value in payload["results"].values():
        assert set(value) == {"value", "unit", "symbolic", "latex"}


def test_a_solve_with_no_root_says_none_in_json_never_nan(run):
    """No batch makes an 8B step 1 ms on an H100 (its weights alone take 4.5 ms to read), and a prompt on a 10 PB/s
    accelerator is compute-bound from its first token: each result is null, with no NaN in its formula, and the notes
    say why."""
    for args in (
        ["solve", "step_time = 1 ms", "--for", "batch", "--model", "llama3-8b"],
        ["crossover", "prefill", "--model", "gpt-oss-20b", "--gpu", "b200", "--bandwidth", "10 PB/s"],
    ):
        result = run(*args, "--json")
        assert result.exit_code == 0, result.stderr
        payload = json.loads(result.stdout)
        assert "nan" not in result.stdout.lower()
        (value,) = [r for r in payload["results"].values() if r["value"] is None]
        assert value["symbolic"] is None and value["latex"] is None
        assert any(": none (" in note for note in payload["notes"])
    prefill = run("crossover", "prefill", "--model", "gpt-oss-20b", "--gpu", "b200", "--bandwidth", "10 PB/s")
    assert "no crossover: compute-bound at every prompt length" in prefill.stdout
