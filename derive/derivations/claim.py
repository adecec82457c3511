"""`derive claim`: is a claimed tokens/s per user possible, and what would have to be true for it?"""

from __future__ import annotations

import math

import sympy

from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.core.sheet import Sheet, Work
from derive.core.units import format_quantity
from derive.derivations.common import (
    Setup,
    accelerator,
    decode_inputs,
    model_notes,
    start,
    values_at,
)
from derive.derivations.layout_step import fewest, on_layout, spread, step
from formulas import claim as cl
from formulas import notation as sym

_RATE = "token/second/sequence"


def claim(setup: Setup) -> Sheet:
    if setup.claim is None:
        raise DeriveError("claim needs --claim", 'Pass --claim "1000 token/s"')
    model, gpu = setup.model, setup.gpu
    if gpu is None:
        raise DeriveError("claim needs an accelerator", "Pass --gpu NAME (see 'derive gpus')")
    work = start(
        "claim", f"{format_quantity(setup.claim, 'token/second')} per user for {model.title} on {gpu.title}?", setup
    )
    work.sheet.inputs["claim"] = float(setup.claim)
    decode_inputs(work, setup)
    accelerator(work, setup)
    n = spread(work, setup, gpu)
    work.given(cl.r_claim, setup.claim, "--claim")
    work.given(sym.B, fewest(setup), "one user" + (" on each attention rank" if setup.dp > 1 else ""))

    work.heading(f"The bandwidth floor at batch {fewest(setup)}")
    step(work, setup, ("memory_time",) if on_layout(work) else ("kv_bytes", "memory_time"))
    floor = work.compute(work.library.get("floor_tokens_per_s_per_user"), "floor_tokens_per_s_per_user")
    verdict = "impossible as stated" if setup.claim > floor else "within the floor"
    work.note(
        f"the claim is {float(setup.claim / floor):.3g} x the bandwidth floor of "
        f"{format_quantity(floor, _RATE)}: {verdict}"
    )

    work.heading("What would have to be true")
    bits = work.solve(cl.r_floor.symbol, cl.r_claim.symbol, sym.b_w)
    needed = work.root(bits)
    work.solved(bits, cl.b_w_req, needed, "" if needed else "no weight format: one sequence's cache alone is too slow")
    if needed is not None:
        work.compute(work.library.get("required_bits_per_weight"), "required_bits_per_weight")
    else:
        work.result("required_bits_per_weight", cl.q_req, None, work.library.get("required_bits_per_weight").expr)

    passes = work.solve(cl.r_floor.symbol, cl.r_claim.symbol, sym.tau)
    tau_needed = work.root(passes)
    # Each token a pass gains gathers its own embedding row: past a rate, no number of tokens a pass keeps up.
    why = (
        "from speculative decoding, with free drafts"
        if tau_needed
        else "no number of tokens a pass: each token's own reads alone are too slow"
    )
    work.solved(passes, cl.tau_req, tau_needed, why, result="required_tokens_per_pass")
    if tau_needed is not None:
        _speculation_note(work, tau_needed)
    _aggregate(work, setup, n)

    work.note(
        "roofline floor: peak bandwidth, "
        + ("the layout's reads alone" if on_layout(work) else "tensor parallelism without its communication")
        + ", no kernel overheads; a real server is slower, so a claim above the floor cannot hold as stated"
    )
    model_notes(work, setup)
    return work.sheet


def _speculation_note(work: Work, tau_needed: sympy.Expr) -> None:
    # Verifying tau tokens a pass costs tau times the weight FLOPs: past t_mem the pass is compute-bound.
    compute = evaluate(sym.t_comp.symbol, values_at(work, {sym.tau: tau_needed}), work.library)
    if compute > work.values[sym.t_mem]:
        work.note(
            f"verifying {float(tau_needed):.3g} tokens a pass takes {format_quantity(compute, 'second')} at peak, "
            f"longer than the {format_quantity(work.values[sym.t_mem], 'second')} read: the pass turns "
            f"compute-bound, so speculation cannot reach the claim"
        )


def _aggregate(work: Work, setup: Setup, n: int) -> None:
    """The claimed figure read as aggregate tokens/s: the batch at which the bandwidth-bound rate meets it."""
    work.given(cl.R_claim, setup.claim, "--claim, read as all users together", inline=True)
    batch = work.solve(cl.R_mem.symbol, cl.R_claim.symbol, sym.B)
    at = work.root(batch)
    work.solved(batch, cl.B_claim, at, "" if at else "no batch: the cache reads outgrow the weights' share")
    if at is None:
        return
    values = values_at(work, {sym.B: at})
    memory, compute, holds = (evaluate(s.symbol, values, work.library) for s in (sym.t_mem, sym.t_comp, sym.B_max))
    users = math.ceil(float(at))  # a batch is whole sequences: the first whole batch at or past the claim
    line = f"read as aggregate throughput, the claim needs at least {users:,} user{'s' if users > 1 else ''} at once"
    if compute > memory:
        line += "; there the step is compute-bound, so it needs more"
    if 1 <= holds < at:
        line += f"; memory holds only {int(holds)} sequences of {setup.context:,} tokens beside the weights"
    work.note(line)
    if holds < 1:
        work.note(
            f"the weights and one sequence do not fit in {n} x {format_quantity(work.values[sym.M], 'byte')}: "
            f"the claimed hardware cannot hold the model in {setup.dtype} at all"
        )
