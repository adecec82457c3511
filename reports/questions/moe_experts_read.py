"""Seed 004, question 7: why a DeepSeek-V3 decode step at batch 64 reads far more than its 37B active parameters."""

from __future__ import annotations

from functools import partial

import numpy as np
import sympy

from derive import figures, plots
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate, over
from derive.core.sheet import Figure, Prose, Quantity, Section, Work
from derive.core.units import format_quantity
from derive.derivations.common import Setup, model_library
from derive.derivations.moe import experts
from formulas import (
    moe,
)
from formulas import notation as sym


def _batches(sheet):  # type: ignore[no-untyped-def]
    return np.geomspace(1, max(4096, float(sheet.values[sym.B]) * 16), 200)


def _draw_params(sheet, setup, stem):  # type: ignore[no-untyped-def]
    batches = _batches(sheet)
    read = over(moe.N_read.symbol, sym.B, sheet.values, model_library(setup.model))(batches)
    plt = figures.pyplot()
    fig, ax = plt.subplots()
    ax.semilogx(batches, read / 1e9, color="C0", lw=1.5, label="parameters read per step (expected)")
    ax.axhline(
        float(sheet.values[sym.N]) / 1e9,
        color="C3",
        ls="--",
        lw=1,
        label=f"all parameters: {format_quantity(sheet.values[sym.N], 'parameter')}",
    )
    ax.axhline(
        float(sheet.values[sym.N_act]) / 1e9,
        color="C2",
        ls=":",
        lw=1,
        label=f"active per token: {format_quantity(sheet.values[sym.N_act], 'parameter')}",
    )
    at = float(sheet.values[sym.B])
    ax.plot(
        [at],
        [float(sheet.values[moe.N_read]) / 1e9],
        "o",
        color="C1",
        ms=6,
        label=f"batch {at:,.0f}: {format_quantity(sheet.values[moe.N_read], 'parameter')}",
    )
    ax.set_xlabel("tokens in the decode step (batch)")
    ax.set_ylabel("parameters (billions)")
    ax.set_title(f"{setup.model.title}: what one decode step reads", fontsize=10)
    ax.legend(fontsize=8, loc="center right")
    figures.save(fig, stem)


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    sheet = experts(setup)
    work = Work(sheet, model_library(setup.model))
    work.heading("Against a dense model of the same size")
    work.compute(work.library.get("read_vs_total"), "read_vs_total")
    work.compute(work.library.get("active_fraction"), "active_fraction")
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    r, v = sheet.results, sheet.values
    q = {
        "touched": answer.headline("experts_touched", r["experts_touched"].value, ""),
        "read": answer.headline("params_read_per_step", r["params_read_per_step"].value, "parameter"),
        "bytes": answer.headline("bytes_read_per_step", r["bytes_read_per_step"].value, "byte"),
        "x": answer.headline("read_vs_active", r["read_vs_active"].value, ""),
        "all": answer.headline("read_vs_total", r["read_vs_total"].value, ""),
        "act": answer.headline("active_fraction", r["active_fraction"].value, ""),
        "active": Quantity(v[sym.N_act], "parameter"),
        "total": Quantity(v[sym.N], "parameter"),
        "batch": Quantity(v[sym.B], "sequence"),
        "experts": Quantity(v[sym.E], ""),
        "k": Quantity(v[sym.k_e], ""),
        "fixed": Quantity(v[moe.N_fix], "parameter"),
        "model": Quantity(setup.model.title),
        # Where the checkpoint ships its routed experts in a format of their own (gpt-oss: MXFP4), say both.
        "dtype": Quantity(
            f"{setup.model.config.expert_format} routed experts, the rest in {setup.dtype}"
            if setup.model.config.expert_format
            else setup.dtype
        ),
    }
    answer.summary = Prose(
        "summary",
        "The active count is one token's path: its top-{k} of {experts} routed experts a layer. A decode step of "
        "{batch} routes every token separately, and under uniform routing their choices cover {touched} experts "
        "a layer, each read from HBM once: the step reads {read} ({bytes} in {dtype}), {x} times the {active} "
        "active and {all} of all {total}. The MoE advantage at this batch is arithmetic, not bytes: each token "
        "still multiplies through only {act} of the parameters.",
        q,
    )
    answer.sections.append(
        Section(
            "Experts touched and weights read",
            sheet,
            intro=(
                Prose(
                    "text",
                    "Routing first, then the weights: the {fixed} outside the routed experts are read every "
                    "step, and each touched expert once however many tokens it serves.",
                    q,
                ),
            ),
        )
    )
    answer.figures.append(
        Figure(
            "experts",
            "Routed experts one decode step touches per MoE layer against the "
            "batch: top-k at batch 1, nearly all experts a few dozen tokens later.",
            partial(plots.experts, sheet, setup),
        )
    )
    answer.figures.append(
        Figure(
            "params-read",
            "Parameters one decode step reads against the batch: the active "
            "count at batch 1, approaching the whole model as the batch grows.",
            partial(_draw_params, sheet, setup),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Active parameters price a token's FLOPs, not a step's bytes: at {batch} the step "
            "streams {x} times the active count, close to a dense model of the full size.",
            q,
        ),
        Prose(
            "takeaway",
            "So the MoE cost advantage comes from compute: at large batch, where a dense model of "
            "the same size would be compute-bound, the MoE does {act} of its FLOPs per token; at batch "
            "1 it also reads only the active weights.",
            q,
        ),
        Prose(
            "takeaway",
            "Expert parallelism spreads the touched experts over many accelerators, so each one reads "
            "its own experts' share; that is how large MoE deployments keep the step short.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Uniform, independent routing touches the most experts; real routers are skewed and "
            "correlated within a step, so a step reads somewhat fewer.",
        ),
        Prose("caveat", _left_out(setup.model)),
    ]
    _wrong_answers(answer, setup, sheet, q)
    _follow_up(answer, inputs, q)
    return answer


def _wrong_answers(answer: Answer, setup: Setup, sheet, q: dict[str, Quantity]) -> None:  # type: ignore[no-untyped-def]
    """What a step reads as candidates commonly count it, each figure from the same sheet."""
    v = sheet.values
    read, active, total = v[moe.N_read], v[sym.N_act], v[sym.N]
    if read > active:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Reading only the {active} active: that is one token's path. The step's tokens pick different "
                "experts, so it reads {x} times as many, {read}.",
                q,
            )
        )
    tokens = v[moe.T_r]
    naive = sympy.Min(tokens * v[sym.k_e], v[sym.E])  # every token's experts taken as distinct
    lib = model_library(setup.model)
    # The same read, with the touched experts counted as if no two tokens shared one.
    naive_read = evaluate(lib.get("params_read_per_step").expr, {**v, moe.E_t: naive}, lib)
    if naive_read > read * sympy.Rational(101, 100):  # a mistake worth naming: more than 1% off
        q["naive"], q["naive_read"] = Quantity(naive, ""), Quantity(naive_read, "parameter")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Counting min(B·k, E) = {naive} experts a layer, as if no two tokens picked the same one: "
                "{naive_read}. Choices collide, and uniform routing covers {touched}, so the step reads {read}.",
                q,
            )
        )
    if v[sym.B] > 1:
        each = v[sym.B] * active
        q["each"] = Quantity(each, "parameter")
        q["each_x"] = Quantity(each / read)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Multiplying the active count by the batch: that gives {each}, "
                + ("more than the model's {total} in all" if each > total else "{each_x} times what the step reads")
                + ". A touched expert streams once for every token that picked it.",
                q,
            )
        )
    if read < active:  # batch 1: the active count includes the whole embedding table
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Taking the {active} active as what a step reads: they include the whole embedding table, of which a "
                "step gathers only its tokens' rows, so it reads {read}.",
                q,
            )
        )
    if read < total * sympy.Rational(99, 100):
        q["dense_x"] = Quantity(total / read)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Pricing the step as a dense model of its size, all {total}: {dense_x} times what it reads at {batch}, "
                "where only the touched experts stream.",
                q,
            )
        )
    del answer.wrong_answers[3:]  # the page holds three


def _follow_up(answer: Answer, inputs: Inputs, q: dict[str, Quantity]) -> None:
    """The same sheet at B = E/k, where the batch's picks could just cover every expert, and at batch 1."""
    batch = int(sympy.ceiling(q["experts"].number / q["k"].number))
    if batch <= 1:
        return
    try:
        at_eq, at_one = (experts(inputs.setup(batch=b)) for b in (batch, 1))
    except DeriveError:
        return
    read_eq = at_eq.results["params_read_per_step"].value
    q.update(
        b_eq=Quantity(batch, "sequence"),
        touched_eq=Quantity(at_eq.results["experts_touched"].value, ""),
        read_eq=Quantity(read_eq, "parameter"),
        share_eq=Quantity(read_eq / q["total"].number),
        read_one=Quantity(at_one.results["params_read_per_step"].value, "parameter"),
    )
    answer.follow_up = FollowUp(
        "And at batch E/k, where the tokens' picks could just cover every expert once?",
        Prose(
            "follow-up",
            "At {b_eq} uniform routing touches {touched_eq} of the {experts} experts a layer, and the step already "
            "reads {read_eq}, {share_eq} of all {total}; only near batch 1 does it read about the active count, "
            "{read_one}.",
            q,
        ),
    )


QUESTION = Question(
    id="moe-experts-read",
    title="DeepSeek V3 has 671B parameters but only 37B active. Why does a decode step at batch 64 read far more "
    "than 37B?",
    source="Seed 004, question 7",
    level="Senior",
    kind="explanation",
    defaults={"model": "deepseek-v3", "dtype": "fp8", "batch": 64},
    changeable=("model", "dtype", "batch"),
    build=build,
)


def _left_out(model) -> str:  # type: ignore[no-untyped-def]
    """What the bytes above leave out, for this model: its cache (of whichever kind) and an MTP module if it has one."""
    cache = "a compact MLA latent" if model.config.is_mla else "keys and values of its attention layers"
    mtp = any("multi-token-prediction" in note for note in model.config.notes)
    extra = " and the multi-token-prediction module are" if mtp else " is"
    adds = "; both add" if mtp else ", and adds"
    return f"The KV cache ({cache} here){extra} left out of the bytes{adds} to each step's reads."
