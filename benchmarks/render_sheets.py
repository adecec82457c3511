"""Rendering all 25 answer sheets (Markdown, LaTeX and figures), beside `python -c "import sympy"`.

Runs `derive sheets --out` into a temporary folder in a fresh process, three times,
and prints the median. Target (issue 6): under 20 s.

    python3 benchmarks/render_sheets.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    # Bytecode as Python writes it by default, so a warm-up run caches it as a user's first run does: a shell
    # with PYTHONDONTWRITEBYTECODE set (this sandbox has it) recompiles derive's modules on every run.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    derive = shutil.which("derive")
    base = [derive] if derive else [sys.executable, "-m", "cli"]
    runs = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as out:
            runs.append(timed(base + ["sheets", "--out", out]))
    sympy_s = statistics.median(timed([sys.executable, "-c", "import sympy"]) for _ in range(3))
    median = statistics.median(runs)
    print(f"derive sheets (25 questions: Markdown, LaTeX, figures, book.tex): median {median:.2f} s over 3 runs")
    print(f"python -c 'import sympy': median {sympy_s:.3f} s; ratio {median / sympy_s:.0f}x (target: under 20 s)")


if __name__ == "__main__":
    main()
