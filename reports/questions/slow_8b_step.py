"""Seed 004, question 13: an 8B model at batch 1 should take its floor but takes 12 ms; the three likeliest causes."""

from __future__ import annotations

from functools import partial

import sympy

from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.derivations.common import Setup, start
from formulas import calibrated as cal
from formulas import fusion as fu
from formulas import notation as sym
from formulas import prefill as pf
from formulas import step_budget as sb
from formulas import utilisation as u
from reports.questions.shared import EAGER_PYTORCH_ASSUMPTIONS, buckets, draw_budget, step_floor

# Sorted by what one profiler trace shows first: idle gaps between kernels, then idle time between
# steps, then kernels that run but read slower than peak.
ROWS = (
    ("bandwidth floor", sym.t_step),
    ("1. kernel launches (gaps, CPU excess)", sb.t_launch),
    ("2. host work between steps", sb.t_host),
    ("3. bandwidth below peak", sb.t_bwl),
    ("unattributed", sb.t_rest),
)


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    work = start("slow step", f"Why a {setup.model.title} decode step at batch {setup.batch} is slow", setup)
    step_floor(work, setup)
    work.heading("The measured step")
    work.given(
        u.t_meas,
        assumed(inputs, "measured_step_time", "second"),
        "measured (--set measured_step_time=...)",
        inline=True,
    )
    work.compute(u.mbu, "mbu")
    buckets(work, setup, inputs, allreduce=work.values[sym.n] > 1)
    sheet = work.sheet
    v = sheet.values
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    q = {
        "floor": answer.headline("floor_step_time", v[sym.t_step], "second"),
        "measured": answer.headline("measured_step_time", v[u.t_meas], "second"),
        "ratio": answer.headline("slowdown", v[u.t_meas] / v[sym.t_step]),
        "launch": answer.headline("launch_gap_time", v[sb.t_launch], "second"),
        "host": answer.headline("host_time", v[sb.t_host], "second"),
        "bw": answer.headline("bandwidth_shortfall_time", v[sb.t_bwl], "second"),
        "rest": answer.headline("unattributed_time", v[sb.t_rest], "second"),
        "allreduce": answer.headline("allreduce_time", v[cal.t_ar], "second"),
        "bytes": answer.headline("step_bytes_per_gpu", v[u.D_gpu], "byte"),
        "kernels": answer.headline("kernels_per_step", v[sym.L] * v[sb.k_l]),
        "gap": answer.headline("kernel_gap", v[sb.t_k], "second"),
        "cpu": answer.headline("cpu_launch_time", v[sb.t_cpu], "second"),
        "gpu_work": Quantity(v[sb.t_gk], "second"),
        "gaps": Quantity(v[sym.L] * v[sb.k_l] * v[sb.t_k], "second"),
        "cpux": Quantity(v[sb.t_cpux], "second"),
        "eta": answer.headline("achieved_bandwidth", v[pf.eta_bw]),
        "over": Quantity(-v[sb.t_rest], "second"),
        "per_layer": Quantity(v[sb.k_l]),
        "launch_each": Quantity(v[fu.t_l], "second"),
    }
    fp32_first = False
    if v[u.t_meas] < v[sym.t_step]:
        answer.summary = Prose(
            "summary",
            "The floor is the bytes over the bandwidth: {bytes} a step, {floor}. A measured {measured} is below it, "
            "which no server can do: the measurement is of another model, batch or layout, or the bytes are counted "
            "wrong. Pass the step time measured for this model (--set measured_step_time=...).",
            q,
        )
    else:
        # The likeliest cause first: a model loaded in fp32 (from_pretrained without a torch_dtype) reads every
        # weight and cached value at 4 bytes instead of its dtype's.
        widened = v[u.D_gpu] * 4 / v[sym.b_w] / v[sym.BW]
        # Only where an fp32 copy of the weights fits the accelerators at all (Nemotron-3 Nano's 30B would not).
        fp32_fits = sym.W in v and v[sym.W] * 4 / v[sym.b_w] <= v[sym.M] * v[sym.n]
        fp32_first = v[sym.b_w] < 4 and widened <= v[u.t_meas] and fp32_fits
        q["fp32_floor"] = answer.headline("fp32_floor_step_time", widened, "second")
        q["fp32_share"] = Quantity(widened / v[u.t_meas] * 100)
        q["widen"] = Quantity(4 / v[sym.b_w])
        # The same step in fp32, read at the same share of peak and with the same gaps between its kernels.
        fp32_step = widened / v[pf.eta_bw] + v[sym.L] * v[sb.k_l] * v[sb.t_k]
        q["fp32_step"] = Quantity(fp32_step, "second")
        alone = abs(fp32_step / v[u.t_meas] - 1) <= sympy.Rational(1, 10)
        first = (
            "Rule out the dtype first: the same step in fp32 (a model loaded without its dtype) reads {widen} times "
            "the bytes, a floor of {fp32_floor}, and at {eta} of peak bandwidth with the same {gaps} of gaps between "
            "kernels it takes {fp32_step}"
            + (", which alone accounts for the measured step. " if alone else " against the measured {measured}. ")
            if fp32_first
            else ""
        )
        stored = v[sym.W] / (v[sym.n] * v[sym.BW]) if sym.W in v else None
        quoted = ""
        if stored is not None and abs(stored / v[sym.t_step] - 1) > sympy.Rational(1, 100):
            # The usual back-of-envelope divides the stored weights; a step reads what it multiplies through.
            q["stored_time"], q["stored"] = Quantity(stored, "second"), Quantity(v[sym.W], "byte")
            quoted = " ({stored} of stored weights over the bandwidth is {stored_time}; a step reads what it uses)"
        answer.summary = Prose(
            "summary",
            "The floor is the bytes over the bandwidth: {bytes} a step, {floor}" + quoted + "; the measured "
            "{measured} is {ratio} times that, and a gap that size at batch 1 is almost never the GPU being slow. "
            + first
            + (
                "With the weights in their own dtype, the three causes, sorted by what one "
                if fp32_first
                else "Sorted by what one "
            )
            + "profiler trace shows: (1) launching: run op by op from Python ({per_layer} kernels a layer at "
            "{launch_each} each, assumed), the CPU spends {cpu} launching {kernels} kernels against "
            "the GPU's {gpu_work} of kernels and {gaps} of gaps between them, so launching adds {launch} (the gaps, "
            "and the CPU's excess where it is the longer path); "
            "(2) host work between steps (sampling, scheduling, Python), {host}; (3) kernels reading at {eta} of "
            "peak bandwidth, {bw}. "
            + (
                "That leaves {rest} unattributed."
                if v[sb.t_rest] >= 0
                else "Together they come to {over} more than the measured step: an assumption is too high for it."
            ),
            q,
        )
    _wrong_answers(answer, setup, sheet, q, fp32_first)
    _follow_up(answer, sheet, q)
    answer.sections.append(
        Section(
            "Floor, measured step and the three causes",
            sheet,
            intro=(
                Prose(
                    "text",
                    "Each cause is a formula of one assumption (marked 'assumed'; change it with --set), "
                    "so the milliseconds move with what the trace shows.",
                ),
            ),
        )
    )
    answer.figures.append(
        Figure(
            "budget",
            "The measured step split into the bandwidth floor and the three causes, in the order a trace "
            "shows them (milliseconds).",
            partial(draw_budget, sheet, ROWS, f"{setup.model.title}, 1 x {setup.gpu.name}, batch {setup.batch}"),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Cause 1 shows as white space between kernels on the GPU stream: an eager runtime issues "
            "each kernel from Python; CUDA graphs and fused kernels (one norm, one rotary, one gated "
            "MLP activation) remove most of the {launch}.",
            q,
        ),
        Prose(
            "takeaway",
            "Cause 2 shows as a gap between the last kernel of one step and the first of the next: "
            "sampling on the host, a device-to-host copy of the logits, the scheduler; overlapping it "
            "with the next step hides the {host}.",
            q,
        ),
        Prose(
            "takeaway",
            "Cause 3 needs the kernel durations: sum the GEMV times and divide the step's bytes by "
            "them; below peak by the assumed fraction costs {bw}. Check the dtype first: weights "
            "loaded in fp32 double the floor itself.",
            q,
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "The three sizes rest on assumptions (kernels per layer, gap per kernel, host time, achieved "
            "bandwidth) typical of an eager PyTorch server, not on this trace; "
            + (
                "the unattributed {rest} is what they miss or overcount."
                if v[sb.t_rest] >= 0
                else "here they overcount by {over}."
            ),
            q,
        ),
        Prose(
            "caveat",
            "The floor assumes the weights in the stated dtype and one accelerator: a second GPU adds "
            "all-reduces ({allreduce} here), a quantised checkpoint lowers the floor.",
            q,
        ),
    ]
    return answer


def _wrong_answers(answer: Answer, setup: Setup, sheet: Sheet, q: dict[str, Quantity], fp32_first: bool) -> None:
    """The diagnosis as candidates commonly get it wrong, each computed from the same sheet."""
    v = sheet.values
    excess = v[u.t_meas] - v[sym.t_step]
    kernels = v[sym.L] * v[sb.k_l]
    q["excess"] = Quantity(excess, "second")
    if excess > 0 and kernels > 0:
        q["implied_gap"] = Quantity(excess / kernels, "second")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Blaming the whole {excess} above the floor on kernel launches: over {kernels} launches that is "
                "{implied_gap} of GPU time each; launches run ahead of the GPU, so they add only the {gaps} of gaps "
                "and what the CPU's {cpu} outlasts the GPU's work by; "
                + (
                    "check the dtype first, since weights loaded in fp32 alone put the floor at {fp32_floor}."
                    if fp32_first
                    else "a trace splits it between launch gaps, host work and slow kernels."
                ),
                q,
            )
        )
    if excess > 0:
        q["implied_eta"] = Quantity(v[sym.t_step] / v[u.t_meas])
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Blaming the GPU's bandwidth: for {measured} to be all memory time the kernels would read at "
                "{implied_eta} of peak, against the {eta} assumed for decode GEMVs; a trace shows whether the "
                "kernels or the gaps between them hold the time.",
                q,
            )
        )
    if v[sym.t_comp] < v[sym.t_step]:
        q["t_comp"] = Quantity(v[sym.t_comp], "second")
        q["under"] = Quantity(v[sym.t_step] / v[sym.t_comp])
        q["batch_n"] = Quantity(sympy.Integer(setup.batch), "sequence")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Sizing the step by its FLOPs at peak: {t_comp}, {under} times under the bandwidth floor; each "
                "weight read serves "
                + ("one sequence" if setup.batch == 1 else "only {batch_n}")
                + ", so bytes, not FLOPs, set the floor.",
                q,
            )
        )


def _follow_up(answer: Answer, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """CUDA graphs remove the CPU's excess over the GPU (formulas/step_budget.py's t_cpux), not the GPU's gaps."""
    v = sheet.values
    if not v[sb.t_cpux] < v[u.t_meas] - v[sym.t_step]:  # no step above its floor, or assumptions past the step
        return
    if v[sb.t_cpux] <= 0:
        text = (
            "Nothing here: the GPU's {gpu_work} of kernels and {gaps} of gaps outlast the CPU's {cpu} of launching, "
            "so the launches were never on the critical path, and a graph keeps the gaps."
        )
    else:
        after = v[u.t_meas] - v[sb.t_cpux]
        q["after"] = Quantity(after, "second")
        q["after_ratio"] = Quantity(after / v[sym.t_step])
        text = (
            "A graph launches the step once, removing the CPU's {cpux} excess: the step falls from {measured} to "
            "{after}, {after_ratio} times the floor; the {gaps} of GPU gaps, the host work ({host}) and the reads "
            "below peak ({bw}) remain."
        )
    answer.follow_up = FollowUp("What would CUDA graphs buy?", Prose("follow-up", text, q))


QUESTION = Question(
    id="slow-8b-step",
    title="An 8B model at batch 1 on an H100 should take 4.8 ms per step but takes 12 ms. "
    "Name the three likeliest causes, with numbers.",
    source="Seed 004, question 13",
    level="Senior",
    kind="diagnosis",
    defaults={
        "model": "llama3-8b",
        "gpu": "h100",
        "dtype": "bf16",
        "tp": 1,
        "batch": 1,
        "context": 2048,
        "measured_step_time": "12 ms",
        **EAGER_PYTORCH_ASSUMPTIONS,
        "achieved_bandwidth": "0.8",
        "host_time": "1 ms",
        "allreduce_latency": "10 us",
    },
    changeable=(
        "model",
        "gpu",
        "dtype",
        "kv_dtype",
        "tp",
        "batch",
        "context",
        "measured_step_time",
        "kernels_per_layer",
        "launch_overhead",
        "kernel_gap",
        "achieved_bandwidth",
        "host_time",
        "allreduce_latency",
    ),
    build=build,
)
