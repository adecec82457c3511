"""One model of a step: every command that derives a decode step or a prompt pass gives the figures `predict` and
`plan` give for the same model, accelerator, layout, batch and tokens.

`predict` evaluates the step on one sheet, as `eval`, `energy`, `utilisation`, `knee`, `claim` and `compare` do
(each checked here); `plan` compiles the layout formulas (formulas/layout.py) to numpy and searches; `sweep`
compiles any target over a grid. All read the same terms: the floor (`tpot_floor`, `ttft_floor`) and the
calibrated estimate (`tpot`, `ttft`), each under one name. The grid's layouts are tensor parallel (Layout(tp));
where tp exceeds the KV heads the cache is copied and where the cache is an MLA latent it is whole on every rank,
in every command alike (kv_shards = min(tp, KV heads)). Six wider layouts (ep, pp, dp) follow the grid.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import derive
from derive import scenario
from derive.catalog import load_gpu, load_model
from derive.derivations.costs import predict
from derive.layouts import Layout, problem, shape
from derive.planning import INPUTS, Targets, compile_plan, layout_inputs
from derive.systems import system_for
from formulas import layout as lay

# Dense MHA, GQA, MoE, MLA (DeepSeek-V2-Lite-sized through DeepSeek-V3's family is too large for 4 accelerators, so
# Kimi's sibling is left to test_layout), windowed, two hybrids (linear attention; Mamba), and a family added by
# issue 24 (Step-3.7: sliding and full layers, MoE).
MODELS = ["llama2-7b", "llama3-8b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b", "qwen3.5-27b", "nemotron3-nano"]
MODELS += ["step-3.7-flash"]
GPUS = ["h100", "h200", "b200", "a100"]
TPS = [2, 4, 8]
PROMPT, OUTPUT, BATCH = 1024, 256, 4
MEAN_CONTEXT = PROMPT + OUTPUT // 2  # what a decode step sees on average (derive predict)


def _runs(model_name: str, gpu_name: str, tp: int) -> bool:
    model, gpu = load_model(model_name), load_gpu(gpu_name)
    if problem(shape(model), Layout(tp), system_for(gpu)) is not None:
        return False
    try:
        _predict(model_name, gpu_name, tp)
    except derive.DeriveError:  # does not fit on tp accelerators: no step to compare
        return False
    return True


_PREDICTED: dict[tuple[str, str, int], dict[str, float]] = {}


def _predict(model_name: str, gpu_name: str, tp: int) -> dict[str, float]:
    key = (model_name, gpu_name, tp)
    if key not in _PREDICTED:
        dtype = "fp8" if model_name == "deepseek-v3" else "bf16"
        values = {"model": model_name, "gpu": gpu_name, "tp": tp, "batch": BATCH, "dtype": dtype}
        sheet = predict(scenario.build({**values, "prompt": PROMPT, "output": OUTPUT}))
        _PREDICTED[key] = {k: float(sheet.results[k].value) for k in ("tpot_floor", "tpot", "ttft_floor", "ttft")}
    return _PREDICTED[key]


@functools.cache
def _compiled(model_name: str, gpu_name: str, floor: bool):  # type: ignore[no-untyped-def]
    dtype = "fp8" if model_name == "deepseek-v3" else "bf16"
    targets = Targets(ttft=1, tpot=1, prompt=PROMPT, output=OUTPUT)
    return compile_plan(load_model(model_name), load_gpu(gpu_name), dtype, targets, floor)


def _plan(model_name: str, gpu_name: str, tp: int) -> dict[str, float]:
    base = layout_inputs(load_model(model_name), [Layout(tp)], system_for(load_gpu(gpu_name)))
    out = {}
    for floor, suffix in ((True, "_floor"), (False, "")):
        compiled = _compiled(model_name, gpu_name, floor)

        def at(fn, batch):  # type: ignore[no-untyped-def]
            return float(np.ravel(fn(*base, np.array([0.0]), float(batch)))[0])

        out["tpot" + suffix] = at(compiled.step, BATCH)
        out["ttft" + suffix] = at(compiled.ttft, BATCH)
    return out


CASES = [(m, g, tp) for m in MODELS for g in GPUS for tp in TPS]


@pytest.mark.parametrize("model_name", MODELS)
def test_every_model_runs_on_some_layout_of_every_accelerator(model_name):
    assert all(any(_runs(model_name, g, tp) for tp in TPS) for g in GPUS if model_name != "deepseek-v3")
    assert any(_runs(model_name, g, 8) for g in GPUS)  # DeepSeek-V3 in fp8 fits 8 H200 or B200


@pytest.mark.parametrize(("model_name", "gpu_name", "tp"), CASES)
def test_predict_and_plan_are_one_step(model_name, gpu_name, tp):
    if not _runs(model_name, gpu_name, tp):
        pytest.skip("the layout does not run the model there")
    predicted, planned = _predict(model_name, gpu_name, tp), _plan(model_name, gpu_name, tp)
    for key, value in predicted.items():
        assert planned[key] == pytest.approx(value, rel=1e-5), key


@functools.cache
def _swept(model_name: str) -> dict[int, dict[str, object]]:
    """`derive sweep predict` over the three degrees on one accelerator a model (each accelerator meets two models;
    a compile a model and accelerator is most of a sweep's time), by tp."""
    dtype = "fp8" if model_name == "deepseek-v3" else "bf16"
    sweep = derive.sweep(
        "predict",
        model_name,
        _sweep_gpu(model_name),
        dtype=dtype,
        tp=TPS,
        batch=[BATCH],
        prompt=[PROMPT],
        output=[OUTPUT],
    )
    return {row["tp"]: row for row in sweep.table().to_pylist()}


_SWEEP_GPU = {
    "llama2-7b": "h100",
    "qwen3.5-27b": "h100",
    "llama3-8b": "h200",
    "deepseek-v3": "h200",  # fp8: the A100 has no fp8 peak
    "mixtral-8x7b": "b200",
    "step-3.7-flash": "b200",
    "gpt-oss-20b": "a100",
    "nemotron3-nano": "a100",
}


def _sweep_gpu(model_name: str) -> str:
    return _SWEEP_GPU[model_name]


@pytest.mark.parametrize(("model_name", "gpu_name", "tp"), CASES)
def test_eval_energy_utilisation_knee_and_sweep_give_predicts_step(model_name, gpu_name, tp):
    if not _runs(model_name, gpu_name, tp):
        pytest.skip("the layout does not run the model there")
    predicted = _predict(model_name, gpu_name, tp)
    dtype = "fp8" if model_name == "deepseek-v3" else "bf16"
    common = {"tp": tp, "batch": BATCH, "context": MEAN_CONTEXT, "dtype": dtype}
    for name in ("tpot", "tpot_floor"):
        evaluated = derive.evaluate(name, model_name, gpu_name, **common).results[name]
        assert float(evaluated.to("second").magnitude) == pytest.approx(predicted[name], rel=1e-5), name
    # derive energy: the accelerators' power over the same floor step, per token of the batch.
    joules = derive.energy(model_name, gpu_name, **common).results["joules_per_token"]
    power = float(load_gpu(gpu_name).power)
    expected = power * tp * predicted["tpot_floor"] / BATCH
    assert float(joules.to("joule/token").magnitude) == pytest.approx(expected, rel=1e-5)
    # derive utilisation: with no measured time, its roofline step is the same floor.
    floor = derive.utilisation(model_name, gpu_name, **common).results["roofline_step_time"]
    assert float(floor.to("second").magnitude) == pytest.approx(predicted["tpot_floor"], rel=1e-5)
    # derive knee: its memory ceiling is fit's, and its throughput there is that batch over the same floor step.
    knee = derive.knee(model_name, gpu_name, **{k: v for k, v in common.items() if k != "batch"}).results
    largest = knee["max_batch_by_memory"].magnitude
    assert (
        largest
        == derive.fit(model_name, gpu_name, tp=tp, context=MEAN_CONTEXT, dtype=dtype).results["max_sequences"].magnitude
    )
    step = derive.evaluate("tpot_floor", model_name, gpu_name, **{**common, "batch": largest}).results["tpot_floor"]
    rate = largest / float(step.to("second").magnitude)
    assert float(knee["throughput_at_max_batch"].to("token/second").magnitude) == pytest.approx(rate, rel=1e-5)
    if gpu_name == _sweep_gpu(model_name):
        row = _swept(model_name)[tp]
        for name in ("tpot", "tpot_floor", "ttft", "ttft_floor"):
            assert row[name + "_s"] == pytest.approx(predicted[name], rel=1e-5), name


def test_the_floor_and_the_estimate_have_distinct_names():
    """`tpot` is the calibrated estimate everywhere; the roofline floor is `tpot_floor` (and likewise TTFT)."""
    floor, estimate = derive.formula("tpot_floor"), derive.formula("tpot")
    assert "floor" in floor.defines.meaning and "fitted" in estimate.defines.meaning
    assert derive.formula("ttft_floor").defines.name != derive.formula("ttft").defines.name


# What a step reads (issue 25): the weights its B·tau tokens touch, not every weight stored, by hand.


def test_deepseek_v3_crossover_at_batch_16_divides_what_a_step_reads():
    # DeepSeek-V3 (its config.json): 671,026,419,200 parameters, 58 MoE layers of 256 routed experts of 3·7,168·2,048,
    # top-8; a 129,280 x 7,168 input embedding gathered a row a token; an MLA cache of (512 + 64)·61 values a token,
    # 2 bytes each in bf16 (asked for: the checkpoint ships fp8-block). 16 tokens touch 256·(1 - (1 - 8/256)^16)
    # experts a layer.
    sheet = derive.crossover_kv_weights("deepseek-v3", batch=16, dtype="bf16")
    expert, routed = 3 * 7_168 * 2_048, 58 * 256 * 3 * 7_168 * 2_048
    touched = 256 * (1 - (1 - 8 / 256) ** 16)
    read = 2 * (671_026_419_200 - routed - 129_280 * 7_168 + 58 * touched * expert + 16 * 7_168)
    context = read / (16 * (512 + 64) * 61 * 2)
    assert float(sheet.results["crossover_context"].to("token/sequence").magnitude) == pytest.approx(context, rel=1e-12)
    assert round(context, -3) == 492_000  # the 553e9 / (16 · 70,272 B), not 1.194M


def test_batching_decode_reads_the_experts_each_batch_touches():
    # Mixtral 8x7B (its config.json): 46,702,792,704 parameters, 32 layers of 8 experts of 3·4,096·14,336, top-2, a
    # 32,000 x 4,096 embedding gathered a row a token: a step of B reads 2·(N - routed - table + 32·8·(1 - (3/4)^B)
    # ·expert + B·4,096) bytes, 25.5 GB at batch 1 and 84.1 GB at 8 (the figures), not all 93.4 GB.
    answer = derive.answer("batching-decode", model="mixtral-8x7b")
    expert = 3 * 4_096 * 14_336
    fixed = 46_702_792_704 - 32 * 8 * expert - 32_000 * 4_096

    def read(batch: int) -> float:
        return 2 * (fixed + 32 * 8 * (1 - 0.75**batch) * expert + batch * 4_096)

    for name, batch in (("weights_read_small", 1), ("weights_read_large", 8)):
        assert float(answer.results[name].to("byte").magnitude) == pytest.approx(read(batch), rel=1e-12)
    assert round(read(1) / 1e9, 1) == 25.5 and round(read(8) / 1e9) == 84


LAYOUTS = [
    ("mixtral-8x7b", "h100", Layout(1, 8, 1, 8)),  # whole experts, attention data parallel
    ("mixtral-8x7b", "h200", Layout(2, 1, 2, 1)),  # two pipeline stages
    ("qwen3-30b-a3b", "b200", Layout(2, 4, 1, 2)),
    ("deepseek-v3", "h200", Layout(1, 8, 1, 8)),  # MLA: the latent whole on every rank
    ("llama3-70b", "h100", Layout(4, 1, 2, 1)),
    ("nemotron3-nano", "a100", Layout(2, 4, 1, 2)),
]


@pytest.mark.parametrize(("model_name", "gpu_name", "layout"), LAYOUTS, ids=[f"{m}-{g}-{lt}" for m, g, lt in LAYOUTS])
def test_predict_on_a_layout_is_the_plans_step(model_name, gpu_name, layout):
    """`derive predict --ep --pp --dp` evaluates the plan's layout formulas: the same step at the same micro-batch,
    and the prompt pass of its prompts spread over the attention ranks, every rank that holds one at once (d_p = d
    from d sequences)."""
    dtype = "fp8" if model_name == "deepseek-v3" else "bf16"
    r = derive.predict(
        model_name,
        gpu_name,
        tp=layout.tp,
        ep=layout.ep,
        pp=layout.pp,
        dp=layout.dp,
        batch=BATCH,
        dtype=dtype,
        prompt=PROMPT,
        output=OUTPUT,
    ).results
    base = layout_inputs(load_model(model_name), [layout], system_for(load_gpu(gpu_name)))
    prompts = list(base)
    prompts[INPUTS.index(lay.d_p)] = np.array([float(min(BATCH, layout.dp))])
    per_rank = -(-BATCH // layout.dp)
    for floor, suffix in ((True, "_floor"), (False, "")):
        compiled = _compiled(model_name, gpu_name, floor)
        for name, fn, inputs, batch in (
            ("tpot", compiled.step, base, BATCH),
            ("ttft", compiled.ttft, prompts, per_rank),
        ):
            planned = float(np.ravel(fn(*inputs, np.array([0.0]), float(batch)))[0])
            assert float(r[name + suffix].to("second").magnitude) == pytest.approx(planned, rel=1e-5), name + suffix
    assert float(r["sequences"].magnitude) == layout.pp * BATCH


def test_one_sequence_on_attention_data_parallel_ranks_prefills_alone():
    """One sequence on 8 attention ranks (DeepSeek-V3, dp8 ep4 on B200) holds a prompt on one rank: predict's TTFT is
    that prompt's pass alone (d_p = 1), the plan's `prompt_pass_s` for the layout, not eight prompts' at once."""
    layout = Layout(1, 4, 1, 8)
    r = derive.predict("deepseek-v3", "b200", tp=1, ep=4, dp=8, batch=1, prompt=PROMPT, output=OUTPUT).results
    alone = derive.predict("deepseek-v3", "b200", tp=1, ep=4, dp=8, batch=8, prompt=PROMPT, output=OUTPUT).results
    plan = derive.plan("deepseek-v3", "b200", prompt=PROMPT, output=OUTPUT, tpot="200 ms", max_gpus=8)
    (row,) = [row for row in plan.rows if row.layout == layout]
    assert float(r["ttft"].to("second").magnitude) == pytest.approx(row.prompt_pass, rel=1e-6)
    assert r["ttft"] < alone["ttft"]


@pytest.mark.parametrize(
    ("model_name", "gpu_name", "layout"), LAYOUTS[:3], ids=[f"{m}-{g}-{lt}" for m, g, lt in LAYOUTS[:3]]
)
def test_eval_on_a_layout_is_predicts_step(model_name, gpu_name, layout):
    """`derive eval layout_tpot --ep --pp --dp` is predict's step on that layout; `eval tpot` there is refused, since
    tpot is the tensor-parallel step alone."""
    degrees = {"tp": layout.tp, "ep": layout.ep, "pp": layout.pp, "dp": layout.dp}
    r = derive.predict(model_name, gpu_name, batch=BATCH, prompt=PROMPT, output=OUTPUT, **degrees).results
    common = {"batch": BATCH, "context": MEAN_CONTEXT, **degrees}
    for name, plain in (("layout_tpot", "tpot"), ("layout_tpot_floor", "tpot_floor")):
        value = derive.evaluate(name, model_name, gpu_name, **common).results[name]
        assert float(value.to("second").magnitude) == pytest.approx(float(r[plain].to("second").magnitude), rel=1e-6)
    with pytest.raises(derive.DeriveError, match="tensor parallelism alone"):
        derive.evaluate("tpot", model_name, gpu_name, **common)


@pytest.mark.parametrize(("model_name", "gpu_name", "layout"), LAYOUTS, ids=[f"{m}-{g}-{lt}" for m, g, lt in LAYOUTS])
def test_fit_on_a_layout_is_the_plans_memory_ceiling(model_name, gpu_name, layout):
    """`derive fit --ep --pp --dp` holds what the plan's search holds: each accelerator's weights and its share of a
    micro-batch's cache at the end of the reply (prompt plus output tokens)."""
    dtype = "fp8" if model_name == "deepseek-v3" else "bf16"
    degrees = {"tp": layout.tp, "ep": layout.ep, "pp": layout.pp, "dp": layout.dp}
    r = derive.fit(model_name, gpu_name, context=PROMPT + OUTPUT, dtype=dtype, **degrees).results
    compiled, gpu = _compiled(model_name, gpu_name, True), load_gpu(gpu_name)
    base = [*layout_inputs(load_model(model_name), [layout], system_for(gpu)), np.array([0.0])]
    weights, per_sequence = (
        float(np.ravel(fn(*base, b))[0]) for fn, b in ((compiled.weights, 0.0), (compiled.held, 1.0))
    )
    assert float(r["weight_bytes_per_accelerator"].to("byte").magnitude) == pytest.approx(weights, rel=1e-9)
    assert r["max_micro_batch"].magnitude == int((float(gpu.memory) - weights) // per_sequence)
    assert r["max_sequences"].magnitude == layout.pp * r["max_micro_batch"].magnitude


def _on(layout: Layout) -> dict[str, int]:
    return {"tp": layout.tp, "ep": layout.ep, "pp": layout.pp, "dp": layout.dp}


def _planned_floor(model_name: str, gpu_name: str, layout: Layout, batch: float) -> float:
    base = layout_inputs(load_model(model_name), [layout], system_for(load_gpu(gpu_name)))
    return float(np.ravel(_compiled(model_name, gpu_name, True).step(*base, np.array([0.0]), float(batch)))[0])


@pytest.mark.parametrize(("model_name", "gpu_name", "layout"), LAYOUTS, ids=[f"{m}-{g}-{lt}" for m, g, lt in LAYOUTS])
def test_knee_energy_and_utilisation_on_a_layout_are_the_plans_step(model_name, gpu_name, layout):
    """knee, energy and utilisation take --ep --pp --dp: their step at a micro-batch is the plan's floor there, their
    memory ceiling fit's, and their throughput the layout's p micro-batches over that step."""
    dtype = "fp8" if model_name == "deepseek-v3" else "bf16"
    common = {"context": MEAN_CONTEXT, "dtype": dtype, **_on(layout)}
    knee = derive.knee(model_name, gpu_name, **common).results
    largest = knee["max_batch_by_memory"].magnitude
    assert largest == derive.fit(model_name, gpu_name, **common).results["max_micro_batch"].magnitude
    step = _planned_floor(model_name, gpu_name, layout, largest)
    rate = float(knee["throughput_at_max_batch"].to("token/second").magnitude)
    assert rate == pytest.approx(layout.pp * largest / step, rel=1e-5)
    assert float(knee["throughput_ceiling"].to("token/second").magnitude) >= rate

    joules = derive.energy(model_name, gpu_name, batch=BATCH, **common).results["joules_per_token"]
    power = float(load_gpu(gpu_name).power)
    expected = power * layout.accelerators * _planned_floor(model_name, gpu_name, layout, BATCH) / (layout.pp * BATCH)
    assert float(joules.to("joule/token").magnitude) == pytest.approx(expected, rel=1e-5)

    floor = derive.utilisation(model_name, gpu_name, batch=BATCH, **common).results["roofline_step_time"]
    assert float(floor.to("second").magnitude) == pytest.approx(
        _planned_floor(model_name, gpu_name, layout, BATCH), rel=1e-5
    )


@pytest.mark.parametrize(
    ("model_name", "gpu_name", "layout"), LAYOUTS[:3], ids=[f"{m}-{g}-{lt}" for m, g, lt in LAYOUTS[:3]]
)
def test_claim_and_compare_on_a_layout_read_its_step(model_name, gpu_name, layout):
    """claim's bandwidth floor on a layout is one user on each attention rank through the p stages' reads
    (formulas/layout.py's t_mg); compare sets two accelerators' knees on the same layout side by side."""
    common = {"context": MEAN_CONTEXT, **_on(layout)}
    claimed = derive.claim(model_name, gpu_name, claim="100 token/s", **common).results
    reads = derive.evaluate("layout_memory_time", model_name, gpu_name, batch=layout.dp, **common)
    per_slot = float(reads.results["layout_memory_time"].to("second").magnitude)
    floor = float(claimed["floor_tokens_per_s_per_user"].to("token/second/sequence").magnitude)
    assert floor == pytest.approx(1 / (layout.pp * per_slot), rel=1e-9)
    compared = derive.compare(model_name, gpu_name, vs="b200", **common).results
    ceilings = [
        derive.knee(model_name, g, **common).results["max_batch_by_memory"].magnitude for g in (gpu_name, "b200")
    ]
    assert float(compared["capacity_ratio"]) == pytest.approx(ceilings[1] / ceilings[0])
