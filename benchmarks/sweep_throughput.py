"""Sweep throughput and peak memory for the TTFT/TPOT predictor at 10^4, 10^6 and 10^7 points.

Each size runs in a fresh process (so peak memory is its own), evaluating the
grid chunk by chunk without writing it out. The reference in the same run is
the same compiled predictor evaluated one configuration at a time in Python.
Targets (issue 6): at least 3 million points per second on one core, peak memory
under 500 MB at 10^7 points, time linear and memory flat in the grid size.

Then the output (issue 13): a 10^6-row sweep end to end, from the sweep's inputs to the
file closed, as CSV, Parquet and JSON lines, each in a fresh process; and the same through
the command line (`derive sweep ... --out`), timed from the process start. Targets: under
1 s for Parquet and under 2 s for CSV, at the same memory bound.

    python3 benchmarks/sweep_throughput.py            # all of it
    python3 benchmarks/sweep_throughput.py --outputs  # the writes alone
"""

from __future__ import annotations

import json
import os
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
    from derive.sweeps import Grid, compile_combination, evaluate_compiled, predict_target

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


def write_child(fmt: str, path: str) -> dict[str, float]:
    """A 10^6-row sweep written to `path`: seconds from the sweep's inputs to the file closed, and peak memory."""
    start = time.perf_counter()
    import pyarrow.csv  # noqa: F401  (the libraries the sweep loads: timed apart from the sweep itself)
    import pyarrow.parquet  # noqa: F401

    import derive
    import derive.derivations.common  # noqa: F401
    import derive.sweeps  # noqa: F401

    imports = time.perf_counter() - start
    start = time.perf_counter()
    planned = derive.sweep("predict", "llama3-70b", "h100", tp=4, batch="1:1000", prompt="1:1000")
    with open(path, "wb") as handle:
        rows = planned.write(handle, fmt)
    seconds = time.perf_counter() - start
    import os

    return {
        "rows": rows,
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "imports": imports,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "bytes": os.path.getsize(path),
    }


def outputs() -> None:
    import shutil
    import tempfile

    print()
    print("10^6-row sweep written end to end (llama3-70b, h100, tp 4; batch 1:1000 x prompt 1:1000)")
    print("  seconds: from the sweep's inputs to the file closed; imports: sympy, pyarrow and the formula library,")
    print("  loaded once a process; CLI wall: `derive sweep ... --out` from process start to exit")
    print(
        f"{'format':>8} {'rows/s':>12} {'seconds':>8} {'imports s':>10} {'peak MB':>8} {'file MB':>8} "
        f"{'CLI wall s':>11}"
    )
    folder = tempfile.mkdtemp()
    derive_cli = shutil.which("derive") or "derive"
    try:
        for fmt, suffix in (("csv", "csv"), ("parquet", "parquet"), ("jsonl", "jsonl")):
            path = f"{folder}/grid.{suffix}"
            out = subprocess.run(
                [sys.executable, __file__, "--write", fmt, path], capture_output=True, text=True, check=True
            )
            r = json.loads(out.stdout)
            start = time.perf_counter()
            subprocess.run(
                [
                    derive_cli,
                    "sweep",
                    "predict",
                    "--model",
                    "llama3-70b",
                    "--tp",
                    "4",
                    "--batch",
                    "1:1000",
                    "--prompt",
                    "1:1000",
                    "--out",
                    f"{folder}/cli.{suffix}",
                    "--quiet",
                ],
                capture_output=True,
                check=True,
            )
            wall = time.perf_counter() - start
            print(
                f"{fmt:>8} {r['rows_per_s']:>12,.0f} {r['seconds']:>8.2f} {r['imports']:>10.2f} {r['peak_mb']:>8.0f} "
                f"{r['bytes'] / 1e6:>8.1f} {wall:>11.2f}"
            )
    finally:
        shutil.rmtree(folder)


def scalar_reference(count: int = 20_000) -> float:
    """The same compiled predictor, one configuration per call: configurations per second."""
    import formulas  # noqa: F401
    from derive.sweeps import compile_combination, predict_target

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
    # Bytecode as Python writes it by default, so a warm-up run caches it as a user's first run does: a shell
    # with PYTHONDONTWRITEBYTECODE set (this sandbox has it) recompiles derive's modules on every run.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(int(sys.argv[2]))))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--write":
        print(json.dumps(write_child(sys.argv[2], sys.argv[3])))
        return
    if sys.argv[1:] == ["--outputs"]:
        outputs()
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
    outputs()


if __name__ == "__main__":
    main()
