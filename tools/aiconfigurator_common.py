"""Pieces the tools/aiconfigurator_*.py scripts share (imported as a plain module: they run from tools/).

- ``database_view``, ``grid_versions``: aiconfigurator's TensorRT-LLM SILICON database for a system, at the
  version each profiled grid ran.
- ``record_op_rows``: the main() of a tool that records one op's rows for every profiled system.
- ``quiet``: silence aiconfigurator's logging and warnings.
- ``sig``: round to significant digits, as the recorded JSON files hold numbers.
- ``fit_alpha_eta``: relative least squares of derive's collective form ``alpha + bytes/(eta*BW)``.
- ``write_json``: the recorded result as sorted, indented JSON with chosen lists one record a line.
- ``BF16_QUANT``, ``target_fields``, ``agg_experiment``: the explicit bf16 quant fields and the
  ``cli_exp`` experiment dict of aiconfigurator's aggregated search.

Imports only the standard library (aiconfigurator itself stays in the tools that need it).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import warnings
from collections.abc import Callable
from typing import Any

# Unquantized: bf16 GEMM/MoE weights+activations, bf16 KV cache, bf16 FMHA, half-precision all-reduce.
BF16_QUANT = {
    "gemm_quant_mode": "bfloat16",
    "moe_quant_mode": "bfloat16",
    "kvcache_quant_mode": "bfloat16",
    "fmha_quant_mode": "bfloat16",
    "comm_quant_mode": "half",
}


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks", "data")
GRID = os.path.join(DATA, "aiconfigurator-0.12.json")


def grid_versions() -> dict[str, str]:
    """System -> the TensorRT-LLM database version the profiled grids ran on it."""
    with open(GRID) as f:
        versions: dict[str, str] = json.load(f)["database_versions"]
    return versions


def database_view(system: str, version: str):  # type: ignore[no-untyped-def]
    """aiconfigurator's TensorRT-LLM SILICON database for `system` at `version` (imported here, not at the top: only
    the tools that call this need aiconfigurator)."""
    from aiconfigurator.sdk.perf_database import get_database_view

    return get_database_view(
        system, "trtllm", version, allow_missing_data=False, database_mode="SILICON", transfer_policy=None
    )


def record_op_rows(
    doc: str,
    out: str,
    system_rows: Callable[[str, str], list[dict]],
    fields: dict[str, Any],
    skip_missing: bool = False,
) -> None:
    """Parse ``--out`` (default `out`), query `system_rows(system, version)` for every system at the version its
    profiled grid ran (a system whose database lacks the op is skipped and said, where `skip_missing`), and write the
    record: `fields` (source, meaning, generated_by, ...) with aiconfigurator's version, the database versions and
    the points."""
    import importlib.metadata

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", default=out)
    args = parser.parse_args()
    quiet()
    versions = grid_versions()
    points: list[dict] = []
    for system, version in sorted(versions.items()):
        try:
            points += system_rows(system, version)
        except Exception as error:
            if not skip_missing:
                raise
            print(f"skipped {system} {version}: {str(error).splitlines()[0]}")
    record = {
        **fields,
        "aiconfigurator_version": importlib.metadata.version("aiconfigurator"),
        "database_versions": versions,
        "points": points,
    }
    write_json(record, args.out)
    print(f"wrote {args.out}: {len(points)} rows")


def quiet() -> None:
    """Silence aiconfigurator: it logs fallback-row notices and result tables, and warns at load time."""
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")


def sig(x: float, digits: int = 6) -> float:
    """``x`` as a float rounded to ``digits`` significant digits."""
    return float(f"{float(x):.{digits}g}")


def fit_alpha_eta(
    xs: list[float], ts: list[float], bw: float, *, eta_max_one: bool = False, flat: bool = False
) -> dict:
    """Relative least squares of t = alpha + b*x with alpha >= 0, eta = 1/(b*bw).

    Minimises sum(((alpha + b*x) - t) / t)^2, exactly for two parameters: the best of the admissible
    candidates, the interior optimum and the edges below.

    - ``eta_max_one=False`` (default): b > 0, eta uncapped; candidates the interior optimum and the
      alpha = 0 edge (where sum(w*x*t) > 0).
    - ``eta_max_one=True``: b >= 1/bw (eta in (0, 1]); candidates the interior optimum, the alpha = 0
      edge with b raised to 1/bw if below, and the eta = 1 edge; the result adds ``eta_at_bound``.
    - ``flat=True``: also the flat line (alpha = weighted mean of t, eta = 1e18: latency independent of x).

    Raises ValueError where no candidate is admissible.
    """
    w = [1.0 / (t * t) for t in ts]
    sw = sum(w)
    swx = sum(wi * x for wi, x in zip(w, xs, strict=True))
    swxx = sum(wi * x * x for wi, x in zip(w, xs, strict=True))
    swt = sum(wi * t for wi, t in zip(w, ts, strict=True))
    swxt = sum(wi * x * t for wi, x, t in zip(w, xs, ts, strict=True))
    bmin = 1.0 / bw

    def obj(a, b):
        return sum(((a + b * x - t) / t) ** 2 for x, t in zip(xs, ts, strict=True))

    cands = []
    det = sw * swxx - swx * swx
    if det > 0:
        a = (swxx * swt - swx * swxt) / det
        b = (sw * swxt - swx * swt) / det
        if a >= 0 and (b >= bmin if eta_max_one else b > 0):
            cands.append((a, b))
    if eta_max_one:
        if swxx > 0:  # edge alpha = 0
            cands.append((0.0, max(bmin, swxt / swxx)))
        cands.append((max(0.0, (swt - bmin * swx) / sw), bmin))  # edge eta = 1
    elif swxx > 0 and swxt > 0:  # edge alpha = 0
        cands.append((0.0, swxt / swxx))
    if flat:
        cands.append((swt / sw, 1e-18 / bw))  # flat candidate (eta = 1e18: latency independent of bytes)
    if not cands:
        raise ValueError("no admissible fit (alpha >= 0, eta > 0)")
    a, b = min(cands, key=lambda ab: obj(*ab))
    rel = [abs(a + b * x - t) / t for x, t in zip(xs, ts, strict=True)]
    out = {
        "alpha_s": sig(a),
        "eta": sig(1.0 / (b * bw)),
        "median_rel_error": sig(statistics.median(rel), 4),
        "max_rel_error": sig(max(rel), 4),
        "n_points": len(xs),
    }
    if eta_max_one:
        out["eta_at_bound"] = b <= bmin * (1 + 1e-12)
    out["alpha_at_bound"] = a == 0.0
    return out


def write_json(out: dict, path: str, row_keys: tuple[str, ...] = ("points",)) -> None:
    """Write ``out`` to ``path`` as sorted JSON, indent 1, each list under ``row_keys`` one record a line.

    One line a record keeps the committed files short and their diffs readable; the text is checked to
    load back equal to ``out``. The folder is created if missing.
    """
    parts = []
    for key in sorted(out):
        if key in row_keys:
            val = "[\n" + ",\n".join("  " + json.dumps(r, sort_keys=True) for r in out[key]) + "\n ]"
        else:
            val = json.dumps(out[key], sort_keys=True, indent=1).replace("\n", "\n ")
        parts.append(f" {json.dumps(key)}: {val}")
    text = "{\n" + ",\n".join(parts) + "\n}\n"
    assert json.loads(text) == json.loads(json.dumps(out))  # valid JSON, same content
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def target_fields(database_mode: str, total_gpus: int, isl: int, osl: int, ttft, tpot) -> dict:
    """The ``cli_exp`` experiment fields after the model / system / backend ones: database, GPUs, lengths, SLA."""
    return {
        "database_mode": database_mode,
        "total_gpus": total_gpus,
        "isl": isl,
        "osl": osl,
        "ttft": ttft,
        "tpot": tpot,
    }


def agg_experiment(
    model_path: str,
    system: str,
    backend: str,
    database_mode: str,
    total_gpus: int,
    isl: int,
    osl: int,
    ttft,
    tpot,
    quant: dict,
) -> dict:
    """aiconfigurator's ``cli_exp`` experiment for one aggregated search (``serving_mode`` 'agg').

    ``quant`` holds the explicit ``*_quant_mode`` fields (empty: aiconfigurator infers them from the
    checkpoint). ttft / tpot are passed through as given.
    """
    return {
        "serving_mode": "agg",
        "model_path": model_path,
        "system_name": system,
        "backend_name": backend,
        **target_fields(database_mode, total_gpus, isl, osl, ttft, tpot),
        **quant,
    }
