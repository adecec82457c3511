"""What NVIDIA aiconfigurator 0.12 says one tensor-parallel all-reduce costs (TensorRT-LLM's custom all-reduce).

Writes ``benchmarks/data/aiconfigurator-0.12-allreduce.json``: for every system the profiled grids ran
(benchmarks/data/aiconfigurator-0.12.json's database_versions), at that database, the latency aiconfigurator
assigns to ONE all-reduce of ``tokens x hidden`` bf16 values across ``tp`` GPUs, evaluated through its own op
(``CustomAllReduce``, the Rust table lookup with its interpolation and extrapolation: exactly what a static
run adds twice a layer, aiconfigurator_core/sdk/models/llama.py ``context_ar_1/2``, ``generation_ar_1/2``), for
tp 2, 4 and 8 and messages of 2^10 to 2^32 values. tools/calibrate.py fits derive's all-reduce
(formulas/calibrated.py) to these rows. aiconfigurator is never a product dependency; run this in a throw-away
venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_allreduce.py

Imports only aiconfigurator and the standard library.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import os

import aiconfigurator_common as shared

OUT = os.path.join(shared.DATA, "aiconfigurator-0.12-allreduce.json")
TP = (2, 4, 8)
HIDDEN = 1024  # the op's latency depends on tokens x hidden only (the table is by message size in values)
TOKENS = sorted({m << s for s in range(23) for m in (1, 3)} - {0})  # 1 .. 3 x 2^22 tokens of 1,024 values


def system_rows(system: str, version: str) -> list[dict]:
    """One row a (tp, message): the values summed and aiconfigurator's milliseconds, at `version`'s database."""
    from aiconfigurator.sdk import operations as ops

    db = shared.database_view(system, version)
    rows = []
    for tp in TP:
        op = ops.CustomAllReduce("probe", 1, HIDDEN, tp)
        for tokens in TOKENS:
            milliseconds = float(op._engine_query(db, x=tokens))
            rows.append({"system": system, "tp": tp, "values": tokens * HIDDEN, "ms": shared.sig(milliseconds)})
    return rows


def main() -> None:
    shared.record_op_rows(
        __doc__,
        OUT,
        system_rows,
        {
            "source": "aiconfigurator 0.12.0 CustomAllReduce op (TensorRT-LLM custom all-reduce tables, "
            "comm/trtllm/<version>/custom_allreduce_perf.parquet, SILICON), via OpShellKit._engine_query",
            "dtype": "bfloat16 (comm_quant_mode half, as every profiled grid ran)",
            "meaning": {
                "values": "values all-reduced (tokens x hidden), each 2 bytes",
                "ms": "milliseconds of one all-reduce across tp GPUs",
            },
            "generated_by": "tools/aiconfigurator_allreduce.py (in aiconfigurator's own venv)",
        },
    )


if __name__ == "__main__":
    main()
