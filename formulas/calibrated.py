"""The calibrated predictor: the floor's reads and FLOPs at fitted efficiencies, plus the time a floor leaves out.

A real step is a sequence of kernels. Each layer costs a fixed time however small the batch
(launches, norms, tiny GEMMs); tensor parallelism adds two all-reduces per layer, each a
latency plus 2(n-1)/n of the activations over the link; weights and the KV cache stream
below peak bandwidth (the weights at a GEMV kernel's share of it where a rank multiplies one
row); GEMMs and attention kernels run below peak FLOP/s; a mixture of experts'
routed experts run a MoE kernel of their own (a fixed time a MoE layer, passes over the routed
activations, its own shares of the peaks in the format the experts are stored in); unfused
elementwise passes move activations that tensor parallelism does not split, and a prompt pass's MLP
activations, on their own width, those it does; layers that normalize q and k add a fixed time to a prompt pass,
dense MLPs beside routed experts (shared experts) their kernels' fixed time, and latent attention (MLA) its extra
kernels' to a decode step. Every
efficiency is at most 1 and every added time at least 0, so the estimate is never below
the floor. The fitted values per accelerator are in formulas/calibration.json
(tools/calibrate.py).
"""

from typing import NamedTuple

import sympy

from derive.core.library import formula, larger, smaller
from derive.core.symbols import Sym, alias, constant, define
from formulas.collectives import ring_allreduce
from formulas.flops import F_att
from formulas.notation import BW, B, F, F_pre, F_pw, K_pr, L, P, S_o, S_p, S_sc, d, d_ff, kv_total, n, s_kv, s_kvp, tau
from formulas.reads import W_pre, W_read
from formulas.sharding import BW_link, b_a, v_d

# Fitted per accelerator.
t_L = define(
    "layer_fixed_time",
    "t_layer",
    "second",
    r"t_{L}",
    "fixed kernel time of one layer in one pass, whatever the batch (launches, norms, small kernels)",
)
m_ar = define(
    "allreduces_per_layer",
    "m_AR",
    "",
    r"m_{ar}",
    "tensor-parallel all-reduces per layer, over the stack (after each mixer and each MLP: two in a Llama layer)",
)
alpha_ar = define(
    "decode_allreduce_latency",
    "alpha_AR",
    "second",
    r"\alpha_{ar}",
    "fixed latency of the one-shot all-reduce kernel between two accelerators (launch and synchronisation)",
)
eta_link = define(
    "allreduce_bandwidth_efficiency",
    "eta_link",
    "",
    r"\eta_{link}",
    "share of link bandwidth the one-shot all-reduce kernel gets between two accelerators",
)
lambda_ar = define(
    "decode_allreduce_latency_growth",
    "lambda_AR",
    "",
    r"\lambda_{ar}",
    "growth of the one-shot all-reduce's latency, in units of itself, with each doubling of the group past two",
)
eps_ar = define(
    "allreduce_byte_time_growth",
    "eps_AR",
    "",
    r"\epsilon_{ar}",
    "growth of the one-shot all-reduce's time a ring byte, in units of two accelerators', with each doubling",
    signed=True,  # a growth rate: the fit may put it below zero (the large-message kernel's does)
)
eta_w = define(
    "weight_stream_efficiency", "eta_w", "", r"\eta_{w}", "fraction of peak bandwidth a weight-streaming GEMM reaches"
)
eta_w1 = define(
    "one_row_weight_stream_efficiency",
    "eta_w1",
    "",
    r"\eta_{w,1}",
    "fraction of peak bandwidth a weight-streaming GEMM reaches multiplying one row (a GEMV kernel)",
)
eta_kv = define(
    "kv_stream_efficiency", "eta_kv", "", r"\eta_{kv}", "fraction of peak bandwidth attention reaches reading the cache"
)
eta_g = define(
    "decode_gemm_efficiency", "eta_gd", "", r"\eta_{g}", "fraction of peak FLOP/s a decode step's GEMMs reach"
)
eta_p = define(
    "prefill_gemm_efficiency", "eta_gp", "", r"\eta_{p}", "fraction of peak FLOP/s the prompt pass's GEMMs reach"
)
eta_a = define(
    "attention_compute_efficiency", "eta_att", "", r"\eta_{a}", "fraction of peak FLOP/s attention kernels reach"
)
t_Lp = define(
    "prefill_layer_fixed_time",
    "t_layerp",
    "second",
    r"t_{L,p}",
    "fixed kernel time of one layer in the prompt pass (no CUDA graph, more kernels than a decode step)",
)
alpha_p = define(
    "prefill_allreduce_latency",
    "alpha_ARp",
    "second",
    r"\alpha_{ar,p}",
    "fixed latency of the large-message all-reduce kernel a prompt pass may take, between two accelerators",
)
eta_linkp = define(
    "prefill_allreduce_bandwidth_efficiency",
    "eta_linkp",
    "",
    r"\eta_{link,p}",
    "share of link bandwidth the large-message all-reduce kernel gets between two accelerators",
)
lambda_arp = define(
    "prefill_allreduce_latency_growth",
    "lambda_ARp",
    "",
    r"\lambda_{ar,p}",
    "growth of the large-message all-reduce's latency, in units of itself, with each doubling of the group past two",
)
eps_arp = define(
    "prefill_allreduce_byte_time_growth",
    "eps_ARp",
    "",
    r"\epsilon_{ar,p}",
    "growth of the large-message all-reduce's time a ring byte, in units of two accelerators', with each doubling",
    signed=True,  # fitted below zero on every accelerator: past two, the kernel's time a ring byte shrinks
)
w_0 = define(
    "narrow_gemm_width",
    "w_narrow",
    "",
    r"w_{0}",
    "GEMM width per accelerator at which a routed expert's kernels run at half their wide-GEMM speed",
)
w_0p = define(
    "prefill_narrow_gemm_width",
    "w_narrowp",
    "",
    r"w_{0,p}",
    "the same width for the prompt pass's grouped GEMMs, with many rows an expert",
)
m_ew = define(
    "decode_elementwise_passes_per_layer",
    "m_ewp",
    "",
    r"m_{ew}",
    "unfused elementwise passes per layer (norms, rotary, activation, residual adds)",
)
t_qn = define(
    "prefill_qk_norm_time",
    "t_qnp",
    "second",
    r"t_{qn,p}",
    "fixed time a layer's q and k norms add to a prompt pass (their own kernels)",
)
m_actp = define(
    "prefill_mlp_activation_passes",
    "m_actp",
    "",
    r"m_{act,p}",
    "passes of the prompt pass over the values its MLP activation functions read and write (their own width)",
)

t_la = define(
    "latent_attention_fixed_time",
    "t_la",
    "second",
    r"t_{la}",
    "fixed time a decode step's latent-attention (MLA) layer's kernels add beyond a GQA layer's",
)
t_mlp = define(
    "dense_mlp_fixed_time",
    "t_mlp",
    "second",
    r"t_{mlp}",
    "fixed time of a dense MLP's kernels in a decode step, part of t_L: a MoE layer runs its routed kernel instead",
)
t_mlpp = define(
    "prefill_dense_mlp_fixed_time",
    "t_mlpp",
    "second",
    r"t_{mlp,p}",
    "the same in the prompt pass, part of t_L,p",
)

# Fitted per accelerator and expert format to aiconfigurator's MoE kernel tables (tools/calibrate.py): the routed
# experts' kernel in the fit's own format (its precision's: bf16, fp8, fp8-block, nvfp4)...
t_xf = define(
    "moe_layer_fixed_time",
    "t_xf",
    "second",
    r"t_{x,f}",
    "fixed time of a MoE layer's routed-expert kernel in a decode step, the fit's own expert format",
)
t_xpf = define(
    "prefill_moe_layer_fixed_time",
    "t_xpf",
    "second",
    r"t_{x,p,f}",
    "fixed time of a MoE layer's routed-expert kernel in the prompt pass, the fit's own expert format",
)
t_xEf = define(
    "moe_expert_fixed_time",
    "t_xEf",
    "second",
    r"t_{x,E,f}",
    "fixed time a decode step's MoE kernel spends on each routed expert a rank holds, fit's own expert format",
)
eta_xf = define(
    "expert_stream_efficiency",
    "eta_xf",
    "",
    r"\eta_{x,f}",
    "fraction of peak bandwidth the routed-expert kernel reaches streaming weights, in the fit's own expert format",
)
eta_xgf = define(
    "decode_expert_gemm_efficiency",
    "eta_xgf",
    "",
    r"\eta_{x,g,f}",
    "fraction of peak FLOP/s the routed-expert kernel reaches in a decode step, in the fit's own expert format",
)
eta_xpf = define(
    "prefill_expert_gemm_efficiency",
    "eta_xpf",
    "",
    r"\eta_{x,p,f}",
    "fraction of peak FLOP/s the routed-expert kernel reaches in the prompt pass, in the fit's own expert format",
)
I_xpf = define(
    "prefill_expert_padding_intensity",
    "I_xpf",
    "FLOP/byte",
    r"I_{x,p,f}",
    "FLOPs a byte of touched expert weights the prompt pass's grouped GEMMs spend on padded rows, fit's own format",
)
m_x = define(
    "decode_routed_activation_passes",
    "m_xa",
    "",
    r"m_{x}",
    "passes a decode step's MoE kernel makes over its routed activations each layer (gather, scatter, activation)",
)
m_xp = define(
    "prefill_routed_activation_passes",
    "m_xap",
    "",
    r"m_{x,p}",
    "passes the prompt pass's MoE kernel makes over its routed activations each layer (gather, scatter, activation)",
)
m_xip = define(
    "prefill_routed_intermediate_passes",
    "m_xip",
    "",
    r"m_{x,i}",
    "passes the prompt pass's MoE kernel makes over its routed intermediate activations each layer (the first GEMM's "
    "output written, the activation's read and written, the second GEMM's input read)",
)
# ...and in MXFP4, the format gpt-oss ships its experts in (aiconfigurator's w4a16_mxfp4 kernel: 4-bit weights
# dequantised for 16-bit matmuls).
t_x4 = define(
    "mxfp4_moe_layer_fixed_time",
    "t_x4",
    "second",
    r"t_{x,mx}",
    "fixed time of a MoE layer's routed-expert kernel in a decode step, experts in MXFP4",
)
t_xp4 = define(
    "mxfp4_prefill_moe_layer_fixed_time",
    "t_xp4",
    "second",
    r"t_{x,p,mx}",
    "fixed time of a MoE layer's routed-expert kernel in the prompt pass, experts in MXFP4",
)
t_xE4 = define(
    "mxfp4_moe_expert_fixed_time",
    "t_xE4",
    "second",
    r"t_{x,E,mx}",
    "fixed time a decode step's MoE kernel spends on each routed expert a rank holds, experts in MXFP4",
)
eta_x4 = define(
    "mxfp4_expert_stream_efficiency",
    "eta_x4",
    "",
    r"\eta_{x,mx}",
    "fraction of peak bandwidth the routed-expert kernel reaches streaming MXFP4 weights",
)
eta_xg4 = define(
    "mxfp4_decode_expert_gemm_efficiency",
    "eta_xg4",
    "",
    r"\eta_{x,g,mx}",
    "fraction of peak FLOP/s the routed-expert kernel reaches in a decode step, experts in MXFP4",
)
eta_xp4 = define(
    "mxfp4_prefill_expert_gemm_efficiency",
    "eta_xp4",
    "",
    r"\eta_{x,p,mx}",
    "fraction of peak FLOP/s the routed-expert kernel reaches in the prompt pass, experts in MXFP4",
)
I_xp4 = define(
    "mxfp4_prefill_expert_padding_intensity",
    "I_xp4",
    "FLOP/byte",
    r"I_{x,p,mx}",
    "FLOPs a byte of touched expert weights the prompt pass's grouped GEMMs spend on padded rows, experts in MXFP4",
)

# What a model's routed experts run at: the fit's format, or the one its checkpoint ships them in (below, and
# derive/architecture/build.py for a model that has one).
L_la = define("latent_attention_layers", "L_la", "", r"L_{la}", "layers whose attention caches a latent (MLA)")
L_sx = define(
    "shared_expert_layers", "L_sx", "", r"L_{sx}", "dense MLPs run beside routed experts, over the MoE layers"
)
L_qn = define("qk_normed_layers", "L_qn", "", r"L_{qn}", "layers whose attention normalizes its queries or keys")
L_x = define("routed_expert_layers", "L_x", "", r"L_{x}", "layers whose routed experts run a MoE kernel")
E_x = define("routed_experts_per_layer", "E_x", "", r"E_{x}", "routed experts a MoE layer's kernel iterates over")
k_x = define(
    "routed_copies_per_token",
    "k_x",
    "",
    r"k_{x}",
    "copies of each token's activation a MoE layer routes to its experts (its top-k)",
)
t_x = define(
    "routed_layer_fixed_time",
    "t_xk",
    "second",
    r"t_{x}",
    "fixed time of a MoE layer's routed-expert kernel in a decode step, in the experts' format",
)
t_xp = define(
    "prefill_routed_layer_fixed_time",
    "t_xpk",
    "second",
    r"t_{x,p}",
    "fixed time of a MoE layer's routed-expert kernel in the prompt pass, in the experts' format",
)
t_xE = define(
    "routed_expert_fixed_time",
    "t_xEk",
    "second",
    r"t_{x,E}",
    "fixed time a decode step's MoE kernel spends on each routed expert a rank holds, in the experts' format",
)
eta_x = define(
    "routed_stream_efficiency",
    "eta_xk",
    "",
    r"\eta_{x}",
    "fraction of peak bandwidth the routed-expert kernel reaches streaming the experts' weights",
)
eta_xg = define(
    "decode_routed_gemm_efficiency",
    "eta_xgk",
    "",
    r"\eta_{x,g}",
    "fraction of peak FLOP/s the routed-expert kernel reaches in a decode step",
)
eta_xp = define(
    "prefill_routed_gemm_efficiency",
    "eta_xpk",
    "",
    r"\eta_{x,p}",
    "fraction of peak FLOP/s the routed-expert kernel reaches in the prompt pass",
)
I_xp = define(
    "prefill_routed_padding_intensity",
    "I_xpk",
    "FLOP/byte",
    r"I_{x,p}",
    "FLOPs a byte of touched expert weights the prompt pass's grouped GEMMs spend on padded rows (part-filled tiles)",
)
# The expert formats a checkpoint may ship (derive/architecture/reader.py's expert_format) -> the fitted values
# its routed experts take in place of the fit's own format's.
EXPERT_FORMATS = {
    "mxfp4": {t_x: t_x4, t_xE: t_xE4, t_xp: t_xp4, eta_x: eta_x4, eta_xg: eta_xg4, eta_xp: eta_xp4, I_xp: I_xp4},
}
# The fit's own format's, for every model whose checkpoint does not ship its experts in a format of their own.
OWN_FORMAT = {t_x: t_xf, t_xE: t_xEf, t_xp: t_xpf, eta_x: eta_xf, eta_xg: eta_xgf, eta_xp: eta_xpf, I_xp: I_xpf}

# What a model's routed experts are: zero for a dense model (derive/architecture/build.py sums a MoE's).
W_x = define(
    "expert_bytes_read_per_step", "W_xread", "byte", r"W_{x}", "routed-expert weight bytes one decode step reads"
)
W_xp = define(
    "expert_bytes_read_by_prefill", "W_xpre", "byte", r"W_{x,p}", "routed-expert weight bytes the prompt pass reads"
)
v_act = define(
    "mlp_activation_values_per_token",
    "v_act",
    "1/token",
    r"v_{act}",
    "values a token's dense MLPs' (and shared experts') activation functions read and write, over all layers",
)
F_x = define("expert_flops_per_token", "F_xtok", "FLOP/token", r"F_{x}", "routed-expert matmul FLOPs per token")
w_x = define(
    "expert_shard_width",
    "w_xshard",
    "",
    r"w_{x}",
    "width of one routed expert's matrices on one accelerator (its intermediate over n)",
)

# The terms of one decode step.
t_fix = define("step_fixed_time", "t_fixd", "second", r"t_{fix}", "the layers' fixed kernel time in one pass")
t_ar = define(
    "decode_allreduce_time", "t_AR", "second", r"t_{ar}", "tensor-parallel all-reduce time of one decode step"
)
r_1 = constant("gemv_rows", "r_1", 1, "token", r"r_{1}", "rows a GEMV kernel multiplies: one token's on each rank")
r_1q = constant(
    "gemv_rows_per_sequence",
    "r_1q",
    1,
    "token/sequence",
    r"r_{1,q}",
    "rows of one sequence a GEMV kernel multiplies: its one token (a draft's checked tokens sit on its rank too)",
)
o_1 = define(
    "one_row",
    "o_1",
    "",
    r"o_{1}",
    "1 where no rank multiplies its weights by more than one row a step, 0 where one multiplies two or more",
)
t_W = define(
    "weight_read_time",
    "t_Wread",
    "second",
    r"t_{W}",
    "time to stream the weights a step reads, but the routed experts', split over n",
)
t_G = define(
    "decode_gemm_time",
    "t_Gdec",
    "second",
    r"t_{G}",
    "time for a decode step's GEMM FLOPs, but the routed experts', split over n",
)
t_K = define(
    "kv_read_time", "t_Kread", "second", r"t_{K}", "time to read the batch's KV cache, split over n accelerators"
)
t_A = define("decode_attention_compute_time", "t_Adec", "second", r"t_{A}", "time for a decode step's attention FLOPs")
X_ew = define(
    "decode_elementwise_bytes",
    "X_ewb",
    "byte",
    r"X_{ew}",
    "activation bytes the unfused elementwise passes move in one step",
)
t_ew = define(
    "elementwise_time", "t_ewd", "second", r"t_{ew}", "time for a step's elementwise passes on each accelerator"
)
t_N = define(
    "narrow_expert_time",
    "t_Nx",
    "second",
    r"t_{N}",
    "extra time of a decode step's routed-expert GEMMs for being narrow",
)
t_X = define(
    "routed_expert_time",
    "t_Xrt",
    "second",
    r"t_{X}",
    "time of a decode step's routed-expert kernels, split over n",
)
t_cal = define(
    "tpot",
    "TPOT",
    "second",
    r"\mathrm{TPOT}",
    "time per output token: one decode step at the fitted efficiencies (the floor is tpot_floor)",
)
alias("calibrated_step_time", t_cal)

# The terms of the prompt pass.
t_arp = define(
    "prefill_allreduce_time", "t_ARp", "second", r"t_{ar,p}", "tensor-parallel all-reduce time of the prompt pass"
)
t_Wp = define(
    "prefill_weight_time",
    "t_Wpre",
    "second",
    r"t_{W,p}",
    "time to stream the weights the prompt pass reads, but the routed experts'",
)
t_Gp = define(
    "prefill_gemm_time",
    "t_Gpre",
    "second",
    r"t_{G,p}",
    "time for the prompt pass's GEMM FLOPs, but the routed experts'",
)
t_Kp = define("prefill_kv_write_time", "t_Kpre", "second", r"t_{K,p}", "time to write the prompt's KV cache")
t_Ap = define(
    "prefill_attention_time", "t_Apre", "second", r"t_{A,p}", "time for the prompt pass's causal attention FLOPs"
)
X_ewp = define(
    "prefill_elementwise_bytes", "X_ewp", "byte", r"X_{ew,p}", "activation bytes of the prompt pass elementwise"
)
t_ewp = define(
    "prefill_elementwise_time", "t_ewp", "second", r"t_{ew,p}", "time for the prompt pass's elementwise passes"
)
X_actp = define(
    "prefill_mlp_activation_bytes",
    "X_actp",
    "byte",
    r"X_{act,p}",
    "bytes the prompt pass's MLP activation functions read and write on one accelerator",
)
t_actp = define(
    "prefill_mlp_activation_time",
    "t_actp",
    "second",
    r"t_{act,p}",
    "time for the prompt pass's MLP activation functions",
)
t_fixp = define("prefill_fixed_time", "t_fixp", "second", r"t_{fix,p}", "the layers' fixed time in the prompt pass")
t_Np = define(
    "prefill_narrow_expert_time",
    "t_Nxp",
    "second",
    r"t_{N,p}",
    "extra time of the prompt pass's routed-expert GEMMs for being narrow",
)
t_Xp = define(
    "prefill_routed_expert_time",
    "t_Xrtp",
    "second",
    r"t_{X,p}",
    "time of the prompt pass's routed-expert kernels, split over n",
)
t_calp = define(
    "ttft",
    "TTFT",
    "second",
    r"\mathrm{TTFT}",
    "time to first token: the prompt pass at the fitted efficiencies (the floor is ttft_floor)",
)
alias("calibrated_ttft", t_calp)

_MEGATRON = (
    "Megatron tensor parallelism sums each layer's attention and MLP outputs with one all-reduce each "
    "(Shoeybi et al. 2019, sec. 3); a ring all-reduce sends 2(n-1)/n of the activations from each accelerator "
    "(Patarasuk and Yuan 2009) after a fixed latency; one accelerator has none (Min(n-1, 1) = 0). TensorRT-LLM's "
    "custom all-reduce departs from the ring with the group: its one-shot kernel reads every peer's buffer, so a "
    "small message's latency and time a byte grow with each doubling (lambda, epsilon > 0); a large message takes "
    "the faster of it and a two-shot or NCCL kernel, whose time a byte NVSwitch's in-network reduction makes shrink "
    "(epsilon < 0), never below the link's (up to eight accelerators, as profiled). Each kernel's four constants "
    "are fitted per accelerator to aiconfigurator 0.12's all-reduce tables (tools/calibrate.py); a decode step's "
    "small messages take the one-shot kernel."
)


def _split(amount: sympy.Expr, efficiency: Sym, rate: Sym) -> sympy.Expr:
    """Time for `amount` shared by the n accelerators, each at `efficiency` of its peak `rate`."""
    return amount / (n.symbol * efficiency.symbol * rate.symbol)


def one_row(tokens: sympy.Expr, ranks: sympy.Expr = sympy.S.One, row: Sym = r_1) -> sympy.Expr:
    """o_1 for `tokens` rows (in units of `row`) a step over `ranks` ranks: 1 while each rank has at most one (every
    rank a GEMV), 0 from one more (the rank with two binds the step). Written as the difference of two ramps rather
    than Min(1, Max(0, .)): a solver resolves each extremum on its own, and a nested one would outlive its outer one's
    choice."""
    rows = tokens / row.symbol
    return larger(0, 1 + ranks - rows) - larger(0, ranks - rows)


def streamed(weights: sympy.Expr, one: sympy.Expr) -> sympy.Expr:
    """Time to stream one accelerator's `weights` at eta_w, or at eta_w1 where `one` (o_1) says one row."""
    return weights / BW.symbol * ((1 - one) / eta_w.symbol + one / eta_w1.symbol)


def _elementwise(tokens: sympy.Expr) -> sympy.Expr:
    """Bytes the unfused passes of every layer move for `tokens` d-wide activations (read and write)."""
    return 2 * L.symbol * m_ew.symbol * tokens * v_d.symbol * b_a.symbol


def _narrow(width: Sym, expert_bytes: Sym, tokens: sympy.Expr) -> sympy.Expr:
    """The extra w_0/w_x of the routed experts' roofline time (streaming or computing, whichever is longer)."""
    roofline = larger(expert_bytes.symbol / (n.symbol * BW.symbol), tokens * F_x.symbol / (n.symbol * P.symbol))
    return width.symbol / w_x.symbol * roofline


# TensorRT-LLM's all-reduce kernels, each by its fitted constants: its latency and that latency's growth a doubling of
# the group, its share of the link and the growth of its time a byte a doubling. The one-shot kernel serves small
# messages; a prompt pass's large ones may take the two-shot or NCCL kernel, whichever is faster.
ONE_SHOT = (alpha_ar, lambda_ar, eta_link, eps_ar)
LARGE_MESSAGE = (alpha_p, lambda_arp, eta_linkp, eps_arp)
# The kernels each pass chooses among: a decode step's messages are small (and its time stays linear in the batch, so
# its largest batch has a closed form: derive/batch_roots.py); a prompt pass takes the faster kernel.
DECODE_LINK = (ONE_SHOT,)
PREFILL_LINK = (ONE_SHOT, LARGE_MESSAGE)


# aiconfigurator profiles groups of 2, 4 and 8: past 8 the kernels keep 8's constants (and the fit holds their time a
# byte at or above the link's at 2 and at 8, so at every group between: a floor stays a floor).
PROFILED_DOUBLINGS = 2


def _kernel(data: sympy.Expr, group: sympy.Expr, kernel: tuple[Sym, Sym, Sym, Sym], bandwidth: Sym) -> sympy.Expr:
    """One all-reduce kernel: a latency and the ring's bytes at a share of the link, both growing with each doubling
    of the group past two, up to eight."""
    latency, growth, efficiency, byte_growth = kernel
    doublings = smaller(sympy.log(group / 2, 2), PROFILED_DOUBLINGS)
    per_byte = (1 + byte_growth.symbol * doublings) / efficiency.symbol
    return latency.symbol * (1 + growth.symbol * doublings) + ring_allreduce(group, data) * per_byte / bandwidth.symbol


def allreduce(
    data: sympy.Expr, group: sympy.Expr, kernels: tuple[tuple[Sym, Sym, Sym, Sym], ...], bandwidth: Sym
) -> sympy.Expr:
    """One all-reduce of `data` bytes across `group` accelerators, each sending over `bandwidth` one way, on the
    fastest of `kernels` (DECODE_LINK, PREFILL_LINK); nothing in a group of one."""
    times = [_kernel(data, group, kernel, bandwidth) for kernel in kernels]
    return smaller(group - 1, 1) * (smaller(*times) if len(times) > 1 else times[0])


def _allreduce(tokens: sympy.Expr, kernels: tuple[tuple[Sym, Sym, Sym, Sym], ...]) -> sympy.Expr:
    """Two all-reduces a layer of `tokens` d-wide activations; none on one accelerator."""
    return L.symbol * m_ar.symbol * allreduce(tokens * v_d.symbol * b_a.symbol, n.symbol, kernels, BW_link)


class Kernel(NamedTuple):
    """A MoE kernel's fitted constants, and whether its streaming and its computing overlap."""

    fixed: Sym  # a layer's fixed time
    per_expert: Sym | None  # a fixed time for each expert a rank holds (a decode step's few rows an expert)
    passes: Sym  # passes over the routed activations
    intermediate_passes: Sym | None  # passes over the routed intermediate activations (a prompt pass's)
    gemm: Sym  # share of the peak FLOP/s
    padding: Sym | None  # FLOPs a byte of touched experts' weights on part-filled tiles (a prompt pass's)
    overlapped: bool  # the longer of streaming and computing, else the two one after the other


def routed_experts(
    layers: sympy.Expr,
    kernel: Kernel,
    expert_bytes: sympy.Expr,
    expert_flops: sympy.Expr,
    routed_activations: sympy.Expr,
    routed_intermediates: sympy.Expr,
    experts: sympy.Expr,
) -> sympy.Expr:
    """A MoE kernel over `layers` layers (DECODE_KERNEL or PREFILL_KERNEL): each layer a fixed time, a fixed time for
    each of the rank's `experts` (decode), its passes over the `routed_activations` bytes and (a prompt pass's) over
    the `routed_intermediates` bytes; then the touched `expert_bytes` streamed and the `expert_flops` and the padding's
    FLOPs a byte of them computed, the longer of the two where the kernel overlaps them, else both
    (formulas/layout.py prices a slot so too)."""
    streaming = expert_bytes / (eta_x.symbol * BW.symbol)
    padded = expert_flops + (kernel.padding.symbol * expert_bytes if kernel.padding is not None else 0)
    computing = padded / (kernel.gemm.symbol * P.symbol)
    per_layer = kernel.fixed.symbol + kernel.passes.symbol * routed_activations / BW.symbol
    if kernel.intermediate_passes is not None:
        per_layer += kernel.intermediate_passes.symbol * routed_intermediates / BW.symbol
    if kernel.per_expert is not None:
        per_layer += kernel.per_expert.symbol * experts
    both = larger(streaming, computing) if kernel.overlapped else streaming + computing
    return layers * per_layer + both


_DENSE_MLP_FIXED = (
    " t_L is fitted on dense layers, so it counts a dense MLP's kernels, t_mlp of it: a MoE layer runs its routed "
    "kernel in their place (that kernel's own fixed time, from aiconfigurator's MoE tables, is t_X's), and a dense "
    "MLP beside the routed experts (DeepSeek's shared experts: TensorRT-LLM's DeepseekV3MoE runs them beside its fused "
    "MoE) runs them too, so L_sx - L_x layers' worth. t_mlp is fitted on the MoE training model, between 0 and t_L "
    "(tools/calibrate.py)."
)
_LATENT_FIXED = (
    " A latent-attention layer runs more kernels than the GQA layers t_L is fitted on (the fused down-projection, "
    "q's up-projection, the absorbed key and value BMMs, the latent norms): t_la more, aiconfigurator 0.12's MLA block "
    "less Llama 3 70B's attention kernels at batch 1, each less its weights' streaming "
    "(tools/aiconfigurator_mla.py)."
)
step_fixed_time = formula(
    t_fix,
    L.symbol * t_L.symbol + (L_sx.symbol - L_x.symbol) * t_mlp.symbol + L_la.symbol * t_la.symbol,
    "Each layer launches its kernels and runs its small ones in a time that does not shrink with the batch "
    "(aiconfigurator's per-op tables at batch 1; Nsight traces of TensorRT-LLM decode)."
    + _DENSE_MLP_FIXED
    + _LATENT_FIXED,
)
decode_allreduce_time = formula(t_ar, _allreduce(B.symbol * tau.symbol, DECODE_LINK), _MEGATRON)
one_row_step = formula(
    o_1,
    one_row(B.symbol * tau.symbol),
    "TensorRT-LLM multiplies one row by a GEMV kernel, more rows by a GEMM's tiles (aiconfigurator 0.12's L40S GEMM "
    "tables: 0.93-1.00 of the bandwidth at one row, 0.77-0.86 from two, on weights past its L2).",
)
weight_read_time = formula(
    t_W,
    streamed((W_read.symbol - W_x.symbol) / n.symbol, o_1.symbol),
    "A step streams every weight it multiplies through once, split over n accelerators, at a fraction of the "
    "peak bandwidth (scaling-book, 'All About Transformer Inference'), its GEMV kernel's at one row; the routed "
    "experts' kernel is t_X.",
)
decode_gemm_time = formula(
    t_G,
    _split(B.symbol * tau.symbol * (F.symbol - F_x.symbol), eta_g, P),
    "The step's B·tau tokens through the weights, at a fraction of the peak FLOP/s; the routed experts' are t_X.",
)
kv_read_time = formula(
    t_K,
    kv_total.symbol / (s_kv.symbol * eta_kv.symbol * BW.symbol),
    "Each step reads every cached token of every sequence once, split over the s_kv shards of its KV heads.",
)
decode_attention_compute_time = formula(
    t_A,
    _split(B.symbol * tau.symbol * F_att.symbol, eta_a, P),
    "Each new token attends over its cached context.",
)
elementwise_bytes = formula(
    X_ew,
    _elementwise(B.symbol * tau.symbol),
    "Each unfused pass reads and writes the d-wide activation of every token once.",
)
elementwise_time = formula(
    t_ew,
    X_ew.symbol / BW.symbol,
    "Norms and residual adds run on every accelerator over the full activation: tensor parallelism does not "
    "split them (Megatron replicates them).",
)
_NARROW = (
    "A grouped GEMM over many narrow experts (tensor parallelism splits each expert's intermediate n ways) runs "
    "its tiles part empty: at width w its speed is w/(w + w_0) of a wide GEMM's, an extra w_0/w of the expert "
    "matmuls' roofline time (CUTLASS grouped-GEMM tile shapes; aiconfigurator's MoE tables)."
)
no_routed_bytes = formula(W_x, sympy.Integer(0), "A dense model has no routed experts.")
no_routed_prefill_bytes = formula(W_xp, sympy.Integer(0), "A dense model has no routed experts.")
no_routed_flops = formula(F_x, sympy.Integer(0), "A dense model has no routed experts.")
no_routed_layers = formula(L_x, sympy.Integer(0), "A dense model has no routed experts.")
no_routed_copies = formula(k_x, sympy.Integer(0), "A dense model has no routed experts.")
no_routed_experts = formula(E_x, sympy.Integer(0), "A dense model has no routed experts.")
_OWN = "Routed experts stored in the weights' own format run the fit's MoE kernel (tools/calibrate.py)."
own_format_layer_time = formula(t_x, t_xf.symbol, _OWN)
own_format_prefill_layer_time = formula(t_xp, t_xpf.symbol, _OWN)
own_format_expert_time = formula(t_xE, t_xEf.symbol, _OWN)
own_format_stream_efficiency = formula(eta_x, eta_xf.symbol, _OWN)
own_format_decode_gemm_efficiency = formula(eta_xg, eta_xgf.symbol, _OWN)
own_format_prefill_gemm_efficiency = formula(eta_xp, eta_xpf.symbol, _OWN)
own_format_prefill_padding_intensity = formula(I_xp, I_xpf.symbol, _OWN)
mlp_shard_width = formula(w_x, d_ff.symbol / n.symbol, "Tensor parallelism splits the MLP's intermediate n ways.")
narrow_expert_time = formula(
    t_N,
    _narrow(w_0, W_x, B.symbol * tau.symbol),
    _NARROW,
)
prefill_narrow_expert_time = formula(
    t_Np,
    _narrow(w_0p, W_xp, B.symbol * S_p.symbol),
    _NARROW,
)
_ROUTED = (
    "aiconfigurator's profiled MoE kernels (TensorRT-LLM grouped GEMMs, one op a MoE layer) cost a fixed time a "
    "layer however few tokens and a few passes over the k routed copies of every token's activation, which tensor "
    "parallelism does not split; then they stream the experts the tokens touch and compute their FLOPs at shares of "
    "the peaks that depend on the experts' format (MXFP4's 4-bit weights are dequantised in the kernel); all fitted "
    "per accelerator and format to aiconfigurator 0.12's MoE tables (tools/calibrate.py); the dense MLP kernels it "
    "runs in place of leave t_fix (t_mlp). Zero for a dense model."
)
# The decode step's kernel and the prompt pass's. At a decode step each expert sees a few rows: a tile's few
# k-steps leave its weight loads and its MMAs too short a pipeline to hide one behind the other, so the two add
# (fitted so, the MoE tables' decode rows come 0.7-5 points closer at the median on every accelerator and format but
# NVFP4 than with the longer of the two); a prompt pass's long tiles overlap them. A prompt pass also moves its
# routed rows' intermediate activations (the first GEMM's output, k copies of the expert's width a token) through
# memory between its GEMMs: a wide expert's (Mixtral's 14,336) outweigh its hidden-wide passes; at a decode step's
# few rows they cannot be told from the fixed time.
DECODE_KERNEL = Kernel(t_x, t_xE, m_x, None, eta_xg, None, overlapped=False)
PREFILL_KERNEL = Kernel(t_xp, None, m_xp, m_xip, eta_xp, I_xp, overlapped=True)


def _routed_activations(tokens: sympy.Expr, width: sympy.Expr = d.symbol) -> sympy.Expr:
    """Bytes of the k copies of `tokens` activations `width` wide (d, else an expert's intermediate on one
    accelerator) a MoE layer routes, on every accelerator (experts split)."""
    return tokens * k_x.symbol * width / d.symbol * v_d.symbol * b_a.symbol


def _routed_on_one_node(kernel: Kernel, expert_bytes: Sym, tokens: sympy.Expr) -> sympy.Expr:
    """The routed experts' kernel for `tokens` on n accelerators splitting every expert (no expert parallelism)."""
    return routed_experts(
        L_x.symbol,
        kernel,
        expert_bytes.symbol / n.symbol,
        tokens * F_x.symbol / n.symbol,
        _routed_activations(tokens),
        _routed_activations(tokens, w_x.symbol),
        E_x.symbol,
    )


routed_expert_time = formula(t_X, _routed_on_one_node(DECODE_KERNEL, W_x, B.symbol * tau.symbol), _ROUTED)
prefill_routed_expert_time = formula(
    t_Xp,
    _routed_on_one_node(PREFILL_KERNEL, W_xp, B.symbol * S_p.symbol),
    _ROUTED + " A prompt pass's grouped GEMMs pad each touched expert's rows to whole tiles: I_x,p FLOPs a byte of its "
    "weights more (fitted the same way; at a decode step's few rows a layer the padding is part of t_x).",
)
calibrated_step_time = formula(
    t_cal,
    t_fix.symbol
    + t_ar.symbol
    + t_N.symbol
    + t_X.symbol
    + larger(t_W.symbol, t_G.symbol)
    + larger(t_K.symbol, t_A.symbol)
    + t_ew.symbol,
    "Kernels run one after another: the GEMMs take the longer of streaming and computing, the routed experts' "
    "kernel streams then computes (DECODE_KERNEL), attention takes the longer of reading the cache and computing, "
    "and the all-reduces sit between them on the critical path.",
)

prefill_allreduce_time = formula(t_arp, _allreduce(B.symbol * S_p.symbol, PREFILL_LINK), _MEGATRON)
prefill_fixed_time = formula(
    t_fixp,
    L.symbol * t_Lp.symbol + L_qn.symbol * t_qn.symbol + (L_sx.symbol - L_x.symbol) * t_mlpp.symbol,
    "Each layer's kernels cost a fixed time in the prompt pass too, and q and k norms more (aiconfigurator 0.12 "
    "prices them at a fixed time a layer in its context attention op, none at decode; tools/aiconfigurator_qknorm.py)."
    + _DENSE_MLP_FIXED,
)
prefill_weight_time = formula(
    t_Wp,
    _split(W_pre.symbol - W_xp.symbol, eta_w, BW),
    "The prompt pass streams every weight it multiplies through once; the routed experts' kernel is t_X,p.",
)
prefill_gemm_time = formula(
    t_Gp,
    _split(B.symbol * (F_pw.symbol - S_p.symbol * F_x.symbol), eta_p, P),
    "Every prompt token through the weights (the head scoring the last), at the large-GEMM fraction of the peak "
    "FLOP/s; the routed experts' are t_X,p.",
)
prefill_kv_write_time = formula(
    t_Kp,
    B.symbol * K_pr.symbol / (s_kvp.symbol * eta_kv.symbol * BW.symbol),
    "The prompt pass writes each prompt token's KV once, each accelerator its shard of the KV heads.",
)
prefill_attention_time = formula(
    t_Ap,
    _split(B.symbol * S_p.symbol * F_pre.symbol, eta_a, P),
    "Causal attention over the prompt (FlashAttention's FLOP count), at a fraction of the peak.",
)
prefill_elementwise_bytes = formula(
    X_ewp,
    _elementwise(B.symbol * S_p.symbol),
    "Each unfused pass reads and writes the d-wide activation of every prompt token once.",
)
prefill_elementwise_time = formula(t_ewp, X_ewp.symbol / BW.symbol, "Replicated on every accelerator, as at decode.")
prefill_mlp_activation_bytes = formula(
    X_actp,
    B.symbol * S_p.symbol * v_act.symbol * b_a.symbol / n.symbol,
    "A gated MLP's activation reads its gate and up halves and writes their product, each d_ff wide (a plain one "
    "reads one and writes one), on every prompt token; tensor parallelism splits the intermediate n ways. At a "
    "prompt pass's many tokens this traffic is of the GEMMs' own order (d_ff/d of a d-wide pass, per token).",
)
prefill_mlp_activation_time = formula(
    t_actp,
    m_actp.symbol * X_actp.symbol / BW.symbol,
    "m_act,p passes over them, fitted (aiconfigurator prices TensorRT-LLM's act_gate by its bytes).",
)
calibrated_ttft = formula(
    t_calp,
    t_fixp.symbol
    + t_arp.symbol
    + t_Np.symbol
    + t_Xp.symbol
    + larger(t_Wp.symbol, t_Gp.symbol)
    + larger(t_Kp.symbol, t_Ap.symbol)
    + t_ewp.symbol
    + t_actp.symbol,
    "The prompt pass is one step over B·S_p tokens, its kernels one after another.",
)

# What a user plans with.
R_cal = define(
    "throughput",
    "R_cal",
    "token/second",
    r"R_{cal}",
    "decode tokens per second, all sequences, at the calibrated step (the ceiling is throughput_floor)",
)
alias("calibrated_throughput", R_cal)
e2e_cal = define(
    "e2e_latency", "T_e2e", "second", r"T_{e2e}", "end-to-end latency of a request, calibrated (e2e_latency_floor)"
)
alias("calibrated_e2e_latency", e2e_cal)
calibrated_throughput = formula(R_cal, B.symbol * tau.symbol / t_cal.symbol, "Every sequence gains tau tokens a step.")
calibrated_e2e_latency = formula(
    e2e_cal,
    t_calp.symbol + (S_o.symbol - S_sc.symbol) * t_cal.symbol / tau.symbol,
    "The prompt pass, which gives the first output token, then (S_o - 1)/tau decode steps for the rest.",
)

# Where the calibrated roofline bends: the ridge at the efficiencies real kernels reach, not at the peaks.
I_ridge_g = define(
    "calibrated_gemm_ridge",
    "I_ridgeg",
    "FLOP/byte",
    r"I_{ridge,g}",
    "intensity past which a decode GEMM's calibrated FLOP time exceeds its weight-read time",
)
I_ridge_a = define(
    "calibrated_attention_ridge",
    "I_ridgea",
    "FLOP/byte",
    r"I_{ridge,a}",
    "intensity past which decode attention's calibrated FLOP time exceeds its cache-read time",
)
calibrated_gemm_ridge = formula(
    I_ridge_g,
    eta_g.symbol * P.symbol / (eta_w.symbol * BW.symbol),
    "weight_read_time and decode_gemm_time balance here: the ridge at the fitted efficiencies.",
)
calibrated_attention_ridge = formula(
    I_ridge_a,
    eta_a.symbol * P.symbol / (eta_kv.symbol * BW.symbol),
    "kv_read_time and decode_attention_compute_time balance here: attention kernels reach a smaller share of peak "
    "FLOP/s than GEMMs, so their ridge sits lower.",
)
B_ridge_g = define(
    "calibrated_ridge_batch",
    "B_ridgeg",
    "sequence",
    r"B_{ridge,g}",
    "batch at which the decode weight GEMMs reach the calibrated GEMM ridge",
)
