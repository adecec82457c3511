"""`derive utilisation`: MBU, MFU and HFU of a decode step from its measured time."""

from __future__ import annotations

import sympy

from derive.core.errors import DeriveError
from derive.core.sheet import Sheet
from derive.core.units import format_quantity
from derive.derivations.common import Setup, model_notes, start
from derive.derivations.energy import at_batch, decode_roofline, max_batch
from derive.derivations.layout_step import on_layout
from formulas import notation as sym
from formulas import utilisation as u

# The most a step's bytes can be off by a format read as another: 16-bit weights or cache taken for 4-bit ones.
MISMATCH = 4


def utilisation(
    setup: Setup, measured_step_time: sympy.Rational | None = None, recompute_fraction: sympy.Rational | int = 0
) -> Sheet:
    model, gpu = setup.model, setup.gpu
    if gpu is None:
        raise DeriveError("utilisation needs an accelerator", "Pass --gpu NAME (see 'derive gpus')")
    if measured_step_time is not None and measured_step_time <= 0:
        raise DeriveError("the measured step time must be positive", "Pass the time between two decode steps")
    work = start("utilisation", f"Utilisation of a {model.title} decode step on {gpu.title}", setup)
    weights, one_sequence = decode_roofline(work, setup)
    work.heading("Memory ceiling")
    max_batch(work, setup, weights, one_sequence)
    work.heading(f"Roofline floor at batch {setup.batch:,}")
    at_batch(work, setup, setup.batch, "--batch" if "batch" not in setup.defaults else "default")
    floor = work.values[sym.t_step]
    bound = "memory" if work.values[sym.t_mem] >= work.values[sym.t_comp] else "compute"

    work.heading("Utilisation")
    if measured_step_time is None:
        work.given(u.t_meas, floor, "none measured: the roofline floor t_step", inline=True)
        at_floor = "MBU" if bound == "memory" else "MFU"
        work.note(
            f"no measured step time: the roofline floor is used, so the {bound} side reads 100% by "
            f"construction ({at_floor} = 100% is the floor); pass a measured time to compare"
        )
    else:
        work.given(u.t_meas, measured_step_time, "measured", inline=True)
    # Kept at zero in HFU's formula: that decode recomputes nothing is the point HFU against MFU makes.
    work.given(
        u.f_rc, recompute_fraction, "decode recomputes nothing" if recompute_fraction == 0 else "given", keep=True
    )
    work.compute(work.library.get("step_bytes_per_gpu"))
    mbu = work.compute(work.library.get("mbu"), "mbu")
    if mbu > MISMATCH:
        raise DeriveError(
            f"--step-time {format_quantity(measured_step_time, 'second')} is {format_quantity(mbu, '')} times shorter "
            f"than the {format_quantity(work.values[sym.t_mem], 'second')} the step's bytes take at peak bandwidth: no "
            f"step beats the roofline, and no weight or cache format read as another explains more than {MISMATCH}x",
            "Check the time's unit (ms, us) and --batch, --context, --dtype and --kv-dtype",
        )
    work.compute(work.library.get("step_flops"))
    work.compute(work.library.get("mfu"), "mfu")
    work.compute(work.library.get("hfu"), "hfu")
    gap = work.compute(work.library.get("unexplained_time"), "unexplained_time")
    work.result("roofline_step_time", sym.t_step, floor, work.library.get("step_time").expr)

    work.note(
        "to measure MBU on a running server: time the decode steps at a steady batch (inter-token latency, "
        "or the server's per-step time), take the bytes each GPU must read per step (the weights the step "
        "multiplies through over n, plus the batch's KV at its current context, as above), and divide by "
        "time x peak bandwidth; a profiler's DRAM-throughput counter (Nsight Compute, DCGM) gives the "
        "achieved bandwidth directly as a cross-check"
    )
    if measured_step_time is not None and gap > 0:
        work.note(
            f"the step is {bound}-bound on the roofline and takes {format_quantity(gap, 'second')} more than its "
            f"floor ({float(1 - floor / measured_step_time):.0%} of the step): candidates are "
            + (
                "collectives below full link speed"
                if on_layout(work)
                else "tensor-parallel all-reduces (the floor counts none)"
            )
            + ", kernel launch and scheduling gaps between "
            "small kernels, achieved bandwidth below the datasheet peak, KV reads from scattered pages, and "
            "the work outside the matmuls (norms, sampling, dequantisation)"
        )
    if mbu > 1:
        work.note(
            "MBU above 100%: the step moved less than assumed (quantised weights or KV, a shorter "
            "context, or fewer sequences); check --dtype, --kv-dtype, --context and --batch"
        )
    work.note(
        "HFU counts recomputed FLOPs (activation checkpointing re-runs forward passes in training), MFU "
        "does not: recomputation raises HFU, never MFU; decode recomputes nothing, so they agree here"
        if recompute_fraction == 0
        else "HFU counts the recomputed FLOPs (f_rc of the model FLOPs), MFU does not: checkpointing raises HFU only"
    )
    model_notes(work, setup)
    return work.sheet
