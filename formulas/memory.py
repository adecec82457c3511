"""Bytes: weights by dtype, and the KV cache per token, per sequence and per batch."""

from derive.core.library import formula
from formulas.notation import B, K_fix, N, S, W, b_kv, b_w, k, k_m, kv_seq, kv_total, v_kv

weight_bytes = formula(W, N.symbol * b_w.symbol, "Every parameter stored once in the weight dtype.")

kv_bytes_per_token = formula(
    k,
    v_kv.symbol * b_kv.symbol,
    "Cached values per token times bytes per value (Pope et al. 2022, 'Efficiently Scaling "
    "Transformer Inference', sec. 2).",
)

kv_bytes_per_sequence = formula(kv_seq, S.symbol * k.symbol, "A sequence caches every token of its context.")

kv_bytes = formula(kv_total, B.symbol * kv_seq.symbol, "Each sequence of the batch has its own cache.")

kv_marginal_bytes_per_token = formula(
    k_m, k.symbol, "Every layer caches every token, so each further token adds all of k (a window caps its layers)."
)

kv_fixed_bytes_per_sequence = formula(
    K_fix, 0, "Every layer's cache grows with the context: none is fixed (a window or a recurrent state would be)."
)
