"""Seed 004, question 14: decode arithmetic intensity of QKV, attention, MLP and LM head, and what fusion helps."""

from __future__ import annotations

from functools import partial

import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.catalog import dtype_bytes
from derive.core.evaluation import evaluate
from derive.core.sheet import Figure, Prose, Quantity, Section, Work
from derive.derivations import costs
from derive.derivations.calibrated import calibrated_ridges
from derive.derivations.common import model_library
from formulas import calibrated as cal
from formulas import intensity as it
from formulas import notation as sym
from formulas import sharding as sh
from formulas import step_budget as sb
from reports.questions.shared import recurrent_states


def _draw(sheet, setup, large, stem):  # type: ignore[no-untyped-def]
    v = sheet.values
    if large <= v[sym.B]:
        return
    at_large = evaluate(it.gemm_intensity.expr, {**v, sym.B: sympy.Integer(large)}, model_library(setup.model))
    points = [
        (f"QKV, O, MLP, LM head at B={int(v[sym.B])}", float(v[it.I_w])),
        ("attention (any batch)", float(v[it.I_att])),
        (f"weight GEMMs at B={int(large)}", float(at_large)),
    ]
    figures.roofline(stem, float(v[sym.P]), float(v[sym.BW]), points, f"{setup.model.title} decode on {setup.gpu.name}")


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    sheet = costs.intensity(setup)
    work = Work(sheet, model_library(setup.model))
    work.heading("What fusion can remove: elementwise activation traffic")
    work.given(
        cal.m_ew,
        assumed(inputs, "elementwise_passes"),
        "assumed: unfused passes per layer (two norms, rotary, activation, two residual adds, ...)",
    )
    work.given(sh.b_a, dtype_bytes("bf16"), "16-bit activations")
    work.compute(sh.ffn_io_values_per_token)
    work.compute(cal.elementwise_bytes, "elementwise_bytes")
    share = work.compute(sb.elementwise_share, "elementwise_share")
    assert setup.gpu is not None  # the question always names one
    gemm_ridge, attention_ridge = calibrated_ridges(work, setup, setup.gpu)
    knee = work.solve(it.I_w.symbol, cal.I_ridge_g.symbol, sym.B)
    knee_batch = evaluate(knee.closed_form, work.values, work.library)
    work.solved(knee, cal.B_ridge_g, knee_batch, result="calibrated_ridge_batch")
    v, r = sheet.values, sheet.results
    large = inputs.get("large_batch", 64)
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    answer.headline("elementwise_share", share)
    q = {
        "gemm": answer.headline("gemm_intensity", v[it.I_w], "FLOP/byte"),
        "attention": answer.headline("attention_intensity", v[it.I_att], "FLOP/byte"),
        "flip": answer.headline("flip_batch", r["flip_batch"].value, "sequence"),
        "ridge": answer.headline("ridge_intensity", v[it.I_ridge], "FLOP/byte"),
        "ew": answer.headline("elementwise_bytes", v[cal.X_ew], "byte"),
        "share": Quantity(share * 100),
        "batch": Quantity(v[sym.B]),
        "weights": Quantity(v[sym.W], "byte"),
        "gpu": Quantity(setup.gpu.name),
        "gemm_ridge": answer.headline("calibrated_gemm_ridge", gemm_ridge, "FLOP/byte"),
        "attention_ridge": answer.headline("calibrated_attention_ridge", attention_ridge, "FLOP/byte"),
        "knee_batch": Quantity(knee_batch, "sequence"),
    }
    top = max(v[it.I_w], v[it.I_att])
    against = (
        "All of them are far under the {gpu} ridge of {ridge}"
        if 4 * top <= v[it.I_ridge]
        else "All of them are under the {gpu} ridge of {ridge}"
        if top < v[it.I_ridge]
        else "Against the {gpu} ridge of {ridge}, "
        + ("the GEMMs are" if v[it.I_w] >= v[it.I_ridge] else "attention is")
        + " compute-bound already"
    )
    answer.summary = Prose(
        "summary",
        "At batch {batch} every weight GEMM (QKV, O, MLP, LM head) ties at {gemm}: two FLOPs per weight per token over "
        "bytes per weight, whatever the matrix. Attention sits at {attention}, "
        + ("all heads over the one latent they share" if setup.model.config.is_mla else "the query-to-KV head ratio")
        + ", which no batch moves, so the ranking flips at {flip}: below it attention ranks first, above it the "
        "GEMMs do. "
        + against
        + "; at the efficiencies kernels reach the ridges are {gemm_ridge} for the GEMMs (reached at {knee_batch}) "
        "and {attention_ridge} for attention, whose kernels get a smaller share of peak FLOP/s"
        + (", so attention at {attention} is compute-bound in practice" if v[it.I_att] >= attention_ridge else "")
        + "."
        + recurrent_states(setup, sheet)
        + " Fusion removes the elementwise round trips, {ew} a step "
        "({share} % of the {weights} of weights), and kernel launches; it cannot raise a GEMM's or attention's "
        "intensity: only the batch or the architecture can.",
        q,
    )
    answer.sections.append(Section("Intensity per operation, and what fusion removes", sheet))
    answer.figures.append(
        Figure(
            "roofline",
            "The decode operations placed on the roofline: the weight GEMMs at the "
            "default batch and at a large one, attention fixed by its head ratio.",
            partial(_draw, sheet, setup, large),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "The GEMMs' intensity grows with the batch (2·B/b_w); attention's is n_h/n_kv in 16 bits "
            "at any batch: GQA raised it, MLA raises it further, an 8-bit cache doubles it.",
        ),
        Prose(
            "takeaway",
            "Fusion helps the memory-bound small ops (norms, rotary, activation, residual adds) and "
            "the launch count; it does nothing for the weight reads that set the floor.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Activation traffic of the GEMMs themselves is left out of their intensity; at decode it "
            "is small beside the weights, at prefill it is not.",
        ),
        Prose(
            "caveat",
            "The elementwise byte count rests on the assumed number of passes per layer "
            "(--set elementwise_passes=...).",
        ),
    ]
    _wrong_answers(answer, q)
    _follow_up(answer, sheet, setup, int(large), q)
    return answer


def _wrong_answers(answer: Answer, q: dict[str, Quantity]) -> None:
    """Rankings candidates commonly give, each against the sheet's own figures."""
    answer.wrong_answers += [
        Prose(
            "wrong",
            "Ranking the LM head or the MLP above QKV because they are bigger: at decode every weight GEMM runs "
            "at 2·B·τ/b_w (τ the tokens a sequence gains a step, 1 without speculation), {gemm} here, whatever its "
            "size. Size sets a GEMM's time, not its intensity.",
            q,
        ),
        Prose(
            "wrong",
            "Fusing attention into the projections to raise its intensity: fusion removes round trips of "
            "activations, not cache reads, so attention stays at {attention}.",
            q,
        ),
        Prose(
            "wrong",
            "Expecting fusion to save much of a decode step: the elementwise traffic it removes is {share} % of "
            "the weight bytes the step reads anyway.",
            q,
        ),
    ]


def _follow_up(answer: Answer, sheet, setup, large: int, q: dict[str, Quantity]) -> None:  # type: ignore[no-untyped-def]
    """The same ranking at a large batch: the GEMMs' intensity against both ridges."""
    v = sheet.values
    if large <= v[sym.B]:
        return
    at_large = evaluate(it.gemm_intensity.expr, {**v, sym.B: sympy.Integer(large)}, model_library(setup.model))
    q["large"] = Quantity(large, "sequence")
    q["gemm_large"] = Quantity(at_large, "FLOP/byte")
    side = "compute-bound" if at_large >= v[cal.I_ridge_g] else "still bandwidth-bound"
    answer.follow_up = FollowUp(
        f"And at a batch of {large:,}?",
        Prose(
            "follow-up",
            "The GEMMs climb to {gemm_large}, above attention's {attention} and " + side + " against the "
            "{gemm_ridge} ridge kernels reach; attention does not move.",
            q,
        )
        if at_large > v[it.I_att]
        else Prose(
            "follow-up",
            "The GEMMs climb to {gemm_large}, still below attention's {attention}, which does not move.",
            q,
        ),
    )


QUESTION = Question(
    id="intensity-ranking",
    title="Rank the decode-time arithmetic intensity of the QKV projection, attention, the MLP and the LM head. "
    "Which ones can fusion help?",
    source="Seed 004, question 14",
    level="Senior",
    kind="explanation",
    defaults={
        "model": "llama3-70b",
        "gpu": "h100",
        "dtype": "bf16",
        "batch": 1,
        "context": 2048,
        "elementwise_passes": 8,
        "large_batch": 64,
    },
    changeable=("model", "gpu", "dtype", "kv_dtype", "batch", "context", "elementwise_passes", "large_batch"),
    build=build,
)
