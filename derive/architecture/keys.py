"""Typed access to a config.json through one vocabulary of keys.

Most keys mean the same thing in every family; families only name them differently
(transformers' `attribute_map`: GPT-2's `n_embd` is everyone's `hidden_size`). A key is
asked for by its common name and found under any of its names; a family entry may
narrow the names or give the defaults of its config class. A missing or ill-typed key
is an error that names the key as the config spells it, and its value.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from derive.core.errors import CatalogError

# Past this a count is not a model: a config with 10^12 layers is a typo, not a plan.
_LARGEST = 10**9

# The shared vocabulary: a common name, then the other names families give it, tried in order.
ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": ("n_embd", "d_model", "emb_dim", "model_dim", "dim", "embedding_dim"),
    "layer_types": ("attention_layers",),
    "num_hidden_layers": ("n_layer", "n_layers", "num_layers", "decoder_layers", "num_blocks"),
    "num_attention_heads": ("n_head", "n_heads", "num_heads", "attention_heads", "decoder_attention_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_kv_heads", "n_head_kv", "multi_query_group_num"),
    "head_dim": ("attention_head_dim", "kv_channels", "head_size"),
    "intermediate_size": ("ffn_hidden_size", "n_inner", "ffn_dim", "d_ff", "intermediate_dim"),
    "vocab_size": ("padded_vocab_size", "n_words", "n_token"),
    "max_position_embeddings": (
        "n_positions",
        "max_seq_len",
        "context_length",
        "max_sequence_length",
        "seq_length",
        "model_max_length",
    ),
    "num_experts": ("num_local_experts", "n_routed_experts", "moe_num_experts", "n_experts", "num_routed_experts"),
    "num_experts_per_tok": ("num_experts_per_token", "moe_topk", "moe_k", "top_k_experts", "experts_per_token"),
    "moe_intermediate_size": ("expert_intermediate_size", "expert_ffn_hidden_size", "moe_ffn_hidden_size"),
    "n_shared_experts": ("num_shared_experts",),
    "first_k_dense_replace": ("num_dense_layers", "moe_layer_start_index"),
    "decoder_sparse_step": ("moe_layer_interval",),
    "shared_expert_intermediate_size": ("moe_shared_expert_intermediate_size", "share_expert_dim"),
    "sliding_window": ("sliding_window_size", "attention_window_size"),
    "tie_word_embeddings": ("tie_embeddings",),
}


class Keys:
    """The keys of one config (its text_config, for a multimodal checkpoint), read with the family's defaults."""

    def __init__(
        self,
        raw: Mapping[str, Any],
        name: str,
        family: str,
        outer: Mapping[str, Any] | None = None,
        names: Mapping[str, list[str]] | None = None,
        defaults: Mapping[str, Any] | None = None,
        defaulted: dict[str, Any] | None = None,
    ) -> None:
        self.raw, self.name, self.family, self.outer = raw, name, family, outer or {}
        self.names, self.defaults = names or {}, defaults or {}
        # The family defaults this reading took for keys the config lacks (shared by overlays): said in a note.
        self.defaulted: dict[str, Any] = {} if defaulted is None else defaulted

    def overlay(self, values: Mapping[str, Any]) -> Keys:
        """The same config with some keys given other values (one layer's per_layer_config)."""
        if not values:
            return self
        return Keys(
            {**self.raw, **values}, self.name, self.family, self.outer, self.names, self.defaults, self.defaulted
        )

    def renamed(self, names: Mapping[str, list[str]]) -> Keys:
        """The same config with some keys read under other names (a layer kind's own heads, say)."""
        return Keys(
            self.raw, self.name, self.family, self.outer, {**self.names, **names}, self.defaults, self.defaulted
        )

    def fail(self, key: str, value: object, wanted: str, fix: str = "Fix the value in the config.json") -> CatalogError:
        return CatalogError(f"config for {self.name}: '{self.spelt(key)}' is {value!r}, {wanted}", fix)

    def _spellings(self, key: str) -> tuple[str, ...]:
        if key in self.names:
            return tuple(self.names[key])
        return (key, *ALIASES.get(key, ()))

    def _found(self, spelling: str) -> Any:
        """The config's value under one name; a dotted name reads inside a sub-table (DBRX's attn_config.kv_n_heads)."""
        for table in (self.raw, self.outer):
            value: Any = table
            for part in spelling.split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
            if value is not None:
                return value
        return None

    def spelt(self, key: str) -> str:
        """The name the config gives `key` (its first spelling where it gives none)."""
        spellings = self._spellings(key)
        return next((k for k in spellings if self._found(k) is not None), spellings[0])

    def get(self, key: str, default: object = None) -> Any:
        for spelling in self._spellings(key):
            value = self._found(spelling)
            if value is not None:
                return value
        # The family's default, under the common name or under the name this reading gives it.
        value = next((self.defaults[s] for s in (key, *self._spellings(key)) if self.defaults.get(s) is not None), None)
        if value is None:
            return default
        self.defaulted[self.spelt(key)] = value
        return value

    def given(self, key: str) -> bool:
        """The config itself gives `key` (not the family's default)."""
        return any(self._found(k) is not None for k in self._spellings(key))

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.get(key, default)
        if value is None:
            raise CatalogError(
                f"config for {self.name} lacks '{self.spelt(key)}', which a {self.family} model needs",
                f"Add '{self.spelt(key)}' to the config.json",
            )
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _LARGEST:
            raise self.fail(key, value, f"not a whole number from {minimum} to {_LARGEST:,}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, value, "not true or false")
        return value

    def text(self, key: str, default: str = "") -> str:
        value = self.get(key, default)
        if not isinstance(value, str):
            raise self.fail(key, value, "not a string")
        return value

    def ints(
        self, key: str, default: list[builtins.int] | None = None, minimum: builtins.int = 0
    ) -> list[builtins.int]:
        value = self.get(key, default if default is not None else [])
        if not isinstance(value, list) or any(
            isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= _LARGEST for v in value
        ):
            raise self.fail(key, value if not isinstance(value, list) else value[:8], "not a list of whole numbers")
        return value

    def texts(self, key: str) -> list[str] | None:
        value = self.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, value if not isinstance(value, list) else value[:8], "not a list of strings")
        return value

    def divides(self, heads_key: str, heads: builtins.int, by_key: str, by: builtins.int) -> None:
        if heads % by:
            raise CatalogError(
                f"config for {self.name}: {by_key}={by} does not divide {heads_key}={heads}",
                f"Fix '{by_key}': each group of query heads shares one key/value head",
            )

    def pattern(self, key: str, kinds: list[str], layers: builtins.int, known: tuple[str, ...]) -> list[str]:
        """A per-layer list (layer_types, a hybrid pattern) checked for length and for kinds derive knows."""
        if len(kinds) != layers:
            raise CatalogError(
                f"config for {self.name}: '{key}' has {len(kinds)} entries but num_hidden_layers is {layers}",
                f"Give '{key}' one entry per layer",
            )
        for kind in kinds:
            if kind not in known:
                raise CatalogError(
                    f"config for {self.name}: '{key}' has a layer of kind {kind!r}, which derive cannot describe",
                    f"Known kinds: {', '.join(known)}",
                )
        return kinds
