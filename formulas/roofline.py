"""The decode roofline: step time, throughput and the memory ceiling on n accelerators.

Tensor parallelism over n accelerators is taken as ideal: weights, KV cache and
FLOPs split evenly, communication not counted (formulas/sharding.py adds it).
A step reads W_read, not W: what it multiplies through (formulas/reads.py).
"""

import sympy

from derive.library import formula
from derive.symbols import define
from formulas.flops import F_att
from formulas.notation import BW, B, B_max, F, M, P, R, W, kv_seq, kv_total, n, t_comp, t_mem, t_step, tau
from formulas.reads import W_read

memory_time = formula(
    t_mem,
    (W_read.symbol + kv_total.symbol) / (n.symbol * BW.symbol),
    "Each decode step reads the weights it multiplies through (the experts its tokens touch, the embedding "
    "rows it gathers) and the batch's KV cache once (scaling-book, 'All About Transformer Inference').",
)

compute_time = formula(
    t_comp,
    B.symbol * tau.symbol * (F.symbol + F_att.symbol) / (n.symbol * P.symbol),
    "Each sequence's new tokens go through the weights and attend over its cached context.",
)

step_time = formula(
    t_step,
    sympy.Max(t_mem.symbol, t_comp.symbol),
    "Roofline: a step takes as long as the slower of memory and compute (Williams et al. 2009).",
)

throughput = formula(R, B.symbol * tau.symbol / t_step.symbol, "Every sequence gains tau tokens per step.")

max_batch_by_memory = formula(
    B_max,
    sympy.Max(sympy.floor((n.symbol * M.symbol - W.symbol) / kv_seq.symbol), 0),
    "Memory left after the weights, divided by one sequence's cache; none where the weights alone do not fit.",
)

B_half = define(
    "half_ceiling_batch",
    "B_half",
    "sequence",
    r"B_{1/2}",
    "batch where the batch's cache equals the weights: memory-bound throughput at half its ceiling",
)
half_ceiling_batch = formula(
    B_half,
    W.symbol / kv_seq.symbol,
    "Memory-bound, R = n·BW·B/(W + B·K_seq): a hyperbola rising to n·BW/K_seq, at half of it where B·K_seq = W "
    "(its knee; a large batch reads every weight, so W, not the batch-1 reads).",
)
