"""The worked derivations behind `derive params`, `derive kv` and `derive knee`.

Each function takes a model (and an accelerator and settings) and returns a
Sheet: the steps, the named results and the notes. Nothing here prints.
"""

from __future__ import annotations

import sympy

from derive.architecture.build import kind_name
from derive.catalog import Gpu
from derive.core.errors import DeriveError
from derive.core.evaluation import depends_on, evaluate, inline
from derive.core.sheet import Sheet, Work
from derive.core.solving import asymptote, saturated
from derive.core.symbols import Sym, by_key
from derive.core.units import format_quantity
from derive.derivations.common import (
    Setup,
    aggregates,
    fits_beside_weights,
    kv_values,
    model_notes,
    short_form,
    start,
    weight_format,
)
from derive.derivations.layout_step import on_layout, spread, step
from formulas import notation as sym


def params(setup: Setup, check: bool = False) -> Sheet:
    model = setup.model
    work = start("params", f"Parameters of {model.title} ({model.config.family})", setup)
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
    for note in model.config.notes:  # what the reading assumed or left out
        work.note(note)
    if check:
        transformers_check(work, setup)
    return work.sheet


def transformers_check(work: Work, setup: Setup) -> None:
    """The reading held against transformers' own modules (the optional extra): layer by layer, then the rest."""
    from derive import transformers_check as hf
    from derive.architecture.build import layer_params

    arch = setup.model.config
    found = hf.build(setup.model.raw, arch.family if arch.family != setup.model.raw.get("model_type") else "")
    layers = layer_params(setup.model.config)
    beyond = work.values.get(sym.N_rb, 0)  # e_score_correction_bias: in the checkpoint, a buffer in transformers
    outside = int(work.values[sym.N] - beyond) - sum(layers)
    verdict = hf.compare(layers, outside, found)
    if not found.skipped:
        work.result("transformers_total_params", None, sympy.Integer(found.total), None, unit="parameter")
    buffers = " (less the routing correction biases, buffers there)" if beyond and not found.skipped else ""
    work.note(f"--check: {verdict}{buffers}")


def _defining_expr(mf, target: Sym) -> sympy.Expr | None:  # type: ignore[no-untyped-def]
    for f in mf.all():
        if f.defines == target:
            return f.expr
    return None


def kv(setup: Setup) -> Sheet:
    model = setup.model
    work = start("kv", f"KV cache of {model.title} at {setup.context:,} tokens", setup)
    kv_values(work, setup)
    work.given(sym.B, setup.batch)
    work.compute(work.library.get("kv_bytes_per_token"), "kv_bytes_per_token")
    per_sequence = work.compute(work.library.get("kv_bytes_per_sequence"), "kv_bytes_per_sequence")
    work.compute(work.library.get("kv_bytes"), "kv_bytes")
    if not model.config.is_plain:  # windows and states: k is not what a further token adds
        work.heading("Past every window: what grows with the context, and what is fixed")
        work.compute(work.library.get("kv_marginal_bytes_per_token"), "kv_marginal_bytes_per_token")
        work.compute(work.library.get("kv_fixed_bytes_per_sequence"), "kv_fixed_bytes_per_sequence")
    by_kind(work, setup, per_sequence)
    model_notes(work, setup)
    if model.config.is_mla:
        work.note("MLA caches one latent vector and one rotary key per layer, shared by all heads")
    elif model.config.kv_heads < model.config.heads:
        work.note(f"GQA: {model.config.heads} query heads share {model.config.kv_heads} key/value heads")
    return work.sheet


def by_kind(work: Work, setup: Setup, per_sequence: sympy.Expr) -> None:
    """One sequence's cache split by layer kind, each a result (`kv_bytes_<tag>`) and a note."""
    kinds = setup.model.formulas.kinds
    if len(kinds) < 2 and kinds[0].state_values is None and kinds[0].span is None:
        return
    values, S = work.values, sym.S.symbol
    for kind in kinds:
        terms = sympy.Integer(0)
        if kind.kv_bytes_per_token is not None:
            span = S if kind.span is None else sympy.Min(S, kind.span.symbol)
            terms += span * kind.kv_bytes_per_token.symbol
            compressed = by_key(f"kv_bytes_per_token_{kind.tag}c")
            if compressed is not None and compressed in values:
                ratio = by_key(f"compress_ratio_{kind.tag}") or sym.m_c
                terms += S / ratio.symbol * compressed.symbol
        if kind.state_values is not None and kind.conv_values is not None:
            terms += sym.b_st.symbol * kind.state_values.symbol + sym.b_kv.symbol * kind.conv_values.symbol
        value = evaluate(terms, values, work.library)
        name = f"kv_bytes_{kind.tag}"
        work.result(name, None, value, terms, unit="byte/sequence")
        share = float(value / per_sequence) if per_sequence else 0.0
        work.note(
            f"{kind_name(kind.tag)} layers ({values[kind.layers]} of {values[sym.L]}): "
            f"{format_quantity(value, 'byte/sequence')} of one sequence's cache ({share:.0%})"
        )


def knee(setup: Setup) -> Sheet:
    model, gpu = setup.model, setup.gpu
    if gpu is None:
        raise DeriveError("knee needs an accelerator", "Pass --gpu NAME (see 'derive gpus')")
    work = start("knee", f"Decode knee of {model.title} on {gpu.title}", setup)
    aggregates(work, setup)
    weight_format(work, setup)
    kv_values(work, setup, compute=False)
    peak, peak_note = setup.peak(gpu)
    work.given(sym.BW, gpu.bandwidth, _figure_note(gpu, "bandwidth"))
    work.given(sym.P, peak, peak_note if "flops" not in gpu.overridden else "given with --flops")
    work.given(sym.M, gpu.memory, _figure_note(gpu, "memory"))
    work.given(sym.tau, 1, "no speculative decoding")
    work.heading("From the config")
    for count_formula in model.formulas.per_token:
        work.compute(count_formula)

    work.heading("Bytes and FLOPs per token")
    work.compute(work.library.get("weight_bytes"), "weight_bytes")
    work.compute(work.library.get("kv_bytes_per_token"))
    work.compute(work.library.get("kv_bytes_per_sequence"))
    work.compute(work.library.get("weight_flops_per_token"))

    spread(work, setup, gpu)

    work.heading("Step time against batch")
    memory_time, compute_time = work.library.get("memory_time").expr, work.library.get("compute_time").expr
    knee_solution = work.solve(memory_time, compute_time, sym.B)
    knee_value = work.root(knee_solution)
    # A MoE step's expert reads saturate as the batch grows (every expert touched): past that an extra
    # sequence adds only its cache and its embedding rows, which decides whether a knee exists at all.
    slope_memory = saturated(sympy.diff(inline(memory_time, sym.B, work.library), sym.B.symbol), sym.B)
    slope_compute = sympy.diff(inline(compute_time, sym.B, work.library), sym.B.symbol)
    # A model whose layers keep only fixed-size state (Mamba, RWKV): nothing grows with the context.
    grows = depends_on(slope_memory - slope_compute, sym.S, work.library)
    limit_solution = work.solve(slope_memory, slope_compute, sym.S) if grows else None
    limit_value = None
    if limit_solution is not None:
        limit_value = work.root(limit_solution)
    if knee_solution.closed_form.has(sympy.LambertW):
        how = (
            "the step reads the experts its B·tau tokens touch, E·(1 - (1 - k/E)^(B·tau)) a layer: a line in B "
            "meets an exponential of B, and the closed form is Lambert's W (principal branch)"
        )
    else:
        how = ""
    work.solved(
        knee_solution,
        sym.B_knee,
        knee_value,
        how if knee_value is not None else "no knee: each extra sequence adds more KV reading than arithmetic",
        result="knee_batch",
    )
    if not setup.model.config.is_moe:  # a MoE step's expert reads grow with the batch: no ridge short form
        short_form(work, None if knee_value is None else knee_value * work.values[sym.tau], "the knee's tokens B·τ")
    if limit_solution is None:
        limit_note = "no layer caches tokens (a fixed-size state only): whether a knee exists does not depend on it"
    elif limit_value is None and knee_value is None:
        limit_note = "the two slopes never cross at a positive context: no knee at any context"
    elif limit_value is None:
        limit_note = "attention alone is compute-bound here (a/k above the ridge P/BW): a knee exists at any context"
    else:
        limit_note = f"a knee exists only below {format_quantity(limit_value, sym.S.unit)} of context"
    if limit_solution is None:
        work.result("knee_context_limit", sym.S_knee, None)
        work.note(limit_note)
    else:
        work.solved(limit_solution, sym.S_knee, limit_value, limit_note, result="knee_context_limit")

    work.heading("Memory ceiling")
    max_batch = fits_beside_weights(work, setup, gpu, "max_batch_by_memory")
    work.given(sym.B, max_batch, "at the largest batch memory holds", inline=True)
    step(work, setup)
    at_max = work.compute(work.library.get("throughput_floor"))
    work.result("throughput_at_max_batch", sym.R_at_max, at_max, work.library.get("throughput_floor").expr)
    ceiling = asymptote(sym.R.symbol, sym.B, sym.R_max, work.library)
    ceiling_value = evaluate(ceiling.closed_form, work.values, work.library)
    work.solved(ceiling, sym.R_max, ceiling_value, result="throughput_ceiling")
    # Half the memory-bound ceiling BW·tau/slope: where t_mem(B) = 2·slope·B, the batch whose cache (and gathered
    # rows) cost as much to read as the weights its step reads (a MoE step's touched experts grow with B).
    half = work.solve(memory_time, 2 * slope_memory * sym.B.symbol, sym.B)
    work.solved(
        half,
        sym.B_half,
        work.root(half),
        "memory-bound throughput at half its ceiling: the batch's cache reads equal the weights the step reads",
        result="half_ceiling_batch",
    )

    knee_first = knee_value is not None and knee_value <= max_batch
    first = "compute" if knee_first else "memory_capacity"
    work.result("first_limit", None, first)
    if knee_first:
        work.note(
            f"a growing batch meets the compute roof first: the knee ({_count(knee_value)}) comes before "
            f"memory fills ({_count(max_batch)})"
        )
    else:
        work.note(
            f"a growing batch fills memory first ({_count(max_batch)}) while still bandwidth-bound"
            + ("" if knee_value is None else f"; the knee would be at {_count(knee_value)}")
        )
    work.note(
        "roofline floor: peak bandwidth and FLOP/s at 100% efficiency, "
        + ("links at full speed" if on_layout(work) else "tensor parallelism without its communication")
        + ", no kernel overheads"
    )
    model_notes(work, setup)
    return work.sheet


def _figure_note(gpu: Gpu, figure: str) -> str:
    return f"--{figure}" if figure in gpu.overridden else "datasheet"


def _count(value: sympy.Expr) -> str:
    return format_quantity(value, "sequence")
