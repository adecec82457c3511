"""Kernel fusion: the HBM bytes and launches a chain of elementwise ops and norms costs, fused or not.

Unfused, each of the n_ew kernels of a layer reads its input activation from HBM and writes its
output back (one d-wide vector per token each way). A fused kernel does the same for the whole
chain once, keeping the intermediates in registers or shared memory, so a layer's n_ew kernels
become n_fk. Every kernel also pays a launch overhead.
"""

from derive.core.library import formula
from derive.core.symbols import define
from formulas.notation import BW, L
from formulas.sharding import b_a, v_d

T_fu = define(
    "fusion_tokens", "T_fu", "token", r"T_{fu}", "tokens through the chain in one step (decode batch or prompt)"
)
n_ew = define("unfused_kernels_per_layer", "n_ew", "", r"n_{ew}", "elementwise and norm kernels per layer, unfused")
n_fk = define("fused_kernels_per_layer", "n_fk", "", r"n_{fk}", "kernels the same chain becomes, fused")
t_l = define("kernel_launch_overhead", "t_kl", "second", r"t_{kl}", "overhead of launching one kernel")
f_ew = define(
    "elementwise_flops_per_value", "f_ew", "FLOP", r"f_{ew}", "FLOPs an elementwise op or norm does per value"
)
X_unf = define("unfused_chain_bytes", "X_unf", "byte", r"X_{unfused}", "HBM bytes of the chain in all layers, unfused")
X_fus = define("fused_chain_bytes", "X_fus", "byte", r"X_{fused}", "HBM bytes of the chain in all layers, fused")
t_unf = define("unfused_chain_time", "t_unf", "second", r"t_{unfused}", "time to move the unfused chain's bytes")
t_fus = define("fused_chain_time", "t_fus", "second", r"t_{fused}", "time to move the fused chain's bytes")
t_ls = define("fusion_launch_saving", "t_ls", "second", r"t_{ls}", "launch overhead fusion removes per step")
t_fs = define("fusion_time_saved", "t_fs", "second", r"t_{saved}", "time fusion saves per step: bytes and launches")
I_ew = define(
    "elementwise_intensity",
    "I_ew",
    "FLOP/byte",
    r"I_{ew}",
    "intensity of an unfused elementwise kernel: its FLOPs per value over one read and one write",
)

unfused_chain_bytes = formula(
    X_unf,
    2 * n_ew.symbol * L.symbol * T_fu.symbol * v_d.symbol * b_a.symbol,
    "Each unfused kernel reads and writes one d-wide activation per token (Ivanov et al. 2021, 'Data Movement "
    "Is All You Need', MLSys: elementwise ops and norms are memory-bound).",
)

fused_chain_bytes = formula(
    X_fus,
    2 * n_fk.symbol * L.symbol * T_fu.symbol * v_d.symbol * b_a.symbol,
    "Fused, only the chain's n_fk kernels touch HBM; intermediates stay on chip.",
)

unfused_chain_time = formula(t_unf, X_unf.symbol / BW.symbol, "Memory-bound: bytes over bandwidth.")
fused_chain_time = formula(t_fus, X_fus.symbol / BW.symbol, "Memory-bound: bytes over bandwidth.")

fusion_launch_saving = formula(
    t_ls,
    (n_ew.symbol - n_fk.symbol) * L.symbol * t_l.symbol,
    "Each kernel that fusion removes saves one launch in every layer.",
)

fusion_time_saved = formula(t_fs, t_unf.symbol - t_fus.symbol + t_ls.symbol, "Bytes not moved plus launches not made.")

elementwise_intensity = formula(
    I_ew,
    f_ew.symbol / (2 * b_a.symbol),
    "An elementwise kernel reads one value and writes one for every f_ew FLOPs.",
)
