"""The worked sheet of one layout at the batch `derive plan` chose: its shares, its step, its cost."""

from __future__ import annotations

import sympy

from derive.calibration import (
    DEEPEP_BORROWED,
    FUSED_BORROWED,
    Calibration,
    deepep,
    deepep_values,
    fused_dispatch,
    fused_dispatch_values,
)
from derive.catalog import Gpu
from derive.core.errors import DeriveError, FitError
from derive.core.evaluation import depends_on, evaluate
from derive.core.library import Formula
from derive.core.sheet import Sheet, Work
from derive.core.symbols import Sym
from derive.core.units import format_quantity
from derive.derivations.calibrated import calibration_inputs, calibration_notes
from derive.derivations.common import (
    Setup,
    accelerator,
    decode_inputs,
    decode_inputs_at_mean_context,
    model_notes,
    more_than,
    start,
    weight_reads,
)
from derive.derivations.layout_step import SHARES, SLOT_FLOOR, layout_values, setup_layout
from derive.layouts import Layout
from derive.planning import Targets
from derive.systems import Price, System
from formulas import calibrated as cal
from formulas import energy as en
from formulas import layout as lay
from formulas import notation as sym
from formulas import prefill as pf

_ESTIMATE = ("layout_expert_width", "layout_one_row", "layout_slot_time", "layout_tpot")
_PREFILL = (
    "prefill_weight_read_per_accelerator",
    "prefill_flops_per_accelerator",
    "prefill_attention_flops_per_accelerator",
    "prefill_kv_per_accelerator",
    "prefill_activation_bytes",
    "layout_ttft_floor",
    "layout_prefill_slot_time",
    "layout_ttft",
)


def layout_sheet(
    setup: Setup, layout: Layout, system: System, targets: Targets, price: Price | None, estimate: str
) -> Sheet:
    """Worked: one accelerator's share of the layout at micro-batch setup.batch, its step and what it costs."""
    model = setup.model
    work = start("plan", f"{model.title} on {layout.accelerators} x {system.gpu}, {layout}", setup)
    decode_inputs_at_mean_context(work, setup, targets.prompt, targets.output)
    gpu = accelerator(work, setup)
    layout_values(work, setup, layout, system)
    work.given(sym.B, setup.batch, "the micro-batch derive plan solved for")
    work.given(sym.S_p, targets.prompt, "--prompt")
    work.given(sym.S_o, targets.output, "--output")
    floor = setup.floor
    fit = _fitted(work, setup, gpu)
    _decode_step(work, setup, fit is not None, ("decode_step_floor", "decode_step"))
    work.heading("Prompt pass of one request")
    batch = work.values[sym.B]
    work.given(sym.B, 1, "one request's prompt, alone", inline=True)
    weight_reads(work, setup, prefill=True)
    for name in _PREFILL if fit else _PREFILL[:6]:
        work.compute(work.library.get(name), "ttft" if name in ("layout_ttft",) else None)
    prompt_pass = lay.ttft_c if fit else lay.ttft_f
    # One more prompt in a step that already reads the weights and pays the fixed times adds only its own work:
    # the prompt pass of two requests less that of one, with every attention rank's prompts sharing the stage's
    # experts at once (d_p = d), as derive plan prices it (planning.search_gpu).
    busy = {s: v for s, v in work.values.items() if not _depends(s, work, (sym.B, lay.d_p))}
    busy[lay.d_p] = work.values[lay.dp]
    one, both = (evaluate(prompt_pass.symbol, {**busy, sym.B: sympy.Integer(b)}, work.library) for b in (1, 2))
    work.heading("What the layout serves")
    work.given(sym.B, batch, "back to the solved micro-batch", inline=True)
    work.given(
        lay.t_rq,
        both - one,
        f"TTFT of two prompts a rank ({format_quantity(both, 'second')}) less that of one "
        f"({format_quantity(one, 'second')}), every rank prefilling at once: what a prompt adds to a step",
    )
    if floor:
        work.given(lay.tpot_c, work.values[lay.tpot_f], "the floor stands in for the estimate (--floor)")
    work.compute(work.library.get("layout_served_tpot"), "tpot")
    work.given(en.P_acc, gpu.power, "datasheet TDP")
    work.compute(work.library.get("layout_capacity"), "requests_per_second_by_tpot")
    _queue(work, targets, floor)
    work.compute(work.library.get("throughput_per_accelerator"), "tokens_per_second_per_accelerator")
    work.compute(work.library.get("tokens_per_user"), "tokens_per_second_per_user")
    work.compute(work.library.get("layout_energy_per_token"), "joules_per_token")
    if targets.rate is not None:
        work.given(lay.lam, targets.rate, "--rate")
        work.compute(work.library.get("accelerators_for_rate"), "accelerators_for_rate")
    _served_ttft(work, targets)
    if price is not None:
        work.given(lay.price, price.per_second, price.label)
        work.compute(work.library.get("cost_per_token"), "cost_per_token")
        if targets.rate is not None:
            work.compute(work.library.get("fleet_cost_per_token"), "fleet_cost_per_token")
    work.note(f"estimate: {estimate}")
    if fit:
        calibration_notes(work, fit)
    model_notes(work, setup)
    return work.sheet


def _queue(work: Work, targets: Targets, floor: bool) -> None:
    """The requests a second a copy takes with its mean TTFT at the target (formulas/queueing.py's M/D/1 wait,
    solved for the rate), and what it serves within both targets."""
    from formulas import queueing as qu

    work.heading("The queue a prompt meets")
    work.given(qu.T_max, targets.ttft, "--ttft")
    if floor:
        work.given(lay.ttft_c, work.values[lay.ttft_f], "the floor stands in for the estimate (--floor)")
    work.compute(work.library.get("prompt_service_time"))
    solution = work.solve(qu.ttft_q.symbol, qu.T_max.symbol, qu.lam_c)
    capacity = work.root(solution)
    if capacity is None:
        raise DeriveError(
            f"one prompt pass alone ({format_quantity(work.values[lay.ttft_c], 'second')}) misses the TTFT target "
            f"of {format_quantity(targets.ttft, 'second')} on this layout",
            "Relax --ttft, or plan with more accelerators",
        )
    work.solved(solution, lay.Q_T, capacity, "the rate at which the mean TTFT meets --ttft", "ttft_capacity")
    work.compute(work.library.get("served_capacity"), "requests_per_second")


def _served_ttft(work: Work, targets: Targets) -> None:
    """The mean TTFT at the copy's load: busy at its capacity, or the rate over the whole copies that serve it."""
    from formulas import queueing as qu

    work.heading("TTFT at the copy's load")
    if targets.rate is None:
        work.given(qu.lam_c, work.values[lay.Q_s], "busy at its served capacity")
    else:
        copies = work.values[lay.N_rate] / work.values[lay.N_L]
        work.given(qu.lam_c, targets.rate / copies, f"--rate over {copies} whole copies")
    for name in ("prompt_load", "prompt_queue_wait"):
        work.compute(work.library.get(name))
    work.compute(work.library.get("served_ttft"), "ttft_served")


def _fitted(work: Work, setup: Setup, gpu: Gpu) -> Calibration | None:
    """The calibration's values and the expert dispatch's (fused and DeepEP), unless the floor alone is asked for."""
    if setup.floor:
        return None
    fit = calibration_inputs(work, setup, gpu)
    said = "fitted" if gpu.name in fused_dispatch()["accelerators"] else f"borrowed from {FUSED_BORROWED}'s fit"
    for symbol, value in fused_dispatch_values(gpu, setup.dtype).items():
        work.given(symbol, value, f"{said} to aiconfigurator 0.12's all-gather and reduce-scatter tables")
    wide = deepep()
    said = "fitted" if gpu.name in wide["accelerators"] else f"borrowed from {DEEPEP_BORROWED}'s fit"
    for symbol, value in deepep_values(gpu).items():
        work.given(symbol, value, f"{said} to aiconfigurator 0.12's DeepEP tables (formulas/deepep.json)")
    return fit


def _decode_step(work: Work, setup: Setup, estimate: bool, names: tuple[str, str]) -> None:
    """One accelerator's shares of a slot, then the decode step's floor and (with `estimate`) its calibrated time,
    as results `names`."""
    work.heading("One accelerator's share of a slot (one micro-batch through one stage)")
    weight_reads(work, setup)
    work.compute(work.library.get("kv_bytes"))
    for name in SHARES:
        work.compute(work.library.get(name))
    work.heading("Decode step")
    for name in SLOT_FLOOR:
        work.compute(work.library.get(name), names[0] if name == "layout_tpot_floor" else None)
    if estimate:
        for name in _ESTIMATE:
            work.compute(work.library.get(name), names[1] if name == "layout_tpot" else None)


def predict_on_layout(setup: Setup) -> Sheet:
    """`derive predict` on a layout with expert, pipeline or attention data parallelism: the plan's own step
    (formulas/layout.py) at --batch sequences a micro-batch, its floor and calibrated estimate under predict's
    names. On tensor parallelism alone these are the roofline's and calibrated.py's terms (tests/test_one_step.py)."""
    model = setup.model
    gpu, layout, system = setup_layout(setup, "predict")
    title = f"TTFT and TPOT of {model.title} on {layout.accelerators} x {gpu.name}, {layout}"
    work = start("predict", f"{title}: {setup.prompt:,} prompt, {setup.output:,} output tokens", setup)
    decode_inputs_at_mean_context(work, setup, setup.prompt, setup.output)
    accelerator(work, setup)
    # The ranks holding a prompt of the micro-batch prefill at once: all d of them from d sequences, fewer below.
    layout_values(work, setup, layout, system, prompts_together=min(setup.batch, layout.dp))
    work.given(sym.B, setup.batch, "--batch: one micro-batch; each pipeline stage works on its own")
    work.given(sym.S_p, setup.prompt, "--prompt")
    work.given(sym.S_o, setup.output, "--output")
    _fits_on_layout(work, setup)
    work.sheet.inputs.update({"prompt": setup.prompt, "output": setup.output, "floor": setup.floor})
    fit = _fitted(work, setup, gpu)
    work.heading("Prompt pass of the micro-batch")
    if layout.dp > 1:  # each attention rank prefills its share, all ranks at once through the shared experts (d_p)
        prompts = -(-setup.batch // layout.dp)
        work.given(sym.B, prompts, "the micro-batch's prompts on each attention rank", inline=True)
    weight_reads(work, setup, prefill=True)
    for name in _PREFILL if fit else _PREFILL[:6]:
        result = {"layout_ttft_floor": "ttft_floor", "layout_ttft": "ttft"}.get(name)
        work.compute(work.library.get(name), result)
    if layout.dp > 1:
        work.given(sym.B, setup.batch, "--batch again: the decode step's micro-batch, spread over the ranks", True)
    work.heading("Decode (at the mean context, prompt plus half the output)")
    drafted = bool(setup.speculation)
    if drafted:  # the pass checks each sequence's k drafts: tau_v tokens through the weights
        work.compute(work.library.get("layout_tokens_through"))
    _decode_step(work, setup, fit is not None, ("pass_floor", "pass") if drafted else ("tpot_floor", "tpot"))
    if drafted:
        work.heading("Speculative decoding (formulas/speculative.py): a pass and its drafts over the tokens gained")
        work.compute(work.library.get("speculative_tokens_per_pass"), "tokens_per_pass")
        work.compute(work.library.get("layout_token_time_floor"), "tpot_floor")
        if fit:
            work.compute(work.library.get("layout_token_time"), "tpot")
        work.note(setup.speculation.describe())
    work.compute(work.library.get("layout_sequences"), "sequences")
    per_token = (lay.t_tok_f, lay.t_tok) if drafted else (lay.tpot_f, lay.tpot_c)
    _served_totals(work, per_token[0], lay.ttft_f, "_floor")
    if fit:
        _served_totals(work, per_token[1], lay.ttft_c, "")
    work.note(
        "the floor: peak bandwidth and FLOP/s and full link speed, whichever binds, no kernel launch or scheduling "
        "time; no real server is faster"
    )
    if fit:
        calibration_notes(work, fit)
    model_notes(work, setup, setup.prompt + setup.output)
    return work.sheet


def _served_totals(work: Work, per_token: Sym, first_token: Sym, suffix: str) -> None:
    """predict's throughput and end-to-end latency on a layout: the library's own formulas (formulas/prefill.py's
    decode_throughput and e2e_latency_floor, formulas/calibrated.py's throughput and e2e_latency), read on this
    layout's step: its B_L sequences, its TPOT and its prompt pass."""
    names = ("decode_throughput", "e2e_latency_floor") if suffix else ("throughput", "e2e_latency")
    step, prompt = (pf.tpot, pf.ttft) if suffix else (cal.t_cal, cal.t_calp)
    on_layout = {sym.B.symbol: lay.B_L.symbol, step.symbol: per_token.symbol, prompt.symbol: first_token.symbol}
    for name, result in zip(names, (f"throughput{suffix}", f"e2e_latency{suffix}"), strict=True):
        formula = work.library.get(name)
        work.compute(Formula(formula.defines, formula.expr.xreplace(on_layout), formula.source), result)


def _fits_on_layout(work: Work, setup: Setup) -> None:
    """Refuse a micro-batch whose weights and cache, at the end of its output, do not fit one accelerator."""
    end = {**work.values, sym.S: sympy.Integer(setup.prompt + setup.output)}
    end.pop(sym.kv_seq, None)
    held = evaluate((lay.W_g.symbol + lay.K_gs.symbol), end, work.library)
    memory = work.values[sym.M]
    if held > memory:
        needed, holds = more_than(held, memory)
        raise DeriveError(
            f"{setup.model.name} at a micro-batch of {setup.batch} needs {needed} of each accelerator (its weights and "
            f"cache at {setup.prompt + setup.output:,} tokens), more than its {holds}",
            "Use more accelerators (--tp, --ep with --dp, --pp), a smaller --batch or a shorter --prompt/--output",
        )


def _depends(symbol: Sym, work: Work, inputs: tuple[Sym, ...]) -> bool:
    """Whether `symbol` is one of `inputs` or the sheet computed it from a formula that depends on one (so it is
    redone when they change)."""
    defining = work.library.defining(symbol.symbol)
    return symbol in inputs or (
        defining is not None and any(depends_on(defining.expr, i, work.library) for i in inputs)
    )


def fit_on_layout(setup: Setup) -> Sheet:
    """`derive fit` on a layout with expert, pipeline or attention data parallelism: each accelerator's weights
    (W_g) and its share of a micro-batch's cache, and the largest micro-batch memory holds (the plan's own
    formulas; on tensor parallelism alone, max_batch_by_memory)."""
    model = setup.model
    gpu, layout, system = setup_layout(setup, "fit")
    work = start("fit", f"How many {setup.context:,}-token sequences of {model.title} fit on {layout}", setup)
    decode_inputs(work, setup)
    accelerator(work, setup, compute=False)
    layout_values(work, setup, layout, system)
    work.compute(work.library.get("weight_bytes_per_accelerator"), "weight_bytes_per_accelerator")
    largest = work.compute(work.library.get("layout_max_micro_batch"), "max_micro_batch")
    if largest < 1:
        raise FitError(
            f"{model.name} in {setup.dtype} does not fit on {layout}: each accelerator's weights "
            f"({format_quantity(work.values[lay.W_g], 'byte')}) leave no room for one {setup.context:,}-token sequence "
            f"in {format_quantity(work.values[sym.M], 'byte')}",
            "Add accelerators (--tp, --ep with --dp, --pp) or use a smaller --dtype",
        )
    work.given(sym.B, largest, "the largest micro-batch", inline=True)
    work.compute(work.library.get("layout_sequences"), "max_sequences")
    work.note("an upper bound: activations, the framework's workspace and fragmentation take memory too")
    model_notes(work, setup)
    return work.sheet
