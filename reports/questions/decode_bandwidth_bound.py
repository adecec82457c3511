"""Seed 000, question 1: compute-bound against bandwidth-bound work, and why decode is bandwidth-bound.

Also the shared pieces of the roofline answers (questions 1, 2 and 10): reading an assumption
input, the peak FLOP/s for the weight dtype, a decode-step sheet and a sheet placing one pass of
the weights (T tokens through them) on the roofline.
"""

from __future__ import annotations

from dataclasses import replace

import sympy

from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.core.sheet import Prose, Quantity, Section, Sheet
from derive.derivations import knee
from derive.derivations.common import Setup, model_library
from formulas import notation as sym
from reports.questions.shared import decode_step, placement, roofline_figure


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
        "peak": Quantity(setup.peak()[0], "FLOP/second"),
        "dtype": Quantity(setup.dtype),
    }
    # Which peak sets the ridge: fp32 matmuls run on the CUDA cores, far below the tensor cores' bf16 figure.
    peak_note = " (its {dtype} peak, {peak}" + (
        ", on the CUDA cores: fp32 matmuls skip the tensor cores)" if setup.dtype == "fp32" else ")"
    )
    answer.summary = Prose(
        "summary",
        "Compute-bound work is limited by arithmetic, bandwidth-bound work by how fast bytes arrive from memory; "
        "arithmetic intensity (FLOPs per byte read) against the accelerator's ridge decides which. Decode is "
        "bandwidth-bound: each step reads every weight ({weights} for this model) to make one token per sequence, "
        "so at batch 1 the weight matmuls do {intensity_n} FLOPs per byte, far below the {gpu} "
        "ridge of {ridge}" + peak_note + ". Batching "
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
