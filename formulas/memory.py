"""Bytes: weights by dtype, and the KV cache per token, per sequence and per batch."""

from derive.library import formula
from formulas.notation import B, N, S, W, b_kv, b_w, k, kv_seq, kv_total, v_kv

weight_bytes = formula(W, N.symbol * b_w.symbol, "Every parameter stored once in the weight dtype.")

kv_bytes_per_token = formula(
    k,
    v_kv.symbol * b_kv.symbol,
    "Cached values per token times bytes per value (Pope et al. 2022, 'Efficiently Scaling "
    "Transformer Inference', sec. 2).",
)

kv_bytes_per_sequence = formula(kv_seq, S.symbol * k.symbol, "A sequence caches every token of its context.")

kv_bytes = formula(kv_total, B.symbol * kv_seq.symbol, "Each sequence of the batch has its own cache.")
