"""Seed 004, question 6: a 70B model moved from H100s to B200s, decode latency and throughput regime by regime."""

from dataclasses import replace
from functools import partial

import numpy as np
import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.calibration import calibration
from derive.core.errors import DeriveError
from derive.core.evaluation import over
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.core.units import format_quantity
from derive.derivations import costs, knee
from derive.derivations.common import (
    Setup,
    accelerator,
    decode_inputs,
    model_library,
    start,
)
from formulas import notation as sym
from formulas import prefill as pf


def _latency(setup: Setup) -> Sheet:
    """Batch-1 decode (bandwidth-bound) and one prompt pass (compute-bound) on setup.tp accelerators."""
    assert setup.gpu is not None  # the question always names one
    work = start(
        "answer h100-to-b200", f"Batch 1 and one prompt of {setup.model.title} on {setup.tp} x {setup.gpu.title}", setup
    )
    decode_inputs(work, setup)
    accelerator(work, setup)
    work.given(sym.n, setup.tp, "the same number of each accelerator")
    work.given(sym.B, 1, "one user")
    work.heading("Batch 1: bandwidth-bound")
    work.compute(work.library.get("kv_bytes"))
    work.compute(work.library.get("memory_time"))
    work.compute(work.library.get("compute_time"))
    work.compute(work.library.get("step_time"), "batch1_step_time")
    work.heading("One prompt pass: compute-bound")
    work.given(pf.S_p, setup.prompt, "--set prompt")
    for eta in (pf.eta_bw, pf.eta_f):
        work.given(eta, 1, "a floor: peak figures")
    work.compute(work.library.get("prefill_memory_time"))
    work.compute(work.library.get("prefill_compute_time"))
    work.compute(work.library.get("ttft_floor"), "ttft")
    work.note("roofline floors: peak bandwidth and FLOP/s, tensor parallelism without its communication")
    return work.sheet


def _draw(sheets, setups, stem):  # type: ignore[no-untyped-def]
    plt = figures.pyplot()
    fig, ax = plt.subplots()
    widest = max(float(sheet.results["max_batch_by_memory"].value) for sheet in sheets)
    for colour, sheet, setup in zip(("C0", "C3"), sheets, setups, strict=False):
        largest = float(sheet.results["max_batch_by_memory"].value)
        batches = np.linspace(1, largest, 300)
        rate = over(sym.R.symbol, sym.B, sheet.values, model_library(setup.model))(batches)
        ax.plot(batches, rate, color=colour, lw=1.5, label=f"{sheet.inputs['tp']} x {setup.gpu.name}")
        at_max = sheet.results["throughput_at_max_batch"].value
        ax.plot([largest], [float(at_max)], "o", color=colour, ms=6)
        ax.annotate(
            f"memory full: {format_quantity(largest, 'sequence')}, {format_quantity(at_max, 'token/second')}",
            (largest, float(at_max)),
            textcoords="offset points",
            fontsize=8,
            **({"xytext": (-8, -14), "ha": "right"} if largest == widest else {"xytext": (8, -4), "ha": "left"}),
        )
    ax.set_xlabel("batch (sequences)")
    ax.set_ylabel("decode throughput (token/s)")
    ax.set_title(
        f"{setups[0].model.title} at {setups[0].context:,} tokens: throughput until memory is full", fontsize=10
    )
    ax.legend(fontsize=8, loc="upper left")
    figures.save(fig, stem)


def _calibrated(answer: Answer, setups: tuple[Setup, Setup], batches: tuple[int, int], q: dict[str, Quantity]) -> str:
    """The calibrated estimate beside the floors: batch 1 and each accelerator's largest batch; the sentence."""
    tp = setups[0].tp
    ones = [costs.calibrated_at(s, 1, tp) for s in setups]
    fulls = [costs.calibrated_at(s, b, tp) if b >= 1 else None for s, b in zip(setups, batches, strict=True)]
    if any(sheet is None for sheet in ones):
        return ""
    old_one, new_one = (sheet.results["tpot"].number for sheet in ones)  # type: ignore[union-attr]
    q["cal_old"] = answer.headline("calibrated_batch1_step_time_old", old_one, "second")
    q["cal_new"] = answer.headline("calibrated_batch1_step_time_new", new_one, "second")
    q["cal_ratio"] = answer.headline("calibrated_batch1_speedup", old_one / new_one, "")
    side = "below" if old_one / new_one < q["bw"].number else "above"
    fits = [calibration(s.gpu, s.dtype) for s in setups]  # type: ignore[arg-type]
    stand_ins = [f"the {fit.fitted_on} fit stands in for the {fit.gpu}" for fit in fits if fit.borrowed]
    borrowed = f" ({' and '.join(stand_ins)}: none was profiled)" if stand_ins else ""
    text = (
        " The calibrated estimate beside these floors, which adds the fixed time of a step, puts batch 1 at "
        "{cal_old} and {cal_new}, {cal_ratio} times, " + side + " the bandwidth ratio because the fixed time does "
        "not scale with bandwidth"
    )
    if all(sheet is not None for sheet in fulls):
        old_full, new_full = (sheet.results["throughput"].number for sheet in fulls)  # type: ignore[union-attr]
        q["cal_r_old"] = answer.headline("calibrated_throughput_at_max_batch_old", old_full, "token/second")
        q["cal_r_new"] = answer.headline("calibrated_throughput_at_max_batch_new", new_full, "token/second")
        text += ", and the largest batches at {cal_r_old} and {cal_r_new}"
    return text + borrowed + "."


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    ratios = costs.compare(setup)
    tp = int(str(ratios.inputs["tp"]))
    old, new = replace(setup, tp=tp), replace(setup, gpu=setup.vs, tp=tp)
    old_latency, new_latency = _latency(old), _latency(new)
    old_knee, new_knee = knee(old), knee(new)
    answer = Answer(QUESTION, inputs, Prose("summary", ""))

    def head(name: str, sheet: Sheet, key: str, unit: str) -> Quantity:
        return answer.headline(name, sheet.results[key].value, unit)

    q = {
        "tpot_old": head("batch1_step_time_old", old_latency, "batch1_step_time", "second"),
        "tpot_new": head("batch1_step_time_new", new_latency, "batch1_step_time", "second"),
        "ttft_old": head("ttft_old", old_latency, "ttft", "second"),
        "ttft_new": head("ttft_new", new_latency, "ttft", "second"),
        "fit_old": head("max_batch_old", old_knee, "max_batch_by_memory", "sequence"),
        "fit_new": head("max_batch_new", new_knee, "max_batch_by_memory", "sequence"),
        "r_old": head("throughput_at_max_batch_old", old_knee, "throughput_at_max_batch", "token/second"),
        "r_new": head("throughput_at_max_batch_new", new_knee, "throughput_at_max_batch", "token/second"),
        "bw": head("bandwidth_ratio", ratios, "bandwidth_ratio", ""),
        "flops": head("compute_ratio", ratios, "compute_ratio", ""),
        "capacity": head("capacity_ratio", ratios, "capacity_ratio", ""),
        "throughput": head("max_throughput_ratio", ratios, "max_throughput_ratio", ""),
        "old": Quantity(setup.gpu.name),
        "new": Quantity(setup.vs.name),
        "n": Quantity(tp, ""),
        "prompt": Quantity(old_latency.values[pf.S_p], "token"),
        "weights": Quantity(old_knee.values[sym.W], "byte"),
        "mem_old": Quantity(tp * setup.gpu.memory, "byte"),
        "mem_new": Quantity(tp * setup.vs.memory, "byte"),
        "context": Quantity(setup.context, "token"),
    }
    # Where the weights fill most of the old pair, the capacity ratio measures the leftover, not the accelerator.
    q["w_share"] = Quantity(q["weights"].number / (tp * setup.gpu.memory) * 100)
    q["spare_old"] = Quantity(tp * setup.gpu.memory - q["weights"].number, "byte")
    q["spare_new"] = Quantity(tp * setup.vs.memory - q["weights"].number, "byte")
    answer.summary = Prose(
        "summary",
        "On {n} of each, batch-1 decode is bandwidth-bound and speeds up by the bandwidth ratio {bw} "
        "({tpot_old} to {tpot_new} a token); a prompt pass of {prompt} is compute-bound and speeds up by the "
        "FLOP/s ratio {flops} (TTFT {ttft_old} to {ttft_new}). The biggest change is capacity: after {weights} "
        "of weights, {mem_old} leaves room for {fit_old} of {context} and {mem_new} for {fit_new}, "
        "{capacity} times as many, so throughput at the largest batch rises {throughput} times, from {r_old} to "
        "{r_new}."
        + (
            " That capacity ratio is the leftover memory's, not the accelerators': the weights fill {w_share} % of "
            "the {n} x {old}, so {spare_old} of cache room against {spare_new} sets it, and one more {old} would "
            "move it more than any datasheet figure."
            if 2 * q["weights"].number > tp * setup.gpu.memory
            else ""
        )
        + _calibrated(answer, (old, new), (int(q["fit_old"].number), int(q["fit_new"].number)), q),
        q,
    )
    _wrong_answers(answer, old, new, q)
    _follow_up(answer, new, q)
    for title, sheet in (
        (f"Latency regimes on {setup.gpu.name}", old_latency),
        (f"Latency regimes on {setup.vs.name}", new_latency),
    ):
        answer.sections.append(Section(title, sheet))
    answer.sections.append(
        Section(
            f"Capacity on {setup.gpu.name}, and the ratios",
            ratios,
            intro=(
                Prose(
                    "text",
                    "The decode roofline against batch, up to the largest batch memory holds; the notes "
                    "give each ratio of the {new} to the {old}.",
                    q,
                ),
            ),
        )
    )
    answer.sections.append(Section(f"Capacity on {setup.vs.name}", new_knee))
    answer.figures.append(
        Figure(
            "throughput",
            "Decode throughput against batch on each accelerator, each curve "
            "ending where memory is full: the B200 curve is steeper by the bandwidth ratio and "
            "much longer by the capacity ratio.",
            partial(_draw, (old_knee, new_knee), (old, new)),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Bandwidth-bound work (batch 1, small batches) gains the bandwidth ratio {bw}; "
            "compute-bound work (prefill, batches past the knee) gains the FLOP/s ratio {flops}. The "
            "two are close, which is why a single speedup looks plausible.",
            q,
        ),
        Prose(
            "takeaway",
            "Capacity-bound work gains {capacity} in batch: the weights take a fixed share of memory, "
            "so the extra memory all goes to the KV cache, and throughput at the largest batch rises "
            "{throughput} times.",
            q,
        ),
        Prose(
            "takeaway",
            "The larger memory also lets the model run on fewer accelerators: re-run with --set tp=1 "
            "to see one B200 against two H100s.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Datasheet peaks: achieved bandwidth and FLOP/s differ between generations, and the B200's "
            "product pages quote slightly different aggregate bandwidths.",
        ),
        Prose(
            "caveat",
            "The floors leave out tensor-parallel all-reduces (the calibrated estimate counts them); kernel "
            "maturity on a new architecture and fp8/fp4 kernels are not modelled, and fp4 weights would change "
            "the B200's side more than any ratio here.",
        ),
    ]
    return answer


def _wrong_answers(answer: Answer, old: Setup, new: Setup, q: dict[str, Quantity]) -> None:
    """One speedup for every regime, and the datasheet's headline peak: each with the figure it gives."""
    q["one_ratio"] = Quantity(q["r_old"].number * q["bw"].number, "token/second")
    q["short_by"] = Quantity(q["r_new"].number / q["one_ratio"].number)
    if q["short_by"].number > 1:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "One speedup for everything, the bandwidth ratio: throughput at the largest batch would go from "
                "{r_old} to {one_ratio}, {short_by} times short of {r_new}, because the larger memory also holds "
                "a larger batch.",
                q,
            )
        )
    q["memory_ratio"] = Quantity(q["mem_new"].number / q["mem_old"].number)
    if q["capacity"].number != q["memory_ratio"].number:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Scaling the batch by the memory ratio, {memory_ratio}: the weights take the same bytes on both, so "
                "the room left for the cache, and with it the batch, grows {capacity} times instead.",
                q,
            )
        )
    assert old.gpu is not None and new.gpu is not None
    headline_peak, note = new.gpu.peak("fp4") if old.dtype != "fp4" else (None, "")
    if headline_peak is not None and "dequantised" not in note:
        q["fp4_peak"] = Quantity(headline_peak, "FLOP/second")
        q["fp4_ratio"] = Quantity(headline_peak / old.peak()[0])
        q["dtype"] = Quantity(old.dtype)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Reading the datasheet's headline, the {new}'s fp4 peak {fp4_peak} against the {old}'s {dtype}: "
                "{fp4_ratio} times, a change of precision as much as of chip; at the same {dtype} it is {flops}.",
                q,
            )
        )


def _follow_up(answer: Answer, new: Setup, q: dict[str, Quantity]) -> None:
    """Fewer of the new accelerator: the same regimes on half as many, if the weights still fit."""
    fewer = new.tp // 2 if new.tp else 0  # type: ignore[operator]
    if fewer < 1:
        return
    half = replace(new, tp=fewer)
    try:
        latency, capacity = _latency(half), knee(half)
    except DeriveError:
        return
    fits = capacity.results["max_batch_by_memory"].value
    if not isinstance(fits, sympy.Expr) or fits < 1:
        return
    q["fewer"] = Quantity(fewer, "")
    q["few_tpot"] = Quantity(latency.results["batch1_step_time"].value, "second")
    q["few_fit"] = Quantity(fits, "sequence")
    q["few_r"] = Quantity(capacity.results["throughput_at_max_batch"].value, "token/second")
    count = "one {new}" if fewer == 1 else "{fewer} x {new}"
    answer.follow_up = FollowUp(
        f"Could {'one' if fewer == 1 else 'half as many'} {new.gpu.name if new.gpu else ''} do?",
        Prose(
            "follow-up",
            "On " + count + " batch 1 takes {few_tpot} a token (against {tpot_old} on {n} x {old}), and memory "
            "holds {few_fit} of {context}, for {few_r} at the largest batch.",
            q,
        ),
    )


QUESTION = Question(
    id="h100-to-b200",
    title="We are moving a 70B model from H100s to B200s. How do decode latency and throughput change, regime by "
    "regime?",
    source="Seed 004, question 6",
    level="Senior",
    kind="comparison",
    defaults={"model": "llama3-70b", "gpu": "h100", "vs": "b200", "dtype": "bf16", "context": 2048, "prompt": 4096},
    changeable=("model", "gpu", "vs", "dtype", "kv_dtype", "context", "tp", "prompt"),
    build=build,
)
