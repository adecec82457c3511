"""`derive measure`: this machine's two ceilings, and a GPT-2-shaped forward pass held against them.

The ceilings are a large memory copy (bytes read plus bytes written, per second)
and a large float32 matrix multiply (FLOP/s). The phases run a real GPT-2-small
forward pass in numpy with random weights of the catalog's shapes (no downloads):
a batch-1 and a batch-8 decode step against a KV cache, and a prefill. Each
phase's bytes and FLOPs come from the formula library, not from the code that
runs it, and the roofline built on the measured ceilings predicts its time.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import sympy

from derive.architecture.model import Architecture
from derive.catalog import Model, load_model
from derive.core.evaluation import evaluate
from formulas import notation as sym
from formulas import prefill as pf


@dataclass(frozen=True)
class Plan:
    """Sizes and repeats: the full run, or a --quick one for tests."""

    copy_bytes: int = 512 * 2**20
    matmul_n: int = 2048
    repeats: int = 5
    layers: int | None = None  # None: the model's own
    vocab: int | None = None
    decode_context: int = 128
    batches: tuple[int, ...] = (1, 8)
    prompt: int = 960

    @classmethod
    def quick(cls) -> Plan:
        return cls(copy_bytes=16 * 2**20, matmul_n=384, repeats=2, layers=2, vocab=2048, prompt=64)


@dataclass
class Ceiling:
    name: str
    value: float
    unit: str
    how: str


@dataclass
class Phase:
    name: str
    batch: int
    tokens: int  # context (decode) or prompt (prefill) per sequence
    bytes: float
    flops: float
    seconds: float
    predicted_seconds: float
    achieved_bandwidth: float = 0.0
    achieved_flops: float = 0.0
    bandwidth_fraction: float = 0.0
    flops_fraction: float = 0.0
    intensity: float = 0.0
    bound: str = ""


@dataclass
class Measurement:
    machine: dict[str, Any]
    plan: dict[str, Any]
    ceilings: list[Ceiling] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def recorded(self) -> dict[str, Any]:
        """What a result file keeps: the machine, the plan, the ceilings and each phase's seconds, the measurements
        alone; bytes, FLOPs and fractions are derived again on load (recompute), so they never go stale."""
        data = self.as_dict()
        data["phases"] = [{key: p[key] for key in MEASURED} for p in data["phases"]]
        return data


MEASURED = ("name", "batch", "tokens", "seconds")  # what a phase records; the rest is derived from the library


def load(path: str) -> dict[str, Any]:
    """A 'derive measure --out' result, checked for what the simulation reads: one line of error otherwise."""
    import json
    import math
    from pathlib import Path

    from derive.core.errors import DeriveError

    def bad(why: str) -> DeriveError:
        return DeriveError(
            f"'{path}' is not a 'derive measure --out' result ({why})", "Write one with: derive measure --out FILE.json"
        )

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        raise bad("not readable JSON") from None
    if not isinstance(data, dict):
        raise bad("not a JSON object")
    machine_, plan, phases = data.get("machine"), data.get("plan"), data.get("phases")
    if not isinstance(machine_, dict) or not isinstance(plan, dict) or not isinstance(phases, list):
        raise bad("it needs 'machine', 'plan' and 'phases'")

    def positive(value: object) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0

    for phase in phases:
        if not (isinstance(phase, dict) and isinstance(phase.get("name"), str)):
            raise bad("a phase without a name")
        if not all(positive(phase.get(key)) for key in ("batch", "tokens", "seconds")):
            raise bad(f"phase '{phase['name']}' needs a positive batch, tokens and seconds")
    decodes = {p["batch"] for p in phases if p["name"].startswith("decode")}
    if len(decodes) < 2 or not any(p["name"].startswith("prefill") for p in phases):
        raise bad("it needs decode phases at two batches and a prefill phase")
    machine_.setdefault("cpu", "an unnamed CPU")
    machine_.setdefault("cores", "?")
    plan.setdefault("model", "an unnamed model")
    return data


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "BLAS default",
    }


def _median_seconds(work: Callable[[], object], repeats: int) -> float:
    work()  # warm caches and the allocator
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def copy_ceiling(plan: Plan) -> Ceiling:
    src = np.ones(plan.copy_bytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    seconds = _median_seconds(lambda: np.copyto(dst, src), plan.repeats)
    return Ceiling(
        "copy bandwidth",
        2 * src.nbytes / seconds,
        "byte/second",
        f"np.copyto of {src.nbytes / 2**20:.0f} MiB float32, read + write counted, median of {plan.repeats}",
    )


def matmul_ceiling(plan: Plan) -> Ceiling:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((plan.matmul_n, plan.matmul_n), dtype=np.float32)
    b = rng.standard_normal((plan.matmul_n, plan.matmul_n), dtype=np.float32)
    seconds = _median_seconds(lambda: a @ b, plan.repeats)
    return Ceiling(
        "float32 matmul",
        2 * plan.matmul_n**3 / seconds,
        "FLOP/second",
        f"{plan.matmul_n}x{plan.matmul_n} @ {plan.matmul_n}x{plan.matmul_n} float32, median of {plan.repeats}",
    )


class Gpt2:
    """GPT-2's forward pass in numpy: LayerNorm, fused QKV, causal attention with a KV cache, GELU MLP, tied head."""

    def __init__(self, cfg: Architecture, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        d, f, self.heads = cfg.hidden, cfg.intermediate, cfg.heads
        self.head_dim = cfg.head_dim

        def w(*shape: int) -> np.ndarray:
            return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)

        self.wte, self.wpe = w(cfg.vocab, d), w(cfg.positions, d)
        self.layers: list[dict[str, Any]] = [
            dict(
                ln1=(np.ones(d, np.float32), np.zeros(d, np.float32)),
                qkv=w(d, 3 * d),
                qkv_b=w(3 * d),
                proj=w(d, d),
                proj_b=w(d),
                ln2=(np.ones(d, np.float32), np.zeros(d, np.float32)),
                fc=w(d, f),
                fc_b=w(f),
                out=w(f, d),
                out_b=w(d),
            )
            for _ in range(cfg.layers)
        ]
        self.ln_f = (np.ones(d, np.float32), np.zeros(d, np.float32))

    @staticmethod
    def _norm(x: np.ndarray, gain_bias: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * gain_bias[0] + gain_bias[1]

    @staticmethod
    def _gelu(x: np.ndarray) -> np.ndarray:
        return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))

    def empty_cache(self, batch: int, context: int) -> list[list[np.ndarray]]:
        rng = np.random.default_rng(1)
        shape = (batch, self.heads, context, self.head_dim)
        return [
            [rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)]
            for _ in self.layers
        ]

    def forward(self, tokens: np.ndarray, start: int, cache: list[list[np.ndarray]] | None) -> np.ndarray:
        """Logits of each sequence's last token (the one a server samples from) for tokens (batch, T) at positions
        start..start+T-1, attending to `cache` first."""
        b, t = tokens.shape
        h, dh = self.heads, self.head_dim
        # Rows are (batch x T) tokens: 2-D matmuls take BLAS's fast path (3-D ones against a
        # transposed matrix do not).
        x = (self.wte[tokens] + self.wpe[start : start + t]).reshape(b * t, -1)
        for i, layer in enumerate(self.layers):
            qkv = self._norm(x, layer["ln1"]) @ layer["qkv"] + layer["qkv_b"]
            q, k, v = (part.reshape(b, t, h, dh).transpose(0, 2, 1, 3) for part in np.split(qkv, 3, axis=-1))
            if cache is not None:
                k = np.concatenate([cache[i][0], k], axis=2)
                v = np.concatenate([cache[i][1], v], axis=2)
            scores = q @ k.transpose(0, 1, 3, 2) * (1 / math.sqrt(dh))  # a Python float keeps float32
            if t > 1:  # causal mask within the new tokens
                past = k.shape[2] - t
                mask = np.triu(np.ones((t, t), dtype=bool), 1)
                scores[..., past:][..., mask] = -np.inf
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attended = (scores / scores.sum(-1, keepdims=True)) @ v
            x = x + attended.transpose(0, 2, 1, 3).reshape(b * t, h * dh) @ layer["proj"] + layer["proj_b"]
            hidden = self._gelu(self._norm(x, layer["ln2"]) @ layer["fc"] + layer["fc_b"])
            x = x + hidden @ layer["out"] + layer["out_b"]
        last = x.reshape(b, t, -1)[:, -1]  # a prompt pass scores its last token alone, as servers do
        return self._norm(last, self.ln_f) @ self.wte.T  # the tied head


def _library_costs(model: Model, batch: int, tokens: int, phase: str) -> tuple[sympy.Expr, sympy.Expr]:
    """Bytes read and FLOPs of one decode step or one prefill pass, from the formula library (fp32)."""
    from derive.derivations.common import model_library

    library = model_library(model)
    shapes = dict(model.formulas.shapes)
    values: dict[Any, sympy.Expr] = {**shapes}
    for target in (sym.N, sym.N_mm):
        values[target] = evaluate(target.symbol, dict(shapes), library)
    values.update(
        {
            sym.b_w: sympy.Integer(4),
            sym.b_kv: sympy.Integer(4),
            sym.B: sympy.Integer(batch),
            sym.tau: sympy.Integer(1),
            sym.n: sympy.Integer(1),
            pf.eta_f: sympy.Integer(1),
            pf.eta_bw: sympy.Integer(1),
        }
    )
    if phase == "decode":
        values[sym.S] = sympy.Integer(tokens)
        moved = evaluate(sym.W.symbol + sym.kv_total.symbol, values, library)
        flops = evaluate(sym.B.symbol * sym.tau.symbol * (sym.F.symbol + sym.S.symbol * sym.a.symbol), values, library)
    else:
        # The prompt pass's times at a unit bandwidth and a unit peak are its bytes and its FLOPs (the formulas'
        # own terms, not a numerator over a common denominator, which doubles the causal half).
        values.update({pf.S_p: sympy.Integer(tokens), sym.BW: sympy.Integer(1), sym.P: sympy.Integer(1)})
        moved = evaluate(library.get("prefill_memory_time").expr, values, library)
        flops = evaluate(library.get("prefill_compute_time").expr, values, library)
    return moved, flops


def measured_model(plan: dict[str, Any]) -> Model:
    """The GPT-2 the phases run: the catalog's, or with the plan's fewer layers and vocabulary (--quick)."""
    base = load_model("gpt2")
    cfg = base.config
    sizes = (plan.get("layers") or cfg.layers, plan.get("vocab") or cfg.vocab)
    if sizes != (cfg.layers, cfg.vocab):
        cfg = cfg.with_layers(*sizes)
    model = replace(
        base, config=cfg, title=base.title + (" (quick: fewer layers and vocabulary)" if cfg != base.config else "")
    )
    model.__dict__.pop("formulas", None)  # the shapes changed: rebuild the count formulas
    return model


def phase(model: Model, name: str, batch: int, tokens: int, seconds: float, copy: float, matmul: float) -> Phase:
    """One timed phase against the two ceilings: its bytes and FLOPs from the library, what it achieved."""
    moved, flops = _library_costs(model, batch, tokens, "prefill" if name.startswith("prefill") else "decode")
    moved_f, flops_f = float(moved), float(flops)
    # The roofline on this machine's own ceilings; reads are held to the copy's traffic rate.
    predicted = max(moved_f / copy, flops_f / matmul)
    out = Phase(name, batch, tokens, moved_f, flops_f, seconds, predicted)
    out.achieved_bandwidth = moved_f / seconds
    out.achieved_flops = flops_f / seconds
    out.bandwidth_fraction = out.achieved_bandwidth / copy
    out.flops_fraction = out.achieved_flops / matmul
    out.intensity = flops_f / moved_f
    out.bound = "memory" if out.intensity < matmul / copy else "compute"
    return out


def recompute(result: dict[str, Any]) -> dict[str, Any]:
    """A recorded result with its bytes, FLOPs and fractions derived again from today's library: only the
    machine, the plan, the ceilings and the seconds are measurements; the rest must never go stale."""
    model = measured_model(result["plan"])
    copy, matmul = (c["value"] for c in result["ceilings"])
    phases = [
        asdict(phase(model, p["name"], p["batch"], p["tokens"], p["seconds"], copy, matmul)) for p in result["phases"]
    ]
    return {**result, "phases": phases}


def fraction_text(fraction: float, ceiling: str) -> str:
    """'at 69% of the copy ceiling', or, past 100%, what that says about the measurement instead."""
    if fraction <= 1:
        return f"at {fraction:.0%} of the {ceiling} ceiling"
    return (
        f"{fraction:.0%} of the measured {ceiling} ceiling, which cannot be: the ceiling's run was too small or "
        "too noisy to be the machine's (a --quick run); measure without --quick"
    )


def run(plan: Plan, progress: Callable[[str], None] = lambda _: None) -> Measurement:
    model = measured_model(asdict(plan))
    cfg = model.config
    result = Measurement(machine(), {**asdict(plan), "model": model.title, "layers": cfg.layers, "vocab": cfg.vocab})
    progress("measuring the copy ceiling")
    copy = copy_ceiling(plan)
    progress(f"  {copy.value / 1e9:.1f} GB/s; measuring the matmul ceiling")
    matmul = matmul_ceiling(plan)
    progress(f"  {matmul.value / 1e9:.1f} GFLOP/s; building GPT-2 with random weights")
    result.ceilings = [copy, matmul]
    net = Gpt2(cfg)
    runs: list[tuple[str, int, int, Callable[[], object]]] = []
    for batch in plan.batches:
        cache = net.empty_cache(batch, plan.decode_context)
        token = np.zeros((batch, 1), dtype=np.int64)
        runs.append(
            (
                f"decode, batch {batch}",
                batch,
                plan.decode_context,
                partial(net.forward, token, plan.decode_context, cache),
            )
        )
    prompt = np.zeros((1, plan.prompt), dtype=np.int64)
    runs.append((f"prefill, {plan.prompt} tokens", 1, plan.prompt, lambda: net.forward(prompt, 0, None)))
    for name, batch, tokens, work in runs:
        progress(f"running {name}")
        seconds = _median_seconds(work, plan.repeats)
        result.phases.append(phase(model, name, batch, tokens, seconds, copy.value, matmul.value))
    return result


def report(result: Measurement) -> str:
    """The measurement as a terminal table."""
    from derive.core.units import format_quantity

    m = result.machine
    lines = [
        f"derive measure: {m['cpu']} ({m['cores']} cores, {m['system']}), numpy {m['numpy']}, "
        f"BLAS threads: {m['blas_threads']}",
        "",
        "Ceilings",
    ]
    for c in result.ceilings:
        lines.append(f"  {c.name:<16} {format_quantity(c.value, c.unit):>14}   {c.how}")
    ridge = result.ceilings[1].value / result.ceilings[0].value
    lines += [f"  ridge            {ridge:>10.1f} FLOP/B", "", f"Phases ({result.plan['model']}, float32)"]
    lines.append(
        f"  {'phase':<22} {'bytes':>10} {'FLOPs':>12} {'FLOP/B':>8} {'time':>10} {'roofline':>10} "
        f"{'of copy':>8} {'of matmul':>9}  bound"
    )
    for p in result.phases:
        lines.append(
            f"  {p.name:<22} {format_quantity(p.bytes, 'byte'):>10} {format_quantity(p.flops, 'FLOP'):>12} "
            f"{p.intensity:>8.2f} {format_quantity(p.seconds, 'second'):>10} "
            f"{format_quantity(p.predicted_seconds, 'second'):>10} {p.bandwidth_fraction:>8.0%} "
            f"{p.flops_fraction:>9.0%}  {p.bound}"
        )
    lines += [
        "",
        "Bytes and FLOPs come from the formula library (weights, KV cache and attention at each phase's "
        "context), the roofline time from the two measured ceilings.",
    ]
    for p in result.phases:
        side = "left" if p.bound == "memory" else "right"
        fraction = p.bandwidth_fraction if p.bound == "memory" else p.flops_fraction
        ceiling = "copy" if p.bound == "memory" else "matmul"
        lines.append(
            f"  {p.name}: {p.intensity:.3g} FLOP/B, {side} of the ridge at {ridge:.3g}: {p.bound}-bound, "
            + fraction_text(fraction, ceiling)
        )
    return "\n".join(lines) + "\n"


def draw(result: Measurement, stem: Any) -> None:
    """This machine's roofline with each phase at its intensity and its achieved FLOP/s."""
    from derive import figures

    copy, matmul = result.ceilings
    figures.measured_roofline(
        stem,
        matmul.value,
        copy.value,
        [(p.name, p.intensity, p.achieved_flops) for p in result.phases],
        f"{result.machine['cpu']}: measured ceilings and phases",
    )
