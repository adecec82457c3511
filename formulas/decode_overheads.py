"""The batch-1 decode floor split into its reads, and the step a real server approaches above it.

The floor reads the weights and the batch's KV cache once per step on n accelerators.
The buckets above it (tensor-parallel all-reduces, bandwidth below peak) are the
step-budget formulas of formulas/step_budget.py; this module adds the two reads apart
and their sum with the buckets.
"""

from derive.formula import formula
from derive.symbols import define
from formulas.notation import BW, W, kv_total, n, t_step
from formulas.step_budget import t_ar, t_bwl

t_W = define(
    "weight_read_time", "t_Wread", "second", r"t_{W}", "time to read every weight once, split over n accelerators"
)
t_K = define(
    "kv_read_time", "t_Kread", "second", r"t_{K}", "time to read the batch's KV cache, split over n accelerators"
)
t_est = define(
    "decode_step_estimate",
    "t_est",
    "second",
    r"t_{est}",
    "decode step a real server approaches: the floor, bandwidth below peak, then the all-reduces",
)
x_floor = define(
    "floor_share_of_step",
    "x_floor",
    "",
    r"x_{floor}",
    "fraction of the estimated step that the weight-read floor explains",
)

weight_read_time = formula(
    t_W,
    W.symbol / (n.symbol * BW.symbol),
    "Decode reads every weight once per step; tensor parallelism splits the reads over n accelerators "
    "(scaling-book, 'All About Transformer Inference').",
)

kv_read_time = formula(
    t_K,
    kv_total.symbol / (n.symbol * BW.symbol),
    "Each step also reads every cached token of every sequence once, split over n accelerators.",
)

decode_step_estimate = formula(
    t_est,
    t_step.symbol + t_bwl.symbol + t_ar.symbol,
    "The floor, the time lost to bandwidth below peak, then the all-reduces: at batch 1 each all-reduce sits "
    "between two layers' matmuls, on the critical path, so nothing overlaps it.",
)

floor_share_of_step = formula(x_floor, t_W.symbol / t_est.symbol, "The weight-read floor over the estimated step.")
