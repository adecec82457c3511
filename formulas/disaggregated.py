"""Disaggregated serving: prompts on one pool of workers, decode steps on another, the cache handed between them.

A prefill worker (layout L_p, N_p accelerators) runs prompt passes back to back; a decode worker (L_d, N_d)
runs decode steps with no prompt pass among them, so its step is formulas/layout.py's step alone and its batch
the largest that step allows at the TPOT target. Each request's cache crosses from one to the other once, over
the link between the two pools, before its decode worker emits a token (vLLM's and Dynamo's disaggregated
proxies stream the reply from the decode worker). The pools balance where x_p·Q_p = x_d·Q_d: their workers in
the ratio of their capacities. The whole then completes S_o tokens a request on N_p/Q_p + N_d/Q_d
accelerator-seconds a request a second. It reduces to one pool where prompts cost nothing (Q_p without bound):
the decode worker's own tokens a second per accelerator (tests/test_plan.py).

Left out: the transfer overlapping the prompt pass layer by layer (a shorter handover), and a decode worker's
step being slowed by the transfers it receives (NVLink or the NIC, not its HBM, carries them).
"""

import sympy

from derive.core.library import formula
from derive.core.symbols import define
from formulas import queueing as qu
from formulas.layout import lam, pp, price, s_kv
from formulas.notation import S_o, kv_seq

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
    "cache bytes one decode accelerator receives for one request: its share of the prompt's cache",
)
BW_x = define(
    "handover_link_bandwidth", "BW_x", "byte/second", r"BW_{x}", "one-way link each accelerator hands the cache over"
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
    "its s_kv shards of the KV heads: each of those accelerators receives its part.",
)
kv_handover_time = formula(
    t_kv,
    K_h.symbol * qu.q_1.symbol / BW_x.symbol,
    "Every decode accelerator receives its own share of the request's cache at once, each over its own link "
    "(NVLink where both workers sit in one domain, else its NIC).",
)
prefill_worker_capacity = formula(
    Q_p,
    qu.ttft_capacity.expr.xreplace({qu.T_max.symbol: qu.T_max.symbol - t_kv.symbol}),
    "formulas/queueing.py's Q_T with the handover taken out of the target: a prefill worker is an M/D/1 queue of "
    "prompts like an aggregated copy's ranks, and its requests must still cross before their first token.",
)
disaggregated_ttft = formula(
    ttft_d,
    qu.ttft_q.symbol + t_kv.symbol,
    "The wait, the request's own prompt pass and its cache's handover, one after another.",
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
