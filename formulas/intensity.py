"""Arithmetic intensity at decode: FLOPs per byte read, per operation, against the ridge point.

At decode each weight GEMM reads its weights once for B·tau tokens; attention reads
each sequence's cache for that sequence's tokens only, so no batch can help it.
Activation traffic (2·B·tau·(d_in + d_out) values a GEMM) is left out: at decode it
is small beside the d_in·d_out weights.
"""

from derive.core.library import formula
from derive.core.symbols import define
from formulas.notation import BW, B, P, a, b_w, c_mac, k, tau

I_w = define(
    "gemm_intensity",
    "I_w",
    "FLOP/byte",
    r"I_{w}",
    "intensity of a weight GEMM (QKV, O, MLP, head): its B·tau tokens per weight read (a prefill chunk alike)",
)
I_att = define("attention_intensity", "I_att", "FLOP/byte", r"I_{att}", "intensity of decode attention")
I_st = define(
    "state_intensity",
    "I_st",
    "FLOP/byte",
    r"I_{st}",
    "intensity of a recurrent layer's decode (linear attention, Mamba): FLOPs on its state over the state's bytes",
)
I_ridge = define(
    "ridge_intensity", "I_ridge", "FLOP/byte", r"I_{ridge}", "the accelerator's ridge point, FLOP/s per byte/s"
)
B_flip = define(
    "flip_batch", "B_flip", "sequence", r"B_{flip}", "batch above which weight GEMMs out-intensity attention"
)

gemm_intensity = formula(
    I_w,
    c_mac.symbol * B.symbol * tau.symbol / b_w.symbol,
    "2 FLOPs per weight per token, B·tau tokens per weight read (scaling-book, 'All About Transformer Inference').",
)

attention_intensity = formula(
    I_att,
    tau.symbol * a.symbol / k.symbol,
    "FLOPs per cached byte: each query token of a sequence does a FLOPs per cached token, which costs k bytes. "
    "With n_h query heads over n_kv KV heads in 16 bits this is n_h/n_kv, whatever the batch.",
)

ridge_intensity = formula(I_ridge, P.symbol / BW.symbol, "Roofline ridge point (Williams et al. 2009).")

T_ridge = define(
    "ridge_tokens",
    "T_ridge",
    "token",
    r"T_{ridge}",
    "tokens one read of the weights must serve for their GEMMs to reach the ridge: the short form of every "
    "compute crossover",
)
ridge_tokens = formula(
    T_ridge,
    I_ridge.symbol * b_w.symbol / c_mac.symbol,
    "A weight read once serves T tokens at c_MAC FLOPs each, so its GEMM's intensity is c_MAC·T/b_w; it meets the "
    "ridge at T = I_ridge·b_w/c_MAC. The decode knee, the prefill crossover and the FFN crossover are this, "
    "plus what attention, the cache and activations add.",
)
