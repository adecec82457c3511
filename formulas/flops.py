"""FLOPs: the matmul work each token does through the weights."""

from derive.formula import formula
from formulas.notation import F, N_mm, c_mac

weight_flops_per_token = formula(
    F, c_mac.symbol * N_mm.symbol,
    "Each parameter a token multiplies through costs one multiply-accumulate, two FLOPs "
    "(Kaplan et al. 2020, 'Scaling Laws for Neural Language Models', sec. 2.1).",
)
