"""Fit derive's fused expert-parallel dispatch to aiconfigurator 0.12's all-gather and reduce-scatter tables.

Reads benchmarks/data/aiconfigurator-0.12-fused-dispatch.json (tools/aiconfigurator_fused_dispatch.py, run in
aiconfigurator's own venv) and writes formulas/fused_dispatch.json: per accelerator and phase, alpha and eta of the
fused MoE path's two collectives (TensorRT-LLM's MoEDispatch under attention data parallelism: the tokens gathered
to every rank of the group, the experts' outputs reduce-scattered back),

    seconds = alpha + Y / (eta * BW_link),   Y = (g-1) * T * h * w,

in derive's own terms (formulas/layout.py's fused dispatch: T tokens a GPU, hidden h, w bytes a value on the wire, g
GPUs of one node): the gather in bf16, and on Blackwell also in fp8 (TensorRT-LLM gathers FP8 experts' inputs in FP8
there, derive/calibration.py dispatch_share); the reduce-scatter in bf16. Decode from the rows of at most 512 tokens a
GPU, the prompt pass from those of at least 1,024 (the two kernels' regimes differ by 2-3x in latency). Relative least
squares, as tools/fit_deepep.py fits DeepEP's (fit_line).

    python3 tools/fit_fused_dispatch.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fit_deepep import GPUS, fit_line  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "aiconfigurator-0.12-fused-dispatch.json"
OUT = ROOT / "formulas" / "fused_dispatch.json"
# derive's collective -> aiconfigurator's op; the fp8 gather only where the tables have it (sm 100).
OPS = {"gather_bf16": "all_gather_bf16", "gather_fp8": "all_gather_fp8", "scatter": "reduce_scatter_bf16"}
PHASES = {"decode": "decode", "prefill": "prompt"}  # derive's phase -> the data's token range


def _rows(points: list[dict], system: str, op: str, token_range: str) -> list[tuple[float, float]]:
    """(bytes on the wire, seconds) of one system's op over one token range."""
    return [
        (p["sent_bytes_wire"], p["seconds"])
        for p in points
        if p["system"] == system and p["op"] == op and p["range"] == token_range
    ]


def main() -> None:
    data = json.loads(DATA.read_text())
    fits: dict[str, dict] = {}  # type: ignore[type-arg]
    for system, gpu in GPUS.items():
        bandwidth = data["systems"][system]["link_bandwidth_bytes_per_s"]
        fits[gpu] = {
            phase: {
                name: fit_line(rows, bandwidth)
                for name, op in OPS.items()
                if (rows := _rows(data["points"], system, op, token_range))
            }
            for phase, token_range in PHASES.items()
        }
        fits[gpu]["link_bytes_per_s"] = bandwidth
    out = {
        "source": "aiconfigurator 0.12.0's profiled NCCL all-gather and reduce-scatter tables (trtllm 1.3.0rc20, the "
        "NCCL each system ships), through its own NCCL op, as its MoEDispatch prices TensorRT-LLM's fused MoE path "
        "under attention data parallelism; groups of 2, 4 and 8 in one node (GB200: 2 and 4), hidden 2048, 4096 "
        "and 7168, 1 to 16,384 tokens a GPU",
        "data": "benchmarks/data/aiconfigurator-0.12-fused-dispatch.json (tools/aiconfigurator_fused_dispatch.py)",
        "generated_by": "python3 tools/fit_fused_dispatch.py",
        "form": "one collective = alpha + Y/(eta*BW_link), Y = (g-1)*T*h*w bytes on the wire; gather_fp8 on "
        "Blackwell where the experts are FP8; decode: rows of at most 512 tokens a GPU, prefill: at least 1,024",
        "when": "expert parallelism on the fused path: every layout that is not on DeepEP (formulas/deepep.json); "
        "an accelerator without tables takes h100's (derive/calibration.py FUSED_BORROWED)",
        "accelerators": fits,
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    for gpu, fit in fits.items():
        print(gpu, json.dumps(fit))


if __name__ == "__main__":
    main()
