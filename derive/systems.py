"""Systems and prices: how an accelerator's node is wired, and what an accelerator-hour costs.

Both are committed tables with sources (formulas/systems.toml, formulas/prices.toml), read
once and checked for their units when loaded, like the accelerators in gpus.toml.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

import sympy

from derive.catalog import Gpu, _data, load_gpu
from derive.core.errors import CatalogError, DeriveError
from derive.core.units import parse_quantity


@dataclass(frozen=True)
class System:
    """A node or rack: its domain of accelerators on one fabric (NVLink, mostly) and the scale-out network each
    accelerator has, one way."""

    name: str
    title: str
    gpu: str
    domain: int
    nvlink: sympy.Rational
    network: sympy.Rational
    network_note: str
    source: str
    fabric: str = "NVLink"  # what links the accelerators of one domain (PCIe on an L40S host, Infinity Fabric)

    def link(self, group: int) -> sympy.Rational:
        """The one-way bandwidth a collective over `group` accelerators gets: the fabric inside a domain."""
        # Past the domain a group's traffic crosses the NIC, and on a PCIe host the PCIe to it too: the lesser.
        return self.nvlink if group <= self.domain else min(self.network, self.nvlink)

    def link_for(self, group: sympy.Expr) -> sympy.Expr:
        """`link` for a group size that may be a symbol (a swept tp): the fabric up to the domain, then the NIC."""
        return sympy.Piecewise((self.nvlink, sympy.Le(group, self.domain)), (min(self.network, self.nvlink), True))

    def describe_link(self, group: int) -> str:
        """Which wire a collective over `group` accelerators crosses, in words."""
        if group <= self.domain:
            return f"{self.fabric}: a group of {group} inside one {self.domain}-accelerator domain"
        return f"a group of {group} spans {-(-group // self.domain)} domains of {self.domain}: {self.network_note}"


@dataclass(frozen=True)
class Price:
    gpu: str
    per_second: sympy.Rational  # USD per accelerator-second
    provider: str
    listed: str
    source: str

    @property
    def label(self) -> str:
        return f"{self.provider}, listed {self.listed}" if self.listed else self.provider


@cache
def _table(name: str, key: str) -> dict[str, dict[str, Any]]:
    with _data(name).open("rb") as fh:
        table: dict[str, dict[str, Any]] = tomllib.load(fh)[key]
    return table


def system_of(gpu: Gpu) -> System | None:
    """The system `gpu` ships in, or None where the table has none for it."""
    try:
        return system_for(gpu)
    except CatalogError:
        return None


def tp_link(gpu: Gpu, group: int) -> tuple[sympy.Rational, str]:
    """The one-way bandwidth a tensor-parallel group of `group` accelerators gets, and what it is: the catalog's
    link inside a node's domain, its scale-out network past it (any bandwidth for a GPU without a link: its all-reduce
    has one accelerator, Min(n - 1, 1) = 0)."""
    system = system_of(gpu)
    if system is not None and gpu.link is not None and group > system.domain:
        return system.link(group), system.describe_link(group)
    return gpu.link or gpu.bandwidth, gpu.link_note or "datasheet, one way"


def system_for(gpu: Gpu) -> System:
    """The system `gpu` ships in (the table's default for it)."""
    for name, entry in _table("systems.toml", "systems").items():
        if entry["gpu"] == gpu.name and entry.get("default"):
            return _system(name, entry)
    raise CatalogError(
        f"no multi-accelerator system for {gpu.name} in formulas/systems.toml",
        f"Plan on one of: {', '.join(sorted({e['gpu'] for e in _table('systems.toml', 'systems').values()}))}",
    )


def _system(name: str, entry: dict[str, Any]) -> System:
    where = f"systems.toml [{name}]"
    gpu = load_gpu(entry["gpu"])  # a system names a catalog accelerator, whose link is its NVLink
    if gpu.link is None:
        raise CatalogError(f"{where}: {gpu.name} has no link in gpus.toml", "Give it one, or leave it out of systems")
    return System(
        name=name,
        title=entry["title"],
        gpu=entry["gpu"],
        domain=int(entry["domain"]),
        nvlink=gpu.link,
        network=parse_quantity(entry["network"], "byte/second", f"{where} network"),
        network_note=entry.get("network_note", ""),
        source=entry["source"],
        fabric=entry.get("fabric", "NVLink"),
    )


def systems() -> list[System]:
    return [_system(name, entry) for name, entry in _table("systems.toml", "systems").items()]


def catalog_price(gpu: Gpu) -> Price | None:
    entry = _table("prices.toml", "prices").get(gpu.name)
    if entry is None:
        return None
    per_second = parse_quantity(entry["price"], "USD/second", f"prices.toml [{gpu.name}] price")
    return Price(gpu.name, per_second, entry["provider"], entry.get("listed", ""), entry["source"])


def prices(gpus: list[Gpu], overrides: str | None = None) -> dict[str, Price]:
    """Each accelerator's price: the committed table's, replaced by any of `overrides` ('h100=2.5 USD/h,...')."""
    out = {g.name: p for g in gpus if (p := catalog_price(g)) is not None}
    for item in (overrides or "").split(","):
        if not item.strip():
            continue
        name, sep, text = item.partition("=")
        if not sep or not text.strip():
            raise DeriveError(f"--price '{item.strip()}' is not NAME=PRICE", 'For example --price "h100=2.5 USD/h"')
        gpu = load_gpu(name.strip())
        if gpu.name not in {g.name for g in gpus}:
            raise DeriveError(f"--price names {gpu.name}, which --gpu does not plan on", "Add it to --gpu or drop it")
        try:
            per_second = parse_quantity(text.strip(), "USD/second", "--price")
        except DeriveError as error:  # the example in the NAME=PRICE form --price takes
            raise DeriveError(error.message, 'For example --price "h100=2.5 USD/h"') from None
        if per_second <= 0:
            raise DeriveError(f"--price for {gpu.name} must be positive", 'For example --price "h100=2.5 USD/h"')
        out[gpu.name] = Price(gpu.name, per_second, "given with --price", "", "--price")
    return out
