"""derive's sweep against llm-analysis, per configuration, on the same configurations, in the same run.

llm-analysis (PyPI 0.2.2) is installed only in this benchmark's own virtual
environment (benchmarks/.venv-llm-analysis, created on first run); it is never a
dependency of derive. Both estimate inference latency for Llama 2 70B on H100
SXM at a grid of batch, prompt length and tensor-parallel degree.
Target (issue 6): at least 1,000x llm-analysis per configuration.

    python3 benchmarks/llm_analysis_compare.py [--configs 2000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

VENV = Path(__file__).resolve().parent / ".venv-llm-analysis"
BATCHES, PROMPTS, TPS = (1, 2, 4, 8, 16, 32, 64, 128), (128, 256, 512, 1024, 2048), (2, 4, 8, 16)
OUTPUT = 256

CHILD = r"""
import itertools, json, logging, sys, time
from llm_analysis.analysis import infer
logging.disable(logging.CRITICAL)
batches, prompts, tps, output, count = json.loads(sys.argv[1])
configs = list(itertools.islice(itertools.cycle(itertools.product(batches, prompts, tps)), count))
refused = 0
start = time.perf_counter()
for batch, prompt, tp in configs:
    try:  # it raises for a configuration whose memory does not fit; that still took its time
        infer(model_name="upstage_Llama-2-70b-instruct-v2", gpu_name="h100-sxm-80gb", dtype_name="w16a16e16",
              batch_size_per_gpu=batch, tp_size=tp, seq_len=prompt, num_tokens_to_generate=output,
              log_level="CRITICAL")
    except Exception:
        refused += 1
print(json.dumps({"configs": len(configs), "seconds": time.perf_counter() - start, "refused": refused}))
"""


def ensure_venv() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "llm-analysis==0.2.2"], check=True)
    return python


def derive_seconds_per_config(repeat: int = 200) -> tuple[float, int]:
    """The same grid through derive's compiled predictor, repeated to time it well."""
    import formulas  # noqa: F401
    from derive.sweeps import Grid, compile_combination, evaluate_compiled, predict_target

    grid = Grid(
        {"model": ["llama2-70b"], "gpu": ["h100"], "dtype": ["bf16"]},
        {"batch": list(BATCHES) * repeat, "prompt": list(PROMPTS), "tp": list(TPS)},
        {"output": OUTPUT},
    )
    start = time.perf_counter()
    compiled = compile_combination(predict_target(), "llama2-70b", "h100", "bf16", tuple(grid.numeric), grid.defaults)
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    points = sum(len(columns["fits"]) for columns in evaluate_compiled(compiled, grid))
    return (time.perf_counter() - start) / points, int(compile_s * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=2000)
    args = parser.parse_args()
    python = ensure_venv()
    spec = json.dumps([BATCHES, PROMPTS, TPS, OUTPUT, args.configs])
    out = subprocess.run([str(python), "-c", CHILD, spec], capture_output=True, text=True, check=True)
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    their_per_config = theirs["seconds"] / theirs["configs"]
    ours, compile_ms = derive_seconds_per_config()
    print(
        f"llm-analysis 0.2.2: {theirs['configs']} configurations in {theirs['seconds']:.2f} s: "
        f"{1 / their_per_config:,.0f} configurations/s ({theirs['refused']} refused as not fitting)"
    )
    print(f"derive sweep:       {1 / ours:,.0f} configurations/s (after a one-off {compile_ms} ms compile)")
    print(f"ratio: {their_per_config / ours:,.0f}x llm-analysis per configuration (target: at least 1,000x)")


if __name__ == "__main__":
    main()
