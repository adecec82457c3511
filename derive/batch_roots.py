"""The largest batch meeting a time target, in closed form, for every layout at once.

A step time is a sum of maxima of terms linear in the batch B, plus for a mixture of experts one q^B term (the
experts a batch touches, formulas/moe.py). Choosing one argument of every maximum gives a branch (derive/planning.py
compiles them); each branch is a + b·B or a + b·B - C·q^B, solved directly or through the Lambert W function, and the
largest batch is the least of the branches' roots.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from derive.core.errors import DeriveError

_PROBE = (0.0, 1.0, 2.0)  # three batches identify a + b·B + c·q^B exactly
_CHECK = 7.0  # and a fourth checks that the branch has that form


def largest_batch(
    branches: list[tuple[Callable[..., Any], float | None]],
    inputs: Sequence[np.ndarray],
    target: float,
    one_row: tuple[Callable[..., Any], Callable[..., Any]] | None = None,
    cap: np.ndarray | None = None,
) -> np.ndarray:
    """The largest (real) batch whose step meets `target`, per layout: the least of the branches' roots.

    Each branch is a + b·B + c·q^B. Three batches give a, b and c; a fourth checks the form.
    Root of a + b·B - C·q^B = T with C = -c > 0, u = ln q < 0: B = D/b + W0(-u·C·q^(D/b)/b)/(-u), D = T - a.

    `one_row` is the step itself and its o_1 (formulas/calibrated.py) where the branches are the step from two
    rows a rank on: at fewer, the weights stream on a GEMV kernel, off the branches' line, and those whole batches
    are checked on the step. `cap` (memory's, a batch cap's) bounds the batch where the caller will cap it: a capped
    line root may land among those batches, where the step may run slower than the line (a GEMV below the GEMM).
    """
    best = np.full(len(inputs[0]), np.inf)
    for branch, q in branches:
        f0, f1, f2 = (np.broadcast_to(branch(*inputs, batch), best.shape).astype(float) for batch in _PROBE)
        if q is None:
            a, b, c = f0, f1 - f0, np.zeros_like(f0)
        else:
            c = (f2 - 2 * f1 + f0) / (1 - q) ** 2
            a, b = f0 - c, f1 - f0 - c * (q - 1)
        predicted = a + b * _CHECK + c * (q**_CHECK if q is not None else 0)
        actual = np.broadcast_to(branch(*inputs, _CHECK), best.shape)
        if not np.allclose(predicted, actual, rtol=1e-7, atol=1e-15):
            raise DeriveError("a branch of the step time is not linear-plus-exponential in the batch")
        best = np.minimum(best, _root(a, b, c, q, target))
    if one_row is None:
        return best
    bound = np.full_like(best, np.inf) if cap is None else np.broadcast_to(np.asarray(cap, float), best.shape)
    return _with_one_row(best, inputs, target, *one_row, bound)


def _with_one_row(
    line: np.ndarray,
    inputs: Sequence[np.ndarray],
    target: float,
    step: Callable[..., Any],
    one: Callable[..., Any],
    bound: np.ndarray,
) -> np.ndarray:
    """The line's root where it, capped at `bound`, lies past every batch of one row a rank; else the largest such
    batch up to `bound` the step itself meets (below 1 where none does)."""
    last = np.zeros_like(line)  # the largest batch of one row a rank, per layout
    met = np.minimum(line, 0.0)
    batch = 1.0
    while True:
        under = np.broadcast_to(np.asarray(one(*inputs, batch), float), line.shape) > 0
        if not under.any():
            break
        meets = np.broadcast_to(np.asarray(step(*inputs, batch), float), line.shape) <= target
        last = np.where(under, batch, last)
        met = np.where(under & meets & (batch <= bound), batch, met)
        batch += 1.0
    return np.where(np.minimum(np.floor(line + 1e-9), bound) > last, line, met)


def _root(a: np.ndarray, b: np.ndarray, c: np.ndarray, q: float | None, target: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d = target - a
        if q is None:  # a + b·B = T; a branch that does not grow with the batch meets the target always or never
            return np.where(b > 0, d / np.where(b > 0, b, 1.0), np.where(d >= 0, np.inf, -np.inf))
        u, big_c = math.log(q), -c
        flat = np.where(d >= 0, np.inf, np.log(np.maximum(-d, 1e-300) / big_c) / u)  # b = 0: q^B = (a - T)/C
        z = -u * big_c / np.where(b > 0, b, 1.0) * np.exp(np.clip(u * d / np.where(b > 0, b, 1.0), -700, 700))
        curved = d / np.where(b > 0, b, 1.0) + _lambert_w0(z) / (-u)
        return np.where(b > 0, curved, flat)


def _lambert_w0(z: np.ndarray) -> np.ndarray:
    """The principal branch of w·e^w = z for z >= 0 (Halley's iteration from a log start; to 1e-14)."""
    w = np.where(z < 1, z * (1 - z), np.log1p(z) - np.log(np.log1p(np.log1p(z)) + 1e-300) * (z > 3))
    for _ in range(50):
        e = np.exp(w)
        f = w * e - z
        step = f / (e * (w + 1) - (w + 2) * f / (2 * w + 2))
        w = w - step
        if np.all(np.abs(step) <= 1e-14 * (1 + np.abs(w))):
            break
    return w
