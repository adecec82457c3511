"""Cold `derive plan` over H100, H200 and B200 and every layout up to 64 accelerators, from process start.

Prints, per model, the median wall time of fresh processes and how many layouts the search solved (each
one's largest batch in closed form). Target (issue 14): under 2 s cold.

    python3 benchmarks/plan_speed.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

CASES = [("llama3-70b", "50 ms"), ("qwen3-30b-a3b", "30 ms"), ("deepseek-v3", "50 ms"), ("gpt-oss-20b", "20 ms")]


def main() -> None:
    # Bytecode as Python writes it by default, so a warm-up run caches it as a user's first run does: a shell
    # with PYTHONDONTWRITEBYTECODE set (this sandbox has it) recompiles derive's modules on every run.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    derive = shutil.which("derive")
    command = [derive] if derive else [sys.executable, "-m", "cli"]
    for model, tpot in CASES:
        line = [*command, "plan", "--model", model, "--tpot", tpot, "--gpu", "h100,h200,b200", "--json"]
        out = json.loads(subprocess.run(line, check=True, capture_output=True, text=True).stdout)  # warm the cache
        layouts = sum(s["layouts"] for s in out["searches"].values())
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run(line, check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
        print(
            f"derive plan --model {model:<14} --tpot '{tpot}': median {statistics.median(times):.2f} s cold over "
            f"{args.runs} runs, {layouts} layouts on 3 accelerators (target: under 2 s)"
        )


if __name__ == "__main__":
    main()
