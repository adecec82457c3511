"""The catalogs: models (real configs) and accelerators (datasheet figures).

Both are data files in formulas/, validated on load. A name that is not in a
catalog is an error that lists the known names and suggests the closest.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property, lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import sympy

from derive.architecture.build import ModelFormulas, model_formulas
from derive.architecture.model import Architecture
from derive.architecture.reader import read_architecture
from derive.core.errors import CatalogError, DeriveError
from derive.core.names import closest
from derive.recipes import COMMAND_DTYPE, given_as, recipes


def dtype_bytes(dtype: str, option: str = "--dtype") -> sympy.Rational:
    """Bytes per stored value of a number format or weight recipe, its scales included (formulas/recipes.toml)."""
    known = recipes()
    try:
        return known[dtype.lower()].bytes
    except KeyError:
        raise CatalogError(
            f"unknown {option} '{dtype}'",
            f"{closest(dtype, known)}Known: {', '.join(known)}",
        ) from None


@dataclass(frozen=True)
class Model:
    """A catalog model, or one read from a user's config.json."""

    name: str
    title: str
    config: Architecture
    source: str
    published_total: int | None = None
    published_active: int | None = None
    published_source: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)  # the config.json as read

    @cached_property
    def formulas(self) -> ModelFormulas:
        return model_formulas(self.config)


@dataclass(frozen=True)
class Gpu:
    """One accelerator's dense datasheet figures, exact, in base units."""

    name: str
    title: str
    memory: sympy.Rational
    bandwidth: sympy.Rational
    flops: Mapping[str, sympy.Rational]
    power: sympy.Rational
    link: sympy.Rational | None
    link_note: str = ""
    notes: str = ""
    source: str = ""
    overridden: tuple[str, ...] = field(default=())
    architecture: str = ""  # hopper, blackwell, ...: what engines choose kernels by

    def peak(self, dtype: str, dtype_option: str = COMMAND_DTYPE) -> tuple[sympy.Rational, str]:
        """Peak FLOP/s for matmuls in `dtype`, and a note on which figure was used. `dtype_option`: how the user gives
        the dtype (`derive answer` takes `--set dtype`, and no --flops), for what an error says."""
        dtype = dtype.lower()
        if "flops" in self.overridden:
            return self.flops["override"], "peak FLOP/s given with --flops"
        gemm = recipes()[dtype].gemm if dtype in recipes() else dtype
        if gemm == "fp32" and gemm in self.flops:
            return self.flops[gemm], "fp32 peak of the CUDA cores (fp32 matmuls do not use the tensor cores)"
        if gemm in self.flops and (gemm == dtype or gemm != "bf16"):
            return self.flops[gemm], f"{dtype} dense peak" if gemm == dtype else f"{gemm} dense peak ({dtype})"
        # Weight-only recipes, and 4-bit ones where the accelerator has no FP4 tensor cores, dequantise for bf16.
        dequantised = gemm == "bf16" or gemm == "fp4"
        if dtype not in ("fp32", "fp16", "bf16") and gemm != "fp8" and "bf16" in self.flops:
            if dequantised:
                return self.flops["bf16"], f"{dtype} weights are dequantised: matmuls run at the bf16 peak"
            return self.flops["bf16"], f"{dtype}: no {gemm} peak in the datasheet, so the bf16 peak"
        # int8 matmuls are SmoothQuant's (int8-sq); --dtype int8 is weight-only and multiplies in bf16.
        offered = "/".join("int8-sq" if k == "int8" else k for k in self.flops)
        fix = (
            f"Pass --flops with the figure to use, or --dtype {offered}"
            if dtype_option == COMMAND_DTYPE
            else f"Pass {given_as(dtype_option, 'NAME')}, NAME one of {offered}"
        )
        raise CatalogError(f"{self.name} has no {dtype} peak in its datasheet", fix)

    def with_overrides(self, **figures: sympy.Rational | None) -> Gpu:
        given = {k: v for k, v in figures.items() if v is not None}
        if not given:
            return self
        if "flops" in given:
            given["flops"] = {"override": given["flops"]}
        return replace(self, overridden=self.overridden + tuple(given), **given)


def _data(name: str) -> Any:
    return files("formulas").joinpath(name)


@lru_cache(maxsize=1)
def _model_index() -> dict[str, dict[str, Any]]:
    with _data("models/catalog.toml").open("rb") as fh:
        return tomllib.load(fh)["models"]


@lru_cache(maxsize=1)
def _gpu_index() -> dict[str, dict[str, Any]]:
    with _data("gpus.toml").open("rb") as fh:
        return tomllib.load(fh)["gpus"]


def _resolve(name: str, index: Mapping[str, Mapping[str, Any]], what: str, command: str) -> str:
    wanted = name.strip().lower()
    for key, entry in index.items():
        if wanted == key or wanted in entry.get("aliases", ()):
            return key
    names = list(index) + [a for e in index.values() for a in e.get("aliases", ())]
    raise CatalogError(
        f"unknown {what} '{name}'",
        f"{closest(wanted, names)}Known: {', '.join(index)} (see '{command}')",
    )


def model_names() -> list[str]:
    return list(_model_index())


def gpu_names() -> list[str]:
    return list(_gpu_index())


@cache
def load_model(name: str) -> Model:
    key = _resolve(name, _model_index(), "model", "derive models")
    entry = _model_index()[key]
    raw = json.loads(_data(f"models/{entry['file']}").read_text())
    return Model(
        name=key,
        title=entry["title"],
        config=read_architecture(raw, key),
        source=raw.get("_source", ""),
        published_total=entry.get("published_total"),
        published_active=entry.get("published_active"),
        published_source=entry.get("published_source", ""),
        raw=raw,
    )


def load_config_path(path: str | Path) -> Model:
    """A model from a local config.json, or a folder holding one."""
    file = Path(path)
    if file.is_dir():
        file = file / "config.json"
    if not file.is_file():
        raise CatalogError(f"no config.json at '{path}'", "Pass a config.json file or the folder that holds it")
    try:
        raw = json.loads(file.read_text(encoding="utf-8-sig"))  # a byte-order mark, as some editors save, is no error
    except UnicodeDecodeError:
        raise CatalogError(f"'{file}' is not a text file", "Pass a Hugging Face config.json") from None
    except json.JSONDecodeError as exc:
        raise CatalogError(
            f"'{file}' is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            "Fix the file or download the config.json again",
        ) from None
    except OSError as exc:
        raise CatalogError(f"cannot read '{file}': {exc.strerror}", "Check the path and its permissions") from None
    except RecursionError:
        raise CatalogError(f"'{file}' nests too deeply to be a config.json", "Pass a real config.json") from None
    # The model's own name where the config records it (a Hugging Face download keeps _name_or_path), else
    # the folder's: a config saved as ./tmp/config.json is not a model called "tmp".
    recorded = raw.get("_name_or_path") if isinstance(raw, dict) else None
    named = isinstance(recorded, str) and recorded.strip().rstrip("/")
    name = recorded.strip().rstrip("/").split("/")[-1] if named else (file.parent.name or file.stem)  # type: ignore[union-attr]
    config = read_architecture(raw, name)
    title = recorded if named else name
    return Model(name=name, title=str(title), config=config, source=str(file), raw=raw)


@cache
def load_gpu(name: str) -> Gpu:
    from derive.core.units import parse_quantity

    key = _resolve(name, _gpu_index(), "GPU", "derive gpus")
    entry = _gpu_index()[key]

    def figure(field_name: str, unit_text: str) -> sympy.Rational:
        try:
            return parse_quantity(entry[field_name], unit_text, f"gpus.toml [{key}] {field_name}")
        except KeyError:
            raise DeriveError(f"gpus.toml [{key}] lacks '{field_name}'", "Fix the catalog entry") from None

    flops: dict[str, sympy.Rational] = {
        dt: figure(dt, "FLOP/second") for dt in ("fp32", "bf16", "fp16", "fp8", "fp4", "int8") if dt in entry
    }
    return Gpu(
        name=key,
        title=entry["title"],
        memory=figure("memory", "byte"),
        bandwidth=figure("bandwidth", "byte/second"),
        flops=flops,
        power=figure("power", "watt"),
        link=figure("link", "byte/second") if "link" in entry else None,
        link_note=entry.get("link_note", ""),
        notes=entry.get("notes", ""),
        source=entry.get("source", ""),
        architecture=entry.get("architecture", ""),
    )
