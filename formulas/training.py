"""What a training step consumes: tokens per second from 6N FLOPs per token, and the input pipeline.

Training costs about 6N FLOPs per token, forward 2N and backward 4N (Kaplan et al. 2020, 'Scaling
Laws for Neural Language Models', sec. 2.1). At an MFU on n_gpu accelerators that fixes the tokens
per second the loader must deliver, its bytes per second, and how many tokeniser workers it takes
if text is tokenised online.
"""

from derive.core.library import formula
from derive.core.symbols import define
from formulas.notation import N, P, c_mac

n_gpu = define("training_gpus", "n_train", "", r"n_{gpu}", "accelerators training together (data parallel)")
u_tr = define("training_mfu", "u_mfu", "", r"u_{MFU}", "model FLOPs utilisation the training run reaches")
F_tr = define(
    "training_flops_per_token",
    "F_train",
    "FLOP/token",
    r"F_{train}",
    "training FLOPs per token: forward 2N and backward 4N",
)
R_tr = define("training_token_rate", "R_train", "token/second", r"R_{train}", "tokens per second training consumes")
b_tok = define(
    "input_bytes_per_token",
    "b_tok",
    "byte/token",
    r"b_{tok}",
    "bytes the loader reads per token (raw text, or a stored token id)",
)
X_in = define("loader_input_bandwidth", "X_in", "byte/second", r"X_{in}", "input bytes per second the loader must read")
r_core = define(
    "tokenizer_rate_per_worker",
    "r_core",
    "token/second",
    r"r_{tok}",
    "tokens per second one tokeniser worker produces",
)
w_tok = define("tokenizer_workers_needed", "w_tok", "", r"w_{tok}", "tokeniser workers needed to keep up online")
G_tok = define("global_batch_tokens", "G_tok", "token", r"G", "tokens in one optimiser step, all accelerators")
t_tr = define("training_step_time", "t_train", "second", r"t_{train}", "time of one training step at the MFU")
X_b = define("batch_input_bytes", "X_b", "byte", r"X_b", "input bytes of one global batch")
BW_io = define("storage_bandwidth", "BW_io", "byte/second", r"BW_{io}", "read bandwidth of the data store")
w_ld = define("loader_workers", "w_ld", "", r"w_{ld}", "tokeniser workers the loader runs")
t_ld = define(
    "batch_load_time",
    "t_ldb",
    "second",
    r"t_{load}",
    "time to read and tokenise one global batch when nothing is prefetched",
)
f_idle = define(
    "loader_idle_fraction", "f_idle", "", r"f_{idle}", "share of wall time the accelerators wait on data, unprefetched"
)

training_flops_per_token = formula(
    F_tr,
    3 * c_mac.symbol * N.symbol,
    "6N: 2N forward and 4N backward, each multiply-accumulate two FLOPs (Kaplan et al. 2020, sec. 2.1).",
)

training_token_rate = formula(
    R_tr, u_tr.symbol * n_gpu.symbol * P.symbol / F_tr.symbol, "Achieved FLOP/s over FLOPs per token."
)

input_bandwidth = formula(X_in, R_tr.symbol * b_tok.symbol, "Every token consumed must be read.")

tokenizer_workers = formula(w_tok, R_tr.symbol / r_core.symbol, "Online tokenising must keep pace with training.")

training_step_time = formula(t_tr, G_tok.symbol / R_tr.symbol, "A step consumes the global batch.")

batch_input_bytes = formula(X_b, G_tok.symbol * b_tok.symbol, "Each token of the batch is read once.")

batch_load_time = formula(
    t_ld,
    X_b.symbol / BW_io.symbol + G_tok.symbol / (w_ld.symbol * r_core.symbol),
    "Read the batch's bytes, then tokenise it on the loader's workers, one after the other.",
)

idle_fraction = formula(
    f_idle,
    t_ld.symbol / (t_ld.symbol + t_tr.symbol),
    "Without prefetching, load and step run in series: the accelerators idle while each batch loads.",
)
