"""What NVIDIA aiconfigurator 0.12 says the fused MoE dispatch / combine costs on H100, H200, B200, GB200.

Writes ``benchmarks/data/aiconfigurator-0.12-fused-dispatch.json``: the latency aiconfigurator's profiled
NCCL tables (``comm/nccl/<nccl_version>/nccl_perf.parquet``, trtllm database 1.3.0rc20, SILICON mode)
assign to ONE all_gather and ONE reduce_scatter of the fused MoE path under attention data parallelism
(moe_tp*moe_ep = attention_dp = g GPUs in one NVLink node, attention tp = 1), for h100_sxm, h200_sxm,
b200_sxm and gb200, groups g = 2, 4, 8 (gb200: 2, 4 -- its NCCL table has no 8-GPU rows, its node is 4
GPUs), hidden 2048 / 4096 / 7168, 1..16384 tokens per GPU (decode and prompt-pass sizes), each value
evaluated through aiconfigurator's own ``NCCL`` op (the Rust table lookup with its interpolation and
extrapolation, exactly what a sweep uses) and cross-checked equal to its ``MoEDispatch`` op for a real
MoE layout of that hidden size; and relative least-squares fits of derive's collective form
``seconds = alpha + sent_bytes / (eta * BW_link)`` per system, op (all_gather-bf16, all_gather-fp8 on
sm 100 only, reduce_scatter-bf16) and token range (all, decode <= 512, prompt >= 1024), with
sent_bytes = (g-1) * tokens_per_gpu * hidden * 2 (nominal bf16 bytes: every GPU ends up with every token,
so for fp8 eta absorbs the halving) and, alongside, the true wire bytes (g-1)*tokens_per_gpu*hidden*
wire_bytes; BW_link = 450e9 B/s (H100/H200) or 900e9 B/s (B200/GB200), one way.  aiconfigurator is
never a product dependency; run this in a throw-away venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_fused_dispatch.py

Options: ``--out PATH`` (default benchmarks/data/aiconfigurator-0.12-fused-dispatch.json).

How aiconfigurator 0.12.0 costs the fused path (see tools/aiconfigurator_alltoall.py and the 'rules' of
benchmarks/data/aiconfigurator-0.12-deepep.json): ``MoEDispatch.query`` (compiled Rust,
``operators/moe_dispatch.rs``) for trtllm with attention_tp = moe_tp*moe_ep/attention_dp = 1 and
attention_dp = g > 1 costs the pre-dispatch as ``NCCL("all_gather", hidden, g).query(tokens*g)`` and the
post-dispatch as ``NCCL("reduce_scatter", hidden, g).query(tokens*g)`` (message = the gathered buffer,
tokens*g*hidden half elements, nccl-tests convention), no top_k factor.  On sm 100 (b200_sxm, gb200)
with an fp8 / fp8_block MoE quant the all_gather is sent in fp8: aiconfigurator queries the half table
at tokens*g*hidden/2 elements (= tokens*g*hidden bytes), i.e. ``NCCL("all_gather", hidden//2, g,
half)``; on sm 90 it is bf16 whatever the quant; the reduce_scatter is bf16 everywhere.  (The table's
'int8' rows are not what MoEDispatch uses; ``CommQuantMode.fp8`` has no NCCL rows at all.)

API used (aiconfigurator 0.12.0):

    db = perf_database.get_database_view(system, "trtllm", <latest>, database_mode="SILICON", ...)
    operations.NCCL(name, 1, "all_gather" | "reduce_scatter", elems_per_token, g,
                    CommQuantMode.half)._engine_query(db, x=tokens_per_gpu*g)      # ms
    operations.MoEDispatch(name, 1, hidden, topk, experts, moe_tp=1, moe_ep=g, attention_dp=g,
                           pre_dispatch, quant_mode=MoEQuantMode.bfloat16 | fp8_block, backend="trtllm",
                           is_context=...)._engine_query(db, x=tokens_per_gpu)     # cross-check, ms
    operations.NCCL.load_data(db); db._nccl_data[CommQuantMode.half][op][g][message]["latency"]  # raw rows

Checks (the script fails otherwise): every point's NCCL value equals the MoEDispatch pre-/post-dispatch
value for bf16 and fp8_block MoE quant, generation and context phase (1e-12 relative); every point whose
message is a table row equals that row (1e-9 relative).

Fit: weighted (relative) least squares, minimising sum(((alpha + b*sent) - t) / t)^2 over alpha >= 0,
b = 1/(eta*BW_link) > 0 (eta > 0, NOT capped at 1: with nominal bytes an fp8 all_gather's eta may exceed
1); exact for two parameters (the interior optimum, else the alpha = 0 edge).

Imports only aiconfigurator and the standard library.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import argparse
import importlib.metadata
import os
import statistics
import sys
import time

import aiconfigurator_common as shared

SYSTEMS = ["h100_sxm", "h200_sxm", "b200_sxm", "gb200"]
BACKEND = "trtllm"
DATABASE_MODE = "SILICON"
LINK_BW = {"h100_sxm": 450e9, "h200_sxm": 450e9, "b200_sxm": 900e9, "gb200": 900e9}  # one-way NVLink / GPU
NOMINAL_BYTES = 2  # bf16, derive's activation bytes
GROUPS = [2, 4, 8]  # intersected with the groups each system's NCCL table holds
HIDDENS = [2048, 4096, 7168]
DECODE_MAX = 512
PROMPT_MIN = 1024
TOKENS = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512] + [1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384]
RANGES = {
    "all": lambda t: True,
    "decode": lambda t: t <= DECODE_MAX,
    "prompt": lambda t: t >= PROMPT_MIN,
}
ONE_LINE_TOLERANCE = 0.15  # a pooled all-range fit within this max relative error serves decode and prompt
# a real MoE layout per hidden size, for the MoEDispatch cross-check (hidden -> hf id, top_k, experts)
MOE_LAYOUTS = {
    2048: ("Qwen/Qwen3-30B-A3B", 8, 128),
    4096: ("Qwen/Qwen3-235B-A22B", 8, 128),
    7168: ("deepseek-ai/DeepSeek-V3", 8, 256),
}
# derive's fit before formulas/fused_dispatch.json (one H100 NCCL all-to-all fit for every accelerator), priced at
# each system's BW_link
DERIVE_CURRENT = {"alpha_s": 1.16226e-05, "eta": 0.540477}
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(_ROOT, "benchmarks", "data", "aiconfigurator-0.12-fused-dispatch.json")

OPS = {
    "all_gather_bf16": "MoEDispatch pre-dispatch (bf16 MoE quant anywhere; any quant on sm 90): NCCL all_gather "
    "over g GPUs of tokens_per_gpu*g*hidden half elements (2 bytes a value on the wire)",
    "all_gather_fp8": "MoEDispatch pre-dispatch on sm 100 with fp8 / fp8_block MoE quant: NCCL all_gather over g "
    "GPUs of tokens_per_gpu*g*hidden fp8 values, looked up as tokens_per_gpu*g*hidden/2 half elements (1 byte a "
    "value on the wire)",
    "reduce_scatter_bf16": "MoEDispatch post-dispatch (any quant, any sm): NCCL reduce_scatter over g GPUs of "
    "tokens_per_gpu*g*hidden half elements (the buffer before scattering)",
}
WIRE_BYTES = {"all_gather_bf16": 2, "all_gather_fp8": 1, "reduce_scatter_bf16": 2}


_g = shared.sig


def _int(x: float):
    return int(x) if float(x).is_integer() else x


def token_range(t: int) -> str:
    return "decode" if t <= DECODE_MAX else "prompt" if t >= PROMPT_MIN else "between"


def fit_alpha_eta(xs: list[float], ts: list[float], bw: float) -> dict:
    """Relative least squares of t = alpha + b*x, alpha >= 0, b > 0 (eta = 1/(b*bw) > 0, uncapped)."""
    return shared.fit_alpha_eta(xs, ts, bw)


def fit_points(pts: list[dict], key: str, bw: float) -> dict:
    """Pooled fit over (g, hidden), the pooled line's error per g, and a separate fit per g and per hidden."""
    out = fit_alpha_eta([p[key] for p in pts], [p["seconds"] for p in pts], bw)
    a, b = out["alpha_s"], 1.0 / (out["eta"] * bw)
    pooled_by_group, by_group, by_hidden = {}, {}, {}
    for g in sorted({p["group"] for p in pts}):
        sub = [p for p in pts if p["group"] == g]
        rel = [abs(a + b * p[key] - p["seconds"]) / p["seconds"] for p in sub]
        pooled_by_group[str(g)] = {
            "median_rel_error": _g(statistics.median(rel), 4),
            "max_rel_error": _g(max(rel), 4),
            "n_points": len(sub),
        }
        by_group[str(g)] = fit_alpha_eta([p[key] for p in sub], [p["seconds"] for p in sub], bw)
    for h in sorted({p["hidden"] for p in pts}):
        sub = [p for p in pts if p["hidden"] == h]
        by_hidden[str(h)] = fit_alpha_eta([p[key] for p in sub], [p["seconds"] for p in sub], bw)
    out["pooled_line_error_by_group"] = pooled_by_group
    out["by_group"] = by_group
    out["by_hidden"] = by_hidden
    return out


def model_error(pts: list[dict], alpha: float, eta: float, bw: float, key: str = "sent_bytes_nominal") -> dict:
    """How a given (alpha, eta) line prices the points: relative error and model/aiconfigurator ratio."""
    ratios = [(alpha + p[key] / (eta * bw)) / p["seconds"] for p in pts]
    rel = [abs(r - 1.0) for r in ratios]
    out = {
        "median_rel_error": _g(statistics.median(rel), 4),
        "max_rel_error": _g(max(rel), 4),
        "median_ratio_model_over_aic": _g(statistics.median(ratios), 4),
        "n_points": len(pts),
    }
    for rng in ("decode", "prompt"):
        sub = [r for r, p in zip(ratios, pts, strict=True) if token_range(p["tokens_per_gpu"]) == rng]
        if sub:
            out[f"median_ratio_model_over_aic_{rng}"] = _g(statistics.median(sub), 4)
    return out


def system_points(system: str) -> tuple[dict, list[dict], int]:
    import aiconfigurator_core
    from aiconfigurator.sdk import common
    from aiconfigurator.sdk import operations as ops
    from aiconfigurator.sdk.perf_database import get_database_view, get_latest_database_version

    version = get_latest_database_version(system=system, backend=BACKEND)
    db = get_database_view(
        system, BACKEND, version, allow_missing_data=False, database_mode=DATABASE_MODE, transfer_policy=None
    )
    node = db.system_spec["node"]
    assert float(node["intra_node_bw"]) == LINK_BW[system], (system, node)
    sm = int(db.system_spec["gpu"]["sm_version"])
    half = common.CommQuantMode.half
    ops.NCCL.load_data(db)
    table = db._nccl_data[half]
    groups = [g for g in GROUPS if g in table["all_gather"] and g in table["reduce_scatter"]]
    op_names = ["all_gather_bf16"] + (["all_gather_fp8"] if sm == 100 else []) + ["reduce_scatter_bf16"]
    core_systems = os.path.join(os.path.dirname(os.path.abspath(aiconfigurator_core.__file__)), "systems")
    meta = {
        "database_version": version,
        "sm_version": sm,
        "gpu": db.system_spec["gpu"].get("name") or system,
        "num_gpus_per_node": int(node["num_gpus_per_node"]),
        "nccl_version": (db.system_spec.get("misc") or {}).get("nccl_version"),
        "nccl_table": os.path.relpath(db._nccl_data.filepath, core_systems),
        "link_bandwidth_bytes_per_s": LINK_BW[system],
        "groups": groups,
        "ops": op_names,
        "table_max_message_elements": {
            f"{op}/{g}": max(table[op][g]) for op in ("all_gather", "reduce_scatter") for g in groups
        },
    }

    def ms(op, x: int) -> float:
        return float(op._engine_query(db, x=int(x)))

    points, n_checked = [], 0
    for h in HIDDENS:
        _, k, e = MOE_LAYOUTS[h]
        for g in groups:
            nccl = {
                "all_gather_bf16": (ops.NCCL("all_gather", 1, "all_gather", h, g, half), "all_gather", h),
                "all_gather_fp8": (ops.NCCL("all_gather", 1, "all_gather", h // 2, g, half), "all_gather", h // 2),
                "reduce_scatter_bf16": (
                    ops.NCCL("reduce_scatter", 1, "reduce_scatter", h, g, half),
                    "reduce_scatter",
                    h,
                ),
            }
            # MoEDispatch (DEP: moe_tp 1, moe_ep g, attention_dp g) -> the op label it must equal
            dispatch = []
            for q in (common.MoEQuantMode.bfloat16, common.MoEQuantMode.fp8_block):
                for is_context in (False, True):
                    phase = "context" if is_context else "generation"
                    for pre in (True, False):
                        md = ops.MoEDispatch(
                            f"{phase}_moe_{'pre' if pre else 'post'}_dispatch",
                            1, h, k, e, 1, g, g, pre, quant_mode=q, backend=BACKEND, is_context=is_context,
                        )  # fmt: skip
                        if not pre:
                            want = "reduce_scatter_bf16"
                        elif sm == 100 and q == common.MoEQuantMode.fp8_block:
                            want = "all_gather_fp8"
                        else:
                            want = "all_gather_bf16"
                        dispatch.append((md, want, f"{q.name}/{phase}/{'pre' if pre else 'post'}"))
            for t in TOKENS:
                vals = {}
                for label in op_names:
                    op, tab_op, elems = nccl[label]
                    v = ms(op, t * g)
                    msg = t * g * elems
                    row = (table[tab_op][g].get(msg) or {}).get("latency")
                    if row is not None:
                        if not abs(v - float(row)) <= 1e-9 * float(row):
                            raise SystemExit(f"TABLE CHECK FAILED {system} {label} g={g} h={h} t={t}: {v} != {row}")
                        n_checked += 1
                    vals[label] = v
                    points.append(
                        {
                            "system": system,
                            "op": label,
                            "wire_bytes_per_value": WIRE_BYTES[label],
                            "group": g,
                            "hidden": h,
                            "tokens_per_gpu": t,
                            "range": token_range(t),
                            "aic_message_elements": msg,
                            "table_row": row is not None,
                            "beyond_table": msg > meta["table_max_message_elements"][f"{tab_op}/{g}"],
                            "sent_bytes_nominal": _int((g - 1) * t * h * NOMINAL_BYTES),
                            "sent_bytes_wire": _int((g - 1) * t * h * WIRE_BYTES[label]),
                            "seconds": _g(v / 1e3),
                        }
                    )
                for md, want, what in dispatch:
                    a, b = ms(md, t), vals[want]
                    if not (a > 0 and abs(a - b) <= 1e-12 * abs(b)):
                        raise SystemExit(
                            f"CHECK FAILED {system} g={g} h={h} t={t} MoEDispatch {what}: {a} != {want} {b}"
                        )
                    n_checked += 1
    return meta, points, n_checked


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    shared.quiet()
    t0 = time.time()
    aic_version = importlib.metadata.version("aiconfigurator")

    systems, points, n_checked = {}, [], 0
    for system in SYSTEMS:
        meta, pts, n = system_points(system)
        systems[system] = meta
        points += pts
        n_checked += n

    fits, verdicts, derive_current, summary = {}, {}, {}, []
    for system, meta in systems.items():
        bw = meta["link_bandwidth_bytes_per_s"]
        for op in meta["ops"]:
            pts = [p for p in points if p["system"] == system and p["op"] == op]
            per = {}
            for rng, keep in RANGES.items():
                sub = [p for p in pts if keep(p["tokens_per_gpu"])]
                per[rng] = {
                    "nominal_bytes": fit_points(sub, "sent_bytes_nominal", bw),
                    "wire_bytes": fit_points(sub, "sent_bytes_wire", bw),
                }
            fits.setdefault(system, {})[op] = per
            whole = per["all"]["nominal_bytes"]
            verdicts.setdefault(system, {})[op] = {
                "one_line_serves_decode_and_prompt": whole["max_rel_error"] <= ONE_LINE_TOLERANCE,
                "all_max_rel_error": whole["max_rel_error"],
                "decode_max_rel_error": per["decode"]["nominal_bytes"]["max_rel_error"],
                "prompt_max_rel_error": per["prompt"]["nominal_bytes"]["max_rel_error"],
            }
            derive_current.setdefault(system, {})[op] = model_error(
                pts, DERIVE_CURRENT["alpha_s"], DERIVE_CURRENT["eta"], bw
            )
            for rng in RANGES:
                for defn in ("nominal_bytes", "wire_bytes"):
                    if defn == "wire_bytes" and WIRE_BYTES[op] == NOMINAL_BYTES:
                        continue  # identical to nominal
                    f = per[rng][defn]
                    summary.append(
                        {
                            "system": system,
                            "op": op,
                            "range": rng,
                            "bytes": defn,
                            "alpha_us": _g(f["alpha_s"] * 1e6, 4),
                            "eta": _g(f["eta"], 4),
                            "median_rel_error": f["median_rel_error"],
                            "max_rel_error": f["max_rel_error"],
                            "n_points": f["n_points"],
                        }
                    )

    out = {
        "source": (
            f"NVIDIA aiconfigurator {aic_version} (pip): latency its {BACKEND} profiled NCCL tables ({DATABASE_MODE} "
            "mode) assign, through its own NCCL op (checked equal to its MoEDispatch op), to ONE all_gather and ONE "
            "reduce_scatter of the fused MoE dispatch / combine under attention data parallelism (moe_ep = "
            "attention_dp = g in one NVLink node, attention tp = 1), on h100_sxm, h200_sxm, b200_sxm and gb200, "
            "1..16384 tokens per GPU; and fits of derive's alpha + sent_bytes/(eta*BW_link) form to it"
        ),
        "generated_by": "python3 tools/aiconfigurator_fused_dispatch.py",
        "aiconfigurator_version": aic_version,
        "backend": BACKEND,
        "database_mode": DATABASE_MODE,
        "systems": systems,
        "ops": OPS,
        "how_costed": (
            "MoEDispatch (compiled Rust operators/moe_dispatch.rs) for trtllm with attention_tp = "
            "moe_tp*moe_ep/attention_dp = 1 and attention_dp = g > 1: pre-dispatch = NCCL all_gather, "
            "post-dispatch = NCCL reduce_scatter, both of the gathered buffer tokens_per_gpu*g*hidden values over g "
            "GPUs (nccl_perf.parquet, half rows, message in elements), no top_k or expert-count factor. The "
            "all_gather is fp8 (looked up as half the elements) on sm 100 when the MoE quant is fp8 / fp8_block, "
            "bf16 otherwise and always on sm 90; the reduce_scatter is bf16 everywhere. gb200's NCCL table holds "
            "only 2- and 4-GPU rows (its node is 4 GPUs), so it has no g = 8 here. Messages above a table's largest "
            "row (beyond_table) are aiconfigurator's own extrapolation."
        ),
        "mapping": (
            "derive prices each op as alpha + sent_bytes/(eta*BW_link). In this layout every GPU receives every "
            "other GPU's tokens (no whole-expert locality), so sent_bytes = (g-1)*tokens_per_gpu*hidden*2 "
            "(sent_bytes_nominal: 2 bytes a value for every dtype, the fp8 halving lands in eta); "
            "sent_bytes_wire = (g-1)*tokens_per_gpu*hidden*wire_bytes_per_value is also fitted. BW_link = one-way "
            "NVLink per GPU, 450e9 B/s h100/h200, 900e9 B/s b200/gb200. fits.<system>.<op>.<range>.<bytes>: range "
            f"'all' (every token count), 'decode' (<= {DECODE_MAX} tokens/GPU), 'prompt' (>= {PROMPT_MIN}); a "
            "pooled fit over g and hidden, with pooled_line_error_by_group (that one line's error per g), by_group "
            "and by_hidden (separate fits)."
        ),
        "fit_method": (
            "weighted least squares minimising sum(((alpha + sent_bytes/(eta*BW_link)) - seconds)/seconds)^2 "
            "(relative residuals) with alpha >= 0 and eta > 0 (uncapped), solved exactly (interior optimum, else the "
            "alpha = 0 edge); median/max_rel_error = |fit - seconds|/seconds over the fitted points"
        ),
        "one_line_tolerance": ONE_LINE_TOLERANCE,
        "one_line_verdict": verdicts,
        "derive_current": {
            "what": (
                "derive's collective constants before formulas/fused_dispatch.json (alpha 11.6226 us, eta 0.540477, "
                "an H100 NCCL all-to-all fit) applied at each system's BW_link to sent_bytes_nominal, against "
                "aiconfigurator's value; ratio > 1 = derive overprices"
            ),
            **DERIVE_CURRENT,
            "by_system_op": derive_current,
        },
        "fits": fits,
        "summary": summary,
        "grid": {
            "groups": GROUPS,
            "hiddens": HIDDENS,
            "tokens_per_gpu": TOKENS,
            "moe_layouts_for_crosscheck": {str(h): list(v) for h, v in MOE_LAYOUTS.items()},
        },
        "crosscheck": (
            f"{n_checked} checks passed: each point's NCCL value equals MoEDispatch (moe_tp 1, moe_ep g, "
            "attention_dp g, the layout of MOE_LAYOUTS[hidden]) pre- and post-dispatch for bf16 and fp8_block MoE "
            "quant in generation and context phase (1e-12 relative), and every point whose message is a table "
            "row equals that row (1e-9 relative)"
        ),
        "meaning": {
            "system": "aiconfigurator system",
            "op": "which collective and wire dtype (see 'ops')",
            "wire_bytes_per_value": "bytes a hidden value takes on the wire (2 bf16, 1 fp8)",
            "group": "g: attention-DP = expert-parallel group size (GPUs, one NVLink node)",
            "hidden": "hidden size",
            "tokens_per_gpu": "tokens each GPU holds going in (decode batch per GPU, or prompt tokens per GPU)",
            "range": f"decode (<= {DECODE_MAX}), prompt (>= {PROMPT_MIN}) or between",
            "aic_message_elements": "message aiconfigurator looks up in its NCCL table (half elements)",
            "table_row": "the message is exactly a table row (no interpolation)",
            "beyond_table": "the message exceeds the table's largest row (aiconfigurator extrapolates)",
            "sent_bytes_nominal": "(g-1)*tokens_per_gpu*hidden*2: derive's sent bytes, bf16 nominal",
            "sent_bytes_wire": "(g-1)*tokens_per_gpu*hidden*wire_bytes_per_value",
            "seconds": "aiconfigurator's latency for ONE such op of ONE MoE layer (scale_factor 1)",
            "summary": "flat table of fits (alpha_us, eta) per system / op / range / bytes definition",
        },
        "runtime_s": None,
    }
    points.sort(key=lambda p: (p["system"], p["op"], p["group"], p["hidden"], p["tokens_per_gpu"]))
    out["points"] = points
    out["runtime_s"] = round(time.time() - t0, 1)
    shared.write_json(out, args.out, row_keys=("points", "summary"))

    print(f"{'system':9s} {'op':20s} {'range':7s} {'bytes':8s} {'alpha_us':>8s} {'eta':>7s} {'med':>7s} {'max':>7s}")
    for r in summary:
        print(
            f"{r['system']:9s} {r['op']:20s} {r['range']:7s} {r['bytes'].split('_')[0]:8s} {r['alpha_us']:8.2f} "
            f"{r['eta']:7.3f} {r['median_rel_error']:7.2%} {r['max_rel_error']:7.2%}"
        )
    for system, per in fits.items():
        for op, f in per.items():
            pg = "  ".join(
                f"g{g}: med={v['median_rel_error']:.1%} max={v['max_rel_error']:.1%}"
                for g, v in f["all"]["nominal_bytes"]["pooled_line_error_by_group"].items()
            )
            dc = derive_current[system][op]
            print(
                f"{system:9s} {op:20s} pooled line per g: {pg} | derive-now ratio "
                f"{dc['median_ratio_model_over_aic']:.2f} (dec {dc.get('median_ratio_model_over_aic_decode', 0):.2f}, "
                f"prm {dc.get('median_ratio_model_over_aic_prompt', 0):.2f})"
            )
    print(f"{len(points)} points, {n_checked} checks -> {args.out} in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
