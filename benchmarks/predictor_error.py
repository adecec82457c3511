"""How far derive's floor and calibrated estimate are from profiled kernels and from published measurements.

    python3 benchmarks/predictor_error.py

Against aiconfigurator 0.12's profiled TensorRT-LLM grids (benchmarks/data/aiconfigurator-0.12.json, bf16,
-fp8.json, and -fp8-block.json and -nvfp4.json for those weight recipes), per accelerator and precision: how many
points the floor exceeds (it never should), and the calibrated estimate's |relative error| on the models the fit did
not see (formulas/calibration.json; tools/calibrate.py), dense and MoE apart; where a fit covers tensor-parallel
sizes up to a limit only (L40S over PCIe), its error beyond the limit on a row of its own. Then what a borrowed fit
costs, where it was measured, and per weight recipe with a fit of its own, the fit each accelerator takes for it.
Then the routed experts' MoE kernel against aiconfigurator's MoE tables, per accelerator and expert format (the fit
tools/calibrate.py holds in every precision's, formulas/calibration.json moe_kernels).
Against the published static-batch measurements (reports/data/measured.toml), the
calibrated estimate's error through `derive predict` itself. Targets (issue 11): no floor above a
profiled value; held-out TPOT median <= 5 %, p90 <= 12 %; TTFT median <= 7 %, p90 <= 18 %; MoE median
<= 10 %; against measurements median <= 20 %.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import profiled  # noqa: E402

from derive.calibration import calibration  # noqa: E402
from derive.catalog import load_gpu, load_model  # noqa: E402
from derive.core.units import parse_quantity  # noqa: E402
from derive.derivations.common import Setup  # noqa: E402
from derive.derivations.costs import predict  # noqa: E402

MEASURED = ROOT / "reports" / "data" / "measured.toml"


def _stats(values: list[np.ndarray]) -> str:
    if not values:
        return "      -"
    errors = np.abs(np.concatenate(values))
    return f"{np.median(errors):6.1%} {np.percentile(errors, 90):6.1%}"


def profiled_table(precision: str) -> None:
    calibration = json.loads((ROOT / "formulas" / "calibration.json").read_text())["accelerators"]
    print(f"Against aiconfigurator 0.12, {precision} (held-out models; median and p90 of |error|)")
    print(
        f"{'gpu':10} {'points':>6} {'floor>aic':>9}  {'TPOT':>13}  {'TTFT':>13}  {'dense TPOT':>13}  "
        f"{'dense TTFT':>13}  {'MoE TPOT':>13}  {'MoE TTFT':>13}"
    )
    groups = list(profiled.groups(precision))
    trained: list[str] = []
    for gpu in profiled.SYSTEMS.values():
        within, beyond = profiled.by_tp_scope([g for g in groups if g.gpu == gpu])
        if not within:
            continue
        fit = calibration[gpu][precision]["values"]
        above = sum(
            int(np.sum(g.predict(f"{out}_floor", fit) > g.columns[out] * (1 + 1e-9)))
            for g in within + beyond
            for out in ("ttft", "tpot")
        )
        chosen = profiled.training_models(within)
        trained.append(f"{gpu}: {', '.join(sorted(chosen))}")
        # The fit's own range first; beyond the largest tensor-parallel size it covers, apart.
        rows: list[tuple[str, list[profiled.Group], int | None]] = [(gpu, within, above)]
        if beyond:
            rows.append((f"{gpu} tp>{profiled.MAX_TP[gpu]}", beyond, None))
        for label, mine, floor_above in rows:
            test = [g for g in mine if g.model not in chosen]

            def errors(out: str, kinds: tuple[bool, ...], test: list[profiled.Group] = test, fit: dict = fit) -> list:  # type: ignore[type-arg]
                return [g.predict(out, fit) / g.columns[out] - 1 for g in test if g.moe in kinds]

            points = sum(len(g.columns["tp"]) for g in mine)
            kinds = ((False, True), (False,), (True,))
            cells = [_stats(errors(out, k)) for k in kinds for out in ("tpot", "ttft")]
            shown = "" if floor_above is None else floor_above
            print(f"{label:10} {points:6} {shown:>9}  " + "  ".join(cells))
    print("trained on " + "; ".join(trained) + "; every other model held out")
    limits = [f"{gpu} fitted to tp <= {tp}" for gpu, tp in profiled.MAX_TP.items() if any(g.gpu == gpu for g in groups)]
    print(", ".join(limits) + " (profiled.MAX_TP)\n" if limits else "")


def borrowed_table() -> None:
    """What a borrowed fit costs, as tools/calibrate.py measured it (calibration.json, borrowed)."""
    borrowed = json.loads((ROOT / "formulas" / "calibration.json").read_text()).get("borrowed", {})
    print("Borrowed fits, measured where they can be (median and p90 of |error|, held-out models)")
    for kind in ("accelerator", "precision"):
        for precision, entry in borrowed.get(kind, {}).items():
            by = entry.get("fitted_on", "each accelerator's")
            what = f"{by} {entry['fitted_precision']} fit for {precision}"
            tpot, ttft = entry["test_error"]["tpot"], entry["test_error"]["ttft"]
            print(
                f"  {what:40} TPOT {tpot['median']:6.1%} {tpot['p90']:6.1%}  TTFT {ttft['median']:6.1%} "
                f"{ttft['p90']:6.1%}  on {entry['measured_on']}"
            )
    print()


def recipe_table() -> None:
    """Per weight recipe with a fit other than bf16 (formulas/recipes.toml), the fit each accelerator takes and its
    held-out median errors: its own fit's, dense and MoE apart, or a borrowed one's where it was measured."""
    from derive.recipes import recipes

    data = json.loads((ROOT / "formulas" / "calibration.json").read_text())["accelerators"]
    print("By recipe: the fit each accelerator takes (held-out median |error|, TTFT / TPOT)")
    print(f"{'recipe':12} {'gpu':6} {'fit':18} {'dense':>15}  {'MoE':>15}")

    def cell(error: dict | None) -> str:  # type: ignore[type-arg]
        return f"{error['ttft']['median']:6.1%} / {error['tpot']['median']:5.1%}" if error else f"{'-':>15}"

    for recipe in (r for r in recipes().values() if r.fit != "bf16"):
        for gpu in profiled.SYSTEMS.values():
            fit = calibration(load_gpu(gpu), recipe.name)
            used = f"{fit.fitted_on} {fit.fitted_precision}"
            if not fit.borrowed:
                own = data[gpu][fit.precision]
                shown = f"{cell(own['dense_test_error'])}  {cell(own['moe_test_error'])}"
            else:  # a borrowed fit's error is measured on all models together, where it could be
                used += ", borrowed"
                measured = f"{cell(fit.borrowed_error)} all models, measured on {fit.borrowed_error_on}"
                shown = measured if fit.borrowed_error else "not measured"
            print(f"{recipe.name:12} {gpu:6} {used:18} {shown}")
    print()


def kernel_table() -> None:
    """The routed experts' MoE kernel fits against aiconfigurator's MoE tables, as tools/calibrate.py recorded them:
    the tables fitted, and those left out whose ranks' experts fit in L2 ("in L2")."""
    kernels = json.loads((ROOT / "formulas" / "calibration.json").read_text())["moe_kernels"]
    print("The MoE kernel against aiconfigurator's MoE tables (the tables fitted, all rows; median, p90 of |error|)")
    print(f"{'gpu':6} {'format':10} {'tables':>6} {'in L2':>5}  {'decode':>13}  {'prefill':>13}")
    for gpu, formats in kernels.items():
        for name, fit in formats.items():
            cells = [f"{fit[k]['median']:6.1%} {fit[k]['p90']:6.1%}" for k in ("decode_error", "prefill_error")]
            print(f"{gpu:6} {name:10} {fit['tables']:6} {fit['l2_resident']:5}  " + "  ".join(cells))
    print()


def measured_table() -> None:
    with MEASURED.open("rb") as fh:
        entries = tomllib.load(fh)["measurement"]
    print("Against published static-batch measurements (reports/data/measured.toml)")
    print(
        f"{'id':4} {'model':11} {'gpu':5} {'tp':>2} {'dtype':5} {'kind':26} {'measured':>14} {'floor':>9} {'calib.':>9}"
    )
    errors, floor_errors = [], []
    for entry in entries:
        setup = Setup(
            model=load_model(entry["model"]),
            gpu=load_gpu(entry["gpu"]),
            dtype=entry["dtype"],
            tp=entry["count"],
            batch=entry["batch"],
            prompt=entry["prompt"],
            output=entry["output"],
        )
        results = predict(setup).results
        kind = entry["kind"]
        if kind.startswith("output_throughput"):
            value = float(parse_quantity(entry["value"], "token/second", entry["id"]))
            if kind == "output_throughput_system":
                value /= entry["count"]
            # A static batch: B·S_o tokens in one prompt pass plus the decode steps, per accelerator.
            tokens = entry["batch"] * entry["output"] / entry["count"]
            floor = tokens / float(results["e2e_latency_floor"].value)
            estimate = tokens / float(results["e2e_latency"].value)
            shown = f"{value:,.0f} tok/s"
        else:
            value = float(parse_quantity(entry["value"], "second", entry["id"]))
            key = "ttft" if kind == "ttft" else "e2e_latency"
            floor, estimate = float(results[f"{key}_floor"].value), float(results[key].value)
            shown = f"{value * 1e3:,.1f} ms"
        errors.append(estimate / value - 1)
        floor_errors.append(floor / value - 1)
        print(
            f"{entry['id']:4} {entry['model']:11} {entry['gpu']:5} {entry['count']:2} {entry['dtype']:5} {kind:26} "
            f"{shown:>14} {floor_errors[-1]:+9.1%} {errors[-1]:+9.1%}"
        )
    print(
        f"median |error|: floor {np.median(np.abs(floor_errors)):.1%}, calibrated {np.median(np.abs(errors)):.1%} "
        f"({len(errors)} measurements)"
    )


if __name__ == "__main__":
    for precision, path in profiled.GRIDS.items():
        if path.exists():
            profiled_table(precision)
    borrowed_table()
    recipe_table()
    kernel_table()
    measured_table()
