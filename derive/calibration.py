"""The fitted values of the calibrated predictor's terms, per accelerator, and where they came from.

tools/calibrate.py fits them to profiled kernel timings and writes formulas/calibration.json;
this module reads that file. An accelerator without a fit of its own takes the default's
values (efficiencies and fixed times carry over better than nothing), and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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
    cal.alpha_ar,
    cal.eta_link,
    cal.t_Lp,
    cal.alpha_p,
    cal.eta_linkp,
    cal.eta_w,
    cal.eta_kv,
    cal.eta_g,
    cal.eta_p,
    cal.eta_a,
    cal.m_ew,
)
ACTIVATION_BYTES = 2  # activations and all-reduces in bf16 whatever the weights (TensorRT-LLM, vLLM)
ALLREDUCES_PER_LAYER = 2  # Megatron: after attention and after the MLP


@dataclass(frozen=True)
class Calibration:
    """The fitted values for one accelerator: `fitted_on` names the accelerator whose fit they are."""

    gpu: str
    fitted_on: str
    values: dict[Any, sympy.Expr]
    source: str
    test_error: dict[str, dict[str, float]]  # output -> median, p90, points

    @property
    def borrowed(self) -> bool:
        return self.fitted_on != self.gpu


@cache
def _data() -> dict[str, Any]:
    text = resources.files("formulas").joinpath("calibration.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def calibration(gpu: Gpu) -> Calibration:
    """The fitted values for `gpu`, or the default accelerator's where it has none."""
    data = _data()
    fits = data["accelerators"]
    fitted_on = gpu.name if gpu.name in fits else data["default"]
    fit = fits[fitted_on]
    values = {s: sympy.Float(fit["values"][s.key], 6) for s in FITTED}
    source = f"fitted to {data['source']} on {fit['system']}, models {', '.join(fit['train_models'])}"
    return Calibration(gpu.name, fitted_on, values, source, fit["test_error"])


def predictor_values(gpu: Gpu, fitted: bool = True) -> dict[Any, sympy.Expr]:
    """Every value the calibrated terms need beyond the model's: the fit (unless not `fitted`), activations, link."""
    values: dict[Any, sympy.Expr] = dict(calibration(gpu).values) if fitted else {}
    values[sh.b_a] = sympy.Integer(ACTIVATION_BYTES)
    values[cal.m_ar] = sympy.Integer(ALLREDUCES_PER_LAYER)
    # A GPU without a link in the catalog runs on one accelerator only (the predictor refuses --tp > 1);
    # the wire term is then multiplied by Min(n - 1, 1) = 0, and any positive bandwidth stands in.
    values[sh.BW_link] = gpu.link if gpu.link is not None else gpu.bandwidth
    return values
