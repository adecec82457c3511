"""Fit the expert-parallel imbalance of formulas/layout.py to aiconfigurator's profiled MoE kernels.

aiconfigurator 0.12 profiles each MoE kernel shape twice per routing: 'balanced' (every expert the same tokens)
and 'power_law_1.2' (the skew it assumes for MoE models outside DeepSeek's family). Their latency ratio at many
tokens, where the grouped GEMMs are compute-bound, is how much longer the busiest expert rank works. This script
reads the H100 TensorRT-LLM 1.3.0rc20 table (bf16) from an unpacked aiconfigurator-core 0.12 wheel and fits c_pop
in I = 1 + c_pop·sqrt(2·e·ln(e)/E), printing the fit and its error by shape.

    python3 tools/aiconfigurator_imbalance.py PATH/aiconfigurator_core/systems/data/h100_sxm/moe/trtllm/1.3.0rc20
"""

from __future__ import annotations

import collections
import math
import statistics
import sys
from pathlib import Path

MIN_TOKENS = 4096  # compute-bound: the ratio is the busiest rank's share, not fewer experts read


def imbalance(c_pop: float, experts: int, ep: int) -> float:
    return 1 + c_pop * math.sqrt(2 * ep * math.log(ep) / experts)


def main() -> None:
    import pyarrow.parquet as pq

    rows = pq.read_table(Path(sys.argv[1]) / "moe_perf.parquet").to_pylist()
    latency: dict[tuple, dict[str, float]] = collections.defaultdict(dict)
    for r in rows:
        if r["moe_dtype"] == "bfloat16":
            shape = (r["topk"], r["num_experts"], r["hidden_size"], r["inter_size"], r["moe_tp_size"])
            latency[(*shape, r["moe_ep_size"], r["num_tokens"])][r["distribution"]] = r["latency"]
    points = [
        (k, experts, ep, v["power_law_1.2"] / v["balanced"])
        for (k, experts, _h, _i, _tp, ep, tokens), v in latency.items()
        if ep > 1 and tokens >= MIN_TOKENS and {"balanced", "power_law_1.2"} <= v.keys()
    ]

    def median_error(c_pop: float) -> float:
        return statistics.median(abs(math.log(imbalance(c_pop, e_, ep) / r)) for _, e_, ep, r in points)

    c_pop = min((c / 100 for c in range(50, 400)), key=median_error)
    print(
        f"{len(points)} shapes with ep > 1 and at least {MIN_TOKENS} tokens: c_pop = {c_pop:.2f}, "
        f"median |ln(model/profiled)| {median_error(c_pop):.3f}"
    )
    for k, experts in sorted({(k, e_) for k, e_, _, _ in points}):
        ratios = sorted(imbalance(c_pop, e_, ep) / r for kk, e_, ep, r in points if (kk, e_) == (k, experts))
        print(
            f"  k={k:>2} E={experts:>3}: {len(ratios):>3} shapes, model/profiled median {statistics.median(ratios):.2f}"
        )


if __name__ == "__main__":
    main()
