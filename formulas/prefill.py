"""Prefill and the TTFT/TPOT predictor: the prompt pass and the decode steps, at stated efficiencies.

Efficiencies default to 1: the predictions are floors, and a real server is slower.
"""

from derive.core.library import formula, larger
from derive.core.symbols import define
from formulas.notation import BW, B, F, F_lm, F_pre, F_pw, K_pr, P, S_o, S_p, S_sc, a, k, n, s_kvp, t_step, tau
from formulas.reads import W_pre

eta_bw = define("bandwidth_efficiency", "eta_bw", "", r"\eta_{bw}", "fraction of peak bandwidth achieved")
eta_f = define("flops_efficiency", "eta_f", "", r"\eta_{f}", "fraction of peak FLOP/s achieved")
t_pm = define(
    "prefill_memory_time", "t_pm", "second", r"t_{pm}", "prefill time to read weights and write the prompt's KV"
)
t_pc = define("prefill_compute_time", "t_pc", "second", r"t_{pc}", "prefill time for the prompt's FLOPs")
# Floors: peak figures, at the efficiencies below (1 unless set). The calibrated TTFT and TPOT, the estimates a
# server reaches, are formulas/calibrated.py's `ttft` and `tpot`: one name for each, never one name for both.
ttft = define(
    "ttft_floor", "TTFT_f", "second", r"\mathrm{TTFT}_{floor}", "floor of the time to first token: the prompt pass"
)
tpot = define(
    "tpot_floor", "TPOT_f", "second", r"\mathrm{TPOT}_{floor}", "floor of the time per output token: one decode step"
)
e2e = define("e2e_latency_floor", "T_e2ef", "second", r"T_{e2e,floor}", "floor of a request's end-to-end latency")
R_dec = define(
    "decode_throughput", "R_dec", "token/second", r"R_{dec}", "decode tokens per second at the floor's step time"
)
S_pref = define(
    "compute_bound_prompt_tokens",
    "S_pc",
    "token/sequence",
    r"S_{pc}",
    "prompt length at which prefill turns compute-bound",
)

prompt_kv_bytes_per_sequence = formula(
    K_pr, S_p.symbol * k.symbol, "After its prompt a sequence caches every prompt token (a model with windows caps it)."
)

prefill_attention_flops_per_token = formula(
    F_pre,
    S_p.symbol * a.symbol / 2,
    "Causal masking: the prompt token at position p attends to p tokens, S_p/2 on average (a window caps it).",
)

prompt_weight_flops_per_sequence = formula(
    F_pw,
    S_p.symbol * (F.symbol - F_lm.symbol) + S_sc.symbol * F_lm.symbol,
    "Every prompt token goes through the weights; the head scores only the last, whose logits give the first output "
    "token (vLLM and TensorRT-LLM gather the last position's hidden state before the head; aiconfigurator 0.12 "
    "prices its context logits GEMM at one row a sequence).",
)

prefill_memory_time = formula(
    t_pm,
    (W_pre.symbol / n.symbol + B.symbol * K_pr.symbol / s_kvp.symbol) / (eta_bw.symbol * BW.symbol),
    "The prompt pass reads the weights it multiplies through once and writes each prompt token's KV, each "
    "accelerator its share.",
)

prefill_compute_time = formula(
    t_pc,
    B.symbol * (F_pw.symbol + S_p.symbol * F_pre.symbol) / (n.symbol * eta_f.symbol * P.symbol),
    "Every prompt token goes through the weights (the head scoring the last) and attends causally to the tokens "
    "before it.",
)

time_to_first_token = formula(ttft, larger(t_pm.symbol, t_pc.symbol), "Roofline of the prompt pass.")

time_per_output_token = formula(
    tpot,
    t_step.symbol / eta_bw.symbol,
    "One decode step at the mean context; decode is bandwidth-bound, so the bandwidth efficiency applies.",
)

e2e_latency = formula(
    e2e,
    ttft.symbol + (S_o.symbol - S_sc.symbol) * tpot.symbol / tau.symbol,
    "The prompt pass, which gives the first output token, then (S_o - 1)/tau decode steps for the rest.",
)

decode_throughput = formula(R_dec, B.symbol * tau.symbol / tpot.symbol, "Every sequence gains tau tokens per step.")
