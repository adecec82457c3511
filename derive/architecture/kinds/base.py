"""What every layer kind answers: its shapes, parameters, cache or state, and per-token costs.

A kind is a small frozen record of its shapes, in the counts a config gives. Its
formulas are SymPy expressions over shape symbols; `s(base)` names the symbol this
layer uses for a base shape (tagged when another layer of the model has a different
value for it, as Gemma 4's global layers have other head counts). Per-layer counts are
pure numbers: the model multiplies them by its layer counts.

Everything the rest of derive asks of a layer is a method here, so no module outside a
kind's own needs to know which kind it holds. Sources for the shapes are transformers'
modeling files, one per family; cache and state sizes follow vLLM's
`kv_cache_interface.py` (one spec per layer kind).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import sympy

from derive.core.errors import CatalogError
from derive.core.library import Formula
from derive.core.symbols import Sym
from formulas import notation as n

Resolve = Callable[[Sym], sympy.Symbol]

CACHE_SOURCE = (
    "Per layer kind, as vLLM's kv_cache_interface.py sizes it: a key and a value per KV head (Pope et al. 2022, "
    "sec. 2), a latent and a rotary key for MLA (DeepSeek-V2, arXiv:2405.04434, sec. 2.1), indexer keys for "
    "sparse attention (DeepSeek V3.2 report), at most the window or chunk for windowed layers."
)


@dataclass(frozen=True)
class Span:
    """How many tokens of its sequence a layer attends to and caches: all, a window, a chunk."""

    kind: str  # "full", "sliding", "chunked"
    tokens: int = 0

    @property
    def symbol(self) -> Sym | None:
        return {"full": None, "sliding": n.S_win, "chunked": n.S_chunk}[self.kind]

    def of(self, context: sympy.Expr) -> sympy.Expr:
        """The tokens held at `context`: all of them, or at most the window (chunk)."""
        return context if self.symbol is None else sympy.Min(context, self.symbol.symbol)

    def prompt_mean(self, prompt: sympy.Expr) -> sympy.Expr:
        """Tokens attended to, averaged over a causal prompt: p/2 for full, min(p,W) - min(p,W)^2/(2p) for a window.

        A chunk of C tokens restarts every C tokens; averaged over whole chunks it is C/2, and the window
        form is the same shape, so it serves as an upper bound there.
        """
        if self.symbol is None:
            return prompt / 2
        held = sympy.Min(prompt, self.symbol.symbol)
        return held - held**2 / (2 * prompt)


FULL = Span("full")


def top_k_mean(tokens: sympy.Expr, top: sympy.Expr) -> sympy.Expr:
    """Tokens a top-k selection attends to, averaged over a causal prompt of `tokens`."""
    chosen = sympy.Min(tokens, top)
    return chosen - chosen**2 / (2 * tokens)


def kind_module(config: str, module: str) -> Any:
    """The kind module that reads a layer part (kinds/<module>.py, named by a family entry): its `read` builds it."""
    try:
        return importlib.import_module(f"derive.architecture.kinds.{module}")
    except ModuleNotFoundError:
        raise CatalogError(
            f"config for {config}: a layer part needs a kind derive does not have ({module})",
            "derive cannot describe this model",
        ) from None


# What each tag names in prose ("the sliding-window layers"), gathered from the kinds as they are defined.
KIND_NAMES: dict[str, str] = {}


class Kind:
    """One layer part (a mixer or an MLP); zero wherever it has no such cost."""

    names: ClassVar[dict[str, str]] = {}  # its tags and what each names in prose

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        KIND_NAMES.update(cls.names)

    tag: str = ""  # how its layer-count symbol is tagged in a hybrid model (L_swa, L_lin, ...)
    label: str = ""  # how the derivation names it
    softmax: bool = False  # computes a score matrix per query head (what tensor parallelism splits first)
    whole_cache: bool = False  # its cache is one latent or shared head: tensor parallelism does not split it
    latent: bool = False  # caches a compressed latent that every head expands (MLA)

    def shapes(self) -> dict[Sym, int]:
        return {}

    def weights(self, s: Resolve) -> sympy.Expr:
        """Parameters that do arithmetic per token (matmuls, biases, convolutions), one layer."""
        return sympy.Integer(0)

    def norms(self, s: Resolve) -> sympy.Expr:
        """Normalisation parameters inside the part, one layer (elementwise: no matmul)."""
        return sympy.Integer(0)

    def cached_values(self, s: Resolve) -> sympy.Expr:
        """Values one layer caches per token of context (K and V, a latent, indexer keys)."""
        return sympy.Integer(0)

    def activation_values(self, s: Resolve) -> sympy.Expr:
        """Values its dense MLP activation functions read and write per token, one layer (routed experts' apart)."""
        return sympy.Integer(0)

    def span(self) -> Span:
        return FULL

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        """Multiply-accumulates per query token per attended token, one layer (all heads, scores and values)."""
        return sympy.Integer(0)

    def prompt_attention_macs(self, s: Resolve) -> sympy.Expr:
        """The same in a prompt pass, where a kind attends another way there (MLA's decompressed heads)."""
        return self.attention_macs(s)

    def state_values(self, s: Resolve) -> sympy.Expr:
        """Values of the fixed-size recurrent state one sequence keeps in one layer."""
        return sympy.Integer(0)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        """Values of the convolution window one sequence keeps in one layer (cached in the KV dtype)."""
        return sympy.Integer(0)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        """Multiply-accumulates per token to update and read the recurrent state, one layer."""
        return sympy.Integer(0)

    # How a cached-token kind's costs grow with the context (a window caps them; compressed entries add to them).
    def cache(self, s: Resolve, context: sympy.Expr, per_token: sympy.Expr) -> sympy.Expr:
        """Cache bytes at `context`, given the bytes one cached token costs across this kind's layers."""
        return self.span().of(context) * per_token

    def cache_growth(self, s: Resolve, per_token: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
        """The cache past every window as (bytes each further token adds, bytes held whatever the length)."""
        window = self.span().symbol
        return (per_token, sympy.Integer(0)) if window is None else (sympy.Integer(0), window.symbol * per_token)

    def attended(self, s: Resolve, context: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        """Attention FLOPs of one decode token at `context`, given the FLOPs per attended token."""
        return self.span().of(context) * flops

    def prompt_attended(self, s: Resolve, prompt: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        """The same, averaged over a causal prompt of `prompt` tokens."""
        return self.span().prompt_mean(prompt) * flops

    def context_formulas(self, s: Resolve, layers: sympy.Symbol) -> list[Formula]:
        """Formulas the context terms above use beyond the cache and attention ones (indexers, compressed entries)."""
        return []

    # What a model summary reads off its attention (zero where the kind has none).
    def head_count(self) -> int:
        """Query heads (value heads of a recurrent mixer): what tensor parallelism divides."""
        return 0

    def kv_head_count(self) -> int:
        """Key/value heads the cache holds per token (0 where the cache is not per head)."""
        return 0

    def cache_splits(self) -> int:
        """The most ways tensor parallelism splits this kind's cache or state: not at all for one latent or shared
        head, else by its KV heads, else by its (recurrent) heads, as vLLM shards each layer's own."""
        if self.whole_cache:
            return 1
        return self.kv_head_count() or self.head_count() or 1

    def head_width(self) -> int:
        """Width of one head's value (the attention output per head)."""
        return 0

    def score_width(self) -> int:
        """Width of one query/key head (what a score multiplies)."""
        return self.head_width()

    def plain(self) -> bool:
        """Caches every token and attends to all of it, with no indexer."""
        return False

    def qk_normed(self) -> int:
        """Attentions of the part that normalize their queries or keys (Qwen3's q_norm, k_norm): their own kernels."""
        return 0

    def latent_attentions(self) -> int:
        """Attentions of the part that cache a latent (MLA): more kernels a decode step than a GQA attention's."""
        return int(self.latent)

    def dense_mlps(self) -> int:
        """Dense MLPs the part runs (a MoE block's shared experts run as one)."""
        return 0

    def window_tokens(self) -> int:
        """The window or chunk that caps its span (0: none)."""
        return 0

    def token_weights(self, s: Resolve) -> sympy.Expr:
        """The weights one token multiplies through in one layer (a MoE's router, k experts and shared ones)."""
        return self.weights(s)

    def shared_weights(self, s: Resolve) -> sympy.Expr:
        """Parameters that every layer of this kind uses but the model holds once (Zamba's shared block)."""
        return sympy.Integer(0)

    def shared_used(self, s: Resolve) -> sympy.Expr:
        """Of the shared weights, what one layer multiplies through a token (Zamba: one block's matmuls)."""
        return sympy.Integer(0)

    def shared_tables(self, s: Resolve) -> sympy.Expr:
        """Lookup tables every layer of this kind reads but the model holds once, gathered, not multiplied
        (CPM-Ant's relative position-bias table): counted with the embedding, not the matmul weights."""
        return sympy.Integer(0)

    def skipped(self, s: Resolve) -> sympy.Expr:
        """Parameters of this part one token does not use, one layer (routed attention experts: JetMoE)."""
        return sympy.Integer(0)

    def layer_params(self, s: Resolve) -> sympy.Expr:
        """Every parameter this part holds in one layer, as transformers' modules hold them."""
        return self.weights(s) + self.norms(s)

    def notes(self) -> tuple[str, ...]:
        """What a reader of this model's figures should know about how this kind was sized."""
        return ()

    def describe(self) -> str:
        return self.label


@dataclass(frozen=True)
class Indexer:
    """DeepSeek sparse attention's lightning indexer (V3.2, GLM-5): it scores every cached token and keeps top-k."""

    heads: int
    head_dim: int
    topk: int

    def shapes(self) -> dict[Sym, int]:
        return {n.n_idx: self.heads, n.d_idx: self.head_dim, n.S_top: self.topk}

    def macs(self, s: Resolve) -> sympy.Expr:
        return s(n.n_idx) * s(n.d_idx)
