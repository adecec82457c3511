"""Pure-number ratios the worked answers quote: how far a rule of thumb, a claim or a kernel sits from a reference.

Each is one division of two library quantities, kept here so that a ratio in an
answer's prose is a formula result like any other, not arithmetic done in the text.
"""

import sympy

from derive.core.library import LIBRARY, Formula, formula
from derive.core.symbols import define
from formulas.claim import r_claim, r_floor
from formulas.flops import F_2n, F_tot
from formulas.intensity import I_att, I_ridge
from formulas.notation import N, N_act, n_h, n_kv
from formulas.reads import N_read

x_2n = define("two_n_ratio", "x_2N", "", r"x_{2N}", "FLOPs per token counted in full, over the 2N rule")
g_q = define("query_kv_group_ratio", "g_q", "", r"g_{q}", "query heads per key/value head (the GQA group size)")
x_ridge = define(
    "attention_ridge_fraction",
    "x_ridge",
    "",
    r"x_{ridge}",
    "decode attention's intensity as a fraction of the ridge point",
)
x_claim = define(
    "claim_over_floor", "x_claim", "", r"x_{claim}", "the claimed per-user rate over the bandwidth floor's"
)
x_all = define("read_vs_total", "x_all", "", r"x_{all}", "parameters one decode step reads, over all parameters")
x_act = define(
    "active_fraction",
    "x_act",
    "",
    r"x_{act}",
    "parameters one token uses over all parameters: a MoE token's share of a dense model's FLOPs",
)

two_n_ratio = formula(
    x_2n, F_tot.symbol / F_2n.symbol, "The full count (weights and attention) over the rule of thumb."
)

query_kv_group_ratio = LIBRARY.add(
    Formula(
        g_q,
        sympy.sympify(n_h.symbol / n_kv.symbol),
        "Grouped-query attention shares each key/value head among n_h/n_kv query heads (Ainslie et al. 2023, 'GQA').",
        counts=True,
    )
)

attention_ridge_fraction = formula(
    x_ridge, I_att.symbol / I_ridge.symbol, "Below 1 the kernel is bandwidth-bound (Williams et al. 2009, roofline)."
)

claim_over_floor = formula(
    x_claim, r_claim.symbol / r_floor.symbol, "Above 1 the claim is faster than the bandwidth floor allows."
)

read_vs_total = formula(
    x_all, N_read.symbol / N.symbol, "What a step streams from memory, against a dense model of the same size."
)

active_fraction = formula(
    x_act, N_act.symbol / N.symbol, "Matmul FLOPs per token scale with the parameters a token multiplies through."
)
