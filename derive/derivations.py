"""The worked derivations behind `derive params`, `derive kv` and `derive knee`.

Each function takes a model (and an accelerator and settings) and returns a
Sheet: the steps, the named results and the notes. Nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from derive.catalog import Gpu, Model, dtype_bytes
from derive.errors import DeriveError, FitError
from derive.evaluate import evaluate, inline
from derive.formula import LIBRARY, Library
from derive.sheet import Sheet, Work
from derive.solve import asymptote, solve
from derive.units import format_quantity
from formulas import notation as sym

# Widest tensor-parallel group the default search considers.
_MAX_TP = 1024


@dataclass(frozen=True)
class Setup:
    """What a command runs on: a model, maybe an accelerator, and the workload."""

    model: Model
    gpu: Gpu | None = None
    dtype: str = "bf16"
    kv_dtype: str | None = None
    context: int = 2048
    batch: int = 1
    tp: int | None = None
    defaults: tuple[str, ...] = field(default=())  # options the user left to their defaults

    @property
    def kv_format(self) -> str:
        if self.kv_dtype:
            return self.kv_dtype
        # Weight-only quantisation keeps the cache in 16 bits.
        return self.dtype if self.dtype in ("fp32", "fp16", "bf16", "fp8") else "bf16"

    def inputs(self) -> dict[str, object]:
        out: dict[str, object] = {"model": self.model.name, "dtype": self.dtype, "kv_dtype": self.kv_format,
                                  "context": self.context, "batch": self.batch}
        if self.gpu is not None:
            out["gpu"] = self.gpu.name
        if self.tp is not None:
            out["tp"] = self.tp
        return out


def _library(model: Model) -> Library:
    return LIBRARY.extended(model.formulas.all())


def _work(command: str, title: str, setup: Setup) -> Work:
    work = Work(Sheet(command, title, setup.inputs()), _library(setup.model))
    for shape, value in setup.model.formulas.shapes.items():
        work.given(shape, value, "config")
    return work


def _model_notes(work: Work, setup: Setup) -> None:
    cfg = setup.model.config
    if cfg.sliding_window and setup.context > cfg.sliding_window:
        work.note(
            f"{setup.model.name} uses a {cfg.sliding_window}-token sliding window; a rolling-buffer cache holds "
            f"at most that many tokens per layer, so the figures here (full context cached) are an upper bound"
        )
    if cfg.quantization and setup.dtype != "fp8" and "fp8" in cfg.quantization:
        work.note(f"the checkpoint ships {cfg.quantization} weights; pass --dtype fp8 to size it as shipped")


def params(setup: Setup) -> Sheet:
    model = setup.model
    work = _work("params", f"Parameters of {model.title} ({model.config.family})", setup)
    mf = model.formulas
    work.heading("Breakdown")
    for part in mf.parts:
        work.compute(part)
    work.heading("Totals")
    for total in mf.totals:
        work.compute(total)
    for name, s in (("total_params", sym.N), ("active_params", sym.N_act), ("embedding_params", sym.N_emb)):
        work.result(name, s, work.values[s], _defining_expr(mf, s))
    for part in mf.parts:
        work.result(part.name, part.defines, work.values[part.defines], part.expr)
    if model.published_total is not None:
        derived = work.values[sym.N]
        verdict = "equal" if derived == model.published_total else f"differs by {derived - model.published_total:,}"
        work.note(f"published total {model.published_total:,} parameters: {verdict} ({model.published_source})")
    if not model.config.tied:
        work.note("untied: the LM head is a separate V x d matrix")
    else:
        work.note("tied: the LM head reuses the input embedding, counted once")
    return work.sheet


def _defining_expr(mf, target: sym.Sym) -> sympy.Expr | None:  # type: ignore[no-untyped-def]
    for f in mf.all():
        if f.defines == target:
            return f.expr
    return None


def _kv_values(work: Work, setup: Setup, compute: bool = True) -> None:
    kv_format = setup.kv_format
    work.given(sym.b_kv, dtype_bytes(kv_format, "--kv-dtype"), kv_format)
    work.given(sym.S, setup.context, "--context" if "context" not in setup.defaults else "default")
    if compute:
        work.compute(setup.model.formulas.per_token[0])  # values cached per token: GQA or MLA


def kv(setup: Setup) -> Sheet:
    model = setup.model
    work = _work("kv", f"KV cache of {model.title} at {setup.context:,} tokens", setup)
    _kv_values(work, setup)
    work.given(sym.B, setup.batch)
    work.compute(LIBRARY.get("kv_bytes_per_token"), "kv_bytes_per_token")
    work.compute(LIBRARY.get("kv_bytes_per_sequence"), "kv_bytes_per_sequence")
    work.compute(LIBRARY.get("kv_bytes"), "kv_bytes")
    _model_notes(work, setup)
    if model.config.is_mla:
        work.note("MLA caches one latent vector and one rotary key per layer, shared by all heads")
    elif model.config.kv_heads < model.config.heads:
        work.note(f"GQA: {model.config.heads} query heads share {model.config.kv_heads} key/value heads")
    return work.sheet


def _aggregates(work: Work, setup: Setup) -> None:
    """The model's totals as givens: the knee needs N and N_mm, not their breakdown."""
    library = work.library
    for target in (sym.N, sym.N_mm):
        work.given(target, evaluate(target.symbol, dict(setup.model.formulas.shapes), library), "config (derive params)")


def default_tp(setup: Setup, weights: sympy.Expr, one_sequence: sympy.Expr, memory: sympy.Expr) -> int:
    tp = 1
    while tp * memory < weights + one_sequence:
        tp *= 2
        if tp > _MAX_TP:
            raise FitError(
                f"{setup.model.name} does not fit on {_MAX_TP} x {setup.gpu.name if setup.gpu else 'GPU'}",
                "Use a smaller --dtype or a larger accelerator",
            )
    return tp


def knee(setup: Setup) -> Sheet:
    model, gpu = setup.model, setup.gpu
    if gpu is None:
        raise DeriveError("knee needs an accelerator", "Pass --gpu NAME (see 'derive gpus')")
    work = _work("knee", f"Decode knee of {model.title} on {gpu.title}", setup)
    _aggregates(work, setup)
    work.given(sym.b_w, dtype_bytes(setup.dtype), setup.dtype)
    _kv_values(work, setup, compute=False)
    peak, peak_note = gpu.peak(setup.dtype)
    work.given(sym.BW, gpu.bandwidth, _figure_note(gpu, "bandwidth"))
    work.given(sym.P, peak, peak_note if "flops" not in gpu.overridden else "given with --flops")
    work.given(sym.M, gpu.memory, _figure_note(gpu, "memory"))
    work.given(sym.tau, 1, "no speculative decoding")
    work.heading("From the config")
    work.compute(model.formulas.per_token[0])
    work.compute(model.formulas.per_token[1])

    work.heading("Bytes and FLOPs per token")
    weights = work.compute(LIBRARY.get("weight_bytes"), "weight_bytes")
    work.compute(LIBRARY.get("kv_bytes_per_token"))
    one_sequence = work.compute(LIBRARY.get("kv_bytes_per_sequence"))
    work.compute(LIBRARY.get("weight_flops_per_token"))

    tp = setup.tp
    if tp is None:
        tp = default_tp(setup, weights, one_sequence, gpu.memory)
        work.sheet.inputs["tp"] = tp
        work.given(sym.n, tp, "chosen: the smallest power of two whose memory holds the weights and one sequence")
    else:
        work.given(sym.n, tp, "--tp")
    work.sheet.inputs["defaults"] = list(setup.defaults) + (["tp"] if setup.tp is None else [])

    work.heading("Step time against batch")
    memory_time, compute_time = LIBRARY.get("memory_time").expr, LIBRARY.get("compute_time").expr
    knee_solution = solve(memory_time, compute_time, sym.B, work.library)
    knee_value = _positive(evaluate(knee_solution.closed_form, work.values, work.library))
    slope_memory = sympy.diff(inline(memory_time, sym.B, work.library), sym.B.symbol)
    slope_compute = sympy.diff(inline(compute_time, sym.B, work.library), sym.B.symbol)
    limit_solution = solve(slope_memory, slope_compute, sym.S, work.library)
    limit_value = _positive(evaluate(limit_solution.closed_form, work.values, work.library))
    work.solved(knee_solution, sym.B_knee, knee_value,
                "" if knee_value is not None else "no knee: each extra sequence adds more KV reading than arithmetic",
                result="knee_batch")
    if limit_value is None:
        limit_note = "attention alone is compute-bound here (a/k above the ridge P/BW): a knee exists at any context"
    else:
        limit_note = f"a knee exists only below {format_quantity(limit_value, sym.S.unit)} of context"
    work.solved(limit_solution, sym.S_knee, limit_value, limit_note, result="knee_context_limit")

    work.heading("Memory ceiling")
    max_batch = work.compute(LIBRARY.get("max_batch_by_memory"), "max_batch_by_memory")
    if max_batch < 1:
        raise FitError(
            f"{model.name} in {setup.dtype} needs {format_quantity(weights, 'byte')} of weights plus "
            f"{format_quantity(one_sequence, 'byte')} per sequence at {setup.context:,} tokens, "
            f"more than the {format_quantity(tp * gpu.memory, 'byte')} of {tp} x {gpu.name}",
            f"Use --tp {default_tp(setup, weights, one_sequence, gpu.memory)} or more, a smaller --dtype, "
            f"or a shorter --context",
        )
    work.given(sym.B, max_batch, "at the largest batch memory holds", inline=True)
    for name in ("kv_bytes", "memory_time", "compute_time", "step_time"):
        work.compute(LIBRARY.get(name))
    at_max = work.compute(LIBRARY.get("throughput"))
    work.result("throughput_at_max_batch", sym.R_at_max, at_max, LIBRARY.get("throughput").expr)
    ceiling = asymptote(sym.R.symbol, sym.B, sym.R_max, work.library)
    ceiling_value = evaluate(ceiling.closed_form, work.values, work.library)
    work.solved(ceiling, sym.R_max, ceiling_value, result="throughput_ceiling")

    knee_first = knee_value is not None and knee_value <= max_batch
    first = "compute" if knee_first else "memory_capacity"
    work.result("first_limit", None, first)
    if knee_first:
        work.note(f"a growing batch meets the compute roof first: the knee ({_count(knee_value)}) comes before "
                  f"memory fills ({_count(max_batch)})")
    else:
        work.note(f"a growing batch fills memory first ({_count(max_batch)}) while still bandwidth-bound"
                  + ("" if knee_value is None else f"; the knee would be at {_count(knee_value)}"))
    work.note("roofline floor: peak bandwidth and FLOP/s at 100% efficiency, ideal tensor parallelism, "
              "no communication or kernel overheads")
    if tp > model.config.kv_heads and not model.config.is_mla:
        work.note(f"tp={tp} exceeds the {model.config.kv_heads} KV heads: real servers replicate KV heads, "
                  f"so the cache per GPU is larger than assumed")
    _model_notes(work, setup)
    return work.sheet


def _figure_note(gpu: Gpu, figure: str) -> str:
    return f"--{figure}" if figure in gpu.overridden else "datasheet"


def _positive(value: sympy.Expr) -> sympy.Expr | None:
    return value if value.is_finite and value > 0 else None


def _count(value: sympy.Expr) -> str:
    return format_quantity(value, "sequence")
