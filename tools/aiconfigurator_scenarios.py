"""What NVIDIA aiconfigurator 0.12 picks, aggregated AND disaggregated, for a set of deployment scenarios.

Writes ``benchmarks/data/aiconfigurator-0.12-scenarios.json``: for each scenario (model, system, total GPUs,
ISL/OSL, TTFT/TPOT targets, quant) aiconfigurator's best *aggregated* configuration (one pool of identical
in-flight-batching workers) and its best *disaggregated* one (prefill workers and decode workers rate-matched),
their ranked tables, and the per-layout worker tables aiconfigurator computed before rate matching, so that a
benchmark can rate any (prefill layout, decode layout) pair, or any aggregated layout, by aiconfigurator's own
figures.  aiconfigurator is never a product dependency; run this in a throw-away venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_scenarios.py

Options: ``--out PATH`` (default benchmarks/data/aiconfigurator-0.12-scenarios.json), ``--only ID[,ID]`` (run
only these scenario ids; the file then holds only them).

API used (read from the aiconfigurator 0.12.0 source), one flat-V2 experiment per (scenario, mode):

- agg: ``tools/aiconfigurator_plan.run_case`` (its fields and meanings, unchanged):
  ``cli_exp(config={name: {"serving_mode": "agg", "model_path", "system_name", ...}}, top_n=10)`` ->
  ``Task.run()`` (``sdk.sweep.sweep_agg``) -> ``cli.utils.process_experiment_result`` -> ``pick_default``.
- disagg: ``cli_exp(config={name: {"serving_mode": "disagg", "prefill_model_path", "decode_model_path",
  "prefill_system_name", "decode_system_name", "prefill_backend_name", "decode_backend_name", "total_gpus",
  "isl", "osl", "ttft", "tpot", "prefill_*_quant_mode", "decode_*_quant_mode"}}, top_n=10)``, the same
  ``Task(serving_mode="disagg", ...)`` that ``cli.main.build_default_tasks`` builds for ``aiconfigurator cli
  default`` -> ``Task.run()`` -> ``sdk.sweep.sweep_disagg`` -> ``process_experiment_result`` ->
  ``pick_default`` (best row per decode layout, ranked by tokens/s/gpu_cluster).
  ``sweep_disagg`` first enumerates worker candidates (``_get_disagg_worker_candidates``: every prefill
  layout x prefill batch, every decode layout x decode batch, static_ctx / static_gen estimates, stopping a
  layout's batch sweep at the first OOM), then, at every TPOT cap of the Pareto sweep list,
  ``_find_best_disagg_under_constraint``: prefill rows with ttft*1.8 < TTFT target, decode rows with tpot <
  cap, every (prefill row, decode row) pair rate-matched by ``_match_workers``.  The worker tables here are
  those candidate frames, captured from that very run (the warm re-run below) by wrapping
  ``sweep._get_disagg_worker_candidates``; ``meaning`` says how to rate a pair from them exactly as
  aiconfigurator does, and each scenario's ``disagg.check`` redoes aiconfigurator's pick from the tables.

Each (scenario, mode) runs in a fresh interpreter (cold timing: wall_s), then once more by hand in that process
(``build_experiment_tasks`` -> ``Task.run`` -> ``process_experiment_result``, which must give cli_exp's result;
wall_s_warm) to keep the raw sweep table and the worker candidates.

Quant: bf16 checkpoints get bfloat16 GEMM, MoE, KV cache and context FMHA with half-precision all-reduce, set
explicitly (what aiconfigurator infers from them; recorded).  Quantized checkpoints (DeepSeek-V3 and Kimi K2:
block-scaled FP8; gpt-oss: MXFP4 experts) get no override: aiconfigurator infers the modes from the checkpoint
(``Task._resolve_quant_modes``) as ``cli default`` does, per role; the modes it used are recorded.

Imports only aiconfigurator, pandas (aiconfigurator's result type), the standard library and, from this
directory, tools/aiconfigurator_plan.py.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import argparse
import importlib.metadata
import inspect
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import aiconfigurator_common as shared
import aiconfigurator_plan as plan

BACKEND = plan.BACKEND
DATABASE_MODE = plan.DATABASE_MODE
TOP_N = plan.TOP_N
BF16 = dict(plan.QUANT)
QUANT_KEYS = tuple(plan.QUANT)
ROLES = ("prefill", "decode")

# derive model id -> aiconfigurator model (= HF id)
HF = {
    "llama3-70b": "meta-llama/Meta-Llama-3.1-70B",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "kimi-k2": "moonshotai/Kimi-K2-Instruct",
}
# (derive model id, system, total GPUs, isl, osl, TTFT ms, TPOT ms, explicit quant fields or None =
#  aiconfigurator's inference from the checkpoint)
_SCENARIOS = [
    ("llama3-70b", "h100_sxm", 8, 2048, 256, 2000, 20, BF16),
    ("qwen3-8b", "h200_sxm", 8, 4096, 512, 2000, 10, BF16),
    ("llama3-70b", "b200_sxm", 8, 4096, 512, 2000, 30, BF16),
    ("qwen3-30b-a3b", "h100_sxm", 8, 2048, 256, 2000, 30, BF16),
    ("qwen3-30b-a3b", "b200_sxm", 8, 4096, 512, 2000, 20, BF16),
    ("qwen3-30b-a3b", "h200_sxm", 16, 4096, 512, 2000, 30, BF16),
    ("mixtral-8x7b", "h100_sxm", 8, 4096, 512, 2000, 30, BF16),
    ("gpt-oss-20b", "h200_sxm", 8, 2048, 256, 2000, 20, None),
    ("deepseek-v3", "h200_sxm", 8, 2048, 256, 2000, 50, None),
    ("deepseek-v3", "h200_sxm", 16, 2048, 256, 2000, 50, None),
    ("deepseek-v3", "b200_sxm", 8, 4096, 512, 3000, 50, None),
    ("kimi-k2", "b200_sxm", 16, 2048, 256, 2000, 50, None),
]
# (scenario id, derive model id, HF id, system, total GPUs, isl, osl, TTFT ms, TPOT ms, quant)
SCENARIOS = [
    (f"{m}_{system.split('_')[0]}_{gpus}gpu_{isl // 1024}k", m, HF[m], system, gpus, isl, *rest)
    for m, system, gpus, isl, *rest in _SCENARIOS
]
MLA_MODELS = {"deepseek-v3", "kimi-k2"}

SKIPPED = [
    {
        "scenario": "qwen3-32b (Qwen/Qwen3-32B) h200_sxm, 8 GPUs, 4096/512, TTFT 2000 ms, TPOT 30 ms, bf16",
        "why": (
            "derive's catalog has no qwen3-32b model (`derive models`), so derive cannot plan it; the dense H200 "
            "scenario uses qwen3-8b (Qwen/Qwen3-8B) instead, with a 10 ms TPOT so that the 8B model still has to "
            "trade batch against latency"
        ),
    },
    {
        "scenario": "gpt-oss-120b",
        "why": "derive's catalog has gpt-oss-20b only; gpt-oss-20b is run (aiconfigurator ships both configs)",
    },
    {
        "scenario": "deepseek-v3 h200_sxm 8 GPUs, disaggregated",
        "why": (
            "kept as a scenario (deepseek-v3_h200_8gpu_2k) but aiconfigurator's disaggregated search finds no "
            "configuration: the smallest DeepSeek-V3 worker that fits H200 memory has 8 GPUs, so a prefill worker "
            "plus a decode worker need 16 (its disagg.best is null and disagg.error says so); "
            "deepseek-v3_h200_16gpu_2k is the same workload on 16 GPUs"
        ),
    },
    {
        "scenario": "kimi-k2 b200_sxm 8 GPUs",
        "why": (
            "a 1T-parameter FP8 model leaves no room for a prefill worker beside a decode worker in 8 B200s "
            "(each needs all 8), so the Kimi K2 scenario uses 16 GPUs (two nodes)"
        ),
    },
]

_CORE_PACKAGE = "aiconfigurator_core"


def model_path(hf_id: str, tmp_root: str) -> tuple[str, str]:
    """What aiconfigurator loads for `hf_id`: the id itself when it lists the model, else a local dir holding
    the config.json aiconfigurator ships in aiconfigurator_core/model_configs (as tools/aiconfigurator_grid.py
    does).  Returns (path, how)."""
    import importlib.util

    from aiconfigurator.sdk import common

    if hf_id in common.DefaultHFModels:
        return hf_id, "listed by aiconfigurator (common.DefaultHFModels), loaded by HF id"
    core_dir = os.path.dirname(importlib.util.find_spec(_CORE_PACKAGE).origin)
    bundled = os.path.join(core_dir, "model_configs", hf_id.replace("/", "--") + "_config.json")
    target = os.path.join(tmp_root, hf_id.replace("/", "--"))
    os.makedirs(target, exist_ok=True)
    shutil.copyfile(bundled, os.path.join(target, "config.json"))
    return target, "aiconfigurator_core model_configs/ file (shipped, not in DefaultHFModels), loaded as a local dir"


MEANING_DISAGG = {
    "layout fields": (
        "every layout (prefill worker, decode worker, aggregated worker) is recorded as tp, pp, dp, moe_tp, "
        "moe_ep (and cp for prefill): tp = attention / dense tensor-parallel size, pp = pipeline stages, dp = "
        "ATTENTION data parallelism inside the worker (TRT-LLM attention DP: each rank holds its own requests; "
        "the MoE layers span all tp*dp GPUs with moe_tp*moe_ep = tp*dp), moe_tp = expert tensor-parallel size, "
        "moe_ep = expert-parallel size, cp = context parallelism (prefill only; 1 throughout here). GPUs of one "
        "worker = tp*pp*dp*cp. derive's Layout(tp, ep, pp, dp) is tp=tp, pp=pp, dp=dp, ep=moe_ep (moe_tp = "
        "tp*dp/moe_ep); for a dense model moe_tp = moe_ep = 1 mean nothing and dp = 1. `parallel` is "
        "aiconfigurator's label tp{tp}pp{pp}dp{dp}etp{moe_tp}ep{moe_ep}"
    ),
    "prefill_workers": (
        "one row per prefill layout aiconfigurator enumerated (search_space.parallel_layouts.prefill, same "
        "order): its best batch point meeting the TTFT target after aiconfigurator's queueing correction, i.e. "
        "the row of sweep._get_disagg_worker_candidates(role='prefill') with the highest seq/s among those with "
        "ttft_ms * ttft_correction < ttft target (strict <), ties to the smaller global_bs. ttft_ms = one "
        "static context step (mode static_ctx) of bs prompts of isl tokens on each attention-DP rank, times "
        "prefill_latency_correction; ttft_corrected_ms = ttft_ms * ttft_correction (what is filtered and what "
        "a disagg row reports as its ttft); seq_s_worker = global_bs * pp * 1000 / ttft_ms (requests "
        "prefilled per second by ONE worker; the correction does not reduce throughput); seq_s_gpu = "
        "seq_s_worker / num_gpus; bs = prefill batch per attention-DP rank (aiconfigurator's default prefill "
        "batch list is just [1]: prefill_max_batch_size = 1); global_bs = bs * dp. meets_ttft false (and the "
        "figures those of the lowest-ttft point) when no point meets the target; fits false when no batch "
        "point fitted in memory (or aiconfigurator skipped the layout on an error). in_match_pool: whether the "
        "row is among the first max_prefill_candidates rows (by seq/s/gpu descending, global_bs ascending, "
        "over ALL prefill layouts and batches meeting TTFT) that _find_best_disagg_under_constraint pairs "
        "with decode rows; a layout outside that pool is never paired by aiconfigurator"
    ),
    "decode_workers": (
        "one row per decode layout (search_space.parallel_layouts.decode, same order): its best batch point "
        "meeting the TPOT target, i.e. the row of sweep._get_disagg_worker_candidates(role='decode') with the "
        "highest seq/s among those with tpot_filter_ratio_min * tpot target < tpot_ms < tpot_filter_ratio_max "
        "* tpot target (sweep._DECODE_FILTER_RATIO_MIN/MAX = 0.0/1.0: simply tpot < target, strict). tpot_ms = "
        "the mean static decode step (mode static_gen, batch global_bs, KV growing from isl to isl+osl, every "
        "32nd step evaluated) times decode_latency_correction; seq_s_worker = global_bs * pp * 1000 / (tpot_ms "
        "* (osl - 1)) (requests one worker finishes per second: it spends osl - 1 steps per request, the first "
        "token coming from prefill); bs = decode batch per attention-DP rank, from the decode batch schedule, "
        "the sweep of a layout stopping at the first batch that does not fit memory or the KV-cache budget "
        "(max_bs_fits is the largest batch that fitted); tokens_s_user = 1000 / tpot_ms. meets_tpot false (and "
        "the figures those of the lowest-tpot point) when no batch meets the target. Within each decode "
        "layout aiconfigurator pairs only its top max_decode_candidates_per_layout rows by seq/s/gpu; the best "
        "row is always among them"
    ),
    "rate_pair": (
        "how aiconfigurator rates a (prefill layout P, decode layout D) pair, from those two rows: with p = "
        "P.seq_s_worker, d = D.seq_s_worker, gP = P.num_gpus, gD = D.num_gpus, over all worker counts np in "
        "search_space.prefill_num_workers and nd in search_space.decode_num_workers (1..32) whose replica size "
        "n = gP*np + gD*nd is in search_space.replica_num_gpus, seq_s = min(p * np * prefill_degradation, d * "
        "nd * decode_degradation) and the chosen (np, nd) is the one with the highest seq_s / n (first found "
        "wins ties, nd outer loop ascending, np inner ascending: sweep_disagg._match_workers). The pair's "
        "replica then gives tokens_s_gpu = seq_s * osl / n (note: osl, not osl - 1 as in agg), ttft = "
        "P.ttft_corrected_ms, tpot = D.tpot_ms, and aiconfigurator ranks by tokens_s_gpu_cluster = "
        "tokens_s_gpu * (total_gpus // n) * n / total_gpus (replicas of that size in the budget, left-over "
        "GPUs idle; _match_workers itself maximises tokens_s_gpu, not the cluster figure). Per decode layout "
        "aiconfigurator keeps the pair with the highest (tokens_s_gpu, -n); best and ranked are those rows. "
        "To rate a pair at given worker counts instead, use the same min(...) / n with those counts"
    ),
    "degradations": (
        "rate matching multiplies prefill throughput by prefill_degradation (0.9: 'pipeline bubble, especially "
        "when benchmarking with concurrency') and decode throughput by decode_degradation (0.92: 'not saturating "
        "the batch slots of the decode worker'), sdk.picking._RATE_MATCHING_*_DEGRADATION_FACTOR = "
        "sweep._RATE_MATCH_*_DEGRADATION = Task.rate_match_*_degradation"
    ),
    "ttft_correction": (
        "Task.autoscale_ttft_correction_factor = sweep._AUTOSCALE_TTFT_CORRECTION_FACTOR = 1.8: prefill ttft is "
        "multiplied by it before the TTFT filter, 'for concurrent prefill queueing: with N=10 batches and local "
        "concurrency 15-20, lc/20+0.95 gives ~1.8'; the disagg rows' ttft_ms include it"
    ),
    "latency_corrections": (
        "Task.prefill_latency_correction (1.1) and decode_latency_correction (1.08) multiply every modelled "
        "prefill / decode latency (backend.run_static latency_correction_scale), before anything else"
    ),
    "kv_transfer": (
        "aiconfigurator 0.12's disagg model has no KV-cache transfer term: no prefill->decode transfer time in "
        "ttft or tpot, no bandwidth limit on the rate; prefill and decode workers are costed as independent "
        "static engines, joined only by the rate matching above (and, for sglang, a same-tp rule; not trtllm)"
    ),
    "tpot_sweep": (
        "with Task.pareto_sweep (default) sweep_disagg runs the pairing at every TPOT cap of task_v2."
        "_LEGACY_TPOT_SWEEP and keeps, per cap, the best pair per decode layout, top 5 layouts by tokens_s_gpu; "
        "pick_default then takes, per decode layout, the row with the highest tokens_s_gpu_cluster among all "
        "kept rows with tpot <= the TPOT target, and ranks those. So ranked lists at most one row per decode "
        "layout, and a decode layout that never made a cap's top 5 is absent (the tables still have it)"
    ),
    "ranked": (
        "aiconfigurator's disagg result table (CLIResult.best_configs, top_n=10): best row per decode layout, "
        "by tokens_s_gpu_cluster descending then tokens_s_user descending. Ties are common: when prefill limits "
        "the rate, every decode layout that can absorb it gives the same tokens_s_gpu (and the row's decode bs "
        "is then whichever batch the lowest TPOT cap that found it used, not the largest the target allows). "
        "Because sweep_disagg keeps only the top 5 decode layouts per TPOT cap, a decode layout outside the "
        "top 5 at the target cap appears, if at all, with a row from a lower cap: rows past the 5th can "
        "UNDERSTATE what aiconfigurator's own rule gives that layout at the target (check.ranked shows where); "
        "rate layouts from prefill_workers / decode_workers by rate_pair instead"
    ),
    "disagg row": (
        "tokens_s_gpu = tokens_s_replica / num_gpus; tokens_s_replica = seq_s_replica * osl; seq_s_replica = the "
        "rate-matched min(...) above; num_gpus = GPUs of one replica = prefill.num_gpus * prefill.workers + "
        "decode.num_gpus * decode.workers; replicas = total_gpus // num_gpus; gpus_used = replicas * num_gpus; "
        "tokens_s_gpu_cluster as in rate_pair; ttft_ms = prefill ttft * ttft_correction; tpot_ms = decode tpot; "
        "request_latency_ms = ttft_ms + tpot_ms * (osl - 1); tokens_s_user = 1000 / tpot_ms; concurrency = "
        "decode global_bs * decode workers; prefill/decode.seq_s_worker = one worker's "
        "seq/s as in the tables; meets_targets: tpot_ms <= tpot target and ttft_ms <= ttft target"
    ),
    "check": (
        "aiconfigurator's pick redone from the tables by rate_pair (every in-pool prefill row meeting TTFT x "
        "every decode row meeting TPOT, best per decode layout by (tokens_s_gpu, -num_gpus), then the highest "
        "tokens_s_gpu_cluster): recomputed_best_tokens_s_gpu_cluster against aiconfigurator's, and whether the "
        "two agree within 0.1% (the tables hold figures rounded to 3 decimals); check.ranked: per ranked row, "
        "the same rule's figure for that row's decode layout (table_tokens_s_gpu_cluster) and whether it equals "
        "the row's (false only past the top-5 cut described under ranked)"
    ),
    "wall_s": (
        "seconds of the first cli_exp call in a fresh Python process (sweep + picking, including lazy loading of "
        "the perf tables it touches; imports excluded, in import_s); wall_s_warm: the same search repeated by "
        "hand in that process. Single-threaded, on the CPU of the machine that generated the file"
    ),
}


def _quant_fields(quant, roles):
    if not quant:
        return {}
    if roles is None:
        return dict(quant)
    return {f"{role}_{k}": v for role in roles for k, v in quant.items()}


def _dims(r, prefix=""):
    out = {k: plan._int(r[f"{prefix}{k}"]) for k in ("tp", "pp", "dp", "moe_tp", "moe_ep")}
    cp = r.get(f"{prefix}cp") if hasattr(r, "get") else None
    out["cp"] = 1 if cp is None or (isinstance(cp, float) and math.isnan(cp)) else plan._int(cp)
    return out


def _disagg_row(r, total_gpus: int, tpot_target: float, ttft_target: float) -> dict:
    n = plan._int(r["num_total_gpus"])
    replicas = total_gpus // n
    sides = {}
    for role, p in (("prefill", "(p)"), ("decode", "(d)")):
        d = _dims(r, p)
        if role == "decode":
            d.pop("cp")
        d.update(
            {
                "parallel": str(r[f"{p}parallel"]),
                "workers": plan._int(r[f"{p}workers"]),
                "bs": plan._int(r[f"{p}bs"]),
                "global_bs": plan._int(r[f"{p}global_bs"]),
                "num_gpus": d["tp"] * d["pp"] * d["dp"] * d.get("cp", 1),
                "seq_s_worker": plan._num(r[f"{p}seq/s/worker"]),
                "memory_gib": plan._num(r[f"{p}memory"]),
            }
        )
        sides[role] = d
    assert (
        sides["prefill"]["num_gpus"] * sides["prefill"]["workers"]
        + sides["decode"]["num_gpus"] * sides["decode"]["workers"]
        == n
    ), (sides, n)
    cluster = r["tokens/s/gpu_cluster"] if "tokens/s/gpu_cluster" in r else None
    return {
        "tokens_s_gpu": plan._num(r["tokens/s/gpu"]),
        "tokens_s_gpu_cluster": plan._num(cluster),
        "tokens_s_user": plan._num(r["tokens/s/user"]),
        "tokens_s_replica": plan._num(r["tokens/s"]),
        "seq_s_replica": plan._num(r["seq/s"]),
        "ttft_ms": plan._num(r["ttft"]),
        "tpot_ms": plan._num(r["tpot"]),
        "request_latency_ms": plan._num(r["request_latency"]),
        "concurrency": plan._int(r["concurrency"]),
        "num_gpus": n,
        "replicas": replicas,
        "gpus_used": replicas * n,
        "prefill": sides["prefill"],
        "decode": sides["decode"],
        "meets_targets": bool(float(r["tpot"]) <= tpot_target and float(r["ttft"]) <= ttft_target),
    }


def _label(t) -> str:
    tp, pp, dp, mtp, mep, cp = t
    return f"tp{tp}pp{pp}dp{dp}etp{mtp}ep{mep}" + (f"cp{cp}" if cp > 1 else "")


def _select(df, t):
    tp, pp, dp, mtp, mep, cp = t
    sel = (df["tp"] == tp) & (df["pp"] == pp) & (df["dp"] == dp) & (df["moe_tp"] == mtp) & (df["moe_ep"] == mep)
    if "cp" in df.columns:
        sel &= df["cp"].fillna(1) == cp
    return df[sel]


def _layout_point(df, t, dims: int, meets, fallback: str):
    """One worker layout's record (its first `dims` degrees, label, GPUs, whether any point fits), its rows, those
    that `meets` the target, and the best: the most seq/s of those (then the smallest global batch), else the row
    with the least `fallback` (ttft or tpot); None where no point fits."""
    rec = dict(zip(("tp", "pp", "dp", "moe_tp", "moe_ep", "cp")[:dims], t[:dims], strict=True))
    rec["parallel"] = _label(t)
    rec["num_gpus"] = t[0] * t[1] * t[2] * t[5]
    sub = _select(df, t)
    rec["fits"] = bool(len(sub))
    if not len(sub):
        return rec, sub, sub, None
    ok = sub[meets(sub)]
    if len(ok):
        return rec, sub, ok, ok.sort_values(by=["seq/s", "global_bs"], ascending=[False, True]).iloc[0]
    return rec, sub, ok, sub.sort_values(by=[fallback]).iloc[0]


def _prefill_table(p_df, layouts, ttft_target, correction, pool_size):
    """Per prefill layout: best point meeting ttft*correction < target (aiconfigurator's filter)."""
    ok_all = p_df[p_df["ttft"] * correction < ttft_target]
    pool = ok_all.sort_values(by=["seq/s/gpu", "global_bs"], ascending=[False, True]).head(pool_size)
    pool_keys = {(tuple(_dims(r).values()), plan._int(r["bs"])) for _, r in pool.iterrows()}
    rows = []
    for t in layouts:
        rec, sub, ok, best = _layout_point(p_df, t, 6, lambda s: s["ttft"] * correction < ttft_target, "ttft")
        if best is None:
            rows.append(rec)
            continue
        rec["meets_ttft"] = bool(len(ok))
        rec.update(
            {
                "bs": plan._int(best["bs"]),
                "global_bs": plan._int(best["global_bs"]),
                "ttft_ms": plan._num(best["ttft"]),
                "ttft_corrected_ms": plan._num(best["ttft"] * correction),
                "seq_s_worker": plan._num(best["seq/s"]),
                "seq_s_gpu": plan._num(best["seq/s/gpu"]),
                "memory_gib": plan._num(best["memory"]),
                "batch_points": int(len(sub)),
                "in_match_pool": bool(len(ok)) and (tuple(_dims(best).values()), plan._int(best["bs"])) in pool_keys,
            }
        )
        rows.append(rec)
    return rows


def _decode_table(d_df, layouts, tpot_target, ratio_min, ratio_max):
    """Per decode layout: best point with ratio_min*target < tpot < ratio_max*target (aiconfigurator's band)."""
    rows = []
    for t in layouts:
        band = lambda s: (s["tpot"] < tpot_target * ratio_max) & (s["tpot"] > tpot_target * ratio_min)  # noqa: E731
        rec, sub, ok, best = _layout_point(d_df, t, 5, band, "tpot")
        if best is None:
            rows.append(rec)
            continue
        rec["meets_tpot"] = bool(len(ok))
        rec.update(
            {
                "bs": plan._int(best["bs"]),
                "global_bs": plan._int(best["global_bs"]),
                "tpot_ms": plan._num(best["tpot"]),
                "tokens_s_user": plan._num(best["tokens/s/user"]),
                "seq_s_worker": plan._num(best["seq/s"]),
                "seq_s_gpu": plan._num(best["seq/s/gpu"]),
                "memory_gib": plan._num(best["memory"]),
                "max_bs_fits": plan._int(sub["bs"].max()),
                "batch_points": int(len(sub)),
            }
        )
        rows.append(rec)
    return rows


def match_workers(p, g_p, d, g_d, p_workers, d_workers, replica_gpus, p_deg, d_deg):
    """sweep_disagg._match_workers (plain P/D, no GPU caps): (np, nd, seq_s) with the highest seq_s / GPUs."""
    best = (-1, -1, 0.0)
    tpg_max = 0.0
    allowed = set(replica_gpus or [])
    for nd in d_workers:
        for np_ in p_workers:
            n = g_p * np_ + g_d * nd
            if allowed and n not in allowed:
                continue
            seq_s = min(p * np_ * p_deg, d * nd * d_deg)
            if seq_s / n > tpg_max:
                tpg_max = seq_s / n
                best = (np_, nd, seq_s)
    return best


def rate_decode_layout(d, prefill_rows, ss, total_gpus, osl):
    """Best pair for decode-table row `d` by `meaning.disagg.rate_pair`: (cluster, tokens_s_gpu, n, prefill, np, nd)."""
    cat = None
    if not d.get("meets_tpot"):
        return None
    for p in prefill_rows:
        if not (p.get("meets_ttft") and p.get("in_match_pool")):
            continue
        np_, nd, seq_s = match_workers(
            p["seq_s_worker"],
            p["num_gpus"],
            d["seq_s_worker"],
            d["num_gpus"],
            ss["prefill_num_workers"],
            ss["decode_num_workers"],
            ss["replica_num_gpus"],
            ss["prefill_degradation"],
            ss["decode_degradation"],
        )
        if np_ < 0:
            continue
        n = p["num_gpus"] * np_ + d["num_gpus"] * nd
        tps = seq_s * osl / n
        if cat is None or (tps, -n) > (cat[0], -cat[1]):
            cat = (tps, n, p["parallel"], np_, nd)
    if cat is None:
        return None
    return (cat[0] * (total_gpus // cat[1]) * cat[1] / total_gpus, *cat)


def _close(a, b):
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-3 * max(abs(b), 1e-9))


def _recheck(prefill_rows, decode_rows, ranked, best, ss, total_gpus, osl):
    """aiconfigurator's pick at the TPOT target, and each ranked row, redone from the tables (`meaning.disagg`)."""
    rated = {d["parallel"]: rate_decode_layout(d, prefill_rows, ss, total_gpus, osl) for d in decode_rows}
    top = max((r for r in rated.items() if r[1] is not None), key=lambda r: r[1][0], default=None)
    mine = None if top is None else round(top[1][0], 3)
    theirs = None if best is None else best["tokens_s_gpu_cluster"]
    out = {
        "recomputed_best_tokens_s_gpu_cluster": mine,
        "aiconfigurator_best_tokens_s_gpu_cluster": theirs,
        "agree": _close(mine, theirs),
    }
    if top is not None:
        cluster, tps, n, p, np_, nd = top[1]
        out["recomputed_best"] = {
            "prefill": p,
            "prefill_workers": np_,
            "decode": top[0],
            "decode_workers": nd,
            "num_gpus": n,
            "tokens_s_gpu": round(tps, 3),
        }
    by_row = []
    for r in ranked:
        got = rated.get(r["decode"]["parallel"])
        value = None if got is None else round(got[0], 3)
        by_row.append({"table_tokens_s_gpu_cluster": value, "agree": _close(value, r["tokens_s_gpu_cluster"])})
    out["ranked"] = by_row
    return out


def run_disagg(sc, aic, tmp_root) -> dict:
    cli_exp, build_experiment_tasks, process_experiment_result, sweep, task_v2 = aic
    sid, model_id, hf_id, system, total_gpus, isl, osl, ttft, tpot, quant = sc
    path, _ = model_path(hf_id, tmp_root)
    name = f"disagg_{sid}"
    exp = {
        "serving_mode": "disagg",
        "prefill_model_path": path,
        "decode_model_path": path,
        "prefill_system_name": system,
        "decode_system_name": system,
        "prefill_backend_name": BACKEND,
        "decode_backend_name": BACKEND,
        **shared.target_fields(DATABASE_MODE, total_gpus, isl, osl, float(ttft), float(tpot)),
        **_quant_fields(quant, ROLES),
    }
    out = {"id": name}
    t0 = time.perf_counter()
    try:
        res = cli_exp(config={name: exp}, top_n=TOP_N)
        error = None
    except Exception as exc:  # aiconfigurator raises when no configuration is feasible
        res, error = None, f"{type(exc).__name__}: {str(exc)[:400]}"
    out["wall_s"] = round(time.perf_counter() - t0, 2)

    # The same steps by hand (cli_exp -> _execute_tasks), keeping the worker candidates sweep_disagg builds.
    captured = {}
    orig = sweep._get_disagg_worker_candidates

    def capture(**kw):
        df = orig(**kw)
        captured[kw["role"]] = df
        return df

    t0 = time.perf_counter()
    task = build_experiment_tasks(config={name: exp})[name]
    sweep._get_disagg_worker_candidates = capture
    try:
        raw = task.run()
    except Exception as exc:
        raw = None
        if error is None:
            raise
        out["error_warm"] = f"{type(exc).__name__}: {str(exc)[:400]}"
    finally:
        sweep._get_disagg_worker_candidates = orig
    best2 = pareto2 = None
    if raw is not None:
        best2, _, pareto2, _, _ = process_experiment_result(task, {"pareto_df": raw}, top_n=TOP_N)
    out["wall_s_warm"] = round(time.perf_counter() - t0, 2)
    if res is not None and name in res.best_configs:
        for a, b in ((res.best_configs[name], best2), (res.pareto_fronts[name], pareto2)):
            cols = [c for c in a.columns if not c.startswith("_")]
            assert a[cols].reset_index(drop=True).equals(b[cols].reset_index(drop=True)), f"{name}: results differ"
        task = res.tasks[name]

    quant_used = {role: {k: plan._enum_name(getattr(task, f"{role}_{k}")) for k in QUANT_KEYS} for role in ROLES}
    plain = {k: v for k, v in exp.items() if not k.endswith("_quant_mode")}
    inferred_task = task if plain == exp else build_experiment_tasks(config={name: plain})[name]
    inferred = {role: {k: plan._enum_name(getattr(inferred_task, f"{role}_{k}")) for k in QUANT_KEYS} for role in ROLES}

    kw = task.sweep_disagg_kwargs(prefill_database=None, decode_database=None)
    sig = inspect.signature(sweep.sweep_disagg).parameters
    assert sig["autoscale"].default is False
    d_max = kw["decode_max_num_tokens"]
    sched = sweep._DEFAULT_DECODE_BATCH_SCHEDULE
    decode_batches = sched + [d_max] if d_max > max(sched) else [b for b in sched if b <= d_max]
    p_isl = task._prefill_effective_isl()
    layouts = {role: [tuple(int(x) for x in t) for t in task.iter_parallel(role)] for role in ROLES}
    ss = {
        "candidates": {
            role: {
                dim: list(getattr(task, f"{role}_{dim}_candidates"))
                for dim in ("num_gpu", "tp", "pp", "dp", "moe_tp", "moe_ep", "cp")
            }
            for role in ROLES
        },
        "parallel_layouts": {
            role: [dict(zip(("tp", "pp", "dp", "moe_tp", "moe_ep", "cp"), t, strict=True)) for t in layouts[role]]
            for role in ROLES
        },
        "prefill_batch_sizes": list(range(1, max(kw["prefill_max_num_tokens"], p_isl) // p_isl + 1)),
        "prefill_batch_note": (
            f"sweep_disagg's prefill batch range 1..prefill_max_num_tokens // isl, prefill_max_num_tokens = "
            f"Task.prefill_max_batch_size ({task.prefill_max_batch_size}) * isl; per attention-DP rank"
        ),
        "decode_batch_schedule": decode_batches,
        "decode_batch_note": (
            "sweep._DEFAULT_DECODE_BATCH_SCHEDULE capped at Task.decode_max_batch_size "
            f"({task.decode_max_batch_size}); per attention-DP rank; a layout's sweep stops at the first batch "
            "that is OOM or exceeds the KV budget"
        ),
        "prefill_num_workers": list(kw["prefill_num_worker_list"]),
        "decode_num_workers": list(kw["decode_num_worker_list"]),
        "replica_num_gpus": None if kw["num_gpu_list"] is None else list(kw["num_gpu_list"]),
        "replica_note": (
            "GPU counts one disagg replica (prefill workers + decode workers) may have: Task._replica_num_gpu_list "
            f"(num_gpu_per_replica={task.num_gpu_per_replica}, max_gpu_per_replica={task.max_gpu_per_replica} after "
            "the total_gpus clamp; num_gpu_per_replica None, set when a role can reach large EP, means 1..max)"
        ),
        "prefill_degradation": kw["rate_matching_prefill_degradation"],
        "decode_degradation": kw["rate_matching_decode_degradation"],
        "ttft_correction": kw["autoscale_ttft_correction_factor"],
        "prefill_latency_correction": kw["prefill_latency_correction"],
        "decode_latency_correction": kw["decode_latency_correction"],
        "tpot_filter_ratio_min": sweep._DECODE_FILTER_RATIO_MIN,
        "tpot_filter_ratio_max": sweep._DECODE_FILTER_RATIO_MAX,
        "max_prefill_candidates": sweep._MAX_PREFILL_WORKERS,
        "max_decode_candidates_per_layout": sweep._MAX_DECODE_WORKERS_PER_CATEGORY,
        "top_k_per_tpot_cap": 5,
        "require_same_tp": kw["require_same_tp"] if isinstance(kw["require_same_tp"], bool) else "per pair",
        "tpot_sweep": list(task_v2._LEGACY_TPOT_SWEEP) if task.pareto_sweep else [tpot],
        "free_gpu_memory_fraction": kw["free_gpu_memory_fraction"],
    }

    ranked_df = best2
    ranked = [] if ranked_df is None else [_disagg_row(r, total_gpus, tpot, ttft) for _, r in ranked_df.iterrows()]
    best = ranked[0] if ranked and ranked[0]["meets_targets"] else None
    out.update(
        {
            "moe": bool(task._is_moe),
            "quant": quant_used,
            "quant_inferred_without_override": inferred,
            "error": error,
            "best": best,
            "best_note": (
                "rank 1 of aiconfigurator's disagg table: the rate-matched replica with the highest "
                "tokens_s_gpu_cluster among rows with tpot <= target (ttft <= target enforced in the sweep, "
                "after the x1.8 correction); null if none"
            ),
            "ranked": ranked,
            "sweep_rows": 0 if raw is None else int(len(raw)),
            "search_space": ss,
        }
    )
    if "prefill" in captured and "decode" in captured:
        p_rows = _prefill_table(
            captured["prefill"], layouts["prefill"], ttft, ss["ttft_correction"], ss["max_prefill_candidates"]
        )
        d_rows = _decode_table(
            captured["decode"], layouts["decode"], tpot, ss["tpot_filter_ratio_min"], ss["tpot_filter_ratio_max"]
        )
        out["prefill_workers"] = p_rows
        out["decode_workers"] = d_rows
        out["candidate_points"] = {"prefill": int(len(captured["prefill"])), "decode": int(len(captured["decode"]))}
        out["check"] = _recheck(p_rows, d_rows, ranked, best, ss, total_gpus, osl)
    else:
        out["prefill_workers"] = out["decode_workers"] = None
        out["candidate_points"] = {role: int(len(captured[role])) if role in captured else 0 for role in ROLES}
    return out


def run_agg(sc, aic, tmp_root) -> dict:
    sid, model_id, hf_id, system, total_gpus, isl, osl, ttft, tpot, quant = sc
    path, _ = model_path(hf_id, tmp_root)
    try:
        return plan.run_case(
            model_id,
            hf_id,
            total_gpus,
            float(tpot),
            aic,
            name=f"agg_{sid}",
            model_path=path,
            system=system,
            isl=isl,
            osl=osl,
            ttft=float(ttft),
            quant=quant or {},
        )
    except Exception as exc:
        return {"id": f"agg_{sid}", "error": f"{type(exc).__name__}: {str(exc)[:400]}", "best": None, "ranked": []}


def _child(index: int, mode: str, out_path: str) -> int:
    """Child process: one (scenario, mode) in a fresh interpreter (cold caches)."""
    shared.quiet()
    t0 = time.perf_counter()
    from aiconfigurator.cli.api import cli_exp
    from aiconfigurator.cli.main import build_experiment_tasks
    from aiconfigurator.cli.utils import process_experiment_result
    from aiconfigurator.sdk import sweep, task_v2

    import_s = time.perf_counter() - t0
    aic = (cli_exp, build_experiment_tasks, process_experiment_result, sweep, task_v2)
    with tempfile.TemporaryDirectory(prefix="aic-scen-") as tmp:
        rec = (run_agg if mode == "agg" else run_disagg)(SCENARIOS[index], aic, tmp)
    rec["import_s"] = round(import_s, 2)
    with open(out_path, "w") as f:
        json.dump(rec, f)
    return 0


def _desc_agg(b):
    if b is None:
        return "none"
    return f"{b['parallel']} bs{b['bs']} x{b['replicas']}: {b['tokens_s_gpu_cluster']} tok/s/gpu"


def _desc_disagg(b):
    if b is None:
        return "none"
    p, d = b["prefill"], b["decode"]
    return (
        f"{p['parallel']} x{p['workers']} + {d['parallel']} bs{d['bs']} x{d['workers']} ({b['num_gpus']} GPUs "
        f"x{b['replicas']}): {b['tokens_s_gpu_cluster']} tok/s/gpu"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(here, "benchmarks", "data", "aiconfigurator-0.12-scenarios.json"))
    ap.add_argument("--only", default=None, help="comma-separated scenario ids")
    ap.add_argument("--scenario", type=int, default=None, help=argparse.SUPPRESS)  # internal: child process
    ap.add_argument("--mode", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--case-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.scenario is not None:
        return _child(args.scenario, args.mode, args.case_out)

    shared.quiet()
    t_start = time.perf_counter()
    from aiconfigurator.sdk.perf_database import get_latest_database_version

    aic_version = importlib.metadata.version("aiconfigurator")
    wanted = None if args.only is None else set(args.only.split(","))
    versions = {}
    scenarios = []
    with tempfile.TemporaryDirectory(prefix="aic-scen-") as tmp:
        for i, sc in enumerate(SCENARIOS):
            sid, model_id, hf_id, system, total_gpus, isl, osl, ttft, tpot, quant = sc
            if wanted is not None and sid not in wanted:
                continue
            if system not in versions:
                versions[system] = get_latest_database_version(system=system, backend=BACKEND)
            _, how = model_path(hf_id, tmp)
            recs = {}
            for mode in ("agg", "disagg"):
                out = os.path.join(tmp, f"s{i}_{mode}.json")
                cmd = [
                    sys.executable,
                    os.path.abspath(__file__),
                    "--scenario",
                    str(i),
                    "--mode",
                    mode,
                    "--case-out",
                    out,
                ]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0 or not os.path.isfile(out):
                    print(f"{sid} {mode} failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}", file=sys.stderr)
                    return 1
                with open(out) as f:
                    recs[mode] = json.load(f)
            agg, dis = recs["agg"], recs["disagg"]
            for rec in (agg, dis):
                if rec.get("database_version", versions[system]) != versions[system]:
                    print(
                        f"{rec['id']}: ran on {rec['database_version']}, expected {versions[system]}", file=sys.stderr
                    )
                    return 1
            s = {
                "id": sid,
                "model_id": model_id,
                "model": hf_id,
                "model_source": how,
                "moe": dis["moe"],
                "mla": model_id in MLA_MODELS,
                "system": system,
                "backend": BACKEND,
                "database_version": versions[system],
                "total_gpus": total_gpus,
                "isl": isl,
                "osl": osl,
                "targets": {"ttft_ms": float(ttft), "tpot_ms": float(tpot)},
                "quant_override": quant,
                "quant_used": {"agg": agg.get("quant"), **(dis.get("quant") or {})},
                "wall_s": round((agg.get("wall_s") or 0) + (dis.get("wall_s") or 0), 2),
                "agg": agg,
                "disagg": dis,
            }
            scenarios.append(s)
            chk = dis.get("check") or {}
            print(
                f"{sid}: agg {_desc_agg(agg.get('best'))} ({agg.get('wall_s')} s) | disagg "
                f"{_desc_disagg(dis.get('best'))} ({dis.get('wall_s')} s, check {chk.get('agree')})",
                flush=True,
            )

    out = {
        "source": (
            f"aiconfigurator {aic_version}: aggregated and disaggregated searches (trtllm, silicon databases "
            f"{sorted(set(versions.values()))}) per scenario via aiconfigurator.cli.api.cli_exp (one serving_mode "
            "'agg' and one 'disagg' experiment, the two halves of `aiconfigurator cli default`), its own ranking "
            "by tokens/s/gpu under the TTFT/TPOT targets, plus the per-layout worker tables of the disagg search"
        ),
        "generated_by": "python3 tools/aiconfigurator_scenarios.py",
        "aiconfigurator_version": aic_version,
        "backend": BACKEND,
        "database_mode": DATABASE_MODE,
        "database_versions": versions,
        "api": {
            "agg": (
                "tools/aiconfigurator_plan.run_case: cli_exp(config={name: {serving_mode: agg, model_path, "
                "system_name, backend_name, database_mode, total_gpus, isl, osl, ttft, tpot, [*_quant_mode]}}, "
                "top_n=10) -> "
                "Task.run() (sdk.sweep.sweep_agg) -> process_experiment_result -> sdk.picking.pick_default"
            ),
            "disagg": (
                "cli_exp(config={name: {serving_mode: disagg, prefill_/decode_model_path, prefill_/decode_system_name, "
                "prefill_/decode_backend_name, database_mode, total_gpus, isl, osl, ttft, tpot, "
                "[prefill_/decode_*_quant_mode]}}, top_n=10) -> Task.run() (sdk.sweep.sweep_disagg) -> "
                "process_experiment_result -> sdk.picking.pick_default (grouped by decode layout)"
            ),
        },
        "settings": {
            "prefix": 0,
            "nextn": 0,
            "strict_sla": False,
            "top_n": TOP_N,
            "quant_bf16": BF16,
            "quant_note": (
                "quant_override null: no quant fields given, aiconfigurator inferred them from the checkpoint "
                "(per role for disagg); quant_used lists what it used: agg, prefill, decode"
            ),
        },
        "meaning": {
            "agg": plan.MEANING,
            "agg_layouts_result": (
                "agg.search_space.layouts_result: every enumerated aggregated layout with its best "
                "tokens_s_gpu_cluster meeting both targets (null: none), i.e. aiconfigurator's rating of any "
                "aggregated layout, not only the top-10 in agg.ranked"
            ),
            "disagg": MEANING_DISAGG,
            "moe": "the model has MoE layers (aiconfigurator's Task._is_moe)",
            "mla": "the model uses multi-head latent attention (DeepSeek-V3 architecture)",
            "wall_s": "scenario wall_s = agg.wall_s + disagg.wall_s (each a cold first cli_exp call: disagg.wall_s)",
        },
        "skipped": SKIPPED,
        "scenarios": scenarios,
        "total_wall_s": round(time.perf_counter() - t_start, 1),
    }
    plan.write_result(out, args.out)
    print(f"{len(scenarios)} scenarios -> {args.out} in {out['total_wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
