"""DeepSeek V4's attention: a shared-KV sliding window, plus compressed entries (sparse or heavy)."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import CACHE_SOURCE, Indexer, Kind, Resolve, Span, top_k_mean
from derive.architecture.spec import Spec
from derive.core.library import Formula
from derive.core.symbols import Sym, tagged
from formulas import notation as n


@dataclass(frozen=True)
class CompressedAttention(Kind):
    """DeepSeek V4's attention: one shared key-value head over a sliding window, plus compressed entries.

    ratio 0: the window only. Otherwise every `ratio` tokens are compressed into one entry the layer also
    caches and attends to; with an indexer (compressed sparse attention, ratio 4) a query attends to the
    indexer's top-k compressed entries, without one (heavily compressed, ratio 128) to all of them.
    Parameters after transformers' modeling_deepseek_v4: sinks, q_a/q_b with a q norm, kv_proj with its norm,
    the grouped output LoRA (o_a, o_b), and each compressor's position bias, kv and gate projections and norm.
    """

    heads: int
    q_lora_rank: int
    head_dim: int
    out_groups: int
    out_lora_rank: int
    window: Span
    ratio: int = 0
    indexer: Indexer | None = None

    softmax = True
    names = {"swa": "sliding-window", "csa": "sparse compressed-attention", "hca": "heavily compressed-attention"}
    whole_cache = True

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "swa" if not self.ratio else ("csa" if self.indexer else "hca")

    @property
    def label(self) -> str:  # type: ignore[override]
        if not self.ratio:
            return "sliding-window attention (shared KV head)"
        return f"{'sparse ' if self.indexer else ''}compressed attention (1 entry per {self.ratio} tokens)"

    def shapes(self) -> dict[Sym, int]:
        out = {n.n_h: self.heads, n.r_q: self.q_lora_rank, n.d_h: self.head_dim, n.S_win: self.window.tokens}
        out.update({n.g_o: self.out_groups, n.r_o: self.out_lora_rank})
        if self.ratio:
            out[n.m_c] = self.ratio
        if self.indexer:
            out.update(self.indexer.shapes())
        return out

    def weights(self, s: Resolve) -> sympy.Expr:
        d, nh, rq, dh = n.d.symbol, s(n.n_h), s(n.r_q), s(n.d_h)
        total = nh + d * rq + rq * nh * dh + d * dh + s(n.r_o) * nh * dh + d * s(n.g_o) * s(n.r_o)
        if self.ratio:
            width = 2 * dh if self.indexer else dh  # the sparse compressor keeps two entries per position
            total += s(n.m_c) * width + 2 * d * width
        if self.indexer:
            ni, di = s(n.n_idx), s(n.d_idx)
            total += s(n.m_c) * 2 * di + 2 * d * 2 * di + rq * ni * di + d * ni
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        total = s(n.r_q) + s(n.d_h)
        if self.ratio:
            total += s(n.d_h)
        if self.indexer:
            total += s(n.d_idx)
        return total

    def cached_values(self, s: Resolve) -> sympy.Expr:
        return s(n.d_h)  # the window's entries: one head whose key is also its value

    def span(self) -> Span:
        return self.window

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return 2 * s(n.n_h) * s(n.d_h)

    def compressed_values(self, s: Resolve) -> sympy.Expr:
        """Values cached per compressed entry (with the indexer's key for a sparse layer)."""
        return s(n.d_h) + (s(n.d_idx) if self.indexer else 0)

    def _entry_bytes(self) -> Sym:
        return tagged(n.k, self.tag + "c", f"KV-cache bytes per compressed entry, {self._kind_name} layers")

    @property
    def _kind_name(self) -> str:
        return "sparse compressed-attention" if self.indexer else "heavily compressed-attention"

    # Compressed entries: one per m_c tokens, cached and attended (the indexer's top-k of them, if sparse).
    def cache(self, s: Resolve, context: sympy.Expr, per_token: sympy.Expr) -> sympy.Expr:
        own = super().cache(s, context, per_token)
        return own if not self.ratio else own + context / s(n.m_c) * self._entry_bytes().symbol

    def cache_growth(self, s: Resolve, per_token: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
        grows, held = super().cache_growth(s, per_token)
        return (grows if not self.ratio else grows + self._entry_bytes().symbol / s(n.m_c)), held

    def attended(self, s: Resolve, context: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        own = super().attended(s, context, flops)
        if not self.ratio:
            return own
        entries = context / s(n.m_c)
        if self.indexer is None:
            return own + entries * flops
        return own + sympy.Min(entries, n.S_top.symbol) * flops + entries * n.a_idx.symbol

    def prompt_attended(self, s: Resolve, prompt: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        own = super().prompt_attended(s, prompt, flops)
        if not self.ratio:
            return own
        entries = prompt / s(n.m_c)
        if self.indexer is None:
            return own + entries / 2 * flops
        return own + top_k_mean(entries, n.S_top.symbol) * flops + entries / 2 * n.a_idx.symbol

    def context_formulas(self, s: Resolve, layers: sympy.Symbol) -> list[Formula]:
        if not self.ratio:
            return []
        v = tagged(n.v_kv, self.tag + "c", f"values cached per compressed entry, {self._kind_name} layers")
        out = [
            Formula(v, layers * self.compressed_values(s), CACHE_SOURCE, counts=True),
            Formula(self._entry_bytes(), v.symbol * n.b_kv.symbol, "Cached values per entry times bytes per value."),
        ]
        if self.indexer is not None:
            macs = 2 * layers * self.indexer.macs(s)
            out.append(Formula(n.a_idx, macs, "The indexer scores every compressed entry per head.", counts=True))
        return out

    def head_count(self) -> int:
        return self.heads

    def kv_head_count(self) -> int:
        return 1  # one key-value head shared by every query head

    def head_width(self) -> int:
        return self.head_dim


# DeepseekV4Config's layer types (its sliding_attention read as compressed_window) and their default ratios.
TYPES = {"compressed_window": 0, "compressed_sparse_attention": 4, "heavily_compressed_attention": 128}


def read(k: Keys, spec: Spec, layer_type: str, window: Span) -> CompressedAttention:
    """One of V4's three layer types: the window alone, sparse compressed (indexed), or heavily compressed."""
    rates = k.get("compress_rates", {}) or {}
    ratio = int(rates.get(layer_type, TYPES[layer_type])) if TYPES[layer_type] else 0
    indexed = layer_type == "compressed_sparse_attention"
    return CompressedAttention(
        heads=k.int("num_attention_heads"),
        q_lora_rank=k.int("q_lora_rank"),
        head_dim=k.int("head_dim"),
        out_groups=k.int("o_groups"),
        out_lora_rank=k.int("o_lora_rank"),
        window=window,
        ratio=ratio,
        indexer=Indexer(k.int("index_n_heads"), k.int("index_head_dim"), k.int("index_topk")) if indexed else None,
    )
