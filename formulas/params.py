"""Parameter counts from a config's shapes: a breakdown, the total, the active count.

These formulas are built per model, because the terms a model has depend on its
config (biases, tied head, MoE layers, MLA). Each is a count: a pure-number
expression of the shapes, read as parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.config import ModelConfig
from derive.formula import Formula
from derive.symbols import Sym
from formulas.notation import (
    E,
    E_s,
    L,
    L_d,
    L_e,
    N,
    N_act,
    N_attn,
    N_emb,
    N_head,
    N_lm,
    N_mlp,
    N_mm,
    N_norm,
    N_routed,
    N_routed_act,
    N_router,
    N_shared,
    V,
    a,
    d,
    d_e,
    d_ff,
    d_h,
    d_nope,
    d_rope,
    d_v,
    k_e,
    n_h,
    n_kv,
    n_pos,
    r_kv,
    r_q,
    v_kv,
)

_HF_MODELING = "transformers' modeling code for the family (one term per weight tensor)"


@dataclass(frozen=True)
class ModelFormulas:
    """A model's count formulas and the shape values they are evaluated at."""

    parts: tuple[Formula, ...]  # the breakdown of the total
    totals: tuple[Formula, ...]  # total, active, embedding, matmul
    per_token: tuple[Formula, ...]  # KV values and attention FLOPs per cached token
    shapes: dict[Sym, sympy.Integer]

    def all(self) -> tuple[Formula, ...]:
        return self.parts + self.totals + self.per_token


def _count(defines: Sym, expr: sympy.Expr, source: str = _HF_MODELING) -> Formula:
    return Formula(defines, sympy.sympify(expr), source, counts=True)


def _shapes(cfg: ModelConfig) -> dict[Sym, int]:
    values = {
        V: cfg.vocab,
        d: cfg.hidden,
        L: cfg.layers,
        n_h: cfg.heads,
        n_kv: cfg.kv_heads,
        d_h: cfg.head_dim,
        d_ff: cfg.intermediate,
    }
    if cfg.positions:
        values[n_pos] = cfg.positions
    if cfg.is_moe:
        values.update(
            {
                E: cfg.experts,
                k_e: cfg.experts_per_token,
                d_e: cfg.expert_intermediate,
                L_e: cfg.moe_layers,
                L_d: cfg.dense_layers,
            }
        )
        if cfg.shared_experts:
            values[E_s] = cfg.shared_experts
    if cfg.is_mla:
        values.update({r_kv: cfg.kv_lora_rank, d_nope: cfg.qk_nope_dim, d_rope: cfg.qk_rope_dim, d_v: cfg.v_head_dim})
        if cfg.q_lora_rank:
            values[r_q] = cfg.q_lora_rank
    return values


def _attention(cfg: ModelConfig) -> sympy.Expr:
    Ls, ds, nh = L.symbol, d.symbol, n_h.symbol
    if cfg.is_mla:
        q_width = nh * (d_nope.symbol + d_rope.symbol)
        query = ds * r_q.symbol + r_q.symbol * q_width if cfg.q_lora_rank else ds * q_width
        latent = ds * (r_kv.symbol + d_rope.symbol)  # kv_a_proj_with_mqa
        expand = r_kv.symbol * nh * (d_nope.symbol + d_v.symbol)  # kv_b_proj
        out = nh * d_v.symbol * ds
        return Ls * (query + latent + expand + out)
    q, kv = nh * d_h.symbol, n_kv.symbol * d_h.symbol
    per_layer = ds * q + 2 * ds * kv + q * ds
    if cfg.qkv_bias:
        per_layer += q + 2 * kv
    if cfg.out_bias:
        per_layer += ds
    return Ls * per_layer


def _dense_mlp(cfg: ModelConfig) -> sympy.Expr:
    layers = L_d.symbol if cfg.is_moe else L.symbol
    ds, f = d.symbol, d_ff.symbol
    per_layer = 3 * ds * f if cfg.gated_mlp else 2 * ds * f
    if cfg.mlp_bias:
        per_layer += (2 * f + ds) if cfg.gated_mlp else (f + ds)
    return layers * per_layer


def _norms(cfg: ModelConfig) -> sympy.Expr:
    width = 2 * d.symbol if cfg.norm_has_bias else d.symbol  # LayerNorm has a bias beside its weight
    per_layer = cfg.norms_per_layer * width
    if cfg.is_mla:
        per_layer += r_kv.symbol + (r_q.symbol if cfg.q_lora_rank else 0)  # latent norms
    return L.symbol * per_layer + width


def model_formulas(cfg: ModelConfig) -> ModelFormulas:
    """The parameter breakdown, totals and per-token formulas for one config."""
    ds, Vs = d.symbol, V.symbol
    embedding = Vs * ds + (n_pos.symbol * ds if cfg.positions else 0)
    parts = [_count(N_emb, embedding), _count(N_attn, _attention(cfg))]
    if not cfg.is_moe or cfg.dense_layers:
        parts.append(_count(N_mlp, _dense_mlp(cfg)))
    expert = 3 * ds * d_e.symbol
    if cfg.is_moe:
        router = L_e.symbol * (E.symbol * ds + (E.symbol if cfg.router_bias else 0))
        parts.append(_count(N_router, router))
        parts.append(_count(N_routed, L_e.symbol * E.symbol * expert))
        if cfg.shared_experts:
            parts.append(_count(N_shared, L_e.symbol * E_s.symbol * expert))
    parts.append(_count(N_norm, _norms(cfg)))
    if not cfg.tied:
        parts.append(_count(N_head, Vs * ds))
    total = Formula(N, sum(p.defines.symbol for p in parts), "Sum of the breakdown.")

    # What one token uses: all but the routed experts it is not sent to.
    active_terms = [p.defines.symbol for p in parts if p.defines is not N_routed]
    matmul_terms = [p.defines.symbol for p in parts if p.defines not in (N_routed, N_emb, N_norm, N_head)]
    extra: list[Formula] = []
    if cfg.is_moe:
        extra.append(_count(N_routed_act, L_e.symbol * k_e.symbol * expert))
        active_terms.append(N_routed_act.symbol)
        matmul_terms.append(N_routed_act.symbol)
    # The LM head multiplies every token's hidden state by V x d, tied or not.
    extra.append(_count(N_lm, Vs * ds))
    matmul_terms.append(N_lm.symbol)
    totals = (
        total,
        *extra,
        Formula(
            N_act, sum(active_terms), "Parameters on one token's path: the breakdown less the routed experts it skips."
        ),
        Formula(
            N_mm,
            sum(matmul_terms),
            "Active parameters less the embedding lookup and the norms, with the head's matmul.",
        ),
    )

    if cfg.is_mla:
        cached = L.symbol * (r_kv.symbol + d_rope.symbol)
        # With W_UK absorbed into the query and W_UV into the output (DeepSeek-V2, sec. 2.1.2),
        # each head scores against the (r_kv + d_rope)-wide cache and sums r_kv-wide values.
        score, value = r_kv.symbol + d_rope.symbol, r_kv.symbol
        mla_source = "DeepSeek-V2 (arXiv:2405.04434), sec. 2.1: the latent c_KV and the rotary key are cached."
    else:
        cached = 2 * L.symbol * n_kv.symbol * d_h.symbol
        score, value = d_h.symbol, d_h.symbol
        mla_source = "A key and a value vector per KV head per layer (Pope et al. 2022, sec. 2)."
    per_token = (
        _count(v_kv, cached, mla_source),
        # Per cached token, each query head does a score dot product and a weighted value sum.
        _count(
            a,
            2 * L.symbol * n_h.symbol * (score + value),
            "QK^T and AV: one multiply-accumulate (two FLOPs) per head, layer and score or value element.",
        ),
    )
    shapes = {sym: sympy.Integer(v) for sym, v in _shapes(cfg).items()}
    return ModelFormulas(tuple(parts), totals, per_token, shapes)
