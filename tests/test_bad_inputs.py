"""Table of bad inputs: each exits 2 with one line on stderr that names the problem, and prints no result."""

from __future__ import annotations

import json

import pytest

LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 100,
}
# A two-layer gpt-oss: one sliding-window layer, one full.
GPT_OSS = {
    **LLAMA,
    "model_type": "gpt_oss",
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "sliding_window": 8,
    "max_position_embeddings": 64,
    "layer_types": ["sliding_attention", "full_attention"],
}
NEMOTRON = {
    **LLAMA,
    "model_type": "nemotron_h",
    "hybrid_override_pattern": "M*",
    "mamba_num_heads": 4,
    "mamba_head_dim": 8,
    "ssm_state_size": 8,
    "n_groups": 2,
    "conv_kernel": 4,
}

# Config files: (name, file content, what the message must say).
CONFIGS = [
    ("empty file", b"", "is not valid JSON"),
    ("binary", b"\x00\xff\xfe\x01", "is not a text file"),
    ("truncated", json.dumps(LLAMA)[:30].encode(), "is not valid JSON"),
    ("a list", b"[1, 2, 3]", "is not a JSON object"),
    ("a string", b'"llama"', "is not a JSON object"),
    (
        "no model_type",
        json.dumps({k: v for k, v in LLAMA.items() if k != "model_type"}).encode(),
        "has no 'model_type'",
    ),
    (
        "an encoder",
        json.dumps({**LLAMA, "model_type": "bert"}).encode(),
        "model_type 'bert' is not a decoder-only language model",
    ),
    ("model_type a list", json.dumps({**LLAMA, "model_type": ["llama"]}).encode(), "not a string"),
    (
        "missing hidden_size",
        json.dumps({k: v for k, v in LLAMA.items() if k != "hidden_size"}).encode(),
        "lacks 'hidden_size'",
    ),
    (  # Llama's entry carries LlamaConfig's vocab_size (32,000, with a note); Mistral's does not
        "missing vocab",
        json.dumps({**{k: v for k, v in LLAMA.items() if k != "vocab_size"}, "model_type": "mistral"}).encode(),
        "lacks 'vocab_size'",
    ),
    (
        "heads do not divide hidden",
        json.dumps({**LLAMA, "num_attention_heads": 5}).encode(),
        "num_attention_heads=5 does not divide hidden_size=64",
    ),
    (
        "kv heads do not divide heads",
        json.dumps({**LLAMA, "num_key_value_heads": 3}).encode(),
        "num_key_value_heads=3 does not divide num_attention_heads=4",
    ),
    ("negative layers", json.dumps({**LLAMA, "num_hidden_layers": -2}).encode(), "'num_hidden_layers' is -2"),
    ("zero vocab", json.dumps({**LLAMA, "vocab_size": 0}).encode(), "'vocab_size' is 0"),
    ("fractional layers", json.dumps({**LLAMA, "num_hidden_layers": 32.5}).encode(), "'num_hidden_layers' is 32.5"),
    ("boolean layers", json.dumps({**LLAMA, "num_hidden_layers": True}).encode(), "'num_hidden_layers' is True"),
    ("string hidden size", json.dumps({**LLAMA, "hidden_size": "4096"}).encode(), "'hidden_size' is '4096'"),
    (
        "tie as a string",
        json.dumps({**LLAMA, "tie_word_embeddings": "yes"}).encode(),
        "'tie_word_embeddings' is 'yes', not true or false",
    ),
    (
        "top-k past the experts",
        json.dumps({**LLAMA, "model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 9}).encode(),
        "num_experts_per_tok=9 routes each token to more experts than the 8 of num_local_experts",
    ),
    (
        "a layer kind derive cannot describe",
        json.dumps({**GPT_OSS, "layer_types": ["sliding_attention", "retention"]}).encode(),
        "'layer_types' has a layer of kind 'retention', which derive cannot describe",
    ),
    (
        "layer_types shorter than the layers",
        json.dumps({**GPT_OSS, "layer_types": ["full_attention"]}).encode(),
        "'layer_types' has 1 entries but num_hidden_layers is 2",
    ),
    (
        "a hybrid pattern of the wrong length",
        json.dumps({**NEMOTRON, "hybrid_override_pattern": "M*M"}).encode(),
        "'hybrid_override_pattern' has 3 entries but num_hidden_layers is 2",
    ),
    (
        "an unknown hybrid layer",
        json.dumps({**NEMOTRON, "hybrid_override_pattern": "MX"}).encode(),
        "'hybrid_override_pattern' has a layer of kind 'X'",
    ),
    (
        "layers beyond any model",
        json.dumps({**LLAMA, "num_hidden_layers": 10**12}).encode(),
        "'num_hidden_layers' is 1000000000000, not a whole number from 1 to 1,000,000,000",
    ),
    (
        "text_config not an object",
        json.dumps({**LLAMA, "model_type": "qwen3_vl", "text_config": [1]}).encode(),
        "'text_config' is not an object",
    ),
    (
        "deepseek with an MLA rank of 0",
        json.dumps({**LLAMA, "model_type": "deepseek_v3", "kv_lora_rank": 0}).encode(),
        "'kv_lora_rank' is 0, not a whole number",
    ),
]

# Command lines: (arguments, what the message must say).
COMMANDS = [
    (["kv", "--model", "llama3-7b"], "unknown model 'llama3-7b'. Did you mean 'llama3-70b'?"),
    (["kv", "--model", "mixtrall"], "Did you mean 'mixtral-8x7b'?"),
    (["kv", "--model", ""], "unknown model ''"),
    (["kv"], "no model given"),
    (["knee", "--model", "llama70b", "--gpu", "h1000"], "unknown GPU 'h1000'. Did you mean 'h100'?"),
    (["knee", "--model", "llama70b", "--gpu", ""], "unknown GPU ''"),
    (["kv", "--config", "/nonexistent/config.json"], "no config.json at '/nonexistent/config.json'"),
    (["kv", "--model", "gpt2", "--batch", "0"], "must be a whole number of at least 1, got 0"),
    (["kv", "--model", "gpt2", "--batch", "-1"], "must be a whole number of at least 1, got -1"),
    (["kv", "--model", "gpt2", "--batch", "abc"], "must be a whole number of at least 1, got 'abc'"),
    (["kv", "--model", "gpt2", "--batch", "1e-3"], "must be a whole number, got 1e-3"),
    (["kv", "--model", "gpt2", "--context", "0"], "must be a whole number of at least 1, got 0"),
    (["knee", "--model", "llama70b", "--tp", "0"], "must be a whole number of at least 1, got 0"),
    (["knee", "--model", "llama70b", "--tp", "3"], "--tp 3 cannot split llama3-70b: tp 3 does not divide the 64 query"),
    (["knee", "--model", "llama70b", "--bandwidth", "3 TFLOP/s"], "is a compute rate (FLOP/second), not a bandwidth"),
    (["knee", "--model", "llama70b", "--bandwidth", "3"], "--bandwidth '3' has no unit"),
    (["knee", "--model", "llama70b", "--bandwidth", "-3 TB/s"], "--bandwidth '-3 TB/s' must be positive"),
    (["knee", "--model", "llama70b", "--bandwidth", "fast"], "--bandwidth 'fast' is not a quantity"),
    (["knee", "--model", "llama70b", "--bandwidth", "3 furlongs/s"], "unknown unit 'furlongs/s'"),
    (["knee", "--model", "llama70b", "--flops", "1 PB/s"], "is a bandwidth (byte/second), not a compute rate"),
    (["knee", "--model", "llama70b", "--memory", "80 GB/s"], "is a bandwidth (byte/second), not an amount of memory"),
    (["energy", "--model", "llama70b", "--power", "700 J"], "is an energy (joule), not a power"),
    (["kv", "--model", "gpt2", "--dtype", "fp5"], "'fp5' is not one of"),
    (["kv", "--model", "gpt2", "--kv-dtype", "int3"], "'int3' is not one of"),
    (["knee", "--model", "llama3.1-405b", "--tp", "1"], "needs 811.7 GB of weights"),
    (["knee", "--model", "llama70b", "--tp", "1", "--memory", "1 GB"], "more than the 1 GB of 1 x h100"),
    (["knee", "--model", "llama70b", "--context", "100000000"], "is beyond the 8,192 positions of llama3-70b"),
    (
        ["knee", "--model", "llama70b", "--context", "100000000", "--allow-long-context"],
        "its heads split at most 64 ways",
    ),
    (["knee", "--model", "llama70b", "--gpu", "a100", "--dtype", "fp8"], "a100 has no fp8 peak"),
    (["eval", "weight_bytez", "--model", "gpt2"], "unknown formula 'weight_bytez'. Did you mean 'weight_bytes'?"),
    (
        ["eval", "kv_bytes", "--model", "gpt2", "--set", "batch=0"],
        "--set batch must be a whole number of at least 1, got 0",
    ),
    (["eval", "kv_bytes", "--model", "gpt2", "--set", "nonsense=3"], "unknown quantity 'nonsense'"),
    (["eval", "kv_bytes", "--model", "gpt2", "--set", "batch"], "--set 'batch' is not key=value"),
    (["eval", "step_time", "--model", "gpt2", "--set", "bandwidth=3 TFLOP/s"], "is a compute rate"),
    (["solve", "kv_bytes weight_bytes", "--for", "context", "--model", "gpt2"], "is not an equation"),
    (["solve", "kv_bytes = weight_bytes", "--for", "nothing", "--model", "gpt2"], "unknown quantity 'nothing'"),
    (["solve", "kv_bytes = step_time", "--for", "context", "--model", "gpt2"], "the two sides disagree in units"),
    (["solve", "kv_bytes = weight_bytes", "--for", "peak_flops", "--model", "gpt2"], "peak_flops does not appear in"),
    (["answer", "no-such-question"], "unknown question 'no-such-question'"),
    (["answer", "kv-sizing-13b", "--set", "nonsense=1"], "question kv-sizing-13b does not take nonsense"),
    (["answer", "kv-sizing-13b", "--model", "llama9"], "unknown model 'llama9'"),
    (["sweep", "predict", "--model", "llama70b", "--batch", "0:4"], "--batch must be at least 1"),
    (["sweep", "predict", "--model", "llama70b", "--tp", "4:1"], "--tp '4:1' is not an increasing range"),
    (["sweep", "predict", "--model", "llama70b,llama9"], "unknown model 'llama9'"),
    (["sweep", "no_such_formula", "--model", "llama70b"], "unknown formula 'no_such_formula'"),
    (["simulate", "batching", "--model", "gpt2", "--replies", "9:3"], "--replies '9:3' is not MIN:MAX"),
    (["claim", "--model", "llama70b", "--claim", "1000 GB/s"], "is a bandwidth (byte/second), not a token rate"),
    (["compare", "--model", "llama70b", "--vs", "h1000"], "unknown GPU 'h1000'"),
    (["shard", "--model", "llama70b", "--tp", "8", "--link", "fast"], "--link 'fast' is not a quantity"),
    (["shard", "--model", "llama70b", "--tp", "8", "--link", "50 TFLOP/s"], "is a compute rate"),
    (["experts", "--model", "llama70b"], "llama3-70b is not a mixture of experts"),
    (["utilisation", "--model", "llama70b", "--step-time", "36 GB"], "is an amount of memory (byte), not a time"),
    (["kv", "--model", "gpt2", "--config", "x.json"], "--model and --config both given"),
]


def check(result, fragment: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.stdout[-300:], result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("derive: error: ")
    assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(("args", "fragment"), COMMANDS, ids=[" ".join(a)[:60] for a, _ in COMMANDS])
def test_bad_command_line(run, args, fragment):
    check(run(*args), fragment)


@pytest.mark.parametrize(("name", "content", "fragment"), CONFIGS, ids=[c[0] for c in CONFIGS])
@pytest.mark.parametrize("command", ["params", "kv", "knee"])
def test_bad_config_file(run, tmp_path, name, content, fragment, command):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    check(run(command, "--config", str(path)), fragment)


def test_the_table_has_at_least_forty_bad_inputs():
    assert len(COMMANDS) + len(CONFIGS) >= 40
