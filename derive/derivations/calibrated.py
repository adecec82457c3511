"""The calibrated predictor's inputs and caveats on a sheet: the fitted values, the link, where they came from."""

from __future__ import annotations

import sympy

from derive.calibration import ACTIVATION_BYTES, FITTED, Calibration, calibration
from derive.catalog import Gpu
from derive.core.errors import DeriveError
from derive.core.sheet import Work
from derive.derivations.common import Setup
from derive.systems import tp_link
from formulas import calibrated as cal
from formulas import notation as sym
from formulas import sharding as sh


def calibration_inputs(work: Work, setup: Setup, gpu: Gpu) -> Calibration:
    """Give the fitted values for `gpu` and what the all-reduce terms need; return the fit."""
    n = work.values[sym.n]
    if n > 1 and gpu.link is None:
        raise DeriveError(
            f"{gpu.name} has no GPU-to-GPU link in the catalog, so a tensor-parallel all-reduce has no bandwidth",
            "Use --tp 1, --floor, or another --gpu",
        )
    fit = calibration(gpu, setup.dtype)
    work.heading("Calibration")
    for quantity in FITTED:
        work.given(quantity, fit.values[quantity], fit.label(quantity))
    collective_inputs(work)
    work.given(sh.BW_link, *tp_link(gpu, n), inline=True)
    return fit


def collective_inputs(work: Work) -> None:
    """What the collectives move: bf16 activations, the model's all-reduces a layer (two in a layer with a mixer and an
    MLP), a d-wide vector a token (once a sheet)."""
    if sh.b_a in work.values:
        return
    work.given(sh.b_a, ACTIVATION_BYTES, "bf16 activations, whatever the weights", inline=True)
    allreduce_count(work)
    work.compute(sh.ffn_io_values_per_token)


def allreduce_count(work: Work, inline: bool = True) -> None:
    """m_ar as the model's layers give it: one all-reduce after each mixer and each MLP (two in a Llama layer)."""
    count = work.library.get("allreduces_per_layer").expr
    said = "a mixer and an MLP in every layer" if count == 2 else "the model's layers, on average"
    work.given(cal.m_ar, count, f"{said} (Megatron)", inline=inline)


def calibrated_ridges(work: Work, setup: Setup, gpu: Gpu) -> tuple[sympy.Expr, sympy.Expr]:
    """The GEMM and attention ridges at the fitted efficiencies (the realistic figure beside the peak ridge)."""
    fit = calibration(gpu, setup.dtype)
    work.heading("The ridge at the efficiencies kernels reach")
    for quantity in (cal.eta_w, cal.eta_g, cal.eta_kv, cal.eta_a):
        work.given(quantity, fit.values[quantity], fit.label(quantity))
    gemm = work.compute(work.library.get("calibrated_gemm_ridge"), "calibrated_gemm_ridge")
    return gemm, work.compute(work.library.get("calibrated_attention_ridge"), "calibrated_attention_ridge")


def borrowed_error(fit: Calibration) -> str:
    """'; borrowing so was measured at ...' where calibration.json measured what a borrowed fit costs."""
    if fit.borrowed_error is None:
        return ""
    tpot, ttft = fit.borrowed_error["tpot"], fit.borrowed_error["ttft"]
    return (
        f"; borrowing so is off by {tpot['median']:.1%} in TPOT and {ttft['median']:.1%} in TTFT at the median, "
        f"measured on {fit.borrowed_error_on}"
    )


def calibration_notes(work: Work, fit: Calibration) -> None:
    tpot, ttft = fit.test_error["tpot"], fit.test_error["ttft"]
    work.note(
        f"calibrated: {fit.source}; on the models it was not fitted to, TPOT is off by {tpot['median']:.1%} "
        f"at the median ({tpot['p90']:.1%} at the 90th percentile), TTFT by {ttft['median']:.1%} ({ttft['p90']:.1%})"
    )
    if fit.borrowed:
        work.note(
            f"no fit for {fit.gpu} in {fit.precision}: the {fit.fitted_on} {fit.fitted_precision} fit's efficiencies "
            f"and fixed times stand in, applied to {fit.gpu}'s own datasheet figures{borrowed_error(fit)}"
        )
    if fit.max_tp is not None and work.values.get(sym.n, 1) > fit.max_tp:
        work.note(
            f"the {fit.gpu} fit covers tensor parallelism up to {fit.max_tp}: beyond it aiconfigurator's all-reduce "
            "tables grow faster than one link efficiency follows, and the estimate is far off (formulas/"
            "calibration.json's beyond_max_tp_test_error)"
        )
    work.note(
        "the estimate does not carry in-flight batching or scheduler overheads, speculative decoding (a draft's "
        "gain, where asked, is formulas/speculative.py's expectation over the profiled step), or software other than "
        "the profiled tables' (TensorRT-LLM); its error by model kind is in benchmarks/predictor_error.py"
    )
