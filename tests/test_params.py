"""Parameter counts derived from configs, held to published totals."""

from __future__ import annotations

import json

import pytest

from derive.catalog import load_config_path, load_model, model_names
from derive.core.evaluation import evaluate
from formulas import library
from formulas import notation as sym
from tests.conftest import CONFIGS, load_fixture

LIBRARY = library()  # every formula, loaded once


def count(model, target=sym.N) -> int:
    library = LIBRARY.extended(model.formulas.all())
    return int(evaluate(target.symbol, dict(model.formulas.shapes), library))


@pytest.mark.parametrize("name", [n for n in model_names() if load_model(n).published_total is not None])
def test_total_equals_published_to_the_integer(name):
    # published_total: shared/data/param_counts.json (checkpoint indexes and HF num_parameters()),
    # copied with its source into formulas/models/catalog.toml.
    model = load_model(name)
    assert count(model) == model.published_total


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
def test_moe_active_within_two_percent_of_published(name):
    model = load_model(name)
    active = count(model, sym.N_act)
    assert abs(active - model.published_active) / model.published_active < 0.02


def test_gpt2_small_is_124_439_808():
    # Seed 000: "GPT-2 small (124,439,808 weights, float32)".
    assert count(load_model("gpt2")) == 124_439_808


@pytest.mark.parametrize(
    ("fixture", "published"),
    [
        # Qwen2-0.5B: HF safetensors metadata, 494,032,768 parameters (q/k/v biases, tied head).
        ("qwen2-0.5b", 494_032_768),
        # Phi-3-mini-4k-instruct: HF safetensors metadata, 3,821,079,552 (fused qkv and gate_up).
        ("phi3-mini-4k", 3_821_079_552),
        # gemma-2-2b: HF safetensors metadata, 2,614,341,888 (explicit head_dim, four norms, tied).
        ("gemma2-2b", 2_614_341_888),
        # DeepSeek-V2-Lite: HF safetensors metadata, 15,706,484,224 ("15.7B" on its model card).
        ("deepseek-v2-lite", 15_706_484_224),
    ],
)
def test_other_families_equal_published(fixture, published):
    assert count(load_config_path(CONFIGS / f"{fixture}.json")) == published


def test_deepseek_v2_lite_activated_is_2_4b():
    # DeepSeek-V2 paper (arXiv:2405.04434), V2-Lite: "2.4B activated", which excludes the input
    # embedding. Published to one decimal, so allow the rounding: within 0.06B.
    model = load_config_path(CONFIGS / "deepseek-v2-lite.json")
    activated = count(model, sym.N_act) - count(model, sym.N_emb)
    assert abs(activated - 2.4e9) < 0.06e9


def test_breakdown_sums_to_total():
    model = load_model("deepseek-v3")
    library = LIBRARY.extended(model.formulas.all())
    parts = sum(evaluate(p.expr, dict(model.formulas.shapes), library) for p in model.formulas.parts)
    assert parts == count(model)


def test_tied_head_counted_once_untied_twice():
    gpt2, llama = load_model("gpt2"), load_model("llama2-7b")
    assert gpt2.config.tied and sym.N_head not in {p.defines for p in gpt2.formulas.parts}
    assert not llama.config.tied and sym.N_head in {p.defines for p in llama.formulas.parts}


def test_tie_defaults_follow_the_family(write_config):
    # GPT-2's config has no tie_word_embeddings: PretrainedConfig's default (tied) applies.
    assert load_model("gpt2").config.tied
    cfg = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
    }
    # LlamaConfig defaults tie_word_embeddings to False.
    assert not load_config_path(write_config(cfg)).config.tied


def test_params_command_json(run):
    result = run("params", "--model", "mixtral-8x7b", "--json")
    assert result.exit_code == 0
    import json

    payload = json.loads(result.stdout)
    assert payload["command"] == "params"
    assert payload["results"]["total_params"] == {
        "value": 46_702_792_704,
        "unit": "parameter",
        "symbolic": "N_attn + N_emb + N_head + N_norm + N_routed + N_router",
        "latex": payload["results"]["total_params"]["latex"],
    }
    assert payload["results"]["active_params"]["value"] == 12_879_925_248  # published active, param_counts.json


def test_config_folder_is_accepted(run, write_config):
    # --config takes a config.json or the folder holding one (as Hugging Face downloads are laid out).
    path = write_config(load_fixture("qwen2-0.5b"), name="Qwen2-0.5B")
    by_file = run("params", "--config", str(path), "--json")
    by_folder = run("params", "--config", str(path.parent), "--json")
    assert by_file.exit_code == by_folder.exit_code == 0
    assert json.loads(by_folder.stdout)["results"]["total_params"]["value"] == 494_032_768  # HF safetensors metadata
