"""Typed access to a config.json: a missing or ill-typed key is an error that names the key and its value."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from derive.errors import CatalogError

# Past this a count is not a model: a config with 10^12 layers is a typo, not a plan.
_LARGEST = 10**9


class Keys:
    """The keys of one config (its text_config, for a multimodal checkpoint), read with the family's defaults."""

    def __init__(self, raw: Mapping[str, Any], name: str, family: str, outer: Mapping[str, Any] | None = None) -> None:
        self.raw, self.name, self.family, self.outer = raw, name, family, outer or {}

    def fail(self, key: str, value: object, wanted: str, fix: str = "Fix the value in the config.json") -> CatalogError:
        return CatalogError(f"config for {self.name}: '{key}' is {value!r}, {wanted}", fix)

    def get(self, key: str, default: object = None) -> Any:
        value = self.raw.get(key)
        if value is None:
            value = self.outer.get(key)
        return default if value is None else value

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.get(key, default)
        if value is None:
            raise CatalogError(
                f"config for {self.name} lacks '{key}', which a {self.family} model needs",
                f"Add '{key}' to the config.json",
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
