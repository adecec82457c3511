"""Utilisation of a running decode step: measured time against the roofline's floors.

MBU and MFU compare what a step must move and compute with what the hardware
could do in the time it took. They need a measured step time; the roofline
(formulas/roofline.py) gives the floor it is compared with.
"""

from derive.core.library import formula
from derive.core.symbols import define
from formulas.flops import F_att
from formulas.notation import BW, B, F, P, kv_total, n, s_kv, t_step, tau
from formulas.reads import W_read

t_meas = define("measured_step_time", "t_meas", "second", r"t_{meas}", "decode step time measured on the server")
D_gpu = define("step_bytes_per_gpu", "D_gpu", "byte", r"D_{gpu}", "bytes each accelerator must read in one step")
F_step = define("step_flops", "F_step", "FLOP", r"F_{step}", "model FLOPs of one decode step, all sequences")
f_rc = define(
    "recompute_fraction",
    "f_rc",
    "",
    r"f_{rc}",
    "FLOPs executed again (activation recomputation), as a fraction of the model FLOPs",
)
U_mem = define(
    "mbu", "MBU", "", r"\mathrm{MBU}", "model bandwidth utilisation: needed bytes over what peak bandwidth moves"
)
U_mf = define("mfu", "MFU", "", r"\mathrm{MFU}", "model FLOPs utilisation: model FLOPs over what peak compute does")
U_hf = define("hfu", "HFU", "", r"\mathrm{HFU}", "hardware FLOPs utilisation: executed FLOPs, recomputation included")
t_gap = define("unexplained_time", "t_gap", "second", r"t_{gap}", "measured step time beyond the roofline floor")

step_bytes_per_gpu = formula(
    D_gpu,
    W_read.symbol / n.symbol + kv_total.symbol / s_kv.symbol,
    "A decode step reads the weights it multiplies through, split over n accelerators, and the batch's KV cache "
    "once, split over the s_kv shards of its KV heads.",
)

step_flops = formula(
    F_step,
    B.symbol * tau.symbol * (F.symbol + F_att.symbol),
    "Each new token goes through the weights and attends over its sequence's cache (the roofline's compute term).",
)

mbu = formula(
    U_mem,
    D_gpu.symbol / (t_meas.symbol * BW.symbol),
    "Bytes a step needs per accelerator over peak bandwidth x measured time (Databricks, 'LLM Inference "
    "Performance Engineering: Best Practices', 2023, defines MBU so).",
)

mfu = formula(
    U_mf,
    F_step.symbol / (t_meas.symbol * n.symbol * P.symbol),
    "Model FLOPs over peak FLOP/s x time, recomputation not counted (Chowdhery et al. 2022, PaLM, appendix B).",
)

hfu = formula(
    U_hf,
    (1 + f_rc.symbol) * F_step.symbol / (t_meas.symbol * n.symbol * P.symbol),
    "Executed FLOPs, recomputed ones included, over peak FLOP/s x time (PaLM, appendix B): activation "
    "checkpointing raises HFU, not MFU.",
)

unexplained_time = formula(
    t_gap,
    t_meas.symbol - t_step.symbol,
    "What the roofline does not explain: communication, kernel gaps, bandwidth below peak.",
)
