"""Seed 004, question 14: decode arithmetic intensity of QKV, attention, MLP and LM head, and what fusion helps."""

from __future__ import annotations

from functools import partial

import sympy

from derive import figures
from derive.answers import Answer, Inputs, Question, assumed
from derive.catalog import dtype_bytes
from derive.derivations import costs
from derive.derivations.common import model_library
from derive.evaluation import evaluate
from derive.sheet import Figure, Prose, Quantity, Section, Work
from formulas import calibrated as cal
from formulas import intensity as it
from formulas import notation as sym
from formulas import sharding as sh
from formulas import step_budget as sb


def _draw(sheet, setup, large, stem):  # type: ignore[no-untyped-def]
    v = sheet.values
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
    }
    answer.summary = Prose(
        "summary",
        "At batch {batch} every weight GEMM (QKV, O, MLP, LM head) ties at {gemm}: two FLOPs per weight per token over "
        "bytes per weight, whatever the matrix. Attention sits at {attention}, the query-to-KV head ratio, which no "
        "batch moves, so the ranking flips at {flip}: below it attention ranks first, above it the GEMMs do. All of "
        "them are far under the {gpu} ridge of {ridge}. Fusion removes the elementwise round trips, {ew} a step "
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
    return answer


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
