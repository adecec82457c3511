"""What NVIDIA aiconfigurator 0.12 says a decode step's latent attention (MLA) costs beside a GQA layer's attention.

Writes ``benchmarks/data/aiconfigurator-0.12-mla.json``: for every system the profiled grids ran, at that
database, at batch 1 and 128 cached tokens (where the kernels' fixed times dominate), and tp 1, 2, 4 and 8:

- DeepSeek-V3's generation MLA block (``MLAModule``, what a static run prices as ``generation_mla_block``,
  aiconfigurator_core/sdk/models/deepseek.py), fp8-block GEMMs, fp8 cache;
- Llama 3 70B's generation attention kernels at the same tp: its QKV GEMM, ``GenerationAttention`` and output GEMM
  (``generation_qkv_gemm``, ``generation_attention``, ``generation_proj_gemm`` in llama.py), fp8-block GEMMs;

each with the weight bytes its GEMMs stream on one GPU. tools/calibrate.py takes the difference of the two less
their weights' streaming as formulas/calibrated.py's t_la. aiconfigurator is never a product dependency; run this in
a throw-away venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_mla.py

Imports only aiconfigurator and the standard library.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import os

import aiconfigurator_common as shared

OUT = os.path.join(shared.DATA, "aiconfigurator-0.12-mla.json")
TP = (1, 2, 4, 8)
BATCH, CACHED = 1, 128
# DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json): hidden 7,168, 128 heads, q_lora_rank 1,536, kv_lora_rank 512,
# qk_nope 128 + qk_rope 64, v_head_dim 128. TensorRT-LLM replicates the fused down-projection (q_a and kv_a with the
# rotary key: 1,536 + 576 = 2,112 wide) and splits the rest by heads: q_b (1,536 -> 128 x 192), the absorbed k and v
# up-projections (128 heads x 512 x 128 each) and o_proj (128 x 128 -> 7,168); fp8-block weights, a byte each.
MLA_HEADS, MLA_HIDDEN = 128, 7168
MLA_REPLICATED = MLA_HIDDEN * 2112
MLA_SPLIT = 1536 * MLA_HEADS * 192 + 2 * MLA_HEADS * 512 * 128 + MLA_HEADS * 128 * MLA_HIDDEN
# Llama 3 70B (meta-llama/Meta-Llama-3-70B config.json): hidden 8,192, 64 query and 8 KV heads of 128.
GQA_HIDDEN, GQA_HEADS, GQA_KV_HEADS, HEAD = 8192, 64, 8, 128
GQA_WEIGHTS = GQA_HIDDEN * (GQA_HEADS + 2 * GQA_KV_HEADS) * HEAD + GQA_HEADS * HEAD * GQA_HIDDEN


def system_rows(system: str, version: str) -> list[dict]:
    """One row a tp: both blocks' milliseconds and the weight bytes each streams on one GPU."""
    from aiconfigurator.sdk import common
    from aiconfigurator.sdk import operations as ops

    db = shared.database_view(system, version)
    kv, fmha, gemm = common.KVCacheQuantMode.fp8, common.FMHAQuantMode.bfloat16, common.GEMMQuantMode.fp8_block
    rows = []
    for tp in TP:
        shape = {"batch_size": BATCH, "s": CACHED, "prefix": 0, "is_context": False}
        mla = ops.MLAModule("probe", 1, False, MLA_HEADS // tp, kv, fmha, gemm, native_num_heads=MLA_HEADS)
        qkv = ops.GEMM("qkv", 1, (GQA_HEADS + 2 * GQA_KV_HEADS) * HEAD // tp, GQA_HIDDEN, gemm)
        attention = ops.GenerationAttention("attention", 1, GQA_HEADS // tp, max(GQA_KV_HEADS // tp, 1), kv)
        proj = ops.GEMM("proj", 1, GQA_HIDDEN, GQA_HEADS * HEAD // tp, gemm)
        gqa = float(qkv._engine_query(db, x=BATCH)) + float(attention._engine_query(db, **shape))
        gqa += float(proj._engine_query(db, x=BATCH))
        rows.append(
            {
                "system": system,
                "tp": tp,
                "mla_ms": shared.sig(float(mla._engine_query(db, **shape))),
                "mla_weight_bytes": MLA_REPLICATED + MLA_SPLIT // tp,
                "gqa_ms": shared.sig(gqa),
                "gqa_weight_bytes": GQA_WEIGHTS // tp,
            }
        )
    return rows


def main() -> None:
    shared.record_op_rows(
        __doc__,
        OUT,
        system_rows,
        {
            "source": "aiconfigurator 0.12.0 MLAModule (generation), GEMM and GenerationAttention ops, SILICON, via "
            "OpShellKit._engine_query",
            "meaning": {
                "mla_ms": f"DeepSeek-V3's generation MLA block on one GPU at tp, batch {BATCH}, {CACHED} cached tokens",
                "gqa_ms": "Llama 3 70B's generation QKV GEMM, attention and output GEMM on one GPU, same tp and shape",
                "*_weight_bytes": "bytes of the block's weights one GPU streams (fp8-block: a byte a weight)",
            },
            "generated_by": "tools/aiconfigurator_mla.py (in aiconfigurator's own venv)",
        },
        skip_missing=True,
    )


if __name__ == "__main__":
    main()
