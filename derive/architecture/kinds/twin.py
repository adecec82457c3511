"""A layer that runs one mixer twice in sequence, each copy with its own weights (LongCat-Flash's two MLAs)."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import FULL, Kind, Resolve, Span, kind_module
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from derive.core.symbols import Sym


@dataclass(frozen=True)
class Twin(Kind):
    """`copies` mixers of one shape in one layer, one after the other (transformers' LongcatFlashDecoderLayer:
    self_attn is a ModuleList of two LongcatFlashMLA, each with its own layer_idx 2i and 2i+1 in the cache).

    Every count of the part is `copies` times its own: weights, inner norms, cached values per token (each
    copy caches its own latent and rotary key, vLLM's MLA spec once per copy), score work. The span is the
    part's; the layer's d-wide norms are the entry's `norms`.
    """

    part: Kind
    copies: int = 2

    softmax = True

    @property
    def tag(self) -> str:  # type: ignore[override]
        return self.part.tag

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"{self.copies} x {self.part.label}"

    @property
    def whole_cache(self) -> bool:  # type: ignore[override]
        return self.part.whole_cache

    @property
    def latent(self) -> bool:  # type: ignore[override]
        return self.part.latent

    def shapes(self) -> dict[Sym, int]:
        return self.part.shapes()

    def weights(self, s: Resolve) -> sympy.Expr:
        return self.copies * self.part.weights(s)

    def norms(self, s: Resolve) -> sympy.Expr:
        return self.copies * self.part.norms(s)

    def qk_normed(self) -> int:
        return self.copies * self.part.qk_normed()

    def latent_attentions(self) -> int:
        return self.copies * self.part.latent_attentions()

    def cached_values(self, s: Resolve) -> sympy.Expr:
        return self.copies * self.part.cached_values(s)

    def attention_macs(self, s: Resolve) -> sympy.Expr:
        return self.copies * self.part.attention_macs(s)

    def state_values(self, s: Resolve) -> sympy.Expr:
        return self.copies * self.part.state_values(s)

    def state_conv_values(self, s: Resolve) -> sympy.Expr:
        return self.copies * self.part.state_conv_values(s)

    def state_macs(self, s: Resolve) -> sympy.Expr:
        return self.copies * self.part.state_macs(s)

    def span(self) -> Span:
        return self.part.span()

    def head_count(self) -> int:
        return self.part.head_count()

    def kv_head_count(self) -> int:
        return self.part.kv_head_count()

    def head_width(self) -> int:
        return self.part.head_width()

    def score_width(self) -> int:
        return self.part.score_width()

    def plain(self) -> bool:
        return self.part.plain()

    def window_tokens(self) -> int:
        return self.part.window_tokens()

    def notes(self) -> tuple[str, ...]:
        return self.part.notes()

    def describe(self) -> str:
        return f"{self.copies} x {self.part.describe()} in each layer"


def read(k: Keys, spec: Spec) -> Twin:
    """`[twin] part` names the copied mixer's module (default "latent"; "attention" reads over all tokens);
    `copies` how many (default 2); `[twin.PART]` its own settings."""
    module = spec.raw("part", "latent")
    part_spec = spec.sub(module)
    reader = kind_module(k.name, module)
    keys = part_spec.keys(k)
    part = reader.read(keys, part_spec, FULL) if module == "attention" else reader.read(keys, part_spec)
    if getattr(part, "indexer", None) is not None:
        raise CatalogError(
            f"config for {k.name}: two sparse-attention indexers in one layer",
            "derive counts an indexer's per-token work once a layer; this model cannot be read",
        )
    return Twin(part, spec.number(k, "copies", 2))
