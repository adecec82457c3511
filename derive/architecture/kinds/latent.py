"""Multi-head latent attention (DeepSeek-V2/V3, Kimi K2), optionally sparse (DeepSeek V3.2, GLM-5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Indexer, Kind, Resolve, top_k_mean
from derive.architecture.spec import Spec
from derive.core.library import Formula
from derive.core.symbols import Sym
from formulas import notation as n


@dataclass(frozen=True)
class LatentAttention(Kind):
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2), optionally sparse (DeepSeek V3.2, GLM-5).

    The cache holds the kv_lora_rank-wide latent and the rotary key per token (DeepSeek-V2, arXiv:2405.04434,
    sec. 2.1); with the up-projections absorbed, each head scores against that (r_kv + d_rope)-wide entry and sums
    r_kv-wide values. A sparse layer attends to the indexer's top-k tokens and caches the indexer's keys too.
    """

    heads: int
    q_lora_rank: int
    kv_lora_rank: int
    nope_dim: int
    rope_dim: int
    v_dim: int
    qkv_bias: bool = False
    indexer: Indexer | None = None
    gate: str = ""  # "head": one sigmoid gate per head from the hidden state (Ling 2.5's g_proj)
    indexer_shared: bool = False  # attends to the previous full layer's top-k: no indexer of its own (GLM-5.x)

    softmax = True
    names = {
        "mla": "latent-attention",
        "dsa": "sparse latent-attention",
        "dsas": "shared-index sparse latent-attention",
    }
    whole_cache = True
    latent = True

    @property
    def tag(self) -> str:  # type: ignore[override]
        return ("dsas" if self.indexer_shared else "dsa") if self.indexer else "mla"

    @property
    def label(self) -> str:  # type: ignore[override]
        if self.indexer_shared:
            return "sparse latent attention (MLA, the previous indexer's top-k)"
        return "sparse latent attention (MLA + indexer)" if self.indexer else "latent attention (MLA)"

    @property
    def _own_indexer(self) -> bool:
        return self.indexer is not None and not self.indexer_shared

    def shapes(self) -> dict[Sym, int]:
        out = {n.n_h: self.heads, n.r_kv: self.kv_lora_rank, n.d_nope: self.nope_dim, n.d_rope: self.rope_dim}
        out[n.d_v] = self.v_dim
        if self.q_lora_rank:
            out[n.r_q] = self.q_lora_rank
        if self.indexer:
            out.update(self.indexer.shapes())
        return out

    def weights(self, s: Resolve) -> sympy.Expr:
        d, nh, rkv, nope, rope, dv = n.d.symbol, s(n.n_h), s(n.r_kv), s(n.d_nope), s(n.d_rope), s(n.d_v)
        q_width = nh * (nope + rope)
        query = d * s(n.r_q) + s(n.r_q) * q_width if self.q_lora_rank else d * q_width
        total = query + d * (rkv + rope) + rkv * nh * (nope + dv) + nh * dv * d  # q, kv_a (+rope), kv_b, o
        if self.gate == "head":
            total += nh * d
        if self.qkv_bias:  # q_a_proj, kv_a_proj_with_mqa and o_proj take attention_bias (modeling_deepseek_v3)
            total += (s(n.r_q) if self.q_lora_rank else 0) + rkv + rope + d
        if self._own_indexer:
            ni, di = s(n.n_idx), s(n.d_idx)
            q_in = s(n.r_q) if self.q_lora_rank else d
            total += q_in * ni * di + d * di + d * ni + di  # wq_b, wk, weights_proj, the k_norm's bias
        return total

    def norms(self, s: Resolve) -> sympy.Expr:
        latent = s(n.r_kv) + (s(n.r_q) if self.q_lora_rank else 0)
        return latent + (s(n.d_idx) if self._own_indexer else 0)  # the indexer's k_norm weight

    def cached_values(self, s: Resolve) -> sympy.Expr:
        return s(n.r_kv) + s(n.d_rope) + (s(n.d_idx) if self._own_indexer else 0)

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return s(n.n_h) * (2 * s(n.r_kv) + s(n.d_rope))  # score over r_kv + d_rope, value sum over r_kv

    def prompt_attention_macs(self, s: Resolve) -> sympy.Expr:
        # A prompt pass is compute-bound: serving engines decompress the latent (kv_b_proj, already one GEMM a token
        # in 2N) and attend as plain heads of d_nope + d_rope scores and d_v values, 3.4x fewer MACs than the
        # absorbed form for DeepSeek-V3 (TensorRT-LLM's and vLLM's MLA context paths; DeepSeek-V2, sec. 2.1.3). The
        # sparse layers attend in the absorbed (MQA) form throughout (DeepSeek-V3.2's FlashMLA sparse kernels).
        if self.indexer is not None:
            return self.attention_macs(s)
        return s(n.n_h) * (s(n.d_nope) + s(n.d_rope) + s(n.d_v))

    # A sparse layer attends to its top-k tokens, and its indexer scores every cached one.
    def attended(self, s: Resolve, context: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        if self.indexer is None:
            return super().attended(s, context, flops)
        scoring = context * n.a_idx.symbol if self._own_indexer else 0
        return sympy.Min(context, n.S_top.symbol) * flops + scoring

    def prompt_attended(self, s: Resolve, prompt: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        if self.indexer is None:
            return super().prompt_attended(s, prompt, flops)
        scoring = prompt / 2 * n.a_idx.symbol if self._own_indexer else 0
        return top_k_mean(prompt, n.S_top.symbol) * flops + scoring

    def context_formulas(self, s: Resolve, layers: sympy.Symbol) -> list[Formula]:
        if self.indexer is None or self.indexer_shared:
            return []
        macs = 2 * layers * self.indexer.macs(s)
        return [Formula(n.a_idx, macs, "The indexer scores every cached token per head.", counts=True)]

    def head_count(self) -> int:
        return self.heads

    def kv_head_count(self) -> int:
        return self.heads  # the latent expands to every head

    def head_width(self) -> int:
        return self.v_dim

    def score_width(self) -> int:
        return self.nope_dim + self.rope_dim

    def plain(self) -> bool:
        return self.indexer is None

    def notes(self) -> tuple[str, ...]:
        return (_INDEXER_NOTE,) if self._own_indexer else ()


_INDEXER_NOTE = (
    "the indexer's keys are cached here in the KV dtype; DeepSeek's reference kernels keep them in fp8 "
    "with one fp32 scale per 128 values"
)


def read_indexer(k: Keys) -> Indexer:
    return Indexer(k.int("index_n_heads"), k.int("index_head_dim"), k.int("index_topk"))


def latent_shapes(k: Keys, spec: Spec, indexed: bool = True) -> dict[str, Any]:
    """DeepSeek's MLA keys (kv_lora_rank and its head widths), the biases and gates the entry gives, and an
    indexer wherever the config gives index_topk (unless the layer type is not indexed)."""
    q_lora = k.get("q_lora_rank")
    return dict(
        heads=k.int("num_attention_heads"),
        q_lora_rank=0 if q_lora is None else k.int("q_lora_rank"),
        kv_lora_rank=k.int("kv_lora_rank"),
        nope_dim=k.int("qk_nope_head_dim"),
        rope_dim=k.int("qk_rope_head_dim"),
        v_dim=k.int("v_head_dim"),
        qkv_bias=spec.flag(k, "qkv_bias"),
        indexer=read_indexer(k) if k.has("index_topk") and indexed else None,
        gate=spec.text(k, "gate"),
        indexer_shared=spec.flag(k, "indexer_shared"),
    )


def read(k: Keys, spec: Spec) -> LatentAttention:
    """MLA, sparse where the config gives an indexer."""
    return LatentAttention(**latent_shapes(k, spec))
