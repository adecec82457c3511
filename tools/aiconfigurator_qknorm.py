"""What NVIDIA aiconfigurator 0.12 adds to a prompt pass's attention for normalizing q and k (Qwen3's q_norm, k_norm).

Writes ``benchmarks/data/aiconfigurator-0.12-qknorm.json``: for every system the profiled grids ran
(benchmarks/data/aiconfigurator-0.12.json's database_versions), at that database, aiconfigurator's context
attention op (``ContextAttention``, what a static run prices as ``context_attention`` a layer,
aiconfigurator_core/sdk/models/llama.py) with and without ``use_qk_norm``, over head counts, batches and prompt
lengths, and the same for the generation op. tools/calibrate.py takes the prompt pass's difference as
formulas/calibrated.py's t_qn. aiconfigurator is never a product dependency; run this in a throw-away venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_qknorm.py

Imports only aiconfigurator and the standard library.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import os

import aiconfigurator_common as shared

OUT = os.path.join(shared.DATA, "aiconfigurator-0.12-qknorm.json")
HEADS = ((64, 8), (32, 8), (40, 8), (16, 4), (8, 1))  # query and KV heads on one GPU: Qwen3 32B and 8B at tp 1..8
SHAPES = ((1, 128), (1, 1024), (4, 1024), (16, 1024), (1, 4096), (16, 4096), (64, 4096))  # batch, prompt tokens
HEAD_SIZE = 128


def system_rows(system: str, version: str) -> list[dict]:
    """One row a (phase, heads, batch, tokens): aiconfigurator's milliseconds without and with the q/k norms."""
    from aiconfigurator.sdk import common
    from aiconfigurator.sdk import operations as ops

    db = shared.database_view(system, version)
    kv, fmha = common.KVCacheQuantMode.bfloat16, common.FMHAQuantMode.bfloat16
    rows = []
    for heads, kv_heads in HEADS:
        for batch, tokens in SHAPES:
            for phase in ("context", "generation"):
                ms = []
                for qk_norm in (False, True):
                    if phase == "context":
                        op = ops.ContextAttention(
                            "probe", 1, heads, kv_heads, kv, fmha, head_size=HEAD_SIZE, use_qk_norm=qk_norm
                        )
                    else:
                        op = ops.GenerationAttention(
                            "probe", 1, heads, kv_heads, kv, head_size=HEAD_SIZE, use_qk_norm=qk_norm
                        )
                    ms.append(
                        float(op._engine_query(db, batch_size=batch, s=tokens, prefix=0, is_context=phase == "context"))
                    )
                rows.append(
                    {
                        "system": system,
                        "phase": phase,
                        "heads": heads,
                        "kv_heads": kv_heads,
                        "batch": batch,
                        "tokens": tokens,
                        "ms": shared.sig(ms[0]),
                        "ms_qk_norm": shared.sig(ms[1]),
                    }
                )
    return rows


def main() -> None:
    shared.record_op_rows(
        __doc__,
        OUT,
        system_rows,
        {
            "source": "aiconfigurator 0.12.0 ContextAttention and GenerationAttention ops (attention tables and the "
            "analytical mem ops they add: QK-norm, RoPE, KV write), SILICON, via OpShellKit._engine_query",
            "meaning": {
                "heads": "query heads on one GPU",
                "kv_heads": "KV heads on one GPU",
                "batch": "sequences",
                "tokens": "prompt tokens a sequence (context) or tokens cached (generation)",
                "ms": "milliseconds of one layer's attention op, use_qk_norm False",
                "ms_qk_norm": "the same with use_qk_norm True (per-head RMSNorm on q and k, Qwen3)",
            },
            "generated_by": "tools/aiconfigurator_qknorm.py (in aiconfigurator's own venv)",
        },
        skip_missing=True,
    )


if __name__ == "__main__":
    main()
