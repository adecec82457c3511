"""Placing an operation on the roofline: the FLOP/s it can attain at its arithmetic intensity."""

from derive.core.library import formula, smaller
from derive.core.symbols import define
from formulas.intensity import I_w
from formulas.notation import BW, P

P_att = define(
    "attainable_flops",
    "P_att",
    "FLOP/second",
    r"P_{att}",
    "FLOP/s a weight GEMM can attain at its intensity: the lower of the two roofs",
)

attainable_flops = formula(
    P_att,
    smaller(P.symbol, I_w.symbol * BW.symbol),
    "Roofline model: attainable performance is min(peak, intensity x bandwidth) (Williams, Waterman and "
    "Patterson 2009, 'Roofline', CACM 52(4)).",
)
