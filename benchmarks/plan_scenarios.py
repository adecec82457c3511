"""`derive plan` on issue 26's scenarios, aggregated and disaggregated, rated by aiconfigurator 0.12's own tables.

Reads benchmarks/data/aiconfigurator-0.12-scenarios.json (tools/aiconfigurator_scenarios.py ran aiconfigurator in its
own virtual environment; it is never a dependency): 12 scenarios over H100, H200 and B200, dense, MoE and MLA, two
prompt/reply shapes. For each it runs derive's plan on the same accelerator, GPU budget, lengths, targets and
precision, and prints:

- aggregated: aiconfigurator's best layout and tokens/s per GPU; derive's pick; `layout` = aiconfigurator's figure for
  derive's layout over its best (how good derive's choice is, judged by the profiled tables; target 0.95, issue 26);
  `estimate` = derive's own tokens/s per GPU over aiconfigurator's for the same layout (target within 10%). Where
  the layouts' figures change once aiconfigurator's glitched MoE table rows are repaired
  (benchmarks/data/aiconfigurator-0.12-glitches.json, tools/aiconfigurator_glitch.py), a second line rates the
  pick against the repaired search, and the summary gives both.
- disaggregated: derive's best (prefill layout, decode layout) pair, rated by aiconfigurator's per-layout worker tables
  as S_o/(N_p/Q_p + N_d/Q_d) (formulas/disaggregated.py's balance, workers in any ratio, each pool at aiconfigurator's
  rate-match share), against the best pair those tables allow rated the same way; and derive's own figure for its
  pair over aiconfigurator's for it.

    python3 benchmarks/plan_scenarios.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import sympy

sys.path.insert(0, str(Path(__file__).parent))

from plan_compare import aiconfigurator_name  # noqa: E402

from derive.catalog import load_gpu, load_model  # noqa: E402
from derive.disaggregation import disaggregate  # noqa: E402
from derive.planning import Targets, pick, search_gpu  # noqa: E402
from formulas import disaggregated as dis  # noqa: E402

DATA = Path(__file__).parent / "data" / "aiconfigurator-0.12-scenarios.json"
# aiconfigurator's figures where its MoE tables hold non-physical rows, rerun with them repaired
# (tools/aiconfigurator_glitch.py): a second rating of derive's pick beside the recorded one.
GLITCHES = Path(__file__).parent / "data" / "aiconfigurator-0.12-glitches.json"
GPUS = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200"}
RECIPES = {"bfloat16": "bf16", "fp8_block": "fp8-block", "fp8": "fp8-dynamic"}  # aiconfigurator's GEMM mode -> derive's
LAYOUT_TARGET, ESTIMATE_TARGET = 0.95, 0.10


def _balanced(osl: int, prefill: dict[str, Any], decode: dict[str, Any]) -> float:
    """Tokens/s per GPU of two pools balanced in any ratio, S_o/(N_p/Q_p + N_d/Q_d), each pool at the share of its
    standalone rate aiconfigurator's pairing gives it (its rate-match degradation, formulas/disaggregated.py's u)."""
    q_p, q_d = (float(dis.SERVED[s]) * worker["seq_s_worker"] for s, worker in ((dis.u_p, prefill), (dis.u_d, decode)))
    return osl / (prefill["num_gpus"] / q_p + decode["num_gpus"] / q_d)


def _disaggregated(case: dict[str, Any], found: Any, targets: Targets) -> tuple[str, float | None, float | None]:
    """The line to print, and where aiconfigurator's tables hold derive's pair, its layout and estimate ratios."""
    tables = case.get("disagg") or {}
    prefills = {r["parallel"]: r for r in tables.get("prefill_workers", []) if r.get("meets_ttft")}
    decodes = {r["parallel"]: r for r in tables.get("decode_workers", []) if r.get("meets_tpot")}
    if not prefills or not decodes:
        return (
            f"  disaggregated: aiconfigurator has no pair ({tables.get('error') or 'no worker meets the targets'})",
            None,
            None,
        )
    split = disaggregate(
        found.table, found.compiled, found.system, found.gpu.name, targets, None, 4096, case["total_gpus"]
    )
    if split is None:
        return "  disaggregated: derive finds no pair", None, None
    fits = [
        (p, d)
        for p in prefills.values()
        for d in decodes.values()
        if p["num_gpus"] + d["num_gpus"] <= case["total_gpus"]
    ]
    if not fits:
        return "  disaggregated: no pair of aiconfigurator's workers fits the GPU budget", None, None
    best = max(_balanced(case["osl"], p, d) for p, d in fits)  # one worker of each within the budget, as derive's
    p_name, d_name = (aiconfigurator_name(lt, case["moe"]) for lt in (split.prefill, split.decode))
    if p_name not in prefills or d_name not in decodes:
        return (
            f"  disaggregated: derive's pair {split.prefill} + {split.decode} is not in aiconfigurator's tables",
            None,
            None,
        )
    rated = _balanced(case["osl"], prefills[p_name], decodes[d_name])
    line = (
        f"  disaggregated: derive {split.prefill} + {split.decode} ({split.per_accelerator:,.0f} tok/s/GPU), "
        f"aiconfigurator rates it {rated:,.0f} against its best pair's {best:,.0f}: layout {rated / best:.2f}, "
        f"estimate {split.per_accelerator / rated:.2f}"
    )
    return line, rated / best, split.per_accelerator / rated


def main() -> None:
    data = json.loads(DATA.read_text())
    print(f"aiconfigurator: {data['source']}")
    layouts, estimates, split_layouts, split_estimates = [], [], [], []
    repaired_layouts, repaired_estimates = [], []
    repaired = json.loads(GLITCHES.read_text())["scenarios"]
    started = time.perf_counter()
    for case in data["scenarios"]:
        agg = case.get("agg") or {}
        best = agg.get("best")
        if best is None:
            print(f"{case['id']}: aiconfigurator found no aggregated layout")
            continue
        quant = case["quant_used"]["agg"]["gemm_quant_mode"]
        model, gpu = load_model(case["model_id"]), load_gpu(GPUS[case["system"]])
        targets = Targets(
            ttft=sympy.Rational(str(case["targets"]["ttft_ms"])) / 1000,
            tpot=sympy.Rational(str(case["targets"]["tpot_ms"])) / 1000,
            prompt=case["isl"],
            output=case["osl"],
        )
        found = search_gpu(model, gpu, RECIPES.get(quant, "bf16"), targets, case["total_gpus"], 4096, None)
        chosen = pick(found.rows)
        if chosen is None:
            print(f"{case['id']}: derive finds no layout")
            continue
        theirs = {row["parallel"]: row["tokens_s_gpu"] for row in agg.get("ranked", [])}
        for row in agg.get("pareto_top10", []):
            theirs[row["parallel"]] = max(theirs.get(row["parallel"], 0.0), row["tokens_s_gpu"])
        name = aiconfigurator_name(chosen.layout, case["moe"])
        rated = theirs.get(name)
        layout = None if rated is None else rated / best["tokens_s_gpu"]
        estimate = None if rated is None else chosen.per_accelerator / rated
        if layout is not None and estimate is not None:
            layouts.append(layout)
            estimates.append(abs(estimate - 1))
            repaired_layouts.append(layout)
            repaired_estimates.append(abs(estimate - 1))
        said = {
            "rated": "-" if rated is None else f"{rated:,.0f}",
            "layout": "-" if layout is None else f"{layout:.2f}",
            "estimate": "-" if estimate is None else f"{estimate:.2f}",
        }
        print(
            f"{case['id']:<30} aic {best['parallel']:<18} {best['tokens_s_gpu']:>7,.0f}  derive "
            f"{str(chosen.layout):<18} {chosen.per_accelerator:>7,.0f}  aic for it {said['rated']:>7}  layout "
            f"{said['layout']:>5}  estimate {said['estimate']}"
        )
        fixed = repaired.get(case["id"])
        if fixed is not None and fixed["changed_layouts"]:
            figures = {name: row["repaired"] for name, row in fixed["layouts"].items() if row["repaired"]}
            again = figures.get(name)
            top = max(figures.values())
            print(
                f"  with aiconfigurator's glitched MoE rows repaired: its best {fixed['repaired_best']['parallel']} "
                f"{top:,.0f}, derive's layout {again:,.0f}: layout {again / top:.2f}, estimate "
                f"{chosen.per_accelerator / again:.2f}"
            )
            repaired_layouts[-1] = again / top
            repaired_estimates[-1] = abs(chosen.per_accelerator / again - 1)
        line, split_layout, split_estimate = _disaggregated(case, found, targets)
        print(line)
        if split_layout is not None and split_estimate is not None:
            split_layouts.append(split_layout)
            split_estimates.append(abs(split_estimate - 1))
    print()
    print(f"derive's searches took {time.perf_counter() - started:.1f} s for {len(data['scenarios'])} scenarios")
    if layouts:
        print(
            f"aggregated, rated where aiconfigurator's table holds derive's layout ({len(layouts)} scenarios): worst "
            f"layout ratio {min(layouts):.2f}, median {statistics.median(layouts):.2f} (target: every one at least "
            f"{LAYOUT_TARGET}); estimate off by {statistics.median(estimates):.0%} at the median, "
            f"{max(estimates):.0%} at worst (target: within {ESTIMATE_TARGET:.0%})"
        )
    if repaired_layouts != layouts:
        print(
            "the same with aiconfigurator's glitched MoE rows repaired: worst layout ratio "
            f"{min(repaired_layouts):.2f}, median {statistics.median(repaired_layouts):.2f}; estimate off by "
            f"{statistics.median(repaired_estimates):.0%} at the median, {max(repaired_estimates):.0%} at worst"
        )
    if split_layouts:
        print(
            f"disaggregated, rated where aiconfigurator's tables hold derive's pair ({len(split_layouts)} scenarios): "
            f"worst layout ratio {min(split_layouts):.2f}, median {statistics.median(split_layouts):.2f}; estimate off "
            f"by {statistics.median(split_estimates):.0%} at the median, {max(split_estimates):.0%} at worst"
        )


if __name__ == "__main__":
    main()
