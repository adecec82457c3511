"""What one pass reads from memory: the weights it multiplies through, and the rows it only looks up.

A decode step multiplies every token through every matrix, so it streams each matrix once,
but it only gathers B·tau rows of the input embedding (and of learned positions): the table
itself is never read whole unless the head shares it. A mixture of experts reads only the
experts its tokens touch; such a model replaces these with its own sums
(derive/architecture/build.py), so every roofline and sheet reads what the step reads.
"""

from derive.core.library import formula
from derive.core.symbols import define
from formulas.notation import B, N, N_look, S_p, b_w, n_g, tau

N_read = define("params_read_per_step", "N_read", "parameter", r"N_{read}", "parameters one decode step reads")
W_read = define("bytes_read_per_step", "W_read", "byte", r"W_{read}", "weight bytes one decode step reads")
N_pre = define("params_read_by_prefill", "N_pre", "parameter", r"N_{pre}", "parameters the prompt pass reads")
W_pre = define("bytes_read_by_prefill", "W_pre", "byte", r"W_{pre}", "weight bytes the prompt pass reads")

params_read_per_step = formula(
    N_read,
    N.symbol - N_look.symbol + B.symbol * tau.symbol * n_g.symbol,
    "Every matrix is streamed once per step; a lookup table gives only the step's B·tau rows "
    "(an embedding is a gather, not a matmul: vLLM's VocabParallelEmbedding).",
)

bytes_read_per_step = formula(W_read, N_read.symbol * b_w.symbol, "Every weight read is stored in the weight dtype.")

params_read_by_prefill = formula(
    N_pre,
    N.symbol - N_look.symbol + B.symbol * S_p.symbol * n_g.symbol,
    "The prompt pass streams every matrix once and gathers one row per prompt token.",
)

bytes_read_by_prefill = formula(W_pre, N_pre.symbol * b_w.symbol, "Every weight read is stored in the weight dtype.")
