"""A family entry's settings: a literal, or a key of the config to read it from.

An entry (derive/architecture/families/*.toml) states how a family differs from the
shared reading. A setting is a literal (`qk_norm = "head"`), the name of a config key
(`qkv_bias = "attention_bias"`: read that flag), or a small table for a key whose values
need naming: `{key = "qk_norm_type", default = "per_layer", map = {per_head = "head"},
when = "use_qk_norm"}` (no setting, or its `else`, when the `when` flag is false or an
`unless` flag is true).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from derive.architecture.keys import Keys
from derive.core.errors import CatalogError


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
        if not names:
            return k
        # A rename may hold only under a condition: a flag is set, or a key is absent (Gemma 4's global KV heads
        # with attention_k_eq_v, and its legacy global_* keys only where per_layer_config does not say).
        conditions = names.get("when", [])
        names = {key: value for key, value in names.items() if key != "when"}
        for cond in conditions if isinstance(conditions, list) else [conditions]:
            holds = (
                k.flag(cond["flag"], bool(cond.get("default", False))) if "flag" in cond else not k.has(cond["absent"])
            )
            if not holds:
                names = {key: value for key, value in names.items() if key not in cond.get("keys", [])}
        return k.renamed(names)

    def flag(self, k: Keys, name: str, default: bool = False) -> bool:
        value = self.section.get(name, default)
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            return k.flag(value, False)
        found = self._table(k, name, value, default)
        return k.flag(found, False) if isinstance(found, str) and found not in ("true", "false") else found is True

    def text(self, k: Keys, name: str, default: str = "") -> str:
        value = self.section.get(name, default)
        if isinstance(value, str):
            return value
        return str(self._table(k, name, value, default))

    def number(self, k: Keys, name: str, default: int) -> int:
        value = self.section.get(name, default)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, list):  # a sum of settings (CPM-Ant's extra_rows: its prompt rows and segment rows)
            return sum(Spec({name: part}, self.where).number(k, name, 0) for part in value)
        if isinstance(value, dict) and "product" in value:  # a product of settings (prompt_types x prompt_length)
            return math.prod(Spec({name: part}, self.where).number(k, name, 1) for part in value["product"])
        if isinstance(value, str):
            return k.int(value, default, minimum=0)
        found = self._table(k, name, value, default)
        if isinstance(found, bool) or not isinstance(found, int):
            raise k.fail(value.get("key", name), found, "not a whole number")
        return found

    def _table(self, k: Keys, name: str, value: Any, default: Any) -> Any:
        """A key's value, named through `map`; `default`, `otherwise` and `else` may be tables themselves."""
        if not isinstance(value, dict):
            return value
        if "key" not in value:
            raise CatalogError(f"family entry {self.where}: '{name}' is {value!r}", "Give a literal, a key or a table")
        when, unless = value.get("when"), value.get("unless")
        off = when is not None and not k.flag(when, bool(value.get("when_default", True)))
        if off or (unless is not None and k.flag(unless, False)):
            return self._table(k, name, value.get("else", type(default)()), default)
        read = k.get(value["key"])
        if read is None:
            read = value.get("default", default)
            if isinstance(read, dict):
                return self._table(k, name, read, default)
        mapped = value.get("map", {})
        found = str(read).lower() if isinstance(read, bool) else str(read)
        if found in mapped:
            return mapped[found]
        return self._table(k, name, value["otherwise"], default) if "otherwise" in value else read
