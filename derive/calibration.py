"""The fitted values of the calibrated predictor's terms, per accelerator, and where they came from.

tools/calibrate.py fits them to profiled kernel timings and writes formulas/calibration.json;
this module reads that file. An accelerator without a fit of its own takes the default's
values (efficiencies and fixed times carry over better than nothing), and a precision without one
the fit it borrows (BORROWS); either says so, with what borrowing was measured to cost where it
could be (Calibration.borrowed_error).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import sympy

from derive.catalog import Gpu
from formulas import calibrated as cal
from formulas import sharding as sh

# The fitted quantities, by the key calibration.json stores them under.
FITTED = (
    cal.t_L,
    cal.t_Lp,
    cal.t_qn,  # held at aiconfigurator's attention op's (tools/calibrate.py)
    cal.t_mlp,  # the dense MLP's share of t_L, fitted on the MoE training model (tools/calibrate.py)
    cal.t_mlpp,
    cal.t_la,  # aiconfigurator's MLA block less its GQA attention, each less streaming (tools/calibrate.py)
    # The all-reduce, fitted to aiconfigurator's all-reduce tables (tools/calibrate.py): decode's and the prompt pass's.
    *cal.ONE_SHOT,
    *cal.LARGE_MESSAGE,
    cal.eta_w,
    cal.eta_w1,
    cal.eta_kv,
    cal.eta_g,
    cal.eta_p,
    cal.eta_a,
    cal.m_ew,
    cal.m_actp,
    cal.w_0,
    cal.w_0p,
    # The routed experts' MoE kernel, fitted to aiconfigurator's MoE tables (tools/calibrate.py): its passes over the
    # routed activations and (a prompt pass's) their intermediates, then its constants in the fit's own expert format
    # and in MXFP4 (formulas/calibrated.py).
    cal.m_x,
    cal.m_xp,
    cal.m_xip,
    *cal.OWN_FORMAT.values(),
    *(fitted for formats in cal.EXPERT_FORMATS.values() for fitted in formats.values()),
)
# What calibration.json takes from aiconfigurator's op tables as they are rather than fitting (tools/calibrate.py).
TAKEN = {
    cal.t_qn: "aiconfigurator 0.12's context attention op with q/k norms less without",
    cal.t_la: "aiconfigurator 0.12's MLA block less a GQA attention's at batch 1, each less its weights streamed",
}
ACTIVATION_BYTES = 2  # activations and all-reduces in bf16 whatever the weights (TensorRT-LLM, vLLM)


@dataclass(frozen=True)
class Calibration:
    """The fitted values for one accelerator and precision, and the fit (accelerator, precision) they come from."""

    gpu: str
    precision: str
    fitted_on: str
    fitted_precision: str
    values: dict[Any, sympy.Expr]
    source: str
    test_error: dict[str, dict[str, float]]  # output -> median, p90, points
    # A borrowed fit's error where it could be measured (a borrowing accelerator has no profiled points), as
    # test_error, and on what; None for a fit of its own.
    borrowed_error: dict[str, dict[str, float]] | None = None
    borrowed_error_on: str = ""
    max_tp: int | None = None  # the largest tensor-parallel size the fit covers, where it stops short of the tables'
    taken_on: dict[str, str] = field(default_factory=dict)  # TAKEN's keys -> the accelerator whose op tables

    @property
    def borrowed(self) -> bool:
        return (self.fitted_on, self.fitted_precision) != (self.gpu, self.precision)

    def label(self, quantity: Any) -> str:
        """Where a sheet says `quantity`'s value comes from: the fit, or the op table it is taken from as it is."""
        taken = TAKEN.get(quantity)
        on = self.taken_on.get(quantity.key, self.fitted_on) if taken else self.fitted_on
        where = f"{taken}, on {on}" if taken else f"fitted on {self.fitted_on}, {self.fitted_precision}"
        return where + (f" (no fit for {self.gpu} in {self.precision})" if self.borrowed else "")


@cache
def _data() -> dict[str, Any]:
    text = resources.files("formulas").joinpath("calibration.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def precision_of(dtype: str) -> str:
    """The fit a weight dtype runs with (its recipe's `fit`): FP8 GEMMs, FP8 blocks and NVFP4 have their own;
    16-bit and weight-only formats the bf16 one."""
    from derive.recipes import recipes

    known = recipes().get(dtype.lower())
    return known.fit if known is not None else "fp8" if dtype.lower() in FP8 else "bf16"


FP8 = ("fp8", "fp8_e4m3", "fp8_e5m2")
# The fit a precision borrows on an accelerator with none in it (aiconfigurator has no tables there): the nearest
# kernels. FP8 blocks run FP8 GEMMs; NVFP4 off Blackwell is dequantised for bf16 matmuls (Gpu.peak), and FP8
# without FP8 tables (an A100) takes bf16. Followed until a fit is found; bf16 borrows nothing.
BORROWS = {"fp8": "bf16", "fp8-block": "fp8", "nvfp4": "bf16"}


def fallbacks(precision: str) -> list[str]:
    """`precision`, then the fits it borrows in turn, down to bf16."""
    chain = [precision]
    while chain[-1] != "bf16":
        chain.append(BORROWS.get(chain[-1], "bf16"))
    return chain


def calibration(gpu: Gpu, dtype: str = "bf16") -> Calibration:
    """The fitted values for `gpu` at `dtype`, or the nearest fit: the same accelerator in the precision `dtype`'s
    borrows (fallbacks), else the default's."""
    data = _data()
    fits = data["accelerators"]
    precision = precision_of(dtype)
    fitted_on = gpu.name if gpu.name in fits else data["default"]
    fitted_precision = next(p for p in fallbacks(precision) if p in fits[fitted_on])
    fit = fits[fitted_on][fitted_precision]
    # Six significant digits, as fitted, carried at double precision: a Float(x, 6) would hold 23 bits and make
    # every sum it enters a single-precision one (a solved batch then moved in its seventh digit with the form).
    values = {s: sympy.Float(f"{fit['values'][s.key]:.6g}", 15) for s in FITTED}
    source = (
        f"fitted to {data['source']} on {fit['system']} in {fitted_precision}, models {', '.join(fit['train_models'])}"
    )
    measured = _borrowed_error(data, gpu.name, precision, fitted_on, fitted_precision)
    return Calibration(
        gpu.name,
        precision,
        fitted_on,
        fitted_precision,
        values,
        source,
        fit["test_error"],
        borrowed_error=measured["test_error"] if measured else None,
        borrowed_error_on=measured["measured_on"] if measured else "",
        max_tp=fit.get("max_tp"),
        taken_on=fit.get("taken_on", {}),
    )


def _borrowed_error(
    data: dict[str, Any], gpu: str, precision: str, fitted_on: str, fitted_precision: str
) -> dict[str, Any] | None:
    """calibration.json's measurement of borrowing this fit (tools/calibrate.py, borrowed), if it is borrowed.

    Another accelerator's fit is measured as the default's fit on every accelerator with a fit of its own; a
    borrowed precision's fit (BORROWS) as each accelerator's fit in it on its own points in that precision.
    """
    if (fitted_on, fitted_precision) == (gpu, precision):
        return None  # a fit of its own
    kind = "accelerator" if fitted_on != gpu else "precision"
    entry = data.get("borrowed", {}).get(kind, {}).get(precision)
    if entry is None or entry["fitted_precision"] != fitted_precision or entry.get("fitted_on", fitted_on) != fitted_on:
        return None
    found: dict[str, Any] = entry
    return found


@cache
def fused_dispatch() -> dict[str, Any]:
    """The fused MoE path's all-gather and reduce-scatter, fitted per accelerator and phase
    (formulas/fused_dispatch.json), with their source."""
    with resources.files("formulas").joinpath("fused_dispatch.json").open() as fh:
        data: dict[str, Any] = json.load(fh)
    return data


# An accelerator without all-gather and reduce-scatter tables of its own takes this one's.
FUSED_BORROWED = "h100"


def fused_dispatch_values(gpu: Gpu, dtype: str) -> dict[Any, sympy.Expr]:
    """formulas/layout.py's DECODE_FUSED and PREFILL_FUSED on `gpu` for weights in `dtype`: its own fits (else
    FUSED_BORROWED's), the gather's in FP8 where TensorRT-LLM gathers FP8 experts' inputs in FP8 (dispatch_share)."""
    from formulas import layout as lay

    fits = fused_dispatch()["accelerators"]
    own = fits.get(gpu.name, fits[FUSED_BORROWED])
    fp8 = dispatch_share(gpu, dtype) < 1
    values: dict[Any, sympy.Expr] = {}
    for phase, symbols in (("decode", lay.DECODE_FUSED), ("prefill", lay.PREFILL_FUSED)):
        gather = "gather_fp8" if fp8 and "gather_fp8" in own[phase] else "gather_bf16"
        for (latency, share), name in zip((symbols[:2], symbols[2:]), (gather, "scatter"), strict=True):
            values[latency] = sympy.Float(own[phase][name]["alpha_s"])
            values[share] = sympy.Float(own[phase][name]["eta"])
    return values


@cache
def deepep() -> dict[str, Any]:
    """Wide expert parallelism's dispatch and combine (DeepEP), fitted per accelerator (formulas/deepep.json)."""
    with resources.files("formulas").joinpath("deepep.json").open() as fh:
        data: dict[str, Any] = json.load(fh)
    return data


# An accelerator without DeepEP tables of its own takes this one's (the fits differ by 5-20% between HGX nodes).
DEEPEP_BORROWED = "h100"


def deepep_values(gpu: Gpu) -> dict[Any, sympy.Expr]:
    from formulas import layout as lay

    fits = deepep()["accelerators"]
    own = fits.get(gpu.name, fits[DEEPEP_BORROWED])
    decode, prefill = own["decode"], own["prefill"]
    return {
        lay.alpha_E: sympy.Float(decode["alpha_s"]),
        lay.eta_E: sympy.Float(decode["eta"]),
        lay.alpha_Ep: sympy.Float(prefill["alpha_s"]),
        lay.eta_Ep: sympy.Float(prefill["eta"]),
    }


# TensorRT-LLM on Blackwell (sm 100) gathers the tokens for FP8 and FP8-block experts in FP8, and sums them back in
# bf16 (aiconfigurator 0.12's MoEDispatch, benchmarks/data/aiconfigurator-0.12-fused-dispatch.json 'how_costed');
# on Hopper both go in bf16.
FP8_DISPATCH_ARCHITECTURES = frozenset({"blackwell"})


def dispatch_share(gpu: Gpu, dtype: str) -> sympy.Rational:
    """formulas/layout.py's r_dq: the dispatch's bytes over the combine's on this accelerator and weight recipe."""
    from derive.recipes import recipes

    recipe = recipes().get(dtype.lower())
    fp8 = recipe is not None and recipe.gemm == "fp8" and recipe.activations == "fp8"
    return sympy.Rational(1, 2) if fp8 and gpu.architecture in FP8_DISPATCH_ARCHITECTURES else sympy.Integer(1)


def predictor_values(gpu: Gpu, dtype: str, fitted: bool = True) -> dict[Any, sympy.Expr]:
    """Every value the calibrated terms need beyond the model's: the fit (unless not `fitted`), activations, link."""
    from formulas import layout as lay

    values: dict[Any, sympy.Expr] = dict(calibration(gpu, dtype).values) if fitted else {}
    if fitted:
        values.update(fused_dispatch_values(gpu, dtype))
        values.update(deepep_values(gpu))
    values[sh.b_a] = sympy.Integer(ACTIVATION_BYTES)
    values[lay.r_dq] = dispatch_share(gpu, dtype)
    # A GPU without a link in the catalog runs on one accelerator only (the predictor refuses --tp > 1);
    # the wire term is then multiplied by Min(n - 1, 1) = 0, and any positive bandwidth stands in.
    values[sh.BW_link] = gpu.link if gpu.link is not None else gpu.bandwidth
    return values
