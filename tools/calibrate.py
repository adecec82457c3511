"""Fit the calibrated predictor's terms per accelerator; write formulas/calibration.json.

    python3 tools/calibrate.py                  # in the project's own environment (numpy, derive)
    python3 tools/calibrate.py --only b200 l40s  # refit these; keep the other accelerators' fits as they are
    python3 tools/calibrate.py --precisions nvfp4  # fit this precision; keep the others' fits as they are

The data are aiconfigurator 0.12's profiled TensorRT-LLM timings (benchmarks/data/aiconfigurator-0.12.json,
aiconfigurator-0.12-fp8.json, and -fp8-block.json and -nvfp4.json for those weight recipes, made by
tools/aiconfigurator_grid.py in its own virtual environment), one fit per accelerator and precision
(benchmarks/profiled.py GRIDS). The fit is split by model: it sees only the training models (benchmarks/profiled.py
training_models) and reports its error on them and, separately, on every other model of the grid. Where one link
efficiency cannot follow an accelerator's all-reduces (L40S over PCIe), it keeps to the tensor-parallel sizes it
can (profiled.MAX_TP) and reports its error beyond them apart. A borrowed fit's error is measured where it can be
(`borrowed` in the output): on the accelerators and precisions that have a fit of their own.

Every term of formulas/calibrated.py is linear in one fitted coefficient (a fixed time, a latency,
an inverse efficiency, a pass count) except where two sit under one Max. So the fit alternates:
take each Max's larger side at the current values, then solve the linear least squares in relative
error with every coefficient bounded (efficiencies at most 1, times at least 0), exactly, over the
subsets of coefficients at their bound. Three or four rounds settle it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import profiled  # noqa: E402

from derive.calibration import BORROWS, FITTED  # noqa: E402
from formulas import calibrated as cal  # noqa: E402

OUT = ROOT / "formulas" / "calibration.json"
DEFAULT = "h100"
# Coefficient j multiplies basis j: the fixed times and the pass count directly, the efficiencies inverted.
INVERTED = {cal.eta_link, cal.eta_linkp, cal.eta_w, cal.eta_kv, cal.eta_g, cal.eta_p, cal.eta_a}
# Pairs under one Max: weight streaming against the GEMMs (decode's or the prompt pass's), the cache
# against attention's FLOPs. Every other term adds.
PAIRS = ((cal.eta_w, (cal.eta_g, cal.eta_p)), (cal.eta_kv, (cal.eta_a,)))
ROUNDS = 12
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


def _unit(j: int | None) -> dict[str, float]:
    """Fitted values that switch every term off but term j (at coefficient 1)."""
    values = {s.key: (np.inf if s in INVERTED else 0.0) for s in FITTED}
    if j is not None:
        values[FITTED[j].key] = 1.0
    return values


def design(groups: list[profiled.Group]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Basis matrix (rows: TTFT then TPOT of every point; columns: FITTED), targets, and row weights.

    Each model weighs the same in the fit however many of its points fit in memory.
    """
    blocks, targets, weights = [], [], []
    for group in groups:
        rows = 2 * len(group.columns["tp"])
        for output in ("ttft", "tpot"):
            basis = np.stack([group.predict(output, _unit(j)) for j in range(len(FITTED))], axis=1)
            blocks.append(basis)
            targets.append(group.columns[output])
            weights.append(np.full(len(basis), 1 / np.sqrt(rows)))
    return np.concatenate(blocks), np.concatenate(targets), np.concatenate(weights)


def _values(theta: np.ndarray) -> dict[str, float]:
    return {s.key: float(1 / t if s in INVERTED else t) for s, t in zip(FITTED, theta, strict=True)}


def _active(basis: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Mask of the basis columns that count at `theta`: each Max contributes its larger side only."""
    index = {s: j for j, s in enumerate(FITTED)}
    mask = np.ones_like(basis, dtype=bool)
    for first, second in PAIRS:
        a = basis[:, index[first]] * theta[index[first]]
        b = sum(basis[:, index[s]] * theta[index[s]] for s in second)
        mask[:, index[first]] = a >= b
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
    basis: np.ndarray, target: np.ndarray, weights: np.ndarray, fixed: dict[int, float] | None = None
) -> np.ndarray:
    """Coefficients minimising the squared relative error, each Max resolved at the previous round's values.

    `fixed` holds coefficients the data cannot identify (no MoE model to fit the narrow-expert width on),
    taken from the default accelerator's fit.
    """
    lower = np.array([1.0 if s in INVERTED else 0.0 for s in FITTED])
    theta = lower.copy()
    fixed = fixed or {}
    for j, value in fixed.items():
        theta[j] = value
    free = [j for j in range(len(FITTED)) if j not in fixed]
    for _ in range(ROUNDS):
        mask = _active(basis, theta)
        weighted = basis * mask * (weights / target)[:, None]
        known = sum((weighted[:, j] * v for j, v in fixed.items()), np.zeros_like(target))
        new = theta.copy()
        new[free] = _bounded_lstsq(weighted[:, free], weights - known, lower[free])
        if np.allclose(new, theta, rtol=1e-9):
            break
        theta = new
    return theta


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


def split(groups: list[profiled.Group]) -> tuple[list[profiled.Group], list[profiled.Group], list[profiled.Group]]:
    """One accelerator's groups as the fit's training set, its held-out models, and held-out points beyond MAX_TP."""
    within, beyond = profiled.by_tp_scope(groups)
    chosen = profiled.training_models(within)
    train = [g for g in within if g.model in chosen]
    return train, [g for g in within if g.model not in chosen], [g for g in beyond if g.model not in chosen]


def fit_precision(
    precision: str,
    all_groups: list[profiled.Group],
    kept: dict[str, dict] | None = None,  # type: ignore[type-arg]
) -> dict[str, dict]:  # type: ignore[type-arg]
    """One fit per accelerator of the precision's grid, with its train and test errors.

    `kept` (accelerator -> precision -> fit, as calibration.json holds them) are taken as they are, not refitted.
    """
    kept = kept or {}
    grid = json.loads(profiled.GRIDS[precision].read_text())
    fits = {}
    widths = [FITTED.index(cal.w_0), FITTED.index(cal.w_0p)]
    default_widths: dict[int, float] = {}
    # The default accelerator first: where a system has no MoE model to train on, its narrow width is the default's.
    for system, gpu in sorted(profiled.SYSTEMS.items(), key=lambda item: item[1] != DEFAULT):
        if gpu in kept:
            if precision in kept[gpu]:
                fits[gpu] = kept[gpu][precision]
                if gpu == DEFAULT:
                    default_widths = {j: float(fits[gpu]["values"][FITTED[j].key]) for j in widths}
            continue
        train, test, beyond = split([g for g in all_groups if g.system == system])
        if not train:
            continue  # no tables in this precision (an A100 has no FP8)
        basis, target, weights = design(train)
        fixed = {} if any(g.moe for g in train) else {j: default_widths.get(j, 0.0) for j in widths}
        theta = fit(basis, target, weights, fixed)
        if gpu == DEFAULT:
            default_widths = {j: float(theta[j]) for j in widths}
        values = _values(theta)
        moe = [g for g in test if g.moe]
        fits[gpu] = {
            "system": system,
            "database": f"trtllm {grid['database_versions'].get(system, '')}".strip(),
            "quant": grid["settings"].get("quant"),
            "train_models": sorted({g.model for g in train}),
            "fixed_from_default": [FITTED[j].key for j in fixed],
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
    args = parser.parse_args(argv)
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
        for gpu, fit_ in fit_precision(precision, groups[precision], kept).items():
            accelerators.setdefault(gpu, {})[precision] = fit_
    command = "python3 tools/calibrate.py"
    for option in ("only", "precisions"):
        if getattr(args, option):
            command += f" --{option} {' '.join(getattr(args, option))}"
    data: dict[str, Any] = {
        "source": "aiconfigurator 0.12.0's profiled TensorRT-LLM kernel tables (static batches)",
        "data": ", ".join(str(p.relative_to(ROOT)) for p in profiled.GRIDS.values())
        + " (tools/aiconfigurator_grid.py)",
        "generated_by": command,
        "default": DEFAULT,
        "default_note": (
            "an accelerator without a fit of its own takes the default's values, and a precision without one the "
            "accelerator's fit in the precision it borrows (fp8-block: fp8, then bf16; fp8 and nvfp4: bf16; "
            "derive/calibration.py BORROWS): efficiencies and fixed times, applied to its own datasheet figures"
        ),
        "units": {s.key: s.unit or "dimensionless" for s in FITTED},
        "accelerators": accelerators,
        "borrowed": borrowed(accelerators, groups),
    }
    for kind in ("accelerator", "precision"):
        for precision, entry in data["borrowed"][kind].items():
            print(f"borrowed {kind} {precision}: {entry['test_error']}")
    OUT.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
