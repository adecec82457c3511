"""Speculative decoding: a draft proposes k tokens a sequence, the model checks them in one pass.

Each drafted token is accepted with probability alpha, independently, until the first rejection; the pass
then adds the model's own token (Leviathan et al., Fast Inference from Transformers via Speculative Decoding,
ICML 2023, eq. 1). The pass is the roofline step (formulas/roofline.py) with k+1 tokens a sequence through
the weights: memory-bound, it costs what a step does and speculation pays; compute-bound, it costs k+1 steps
and it cannot. `derive solve "speculative_gain = 1" --for batch` gives the batch where it stops paying.
"""

from derive.core.library import formula, larger
from derive.core.symbols import define
from formulas.notation import t_comp, t_mem, t_step, tau

k_d = define("draft_tokens", "k_d", "", "k", "tokens the draft proposes a sequence before each verification pass")
alpha_acc = define("acceptance_rate", "alpha_acc", "", r"\alpha", "chance the model accepts each drafted token")
c_d = define("draft_cost", "c_d", "", r"c_{d}", "one draft step's time over one step of the model at the same batch")
tau_sp = define(
    "speculative_tokens_per_pass",
    "tau_sp",
    "token/sequence",
    r"\tau_{sp}",
    "tokens each sequence gains per verification pass, expected",
)
t_ver = define(
    "verification_time", "t_ver", "second", r"t_{ver}", "one verification pass: the model over k+1 tokens a sequence"
)
t_draft = define("draft_time", "t_draft", "second", r"t_{draft}", "the k draft steps before one verification pass")
G_sp = define("speculative_gain", "G_sp", "", r"G_{sp}", "decode tokens a second with speculation over without")

speculative_tokens_per_pass = formula(
    tau_sp,
    tau.symbol * (1 - alpha_acc.symbol ** (k_d.symbol + 1)) / (1 - alpha_acc.symbol),
    "The i-th draft survives with probability alpha^i; the expected accepted run plus the model's own token is "
    "1 + alpha + ... + alpha^k (Leviathan et al. 2023, eq. 1). At alpha = 0 it is one token, as without a draft.",
)
verification_time = formula(
    t_ver,
    larger(t_mem.symbol, (k_d.symbol + 1) * t_comp.symbol),
    "The pass reads the weights and the cache once, as a step does, and runs k+1 tokens a sequence through "
    "them: the k drafts and the position after them (the roofline, Williams et al. 2009).",
)
draft_time = formula(
    t_draft,
    k_d.symbol * c_d.symbol * t_step.symbol,
    "k draft steps, each c_d of a step of the model at the same batch (a small draft model, or MTP modules).",
)
speculative_gain = formula(
    G_sp,
    tau_sp.symbol * t_step.symbol / (tau.symbol * (t_ver.symbol + t_draft.symbol)),
    "A pass and its drafts make tau_sp tokens a sequence where a step makes tau: the ratio of the two rates. "
    "Above 1 speculation pays; memory-bound it is tau_sp/(tau·(1 + k·c_d)), and it falls once the k+1 tokens' "
    "FLOPs outlast the reads.",
)
