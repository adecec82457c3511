"""A deployment layout (tp × ep × pp × dp): what one accelerator holds, reads, computes and sends.

A layout of n·p·d accelerators runs one copy of the model:
- tensor parallelism n splits every layer's heads and matrices (Megatron, Shoeybi et al. 2019);
- pipeline parallelism p gives each stage L/p layers; the batch is p micro-batches of B sequences,
  one in each stage at a time, so a token's step is p stage-slots (Huang et al. 2019, 'GPipe');
- attention data parallelism d runs d copies of the attention, each over B/d of a micro-batch,
  while the routed experts are shared by all n·d accelerators of a stage (DeepSeek-V3's serving,
  arXiv:2412.19437 sec. 3.4; SGLang's DP attention);
- expert parallelism e places whole experts: e = 1 splits every expert n ways like the MLP, e = n·d
  gives each accelerator E/e whole experts and moves tokens to them by all-to-all.
Here B is one micro-batch: the sequences one stage works on at a time (the batch when p = 1).
The model's own quantities (W_read, K, F, the routed W_x) are those of that micro-batch.
Tensor parallelism cannot split a cache past its KV heads: s_kv = min(n, n_kv) shards it, and a
latent cache (MLA) is whole on every accelerator (vLLM, SGLang), hence attention data parallelism.
"""

import functools

import sympy

from derive.core.library import Formula, formula, larger, smaller
from derive.core.symbols import Sym, constant, define
from formulas import calibrated as cal
from formulas import claim as cl
from formulas import energy as en
from formulas import roofline as rf
from formulas import speculative as sp
from formulas import utilisation as ut
from formulas.collectives import exchange, over_link, ring_allreduce
from formulas.energy import P_acc
from formulas.flops import F_att
from formulas.notation import (
    BW,
    B,
    B_max,
    E,
    F,
    F_pre,
    F_pw,
    K_pr,
    L,
    M,
    P,
    R,
    S_o,
    S_p,
    W,
    d,
    k_e,
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
from formulas.reads import W_pre, W_read
from formulas.sharding import b_a, v_d

_LAYOUT = "formulas/layout.py's layout: n-way tensor, p-stage pipeline, d-way attention data parallelism"

# The layout.
pp = define("pp", "p", "", "p", "pipeline stages (each holds L/p layers)")
dp = define("dp", "d_a", "", r"d_{a}", "attention data-parallel ranks sharing one copy of the routed experts")
ep = define(
    "ep",
    "e",
    "",
    "e",
    "expert-parallel groups: a stage's n·d accelerators hold E/e experts a group, each split n·d/e ways",
)
N_L = define("layout_accelerators", "N_L", "", r"N_{L}", "accelerators one copy of the model runs on")
B_L = define("layout_sequences", "B_L", "sequence", r"B_{L}", "sequences the layout decodes at once (p micro-batches)")
L_a = define(
    "alltoall_layers",
    "L_a",
    "",
    r"L_{a}",
    "layers whose experts the tokens travel to (0 unless e > 1 or d > 1: else the MLP all-reduce serves)",
)
W_E = define("routed_expert_bytes", "W_E", "byte", r"W_{E}", "bytes of the routed experts' weights, stored")
BW_tp = define("tp_link_bandwidth", "BW_tp", "byte/second", r"BW_{tp}", "one-way link of the tensor-parallel group")
BW_ep = define("ep_link_bandwidth", "BW_ep", "byte/second", r"BW_{ep}", "one-way link of the expert all-to-all group")
# The fused MoE path's two collectives (TensorRT-LLM's MoEDispatch under attention data parallelism): the tokens
# gathered to the group, the experts' outputs reduce-scattered back; a latency and a link share each, in a decode step
# and in a prompt pass (fitted per accelerator, formulas/fused_dispatch.json).
alpha_ag = define(
    "fused_gather_latency", "alpha_ag", "second", r"\alpha_{ag}", "fixed latency of a decode step's MoE all-gather"
)
eta_ag = define(
    "fused_gather_link_share", "eta_ag", "", r"\eta_{ag}", "share of the link a decode step's MoE all-gather gets"
)
alpha_rs = define(
    "fused_scatter_latency", "alpha_rs", "second", r"\alpha_{rs}", "fixed latency of a decode step's MoE reduce-scatter"
)
eta_rs = define(
    "fused_scatter_link_share", "eta_rs", "", r"\eta_{rs}", "share of the link a decode step's MoE reduce-scatter gets"
)
alpha_agp = define(
    "prefill_fused_gather_latency",
    "alpha_agp",
    "second",
    r"\alpha_{ag,p}",
    "fixed latency of a prompt pass's MoE all-gather",
)
eta_agp = define(
    "prefill_fused_gather_link_share",
    "eta_agp",
    "",
    r"\eta_{ag,p}",
    "share of the link a prompt pass's MoE all-gather gets",
)
alpha_rsp = define(
    "prefill_fused_scatter_latency",
    "alpha_rsp",
    "second",
    r"\alpha_{rs,p}",
    "fixed latency of a prompt pass's MoE reduce-scatter",
)
eta_rsp = define(
    "prefill_fused_scatter_link_share",
    "eta_rsp",
    "",
    r"\eta_{rs,p}",
    "share of the link a prompt pass's MoE reduce-scatter gets",
)
DECODE_FUSED = (alpha_ag, eta_ag, alpha_rs, eta_rs)
PREFILL_FUSED = (alpha_agp, eta_agp, alpha_rsp, eta_rsp)
w_E = define(
    "wide_ep",
    "w_E",
    "",
    r"w_{E}",
    "1 where the dispatch runs DeepEP's kernels (whole experts over a node or more under attention dp), else 0",
)
r_dq = define(
    "dispatch_byte_share",
    "r_dq",
    "",
    r"r_{dq}",
    "bytes a token's dispatch sends over the combine's (1/2 where the dispatch goes in FP8 and the combine in bf16)",
)
alpha_E = define(
    "deepep_latency",
    "alpha_E",
    "second",
    r"\alpha_{E}",
    "fixed time of one MoE layer's DeepEP dispatch and combine in decode",
)
eta_E = define("deepep_bandwidth_efficiency", "eta_E", "", r"\eta_{E}", "share of the link DeepEP's decode kernels get")
alpha_Ep = define(
    "deepep_prefill_latency",
    "alpha_Ep",
    "second",
    r"\alpha_{E,p}",
    "fixed time of one MoE layer's DeepEP dispatch and combine in a prompt pass",
)
eta_Ep = define(
    "deepep_prefill_bandwidth_efficiency",
    "eta_Ep",
    "",
    r"\eta_{E,p}",
    "share of the link DeepEP's prompt-pass kernels get",
)
x_E = define(
    "ep_crosses_network",
    "x_E",
    "",
    r"x_{E}",
    "1 where an expert-parallel group spans more than one NVLink domain (its all-to-all crosses the NICs), else 0",
)
eta_En = constant(
    "deepep_network_efficiency",
    "eta_En",
    "43/50",
    "",
    r"\eta_{E,net}",
    "share of the NIC DeepEP's kernels get across nodes (DeepEP README: 43 GB/s of a 400 Gb/s CX7, EP 16, H800)",
)
BW_pp = define("pp_link_bandwidth", "BW_pp", "byte/second", r"BW_{pp}", "one-way link between pipeline stages")

# Per accelerator, one stage-slot (one micro-batch through one stage).
W_g = define("weight_bytes_per_accelerator", "W_g", "byte", r"W_{g}", "weight bytes one accelerator stores")
K_gs = define(
    "kv_bytes_held_per_accelerator",
    "K_gs",
    "byte",
    r"K_{g,held}",
    "KV bytes one accelerator holds for all p micro-batches",
)
W_rg = define("weight_read_per_accelerator", "W_rg", "byte", r"W_{r,g}", "weight bytes one accelerator reads in a slot")
K_g = define("kv_read_per_accelerator", "K_g", "byte", r"K_{g}", "KV bytes one accelerator reads in a slot")
F_g = define("gemm_flops_per_accelerator", "F_g", "FLOP", r"F_{g}", "GEMM FLOPs of one accelerator in a slot")
A_g = define("attention_flops_per_accelerator", "A_g", "FLOP", r"A_{g}", "attention FLOPs of one accelerator in a slot")
X_r = define("rank_activation_bytes", "X_r", "byte", r"X_{r}", "d-wide activations of one attention rank's tokens")
Y_tp = define("tp_sent_bytes", "Y_tp", "byte", r"Y_{tp}", "all-reduce bytes one accelerator sends in a slot")
Y_ep = define("ep_sent_bytes", "Y_ep", "byte", r"Y_{ep}", "all-to-all bytes one accelerator sends in a slot")
Y_pp = define("pp_sent_bytes", "Y_pp", "byte", r"Y_{pp}", "activation bytes one accelerator sends to the next stage")
B_mL = define(
    "layout_max_micro_batch",
    "B_mL",
    "sequence",
    r"B_{max,L}",
    "largest micro-batch whose cache fits beside each accelerator's weights on the layout",
)
w_L = define("layout_expert_width", "w_L", "", r"w_{L}", "width of one routed expert's matrices on one accelerator")

# Times.
c_pop = constant(
    "expert_popularity_cv",
    "c_pop",
    "1.4",
    "",
    r"c_{pop}",
    "spread of the tokens each routed expert gets, as a coefficient of variation (fitted to aiconfigurator)",
)
I_ep = define("expert_imbalance", "I_ep", "", r"I_{ep}", "busiest expert rank's routed tokens over the mean rank's")
d_p = define(
    "prompt_ranks",
    "d_p",
    "",
    r"d_{p}",
    "attention ranks whose prompt passes run at once, sharing the stage's experts (1: a lone prompt)",
)
tau_v = define(
    "layout_tokens_through",
    "tau_v",
    "token/sequence",
    r"\tau_{v}",
    "tokens each sequence carries through a step: its own, and the k a draft proposes for checking",
)
o_1L = define(
    "layout_one_row",
    "o_1L",
    "",
    r"o_{1,L}",
    "1 where no attention rank multiplies its weights by more than one row a step, 0 where one has two or more",
)
t_mg = define(
    "layout_memory_time", "t_mg", "second", r"t_{mem,g}", "one accelerator's bytes of a slot at full bandwidth"
)
t_cg = define("layout_compute_time", "t_cg", "second", r"t_{comp,g}", "one accelerator's FLOPs of a slot at peak")
t_lk = define(
    "layout_link_time", "t_lk", "second", r"t_{link,g}", "one accelerator's collectives of a slot at full link speed"
)
t_sf = define("layout_slot_floor", "t_sf", "second", r"t_{slot}", "floor of one slot: the slowest of HBM, FLOPs, links")
tpot_f = define("layout_tpot_floor", "TPOT_L", "second", r"\mathrm{TPOT}_{L}", "floor of a decode step of the layout")
t_sc = define("layout_slot_time", "t_sc", "second", r"t_{slot,cal}", "one slot at the fitted efficiencies")
tpot_c = define("layout_tpot", "TPOT_Lc", "second", r"\mathrm{TPOT}_{L,cal}", "decode step of the layout, calibrated")
W_pg = define(
    "prefill_weight_read_per_accelerator", "W_pg", "byte", r"W_{p,g}", "weight bytes a stage reads to prefill"
)
F_pg = define("prefill_flops_per_accelerator", "F_pg", "FLOP", r"F_{p,g}", "GEMM FLOPs of one accelerator to prefill")
A_pg = define(
    "prefill_attention_flops_per_accelerator",
    "A_pg",
    "FLOP",
    r"A_{p,g}",
    "attention FLOPs of one accelerator to prefill",
)
K_pg = define("prefill_kv_per_accelerator", "K_pg", "byte", r"K_{p,g}", "KV bytes one accelerator writes to prefill")
X_p = define("prefill_activation_bytes", "X_p", "byte", r"X_{p}", "d-wide activations of the prompts being prefilled")
ttft_f = define("layout_ttft_floor", "TTFT_L", "second", r"\mathrm{TTFT}_{L}", "floor of the prompt pass on the layout")
t_pc = define("layout_prefill_slot_time", "t_pslot", "second", r"t_{p,cal}", "one stage of the prompt pass, calibrated")
ttft_c = define("layout_ttft", "TTFT_Lc", "second", r"\mathrm{TTFT}_{L,cal}", "prompt pass on the layout, calibrated")

# What a plan reports.
t_rq = define(
    "prefill_time_per_request",
    "t_rq",
    "second/sequence",
    r"t_{rq}",
    "time one more prompt adds to a step that already reads the weights (TTFT of two prompts less that of one)",
)
t_tok = define(
    "layout_token_time",
    "t_tok",
    "second",
    r"t_{tok}",
    "decode time for tau tokens a sequence, speculation's drafts and verification included",
)
t_tok_f = define(
    "layout_token_time_floor", "t_tok_f", "second", r"t_{tok,f}", "floor of the decode time for tau tokens a sequence"
)
tpot_s = define(
    "layout_served_tpot", "TPOT_s", "second", r"\mathrm{TPOT}_{s}", "time per output token users see, prefills included"
)
Q_L = define(
    "layout_capacity", "Q_L", "sequence/second", r"Q_{L}", "requests one copy of the layout completes a second"
)
Q_T = define(
    "ttft_capacity",
    "Q_T",
    "sequence/second",
    r"Q_{T}",
    "requests a second one copy takes with its mean TTFT at the target",
)
Q_s = define(
    "served_capacity", "Q_s", "sequence/second", r"Q_{s}", "requests a second one copy serves within both targets"
)
R_gpu = define("throughput_per_accelerator", "R_g", "token/second", r"R_{g}", "output tokens a second per accelerator")
R_usr = define("tokens_per_user", "R_u", "token/second/sequence", r"R_{u}", "output tokens a second each user sees")
lam = define("request_rate", "lambda_r", "sequence/second", r"\lambda", "requests a second to serve")
N_rate = define("accelerators_for_rate", "N_rate", "", r"N_{\lambda}", "accelerators whole copies need for the rate")
price = define("accelerator_price", "c_acc", "USD/second", r"c_{acc}", "rental price of one accelerator")
c_tok = define("cost_per_token", "c_tok", "USD/token", r"c_{tok}", "cost of one output token at full capacity")
c_fleet = define(
    "fleet_cost_per_token",
    "c_fleet",
    "USD/token",
    r"c_{fleet}",
    "cost of one output token of the fleet serving the rate",
)
e_tok_L = define("layout_energy_per_token", "e_L", "joule/token", r"e_{L}", "energy per output token at TDP")

_SLOT = "A slot is one micro-batch through one stage: L/p layers over that micro-batch's tokens."


def _per(amount: sympy.Expr, *splits: Sym) -> sympy.Expr:
    return amount / sympy.Mul(*(s.symbol for s in splits))


def _dispatched(activations: Sym) -> sympy.Expr:
    """Bytes one accelerator sends the stage's others in one dispatch (the combine sends as many back): its 1/n of
    its rank's tokens, each to the n·d/e accelerators of every group its k experts sit in, at most once to each."""
    group = n.symbol * dp.symbol
    copies = smaller(k_e.symbol * group / ep.symbol, group)
    return exchange(group, copies * activations.symbol / n.symbol)


def _wide_dispatch(activations: Sym, wide: tuple[Sym, Sym, sympy.Expr]) -> sympy.Expr:
    """One MoE layer's dispatch and combine on DeepEP's kernels (formulas/deepep.json): a fixed time and each
    accelerator's tokens sent `copies` times to the stage's others at the fitted share of the link (of the NIC, past
    one domain)."""
    latency, efficiency, copies = wide
    group = n.symbol * dp.symbol
    # The fitted share is of NVLink inside a node (aiconfigurator's tables); across nodes the NIC binds, at the share
    # DeepEP's authors measured there.
    share = (1 - x_E.symbol) * efficiency.symbol + x_E.symbol * eta_En.symbol
    return latency.symbol + exchange(group, copies * activations.symbol / n.symbol) / (share * BW_ep.symbol)


# DeepEP's low-latency (decode) kernels send a token once an expert; its high-throughput (prompt) kernels once a
# destination accelerator: of e ranks holding k experts placed at random, e(1 - (1 - 1/e)^k) of them.
_COPIES_AN_EXPERT = smaller(k_e.symbol, ep.symbol)
_COPIES_A_RANK = ep.symbol * (1 - (1 - 1 / ep.symbol) ** k_e.symbol)


def _shared(dense: sympy.Expr, routed: sympy.Expr) -> sympy.Expr:
    """One accelerator's part: its rank's 1/(n·p) of what is replicated, 1/(n·d·p) of the shared experts."""
    return _per(dense, n, pp) + _per(routed, n, dp, pp)


def _calibrated_slot(
    tokens: sympy.Expr,
    activations: Sym,
    fixed: sympy.Expr,
    link: tuple[tuple[Sym, Sym, Sym, Sym], ...],
    narrow: Sym,
    routed: Sym,
    kernel: cal.Kernel,
    shares: tuple[Sym, Sym, Sym, Sym, Sym],
    imbalance: Sym,
    fused: tuple[Sym, Sym, Sym, Sym],
    wide: tuple[Sym, Sym, sympy.Expr],
    together: sympy.Expr = sympy.S.One,
    mlp_activations: sympy.Expr = sympy.S.Zero,
    one_row: sympy.Expr = sympy.S.Zero,
) -> sympy.Expr:
    """One stage-slot at the fitted efficiencies, decode or prompt pass alike (the terms of formulas/calibrated.py).

    `fixed` is the pass's fixed time over all layers, a stage taking its 1/p; `mlp_activations` (a prompt pass's) is
    the time of the MLP activations on their own width. `shares` are one accelerator's weights read, GEMM FLOPs, the
    GEMMs' efficiency, cache bytes and attention FLOPs; the routed experts' part of them runs the MoE kernel
    (`kernel`, formulas/calibrated.py routed_experts), where the busiest expert rank computes `imbalance` times its
    share of the routed experts' FLOPs and moves as many times its share of the routed activations (and of their
    intermediates, `w_L` wide), of `together` ranks' tokens where that many ranks' prompt passes share the experts
    at once. The tokens reach their experts on the fused all-gather and reduce-scatter (`fused`: each one's latency
    and link share, DECODE_FUSED or PREFILL_FUSED) or on DeepEP's kernels (`wide`), as w_E says. The weights stream
    at the GEMV kernel's share where `one_row` (o_1) says no rank has more than one row.
    """
    weights, flops, gemm, cache, attention = shares
    gather_latency, gather_share, scatter_latency, scatter_share = fused
    tokens = tokens * together
    routed_bytes, routed_flops = _per(routed.symbol, n, dp, pp), _per(tokens * cal.F_x.symbol, n, dp, pp)
    stage = L.symbol / pp.symbol
    allreduces = (cal.m_ar.symbol * L.symbol - L_a.symbol) / pp.symbol
    sent = _dispatched(activations)
    busiest_experts = imbalance.symbol * routed_flops
    experts = larger(routed_bytes / BW.symbol, busiest_experts / P.symbol)
    return (
        fixed / pp.symbol
        + allreduces * cal.allreduce(activations.symbol, n.symbol, link, BW_tp)
        + L_a.symbol
        / pp.symbol
        * (
            (1 - w_E.symbol)
            * (
                over_link(r_dq.symbol * sent, n.symbol * dp.symbol, gather_latency, gather_share, BW_ep)
                + over_link(sent, n.symbol * dp.symbol, scatter_latency, scatter_share, BW_ep)
            )
            + w_E.symbol * _wide_dispatch(activations, wide)
        )
        + narrow.symbol / w_L.symbol * experts
        + cal.routed_experts(
            cal.L_x.symbol / pp.symbol,
            kernel,
            routed_bytes,
            busiest_experts,
            imbalance.symbol * tokens * cal.k_x.symbol * v_d.symbol * b_a.symbol / ep.symbol,
            imbalance.symbol * tokens * cal.k_x.symbol * w_L.symbol / d.symbol * v_d.symbol * b_a.symbol / ep.symbol,
            cal.E_x.symbol / ep.symbol,
        )
        + larger(
            cal.streamed(weights.symbol - routed_bytes, one_row),
            (flops.symbol - routed_flops) / (gemm.symbol * P.symbol),
        )
        + larger(cache.symbol / (cal.eta_kv.symbol * BW.symbol), attention.symbol / (cal.eta_a.symbol * P.symbol))
        + 2 * stage * cal.m_ew.symbol * activations.symbol / BW.symbol
        + mlp_activations
    )


layout_accelerators = formula(N_L, n.symbol * pp.symbol * dp.symbol, f"{_LAYOUT}: n·p·d accelerators in all.")
layout_sequences = formula(B_L, pp.symbol * B.symbol, "Each of the p stages works on its own micro-batch of B.")
weight_bytes_per_accelerator = formula(
    W_g,
    _shared(W.symbol - W_E.symbol, W_E.symbol),
    "Attention, dense MLPs and embeddings are split n ways and p stages and copied to each attention rank; "
    "the routed experts are spread over all n·d accelerators of a stage (DeepSeek-V3, sec. 3.4).",
)
kv_bytes_held_per_accelerator = formula(
    K_gs,
    pp.symbol * _per(B.symbol * kv_seq.symbol, dp, pp, s_kv),
    "Each accelerator keeps the cache of its rank's share of every micro-batch, for its stage's layers and its "
    "shard of the KV heads.",
)
layout_max_micro_batch = formula(
    B_mL,
    larger(sympy.floor((M.symbol - W_g.symbol) * dp.symbol * s_kv.symbol / kv_seq.symbol), 0),
    "Each accelerator keeps W_g of weights and, for every one of the p micro-batches, its rank's B/d sequences' "
    "cache for its stage's L/p layers over s_kv shards: B·K_seq/(d·s_kv) a micro-batch; what is left of M holds "
    "this many (tensor parallelism alone: formulas/roofline.py's max_batch_by_memory).",
)
no_routed_expert_bytes = formula(W_E, sympy.Integer(0), "A dense model has no routed experts.")
weight_read_per_accelerator = formula(
    W_rg,
    _shared(W_read.symbol - cal.W_x.symbol, cal.W_x.symbol),
    f"{_SLOT} The replicated weights are streamed whole by each rank; the touched experts once, spread over the stage.",
)
kv_read_per_accelerator = formula(
    K_g,
    _per(kv_total.symbol, dp, pp, s_kv),
    f"{_SLOT} Each rank reads its sequences' cache for the stage's layers, split over its s_kv KV shards.",
)
gemm_flops_per_accelerator = formula(
    F_g,
    _per(B.symbol * tau_v.symbol * F.symbol, n, dp, pp),
    f"{_SLOT} A rank's tokens through its 1/n of the replicated matrices, and every token's experts spread over "
    "the stage: either way 1/(n·d·p) of the step's FLOPs.",
)
attention_flops_per_accelerator = formula(
    A_g,
    _per(B.symbol * tau_v.symbol * F_att.symbol, n, dp, pp),
    f"{_SLOT} Query heads split n ways; each rank attends only its own sequences.",
)
rank_activation_bytes = formula(
    X_r,
    _per(B.symbol * tau_v.symbol * v_d.symbol * b_a.symbol, dp),
    "One attention rank's B/d sequences each carry tau_v d-wide activations per layer.",
)
tp_sent_bytes = formula(
    Y_tp,
    (cal.m_ar.symbol * L.symbol - L_a.symbol) / pp.symbol * ring_allreduce(n.symbol, X_r.symbol),
    "Two ring all-reduces a layer over the tensor-parallel group (after attention and after the MLP; a MoE "
    "layer reached by all-to-all needs only the first), for the stage's L/p layers.",
)
ep_sent_bytes = formula(
    Y_ep,
    (1 + r_dq.symbol) * L_a.symbol / pp.symbol * _dispatched(X_r),
    "Dispatch and combine: each token sends k copies of its activation to the expert groups holding its experts, "
    "each copy to all n·d/e accelerators of its group, at most once to each of the stage's n·d (with e = 1 every "
    "accelerator holds a slice of every expert: an all-gather of the tokens, as aiconfigurator 0.12 costs MoE under "
    "attention data parallelism inside a node, formulas/fused_dispatch.json). They come back summed; the n "
    "accelerators of a rank split its tokens (DeepSeek-V3, sec. 3.4; TensorRT-LLM's moe_tp x moe_ep). The dispatch "
    "sends r_dq of the combine's bytes: half where TensorRT-LLM gathers FP8 experts' inputs in FP8 (Blackwell).",
)
pp_sent_bytes = formula(
    Y_pp,
    X_r.symbol / n.symbol,
    "A stage hands its micro-batch's activations to the next, each of the n accelerators its 1/n "
    "(Megatron's scatter-gather of pipeline sends, Narayanan et al. 2021, sec. 4.1).",
)
layout_expert_width = formula(
    w_L,
    cal.w_x.symbol * ep.symbol / dp.symbol,
    "Each expert is split n·d/e ways inside its group: whole at e = n·d, the tensor-parallel width w_x at "
    "e = d (one group a rank, e = 1 with no attention dp).",
)

layout_memory_time = formula(
    t_mg, (W_rg.symbol + K_g.symbol) / BW.symbol, f"{_SLOT} One accelerator's weights and cache at full bandwidth."
)
layout_compute_time = formula(
    t_cg, (F_g.symbol + A_g.symbol) / P.symbol, f"{_SLOT} One accelerator's GEMM and attention FLOPs at peak."
)
layout_link_time = formula(
    t_lk,
    Y_tp.symbol / BW_tp.symbol + Y_ep.symbol / BW_ep.symbol,
    f"{_SLOT} One accelerator's all-reduces and all-to-alls at full link speed.",
)
layout_slot_floor = formula(
    t_sf,
    larger(t_mg.symbol, t_cg.symbol, t_lk.symbol),
    "Roofline over one accelerator's share: its bytes at full bandwidth, its FLOPs at peak, its collectives at "
    "full link speed, whichever is slowest (Williams et al. 2009); each bound holds, so their maximum does.",
)
layout_tpot_floor = formula(
    tpot_f,
    pp.symbol * t_sf.symbol + (pp.symbol - 1) * Y_pp.symbol / BW_pp.symbol,
    "A micro-batch passes through all p stages and the p-1 links between them to gain one token.",
)
expert_imbalance = formula(
    I_ep,
    smaller(
        1 + c_pop.symbol * sympy.sqrt(2 * ep.symbol * sympy.log(ep.symbol) / E.symbol),
        ep.symbol,
        E.symbol / k_e.symbol,
    ),
    "Routed tokens are not spread evenly, and a slot waits for the expert rank that got the most. A rank's "
    "tokens are the sum of its E/e experts' (placed at random), whose counts spread by c_pop: the rank's spread "
    "is c_pop·sqrt(e/E), and the largest of e ranks lies about sqrt(2·ln e) spreads above the mean (a normal "
    "maximum); 1 at e = 1, and at most min(e, E/k), a rank holding E/e experts taking min(k, E/e) of every "
    "token's k routed copies. Sampling adds e/(T·k) to the squared spread, under 2% of it from 64 tokens at "
    "k = 8, and is left out so the step stays linear in the batch. c_pop = 1.4 is fitted to aiconfigurator 0.12's "
    "profiled MoE kernels (H100, TensorRT-LLM 1.3.0rc20, bf16), 'power_law_1.2' routing over 'balanced' on "
    "2,410 shapes with e > 1 and at least 4,096 tokens: median error 12%, 0.90 to 1.16 by shape "
    "(tools/aiconfigurator_imbalance.py).",
)
layout_one_row = formula(
    o_1L,
    cal.one_row(B.symbol * tau_v.symbol, dp.symbol) * cal.one_row(tau_v.symbol, row=cal.r_1q),
    "formulas/calibrated.py's o_1 over the d attention ranks: each takes its own sequences' rows, and one rank "
    "with two binds the slot; a sequence's tau_v tokens all sit on its rank, so a draft's checked tokens make two.",
)
layout_slot_time = formula(
    t_sc,
    _calibrated_slot(
        tokens=B.symbol * tau_v.symbol,
        activations=X_r,
        fixed=cal.step_fixed_time.expr,
        link=cal.DECODE_LINK,
        narrow=cal.w_0,
        routed=cal.W_x,
        kernel=cal.DECODE_KERNEL,
        shares=(W_rg, F_g, cal.eta_g, K_g, A_g),
        imbalance=I_ep,
        fused=DECODE_FUSED,
        wide=(alpha_E, eta_E, _COPIES_AN_EXPERT),
        one_row=o_1L.symbol,
    ),
    "The calibrated step (formulas/calibrated.py) over one accelerator's share of one slot: the stage's fixed "
    "layer time, its all-reduces and all-to-alls (latency and wire at the fitted link share), narrow experts, the "
    "routed experts' MoE kernel (streaming then computing), the other weights streamed against their GEMMs' FLOPs, "
    "the cache against attention, and the rank's unsplit "
    "elementwise passes.",
)
layout_tpot = formula(
    tpot_c,
    pp.symbol * t_sc.symbol
    + (pp.symbol - 1) * (cal.alpha_ar.symbol + Y_pp.symbol / (cal.eta_link.symbol * BW_pp.symbol)),
    "A micro-batch's p slots one after another, and its p-1 sends between stages.",
)

prefill_weight_read_per_accelerator = formula(
    W_pg,
    _shared(W_pre.symbol - cal.W_xp.symbol, cal.W_xp.symbol),
    "The prompt pass streams its rank's replicated weights and the experts its tokens touch, spread over the stage.",
)
prefill_flops_per_accelerator = formula(
    F_pg,
    B.symbol
    * (
        _per(F_pw.symbol - S_p.symbol * cal.F_x.symbol, n, pp)
        + d_p.symbol * S_p.symbol * _per(cal.F_x.symbol, n, dp, pp)
    ),
    "The prompts sit on one attention rank: its n accelerators do the replicated matmuls, the whole stage the experts, "
    "for the d_p ranks whose prompts run at once (on a busy server every rank prefills in the same steps, as "
    "aiconfigurator 0.12's aggregated mixed steps price it: each carries every rank's chunk through the experts).",
)
prefill_attention_flops_per_accelerator = formula(
    A_pg,
    _per(B.symbol * S_p.symbol * F_pre.symbol, n, pp),
    "Causal attention over the prompts, split over the rank's query heads, for the stage's layers.",
)
prefill_kv_per_accelerator = formula(
    K_pg, _per(B.symbol * K_pr.symbol, pp, s_kvp), "The rank writes its prompts' cache, split over its KV shards."
)
prefill_activation_bytes = formula(
    X_p, B.symbol * S_p.symbol * v_d.symbol * b_a.symbol, "Every prompt token is a d-wide activation."
)
layout_ttft_floor = formula(
    ttft_f,
    pp.symbol * larger((W_pg.symbol + K_pg.symbol) / BW.symbol, (F_pg.symbol + A_pg.symbol) / P.symbol)
    + (pp.symbol - 1) * X_p.symbol / (n.symbol * BW_pp.symbol),
    "The prompts pass through every stage in turn, each at the roofline of one accelerator's share.",
)
layout_prefill_slot_time = formula(
    t_pc,
    _calibrated_slot(
        tokens=B.symbol * S_p.symbol,
        activations=X_p,
        fixed=cal.prefill_fixed_time.expr,
        link=cal.PREFILL_LINK,
        narrow=cal.w_0p,
        routed=cal.W_xp,
        kernel=cal.PREFILL_KERNEL,
        shares=(W_pg, F_pg, cal.eta_p, K_pg, A_pg),
        imbalance=I_ep,
        fused=PREFILL_FUSED,
        wide=(alpha_Ep, eta_Ep, _COPIES_A_RANK),
        together=d_p.symbol,
        # formulas/calibrated.py's own term, a stage's 1/p of its bytes
        mlp_activations=cal.prefill_mlp_activation_time.expr.xreplace(
            {cal.X_actp.symbol: cal.prefill_mlp_activation_bytes.expr / pp.symbol}
        ),
    ),
    "The calibrated prompt pass (formulas/calibrated.py) over one stage's share, as the decode slot.",
)
layout_ttft = formula(
    ttft_c,
    pp.symbol * t_pc.symbol
    + (pp.symbol - 1) * (cal.alpha_p.symbol + X_p.symbol / (n.symbol * cal.eta_linkp.symbol * BW_pp.symbol)),
    "The stages one after another, and the p-1 sends between them.",
)

layout_tokens_through = formula(
    tau_v,
    tau.symbol * (1 + sp.k_d.symbol),
    "A verification pass runs each sequence's own token and the k drafted after it through the weights "
    "(formulas/speculative.py); without a draft (k = 0) it is a step's tau.",
)
layout_token_time = formula(
    t_tok,
    tpot_c.symbol * (1 + sp.k_d.symbol * sp.c_d.symbol) * tau.symbol / sp.tau_sp.symbol,
    "A pass and its k draft steps (each c_d of the pass, which costs a step while the reads bound it) gain "
    "tau_sp tokens a sequence: the time for tau of them. Without a draft it is the step.",
)
layout_token_time_floor = formula(
    t_tok_f,
    tpot_f.symbol * (1 + sp.k_d.symbol * sp.c_d.symbol) * tau.symbol / sp.tau_sp.symbol,
    "The same over the floor's step.",
)
layout_served_tpot = formula(
    tpot_s,
    t_tok.symbol + B_L.symbol / dp.symbol * tau.symbol * t_rq.symbol / S_o.symbol,
    "An aggregated server interleaves prompt passes with the decode steps (chunked prefill): each of a rank's "
    "B_L/d sequences needs its prompt pass once in S_o/tau steps, and the rank's steps carry that work "
    "(Agrawal et al. 2024, 'Sarathi-Serve'; aiconfigurator's aggregated mode).",
)
layout_capacity = formula(
    Q_L,
    B_L.symbol * tau.symbol / (S_o.symbol * tpot_s.symbol),
    "B_L sequences each finish their S_o tokens in S_o/tau steps of TPOT_s.",
)
throughput_per_accelerator = formula(
    R_gpu, Q_s.symbol * S_o.symbol / N_L.symbol, "Output tokens of the requests completed, per accelerator."
)
tokens_per_user = formula(R_usr, tau.symbol / tpot_s.symbol, "Each sequence gains tau tokens a step.")
accelerators_for_rate = formula(
    N_rate,
    sympy.ceiling(lam.symbol / Q_s.symbol) * N_L.symbol,
    "Whole copies of the layout, enough that their capacity covers the rate.",
)
cost_per_token = formula(
    c_tok,
    N_L.symbol * price.symbol / (Q_s.symbol * S_o.symbol),
    "The layout's rent divided by the output tokens it completes (busy all the time).",
)
fleet_cost_per_token = formula(
    c_fleet,
    N_rate.symbol * price.symbol / (lam.symbol * S_o.symbol),
    "The rent of every accelerator of the whole copies the rate needs, divided by the output tokens the rate asks "
    "for: at least c_tok, equal where the rate fills the copies exactly.",
)
layout_energy_per_token = formula(
    e_tok_L,
    N_L.symbol * P_acc.symbol / (Q_s.symbol * S_o.symbol),
    "Every accelerator at its datasheet TDP, divided by the output tokens it completes: a ceiling on the energy.",
)


# The roofline's step quantities on a layout. A command that derives a step (knee, energy, claim, utilisation,
# compare) looks them up by name; on a layout its work's library holds these in place of formulas/roofline.py's,
# energy.py's, claim.py's and utilisation.py's. On tensor parallelism alone (p = d = e = 1) they are those, but for
# the step's floor, which here also counts the collectives at full link speed (tests/test_one_step.py holds both
# to the plan's step). They are checked like every formula, but not registered: the plain ones keep the names.
_ON = "On a layout (formulas/layout.py): "


@functools.cache
def roofline_on_layout() -> tuple[Formula, ...]:
    """The layout forms, built (and unit-checked) the first time a command runs on a layout."""
    return (
        Formula(t_mem, pp.symbol * t_mg.symbol, _ON + "each of the p slots of a step reads one accelerator's share."),
        Formula(
            t_comp, pp.symbol * t_cg.symbol, _ON + "each of the p slots of a step computes one accelerator's share."
        ),
        Formula(t_step, tpot_f.symbol, _ON + "the layout's decode step floor: its p slots and the sends between them."),
        Formula(R, B_L.symbol * tau.symbol / t_step.symbol, _ON + "the copy's B_L sequences each gain tau a step."),
        Formula(B_max, B_mL.symbol, _ON + "the largest micro-batch memory holds (B is one micro-batch)."),
        Formula(
            rf.M_g,
            W_g.symbol + K_gs.symbol,
            _ON + "each accelerator's weights and its share of every micro-batch's cache.",
        ),
        Formula(
            en.E_step, P_acc.symbol * N_L.symbol * t_step.symbol, _ON + "all N_L accelerators at TDP for the step."
        ),
        Formula(
            en.e_tok, en.E_step.symbol / (B_L.symbol * tau.symbol), _ON + "the step's energy over the copy's tokens."
        ),
        Formula(
            cl.R_mem,
            B_L.symbol * tau.symbol / t_mem.symbol,
            _ON + "the copy's tokens while the step is bandwidth-bound.",
        ),
        Formula(ut.D_gpu, BW.symbol * t_mem.symbol, _ON + "the bytes of one accelerator's p slots."),
        Formula(ut.F_step, B_L.symbol * tau.symbol * (F.symbol + F_att.symbol), _ON + "the copy's tokens a step."),
        Formula(
            ut.U_mf,
            ut.F_step.symbol / (ut.t_meas.symbol * N_L.symbol * P.symbol),
            _ON + "model FLOPs over the N_L accelerators' peak for the measured time (PaLM, appendix B).",
        ),
        Formula(
            ut.U_hf,
            (1 + ut.f_rc.symbol) * ut.F_step.symbol / (ut.t_meas.symbol * N_L.symbol * P.symbol),
            _ON + "executed FLOPs over the N_L accelerators' peak for the measured time (PaLM, appendix B).",
        ),
    )
