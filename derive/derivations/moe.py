"""`derive experts`: the routed experts one decode step touches, and the weights it reads."""

from __future__ import annotations

from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.core.sheet import Sheet
from derive.core.units import format_quantity
from derive.derivations.common import Setup, model_notes, start, weight_format
from formulas import moe
from formulas import notation as sym


def experts(setup: Setup) -> Sheet:
    model = setup.model
    if not model.config.is_moe:
        raise DeriveError(
            f"{model.name} is not a mixture of experts", "Use a MoE model such as mixtral-8x7b or deepseek-v3"
        )
    work = start("experts", f"Experts one decode step of {model.title} reads at batch {setup.batch:,}", setup)
    shapes = dict(model.formulas.shapes)
    for total in (sym.N, sym.N_routed, sym.N_act):
        work.given(total, evaluate(total.symbol, dict(shapes), work.library), "from the config: derive params")
    weight_format(work, setup)
    work.given(sym.B, setup.batch, "--batch" if "batch" not in setup.defaults else "default")
    work.given(sym.tau, 1, "no speculative decoding")

    work.heading("Routing")
    work.compute(work.library.get("routed_tokens"))
    touched = work.compute(work.library.get("experts_touched"), "experts_touched")

    work.heading("Weights read per step")
    for lookup in model.formulas.totals:
        if lookup.defines in (sym.N_look, sym.n_g):
            work.compute(lookup)
    work.compute(work.library.get("params_per_expert"))
    work.compute(work.library.get("always_read_params"))
    read = work.compute(work.library.get("params_read_per_step"), "params_read_per_step")
    work.compute(work.library.get("bytes_read_per_step"), "bytes_read_per_step")
    ratio = work.compute(work.library.get("read_vs_active"), "read_vs_active")
    active = work.values[sym.N_act]
    active_formula = next(f for f in model.formulas.totals if f.defines == sym.N_act)
    work.result("active_params", sym.N_act, active, active_formula.expr)

    cfg = model.config
    work.note(
        f"each of the {format_quantity(work.values[moe.T_r], '')} tokens of a step picks its own "
        f"top-{cfg.experts_per_token} of {cfg.experts} routed experts; "
        f"their union covers {format_quantity(touched, '')} per MoE layer, "
        f"and each touched expert streams from memory once: {format_quantity(read, 'parameter')} read, "
        f"{format_quantity(ratio, '')} x the {format_quantity(active, 'parameter')} one token uses"
    )
    work.note(
        "at batch 1 a step touches exactly k experts a layer, so it reads the active count less the embedding "
        "table; as the batch grows E_t tends to E and the step reads every matrix"
    )
    work.note(
        "routing taken as uniform and independent across tokens: real routers are balanced over many "
        "steps, not per step, and skewed or correlated routing touches fewer experts, so this is the most a step reads"
    )
    if cfg.shared_experts:
        work.note(f"the {cfg.shared_experts} shared expert(s) per MoE layer serve every token and are read every step")
    work.note(
        "the embedding is a lookup: a step reads only its tokens' rows (n_g each), not the table the active count "
        "includes"
    )
    if model.published_active is not None:
        verdict = "equal" if active == model.published_active else f"differs by {active - model.published_active:,}"
        # The source's full provenance is derive params' (and the catalog's); a note here names where to find it.
        work.note(
            f"published active {model.published_active:,} parameters: {verdict} (its source: derive params --model "
            f"{model.name})"
        )
    model_notes(work, setup)
    return work.sheet
