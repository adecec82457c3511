"""The figure each command can draw (`--figure FILE`, `Derivation.figure(path)`), from its own sheet.

Every curve is a library expression of the derivation, lambdified over the axis it varies
(derive.core.evaluation.over), with every other value as the sheet has it; derive/figures.py draws it
in the sheets' deterministic style. The answer sheets draw the same figures through here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from derive import figures
from derive.core.errors import DeriveError
from derive.core.evaluation import over
from formulas import notation as sym
from formulas.reads import W_read


def _library(setup: Any) -> Any:
    from derive.derivations.common import model_library

    return model_library(setup.model)


def _curve(sheet: Any, setup: Any, expr: Any, variable: Any, xs: Any) -> Any:
    """`expr` of the sheet, over `variable` at `xs`, every other value as the sheet has it."""
    return np.broadcast_to(over(expr, variable, sheet.values, _library(setup))(xs), np.shape(xs)).astype(float)


def _where(setup: Any, sheet: Any) -> str:
    gpu = f" on {sheet.inputs['tp']} x {setup.gpu.name}" if setup.gpu is not None and "tp" in sheet.inputs else ""
    return f"{setup.model.title}{gpu}"


def knee(sheet: Any, setup: Any, stem: Path) -> None:
    """Decode throughput against batch: the hyperbola, its ceiling, the knee and where memory runs out."""
    max_batch = float(sheet.results["max_batch_by_memory"].value)
    knee_batch = sheet.results["knee_batch"].value
    half = float(sheet.results["half_ceiling_batch"].value)
    # Past the hyperbola's own knee (half the ceiling), so its bend shows even where memory stops far sooner.
    span = max(max_batch, float(knee_batch) if knee_batch is not None else 0, 3 * half, 8) * 1.1
    batches = np.linspace(1, span, 400)
    figures.throughput_against_batch(
        stem,
        batches,
        _curve(sheet, setup, sym.R.symbol, sym.B, batches),
        None if knee_batch is None else float(knee_batch),
        max_batch,
        float(sheet.results["throughput_ceiling"].value),
        f"{_where(setup, sheet)}, {setup.context:,}-token context",
        half,
    )


def kv(sheet: Any, setup: Any, stem: Path) -> None:
    """Cache bytes per sequence against context, to twice the context asked (windows and state show as bends)."""
    end = max(2 * int(setup.context), 1024)
    contexts = np.linspace(1, end, 400)
    per_sequence = _curve(sheet, setup, sym.kv_seq.symbol, sym.S, contexts)
    figures.lines(
        stem,
        contexts,
        [("cache per sequence", per_sequence / 1e9)],
        "context (tokens per sequence)",
        "cache bytes per sequence (GB)",
        f"{setup.model.title}, {setup.kv_format} cache",
        vertical=[(float(setup.context), f"--context {setup.context:,}")],
    )


def predict(sheet: Any, setup: Any, stem: Path) -> None:
    """TPOT against batch: the roofline floor and, where fitted, the calibrated estimate above it."""
    from formulas import calibrated as cal
    from formulas import prefill as pf

    batch = int(sheet.values[sym.B])
    batches = np.linspace(1, max(4 * batch, 64), 300)
    series = [("floor (roofline)", _curve(sheet, setup, pf.tpot.symbol, sym.B, batches) * 1e3)]
    if "tpot" in sheet.results:
        series.append(("calibrated estimate", _curve(sheet, setup, cal.t_cal.symbol, sym.B, batches) * 1e3))
    figures.lines(
        stem,
        batches,
        series,
        "batch (sequences)",
        "time per output token (ms)",
        f"{_where(setup, sheet)}: {setup.prompt:,} prompt, {setup.output:,} output tokens",
        vertical=[(float(batch), f"--batch {batch:,}")],
    )


def crossover_kv_weights(sheet: Any, setup: Any, stem: Path) -> None:
    """KV bytes a step reads against context, and the weight bytes it crosses."""
    found = sheet.results["crossover_context"].value
    longest = max(setup.model.config.windows.values(), default=0)
    crossover = float(found) if found is not None else 0.0
    end = 2 * crossover if found is not None else 4.0 * max(longest, 1024)
    contexts = np.linspace(1, end, 400)
    figures.bytes_against_context(
        stem,
        contexts,
        _curve(sheet, setup, sym.kv_total.symbol, sym.S, contexts),
        float(sheet.values.get(W_read, sheet.values[sym.W])),  # the weights the batch's step reads
        crossover if found is not None else None,
        f"{setup.model.title}, batch {setup.batch}, {setup.kv_format} cache",
    )


def crossover_prefill(sheet: Any, setup: Any, stem: Path) -> None:
    """The prompt pass's read time and compute time against prompt length, crossing where prefill turns
    compute-bound."""
    from formulas import prefill as pf

    tokens = float(sheet.results["compute_bound_prompt_tokens"].value)
    prompts = np.linspace(1, 3 * tokens, 400)
    figures.lines(
        stem,
        prompts,
        [
            ("reading the weights", _curve(sheet, setup, pf.t_pm.symbol, pf.S_p, prompts) * 1e3),
            ("the prompt's FLOPs", _curve(sheet, setup, pf.t_pc.symbol, pf.S_p, prompts) * 1e3),
        ],
        "prompt (tokens)",
        "prefill time on one accelerator (ms)",
        f"{setup.model.title} on {setup.gpu.name}, {setup.dtype}",
        vertical=[(tokens, f"compute-bound past {tokens:,.0f} tokens")],
    )


def experts(sheet: Any, setup: Any, stem: Path) -> None:
    """Routed experts one decode step touches against the tokens in it."""
    from formulas import moe

    cfg = setup.model.config
    batches = np.geomspace(1, max(4096, float(sheet.values[sym.B]) * 16), 200)
    figures.experts_against_batch(
        stem,
        batches,
        _curve(sheet, setup, moe.E_t.symbol, sym.B, batches),
        cfg.experts,
        cfg.experts_per_token,
        f"{setup.model.title}: routed experts one decode step touches",
    )


def intensity(sheet: Any, setup: Any, stem: Path) -> None:
    """Each operation's arithmetic intensity against batch, and the accelerator's ridge."""
    from formulas import intensity as it
    from formulas import moe

    batches = np.geomspace(1, max(1024, float(sheet.values[sym.B]) * 8), 200)
    series = [("weight GEMMs (QKV, output, LM head)", _curve(sheet, setup, it.I_w.symbol, sym.B, batches))]
    if setup.model.config.is_moe:
        series.append(("a routed expert's GEMMs", _curve(sheet, setup, moe.I_x.symbol, sym.B, batches)))
    series.append(("attention", _curve(sheet, setup, it.I_att.symbol, sym.B, batches)))
    ridge = float(sheet.results["ridge_intensity"].value)
    figures.lines(
        stem,
        batches,
        series,
        "batch (sequences)",
        "arithmetic intensity (FLOP/byte)",
        f"{setup.model.title} on {setup.gpu.name}, {setup.context:,}-token context",
        vertical=[(float(sheet.values[sym.B]), f"--batch {int(sheet.values[sym.B]):,}")],
        horizontal=[(ridge, f"ridge {ridge:,.0f} FLOP/B")],
        log=True,
    )


def simulate_batching(sheet: Any, setup: Any, stem: Path, outcomes: Any = None, seats: int = 0) -> None:
    if outcomes is None:
        raise DeriveError("a batching figure needs the simulation's outcomes", "Use derive.simulate_batching(...)")
    figures.seat_timeline(
        stem,
        {p: o.timeline for p, o in outcomes.items()},
        seats,
        f"{sheet.inputs['model']} on {sheet.inputs['gpu']}: busy seats",
    )


KINDS: dict[str, Callable[..., None]] = {
    "knee": knee,
    "kv": kv,
    "predict": predict,
    "crossover kv-weights": crossover_kv_weights,
    "crossover prefill": crossover_prefill,
    "experts": experts,
    "intensity": intensity,
    "simulate batching": simulate_batching,
}


def draw(kind: str, sheet: Any, setup: Any, stem: Path, **extra: Any) -> None:
    KINDS[kind](sheet, setup, stem, **extra)


def sweep(table: Any, stem: Path) -> None:
    """A swept table: its first output against its first swept axis, a line per model, accelerator, dtype and
    value of any other swept axis."""
    names = table.column_names
    numeric = [n for n in names[3:] if n != "fits" and not table.schema.field(n).metadata]
    outputs = [n for n in names if table.schema.field(n).metadata]
    if not numeric or not outputs:
        raise DeriveError("a sweep figure needs a swept axis", "Sweep one, e.g. --batch 1:64")
    x_name, y_name = numeric[0], outputs[0]
    columns = table.to_pydict()
    series: dict[str, Any] = {}  # label -> (xs, ys), appended row by row
    for i in range(table.num_rows):
        label = ", ".join(
            [columns[c][i] for c in ("model", "gpu", "dtype")] + [f"{a}={columns[a][i]}" for a in numeric[1:]]
        )
        xs, ys = series.setdefault(label, ([], []))
        xs.append(float(columns[x_name][i]))
        ys.append(float(columns[y_name][i]))
    unit = table.schema.field(y_name).metadata[b"unit"].decode()
    figures.series(stem, series, x_name, f"{y_name} ({unit})", f"derive sweep: {y_name} against {x_name}")
