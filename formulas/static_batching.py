"""Static batching with replies of random length: seats idle while the longest reply finishes.

Replies are taken as independent and uniform between L_lo and L_hi tokens (continuous, a close
stand-in for whole tokens). A static batch of n seats runs until its longest reply ends; the
expected maximum of n uniform draws is L_lo + (L_hi - L_lo) n/(n + 1) (the order statistics of
the uniform distribution), while each seat produces only the mean (L_lo + L_hi)/2.
"""

from derive.core.library import formula
from derive.core.symbols import define
from formulas.notation import R, t_step, tau

L_lo = define("reply_min_tokens", "L_lo", "token/sequence", r"L_{lo}", "shortest reply")
L_hi = define("reply_max_tokens", "L_hi", "token/sequence", r"L_{hi}", "longest reply")
n_seat = define("batch_seats", "n_seat", "", r"n_{seat}", "seats in a batch (requests decoded at once)")
L_mean = define("reply_mean_tokens", "L_mean", "token/sequence", r"\bar{L}", "mean reply length")
L_max = define(
    "static_batch_longest_reply",
    "L_maxE",
    "token/sequence",
    r"\mathbb{E}[L_{max}]",
    "expected longest reply of a static batch: the steps the batch runs",
)
u_st = define(
    "static_seat_utilisation",
    "u_st",
    "",
    r"u_{static}",
    "fraction of seat-steps that produce a token in a static batch",
)
R_st = define(
    "static_batch_throughput",
    "R_st",
    "token/second",
    r"R_{static}",
    "tokens per second of static batching, idle seats included",
)
w_st = define(
    "static_wait_tokens",
    "w_st",
    "token/sequence",
    r"w_{static}",
    "steps a mean reply waits, once done, for its batch's longest",
)
t_wst = define(
    "static_wait_time", "t_wst", "second", r"t_{wait}", "time a mean reply waits, once done, for its batch's longest"
)

reply_mean_tokens = formula(L_mean, (L_lo.symbol + L_hi.symbol) / 2, "Mean of the uniform distribution.")

static_batch_longest_reply = formula(
    L_max,
    L_lo.symbol + (L_hi.symbol - L_lo.symbol) * n_seat.symbol / (n_seat.symbol + 1),
    "Expected maximum of n independent uniform draws: the n-th order statistic has mean n/(n+1) of the range "
    "(David and Nagaraja, 'Order Statistics', 3rd ed., sec. 2.2).",
)

static_seat_utilisation = formula(
    u_st,
    L_mean.symbol / L_max.symbol,
    "Each seat yields the mean reply's tokens while the batch runs the longest reply's steps.",
)

static_batch_throughput = formula(
    R_st,
    u_st.symbol * R.symbol,
    "The full-batch throughput, scaled by the share of seat-steps that produce a token.",
)

static_wait_tokens = formula(w_st, L_max.symbol - L_mean.symbol, "Steps between a mean reply's end and its batch's.")

static_wait_time = formula(
    t_wst, w_st.symbol * t_step.symbol / tau.symbol, "Each step adds tau tokens per sequence and takes t_step."
)
