"""Sheets for the common questions: FLOPs, fit, intensity, crossovers, TTFT/TPOT, comparing accelerators."""

from __future__ import annotations

import math

import sympy

from derive.catalog import Gpu
from derive.core.errors import DeriveError, FitError
from derive.core.evaluation import depends_on, evaluate
from derive.core.sheet import Given, Sheet, Work
from derive.core.symbols import Sym
from derive.core.units import format_quantity
from derive.derivations.calibrated import calibration_inputs, calibration_notes
from derive.derivations.common import (
    SHORTER_REQUEST,
    Setup,
    accelerator,
    decode_inputs,
    decode_inputs_at_mean_context,
    flop_inputs,
    held_per_accelerator,
    model_notes,
    more_than,
    parallelism,
    require_own_cache,
    short_form,
    start,
    values_at,
    weight_reads,
)
from formulas import flops as fl
from formulas import intensity as it
from formulas import moe
from formulas import notation as sym
from formulas import prefill as pf
from formulas.reads import W_read


def flops(setup: Setup) -> Sheet:
    model = setup.model
    work = start("flops", f"FLOPs per token of {model.title} at {setup.context:,} tokens", setup)
    flop_inputs(work, setup)
    work.given(sym.N_act, evaluate(sym.N_act.symbol, dict(model.formulas.shapes), work.library), "config")
    work.heading("Beyond 2N")
    work.compute(work.library.get("attention_flops_per_token"), "attention_flops_per_token")
    work.compute(work.library.get("prompt_attention_flops_per_token"), "prompt_attention_flops_per_token")
    total = work.compute(work.library.get("flops_per_token"), "flops_per_token")
    rule = work.compute(work.library.get("two_n_flops_per_token"), "two_n_flops_per_token")
    work.compute(work.library.get("non_arithmetic_params"), "non_arithmetic_params")
    if depends_on(fl.F_att.symbol, sym.S, work.library):
        crossing = work.solve(fl.F_att.symbol, sym.F.symbol, sym.S)
        at = work.root(crossing)
        work.solved(
            crossing,
            fl.S_att,
            at,
            "beyond it attention dominates the arithmetic",
            result="attention_equals_weights_context",
        )
    else:  # Mamba, RWKV: a fixed-size state update a token, whatever the context
        work.result("attention_equals_weights_context", fl.S_att, None)
        work.note("no layer attends over the context: the mixers' FLOPs a token do not grow with it")
    work.note(
        f"the 2N rule is off by {float(total / rule - 1):+.1%} at {setup.context:,} tokens: it counts the "
        f"embedding lookup (no arithmetic) and misses attention, which grows with context"
    )
    if model.config.is_moe:
        work.note("2N here uses the total parameters; a token only multiplies through the active ones")
    return work.sheet


def fit(setup: Setup) -> Sheet:
    if not setup.plain_tp:  # expert, pipeline or attention data parallelism: the plan's layout formulas
        from derive.derivations.plan import fit_on_layout

        return fit_on_layout(setup)
    model = setup.model
    work = start("fit", f"How many {setup.context:,}-token sequences of {model.title} fit", setup)
    decode_inputs(work, setup)
    gpu = accelerator(work, setup, compute=False)
    parallelism(work, setup, gpu)
    weights = work.values[sym.W]
    for name in ("weight_bytes", "kv_bytes_per_sequence"):
        work.result(
            name,
            work.library.get(name).defines,
            work.values[work.library.get(name).defines],
            work.library.get(name).expr,
        )
    require_own_cache(setup)
    fitting = work.compute(work.library.get("max_batch_by_memory"))
    if fitting < 1:
        n = work.values[sym.n]
        split = f", {format_quantity(weights / n, 'byte')} on each of {n} x {gpu.name}" if n > 1 else ""
        raise FitError(
            f"{model.name} in {setup.dtype} does not fit: its weights ({format_quantity(weights, 'byte')}{split}) "
            f"leave no room for one {setup.context:,}-token sequence in {format_quantity(work.values[sym.M], 'byte')}",
            "Add accelerators (--tp) or use a smaller --dtype",
        )
    work.result("max_sequences", sym.B_max, fitting, work.library.get("max_batch_by_memory").expr)
    work.note("an upper bound: activations, the framework's workspace and fragmentation take memory too")
    model_notes(work, setup)
    return work.sheet


def intensity(setup: Setup) -> Sheet:
    work = start("intensity", f"Decode arithmetic intensity of {setup.model.title} at batch {setup.batch}", setup)
    decode_inputs(work, setup)
    gpu = accelerator(work, setup)
    work.given(sym.B, setup.batch, "--batch" if "batch" not in setup.defaults else "default")
    work.heading("Per operation")
    gemm = work.compute(work.library.get("gemm_intensity"))
    for name in ("qkv_intensity", "lm_head_intensity") + (() if setup.model.config.is_moe else ("mlp_intensity",)):
        work.result(name, it.I_w, gemm, work.library.get("gemm_intensity").expr)
    if setup.model.config.is_moe:
        # A routed expert sees only the tokens routed to it: its GEMMs run at that count, not the batch.
        work.given(sym.tau, 1, "no speculative decoding", inline=True)
        for name in ("routed_tokens", "experts_touched"):
            work.compute(work.library.get(name))
        expert = work.compute(work.library.get("expert_gemm_intensity"))
        work.result("mlp_intensity", moe.I_x, expert, work.library.get("expert_gemm_intensity").expr)
        work.note(
            f"the routed experts' GEMMs see {format_quantity(expert / gemm * setup.batch, '')} token(s) each, "
            f"not {setup.batch:,}: their intensity is {format_quantity(expert, 'FLOP/byte')}"
            + (", and the shared experts' the batch's" if setup.model.config.shared_experts else "")
        )
    ranked: tuple[tuple[str, sympy.Expr], ...] = (("weight GEMMs", gemm),)
    attends = setup.model.config.attention is not None and setup.model.config.kv_heads
    if attends:
        ranked += (("attention", work.compute(work.library.get("attention_intensity"), "attention_intensity")),)
    for kind in setup.model.formulas.kinds:  # recurrent layers: their state's intensity, fixed like attention's
        if kind.state_values is not None:
            state = work.compute(work.library.get(f"state_intensity_{kind.tag}"), f"{kind.tag}_state_intensity")
            ranked += ((f"{kind.label} state", state),)
    ridge = work.compute(work.library.get("ridge_intensity"), "ridge_intensity")
    if attends:
        flip = work.solve(it.I_w.symbol, it.I_att.symbol, sym.B)
        work.solved(
            flip,
            it.B_flip,
            work.root(flip),
            "below it attention has the higher intensity; above it the weight GEMMs do",
            result="flip_batch",
        )
    else:
        work.note("no softmax-attention layer: no cache is read, so there is no attention intensity to rank")
    for label, value in ranked:
        side = "memory-bound" if value < ridge else "compute-bound"
        work.note(
            f"{label}: {format_quantity(value, 'FLOP/byte')} against the {gpu.name} ridge of "
            f"{format_quantity(ridge, 'FLOP/byte')}: {side}"
        )
    work.note(
        "fusion removes activation round trips (norms, softmax, elementwise ops) but cannot raise a "
        "GEMM's or attention's intensity: only the batch (GEMMs) or the architecture (GQA, MLA) can"
    )
    model_notes(work, setup)
    return work.sheet


def crossover_kv_weights(setup: Setup) -> Sheet:
    work = start(
        "crossover kv-weights",
        f"Context where KV reads overtake weight reads: {setup.model.title} at batch {setup.batch}",
        setup,
    )
    decode_inputs(work, setup)
    _without_context(work)  # S is the unknown now: K_seq must be derived from it, not given
    work.given(sym.B, setup.batch, "--batch" if "batch" not in setup.defaults else "default")
    read = weight_reads(work, setup)  # what the batch's step reads: the experts it touches, the rows it gathers
    if not depends_on(sym.kv_total.symbol, sym.S, work.library):  # only fixed-size state: no growth at all
        return _no_crossover(work, setup, None)
    crossing = work.solve(sym.kv_total.symbol, W_read.symbol, sym.S)
    context = work.root(crossing)
    if context is None:
        return _no_crossover(work, setup, crossing)
    work.solved(crossing, sym.S, context, result="crossover_context")
    work.compute(work.library.get("kv_bytes_per_sequence"))
    kv_bytes = work.compute(work.library.get("kv_bytes"), "kv_bytes_at_crossover")
    stored = work.values[sym.W]
    of_stored = (
        f" ({float(read / stored):.0%} of the {format_quantity(stored, 'byte')} stored)" if read != stored else ""
    )
    work.note(
        f"at the crossover the batch's cache ({format_quantity(kv_bytes, 'byte')}) equals the weights its step reads"
        f"{of_stored}: the step reads twice those bytes, and memory holds the cache beside all the weights"
    )
    if setup.gpu is not None:
        work.note(
            f"{setup.gpu.name} holds {format_quantity(setup.gpu.memory, 'byte')}: the cache alone at the "
            f"crossover fills {float(kv_bytes / setup.gpu.memory):.2f} of one accelerator"
        )
    model_notes(work, setup, longest=math.ceil(float(context)))
    return work.sheet


def _without_context(work: Work) -> None:
    """Drop the context decode_inputs gave, and the cache a sequence holds at it: a crossover solves for a length,
    so neither is an input (and the sheet offers no --context that would change nothing)."""
    unknown = (sym.S, sym.kv_seq)
    for symbol in unknown:
        work.values.pop(symbol, None)
    work.sheet.steps = [
        s for s in work.sheet.steps if not (isinstance(s, Given) and s.sym in unknown or _defines(s) in unknown)
    ]
    work.sheet.inputs.pop("context", None)


def _defines(step: object) -> Sym | None:
    return getattr(step, "defines", None)


def _cache_at(work: Work) -> sympy.Expr:
    """The batch's cache at the context just given (values computed at another context are dropped)."""
    for stale in (sym.kv_seq, sym.kv_total):
        work.values.pop(stale, None)
    work.compute(work.library.get("kv_bytes_per_sequence"))
    return work.compute(work.library.get("kv_bytes"))


def _no_crossover(work: Work, setup: Setup, crossing) -> Sheet:  # type: ignore[no-untyped-def]
    """Windows and fixed state cap the cache: say so, with the most a sequence ever caches."""
    if crossing is not None:
        work.solved(crossing, sym.S, None, "the KV reads never reach the weight reads", result="crossover_context")
    else:
        work.result("crossover_context", sym.S, None)
    work.result("kv_bytes_at_crossover", sym.kv_total, None)
    windows = setup.model.config.windows
    work.given(sym.S, 1, "the shortest context", inline=True)
    shortest = _cache_at(work)
    if shortest >= work.values[W_read]:
        work.note(
            f"the batch's fixed-size state alone ({format_quantity(shortest, 'byte')}) is at least the "
            f"{format_quantity(work.values[W_read], 'byte')} of weights a step reads: state reads outweigh weight "
            "reads at any context"
        )
    elif windows:
        longest = max(windows.values())
        work.given(sym.S, max(longest, 1), "past the longest window the cache stops growing", inline=True)
        ceiling = _cache_at(work)
        work.note(
            f"past {longest:,} tokens the cache stops growing: the batch's cache never exceeds "
            f"{format_quantity(ceiling, 'byte')}, below the {format_quantity(work.values[W_read], 'byte')} of weights "
            "a step reads"
        )
    else:
        work.note("the cache grows too slowly with context to reach the weights at any context")
    model_notes(work, setup)
    return work.sheet


def crossover_prefill(setup: Setup) -> Sheet:
    work = start("crossover prefill", f"Prompt length where prefill turns compute-bound: {setup.model.title}", setup)
    decode_inputs(work, setup)
    _without_context(work)  # the prompt length is the unknown: no context is read
    accelerator(work, setup)
    work.given(sym.B, 1, "one prompt")
    work.given(sym.n, 1, "per accelerator: tensor parallelism divides both times alike")
    for eta in (pf.eta_bw, pf.eta_f):
        work.given(eta, 1, "a floor: peak figures")
    work.compute(work.library.get("ridge_intensity"), "ridge_intensity")
    try:
        crossing, tokens = work.solve(pf.t_pm.symbol, pf.t_pc.symbol, pf.S_p).positive(
            lambda root: evaluate(root, work.values, work.library)
        )
    except DeriveError:  # no closed form, and the sides never meet numerically either
        crossing, tokens = None, None
    if tokens is None:  # no crossing: one side wins at every prompt length, which one is the answer
        one = values_at(work, {pf.S_p: 1})
        computing = evaluate(pf.t_pc.symbol, one, work.library) >= evaluate(pf.t_pm.symbol, one, work.library)
        why = (
            "compute-bound at every prompt length: from the first token its FLOPs take longer than its reads"
            if computing
            else "memory-bound at every prompt length: its reads take longer than its FLOPs however long the prompt"
        )
        work.note(f"no crossover: {why}")
    if crossing is not None:
        said = "longer prompts are compute-bound" if tokens is not None else "no crossover"
        work.solved(crossing, pf.S_pref, tokens, said, result="compute_bound_prompt_tokens")
    else:
        work.result("compute_bound_prompt_tokens", pf.S_pref, None)
    short_form(work, tokens, "the prompt length")
    return work.sheet


def calibrated_at(setup: Setup, batch: int, tp: int | None = None) -> Sheet | None:
    """`predict` for `batch` sequences decoding at setup.context (the answers' realistic figure beside a floor),
    or None where it cannot run (the batch does not fit, no fit for the accelerator's link)."""
    from dataclasses import replace

    at = replace(setup, batch=int(batch), prompt=setup.context - 1, output=2, tp=setup.tp if tp is None else tp)
    try:
        return predict(at)  # decode steps see prompt + output/2: exactly the context
    except DeriveError as error:
        if error.message.startswith("no value for"):  # a formula the library cannot evaluate: a bug, never skipped
            raise
        return None


def predict(setup: Setup) -> Sheet:
    """TTFT and TPOT: the roofline floor, and (unless setup.floor) the calibrated estimate beside it."""
    if not setup.plain_tp:  # expert, pipeline or attention data parallelism: the plan's layout formulas
        from derive.derivations.plan import predict_on_layout

        return predict_on_layout(setup)
    model = setup.model
    work = start(
        "predict", f"TTFT and TPOT of {model.title}: {setup.prompt:,} prompt, {setup.output:,} output tokens", setup
    )
    # Decode steps see the prompt plus, on average, half the output.
    decode_inputs_at_mean_context(work, setup, setup.prompt, setup.output)
    gpu = accelerator(work, setup)
    # The degree is sized at the end of the output, as _check_fits and the layouts' predict size the batch.
    parallelism(work, setup, gpu, setup.prompt + setup.output, SHORTER_REQUEST)
    _check_fits(work, setup, gpu)
    work.given(sym.B, setup.batch, "--batch" if "batch" not in setup.defaults else "default")
    work.given(pf.S_p, setup.prompt, "--prompt")
    work.given(pf.S_o, setup.output, "--output")
    for eta in (pf.eta_bw, pf.eta_f):
        work.given(eta, 1, "a floor: 100% of peak", inline=True)
    work.sheet.inputs.update({"prompt": setup.prompt, "output": setup.output, "floor": setup.floor})
    fit = None if setup.floor else calibration_inputs(work, setup, gpu)
    work.heading("Prefill")
    weight_reads(work, setup, prefill=True)
    for name in ("prefill_memory_time", "prompt_weight_flops_per_sequence", "prefill_compute_time"):
        work.compute(work.library.get(name))
    work.compute(work.library.get("ttft_floor"), "ttft_floor")
    if fit:
        _calibrated(work, "Prefill, calibrated", _PREFILL_TERMS, model.config.is_moe, (("ttft", "ttft"),))
    work.heading("Decode (at the mean context, prompt plus half the output)")
    weight_reads(work, setup)
    for name in ("kv_bytes", "memory_time", "compute_time", "step_time"):
        work.compute(work.library.get(name))
    work.compute(work.library.get("tpot_floor"), "tpot_floor")
    work.compute(work.library.get("decode_throughput"), "throughput_floor")
    work.compute(work.library.get("e2e_latency_floor"), "e2e_latency_floor")
    if fit:
        totals = (
            ("tpot", "tpot"),
            ("throughput", "throughput"),
            ("e2e_latency", "e2e_latency"),
        )
        _calibrated(work, "Decode, calibrated", _DECODE_TERMS, model.config.is_moe, totals)
    work.note(
        "the floor: peak bandwidth and FLOP/s, no kernel launch, scheduling, sampling or communication time; "
        "no real server is faster"
    )
    if fit:
        calibration_notes(work, fit)
    model_notes(work, setup, setup.prompt + setup.output)
    return work.sheet


def _check_fits(work: Work, setup: Setup, gpu: Gpu) -> None:
    """Refuse, before any derivation, a batch whose weights and cache at the end of its output do not fit."""
    # The batch's cache at the end of its output, as the sweep's fit check counts it.
    end = setup.prompt + setup.output
    needed = held_per_accelerator(work.values, work.library, setup.batch, end)
    if needed > gpu.memory:
        shown, held = more_than(needed, gpu.memory)
        raise DeriveError(
            f"{setup.model.name} at batch {setup.batch} needs {shown} of each of {work.values[sym.n]} x {gpu.name} "
            f"(weights and cache at {end:,} tokens), more than its {held}",
            "Use a larger --tp, a smaller --batch or a shorter --prompt/--output",
        )


def _calibrated(
    work: Work, heading: str, terms: tuple[str, ...], moe: bool, totals: tuple[tuple[str, str], ...]
) -> None:
    """The calibrated estimate's terms (the routed experts' only for a MoE model), then its totals."""
    work.heading(heading)
    for name in terms:
        if moe or not any(routed in name for routed in ("narrow_expert", "routed_expert")):
            work.compute(work.library.get(name), name)
    for name, result in totals:
        work.compute(work.library.get(name), result)


_PREFILL_TERMS = (
    "prefill_fixed_time",
    "prefill_allreduce_time",
    "prefill_weight_time",
    "prefill_gemm_time",
    "prefill_kv_write_time",
    "prefill_attention_time",
    "prefill_elementwise_bytes",
    "prefill_elementwise_time",
    "prefill_mlp_activation_bytes",
    "prefill_mlp_activation_time",
    "prefill_narrow_expert_time",
    "prefill_routed_expert_time",
)
_DECODE_TERMS = (
    "step_fixed_time",
    "decode_allreduce_time",
    "one_row",
    "weight_read_time",
    "decode_gemm_time",
    "kv_read_time",
    "decode_attention_compute_time",
    "decode_elementwise_bytes",
    "elementwise_time",
    "narrow_expert_time",
    "routed_expert_time",
)


def _figure_of(sheet: Sheet, quantity: Sym) -> sympy.Expr:
    """A given or computed value of a knee sheet (the throughput at the largest batch is a result)."""
    if quantity is sym.R_at_max:
        value = sheet.results["throughput_at_max_batch"].value
    else:
        value = sheet.values.get(quantity)
    assert isinstance(value, sympy.Expr), quantity.key
    return value


def compare(setup: Setup) -> Sheet:
    from derive.derivations.slice import knee

    if setup.gpu is None or setup.vs is None:
        raise DeriveError("compare needs two accelerators", "Pass --gpu A --vs B")
    gpu, vs = setup.gpu, setup.vs
    # The same number of accelerators of each kind: enough for the one that needs more.
    other_setup = Setup(**{**setup.__dict__, "gpu": setup.vs})
    if setup.tp is None:
        tp = max(int(str(knee(setup).inputs["tp"])), int(str(knee(other_setup).inputs["tp"])))
        chosen = (*setup.defaults, "tp")
        setup, other_setup = (Setup(**{**s.__dict__, "tp": tp, "defaults": chosen}) for s in (setup, other_setup))
    base, other = knee(setup), knee(other_setup)
    inputs = {**setup.inputs(), "vs": vs.name, "tp": base.inputs["tp"], "vs_tp": other.inputs["tp"]}
    work = Work(Sheet("compare", f"{setup.model.title}: {vs.title} against {gpu.title}", inputs))
    work.sheet.inputs["defaults"] = list(setup.defaults)
    figures = (
        ("bandwidth_ratio", sym.BW, "bandwidth-bound decode (small batch) speeds up by this"),
        ("compute_ratio", sym.P, "compute-bound work (prefill, a batch past the knee) speeds up by this"),
        ("capacity_ratio", sym.B_max, "the largest batch memory holds grows by this"),
        ("max_throughput_ratio", sym.R_at_max, "throughput at each one's largest batch"),
    )
    for name, quantity, meaning in figures:
        first, second = (_figure_of(sheet, quantity) for sheet in (base, other))
        ratio = second / first
        work.result(name, None, ratio, unit="")
        work.note(
            f"{name} = {float(ratio):.3g}: {meaning} ({format_quantity(second, quantity.unit)} against "
            f"{format_quantity(first, quantity.unit)})"
        )
    work.sheet.steps = base.steps  # the first accelerator's derivation; the second's follows the same steps
    work.sheet.values = base.values
    return work.sheet
