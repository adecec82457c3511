"""Weight recipes: bytes per weight with their scales, the matmul peak they run at, the fit they take.

One table (formulas/recipes.toml) answers what `--dtype` means everywhere: the bytes a weight takes
(derive/catalog.py's dtype_bytes), the datasheet peak its matmuls reach (Gpu.peak), the calibrated fit
(derive/calibration.py) and the format activations travel in. A config's quantization_config names the
recipe its checkpoint ships in (`from_quantization_config`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any


@dataclass(frozen=True)
class Recipe:
    name: str
    bytes_text: str  # an exact fraction, as written: '1/2 + 5/256'
    gemm: str  # the datasheet peak its matmuls run at
    fit: str  # the calibrated fit it takes (formulas/calibration.json): "bf16", "fp8", "fp8-block", "nvfp4"
    activations: str
    about: str
    source: str

    @property
    def bytes(self) -> Any:
        import sympy

        return sympy.sympify(self.bytes_text, rational=True)


@cache
def recipes() -> dict[str, Recipe]:
    data = tomllib.loads(files("formulas").joinpath("recipes.toml").read_text(encoding="utf-8"))
    return {
        name: Recipe(
            name,
            entry["bytes"],
            entry["gemm"],
            entry.get("fit", "bf16"),
            entry.get("activations", "bf16"),
            entry["about"],
            entry["source"],
        )
        for name, entry in data.items()
    }


def shipped_recipe(weight_recipe: str, fallback: str, gpus: Sequence[Any] = ()) -> str:
    """The recipe a model is sized in unless told otherwise: the one its checkpoint ships in (its
    quantization_config's, model.py's weight_recipe) where every accelerator of `gpus` has a matmul peak for it, else
    `fallback` (derive/inputs.py's default, bf16: an A100 has no FP8 tensor cores for an FP8 checkpoint)."""
    return weight_recipe if weight_recipe and not lacking(weight_recipe, gpus) else fallback


def lacking(recipe: str, gpus: Sequence[Any]) -> list[str]:
    """The accelerators of `gpus` whose datasheet has no matmul peak for `recipe` (derive/catalog.py Gpu.peak)."""
    from derive.core.errors import CatalogError

    names = []
    for gpu in gpus:
        try:
            gpu.peak(recipe)
        except CatalogError:
            names.append(gpu.name)
    return names


def from_quantization_config(quant: Mapping[str, Any]) -> tuple[str, str]:
    """The recipe a checkpoint's quantization_config names, and why; ('', reason) where none fits it."""
    method = str(quant.get("quant_method", "")).lower()
    bits, group = quant.get("bits", quant.get("w_bit")), quant.get("group_size", quant.get("q_group_size"))
    if method in ("awq", "gptq"):
        name = f"int4-{method}"
        if bits == 4 and group == 128:
            return name, f"{method} with {bits}-bit weights in groups of {group}"
        return "", f"{method} with {bits}-bit weights in groups of {group}: no recipe here (only 4 bits, group 128)"
    if method == "fbgemm_fp8":
        return "fp8-dynamic", "fbgemm fp8: per-channel weights, per-token activation scales"
    if method == "fp8":
        if quant.get("weight_block_size"):
            return "fp8-block", f"fp8 with {quant['weight_block_size']} weight blocks"
        dynamic = quant.get("activation_scheme") == "dynamic"
        return ("fp8-dynamic" if dynamic else "fp8"), f"fp8, {quant.get('activation_scheme', 'static')} activations"
    if method == "modelopt" and "fp4" in str(quant.get("quant_algo", "")).lower():
        return "nvfp4", "NVIDIA ModelOpt NVFP4"
    return "", f"quant_method '{method}'"


# How a user gives the weights' recipe: a command's option, or `derive answer`'s (a question takes no --flops).
COMMAND_DTYPE, QUESTION_DTYPE = "--dtype", "--set dtype"


def given_as(option: str, value: str) -> str:
    """An option with its value as the user types it: `--dtype fp8`, `--set dtype=fp8`."""
    return f"{option}={value}" if option == QUESTION_DTYPE else f"{option} {value}"


def checkpoint_notes(
    weight_recipe: str, expert_format: str, dtype: str, gpus: Sequence[Any] = (), option: str = COMMAND_DTYPE
) -> list[str]:
    """What a sheet or a plan says where the checkpoint ships weights in a format other than `dtype`: the recipe its
    quantization_config names (model.py's weight_recipe), why it is not the one sized where an accelerator of `gpus`
    has no matmul peak for it, and routed experts sized in their own format. `option`: how the user gives the dtype
    (--dtype, or `derive answer`'s --set dtype)."""
    from derive.core.units import format_quantity

    notes = []
    overridable = option == COMMAND_DTYPE  # a command takes --flops; a question only the inputs it names
    if weight_recipe and dtype != weight_recipe:
        shipped = recipes()[weight_recipe]
        without = lacking(weight_recipe, gpus)
        how = (
            f"{' and '.join(without)} {'has' if len(without) == 1 else 'have'} no {shipped.gemm} matmul peak, so "
            f"it is sized in {dtype}" + (f" (--dtype {shipped.name} with --flops sizes it as shipped)" * overridable)
            if without
            else f"pass {given_as(option, shipped.name)} to size it as shipped"
        )
        notes.append(
            f"the checkpoint ships {shipped.name} weights ({shipped.about}, {format_quantity(8 * shipped.bytes, '')} "
            f"bits a weight); {how}"
        )
    if expert_format:
        notes.append(
            f"the routed experts are sized as the checkpoint ships them ({expert_format}); the rest in {dtype}"
        )
    return notes
