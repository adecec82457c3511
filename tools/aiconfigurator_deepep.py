"""What NVIDIA aiconfigurator 0.12 says one DeepEP MoE dispatch / combine costs (TRT-LLM large EP).

Writes ``benchmarks/data/aiconfigurator-0.12-deepep.json``: for every system among h100_sxm, h200_sxm,
b200_sxm and gb200 that carries aiconfigurator's TRT-LLM DeepEP all-to-all table
(``comm/trtllm/<ver>/moe_a2a_perf.parquet``), the latency aiconfigurator assigns to ONE dispatch and ONE
combine of one MoE layer on the low-latency path (``trtllm_deepep_ll``, generation, 1..512 tokens per
GPU) and the high-throughput path (``trtllm_deepep_ht``, context, 256..16384 tokens per GPU), for every
(hidden, top_k, num_experts) shape and wire dtype the table holds, evaluated through aiconfigurator's own
op (``MoEAllToAll`` via OpShellKit's single-op engine evaluation, i.e. the Rust table lookup with its
interpolation / extrapolation, exactly what a sweep uses); a relative least-squares fit of derive's form
``seconds = alpha + sent_bytes / (eta * BW_link)`` per system, path and op (BW_link = the system's
one-way NVLink bandwidth per GPU: 450e9 B/s H100/H200, 900e9 B/s B200/GB200), with a comparison of
several sent_bytes definitions; and the rules (with file:line citations into the installed
aiconfigurator source) for when a sweep takes DeepEP, the fused NCCL all-gather / reduce-scatter, or
the TRT-LLM custom all-reduce, plus the decode-layer PDL factor and the per-layer scale factors.
aiconfigurator is never a product dependency; run this in a throw-away venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_deepep.py

Options: ``--out PATH`` (default benchmarks/data/aiconfigurator-0.12-deepep.json), ``--skip-task-rules``
(do not build aiconfigurator Tasks to confirm the selection rule; faster).

API used (aiconfigurator 0.12.0):

    db = perf_database.get_database_view(system, "trtllm", <latest>, database_mode="SILICON", ...)
    operations.MoEAllToAll.load_data(db); db._moe_a2a_data      # the engine's table view: which shapes /
                                                                 # dtypes / EPs exist (keys only)
    operations.MoEAllToAll(name, 1, phase="dispatch"|"combine", comm_dtype=..., comm_backend=
        "trtllm_deepep_ll"|"trtllm_deepep_ht", hidden_size, topk, num_experts, moe_ep_size, node_num,
        sms=0, attention_tp_size=1)._engine_query(db, x=tokens_per_gpu)     # ms
    operations.moe_comm.communication_dtype_for(...)             # wire dtype per checkpoint quant
    operations.MoEDispatch / NCCL / CustomAllReduce               # fused-path cross-checks
    cli.main.build_experiment_tasks(...)["k"]._resolve_moe_comm_backend("agg", tuple)   # the selection

Every table-point query is checked equal (1e-9 relative) to the raw table row; the script fails otherwise.

Imports only aiconfigurator and the standard library.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import argparse
import importlib.metadata
import inspect
import math
import os
import shutil
import statistics
import sys
import tempfile
import time

import aiconfigurator_common as shared

SYSTEMS = ["h100_sxm", "h200_sxm", "b200_sxm", "gb200"]
BACKEND = "trtllm"
DATABASE_MODE = "SILICON"
LINK_BW = {"h100_sxm": 450e9, "h200_sxm": 450e9, "b200_sxm": 900e9, "gb200": 900e9}  # one-way NVLink / GPU
PATHS = {  # path label -> (comm backend, inference phase, tokens-per-GPU grid)
    "ll": ("trtllm_deepep_ll", "generation", [1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512]),
    "ht": (
        "trtllm_deepep_ht",
        "context",
        [256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384],
    ),
}
CKPT_QUANTS = ["bfloat16", "fp8_block", "nvfp4"]  # checkpoint MoE quant modes whose wire dtype we record
HEADLINE_QUANT = "fp8_block"  # DeepSeek-V3 / Kimi K2 native checkpoints
BYTES_PER_ELEM = {"bfloat16": 2.0, "fp8": 1.0, "nvfp4": 0.5, "fp4": 0.5}  # nominal, scales not counted
EP_PROBE = [2, 4, 8, 16, 32, 64, 128, 256]
TASK_TUPLES = [  # (tp, pp, attention_dp, moe_tp, moe_ep, cp)
    (1, 1, 8, 1, 8, 1),
    (1, 1, 4, 1, 4, 1),
    (1, 1, 2, 1, 2, 1),
    (1, 1, 16, 1, 16, 1),
    (1, 1, 32, 1, 32, 1),
    (1, 1, 64, 1, 64, 1),
    (2, 1, 4, 1, 8, 1),
    (8, 1, 1, 1, 8, 1),
    (1, 1, 8, 2, 4, 1),
    (1, 1, 8, 8, 1, 1),
]
MODELS = [("deepseek-ai/DeepSeek-V3", "deepseek-v3"), ("moonshotai/Kimi-K2-Instruct", "kimi-k2")]
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(_ROOT, "benchmarks", "data", "aiconfigurator-0.12-deepep.json")

BYTES_DEFS = {
    "topk": "tokens * top_k * hidden * bytes_per_elem (one copy per routed expert, DeepEP LL's wire format)",
    "topk_remote": "(ep-1)/ep * tokens * top_k * hidden * bytes_per_elem (copies to other ranks only)",
    "min_topk_ep": "tokens * min(top_k, ep) * hidden * bytes_per_elem",
    "distinct_ranks": "tokens * D * hidden * bytes_per_elem, D = ep*(1 - C(E-E/ep, k)/C(E, k)) = expected "
    "distinct destination ranks of a token under uniform top-k routing (DeepEP HT sends one copy per rank)",
    "distinct_ranks_remote": "(ep-1)/ep * tokens * D * hidden * bytes_per_elem (distinct remote ranks)",
    "tokens_only": "tokens * hidden * bytes_per_elem (no routing factor)",
}


_g = shared.sig


def distinct_ranks(ep: int, num_experts: int, top_k: int) -> float:
    per_rank = num_experts // ep
    return ep * (1.0 - math.comb(num_experts - per_rank, top_k) / math.comb(num_experts, top_k))


def sent_bytes(defn: str, p: dict) -> float:
    t, k, h, ep, e, b = p["tokens_per_gpu"], p["top_k"], p["hidden"], p["ep"], p["num_experts"], p["bytes_per_elem"]
    base = t * h * b
    if defn == "topk":
        return base * k
    if defn == "topk_remote":
        return base * k * (ep - 1) / ep
    if defn == "min_topk_ep":
        return base * min(k, ep)
    if defn == "distinct_ranks":
        return base * distinct_ranks(ep, e, k)
    if defn == "distinct_ranks_remote":
        return base * distinct_ranks(ep, e, k) * (ep - 1) / ep
    if defn == "tokens_only":
        return base
    raise ValueError(defn)


def fit_alpha_eta(xs: list[float], ts: list[float], bw: float) -> dict:
    """Relative least squares of t = alpha + b*x, alpha >= 0, b > 0 (eta = 1/(b*bw), may exceed 1)."""
    return shared.fit_alpha_eta(xs, ts, bw, flat=True)


def fit_points(pts: list[dict], defn: str, bw: float, by_shape: bool = True) -> dict:
    out = fit_alpha_eta([sent_bytes(defn, p) for p in pts], [p["seconds"] for p in pts], bw)
    if by_shape:
        shapes = sorted({(p["hidden"], p["top_k"], p["num_experts"]) for p in pts})
        out["by_shape"] = {}
        for s in shapes:
            sub = [p for p in pts if (p["hidden"], p["top_k"], p["num_experts"]) == s]
            f = fit_alpha_eta([sent_bytes(defn, p) for p in sub], [p["seconds"] for p in sub], bw)
            out["by_shape"][f"h{s[0]}/k{s[1]}/e{s[2]}"] = {
                k: f[k] for k in ("alpha_s", "eta", "median_rel_error", "max_rel_error")
            }
    return out


# ----------------------------------------------------------------------------------------------
# Citations into the installed aiconfigurator source
# ----------------------------------------------------------------------------------------------
def _site_root() -> str:
    import aiconfigurator

    return os.path.dirname(os.path.dirname(os.path.abspath(aiconfigurator.__file__)))


def cite(obj) -> str:
    lines, start = inspect.getsourcelines(obj)
    path = os.path.relpath(inspect.getsourcefile(obj), _site_root())
    return f"{path}:{start}-{start + len(lines) - 1}"


def cite_text(module, needle: str, occurrence: int = 1) -> str:
    path = inspect.getsourcefile(module)
    seen = 0
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if needle in line:
                seen += 1
                if seen == occurrence:
                    return f"{os.path.relpath(path, _site_root())}:{i}"
    raise LookupError(f"{needle!r} not found in {path}")


def citations() -> dict:
    from aiconfigurator.sdk import moe_comm_resolver, task_v2
    from aiconfigurator_core.sdk.models import blocks, deepseek, deepseek_v32, helpers
    from aiconfigurator_core.sdk.models.blocks import moe as block_moe
    from aiconfigurator_core.sdk.operations import moe_comm

    del blocks
    T = task_v2.Task
    return {
        "Task._resolve_moe_comm_backend": cite(T._resolve_moe_comm_backend),
        "Task._resolve_moe_comm_backend.moe_tp_ep_gate": cite_text(task_v2, "if moe_tp != 1 or moe_ep <= 1:"),
        "Task._resolve_moe_comm_backend.trtllm_needs_attention_dp": cite_text(
            task_v2, 'if _dp <= 1 and self._role_attr(role, "backend_name") == "trtllm":'
        ),
        "Task._compute_large_ep_coverage": cite(T._compute_large_ep_coverage),
        "Task._required_large_ep_phases": cite(T._required_large_ep_phases),
        "Task._large_ep_eps": cite(T._large_ep_eps),
        "moe_comm_resolver.a2a_covers_parallel": cite(moe_comm_resolver.a2a_covers_parallel),
        "moe_comm_resolver.moe_compute_coverage": cite(moe_comm_resolver.moe_compute_coverage),
        "moe_comm_resolver.select_moe_comm_backend": cite(moe_comm_resolver.select_moe_comm_backend),
        "moe_comm_resolver.resolve_model_config_moe_comm": cite(moe_comm_resolver.resolve_model_config_moe_comm),
        "moe_comm_resolver.cli_estimate_intra_node_fused": cite_text(
            moe_comm_resolver, "if not cross_node and coverage_snapshot is None:"
        ),
        "moe_comm.MoECommBackendSpec.feasible": cite(moe_comm.MoECommBackendSpec.feasible),
        "moe_comm.communication_dtype_for": cite(moe_comm.communication_dtype_for),
        "moe_comm.MOE_A2A_BACKENDS": cite_text(moe_comm, "MOE_A2A_BACKENDS: dict[str, MoECommBackendSpec] = {"),
        "moe_comm.nodes_for": cite(moe_comm.nodes_for),
        "blocks.moe.LARGE_EP_READY_FAMILIES": cite_text(block_moe, "LARGE_EP_READY_FAMILIES = frozenset("),
        "blocks.moe._default_moe_block_ops.large_ep_branch": cite_text(
            block_moe, 'comm_backend = (getattr(cfg, "moe_comm_backend", None) or {}).get(inference_phase)'
        ),
        "blocks.moe._default_moe_block_ops.fused_dispatch": cite_text(block_moe, 'f"{prefix}_moe_pre_dispatch",'),
        "blocks.moe._large_ep_block_ops": cite(block_moe._large_ep_block_ops),
        "blocks.moe._large_ep_block_ops.attention_tp_size": cite_text(
            block_moe, '"attention_tp_size": cfg.tp_size * cfg.cp_size if is_deepep and is_context else 1,'
        ),
        "blocks.moe._large_ep_block_ops.node_num": cite_text(
            block_moe, "node_num = nodes_for(cfg.moe_ep_size * cfg.moe_tp_size, gpus_per_node)"
        ),
        "blocks.moe._large_ep_block_ops.generation_overlap": cite_text(
            block_moe, 'return [ops.OverlapOp(f"{prefix}_moe_overlap", group_a=routed_ops, group_b=shared_ops)'
        ),
        "deepseek.DeepSeekModel._PDL_FACTOR": cite_text(deepseek, "_PDL_FACTOR = 0.9"),
        "deepseek.DeepSeekModel.gen_scale": cite_text(
            deepseek, "gen_scale = self._num_layers * self._mtp_scale_factor * self._PDL_FACTOR"
        ),
        "deepseek.DeepSeekModel.context_large_ep_scale": cite_text(
            deepseek, 'self.context_ops.extend(self._large_ep_moe_ops("context", moe_shape, self._num_layers))'
        ),
        "deepseek_v32.DeepSeekV32Model._PDL_FACTOR": cite_text(deepseek_v32, "_PDL_FACTOR = 0.9"),
        "helpers.validate_trtllm_large_ep": cite(helpers.validate_trtllm_large_ep),
        "helpers.build_large_ep_moe_ops": cite(helpers.build_large_ep_moe_ops),
    }


# ----------------------------------------------------------------------------------------------
# Measurements
# ----------------------------------------------------------------------------------------------
def table_tokens(view, backend, phase, dtype, ep, nodes, h, k, e) -> list[int]:
    try:
        leaf = view[backend][phase][dtype][ep][nodes][h][k][e][0]
    except KeyError:
        return []
    return sorted(leaf)


def system_points(system: str) -> tuple[dict, list[dict]]:
    from aiconfigurator.sdk import operations as ops
    from aiconfigurator.sdk.operations.moe_comm import communication_dtype_for, nodes_for
    from aiconfigurator.sdk.perf_database import get_database_view, get_latest_database_version

    version = get_latest_database_version(system=system, backend=BACKEND)
    db = get_database_view(
        system, BACKEND, version, allow_missing_data=False, database_mode=DATABASE_MODE, transfer_policy=None
    )
    node = db.system_spec["node"]
    gpn = int(node["num_gpus_per_node"])
    assert float(node["intra_node_bw"]) == LINK_BW[system], (system, node)
    ops.MoEAllToAll.load_data(db)
    view = db._moe_a2a_data
    meta = {
        "database_version": version,
        "sm_version": int(db.system_spec["gpu"]["sm_version"]),
        "num_gpus_per_node": gpn,
        "link_bandwidth_bytes_per_s": LINK_BW[system],
        "moe_a2a_table": os.path.relpath(view.filepath, _site_root()) if getattr(view, "filepath", None) else None,
    }
    if view is None or not any(PATHS[p][0] in view for p in PATHS):
        meta["deepep"] = False
        return meta, []
    meta["deepep"] = True

    def ms(op, x: int) -> float:
        return float(op._engine_query(db, x=int(x)))

    def a2a(backend, phase, dtype, h, k, e, ep):
        return ops.MoEAllToAll(
            f"probe_{phase}",
            1,
            phase=phase,
            comm_dtype=dtype,
            comm_backend=backend,
            hidden_size=h,
            topk=k,
            num_experts=e,
            moe_ep_size=ep,
            node_num=nodes_for(ep, gpn),
            sms=0,
            attention_tp_size=1,
        )

    points, wire, n_checked, table_info, ep_probe = [], {}, 0, {}, {}
    for path, (backend, inf_phase, grid) in PATHS.items():
        # which wire dtype each checkpoint quant uses (aiconfigurator's single dtype contract)
        for q in CKPT_QUANTS:
            for phase in ("dispatch", "combine"):
                try:
                    dt = communication_dtype_for(
                        system=system,
                        comm_backend=backend,
                        model_quantization=q,
                        communication_phase=phase,
                        inference_phase=inf_phase,
                    )
                except ValueError:
                    dt = None
                wire.setdefault(path, {}).setdefault(q, {})[phase] = dt
        eps_in_table = sorted({ep for ph in view.get(backend, {}).values() for dt in ph.values() for ep in dt})
        table_ep = eps_in_table[0]
        table_info[path] = {"comm_backend": backend, "ep_sizes_in_table": eps_in_table}
        for phase in ("dispatch", "combine"):
            dtypes = sorted({wire[path][q][phase] for q in CKPT_QUANTS} - {None})
            for dt in dtypes:
                users = [q for q in CKPT_QUANTS if wire[path][q][phase] == dt]
                try:
                    hs = view[backend][phase][dt][table_ep][1]
                except KeyError:
                    continue
                for h in sorted(hs):
                    for k in sorted(hs[h]):
                        for e in sorted(hs[h][k]):
                            tab = table_tokens(view, backend, phase, dt, table_ep, 1, h, k, e)
                            leaf = view[backend][phase][dt][table_ep][1][h][k][e][0]
                            op = a2a(backend, phase, dt, h, k, e, table_ep)
                            for t in tab:  # table points: engine == raw row
                                v, raw = ms(op, t), float(leaf[t]["latency"])
                                if not abs(v - raw) <= 1e-9 * raw:
                                    raise SystemExit(f"CHECK FAILED {system} {backend} {phase} {dt} {h}/{k}/{e} t={t}")
                                n_checked += 1
                            for t in grid:
                                src = (
                                    "table"
                                    if t in tab
                                    else ("extrapolated" if t > tab[-1] or t < tab[0] else "interpolated")
                                )
                                points.append(
                                    {
                                        "system": system,
                                        "path": path,
                                        "comm_backend": backend,
                                        "op": phase,
                                        "comm_dtype": dt,
                                        "checkpoint_quants": users,
                                        "bytes_per_elem": BYTES_PER_ELEM[dt],
                                        "hidden": h,
                                        "top_k": k,
                                        "num_experts": e,
                                        "ep": table_ep,
                                        "tokens_per_gpu": t,
                                        "seconds": _g(ms(op, t) / 1e3),
                                        "lookup": src,
                                    }
                                )
        # EP handling: which moe_ep values have data, and whether the value changes with EP
        dt_d = wire[path][HEADLINE_QUANT]["dispatch"]
        dt_c = wire[path][HEADLINE_QUANT]["combine"]
        ref_t = [grid[0], grid[len(grid) // 2], grid[-1]]
        raw, probe = {}, {}
        for ep in EP_PROBE:
            row = {"node_num": nodes_for(ep, gpn)}
            for phase, dt in (("dispatch", dt_d), ("combine", dt_c)):
                try:
                    raw[(ep, phase)] = [ms(a2a(backend, phase, dt, 7168, 8, 256, ep), t) for t in ref_t]
                except Exception as exc:  # noqa: BLE001 (PerfDataNotAvailableError)
                    row[phase] = f"no data: {type(exc).__name__}"
                    continue
                row[phase] = [_g(v / 1e3) for v in raw[(ep, phase)]]
            diffs = [
                abs(a - b) / b
                for phase in ("dispatch", "combine")
                if (ep, phase) in raw and (table_ep, phase) in raw
                for a, b in zip(raw[(ep, phase)], raw[(table_ep, phase)], strict=True)
            ]
            if diffs:
                row["max_rel_diff_vs_table_ep"] = _g(max(diffs), 3)
            probe[str(ep)] = row
        ep_probe[path] = {
            "shape": "hidden 7168, top_k 8, 256 experts (DeepSeek-V3)",
            "comm_dtype": {"dispatch": dt_d, "combine": dt_c},
            "tokens_per_gpu": ref_t,
            "seconds_by_ep": probe,
        }
    meta["wire_dtype_by_checkpoint_quant"] = wire
    meta["tables"] = table_info
    meta["ep_probe"] = ep_probe
    meta["table_rows_checked"] = n_checked
    return meta, points


def fused_checks(system: str) -> dict:
    """MoEDispatch (fused path) vs the NCCL / custom all-reduce op it is claimed to be, DeepSeek-V3 shape."""
    from aiconfigurator.sdk import common
    from aiconfigurator.sdk import operations as ops
    from aiconfigurator.sdk.perf_database import get_database_view, get_latest_database_version

    version = get_latest_database_version(system=system, backend=BACKEND)
    db = get_database_view(
        system, BACKEND, version, allow_missing_data=False, database_mode=DATABASE_MODE, transfer_policy=None
    )
    h, k, e, half = 7168, 8, 256, common.CommQuantMode.half

    def ms(op, x):
        return float(op._engine_query(db, x=int(x)))

    out = {}
    for q in (common.MoEQuantMode.fp8_block, common.MoEQuantMode.bfloat16):
        for label, (mtp, mep, dp) in {"dep8": (1, 8, 8), "etp2ep4_dp8": (2, 4, 8), "tep8": (1, 8, 1)}.items():
            g = mtp * mep
            res = {}
            for pre in (True, False):
                op = ops.MoEDispatch(
                    "x", 1, h, k, e, mtp, mep, dp, pre, quant_mode=q, backend=BACKEND, is_context=False
                )
                cands = {
                    "custom_allreduce(tokens*hidden bf16)": lambda t, g=g: ms(ops.CustomAllReduce("c", 1, h, g), t),
                    "nccl_all_gather(tokens*dp*hidden x 2 bytes)": lambda t, g=g, dp=dp: ms(
                        ops.NCCL("a", 1, "all_gather", h, g, half), t * dp
                    ),
                    "nccl_all_gather(tokens*dp*hidden x 1 byte, fp8)": lambda t, g=g, dp=dp: ms(
                        ops.NCCL("a", 1, "all_gather", h // 2, g, half), t * dp
                    ),
                    "nccl_reduce_scatter(tokens*dp*hidden x 2 bytes)": lambda t, g=g, dp=dp: ms(
                        ops.NCCL("r", 1, "reduce_scatter", h, g, half), t * dp
                    ),
                }
                hits = []
                for name, fn in cands.items():
                    if all(abs(ms(op, t) - fn(t)) <= 1e-9 * fn(t) for t in (8, 64, 256)):
                        hits.append(name)
                res["pre_dispatch" if pre else "post_dispatch"] = hits or ["(no match)"]
            out[f"{label}/{q.name}"] = res
    return out


def task_rules(system: str, tmpdir: str) -> dict:
    """Build an aiconfigurator agg Task per model and ask it which MoE comm backend each tuple gets."""
    from aiconfigurator.cli.main import build_experiment_tasks

    out = {}
    for hf_id, short in MODELS:
        path = hf_id
        if short == "kimi-k2":  # the packaged config (offline); a directory holding config.json
            import aiconfigurator_core

            src = os.path.join(
                os.path.dirname(aiconfigurator_core.__file__),
                "model_configs",
                "moonshotai--Kimi-K2-Instruct_config.json",
            )
            path = os.path.join(tmpdir, "kimi-k2")
            os.makedirs(path, exist_ok=True)
            shutil.copy(src, os.path.join(path, "config.json"))
        exp = {
            "serving_mode": "agg",
            "model_path": path,
            "system_name": system,
            "backend_name": BACKEND,
            "database_mode": DATABASE_MODE,
            "total_gpus": 64,
            "isl": 2048,
            "osl": 256,
            "ttft": 2000,
            "tpot": 50,
        }
        try:
            task = build_experiment_tasks(config={"k": exp})["k"]
        except Exception as exc:  # noqa: BLE001
            out[short] = f"task build failed: {type(exc).__name__}"
            continue
        cov = task._large_ep_coverage("agg")
        out[short] = {
            "moe_quant_mode": getattr(task._role_attr("agg", "moe_quant_mode"), "name", None),
            "coverage_eps": {ph: {b: sorted(eps) for b, eps in per.items()} for ph, per in cov.items()},
            "multi_node_eps": sorted(task._large_ep_eps("agg")),
            "resolved": {
                "tp{}_pp{}_dp{}_moetp{}_moeep{}_cp{}".format(*tup): task._resolve_moe_comm_backend("agg", tup)
                or "fused"
                for tup in TASK_TUPLES
            },
        }
    return out


RULES_TEXT = [
    "WHICH PATH (trtllm; Task sweeps, i.e. cli default/exp modes). Per parallel tuple (tp, pp, attention_dp, "
    "moe_tp, moe_ep, cp), Task._resolve_moe_comm_backend returns a per-phase comm backend or None (= fused): "
    "None unless moe_tp == 1 and moe_ep > 1; None when attention_dp <= 1 on trtllm (TEP tuples stay fused); "
    "otherwise select_moe_comm_backend picks, per phase, the FIRST backend in MOE_A2A_BACKENDS registry order "
    "whose coverage contains moe_ep (trtllm: context -> trtllm_deepep_ht before nvlink_two_sided/one_sided; "
    "generation -> trtllm_deepep_ll before nvlink_*); the tuple is large-EP only if every phase the role runs "
    "PLUS context is resolved (a decode worker still needs context coverage); else fused.",
    "COVERAGE of an EP (Task._compute_large_ep_coverage): the model family is in LARGE_EP_READY_FAMILIES (MOE, "
    "DEEPSEEK, DEEPSEEKV32, KIMIK25 -- DeepSeek-V3 and Kimi K2 are DEEPSEEK); ep is in the MoE expert-compute "
    "coverage (wideEP compute table or the regular trtllm MoE table) for the checkpoint's moe_quant_mode; the "
    "moe_a2a table has dispatch+combine rows for the shape (hidden, top_k, num_experts) under the wire dtype at "
    "(ep, node_num = ceil(ep/gpus_per_node)) exactly, or -- DeepEP HT/LL only, when ep spans > 1 node -- at "
    "(ep = gpus_per_node, node_num = 1) (a2a_covers_parallel); and MoECommBackendSpec.feasible: top_k <= 8, "
    "moe_tp == 1, 1 < ep <= num_experts, num_experts % ep == 0, sm_version >= min_sm (0 for DeepEP, 100 for "
    "nvlink_*). Shipped tables hold only ep = gpus_per_node (8 on h100/h200/b200, 4 on gb200), so DeepEP is taken "
    "at moe_ep = node width and at every larger covered ep; moe_ep below the node width (2, 4 on 8-GPU nodes) "
    "stays fused (on gb200 DeepSeek-V3 ep 2 resolves to nvlink_two_sided from its legacy trtllm_alltoall table).",
    "cli estimate (resolve_model_config_moe_comm without a coverage snapshot) keeps intra-node EP (moe_ep <= "
    "gpus_per_node) on the fused path and requires DeepEP coverage for cross-node EP.",
    "FUSED PATH (MoEDispatch, compiled Rust operators/moe_dispatch.rs; verified here op-for-op, see "
    "fused_path_checks): attention_tp = moe_tp*moe_ep/attention_dp; if attention_tp > 1 (TEP, any sm) both "
    "pre- and post-dispatch are the TRT-LLM custom all-reduce of tokens*hidden bf16; elif attention_dp > 1 "
    "(DEP or ETPxEP with attention DP) the pre-dispatch is an NCCL all_gather of tokens*dp*hidden elements -- "
    "2 bytes each on sm 90 (h100/h200) whatever the quant, 1 byte each (fp8) on sm 100 (b200/gb200) when the "
    "MoE quant is fp8/fp8_block, 2 bytes for bf16 -- and the post-dispatch an NCCL reduce_scatter of "
    "tokens*dp*hidden bf16 elements; no top_k factor. The gb200 node is 4 GPUs (not >= 72), so the NVL72 "
    "trtllm_alltoall branch of MoEDispatch does not fire here.",
    "DEEPEP OPS (_large_ep_block_ops): per MoE block, MoEAllToAll dispatch, MoEExpertCompute, MoEAllToAll "
    "combine, with node_num = ceil(moe_ep*moe_tp/gpus_per_node), sms = 0 and attention_tp_size = 1 (the "
    "tp*cp divisor applies only to sglang/vllm 'deepep*' backends; 'trtllm_deepep_*' does not start with "
    "'deepep'), so the op is queried at the per-GPU token count. Wire dtype (communication_dtype_for): HT sends "
    "bf16 for bf16 AND fp8 checkpoints (nvfp4 -> nvfp4); LL sends the checkpoint dtype, bf16 or fp8 (fp8_block "
    "-> fp8, for both dispatch and combine rows), nvfp4 -> nvfp4 dispatch / fp4 combine on Blackwell only "
    "(Hopper nvfp4 LL has no dtype -> not large-EP).",
    "EP-INDEPENDENCE: the engine returns the node-width row for every ep >= node width (same values at EP 8, "
    "16, ..., 256; node_num is not used to slow cross-node traffic), so alpha and eta below do not depend on ep. "
    "EP below the node width has no rows (PerfDataNotAvailableError).",
    "TOKENS: LL rows cover 1..256 tokens per GPU; above 256 the engine extrapolates proportionally, "
    "t(n) = t(256) * n/256 (no fixed term). HT rows cover 16..65536; between rows the lookup is linear.",
    "SCALE FACTORS (DeepSeek/Kimi DeepSeekModel trtllm large-EP branch): context MoE ops are scaled by "
    "num_layers (ALL 61 layers, not the 58/60 MoE layers), generation ops by num_layers * mtp_scale_factor * "
    "_PDL_FACTOR with _PDL_FACTOR = 0.9 (the PDL overlap discount, applied to every decode-layer op, attention "
    "included; DeepSeekV32 has the same factor). Generation routed ops (router, dispatch, expert compute, "
    "combine) sit in an OverlapOp with the shared-expert GEMMs: the layer pays max(routed, shared), plus a "
    "moe_reduce_add ElementWise. Context runs them sequentially. No other per-layer fixed communication overhead "
    "is added; the table latency (which includes DeepEP's launch/notify cost) is the whole comm cost. "
    "validate_trtllm_large_ep only warns when moe_ep <= top_k (the FIXME says it should fall back to NCCL).",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--skip-task-rules", action="store_true")
    args = ap.parse_args()
    shared.quiet()
    t0 = time.time()
    aic_version = importlib.metadata.version("aiconfigurator")

    systems_meta, points = {}, []
    for system in SYSTEMS:
        meta, pts = system_points(system)
        meta["fused_path_checks"] = fused_checks(system)
        systems_meta[system] = meta
        points.extend(pts)
        print(f"{system}: {len(pts)} points, {meta.get('table_rows_checked', 0)} table rows checked", flush=True)

    if not args.skip_task_rules:
        with tempfile.TemporaryDirectory() as tmp:
            for system in SYSTEMS:
                systems_meta[system]["task_resolution"] = task_rules(system, tmp)

    # --- fits -------------------------------------------------------------------------------
    fits, comparison = {}, {}
    for system in SYSTEMS:
        bw = LINK_BW[system]
        for path in PATHS:
            wire = systems_meta[system]["wire_dtype_by_checkpoint_quant"][path]
            head = {ph: wire[HEADLINE_QUANT][ph] for ph in ("dispatch", "combine")}
            sel = {
                ph: [
                    p
                    for p in points
                    if p["system"] == system and p["path"] == path and p["op"] == ph and p["comm_dtype"] == head[ph]
                ]
                for ph in ("dispatch", "combine")
            }
            comp = {}
            for defn in BYTES_DEFS:
                comp[defn] = {
                    ph: {
                        k: v
                        for k, v in fit_points(sel[ph], defn, bw, by_shape=False).items()
                        if k in ("alpha_s", "eta", "median_rel_error", "max_rel_error")
                    }
                    for ph in sel
                }
            comparison.setdefault(system, {})[path] = comp
    # best definition per path: lowest mean (over systems and ops) median error, ties -> max error
    best = {}
    for path in PATHS:
        score = {
            defn: (
                statistics.mean(
                    comparison[s][path][defn][ph]["median_rel_error"] for s in SYSTEMS for ph in ("dispatch", "combine")
                ),
                statistics.mean(
                    comparison[s][path][defn][ph]["max_rel_error"] for s in SYSTEMS for ph in ("dispatch", "combine")
                ),
            )
            for defn in BYTES_DEFS
        }
        best[path] = min(score, key=lambda d: score[d])
    for system in SYSTEMS:
        bw = LINK_BW[system]
        for path in PATHS:
            defn = best[path]
            wire = systems_meta[system]["wire_dtype_by_checkpoint_quant"][path]
            entry = {"sent_bytes_definition": defn, "link_bandwidth_bytes_per_s": bw}
            for ph in ("dispatch", "combine"):
                per_dtype = {}
                for dt in sorted(
                    {p["comm_dtype"] for p in points if p["system"] == system and p["path"] == path and p["op"] == ph}
                ):
                    sub = [
                        p
                        for p in points
                        if p["system"] == system and p["path"] == path and p["op"] == ph and p["comm_dtype"] == dt
                    ]
                    per_dtype[dt] = fit_points(sub, defn, bw)
                entry[ph] = per_dtype
            head = {ph: wire[HEADLINE_QUANT][ph] for ph in ("dispatch", "combine")}
            entry["headline_dtypes"] = head
            # dispatch + combine of one layer vs the dispatch's sent bytes (fp8-checkpoint dtypes)
            disp = {
                (p["hidden"], p["top_k"], p["num_experts"], p["tokens_per_gpu"]): p
                for p in points
                if p["system"] == system
                and p["path"] == path
                and p["op"] == "dispatch"
                and p["comm_dtype"] == head["dispatch"]
            }
            comb = {
                (p["hidden"], p["top_k"], p["num_experts"], p["tokens_per_gpu"]): p
                for p in points
                if p["system"] == system
                and p["path"] == path
                and p["op"] == "combine"
                and p["comm_dtype"] == head["combine"]
            }
            pair = []
            for key in sorted(set(disp) & set(comb)):
                q = dict(disp[key])
                q["seconds"] = disp[key]["seconds"] + comb[key]["seconds"]
                pair.append(q)
            entry["dispatch_plus_combine"] = fit_points(pair, defn, bw)
            entry["dispatch_plus_combine"]["note"] = (
                "sum of one dispatch and one combine; sent_bytes counted ONCE at the dispatch wire dtype"
            )
            # DeepSeek-V3 / Kimi K2 shape only (hidden 7168, top_k 8; 256 and 384 experts)
            ds = {}
            for ph in ("dispatch", "combine"):
                ds[ph] = fit_points(
                    [
                        p
                        for p in points
                        if p["system"] == system
                        and p["path"] == path
                        and p["op"] == ph
                        and p["comm_dtype"] == head[ph]
                        and p["hidden"] == 7168
                        and p["top_k"] == 8
                    ],
                    defn,
                    bw,
                )
            ds["dispatch_plus_combine"] = fit_points(
                [p for p in pair if p["hidden"] == 7168 and p["top_k"] == 8], defn, bw, by_shape=False
            )
            entry["headline_h7168_k8"] = ds
            # LL: table-range-only fit (<= 256 tokens), for reference
            if path == "ll":
                for op in ("dispatch", "combine"):
                    entry[f"{op}_table_range_only"] = fit_points(
                        [
                            p
                            for p in points
                            if p["system"] == system
                            and p["path"] == path
                            and p["op"] == op
                            and p["comm_dtype"] == head[op]
                            and p["lookup"] != "extrapolated"
                        ],
                        defn,
                        bw,
                        by_shape=False,
                    )
            fits.setdefault(system, {})[path] = entry

    out = {
        "source": (
            f"NVIDIA aiconfigurator {aic_version} (pip): latency its TensorRT-LLM DeepEP all-to-all tables "
            f"(moe_a2a_perf.parquet, {DATABASE_MODE} mode) assign, through its own MoEAllToAll op and engine lookup, "
            "to ONE dispatch and ONE combine of one MoE layer on the low-latency (generation) and high-throughput "
            "(context) DeepEP paths, for h100_sxm / h200_sxm / b200_sxm / gb200; fits of derive's "
            "alpha + sent_bytes/(eta*BW_link) form; and the rules for when a sweep takes DeepEP"
        ),
        "generated_by": "python3 tools/aiconfigurator_deepep.py",
        "aiconfigurator_version": aic_version,
        "backend": BACKEND,
        "database_mode": DATABASE_MODE,
        "systems": systems_meta,
        "rules": RULES_TEXT,
        "citations": citations(),
        "fit_method": (
            "weighted least squares minimising sum(((alpha + sent_bytes/(eta*BW_link)) - seconds)/seconds)^2 "
            "(relative residuals), alpha >= 0, eta > 0 (eta may exceed 1: the definition then counts more bytes "
            "than cross NVLink), solved exactly (interior optimum, else alpha = 0). BW_link = "
            "systems.<s>.link_bandwidth_bytes_per_s (aiconfigurator's intra_node_bw). The sent_bytes definition "
            "used for 'fits' is the one with the lowest mean median error over systems and ops ('best_bytes_"
            "definition'); 'bytes_definition_comparison' lists all. ep in the definitions = the table's ep "
            "(gpus_per_node), which is what aiconfigurator queries for every moe_ep >= node width."
        ),
        "bytes_definitions": BYTES_DEFS,
        "best_bytes_definition": best,
        "bytes_definition_comparison": comparison,
        "fits": fits,
        "meaning": {
            "system": "aiconfigurator system name",
            "path": "ll = trtllm_deepep_ll (generation / decode steps), ht = trtllm_deepep_ht (context / prefill)",
            "op": "dispatch (tokens to experts) or combine (expert outputs back)",
            "comm_dtype": "wire dtype key aiconfigurator looks up (see systems.<s>.wire_dtype_by_checkpoint_quant)",
            "checkpoint_quants": "MoE quant modes of the checkpoint for which aiconfigurator uses this comm_dtype",
            "bytes_per_elem": "nominal bytes per activation element of comm_dtype (block scales not counted)",
            "hidden / top_k / num_experts": "the MoE shape of the table row (DeepSeek-V3 = 7168/8/256, Kimi K2 = "
            "7168/8/384)",
            "ep": "EP size of the table row (= gpus_per_node); aiconfigurator uses this row for every moe_ep >= it",
            "tokens_per_gpu": "tokens on each GPU (attention-DP rank) in the step, the op's query x",
            "seconds": "aiconfigurator's latency for ONE such op of ONE MoE layer (scale_factor 1, before the "
            "num_layers / PDL scale factors)",
            "lookup": "table (a profiled row), interpolated (between rows), extrapolated (beyond the rows)",
            "fits.<s>.<path>.<op>.<dtype>": "alpha_s, eta of alpha + sent_bytes/(eta*BW_link) with their median / "
            "max relative error; by_shape = the same fit per (hidden, top_k, experts)",
            "fits.<s>.<path>.headline_dtypes": "the wire dtypes for an fp8 (DeepSeek-V3 / Kimi K2) checkpoint",
            "fits.<s>.<path>.headline_h7168_k8": "fits at those dtypes restricted to hidden 7168, top_k 8 (the "
            "DeepSeek-V3 and Kimi K2 shapes) -- the numbers derive should use for those models; the pooled "
            "per-dtype fits mix hidden sizes, over which eta is not constant (latency is sublinear in hidden)",
            "eta": "fitted efficiency; eta >= 1e5 means the fit found the latency flat in bytes (alpha only)",
        },
    }
    points.sort(
        key=lambda p: (
            p["system"],
            p["path"],
            p["op"],
            p["comm_dtype"],
            p["hidden"],
            p["top_k"],
            p["num_experts"],
            p["tokens_per_gpu"],
        )
    )
    out["points"] = points
    shared.write_json(out, args.out)

    print("best sent_bytes definition:", best)
    for system in SYSTEMS:
        for path in PATHS:
            e = fits[system][path]
            for ph in ("dispatch", "combine", "dispatch_plus_combine"):
                f = e["headline_h7168_k8"][ph]
                if ph == "dispatch_plus_combine":
                    print(
                        f"{system:9s} {path} d+c      alpha={f['alpha_s'] * 1e6:7.2f}us eta={f['eta']:.3g} "
                        f"med={f['median_rel_error']:.1%} max={f['max_rel_error']:.1%}"
                    )
                    continue
                print(
                    f"{system:9s} {path} {ph:8s} {e['headline_dtypes'][ph]:8s} alpha={f['alpha_s'] * 1e6:7.2f}us "
                    f"eta={f['eta']:.3g} med={f['median_rel_error']:.1%} max={f['max_rel_error']:.1%}"
                )
    print(f"{len(points)} points -> {args.out} in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
