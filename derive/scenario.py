"""The one scenario builder: inputs by name (as an option, `--set`, a question or the API gives them) to a Setup.

Every entry point goes through `build`: the CLI's options, a question's inputs, the sweep's fixed
values. It resolves catalog names and config paths, applies the datasheet overrides, fills the
defaults below (recording which were used, for "defaults used:"), validates every count through
derive/core/validate.py, and checks a context the user gave against the model's position limit.

This module imports nothing heavy at import time: the CLI reads DEFAULTS for its help text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from derive.inputs import DEFAULTS, OVERRIDES  # declared once, with their help and units (derive/inputs.py)
from derive.recipes import COMMAND_DTYPE  # light: no SymPy

# Inputs passed to the Setup as they are (validated there).
_PLAIN = ("tp", "ep", "pp", "dp", "claim", "floor", "allow_long_context")


SPECULATION = ("draft_tokens", "acceptance", "draft_cost", "mtp")  # read together (derive/speculation.py)
LINKS = ("nvlink", "network")  # named links: the system's NVLink, its scale-out network per accelerator


def build(
    values: Mapping[str, Any],
    need_gpu: bool = False,
    given: Iterable[str] | None = None,
    dtype_option: str = COMMAND_DTYPE,
) -> Any:
    """A derivations.Setup from `values`.

    `values` maps input names to values; a name present with the value None was offered and left to its
    default (it is listed in the Setup's defaults), a name absent was not offered. `given` names the inputs
    the user set; by default every name with a value. `model` is a catalog name or a loaded Model, `config`
    a path to a config.json; `gpu` and `vs` are names or loaded accelerators. `dtype_option`: how the caller's user
    gives the weights' dtype (`derive answer` takes `--set dtype`), for what the errors and notes say.
    """
    from derive.catalog import Gpu, Model, load_config_path, load_gpu, load_model
    from derive.core.errors import DeriveError
    from derive.derivations.common import Setup

    given = {k for k, v in values.items() if v is not None} if given is None else set(given)
    model, config = values.get("model"), values.get("config")
    if model is not None and config is not None:
        raise DeriveError("--model and --config both given", "Pass one of them")
    if config is not None:
        model = load_config_path(config)
    elif model is None:
        raise DeriveError("no model given", "Pass --model NAME (see 'derive models') or --config PATH")
    elif not isinstance(model, Model):
        model = load_model(model)
    defaults = [key for key in DEFAULTS if key in values and values[key] is None]
    filled = {key: values.get(key) if values.get(key) is not None else default for key, default in DEFAULTS.items()}

    fields: dict[str, Any] = {key: filled[key] for key in ("context", "batch", "prompt", "output", "tokens")}
    if values.get("kv_dtype") is not None:
        fields["kv_dtype"] = checked_dtype(values["kv_dtype"], "--kv-dtype")
    fields.update({key: values[key] for key in _PLAIN if values.get(key) is not None})
    overrides = figures(values)
    if need_gpu or values.get("gpu") is not None or overrides:
        gpu = filled["gpu"]
        fields["gpu"] = (gpu if isinstance(gpu, Gpu) else load_gpu(gpu)).with_overrides(**overrides)
    else:
        defaults = [key for key in defaults if key != "gpu"]
    if values.get("vs") is not None:
        fields["vs"] = values["vs"] if isinstance(values["vs"], Gpu) else load_gpu(values["vs"])
    if values.get("dtype") is None:  # the checkpoint's own recipe, as it ships, where the accelerator runs it
        from derive.recipes import shipped_recipe

        gpus = [fields[key] for key in ("gpu", "vs") if key in fields]
        filled["dtype"] = shipped_recipe(model.config.weight_recipe, str(filled["dtype"]), gpus)
    fields["dtype"] = checked_dtype(filled["dtype"], dtype_option, weights=True)
    fields["dtype_option"] = dtype_option
    if "kv_dtype" in values and values["kv_dtype"] is None:  # offered and left to its rule: the recipe's activations
        order = [*DEFAULTS]
        order.insert(order.index("dtype") + 1, "kv_dtype")
        defaults = sorted([*defaults, "kv_dtype"], key=order.index)
    link = values.get("link")
    if link is not None:
        fields["link_name"] = values.get("link_name") or str(link)
        if isinstance(link, str) and link.strip().lower() in LINKS:  # the system's own (formulas/systems.toml)
            fields["link_name"] = link.strip().lower()
        else:
            try:
                fields["link"] = _quantity(link, "byte/second", "link")
            except DeriveError as error:  # name the link words as well as a bandwidth
                named = f"name one: {' or '.join(LINKS)}"
                hint = f"{error.hint}, or {named}" if error.hint else named.capitalize()
                raise DeriveError(error.message, hint) from None
    if any(values.get(key) is not None for key in SPECULATION):
        from derive.speculation import speculation

        fields["speculation"] = speculation(model, dict(values))
    setup = Setup(model=model, defaults=tuple(defaults), **fields)
    request = bool({"prompt", "output"} & given)
    return setup.check_context("context" in given, request)


def checked_dtype(value: Any, option: str, weights: bool = False) -> str:
    """A dtype name the catalog knows (a weight recipe for the weights), lower-cased: every command checks it,
    whether it reads it or not."""
    from derive.core.errors import DeriveError
    from derive.inputs import DTYPES, weight_dtypes

    known = weight_dtypes() if weights else DTYPES
    name = str(value).strip().lower()
    if name not in known:
        raise DeriveError(f"unknown {option} '{value}'", f"Known: {', '.join(known)}")
    return name


def figures(values: Mapping[str, Any]) -> dict[str, Any]:
    """The datasheet overrides among `values`, each checked for its unit ('3.35 TB/s')."""
    return {key: _quantity(values[key], unit, key) for key, unit in OVERRIDES.items() if values.get(key)}


def _quantity(value: Any, unit: str, key: str) -> Any:
    """A figure as typed ('3.35 TB/s', checked) or already a value in base units (left alone)."""
    if not isinstance(value, str):
        return value
    from derive.core import validate

    return validate.quantity(value, unit, f"--{key}")
