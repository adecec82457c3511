"""Figures for answer sheets: matplotlib (Agg), SVG and PNG with deterministic bytes.

Each function takes arrays already computed from the library (lambdified
expressions) and only draws them; axis labels carry units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.hashsalt": "derive",  # fixed ids: the same figure gives the same SVG bytes
            "figure.figsize": (6.4, 4.0),
            "figure.dpi": 100,
            "font.size": 10,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


def save(fig: Any, stem: Path) -> None:
    """Write stem.svg and stem.png without timestamps or version strings."""
    stem.parent.mkdir(exist_ok=True)  # a figures folder inside a checked output folder, never its parents
    fig.tight_layout()
    svg = stem.with_suffix(".svg")
    fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    svg.write_text(_numbered_ids(svg.read_text()))
    fig.savefig(stem.with_suffix(".png"), format="png", dpi=150, metadata={"Software": None})
    pyplot().close(fig)


def _numbered_ids(svg: str) -> str:
    """Clip-path ids in order of appearance: matplotlib hashes the clip box's floats, whose last bits differ
    between machines (BLAS kernels), so the same figure gave other ids elsewhere."""
    import re

    ids = list(dict.fromkeys(re.findall(r'id="(p[0-9a-f]{10})"', svg)))
    for i, old in enumerate(ids, 1):
        svg = svg.replace(old, f"clip{i}")
    return svg


def roofline(stem: Path, peak: float, bandwidth: float, points: Sequence[tuple[str, float]], title: str) -> None:
    """Attainable FLOP/s against intensity, with each operation placed on the roof."""
    import numpy as np

    plt = pyplot()
    fig, ax = plt.subplots()
    ridge = peak / bandwidth
    lo = min([p[1] for p in points] + [ridge]) / 4
    hi = max([p[1] for p in points] + [ridge]) * 4
    x = np.geomspace(lo, hi, 200)
    ax.loglog(x, np.minimum(peak, x * bandwidth) / 1e12, color="black", lw=1.5, label="roofline")
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    # The ridge label stands low beside its line, clear of the points on the roof.
    ax.annotate(
        f"ridge {ridge:.0f} FLOP/B",
        (ridge, lo * bandwidth / 1e12),
        textcoords="offset points",
        xytext=(4, 4),
        fontsize=8,
        color="grey",
        rotation=90,
    )
    for i, (label, intensity) in enumerate(points):
        attained = min(peak, intensity * bandwidth) / 1e12
        ax.plot([intensity], [attained], "o", ms=6)
        ax.annotate(
            label, (intensity, attained), textcoords="offset points", xytext=(6, -12 - 10 * (i % 2)), fontsize=8
        )
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable (TFLOP/s)")
    ax.set_title(title, fontsize=10)
    save(fig, stem)


def throughput_against_batch(
    stem: Path,
    batches: Any,
    throughput: Any,
    knee: float | None,
    max_batch: float,
    ceiling: float,
    title: str,
    half: float | None = None,
) -> None:
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot(batches, throughput, color="C0", lw=1.5, label="roofline throughput")
    ax.axhline(ceiling, color="C3", ls="--", lw=1, label=f"ceiling {ceiling:,.0f} token/s")
    if half is not None:
        ax.plot([half], [ceiling / 2], "o", color="C4", label=f"half the ceiling at {half:,.0f} sequences")
    ax.axvline(max_batch, color="C2", ls="-.", lw=1, label=f"memory holds {max_batch:,.0f} sequences")
    if knee is not None:
        ax.axvline(knee, color="C1", ls=":", lw=1, label=f"knee {knee:,.0f} sequences")
    ax.set_xlabel("batch (sequences)")
    ax.set_ylabel("decode throughput (token/s)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    save(fig, stem)


def bytes_against_context(
    stem: Path, contexts: Any, kv_bytes: Any, weight_bytes: float, crossover: float | None, title: str
) -> None:
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot(contexts, kv_bytes / 1e9, color="C0", lw=1.5, label="KV bytes read per step")
    ax.axhline(weight_bytes / 1e9, color="C3", ls="--", lw=1, label="weight bytes read per step")
    if crossover is not None:
        ax.axvline(crossover, color="grey", ls=":", lw=1, label=f"crossover {crossover:,.0f} tokens")
    ax.set_xlabel("context (tokens per sequence)")
    ax.set_ylabel("bytes per decode step (GB)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left" if crossover is not None else "lower right")
    save(fig, stem)


def experts_against_batch(stem: Path, batches: Any, touched: Any, experts: int, top_k: int, title: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot(batches, touched, color="C0", lw=1.5, label="expected experts touched")
    ax.axhline(experts, color="C3", ls="--", lw=1, label=f"all {experts} experts")
    ax.axhline(top_k, color="C2", ls=":", lw=1, label=f"top-{top_k} (batch 1)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tokens in the decode step (batch)")
    ax.set_ylabel("routed experts touched per layer")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="center right")
    save(fig, stem)


def lines(
    stem: Path,
    x: Any,
    series: Sequence[tuple[str, Any]],
    xlabel: str,
    ylabel: str,
    title: str,
    vertical: Sequence[tuple[float, str]] = (),
    horizontal: Sequence[tuple[float, str]] = (),
    log: bool = False,
) -> None:
    """Curves over one axis, with marked values (a chosen input, a ridge) as dotted lines."""
    plt = pyplot()
    fig, ax = plt.subplots()
    for i, (label, y) in enumerate(series):
        ax.plot(x, y, color=f"C{i}", lw=1.5, label=label)
    for value, label in vertical:
        ax.axvline(value, color="grey", ls=":", lw=1, label=label)
    for value, label in horizontal:
        ax.axhline(value, color="C3", ls="--", lw=1, label=label)
    if log:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    save(fig, stem)


def series(
    stem: Path, curves: Mapping[str, tuple[Sequence[float], Sequence[float]]], xlabel: str, ylabel: str, title: str
) -> None:
    """One line per labelled (x, y) series: a sweep's output against its axis."""
    plt = pyplot()
    fig, ax = plt.subplots()
    for i, (label, (xs, ys)) in enumerate(curves.items()):
        ax.plot(xs, ys, color=f"C{i % 10}", lw=1.5, marker="." if len(xs) < 30 else None, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if len(curves) <= 12:
        ax.legend(fontsize=8)
    save(fig, stem)


def bars(
    stem: Path,
    labels: Sequence[str],
    values: Sequence[float] | Mapping[str, Sequence[float]],
    unit_label: str,
    title: str,
    log: bool = False,
) -> None:
    """A horizontal bar chart (a time or byte budget); with a mapping, one bar per series in each group."""
    plt = pyplot()
    fig, ax = plt.subplots()
    grouped = values if isinstance(values, Mapping) else {"": values}
    height = 0.8 / len(grouped)
    for i, (name, series_values) in enumerate(grouped.items()):
        positions = [p - 0.4 + height * (i + 0.5) for p in range(len(labels))]
        ax.barh(positions, list(series_values), height=height, color=f"C{i % 10}", label=name or None)
    ax.set_yticks(list(range(len(labels))), labels=list(labels), fontsize=8)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
        # Bars start at the decade below the smallest, so their lengths read as orders of magnitude.
        shown = [v for series_values in grouped.values() for v in series_values if v > 0]
        if shown:
            ax.set_xlim(left=10 ** math.floor(math.log10(min(shown))))
    if any(v < 0 for series_values in grouped.values() for v in series_values):
        ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlabel(unit_label)
    ax.set_title(title, fontsize=10)
    if len(grouped) > 1:
        ax.legend(fontsize=8)
    save(fig, stem)


def seat_timeline(stem: Path, timelines: dict[str, Any], seats: int, title: str, horizon: float | None = None) -> None:
    """Busy seats against time, one panel per policy (a step function), over the first `horizon` seconds."""
    plt = pyplot()
    fig, axes = plt.subplots(len(timelines), 1, sharex=True, figsize=(6.4, 1.6 * len(timelines) + 0.8))
    end = max((points[-1][0] for points in timelines.values() if points), default=1.0)
    horizon = horizon or end / 4
    for i, (ax, (policy, points)) in enumerate(zip(axes, timelines.items(), strict=False)):
        shown = [(t, b) for t, b in points if t <= horizon]
        if shown:
            times, busy = zip(*shown, strict=False)
            ax.fill_between(times, busy, step="post", color=f"C{i}", alpha=0.6, lw=0)
        ax.axhline(seats, color="grey", ls=":", lw=1)
        ax.set_ylim(0, seats * 1.1)
        ax.set_ylabel(f"{policy}\nbusy seats", fontsize=8)
    axes[-1].set_xlabel("time (s)")
    axes[0].set_title(title, fontsize=10)
    save(fig, stem)


def measured_roofline(
    stem: Path, peak: float, bandwidth: float, points: Sequence[tuple[str, float, float]], title: str
) -> None:
    """The roofline of measured ceilings, with each phase at (intensity, achieved FLOP/s)."""
    import numpy as np

    plt = pyplot()
    fig, ax = plt.subplots()
    ridge = peak / bandwidth
    intensities = [p[1] for p in points] + [ridge]
    x = np.geomspace(min(intensities) / 4, max(intensities) * 4, 200)
    ax.loglog(x, np.minimum(peak, x * bandwidth) / 1e9, color="black", lw=1.5, label="measured roofline")
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    for i, (label, intensity, achieved) in enumerate(points):
        ax.plot([intensity], [achieved / 1e9], "o", ms=6, color=f"C{i}", label=label)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s achieved (GFLOP/s)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    save(fig, stem)
