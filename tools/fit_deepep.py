"""Fit derive's wide expert-parallel dispatch (DeepEP) to aiconfigurator 0.12's DeepEP tables.

Reads benchmarks/data/aiconfigurator-0.12-deepep.json (tools/aiconfigurator_deepep.py, run in aiconfigurator's
own venv) and writes formulas/deepep.json: per accelerator and phase (low-latency kernels for decode steps,
high-throughput kernels for prompt passes), alpha and eta of one MoE layer's dispatch plus combine,

    seconds = alpha + Y / (eta * BW_link),   Y = (g-1)/g * c * T * h * b_a,

in derive's own terms (formulas/layout.py's all-to-all bytes at whole experts: T tokens a GPU, top-k k, hidden h,
b_a = 2 bytes a value; g = the table's EP, the GPUs of one node), where a token goes c times: the low-latency
kernels send one copy an expert, c = min(k, g); the high-throughput ones one a destination GPU, the expected
distinct GPUs of k experts placed at random, c = g(1 - (1 - 1/g)^k). The rows are the wire dtypes of an fp8 checkpoint
(DeepSeek-V3, Kimi K2: fp8 on the low-latency path, bf16 on the high-throughput one), hidden 7168, top-k 6 and 8,
256 and 384 experts, within the profiled token range; eta absorbs what the wire sends against derive's bytes.
Relative least squares, solved in closed form over a grid of alpha (the fitted eta for each alpha is linear).

    python3 tools/fit_deepep.py
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "aiconfigurator-0.12-deepep.json"
OUT = ROOT / "formulas" / "deepep.json"
GPUS = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200", "gb200": "gb200"}
WIRE = {"ll": "fp8", "ht": "bfloat16"}  # what an fp8 checkpoint sends on each path
HIDDEN, ACTIVATION_BYTES = 7168, 2
PROFILED_LL_TOKENS = 256  # past it aiconfigurator scales the last row in proportion


def _rows(points: list[dict], system: str, path: str) -> list[tuple[float, float]]:
    """(derive's sent bytes, seconds of one dispatch plus one combine) for one system and path."""
    both: dict[tuple, dict[str, float]] = defaultdict(dict)
    for p in points:
        if p["system"] != system or p["path"] != path or p["comm_dtype"] != WIRE[path] or p["hidden"] != HIDDEN:
            continue
        if path == "ll" and p["tokens_per_gpu"] > PROFILED_LL_TOKENS:
            continue
        key = (p["top_k"], p["num_experts"], p["ep"], p["tokens_per_gpu"])
        both[key][p["op"]] = p["seconds"]
    rows = []
    for (k, _experts, g, tokens), ops in sorted(both.items()):
        if {"dispatch", "combine"} <= ops.keys():
            copies = min(k, g) if path == "ll" else g * (1 - (1 - 1 / g) ** k)
            sent = (g - 1) / g * copies * tokens * HIDDEN * ACTIVATION_BYTES
            rows.append((sent, ops["dispatch"] + ops["combine"]))
    return rows


def fit_line(rows: list[tuple[float, float]], bandwidth: float) -> dict[str, float]:
    """alpha and eta minimising sum(((alpha + x/(eta*BW)) - t)/t)^2, alpha on a fine grid, 1/eta exact for each."""
    x = np.array([r[0] for r in rows]) / bandwidth
    t = np.array([r[1] for r in rows])
    best = None
    for alpha in np.linspace(0.0, float(t.min()), 2001):
        # residual r_i = (alpha + c*x_i)/t_i - 1, linear in c = 1/eta: c = sum((1 - alpha/t)(x/t)) / sum((x/t)^2)
        u, v = x / t, 1 - alpha / t
        c = float((u * v).sum() / (u * u).sum())
        if c <= 0:
            continue
        loss = float((((alpha + c * x) / t - 1) ** 2).sum())
        if best is None or loss < best[0]:
            best = (loss, alpha, c)
    assert best is not None
    _, alpha, c = best
    errors = np.abs((alpha + c * x) / t - 1)
    return {
        "alpha_s": float(f"{alpha:.6g}"),
        "eta": float(f"{1 / c:.6g}"),
        "median_rel_error": round(float(statistics.median(errors)), 4),
        "max_rel_error": round(float(errors.max()), 4),
        "points": len(rows),
    }


def main() -> None:
    data = json.loads(DATA.read_text())
    fits: dict[str, dict[str, dict[str, float]]] = {}
    for system, gpu in GPUS.items():
        bandwidth = data["fits"][system]["ll"]["link_bandwidth_bytes_per_s"]
        fits[gpu] = {
            phase: fit_line(_rows(data["points"], system, path), bandwidth)
            for phase, path in (("decode", "ll"), ("prefill", "ht"))
        }
        fits[gpu]["link_bytes_per_s"] = bandwidth  # type: ignore[assignment]
    out = {
        "source": "aiconfigurator 0.12.0's DeepEP tables (trtllm moe_a2a_perf, collected at TensorRT-LLM 1.3.0rc11 at "
        "EP = one node's GPUs: 8 on HGX H100/H200/B200, 4 on GB200), through its own MoEAllToAll op",
        "data": "benchmarks/data/aiconfigurator-0.12-deepep.json (tools/aiconfigurator_deepep.py)",
        "generated_by": "python3 tools/fit_deepep.py",
        "form": "one MoE layer's dispatch + combine = alpha + Y/(eta*BW_link), Y = (g-1)/g*c*T*h*2 bytes, c = min(k,g) "
        "copies a token (decode) or g(1-(1-1/g)^k) destination GPUs (prefill); "
        "decode: low-latency kernels (fp8 wire, rows up to 256 tokens a GPU); prefill: high-throughput kernels "
        "(bf16 wire); hidden 7168, top-k 6 and 8, 256 and 384 experts",
        "when": "aiconfigurator (Task._resolve_moe_comm_backend) and TensorRT-LLM's wide-EP path take DeepEP with "
        "whole experts (moe_tp = 1) under attention data parallelism at EP of at least one node's GPUs; below "
        "that MoE runs the fused all-gather and reduce-scatter (formulas/fused_dispatch.json)",
        "accelerators": fits,
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    for gpu, fit in fits.items():
        print(gpu, {k: v for k, v in fit.items()})


if __name__ == "__main__":
    main()
