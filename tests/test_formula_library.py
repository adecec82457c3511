"""The issue-3 library: seed figures, closed forms substituted back, independent routes to the same number."""

from __future__ import annotations

import json

import pytest
import sympy

from derive.catalog import load_gpu, load_model
from derive.core.evaluation import evaluate
from derive.derivations import costs, generic
from derive.derivations.common import Setup, model_library
from formulas import notation as sym
from formulas import prefill as pf


def results(run, *args):
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    return payload["results"]


def test_gpt2_small_is_497_8_mb_in_fp32(run):
    # Seed 000: "GPT-2 small in 4-byte floats reads 497.8 MB per token".
    out = results(run, "fit", "--model", "gpt2", "--dtype", "fp32", "--gpu", "rtx4090")
    assert round(out["weight_bytes"]["value"] / 1e6, 1) == 497.8


def test_gpt2_decode_is_half_an_operation_per_byte(run):
    # Seed 000: "About 2 operations per weight, 4 bytes per weight: half an operation per byte."
    out = results(run, "intensity", "--model", "gpt2", "--dtype", "fp32", "--batch", "1", "--flops", "82 TFLOP/s")
    assert out["mlp_intensity"]["value"] == 0.5


def test_llama2_13b_sizing_on_80_gb(run):
    # Seed 000: "Weights take about 26 GB ... 1.68 GB ... the remaining 54 GB holds 32".
    out = results(run, "fit", "--model", "llama2-13b", "--dtype", "fp16", "--gpu", "a100")
    assert round(out["weight_bytes"]["value"] / 1e9) == 26
    assert round(out["kv_bytes_per_sequence"]["value"] / 1e9, 2) == 1.68
    assert out["max_sequences"]["value"] == 32


def test_decode_ranking_flips_at_batch_8_for_70b_gqa(run):
    # Seed 004, question 14: "the ranking flips at batch 8" (64 query heads over 8 KV heads, 16-bit).
    out = results(run, "intensity", "--model", "llama70b", "--batch", "1")
    assert out["attention_intensity"]["value"] == 8
    assert out["flip_batch"]["value"] == 8
    assert out["qkv_intensity"]["value"] == out["mlp_intensity"]["value"] == out["lm_head_intensity"]["value"]


def test_attention_intensity_is_independent_of_batch(run):
    one = results(run, "intensity", "--model", "llama3-8b", "--batch", "1")
    many = results(run, "intensity", "--model", "llama3-8b", "--batch", "256")
    assert one["attention_intensity"] == many["attention_intensity"]
    assert many["mlp_intensity"]["value"] == 256 * one["mlp_intensity"]["value"]


def test_mla_attention_intensity_from_absorbed_latent(run):
    # DeepSeek-V3: 128 heads score against the 576-wide cache and sum 512-wide values; 576 values cached
    # per layer in 16 bits (bf16 asked for; the checkpoint ships fp8-block). Independent count: 2*128*(576+512)
    # FLOPs per 576*2 bytes.
    out = results(run, "intensity", "--model", "deepseek-v3", "--dtype", "bf16")
    assert out["attention_intensity"]["value"] == pytest.approx(2 * 128 * (576 + 512) / (576 * 2))


def test_kv_weight_crossover_substituted_back():
    setup = Setup(load_model("llama70b"), load_gpu("h200"), batch=16)
    sheet = costs.crossover_kv_weights(setup)
    context = sheet.results["crossover_context"].value
    # Independent route: B * S * (2 L n_kv d_h bytes) = the bytes a step of 16 reads: every matrix of the published
    # count but the 128,256 x 8,192 input embedding, which gives 16 rows, 2 bytes each; solved by hand in the test.
    cfg = setup.model.config
    per_token = 2 * cfg.layers * cfg.kv_heads * cfg.head_dim * 2
    read = (setup.model.published_total - 128_256 * 8_192 + 16 * 8_192) * 2
    assert context == sympy.Rational(read, 16 * per_token)
    assert sheet.results["kv_bytes_at_crossover"].value == read


def test_prefill_crossover_against_a_numeric_root():
    setup = Setup(load_model("llama70b"), load_gpu("h100"))
    sheet = costs.crossover_prefill(setup)
    tokens = float(sheet.results["compute_bound_prompt_tokens"].value)
    library = model_library(setup.model)
    base = {s: v for s, v in sheet.values.items() if s not in (pf.S_p, pf.S_pref, pf.t_pm, pf.t_pc)}

    def gap(prompt: float) -> float:
        values = {**base, pf.S_p: sympy.Rational(prompt)}
        return float(evaluate(pf.t_pc.symbol, dict(values), library) - evaluate(pf.t_pm.symbol, dict(values), library))

    low, high = 1.0, 1e6  # bisection: compute time passes memory time exactly once
    for _ in range(80):
        mid = (low + high) / 2
        low, high = (mid, high) if gap(mid) < 0 else (low, mid)
    assert tokens == pytest.approx(low, rel=1e-9)
    # To first order it is the ridge point times bytes per weight / 2 FLOPs: "a few hundred tokens".
    assert 250 < tokens < 350


def test_attention_equals_weights_context_substituted_back():
    sheet = costs.flops(Setup(load_model("llama3-8b"), context=8192))
    context = sheet.results["attention_equals_weights_context"].value
    assert context * sheet.values[sym.a] == sheet.values[sym.F]


def test_flops_per_token_sums_per_layer():
    # Independent route for GPT-2 at 1,024 tokens: per layer 2*(4 d^2 + 2 d*4d) weight FLOPs plus
    # 4*d*S attention FLOPs, plus the 2*V*d head.
    d, layers, vocab, context = 768, 12, 50257, 1024
    expected = layers * (2 * (4 * d * d + 2 * d * 4 * d) + 4 * d * context) + 2 * vocab * d
    sheet = costs.flops(Setup(load_model("gpt2"), context=context))
    biases = sheet.values[sym.N_mm] - (layers * (4 * d * d + 8 * d * d) + vocab * d)
    assert sheet.results["flops_per_token"].value == expected + 2 * biases


def test_predict_e2e_is_ttft_plus_output_steps(run):
    """The prompt pass gives the first output token; the other S_o - 1 take a decode step each."""
    out = results(run, "predict", "--model", "llama70b", "--prompt", "4096", "--output", "256")
    for suffix in ("", "_floor"):
        ttft, tpot = out[f"ttft{suffix}"]["value"], out[f"tpot{suffix}"]["value"]
        assert out[f"e2e_latency{suffix}"]["value"] == pytest.approx(ttft + 255 * tpot)
        assert out[f"throughput{suffix}"]["value"] == pytest.approx(1 / tpot)
    one = results(run, "predict", "--model", "llama70b", "--prompt", "4096", "--output", "1")
    for suffix in ("", "_floor"):  # a one-token reply is its prompt pass
        assert one[f"e2e_latency{suffix}"]["value"] == pytest.approx(one[f"ttft{suffix}"]["value"])


def test_tpot_is_the_bandwidth_floor_computed_by_hand(run):
    # Llama 3 8B on one H100 at batch 1: the weights a step reads plus the cache at the mean context, over
    # 3.35 TB/s. A step gathers one row of the untied 128,256 x 4,096 embedding, not the table.
    out = results(run, "predict", "--model", "llama3-8b", "--prompt", "1000", "--output", "200")
    read = (8_030_261_248 - 128_256 * 4_096 + 4_096) * 2  # published count (param_counts.json), config V and d
    cache = (1000 + 100) * 2 * 32 * 8 * 128 * 2  # mean context x 2 (K, V) x layers x KV heads x head dim x 2 bytes
    assert out["tpot_floor"]["value"] == pytest.approx((read + cache) / 3.35e12)
    # The calibrated step carries the time the floor leaves out: never below it.
    assert out["tpot"]["value"] > out["tpot_floor"]["value"]
    assert out["ttft"]["value"] > out["ttft_floor"]["value"]


def test_predict_floor_alone(run):
    out = results(run, "predict", "--model", "llama3-8b", "--floor")
    assert {"tpot_floor", "ttft_floor"} <= set(out) and "tpot" not in out


def test_solve_accepts_the_kv_read_bytes_name(run):
    out = results(
        run, "solve", "kv_read_bytes = weight_bytes", "--for", "context", "--model", "llama70b", "--set", "batch=16"
    )
    assert out["context"]["value"] == pytest.approx(70_553_706_496 * 2 / (16 * 327_680))  # weights / (B x k)


def test_compare_ratios_are_datasheet_ratios(run):
    out = results(run, "compare", "--model", "llama70b", "--gpu", "h100", "--vs", "b200")
    assert out["bandwidth_ratio"]["value"] == pytest.approx(8.0 / 3.35)  # datasheets: 8 TB/s, 3.35 TB/s
    assert out["compute_ratio"]["value"] == pytest.approx(2250 / 989.4)  # dense BF16 TFLOP/s
    assert out["capacity_ratio"]["value"] > out["bandwidth_ratio"]["value"]  # the win is capacity


def test_eval_any_formula(run):
    out = results(run, "eval", "weight_bytes", "--model", "llama2-13b", "--dtype", "fp16")
    assert out["weight_bytes"]["value"] == 13_015_864_320 * 2  # published count (param_counts.json) x 2 bytes


def test_eval_set_changes_downstream_values(run):
    short = results(run, "eval", "kv_bytes", "--model", "llama70b", "--set", "batch=16", "--set", "context=1024")
    long = results(run, "eval", "kv_bytes", "--model", "llama70b", "--set", "batch=16", "--set", "context=4096")
    assert long["kv_bytes"]["value"] == 4 * short["kv_bytes"]["value"]


@pytest.mark.parametrize(
    ("equation", "unknown"),
    [
        ("kv_bytes = weight_bytes", "context"),
        ("kv_bytes = weight_bytes", "batch"),
        ("memory_time = compute_time", "batch"),
        ("gemm_intensity = attention_intensity", "batch"),
        ("gemm_intensity = ridge_intensity", "batch"),
        ("kv_bytes = memory", "context"),
    ],
)
def test_solve_substituted_back_satisfies_the_equation(equation, unknown):
    # As the CLI builds it with neither option given: a --context or --batch given as well as solved for, or one the
    # equation does not read, is refused (derive/derivations/generic.py refuse_unread).
    setup = Setup(load_model("llama70b"), load_gpu("h100"), context=512, defaults=("batch", "context"))
    sheet = generic.solve_equation(setup, equation, unknown, [])
    value = sheet.results[unknown].value
    left, right = (generic.symbol_for(side) for side in equation.split("="))
    work = generic.scenario("check", "", setup, [])
    work.values[generic.symbol_for(unknown)] = value
    library = model_library(setup.model)
    assert (
        sympy.simplify(evaluate(left.symbol, work.values, library) - evaluate(right.symbol, work.values, library)) == 0
    )


def test_solve_says_when_there_is_no_closed_form(run):
    result = run("solve", "step_time = memory_time", "--for", "hidden", "--model", "llama70b")
    assert result.exit_code == 2
    assert result.stderr.startswith("derive: error: ")
    assert "hidden" in result.stderr and "equal at every" in result.stderr


def test_formulas_lists_every_formula_with_unit(run):
    out = run("formulas", "--json")
    rows = json.loads(out.stdout)["results"]["formulas"]["value"]
    names = {r["name"] for r in rows}
    assert {"weight_bytes", "kv_bytes", "step_time", "ttft", "tpot", "gemm_intensity", "flops_per_token"} <= names
    assert all(r["source"] and r["latex"] for r in rows)


def test_solve_with_a_quantity_on_one_side(run):
    # "What batch gives TPOT = 20 ms": Llama 3 70B on 4 H100s is bandwidth-bound there, so the batch is the
    # memory branch's: (20 ms x 4 x 3.35 TB/s - matrices) / (one sequence's cache + its embedding row), from the
    # datasheet, the published count and the config (128,256 x 8,192 embedding, gathered by row).
    # tpot_floor: the roofline (`tpot` is the calibrated estimate, solved the same way).
    out = results(run, "solve", "tpot_floor = 20 ms", "--for", "batch", "--model", "llama3-70b", "--tp", "4")
    matrices = (70_553_706_496 - 128_256 * 8_192) * 2
    per_sequence = 2048 * 2 * 80 * 8 * 128 * 2 + 8_192 * 2
    assert out["batch"]["value"] == pytest.approx((0.020 * 4 * 3.35e12 - matrices) / per_sequence)
    left = results(run, "solve", "20 ms = tpot_floor", "--for", "batch", "--model", "llama3-70b", "--tp", "4")
    assert left["batch"]["value"] == pytest.approx(out["batch"]["value"])


def test_maxima_built_without_evaluation_are_sympys_own():
    """derive.core.library.larger skips sympy.Max's dominance search; rebuilt with it, every Max is the same."""
    import formulas
    from derive.core.library import larger, smaller

    maxima = [m for f in formulas.library() for m in f.expr.atoms(sympy.Max, sympy.Min)]
    assert len(maxima) >= 14
    for m in maxima:
        assert type(m)(*m.args) == m
    first = next(m for m in maxima if isinstance(m, sympy.Max))
    assert larger(*first.args) == first and larger(2, 3) == 3 and smaller(2, 3) == 2
