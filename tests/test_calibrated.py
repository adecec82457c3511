"""The calibrated predictor: never below the floor, its fit within bounds, its borrowed fits said, its errors clear."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from derive.calibration import FITTED, calibration
from derive.catalog import load_gpu
from derive.sweeps import Grid, evaluate_grid, predict_target
from formulas import calibrated as cal

ROOT = Path(__file__).parents[1]


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
            if quantity in (cal.eps_ar, cal.eps_arp):
                continue  # a growth of the time a byte, which may shrink it: checked below
            assert value >= 0
            if quantity.key.endswith("efficiency"):
                assert 0 < value <= 1, quantity.key
        # Each all-reduce kernel's time a byte is at least the link's at two accelerators and at eight (its largest
        # profiled group, which larger ones keep): (1 + eps·doublings)/eta >= 1.
        for _, _, share, growth in cal.ONE_SHOT, cal.LARGE_MESSAGE:
            eta, eps = float(fit.values[share]), float(fit.values[growth])
            assert (1 + eps * cal.PROFILED_DOUBLINGS) / eta >= 1 - 1e-6


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
    for name in ("tpot_floor", "tpot", "ttft_floor", "ttft", "decode_allreduce_time"):
        assert results[name]["value"] > 0, name
    assert results["narrow_expert_time"]["value"] >= 0  # a width the MoE tables may fit at zero
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


def _eval(run, quantity, *args):
    return _json(run, "eval", quantity, *args)["results"][quantity]["value"]


def test_the_routed_expert_term_by_hand_for_gpt_oss_on_an_h200(run):
    """gpt-oss-20b's decode step at batch 64 on one H200: its routed experts run the MXFP4 kernel's fitted constants.

    Facts of the published config (openai/gpt-oss-20b config.json): 24 layers, all MoE, 32 experts, top-4, hidden
    and expert intermediate 2,880, experts with biases (gate_up 2,880 x 5,760 + 5,760, down 2,880 x 2,880 + 2,880),
    stored in MXFP4 at 17/32 byte a weight (OCP MX v1.0: 4-bit values, one 8-bit scale per 32). H200: 4.8 TB/s,
    989.4 TFLOP/s bf16 dense (formulas/gpus.toml). Activations travel in bf16, 2 bytes.
    """
    fit = {s.key: float(v) for s, v in calibration(load_gpu("h200"), "bf16").values.items()}
    layers, experts, top_k, hidden, batch = 24, 32, 4, 2880, 64
    per_expert = 3 * hidden * hidden + 3 * hidden
    touched = experts * (1 - (1 - top_k / experts) ** batch)
    expert_bytes = layers * touched * per_expert * 17 / 32
    expert_flops = batch * 2 * layers * top_k * per_expert
    routed_activations = batch * top_k * hidden * 2  # bytes a layer
    bandwidth, peak = 4.8e12, 989.4e12
    expected = layers * (
        fit["mxfp4_moe_layer_fixed_time"] + fit["decode_routed_activation_passes"] * routed_activations / bandwidth
    ) + (  # a decode step's kernel streams the touched experts, then computes (formulas/calibrated.py DECODE_KERNEL)
        expert_bytes / (fit["mxfp4_expert_stream_efficiency"] * bandwidth)
        + expert_flops / (fit["mxfp4_decode_expert_gemm_efficiency"] * peak)
    )
    args = ("--model", "gpt-oss-20b", "--gpu", "h200", "--tp", "1", "--set", f"batch={batch}")
    assert _eval(run, "routed_expert_time", *args) == pytest.approx(expected, rel=1e-9)
    assert expected > expert_bytes / bandwidth  # the experts' share of the floor, at peak bandwidth


def test_a_checkpoint_expert_format_takes_its_own_kernel_and_others_the_fits():
    """gpt-oss ships MXFP4 experts: its routed terms read the MXFP4 constants; Qwen3's experts are in the weights'
    format and read the fit's own (formulas/calibrated.py EXPERT_FORMATS, derive/architecture/build.py)."""
    from derive.catalog import load_model

    for name, fitted in (("gpt-oss-20b", cal.EXPERT_FORMATS["mxfp4"]), ("qwen3-30b-a3b", cal.OWN_FORMAT)):
        formulas = {f.defines: f.expr for f in load_model(name).formulas.all()}
        for routed, constant in fitted.items():
            assert formulas.get(routed, cal.OWN_FORMAT[routed].symbol) == constant.symbol, (name, routed.key)


def test_the_routed_expert_term_is_zero_for_a_dense_model_and_the_step_its_old_form(run):
    """A dense model has no MoE layer, routed bytes or FLOPs: the routed-expert terms vanish and the weights and GEMMs
    are priced as before the MoE kernel had terms of its own (all weights at eta_w, all FLOPs at eta_g / eta_p)."""
    args = ("--model", "llama3-8b", "--gpu", "h200", "--tp", "2", "--set", "batch=16")
    assert _eval(run, "routed_expert_time", *args) == 0
    assert _eval(run, "prefill_routed_expert_time", *args) == 0
    dense = {cal.W_x.symbol: 0, cal.W_xp.symbol: 0, cal.F_x.symbol: 0, cal.L_x.symbol: 0, cal.k_x.symbol: 0}
    dense[cal.o_1.symbol] = 0  # two rows and more (batch 16)
    B, tau, n = cal.B.symbol, cal.tau.symbol, cal.n.symbol
    old = {
        cal.weight_read_time: cal.W_read.symbol / (n * cal.eta_w.symbol * cal.BW.symbol),
        cal.decode_gemm_time: B * tau * cal.F.symbol / (n * cal.eta_g.symbol * cal.P.symbol),
        cal.prefill_weight_time: cal.W_pre.symbol / (n * cal.eta_w.symbol * cal.BW.symbol),
        cal.prefill_gemm_time: B * cal.F_pw.symbol / (n * cal.eta_p.symbol * cal.P.symbol),
        cal.routed_expert_time: 0,
        cal.prefill_routed_expert_time: 0,
    }
    for formula, form in old.items():
        assert sympy.simplify(formula.expr.subs(dense) - form) == 0, formula.defines.key


def test_one_row_streams_the_weights_at_the_gemv_share_by_hand(run):
    """Llama 3 8B on one L40S in bf16: at batch 1 each weight multiplies one row, a GEMV kernel, and the step streams
    its weights at eta_w1; from batch 2 at eta_w (formulas/calibrated.py o_1). With eta_w1 = eta_w the term is the
    old one, W_read/(n·eta_w·BW), at every batch. L40S: 864 GB/s (formulas/gpus.toml)."""
    fit = calibration(load_gpu("l40s"), "bf16").values
    args = ("--model", "llama3-8b", "--gpu", "l40s")
    for batch, share in ((1, fit[cal.eta_w1]), (2, fit[cal.eta_w]), (7, fit[cal.eta_w])):
        weights = _eval(run, "bytes_read_per_step", *args, "--set", f"batch={batch}")  # each token's embedding row too
        seconds = _eval(run, "weight_read_time", *args, "--set", f"batch={batch}")
        assert seconds == pytest.approx(weights / (864e9 * float(share)), rel=1e-9), batch
    n, bw = cal.n.symbol, cal.BW.symbol
    same = cal.weight_read_time.expr.subs({cal.eta_w1.symbol: cal.eta_w.symbol, cal.W_x.symbol: 0})
    assert sympy.simplify(same - cal.W_read.symbol / (n * cal.eta_w.symbol * bw)) == 0


def test_a_batch_between_one_row_and_two_is_solved_at_its_crossing(run):
    """Between one row and two the step's weights are read at a share between the two, and the weights read grow
    with the batch (each token's embedding row): that piece is a quadratic too large for sympy.solve, which ran for
    minutes. The crossing found numerically is its root, and the sheet says so."""
    result = run("solve", "tpot = 20 ms", "--for", "batch", "--model", "llama3-8b", "--gpu", "l40s", "--json")
    assert result.exit_code == 0, result.stderr
    batch = json.loads(result.stdout)["results"]["batch"]["value"]
    assert 1 < batch < 2


def test_the_moe_kernel_spends_a_fixed_time_on_each_expert_a_rank_holds():
    """aiconfigurator's fp8-block MoE tables cost a decode layer more the more experts a rank holds, whatever the
    tokens (tools/calibrate.py fits t_xE to them: about 0.19 µs an expert on H200). DeepSeek-V3 on 8 H200s (tp8, every
    expert split over all eight, so each holds all 256): its 58 MoE layers add 58·256·t_xE to the routed-expert
    kernel; with t_xE = 0 the kernel is the old one."""
    from derive.catalog import load_model
    from derive.core.evaluation import evaluate
    from derive.sweeps import predictor_inputs
    from formulas import notation as sym

    values, lib = predictor_inputs(load_model("deepseek-v3"), load_gpu("h200"), "fp8-block")
    values.update({sym.B: sympy.Integer(16), sym.S: sympy.Integer(2048), sym.n: sympy.Integer(8)})
    per_expert = float(values[cal.t_xEf])
    assert 1e-7 < per_expert < 5e-7  # seconds an expert a layer
    with_it = evaluate(cal.t_X.symbol, dict(values), lib)
    without = evaluate(cal.t_X.symbol, {**values, cal.t_xEf: sympy.Integer(0)}, lib)
    assert float(with_it - without) == pytest.approx(58 * 256 * per_expert, rel=1e-9)
    assert float(calibration(load_gpu("h200"), "bf16").values[cal.t_xEf]) < 1e-8  # bf16's kernel has next to none


def test_a_prompt_pass_moves_its_routed_intermediates_by_hand():
    """Mixtral 8x7B's prompt pass of 4 x 4,096 tokens on 2 B200s (tp2): besides its hidden-wide passes, each of its 32
    MoE layers moves the k = 2 routed copies of every token's intermediate, 14,336 / 2 = 7,168 wide on a rank, in bf16
    (2 bytes), m_x,i times through the 8 TB/s memory (facts: mistralai/Mixtral-8x7B-v0.1 config.json;
    formulas/gpus.toml). With m_x,i = 0 the kernel is the old one; a decode step's kernel has no such term."""
    from derive.catalog import load_model
    from derive.core.evaluation import evaluate
    from derive.sweeps import predictor_inputs
    from formulas import notation as sym
    from formulas import prefill as pf

    values, lib = predictor_inputs(load_model("mixtral-8x7b"), load_gpu("b200"), "fp8-block")
    batch, prompt, two = sympy.Integer(4), sympy.Integer(4096), sympy.Integer(2)
    values.update({sym.B: batch, pf.S_p: prompt, sym.S: prompt, sym.n: two})
    passes = float(values[cal.m_xip])
    assert passes > 0
    with_it = evaluate(cal.t_Xp.symbol, dict(values), lib)
    without = evaluate(cal.t_Xp.symbol, {**values, cal.m_xip: sympy.Integer(0)}, lib)
    expected = 32 * passes * (4 * 4096 * 2 * 7168 * 2) / 8e12
    assert float(with_it - without) == pytest.approx(expected, rel=1e-9)
    assert cal.DECODE_KERNEL.intermediate_passes is None


def _allreduce_seconds(group: int, data: float, kernels: tuple, constants: dict) -> float:
    """formulas/calibrated.py's allreduce at `constants` (by symbol) over a 450 GB/s link, as a float."""
    from formulas import sharding as sh

    expr = cal.allreduce(sympy.Symbol("D"), cal.n.symbol, kernels, sh.BW_link)
    at = {s.symbol: sympy.nsimplify(v) for s, v in constants.items()}
    return float(expr.subs(at).subs({sympy.Symbol("D"): data, cal.n.symbol: group, sh.BW_link.symbol: 450e9}))


def test_the_allreduce_grows_with_the_group_by_hand():
    """One all-reduce of D = 1 MB on 8 accelerators, the one-shot kernel at alpha = 3 µs, lambda = 0.2, eta = 0.5,
    eps = 0.5: two doublings past two, so the latency is 3·(1 + 0.4) = 4.2 µs and the ring's 2·7/8·D bytes cost
    (1 + 1)/0.5 = 4 times the link's 450 GB/s: 4.2 µs + 1.75e6·4/450e9 s. At sixteen the kernel keeps eight's
    constants (aiconfigurator profiles up to eight) and only the ring's bytes grow, to 2·15/16·D. With no growth it
    is the ring's latency plus bytes at a share of the link (Patarasuk and Yuan), and nothing on one accelerator."""
    one_shot = {cal.alpha_ar: 3e-6, cal.lambda_ar: 0.2, cal.eta_link: 0.5, cal.eps_ar: 0.5}
    data = 1e6
    assert _allreduce_seconds(8, data, cal.DECODE_LINK, one_shot) == pytest.approx(4.2e-6 + 1.75e6 * 4 / 450e9)
    assert _allreduce_seconds(16, data, cal.DECODE_LINK, one_shot) == pytest.approx(4.2e-6 + 1.875e6 * 4 / 450e9)
    flat = {**one_shot, cal.lambda_ar: 0, cal.eps_ar: 0}
    for group in (2, 4, 8):
        ring = 2 * (group - 1) / group * data
        assert _allreduce_seconds(group, data, cal.DECODE_LINK, flat) == pytest.approx(3e-6 + ring / (0.5 * 450e9))
    assert _allreduce_seconds(1, data, cal.DECODE_LINK, one_shot) == 0


def test_a_prompt_pass_takes_the_faster_allreduce_kernel():
    """The prompt pass's all-reduce is the faster of the one-shot kernel and the large-message one: at 64 KB the
    one-shot kernel's 3 µs latency wins over the large one's 20 µs; at 1 GB the large one's full link share wins."""
    constants = {
        cal.alpha_ar: 3e-6,
        cal.lambda_ar: 0,
        cal.eta_link: 0.3,
        cal.eps_ar: 0,
        cal.alpha_p: 20e-6,
        cal.lambda_arp: 0,
        cal.eta_linkp: 1,
        cal.eps_arp: 0,
    }
    for data in (64e3, 1e9):
        one_shot = 3e-6 + data / (0.3 * 450e9)
        large = 20e-6 + data / 450e9
        assert _allreduce_seconds(2, data, cal.PREFILL_LINK, constants) == pytest.approx(min(one_shot, large))
    assert _allreduce_seconds(2, 64e3, cal.PREFILL_LINK, constants) == pytest.approx(3e-6 + 64e3 / (0.3 * 450e9))


def _calibrate_tool():  # type: ignore[no-untyped-def]
    """tools/calibrate.py, a script rather than a package module, loaded as one."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("calibrate", ROOT / "tools" / "calibrate.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_the_fit_finds_a_max_side_the_lower_bounds_never_activate():
    """t = max(a/eta_1, b/eta_2) with eta_2 = 0.4 and b < a everywhere: from the lower bounds (both shares 1) the b side
    never counts and alternation alone settles with it unfitted; started again with it at a share of 1/2, the fit
    recovers both shares exactly."""
    tool = _calibrate_tool()
    b = np.linspace(0.1, 0.9, 9)
    basis = np.stack([np.ones_like(b), b], axis=1)
    truth = np.array([1 / 0.9, 1 / 0.4])
    target = np.maximum(basis[:, 0] * truth[0], basis[:, 1] * truth[1])

    def active(theta: np.ndarray) -> np.ndarray:
        first = basis[:, 0] * theta[0] >= basis[:, 1] * theta[1]
        return np.stack([first, ~first], axis=1)

    lower, weights = np.ones(2), np.ones_like(b)
    stuck = tool._alternating_fit(basis, target, weights, lower, {}, active, tool.ROUNDS)
    assert stuck[1] == 1.0  # never fitted
    fitted = tool._alternating_fit(basis, target, weights, lower, {}, active, tool.ROUNDS, flipped=[[1]])
    assert fitted == pytest.approx(truth)


def test_the_allreduce_fit_is_the_profiled_tables():
    """formulas/calibration.json's all-reduce constants are what tools/calibrate.py fits to aiconfigurator's all-reduce
    op (benchmarks/data/aiconfigurator-0.12-allreduce.json, recomputed here), and every accelerator's fit holds them;
    on the NVLink accelerators the faster of the two kernels is within 6 % of the tables at the median."""
    tool = _calibrate_tool()
    committed = json.loads((ROOT / "formulas" / "calibration.json").read_text())
    fitted = tool.fit_allreduces()
    assert fitted == committed["allreduces"]
    for gpu, fit in fitted.items():
        if gpu != "l40s":
            assert fit["envelope_error"]["median"] < 0.06, gpu
        for precision, values in committed["accelerators"][gpu].items():
            assert {k: values["values"][k] for k in fit["values"]} == fit["values"], (gpu, precision)


def _prompt_inputs(model: str, gpu: str, precision: str, batch: int, prompt: int, tp: int) -> tuple[dict, object]:
    from derive.catalog import load_model
    from derive.sweeps import predictor_inputs
    from formulas import notation as sym
    from formulas import prefill as pf

    values, lib = predictor_inputs(load_model(model), load_gpu(gpu), precision)
    values.update({sym.B: sympy.Integer(batch), pf.S_p: sympy.Integer(prompt), sym.S: sympy.Integer(prompt)})
    values[sym.n] = sympy.Integer(tp)
    return values, lib


def test_a_prompt_pass_moves_its_mlp_activations_on_their_own_width_by_hand():
    """Llama 3 8B's prompt pass of 4 x 1,024 tokens on 2 B200s (tp2): each of its 32 layers' SwiGLU reads the gate and
    up halves and writes their product, 3 x 14,336 values a token, split 2 ways, in bf16 (2 bytes), m_act,p times
    through the 8 TB/s memory (facts: meta-llama/Meta-Llama-3-8B config.json; formulas/gpus.toml). With m_act,p = 0
    the prompt pass is its old form."""
    from derive.core.evaluation import evaluate

    values, lib = _prompt_inputs("llama3-8b", "b200", "fp8", 4, 1024, 2)
    assert evaluate(cal.v_act.symbol, dict(values), lib) == 32 * 3 * 14336
    passes = float(values[cal.m_actp])
    assert passes > 0
    with_it = evaluate(cal.t_calp.symbol, dict(values), lib)
    without = evaluate(cal.t_calp.symbol, {**values, cal.m_actp: sympy.Integer(0)}, lib)
    expected = passes * (4 * 1024 * 32 * 3 * 14336 / 2 * 2) / 8e12
    assert float(with_it - without) == pytest.approx(expected, rel=1e-9)


def test_a_plain_mlp_and_shared_experts_count_their_activations():
    """GPT-2's MLP is plain (c_fc, gelu, c_proj): its activation reads one 3,072-wide input and writes one, 12 layers.
    DeepSeek-V3's activations are its 3 dense layers' (18,432 wide) and its 58 MoE layers' one shared expert (2,048
    wide), each gated; the routed experts' belong to the MoE kernel (facts: openai-community/gpt2 and
    deepseek-ai/DeepSeek-V3 config.json)."""
    from derive.core.evaluation import evaluate

    for model, expected in (("gpt2", 12 * 2 * 3072), ("deepseek-v3", 3 * 3 * 18432 + 58 * 3 * 2048)):
        values, lib = _prompt_inputs(model, "h100", "bf16", 1, 128, 1)
        assert evaluate(cal.v_act.symbol, dict(values), lib) == expected, model


def test_a_prompt_pass_adds_a_fixed_time_for_each_layer_that_normalizes_q_and_k():
    """Qwen3 8B normalizes each head's q and k in all 36 layers; Llama 3 8B in none (facts: Qwen/Qwen3-8B and
    meta-llama/Meta-Llama-3-8B config.json, transformers' Qwen3Attention). The fixed time is aiconfigurator 0.12's
    context attention op's with the norms less without: 26.0 to 26.5 us on every system and shape
    (benchmarks/data/aiconfigurator-0.12-qknorm.json). A decode step has none, nor a model without the norms."""
    from derive.core.evaluation import evaluate

    for model, layers, normed in (("qwen3-8b", 36, 36), ("llama3-8b", 32, 0)):
        values, lib = _prompt_inputs(model, "h100", "bf16", 1, 128, 1)
        assert evaluate(cal.L_qn.symbol, dict(values), lib) == normed, model
        t_qn = float(values[cal.t_qn])
        data = Path(__file__).parent.parent / "benchmarks" / "data"
        rows = json.loads((data / "aiconfigurator-0.12-qknorm.json").read_text())
        added = [
            r["ms_qk_norm"] - r["ms"] for r in rows["points"] if r["system"] == "h100_sxm" and r["phase"] == "context"
        ]
        assert t_qn == pytest.approx(float(np.median(added)) / 1e3, rel=1e-4)
        assert 26.0e-6 <= t_qn <= 26.5e-6
        fixed = float(evaluate(cal.t_fixp.symbol, dict(values), lib))
        assert fixed == pytest.approx(layers * float(values[cal.t_Lp]) + normed * t_qn, rel=1e-12)
        without = evaluate(cal.t_cal.symbol, {**values, cal.t_qn: sympy.Integer(0)}, lib)
        assert evaluate(cal.t_cal.symbol, dict(values), lib) == without


def test_the_nvfp4_moe_tables_take_the_min_latency_kernel_at_a_decode_steps_few_tokens():
    """aiconfigurator 0.12's MoE op (`operations.MoE(...)._engine_query` on b200_sxm, trtllm 1.3.0rc20, Mixtral's
    4,096 x 14,336 experts, top-2 of 8, power_law_1.2, moe_tp 1) answers 16 tokens with 0.0310 ms, its min-latency
    twin's row (the regular table's is 0.3284), and 256 tokens with 0.3290 ms, the regular table's; Kimi K2's 384
    experts of 7,168 x 2,048, top-8, which the twin lacks, with its regular row at 16 tokens, 0.4667 ms: the extract
    keeps each row as the op selects it."""
    data = json.loads((Path(__file__).parent.parent / "benchmarks/data/aiconfigurator-0.12-moe.json").read_text())
    shape = ("b200_sxm", "nvfp4", 8, 2, 4096, 14336, 1, 1, True)
    keys = ("system", "format", "experts", "topk", "hidden", "inter", "tp", "ep", "gated")
    (table,) = [t for t in data["tables"] if tuple(t[k] for k in keys) == shape]
    latency = dict(table["points"])
    assert latency[16] == pytest.approx(0.0310, rel=2e-3)
    assert latency[256] == pytest.approx(0.3290, rel=2e-3)
    kimi = ("b200_sxm", "nvfp4", 384, 8, 7168, 2048, 1, 1, True)
    (table,) = [t for t in data["tables"] if tuple(t[k] for k in keys) == kimi]
    assert dict(table["points"])[16] == pytest.approx(0.4667, rel=2e-3)


def test_the_moe_kernel_fit_leaves_out_tables_whose_ranks_experts_fit_in_l2():
    """Qwen3-30B-A3B's 128 experts of 2,048 x 768, gated (fact: Qwen/Qwen3-30B-A3B config.json), in fp8 on 8 L40S at
    ep 8: 16 experts a rank, 16·3·2,048·768 bytes = 72 MiB, inside the L40S's 96 MB L2 (AD102's, NVIDIA Ada GPU
    Architecture whitepaper), so aiconfigurator's loop over one layer read them from there, and at ep 4 with each
    expert split 2 ways the same; at ep 4 whole, 144 MiB, from memory; on an H100 (50 MB L2, NVIDIA H100
    whitepaper) none. The fit leaves out exactly the resident tables."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import profiled

    tables = profiled.moe_tables()

    def table(gpu: str, tp: int, ep: int) -> profiled.MoeTable:
        shape = (gpu, "fp8", 128, 8, 2048, 768, tp, ep)
        keys = ("gpu", "format", "experts", "topk", "hidden", "inter", "tp", "ep")
        (found,) = [t for t in tables if tuple(getattr(t, k) for k in keys) == shape]
        return found

    assert 128 // 8 * table("l40s", 1, 8).params == 72 * 2**20
    assert table("l40s", 1, 8).l2_resident
    assert table("l40s", 2, 4).l2_resident and not table("l40s", 1, 4).l2_resident
    assert not table("h100", 1, 8).l2_resident
    kernels = json.loads((Path(cal.__file__).parent / "calibration.json").read_text())["moe_kernels"]
    for gpu, formats in kernels.items():
        for form, fit in formats.items():
            mine = [t for t in tables if (t.gpu, t.format) == (gpu, form)]
            resident = sum(t.l2_resident for t in mine)
            assert (fit["tables"], fit["l2_resident"]) == (len(mine) - resident, resident), (gpu, form)


def test_a_moe_layer_runs_its_routed_kernel_in_place_of_the_dense_mlp_kernels_a_shared_expert_runs():
    """DeepSeek-V3 runs one shared expert beside the routed ones in each of its 58 MoE layers; Mixtral has none in its
    32 (facts: deepseek-ai/DeepSeek-V3 and mistralai/Mixtral-8x7B-v0.1 config.json). t_L is fitted on dense layers, so
    it counts a dense MLP's kernels, t_mlp of it (at most t_L): a MoE layer runs its routed kernel, at its MoE table's
    own fixed time, in their place, and a shared expert runs them. So DeepSeek-V3's fixed time is its dense layers'
    and Mixtral's 32·t_mlp less, decode and prompt pass alike; with t_mlp = 0 the step is t_L's a layer."""
    from derive.core.evaluation import evaluate

    data = json.loads((Path(cal.__file__).parent / "calibration.json").read_text())
    fit = data["accelerators"]["h200"]["fp8-block"]
    own_gpu, own_format = fit["fixed_from_moe_kernels"]["own"].split()
    kernel = data["moe_kernels"][own_gpu][own_format]["values"]
    for model, shared, routed in (("deepseek-v3", 58, 58), ("mixtral-8x7b", 0, 32)):
        values, lib = _prompt_inputs(model, "h200", "fp8-block", 1, 128, 8)
        assert evaluate(cal.L_sx.symbol, dict(values), lib) == shared, model
        assert evaluate(cal.L_x.symbol, dict(values), lib) == routed, model
        for mlp, layer, fixed, routed_fixed, kernel_key in (
            (cal.t_mlp, cal.t_L, cal.t_fix, cal.t_x, "routed_layer_fixed_time"),
            (cal.t_mlpp, cal.t_Lp, cal.t_fixp, cal.t_xp, "prefill_routed_layer_fixed_time"),
        ):
            assert 0 <= float(values[mlp]) <= float(values[layer])
            own = evaluate(routed_fixed.symbol, dict(values), lib)  # the fit's own format: Mixtral's and DeepSeek's
            assert float(own) == pytest.approx(kernel[kernel_key], rel=1e-4)
            with_it = evaluate(fixed.symbol, dict(values), lib)
            without = evaluate(fixed.symbol, {**values, mlp: sympy.Integer(0)}, lib)
            assert float(with_it - without) == pytest.approx(
                (shared - routed) * float(values[mlp]), rel=1e-12, abs=1e-15
            )


def test_a_latent_attention_layer_adds_its_extra_kernels_to_a_decode_step():
    """DeepSeek-V3's 61 layers all cache a latent (MLA); Llama 3 70B's none (facts: deepseek-ai/DeepSeek-V3 and
    meta-llama/Meta-Llama-3-70B config.json). t_la is aiconfigurator's MLA block less Llama 3 70B's attention kernels
    at batch 1, each less its weights streamed at the fit's share: by hand from benchmarks/data/aiconfigurator-0.12-
    mla.json's H200 rows. A prompt pass is unchanged."""
    from derive.core.evaluation import evaluate

    rows = json.loads((Path(__file__).parent.parent / "benchmarks/data/aiconfigurator-0.12-mla.json").read_text())
    for model, latent in (("deepseek-v3", 61), ("llama3-70b", 0)):
        values, lib = _prompt_inputs(model, "h200", "fp8-block", 1, 128, 8)
        assert evaluate(cal.L_la.symbol, dict(values), lib) == latent, model
        bandwidth = 4.8e12 * float(values[cal.eta_w])  # H200: 4.8 TB/s (formulas/gpus.toml)
        added = sorted(
            (r["mla_ms"] - r["gqa_ms"]) / 1e3 - (r["mla_weight_bytes"] - r["gqa_weight_bytes"]) / bandwidth
            for r in rows["points"]
            if r["system"] == "h200_sxm"
        )
        assert float(values[cal.t_la]) == pytest.approx((added[1] + added[2]) / 2, rel=1e-4)
        step = evaluate(cal.t_fix.symbol, dict(values), lib)
        without = evaluate(cal.t_fix.symbol, {**values, cal.t_la: sympy.Integer(0)}, lib)
        assert float(step - without) == pytest.approx(latent * float(values[cal.t_la]), rel=1e-12, abs=1e-15)
        prompt = evaluate(cal.t_fixp.symbol, dict(values), lib)
        assert prompt == evaluate(cal.t_fixp.symbol, {**values, cal.t_la: sympy.Integer(0)}, lib)


def test_every_layer_kind_counts_its_activations_norms_latents_and_dense_mlps_beside_experts():
    """Counted by hand from each config (tests/data/families, transformers' modeling files):
    - LongCat-Flash: 28 layers, each two MLA attentions and two 12,288-wide gated MLPs beside its MoE block: 28·2·3·
      12,288 activation values, 56 latent attentions, 56 dense MLPs beside experts.
    - Llama 3.2 90B Vision: 100 layers with a 28,672-wide gated MLP; its 20 cross-attention layers normalize q and k.
    - Zamba2 7B: the shared block's 14,336-wide gated MLP on each of its hybrid layers.
    - Gemma 4 26B-A4B: every one of its 30 layers normalizes q and k and runs a dense MLP beside its experts."""
    from derive.catalog import load_config_path, load_model
    from derive.core.evaluation import evaluate
    from derive.sweeps import predictor_inputs

    families = Path(__file__).parent / "data" / "families"
    zamba = json.loads((families / "zamba2" / "Zyphra__Zamba2-7B.json").read_text())
    hybrid = zamba["layers_block_type"].count("hybrid")
    cases = (
        (families / "longcat_flash" / "meituan-longcat__LongCat-Flash-Chat.json", (28 * 2 * 3 * 12288, 0, 56, 56)),
        (families / "mllama" / "meta-llama__Llama-3.2-90B-Vision-Instruct.json", (100 * 3 * 28672, 20, 0, 0)),
        (families / "zamba2" / "Zyphra__Zamba2-7B.json", (hybrid * 3 * 14336, 0, 0, 0)),
        ("gemma4-26b-a4b", (None, 30, 0, 30)),
    )
    for source, expected in cases:
        model = load_model(source) if isinstance(source, str) else load_config_path(source)
        values, lib = predictor_inputs(model, load_gpu("h100"), "bf16")
        got = tuple(evaluate(q.symbol, dict(values), lib) for q in (cal.v_act, cal.L_qn, cal.L_la, cal.L_sx))
        assert all(e is None or g == e for g, e in zip(got, expected, strict=True)), (source, got)


def test_a_layer_that_is_a_mixer_or_an_mlp_alone_ends_in_one_allreduce():
    """Megatron ends each mixer and each MLP in one all-reduce: two in a Llama layer (a mixer and an MLP, fact:
    meta-llama/Meta-Llama-3-8B config.json), one in each of Nemotron-3 Nano's 52 layers, which its
    hybrid_override_pattern makes a Mamba-2 mixer, an attention or a MoE block alone (23 M, 6 *, 23 E; fact:
    nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json). So its decode all-reduce at tp 2 is 52 of them, half what
    two a layer would make."""
    from derive.catalog import load_model
    from derive.core.evaluation import evaluate

    assert load_model("nemotron3-nano").config.layers == 52
    for model, per_layer in (("llama3-8b", 2), ("nemotron3-nano", 1)):
        values, lib = _prompt_inputs(model, "h100", "bf16", 16, 2048, 2)
        assert evaluate(cal.m_ar.symbol, dict(values), lib) == per_layer, model
    values, lib = _prompt_inputs("nemotron3-nano", "h100", "bf16", 16, 2048, 2)
    one = evaluate(cal.t_ar.symbol, dict(values), lib)
    two = evaluate(cal.t_ar.symbol, {**values, cal.m_ar: sympy.Integer(2)}, lib)
    assert float(two) == pytest.approx(2 * float(one), rel=1e-12)
