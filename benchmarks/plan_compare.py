"""`derive plan` rated by NVIDIA aiconfigurator 0.12's own tables: issue 26's scenarios, and the earlier H100 cases.

aiconfigurator is never a dependency: tools in its own virtual environment recorded its searches, and this reads them.

1. Issue 26's 12 scenarios (benchmarks/data/aiconfigurator-0.12-scenarios.json, tools/aiconfigurator_scenarios.py):
   H100, H200 and B200; dense, MoE and MLA; two prompt/reply shapes; 8 and 16 GPUs. For each, derive's plan on the
   same accelerator, GPU budget, lengths, targets and precision:

   - aggregated: aiconfigurator's best layout and tokens/s per GPU; derive's pick; `layout` = aiconfigurator's figure
     for derive's layout over its best (how good derive's choice is, judged by the profiled tables; target 0.95);
     `estimate` = derive's own tokens/s per GPU over aiconfigurator's for the same layout (target within 10%). Where
     the layouts' figures change once aiconfigurator's glitched MoE table rows are repaired
     (benchmarks/data/aiconfigurator-0.12-glitches.json, tools/aiconfigurator_glitch.py), a second line rates the
     pick against the repaired search, and the summary gives both. Where aiconfigurator's best spans nodes with an
     expert group its DeepEP tables price from one node's rows (benchmarks/data/aiconfigurator-0.12-deepep.json's
     ep_probe: the same seconds at every larger EP), a line gives derive's own figure for that layout and rates the
     pick against aiconfigurator's best among the layouts its tables price at their own size.
   - disaggregated: derive's best (prefill layout, decode layout) pair, rated by aiconfigurator's per-layout worker
     tables as S_o/(N_p/Q_p + N_d/Q_d) (formulas/disaggregated.py's balance, workers in any ratio, each pool at
     aiconfigurator's rate-match share), against the best pair those tables allow rated the same way; and derive's
     own figure for its pair over aiconfigurator's for it.

2. The earlier H100 cases (benchmarks/data/aiconfigurator-0.12-plan.json, tools/aiconfigurator_plan.py): Llama 3 70B
   and Qwen3-30B-A3B, aggregated, at TPOT 20/50 and 10/30 ms, rated the same way. At a tight TPOT the estimate differs
   by what TPOT means: derive's is what a user sees on a server whose steps also carry other requests' prompt chunks;
   aiconfigurator's agg TPOT counts one of the mixed steps that prefill a batch (sdk/backends/base_backend.py run_agg,
   trtllm_backend.py _tpot_mix_steps), so it holds a larger batch under the same target.

    python3 benchmarks/plan_compare.py
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import sympy

from derive.catalog import load_gpu, load_model
from derive.disaggregation import decode_capacity, disaggregate
from derive.layouts import Layout
from derive.planning import Targets, pick, search_gpu
from formulas import disaggregated as dis

DATA = Path(__file__).parent / "data" / "aiconfigurator-0.12-scenarios.json"
# The earlier H100 cases (tools/aiconfigurator_plan.py).
H100_CASES = Path(__file__).parent / "data" / "aiconfigurator-0.12-plan.json"
# aiconfigurator's figures where its MoE tables hold non-physical rows, rerun with them repaired
# (tools/aiconfigurator_glitch.py): a second rating of derive's pick beside the recorded one.
GLITCHES = Path(__file__).parent / "data" / "aiconfigurator-0.12-glitches.json"
# aiconfigurator's DeepEP tables, and what its op answers at every EP (tools/aiconfigurator_deepep.py's ep_probe).
DEEPEP = Path(__file__).parent / "data" / "aiconfigurator-0.12-deepep.json"
GPUS = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200"}
RECIPES = {"bfloat16": "bf16", "fp8_block": "fp8-block", "fp8": "fp8-dynamic"}  # aiconfigurator's GEMM mode -> derive's
LAYOUT_TARGET, ESTIMATE_TARGET = 0.95, 0.10


def aiconfigurator_name(layout: Layout, moe: bool) -> str:
    """derive's (tp, ep, pp, dp) in aiconfigurator's words: ep = 1 splits experts tp·dp ways (etp), else ep."""
    if not moe:
        return f"tp{layout.tp}pp{layout.pp}dp{layout.dp}etp1ep1"
    expert_tp = layout.tp * layout.dp // layout.ep
    return f"tp{layout.tp}pp{layout.pp}dp{layout.dp}etp{expert_tp}ep{layout.ep}"


def one_node_rows(system: dict[str, Any], name: str) -> int | None:
    """Nodes aiconfigurator layout `name`'s expert group spans where its DeepEP op answers from one node's rows
    (`system`: the DeepEP file's entry for its system), else None. It takes DeepEP with whole experts (etp1) under
    attention data parallelism; its tables hold one node's EP, and the op returns their seconds at any larger EP."""
    sizes = {key: int(value) for key, value in re.findall(r"([a-z]+)(\d+)", name)}
    if sizes.get("etp") != 1 or sizes.get("ep", 1) <= 1 or sizes.get("dp", 1) <= 1:
        return None
    probes = [system["ep_probe"][path]["seconds_by_ep"].get(str(sizes["ep"]), {}) for path in ("ll", "ht")]
    if all(p.get("node_num", 1) > 1 and p.get("max_rel_diff_vs_table_ep") == 0.0 for p in probes):
        return int(probes[0]["node_num"])
    return None


def _own_size_line(
    case: dict[str, Any], found: Any, theirs: dict[str, float], rated: float | None, deepep: dict[str, Any]
) -> float | None:
    """Where aiconfigurator's best layout's expert group spans nodes priced from one node's DeepEP rows, print
    derive's figure for that layout and the pick's rating against aiconfigurator's best among the layouts its tables
    price at their own size; return that rating (None where the best is priced at its own size)."""
    system = deepep["systems"].get(case["system"])
    best = case["agg"]["best"]["parallel"]
    nodes = None if system is None else one_node_rows(system, best)
    if nodes is None or rated is None:
        return None
    own = {name: value for name, value in theirs.items() if one_node_rows(system, name) is None}
    if not own:
        return None
    top = max(own, key=own.__getitem__)
    mine = next((r for r in found.rows if aiconfigurator_name(r.layout, case["moe"]) == best), None)
    said = "derive finds it infeasible" if mine is None else f"derive puts it at {mine.per_accelerator:,.0f}"
    print(
        f"  aiconfigurator's best spans {nodes} nodes, its DeepEP priced from one node's rows: {said}; among its "
        f"layouts priced at their own size, its best {top} {own[top]:,.0f}: layout {rated / own[top]:.2f}"
    )
    return rated / own[top]


def _balanced(osl: int, prefill: dict[str, Any], decode: dict[str, Any]) -> float:
    """Tokens/s per GPU of two pools balanced in any ratio, S_o/(N_p/Q_p + N_d/Q_d), each pool at the share of its
    standalone rate aiconfigurator's pairing gives it (its rate-match degradation, formulas/disaggregated.py's u)."""
    q_p, q_d = (float(dis.SERVED[s]) * worker["seq_s_worker"] for s, worker in ((dis.u_p, prefill), (dis.u_d, decode)))
    return osl / (prefill["num_gpus"] / q_p + decode["num_gpus"] / q_d)


def _disaggregated(
    case: dict[str, Any], found: Any, targets: Targets
) -> tuple[str, float | None, float | None, float | None]:
    """The line to print, and where aiconfigurator's tables hold derive's pair, its layout and estimate ratios and
    the estimate of its decode worker at aiconfigurator's batch for it."""
    tables = case.get("disagg") or {}
    prefills = {r["parallel"]: r for r in tables.get("prefill_workers", []) if r.get("meets_ttft")}
    decodes = {r["parallel"]: r for r in tables.get("decode_workers", []) if r.get("meets_tpot")}
    if not prefills or not decodes:
        return (
            f"  disaggregated: aiconfigurator has no pair ({tables.get('error') or 'no worker meets the targets'})",
            None,
            None,
            None,
        )
    split = disaggregate(
        found.table, found.compiled, found.system, found.gpu.name, targets, None, 4096, case["total_gpus"]
    )
    if split is None:
        return "  disaggregated: derive finds no pair", None, None, None
    fits = [
        (p, d)
        for p in prefills.values()
        for d in decodes.values()
        if p["num_gpus"] + d["num_gpus"] <= case["total_gpus"]
    ]
    if not fits:
        return "  disaggregated: no pair of aiconfigurator's workers fits the GPU budget", None, None, None
    best = max(_balanced(case["osl"], p, d) for p, d in fits)  # one worker of each within the budget, as derive's
    p_name, d_name = (aiconfigurator_name(lt, case["moe"]) for lt in (split.prefill, split.decode))
    if p_name not in prefills or d_name not in decodes:
        return (
            f"  disaggregated: derive's pair {split.prefill} + {split.decode} is not in aiconfigurator's tables",
            None,
            None,
            None,
        )
    rated = _balanced(case["osl"], prefills[p_name], decodes[d_name])
    theirs = decodes[d_name]
    decode = _decode_rate(found, split.decode, theirs, case["osl"])
    paired = float(dis.SERVED[dis.u_d]) * theirs["seq_s_worker"]  # at the paired pool's share, as _balanced and Q_d
    line = (
        f"  disaggregated: derive {split.prefill} + {split.decode} ({split.per_accelerator:,.0f} tok/s/GPU), "
        f"aiconfigurator rates it {rated:,.0f} against its best pair's {best:,.0f}: layout {rated / best:.2f}, "
        f"estimate {split.per_accelerator / rated:.2f}\n"
        f"    its decode worker at aiconfigurator's batch for it ({theirs['global_bs']:,} sequences against derive's "
        f"{split.decode_sequences:,}; aiconfigurator's memory holds {theirs['max_bs_fits'] * split.decode.dp:,}): "
        f"derive {decode:.2f} requests/s, aiconfigurator {paired:.2f}: estimate {decode / paired:.2f}"
    )
    return line, rated / best, split.per_accelerator / rated, decode / paired


def _decode_rate(found: Any, layout: Layout, theirs: dict[str, Any], output: int) -> float:
    """derive's decode worker of `layout` at aiconfigurator's batch for it (`theirs`: its decode worker row; global_bs
    is every attention rank's sequences), in requests a second as served."""
    return decode_capacity(found.table, found.compiled, layout, theirs["global_bs"] / layout.pp, output)


def _rated(ranked: list[dict[str, Any]], pareto: list[dict[str, Any]]) -> dict[str, float]:
    """aiconfigurator's tokens/s per GPU for each layout its result table or Pareto frontier holds (_their_row's)."""
    names = {row["parallel"] for row in (*ranked, *pareto)}
    return {name: row["tokens_s_gpu"] for name in names if (row := _their_row(ranked, pareto, name)) is not None}


def _their_row(ranked: list[dict[str, Any]], pareto: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """aiconfigurator's row for layout `name`: the one with the most tokens/s per GPU in its table or frontier."""
    rows = [row for row in (*ranked, *pareto) if row["parallel"] == name]
    return max(rows, key=lambda row: row["tokens_s_gpu"]) if rows else None


def _at_their_batch(found: Any, chosen: Any, row: dict[str, Any]) -> float:
    """derive's tokens/s per GPU for its chosen layout at aiconfigurator's batch for it (its global_bs: every
    attention rank's sequences), from derive's own served TPOT there: aiconfigurator's agg batch schedule steps
    64, 80, 96, ..., so its best batch under a target can sit well below the one derive solves for."""
    sequences = float(row["global_bs"]) * chosen.layout.pp
    tpot = float(np.ravel(found.compiled.tpot(*found.inputs[chosen.layout], float(row["global_bs"])))[0])
    return sequences / tpot / chosen.layout.accelerators  # formulas/layout.py: B_L·tau/(S_o·TPOT_s)·S_o/N_L


def _at_their_batch_line(
    found: Any, chosen: Any, row: dict[str, Any] | None, rated: float | None, offs: list[float]
) -> None:
    """Print derive's figure at aiconfigurator's batch for its layout (rated: its figure); keep how far off."""
    if row is None or rated is None:
        return
    same = _at_their_batch(found, chosen, row)
    offs.append(abs(same / rated - 1))
    print(
        f"  at aiconfigurator's batch for it ({row['global_bs']} against derive's {chosen.batch}): derive "
        f"{same:,.0f}, estimate {same / rated:.2f}"
    )


def _summary(what: str, layouts: list[float], estimates: list[float]) -> str:
    return (
        f"{what} ({len(layouts)} rated): worst layout ratio {min(layouts):.2f}, median "
        f"{statistics.median(layouts):.2f} (target: every one at least {LAYOUT_TARGET}); estimate off by "
        f"{statistics.median(estimates):.0%} at the median, {max(estimates):.0%} at worst (target: within "
        f"{ESTIMATE_TARGET:.0%})"
    )


def scenarios() -> None:
    """Part 1: issue 26's scenarios, aggregated and disaggregated."""
    data = json.loads(DATA.read_text())
    print(f"aiconfigurator: {data['source']}")
    layouts, estimates, split_layouts, split_estimates = [], [], [], []
    repaired_layouts, repaired_estimates, same_batch, decode_estimates = [], [], [], []
    repaired = json.loads(GLITCHES.read_text())["scenarios"]
    deepep, own_size = json.loads(DEEPEP.read_text()), []
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
        theirs = _rated(agg.get("ranked", []), agg.get("pareto_top10", []))
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
        _at_their_batch_line(
            found, chosen, _their_row(agg.get("ranked", []), agg.get("pareto_top10", []), name), rated, same_batch
        )
        at_own_size = _own_size_line(case, found, theirs, rated, deepep)
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
        if layout is not None:
            own_size.append(repaired_layouts[-1] if at_own_size is None else at_own_size)
        line, split_layout, split_estimate, decode_estimate = _disaggregated(case, found, targets)
        print(line)
        if split_layout is not None and split_estimate is not None and decode_estimate is not None:
            split_layouts.append(split_layout)
            split_estimates.append(abs(split_estimate - 1))
            decode_estimates.append(abs(decode_estimate - 1))
    print()
    print(f"derive's searches took {time.perf_counter() - started:.1f} s for {len(data['scenarios'])} scenarios")
    if layouts:
        print(_summary("aggregated, where aiconfigurator's table holds derive's layout", layouts, estimates))
    if repaired_layouts != layouts:
        print(
            "the same with aiconfigurator's glitched MoE rows repaired: worst layout ratio "
            f"{min(repaired_layouts):.2f}, median {statistics.median(repaired_layouts):.2f}; estimate off by "
            f"{statistics.median(repaired_estimates):.0%} at the median, {max(repaired_estimates):.0%} at worst"
        )
    if own_size != repaired_layouts:
        print(
            "the same with the glitched rows repaired and against aiconfigurator's best among layouts it prices at "
            "their own size: worst layout ratio "
            f"{min(own_size):.2f}, median {statistics.median(own_size):.2f}"
        )
    if same_batch:
        print(
            f"the same layouts at aiconfigurator's batch for them: estimate off by {statistics.median(same_batch):.0%} "
            f"at the median, {max(same_batch):.0%} at worst"
        )
    if split_layouts:
        print(
            _summary("disaggregated, where aiconfigurator's tables hold derive's pair", split_layouts, split_estimates)
        )
        print(
            "their decode workers at aiconfigurator's batch for them: estimate off by "
            f"{statistics.median(decode_estimates):.0%} at the median, {max(decode_estimates):.0%} at worst"
        )


def h100_cases() -> None:
    """Part 2: the earlier H100 cases, aggregated."""
    data = json.loads(H100_CASES.read_text())
    print(f"aiconfigurator: {data['source']}")
    layouts, estimates, same_batch = [], [], []
    started = time.perf_counter()
    for case in data["cases"]:
        best = case["best"]
        targets = Targets(
            ttft=sympy.Rational(case["targets"]["ttft_ms"]) / 1000,
            tpot=sympy.Rational(case["targets"]["tpot_ms"]) / 1000,
            prompt=case["isl"],
            output=case["osl"],
        )
        found = search_gpu(
            load_model(case["model_id"]), load_gpu("h100"), "bf16", targets, case["total_gpus"], 4096, None
        )
        chosen = pick(found.rows)
        assert chosen is not None
        theirs = _rated(case["ranked"], case.get("pareto_top10", []))
        # aiconfigurator searches no layout with both tp and attention dp above 1: derive's best among the rest too.
        if aiconfigurator_name(chosen.layout, case["moe"]) not in theirs:
            chosen = pick([r for r in found.rows if r.layout.tp == 1 or r.layout.dp == 1]) or chosen
        rated = theirs.get(aiconfigurator_name(chosen.layout, case["moe"]))
        said = {"rated": "-", "layout": "-", "estimate": "-"}
        if rated is not None:
            layouts.append(rated / best["tokens_s_gpu"])
            estimates.append(abs(chosen.per_accelerator / rated - 1))
            said = {
                "rated": f"{rated:,.0f}",
                "layout": f"{layouts[-1]:.2f}",
                "estimate": f"{chosen.per_accelerator / rated:.2f}",
            }
        print(
            f"{case['id']:<30} aic {best['parallel']:<18} {best['tokens_s_gpu']:>7,.0f}  derive "
            f"{str(chosen.layout):<18} {chosen.per_accelerator:>7,.0f}  aic for it {said['rated']:>7}  layout "
            f"{said['layout']:>5}  estimate {said['estimate']}"
        )
        name = aiconfigurator_name(chosen.layout, case["moe"])
        _at_their_batch_line(
            found, chosen, _their_row(case["ranked"], case.get("pareto_top10", []), name), rated, same_batch
        )
    print()
    print(f"derive's searches took {time.perf_counter() - started:.1f} s for {len(data['cases'])} cases")
    if layouts:
        print(_summary("the H100 cases, where aiconfigurator's table holds derive's layout", layouts, estimates))
    if same_batch:
        print(
            f"the same layouts at aiconfigurator's batch for them: estimate off by {statistics.median(same_batch):.0%} "
            f"at the median, {max(same_batch):.0%} at worst"
        )


def main() -> None:
    scenarios()
    print()
    h100_cases()


if __name__ == "__main__":
    main()
