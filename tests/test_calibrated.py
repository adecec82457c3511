"""The calibrated predictor: never below the floor, its fit within bounds, its borrowed fits said, its errors clear."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from derive.calibration import FITTED, calibration
from derive.catalog import load_gpu
from derive.sweeps import Grid, evaluate_grid, predict_target


def _json(run, *args):
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_fitted_values_are_efficiencies_and_non_negative_times():
    recipes = ("bf16", "fp8", "fp8-block", "nvfp4")
    for name, dtype in itertools.product(("h100", "h200", "a100", "b200", "gb200", "l40s"), recipes):
        fit = calibration(load_gpu(name), dtype)
        # An A100 has no FP8 tables to fit, and only Blackwell has NVFP4 ones.
        no_tables = name == "a100" and dtype != "bf16" or dtype == "nvfp4" and name not in ("b200", "gb200")
        assert fit.borrowed == no_tables
        for quantity in FITTED:
            value = float(fit.values[quantity])
            assert value >= 0
            if quantity.key.endswith("efficiency"):
                assert 0 < value <= 1, quantity.key


def test_an_accelerator_without_a_fit_borrows_the_default_and_says_so(run):
    out = _json(run, "predict", "--model", "llama3-8b", "--gpu", "mi300x")
    assert out["results"]["tpot"]["value"] > out["results"]["tpot_floor"]["value"]
    assert any("no fit for mi300x" in note for note in out["notes"])


def test_a_borrowed_fit_carries_its_measured_error_and_a_fit_of_its_own_none():
    other = calibration(load_gpu("mi300x"))
    assert (other.fitted_on, other.fitted_precision) == ("h100", "bf16")
    assert other.borrowed_error is not None and 0 < other.borrowed_error["tpot"]["median"] < 1
    assert "h100" not in other.borrowed_error_on.split(" in ")[0]  # measured on the other accelerators
    fp8 = calibration(load_gpu("a100"), "fp8")
    assert (fp8.fitted_on, fp8.fitted_precision) == ("a100", "bf16")
    assert fp8.borrowed_error is not None and "bf16 fit" in fp8.borrowed_error_on
    for name in ("h100", "b200", "l40s"):
        own = calibration(load_gpu(name), "fp8")
        assert own.borrowed_error is None and own.borrowed_error_on == ""
    assert calibration(load_gpu("l40s")).max_tp == 2 and calibration(load_gpu("h100")).max_tp is None


def test_a_recipe_takes_its_own_fit_where_aiconfigurator_has_tables_for_it():
    for name, dtype in (("h100", "fp8-block"), ("l40s", "fp8-block"), ("b200", "nvfp4"), ("gb200", "nvfp4")):
        fit = calibration(load_gpu(name), dtype)
        assert (fit.precision, fit.fitted_on, fit.fitted_precision, fit.borrowed) == (dtype, name, dtype, False)
        assert f"in {dtype}" in fit.source and fit.borrowed_error is None
    assert calibration(load_gpu("h100"), "fp8-block").values != calibration(load_gpu("h100"), "fp8").values


def test_a_recipe_without_a_fit_borrows_the_nearest_and_says_so(run):
    # NVFP4 off Blackwell is dequantised for bf16 matmuls: the accelerator's bf16 fit, its cost measured on Blackwell.
    fp4 = calibration(load_gpu("h100"), "nvfp4")
    assert (fp4.precision, fp4.fitted_on, fp4.fitted_precision, fp4.borrowed) == ("nvfp4", "h100", "bf16", True)
    assert fp4.borrowed_error is not None and "in nvfp4, each with its own bf16 fit" in fp4.borrowed_error_on
    # FP8 blocks borrow the FP8 fit, and where there is none (an A100) the bf16 one: borrowed twice, not measured.
    block = calibration(load_gpu("a100"), "fp8-block")
    assert (block.fitted_on, block.fitted_precision, block.borrowed) == ("a100", "bf16", True)
    assert block.borrowed_error is None
    # An accelerator without any fit takes the default's fit in the recipe, measured on the other accelerators.
    other = calibration(load_gpu("mi300x"), "fp8-block")
    assert (other.fitted_on, other.fitted_precision) == ("h100", "fp8-block") and other.borrowed_error is not None
    notes = _json(run, "predict", "--model", "llama3-8b", "--gpu", "h100", "--dtype", "nvfp4")["notes"]
    assert any("no fit for h100 in nvfp4: the h100 bf16 fit" in note for note in notes)
    notes = _json(run, "predict", "--model", "llama3-8b", "--gpu", "h100", "--dtype", "fp8-block")["notes"]
    assert not any("no fit for" in note for note in notes)


def test_json_carries_floor_estimate_and_every_term(run):
    results = _json(run, "predict", "--model", "mixtral-8x7b", "--tp", "4", "--batch", "8")["results"]
    for name in ("tpot_floor", "tpot", "ttft_floor", "ttft", "decode_allreduce_time", "narrow_expert_time"):
        assert results[name]["value"] > 0, name
    decode_terms = ("step_fixed_time", "decode_allreduce_time", "narrow_expert_time", "elementwise_time")
    assert results["tpot"]["value"] >= sum(results[t]["value"] for t in decode_terms)


def test_tensor_parallelism_without_a_link_is_one_line(run):
    result = run("predict", "--model", "llama3-8b", "--gpu", "rtx4090", "--tp", "2")
    assert result.exit_code == 2
    assert result.stderr.startswith("derive: error: rtx4090 has no GPU-to-GPU link") and "--floor" in result.stderr
    assert run("predict", "--model", "llama3-8b", "--gpu", "rtx4090", "--tp", "2", "--floor").exit_code == 0


@settings(max_examples=10, deadline=None)
@given(
    st.sampled_from(["llama3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b", "qwen3.5-27b"]),
    st.sampled_from(["h100", "h200", "a100", "b200", "gb200"]),
)
def test_the_estimate_is_never_below_the_floor(model, gpu):
    grid = Grid(
        {"model": [model], "gpu": [gpu], "dtype": ["bf16"]},
        {"tp": [1, 2, 8], "batch": [1, 16, 256], "prompt": [128, 4096], "output": [1, 512]},
    )
    for _, columns in evaluate_grid(predict_target(), grid):
        assert (columns["tpot"] >= columns["tpot_floor"]).all()
        assert (columns["ttft"] >= columns["ttft_floor"]).all()


def test_one_accelerator_has_no_allreduce_time(run):
    results = _json(run, "predict", "--model", "llama3-8b", "--tp", "1")["results"]
    assert results["decode_allreduce_time"]["value"] == 0 and results["prefill_allreduce_time"]["value"] == 0
