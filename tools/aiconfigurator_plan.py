"""What NVIDIA aiconfigurator 0.12 picks as the best aggregated-serving deployment.

Writes ``benchmarks/data/aiconfigurator-0.12-plan.json``: for a few (model, total GPUs, TTFT/TPOT
target) cases on h100_sxm, the configuration aiconfigurator's *aggregated* (in-flight-batching, one
pool of identical workers, no prefill/decode split) search ranks best by tokens/s/gpu under the
targets, its ranked table and the top of its Pareto frontier, the exact search space it enumerated
and how long the search took; a benchmark compares derive's planner against it.  aiconfigurator is
never a product dependency; run this in a throw-away venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_plan.py

Options: ``--out PATH`` (default benchmarks/data/aiconfigurator-0.12-plan.json).

API used (read from the aiconfigurator 0.12.0 source): ``aiconfigurator.cli.api.cli_exp(config=...)``,
the Python form of ``aiconfigurator cli exp``, with one flat-V2 experiment per case:

    cli_exp(config={name: {"serving_mode": "agg", "model_path": <HF id>, "system_name": "h100_sxm",
                           "backend_name": "trtllm", "total_gpus": N, "isl": 2048, "osl": 256,
                           "ttft": 2000.0, "tpot": T, "gemm_quant_mode": "bfloat16", ...}}, top_n=10)

This is the "agg" half of ``aiconfigurator cli default`` (``cli.main.build_default_tasks`` builds the
same ``Task(serving_mode="agg", ...)`` with the same defaults; ``cli default`` has no agg-only switch
and no quant-mode arguments, ``cli exp`` has both).  Inside: ``Task.run()`` ->
``sdk.sweep.sweep_agg`` (every parallel layout from ``Task.iter_parallel("agg")`` x the batch schedule
x the context-token budgets, at every TPOT of the Pareto sweep list; a point is kept when its tpot and
ttft are under that sweep TPOT and the TTFT target), then ``cli.utils.process_experiment_result`` ->
``sdk.picking.pick_default``: tokens/s/gpu_cluster = tokens/s/gpu * (total_gpus // worker_gpus) *
worker_gpus / total_gpus, best row per parallel layout with tpot <= target, ranked by
tokens/s/gpu_cluster (``best_configs``), and the Pareto frontier of tokens/s/gpu_cluster against
tokens/s/user (``pareto_fronts``).  The JSON records, per case, the candidate lists and the enumerated
layouts read back from the Task and the batch / context-token / TPOT-sweep lists read from
``aiconfigurator.sdk.sweep`` / ``task_v2``, so nothing about the search space is assumed here.

Each case runs in a fresh interpreter (cold timing), then once more by hand (``build_experiment_tasks``
-> ``Task.run`` -> ``process_experiment_result``, which must give cli_exp's result) to keep the raw
sweep table: how many points each layout produced.

Quant: bfloat16 GEMM, MoE, KV cache and context FMHA, half-precision all-reduce, set explicitly (they
equal what aiconfigurator infers from these bf16 checkpoints; each case records the inferred modes).

Imports only aiconfigurator, pandas (aiconfigurator's result type) and the standard library.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import argparse
import importlib.metadata
import inspect
import json
import math
import numbers
import os
import subprocess
import sys
import tempfile
import time

import aiconfigurator_common as shared

SYSTEM = "h100_sxm"
BACKEND = "trtllm"
DATABASE_MODE = "SILICON"
ISL = 2048
OSL = 256
TTFT_MS = 2000.0
TOP_N = 10
# (case id, aiconfigurator model name = HF id, TPOT targets in ms)
MODELS = [
    ("llama3-70b", "meta-llama/Meta-Llama-3.1-70B", [20.0, 50.0]),
    ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", [10.0, 30.0]),
]
# 8 = one HGX node; 16 = two nodes (each case searches in well under a minute, so it is run too).
TOTAL_GPUS = [8, 16]
QUANT = shared.BF16_QUANT

MEANING = {
    "tokens_s_gpu": (
        "aiconfigurator's tokens/s/gpu: output tokens/s of ONE worker (tokens/s) divided by the GPUs of that "
        "worker (num_gpus = tp*pp*dp). tokens/s counts generated tokens 2..osl (request_rate * (osl-1)), "
        "i.e. not the prompt and not the first token"
    ),
    "tokens_s_gpu_cluster": (
        "what aiconfigurator ranks by: tokens_s_gpu * replicas * num_gpus / total_gpus with replicas = "
        "total_gpus // num_gpus, i.e. per GPU of the whole budget, idle left-over GPUs included (equal to "
        "tokens_s_gpu whenever num_gpus divides total_gpus, as for every layout here)"
    ),
    "tokens_s_user": "1000 / tpot_ms: decode speed one request sees",
    "tokens_s_worker": "aiconfigurator's tokens/s: output tokens/s of one worker (all its attention-DP ranks)",
    "ttft_ms": (
        "aiconfigurator's agg TTFT estimate: per-request prefill time (one context step of ctx_tokens, "
        "ceil(isl/ctx_tokens) steps) times its queuing heuristic min(2 + (ceil(isl*bs/ctx_tokens) - 3)/20, 4) "
        "(base_backend._ttft_queuing_factor); filtered against the TTFT target during the sweep"
    ),
    "tpot_ms": (
        "aiconfigurator's agg TPOT: mean step latency over the mixed (prefill+decode) steps, minus its 3-step "
        "TRT-LLM drain correction, and the decode-only steps of the steady-state IFB schedule"
    ),
    "request_latency_ms": "ttft_ms + tpot_ms * (osl - 1)",
    "tp": "attention / dense tensor-parallel size of one worker",
    "pp": "pipeline-parallel size of one worker",
    "dp": (
        "ATTENTION data parallelism inside one worker (TRT-LLM attention DP, MoE models only; every rank "
        "has its own batch of bs requests and the MoE layers span all tp*dp GPUs); NOT replicas. Replicas "
        "are `replicas`"
    ),
    "moe_tp": "MoE expert tensor-parallel size (1 for dense models, where it means nothing)",
    "moe_ep": "MoE expert-parallel size (1 for dense models, where it means nothing); moe_tp*moe_ep = tp*dp",
    "bs": "in-flight batch (max concurrent requests) PER attention-DP rank: the batch-schedule value",
    "global_bs": "bs * dp: concurrent requests of one worker",
    "concurrency": "aiconfigurator's concurrency: bs * pp * dp",
    "num_gpus": "GPUs of one worker = tp * pp * dp (aiconfigurator's num_total_gpus)",
    "replicas": "total_gpus // num_gpus: identical workers deployed in the budget (aiconfigurator's assumption)",
    "gpus_used": "replicas * num_gpus",
    "ctx_tokens": "context-token budget per engine step (TRT-LLM max_num_tokens analogue) of the point",
    "memory_gib": "aiconfigurator's estimated peak memory per GPU (GiB)",
    "meets_targets": "tpot_ms <= tpot target and ttft_ms <= ttft target",
    "parallel": "aiconfigurator's layout label tp{tp}pp{pp}dp{dp}etp{moe_tp}ep{moe_ep}",
}


def _num(x):
    """A JSON-safe Python number (None for NaN / missing); floats to 3 decimals, as aiconfigurator rounds."""
    if x is None:
        return None
    if isinstance(x, numbers.Integral):
        return int(x)
    f = float(x)
    if math.isnan(f) or math.isinf(f):
        return None
    return round(f, 3)


def _int(x):
    return int(round(float(x)))


def _row(r, total_gpus: int, tpot_target: float, ttft_target: float) -> dict:
    num_gpus = _int(r["num_total_gpus"])
    replicas = total_gpus // num_gpus
    cluster = r["tokens/s/gpu_cluster"] if "tokens/s/gpu_cluster" in r else None
    return {
        "tokens_s_gpu": _num(r["tokens/s/gpu"]),
        "tokens_s_gpu_cluster": _num(cluster),
        "tokens_s_user": _num(r["tokens/s/user"]),
        "tokens_s_worker": _num(r["tokens/s"]),
        "ttft_ms": _num(r["ttft"]),
        "tpot_ms": _num(r["tpot"]),
        "request_latency_ms": _num(r["request_latency"]),
        "tp": _int(r["tp"]),
        "pp": _int(r["pp"]),
        "dp": _int(r["dp"]),
        "moe_tp": _int(r["moe_tp"]),
        "moe_ep": _int(r["moe_ep"]),
        "bs": _int(r["bs"]),
        "global_bs": _int(r["global_bs"]),
        "concurrency": _int(r["concurrency"]),
        "num_gpus": num_gpus,
        "replicas": replicas,
        "gpus_used": replicas * num_gpus,
        "ctx_tokens": _int(r["ctx_tokens"]),
        "memory_gib": _num(r["memory"]),
        "parallel": str(r["parallel"]),
        "meets_targets": bool(float(r["tpot"]) <= tpot_target and float(r["ttft"]) <= ttft_target),
    }


def _enum_name(v):
    return getattr(v, "name", v)


def per_layout(task, raw, total_gpus: int, tpot: float, ttft: float):
    """Each layout the agg search enumerates: its tuple (tp, pp, dp, moe_tp, moe_ep, cp), the mask of its sweep
    rows in `raw`, and the tokens/s/gpu_cluster of those rows meeting both targets (index kept, for their bs)."""
    cluster = raw["tokens/s/gpu"] * (total_gpus // raw["num_total_gpus"]) * raw["num_total_gpus"] / total_gpus
    ok = (raw["tpot"] <= tpot) & (raw["ttft"] <= ttft)
    for p in task.iter_parallel("agg"):
        tp_, pp_, dp_, mtp_, mep_, _cp = p
        sel = (
            (raw["tp"] == tp_)
            & (raw["pp"] == pp_)
            & (raw["dp"] == dp_)
            & (raw["moe_tp"] == mtp_)
            & (raw["moe_ep"] == mep_)
        )
        yield p, sel, cluster[sel & ok]


def run_case(
    case_id,
    hf_id,
    total_gpus,
    tpot,
    aic,
    *,
    name=None,
    model_path=None,
    system=SYSTEM,
    isl=ISL,
    osl=OSL,
    ttft=TTFT_MS,
    quant=QUANT,
) -> dict:
    """aiconfigurator's aggregated search for one case (this file's defaults unless given).

    tools/aiconfigurator_scenarios.py calls it too, with its own name, system, lengths, TTFT target and quant:
    ``model_path`` is what aiconfigurator loads (default the HF id; a local config dir for models it ships
    but does not list), ``quant`` the explicit quant-mode fields (empty: aiconfigurator infers them from the
    checkpoint, as ``cli default`` does).
    """
    cli_exp, build_experiment_tasks, process_experiment_result, sweep, task_v2 = aic
    name = name or f"agg_{case_id}_{total_gpus}gpu_tpot{tpot:g}"
    exp = shared.agg_experiment(
        model_path or hf_id, system, BACKEND, DATABASE_MODE, total_gpus, isl, osl, ttft, tpot, quant
    )
    t0 = time.perf_counter()
    res = cli_exp(config={name: exp}, top_n=TOP_N)
    wall = time.perf_counter() - t0
    # The same steps again by hand (what cli_exp -> _execute_tasks runs), in the now-warm process: the
    # raw sweep table is kept (cli_exp does not return it) and the result must equal cli_exp's.
    t0 = time.perf_counter()
    task2 = build_experiment_tasks(config={name: exp})[name]
    raw = task2.run()
    best2, _, pareto2, _, _ = process_experiment_result(task2, {"pareto_df": raw}, top_n=TOP_N)
    wall_warm = time.perf_counter() - t0
    for a, b in ((res.best_configs[name], best2), (res.pareto_fronts[name], pareto2)):
        cols = [c for c in a.columns if not c.startswith("_")]
        assert a[cols].reset_index(drop=True).equals(b[cols].reset_index(drop=True)), f"{name}: results differ"
    task = res.tasks[name]

    # What aiconfigurator would infer without the explicit quant fields (as `cli default` runs).
    plain = {k: v for k, v in exp.items() if k not in QUANT}
    inferred_task = build_experiment_tasks(config={name: plain})[name]
    inferred = {k: _enum_name(getattr(inferred_task, k)) for k in QUANT}
    used = {k: _enum_name(getattr(task, k)) for k in QUANT}

    sig = inspect.signature(sweep.sweep_agg).parameters
    max_bs = sig["max_batch_size"].default
    ctx_stride = sig["ctx_stride"].default
    top_k = sig["top_k"].default
    search_space = {
        "candidates": {
            dim: list(getattr(task, f"agg_{dim}_candidates"))
            for dim in ("num_gpu", "tp", "pp", "dp", "moe_tp", "moe_ep", "cp")
        },
        "parallel_layouts": [
            dict(zip(("tp", "pp", "dp", "moe_tp", "moe_ep", "cp"), p, strict=True)) for p in task.iter_parallel("agg")
        ],
        "batch_schedule": [b for b in sweep._DEFAULT_AGG_BATCH_SCHEDULE if b <= max_bs],
        "batch_note": (
            f"sdk.sweep._DEFAULT_AGG_BATCH_SCHEDULE capped at sweep_agg's max_batch_size={max_bs}; bs is per "
            "attention-DP rank"
        ),
        "ctx_tokens": sweep._agg_ctx_tokens_list(isl, ctx_stride, task.enable_chunked_prefill),
        "ctx_tokens_note": (
            f"context tokens per engine step, sdk.sweep._agg_ctx_tokens_list(isl, ctx_stride={ctx_stride}, "
            f"enable_chunked_prefill={task.enable_chunked_prefill}); a (bs, ctx_tokens) point is skipped when "
            "bs - ceil(ctx_tokens/isl) < 1, and the ctx sweep of a bs stops at the first OOM / KV-cache OOM"
        ),
        "tpot_sweep": list(task_v2._LEGACY_TPOT_SWEEP) if task.pareto_sweep else [tpot],
        "tpot_sweep_note": (
            f"Task.pareto_sweep={task.pareto_sweep}: the sweep is repeated at each of these TPOT caps (ms) and "
            f"keeps the top {top_k} points by seq/s per (layout, cap) that meet the cap and the TTFT target; the "
            "TPOT target is applied afterwards, at picking"
        ),
        "enable_chunked_prefill": task.enable_chunked_prefill,
        "free_gpu_memory_fraction": task.free_gpu_memory_fraction,
        "max_seq_len": task.max_seq_len,
        "memory_note": (
            "free_gpu_memory_fraction / max_seq_len null = TRT-LLM backend defaults (0.9 of free memory for "
            "the KV cache, max_seq_len = isl + osl)"
        ),
    }

    # Per enumerated layout: how many sweep points survived (any TPOT cap, TTFT target) and its best
    # tokens/s/gpu_cluster under the TPOT target.  A layout with no points did not fit in memory, met
    # no cap within the TTFT target, or raised inside the sweep (aiconfigurator skips those silently).
    layouts = []
    for (tp_, pp_, dp_, mtp_, mep_, _cp), sel, good in per_layout(task, raw, total_gpus, tpot, ttft):
        layouts.append(
            {
                "parallel": f"tp{tp_}pp{pp_}dp{dp_}etp{mtp_}ep{mep_}",
                "num_gpus": tp_ * pp_ * dp_,
                "sweep_points": int(sel.sum()),
                "points_meeting_targets": int(len(good)),
                "best_tokens_s_gpu_cluster": _num(good.max()) if len(good) else None,
            }
        )
    search_space["layouts_result"] = layouts

    ranked_df = res.best_configs.get(name)
    pareto_df = res.pareto_fronts.get(name)
    ranked = [] if ranked_df is None else [_row(r, total_gpus, tpot, ttft) for _, r in ranked_df.iterrows()]
    pareto_all = [] if pareto_df is None else [_row(r, total_gpus, tpot, ttft) for _, r in pareto_df.iterrows()]
    pareto_ok = [p for p in pareto_all if p["meets_targets"]]
    pareto_ok.sort(key=lambda p: (-p["tokens_s_gpu_cluster"], -p["tokens_s_user"]))
    best = ranked[0] if ranked and ranked[0]["meets_targets"] else None
    if best is not None:
        # pick_default chooses from every feasible sweep point; its winner is on the frontier.
        assert pareto_ok and abs(pareto_ok[0]["tokens_s_gpu_cluster"] - best["tokens_s_gpu_cluster"]) < 1e-6, name
    out = {
        "id": name,
        "model_id": case_id,
        "model": hf_id,
        "moe": bool(task._is_moe),
        "total_gpus": total_gpus,
        "targets": {"ttft_ms": ttft, "tpot_ms": tpot},
        "isl": isl,
        "osl": osl,
        "database_version": task.backend_version,
        "quant": used,
        "quant_inferred_without_override": inferred,
        "wall_s": round(wall, 2),
        "wall_s_warm": round(wall_warm, 2),
        "best": best,
        "best_note": (
            "rank 1 of aiconfigurator's table (best_configs): the sweep point with the highest "
            "tokens/s/gpu_cluster among those with tpot <= target (ttft <= target enforced in the sweep); "
            "null if none meets the targets (aiconfigurator then falls back to the closest-tpot rows)"
        ),
        "ranked": ranked,
        "ranked_note": (
            f"aiconfigurator's result table (CLIResult.best_configs, top_n={TOP_N}): the best point of each "
            "parallel layout, ranked by tokens/s/gpu_cluster, so at most one row per layout"
        ),
        "pareto_top10": pareto_ok[:TOP_N],
        "pareto_note": (
            "aiconfigurator's Pareto frontier (CLIResult.pareto_fronts: tokens/s/gpu_cluster vs tokens/s/user "
            "over all sweep points, any TPOT cap) restricted to points meeting the targets, by "
            "tokens/s/gpu_cluster descending; several rows may share a layout"
        ),
        "sweep_points": int(len(raw)),
        "pareto_front_size": len(pareto_all),
        "pareto_front_meeting_targets": len(pareto_ok),
        "search_space": search_space,
    }
    return out


CASES = [(m, h, g, t) for m, h, tpots in MODELS for g in TOTAL_GPUS for t in tpots]


def _one_case(index: int, out_path: str) -> int:
    """Child process: run CASES[index] in a fresh interpreter (cold caches) and write its record."""
    shared.quiet()
    t0 = time.perf_counter()
    from aiconfigurator.cli.api import cli_exp
    from aiconfigurator.cli.main import build_experiment_tasks
    from aiconfigurator.cli.utils import process_experiment_result
    from aiconfigurator.sdk import sweep, task_v2

    import_s = time.perf_counter() - t0
    case_id, hf_id, total_gpus, tpot = CASES[index]
    aic = (cli_exp, build_experiment_tasks, process_experiment_result, sweep, task_v2)
    c = run_case(case_id, hf_id, total_gpus, tpot, aic)
    c["import_s"] = round(import_s, 2)
    with open(out_path, "w") as f:
        json.dump(c, f)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(here, "benchmarks", "data", "aiconfigurator-0.12-plan.json"))
    ap.add_argument("--case", type=int, default=None, help=argparse.SUPPRESS)  # internal: child process
    ap.add_argument("--case-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case is not None:
        return _one_case(args.case, args.case_out)

    shared.quiet()
    t_start = time.perf_counter()
    from aiconfigurator.sdk.perf_database import get_database_view, get_latest_database_version

    aic_version = importlib.metadata.version("aiconfigurator")
    version = get_latest_database_version(system=SYSTEM, backend=BACKEND)
    db = get_database_view(
        SYSTEM, BACKEND, version, allow_missing_data=False, database_mode=DATABASE_MODE, transfer_policy=None
    )
    if db is None:
        print(f"no {BACKEND} {version} database for {SYSTEM}", file=sys.stderr)
        return 1
    print(f"aiconfigurator {aic_version}, {SYSTEM} {BACKEND} database {version}", flush=True)

    cases = []
    with tempfile.TemporaryDirectory(prefix="aic-plan-") as tmp:
        for i in range(len(CASES)):
            case_out = os.path.join(tmp, f"case{i}.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--case", str(i), "--case-out", case_out]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0 or not os.path.isfile(case_out):
                print(f"case {CASES[i]} failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}", file=sys.stderr)
                return 1
            with open(case_out) as f:
                c = json.load(f)
            if c["database_version"] != version:
                print(f"{c['id']}: ran on database {c['database_version']}, expected {version}", file=sys.stderr)
                return 1
            cases.append(c)
            b = c["best"]
            desc = (
                "no configuration meets the targets"
                if b is None
                else f"{b['parallel']} bs={b['bs']} x{b['replicas']}: {b['tokens_s_gpu']} tok/s/gpu, "
                f"{b['tokens_s_user']} tok/s/user, ttft {b['ttft_ms']} ms, tpot {b['tpot_ms']} ms"
            )
            print(f"  {c['id']}: {desc} ({c['wall_s']} s cold, {c['wall_s_warm']} s warm)", flush=True)

    out = {
        "source": (
            f"aiconfigurator {aic_version} aggregated search (trtllm, silicon database {version}) on {SYSTEM}: "
            "aiconfigurator.cli.api.cli_exp with one serving_mode='agg' experiment per case (the agg half of "
            "`aiconfigurator cli default`), bf16 weights/KV/attention, its own ranking by tokens/s/gpu under "
            "the TTFT/TPOT targets"
        ),
        "generated_by": "python3 tools/aiconfigurator_plan.py",
        "aiconfigurator_version": aic_version,
        "system": SYSTEM,
        "backend": BACKEND,
        "database_version": version,
        "database_mode": DATABASE_MODE,
        "api": (
            "aiconfigurator.cli.api.cli_exp(config={name: {serving_mode: agg, model_path, system_name, "
            "backend_name, database_mode, total_gpus, isl, osl, ttft, tpot, *_quant_mode}}, top_n=10) -> "
            "Task.run() (sdk.sweep.sweep_agg) -> cli.utils.process_experiment_result -> sdk.picking.pick_default"
        ),
        "settings": {
            "isl": ISL,
            "osl": OSL,
            "ttft_target_ms": TTFT_MS,
            "quant": QUANT,
            "prefix": 0,
            "nextn": 0,
            "strict_sla": False,
            "top_n": TOP_N,
            "total_gpus": TOTAL_GPUS,
            "wall_s_note": (
                "each case runs in a fresh Python process; wall_s = its first cli_exp call (sweep + picking, "
                "including aiconfigurator's lazy loading of the perf tables it touches, after import_s of "
                "imports); wall_s_warm = the same search repeated in that process by hand (build_experiment_tasks -> "
                "Task.run -> process_experiment_result, tables cached; its result must equal cli_exp's, and its "
                "raw sweep table gives sweep_points and search_space.layouts_result). Single-threaded, on the "
                "CPU of the machine that generated the file"
            ),
        },
        "meaning": MEANING,
        "cases": cases,
        "total_wall_s": round(time.perf_counter() - t_start, 1),
    }
    write_result(out, args.out)
    print(f"{len(cases)} cases -> {args.out} in {out['total_wall_s']} s")
    return 0


def write_result(out: dict, path: str) -> None:
    """The recorded result as sorted, indented JSON (one line a key: the committed files diff well)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
