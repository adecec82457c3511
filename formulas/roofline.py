"""The decode roofline: step time, throughput and the memory ceiling on n accelerators.

Tensor parallelism over n accelerators splits the weights and FLOPs evenly, and the cache up to
its KV heads: past them serving engines copy heads, and a latent (MLA) cache is whole on every
accelerator (s_kv = min(n, h_kv)). Communication is not counted here (formulas/layout.py adds it).
A step reads W_read, not W: what it multiplies through (formulas/reads.py).
"""

import sympy

from derive.core.library import formula, larger, smaller
from derive.core.symbols import define
from formulas.flops import F_att
from formulas.notation import (
    BW,
    B,
    B_max,
    F,
    M,
    P,
    R,
    W,
    h_kv,
    kv_seq,
    kv_total,
    n,
    s_kv,
    s_kvp,
    t_comp,
    t_mem,
    t_step,
    tau,
)
from formulas.reads import W_read

kv_shards = formula(
    s_kv,
    smaller(n.symbol, h_kv.symbol),
    "Tensor parallelism gives each accelerator whole KV heads: past h_kv of them the heads are copied, and a latent "
    "cache has none to split (vLLM's and SGLang's attention backends).",
)
prompt_kv_shards = formula(
    s_kvp, s_kv.symbol, "A model whose layers all split their cache alike splits it so whatever its length."
)

memory_time = formula(
    t_mem,
    (W_read.symbol / n.symbol + kv_total.symbol / s_kv.symbol) / BW.symbol,
    "Each decode step reads the weights it multiplies through (the experts its tokens touch, the embedding "
    "rows it gathers) and the batch's KV cache once, each accelerator its shard (scaling-book, 'All About "
    "Transformer Inference').",
)

compute_time = formula(
    t_comp,
    B.symbol * tau.symbol * (F.symbol + F_att.symbol) / (n.symbol * P.symbol),
    "Each sequence's new tokens go through the weights and attend over its cached context.",
)

step_time = formula(
    t_step,
    larger(t_mem.symbol, t_comp.symbol),
    "Roofline: a step takes as long as the slower of memory and compute (Williams et al. 2009).",
)

throughput = formula(R, B.symbol * tau.symbol / t_step.symbol, "Every sequence gains tau tokens per step.")

M_g = define(
    "memory_per_accelerator",
    "M_g",
    "byte",
    r"M_{g}",
    "bytes one accelerator holds: its share of the weights and of the batch's cache",
)
memory_per_accelerator = formula(
    M_g,
    W.symbol / n.symbol + B.symbol * kv_seq.symbol / s_kv.symbol,
    "Tensor parallelism gives each accelerator 1/n of the weights and 1/s_kv of every sequence's cache; the batch "
    "fits where this is at most M (the ceiling B_max solves it for B).",
)

max_batch_by_memory = formula(
    B_max,
    larger(sympy.floor((M.symbol - W.symbol / n.symbol) * s_kv.symbol / kv_seq.symbol), 0),
    "One accelerator's memory left after its share of the weights, divided by its shard of one sequence's cache; "
    "none where the weights alone do not fit.",
)
