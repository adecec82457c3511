"""Non-physical rows in NVIDIA aiconfigurator 0.12's MoE kernel tables, and what they cost its aggregated search.

Writes ``benchmarks/data/aiconfigurator-0.12-glitches.json``.  Two parts:

1. Scan.  For every MoE scenario of ``benchmarks/data/aiconfigurator-0.12-scenarios.json`` (Qwen3-30B-A3B,
   Mixtral 8x7B, gpt-oss-20b, DeepSeek-V3, Kimi K2 on h100_sxm / h200_sxm / b200_sxm), the MoE op aiconfigurator
   builds for it is probed (hidden, expert inter size, experts, top-k, MoE quant, workload distribution), and
   every series of its TRT-LLM MoE table (``systems/data/<system>/moe/trtllm/<version>/moe_perf.parquet``,
   the database version the scenarios ran on, 1.3.0rc20) with that shape and quant -- one series per
   (distribution, moe_tp, moe_ep), latency against num_tokens = the GLOBAL token count of the step -- is
   checked against the rule below.  The table is read with pandas and checked equal, value for value, to
   the engine view aiconfigurator queries (``MoE.load_data(db); db._moe_data``).
2. Repair.  Every flagged row is replaced in a temporary copy of aiconfigurator's ``systems`` directory by
   linear interpolation IN TOKENS (not log-tokens) between the nearest clean rows of its series below and
   above (held flat at the one clean neighbour when it has only one), and, for every scenario whose search
   queries a series with a flagged row (the model's distribution and a (moe_tp, moe_ep) of one of its
   aggregated layouts), aiconfigurator's own aggregated search (``build_experiment_tasks`` -> ``Task.run``
   -> ``sdk.sweep.sweep_agg`` over every layout, batch and context budget, then
   ``cli.utils.process_experiment_result``) is run twice in fresh interpreters: on the shipped data (must
   reproduce the recorded per-layout figures of the scenarios file; the script fails otherwise) and on the
   repaired copy (``perf_database.set_systems_paths([copy])``; the child checks that the engine now serves
   the repaired values).  Per layout it records the best tokens/s/GPU (cluster) meeting the TTFT and TPOT
   targets, recorded and repaired, and the repaired scenario best.

Rule (a row is flagged when either holds; both are physical bounds on a MoE kernel's latency):

- more-tokens: its latency exceeds by more than 50 % AND by more than 20 us the lowest latency of its own
  series at any LARGER token count (a grouped GEMM over more tokens does not get faster; the 20 us floor
  keeps sub-30-us launch jitter at small latencies out);
- ep1: moe_tp*moe_ep > 1 and its latency exceeds by more than 25 % the moe_tp=1, moe_ep=1 latency of the
  same shape, quant and distribution at the same global token count (a GPU holding 1/(moe_tp*moe_ep) of
  the expert weights never does more work than one GPU holding them all).

aiconfigurator is never a product dependency; run this in a throw-away venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_glitch.py

Options: ``--out PATH`` (default benchmarks/data/aiconfigurator-0.12-glitches.json), ``--scenarios PATH``
(default benchmarks/data/aiconfigurator-0.12-scenarios.json), ``--jobs N`` (sweeps run in parallel, default
2).  Takes 2 to 3.5 minutes on 2 CPU cores (the six sweeps dominate: 20-40 s each).

API used (aiconfigurator 0.12.0): ``cli.main.build_experiment_tasks(config={id: {serving_mode: agg, ...}})``,
``Task.run()`` (with ``sdk.sweep.sweep_agg`` briefly replaced, in the probe only, to capture its database,
model config and layouts), ``sdk.models.get_model`` (the probe's MoE op: ``_hidden_size``, ``_inter_size``,
``_num_experts``, ``_topk``, ``_quant_mode``, ``_workload_distribution``), ``sdk.operations.MoE.load_data``,
``aiconfigurator_core.sdk.perf_database.set_systems_paths / get_database_view``,
``cli.utils.process_experiment_result``; the scenario experiments, per-layout figures and result rows are
built exactly as tools/aiconfigurator_scenarios.py / tools/aiconfigurator_plan.py build them.

Imports only aiconfigurator, pandas (its table type), the standard library and, from this directory,
tools/aiconfigurator_plan.py and tools/aiconfigurator_scenarios.py.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import aiconfigurator_common as shared
import aiconfigurator_plan as plan
import aiconfigurator_scenarios as scen

BACKEND = plan.BACKEND
DATABASE_MODE = plan.DATABASE_MODE
TOP_N = plan.TOP_N
SYSTEMS = ("h100_sxm", "h200_sxm", "b200_sxm")
OLDER_VERSION = "1.3.0rc10"  # the previous trtllm collection, shown beside each flagged row where it exists
MORE_TOKENS_RATIO = 1.5  # flag: latency > 1.5 x the series' minimum at larger token counts ...
MORE_TOKENS_ABS_US = 20.0  # ... and more than 20 us above it
EP1_RATIO = 1.25  # flag: moe_tp*moe_ep > 1 and latency > 1.25 x the tp1/ep1 latency at the same tokens
LOW_LATENCY_SOURCE = "moe_torch_flow_min_latency"  # routed by the engine to a separate (low-latency) view
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(_ROOT, "benchmarks", "data", "aiconfigurator-0.12-glitches.json")
DEFAULT_SCENARIOS = os.path.join(_ROOT, "benchmarks", "data", "aiconfigurator-0.12-scenarios.json")

RULE = (
    f"a row of a MoE table series (system, hidden, inter, experts, top-k, quant, distribution, moe_tp, moe_ep; "
    f"latency against global num_tokens) is flagged when (more_tokens) its latency exceeds the series' lowest "
    f"latency at any larger token count by more than {MORE_TOKENS_RATIO - 1:.0%} and by more than "
    f"{MORE_TOKENS_ABS_US:g} us, or (ep1) moe_tp*moe_ep > 1 and its latency exceeds the moe_tp=1/moe_ep=1 "
    f"latency of the same shape, quant and distribution at the same num_tokens by more than {EP1_RATIO - 1:.0%}. "
    "Rows of kernel_source moe_torch_flow_min_latency (a separate low-latency view) are not scanned"
)
REPAIR = (
    "each flagged row's latency is replaced by linear interpolation in num_tokens (not log-tokens) between the "
    "nearest unflagged rows of its series below and above; with an unflagged row on one side only it is held "
    "at that row's latency. Done on a temporary copy of aiconfigurator_core/systems (moe_perf.parquet "
    "rewritten, nothing else touched), selected with perf_database.set_systems_paths"
)


def _g(x: float, digits: int = 4) -> float:
    return float(f"{float(x):.{digits}g}")


def _parallel(t) -> str:
    tp, pp, dp, mtp, mep = (int(x) for x in t[:5])
    return f"tp{tp}pp{pp}dp{dp}etp{mtp}ep{mep}"


def _scenario_tuple(sid: str):
    for sc in scen.SCENARIOS:
        if sc[0] == sid:
            return sc
    raise KeyError(f"{sid}: not in tools/aiconfigurator_scenarios.SCENARIOS")


def _experiment(sc, tmp: str) -> tuple[str, dict]:
    """The agg experiment tools/aiconfigurator_scenarios.py ran for this scenario (plan.run_case's fields)."""
    sid, model_id, hf_id, system, total_gpus, isl, osl, ttft, tpot, quant = sc
    path, _ = scen.model_path(hf_id, tmp)
    exp = shared.agg_experiment(
        path, system, BACKEND, DATABASE_MODE, total_gpus, isl, osl, float(ttft), float(tpot), quant or {}
    )
    return f"agg_{sid}", exp


# ---------------------------------------------------------------------------------------------------------
# probe: which MoE table series a scenario's search queries
# ---------------------------------------------------------------------------------------------------------


def probe(scenarios: list[dict], tmp: str) -> tuple[dict, dict]:
    """Per MoE scenario: its MoE op's shape / quant / distribution and its aggregated layouts, read from the
    model aiconfigurator builds (sweep_agg is replaced for the call to capture its arguments).  Also returns
    one database per system (the shipped data) for the engine-view check."""
    from aiconfigurator.cli.main import build_experiment_tasks
    from aiconfigurator.sdk import sweep
    from aiconfigurator.sdk.models import get_model

    captured: dict = {}
    orig = sweep.sweep_agg

    class _Stop(Exception):
        pass

    def capture(**kw):
        captured.update(kw)
        raise _Stop

    patched = [sweep] + [
        m for m in list(sys.modules.values()) if m is not None and getattr(m, "sweep_agg", None) is orig
    ]
    for m in patched:
        m.sweep_agg = capture
    out, dbs = {}, {}
    try:
        for s in scenarios:
            sc = _scenario_tuple(s["id"])
            name, exp = _experiment(sc, tmp)
            captured.clear()
            task = build_experiment_tasks(config={name: exp})[name]
            try:
                task.run()
            except _Stop:
                pass
            if "model_config" not in captured:
                raise RuntimeError(f"{s['id']}: Task.run did not reach sweep_agg")
            layouts = [tuple(int(x) for x in p) for p in captured["parallel_config_list"]]
            mc = captured["model_config"]
            tup = layouts[0]
            tp, pp, dp, mtp, mep, cp = tup
            cfg = dataclasses.replace(
                mc(tup) if callable(mc) else mc,
                tp_size=tp,
                pp_size=pp,
                moe_tp_size=mtp,
                moe_ep_size=mep,
                attention_dp_size=dp,
                cp_size=cp,
            )
            model = get_model(model_path=captured["model_path"], model_config=cfg, backend_name=BACKEND)
            moe_ops = [op for op in list(model.context_ops) + list(model.generation_ops) if type(op).__name__ == "MoE"]
            if not moe_ops:
                raise RuntimeError(f"{s['id']}: no MoE op in the model aiconfigurator builds")
            keys = {
                (
                    int(op._hidden_size),
                    int(op._inter_size),
                    int(op._num_experts),
                    int(op._topk),
                    op._quant_mode.name,
                    str(op._workload_distribution),
                )
                for op in moe_ops
            }
            if len(keys) != 1:
                raise RuntimeError(f"{s['id']}: MoE ops disagree: {sorted(keys)}")
            h, inter, e, k, q, dist = keys.pop()
            db = captured["database"]
            if db.version != s["database_version"]:
                raise RuntimeError(f"{s['id']}: database {db.version}, scenarios ran on {s['database_version']}")
            dbs.setdefault(s["system"], db)
            out[s["id"]] = {
                "system": s["system"],
                "hidden": h,
                "inter": inter,
                "experts": e,
                "topk": k,
                "quant": q,
                "distribution": dist,
                "layouts": layouts,
                "moe_pairs": sorted({(p[3], p[4]) for p in layouts}),
                "database_version": db.version,
            }
    finally:
        for m in patched:
            m.sweep_agg = orig
    return out, dbs


# ---------------------------------------------------------------------------------------------------------
# scan
# ---------------------------------------------------------------------------------------------------------


def moe_table(systems_root: str, db, version: str) -> str:
    from aiconfigurator_core.sdk.common import PerfDataFilename
    from aiconfigurator_core.sdk.operations.base import resolve_op_data_path

    return resolve_op_data_path(
        os.path.join(systems_root, db.system_spec["data_dir"]), BACKEND, version, PerfDataFilename.moe.value
    )


def scan(probes: dict, dbs: dict) -> tuple[list[dict], list[dict], int]:
    """Flag rows by RULE in every (distribution, moe_tp, moe_ep) series of each probed (system, shape, quant).
    Returns (flagged rows, scanned-series summary, number of table values checked against the engine view)."""
    import pandas as pd
    from aiconfigurator.sdk import operations as ops

    groups: dict = {}
    for sid, p in probes.items():
        key = (p["system"], p["hidden"], p["inter"], p["experts"], p["topk"], p["quant"])
        groups.setdefault(key, []).append(sid)
    flagged, summary, n_checked = [], [], 0
    tables: dict = {}
    for key in sorted(groups):
        system, h, inter, e, k, q = key
        db = dbs[system]
        path = moe_table(db.systems_root, db, db.version)
        if path not in tables:
            tables[path] = pd.read_parquet(path)
        df = tables[path]
        old_path = moe_table(db.systems_root, db, OLDER_VERSION)
        old = pd.read_parquet(old_path) if os.path.isfile(old_path) else None

        def sel(d, h=h, inter=inter, e=e, k=k, q=q):
            return d[
                (d.hidden_size == h)
                & (d.inter_size == inter)
                & (d.num_experts == e)
                & (d.topk == k)
                & (d.moe_dtype == q)
                & (d.kernel_source != LOW_LATENCY_SOURCE)
            ]

        d = sel(df)
        if d.empty:
            raise RuntimeError(f"{key}: no rows in {path}")
        if d.duplicated(["distribution", "moe_tp_size", "moe_ep_size", "num_tokens"]).any():
            raise RuntimeError(f"{key}: duplicate rows in {path}")
        od = sel(old) if old is not None else None
        ops.MoE.load_data(db)
        view = db._moe_data
        qkey = next(m for m in view if getattr(m, "name", m) == q)
        for dist in sorted(d.distribution.unique()):
            dd = d[d.distribution == dist]
            ref = dd[(dd.moe_tp_size == 1) & (dd.moe_ep_size == 1)].set_index("num_tokens")["latency"].to_dict()
            users_dist = [sid for sid in groups[key] if probes[sid]["distribution"] == dist]
            for (mtp, mep), g in dd.groupby(["moe_tp_size", "moe_ep_size"]):
                mtp, mep = int(mtp), int(mep)
                s = g.set_index("num_tokens")["latency"].sort_index()
                toks = [int(t) for t in s.index]
                lat = [float(x) for x in s.values]
                engine = view[qkey][dist][k][e][h][inter][mtp][mep]
                if sorted(int(t) for t in engine) != toks:
                    raise RuntimeError(f"{key} {dist} tp{mtp}ep{mep}: engine view tokens differ from {path}")
                for t, v in zip(toks, lat, strict=True):
                    ev = float(engine[t]["latency"])
                    if abs(ev - v) > 1e-9 * max(abs(v), 1e-12):
                        raise RuntimeError(f"{key} {dist} tp{mtp}ep{mep} n={t}: engine {ev} != table {v}")
                    n_checked += 1
                users = [sid for sid in users_dist if (mtp, mep) in probes[sid]["moe_pairs"]]
                flags = []
                for j, (t, v) in enumerate(zip(toks, lat, strict=True)):
                    clauses = {}
                    if j + 1 < len(lat):
                        m = min(lat[j + 1 :])
                        if v > MORE_TOKENS_RATIO * m and (v - m) * 1e3 > MORE_TOKENS_ABS_US:
                            clauses["more_tokens"] = {
                                "min_us": _g(m * 1e3),
                                "at_tokens": toks[j + 1 + lat[j + 1 :].index(m)],
                            }
                    if mtp * mep > 1 and t in ref and v > EP1_RATIO * ref[t]:
                        clauses["ep1"] = {"ep1_us": _g(ref[t] * 1e3)}
                    if clauses:
                        flags.append((j, clauses))
                bad = {j for j, _ in flags}
                for j, clauses in flags:
                    t = toks[j]
                    lo = next((i for i in range(j - 1, -1, -1) if i not in bad), None)
                    hi = next((i for i in range(j + 1, len(toks)) if i not in bad), None)
                    if lo is not None and hi is not None:
                        rep = lat[lo] + (lat[hi] - lat[lo]) * (t - toks[lo]) / (toks[hi] - toks[lo])
                    elif lo is not None or hi is not None:
                        rep = lat[lo if lo is not None else hi]
                    else:
                        rep = None
                    o = None
                    if od is not None:
                        orow = od[
                            (od.distribution == dist)
                            & (od.moe_tp_size == mtp)
                            & (od.moe_ep_size == mep)
                            & (od.num_tokens == t)
                        ]
                        o = _g(float(orow["latency"].iloc[0]) * 1e3) if len(orow) else None
                    flagged.append(
                        {
                            "system": system,
                            "shape": {"hidden": h, "inter": inter, "experts": e, "topk": k},
                            "models": sorted({probes[sid]["model"] for sid in groups[key]}),
                            "quant": q,
                            "distribution": dist,
                            "moe_tp": mtp,
                            "ep": mep,
                            "tokens": t,
                            "latency_us": _g(lat[j] * 1e3),
                            "clauses": clauses,
                            "ep1_us": _g(ref[t] * 1e3) if t in ref else None,
                            "neighbours": {
                                "below": None if lo is None else {"tokens": toks[lo], "latency_us": _g(lat[lo] * 1e3)},
                                "above": None if hi is None else {"tokens": toks[hi], "latency_us": _g(lat[hi] * 1e3)},
                            },
                            "repaired_us": None if rep is None else _g(rep * 1e3),
                            "_repaired_ms": rep,
                            "rc10_us": o,
                            "used_by": users,
                            "table": os.path.relpath(path, db.systems_root),
                        }
                    )
                summary.append(
                    {
                        "system": system,
                        "shape": f"h{h} i{inter} E{e} k{k}",
                        "quant": q,
                        "distribution": dist,
                        "moe_tp": mtp,
                        "ep": mep,
                        "rows": len(toks),
                        "flagged": len(flags),
                        "used_by": users,
                    }
                )
    return flagged, summary, n_checked


def write_patched(systems_root: str, dst: str, flagged: list[dict]) -> int:
    """Copy aiconfigurator's systems dir to dst and write the repaired latencies into its moe_perf tables."""
    import pandas as pd

    shutil.copytree(systems_root, dst)
    by_table: dict = {}
    for r in flagged:
        if r["_repaired_ms"] is not None:
            by_table.setdefault(r["table"], []).append(r)
    n = 0
    for rel, rows in sorted(by_table.items()):
        path = os.path.join(dst, rel)
        df = pd.read_parquet(path)
        for r in rows:
            m = (
                (df.hidden_size == r["shape"]["hidden"])
                & (df.inter_size == r["shape"]["inter"])
                & (df.num_experts == r["shape"]["experts"])
                & (df.topk == r["shape"]["topk"])
                & (df.moe_dtype == r["quant"])
                & (df.distribution == r["distribution"])
                & (df.moe_tp_size == r["moe_tp"])
                & (df.moe_ep_size == r["ep"])
                & (df.num_tokens == r["tokens"])
                & (df.kernel_source != LOW_LATENCY_SOURCE)
            )
            if int(m.sum()) != 1:
                raise RuntimeError(f"{rel}: {int(m.sum())} rows match flagged row {r['tokens']}")
            df.loc[m, "latency"] = r["_repaired_ms"]
            n += 1
        df.to_parquet(path)
    return n


# ---------------------------------------------------------------------------------------------------------
# child: aiconfigurator's aggregated search of one scenario on the shipped or the repaired data
# ---------------------------------------------------------------------------------------------------------


def _child(sid: str, systems: str | None, checks_path: str | None, out_path: str) -> int:
    shared.quiet()
    t0 = time.perf_counter()
    import aiconfigurator_core.sdk.perf_database as pdb
    from aiconfigurator.cli.main import build_experiment_tasks
    from aiconfigurator.cli.utils import process_experiment_result

    n_served = 0
    if systems:
        pdb.set_systems_paths([systems])
        with open(checks_path) as f:
            checks = json.load(f)
        from aiconfigurator.sdk import operations as ops

        for c in checks:  # the engine must now serve the repaired values
            db = pdb.get_database_view(
                c["system"],
                BACKEND,
                c["version"],
                allow_missing_data=False,
                database_mode=DATABASE_MODE,
                transfer_policy=None,
            )
            ops.MoE.load_data(db)
            view = db._moe_data
            q = next(m for m in view if getattr(m, "name", m) == c["quant"])
            s = c["shape"]
            got = float(
                view[q][c["distribution"]][s["topk"]][s["experts"]][s["hidden"]][s["inter"]][c["moe_tp"]][c["ep"]][
                    c["tokens"]
                ]["latency"]
            )
            if abs(got - c["ms"]) > 1e-9 * c["ms"]:
                raise RuntimeError(f"repaired copy not served: {c} -> {got}")
            n_served += 1
    sc = _scenario_tuple(sid)
    _, _, _, _, total_gpus, _, _, ttft, tpot, _ = sc
    with tempfile.TemporaryDirectory(prefix="aic-glitch-") as tmp:
        name, exp = _experiment(sc, tmp)
        task = build_experiment_tasks(config={name: exp})[name]
        raw = task.run()
        best_df, _, _, _, _ = process_experiment_result(task, {"pareto_df": raw}, top_n=TOP_N)
    # per layout: best tokens/s/gpu_cluster meeting both targets (tools/aiconfigurator_plan.run_case's rule)
    layouts = {}
    for p, _sel, good in plan.per_layout(task, raw, total_gpus, tpot, ttft):
        if len(good):
            i = good.idxmax()
            layouts[_parallel(p)] = {"tokens_s_gpu_cluster": plan._num(good[i]), "bs": int(raw.loc[i, "bs"])}
        else:
            layouts[_parallel(p)] = {"tokens_s_gpu_cluster": None, "bs": None}
    ranked = [] if best_df is None else [plan._row(r, total_gpus, tpot, ttft) for _, r in best_df.iterrows()]
    best = ranked[0] if ranked and ranked[0]["meets_targets"] else None
    rec = {
        "id": sid,
        "systems": systems or "default",
        "database_version": task.backend_version,
        "layouts": layouts,
        "best": best,
        "served_checks": n_served,
        "wall_s": round(time.perf_counter() - t0, 2),
    }
    with open(out_path, "w") as f:
        json.dump(rec, f)
    return 0


def _best_brief(b) -> dict | None:
    if b is None:
        return None
    return {k: b[k] for k in ("parallel", "bs", "tokens_s_gpu_cluster", "tpot_ms", "ttft_ms", "replicas")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--scenarios", default=DEFAULT_SCENARIOS)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)  # internal: one sweep in a fresh process
    ap.add_argument("--systems", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--checks", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--case-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        return _child(args.child, args.systems, args.checks, args.case_out)

    shared.quiet()
    t_start = time.perf_counter()
    aic_version = importlib.metadata.version("aiconfigurator")
    with open(args.scenarios) as f:
        sfile = json.load(f)
    moe = [s for s in sfile["scenarios"] if s["moe"] and s["system"] in SYSTEMS]
    dense = [s["id"] for s in sfile["scenarios"] if not s["moe"]]

    with tempfile.TemporaryDirectory(prefix="aic-glitch-") as tmp:
        probes, dbs = probe(moe, tmp)
        for s in moe:
            probes[s["id"]]["model"] = s["model"]
        t_probe = time.perf_counter() - t_start
        flagged, summary, n_checked = scan(probes, dbs)
        t_scan = time.perf_counter() - t_start - t_probe
        touched = [s for s in moe if any(s["id"] in r["used_by"] for r in flagged)]
        systems_root = next(iter(dbs.values())).systems_root
        patched = os.path.join(tmp, "systems")
        n_patched = write_patched(systems_root, patched, flagged)
        checks = [
            {
                "system": r["system"],
                "version": dbs[r["system"]].version,
                "quant": r["quant"],
                "shape": r["shape"],
                "distribution": r["distribution"],
                "moe_tp": r["moe_tp"],
                "ep": r["ep"],
                "tokens": r["tokens"],
                "ms": r["_repaired_ms"],
            }
            for r in flagged
            if r["_repaired_ms"] is not None
        ]
        checks_path = os.path.join(tmp, "checks.json")
        with open(checks_path, "w") as f:
            json.dump(checks, f)

        jobs = [(s["id"], mode) for s in touched for mode in ("shipped", "repaired")]
        results, running, queue = {}, [], list(jobs)
        while queue or running:
            while queue and len(running) < max(1, args.jobs):
                sid, mode = queue.pop(0)
                out = os.path.join(tmp, f"{sid}_{mode}.json")
                cmd = [sys.executable, os.path.abspath(__file__), "--child", sid, "--case-out", out]
                if mode == "repaired":
                    cmd += ["--systems", patched, "--checks", checks_path]
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                running.append((sid, mode, out, proc))
            time.sleep(0.2)
            for item in list(running):
                sid, mode, out, proc = item
                if proc.poll() is None:
                    continue
                running.remove(item)
                _, err = proc.communicate()
                if proc.returncode != 0 or not os.path.isfile(out):
                    print(f"{sid} {mode} failed (rc {proc.returncode}):\n{err[-3000:]}", file=sys.stderr)
                    return 1
                with open(out) as f:
                    results[(sid, mode)] = json.load(f)

    scenarios_out, untouched = {}, {}
    for s in moe:
        sid = s["id"]
        p = probes[sid]
        if s not in touched:
            untouched[sid] = (
                f"no flagged row in the series its search queries ({p['system']}, h{p['hidden']} i{p['inter']} "
                f"E{p['experts']} k{p['topk']}, {p['quant']}, {p['distribution']}, (moe_tp, moe_ep) of its layouts)"
            )
            continue
        shipped, repaired = results[(sid, "shipped")], results[(sid, "repaired")]
        rec_layouts = {
            lr["parallel"]: lr["best_tokens_s_gpu_cluster"] for lr in s["agg"]["search_space"]["layouts_result"]
        }
        if set(rec_layouts) != set(shipped["layouts"]):
            print(f"{sid}: layouts differ from the recorded ones", file=sys.stderr)
            return 1
        for name, v in rec_layouts.items():
            got = shipped["layouts"][name]["tokens_s_gpu_cluster"]
            if (v is None) != (got is None) or (v is not None and abs(v - got) > 1e-3):
                print(f"{sid} {name}: shipped rerun {got} != recorded {v}", file=sys.stderr)
                return 1
        rb = s["agg"]["best"]
        if _best_brief(rb) != _best_brief(shipped["best"]):
            print(f"{sid}: shipped rerun best {shipped['best']} != recorded {rb}", file=sys.stderr)
            return 1
        pairs = sorted({(r["moe_tp"], r["ep"]) for r in flagged if sid in r["used_by"]})
        layouts = {}
        for name, v in rec_layouts.items():
            rp = repaired["layouts"][name]
            layouts[name] = {
                "recorded": v,
                "repaired": rp["tokens_s_gpu_cluster"],
                "bs_recorded": shipped["layouts"][name]["bs"],
                "bs_repaired": rp["bs"],
            }
        scenarios_out[sid] = {
            "system": s["system"],
            "model": s["model"],
            "total_gpus": s["total_gpus"],
            "isl": s["isl"],
            "osl": s["osl"],
            "targets": s["targets"],
            "moe_series": {
                "shape": {"hidden": p["hidden"], "inter": p["inter"], "experts": p["experts"], "topk": p["topk"]},
                "quant": p["quant"],
                "distribution": p["distribution"],
                "flagged_moe_tp_ep": [list(x) for x in pairs],
                "flagged_rows": sum(1 for r in flagged if sid in r["used_by"]),
            },
            "layouts": layouts,
            "changed_layouts": sorted(n for n, v in layouts.items() if v["recorded"] != v["repaired"]),
            "recorded_best": _best_brief(rb),
            "repaired_best": _best_brief(repaired["best"]),
            "wall_s": {"shipped": shipped["wall_s"], "repaired": repaired["wall_s"]},
        }

    for r in flagged:
        del r["_repaired_ms"]
    flagged.sort(
        key=lambda r: (
            (r["system"], -r["shape"]["hidden"], r["shape"]["experts"], r["quant"], r["distribution"])
            + (r["moe_tp"], r["ep"], r["tokens"])
        )
    )
    versions = sorted({p["database_version"] for p in probes.values()})
    out = {
        "source": (
            f"NVIDIA aiconfigurator {aic_version} (pip): its TRT-LLM MoE kernel tables (moe_perf.parquet, "
            f"{DATABASE_MODE} databases {versions}) for the MoE shapes the scenarios of "
            f"{os.path.relpath(args.scenarios, _ROOT)} query, scanned for non-physical rows; and its own "
            "aggregated search re-run on the shipped data and on a copy with those rows interpolated"
        ),
        "generated_by": "python3 tools/aiconfigurator_glitch.py",
        "aiconfigurator_version": aic_version,
        "backend": BACKEND,
        "database_versions": versions,
        "older_version": OLDER_VERSION,
        "rule": RULE,
        "rule_parameters": {
            "more_tokens_ratio": MORE_TOKENS_RATIO,
            "more_tokens_abs_us": MORE_TOKENS_ABS_US,
            "ep1_ratio": EP1_RATIO,
        },
        "repair": REPAIR,
        "probed": {
            sid: {k: (v if k != "layouts" else [_parallel(x) for x in v]) for k, v in p.items() if k != "moe_pairs"}
            for sid, p in probes.items()
        },
        "scanned": {
            "series": len(summary),
            "rows": sum(x["rows"] for x in summary),
            "flagged": sum(x["flagged"] for x in summary),
        },
        "scanned_series": [x for x in summary if x["flagged"] or x["used_by"]],
        "flagged_rows": flagged,
        "scenarios": scenarios_out,
        "scenarios_untouched": untouched,
        "scenarios_dense": dense,
        "checks": (
            f"{n_checked} table values equal to the engine view aiconfigurator queries (MoE.load_data -> "
            f"db._moe_data); {n_patched} rows rewritten in the repaired copy and each served by the engine from it "
            "(checked in every repaired sweep); each touched scenario's sweep on the shipped data reproduces the "
            "recorded per-layout best tokens/s/gpu_cluster (to 1e-3) and the recorded best row"
        ),
        "wall_s": {
            "probe": round(t_probe, 1),
            "scan": round(t_scan, 1),
            "total": round(time.perf_counter() - t_start, 1),
        },
        "meaning": {
            "rule": "when a row is flagged (rule_parameters: its thresholds)",
            "repair": "how a flagged row is replaced for the repaired sweeps",
            "probed": (
                "per MoE scenario: the MoE op aiconfigurator builds (hidden, inter = expert intermediate size, "
                "experts, topk, quant = MoE quant mode = the table's moe_dtype, distribution = the workload "
                "distribution it queries) and its aggregated layouts (aiconfigurator's labels)"
            ),
            "scanned": "how many table series (and rows) were scanned, how many rows flagged",
            "scanned_series": (
                "the scanned table series that have a flagged row or are queried by a scenario: rows in it, how "
                "many flagged, used_by = scenarios whose search queries it (their model's distribution and a "
                "(moe_tp, moe_ep) of one of their layouts)"
            ),
            "flagged_rows": (
                "one flagged table row: system, shape, models of that shape, quant, distribution, moe_tp, ep "
                "(= moe_ep), tokens (num_tokens: global tokens of the step across the attention-DP ranks), "
                "latency_us (the table's latency of one MoE layer's expert compute on one GPU), clauses (which "
                "rule clauses fired, with the value compared against), ep1_us (moe_tp=1/moe_ep=1 latency at the "
                "same tokens), neighbours (nearest unflagged rows of the series below / above), repaired_us "
                "(the interpolated value), rc10_us (the same row in the older_version database, null where "
                "that database has no moe_perf table or no such row), used_by, table (path under systems/)"
            ),
            "scenarios": (
                "per scenario whose search queries a flagged row: layouts = per aggregated layout (aiconfigurator's "
                "label tp{tp}pp{pp}dp{dp}etp{moe_tp}ep{moe_ep}) its best tokens/s/gpu_cluster meeting the TTFT and "
                "TPOT targets, recorded (the scenarios file's agg.search_space.layouts_result, reproduced by the "
                "shipped-data rerun) and repaired (same search on the repaired copy), null = no point met the "
                "targets, with the per-rank batch of that best point (bs_recorded from the shipped rerun); "
                "recorded_best / repaired_best = aiconfigurator's rank-1 aggregated configuration (parallel, bs "
                "per attention-DP rank, tokens_s_gpu_cluster, tpot_ms, ttft_ms, replicas)"
            ),
            "scenarios_untouched": "MoE scenarios whose searched series have no flagged row (not re-run)",
            "scenarios_dense": "dense scenarios (no MoE table)",
            "wall_s": "seconds: probe (building the scenarios' models), scan, total run of this tool",
        },
    }
    shared.write_json(out, args.out, row_keys=("flagged_rows", "scanned_series"))

    print(f"{len(flagged)} flagged rows ({sum(1 for r in flagged if r['used_by'])} in searched series)")
    for sid, s in scenarios_out.items():
        rb, pb = s["recorded_best"], s["repaired_best"]
        print(
            f"{sid}: best {rb['parallel']} bs{rb['bs']} {rb['tokens_s_gpu_cluster']} -> "
            f"{pb['parallel']} bs{pb['bs']} {pb['tokens_s_gpu_cluster']} tok/s/gpu"
        )
        for name in s["changed_layouts"]:
            v = s["layouts"][name]
            print(f"   {name}: {v['recorded']} (bs{v['bs_recorded']}) -> {v['repaired']} (bs{v['bs_repaired']})")
    print(f"-> {args.out} in {out['wall_s']['total']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
