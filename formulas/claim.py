"""Sanity-checking a claimed per-user decode rate against the bandwidth floor at batch 1.

At batch 1 a decode step reads every weight and one sequence's cache, so
t_mem = (W + K)/(n·BW) bounds the step from below and tau/t_mem bounds one user's
rate from above. Solving that bound for another quantity says what a claim above it
needs: fewer bits per weight, more tokens per pass (speculation), or a batch (the
figure read as aggregate throughput).
"""

from derive.core.library import formula
from derive.core.symbols import constant, define
from derive.core.units import to_base_factor
from formulas.notation import B, t_mem, tau

_ROOFLINE = "scaling-book, 'All About Transformer Inference': at small batch decode is bound by reading the weights"

r_claim = define(
    "claimed_rate", "r_claim", "token/second/sequence", r"r_{claim}", "claimed tokens per second for one user"
)
r_floor = define(
    "floor_tokens_per_s_per_user",
    "r_floor",
    "token/second/sequence",
    r"r_{floor}",
    "tokens per second one user gets at the bandwidth floor",
)
R_mem = define(
    "memory_bound_throughput",
    "R_mem",
    "token/second",
    r"R_{mem}",
    "tokens per second, all sequences, while each step is bandwidth-bound",
)
R_claim = define(
    "claimed_aggregate_rate",
    "R_claim",
    "token/second",
    r"R_{claim}",
    "the claimed figure read as tokens per second over all users together",
)
b_w_req = define(
    "required_weight_bytes",
    "b_w_req",
    "byte/parameter",
    r"b_{w,req}",
    "bytes per weight at which the floor meets the claim",
)
# The factor comes from the unit registry (bit = byte/8), not typed here.
bit_w = constant(
    "bit_per_weight",
    "bit_w",
    to_base_factor("bit"),
    "byte/parameter",
    r"\mathrm{bit}_w",
    "one bit per weight, in bytes per parameter",
)
q_req = define(
    "required_bits_per_weight", "q_req", "", r"q_{req}", "bits per weight at which the floor meets the claim"
)
tau_req = define(
    "required_tokens_per_pass",
    "tau_req",
    "token/sequence",
    r"\tau_{req}",
    "tokens each forward pass must give a user for the floor to meet the claim",
)
B_claim = define(
    "claim_batch",
    "B_claim",
    "sequence",
    r"B_{claim}",
    "batch whose bandwidth-bound throughput equals the claimed figure",
)

floor_tokens_per_s_per_user = formula(
    r_floor,
    tau.symbol / t_mem.symbol,
    f"Each pass gives a user tau tokens and takes at least t_mem ({_ROOFLINE}).",
)
memory_bound_throughput = formula(
    R_mem,
    B.symbol * tau.symbol / t_mem.symbol,
    "Below the knee each step is bandwidth-bound and every sequence gains tau tokens (formulas/roofline.py).",
)
required_bits_per_weight = formula(q_req, b_w_req.symbol / bit_w.symbol, "Bytes per weight in bits.")
