"""Seed 000, question 2: showing on a machine that decode is bandwidth-bound and prefill compute-bound."""

from __future__ import annotations

import sympy

from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.sheet import Prose, Quantity, Section, Sheet
from formulas import notation as sym
from reports.questions.shared import (
    ceilings_section,
    decode_step,
    described,
    measured_figure,
    measurement,
    placement,
    prefill_pass,
    roofline_figure,
)


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup(batch=1)
    step = decode_step(setup, inputs, f"A batch-1 decode step of {setup.model.title} in {setup.dtype}")
    prompt_pass = prefill_pass(setup, inputs)
    prefill_point = placement(setup, inputs, setup.prompt, f"Prefill of {setup.prompt:,} tokens on the roofline")
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    r, p = step.results, prompt_pass.results
    assert setup.gpu is not None
    q = {
        "bandwidth": Quantity(step.values[sym.BW], "byte/second"),
        "peak": Quantity(step.values[sym.P], "FLOP/second"),
        "step_bytes": answer.headline("decode_step_bytes", r["step_bytes"].value, "byte"),
        "decode_time": answer.headline("decode_step_time", r["memory_time"].value, "second"),
        "decode_i": answer.headline("decode_intensity", r["gemm_intensity"].value, "FLOP/byte"),
        "decode_i_n": Quantity(r["gemm_intensity"].value),
        "ridge": answer.headline("ridge_intensity", r["ridge_intensity"].value, "FLOP/byte"),
        "prefill_i": answer.headline("prefill_intensity", prefill_point.results["gemm_intensity"].value, "FLOP/byte"),
        "prefill_mem": answer.headline("prefill_memory_time", p["prefill_memory_time"].value, "second"),
        "prefill_comp": answer.headline("prefill_compute_time", p["prefill_compute_time"].value, "second"),
        "prompt": Quantity(setup.prompt, "token"),
        "gpu": Quantity(setup.gpu.name),
    }
    answer.summary = Prose(
        "summary",
        "Measure the machine's two ceilings, a large memory copy (bytes per second) and a large matrix multiply "
        "(FLOP/s), then time each phase and place it on the roofline. Here the datasheet ceilings of the {gpu} "
        "({bandwidth}, {peak}) stand in: a batch-1 decode step must move {step_bytes}, at least {decode_time}, at "
        "{decode_i_n} FLOPs per byte, far left of the ridge at {ridge}; a prefill of {prompt} sits at {prefill_i}, "
        + (
            "right of it, where its FLOPs ({prefill_comp}) outlast its reads ({prefill_mem})."
            if p["prefill_compute_time"].number > p["prefill_memory_time"].number
            else "yet its reads ({prefill_mem}) still outlast its FLOPs ({prefill_comp}): a longer prompt is needed."
        ),
        q,
    )
    answer.sections += [
        Section(
            "The two ceilings and the decode step",
            step,
            intro=(
                Prose(
                    "text",
                    "The copy ceiling is the bandwidth BW, the matmul ceiling the peak P; their ratio "
                    "is the ridge. Measured on the machine (a large memcpy, a large GEMM: "
                    "`derive measure`), they replace the datasheet figures, as in the last section; "
                    "here the datasheet's stand in.",
                ),
            ),
            outro=(
                Prose(
                    "text",
                    "To show decode is bandwidth-bound: time a decode step, divide {step_bytes} by "
                    "it, and compare the achieved bytes per second with the copy ceiling; it should "
                    "be a large fraction of it, while the FLOP/s achieved is a tiny fraction of P.",
                    q,
                ),
            ),
        ),
        Section(
            "The prefill pass",
            prompt_pass,
            intro=(
                Prose(
                    "text",
                    "To show prefill is compute-bound: time the prompt pass and divide its FLOPs by "
                    "the time; it should approach the matmul ceiling, while its bytes per second "
                    "stay well below the copy ceiling.",
                ),
            ),
        ),
        Section("Prefill on the roofline", prefill_point),
    ]
    recorded = measurement(inputs.get("measure") or False)
    answer.sections.append(ceilings_section(setup, recorded))
    decode_measured = recorded["phases"][0]
    prefill_measured = recorded["phases"][-1]
    answer.headline("measured_copy_bandwidth", recorded["ceilings"][0]["value"], "byte/second")
    answer.headline("measured_matmul_flops", recorded["ceilings"][1]["value"], "FLOP/second")
    answer.headline("measured_decode_bandwidth_fraction", decode_measured["bandwidth_fraction"])
    answer.headline("measured_prefill_flops_fraction", prefill_measured["flops_fraction"])
    answer.figures.append(measured_figure(recorded))
    answer.summary = Prose(
        "summary",
        answer.summary.text + " Measured here ({machine}), a batch-1 decode step ran "
        "at {decode_fraction} % of the copy ceiling and a {prompt} prefill at {prefill_fraction} % "
        "of the matmul ceiling"
        + (
            ": the numbers themselves put each on its side of the ridge."
            if max(decode_measured["bandwidth_fraction"], prefill_measured["flops_fraction"]) <= 1
            else ", past a ceiling, which cannot be: that ceiling's run was too small or too noisy to be the "
            "machine's, and a full 'derive measure' settles it."
        ),
        {
            **answer.summary.quantities,
            "machine": Quantity(described(recorded)),
            "decode_fraction": Quantity(sympy.Float(decode_measured["bandwidth_fraction"] * 100, 3)),
            "prefill_fraction": Quantity(sympy.Float(prefill_measured["flops_fraction"] * 100, 3)),
        },
    )
    answer.figures.append(
        roofline_figure(
            setup,
            [("decode, batch 1", step), (f"prefill, {setup.prompt:,} tokens", prefill_point)],
            "The roofline from the two ceilings, with a batch-1 decode step and the prefill pass placed at their "
            "intensities.",
        )
    )
    # The seed's own figures (seed 000, question 1): on its test laptop's CPU, decode reached 46 % of the copy
    # ceiling and a 960-token prefill 51 % of the matmul ceiling.
    seed = {"decode": sympy.Rational(46, 100), "prefill": sympy.Rational(51, 100)}
    ours = {"decode": decode_measured["bandwidth_fraction"], "prefill": prefill_measured["flops_fraction"]}
    answer.caveats += [
        Prose(
            "caveat",
            "The seed's laptop measured decode at {seed_decode} % of its copy ceiling and prefill at {seed_prefill} % "
            "of its matmul ceiling; this machine's run gives {ours_decode} % and {ours_prefill} %. The fractions are "
            "the machine's and the kernels', not the method's: both runs put decode far left of the ridge and "
            "prefill right of it.",
            {
                "seed_decode": Quantity(seed["decode"] * 100),
                "seed_prefill": Quantity(seed["prefill"] * 100),
                "ours_decode": Quantity(sympy.Float(ours["decode"] * 100, 3)),
                "ours_prefill": Quantity(sympy.Float(ours["prefill"] * 100, 3)),
            },
        ),
    ]
    answer.takeaways += [
        Prose(
            "takeaway",
            "For decode, more bandwidth or fewer bytes helps; more FLOP/s does not. For prefill, the reverse.",
        ),
        Prose(
            "takeaway",
            "A measured point below its roof says how much is lost to overheads, not which roof "
            "binds: the side of the ridge decides that.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Datasheet ceilings are upper bounds: a copy benchmark typically reaches less than the "
            "datasheet bandwidth, and a GEMM less than peak, so measured ceilings move the ridge.",
        ),
        Prose(
            "caveat",
            "Short prompts sit near the ridge: with few tokens prefill reads about as long as it "
            "computes, and launch overheads can hide both.",
        ),
    ]
    _wrong_answers(answer, step, q, prefill_measured["flops_fraction"])
    _follow_up(answer, inputs, q)
    return answer


def _wrong_answers(answer: Answer, step: Sheet, q: dict[str, Quantity], prefill_fraction: float) -> None:
    """The demonstration as candidates commonly get it wrong, each figure from the same sheets."""
    r = step.results
    t_mem, t_comp = r["memory_time"].number, r["compute_time"].number
    q["prefill_fraction"] = Quantity(sympy.Float(prefill_fraction * 100, 3))
    q["mac_fraction"] = Quantity(q["prefill_fraction"].number / 2)
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Counting one FLOP per multiply-accumulate (N a token, not 2N): the measured prefill then reaches only "
            "{mac_fraction} % of the matmul ceiling, not {prefill_fraction} %, and looks further from its roof "
            "than it is.",
            q,
        )
    )
    if t_comp < t_mem:
        q["flops_share"] = Quantity(t_comp / t_mem * 100)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Pointing at GPU utilisation: a decode step keeps the GPU busy, yet even at its floor it does only "
                "{flops_share} % of peak FLOP/s. Utilisation counts time a kernel runs, not which roof it meets.",
                q,
            )
        )


def _follow_up(answer: Answer, inputs: Inputs, q: dict[str, Quantity]) -> None:
    """The same two phases with the model in bf16, on the tensor cores' roof."""
    if inputs.get("dtype") == "bf16" or inputs.get("flops"):
        return
    try:
        setup = inputs.setup(batch=1, dtype="bf16", kv_dtype="bf16")
        bf16 = decode_step(setup, inputs, "A batch-1 decode step in bf16")
        point = placement(setup, inputs, setup.prompt, "Prefill in bf16")
    except DeriveError:
        return
    ridge = bf16.results["ridge_intensity"].number
    if bf16.results["gemm_intensity"].number >= ridge:
        return
    q["bf16_ridge"] = Quantity(ridge, "FLOP/byte")
    q["bf16_time"] = Quantity(bf16.results["memory_time"].value, "second")
    q["bf16_prefill"] = Quantity(point.results["gemm_intensity"].value, "FLOP/byte")
    side = "is right of it" if q["bf16_prefill"].number > ridge else "is left of it: use a longer prompt"
    answer.follow_up = FollowUp(
        "And with the model in bf16?",
        Prose(
            "follow-up",
            (
                "The ridge moves from {ridge} to {bf16_ridge}"
                if ridge != q["ridge"].number
                else "The ridge stays at {ridge} (the matmuls already ran at the bf16 peak)"
            )
            + " and a batch-1 decode step's floor from {decode_time} to {bf16_time}: decode stays left of it, and a "
            "prefill of {prompt}, at {bf16_prefill}, " + side + ".",
            q,
        ),
    )


QUESTION = Question(
    id="roofline-decode-prefill",
    title="How would you show, on a given machine, that decode is bandwidth-bound and prefill compute-bound?",
    source="Seed 000, question 2",
    level="Mid-level",
    kind="measurement",
    defaults={
        "model": "gpt2",
        "gpu": "h100",
        "dtype": "fp32",
        "kv_dtype": "fp32",
        "context": 128,
        "prompt": 960,
        "measure": False,
    },
    changeable=("model", "gpu", "dtype", "kv_dtype", "context", "prompt", "flops", "measure"),
    build=build,
)
