"""Attention's HBM traffic for one prompt: the naive kernel's score matrices against a tiled kernel.

Standard attention (Dao et al. 2022, 'FlashAttention', arXiv:2205.14135, sec. 3, Algorithm 0)
writes the scores S = QK^T to HBM, reads them back for the softmax, writes the
probabilities P, and reads them back for PV: four passes over an S x S matrix per
query head. A tiled kernel keeps each block of scores on chip and touches HBM only
for Q, K, V and O. Causal masking does not shrink what the naive kernel stores.
"""

from derive.core.library import LIBRARY, Formula, formula
from derive.core.symbols import define
from formulas.notation import L, S, d_h, n_h, n_kv
from formulas.sharding import b_a

_FLASH = "Dao et al. 2022, 'FlashAttention' (arXiv:2205.14135), sec. 3"

v_sc = define(
    "attention_scores_per_token_pair",
    "v_sc",
    "sequence/token**2",
    r"v_{sc}",
    "attention scores in one layer per query token, per key token of its sequence",
)
v_io = define(
    "attention_io_values_per_token", "v_qkvo", "1/token", r"v_{qkvo}", "values of Q, K, V and O per token in one layer"
)
Z_l = define(
    "naive_score_bytes_per_layer",
    "Z_l",
    "byte/sequence",
    r"Z_{\ell}",
    "score-matrix bytes naive attention moves through HBM in one layer, per prompt",
)
Z = define(
    "naive_score_bytes",
    "Z_att",
    "byte/sequence",
    r"Z",
    "score-matrix bytes naive attention moves through HBM in all layers, per prompt",
)
X_flash = define(
    "flash_attention_bytes",
    "X_flash",
    "byte/sequence",
    r"X_{flash}",
    "HBM bytes a tiled kernel moves in all layers, per prompt: Q, K, V read once, O written once",
)
X_naive = define(
    "naive_attention_bytes",
    "X_naive",
    "byte/sequence",
    r"X_{naive}",
    "HBM bytes naive attention moves in all layers, per prompt: the scores and Q, K, V, O",
)
rho_att = define(
    "attention_traffic_ratio",
    "rho_att",
    "",
    r"\rho_{att}",
    "how many times more HBM bytes naive attention moves than a tiled kernel",
)

attention_scores_per_token_pair = LIBRARY.add(
    Formula(
        v_sc,
        n_h.symbol,
        "One score per query head for each (query, key) pair; GQA shares K, not scores.",
        counts=True,
    )
)
attention_io_values_per_token = LIBRARY.add(
    Formula(
        v_io,
        2 * n_h.symbol * d_h.symbol + 2 * n_kv.symbol * d_h.symbol,
        "Q and O have a d_h vector per query head, K and V one per KV head.",
        counts=True,
    )
)

naive_score_bytes_per_layer = formula(
    Z_l,
    4 * S.symbol**2 * v_sc.symbol * b_a.symbol,
    f"Write S, read S for the softmax, write P, read P for PV: four passes over the S x S scores "
    f"({_FLASH}, Algorithm 0).",
)
naive_score_bytes = formula(Z, L.symbol * Z_l.symbol, "Every layer materialises its own scores.")
flash_attention_bytes = formula(
    X_flash,
    L.symbol * S.symbol * v_io.symbol * b_a.symbol,
    f"Tiling keeps score blocks in SRAM; HBM sees Q, K, V read and O written ({_FLASH}). Ideal: the kernel re-reads "
    "K and V once per query block (Theorem 2: Theta(N^2 d^2 / M) accesses), so this is a floor.",
)
naive_attention_bytes = formula(
    X_naive,
    Z.symbol + X_flash.symbol,
    f"The naive kernel also reads Q, K, V and writes O ({_FLASH}, Algorithm 0).",
)
attention_traffic_ratio = formula(rho_att, X_naive.symbol / X_flash.symbol, "Naive traffic over tiled traffic.")
