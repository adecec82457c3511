"""This machine's recorded measurement (`derive measure`), for the answers that quote it.

The committed sheets must be reproducible, so they read the result recorded in
reports/data/measured-machine.json (with the machine's description); an answer
given `measure=True` runs the measurement live instead.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import sympy

from derive.derivations.common import Setup, start
from derive.sheet import Figure, Prose, Quantity, Section
from formulas import notation as sym

RECORDED = Path(__file__).resolve().parent.parent / "data" / "measured-machine.json"


def measurement(live: bool | str) -> dict[str, Any]:
    """The recorded result, or (live) a fresh full run; live='quick' runs the small plan the tests use."""
    if live:
        import sys

        from derive import measurement as measure

        plan = measure.Plan.quick() if live == "quick" else measure.Plan()

        def progress(text: str) -> None:  # a live run takes half a minute: say what it is doing
            print(f"  ... {text}", file=sys.stderr, flush=True)

        return measure.run(plan, progress=progress).as_dict()
    from derive import measurement as measure

    return measure.recompute(json.loads(RECORDED.read_text(encoding="utf-8")))


def described(result: dict[str, Any]) -> str:
    m = result["machine"]
    return f"{m['cpu']} ({m['cores']} cores, {m['system']}, numpy {m['numpy']})"


def ceilings_section(setup: Setup, result: dict[str, Any]) -> Section:
    """The measured ceilings as givens, the ridge worked from them, each phase against them."""
    copy, matmul = result["ceilings"]
    work = start("measure", f"Measured on {described(result)}", setup)
    work.given(sym.BW, sympy.Float(copy["value"], 6), f"measured: {copy['how']}")
    work.given(sym.P, sympy.Float(matmul["value"], 6), f"measured: {matmul['how']}")
    ridge = work.compute(work.library.get("ridge_intensity"), "measured_ridge_intensity")
    lines = []
    for phase in result["phases"]:
        bound = phase["bound"]
        fraction = phase["bandwidth_fraction"] if bound == "memory" else phase["flops_fraction"]
        lines.append(
            Prose(
                "text",
                f"{phase['name']}: {{bytes}} and {{flops}} (from the library) in {{seconds}}, "
                f"against a roofline time of "
                f"{{predicted}}: {{bandwidth}} and {{achieved}}, at {{intensity}} FLOP per byte, "
                f"{'left' if bound == 'memory' else 'right'} of the ridge: {bound}-bound, at {{fraction}} % of the "
                f"{'copy' if bound == 'memory' else 'matmul'} ceiling"
                + (
                    ", which cannot be: the ceiling's run was too small or too noisy to be the machine's."
                    if fraction > 1
                    else "."
                ),
                {
                    "bytes": Quantity(sympy.Float(phase["bytes"], 6), "byte"),
                    "flops": Quantity(sympy.Float(phase["flops"], 6), "FLOP"),
                    "seconds": Quantity(sympy.Float(phase["seconds"], 6), "second"),
                    "predicted": Quantity(sympy.Float(phase["predicted_seconds"], 6), "second"),
                    "bandwidth": Quantity(sympy.Float(phase["achieved_bandwidth"], 6), "byte/second"),
                    "achieved": Quantity(sympy.Float(phase["achieved_flops"], 6), "FLOP/second"),
                    "intensity": Quantity(sympy.Float(phase["intensity"], 4)),
                    "fraction": Quantity(sympy.Float(fraction * 100, 3)),
                },
            )
        )
    intro = (
        Prose(
            "text",
            f"`derive measure` on {described(result)}: a large copy and a large float32 matrix "
            "multiply give the two ceilings; a GPT-2-small forward pass in numpy, with random weights "
            "of the real shapes, gives the phases. The ridge of this machine:",
        ),
    )
    del ridge
    return Section("Measured on this machine", work.sheet, intro=intro, outro=tuple(lines))


def measured_figure(result: dict[str, Any]) -> Figure:
    from derive import figures

    copy, matmul = result["ceilings"]
    points = [(p["name"], p["intensity"], p["achieved_flops"]) for p in result["phases"]]
    title = f"{result['machine']['cpu']}: measured ceilings and phases"
    return Figure(
        "measured-roofline",
        f"The roofline of this machine's measured ceilings ({described(result)}), "
        "with each phase at its intensity and the FLOP/s it achieved.",
        partial(figures.measured_roofline, peak=matmul["value"], bandwidth=copy["value"], points=points, title=title),
    )
