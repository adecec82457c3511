"""Seed 004, question 9: a decode step at 60% of the bandwidth floor, and where the rest of the time goes."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.core.evaluation import evaluate
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.derivations.common import Setup, model_library, start
from formulas import calibrated as cal
from formulas import fusion as fu
from formulas import notation as sym
from formulas import prefill as pf
from formulas import step_budget as sb
from formulas import utilisation as u
from reports.questions.shared import LAUNCH_ASSUMPTIONS, buckets, draw_budget, step_floor

BUCKETS = (
    ("bandwidth floor", sym.t_step),
    ("TP all-reduces", cal.t_ar),
    ("kernel launch gaps", sb.t_launch),
    ("bandwidth below peak", sb.t_bwl),
    ("host: sampling, scheduling", sb.t_host),
    ("unattributed", sb.t_rest),
)


def budget_sheet(setup: Setup, inputs: Mapping[str, Any]) -> Sheet:
    work = start("budget", f"Budget of a {setup.model.title} decode step at the reported MBU", setup)
    step_floor(work, setup)
    work.heading("The measured step")
    work.given(sb.U_rep, assumed(inputs, "reported_mbu"), "reported (--set reported_mbu=...)")
    t_obs = work.compute(sb.step_time_at_reported_mbu, "measured_step_time")
    work.given(u.t_meas, t_obs, "the step at the reported MBU", inline=True)
    buckets(work, setup, inputs)
    return work.sheet


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    sheet = budget_sheet(setup, inputs)
    v = sheet.values
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    floor = answer.headline("floor_step_time", v[sym.t_step], "second")
    measured = answer.headline("measured_step_time", v[u.t_meas], "second")
    missing = answer.headline("missing_time", v[u.t_meas] - v[sym.t_step], "second")
    names = ("allreduce_time", "launch_gap_time", "bandwidth_shortfall_time", "host_time", "unattributed_time")
    q = {name: answer.headline(name, v[s], "second") for name, (_, s) in zip(names, BUCKETS[1:], strict=False)}
    q.update(
        floor=floor,
        measured=measured,
        missing=missing,
        mbu=Quantity(v[sb.U_rep] * 100),
        bytes=Quantity(v[u.D_gpu], "byte"),
        n=Quantity(v[sym.n]),
        batch=Quantity(v[sym.B], "sequence"),
        context=Quantity(v[sym.S], "token/sequence"),
        kernels=Quantity(v[sb.k_l]),
        launch=Quantity(v[fu.t_l], "second"),
        eta=Quantity(v[pf.eta_bw]),
    )
    answer.summary = Prose(
        "summary",
        "Rebuild the floor from bytes: "
        + ("the one accelerator reads" if v[sym.n] == 1 else "each of the {n} accelerators reads")
        + " {bytes} a step, {floor} at peak bandwidth, "
        "so an MBU of {mbu} % means a step of {measured} and {missing} to account for. At {batch} of {context}, "
        "with {kernels} kernels a layer launched eagerly at {launch} each and kernels streaming at {eta} of peak, "
        "it splits into {allreduce_time} of all-reduces, {launch_gap_time} of kernel launches (gaps between kernels, "
        "and the CPU's excess where it is the longer path), "
        "{bandwidth_shortfall_time} of kernels reading below peak and {host_time} of host work, leaving "
        "{unattributed_time} unattributed. Each bucket is a line in one profiler trace, and each has an owner.",
        q,
    )
    answer.sections.append(
        Section(
            "The floor, the measured step and its buckets",
            sheet,
            intro=(
                Prose(
                    "text",
                    "Every bucket below is a formula of one assumption (marked 'assumed'), which "
                    "--set changes; the unattributed remainder is what the assumptions do not explain.",
                ),
            ),
        )
    )
    title = f"{setup.model.title}, {sheet.inputs['tp']} x {setup.gpu.name}, batch {setup.batch}"
    answer.figures.append(
        Figure(
            "budget",
            "The measured decode step split into the bandwidth floor and the buckets beyond it (milliseconds).",
            partial(draw_budget, sheet, BUCKETS, title),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Owners: the all-reduces ({allreduce_time}) belong to the parallelism plan (a fused or "
            "custom all-reduce, a smaller TP degree); the launch gaps ({launch_gap_time}) to the "
            "runtime (CUDA graphs, fused kernels); the bandwidth shortfall ({bandwidth_shortfall_time}) "
            "to the kernel authors; the host time ({host_time}) to the serving loop (overlap sampling "
            "and scheduling with the next step).",
            q,
        ),
        Prose(
            "takeaway",
            "How to confirm: one Nsight Systems trace of a steady decode step shows the gaps between "
            "kernels and between steps directly, NCCL kernels by name, and each GEMV's duration "
            "against its bytes; the floor itself comes from bytes, not from the trace.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "The buckets are additive only if nothing overlaps: a runtime that overlaps the all-reduce "
            "with the next GEMM, or the host work with the GPU, hides part of a bucket.",
        ),
        Prose(
            "caveat",
            "The assumptions (kernel gap, kernels per layer, all-reduce latency, achieved bandwidth, "
            "host time) are typical figures, not measurements of this server: the unattributed "
            "remainder ({unattributed_time}) is only as good as they are.",
            q,
        ),
    ]
    _wrong_answers(answer, setup, sheet, q)
    _follow_up(answer, sheet, q)
    return answer


def _wrong_answers(answer: Answer, setup: Setup, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """The budget as candidates commonly get it wrong, each figure from the same sheet."""
    v = sheet.values
    mbu, floor = v[sb.U_rep], v[sym.t_step]
    if mbu < 1:
        q["over"] = Quantity((1 - mbu) * 100)
        q["short_missing"] = Quantity((1 - mbu) * floor, "second")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Reading {mbu} % as a step {over} % over the floor: that leaves {short_missing} to find, not "
                "{missing}. The step is the floor divided by the MBU, {measured}.",
                q,
            )
        )
    library = model_library(setup.model)
    if v[sym.kv_total] > 0 and v[u.t_meas] > floor:  # a gap to account for, and a cache in the floor
        no_kv = evaluate(library.get("memory_time").expr, {**v, sym.kv_total: 0}, library)
        q["nokv_floor"] = Quantity(no_kv, "second")
        q["nokv_missing"] = Quantity(v[u.t_meas] - no_kv, "second")
        q["kv_gpu"] = Quantity(v[sym.kv_total] / v[sym.n], "byte")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Leaving the cache out of the floor: {nokv_floor}, so {nokv_missing} looks like overhead instead of "
                "{missing}. The {kv_gpu} of cache "
                + ("each accelerator holds" if v[sym.n] > 1 else "the accelerator holds")
                + " streams every step like the weights.",
                q,
            )
        )
    if v[sym.n] > 1 and v[cal.alpha_ar] > 0:
        q["ar_bytes"] = Quantity(evaluate(cal.decode_allreduce_time.expr, {**v, cal.alpha_ar: 0}, library), "second")
        q["ar_count"] = Quantity(v[sym.L] * v[cal.m_ar])
        q["alpha"] = Quantity(v[cal.alpha_ar], "second")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Sizing the all-reduces by their bytes over the link: {ar_bytes} a step, against {allreduce_time}. A "
                "decode step's activations are tiny, so each of the {ar_count} all-reduces costs its {alpha} latency.",
                q,
            )
        )
    if v[sym.n] > 1:
        q["one_floor"] = Quantity(v[sym.n] * floor, "second")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Dividing "
                + ("both" if v[sym.n] == 2 else "all {n}")
                + " accelerators' bytes by one's bandwidth: a floor of {one_floor}, "
                + ("longer than the measured step itself" if v[sym.n] * floor > v[u.t_meas] else "{n} times too long")
                + ". Each reads only its own shard, {bytes}.",
                q,
            )
        )
    del answer.wrong_answers[3:]  # the page holds three


def _follow_up(answer: Answer, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """CUDA graphs: the same measured step less the CPU's excess over the GPU (not the GPU's own gaps)."""
    v = sheet.values
    excess, measured = v[sb.t_cpux], v[u.t_meas]
    q["gaps"] = Quantity(v[sym.L] * v[sb.k_l] * v[sb.t_k], "second")
    q["cpu"] = Quantity(v[sb.t_cpu], "second")
    if not excess < measured - v[sym.t_step]:
        return
    if excess <= 0:
        text = (
            "Little: the GPU's kernels outlast the CPU's {cpu} of launching, so the launches are off the critical "
            "path, and a graph keeps the {gaps} of gaps between kernels; only fused kernels shorten those."
        )
    else:
        q["graph_step"] = Quantity(measured - excess, "second")
        q["graph_mbu"] = Quantity(v[sym.t_step] / (measured - excess) * 100)
        text = (
            "A graph removes the CPU's excess over the GPU, the step falls to {graph_step} and the MBU rises to "
            "{graph_mbu} %; the {gaps} of GPU gaps between kernels, "
            + ("the all-reduces and the host time stay." if v[sym.n] > 1 else "and the host time stay.")
        )
    answer.follow_up = FollowUp("What would CUDA graphs buy?", Prose("follow-up", text, q))


QUESTION = Question(
    id="mbu-budget",
    title="Your decode step runs at 60% of the bandwidth floor. Where does the rest of the time go? "
    "Build me the budget.",
    source="Seed 004, question 9",
    level="Senior",
    kind="diagnosis",
    defaults={
        "model": "llama3-70b",
        "gpu": "h100",
        "dtype": "bf16",
        "tp": 4,
        "batch": 8,
        "context": 2048,
        "reported_mbu": "0.6",
        "allreduce_latency": "10 us",
        **LAUNCH_ASSUMPTIONS,
        "achieved_bandwidth": "0.85",
        "host_time": "1 ms",
    },
    changeable=(
        "model",
        "gpu",
        "dtype",
        "kv_dtype",
        "tp",
        "batch",
        "context",
        "reported_mbu",
        "allreduce_latency",
        "kernels_per_layer",
        "launch_overhead",
        "kernel_gap",
        "achieved_bandwidth",
        "host_time",
    ),
    build=build,
)
