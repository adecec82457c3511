"""Cold start of `derive knee --model llama70b`, beside `python -c "import sympy"` in the same run.

Prints the median wall time of each (several fresh processes), and their ratio,
so a noisy machine changes both alike. Target (issue 2): median under 0.8 s.

    python benchmarks/cold_start.py [--runs 9]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def median_wall(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    derive = shutil.which("derive")
    knee = [derive] if derive else [sys.executable, "-m", "cli"]
    knee += ["knee", "--model", "llama70b"]
    sympy_import = [sys.executable, "-c", "import sympy"]
    median_wall(knee, 1)  # warm the file cache and the bytecode, as a user's second run would
    derive_s = median_wall(knee, args.runs)
    sympy_s = median_wall(sympy_import, args.runs)
    print(f"cold 'derive knee --model llama70b': median {derive_s:.3f} s over {args.runs} runs")
    print(f"python -c 'import sympy':           median {sympy_s:.3f} s over {args.runs} runs")
    print(f"ratio: {derive_s / sympy_s:.2f}x import sympy (target: under 0.8 s)")


if __name__ == "__main__":
    main()
