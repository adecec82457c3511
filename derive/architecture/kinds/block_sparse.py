"""Block-sparse attention (MiniMax-M3): GQA attention over the key blocks a small indexer selects.

transformers' models/minimax_m3_vl/modeling_minimax_m3_vl.py: a layer whose layer_types entry is
"minimax_m3_sparse" (the checkpoint's sparse_attention_config.sparse_attention_freq flag) holds, beside its
q/k/v/o projections and per-head q/k norms, a MiniMaxM3VLIndexer: q_proj (d -> n_idx·d_idx), k_proj (d -> d_idx,
one key head), q_norm and k_norm (d_idx each), no biases and no value path. Each query scores every cached
index key per index head, max-pools the scores over blocks of index_block_size keys, and keeps its top
index_topk_blocks blocks, the index_local_blocks blocks ending at its own boosted so they always win a slot
(they are among the top-k, not added to it). Attention then runs over the kept blocks' tokens only.
The cache (MiniMaxM3VLSparseCacheLayer) holds the key and value per KV head and the one index key per token.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.attention import Attention
from derive.architecture.kinds.attention import read as read_attention
from derive.architecture.kinds.base import FULL, Indexer, Resolve, top_k_mean
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from derive.core.library import Formula
from derive.core.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class BlockSparseAttention(Attention):
    """GQA attention plus a block indexer: n_idx query heads and one key head of d_idx, each normed.

    The indexer's top-k is counted in tokens, S_top = top blocks x block size: a decoding query attends to
    min(S, S_top) tokens, exactly so at a block boundary (past it, the query's own block is partly filled and
    the count is (blocks - 1)·block + the tokens of that block, never more than S_top). The indexer scores every
    cached token (n_idx·d_idx multiply-accumulates each), as DeepSeek's DSA indexer does.
    """

    indexer: Indexer = Indexer(0, 0, 0)
    block_size: int = 0  # index_block_size: tokens a block pools
    top_blocks: int = 0  # index_topk_blocks: blocks a query keeps (its local blocks among them)
    local_blocks: int = 0  # index_local_blocks: blocks ending at the query's, always kept

    names = {"bsa": "block-sparse attention"}

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "bsa" + self.shape_tag

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"block-sparse attention (GQA + indexer, top {self.top_blocks} blocks of {self.block_size} tokens)"

    def shapes(self) -> dict[Sym, int]:
        return {**super().shapes(), **self.indexer.shapes()}

    def weights(self, s: Resolve) -> sympy.Expr:
        d, ni, di = n.d.symbol, s(n.n_idx), s(n.d_idx)
        return super().weights(s) + d * ni * di + d * di  # the indexer's q_proj and k_proj

    def norms(self, s: Resolve) -> sympy.Expr:
        return super().norms(s) + 2 * s(n.d_idx)  # the indexer's q_norm and k_norm

    def cached_values(self, s: Resolve) -> sympy.Expr:
        return super().cached_values(s) + s(n.d_idx)  # and the one index key a token

    # Attention over the top-k blocks' tokens; the indexer scores every cached token.
    def attended(self, s: Resolve, context: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        return sympy.Min(context, n.S_top.symbol) * flops + context * n.a_idx.symbol

    def prompt_attended(self, s: Resolve, prompt: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        return top_k_mean(prompt, n.S_top.symbol) * flops + prompt / 2 * n.a_idx.symbol

    def context_formulas(self, s: Resolve, layers: sympy.Symbol) -> list[Formula]:
        macs = 2 * layers * self.indexer.macs(s)
        why = "The indexer scores every cached token per index head, then keeps the top blocks."
        return [Formula(n.a_idx, macs, why, counts=True)]

    def plain(self) -> bool:
        return False

    def notes(self) -> tuple[str, ...]:
        local = f", the {self.local_blocks} ending at its own among them" if self.local_blocks else ""
        return (
            f"a block-sparse layer attends to at most S_top = {self.top_blocks} blocks x {self.block_size} tokens = "
            f"{self.indexer.topk:,} tokens{local}, and caches every token's index key beside K and V (in the KV dtype)",
        )


def read(k: Keys, spec: Spec) -> BlockSparseAttention:
    """Attention as the entry's section says, with the indexer from index_n_heads, index_head_dim, index_block_size,
    index_topk_blocks and index_local_blocks (names the entry may widen to a checkpoint's own)."""
    disabled = k.get("sparse_disable_index_value")  # this layer's flag, where the entry gives the list per layer
    if disabled is not None and not disabled:
        raise CatalogError(
            f"config for {k.name}: a block-sparse layer's sparse_disable_index_value is {disabled!r}: its indexer "
            "would have a value path",
            "transformers builds no index-value projection (nor caches index values) and derive does not describe one",
        )
    plain = read_attention(k, spec, FULL)
    block, top = k.int("index_block_size"), k.int("index_topk_blocks")
    return BlockSparseAttention(
        **{f.name: getattr(plain, f.name) for f in fields(plain)},
        indexer=Indexer(k.int("index_n_heads"), k.int("index_head_dim"), top * block),
        block_size=block,
        top_blocks=top,
        local_blocks=k.int("index_local_blocks", 0, minimum=0),
    )
