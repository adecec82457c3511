"""`derive plan` beside NVIDIA aiconfigurator 0.12's aggregated search, for the same models and targets.

Reads benchmarks/data/aiconfigurator-0.12-plan.json (tools/aiconfigurator_plan.py ran aiconfigurator in its
own virtual environment; it is never a dependency) and runs derive's search on the same accelerator, GPU
budget, prompt and reply lengths and TTFT/TPOT targets. For each case it prints both picks side by side, and
two ratios:

- layout: aiconfigurator's own tokens/s per GPU for the layout derive picks, over its best (how good derive's
  choice is, judged by the profiled tables). Target: at least 0.85. Where derive's pick is outside what
  aiconfigurator searches (tp and attention dp both above 1), derive's best inside that space stands in.
- estimate: derive's tokens/s per GPU for its pick over aiconfigurator's best (how close derive's number is).

    python3 benchmarks/plan_compare.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import sympy

from derive.catalog import load_gpu, load_model
from derive.layouts import Layout
from derive.planning import Targets, pick, search_gpu

DATA = Path(__file__).parent / "data" / "aiconfigurator-0.12-plan.json"
TARGET = 0.85


def aiconfigurator_name(layout: Layout, moe: bool) -> str:
    """derive's (tp, ep, pp, dp) in aiconfigurator's words: ep = 1 splits experts tp·dp ways (etp), else ep."""
    if not moe:
        return f"tp{layout.tp}pp{layout.pp}dp{layout.dp}etp1ep1"
    expert_tp = layout.tp * layout.dp // layout.ep
    return f"tp{layout.tp}pp{layout.pp}dp{layout.dp}etp{expert_tp}ep{layout.ep}"


def main() -> None:
    data = json.loads(DATA.read_text())
    print(f"aiconfigurator: {data['source']}")
    print()
    head = (
        f"{'case':<34} {'aiconfigurator best':<22} {'tok/s/GPU':>9}   {'derive pick':<18} {'batch':>6} "
        f"{'tok/s/GPU':>9} {'aic for it':>10} {'layout':>7} {'estimate':>8}"
    )
    print(head)
    print("-" * len(head))
    worst = 1.0
    started = time.perf_counter()
    for case in data["cases"]:
        best = case["best"]
        model = load_model(case["model_id"])
        targets = Targets(
            ttft=sympy.Rational(case["targets"]["ttft_ms"]) / 1000,
            tpot=sympy.Rational(case["targets"]["tpot_ms"]) / 1000,
            prompt=case["isl"],
            output=case["osl"],
        )
        found = search_gpu(model, load_gpu("h100"), "bf16", targets, case["total_gpus"], 4096, None)
        chosen = pick(found.rows)
        assert chosen is not None
        # aiconfigurator searches no layout with both tp and attention dp above 1: derive's best among the rest too.
        in_space = pick([r for r in found.rows if r.layout.tp == 1 or r.layout.dp == 1])
        if aiconfigurator_name(chosen.layout, case["moe"]) not in {row["parallel"] for row in case["ranked"]}:
            chosen = in_space or chosen
        name = aiconfigurator_name(chosen.layout, case["moe"])
        theirs = {row["parallel"]: row["tokens_s_gpu"] for row in case["ranked"]}
        for row in case.get("pareto_top10", []):
            theirs[row["parallel"]] = max(theirs.get(row["parallel"], 0.0), row["tokens_s_gpu"])
        rated = theirs.get(name)
        layout_ratio = None if rated is None else rated / best["tokens_s_gpu"]
        if layout_ratio is not None:
            worst = min(worst, layout_ratio)
        print(
            f"{case['id']:<34} {best['parallel'] + ' bs' + str(best['bs']):<22} {best['tokens_s_gpu']:>9.0f}   "
            f"{str(chosen.layout):<18} {chosen.sequences:>6} {chosen.per_accelerator:>9.0f} "
            f"{'-' if rated is None else f'{rated:.0f}':>10} "
            f"{'-' if layout_ratio is None else f'{layout_ratio:.2f}':>7} "
            f"{chosen.per_accelerator / best['tokens_s_gpu']:>8.2f}"
        )
    print()
    print(f"derive's searches took {time.perf_counter() - started:.2f} s for {len(data['cases'])} cases")
    print(f"worst layout ratio {worst:.2f} (target: at least {TARGET}); 'aic for it' is aiconfigurator's figure for")
    print("derive's layout from its own table ('-': not in aiconfigurator's top rows)")


if __name__ == "__main__":
    main()
