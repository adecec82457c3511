"""`derive experts`: expected routed experts per step against a Monte Carlo, and the weights a step reads."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy

import derive.checker
from derive.catalog import load_model
from derive.derivations.common import Setup
from derive.derivations.moe import experts
from derive.errors import DeriveError
from derive.evaluate import evaluate
from formulas import library, moe
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


def test_params_read_is_the_per_layer_sum():
    """Independently: non-routed weights, plus in each MoE layer E_t experts of 3·d·d_e (gate, up, down)."""
    model = load_model("deepseek-v3")
    cfg = model.config
    sheet = experts(Setup(model, batch=64))
    touched = sheet.results["experts_touched"].value
    assert touched == cfg.experts * (1 - (1 - sympy.Rational(cfg.experts_per_token, cfg.experts)) ** 64)
    routed_all = cfg.moe_layers * cfg.experts * 3 * cfg.hidden * cfg.expert_intermediate
    per_layer = [touched * 3 * cfg.hidden * cfg.expert_intermediate for _ in range(cfg.moe_layers)]
    assert sheet.results["params_read_per_step"].value == model.published_total - routed_all + sum(per_layer)


def test_mixtral_at_batch_1_reads_exactly_its_active_count():
    model = load_model("mixtral-8x7b")
    sheet = experts(Setup(model, batch=1))
    # Published activated count 12,879,925,248 (catalog.toml, from shared/data/param_counts.json).
    assert model.published_active == 12_879_925_248
    assert sheet.results["experts_touched"].value == 2
    assert sheet.results["params_read_per_step"].value == 12_879_925_248
    assert sheet.results["read_vs_active"].value == 1


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
