"""Sweep throughput and peak memory for the TTFT/TPOT predictor at 10^4, 10^6 and 10^7 points.

Each size runs in a fresh process (so peak memory is its own), evaluating the
grid chunk by chunk without writing it out. The reference in the same run is
the same compiled predictor evaluated one configuration at a time in Python.
Targets (issue 6): at least 3 million points per second on one core, peak memory
under 500 MB at 10^7 points, time linear and memory flat in the grid size.

    python3 benchmarks/sweep_throughput.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

# Numeric axes whose product is the size; one model, one accelerator, one dtype.
GRIDS = {
    10**4: {"batch": (1, 100), "prompt": (1, 100)},
    10**6: {"batch": (1, 1000), "prompt": (1, 1000)},
    10**7: {"batch": (1, 1000), "prompt": (1, 10000)},
}


def child(size: int) -> dict[str, float]:
    import formulas  # noqa: F401
    from derive.sweep import Grid, compile_combination, evaluate_compiled, predict_target

    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    numeric = {axis: list(range(lo, hi + 1)) for axis, (lo, hi) in GRIDS[size].items()}
    grid = Grid(
        {"model": ["llama3-70b"], "gpu": ["h100"], "dtype": ["bf16"]},
        numeric,
        {"tp": 4, "output": 256, "context": 2048},
    )
    start = time.perf_counter()
    compiled = compile_combination(predict_target(), "llama3-70b", "h100", "bf16", tuple(numeric), grid.defaults)
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    points = sum(len(columns["fits"]) for columns in evaluate_compiled(compiled, grid))
    evaluate_s = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "points": points,
        "compile_s": compile_s,
        "total_s": compile_s + evaluate_s,
        "evaluate_s": evaluate_s,
        "points_per_s": points / evaluate_s,
        "peak_mb": peak,
        "baseline_mb": baseline,
    }


def scalar_reference(count: int = 20_000) -> float:
    """The same compiled predictor, one configuration per call: configurations per second."""
    import formulas  # noqa: F401
    from derive.sweep import compile_combination, predict_target

    compiled = compile_combination(
        predict_target(), "llama3-70b", "h100", "bf16", ("batch", "prompt"), {"tp": 4, "output": 256}
    )
    start = time.perf_counter()
    for i in range(count):
        batch, prompt = float(1 + i % 64), float(128 + i % 4000)
        for function in compiled.functions.values():
            function(batch, prompt)
        compiled.fits(batch, prompt)
    return count / (time.perf_counter() - start)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(int(sys.argv[2]))))
        return
    print("sweep of the TTFT/TPOT predictor (llama3-70b, h100, bf16, tp 4; batch x prompt), one process per size")
    print(f"{'points':>12} {'points/s':>14} {'total s':>9} {'compile s':>10} {'peak MB':>9} {'after import MB':>16}")
    results = {}
    for size in GRIDS:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(size)], capture_output=True, text=True, check=True
        )
        r = json.loads(out.stdout)
        results[size] = r
        print(
            f"{r['points']:>12,} {r['points_per_s']:>14,.0f} {r['total_s']:>9.2f} {r['compile_s']:>10.2f} "
            f"{r['peak_mb']:>9.0f} {r['baseline_mb']:>16.0f}"
        )
    reference = scalar_reference()
    best = results[10**7]["points_per_s"]
    print(f"reference, the same predictor one configuration per Python call: {reference:,.0f} configurations/s")
    print(f"sweep at 10^7 points: {best / reference:,.0f}x the per-configuration reference")
    growth = results[10**7]["evaluate_s"] / results[10**6]["evaluate_s"]
    print(
        f"evaluation time 10^6 -> 10^7: x{growth:.1f} (linear is x10); peak memory 10^6 -> 10^7: "
        f"{results[10**6]['peak_mb']:.0f} -> {results[10**7]['peak_mb']:.0f} MB"
    )


if __name__ == "__main__":
    main()
