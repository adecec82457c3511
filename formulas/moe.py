"""Mixture of experts at decode: how many routed experts one step touches, and what it reads.

A token uses its top-k of E routed experts, but a decode step serves B·tau tokens,
and every expert any of them picks is read from memory once that step. The step's
weight traffic is therefore set by the union of the tokens' choices, not by k.
"""

from derive.formula import formula
from derive.symbols import constant, define
from formulas.notation import B, E, L_e, N, N_act, N_routed, b_w, k_e, tau

c_route = constant(
    "routing_draws_per_token",
    "c_route",
    1,
    "1/token",
    r"c_{route}",
    "top-k routing draws per token per MoE layer: each token is routed once",
)
T_r = define("routed_tokens", "T_r", "", "T_r", "tokens routed through each MoE layer in one step (a pure count)")
E_t = define("experts_touched", "E_t", "", "E_t", "expected distinct routed experts one step uses, per MoE layer")
N_x = define("params_per_expert", "N_x", "parameter", "N_x", "parameters of one routed expert in one layer")
N_fix = define(
    "always_read_params",
    "N_fix",
    "parameter",
    r"N_{fix}",
    "parameters every step reads whatever the routing: all but the routed experts",
)
N_read = define("params_read_per_step", "N_read", "parameter", r"N_{read}", "parameters one decode step reads")
W_read = define("bytes_read_per_step", "W_read", "byte", r"W_{read}", "weight bytes one decode step reads")
x_read = define("read_vs_active", "x_read", "", r"x_{read}", "parameters a step reads per parameter one token uses")

routed_tokens = formula(
    T_r,
    B.symbol * tau.symbol * c_route.symbol,
    "Each of the B sequences adds tau tokens per step, and each token is routed once per MoE layer.",
)

experts_touched = formula(
    E_t,
    E.symbol * (1 - (1 - k_e.symbol / E.symbol) ** T_r.symbol),
    "Assumes uniform, independent routing. One token's top-k, drawn without replacement, misses a "
    "given expert with probability C(E-1,k)/C(E,k) = 1 - k/E; T_r independent tokens all miss it "
    "with (1 - k/E)^T_r; sum over the E experts (linearity of expectation). For independent tokens "
    "any skewed routing touches fewer (the sum of 1-(1-p_i)^T_r is concave in p_i), so this is the most.",
)

params_per_expert = formula(
    N_x,
    N_routed.symbol / (L_e.symbol * E.symbol),
    "Routed experts all have one shape (3·d·d_e: gate, up and down projections), so the routed total splits evenly.",
)

always_read_params = formula(
    N_fix,
    N.symbol - N_routed.symbol,
    "Embeddings, attention, norms, routers, shared experts, dense-layer MLPs and the head serve every token.",
)

params_read_per_step = formula(
    N_read,
    N_fix.symbol + L_e.symbol * E_t.symbol * N_x.symbol,
    "A touched expert's weights are read once per step however many of the step's tokens it serves.",
)

bytes_read_per_step = formula(W_read, N_read.symbol * b_w.symbol, "Every weight read is stored in the weight dtype.")

read_vs_active = formula(
    x_read,
    N_read.symbol / N_act.symbol,
    "At T_r = 1, E_t = k and N_read is the active count; the ratio shows what batching the experts costs.",
)
