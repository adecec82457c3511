"""`derive energy`: joules per output token from power and the roofline's throughput.

`decode_roofline` and `at_batch` set up the decode step-time model the way the
knee sheet does; the utilisation sheet reuses them.
"""

from __future__ import annotations

import sympy

from derive.core.errors import DeriveError, FitError
from derive.core.evaluation import evaluate
from derive.core.sheet import Note, Sheet, Work
from derive.core.symbols import Sym
from derive.core.units import format_quantity
from derive.derivations.common import (
    Setup,
    accelerator,
    decode_inputs,
    fits_beside_weights,
    model_notes,
    start,
    values_at,
)
from derive.derivations.layout_step import fewest, on_layout, spread, step
from formulas import energy as energy_formulas
from formulas import notation as sym


def decode_roofline(work: Work, setup: Setup) -> tuple[sympy.Expr, sympy.Expr]:
    """The decode roofline's givens, per-token figures and layout, as the knee sets them; returns (W, K_seq)."""
    gpu = accelerator(work, setup)
    work.heading("From the config")
    decode_inputs(work, setup)
    spread(work, setup, gpu)
    return work.values[sym.W], work.values[sym.kv_seq]


def max_batch(work: Work, setup: Setup, weights: sympy.Expr, one_sequence: sympy.Expr) -> sympy.Expr:
    """B_max, or a FitError when not even one sequence fits beside the weights."""
    assert setup.gpu is not None, "decode_roofline gave the accelerator"
    value = fits_beside_weights(work, setup, setup.gpu)
    if setup.batch > value:
        raise FitError(
            f"--batch {setup.batch:,} does not fit: memory holds {int(value):,} sequences of {setup.context:,} tokens",
            f"Use --batch {value} or less, a larger --tp, or a shorter --context",
        )
    return value


def at_batch(work: Work, setup: Setup, batch: object, note: str) -> None:
    """Set B part-way through the sheet and recompute the step at it: what it reads, then its times."""
    work.given(sym.B, batch, note, inline=True)
    step(work, setup)


def evaluate_at(work: Work, batch: sympy.Expr, wanted: tuple[Sym, ...]) -> dict[Sym, sympy.Expr]:
    """The step's figures at another batch, without touching the sheet's values."""
    values = values_at(work, {sym.B: batch})
    return {s: evaluate(s.symbol, values, work.library) for s in wanted}


def _calibrated_beside(work: Work, setup: Setup, joules: sympy.Expr) -> None:
    """The estimate beside the floor: the same power and tokens over the calibrated step (derive predict's TPOT at this
    batch and context), so a token's energy grows with the step; none where predict cannot run."""
    from derive.derivations.costs import calibrated_at

    real = calibrated_at(setup, setup.batch)
    tpot = real.results["tpot"].value if real is not None and "tpot" in real.results else None
    if not isinstance(tpot, sympy.Expr):
        return
    estimate = joules * tpot / work.values[sym.t_step]
    work.result("joules_per_token_calibrated", energy_formulas.e_tok, estimate)
    work.note(
        f"at the calibrated step ({format_quantity(tpot, 'second')}, derive predict's TPOT at this batch and context) "
        f"a token costs {format_quantity(estimate, 'joule/token')}, the estimate beside the floor's "
        f"{format_quantity(joules, 'joule/token')}; derive plan's J/tok also counts the prompt passes a server "
        "interleaves with its steps"
    )


def energy(setup: Setup) -> Sheet:
    model, gpu = setup.model, setup.gpu
    if gpu is None:
        raise DeriveError("energy needs an accelerator", "Pass --gpu NAME (see 'derive gpus')")
    work = start("energy", f"Energy per output token of {model.title} on {gpu.title}", setup)
    weights, one_sequence = decode_roofline(work, setup)
    work.given(energy_formulas.P_acc, gpu.power, "--power" if "power" in gpu.overridden else "datasheet TDP")
    work.heading("Memory ceiling")
    largest = max_batch(work, setup, weights, one_sequence)

    work.heading(f"Energy per token at batch {setup.batch:,}")
    at_batch(work, setup, setup.batch, "--batch" if "batch" not in setup.defaults else "default")
    work.compute(work.library.get("throughput_floor"))
    work.compute(work.library.get("step_energy"))
    joules = work.compute(work.library.get("energy_per_token"), "joules_per_token")
    _calibrated_beside(work, setup, joules)

    # The other batches are evaluated aside: a sheet's worked lines show its final values.
    work.heading(f"The same at batch {fewest(setup)} and at the largest batch memory holds")
    per_token = work.library.get("energy_per_token")
    ends, smallest = {}, sympy.Integer(fewest(setup))
    for batch, name in ((smallest, "joules_per_token_batch1"), (largest, "joules_per_token_max_batch")):
        figures = evaluate_at(work, batch, (sym.t_step, sym.R, per_token.defines))
        shown = ", ".join(f"{s.name} = {format_quantity(v, s.unit)}" for s, v in figures.items())
        work.sheet.steps.append(Note(f"B = {format_quantity(batch, 'sequence')}: {shown}"))
        work.result(name, per_token.defines, figures[per_token.defines], per_token.expr)
        ends[name] = figures

    one = ends["joules_per_token_batch1"][per_token.defines]
    full = ends["joules_per_token_max_batch"][per_token.defines]
    work.result("batch1_over_max_batch", None, one / full)
    rise = ends["joules_per_token_max_batch"][sym.R] / ends["joules_per_token_batch1"][sym.R]
    work.note(
        f"what moves it most is the denominator: throughput rises {format_quantity(rise, '')}x from batch {smallest} "
        f"to "
        f"{int(largest):,} while the power is capped at the TDP, so a token costs "
        f"{format_quantity(one, 'joule/token')} alone and {format_quantity(full, 'joule/token')} in a full batch; "
        f"the weights read each step are shared by every sequence in it"
    )
    work.note(
        "power is the TDP for the whole step: an upper bound on the accelerators' draw (a memory-bound step "
        "usually draws less); host CPUs, networking and cooling (PUE) are not counted"
    )
    work.note(
        "step time is the roofline floor (peak bandwidth and FLOP/s"
        + (", links at full speed" if on_layout(work) else ", tensor parallelism without its communication")
        + "): a real step is slower, and its energy per token higher in proportion"
    )
    model_notes(work, setup)
    return work.sheet
