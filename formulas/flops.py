"""FLOPs per token: the matmuls through the weights, attention over the context, and where 2N breaks."""

from derive.core.library import formula
from derive.core.symbols import define
from formulas.notation import F, F_lm, N, N_act, N_lm, N_mm, S, a, c_mac

F_att = define("attention_flops_per_token", "F_att", "FLOP/token", r"F_{att}", "attention FLOPs per token at context S")
F_att_avg = define(
    "prompt_attention_flops_per_token",
    "F_att_avg",
    "FLOP/token",
    r"\bar{F}_{att}",
    "attention FLOPs per token averaged over a causal prompt of S tokens",
)
F_tot = define("flops_per_token", "F_tot", "FLOP/token", r"F_{tot}", "FLOPs per token: weights and attention")
F_2n = define("two_n_flops_per_token", "F_2N", "FLOP/token", r"F_{2N}", "the 2N rule: two FLOPs per parameter")
N_na = define("non_arithmetic_params", "N_na", "parameter", r"N_{na}", "active parameters that do no matmul")
S_att = define(
    "attention_equals_weights_context",
    "S_att",
    "token/sequence",
    r"S_{att}",
    "context at which attention FLOPs equal the weight FLOPs",
)

weight_flops_per_token = formula(
    F,
    c_mac.symbol * N_mm.symbol,
    "Each parameter a token multiplies through costs one multiply-accumulate, two FLOPs "
    "(Kaplan et al. 2020, 'Scaling Laws for Neural Language Models', sec. 2.1).",
)

lm_head_flops_per_token = formula(
    F_lm, c_mac.symbol * N_lm.symbol, "The head multiplies a token's hidden state by its V x d matrix."
)

attention_flops_per_token = formula(
    F_att,
    S.symbol * a.symbol,
    "Each query token scores against and sums over every cached token of its sequence (Kaplan et al. 2020, Table 1).",
)

prompt_attention_flops_per_token = formula(
    F_att_avg,
    S.symbol * a.symbol / 2,
    "Causal masking: the token at position p attends to p tokens, S/2 on average over the prompt.",
)

flops_per_token = formula(F_tot, F.symbol + F_att.symbol, "Weight matmuls plus attention.")

two_n_flops_per_token = formula(F_2n, c_mac.symbol * N.symbol, "The rule of thumb: 2 FLOPs per parameter.")

non_arithmetic_params = formula(
    N_na,
    N_act.symbol - N_mm.symbol,
    "The embedding lookup and the norms: parameters a token reads but does not multiply through "
    "(a tied embedding does arithmetic as the head).",
)
