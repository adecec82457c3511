"""Disaggregated serving: prompts on one pool of workers, decode steps on another, the cache handed between them.

A prefill worker (layout L_p, N_p accelerators) runs prompt passes back to back; a decode worker (L_d, N_d)
runs decode steps with no prompt pass among them, so its step is formulas/layout.py's step alone and its batch
the largest that step allows at the TPOT target. Each request's cache crosses from one to the other once, over
the link between the two pools, before its decode worker emits a token (vLLM's and Dynamo's disaggregated
proxies stream the reply from the decode worker). The pools balance where x_p·Q_p = x_d·Q_d: their workers in
the ratio of their capacities. The whole then completes S_o tokens a request on N_p/Q_p + N_d/Q_d
accelerator-seconds a request a second. It reduces to one pool where prompts cost nothing (Q_p without bound):
the decode worker's own tokens a second per accelerator (tests/test_plan.py).

The calibrated estimate carries what aiconfigurator 0.12 charges a disaggregated deployment over its profiled static
passes (Task's defaults, "calibrated against silicon"): a prefill worker's pass takes kappa_p = 1.1 of the static
one and a decode worker's step kappa_d = 1.08, and pools paired at a ratio deliver u_p = 0.9 and u_d = 0.92 of
their standalone rates. The floor sets all four to 1. aiconfigurator's TTFT x1.8 for queueing is not taken: the
prefill worker's queue is priced here as an M/D/1 queue (formulas/queueing.py).

Left out: the transfer overlapping the prompt pass layer by layer (a shorter handover), and a decode worker's
step being slowed by the transfers it receives (NVLink or the NIC, not its HBM, carries them).
"""

import sympy

from derive.core.library import formula
from derive.core.symbols import define
from formulas import queueing as qu
from formulas.layout import B_L, lam, pp, price, s_kv, t_tok
from formulas.notation import S_o, kv_seq, tau

_AIC_TASK = "aiconfigurator 0.12.0 sdk/task_v2.py, Task's defaults"
kappa_p = define(
    "prefill_worker_latency_scale",
    "kappa_p",
    "",
    r"\kappa_{p}",
    f"a prefill worker's prompt pass over the profiled static pass ({_AIC_TASK}: prefill_latency_correction)",
)
kappa_d = define(
    "decode_worker_latency_scale",
    "kappa_d",
    "",
    r"\kappa_{d}",
    f"a decode worker's step over the profiled static step ({_AIC_TASK}: decode_latency_correction)",
)
u_p = define(
    "prefill_pool_utilisation",
    "u_p",
    "",
    r"u_{p}",
    f"share of its standalone rate a prefill pool delivers when paired ({_AIC_TASK}: rate_match_prefill_degradation)",
)
u_d = define(
    "decode_pool_utilisation",
    "u_d",
    "",
    r"u_{d}",
    f"share of its standalone rate a decode pool delivers when paired ({_AIC_TASK}: rate_match_decode_degradation)",
)
# The calibrated estimate's values (aiconfigurator 0.12.0 sdk/task_v2.py, Task: prefill_latency_correction 1.1,
# decode_latency_correction 1.08, rate_match_prefill_degradation 0.9, rate_match_decode_degradation 0.92); the floor
# takes 1 for each.
SERVED = {
    kappa_p: sympy.Rational(11, 10),
    kappa_d: sympy.Rational(27, 25),
    u_p: sympy.Rational(9, 10),
    u_d: sympy.Rational(23, 25),
}
N_p = define("prefill_worker_accelerators", "N_p", "", r"N_{p}", "accelerators one prefill worker runs on")
N_d = define("decode_worker_accelerators", "N_d", "", r"N_{d}", "accelerators one decode worker runs on")
Q_p = define(
    "prefill_worker_capacity",
    "Q_p",
    "sequence/second",
    r"Q_{p}",
    "requests a second one prefill worker takes with the mean TTFT, handover included, at the target",
)
Q_d = define(
    "decode_worker_capacity",
    "Q_d",
    "sequence/second",
    r"Q_{d}",
    "requests a second one decode worker completes, its step alone within the TPOT target",
)
K_h = define(
    "kv_handover_bytes",
    "K_h",
    "byte/sequence",
    r"K_{h}",
    "cache bytes one accelerator sends or receives for one request: its layout's share of the prompt's cache",
)
BW_x = define(
    "handover_link_bandwidth", "BW_x", "byte/second", r"BW_{x}", "one-way link each accelerator hands the cache over"
)
t_dw = define(
    "decode_worker_step", "t_dw", "second", r"t_{dw}", "a decode worker's step: what its users see between tokens"
)
t_kv = define("kv_handover_time", "t_kv", "second", r"t_{kv}", "one request's cache crossing from prefill to decode")
r_pd = define(
    "prefill_workers_per_decode_worker", "r_pd", "", r"r_{pd}", "prefill workers that keep one decode worker fed"
)
f_p = define(
    "prefill_accelerator_share",
    "f_p",
    "",
    r"f_{p}",
    "prefill accelerators the pools need per decode accelerator, at balance",
)
R_dp = define(
    "decode_pool_throughput", "R_dp", "token/second", r"R_{dp}", "output tokens a second per decode accelerator"
)
R_dis = define(
    "disaggregated_throughput",
    "R_dis",
    "token/second",
    r"R_{dis}",
    "output tokens a second per accelerator of both pools, balanced",
)
ttft_d = define(
    "disaggregated_ttft", "TTFT_d", "second", r"\mathrm{TTFT}_{d}", "mean time to first token: queue, pass, handover"
)
N_rate_d = define(
    "disaggregated_accelerators_for_rate",
    "N_rate_d",
    "",
    r"N_{\lambda,d}",
    "accelerators of the whole prefill and decode workers the rate needs",
)
c_fleet_d = define(
    "disaggregated_fleet_cost_per_token",
    "c_fleet_d",
    "USD/token",
    r"c_{fleet,d}",
    "rent of the disaggregated fleet for the rate over the output tokens it asks for",
)

kv_handover_bytes = formula(
    K_h,
    kv_seq.symbol / (pp.symbol * s_kv.symbol),
    "A request's cache at the prompt's length lives on one attention rank, split over its p stages' layers and "
    "its s_kv shards of the KV heads: each of those accelerators holds its part, to send or to receive.",
)
kv_handover_time = formula(
    t_kv,
    K_h.symbol * qu.q_1.symbol / BW_x.symbol,
    "Every prefill accelerator sends its share of the request's cache and every decode accelerator receives its "
    "own, all at once, each over its own link (NVLink where both workers sit in one domain, else its NIC): the "
    "pair's larger share (derive/disaggregation.py takes it) sets the time.",
)
# A prefill worker runs one prompt a pass on each rank: its engine's token budget is one prompt, as aiconfigurator 0.12
# configures TensorRT-LLM context servers (prefill_max_batch_size 1, max_num_tokens = ISL: aiconfigurator/sdk/task_v2.py
# lines 641 and 2682), so a prompt's service is the whole pass, not what one more prompt adds to a batched one.
_ONE_PROMPT_A_PASS = {qu.t_rq.symbol: qu.ttft_c.symbol / qu.q_1.symbol}
# Its passes, as served: kappa_p of the profiled ones, everywhere formulas/queueing.py uses them.
_SERVED_PASSES = {qu.ttft_c.symbol: kappa_p.symbol * qu.ttft_c.symbol}


def _served(expr: sympy.Expr) -> sympy.Expr:
    """A queueing form over a prefill worker's passes alone (its wait, load and service time written out), one prompt
    a pass, served."""
    spelled = expr.xreplace({qu.W_q.symbol: qu.prompt_queue_wait.expr})
    spelled = spelled.xreplace({qu.rho_p.symbol: qu.prompt_load.expr, qu.S_rq.symbol: qu.prompt_service_time.expr})
    return spelled.xreplace(_ONE_PROMPT_A_PASS).xreplace(_SERVED_PASSES)


prefill_worker_capacity = formula(
    Q_p,
    u_p.symbol * _served(qu.ttft_capacity.expr).xreplace({qu.T_max.symbol: qu.T_max.symbol - t_kv.symbol}),
    "formulas/queueing.py's Q_T over the served passes with the handover taken out of the target, at the paired "
    "pool's share u_p: a prefill worker is an M/D/1 queue of prompts like an aggregated copy's ranks, each served by "
    "a whole pass of its own, and its requests must still cross before their first token.",
)
decode_worker_step = formula(
    t_dw, kappa_d.symbol * t_tok.symbol, "formulas/layout.py's decode step alone (no prompt pass), as served."
)
decode_worker_capacity = formula(
    Q_d,
    u_d.symbol * B_L.symbol * tau.symbol / (S_o.symbol * t_dw.symbol),
    "B_L sequences gain tau tokens a step and leave after S_o, at the paired pool's share u_d.",
)
disaggregated_ttft = formula(
    ttft_d,
    _served(qu.served_ttft.expr).xreplace({qu.lam_c.symbol: qu.lam_c.symbol / u_p.symbol}) + t_kv.symbol,
    "The wait, the request's own prompt pass and its cache's handover, one after another, served: the worker takes "
    "its requests as it would 1/u_p as many alone.",
)
prefill_workers_per_decode_worker = formula(
    r_pd, Q_d.symbol / Q_p.symbol, "The pools balance where x_p·Q_p = x_d·Q_d: x_p/x_d = Q_d/Q_p."
)
prefill_accelerator_share = formula(
    f_p,
    r_pd.symbol * N_p.symbol / N_d.symbol,
    "r_pd prefill workers of N_p accelerators for each decode worker of N_d.",
)
decode_pool_throughput = formula(
    R_dp, Q_d.symbol * S_o.symbol / N_d.symbol, "A decode worker's completed requests' tokens, per accelerator."
)
disaggregated_throughput = formula(
    R_dis,
    R_dp.symbol / (1 + f_p.symbol),
    "The decode pool's tokens shared with the prefill accelerators that feed it: S_o/(N_p/Q_p + N_d/Q_d).",
)
disaggregated_accelerators_for_rate = formula(
    N_rate_d,
    sympy.ceiling(lam.symbol / Q_p.symbol) * N_p.symbol + sympy.ceiling(lam.symbol / Q_d.symbol) * N_d.symbol,
    "Whole workers in each pool, enough that each pool's capacity covers the rate.",
)
disaggregated_fleet_cost_per_token = formula(
    c_fleet_d,
    N_rate_d.symbol * price.symbol / (lam.symbol * S_o.symbol),
    "The rent of every accelerator of both pools, divided by the output tokens the rate asks for.",
)
