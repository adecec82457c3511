"""Weight recipes (formulas/recipes.toml): bytes with their scales, the peak their matmuls run at, the fit, and
what a config's quantization_config names. Issue 26, item 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy

from derive.calibration import precision_of
from derive.catalog import dtype_bytes, load_gpu
from derive.recipes import from_quantization_config, recipes


@pytest.mark.parametrize(
    ("name", "bits"),
    [
        # AWQ (Lin et al. 2024), AutoAWQ's GEMM format: 4-bit weights, an fp16 scale and a 4-bit zero per 128.
        ("int4-awq", 4 + sympy.Rational(16 + 4, 128)),
        # GPTQ (Frantar et al. 2023), AutoGPTQ QuantLinear: an fp16 scale and a packed 4-bit zero per 128, sym or not.
        ("int4-gptq", 4 + sympy.Rational(16 + 4, 128)),
        # NVFP4: an FP8 E4M3 scale per 16 FP4 values (NVIDIA, 2025).
        ("nvfp4", 4 + sympy.Rational(8, 16)),
        # MXFP4: an 8-bit E8M0 scale per 32 (OCP MX v1.0).
        ("mxfp4", 4 + sympy.Rational(8, 32)),
        # DeepSeek-V3's FP8 blocks: an fp32 scale per 128 x 128 weights (its report, sec. 3.3.2).
        ("fp8-block", 8 + sympy.Rational(32, 128 * 128)),
        ("fp8", 8),
        ("bf16", 16),
    ],
)
def test_bits_per_weight_include_the_scales(name, bits):
    assert 8 * dtype_bytes(name) == bits


def test_every_recipe_has_a_fit_a_peak_and_a_source():
    fits = json.loads((Path(__file__).parent.parent / "formulas" / "calibration.json").read_text())["accelerators"]
    for recipe in recipes().values():
        assert any(recipe.fit in fit for fit in fits.values()) and recipe.gemm and recipe.source and recipe.about
        assert precision_of(recipe.name) == recipe.fit
    # Where aiconfigurator has tables for a recipe, it has a fit of its own (issue 26, item 4).
    assert precision_of("fp8-block") == "fp8-block" and precision_of("nvfp4") == "nvfp4"
    assert precision_of("fp8-dynamic") == "fp8" and precision_of("int4-awq") == "bf16"


@pytest.mark.parametrize(
    ("gpu", "name", "peak", "says"),
    [
        ("b200", "nvfp4", "fp4", "fp4 dense peak (nvfp4)"),
        ("h100", "nvfp4", "bf16", "dequantised"),
        ("h100", "int4-awq", "bf16", "dequantised"),
        ("h100", "fp8-block", "fp8", "fp8 dense peak (fp8-block)"),
        ("h100", "int8-sq", "int8", "int8 dense peak (int8-sq)"),
    ],
)
def test_each_recipe_runs_its_matmuls_at_its_peak(gpu, name, peak, says):
    accelerator = load_gpu(gpu)
    figure, note = accelerator.peak(name)
    assert figure == accelerator.flops[peak] and says in note


@pytest.mark.parametrize(
    ("quant", "recipe"),
    [
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "int4-awq"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}, "int4-gptq"),
        ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}, "fp8-block"),
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "fp8-dynamic"),
        ({"quant_method": "fp8", "activation_scheme": "static"}, "fp8"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
        ({"quant_method": "awq", "bits": 4, "group_size": 64}, ""),  # no recipe for groups of 64: said, not guessed
    ],
)
def test_quantization_config_names_its_recipe(quant, recipe):
    assert from_quantization_config(quant)[0] == recipe


def test_an_awq_checkpoint_is_sized_as_shipped(run, tmp_path):
    """The issue: an AWQ 8B was sized as bf16 (16.06 GB) with no word. Llama 3 8B's 8,030,261,248 parameters
    (Meta's published count) at 4.15625 bits are 4.172 GB: the checkpoint's own recipe is the default, and a bf16
    sizing asked for says how the checkpoint ships."""
    config = json.loads((Path(__file__).parent.parent / "formulas" / "models" / "llama3-8b.json").read_text())
    config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
    (tmp_path / "config.json").write_text(json.dumps(config))
    shipped = json.loads(run("fit", "--config", str(tmp_path), "--json").stdout)
    assert shipped["inputs"]["dtype"] == "int4-awq"
    assert "dtype" in shipped["inputs"]["defaults"]
    assert shipped["results"]["weight_bytes"]["value"] == pytest.approx(8_030_261_248 * 133 / 256, rel=1e-12)
    plain = run("fit", "--config", str(tmp_path), "--dtype", "bf16", "--json")
    assert "pass --dtype int4-awq to size it as shipped" in " ".join(json.loads(plain.stdout)["notes"])


def test_a_plan_says_how_the_checkpoint_ships():
    """A plan sized in bf16 for DeepSeek-V3 (whose quantization_config names 128 x 128 FP8 blocks) says so, as the
    sheets do; sized as shipped, it says nothing."""
    import derive

    def notes(dtype: str) -> str:
        return " ".join(derive.plan("deepseek-v3", "b200", dtype=dtype, tpot="50 ms", ttft="2 s").notes)

    assert "pass --dtype fp8-block to size it as shipped" in notes("bf16")
    assert "size it as shipped" not in notes("fp8-block")


def test_an_answer_says_how_to_size_the_checkpoint_as_shipped_in_its_own_words():
    """A question keeps its own dtype when a user swaps in DeepSeek-V3 (fp8-block as shipped, its config.json): the
    note names `derive answer`'s --set dtype=, and on an A100 (no FP8 row in its datasheet) offers no --flops, which
    a question does not take."""
    import derive

    h200 = derive.answer("decode-knee", model="deepseek-v3", gpu="h200").to_markdown()
    assert "pass --set dtype=fp8-block to size it as shipped" in h200
    a100 = derive.answer("decode-knee", model="deepseek-v3", gpu="a100").to_markdown()
    assert "so it is sized in bf16" in a100 and "--flops" not in a100


def test_an_answer_asked_for_a_peak_the_accelerator_lacks_says_how_to_ask_in_its_own_options():
    """An A100 has no FP8 tensor cores (NVIDIA A100 datasheet: no FP8 row): a question asked for fp8 on one fails
    naming `derive answer`'s --set dtype=, not --flops (which a question does not take); the command names --dtype."""
    import derive
    from derive.core.errors import DeriveError

    for question in ("decode-knee", "decode-bandwidth-bound", "data-pipeline"):
        with pytest.raises(DeriveError) as failed:
            derive.answer(question, gpu="a100", dtype="fp8")
        assert "--set dtype=NAME" in str(failed.value) and "--flops" not in str(failed.value)
    with pytest.raises(DeriveError, match="--flops"):
        derive.knee("llama3-8b", "a100", dtype="fp8")
    with pytest.raises(DeriveError, match="Relax --set tpot= or ttft="):  # a plan no layout meets, in its words
        derive.answer("serving-plan", tpot="1 ms")


def test_the_default_dtype_is_the_shipped_recipe_where_the_accelerator_runs_it():
    """DeepSeek-V3's quantization_config names 128 x 128 FP8 blocks (deepseek-ai/DeepSeek-V3 config.json): an H200
    sizes it so by default; an A100 has no FP8 tensor cores (NVIDIA A100 datasheet: no FP8 row), so there, and in a
    plan or comparison that includes one, the default is bf16 and a note says why. An explicit --dtype wins."""
    import derive

    h200 = derive.predict("deepseek-v3", "h200")
    assert h200.inputs["dtype"] == "fp8-block" and "dtype" in h200.inputs["defaults"]
    a100 = derive.predict("deepseek-v3", "a100")
    assert a100.inputs["dtype"] == "bf16"
    assert "a100 has no fp8 matmul peak, so it is sized in bf16" in " ".join(a100.notes)
    assert derive.predict("deepseek-v3", "h200", dtype="bf16").inputs["dtype"] == "bf16"
    assert derive.compare("deepseek-v3", "h200", vs="a100").inputs["dtype"] == "bf16"
    assert derive.predict("llama3-8b", "h200").inputs["dtype"] == "bf16"  # no quantization_config
    swept = derive.sweep("predict", "deepseek-v3", "a100,h200", batch="1").table()
    assert swept.column("dtype").to_pylist() == ["bf16", "fp8-block"]


def test_a_sweep_takes_only_plain_formats_for_the_cache():
    import derive
    from derive.core.errors import DeriveError

    with pytest.raises(DeriveError, match="--kv-dtype"):
        derive.sweep("max_batch_by_memory", "llama3-8b", "h100", kv_dtype="nvfp4")


def test_fbgemm_fp8_names_its_recipe():
    assert from_quantization_config({"quant_method": "fbgemm_fp8"})[0] == "fp8-dynamic"


def test_smoothquant_matmuls_run_at_the_int8_peak():
    """W8A8 (int8-sq) multiplies in int8: A100 624 TOPS dense (NVIDIA A100 datasheet; shared/data/gpus.json), H100
    SXM 1,978.9 (3,958 with sparsity, NVIDIA H100 datasheet); weight-only int8 still dequantises for bf16."""
    from derive.catalog import load_gpu

    a100, h100 = load_gpu("a100"), load_gpu("h100")
    assert a100.peak("int8-sq")[0] == 624 * 10**12 and "int8 dense peak" in a100.peak("int8-sq")[1]
    assert h100.peak("int8-sq")[0] == sympy.Rational("1978.9e12")
    assert a100.peak("int8")[0] == a100.peak("bf16")[0]
