"""`derive experts`: expected routed experts per step against a Monte Carlo, and the weights a step reads."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import derive.checker
from derive.catalog import load_gpu, load_model
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.derivations.common import Setup
from derive.derivations.costs import predict
from derive.derivations.moe import experts
from formulas import library, moe, reads
from formulas import notation as sym

LIBRARY = library()  # every formula, loaded once

RESULT_NAMES = {"experts_touched", "params_read_per_step", "bytes_read_per_step", "read_vs_active", "active_params"}


def _expected(experts_n: int, top_k: int, tokens: int) -> sympy.Expr:
    values = {
        sym.E: sympy.Integer(experts_n),
        sym.k_e: sympy.Integer(top_k),
        sym.B: sympy.Integer(tokens),
        sym.tau: sympy.Integer(1),
    }
    return evaluate(LIBRARY.get("experts_touched").expr, values)


@pytest.mark.parametrize("experts_n, top_k, tokens", [(8, 2, 1), (8, 2, 3), (64, 6, 16), (256, 8, 64)])
def test_expected_experts_matches_a_monte_carlo(experts_n, top_k, tokens):
    """Route `tokens` tokens, each to a uniform top-k of E without replacement; count distinct experts."""
    rng = np.random.default_rng(20240601)
    trials = 300
    # The k smallest of E uniform draws are a uniform k-subset.
    chosen = np.argpartition(rng.random((trials, tokens, experts_n)), top_k - 1, axis=-1)[..., :top_k]
    hit = np.zeros((trials, experts_n), dtype=bool)
    hit[np.arange(trials)[:, None], chosen.reshape(trials, -1)] = True
    distinct = hit.sum(axis=1)
    standard_error = distinct.std() / np.sqrt(trials)
    assert float(_expected(experts_n, top_k, tokens)) == pytest.approx(distinct.mean(), abs=4 * standard_error + 1e-9)


def test_expected_experts_lies_between_k_and_e_and_tends_to_e():
    counts = [_expected(256, 8, tokens) for tokens in (1, 2, 8, 64, 512, 4096)]
    assert counts[0] == 8  # one token touches exactly its top-k
    assert all(8 <= c <= 256 for c in counts)
    assert all(a < b for a, b in itertools.pairwise(counts))
    expr = LIBRARY.get("experts_touched").expr.subs({sym.E.symbol: 256, sym.k_e.symbol: 8})
    assert sympy.limit(expr, moe.T_r.symbol, sympy.oo) == 256


def test_deepseek_v3_at_batch_64_reads_far_more_than_its_active_count():
    model = load_model("deepseek-v3")
    sheet = experts(Setup(model, batch=64))
    assert set(sheet.results) == RESULT_NAMES
    # Published activated count 37,552,297,472 (formulas/models/catalog.toml, from shared/data/param_counts.json).
    assert model.published_active == 37_552_297_472
    assert sheet.results["active_params"].value == model.published_active
    read = sheet.results["params_read_per_step"].value
    assert read > 10 * model.published_active
    assert read < sheet.values[sym.N]  # 64 tokens still miss some of the 256 experts
    assert sheet.results["bytes_read_per_step"].value == 2 * read  # bf16


def _table(cfg) -> int:
    """Embedding rows a step does not gather: the untied V x d table less its B·tau rows (config)."""
    return cfg.vocab * cfg.hidden


def test_params_read_is_the_per_layer_sum():
    """Independently: non-routed weights, plus in each MoE layer E_t experts of 3·d·d_e (gate, up, down)."""
    model = load_model("deepseek-v3")
    cfg = model.config
    sheet = experts(Setup(model, batch=64))
    touched = sheet.results["experts_touched"].value
    assert touched == cfg.experts * (1 - (1 - sympy.Rational(cfg.experts_per_token, cfg.experts)) ** 64)
    routed_all = cfg.moe_layers * cfg.experts * 3 * cfg.hidden * cfg.expert_intermediate
    per_layer = [touched * 3 * cfg.hidden * cfg.expert_intermediate for _ in range(cfg.moe_layers)]
    gathered = 64 * cfg.hidden  # one embedding row per token of the step
    expected = model.published_total - routed_all + sum(per_layer) - _table(cfg) + gathered
    assert sheet.results["params_read_per_step"].value == expected


def test_mixtral_at_batch_1_reads_exactly_its_active_count():
    model = load_model("mixtral-8x7b")
    sheet = experts(Setup(model, batch=1))
    # Published activated count 12,879,925,248 (catalog.toml, from shared/data/param_counts.json); the step
    # gathers one row of the 32,000 x 4,096 embedding the active count includes.
    assert model.published_active == 12_879_925_248
    assert sheet.results["experts_touched"].value == 2
    assert sheet.results["params_read_per_step"].value == 12_879_925_248 - 32_000 * 4_096 + 4_096


def _floor(model_name: str, batch: int, dtype: str = "bf16", gpu: str = "h100"):
    return predict(Setup(load_model(model_name), load_gpu(gpu), dtype=dtype, tp=8, batch=batch, floor=True))


@pytest.mark.parametrize("batch", [1, 64])
def test_mixtral_tpot_floor_by_hand(batch):
    # Mixtral 8x7B (config): 32 layers, 8 experts of 3 x 4,096 x 14,336, top-2; bf16 on 8 H100s at 3.35 TB/s.
    model = load_model("mixtral-8x7b")
    sheet = _floor("mixtral-8x7b", batch)
    expert = 3 * 4_096 * 14_336
    touched = 8 * (1 - (1 - sympy.Rational(2, 8)) ** batch)
    read = model.published_total - 32 * 8 * expert + 32 * touched * expert - 32_000 * 4_096 + batch * 4_096
    context = sheet.values[sym.S]
    cache = batch * context * 2 * 32 * 8 * 128 * 2
    assert sheet.values[sym.t_mem] == (2 * read + cache) / (8 * load_gpu("h100").bandwidth)


@pytest.mark.parametrize("batch", [1, 64])
def test_deepseek_v3_tpot_floor_by_hand(batch):
    # DeepSeek-V3 (config): 58 MoE layers of 256 experts of 3 x 7,168 x 2,048, top-8; fp8 weights, MLA cache,
    # on 8 H200s (671 GB does not fit 8 H100s).
    model = load_model("deepseek-v3")
    sheet = _floor("deepseek-v3", batch, dtype="fp8", gpu="h200")
    expert = 3 * 7_168 * 2_048
    touched = 256 * (1 - (1 - sympy.Rational(8, 256)) ** batch)
    read = model.published_total - 58 * 256 * expert + 58 * touched * expert - 129_280 * 7_168 + batch * 7_168
    assert sheet.values[reads.W_read] == read  # one byte a weight
    # Each of the 8 accelerators streams 1/8 of the weights read and the whole latent cache (MLA has no heads to
    # split: vLLM and SGLang keep it on every rank).
    memory = sheet.values[sym.t_mem] * load_gpu("h200").bandwidth
    assert memory == read / 8 + sheet.values[sym.kv_total]


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=4096))
def test_moe_step_bytes_rise_with_batch_toward_the_dense_figure(batch):
    model = load_model("qwen3-30b-a3b")
    sheet = experts(Setup(model, batch=batch))
    small = sheet.results["bytes_read_per_step"].value
    larger = experts(Setup(model, batch=batch + 1)).results["bytes_read_per_step"].value
    every_expert = 2 * (sheet.values[sym.N] - _table(model.config))  # all matrices, no table
    assert small < larger
    assert larger <= every_expert + 2 * (batch + 1) * model.config.hidden


def test_dense_model_is_refused():
    with pytest.raises(DeriveError) as info:
        experts(Setup(load_model("llama3-8b"), batch=8))
    assert info.value.message == "llama3-8b is not a mixture of experts"
    assert "mixtral-8x7b" in info.value.hint


def test_checker_accepts_the_new_modules():
    modules = derive.checker.MODULES + ["formulas.moe", "formulas.energy", "formulas.utilisation"]
    report, failures = derive.checker.run(modules)
    assert failures == 0, report
    for name in ("experts_touched", "params_read_per_step", "energy_per_token", "mbu", "mfu", "hfu"):
        assert f"ok   {name}" in report


def test_regression_experts_at_a_huge_batch_does_not_hang(run):
    # Found by the property tests: (1 - k/E)^(B) was computed exactly, and at batch 10^7 took minutes.
    import json

    result = run("experts", "--model", "deepseek-v3", "--batch", "10000000", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["results"]["experts_touched"]["value"] == 256.0


def test_intensity_counts_the_tokens_each_expert_sees(run):
    # Issue 12: Mixtral at batch 32 was shown at 32 FLOP/B. Each of 32 tokens picks 2 of 8 experts (config):
    # 64 picks over E_t = 8(1 - (6/8)^32) touched experts, 2 FLOPs per weight, 2 bytes a weight.
    result = run("intensity", "--model", "mixtral-8x7b", "--batch", "32", "--json")
    values = {k: v["value"] for k, v in json.loads(result.stdout)["results"].items()}
    touched = 8 * (1 - (6 / 8) ** 32)
    assert values["mlp_intensity"] == pytest.approx(2 * 32 * 2 / touched / 2)
    assert values["qkv_intensity"] == 32
