"""One FFN layer sharded over n accelerators (Megatron-style): FLOPs, bytes, all-reduce, three times.

The first matrices are split by columns and the last by rows, so each accelerator
holds 1/n of every weight and of the hidden activation, and the layer's output is
summed across accelerators by one all-reduce (Shoeybi et al. 2019, 'Megatron-LM',
sec. 3). The number of matrices comes from the config: 3 for a gated MLP (gate,
up, down), 2 otherwise (up, down); biases (f + d values) are left out.
"""

import sympy

from derive.core.library import LIBRARY, Formula, formula
from derive.core.symbols import define
from formulas.collectives import ring_allreduce
from formulas.notation import BW, P, b_w, c_mac, d, d_ff, n

_SEED = "issue 3, 'sharding one FFN layer'"
_MEGATRON = "Shoeybi et al. 2019, 'Megatron-LM' (arXiv:1909.08053), sec. 3"

T_ffn = define("ffn_tokens", "T_ffn", "token", r"T", "tokens through the layer at once (decode batch or prefill chunk)")
m_ffn = define("mlp_matrices", "m_ffn", "", r"m", "weight matrices of one MLP (3 gated: gate, up, down; 2: up, down)")
b_a = define("activation_dtype_bytes", "b_a", "byte", r"b_a", "bytes per activation value")
v_d = define("ffn_io_values_per_token", "v_d", "1/token", r"v_d", "values of one token's FFN input (or output)")
v_f = define("ffn_hidden_values_per_token", "v_f", "1/token", r"v_f", "values of one token's FFN hidden activation")
N_ffn = define("ffn_params", "N_ffn", "parameter", r"N_{ffn}", "weights of one FFN layer (matrices only)")
F_ffn = define("ffn_flops", "F_ffn", "FLOP", r"F_{ffn}", "matmul FLOPs of the layer for T tokens, all accelerators")
F_gpu = define("ffn_flops_per_gpu", "F_ffn_gpu", "FLOP", r"F_{ffn}/n", "matmul FLOPs of the layer on one accelerator")
W_ffn = define("ffn_weight_bytes", "W_ffn", "byte", r"W_{ffn}", "bytes of the layer's weights, all accelerators")
W_gpu = define(
    "ffn_weight_bytes_per_gpu", "W_ffn_gpu", "byte", r"W_{ffn}/n", "bytes of the layer's weights on one accelerator"
)
A_ffn = define(
    "ffn_activation_bytes", "A_ffn", "byte", r"A_{ffn}", "activation bytes of the layer: input, hidden, output"
)
A_gpu = define(
    "ffn_activation_bytes_per_gpu",
    "A_ffn_gpu",
    "byte",
    r"A_{ffn,gpu}",
    "activation bytes one accelerator touches: full input and output, its 1/n of the hidden",
)
C_ar = define(
    "ffn_allreduce_bytes",
    "C_ar",
    "byte",
    r"C_{ar}",
    "bytes each accelerator sends in the ring all-reduce of the output",
)
BW_link = define(
    "link_bandwidth", "BW_link", "byte/second", r"BW_{link}", "interconnect bandwidth of one accelerator, one way"
)
t_ffn_comp = define(
    "ffn_compute_time", "t_ffn_comp", "second", r"t_{compute}", "time for one accelerator's FLOPs at peak"
)
t_ffn_hbm = define(
    "ffn_hbm_time", "t_ffn_hbm", "second", r"t_{hbm}", "time to read one accelerator's weights and activations"
)
t_ffn_net = define("ffn_network_time", "t_ffn_net", "second", r"t_{net}", "time for the all-reduce over the link")
T_cross = define(
    "ffn_crossover_tokens", "T_ffn_x", "token", r"T_{\times}", "tokens at which compute time overtakes HBM time"
)


def _count(defines, expr, source):  # type: ignore[no-untyped-def]
    # Pure-number counts of the shapes, read in the unit of what they define.
    return LIBRARY.add(Formula(defines, sympy.sympify(expr), source, counts=True))


ffn_io_values_per_token = _count(v_d, d.symbol, "A token enters and leaves the FFN as a d-wide vector.")
ffn_hidden_values_per_token = _count(
    v_f, d_ff.symbol, "A token's hidden activation is d_ff wide (the config's intermediate size)."
)
ffn_params = _count(N_ffn, m_ffn.symbol * d.symbol * d_ff.symbol, f"m matrices of d x d_ff each ({_MEGATRON}).")

ffn_flops = formula(
    F_ffn,
    c_mac.symbol * T_ffn.symbol * N_ffn.symbol,
    f"Every token multiplies through every weight, two FLOPs per multiply-accumulate ({_SEED}: 2 * (2 * T * d * f) "
    "for two matrices).",
)
ffn_flops_per_gpu = formula(
    F_gpu, F_ffn.symbol / n.symbol, f"Column then row sharding splits the FLOPs evenly ({_MEGATRON})."
)
ffn_weight_bytes = formula(W_ffn, N_ffn.symbol * b_w.symbol, "Every weight stored once in the weight dtype.")
ffn_weight_bytes_per_gpu = formula(
    W_gpu, W_ffn.symbol / n.symbol, f"Each accelerator holds 1/n of every matrix ({_MEGATRON})."
)
ffn_activation_bytes = formula(
    A_ffn,
    T_ffn.symbol * (2 * v_d.symbol + v_f.symbol) * b_a.symbol,
    f"Input and output (d each) and the hidden activation (d_ff), once each ({_SEED}: T * (2 * d + f) * b).",
)
ffn_activation_bytes_per_gpu = formula(
    A_gpu,
    T_ffn.symbol * (2 * v_d.symbol + v_f.symbol / n.symbol) * b_a.symbol,
    f"Each accelerator reads the whole input and writes a whole partial output, but holds 1/n of "
    f"the hidden ({_MEGATRON}).",
)
ffn_allreduce_bytes = formula(
    C_ar,
    ring_allreduce(n.symbol, T_ffn.symbol * v_d.symbol * b_a.symbol),
    "A ring all-reduce sends 2(n-1)/n of the data from each node (Patarasuk and Yuan 2009, 'Bandwidth optimal "
    f"all-reduce algorithms'); the data is the T x d output ({_SEED}).",
)
ffn_compute_time = formula(
    t_ffn_comp, F_gpu.symbol / P.symbol, f"One accelerator's FLOPs at peak ({_SEED}: flops / n / peak)."
)
ffn_hbm_time = formula(
    t_ffn_hbm,
    (W_gpu.symbol + A_gpu.symbol) / BW.symbol,
    f"One accelerator reads its weight shard and its activations once ({_SEED}: (w_bytes / n + act_bytes) / hbm_bw, "
    "with the hidden part sharded).",
)
ffn_network_time = formula(
    t_ffn_net, C_ar.symbol / BW_link.symbol, f"The all-reduce at the one-way link bandwidth ({_SEED})."
)
