"""Mixture of experts at decode: how many routed experts one step touches, and what it reads.

A token uses its top-k of E routed experts, but a decode step serves B·tau tokens,
and every expert any of them picks is read from memory once that step. The step's
weight traffic is therefore set by the union of the tokens' choices, not by k.
"""

from derive.core.library import formula
from derive.core.symbols import constant, define
from formulas.notation import B, E, L_e, N, N_act, N_look, N_routed, S_p, b_w, c_mac, k_e, tau
from formulas.reads import N_read

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
T_pf = define(
    "prefill_routed_tokens", "T_pf", "", r"T_{pf}", "tokens routed through each MoE layer in the prompt pass (a count)"
)
E_pf = define(
    "prefill_experts_touched",
    "E_pf",
    "",
    r"E_{pf}",
    "expected distinct routed experts the prompt pass uses, per MoE layer",
)
N_x = define("params_per_expert", "N_x", "parameter", "N_x", "parameters of one routed expert in one layer")
N_fix = define(
    "always_read_params",
    "N_fix",
    "parameter",
    r"N_{fix}",
    "parameters every step reads whatever the routing: all but the routed experts and the lookup tables",
)
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

prefill_routed_tokens = formula(
    T_pf, B.symbol * S_p.symbol * c_route.symbol, "Every prompt token of the B sequences is routed once per MoE layer."
)

prefill_experts_touched = formula(
    E_pf,
    E.symbol * (1 - (1 - k_e.symbol / E.symbol) ** T_pf.symbol),
    "The same union as a decode step's (experts_touched), over the prompt pass's tokens.",
)

params_per_expert = formula(
    N_x,
    N_routed.symbol / (L_e.symbol * E.symbol),
    "Routed experts all have one shape (3·d·d_e: gate, up and down projections), so the routed total splits evenly.",
)

always_read_params = formula(
    N_fix,
    N.symbol - N_routed.symbol - N_look.symbol,
    "Attention, norms, routers, shared experts, dense-layer MLPs and the head serve every token; the lookup "
    "tables give only their rows (formulas/reads.py).",
)

read_vs_active = formula(
    x_read,
    N_read.symbol / N_act.symbol,
    "At T_r = 1, E_t = k and N_read is the active count; the ratio shows what batching the experts costs.",
)

# What one touched expert's GEMMs see: the tokens routed to it, not the batch.
I_x = define(
    "expert_gemm_intensity",
    "I_x",
    "FLOP/byte",
    r"I_{x}",
    "intensity of a routed expert's GEMMs at decode: the tokens each touched expert serves",
)
expert_gemm_intensity = formula(
    I_x,
    c_mac.symbol * B.symbol * tau.symbol * k_e.symbol / (E_t.symbol * b_w.symbol),
    "The step's B·tau tokens each pick k experts, spread over the E_t experts touched: each touched expert "
    "reads its weights once for B·tau·k/E_t tokens (the GEMM intensity of formulas/intensity.py at that count).",
)
