"""`derive models` and `derive gpus`: the catalogs as tables (or JSON)."""

from __future__ import annotations

import json

from derive.catalog import _gpu_index, _model_index, gpu_names, load_gpu, load_model, model_names
from derive.units import format_quantity


def models(as_json: bool = False) -> str:
    rows = []
    for name in model_names():
        model = load_model(name)
        cfg = model.config
        kind = "MoE" if cfg.is_moe else "dense"
        attention = "MLA" if cfg.is_mla else ("GQA" if cfg.kv_heads < cfg.heads else "MHA")
        rows.append(
            {
                "name": name,
                "title": model.title,
                "family": cfg.family,
                "kind": f"{kind}, {attention}",
                "published_total": model.published_total,
                "published_active": model.published_active,
                "aliases": _model_index()[name].get("aliases", []),
            }
        )
    if as_json:
        return json.dumps(rows, indent=2) + "\n"
    lines = [f"{'name':<15} {'title':<17} {'family':<12} {'kind':<11} {'parameters':>20}  aliases"]
    for r in rows:
        count = f"{r['published_total']:,}" if r["published_total"] else "-"
        lines.append(
            f"{r['name']:<15} {r['title']:<17} {r['family']:<12} {r['kind']:<11} {count:>20}  {', '.join(r['aliases'])}"
        )
    return "\n".join(lines) + "\n"


def gpus(as_json: bool = False) -> str:
    rows = []
    for name in gpu_names():
        gpu = load_gpu(name)
        rows.append(
            {
                "name": name,
                "title": gpu.title,
                "memory": gpu.memory,
                "bandwidth": gpu.bandwidth,
                "bf16": gpu.flops.get("bf16"),
                "fp8": gpu.flops.get("fp8"),
                "power": gpu.power,
                "link": gpu.link,
                "aliases": _gpu_index()[name].get("aliases", []),
            }
        )
    if as_json:

        def plain(v: object) -> object:
            return None if v is None else (v if isinstance(v, (str, list)) else float(v))  # type: ignore[arg-type]

        return json.dumps([{k: plain(v) for k, v in r.items()} for r in rows], indent=2) + "\n"
    lines = [
        f"{'name':<10} {'memory':>8} {'bandwidth':>10} {'bf16':>12} {'fp8':>12} {'power':>7} "
        f"{'link (1-way)':>13}  title"
    ]
    for r in rows:

        def q(v: object, u: str) -> str:
            return "-" if v is None else format_quantity(v, u)

        lines.append(
            f"{r['name']:<10} {q(r['memory'], 'byte'):>8} {q(r['bandwidth'], 'byte/second'):>10} "
            f"{q(r['bf16'], 'FLOP/second'):>12} {q(r['fp8'], 'FLOP/second'):>12} {q(r['power'], 'watt'):>7} "
            f"{q(r['link'], 'byte/second'):>13}  {r['title']}"
        )
    lines.append(
        "Dense (not sparse) datasheet figures; 'link' is one-way per GPU. Sources: derive gpus "
        "--json, formulas/gpus.toml."
    )
    return "\n".join(lines) + "\n"


def formulas(as_json: bool = False) -> str:
    import formulas as _library  # noqa: F401  (defines every formula)
    from derive.formula import LIBRARY
    from derive.render import latex, text

    rows = [
        {
            "name": f.name,
            "unit": f.unit,
            "symbolic": f"{f.defines.name} = {text(f.expr)}",
            "latex": f"{f.defines.latex} = {latex(f.expr)}",
            "meaning": f.meaning,
            "source": f.source,
        }
        for f in LIBRARY
    ]
    if as_json:
        return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    width = max(len(r["name"]) for r in rows)
    lines = [
        f"{r['name']:<{width}}  [{r['unit'] or '1'}]  {r['symbolic']}\n{'':<{width}}  {r['meaning']}" for r in rows
    ]
    return "\n".join(lines) + "\n"
