"""Two mixers side by side in one layer (Falcon-H1): attention and a Mamba-2 read the same input, outputs summed."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.attention import Attention
from derive.architecture.kinds.attention import read as read_attention
from derive.architecture.kinds.base import FULL, Kind, Resolve, Span, kind_module
from derive.architecture.spec import Spec
from derive.core.library import Formula
from derive.core.symbols import Sym


@dataclass(frozen=True)
class Parallel(Kind):
    """Softmax attention and a recurrent mixer in one layer, on the same normed input (Falcon-H1).

    transformers' FalconH1DecoderLayer: `attention(h) * attention_out_multiplier + mamba(h) * ssm_out_multiplier`
    after one input norm, then the MLP. Each part keeps its own parameters, cache and state: the layer caches
    the attention's keys and values for every token (its span) and holds the recurrent part's fixed state
    (for a Mamba-2 part: n_m x d_m x d_st in the state dtype, and (c_cv - 1) x (n_m d_m + 2 g_m d_st) conv
    inputs, vLLM's MambaSpec), so a token's cost is the attention over its span plus the state update.
    """

    attention: Attention
    recurrent: Kind

    tag = "par"
    names = {"par": "attention-beside-Mamba"}
    label = "attention beside a state space (parallel)"
    softmax = True

    def shapes(self) -> dict[Sym, int]:
        return {**self.attention.shapes(), **self.recurrent.shapes()}

    def weights(self, s: Resolve) -> sympy.Expr:
        return self.attention.weights(s) + self.recurrent.weights(s)

    def norms(self, s: Resolve) -> sympy.Expr:
        return self.attention.norms(s) + self.recurrent.norms(s)

    def qk_normed(self) -> int:
        return self.attention.qk_normed()

    def cached_values(self, s: Resolve) -> sympy.Expr:
        return self.attention.cached_values(s)

    def span(self) -> Span:
        return self.attention.span()

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return self.attention.attention_macs(s)

    def state_values(self, s: Resolve) -> sympy.Expr:
        return self.recurrent.state_values(s)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return self.recurrent.state_conv_values(s)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        return self.recurrent.state_macs(s)

    def cache(self, s: Resolve, context: sympy.Expr, per_token: sympy.Expr) -> sympy.Expr:
        return self.attention.cache(s, context, per_token)

    def cache_growth(self, s: Resolve, per_token: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
        return self.attention.cache_growth(s, per_token)

    def attended(self, s: Resolve, context: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        return self.attention.attended(s, context, flops)

    def prompt_attended(self, s: Resolve, prompt: sympy.Expr, flops: sympy.Expr) -> sympy.Expr:
        return self.attention.prompt_attended(s, prompt, flops)

    def context_formulas(self, s: Resolve, layers: sympy.Symbol) -> list[Formula]:
        return self.attention.context_formulas(s, layers)

    def head_count(self) -> int:
        return self.attention.head_count()

    def kv_head_count(self) -> int:
        return self.attention.kv_head_count()

    def head_width(self) -> int:
        return self.attention.head_width()

    def score_width(self) -> int:
        return self.attention.score_width()

    def plain(self) -> bool:
        return False  # it keeps a recurrent state beside its cache

    def window_tokens(self) -> int:
        return self.attention.window_tokens()

    def notes(self) -> tuple[str, ...]:
        return self.attention.notes() + self.recurrent.notes()

    def describe(self) -> str:
        return f"{self.attention.describe()} beside {self.recurrent.describe()}"


def read(k: Keys, spec: Spec) -> Parallel:
    """The entry's `[parallel]` names the recurrent part's module (`recurrent`, default mamba2); its settings and
    key names are in `[parallel.attention]` and `[parallel.MODULE]`."""
    attention_spec = spec.sub("attention")
    attention = read_attention(attention_spec.keys(k), attention_spec, FULL)
    module = spec.raw("recurrent", "mamba2")
    part_spec = spec.sub(module)
    return Parallel(attention, kind_module(k.name, module).read(part_spec.keys(k), part_spec))
