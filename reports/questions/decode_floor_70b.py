"""Seed 004, question 1: why batch-1 decode of a 70B model is bandwidth-bound, its floor on two H100s, and
the three things that keep a real server above it (KV reads, all-reduces, achieved bandwidth)."""

from functools import partial

import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.catalog import dtype_bytes
from derive.core.errors import DeriveError, FitError
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.core.units import format_quantity, to_base_factor
from derive.derivations.calibrated import allreduce_count
from derive.derivations.common import (
    Setup,
    accelerator,
    decode_inputs,
    held_per_accelerator,
    model_notes,
    parallelism,
    start,
)
from derive.derivations.sharding import activation_format
from formulas import calibrated as cal
from formulas import notation as sym
from formulas import prefill as pf
from formulas import sharding as sh
from formulas import step_budget as sb
from formulas.reads import W_read
from reports.questions.shared import tp_link


def _fraction(value: object, key: str) -> sympy.Rational:
    """A fraction of peak in (0, 1], through the shared validation."""
    from derive.core import validate

    return validate.number(value, key, f"--set {key}", low=0, high=1)


def _sheet(inputs: Inputs, **overrides: object):  # type: ignore[no-untyped-def]
    setup = inputs.setup(**overrides)
    model, gpu = setup.model, setup.gpu
    work = start("answer decode-floor-70b", f"Batch-1 decode floor of {model.title} on {gpu.title}", setup)
    decode_inputs(work, setup)
    accelerator(work, setup)
    n = parallelism(work, setup, gpu)
    work.given(sym.B, 1, "batch 1: one user")
    needed = held_per_accelerator(work.values, work.library, 1, setup.context)
    if needed > gpu.memory:
        raise FitError(
            f"{model.name} in {setup.dtype} with one {setup.context:,}-token sequence needs "
            f"{format_quantity(needed, 'byte')} of each of {n} x {gpu.name}, more than its "
            f"{format_quantity(gpu.memory, 'byte')}",
            "Use --set tp=... with more accelerators, or a smaller --set dtype=fp8",
        )

    work.heading("Why batch 1 is bandwidth-bound")
    work.compute(work.library.get("gemm_intensity"), "gemm_intensity")
    work.compute(work.library.get("ridge_intensity"), "ridge_intensity")

    work.heading("The floor")
    for eta, what in (
        (cal.eta_w, "a GEMM's, from two rows a rank: none at batch 1"),
        (cal.eta_w1, "the GEMV kernel's, at one row a rank"),
        (cal.eta_kv, "the attention kernel's"),
    ):
        work.given(eta, 1, f"a floor: peak bandwidth; {what}", inline=True)
    work.compute(work.library.get("one_row"))
    work.compute(work.library.get("weight_read_time"), "weight_read_time")
    work.compute(work.library.get("kv_bytes"))
    work.compute(work.library.get("kv_read_time"), "kv_read_time")
    work.compute(work.library.get("memory_time"))
    work.compute(work.library.get("compute_time"), "compute_time")
    work.compute(work.library.get("step_time"), "floor_step_time")

    work.heading("What keeps a real server above it")
    work.given(
        pf.eta_bw,
        _fraction(inputs["achieved_bandwidth"], "achieved_bandwidth"),
        "assumed: what tuned decode kernels reach of peak HBM bandwidth; --set achieved_bandwidth=...",
        inline=True,
    )
    work.compute(sb.bandwidth_shortfall_time, "bandwidth_shortfall_time")
    if n > 1:
        if gpu.link is None:
            raise DeriveError(
                f"{gpu.name} has no GPU-to-GPU link in its datasheet, so the all-reduce has no bandwidth",
                "Use --set tp=1 or another --gpu",
            )
        allreduce_count(work, inline=False)
        work.given(sh.b_a, dtype_bytes(activation_format(setup)), activation_format(setup))
        link, wire, _ = tp_link(setup, int(n))
        work.given(sh.BW_link, link, wire)
        latency = assumed(inputs, "allreduce_latency", "second")
        work.given(
            cal.alpha_ar,
            latency,
            f"assumed: small-message all-reduce latency ({wire}); --set allreduce_latency=...",
            inline=True,
        )
        work.given(cal.eta_link, 1, "the all-reduce moves its bytes at the link's full bandwidth", inline=True)
        work.given(cal.lambda_ar, 0, "assumed: the latency does not grow with the group", inline=True)
        work.given(cal.eps_ar, 0, "assumed: nor the time a byte", inline=True)
        work.compute(sh.ffn_io_values_per_token)
        work.compute(cal.decode_allreduce_time, "decode_allreduce_time")
    else:
        work.given(cal.t_ar, 0, "one accelerator: no all-reduce", inline=True)
        work.result("decode_allreduce_time", cal.t_ar, sympy.Integer(0))
    work.compute(work.library.get("decode_step_estimate"), "decode_step_estimate")
    work.compute(work.library.get("floor_share_of_step"), "floor_share_of_step")
    work.note(
        "the three additions are taken one after another, none overlapped: at batch 1 each all-reduce "
        "sits between two layers' matmuls"
    )
    work.note(
        "not counted: kernel launch gaps (CUDA graphs remove most), sampling, the scheduler and the "
        "host-to-device round trip per token"
    )
    model_notes(work, setup)
    return setup, work.sheet


def _draw(sheet, setup, stem):  # type: ignore[no-untyped-def]
    r = sheet.results
    labels = [
        "weights at peak bandwidth (the floor)",
        f"KV cache, {setup.context:,} tokens",
        "bandwidth below peak (assumed fraction)",
        "tensor-parallel all-reduces (assumed latency)",
    ]
    values = [
        r[name].value
        for name in ("weight_read_time", "kv_read_time", "bandwidth_shortfall_time", "decode_allreduce_time")
    ]
    figures.bars(
        stem,
        labels,
        [float(v) * 1e3 for v in values],
        "time per decode step (ms)",
        f"{setup.model.title}, batch 1, on {sheet.values[sym.n]} x {setup.gpu.name}",
    )


def build(inputs: Inputs) -> Answer:
    setup, sheet = _sheet(inputs)
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    r, v = sheet.results, sheet.values
    q = {
        "i_w": answer.headline("gemm_intensity", r["gemm_intensity"].value, "FLOP/byte"),
        "ridge": answer.headline("ridge_intensity", r["ridge_intensity"].value, "FLOP/byte"),
        "t_w": answer.headline("weight_read_time", r["weight_read_time"].value, "second"),
        "t_k": answer.headline("kv_read_time", r["kv_read_time"].value, "second"),
        "floor": answer.headline("floor_step_time", r["floor_step_time"].value, "second"),
        "t_eta": answer.headline("bandwidth_shortfall_time", r["bandwidth_shortfall_time"].value, "second"),
        "t_ar": answer.headline("decode_allreduce_time", r["decode_allreduce_time"].value, "second"),
        "t_est": answer.headline("decode_step_estimate", r["decode_step_estimate"].value, "second"),
        "share": answer.headline("floor_share_of_step", r["floor_share_of_step"].value, ""),
        "weights": Quantity(v[sym.W], "byte"),
        "n": Quantity(v[sym.n], ""),
        "bw": Quantity(v[sym.BW], "byte/second"),
        "context": Quantity(v[sym.S], "token"),
        "eta": Quantity(v[pf.eta_bw], ""),
        "gpu": Quantity(setup.gpu.title),
        "gpu_name": Quantity(setup.gpu.name),
        "layers": Quantity(v[sym.L], ""),
        "t_comp": Quantity(r["compute_time"].value, "second"),
    }
    arch = setup.model.config
    q["read"] = Quantity(v[W_read], "byte")
    # A MoE token reads only its routed experts; the all-reduces exist only when the weights are split.
    which = "every weight a token routes through" if arch.is_moe else "every weight"
    reads = (
        "Reading the {read} of weights a token multiplies through (its routed experts, not all {weights})"
        if arch.is_moe
        else "Reading the {read} of weights a token multiplies through"
    )
    where = "split over {n} x {gpu_name} at {bw} each" if v[sym.n] > 1 else "on one {gpu_name} at {bw}"
    above = (
        "Two things keep a real server above it: bandwidth below peak ({t_eta} at an assumed {eta} of peak) and "
        "the tensor-parallel all-reduces ({t_ar})"
        if v[sym.n] > 1
        else "Bandwidth below peak keeps a real server above it ({t_eta} at an assumed {eta} of peak)"
    )
    spans = tp_link(setup, int(v[sym.n]))[2]
    answer.summary = Prose(
        "summary",
        f"At batch 1 {which} is read once per token and used for two FLOPs, {{i_w}} against the {{gpu}}'s ridge of "
        f"{{ridge}}, so the tensor cores wait on memory. {reads}, {where}, takes {{t_w}} a token, and the KV cache "
        "of {context} of context adds {t_k}: the floor is {floor}. "
        f"{above}, for about {{t_est}} a token: the floor is {{share}} of it."
        + (f" Mind the layout: {spans}." if spans else ""),
        q,
    )
    _wrong_answers(answer, setup, sheet, q)
    _follow_up(answer, inputs, setup, q)
    answer.sections.append(
        Section(
            "The floor and what sits on top of it",
            sheet,
            intro=(
                Prose(
                    "text",
                    "The step reads the weights and the cache once; its FLOPs at peak take only {t_comp}, "
                    "so the step time is the read time.",
                    q,
                ),
            ),
            outro=(
                Prose(
                    "text",
                    "Assumed inputs are marked where they enter: the achieved fraction of peak bandwidth "
                    "({eta}) and the latency of one small all-reduce. Change them with --set.",
                    q,
                ),
            ),
        )
    )
    answer.figures.append(
        Figure(
            "budget",
            "Where a batch-1 decode step's time goes: the weight-read floor, then "
            "the KV cache, bandwidth below peak and the all-reduces.",
            partial(_draw, sheet, setup),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "The weight reads set the floor ({t_w} of its {floor}), weight bytes over aggregate bandwidth: only "
            "fewer bytes per weight (fp8, int4) or more bandwidth moves it; faster tensor cores do nothing at batch 1.",
            q,
        ),
        Prose(
            "takeaway",
            "At batch 1 an all-reduce moves a single hidden state per token, so its cost is latency: "
            "two per layer over {layers} layers ({t_ar} in all). A wider tensor-parallel group shortens "
            "the weight reads but not the latency each all-reduce pays.",
            q,
        ),
        Prose(
            "takeaway",
            "The cache read grows linearly with context: at {context} it is {t_k}, small beside the "
            "weights at batch 1, but it is paid per sequence and overtakes the weights as batch and "
            "context grow.",
            q,
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "The achieved bandwidth and the all-reduce latency are assumptions, not measurements: "
            "profile one step (kernel time against bytes moved, NCCL time per call) to replace them.",
        ),
        Prose(
            "caveat",
            "Kernel launch gaps, sampling and scheduling are left out; without CUDA graphs the launch "
            "gaps alone can rival the all-reduces at batch 1.",
        ),
        Prose(
            "caveat",
            "Tensor parallelism is taken as an even split of weights and cache; custom all-reduce "
            "kernels and overlapping communication with the next matmul shrink the all-reduce term.",
        ),
    ]
    return answer


def _wrong_answers(answer: Answer, setup: Setup, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """The floor as candidates commonly get it wrong, each computed from the same sheet."""
    arch, v = setup.model.config, sheet.values
    floor, n = q["t_w"].number, v[sym.n]
    found: list[Prose] = []
    if floor > q["t_comp"].number:
        q["flop_under"] = Quantity(floor / q["t_comp"].number)
        found.append(
            Prose(
                "wrong",
                "Timing the token by its FLOPs at peak: {t_comp}, {flop_under} times too fast. At {i_w} the "
                "tensor cores idle while the weights stream in, {t_w}.",
                q,
            )
        )
    if arch.is_moe and v[sym.W] > v[W_read]:
        q["t_all"] = Quantity(floor * v[sym.W] / v[W_read], "second")
        q["all_over"] = Quantity(v[sym.W] / v[W_read])
        q["routed"], q["experts"] = Quantity(arch.experts_per_token), Quantity(arch.experts)
        found.append(
            Prose(
                "wrong",
                "Reading all {weights} of weights at batch 1: {t_all}, {all_over} times the weight reads' {t_w}. One "
                "token reads only the {routed} of {experts} experts it is routed to in each layer.",
                q,
            )
        )
    if n > 1:
        q["t_one"] = Quantity(floor * n, "second")
        found.append(
            Prose(
                "wrong",
                "Streaming all the weights through one {gpu_name}'s {bw}: {t_one}, {n} times the weight reads' {t_w}. "
                "Tensor parallelism gives each of the {n} accelerators its own shard to read, all at once.",
                q,
            )
        )
    gib, gb = to_base_factor("GiB"), to_base_factor("GB")
    q["read_gib"] = Quantity(v[W_read] / gib)
    q["t_gib"] = Quantity(floor * gb / gib, "second")
    q["gib_pct"] = Quantity(100 * (1 - gb / gib))
    found.append(
        Prose(
            "wrong",
            "Taking the {read_gib} GiB of weights a token reads for as many GB: the weight reads come out at {t_gib}, "
            "{gib_pct} % short of {t_w}. A GiB is 1,073,741,824 bytes, and bandwidth is quoted in decimal TB/s.",
            q,
        )
    )
    answer.wrong_answers += found[:3]


def _follow_up(answer: Answer, inputs: Inputs, setup: Setup, q: dict[str, Quantity]) -> None:
    """Weights in fp8 on the same accelerators: the reads shrink, the fixed costs stay."""
    if dtype_bytes(setup.dtype) <= dtype_bytes("fp8"):
        return
    try:
        _, sheet = _sheet(inputs, dtype="fp8", tp=int(q["n"].number))
    except DeriveError:
        return  # no fp8 figure for this accelerator: no follow-up rather than a guessed one
    r = sheet.results
    q["fp8_t_w"] = Quantity(r["weight_read_time"].value, "second")
    q["fp8_est"] = Quantity(r["decode_step_estimate"].value, "second")
    q["fp8_share"] = Quantity(r["decode_step_estimate"].number / q["t_est"].number)
    fixed = []
    if q["n"].number > 1:
        fixed.append("the all-reduces' latency does not shrink")
    if r["kv_read_time"].number == q["t_k"].number:
        fixed.append("the cache stays as it was")
    else:
        fixed.append(
            "the cache, stored in fp8 too, halves with them"
            if 2 * r["kv_read_time"].number == q["t_k"].number
            else "the cache shrinks with them"
        )
    where = "{n} x {gpu_name}" if q["n"].number > 1 else "{gpu_name}"
    answer.follow_up = FollowUp(
        "And with the weights in fp8?",
        Prose(
            "follow-up",
            f"On the same {where} the weight reads fall from {{t_w}} to {{fp8_t_w}}, one byte a weight, and the "
            f"estimate from {{t_est}} to {{fp8_est}}, {{fp8_share}} of it: " + " and ".join(fixed) + ".",
            q,
        ),
    )


QUESTION = Question(
    id="decode-floor-70b",
    title="Why is batch-1 decode on a 70B model bandwidth-bound, and what is its latency floor on two H100s?",
    source="Seed 004, question 1",
    level="Senior",
    kind="estimate",
    defaults={
        "model": "llama3-70b",
        "gpu": "h100",
        "tp": 2,
        "dtype": "bf16",
        "context": 4096,
        "achieved_bandwidth": "0.8",
        "allreduce_latency": "10 us",
    },
    changeable=("model", "gpu", "tp", "dtype", "kv_dtype", "context", "achieved_bandwidth", "allreduce_latency"),
    build=build,
)
