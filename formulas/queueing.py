"""TTFT as a user sees it on an aggregated server: the prompt pass, and the prompts queued ahead of it.

An aggregated server with chunked prefill runs each new prompt's pass inside its decode steps
(formulas/layout.py's served TPOT). Requests reach one copy at random (a Poisson stream, rate lam_c),
each attention rank taking 1/d of them; a rank does one prompt's work in t_rq·q_1 seconds, the same
every time (prompts of one length). That is an M/D/1 queue: the mean wait before service is
Pollaczek-Khinchine's rho·S/(2(1 - rho)) for a deterministic service time S at load rho (Kleinrock
1975, 'Queueing Systems' vol. 1, sec. 5.7). A request's first token then comes after the wait and its
own prompt pass. The queue is why a TTFT target binds: the rank's prompt load rho rises with the
requests a copy takes, and the wait grows without bound as rho nears one. At rate zero the wait is
zero and TTFT is the prompt pass alone.

Left out, each shorter than the terms kept at a plan's loads: the residual of the decode step in
progress when a prompt arrives, and prompts longer than one chunk waiting for several steps.
"""

from derive.core.library import formula, smaller
from derive.core.symbols import constant, define
from formulas.layout import Q_L, Q_T, Q_s, dp, t_rq, ttft_c

q_1 = constant("one_request", "q_1", 1, "sequence", r"q_{1}", "one request: a queue serves requests one at a time")
lam_c = define("copy_request_rate", "lambda_c", "sequence/second", r"\lambda_{c}", "requests a second one copy takes")
S_rq = define("prompt_service_time", "S_rq", "second", r"S_{rq}", "a rank's time for one prompt's pass")
rho_p = define("prompt_load", "rho_p", "", r"\rho_{p}", "share of a rank's time spent on prompt passes")
W_q = define("prompt_queue_wait", "W_q", "second", r"W_{q}", "mean wait of a prompt behind the prompts ahead of it")
ttft_q = define("served_ttft", "TTFT_q", "second", r"\mathrm{TTFT}_{q}", "mean time to first token at the load")
T_max = define("ttft_target", "TTFT_max", "second", r"\mathrm{TTFT}_{max}", "the mean time to first token asked for")

_MD1 = "M/D/1 (Pollaczek-Khinchine, deterministic service; Kleinrock 1975, 'Queueing Systems' vol. 1, sec. 5.7)"

prompt_service_time = formula(S_rq, t_rq.symbol * q_1.symbol, "One prompt's pass on a rank, inside its steps.")
prompt_load = formula(
    rho_p,
    lam_c.symbol / dp.symbol * t_rq.symbol,
    "Each of the d attention ranks takes 1/d of the copy's requests and does their prompt passes.",
)
prompt_queue_wait = formula(
    W_q, rho_p.symbol * S_rq.symbol / (2 * (1 - rho_p.symbol)), f"The mean wait in an {_MD1} queue."
)
served_ttft = formula(
    ttft_q, ttft_c.symbol + W_q.symbol, "A first token comes after the wait and the request's own prompt pass."
)
ttft_capacity = formula(
    Q_T,
    2 * dp.symbol * (T_max.symbol - ttft_c.symbol) / (t_rq.symbol * (S_rq.symbol + 2 * (T_max.symbol - ttft_c.symbol))),
    "TTFT_q = TTFT_max solved for lambda_c: rho = 2(TTFT_max - TTFT_L)/(S_rq + 2(TTFT_max - TTFT_L)), lambda_c = "
    "d·rho/t_rq (tests/test_plan.py holds it to derive.core.solving's root of the same equation).",
)
served_capacity = formula(
    Q_s,
    smaller(Q_L.symbol, Q_T.symbol),
    "A copy takes no more requests than its batch finishes (TPOT) or than keep the queue short enough (TTFT); "
    "Q_T solves TTFT_q = TTFT_max for lambda_c.",
)
