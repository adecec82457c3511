"""Seed 000, question 3: why a batch of 8 costs far less than 8 decode steps, and why it cannot grow forever."""

from __future__ import annotations

from dataclasses import replace

import sympy

from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.core.sheet import Prose, Quantity, Section, Sheet
from derive.derivations import knee
from derive.derivations.common import Setup, model_library, start
from derive.derivations.energy import at_batch, decode_roofline, max_batch
from formulas import notation as sym
from formulas.flops import F_att
from formulas.reads import W_read
from reports.questions.shared import figures_entry


def step_at(setup: Setup, batch: int) -> Sheet:
    """The roofline decode step at `batch`, with the memory ceiling checked first."""
    work = start("decode step", f"A decode step of {setup.model.title} at batch {batch}", setup)
    weights, one_sequence = decode_roofline(work, setup)
    max_batch(work, replace(setup, batch=batch), weights, one_sequence)
    at_batch(work, setup, batch, "the batch")
    work.compute(work.library.get("throughput_floor"))
    work.compute(work.library.get("floor_tokens_per_s_per_user"))
    for name in ("step_time", "throughput_floor", "kv_bytes", "max_batch_by_memory", "floor_tokens_per_s_per_user"):
        f = work.library.get(name)
        work.result(name, f.defines, work.values[f.defines], f.expr)
    return work.sheet


# The seed's own measurement (seed 000, question 3): on its test laptop's Apple GPU a decode step took 6.3 ms for
# one sequence and 9.3 ms for 8, "so throughput rose from 159 to 860 tokens/s".
SEED_STEPS = ((1, "6.3 ms"), (8, "9.3 ms"))


def seed_sheet() -> Sheet:
    """The seed's measured steps through the library's throughput formula: its 159 and 860 tokens/s, recomputed."""
    from derive.core import validate
    from derive.core.sheet import Work

    sheet = Sheet("seed measurement", "The seed's measured steps (an Apple GPU), through the same formula", {})
    work = Work(sheet)
    work.given(sym.tau, 1, "no speculative decoding")
    for batch, measured in SEED_STEPS:
        work.given(sym.B, batch, "the seed's batch", inline=True)
        work.given(sym.t_step, validate.quantity(measured, "second"), "measured on the seed's test laptop", inline=True)
        work.compute(work.library.get("throughput_floor"), f"seed_throughput_{batch}")
    return sheet


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    small, big = int(inputs["batch"]), int(inputs["large_batch"])
    one, many = step_at(setup, small), step_at(setup, big)
    curve = knee(setup)
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    a, b = one.results, many.results
    t1, t8 = a["step_time"].number, b["step_time"].number
    q = {
        "b1": Quantity(small, "sequence"),
        "b8": Quantity(big, "sequence"),
        "t1": answer.headline("step_time_small", t1, "second"),
        "t8": answer.headline("step_time_large", t8, "second"),
        "r1": answer.headline("throughput_small", a["throughput_floor"].value, "token/second"),
        "r8": answer.headline("throughput_large", b["throughput_floor"].value, "token/second"),
        "gain": answer.headline("throughput_gain", b["throughput_floor"].number / a["throughput_floor"].number),
        "slow": answer.headline("per_user_slowdown", t8 / t1),
        "separate": Quantity(big * t1 / t8),
        "kv": answer.headline("kv_bytes_per_sequence", many.values[sym.kv_seq], "byte/sequence"),
        "fits": answer.headline("max_batch_by_memory", b["max_batch_by_memory"].value, "sequence"),
        "ceiling": answer.headline("throughput_ceiling", curve.results["throughput_ceiling"].value, "token/second"),
        "weights": Quantity(many.values[sym.W], "byte"),
        "read1": answer.headline("weights_read_small", one.values[W_read], "byte"),
        "read8": answer.headline("weights_read_large", many.values[W_read], "byte"),
    }
    if setup.model.config.is_moe:  # a step reads only the experts its tokens touch: more of them at a larger batch
        reads = (
            "A step reads the weights its tokens multiply through once and uses them for every sequence: the "
            "experts a step touches grow with the batch, {read1} of the {weights} stored at {b1} and {read8} at "
            "{b8}; each sequence's KV cache ({kv}) is extra. So"
        )
    else:
        gathered = many.values[W_read] < many.values[sym.W]  # an untied input embedding is gathered, not read whole
        share = (
            "{read8} of the {weights} stored: the input embedding is gathered a row a token"
            if gathered
            else "{weights}"
        )
        reads = (
            "Each step reads the weights (" + share + ") once and uses them for every sequence; only each sequence's "
            "KV cache ({kv}) is extra. So"
        )
    answer.summary = Prose(
        "summary",
        reads + " a step of {b8} takes {t8} against {t1} for {b1}, and throughput rises from {r1} "
        "to {r8}, {gain} times. The batch cannot grow forever: each step gets longer, so every user waits {slow} "
        "times as long per token, throughput flattens towards {ceiling}, and memory holds caches for only {fits}.",
        q,
    )
    answer.sections += [
        Section(f"Batch {small}", one),
        Section(
            f"Batch {big}",
            many,
            outro=(
                Prose(
                    "text",
                    "Decoding the {b8} one at a time would take that many steps of {t1}; the batched "
                    "step does the same work {separate} times faster.",
                    q,
                ),
            ),
        ),
        Section("Throughput against batch", curve),
    ]
    seed = seed_sheet()
    measured = {batch: seed.results[f"seed_throughput_{batch}"].number for batch, _ in SEED_STEPS}
    q["seed_r1"] = answer.headline("seed_throughput_1", measured[1], "token/second")
    q["seed_r8"] = answer.headline("seed_throughput_8", measured[8], "token/second")
    q["seed_gain"] = Quantity(measured[8] / measured[1])
    answer.sections.append(
        Section(
            "The seed's measurement, reconciled",
            seed,
            outro=(
                Prose(
                    "text",
                    "The seed's figures are its measured steps through the same formula: {seed_r1} and {seed_r8}, "
                    "{seed_gain} times. The roofline here gives {gain} times for the same batches on "
                    "this accelerator: both because a batch shares one read of the weights; the sizes differ with "
                    "the machine's bandwidth, the model and how far below peak the kernels run.",
                    q,
                ),
            ),
        )
    )
    answer.figures.append(figures_entry(curve, setup))
    answer.takeaways += [
        Prose(
            "takeaway",
            "While the step is bandwidth-bound, batching is nearly free: the weight read is "
            "shared, and only the KV bytes grow with the batch.",
        ),
        Prose(
            "takeaway",
            "The limits are the per-user slowdown ({slow} at {b8}), the ceiling the KV reads set, "
            "and memory for the caches ({fits}).",
            q,
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Roofline floors at peak bandwidth and FLOP/s: measured steps are slower, and small "
            "models on fast GPUs are dominated by launch overhead instead (see framework-to-gpu).",
        ),
        Prose(
            "caveat", "Every sequence at the same context; a real batch mixes lengths and its KV bytes follow the mean."
        ),
    ]
    _wrong_answers(answer, setup, curve, q, sympy.Rational(big, small))
    _follow_up(answer, inputs, q)
    return answer


def _wrong_answers(answer: Answer, setup: Setup, curve: Sheet, q: dict[str, Quantity], ratio: sympy.Expr) -> None:
    """Batching as candidates commonly get it wrong, each figure from the same sheets."""
    if ratio > 1 and q["gain"].number < ratio:
        q["ratio"] = Quantity(ratio)
        q["linear"] = Quantity(q["r1"].number * ratio, "token/second")
        shared = (
            "each sequence adds its own {kv} of cache to every step, and the experts its token routes to"
            if setup.model.config.is_moe
            else "the weight read is shared, but each sequence adds its own {kv} of cache to every step"
        )
        answer.wrong_answers.append(
            Prose("wrong", "Expecting {ratio} times the throughput, {linear}: " + shared + ", so it is {r8}.", q)
        )
    v = curve.values
    library = model_library(setup.model)
    roof = evaluate(sym.P.symbol * sym.n.symbol / (sym.F.symbol + F_att.symbol), v, library)
    if roof > q["ceiling"].number:
        q["compute_roof"] = Quantity(roof, "token/second")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Taking the ceiling from the compute roof, P over a token's FLOPs: {compute_roof}. Before that, "
                "each sequence's own reads cap throughput at {ceiling}.",
                q,
            )
        )
    if len(answer.wrong_answers) < 2 and q["slow"].number > 1:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Calling the batch free: each user's token now takes {t8} instead of {t1}, {slow} times as long.",
                q,
            )
        )


def _follow_up(answer: Answer, inputs: Inputs, q: dict[str, Quantity]) -> None:
    """An 8-bit cache: the same curve at --kv-dtype fp8."""
    if inputs.get("kv_dtype") == "fp8":
        return
    try:
        fp8 = knee(inputs.setup(kv_dtype="fp8"))
    except DeriveError:
        return
    r = fp8.results
    q["kv_fp8"] = Quantity(fp8.values[sym.kv_seq], "byte/sequence")
    q["fits_fp8"] = Quantity(r["max_batch_by_memory"].value, "sequence")
    q["ceiling_fp8"] = Quantity(r["throughput_ceiling"].value, "token/second")
    if r["max_batch_by_memory"].number < 1 or q["kv_fp8"].number >= q["kv"].number:
        return
    ceiling = (
        "the ceiling rises to {ceiling_fp8} (from {ceiling})"
        if q["ceiling_fp8"].number > q["ceiling"].number
        else "the ceiling stays at {ceiling}, the compute roof"
    )
    answer.follow_up = FollowUp(
        "And with the cache in fp8?",
        Prose(
            "follow-up",
            "Each sequence's cache falls to {kv_fp8}: memory then holds {fits_fp8} (not {fits}) and " + ceiling + "; "
            "the weight read stays what it was.",
            q,
        ),
    )


QUESTION = Question(
    id="batching-decode",
    title="Why does decoding a batch of 8 cost far less than 8 separate decode steps, and why can't the batch "
    "grow forever?",
    source="Seed 000, question 3",
    level="Mid-level",
    kind="knee",
    defaults={"model": "llama3-8b", "gpu": "h100", "dtype": "bf16", "context": 2048, "batch": 1, "large_batch": 8},
    changeable=("model", "gpu", "dtype", "kv_dtype", "context", "tp", "batch", "large_batch"),
    build=build,
)
