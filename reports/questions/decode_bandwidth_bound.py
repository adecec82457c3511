"""Seed 000, question 1: compute-bound against bandwidth-bound work, and why decode is bandwidth-bound.

Also the shared pieces of the roofline answers (questions 1, 2 and 10): reading an assumption
input, the peak FLOP/s for the weight dtype, a decode-step sheet and a sheet placing one pass of
the weights (T tokens through them) on the roofline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.catalog import dtype_bytes
from derive.derivations import knee
from derive.derivations.common import Setup, decode_inputs, model_library, start
from derive.errors import DeriveError
from derive.evaluation import evaluate
from derive.sheet import Figure, Prose, Quantity, Section, Sheet
from formulas import notation as sym


def peak(setup: Setup, inputs: Inputs) -> tuple[sympy.Expr, str]:
    """Peak FLOP/s: --set flops=..., the catalog figure for the dtype, else the bf16 tensor-core peak."""
    if inputs.get("flops"):
        return assumed(inputs, "flops", "FLOP/second"), "--set flops"
    assert setup.gpu is not None
    if setup.dtype in setup.gpu.flops:
        return setup.gpu.peak(setup.dtype)
    value, _ = setup.gpu.peak("bf16")
    return value, f"assumed: the bf16 tensor-core peak; the catalog has no {setup.dtype} figure"


def decode_step(setup: Setup, inputs: Inputs, title: str) -> Sheet:
    """One decode step at setup.batch on one accelerator: bytes, FLOPs, intensity, ridge and floor times."""
    work = start("decode step", title, setup)
    decode_inputs(work, setup)
    work.given(sym.B, setup.batch, "sequences in the step")
    work.given(sym.n, 1, "one accelerator")
    work.heading("Bytes and FLOPs of one step")
    work.compute(work.library.get("kv_bytes"), "kv_bytes")
    work.compute(work.library.get("step_bytes_per_gpu"), "step_bytes")
    work.compute(work.library.get("step_flops"), "step_flops")
    work.compute(work.library.get("gemm_intensity"), "gemm_intensity")
    work.heading("The accelerator's two roofs")
    assert setup.gpu is not None
    work.given(sym.BW, setup.gpu.bandwidth, "datasheet")
    value, note = peak(setup, inputs)
    work.given(sym.P, value, note)
    work.compute(work.library.get("ridge_intensity"), "ridge_intensity")
    work.compute(work.library.get("memory_time"), "memory_time")
    work.compute(work.library.get("compute_time"), "compute_time")
    work.compute(work.library.get("step_time"), "step_time")
    return work.sheet


def placement(setup: Setup, inputs: Inputs, tokens: int, title: str) -> Sheet:
    """`tokens` tokens through the weights in one pass: the weight GEMMs' intensity and attainable FLOP/s."""
    work = start("roofline point", title, setup)
    work.given(sym.b_w, dtype_bytes(setup.dtype), setup.dtype)
    work.given(sym.B, 1 if tokens > 1 else setup.batch, "sequences in the pass")
    work.given(sym.tau, tokens if tokens > 1 else 1, "tokens each sequence puts through the weights in the pass")
    work.compute(work.library.get("gemm_intensity"), "gemm_intensity")
    assert setup.gpu is not None
    work.given(sym.BW, setup.gpu.bandwidth, "datasheet")
    value, note = peak(setup, inputs)
    work.given(sym.P, value, note)
    work.compute(work.library.get("ridge_intensity"), "ridge_intensity")
    work.compute(work.library.get("attainable_flops"), "attainable_flops")
    return work.sheet


def draw_roofline(
    peak_value: sympy.Expr, bandwidth: sympy.Expr, points: list[tuple[str, sympy.Expr]], title: str, stem
) -> None:  # type: ignore[no-untyped-def]
    figures.roofline(stem, float(peak_value), float(bandwidth), [(label, float(i)) for label, i in points], title)


def roofline_figure(
    setup: Setup, sheets: list[tuple[str, Sheet]], caption: str, extra: Sequence[tuple[str, sympy.Expr]] = ()
) -> Figure:  # type: ignore[assignment]
    """The roofline of the first sheet's P and BW, with each sheet's weight GEMM (and any extra point) placed."""
    first = sheets[0][1]
    points = [(label, (s.results.get("gemm_intensity") or s.results["mlp_intensity"]).value) for label, s in sheets]
    points += list(extra)
    assert setup.gpu is not None
    title = f"{setup.model.title} ({setup.dtype}) on {setup.gpu.name}"
    return Figure("roofline", caption, partial(draw_roofline, first.values[sym.P], first.values[sym.BW], points, title))


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup(batch=1)
    step = decode_step(setup, inputs, f"A batch-1 decode step of {setup.model.title} in {setup.dtype}")
    batched = placement(
        setup.__class__(**{**setup.__dict__, "batch": inputs["batch"]}), inputs, 1, f"Decode at batch {inputs['batch']}"
    )
    prefill = placement(setup, inputs, inputs["prompt"], f"Prefill of a {inputs['prompt']:,}-token prompt")
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    r = step.results
    weights = answer.headline("weight_bytes", step.values[sym.W], "byte")
    step_bytes = answer.headline("step_bytes", r["step_bytes"].value, "byte")
    intensity = answer.headline("decode_intensity", r["gemm_intensity"].value, "FLOP/byte")
    ridge = answer.headline("ridge_intensity", r["ridge_intensity"].value, "FLOP/byte")
    floor = answer.headline("decode_step_time", r["step_time"].value, "second")
    batched_i = answer.headline("batched_intensity", batched.results["gemm_intensity"].value, "FLOP/byte")
    prefill_i = answer.headline("prefill_intensity", prefill.results["gemm_intensity"].value, "FLOP/byte")
    assert setup.gpu is not None
    q = {
        "weights": weights,
        "step_bytes": step_bytes,
        "intensity": intensity,
        "ridge": ridge,
        "floor": floor,
        "batched": batched_i,
        "prefill": prefill_i,
        "b": Quantity(inputs["batch"], "sequence"),
        "prompt": Quantity(inputs["prompt"], "token"),
        "gpu": Quantity(setup.gpu.name),
        "intensity_n": Quantity(r["gemm_intensity"].value),
    }
    answer.summary = Prose(
        "summary",
        "Compute-bound work is limited by arithmetic, bandwidth-bound work by how fast bytes arrive from memory; "
        "arithmetic intensity (FLOPs per byte read) against the accelerator's ridge decides which. Decode is "
        "bandwidth-bound: each step reads every weight ({weights} for this model) to make one token per sequence, "
        "so at batch 1 the weight matmuls do {intensity_n} FLOPs per byte, far below the {gpu} "
        "ridge of {ridge}. Batching "
        "({batched} at {b}) and prefill ({prefill} for {prompt}) reuse the same read.",
        q,
    )
    answer.sections += [
        Section(
            "One decode step: bytes, FLOPs and intensity",
            step,
            intro=(
                Prose(
                    "text",
                    "A decode step reads the weights and the sequence's KV cache once and does two "
                    "FLOPs (one multiply-accumulate) per weight for the one new token.",
                ),
            ),
            outro=(
                Prose(
                    "text",
                    "The step reads {step_bytes}; at the datasheet bandwidth that takes at least "
                    "{floor}, and the arithmetic would take far less.",
                    q,
                ),
            ),
        ),
        Section(
            f"Decode at batch {inputs['batch']}",
            batched,
            intro=(
                Prose(
                    "text",
                    "The same weight read now serves every sequence of the batch; only the KV caches grow with it.",
                ),
            ),
        ),
        Section(
            f"Prefill of {inputs['prompt']:,} tokens",
            prefill,
            intro=(
                Prose(
                    "text",
                    "Prefill pushes every prompt token through the weights in one pass, so one "
                    "read serves all of them.",
                ),
            ),
        ),
    ]
    answer.figures.append(
        roofline_figure(
            setup,
            [
                ("decode, batch 1", step),
                (f"decode, batch {inputs['batch']}", batched),
                (f"prefill, {inputs['prompt']:,} tokens", prefill),
            ],
            "Roofline of the accelerator with the weight matmuls of decode (batch 1 "
            "and batched) and of prefill placed at their intensities.",
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Operations per byte decides the limit: left of the ridge {ridge} the chip waits on "
            "memory, right of it on arithmetic.",
            q,
        ),
        Prose(
            "takeaway",
            "For decode, more bandwidth or fewer bytes (a smaller dtype, a shorter cache) helps; more FLOP/s does not.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Intensity here counts only the weight matmuls; attention's KV reads have their own "
            "intensity, which batching does not raise, and activations add bytes at long prompts.",
        ),
        Prose(
            "caveat",
            "Peak figures: real kernels reach a fraction of the datasheet bandwidth and FLOP/s, which "
            "moves both roofs down but not the conclusion.",
        ),
    ]
    _wrong_answers(answer, setup, step, q)
    _follow_up(answer, setup, step, q)
    return answer


def _wrong_answers(answer: Answer, setup: Setup, step: Sheet, q: dict[str, Quantity]) -> None:
    """Decode's limit as candidates commonly get it wrong, each figure from the same sheets."""
    r, v = step.results, step.values
    t_mem, t_comp = r["memory_time"].number, r["compute_time"].number
    if t_comp < t_mem:
        q["compute_time"] = Quantity(t_comp, "second")
        q["too_fast"] = Quantity(t_mem / t_comp)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Timing the step by its FLOPs at peak: {compute_time}, {too_fast} times too fast. Reading its "
                "{step_bytes} takes {floor}, and nothing makes the bytes arrive sooner.",
                q,
            )
        )
    if v[sym.b_w] != 1:
        q["per_byte"] = Quantity(r["gemm_intensity"].number * v[sym.b_w], "FLOP/byte")
        q["b_w"] = Quantity(v[sym.b_w], "byte/parameter")
        q["dtype"] = Quantity(setup.dtype)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Counting two FLOPs per byte instead of per weight: {per_byte} at batch 1, not {intensity}. Each "
                "{dtype} weight is {b_w}.",
                q,
            )
        )
    batch = q["b"].number
    if batch > 1 and q["batched"].number < q["ridge"].number:
        q["batch_n"] = Quantity(batch)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Calling the batch of {b} compute-bound because it does {batch_n} times the FLOPs: its weight "
                "matmuls reach only {batched}, still left of the ridge at {ridge}.",
                q,
            )
        )


def _follow_up(answer: Answer, setup: Setup, step: Sheet, q: dict[str, Quantity]) -> None:
    """The batch where decode turns compute-bound: the weight GEMMs' short form, then the whole step's knee on the
    same two roofs."""
    library = model_library(setup.model)
    v = step.values
    q["ridge_batch"] = Quantity(sympy.ceiling(evaluate(library.get("ridge_tokens").expr, v, library)), "sequence")
    assert setup.gpu is not None
    try:
        curve = knee(replace(setup, gpu=setup.gpu.with_overrides(flops=v[sym.P])))
    except DeriveError:
        return
    found = curve.results["knee_batch"].value
    q["context"] = Quantity(setup.context, "token/sequence")
    if found is not None:
        q["knee"] = Quantity(sympy.ceiling(found), "sequence")
    whole = (
        "the whole step never does at {context} of context: each sequence adds more time reading its KV than computing."
        if found is None
        else "the whole step turns at {knee}."
    )
    if setup.model.config.is_moe and (found is None or found >= q["ridge_batch"].number):
        text = (
            "Later than a dense model's {ridge_batch}, where 2B/b_w meets {ridge}: each expert sees only its routed "
            "tokens. With those, the KV reads and attention counted, " + whole
        )
    elif setup.model.config.is_moe:
        text = (
            "Not at a dense model's {ridge_batch}, where 2B/b_w meets {ridge}: with the experts a batch touches, the "
            "KV reads and attention counted, " + whole
        )
    else:
        text = (
            "Its weight matmuls reach the ridge at about {ridge_batch}, where 2B/b_w meets {ridge}; with the KV "
            "reads and attention counted, " + whole
        )
    answer.follow_up = FollowUp("At what batch would decode turn compute-bound?", Prose("follow-up", text, q))


QUESTION = Question(
    id="decode-bandwidth-bound",
    title="What's the difference between compute-bound and memory bandwidth-bound work, and which one is decode?",
    source="Seed 000, question 1",
    level="Junior",
    kind="explanation",
    defaults={
        "model": "gpt2",
        "gpu": "h100",
        "dtype": "fp32",
        "kv_dtype": "fp32",
        "context": 128,
        "batch": 8,
        "prompt": 960,
    },
    changeable=("model", "gpu", "dtype", "kv_dtype", "context", "batch", "prompt", "flops"),
    build=build,
)
