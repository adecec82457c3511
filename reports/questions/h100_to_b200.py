"""Seed 004, question 6: a 70B model moved from H100s to B200s, decode latency and throughput regime by regime."""

from dataclasses import replace
from functools import partial

import numpy as np

from derive import figures
from derive.answers import Answer, Inputs, Question
from derive.derivations import costs, knee
from derive.derivations.common import (
    Setup,
    accelerator,
    decode_inputs,
    model_library,
    start,
)
from derive.evaluation import over
from derive.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.units import format_quantity
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
    work.compute(work.library.get("ttft"), "ttft")
    work.note("roofline floors: peak bandwidth and FLOP/s, ideal tensor parallelism, no communication")
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
    answer.summary = Prose(
        "summary",
        "On {n} of each, batch-1 decode is bandwidth-bound and speeds up by the bandwidth ratio {bw} "
        "({tpot_old} to {tpot_new} a token); a prompt pass of {prompt} is compute-bound and speeds up by the "
        "FLOP/s ratio {flops} (TTFT {ttft_old} to {ttft_new}). The biggest change is capacity: after {weights} "
        "of weights, {mem_old} leaves room for {fit_old} of {context} and {mem_new} for {fit_new}, "
        "{capacity} times as many, so throughput at the largest batch rises {throughput} times, from {r_old} to "
        "{r_new}.",
        q,
    )
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
            "Latency-bound work (batch 1, small batches) gains the bandwidth ratio {bw}; "
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
            "Tensor-parallel all-reduces, kernel maturity on a new architecture and fp8/fp4 kernels are "
            "not modelled; fp4 weights would change the B200's side more than any ratio here.",
        ),
    ]
    return answer


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
