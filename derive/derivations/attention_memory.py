"""`derive attention-memory`: the HBM bytes of materialised attention scores against a tiled kernel."""

from __future__ import annotations

from derive.catalog import dtype_bytes
from derive.core.sheet import Sheet
from derive.derivations.common import Setup, start
from derive.derivations.sharding import activation_format
from formulas import notation as sym
from formulas.sharding import b_a


def attention_memory(setup: Setup) -> Sheet:
    model, cfg = setup.model, setup.model.config
    work = start(
        "attention-memory", f"Attention HBM traffic of {model.title} for a {setup.context:,}-token prompt", setup
    )
    work.given(b_a, dtype_bytes(activation_format(setup)), activation_format(setup))
    work.given(sym.S, setup.context, "default" if "context" in setup.defaults else "--context")
    # A model whose layers differ, or that caches a latent, has no one n_kv and d_h: size it by its first
    # attention layer, and say so (the note below).
    for shape, value in ((sym.n_h, cfg.heads), (sym.n_kv, cfg.kv_heads), (sym.d_h, cfg.head_dim)):
        if shape not in work.values:
            work.given(shape, value, "the first attention layer's (the layers differ)")
    attending = cfg.count(lambda g: g.mixer is not None and g.mixer.softmax)
    if attending != cfg.layers:  # a hybrid: its linear-attention and Mamba layers keep a state, no scores
        work.given(sym.L, attending, "softmax-attention layers only: the others compute no score matrix")
    for name in ("attention_scores_per_token_pair", "attention_io_values_per_token"):
        work.compute(work.library.get(name))
    work.heading("Naive: the score matrices go through HBM")
    work.compute(work.library.get("naive_score_bytes_per_layer"), "naive_score_bytes_per_layer")
    work.compute(work.library.get("naive_score_bytes"), "naive_score_bytes")
    work.heading("Tiled (FlashAttention): only Q, K, V and O")
    work.compute(work.library.get("flash_attention_bytes"), "flash_bytes")
    work.compute(work.library.get("naive_attention_bytes"))
    work.compute(work.library.get("attention_traffic_ratio"), "traffic_ratio")
    work.note(
        "counted per query head and layer: S written, read by the softmax, P written, read by PV (four passes "
        "over S x S); the causal mask does not shrink what a naive kernel stores"
    )
    work.note("scores in the activation dtype; kernels that keep the softmax in fp32 move twice the naive figure")
    work.note("the tiled figure is a floor: FlashAttention re-reads K and V once per query block")
    mla = cfg.attention
    if mla is not None and cfg.is_mla:
        work.note(
            "MLA: Q, K, V and O are sized with the config's head_dim; its query/key heads are "
            f"{mla.score_width()} wide, so the tiled figure is approximate"
        )
    return work.sheet
