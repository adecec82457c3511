"""Fit the calibrated predictor's terms per accelerator; write formulas/calibration.json.

    python3 tools/calibrate.py                  # in the project's own environment (numpy, derive)
    python3 tools/calibrate.py --only b200 l40s  # refit these; keep the other accelerators' fits as they are
    python3 tools/calibrate.py --precisions nvfp4  # fit this precision; keep the others' fits as they are
    python3 tools/calibrate.py --keep-dense      # fit the routed experts' terms; keep the dense terms as they are
    python3 tools/calibrate.py --moe-tables VENV/lib/python3.11/site-packages/aiconfigurator_core/systems/data
        # first copy aiconfigurator's MoE kernel tables out of its wheel (benchmarks/data/aiconfigurator-0.12-moe.json)

The data are aiconfigurator 0.12's profiled TensorRT-LLM timings (benchmarks/data/aiconfigurator-0.12.json,
aiconfigurator-0.12-fp8.json, and -fp8-block.json and -nvfp4.json for those weight recipes, made by
tools/aiconfigurator_grid.py in its own virtual environment), one fit per accelerator and precision
(benchmarks/profiled.py GRIDS). The fit is split by model: it sees only the training models (benchmarks/profiled.py
training_models) and reports its error on them and, separately, on every other model of the grid. Where one link
efficiency cannot follow an accelerator's all-reduces (L40S over PCIe), it keeps to the tensor-parallel sizes it
can (profiled.MAX_TP) and reports its error beyond them apart. A borrowed fit's error is measured where it can be
(`borrowed` in the output): on the accelerators and precisions that have a fit of their own.

The routed experts' MoE kernel is fitted apart, to aiconfigurator's MoE kernel tables (benchmarks/profiled.py
moe_tables: 2,690 shapes, formats and layouts; those whose ranks' experts fit in L2 left out, as the profiling loop
read them from there), per accelerator and expert format (formulas/calibrated.py
routed_experts and narrow_expert_time): a fixed time a MoE layer and passes over the routed activations (and, in a
prompt pass, over their expert-wide intermediates), then the
touched experts' bytes streamed and their FLOPs computed (one after the other at a decode step; at a prompt pass,
with its tile padding, whichever is longer), and the narrow-width extra; on the tables' decode rows (at most
MOE_DECODE_TOKENS tokens), then apart on their prompt rows (at least MOE_PREFILL_TOKENS). The end-to-end fit
holds that kernel's constants, its fixed times included, in its precision's format and in MXFP4 (fit_two_stages):
it fits every dense term on the dense training models, then on the MoE training model only t_mlp, the share of a
dense layer's t_L that a dense MLP's kernels take, which a MoE layer runs its routed kernel in place of.

Every term of formulas/calibrated.py is linear in one fitted coefficient (a fixed time, a latency,
an inverse efficiency, a pass count) except where two sit under one Max. So the fit alternates:
take each Max's larger side at the current values, then solve the linear least squares in relative
error with every coefficient bounded (efficiencies at most 1, times at least 0), exactly, over the
subsets of coefficients at their bound. Three or four rounds settle it, from the lower bounds and again
from each Max's other side (_alternating_fit), and the lower error wins.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import profiled  # noqa: E402

from derive.calibration import ACTIVATION_BYTES, BORROWS, FITTED, fallbacks  # noqa: E402
from derive.catalog import dtype_bytes, load_gpu  # noqa: E402
from derive.core.symbols import Sym  # noqa: E402
from formulas import calibrated as cal  # noqa: E402
from formulas import layout as lay  # noqa: E402

OUT = ROOT / "formulas" / "calibration.json"
DEFAULT = "h100"
# Coefficient j multiplies basis j: the fixed times and the pass count directly, the efficiencies inverted.
INVERTED = {s for s in FITTED if s.key.endswith("efficiency")}
# Pairs under one Max, each side one or more columns: weight streaming (at one row and from two) against the GEMMs
# (decode's or the prompt pass's), the cache against attention's FLOPs, the routed experts' streaming against their
# prompt pass's FLOPs (in the fit's format and in each checkpoint format; a decode step's MoE kernel streams then
# computes, cal.DECODE_KERNEL). Every other term adds.
PAIRS = (
    ((cal.eta_w, cal.eta_w1), (cal.eta_g, cal.eta_p)),
    ((cal.eta_kv,), (cal.eta_a,)),
    *(((formats[cal.eta_x],), (formats[cal.eta_xp],)) for formats in (cal.OWN_FORMAT, *cal.EXPERT_FORMATS.values())),
)
MOE_DECODE_TOKENS = 512  # the kernel's decode rows: a decode step's tokens
MOE_PREFILL_TOKENS = 1024  # its prompt rows: a prompt pass's
MOE_NOTE = (
    "the routed experts' MoE kernel fitted per accelerator and expert format to aiconfigurator's MoE tables "
    "(benchmarks/data/aiconfigurator-0.12-moe.json), values by the keys formulas/calibrated.py's routed-expert terms "
    "read; decode_error on the tables' rows of at most 512 tokens, prefill_error on those of at least 1024; "
    "l2_resident counts the tables left out, whose ranks' experts fit in the accelerator's L2 (benchmarks/profiled.py "
    "L2_BYTES: aiconfigurator's loop over one layer read them from there, where a model's step reads them from "
    "memory). A "
    "precision's fit holds its own format's and MXFP4's shares of the peaks, padding, narrow widths and activation "
    "passes and fixed times (fixed_from_moe_kernels says whose), and fits on its MoE training model the share of a "
    "dense layer's fixed time that the dense MLP's kernels a MoE layer runs its routed kernel in place of take "
    "(formulas/calibrated.py t_mlp)"
)
ROUNDS = 12
# A Max's other side's coefficient where the alternating fit starts again (_alternating_fit): a share of 1/2.
START_FLIPPED = 2.0
MAX_TP_NOTE = (
    "fitted and tested on tensor-parallel sizes up to max_tp only (benchmarks/profiled.py MAX_TP): beyond it the "
    "profiled all-reduces slow down per byte far more than one link efficiency follows; beyond_max_tp_test_error "
    "is the fit's error there, on the same held-out models"
)
BORROWED_NOTE = (
    "what a borrowed fit costs, measured on accelerators that have their own fit (a borrowing one has no profiled "
    "points to measure on): 'accelerator' is the default's fit on every other accelerator's held-out models, which an "
    "accelerator without a fit takes; 'precision' is each accelerator's fit in the precision it borrows "
    "(fitted_precision: bf16 for fp8 and nvfp4, fp8 for fp8-block; derive/calibration.py BORROWS) on its own "
    "held-out models in that precision, which an accelerator with no fit in it takes (no_points: those with no "
    "profiled points in it)"
)


# Terms the end-to-end fit holds (their columns zero, their time added whole):
# - the all-reduce's constants, fitted to aiconfigurator's all-reduce tables (fit_allreduce); a prompt pass takes the
#   faster of two kernels, not a sum of coefficient times term;
# - the q/k norms' fixed time, aiconfigurator's attention op's (qk_norm_times): only the MoE training model has such
#   norms, where the MoE layer's fixed time could not be told from it;
# - the dense MLP's share of t_L, fitted after it on the MoE training model (fit_two_stages), and the latent
#   attention's fixed time (latent_attention_time): no dense training model tells either.
ALLREDUCE_SYMBOLS = (*cal.ONE_SHOT, *cal.LARGE_MESSAGE)
DENSE_MLP_FIXED = (cal.t_mlp, cal.t_mlpp)
HELD_TIMES = (*ALLREDUCE_SYMBOLS, cal.t_qn, *DENSE_MLP_FIXED, cal.t_la)


def _unit(j: int | None) -> dict[str, float]:
    """Fitted values that switch every term off but term j (at coefficient 1)."""
    values = {s.key: (np.inf if s in INVERTED else 0.0) for s in FITTED}
    if j is not None:
        values[FITTED[j].key] = 1.0
    return values


def design(
    groups: list[profiled.Group], held: dict[str, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Basis matrix (rows: TTFT then TPOT of every point; columns: FITTED), targets, row weights, and the held terms'
    time at their `held` values (by key: the all-reduces and the q/k norms, HELD_TIMES), whose columns are zero.

    Each model weighs the same in the fit however many of its points fit in memory.
    """
    blocks, targets, weights, offsets = [], [], [], []
    for group in groups:
        rows = 2 * len(group.columns["tp"])
        for output in ("ttft", "tpot"):
            zero = np.zeros(rows // 2)
            basis = np.stack(
                [zero if FITTED[j] in HELD_TIMES else group.predict(output, _unit(j)) for j in range(len(FITTED))],
                axis=1,
            )
            blocks.append(basis)
            targets.append(group.columns[output])
            weights.append(np.full(len(basis), 1 / np.sqrt(rows)))
            offsets.append(group.predict(output, _unit(None) | held))
    return np.concatenate(blocks), np.concatenate(targets), np.concatenate(weights), np.concatenate(offsets)


def _values(theta: np.ndarray) -> dict[str, float]:
    return {s.key: float(1 / t if s in INVERTED else t) for s, t in zip(FITTED, theta, strict=True)}


def _active(basis: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Mask of the basis columns that count at `theta`: each Max contributes its larger side only."""
    index = {s: j for j, s in enumerate(FITTED)}
    mask = np.ones_like(basis, dtype=bool)
    for first, second in PAIRS:
        a = sum(basis[:, index[s]] * theta[index[s]] for s in first)
        b = sum(basis[:, index[s]] * theta[index[s]] for s in second)
        for s in first:
            mask[:, index[s]] = a >= b
        for s in second:
            mask[:, index[s]] = a < b
    return mask


def _bounded_lstsq(matrix: np.ndarray, target: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """min |matrix·x - target| with x >= lower, exactly: the best feasible solution over the bound subsets."""
    best, best_cost = lower.copy(), np.inf
    columns = matrix.shape[1]
    for free in itertools.chain.from_iterable(itertools.combinations(range(columns), r) for r in range(columns + 1)):
        x = lower.copy()
        if free:
            free_idx = list(free)
            rest = target - matrix @ lower + matrix[:, free_idx] @ lower[free_idx]
            solution, *_ = np.linalg.lstsq(matrix[:, free_idx], rest, rcond=None)
            if np.any(solution < lower[free_idx]):
                continue
            x[free_idx] = solution
        cost = float(np.sum((matrix @ x - target) ** 2))
        if cost < best_cost:
            best, best_cost = x, cost
    return best


def fit(
    basis: np.ndarray,
    target: np.ndarray,
    weights: np.ndarray,
    offset: np.ndarray,
    fixed: dict[int, float] | None = None,
) -> np.ndarray:
    """Coefficients minimising the squared relative error, each Max resolved at the previous round's values, with
    `offset` (the all-reduces' time) added to every prediction.

    `fixed` holds coefficients fitted elsewhere (the routed experts' kernel, fit_kernels), as coefficients.
    """
    lower = np.array([1.0 if s in INVERTED else 0.0 for s in FITTED])
    flipped = [[FITTED.index(s) for s in second] for _, second in PAIRS]
    return _alternating_fit(
        basis, target, weights, lower, fixed or {}, lambda theta: _active(basis, theta), ROUNDS, offset, flipped
    )


def _alternating_fit(
    basis: np.ndarray,
    target: np.ndarray,
    weights: np.ndarray,
    lower: np.ndarray,
    held: dict[int, float],
    active: Callable[[np.ndarray], np.ndarray],
    rounds: int,
    offset: np.ndarray | None = None,
    flipped: list[list[int]] | None = None,
) -> np.ndarray:
    """Bounded least squares of the relative error, each Max resolved at the previous round's coefficients (`active`
    masks the basis columns that count there) until they settle; `held` (column -> coefficient) kept, and `offset`
    added to every prediction.

    Alternation settles where it starts: from the lower bounds each Max takes the side that is longer at peak
    figures, and a side never longer there is never fitted (the decode GEMMs' FLOP share stayed at 1). So it starts
    again with each of `flipped`'s column sets (a Max's other side) at coefficient START_FLIPPED, and the settled
    coefficients of lowest error win."""
    base = 0.0 if offset is None else offset

    def settle(theta: np.ndarray) -> np.ndarray:
        theta[list(held)] = list(held.values())
        free = [j for j in range(basis.shape[1]) if j not in held]
        for _ in range(rounds):
            weighted = basis * active(theta) * (weights / target)[:, None]
            known = weighted[:, list(held)] @ np.array(list(held.values())) if held else 0.0
            new = theta.copy()
            new[free] = _bounded_lstsq(weighted[:, free], weights - known - base * weights / target, lower[free])
            if np.allclose(new, theta, rtol=1e-9):
                break
            theta = new
        return theta

    def cost(theta: np.ndarray) -> float:
        predicted = (basis * active(theta)) @ theta + base
        return float(np.sum(((predicted / target - 1) * weights) ** 2))

    starts = [lower.copy()]
    for columns in flipped or []:
        start = lower.copy()
        start[columns] = np.maximum(lower[columns], START_FLIPPED)
        starts.append(start)
    return min((settle(start) for start in starts), key=cost)


def _imbalance(table: profiled.MoeTable) -> float:
    """formulas/layout.py's I_ep: the busiest of the table's ep ranks' routed FLOPs over the mean's."""
    ep, experts = table.ep, table.experts
    spread = 1 + float(lay.c_pop.value) * np.sqrt(2 * ep * np.log(ep) / experts)
    return float(min(spread, ep, experts / table.topk))


def kernel_features(table: profiled.MoeTable) -> np.ndarray:
    """Per row, the kernel's terms at coefficient 1 (columns KERNEL_TERMS), from one rank's seconds at its
    accelerator's peaks (the catalog's, as derive prices them): streaming the experts its tokens touch
    (formulas/moe.py's union), computing the busiest rank's routed FLOPs, their roofline over the width, one FLOP a byte
    of the touched experts' weights (the padding's unit), and one pass over the busiest rank's routed activations
    (k bf16 copies of each d-wide token: formulas/calibrated.py _routed_activations) and over their intermediates
    (k copies of the expert's width on one rank)."""
    gpu = load_gpu(table.gpu)
    _, weight, matmul = profiled.MOE_FORMATS[table.format]
    touched = table.experts * (1 - (1 - table.topk / table.experts) ** table.tokens) / table.ep
    touched_bytes = touched * table.params * float(dtype_bytes(weight))
    bandwidth = float(gpu.bandwidth)
    stream = touched_bytes / bandwidth
    peak = float(gpu.peak(matmul)[0])
    compute = 2 * table.tokens * table.topk * table.params / table.ep * _imbalance(table) / peak
    narrow = np.maximum(stream, compute) / (table.inter / table.tp)
    routed = table.tokens * table.topk * table.hidden * ACTIVATION_BYTES * _imbalance(table) / table.ep
    intermediate = routed * (table.inter / table.tp) / table.hidden
    experts = np.full_like(stream, table.experts / table.ep)  # the experts one rank holds
    return np.stack(
        [
            np.ones_like(stream),
            stream,
            compute,
            narrow,
            touched_bytes / peak,
            routed / bandwidth,
            experts,
            intermediate / bandwidth,
        ],
        axis=1,
    )


# The kernel's terms as tools/calibrate.py fits them, a column each: a fixed time, 1/stream share x streaming,
# 1/FLOP share x computing and padding intensity/FLOP share x the padding's unit (added to streaming at a decode step,
# the longer of streaming and those two in a prompt pass), narrow width x the roofline over the width, activation
# passes x one pass, a fixed time an expert x the experts a rank holds, intermediate passes x one pass over the
# intermediates (formulas/calibrated.py routed_experts and narrow_expert_time).
KERNEL_TERMS = ("fixed", "stream", "gemm", "narrow", "padding", "routed", "experts", "intermediate")
# A kernel's constants every expert format shares (a precision's fit holds one of each), by pass and by the column
# each fits.
SHARED = (
    ("decode", {3: cal.w_0, 5: cal.m_x}),
    ("prefill", {3: cal.w_0p, 5: cal.m_xp, 7: cal.m_xip}),
)
SHARED_SYMBOLS = tuple(s for _, shared in SHARED for s in shared.values())


def _kernel_active(basis: np.ndarray, theta: np.ndarray, kernel: cal.Kernel) -> np.ndarray:
    """Mask of KERNEL_TERMS's columns that count at `theta`: streaming and computing both where `kernel` does not
    overlap them, else the longer (formulas/calibrated.py routed_experts)."""
    streams = basis[:, 1] * theta[1] >= basis[:, 2] * theta[2] + basis[:, 4] * theta[4]
    every = np.ones_like(streams)
    if not kernel.overlapped:
        streams, computes = every, every
    else:
        computes = ~streams
    return np.stack([every, streams, computes, every, computes, every, every, every], axis=1)


def _kernel_fit(rows: list[tuple[np.ndarray, np.ndarray]], held: dict[int, float], kernel: cal.Kernel) -> np.ndarray:
    """Coefficients of KERNEL_TERMS minimising the squared relative error against the latencies, each table weighing
    the same, a Max resolved by alternation as fit() does; `held` (term index -> coefficient) kept."""
    basis = np.concatenate([features for features, _ in rows])
    latency = np.concatenate([y for _, y in rows])
    weights = np.concatenate([np.full(len(y), 1 / np.sqrt(len(y))) for _, y in rows])
    lower = np.array([0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    return _alternating_fit(
        basis,
        latency,
        weights,
        lower,
        held,
        lambda theta: _kernel_active(basis, theta, kernel),
        ROUNDS * 4,
        flipped=[[2]],
    )


def _kernel_error(rows: list[tuple[np.ndarray, np.ndarray]], theta: np.ndarray, kernel: cal.Kernel) -> dict[str, float]:
    def predict(b: np.ndarray) -> np.ndarray:
        return (b * _kernel_active(b, theta, kernel)) @ theta

    relative = np.concatenate([np.abs(predict(b) / y - 1) for b, y in rows])
    return {
        "median": round(float(np.median(relative)), 4),
        "p90": round(float(np.percentile(relative, 90)), 4),
        "points": int(len(relative)),
    }


def fit_kernel(tables: list[profiled.MoeTable], shared: dict[str, float] | None = None) -> dict[str, Any]:
    """One accelerator's MoE kernel in one format: the decode constants on the tables' decode rows, then the prompt
    pass's on their prompt rows, the stream share held; the narrow widths and activation passes held at `shared`'s
    (a kernel fit's values) if given. Only the prompt pass pads: a decode step's experts see a few rows each, where
    padding and the fixed time cannot be told apart."""
    passes: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {"decode": [], "prefill": []}
    for table in tables:
        features = kernel_features(table)
        for name, mask in (
            ("decode", table.tokens <= MOE_DECODE_TOKENS),
            ("prefill", table.tokens >= MOE_PREFILL_TOKENS),
        ):
            if mask.any():
                passes[name].append((features[mask], table.latency[mask]))
    held = {name: {} if shared is None else {j: shared[s.key] for j, s in columns.items()} for name, columns in SHARED}
    # Only the prompt pass pads and moves its intermediates apart: at a decode step's few rows an expert both are part
    # of the fixed time.
    decode = _kernel_fit(passes["decode"], {4: 0.0, 7: 0.0} | held["decode"], cal.DECODE_KERNEL)
    prefill = _kernel_fit(passes["prefill"], {1: decode[1], 6: 0.0} | held["prefill"], cal.PREFILL_KERNEL)
    values = {
        cal.t_x: decode[0],
        cal.t_xE: decode[6],
        cal.t_xp: prefill[0],
        cal.eta_x: 1 / decode[1],
        cal.eta_xg: 1 / decode[2],
        cal.eta_xp: 1 / prefill[2],
        cal.I_xp: prefill[4] / prefill[2],
        cal.w_0: decode[3],
        cal.w_0p: prefill[3],
        cal.m_x: decode[5],
        cal.m_xp: prefill[5],
        cal.m_xip: prefill[7],
    }
    return {
        "values": {s.key: float(f"{v:.6g}") for s, v in values.items()},
        "tables": len(tables),
        "decode_error": _kernel_error(passes["decode"], decode, cal.DECODE_KERNEL),
        "prefill_error": _kernel_error(passes["prefill"], prefill, cal.PREFILL_KERNEL),
    }


def fit_kernels(tables: list[profiled.MoeTable]) -> dict[str, dict[str, Any]]:
    """Every accelerator's MoE kernel fit in every format its tables have: accelerator -> format -> fit, on the tables
    whose ranks' experts do not fit in L2 (profiled.MoeTable.l2_resident: read from L2 in the profiling loop, as no
    model's step reads them); how many were left out is the fit's l2_resident.

    A checkpoint format's (MXFP4's) narrow widths and activation passes are held at the accelerator's bf16 kernel's:
    they are the fit's own (formulas/calibrated.py), the w4a16 kernel multiplies and moves activations in 16 bits,
    and two shapes (gpt-oss's) cannot tell them from its FLOP share."""
    out: dict[str, dict[str, Any]] = {}
    for gpu, form in sorted(
        {(t.gpu, t.format) for t in tables}, key=lambda k: (k[0], k[1] in cal.EXPERT_FORMATS, k[1])
    ):
        every = [t for t in tables if (t.gpu, t.format) == (gpu, form)]
        mine = [t for t in every if not t.l2_resident]
        shared = out[gpu]["bf16"]["values"] if form in cal.EXPERT_FORMATS else None
        fitted = fit_kernel(mine, shared)
        out.setdefault(gpu, {})[form] = {"system": every[0].system, **fitted, "l2_resident": len(every) - len(mine)}
        print(f"{gpu} {form} MoE kernel: {json.dumps(out[gpu][form])}")
    return out


def kernel_values(
    kernels: dict[str, dict[str, Any]], gpu: str, precision: str
) -> tuple[dict[Sym, float], dict[str, str]]:
    """The MoE kernel constants a precision's fit holds on `gpu`, by FITTED symbol: its own format's (or the nearest
    it borrows, as derive/calibration.py's fallbacks, else the default accelerator's), narrow widths included, and
    each checkpoint format's (else its own format's); and where each came from."""
    own_gpu, own = next(
        ((g, f) for g in (gpu, DEFAULT) for f in fallbacks(precision) if f in kernels.get(g, {})), (gpu, "")
    )
    if not own:
        raise SystemExit(f"no MoE kernel table for {gpu} or {DEFAULT} in {precision} or what it borrows")
    fitted = kernels[own_gpu][own]["values"]
    values = {cal.OWN_FORMAT[s]: float(fitted[s.key]) for s in cal.OWN_FORMAT}
    values.update({s: float(fitted[s.key]) for s in SHARED_SYMBOLS})
    origin = {"own": f"{own_gpu} {own}"}
    for name, formats in cal.EXPERT_FORMATS.items():
        source = kernels.get(gpu, {}).get(name)
        for s, fitted_symbol in formats.items():
            values[fitted_symbol] = float(source["values"][s.key]) if source else values[cal.OWN_FORMAT[s]]
        origin[name] = f"{gpu} {name}" if source else f"{own_gpu} {own} (no {name} table on {gpu})"
    return values, origin


ALLREDUCE = profiled.DATA / "aiconfigurator-0.12-allreduce.json"
# The messages each all-reduce kernel is fitted on, in values: the one-shot kernel's small ones (up to a decode step of
# 256 tokens of 8,192) and the large-message kernel's (from there; the faster one serves a prompt pass).
ALLREDUCE_DECODE_VALUES = 2**21
ALLREDUCE_PREFILL_VALUES = 2**21
ALLREDUCE_NOTE = (
    "the tensor-parallel all-reduce fitted per accelerator to aiconfigurator's all-reduce op at tp 2, 4 and 8 "
    "(benchmarks/data/aiconfigurator-0.12-allreduce.json, tools/aiconfigurator_allreduce.py): formulas/calibrated.py "
    "allreduce's latency, its growth a doubling of the group, link share and the growth of its time a byte, the "
    "one-shot kernel's on messages of at most 2^21 values and the large-message kernel's on those of at least 2^21; "
    "one_shot_error and large_message_error are each kernel's on its rows, envelope_error the faster of the two's on "
    "every row, as a prompt pass takes them; the end-to-end fits hold them"
)


def fit_allreduce(rows: list[dict[str, Any]], bandwidth: float) -> dict[str, Any]:
    """formulas/calibrated.py's two all-reduce kernels for one accelerator, each on its messages, minimising the
    squared relative error against aiconfigurator's milliseconds: linear in alpha, alpha*lambda, 1/eta and eps/eta,
    with alpha, alpha*lambda >= 0 and the time a byte at least the link's at two accelerators and at eight (bounded
    least squares, exact); with one group size, no growth."""
    group = np.array([r["tp"] for r in rows], float)
    data = np.array([r["values"] for r in rows], float) * ACTIVATION_BYTES
    seconds = np.array([r["ms"] for r in rows]) / 1e3
    doublings = np.minimum(np.log2(group / 2), cal.PROFILED_DOUBLINGS)
    link = 2 * (group - 1) / group * data / bandwidth
    # The time a byte interpolates between two accelerators' (column 2) and eight's (column 3), each at least the
    # link's; alpha*lambda is the latency's growth a doubling.
    last = cal.PROFILED_DOUBLINGS
    basis = np.stack([np.ones_like(link), doublings, link * (1 - doublings / last), link * doublings / last], axis=1)
    out: dict[str, Any] = {"values": {}}
    one_group = bool(np.all(doublings == 0))  # a single group size: no growth to fit
    kernels = []
    for name, mask, (latency, growth, share, byte_growth) in (
        ("one_shot", data <= ALLREDUCE_DECODE_VALUES * ACTIVATION_BYTES, cal.ONE_SHOT),
        ("large_message", data >= ALLREDUCE_PREFILL_VALUES * ACTIVATION_BYTES, cal.LARGE_MESSAGE),
    ):
        weighted = basis[mask] / seconds[mask, None]
        columns = [0, 2] if one_group else [0, 1, 2, 3]
        theta = np.zeros(4)
        theta[columns] = _bounded_lstsq(
            weighted[:, columns], np.ones(mask.sum()), np.array([0.0, 0.0, 1.0, 1.0])[columns]
        )
        if one_group:
            theta[3] = theta[2]
        relative = np.abs(weighted @ theta - 1)
        kernels.append(basis @ theta)
        out["values"] |= {
            latency.key: theta[0],
            growth.key: theta[1] / theta[0] if theta[0] > 0 else 0.0,
            share.key: 1 / theta[2],
            byte_growth.key: (theta[3] - theta[2]) / (last * theta[2]),
        }
        out[f"{name}_error"] = {
            "median": round(float(np.median(relative)), 4),
            "p90": round(float(np.percentile(relative, 90)), 4),
            "points": int(mask.sum()),
        }
    envelope = np.abs(np.minimum(*kernels) / seconds - 1)
    out["envelope_error"] = {
        "median": round(float(np.median(envelope)), 4),
        "p90": round(float(np.percentile(envelope, 90)), 4),
        "points": len(envelope),
    }
    out["values"] = {k: float(f"{v:.6g}") for k, v in out["values"].items()}
    return out


def fit_allreduces() -> dict[str, dict[str, Any]]:
    """Every profiled accelerator's all-reduce fit (fit_allreduce), over the link derive prices it on."""
    rows = json.loads(ALLREDUCE.read_text())["points"]
    out = {}
    for system, gpu in profiled.SYSTEMS.items():
        mine = [r for r in rows if r["system"] == system and r["tp"] <= profiled.MAX_TP.get(gpu, np.inf)]
        if mine:
            link = load_gpu(gpu).link or profiled.LINKS[gpu]
            out[gpu] = {"system": system, **fit_allreduce(mine, float(link))}
            print(f"{gpu} all-reduce: {json.dumps(out[gpu])}")
    return out


def allreduce_values(allreduces: dict[str, dict[str, Any]], gpu: str) -> dict[Sym, float]:
    """The all-reduce constants a fit on `gpu` holds, by FITTED symbol (the default accelerator's if it has none)."""
    fitted = allreduces.get(gpu, allreduces[DEFAULT])["values"]
    return {s: float(fitted[s.key]) for s in (*cal.ONE_SHOT, *cal.LARGE_MESSAGE)}


QK_NORM = profiled.DATA / "aiconfigurator-0.12-qknorm.json"


def qk_norm_times() -> dict[str, float]:
    """Per accelerator, the seconds aiconfigurator's context attention op adds a layer for q and k norms: the median
    over its rows (tools/aiconfigurator_qknorm.py; 26.0 to 26.5 microseconds on every system and shape, and none in
    its generation op)."""
    rows = json.loads(QK_NORM.read_text())["points"]
    out = {}
    for system, gpu in profiled.SYSTEMS.items():
        added = [r["ms_qk_norm"] - r["ms"] for r in rows if r["system"] == system and r["phase"] == "context"]
        if added:
            out[gpu] = float(f"{np.median(added) / 1e3:.6g}")
    print(f"q/k norms a layer (s): {json.dumps(out)}")
    return out


MLA = profiled.DATA / "aiconfigurator-0.12-mla.json"


def latent_attention_rows() -> dict[str, list[dict[str, Any]]]:
    """aiconfigurator's MLA block and GQA attention rows (tools/aiconfigurator_mla.py), by accelerator."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in json.loads(MLA.read_text())["points"]:
        out.setdefault(profiled.SYSTEMS[row["system"]], []).append(row)
    return out


def latent_attention_time(rows: dict[str, list[dict[str, Any]]], gpu: str, stream_share: float) -> float:
    """Seconds a decode step's latent-attention layer adds beyond a GQA layer's: the median over tp of
    aiconfigurator's MLA block less Llama 3 70B's attention kernels, each less its weights streamed at the fit's
    share of the bandwidth (the default accelerator's rows, at its bandwidth, where `gpu` has none); at least zero."""
    source = gpu if gpu in rows else DEFAULT
    bandwidth = float(load_gpu(source).bandwidth) * stream_share
    added = [
        (r["mla_ms"] - r["gqa_ms"]) / 1e3 - (r["mla_weight_bytes"] - r["gqa_weight_bytes"]) / bandwidth
        for r in rows[source]
    ]
    return max(0.0, float(f"{np.median(added):.6g}"))


def errors(groups: list[profiled.Group], values: dict[str, float]) -> dict[str, dict[str, float]]:
    """Median and 90th-percentile |relative error| of TTFT and TPOT over the groups' points."""
    return errors_each([(groups, values)])


def errors_each(parts: list[tuple[list[profiled.Group], dict[str, float]]]) -> dict[str, dict[str, float]]:
    """errors() over every part's groups at that part's values, pooled."""
    out = {}
    for output in ("ttft", "tpot"):
        relative = np.concatenate(
            [np.abs(g.predict(output, values) / g.columns[output] - 1) for groups, values in parts for g in groups]
        )
        out[output] = {
            "median": round(float(np.median(relative)), 4),
            "p90": round(float(np.percentile(relative, 90)), 4),
            "points": int(len(relative)),
        }
    return out


def _share_of_fixed_time(
    groups: list[profiled.Group], values: dict[str, float], symbol: Sym, output: str, ceiling: float
) -> float:
    """The fixed time `symbol` (a term of its own, outside every Max) minimising the squared relative error of `output`
    over the groups, every other value as `values` has it, each group weighing the same; between 0 and `ceiling`."""
    without, unit = dict(values, **{symbol.key: 0.0}), dict(values, **{symbol.key: 1.0})
    numerator = denominator = 0.0
    for g in groups:
        target = g.columns[output]
        base, per = g.predict(output, without), g.predict(output, unit) - g.predict(output, without)
        weight = 1 / len(target)
        numerator += weight * float(np.sum(per * (target - base) / target**2))
        denominator += weight * float(np.sum(per**2 / target**2))
    return min(ceiling, max(0.0, numerator / denominator))


def fit_two_stages(
    train: list[profiled.Group], held: dict[Sym, float], dense_values: dict[str, float] | None = None
) -> np.ndarray:
    """FITTED's coefficients: every term a dense model has on the dense training models, the MoE kernel's constants
    (fixed times, shares of the peaks, padding and narrow widths) held at `held` (its tables'); then, on the MoE
    training model with all that held, the share t_mlp, t_mlp,p of the dense layer's fixed times t_L, t_L,p that a
    dense MLP's kernels take, which a MoE layer runs its routed kernel in place of (at most t_L; zero where there is
    no MoE training model). With `dense_values` (a fit's values, by key) the dense terms are those, not refitted."""
    kernel = {FITTED.index(s): 1 / v if s in INVERTED else v for s, v in held.items()}
    dense, moe = [g for g in train if not g.moe], [g for g in train if g.moe]
    if dense_values is None:
        theta = fit(*design(dense, {s.key: held[s] for s in HELD_TIMES}), kernel)
    else:
        kept = {j: dense_values[s.key] for j, s in enumerate(FITTED) if s.key in dense_values and j not in kernel}
        theta = np.zeros(len(FITTED))
        for j, value in (kept | kernel).items():
            theta[j] = 1 / value if FITTED[j] in INVERTED and j in kept else value
    for symbol, output, layer in zip(DENSE_MLP_FIXED, ("tpot", "ttft"), (cal.t_L, cal.t_Lp), strict=True):
        ceiling = theta[FITTED.index(layer)]
        theta[FITTED.index(symbol)] = _share_of_fixed_time(moe, _values(theta), symbol, output, ceiling) if moe else 0
    return theta


def split(groups: list[profiled.Group]) -> tuple[list[profiled.Group], list[profiled.Group], list[profiled.Group]]:
    """One accelerator's groups as the fit's training set, its held-out models, and held-out points beyond MAX_TP."""
    within, beyond = profiled.by_tp_scope(groups)
    chosen = profiled.training_models(within)
    train = [g for g in within if g.model in chosen]
    return train, [g for g in within if g.model not in chosen], [g for g in beyond if g.model not in chosen]


def fit_precision(
    precision: str,
    all_groups: list[profiled.Group],
    kernels: dict[str, dict[str, Any]],
    allreduces: dict[str, dict[str, Any]],
    qk_norms: dict[str, float],
    latent: dict[str, list[dict[str, Any]]],
    kept: dict[str, dict] | None = None,  # type: ignore[type-arg]
    dense: dict[str, dict] | None = None,  # type: ignore[type-arg]
) -> dict[str, dict]:  # type: ignore[type-arg]
    """One fit per accelerator of the precision's grid, with its train and test errors, holding the MoE kernel's
    constants (`kernels`, fit_kernels), the all-reduce's (`allreduces`, fit_allreduces) and the q/k norms' time
    (`qk_norms`, qk_norm_times), and sets the latent attention's from `latent` (latent_attention_rows).

    `kept` (accelerator -> precision -> fit, as calibration.json holds them) are taken as they are, not refitted;
    `dense` (the same) give the dense terms of the fits that are (fit_two_stages).
    """
    kept = kept or {}
    grid = json.loads(profiled.GRIDS[precision].read_text())
    fits = {}
    for system, gpu in profiled.SYSTEMS.items():
        if gpu in kept:
            if precision in kept[gpu]:
                fits[gpu] = kept[gpu][precision]
            continue
        train, test, beyond = split([g for g in all_groups if g.system == system])
        if not train:
            continue  # no tables in this precision (an A100 has no FP8)
        held, origin = kernel_values(kernels, gpu, precision)
        held |= allreduce_values(allreduces, gpu) | {cal.t_qn: qk_norms.get(gpu, qk_norms[DEFAULT])}
        # The op tables t_qn and t_la are taken from: the accelerator's own, else the default's.
        taken_on = {cal.t_qn.key: gpu if gpu in qk_norms else DEFAULT, cal.t_la.key: gpu if gpu in latent else DEFAULT}
        held |= dict.fromkeys((*DENSE_MLP_FIXED, cal.t_la), 0.0)  # set after the fit
        theta = fit_two_stages(train, held, dense.get(gpu, {}).get(precision, {}).get("values") if dense else None)
        values = _values(theta)
        values[cal.t_la.key] = latent_attention_time(latent, gpu, values[cal.eta_w.key])
        moe = [g for g in test if g.moe]
        fits[gpu] = {
            "system": system,
            "database": f"trtllm {grid['database_versions'].get(system, '')}".strip(),
            "quant": grid["settings"].get("quant"),
            "train_models": sorted({g.model for g in train}),
            "fixed_from_moe_kernels": origin,
            "taken_on": taken_on,
            "test_models": sorted({g.model for g in test}),
            "values": {k: float(f"{v:.6g}") for k, v in values.items()},
            "train_error": errors(train, values),
            "test_error": errors(test, values),
            "dense_test_error": errors([g for g in test if not g.moe], values),
            "moe_test_error": errors(moe, values) if moe else None,
        }
        if gpu in profiled.MAX_TP:  # fitted and tested up to a tensor-parallel size; the error beyond it said
            fits[gpu]["max_tp"] = profiled.MAX_TP[gpu]
            fits[gpu]["max_tp_note"] = MAX_TP_NOTE
            fits[gpu]["beyond_max_tp_test_error"] = errors(beyond, values) if beyond else None
        print(f"{gpu} {precision}: {json.dumps(fits[gpu]['values'])}")
        for part in ("train_error", "test_error", "dense_test_error", "moe_test_error", "beyond_max_tp_test_error"):
            if part in fits[gpu]:
                print(f"  {part}: {fits[gpu][part]}")
    return fits


def borrowed(accelerators: dict[str, dict], groups: dict[str, list[profiled.Group]]) -> dict[str, Any]:  # type: ignore[type-arg]
    """A borrowed fit's error, measured where it can be: on held-out models of accelerators that have their own.

    An accelerator without a fit takes the default's: its error on every other profiled accelerator says what
    that costs. A precision without one (an A100 in fp8: no tables, so no point to measure on) takes the
    accelerator's fit in the precision it borrows (BORROWS: bf16 for fp8): every accelerator's fit in that one
    on its own points in the precision says what that costs.
    """
    out: dict[str, Any] = {"note": BORROWED_NOTE, "accelerator": {}, "precision": {}}
    held_out = {}  # (precision, accelerator) -> its held-out models' groups within MAX_TP
    for precision, all_groups in groups.items():
        for gpu in {g.gpu for g in all_groups}:
            held_out[(precision, gpu)] = split([g for g in all_groups if g.gpu == gpu])[1]
    for precision in groups:
        default = accelerators[DEFAULT].get(precision)
        others = sorted(g for p, g in held_out if p == precision and g != DEFAULT)
        if default is None or not others:
            continue
        values = default["values"]
        out["accelerator"][precision] = {
            "fitted_on": DEFAULT,
            "fitted_precision": precision,
            "measured_on": f"the held-out models of {', '.join(others)} in {precision}",
            "test_error": errors([x for g in others for x in held_out[(precision, g)]], values),
            "by_accelerator": {g: errors(held_out[(precision, g)], values) for g in others},
        }
    for precision in groups:
        lender = BORROWS.get(precision)  # bf16 borrows nothing
        both = sorted(g for p, g in held_out if p == precision and lender in accelerators[g])
        if lender is None or not both:
            continue
        fit_of = {g: accelerators[g][lender]["values"] for g in both}
        out["precision"][precision] = {
            "fitted_precision": lender,
            "measured_on": f"the held-out models of {', '.join(both)} in {precision}, each with its own {lender} fit",
            "test_error": errors_each([(held_out[(precision, g)], fit_of[g]) for g in both]),
            "by_accelerator": {g: errors(held_out[(precision, g)], fit_of[g]) for g in both},
            "no_points": sorted(g for g in accelerators if precision not in accelerators[g]),
        }
    return out


def write_moe_tables(root: Path) -> None:
    """benchmarks/data/aiconfigurator-0.12-moe.json from aiconfigurator's MoE tables under `root`, at the databases
    the bf16 grid ran on (every system's newest)."""
    versions = json.loads(profiled.GRIDS["bf16"].read_text())["database_versions"]
    extract = profiled.extract_moe_tables(root, versions)
    extract["generated_by"] = "python3 tools/calibrate.py --moe-tables PATH/aiconfigurator_core/systems/data"
    extract["database_versions"] = versions
    profiled.MOE.write_text(json.dumps(extract, separators=(",", ":")) + "\n")
    print(f"wrote {profiled.MOE.relative_to(ROOT)}: {len(extract['tables'])} tables")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        nargs="+",
        choices=sorted(profiled.SYSTEMS.values()),
        help="refit these accelerators only; keep every other one's fit as calibration.json holds it",
    )
    parser.add_argument(
        "--precisions",
        nargs="+",
        choices=list(profiled.GRIDS),
        help="fit these precisions only; keep every other one's fits as calibration.json holds them",
    )
    parser.add_argument(
        "--moe-tables",
        type=Path,
        metavar="DIR",
        help="first copy aiconfigurator's MoE kernel tables out of DIR (aiconfigurator_core/systems/data of an "
        "aiconfigurator 0.12.0 install) into benchmarks/data/aiconfigurator-0.12-moe.json, at the grids' databases",
    )
    parser.add_argument(
        "--keep-dense",
        action="store_true",
        help="keep every term a dense model has as calibration.json holds it; fit only the routed experts' (MoE) terms",
    )
    args = parser.parse_args(argv)
    if args.moe_tables:
        write_moe_tables(args.moe_tables)
    kernels = fit_kernels(profiled.moe_tables())
    allreduces = fit_allreduces()
    qk_norms = qk_norm_times()
    latent = latent_attention_rows()
    old = json.loads(OUT.read_text())["accelerators"] if args.only or args.precisions else {}
    accelerators: dict[str, dict] = {}  # type: ignore[type-arg]
    groups: dict[str, list[profiled.Group]] = {}
    for precision, path in profiled.GRIDS.items():
        if not path.exists():
            print(f"no {precision} grid at {path.relative_to(ROOT)}: run tools/aiconfigurator_grid.py")
            continue
        groups[precision] = list(profiled.groups(precision))
        # The accelerators not refitted in this precision keep what calibration.json holds (a fit or none).
        refit = not args.precisions or precision in args.precisions
        kept = {g: f for g, f in old.items() if not (refit and (not args.only or g in args.only))}
        dense = json.loads(OUT.read_text())["accelerators"] if args.keep_dense else None
        for gpu, fit_ in fit_precision(
            precision, groups[precision], kernels, allreduces, qk_norms, latent, kept, dense
        ).items():
            accelerators.setdefault(gpu, {})[precision] = fit_
    command = "python3 tools/calibrate.py"
    for option in ("only", "precisions"):
        if getattr(args, option):
            command += f" --{option} {' '.join(getattr(args, option))}"
    command += " --keep-dense" if args.keep_dense else ""
    data: dict[str, Any] = {
        "source": "aiconfigurator 0.12.0's profiled TensorRT-LLM kernel tables (static batches)",
        "data": ", ".join(str(p.relative_to(ROOT)) for p in profiled.GRIDS.values())
        + f" (tools/aiconfigurator_grid.py); {profiled.MOE.relative_to(ROOT)} (tools/calibrate.py --moe-tables)",
        "generated_by": command,
        "default": DEFAULT,
        "default_note": (
            "an accelerator without a fit of its own takes the default's values, and a precision without one the "
            "accelerator's fit in the precision it borrows (fp8-block: fp8, then bf16; fp8 and nvfp4: bf16; "
            "derive/calibration.py BORROWS): efficiencies and fixed times, applied to its own datasheet figures"
        ),
        "units": {s.key: s.unit or "dimensionless" for s in FITTED},
        "accelerators": accelerators,
        "moe_kernels_note": MOE_NOTE,
        "moe_kernels": kernels,
        "allreduce_note": ALLREDUCE_NOTE,
        "allreduces": allreduces,
        "qk_norm_note": "prefill_qk_norm_time: aiconfigurator 0.12's context attention op with use_qk_norm less "
        "without, median over benchmarks/data/aiconfigurator-0.12-qknorm.json's rows (tools/aiconfigurator_qknorm.py)",
        "qk_norms": qk_norms,
        "borrowed": borrowed(accelerators, groups),
    }
    for kind in ("accelerator", "precision"):
        for precision, entry in data["borrowed"][kind].items():
            print(f"borrowed {kind} {precision}: {entry['test_error']}")
    OUT.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
