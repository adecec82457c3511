"""An Architecture's formulas: its parameter breakdown, totals, and per-layer-kind cache and FLOP costs.

Every formula is a count over shape symbols (checked like any library formula),
summed over the model's layer kinds: `N_attn = L_full·(...) + L_lin·(...)`,
`K_seq = S·k_full + Min(S, S_win)·k_swa + b_st·s_lin + ...`. A model whose layers
all cache every token with one attention kind keeps the library's own forms
(`K_seq = S·k`), so its derivation reads as the textbook one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy

from derive.architecture.kinds.base import CACHE_SOURCE, KIND_NAMES, Kind
from derive.architecture.model import Architecture
from derive.core.errors import CatalogError
from derive.core.library import Formula
from derive.core.symbols import Sym, tagged
from formulas import notation as n
from formulas.intensity import I_st

if TYPE_CHECKING:
    from derive.architecture.kinds.moe import MoE

_HF_MODELING = "transformers' modeling code for the family (one term per weight tensor)"


def kind_name(tag: str) -> str:
    """What a tag names in prose (each kind declares its own); a compressed entry's `csac` is its kind's `csa`."""
    return KIND_NAMES.get(tag.rstrip("c") if tag not in KIND_NAMES else tag, tag)


@dataclass(frozen=True)
class KindCost:
    """One mixer kind of a model, as `derive kv` lists it: its layers, and the symbols of its cache or state."""

    label: str
    tag: str
    layers: Sym
    kv_bytes_per_token: Sym | None  # k_tag, for kinds that cache tokens
    span: Sym | None  # the window or chunk that caps those tokens
    state_values: Sym | None  # s_tag, for kinds with recurrent state
    conv_values: Sym | None


@dataclass(frozen=True)
class ModelFormulas:
    """A model's count formulas, its cost formulas (overriding the library's where its layers differ), its shapes."""

    parts: tuple[Formula, ...]  # the breakdown of the total
    totals: tuple[Formula, ...]  # total, active, embedding, matmul
    per_token: tuple[Formula, ...]  # values cached and attention FLOPs per cached token, per kind
    costs: tuple[Formula, ...]  # K_seq, F_att, ... as sums over layer kinds (empty for a plain model)
    shapes: dict[Sym, sympy.Integer]
    kinds: tuple[KindCost, ...]

    def all(self) -> tuple[Formula, ...]:
        return self.parts + self.totals + self.per_token + self.costs

    def counts(self) -> dict[str, int]:
        """Every part and total as an integer, by name (parameters, not bytes: no dtype needed)."""
        values: dict[sympy.Symbol, sympy.Integer] = {s.symbol: v for s, v in self.shapes.items()}
        out: dict[str, int] = {}
        for f in self.parts + self.totals:
            value = f.expr.xreplace(values)
            values[f.defines.symbol] = value
            out[f.name] = int(value)
        return out


def _count(defines: Sym, expr: object, source: str = _HF_MODELING) -> Formula:
    return Formula(defines, sympy.sympify(expr), source, counts=True)


class _Symbols:
    """Which symbol each part uses for each shape and for its layer count."""

    def __init__(self, arch: Architecture) -> None:
        self.arch = arch
        self.values: dict[Sym, int] = {n.V: arch.vocab, n.d: arch.hidden, n.L: arch.layers}
        parts = [p for g in arch.groups for p in g.parts()]
        distinct = list(dict.fromkeys(parts))
        seen: dict[Sym, set[int]] = {}
        for part in distinct:
            for base, value in part.shapes().items():
                seen.setdefault(base, set()).add(value)
        self.conflicts = {base for base, values in seen.items() if len(values) > 1}
        for part in distinct:
            for base, value in part.shapes().items():
                self.values[self.sym(part, base)] = value
        self.layer_symbols: dict[Kind, Sym] = {}
        self.run_symbols: dict[Kind, Sym] = {}
        mixers = arch.mixers
        whole = len(mixers) == 1 and all(g.mixer is not None for g in arch.groups)
        tags: dict[str, Kind] = {}
        for mixer in mixers:
            if mixer.tag in tags and not whole:
                raise CatalogError(
                    f"config for {arch.name}: two different {kind_name(mixer.tag)} layers",
                    "derive describes one shape per layer kind; this model cannot be read",
                )
            tags[mixer.tag] = mixer
            self._layers(mixer, n.L if whole else tagged(n.L, mixer.tag, f"{kind_name(mixer.tag)} layers"))
        mlps = list(dict.fromkeys(g.mlp for g in arch.groups if g.mlp is not None))
        moes = list(dict.fromkeys(g.moe for g in arch.groups if g.moe is not None))
        if len(mlps) > 1 or len(moes) > 1:
            raise CatalogError(
                f"config for {arch.name}: MLPs of more than one shape",
                "derive describes one dense MLP and one MoE shape per model; this model cannot be read",
            )
        for mlp in mlps:
            dense_everywhere = not moes and all(g.mlp is not None for g in arch.groups)
            self._layers(mlp, n.L if dense_everywhere else n.L_d)
        for moe in moes:
            self._layers(moe, n.L_e)

    def _layers(self, part: Kind, symbol: Sym) -> None:
        self.layer_symbols[part] = symbol
        self.values[symbol] = sum(g.count for g in self.arch.groups if part in g.parts())
        runs = sum(g.count * g.passes for g in self.arch.groups if part in g.parts())
        if runs != self.values[symbol]:  # looped layers: weights held once, run (and cached) once a pass
            ran = tagged(symbol, "run", f"runs of the {symbol.meaning}, counting each pass of a looped layer")
            self.run_symbols[part] = ran
            self.values[ran] = runs

    def sym(self, part: Kind, base: Sym) -> Sym:
        return tagged(base, part.tag) if base in self.conflicts else base

    def of(self, part: Kind) -> Callable[[Sym], sympy.Symbol]:
        return lambda base: self.sym(part, base).symbol

    def layers(self, part: Kind) -> sympy.Symbol:
        return self.layer_symbols[part].symbol

    def runs(self, part: Kind) -> sympy.Symbol:
        """How many times a token runs this part's layers: its layers, or more where layers loop."""
        return self.run_symbols.get(part, self.layer_symbols[part]).symbol


def model_formulas(arch: Architecture) -> ModelFormulas:
    """The parameter breakdown, totals and per-kind cost formulas of one architecture."""
    syms = _Symbols(arch)
    syms.values[n.h_kv] = arch.kv_splits
    d, V = n.d.symbol, n.V.symbol
    embedding = V * d + (n.n_pos.symbol * d if arch.positions else 0) + (n.n_xr.symbol * d if arch.extra_rows else 0)
    if arch.positions:
        syms.values[n.n_pos] = arch.positions
    if arch.extra_rows:
        syms.values[n.n_xr] = arch.extra_rows
    if arch.per_layer_input:
        syms.values.update({n.d_pl: arch.per_layer_input, n.V_pl: arch.per_layer_vocab})
        embedding += n.V_pl.symbol * n.L.symbol * n.d_pl.symbol  # embed_tokens_per_layer: L·d_pl values a row
    if arch.bridge:
        syms.values[n.d_b] = arch.bridge
    mixers = arch.mixers
    embedding += sum(m.shared_tables(syms.of(m)) for m in mixers)  # CPM-Ant's position-bias table
    parts = [_count(n.N_emb, embedding)]
    if mixers:
        per_layer = sum(syms.layers(m) * m.weights(syms.of(m)) for m in mixers)
        parts.append(_count(n.N_attn, per_layer + sum(m.shared_weights(syms.of(m)) for m in mixers)))
    mlp = arch.dense_mlp
    if mlp is not None:
        s_mlp = syms.of(mlp)  # Gemma 3n's AltUp projections are held once, outside the layers
        parts.append(_count(n.N_mlp, syms.layers(mlp) * mlp.weights(s_mlp) + mlp.shared_weights(s_mlp)))
    moe = arch.moe
    if moe is not None:
        s, L_e = syms.of(moe), syms.layers(moe)
        parts.append(_count(n.N_router, L_e * moe.router(s)))
        if moe.correction_bias:
            parts.append(_count(n.N_rb, L_e * s(n.E), _CORRECTION_SOURCE))
        parts.append(_count(n.N_routed, L_e * s(n.E) * moe.expert(s)))
        if moe.shared:
            parts.append(_count(n.N_shared, L_e * moe.shared_experts(s)))
        if moe.latent_width:
            parts.append(_count(n.N_mlat, L_e * moe.latent_projections(s)))
    if arch.hyper:
        parts.append(_count(n.N_res, _hyper_connections(arch, syms), _HYPER_SOURCE))
    if arch.per_layer_input:  # per_layer_model_projection (d -> L·d_pl), and each layer's gate and projection
        L, p = n.L.symbol, n.d_pl.symbol
        parts.append(_count(n.N_ple, d * L * p + L * 2 * d * p, _PLE_SOURCE))
    if arch.bridge:  # pre_projection 2·d_b -> d and post_projection d -> d_b
        parts.append(_count(n.N_bridge, 3 * d * n.d_b.symbol, _PLE_SOURCE))
    parts.append(_count(n.N_norm, _norms(arch, syms)))
    if not arch.tied or arch.head_bias or arch.head_scale or arch.head_dense:
        transform = (d * d + (d if arch.head_dense == 2 else 0)) if arch.head_dense else 0  # ModernBERT's head.dense
        vectors = V * (int(arch.head_bias) + int(arch.head_scale))  # a bias, a logit scale: V-wide each
        parts.append(_count(n.N_head, (0 if arch.tied else V * d) + vectors + transform))
    totals = _totals(parts, moe, syms) + _lookups(arch)
    per_token, costs, kinds = _costs(arch, syms)
    costs += (
        _activation_values(arch, syms),
        _allreduces_per_layer(arch),
        _qk_normed_layers(arch, syms),
        _shared_expert_layers(arch),
        _latent_layers(arch, syms),
    )
    if arch.expert_format:
        costs += (_weight_bytes(),)
    if moe is not None:
        costs += _expert_reads(arch, syms.layers(moe))
    elif mlp is None:  # no MLP at all (Mamba, RWKV's channel mix aside): no routed GEMM to be narrow
        from formulas import calibrated as cal

        zero = sympy.Integer(0)
        costs += tuple(Formula(t, zero, "No routed experts: no narrow expert GEMMs.") for t in (cal.t_N, cal.t_Np))
        # Nor an intermediate to split: the width that scales those (zero) terms is one column.
        costs += (_count(cal.w_x, sympy.Integer(1), "No MLP: no intermediate for tensor parallelism to split."),)
    shapes = {sym: sympy.Integer(v) for sym, v in syms.values.items()}
    return ModelFormulas(tuple(parts), totals, per_token, costs, shapes, kinds)


_CORRECTION_SOURCE = (
    "DeepSeek-V3 (arXiv:2412.19437, sec. 2.1.2): aux-loss-free balancing adds a bias per routed expert to the "
    "routing scores. The checkpoint stores it (e_score_correction_bias); transformers 5 registers it as a buffer, "
    "so its parameter count leaves it out."
)

_PLE_SOURCE = (
    "transformers' modeling_gemma4: per_layer_model_projection, and per layer a per_layer_input_gate (d -> d_pl) and "
    "a per_layer_projection (d_pl -> d); the assistant's pre_projection and post_projection."
)

_HYPER_SOURCE = (
    "DeepSeek V4's hyper-connections (transformers' modeling_deepseek_v4): per layer, an attention and an FFN "
    "mixer of n_hc streams, each fn of (2 + n_hc)·n_hc rows over the n_hc·d streams, a base and three scales; "
    "the head mixes n_hc streams with one scale."
)


def _hyper_mixer(arch: Architecture, h: sympy.Expr, d: sympy.Expr) -> sympy.Expr:
    """One hyper-connection mixer: DeepSeek V4's fn has (2 + h)·h rows and 3 scales; HY V4 drops the h·h comb rows."""
    rows, scales = ((2 + h) * h, 3) if arch.hyper_comb else (2 * h, 2)
    return rows * (h * d) + rows + scales


def _hyper_connections(arch: Architecture, syms: _Symbols) -> sympy.Expr:
    syms.values[n.n_hc] = arch.hyper
    h, d, L = n.n_hc.symbol, n.d.symbol, n.L.symbol
    return L * 2 * _hyper_mixer(arch, h, d) + h * (h * d) + h + 1


def _norms(arch: Architecture, syms: _Symbols) -> sympy.Expr:
    width = 2 * n.d.symbol if arch.layer_norm else n.d.symbol  # a LayerNorm has a bias beside its weight
    per_layer = {g.norms for g in arch.groups}
    if len(per_layer) == 1:
        outside = n.L.symbol * per_layer.pop() * width
    else:
        outside = sum(g.count * g.norms for g in arch.groups) * width
    parts = [*arch.mixers, *{p for g in arch.groups for p in (g.mlp, g.moe) if p is not None}]
    inside = sum(syms.layers(m) * m.norms(syms.of(m)) for m in parts)
    per_layer_inputs = (n.L.symbol * width + n.d_pl.symbol) if arch.per_layer_input else 0  # and their norms
    return outside + inside + arch.outer_norms * width + per_layer_inputs


def _totals(parts: list[Formula], moe: MoE | None, syms: _Symbols) -> tuple[Formula, ...]:
    total = Formula(n.N, sum(p.defines.symbol for p in parts), "Sum of the breakdown.")
    # What one token uses: all but the routed experts it is not sent to.
    active_terms = [p.defines.symbol for p in parts if p.defines is not n.N_routed]
    skipped = (n.N_routed, n.N_emb, n.N_norm, n.N_head, n.N_res)
    matmul_terms = [p.defines.symbol for p in parts if p.defines not in skipped]
    extra: list[Formula] = []
    if moe is not None:
        s = syms.of(moe)
        extra.append(_count(n.N_routed_act, syms.layers(moe) * s(n.k_e) * moe.expert(s)))
        active_terms.append(n.N_routed_act.symbol)
        matmul_terms.append(n.N_routed_act.symbol)
    # The LM head multiplies every token's hidden state by V x d, tied or not.
    extra.append(_count(n.N_lm, n.V.symbol * n.d.symbol))
    matmul_terms.append(n.N_lm.symbol)
    # A block every layer of a kind runs but the model holds once (Zamba): a token multiplies through it per layer;
    # a looped layer (Dory) multiplies through its weights once a pass.
    reused = sum(syms.layers(m) * m.shared_used(syms.of(m)) - m.shared_weights(syms.of(m)) for m in syms.arch.mixers)
    for part in syms.run_symbols:
        s = syms.of(part)
        reused += (syms.runs(part) - syms.layers(part)) * part.token_weights(s)
    after: tuple[Formula, ...] = ()
    if reused != 0:
        from formulas.flops import N_na

        extra.append(_count(n.N_reuse, reused))
        matmul_terms.append(n.N_reuse.symbol)
        after = (
            Formula(
                N_na,
                n.N_act.symbol - n.N_mm.symbol + n.N_reuse.symbol,
                "The lookups and norms; the shared block's repeats are arithmetic, not parameters.",
            ),
        )
    # Mixers whose own experts are routed (JetMoE's mixture of attention heads): what a token skips there.
    skipped_mixers = sum(syms.layers(m) * m.skipped(syms.of(m)) for m in syms.arch.mixers)
    if skipped_mixers != 0:
        extra.append(_count(n.N_skip, skipped_mixers))
        active_terms.append(-n.N_skip.symbol)
        matmul_terms.append(-n.N_skip.symbol)
    return (
        total,
        *extra,
        Formula(
            n.N_act,
            sum(active_terms),
            "Parameters on one token's path: the breakdown less the routed experts it skips.",
        ),
        Formula(
            n.N_mm,
            sum(matmul_terms),
            "Active parameters less the embedding lookup, the norms and the residual mixing, with the head's matmul.",
        ),
        *after,
    )


_PROMPT_FLOP_SOURCE = (
    "The same in a prompt pass, attending as the serving engines' context kernels do (MLA: the latent decompressed "
    "into heads)."
)
_PROMPT_MEAN = "Causal masking: the prompt token at position p attends to p tokens, S_p/2 on average."
_FLOP_SOURCE = (
    "QK^T and AV: one multiply-accumulate (two FLOPs) per head, layer and score or value element, over the "
    "tokens the layer attends to."
)
_STATE_SOURCE = (
    "Recurrent state per sequence: a d_k x d_v matrix per value head (gated delta-net) or d_m x d_st per head "
    "(Mamba-2), and the conv window of c_cv - 1 inputs (vLLM's MambaSpec)."
)


def _costs(arch: Architecture, syms: _Symbols) -> tuple[tuple[Formula, ...], tuple[Formula, ...], tuple[KindCost, ...]]:
    mixers = arch.mixers
    if arch.is_plain:
        (mixer,) = mixers
        s, L = syms.of(mixer), syms.runs(mixer)
        plain = (
            _count(n.v_kv, L * mixer.cached_values(s), CACHE_SOURCE),
            _count(n.a, 2 * L * mixer.attention_macs(s), _FLOP_SOURCE),
        )
        kind = KindCost(mixer.label, mixer.tag, syms.layer_symbols[mixer], n.k, None, None, None)
        if mixer.prompt_attention_macs(s) == mixer.attention_macs(s):
            return plain, (), (kind,)
        prompt = _count(n.a_pre, 2 * L * mixer.prompt_attention_macs(s), _PROMPT_FLOP_SOURCE)
        return (*plain, prompt), (Formula(n.F_pre, n.S_p.symbol * n.a_pre.symbol / 2, _PROMPT_MEAN),), (kind,)

    S, S_p, b_kv, b_st = n.S.symbol, n.S_p.symbol, n.b_kv.symbol, n.b_st.symbol
    per_token: list[Formula] = []
    values, flops_per_cached, kinds = [], [], []
    zero = sympy.Integer(0)
    cache_at: dict[str, sympy.Expr] = {"S": zero, "S_p": zero}
    # One accelerator's share of the cache at S and S_p, each kind split over its own heads.
    per_rank: dict[str, sympy.Expr] = {"S": zero, "S_p": zero}
    attended: dict[str, sympy.Expr] = {"S": zero, "S_p": zero}  # decode at S; the mean over a prompt of S_p
    prompt_mean_at_s: sympy.Expr = sympy.Integer(0)
    marginal: sympy.Expr = sympy.Integer(0)  # past every window: what each token adds, and what stays fixed
    fixed: sympy.Expr = sympy.Integer(0)
    for mixer in mixers:
        s, L = syms.of(mixer), syms.runs(mixer)
        kv_sym = state_sym = conv_sym = span_sym = None
        cached, macs = mixer.cached_values(s), mixer.attention_macs(s)
        if cached != 0 or macs != 0:  # a KV-shared layer attends over another layer's cache and keeps none
            name = kind_name(mixer.tag)
            a = tagged(n.a, mixer.tag, f"attention FLOPs per query token, per attended token, {name} layers")
            if cached != 0:
                v = tagged(n.v_kv, mixer.tag, f"values the {name} layers cache per token of context")
                kv_sym = tagged(n.k, mixer.tag, f"KV-cache bytes per token of context in the {name} layers")
                per_token.append(_count(v, L * cached, CACHE_SOURCE))
            per_token.append(_count(a, 2 * L * macs, _FLOP_SOURCE))
            flops_per_cached.append(a.symbol)
            a_prompt = a
            if mixer.prompt_attention_macs(s) != macs:
                a_prompt = tagged(
                    n.a_pre, mixer.tag, f"attention FLOPs per prompt token, per earlier token, {name} layers"
                )
                per_token.append(_count(a_prompt, 2 * L * mixer.prompt_attention_macs(s), _PROMPT_FLOP_SOURCE))
            if kv_sym is not None:
                per_token.append(Formula(kv_sym, v.symbol * b_kv, "Cached values per token times bytes per value."))
                values.append(v.symbol)
            per_token.extend(mixer.context_formulas(s, L))
            span_sym = mixer.span().symbol
            if kv_sym is not None:
                for key, context in (("S", S), ("S_p", S_p)):
                    cached = mixer.cache(s, context, kv_sym.symbol)
                    cache_at[key] += cached
                    per_rank[key] += cached / _split(mixer)
                grows, held = mixer.cache_growth(s, kv_sym.symbol)
                marginal, fixed = marginal + grows, fixed + held
            attended["S"] += mixer.attended(s, S, a.symbol)
            attended["S_p"] += mixer.prompt_attended(s, S_p, a_prompt.symbol)
            prompt_mean_at_s += mixer.prompt_attended(s, S, a_prompt.symbol)
        if mixer.state_values(s) != 0 or mixer.state_conv_values(s) != 0:
            state_sym = tagged(
                n.s_st, mixer.tag, f"recurrent-state values one sequence keeps, {kind_name(mixer.tag)} layers"
            )
            conv_sym = tagged(
                n.q_cv, mixer.tag, f"conv-window values one sequence keeps, {kind_name(mixer.tag)} layers"
            )
            f = tagged(n.f_st, mixer.tag, f"FLOPs per token to update and read the {kind_name(mixer.tag)} state")
            per_token.append(_count(state_sym, L * mixer.state_values(s), _STATE_SOURCE))
            per_token.append(_count(conv_sym, L * mixer.state_conv_values(s), _STATE_SOURCE))
            per_token.append(_count(f, 2 * L * mixer.state_macs(s), "Two FLOPs per multiply-accumulate."))
            state = b_st * state_sym.symbol + b_kv * conv_sym.symbol
            # Each sequence reads its own state once a step, whatever the batch: like attention's, its intensity is
            # fixed by the architecture (formulas/intensity.py's I_st, one per recurrent kind).
            per_token.append(
                Formula(
                    tagged(I_st, mixer.tag, f"decode intensity of the {kind_name(mixer.tag)} layers' state"),
                    f.symbol * n.tau.symbol / state,
                    "FLOPs a token does on its state over the bytes of state it reads (the recurrent layer's cache).",
                )
            )
            cache_at["S"] += state
            cache_at["S_p"] += state
            for key in per_rank:
                per_rank[key] += state / _split(mixer)
            fixed += state
            for key in attended:
                attended[key] += f.symbol
            prompt_mean_at_s += f.symbol
        kinds.append(KindCost(mixer.label, mixer.tag, syms.layer_symbols[mixer], kv_sym, span_sym, state_sym, conv_sym))

    # Totals before any window caps: what the library's k and a mean for this model.
    for total, parts in ((n.v_kv, values), (n.a, flops_per_cached)):
        make = Formula if parts else _count  # no attention layer at all: a count of zero
        per_token.append(make(total, sympy.Add(*parts), "Every layer kind that caches tokens, before any window."))
    from formulas.flops import F_att, F_att_avg

    # Where the kinds split their caches different ways (a Mamba or linear-attention state over its many heads beside
    # attention's few KV heads), s_kv is the whole cache over one accelerator's share, not the fewest heads' min(n, h).
    splits = {split for mixer in mixers if (split := mixer.cache_splits()) and _keeps_cache(mixer, syms)}
    shards = (
        (
            Formula(n.s_kv, n.kv_seq.symbol / per_rank["S"], _SHARDS),
            Formula(n.s_kvp, n.K_pr.symbol / per_rank["S_p"], "The same after a prompt of S_p tokens."),
        )
        if len(splits) > 1 and not any(m.whole_cache for m in mixers if _keeps_cache(m, syms))
        else ()
    )
    costs = (
        *shards,
        Formula(n.kv_seq, cache_at["S"], "Each layer kind caches its tokens (at most its window) or keeps its state."),
        Formula(n.K_pr, cache_at["S_p"], "The same cache after a prompt of S_p tokens."),
        Formula(n.k_m, marginal, "Past every window, each token adds a cache entry in the layers that keep all."),
        Formula(n.K_fix, fixed, "Past every window, the windows are full and the recurrent state is its fixed size."),
        Formula(F_att, attended["S"], "Each layer kind attends over its span, or updates its state, per token."),
        Formula(F_att_avg, prompt_mean_at_s, "The same, averaged over a causal prompt of S tokens."),
        Formula(n.F_pre, attended["S_p"], "The same, averaged over a causal prompt of S_p tokens."),
    )
    return tuple(per_token), costs, tuple(kinds)


_SHARDS = (
    "Tensor parallelism splits each layer kind's cache over its own heads, at most n ways (vLLM shards attention's "
    "KV heads and a Mamba or linear-attention layer's heads, its state with them): the cache over one accelerator's "
    "share of it."
)


def _split(mixer: Kind) -> sympy.Expr:
    """How many ways tensor parallelism splits `mixer`'s cache at tp n."""
    return sympy.Min(n.n.symbol, mixer.cache_splits())


def _keeps_cache(mixer: Kind, syms: _Symbols) -> bool:
    """Whether `mixer`'s layers keep a cache or a state a sequence holds."""
    s = syms.of(mixer)
    return mixer.cached_values(s) != 0 or mixer.state_values(s) != 0 or mixer.state_conv_values(s) != 0


def _lookups(arch: Architecture) -> tuple[Formula, ...]:
    """The tables a step only gathers rows of: the input embedding unless the head multiplies through it, positions."""
    d = n.d.symbol
    rows = n.V.symbol + (n.n_xr.symbol if arch.extra_rows else 0)
    per_layer = n.L.symbol * n.d_pl.symbol  # Gemma 4's per-layer input table: L·d_pl values a row
    tables = [(rows, d, not arch.tied), (n.n_pos.symbol, d, bool(arch.positions))]
    tables.append((n.V_pl.symbol, per_layer, bool(arch.per_layer_input)))
    looked_up = [(table, width) for table, width, gathered in tables if gathered]
    source = "An embedding is a gather of one row per token (vLLM's VocabParallelEmbedding); a tied head is a matmul."
    return (
        _count(n.N_look, sum(table * width for table, width in looked_up), source),
        _count(n.n_g, sum(width for _, width in looked_up), source),
    )


def _activation_values(arch: Architecture, syms: _Symbols) -> Formula:
    """What a token's dense MLP activations (and shared experts') read and write, over the layers that have them."""
    from formulas import calibrated as cal

    parts = [*arch.mixers, *(part for part in (arch.dense_mlp, arch.moe) if part is not None)]
    total = sum((syms.layers(part) * part.activation_values(syms.of(part)) for part in parts), sympy.Integer(0))
    return Formula(
        cal.v_act,
        total,
        "transformers' MLPs (LlamaMLP: down_proj(act_fn(gate_proj(x)) * up_proj(x))) apply the activation on the "
        "intermediate; a routed expert's belongs to its MoE kernel.",
        counts=True,
    )


def _allreduces_per_layer(arch: Architecture) -> Formula:
    """Tensor-parallel all-reduces a layer, over the stack: one after each mixer and one after each MLP or MoE block,
    so two in a layer with both and one in a layer that is one or the other (Nemotron-H's, Mamba's)."""
    from formulas import calibrated as cal

    ends = sum(g.count * (int(g.mixer is not None) + int(g.mlp is not None or g.moe is not None)) for g in arch.groups)
    return Formula(
        cal.m_ar,
        sympy.Rational(ends, arch.layers),
        "Megatron-LM (Shoeybi et al. 2019, sec. 3): a mixer's output projection and an MLP's second GEMM are "
        "row-parallel, each ending in one all-reduce of the d-wide activation; a layer without one has none of its.",
    )


def _mixer_count(arch: Architecture, syms: _Symbols, defines: Sym, each: Callable[[Kind], int], source: str) -> Formula:
    """`each` mixer's count of some attention, over the layers that hold it."""
    return Formula(defines, sum((syms.layers(m) * each(m) for m in arch.mixers), sympy.Integer(0)), source)


def _qk_normed_layers(arch: Architecture, syms: _Symbols) -> Formula:
    """The attentions, over the layers, that normalize their queries or keys (own kernels in a prompt pass)."""
    from formulas import calibrated as cal

    why = "transformers' Qwen3Attention: q_norm and k_norm, each head, every layer."
    return _mixer_count(arch, syms, cal.L_qn, lambda m: m.qk_normed(), why)


def _latent_layers(arch: Architecture, syms: _Symbols) -> Formula:
    """The attentions, over the layers, that cache a latent (MLA): more kernels a decode step than a GQA one's."""
    from formulas import calibrated as cal

    why = "transformers' DeepseekV3Attention: q_a/q_b, kv_a_proj_with_mqa, kv_b, o_proj."
    return _mixer_count(arch, syms, cal.L_la, lambda m: m.latent_attentions(), why)


def _shared_expert_layers(arch: Architecture) -> Formula:
    """The dense MLPs, over the MoE layers, that run beside the routed experts: shared experts, and a layer's own
    dense MLP where it has one beside its MoE block (Gemma 4, LongCat-Flash)."""
    from formulas import calibrated as cal

    beside = sum(
        g.count * (g.moe.dense_mlps() + (g.mlp.dense_mlps() if g.mlp is not None else 0))
        for g in arch.groups
        if g.moe is not None
    )
    return Formula(
        cal.L_sx,
        sympy.Integer(beside),
        "transformers' DeepseekV3MoE: shared_experts, a dense MLP, beside the routed; Gemma4TextDecoderLayer: its mlp "
        "beside its experts.",
    )


def _expert_reads(arch: Architecture, L_e: sympy.Symbol) -> tuple[Formula, ...]:
    """What a MoE model's decode step and prompt pass read: the fixed part, the gathered rows, the touched experts."""
    from formulas import calibrated as cal
    from formulas import moe
    from formulas.layout import W_E
    from formulas.reads import N_pre, N_read, W_pre, W_read

    expert_bytes = n.b_x.symbol if arch.expert_format else n.b_w.symbol
    out: list[Formula] = [
        Formula(bytes_, L_e * touched.symbol * moe.N_x.symbol * expert_bytes, "Each touched expert is read once.")
        for bytes_, touched in ((cal.W_x, moe.E_t), (cal.W_xp, moe.E_pf))
    ]
    out.append(Formula(cal.F_x, n.c_mac.symbol * n.N_routed_act.symbol, "Each token runs its k routed experts."))
    out.append(Formula(W_E, n.N_routed.symbol * expert_bytes, "Every routed expert is stored once."))
    out.append(Formula(cal.w_x, n.d_e.symbol / n.n.symbol, "Tensor parallelism splits each expert's intermediate."))
    out.append(Formula(cal.L_x, L_e, "Every MoE layer runs its routed experts' kernel."))
    out.append(Formula(cal.k_x, n.k_e.symbol, "Each token's activation goes to its top-k experts."))
    out.append(Formula(cal.E_x, n.E.symbol, "The kernel iterates over the layer's routed experts."))
    for routed, fitted in cal.EXPERT_FORMATS.get(arch.expert_format, {}).items():
        why = f"The checkpoint ships its routed experts in {arch.expert_format}: they run that format's MoE kernel."
        out.append(Formula(routed, fitted.symbol, why))
    passes = ((N_read, W_read, moe.E_t, n.tau.symbol), (N_pre, W_pre, moe.E_pf, n.S_p.symbol))
    for params, weight_bytes, touched, tokens in passes:
        experts = L_e * touched.symbol * moe.N_x.symbol
        out.append(
            Formula(
                params,
                moe.N_fix.symbol + n.B.symbol * tokens * n.n_g.symbol + experts,
                "A touched expert is read once however many of the pass's tokens it serves (formulas/moe.py); "
                "the rest is read whole, the lookup tables row by row.",
            )
        )
        if arch.expert_format:
            out.append(
                Formula(
                    weight_bytes,
                    (params.symbol - experts) * n.b_w.symbol + experts * n.b_x.symbol,
                    "The touched experts in the checkpoint's format (quantization_config); the rest in the weight "
                    "dtype.",
                )
            )
    return tuple(out)


def _weight_bytes() -> Formula:
    """W for a checkpoint whose routed experts ship in another format (gpt-oss's MXFP4)."""
    return Formula(
        n.W,
        (n.N.symbol - n.N_routed.symbol) * n.b_w.symbol + n.N_routed.symbol * n.b_x.symbol,
        "The routed experts are stored in the checkpoint's format (quantization_config); the rest in the weight dtype.",
    )


def layer_params(arch: Architecture) -> list[int]:
    """Each layer's parameters, in order, as transformers' modules hold them (no e_score_correction_bias buffer)."""
    syms = _Symbols(arch)
    values = {sym.symbol: sympy.Integer(v) for sym, v in syms.values.items()}
    width = (2 if arch.layer_norm else 1) * n.d.symbol
    h, d = sympy.Integer(arch.hyper), n.d.symbol
    hyper = 2 * _hyper_mixer(arch, h, d) if arch.hyper else 0  # _hyper_connections, per layer
    out: list[int] = []
    # Gemma 4's per-layer inputs: each layer's gate, projection and norm live in the layer.
    inputs = 2 * d * arch.per_layer_input + width if arch.per_layer_input else 0
    for g in arch.groups:
        per_layer = g.norms * width + hyper + inputs + sum(p.layer_params(syms.of(p)) for p in g.parts())
        out += [int(sympy.sympify(per_layer).xreplace(values))] * g.count
    return out
