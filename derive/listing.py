"""`derive models` and `derive gpus`: the catalogs as tables (or JSON)."""

from __future__ import annotations

from derive.catalog import _gpu_index, _model_index, gpu_names, load_gpu, load_model, model_names
from derive.core.evaluation import evaluate
from derive.core.render import listing_json
from derive.core.units import format_quantity
from derive.derivations.common import model_library
from derive.inputs import INPUTS
from derive.recipes import shipped_recipe
from formulas import notation as sym


def models(as_json: bool = False) -> str:
    rows = []
    for name in model_names():
        model = load_model(name)
        cfg = model.config
        library = model_library(model)
        shapes = dict(model.formulas.shapes)
        rows.append(
            {
                "name": name,
                "title": model.title,
                "family": cfg.family,
                "kind": "MoE" if cfg.is_moe else "dense",
                # The default --dtype, and the format routed experts ship in where it differs (sized so always).
                "weights": shipped_recipe(cfg.weight_recipe, INPUTS["dtype"].default)
                + (f", {cfg.expert_format} experts" if cfg.expert_format else ""),
                "layers": " + ".join(f"{shapes[k.layers]} {k.tag}" for k in model.formulas.kinds),
                "total_params": int(evaluate(sym.N.symbol, dict(shapes), library)),
                "active_params": int(evaluate(sym.N_act.symbol, dict(shapes), library)),
                "published_total": model.published_total,
                "published_active": model.published_active,
                "aliases": _model_index()[name].get("aliases", []),
            }
        )
    if as_json:
        return listing_json("models", "models", rows)
    keys = ("name", "family", "kind", "weights", "layers")
    widths = {key: max(len(key), *(len(str(r[key])) for r in rows)) for key in keys}
    head = "  ".join(f"{key:<{widths[key]}}" for key in keys)
    lines = [f"{head}  {'parameters':>17}  {'active':>17}  aliases"]
    for r in rows:
        cells = "  ".join(f"{str(r[key]):<{widths[key]}}" for key in keys)
        lines.append(f"{cells}  {r['total_params']:>17,}  {r['active_params']:>17,}  {', '.join(r['aliases'])}")
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

        return listing_json("gpus", "gpus", [{k: plain(v) for k, v in r.items()} for r in rows])
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
    from derive.core.printing import text
    from derive.core.render import latex
    from formulas import library

    rows = [
        {
            "name": f.name,
            "unit": f.unit,
            "symbolic": f"{f.defines.name} = {text(f.expr)}",
            "latex": f"{f.defines.latex} = {latex(f.expr)}",
            "meaning": f.meaning,
            "source": f.source,
        }
        for f in library()
    ]
    if as_json:
        return listing_json("formulas", "formulas", rows)
    width = max(len(r["name"]) for r in rows)
    lines = [
        f"{r['name']:<{width}}  [{r['unit'] or '1'}]  {r['symbolic']}\n{'':<{width}}  {r['meaning']}" for r in rows
    ]
    return "\n".join(lines) + "\n"
