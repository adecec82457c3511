"""What NVIDIA aiconfigurator 0.12 says one MoE expert-parallel dispatch / combine costs on h100_sxm.

Writes ``benchmarks/data/aiconfigurator-0.12-alltoall.json``: the latency aiconfigurator's profiled
TensorRT-LLM tables (h100_sxm, trtllm 1.3.0rc20, SILICON mode) assign to ONE MoE dispatch and ONE
combine of one MoE layer, for expert-parallel groups of 2, 4 and 8 GPUs inside one NVLink node, at
decode token counts (1..512 tokens per GPU), for Qwen3-30B-A3B (hidden 2048, 128 experts, top-8) and
DeepSeek-V3 (hidden 7168, 256 experts, top-8); and a least-squares fit of derive's all-to-all form
``seconds = alpha + sent_bytes / (eta * 450e9)``, sent_bytes = (g-1)/g * tokens_per_gpu * top_k *
hidden * 2, to it (pooled and per group).  aiconfigurator is never a product dependency; run this in a
throw-away venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_alltoall.py

Options: ``--out PATH`` (default benchmarks/data/aiconfigurator-0.12-alltoall.json).

How aiconfigurator 0.12.0 costs MoE communication for trtllm (read from its source; the query bodies
are compiled Rust, ``aiconfigurator_core._aiconfigurator_core``, whose source is
``operators/moe_dispatch.rs`` / ``operators/communication.rs`` / ``operators/moe_a2a.rs`` in the
ai-dynamo/aiconfigurator repository): every MoE layer gets two ops, ``{phase}_moe_pre_dispatch`` and
``{phase}_moe_post_dispatch`` (``sdk.models.blocks.moe._default_moe_block_ops``, both
``ops.MoEDispatch``; the MoE model has no separate attention all-reduce, the pre-dispatch is it).
``MoEDispatch.query`` for trtllm on a GPU with ``sm_version != 100`` (H100 is sm 90):
attention_tp = moe_tp*moe_ep/attention_dp; if attention_tp > 1 both ops are
``CustomAllReduce(hidden, num_gpus).query(tokens)`` (TRT-LLM custom all-reduce table,
``comm/trtllm/<ver>/custom_allreduce_perf.parquet``, message = tokens*hidden bf16 elements); elif
attention_dp > 1 the pre-dispatch is ``NCCL("all_gather", hidden, num_gpus).query(tokens*dp)`` and the
post-dispatch ``NCCL("reduce_scatter", ...)`` (``comm/nccl/<nccl_version>/nccl_perf.parquet``, message =
tokens*dp*hidden half elements = the gathered buffer, nccl-tests convention); no all-to-all and no
top_k factor.  The only all-to-all tables are the large-EP ones (``sdk.operations.moe_comm.MoEAllToAll``
over ``moe_a2a_perf.parquet``: for h100_sxm trtllm only DeepEP ``trtllm_deepep_ht`` (context) /
``trtllm_deepep_ll`` (generation), collected at TRT-LLM 1.3.0rc11 for EP 8 and hidden 3072/4096/6144/7168),
which ``Task`` sweeps select (``task_v2.Task._resolve_moe_comm_backend``) only with attention DP > 1
and where both phases are covered, i.e. DeepSeek-V3 at EP 8 here; ``cli estimate`` keeps intra-node EP
on the fused MoEDispatch path (``moe_comm_resolver.resolve_model_config_moe_comm`` returns None).

API used (aiconfigurator 0.12.0):

    db = perf_database.get_database_view("h100_sxm", "trtllm", <latest>, database_mode="SILICON", ...)
    info = sdk.models._get_model_info(hf_id)                       # hidden_size, topk, num_experts
    op = operations.MoEDispatch(name, 1, hidden, topk, experts, moe_tp=1, moe_ep=g, attention_dp,
                                pre_dispatch, quant_mode=MoEQuantMode.bfloat16, backend="trtllm",
                                is_context=False)
    op._engine_query(db, x=tokens_per_gpu)                        # ms; OpShellKit's single-op engine
                                                                  # evaluation (sdk.engine._evaluate_single_op)
    operations.NCCL(name, 1, "all_gather" | "reduce_scatter" | "alltoall", elems_per_token, g,
                    CommQuantMode.half), operations.CustomAllReduce(name, 1, hidden, g)   # cross-checks
    operations.MoEAllToAll(name, 1, phase=..., comm_dtype="bfloat16", comm_backend="trtllm_deepep_ll",
                           hidden_size=..., topk=..., num_experts=..., moe_ep_size=8, node_num=1, sms=0,
                           attention_tp_size=1)
    db.moe_a2a_coverage / moe_comm_resolver.moe_compute_coverage / a2a_covers_parallel /
    select_moe_comm_backend                                       # which path Task would take

Every fused-path value is checked equal (to 1e-12 relative) to the NCCL / CustomAllReduce op it is
claimed to be; the script fails otherwise.

Fit: weighted (relative) least squares, minimising sum(((alpha + b*sent) - t) / t)^2 over alpha >= 0,
b = 1/(eta*450e9) >= 1/450e9 (i.e. 0 < eta <= 1); exact for two parameters with box constraints (the
interior optimum, else the best point on the constraint edges).

Imports only aiconfigurator and the standard library.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import argparse
import glob
import importlib.metadata
import os
import sys
import time

import aiconfigurator_common as shared

SYSTEM = "h100_sxm"
BACKEND = "trtllm"
DATABASE_MODE = "SILICON"
LINK_BW = 450e9  # bytes/s, one-way NVLink per H100 SXM GPU (= aiconfigurator's intra_node_bw for h100_sxm)
BYTES = 2  # bf16
GROUPS = [2, 4, 8]
TOKENS = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
DEEPEP_LL_MAX_TOKENS = 256  # the trtllm_deepep_ll table's largest num_tokens (beyond it aiconfigurator extrapolates)
MODELS = [("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"), ("deepseek-ai/DeepSeek-V3", "deepseek-v3")]
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(_ROOT, "benchmarks", "data", "aiconfigurator-0.12-alltoall.json")

# op label -> (layout, what aiconfigurator evaluates, used for which fit family)
OPS = {
    "dep_dispatch": "attention DP = g, tp = 1, moe_ep = g: MoEDispatch pre-dispatch = NCCL all_gather "
    "over g GPUs of tokens_per_gpu*g*hidden half elements (the gathered buffer)",
    "dep_combine": "attention DP = g, tp = 1, moe_ep = g: MoEDispatch post-dispatch = NCCL reduce_scatter "
    "over g GPUs of tokens_per_gpu*g*hidden half elements (the buffer before scattering)",
    "tep_dispatch": "attention TP = g, moe_ep = g: MoEDispatch pre-dispatch = TRT-LLM custom all-reduce "
    "over g GPUs of tokens*hidden bf16 elements (tokens replicated on every GPU; this is the attention "
    "output all-reduce, the MoE model emits no other)",
    "tep_combine": "attention TP = g, moe_ep = g: MoEDispatch post-dispatch = the same custom all-reduce "
    "(sums the experts' partial outputs)",
    "deepep_ll_dispatch": "large-EP path (Task sweeps, attention DP = 8, generation): MoEAllToAll "
    "trtllm_deepep_ll dispatch, moe_a2a table (DeepEP low-latency all-to-all), tokens per GPU",
    "deepep_ll_combine": "large-EP path: MoEAllToAll trtllm_deepep_ll combine",
    "nccl_alltoall_reference": "NOT used by aiconfigurator's MoE costing: the NCCL alltoall table queried "
    "at derive's message, tokens_per_gpu*top_k*hidden half elements per GPU (nccl-tests size = one GPU's "
    "send buffer), as a pure all-to-all reference",
}
FIT_FAMILIES = {
    "dep": ["dep_dispatch", "dep_combine"],
    "dep_dispatch": ["dep_dispatch"],
    "dep_combine": ["dep_combine"],
    "tep": ["tep_dispatch", "tep_combine"],
    "deepep_ll": ["deepep_ll_dispatch", "deepep_ll_combine"],
    "deepep_ll_dispatch": ["deepep_ll_dispatch"],
    "deepep_ll_combine": ["deepep_ll_combine"],
    "nccl_alltoall_reference": ["nccl_alltoall_reference"],
}
HEADLINE = "dep"


_g = shared.sig


def sent_bytes(group: int, tokens_per_gpu: int, top_k: int, hidden: int) -> float:
    """derive's all-to-all payload: (g-1)/g of X = tokens_per_gpu * top_k * hidden * 2 bytes."""
    return (group - 1) / group * tokens_per_gpu * top_k * hidden * BYTES


def fit_alpha_eta(xs: list[float], ts: list[float], bw: float = LINK_BW) -> dict:
    """Relative least squares of t = alpha + b*x, alpha >= 0, b >= 1/bw (eta = 1/(b*bw) in (0, 1])."""
    return shared.fit_alpha_eta(xs, ts, bw, eta_max_one=True)


def fit_points(pts: list[dict]) -> dict:
    out = fit_alpha_eta([p["sent_bytes"] for p in pts], [p["seconds"] for p in pts])
    by_group = {}
    for g in sorted({p["group"] for p in pts}):
        sub = [p for p in pts if p["group"] == g]
        by_group[str(g)] = fit_alpha_eta([p["sent_bytes"] for p in sub], [p["seconds"] for p in sub])
    out["by_group"] = by_group
    by_model_group = {}
    for m in sorted({p["model"] for p in pts}):
        for g in sorted({p["group"] for p in pts if p["model"] == m}):
            sub = [p for p in pts if p["group"] == g and p["model"] == m]
            by_model_group[f"{m}/{g}"] = fit_alpha_eta([p["sent_bytes"] for p in sub], [p["seconds"] for p in sub])
    out["by_model_group"] = by_model_group
    return out


def large_ep_choice(db, shape, g: int) -> dict:
    """Mirror of Task._compute_large_ep_coverage + _resolve_moe_comm_backend for (tp=1, dp=g, moe_ep=g)."""
    from aiconfigurator.sdk import common
    from aiconfigurator.sdk.moe_comm_resolver import (
        a2a_covers_parallel,
        moe_compute_coverage,
        select_moe_comm_backend,
    )
    from aiconfigurator.sdk.operations.moe_comm import MOE_A2A_BACKENDS, nodes_for

    gpn = int(db.system_spec["node"]["num_gpus_per_node"])
    sm = int(db.system_spec["gpu"]["sm_version"])
    q = common.MoEQuantMode.bfloat16
    coverage = {}
    for phase in ("context", "generation"):
        a2a = db.moe_a2a_coverage(shape["hidden_size"], shape["topk"], shape["num_experts"], q, phase)
        compute = moe_compute_coverage(
            db,
            backend_name=BACKEND,
            hidden_size=shape["hidden_size"],
            inter_size=shape["moe_inter_size"],
            topk=shape["topk"],
            num_experts=shape["num_experts"],
            quant_mode=q,
            phase=phase,
        )
        for name, spec in MOE_A2A_BACKENDS.items():
            if BACKEND not in spec.frameworks or phase not in spec.inference_phases:
                continue
            if (
                g in compute
                and a2a_covers_parallel(
                    a2a.get(name, set()),
                    framework=BACKEND,
                    comm_backend=name,
                    moe_ep_size=g,
                    expected_nodes=nodes_for(g, gpn),
                    gpus_per_node=gpn,
                )
                and spec.feasible(
                    topk=shape["topk"], num_experts=shape["num_experts"], moe_tp_size=1, moe_ep_size=g, sm_version=sm
                )
            ):
                coverage.setdefault(phase, {}).setdefault(name, set()).add(g)
    resolved = select_moe_comm_backend(coverage, backend_name=BACKEND, attention_dp_size=g, moe_ep_size=g)
    if {"context", "generation"} - set(resolved):
        return {}
    return resolved


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    shared.quiet()
    t0 = time.time()

    import aiconfigurator_core
    from aiconfigurator.sdk import common
    from aiconfigurator.sdk import operations as ops
    from aiconfigurator.sdk.models import _get_model_info
    from aiconfigurator.sdk.perf_database import get_database_view, get_latest_database_version

    aic_version = importlib.metadata.version("aiconfigurator")
    version = get_latest_database_version(system=SYSTEM, backend=BACKEND)
    db = get_database_view(
        SYSTEM, BACKEND, version, allow_missing_data=False, database_mode=DATABASE_MODE, transfer_policy=None
    )
    node = db.system_spec["node"]
    assert float(node["intra_node_bw"]) == LINK_BW, node
    bf16 = common.MoEQuantMode.bfloat16
    half = common.CommQuantMode.half

    def ms(op, x: int) -> float:
        return float(op._engine_query(db, x=int(x)))

    points, models_meta, n_checked = [], {}, 0
    for hf_id, short in MODELS:
        info = _get_model_info(hf_id)
        shape = {k: int(info[k]) for k in ("hidden_size", "topk", "num_experts", "moe_inter_size")}
        h, k, e = shape["hidden_size"], shape["topk"], shape["num_experts"]
        large_ep = {str(g): large_ep_choice(db, shape, g) for g in GROUPS}
        models_meta[short] = {
            "hf_id": hf_id,
            "architecture": info["architecture"],
            "hidden": h,
            "top_k": k,
            "num_experts": e,
            "moe_inter_size": shape["moe_inter_size"],
            "num_moe_layers": int(info["num_moe_layers"]),
            "task_large_ep_backend_at_attention_dp_g": large_ep,
        }

        def add(op_label, g, tpg, secs, extra=None, short=short, k=k, h=h):
            p = {
                "model": short,
                "group": g,
                "tokens_per_gpu": tpg,
                "top_k": k,
                "hidden": h,
                "sent_bytes": sb if not float(sb := sent_bytes(g, tpg, k, h)).is_integer() else int(sb),
                "seconds": _g(secs),
                "op": op_label,
            }
            p.update(extra or {})
            points.append(p)

        for g in GROUPS:
            for pre, lab_dep, lab_tep, nccl_name in (
                (True, "dep_dispatch", "tep_dispatch", "all_gather"),
                (False, "dep_combine", "tep_combine", "reduce_scatter"),
            ):
                name = "generation_moe_pre_dispatch" if pre else "generation_moe_post_dispatch"
                dep = ops.MoEDispatch(
                    name, 1, h, k, e, 1, g, g, pre, quant_mode=bf16, backend=BACKEND, is_context=False
                )
                tep = ops.MoEDispatch(
                    name, 1, h, k, e, 1, g, 1, pre, quant_mode=bf16, backend=BACKEND, is_context=False
                )
                nccl = ops.NCCL(nccl_name, 1, nccl_name, h, g, half)
                car = ops.CustomAllReduce("allreduce", 1, h, g)
                for t in TOKENS:
                    v_dep, v_nccl = ms(dep, t), ms(nccl, t * g)
                    v_tep, v_car = ms(tep, t), ms(car, t)
                    for a, b, what in ((v_dep, v_nccl, f"nccl {nccl_name}"), (v_tep, v_car, "custom_allreduce")):
                        if not (a > 0 and abs(a - b) <= 1e-12 * abs(b)):
                            print(f"CHECK FAILED {hf_id} g={g} t={t} pre={pre}: MoEDispatch {a} != {what} {b}")
                            return 1
                    n_checked += 2
                    add(lab_dep, g, t, v_dep / 1e3, {"aic_message_elements": t * g * h})
                    add(lab_tep, g, t, v_tep / 1e3, {"aic_message_elements": t * h})
            ref = ops.NCCL("alltoall", 1, "alltoall", h * k, g, half)
            for t in TOKENS:
                add("nccl_alltoall_reference", g, t, ms(ref, t) / 1e3, {"aic_message_elements": t * k * h})
            if large_ep[str(g)].get("generation") == "trtllm_deepep_ll":
                for phase in ("dispatch", "combine"):
                    a2a = ops.MoEAllToAll(
                        f"generation_moe_{phase}",
                        1,
                        phase=phase,
                        comm_dtype="bfloat16",
                        comm_backend="trtllm_deepep_ll",
                        hidden_size=h,
                        topk=k,
                        num_experts=e,
                        moe_ep_size=g,
                        node_num=1,
                        sms=0,
                        attention_tp_size=1,
                    )
                    for t in TOKENS:
                        if t <= DEEPEP_LL_MAX_TOKENS:
                            add(f"deepep_ll_{phase}", g, t, ms(a2a, t) / 1e3)

    fits = {fam: fit_points([p for p in points if p["op"] in labels]) for fam, labels in FIT_FAMILIES.items()}
    fits = {fam: f for fam, f in fits.items() if f["n_points"]}
    headline = fits[HEADLINE]

    core_dir = os.path.dirname(os.path.abspath(aiconfigurator_core.__file__))
    ops.NCCL.load_data(db)  # binds db._nccl_data / _custom_allreduce_data (lazy) to read their file paths
    ops.CustomAllReduce.load_data(db)
    data_root = os.path.join(core_dir, "systems", db.system_spec["data_dir"])
    a2a_files = sorted(
        os.path.relpath(p, os.path.join(core_dir, "systems"))
        for p in glob.glob(os.path.join(data_root, "comm", BACKEND, "*", "moe_a2a_perf.parquet"))
    )
    out = {
        "source": (
            f"NVIDIA aiconfigurator {aic_version} (pip): latency its {SYSTEM} / {BACKEND} {version} profiled tables "
            f"({DATABASE_MODE} mode) assign to ONE MoE dispatch and ONE combine of one MoE layer (bf16 activations, "
            "decode, expert-parallel group of g GPUs in one NVLink node), and a fit of derive's all-to-all cost "
            "form to it"
        ),
        "generated_by": "python3 tools/aiconfigurator_alltoall.py",
        "aiconfigurator_version": aic_version,
        "system": SYSTEM,
        "backend": BACKEND,
        "database_version": version,
        "database_mode": DATABASE_MODE,
        "nccl_version": (db.system_spec.get("misc") or {}).get("nccl_version"),
        "link_bandwidth_bytes_per_s": LINK_BW,
        "how_costed": (
            "aiconfigurator emits two ops per MoE layer, moe_pre_dispatch and moe_post_dispatch (both "
            "MoEDispatch; the MoE model has no separate attention all-reduce), and on trtllm with sm_version != "
            "100 (H100 is sm 90) neither is an all-to-all and neither depends on top_k or the expert count. With "
            "attention TP > 1 (TEP: tp = g, moe_ep = g) both are the TRT-LLM custom all-reduce "
            "(custom_allreduce_perf.parquet) of tokens*hidden bf16 elements over g GPUs: the pre-dispatch is the "
            "attention-output all-reduce, the combine sums the experts' partial outputs. With attention DP "
            "(DEP: tp = 1, attention_dp = g, moe_ep = g) the dispatch is an NCCL all_gather and the combine an "
            "NCCL reduce_scatter (nccl_perf.parquet, NCCL "
            f"{(db.system_spec.get('misc') or {}).get('nccl_version')}) of tokens_per_gpu*g*hidden half elements "
            "over g GPUs (every GPU receives all g*tokens_per_gpu tokens, whatever top_k). The only all-to-all "
            "tables are the large-EP DeepEP ones (MoEAllToAll over moe_a2a_perf.parquet: trtllm_deepep_ht for "
            "context, trtllm_deepep_ll for generation, each with separate dispatch and combine rows, collected "
            "for EP 8 only, hidden 3072/4096/6144/7168, at TRT-LLM 1.3.0rc11); a Task sweep selects them only "
            "with attention DP > 1 where both phases are covered -- here DeepSeek-V3 at EP 8 (Qwen3-30B-A3B, "
            "hidden 2048, has no rows) -- while cli estimate keeps intra-node EP on the fused MoEDispatch path."
        ),
        "mapping": (
            "derive's cost is alpha + sent_bytes/(eta*BW_link), sent_bytes = (g-1)/g * tokens_per_gpu * top_k * "
            "hidden * 2. Every point carries that sent_bytes whatever aiconfigurator actually moves; the headline "
            "fit ('fit') is to the DEP ops (dispatch = all_gather, combine = reduce_scatter), the layout in which, "
            "as in derive's model, each GPU holds its own tokens_per_gpu tokens. Their real per-GPU traffic is "
            "(g-1)*tokens_per_gpu*hidden*2 bytes, i.e. g/top_k times derive's sent_bytes (equal at g = 8 = top_k, "
            "1/4 of it at g = 2), so the fitted eta absorbs that ratio and differs by group. For TEP points "
            "tokens_per_gpu is the (replicated) batch; a ring all-reduce moves 2*(g-1)/g*tokens*hidden*2 bytes, "
            "2/top_k of derive's sent_bytes. fits_by_op fits each op family the same way."
        ),
        "fit_method": (
            "weighted least squares minimising sum(((alpha + sent_bytes/(eta*BW)) - seconds)/seconds)^2 (i.e. "
            "relative residuals) with alpha >= 0 and 0 < eta <= 1, solved exactly (interior optimum, else the best "
            "point on a constraint edge); eta_at_bound / alpha_at_bound say when a constraint is active. "
            "median/max_rel_error = |fit - seconds|/seconds over the fitted points"
        ),
        "fit": headline,
        "fits_by_op": fits,
        "ops": OPS,
        "models": models_meta,
        "grid": {
            "groups": GROUPS,
            "tokens_per_gpu": TOKENS,
            "deepep_ll_max_tokens": DEEPEP_LL_MAX_TOKENS,
            "quant": "bf16 MoE activations (MoEQuantMode.bfloat16), half-precision comm (CommQuantMode.half)",
            "phase": "generation (decode) ops; the fused-path values do not depend on the phase (no CP)",
        },
        "tables": {
            "nccl": os.path.relpath(db._nccl_data.filepath, os.path.join(core_dir, "systems")),
            "custom_allreduce": os.path.relpath(db._custom_allreduce_data.filepath, os.path.join(core_dir, "systems")),
            "moe_a2a_files_present": a2a_files,
        },
        "crosscheck": (
            f"{n_checked} fused-path MoEDispatch values equal to the NCCL all_gather / reduce_scatter or "
            "CustomAllReduce op they are claimed to be (relative difference <= 1e-12)"
        ),
        "meaning": {
            "group": "expert-parallel group size g (GPUs, one node)",
            "tokens_per_gpu": "decode tokens on each GPU (DEP/large-EP/reference: its own; TEP: the replicated batch)",
            "sent_bytes": "derive's all-to-all payload (g-1)/g * tokens_per_gpu * top_k * hidden * 2 bytes",
            "seconds": "aiconfigurator's latency for ONE such op of ONE MoE layer (scale_factor 1)",
            "op": "which aiconfigurator op / layout (see 'ops')",
            "aic_message_elements": "message size aiconfigurator looks up in its table (elements, 2 bytes each)",
        },
    }
    points.sort(key=lambda p: (p["op"], p["model"], p["group"], p["tokens_per_gpu"]))
    out["points"] = points
    shared.write_json(out, args.out)
    for fam, f in fits.items():
        groups = "  ".join(
            f"g{g}: a={v['alpha_s'] * 1e6:.2f}us eta={v['eta']:.3g} med={v['median_rel_error']:.2%}"
            for g, v in f["by_group"].items()
        )
        print(
            f"{fam:24s} alpha={f['alpha_s'] * 1e6:6.2f}us eta={f['eta']:.3g} "
            f"med={f['median_rel_error']:.2%} max={f['max_rel_error']:.2%} | {groups}"
        )
    print(f"{len(points)} points -> {args.out} in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
