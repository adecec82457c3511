"""A family entry's settings: a literal, or a key of the config to read it from.

An entry (derive/architecture/families/*.toml) states how a family differs from the
shared reading. A setting is a literal (`qk_norm = "head"`), the name of a config key
(`qkv_bias = "attention_bias"`: read that flag), or a small table for a key whose values
need naming: `{key = "qk_norm_type", default = "per_layer", map = {per_head = "head"},
when = "use_qk_norm"}` (no setting at all when the `when` flag is false).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from derive.architecture.keys import Keys
from derive.errors import CatalogError


class Spec:
    """One section of a family entry, read against one config."""

    def __init__(self, section: Mapping[str, Any], where: str) -> None:
        self.section, self.where = section, where

    def __contains__(self, name: str) -> bool:
        return name in self.section

    def sub(self, name: str) -> Spec:
        value = self.section.get(name, {})
        if not isinstance(value, dict):
            raise CatalogError(f"family entry {self.where}: '{name}' is not a table", "Fix the family entry")
        return Spec(value, f"{self.where}.{name}")

    def raw(self, name: str, default: Any = None) -> Any:
        return self.section.get(name, default)

    def keys(self, k: Keys) -> Keys:
        """`k` with the key names this section gives (`keys = {head_dim = ["global_head_dim"]}`)."""
        names = self.section.get("keys")
        return k.renamed(names) if names else k

    def flag(self, k: Keys, name: str, default: bool = False) -> bool:
        value = self.section.get(name, default)
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            return k.flag(value, False)
        return bool(self._table(k, name, value, default))

    def text(self, k: Keys, name: str, default: str = "") -> str:
        value = self.section.get(name, default)
        if isinstance(value, str):
            return value
        return str(self._table(k, name, value, default))

    def number(self, k: Keys, name: str, default: int) -> int:
        value = self.section.get(name, default)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            return k.int(value, default, minimum=0)
        return int(self._table(k, name, value, default))

    def _table(self, k: Keys, name: str, value: Any, default: Any) -> Any:
        if not isinstance(value, dict) or "key" not in value:
            raise CatalogError(f"family entry {self.where}: '{name}' is {value!r}", "Give a literal, a key or a table")
        when = value.get("when")
        if when is not None and not k.flag(when, bool(value.get("when_default", True))):
            return type(default)()
        read = k.get(value["key"], value.get("default", default))
        mapped = value.get("map", {})
        otherwise = value.get("otherwise", read)
        return mapped.get(str(read).lower() if isinstance(read, bool) else str(read), otherwise)
