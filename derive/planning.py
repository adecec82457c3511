"""`derive plan`: every layout's largest batch meeting the latency targets, solved in closed form.

For one model and accelerator the layout formulas (formulas/layout.py) are compiled once, with the
layout's degrees, KV shards and links left as inputs, so a whole search is a few numpy calls.
A decode step's time is a sum of maxima of terms that are linear in the batch B or, for a mixture of
experts, linear plus one exponential q^B (the experts a batch touches, formulas/moe.py). Choosing
one argument of every maximum gives a branch; the step meets the target exactly when every branch
does, and each branch is solved in closed form: B = (T - a)/b when it is linear, and through the
Lambert W function when it is a + b·B - C·q^B. The largest batch is the least of the branches'.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from derive.batch_roots import largest_batch
from derive.calibration import calibration
from derive.catalog import Gpu, Model
from derive.core.errors import DeriveError
from derive.core.symbols import Sym
from derive.core.units import counted
from derive.disaggregation import Disaggregated, LayoutTable, disaggregate, fleet_key, ranked, verdict
from derive.layouts import Layout, batch_cap, search, shape
from derive.recipes import COMMAND_DTYPE, checkpoint_notes
from derive.speculation import NONE, Speculation
from derive.systems import Price, System, system_for
from formulas import calibrated as cal
from formulas import disaggregated as dis
from formulas import layout as lay
from formulas import notation as sym

INPUTS = (
    sym.n,
    lay.pp,
    lay.dp,
    lay.ep,
    lay.L_a,
    lay.w_E,
    lay.x_E,
    lay.BW_tp,
    lay.BW_ep,
    lay.BW_pp,
    lay.d_p,
    lay.t_rq,
)


@dataclass(frozen=True)
class Targets:
    ttft: sympy.Rational  # seconds
    tpot: sympy.Rational
    rate: sympy.Rational | None = None  # requests a second
    prompt: int = 2048
    output: int = 256
    speculation: Speculation = NONE


@dataclass
class Row:
    """One layout at its largest batch meeting the targets (or why it meets none)."""

    gpu: str
    layout: Layout
    batch: int  # one micro-batch (the layout decodes pp of them)
    sequences: int
    tpot: float  # what a user sees: the decode step and its share of prompt passes
    tpot_floor: float
    step: float  # the decode step alone
    ttft: float  # mean, at the copy's load: the prompt pass and the prompts queued ahead (formulas/queueing.py)
    prompt_pass: float  # one request's prompt pass alone
    capacity: float  # requests a second, one copy, within both targets
    per_accelerator: float  # output tokens a second
    per_user: float
    for_rate: int | None
    cost_per_million: float | None  # USD per million output tokens, one copy busy all the time
    joules_per_token: float
    binds: str  # "TPOT", "TTFT", "memory" or "batch cap"
    memory_batch: int  # the largest micro-batch memory holds (the frontier's end)
    fleet_cost_per_million: float | None = None  # USD per million output tokens of the fleet serving --rate
    terms: dict[str, float] = field(default_factory=dict)  # STEP_TERMS: accelerator-seconds per output token

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "layout": {"tp": self.layout.tp, "ep": self.layout.ep, "pp": self.layout.pp, "dp": self.layout.dp},
            "accelerators": self.layout.accelerators,
            "micro_batch": self.batch,
            "sequences": self.sequences,
            "tpot_s": self.tpot,
            "tpot_floor_s": self.tpot_floor,
            "decode_step_s": self.step,
            "ttft_s": self.ttft,
            "prompt_pass_s": self.prompt_pass,
            "requests_per_s": self.capacity,
            "tokens_per_s_per_accelerator": self.per_accelerator,
            "tokens_per_s_per_user": self.per_user,
            "accelerators_for_rate": self.for_rate,
            "usd_per_million_tokens": self.cost_per_million,
            "fleet_usd_per_million_tokens": self.fleet_cost_per_million,
            "joules_per_token": self.joules_per_token,
            "binds": self.binds,
            "memory_micro_batch": self.memory_batch,
        }


@dataclass
class Search:
    """One accelerator's search: its rows, and what ruled the other layouts out."""

    gpu: Gpu
    system: System
    estimate: str
    rows: list[Row]
    ruled_out: dict[str, int] = field(default_factory=dict)
    layouts: int = 0
    compiled: Compiled | None = None
    inputs: dict[Layout, list[np.ndarray]] = field(default_factory=dict)
    table: LayoutTable | None = None  # every layout searched, feasible or not (derive/disaggregation.py's pools)


# Compiling: the library's layout formulas as numpy functions of the layout inputs and the batch.


@dataclass
class Compiled:
    tpot: Callable[..., Any]  # served: what the targets bind
    tpot_floor: Callable[..., Any]
    step: Callable[..., Any]
    ttft: Callable[..., Any]
    ttft_floor: Callable[..., Any]
    weights: Callable[..., Any]
    held: Callable[..., Any]
    branches: list[tuple[Callable[..., Any], float | None]]  # each branch and its q (None: linear)
    terms: Callable[..., Any]  # the step's floor terms, one slot each (STEP_TERMS)
    step_branches: list[tuple[Callable[..., Any], float | None]]  # the step alone's (a decode worker's)
    handover: Callable[..., Any]  # one request's cache one decode accelerator receives (K_h at S_p)
    one_row: Callable[..., Any]  # o_1L: where the step's weights stream on the GEMV kernel, off its branches' line


# The step's terms by name, each one accelerator's time in one slot at full speed (formulas/layout.py): the floor's,
# and what only the calibrated estimate adds: the busiest expert rank's extra FLOPs, DeepEP's fixed latency. What a
# layout spends per output token on each, p slots a step over B_L·tau tokens on N_L accelerators, says why it wins.
STEP_TERMS = {
    "weights per rank": lay.W_rg.symbol / sym.BW.symbol,
    "KV cache per rank": lay.K_g.symbol / sym.BW.symbol,
    "FLOPs per rank": (lay.F_g.symbol + lay.A_g.symbol) / sym.P.symbol,
    "tensor-parallel all-reduce": lay.Y_tp.symbol / lay.BW_tp.symbol,
    "expert all-to-all": lay.Y_ep.symbol / lay.BW_ep.symbol,
    # The busiest expert rank's extra routed-expert FLOPs (formulas/layout.py's I_ep; none at ep = 1).
    "expert imbalance": (lay.I_ep.symbol - 1)
    * sym.B.symbol
    * sym.tau.symbol
    * cal.F_x.symbol
    / (sym.n.symbol * lay.dp.symbol * lay.pp.symbol * sym.P.symbol),
    "pipeline sends": (lay.pp.symbol - 1) * lay.Y_pp.symbol / (lay.pp.symbol * lay.BW_pp.symbol),
    # DeepEP's fixed time a MoE layer, on wide expert parallelism (formulas/layout.py's w_E; the estimate's only).
    "DeepEP latency": lay.w_E.symbol * lay.L_a.symbol * lay.alpha_E.symbol / lay.pp.symbol,
}
ESTIMATE_TERMS = ("expert imbalance", "DeepEP latency")  # what the estimate adds to the floor's terms


def compile_plan(model: Model, gpu: Gpu, dtype: str, targets: Targets, floor: bool) -> Compiled:
    """The plan's functions for one model on one accelerator: compiled once a model (the accelerator's figures and
    fit are arguments, a few hundred ms a compile) and bound to this accelerator's numbers."""
    from derive.sweeps import predictor_inputs

    own = accelerator_values(gpu, dtype)
    figures = tuple(sorted(own, key=lambda s: s.key))
    key = (id(model), dtype, targets, floor, tuple(s.key for s in figures))
    if key not in _COMPILED:  # the model's values only where it is compiled
        values, library = predictor_inputs(model, gpu, dtype)
        _COMPILED[key] = (model, _compile(values, library, figures, targets, floor))
    compiled = _COMPILED[key][1]
    numbers = [float(own[s]) for s in figures]

    def bound(fn: Callable[..., Any]) -> Callable[..., Any]:
        return functools.partial(fn, *numbers)

    return Compiled(
        tpot=bound(compiled.tpot),
        tpot_floor=bound(compiled.tpot_floor),
        step=bound(compiled.step),
        ttft=bound(compiled.ttft),
        ttft_floor=bound(compiled.ttft_floor),
        weights=bound(compiled.weights),
        held=bound(compiled.held),
        branches=[(bound(fn), q) for fn, q in compiled.branches],
        terms=bound(compiled.terms),
        step_branches=[(bound(fn), q) for fn, q in compiled.step_branches],
        handover=bound(compiled.handover),
        one_row=bound(compiled.one_row),
    )


# Compiled plans by model (held, so its id stays its own), dtype, targets, floor and the figures an accelerator gives.
_COMPILED: dict[tuple[Any, ...], tuple[Model, Compiled]] = {}


def accelerator_values(gpu: Gpu, dtype: str) -> dict[Sym, sympy.Expr]:
    """What the plan takes from an accelerator: its datasheet figures, its fit and its link (derive/sweeps.py's
    predictor_inputs less the model's values)."""
    from derive.calibration import predictor_values
    from formulas import energy as en

    return {
        sym.BW: gpu.bandwidth,
        sym.P: gpu.peak(dtype)[0],
        sym.M: gpu.memory,
        en.P_acc: gpu.power,
        **predictor_values(gpu, dtype),
    }


def _compile(
    values: dict[Sym, sympy.Expr], library: Any, figures: tuple[Sym, ...], targets: Targets, floor: bool
) -> Compiled:
    """The layout formulas as numpy functions of the accelerator's `figures`, the layout inputs and the batch."""
    from derive.sweeps import compiled, substituted

    values = {s: v for s, v in values.items() if s not in figures}
    values.update({sym.S_p: sympy.Integer(targets.prompt), sym.S_o: sympy.Integer(targets.output)})
    values.setdefault(sym.k_e, sympy.Integer(1))  # a dense model: multiplied by L_a = 0
    values.setdefault(sym.E, sympy.Integer(1))  # and its imbalance by F_x = 0
    values.update(targets.speculation.values())
    swept = [*figures, *INPUTS, sym.B]
    arguments = [s.symbol for s in swept]
    step = lay.t_tok_f if floor else lay.t_tok  # the decode step, and any draft, for tau tokens a sequence
    served = library.get("layout_served_tpot").expr
    held_values = dict(values)
    held_values[sym.S] = sympy.Integer(targets.prompt + targets.output)  # the cache at the end of the reply
    handover_values = dict(values)
    handover_values[sym.S] = sympy.Integer(targets.prompt)  # the cache a prompt pass hands a decode worker

    def numeric(
        expr: sympy.Expr, context: dict[Sym, sympy.Expr] = values, predict: bool = True, keep: tuple[Sym, ...] = ()
    ) -> sympy.Expr:
        return substituted(expr, [*swept, *keep], context, library, predict)

    # One row a rank streams the weights on the GEMV kernel (formulas/layout.py o_1L), a minimum over the batch: the
    # branches take the step from two rows a rank on, linear in the batch, and largest_batch checks the batches
    # under that on the step itself.
    one_row = numeric(lay.o_1L.symbol)

    def rows(expr: sympy.Expr, line: bool) -> sympy.Expr:
        return expr.xreplace({lay.o_1L.symbol: sympy.S.Zero if line else one_row})

    def numpy(expr: sympy.Expr) -> Callable[..., Any]:
        return compiled(arguments, expr)

    # Substituted together: the forms share most of their terms, and inlining walks them once.
    decode, tpot_floor, one_step, ttft, ttft_floor, weights = numeric(
        sympy.Tuple(
            served.xreplace({lay.t_tok.symbol: step.symbol}),
            served.xreplace({lay.t_tok.symbol: lay.t_tok_f.symbol}),
            step.symbol,
            (lay.ttft_f if floor else lay.ttft_c).symbol,
            lay.ttft_f.symbol,
            lay.W_g.symbol,
        ),
        keep=(lay.o_1L,),
    )
    return Compiled(
        tpot=numpy(rows(decode, line=False)),
        tpot_floor=numpy(tpot_floor),
        step=numpy(rows(one_step, line=False)),
        ttft=numpy(ttft),
        ttft_floor=numpy(ttft_floor),
        weights=numpy(weights),
        held=numpy(numeric(lay.K_gs.symbol, held_values, predict=False)),
        branches=[(numpy(b), _base(b)) for b in _branches(rows(decode, line=True))],
        terms=numpy(numeric(sympy.Tuple(*STEP_TERMS.values()))),
        step_branches=[(numpy(b), _base(b)) for b in _branches(rows(one_step, line=True))],
        one_row=numpy(one_row),
        handover=numpy(numeric(dis.K_h.symbol, handover_values, predict=False)),
    )


def _branches(expr: sympy.Expr) -> list[sympy.Expr]:
    """The expression with each maximum that involves the batch replaced by one of its arguments, every way."""
    from derive.sweeps import LazyMax, LazyMin

    batch = sym.B.symbol
    if batch not in expr.free_symbols:
        return [expr]
    if expr.func == LazyMax:
        return [b for arg in expr.args for b in _branches(arg)]
    if expr.func == LazyMin:
        raise DeriveError("a step time with a minimum over the batch has no closed-form largest batch")
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        choices = [_branches(arg) for arg in expr.args]
        with sympy.evaluate(False):
            return [expr.func(*combo) for combo in itertools.product(*choices)]
    return [expr]


def _base(branch: sympy.Expr) -> float | None:
    """q of the branch's q^B term (the experts a batch touches), or None for a linear branch."""
    batch = sym.B.symbol
    bases = {
        float(p.base ** (p.exp / batch))
        for p in branch.atoms(sympy.Pow)
        if batch in p.exp.free_symbols and not (p.exp / batch).free_symbols
    }
    if len(bases) > 1:
        raise DeriveError("a step time with two experts' coverage terms has no closed-form largest batch")
    return bases.pop() if bases else None


# Searching.


def layout_inputs(model: Model, layouts: list[Layout], system: System) -> list[np.ndarray]:
    s = shape(model)
    rows = [
        (
            lt.tp,
            lt.pp,
            lt.dp,
            lt.ep,
            s.moe_layers if lt.ep > 1 or lt.dp > 1 else 0,  # tokens travel to the experts (formulas/layout.py)
            float(lt.on_deepep(system, s.moe_layers)),  # on DeepEP's kernels
            1.0 if lt.tp * lt.dp > system.domain else 0.0,  # the expert group spans NVLink domains
            float(system.link(lt.tp)),
            float(system.link(lt.tp * lt.dp)),
            float(system.link(lt.accelerators)),
            1.0,  # d_p: a lone prompt (search_gpu prices every rank's at once for the served TPOT)
        )
        for lt in layouts
    ]
    return [np.array(column, dtype=float) for column in zip(*rows, strict=True)]


def search_gpu(
    model: Model,
    gpu: Gpu,
    dtype: str,
    targets: Targets,
    max_accelerators: int,
    max_batch: int,
    price: Price | None,
    floor: bool = False,
) -> Search:
    system = system_for(gpu)
    layouts = search(model, system, max_accelerators)
    fit = calibration(gpu, dtype)
    estimate = "floor (roofline)" if floor else _estimate_label(fit)
    found = Search(gpu, system, estimate, [], {}, len(layouts))
    if not layouts:
        return found
    compiled = compile_plan(model, gpu, dtype, targets, floor)
    found.compiled = compiled
    size = len(layouts)
    base = layout_inputs(model, layouts, system)

    def at(fn: Callable[..., Any], batch: Any, prompt_pass: Any = 0.0) -> np.ndarray:
        """`fn` over every layout at `batch`, each request's prompt pass taking `prompt_pass` (an array)."""
        return np.broadcast_to(np.asarray(fn(*base, np.broadcast_to(prompt_pass, (size,)), batch), float), (size,))

    weights, per_sequence = at(compiled.weights, 0.0), at(compiled.held, 1.0)
    by_memory = np.floor((float(gpu.memory) - weights) / per_sequence)
    ttft = at(compiled.ttft, 1.0)
    # What one more prompt on each attention rank adds to a step that already reads the weights and pays the fixed
    # times (formulas/layout.py, t_rq): the pass of two prompts less that of one, with all d ranks' prompts sharing
    # the stage's experts at once (d_p = d), as they do on a busy server.
    together = [*base[:-1], base[2]]

    def added(fn: Callable[..., Any]) -> np.ndarray:
        twice, once_ = (np.asarray(fn(*together, np.zeros(size), b), float) for b in (2.0, 1.0))
        return np.broadcast_to(twice - once_, (size,))

    marginal, marginal_floor = added(compiled.ttft), added(compiled.ttft_floor)
    # A prefill worker's pass: one prompt on each of its attention ranks at once (derive/disaggregation.py).
    every_rank = np.broadcast_to(np.asarray(compiled.ttft(*together, np.zeros(size), 1.0), float), (size,))
    inputs = [*base, marginal]
    found.table = LayoutTable(layouts, base, by_memory, ttft, marginal, every_rank)
    cap = np.array(batch_cap(layouts, max_batch), dtype=float)
    bound = np.minimum(by_memory, cap)
    by_tpot = np.floor(
        largest_batch(compiled.branches, inputs, float(targets.tpot), (compiled.tpot, compiled.one_row), bound) + 1e-9
    )
    batch = np.minimum(by_tpot, bound)
    for i, layout in enumerate(layouts):
        reason = None
        if by_memory[i] < 1:
            reason = "weights and one sequence's cache do not fit"
        elif ttft[i] > float(targets.ttft):
            reason = "TTFT above the target"
        elif by_tpot[i] < 1:
            reason = "TPOT above the target at batch 1"
        if reason:
            found.ruled_out[reason] = found.ruled_out.get(reason, 0) + 1
            continue
        b = int(batch[i])
        binds = "TPOT" if by_tpot[i] <= min(by_memory[i], cap[i]) else "memory"
        if cap[i] < min(by_tpot[i], by_memory[i]):
            binds = "batch cap"
        one = [np.array([column[i]]) for column in inputs]
        found.inputs[layout] = one

        def once(fn: Callable[..., Any], columns: list[np.ndarray] = one, batch: int = b) -> float:
            return float(np.ravel(fn(*columns, float(batch)))[0])

        tpot = once(compiled.tpot)
        if tpot > float(targets.tpot) * (1 + 1e-9):
            raise DeriveError(f"internal: the closed-form batch {b} misses the TPOT target on {layout}")
        floor_inputs = [*one[:-1], np.array([marginal_floor[i]])]
        prompt = (float(ttft[i]), float(marginal[i]))
        row = _row(gpu, layout, b, tpot, once(compiled.tpot_floor, floor_inputs), prompt, targets, price, binds)
        row.step = once(compiled.step)
        per_token = layout.pp * layout.accelerators / row.sequences  # slots a step, accelerators, over its tokens
        slot = compiled.terms(*one, float(b))
        row.terms = {name: float(np.ravel(t)[0]) * per_token for name, t in zip(STEP_TERMS, slot, strict=True)}
        row.memory_batch = int(min(by_memory[i], cap[i]))
        found.rows.append(row)
    return found


def _estimate_label(fit: Any) -> str:
    if fit.borrowed:
        measured = ""
        if fit.borrowed_error is not None:
            tpot, ttft = fit.borrowed_error["tpot"]["median"], fit.borrowed_error["ttft"]["median"]
            measured = f"; borrowing so is off by {tpot:.1%} in TPOT and {ttft:.1%} in TTFT at the median"
        return (
            f"calibrated, {fit.fitted_on}'s {fit.fitted_precision} fit borrowed (none for {fit.gpu} in "
            f"{fit.precision}{measured})"
        )
    covers = f", up to tp {fit.max_tp}: far off beyond" if fit.max_tp is not None else ""
    return f"calibrated ({fit.fitted_on}, {fit.fitted_precision} fit{covers})"


def _row_givens() -> tuple[Sym, ...]:
    from formulas.energy import P_acc

    return (sym.n, lay.pp, lay.dp, sym.B, sym.tau, sym.S_o, lay.tpot_s, P_acc, lay.lam, lay.price, lay.Q_T)


_ROW_GIVENS = _row_givens()


@functools.cache
def _row_formulas() -> dict[Sym, Callable[..., Any]]:
    """What a row counts with a ceiling, as exact functions of its layout, batch, step and targets (SymPy numbers in
    and out: the accelerators a rate needs must not round up): the library's formulas inlined once."""
    from derive.core.evaluation import evaluate

    own = {s: s.symbol for s in _ROW_GIVENS}
    arguments = [s.symbol for s in _ROW_GIVENS]
    return {q: sympy.lambdify(arguments, evaluate(q.symbol, dict(own)), "sympy") for q in (lay.N_rate, lay.c_fleet)}


@functools.cache
def _queue_formulas() -> dict[str, Callable[..., Any]]:
    """formulas/queueing.py as float functions: "capacity" is Q_T, the rate at which the mean TTFT meets the target,
    of (TTFT_L, t_rq, d, TTFT_max); "ttft" is TTFT_q of (lambda_c, TTFT_L, t_rq, d)."""
    import formulas
    from derive.core.evaluation import evaluate
    from formulas import queueing as qu

    library = formulas.library()
    inputs = (lay.ttft_c, lay.t_rq, lay.dp, qu.T_max, qu.lam_c)
    own = {s: s.symbol for s in inputs}
    return {
        "capacity": sympy.lambdify(
            [s.symbol for s in inputs[:4]], evaluate(lay.Q_T.symbol, dict(own), library), "math"
        ),
        "ttft": sympy.lambdify(
            [s.symbol for s in (qu.lam_c, *inputs[:3])], evaluate(qu.ttft_q.symbol, dict(own), library), "math"
        ),
    }


@functools.cache
def _row_floats() -> dict[Sym, Callable[..., Any]]:
    """A row's printed figures as float functions (math) of the same givens: exact SymPy arithmetic on every row of
    a large search was most of a plan's time."""
    from derive.core.evaluation import evaluate

    own = {s: s.symbol for s in _ROW_GIVENS}
    arguments = [s.symbol for s in _ROW_GIVENS]
    quantities = (lay.N_L, lay.B_L, lay.Q_L, lay.Q_s, lay.R_gpu, lay.R_usr, lay.e_tok_L, lay.c_tok)
    return {q: sympy.lambdify(arguments, evaluate(q.symbol, dict(own)), "math") for q in quantities}


def _row(
    gpu: Gpu,
    layout: Layout,
    batch: int,
    tpot: float,
    tpot_floor: float,
    prompt: tuple[float, float],
    targets: Targets,
    price: Price | None,
    binds: str,
) -> Row:
    """The reported quantities of one layout, from the library's formulas: `prompt` is one request's prompt pass
    and what one more prompt adds to a step (formulas/layout.py's TTFT_L and t_rq)."""
    from formulas.energy import P_acc

    pass_alone, per_prompt = prompt
    queue = _queue_formulas()
    ttft_capacity = float(queue["capacity"](pass_alone, per_prompt, layout.dp, float(targets.ttft)))
    given: dict[Sym, Any] = {
        sym.n: sympy.Integer(layout.tp),
        lay.pp: sympy.Integer(layout.pp),
        lay.dp: sympy.Integer(layout.dp),
        sym.B: sympy.Integer(batch),
        sym.tau: sympy.Integer(1),
        sym.S_o: sympy.Integer(targets.output),
        lay.tpot_s: sympy.Float(tpot),
        P_acc: gpu.power,
        lay.lam: targets.rate,
        lay.price: price.per_second if price is not None else None,
        lay.Q_T: sympy.Float(ttft_capacity),
    }
    at, fast = _row_formulas(), _row_floats()
    floats = [math.nan if given[s] is None else float(given[s]) for s in _ROW_GIVENS]

    def value(quantity: Sym) -> sympy.Expr:
        return at[quantity](*(given[s] for s in _ROW_GIVENS))

    # The figures a row prints, in floats; the accelerators a rate needs exactly (a ceiling must not round up).
    value_of = {s: fast[s](*floats) for s in (lay.N_L, lay.B_L, lay.Q_L, lay.Q_s, lay.R_gpu, lay.R_usr, lay.e_tok_L)}
    for_rate = int(value(lay.N_rate)) if targets.rate is not None else None
    if ttft_capacity < value_of[lay.Q_L]:
        binds = "TTFT"
    # A copy's load: busy at its served capacity, or the rate spread over the whole copies that serve it.
    rate = targets.rate
    load = value_of[lay.Q_s] if rate is None or for_rate is None else float(rate) / (for_rate / value_of[lay.N_L])
    served_ttft = float(queue["ttft"](load, pass_alone, per_prompt, layout.dp))
    cost = fleet = None
    if price is not None:
        cost = fast[lay.c_tok](*floats) * 1e6
        if targets.rate is not None:
            fleet = float(value(lay.c_fleet)) * 1e6
    return Row(
        gpu=gpu.name,
        layout=layout,
        batch=batch,
        sequences=int(value_of[lay.B_L]),
        tpot=tpot,
        tpot_floor=tpot_floor,
        step=tpot,
        ttft=served_ttft,
        prompt_pass=pass_alone,
        capacity=value_of[lay.Q_s],
        per_accelerator=value_of[lay.R_gpu],
        per_user=value_of[lay.R_usr],
        for_rate=for_rate,
        cost_per_million=cost,
        joules_per_token=value_of[lay.e_tok_L],
        binds=binds,
        memory_batch=batch,
        fleet_cost_per_million=fleet,
    )


def pareto(rows: list[Row]) -> list[Row]:
    """Rows no other row beats on both throughput per accelerator and tokens per user, best throughput first."""
    ordered = sorted(rows, key=lambda r: (-r.per_accelerator, -r.per_user, r.layout.accelerators))
    front: list[Row] = []
    for row in ordered:
        if not front or row.per_user > front[-1].per_user:
            front.append(row)
    return front


def _first_upper(text: str) -> str:
    """A sentence's first letter in capitals, the rest as written (str.capitalize would lower 'USD')."""
    return text[:1].upper() + text[1:]


def pick(rows: list[Row]) -> Row | None:
    """The cheapest fleet for the rate where one is asked and every row has a price, else the cheapest busy copy
    per million tokens, else the most tokens per accelerator."""
    if not rows:
        return None
    if all(r.fleet_cost_per_million is not None for r in rows):  # a rate to serve: the cheapest fleet for it
        # Fleets that cost the same (the same accelerators, whole copies): the one with more headroom, cheaper busy.
        return min(
            rows, key=lambda r: (fleet_key(r.fleet_cost_per_million or 0), r.cost_per_million, r.layout.accelerators)
        )
    if all(r.cost_per_million is not None for r in rows):
        return min(rows, key=lambda r: (r.cost_per_million, r.layout.accelerators))
    return max(rows, key=lambda r: (r.per_accelerator, -r.layout.accelerators))


def runner_up(rows: list[Row], chosen: Row) -> Row | None:
    """The row `pick` would choose were the pick not there."""
    return pick([r for r in rows if r is not chosen])


def why(chosen: Row, other: Row, prices: dict[str, Any]) -> tuple[str, dict[str, float]]:
    """Why the pick beats the runner-up, in closed form, and the factors by name (each > 1 where the pick is ahead).

    A copy's tokens a second per accelerator are R = Q_s·S_o/N_L with Q_s = min(Q_L, Q_T) and Q_L = B_L·tau/(S_o·
    TPOT_s) (formulas/layout.py, formulas/queueing.py), so R = (B_L/N_L)·(tau/TPOT_s)·(Q_s/Q_L): sequences per
    accelerator, the step they share, and the share of its batch TTFT lets a copy take. A token costs the price of
    an accelerator-second over R, and a fleet rounds its copies up. The ratios multiply to the two costs' ratio.
    """

    def cap(row: Row) -> float:  # Q_s/Q_L, S_o·Q_L being B_L·tau/TPOT_s: 1 unless TTFT binds
        return row.capacity / (row.sequences * row.per_user)

    factors = {
        "sequences per accelerator": (chosen.sequences / chosen.layout.accelerators)
        / (other.sequences / other.layout.accelerators),
        "step time": chosen.per_user / other.per_user,
        "TTFT's cap on the requests a copy takes": cap(chosen) / cap(other),
    }
    price_of = {gpu: float(p.per_second) for gpu, p in prices.items()}
    if chosen.gpu in price_of and other.gpu in price_of:
        factors["price per accelerator-hour"] = price_of[other.gpu] / price_of[chosen.gpu]
    if chosen.fleet_cost_per_million is not None and other.fleet_cost_per_million is not None:

        def whole_copies(row: Row) -> float:  # the fleet's cost over one copy's busy all the time
            return (row.fleet_cost_per_million or 0) / (row.cost_per_million or 1)

        factors["whole copies for the rate"] = whole_copies(other) / whole_copies(chosen)
    tie = ""
    whole = factors.get("whole copies for the rate")
    if whole is not None and abs(math.log(math.prod(factors.values()))) < 1e-6:
        # The fleets cost the same: `pick` breaks the tie by the cheaper copy busy all the time.
        tie = "the two fleets cost the same, and the tie goes to the copy cheaper when busy: "
        factors = {k: v for k, v in factors.items() if k != "whole copies for the rate"}
    ahead = {k: v for k, v in factors.items() if abs(v - 1) > 5e-3}
    # What decides is the pick's largest advantage: a factor against it (below 1) is overcome, not decisive; where
    # the factors multiply to 1 (or none favours the pick) the two tie, and the order breaks it.
    favours = {k: v for k, v in ahead.items() if v > 1}
    if not favours or not tie and abs(math.log(math.prod(factors.values()))) < 1e-6:
        return "it ties with the runner-up (its factors multiply to 1); the order breaks the tie", factors
    deciding = max(favours, key=lambda k: abs(math.log(favours[k])))
    said = ", ".join(f"{k} {v:.2f}x" for k, v in sorted(ahead.items(), key=lambda kv: -abs(math.log(kv[1]))))
    limits = ""
    if deciding == "sequences per accelerator":
        limits = (
            f"; {chosen.sequences / chosen.layout.accelerators:,.1f} against "
            f"{other.sequences / other.layout.accelerators:,.1f}, "
            + (
                f"both limited by {chosen.binds}"
                if chosen.binds == other.binds
                else f"the pick's limited by {chosen.binds}, the runner-up's by {other.binds}"
            )
        )
    return (
        f"{tie}{deciding} decides ({said}; above 1 is the pick's advantage{limits}){_step_terms(chosen, other)}",
        factors,
    )


def _step_terms(chosen: Row, other: Row) -> str:
    """'; of the step's terms ..., the pick saves most on X (a against b) and pays most on Y (c against d)': the
    floor terms (STEP_TERMS) whose accelerator-time per output token differs most each way, where rows have them."""
    from derive.core.units import format_quantity

    if not chosen.terms or not other.terms:
        return ""
    # A gap under 0.5% of the larger side is rounding, not a difference (the same all-to-all on both, say).
    gap = {
        name: other.terms[name] - chosen.terms[name]
        for name in STEP_TERMS
        if abs(other.terms[name] - chosen.terms[name]) > 5e-3 * max(other.terms[name], chosen.terms[name])
    }
    if not gap:
        return ""

    def said(name: str) -> str:
        mine, theirs = (format_quantity(row.terms[name], "second") for row in (chosen, other))
        return f"{name} ({mine} against {theirs})"

    saves, pays = max(gap, key=lambda k: gap[k]), min(gap, key=lambda k: gap[k])
    parts = ([f"saves most on {said(saves)}"] if gap[saves] > 0 else []) + (
        [f"pays most on {said(pays)}"] if gap[pays] < 0 else []
    )
    if not parts:
        return ""
    added = [name for name in ESTIMATE_TERMS if any(row.terms.get(name) for row in (chosen, other))]
    kinds = f" (the floor's, and the {' and '.join(added)} the estimate adds)" if added else ""
    return (
        f"; of the step's terms at full speed{kinds}, in accelerator-time per output token, the pick "
        + " and ".join(parts)
    )


def _ranked_by(row: Row) -> str:
    """The figure `pick` ranks a row by, as the table prints it."""
    if row.fleet_cost_per_million is not None:
        return f"{row.fleet_cost_per_million:.2f} USD per million tokens as a fleet"
    if row.cost_per_million is not None:
        return f"{row.cost_per_million:.2f} USD per million tokens"
    return f"{row.per_accelerator:,.0f} tokens/s per accelerator"


def frontier(found: Search, targets: Targets, points: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Tokens a second per user and per accelerator along the best layouts of one accelerator, every batch.

    Each feasible layout is run from batch 1 to what its memory holds; the frontier keeps the points no other
    point beats on both axes.
    """
    from derive.core.evaluation import inline

    assert found.compiled is not None
    # Along the batch a copy takes what its batch finishes (no TTFT cap: the frontier is the step's).
    per_accelerator = inline(lay.R_gpu.symbol, lay.tpot_s).xreplace({lay.Q_T.symbol: sympy.oo})
    args = [sym.S_o, lay.tpot_s, lay.B_L, lay.N_L, sym.tau]
    rate = sympy.lambdify([a.symbol for a in args], per_accelerator, "numpy")
    users, accelerators = [], []
    for row in found.rows:
        batches = np.unique(np.round(np.geomspace(1, max(row.memory_batch, 1), points)))
        step = np.broadcast_to(found.compiled.tpot(*found.inputs[row.layout], batches), batches.shape)
        ok = step <= float(targets.tpot) * 4  # the frontier near the target, not a batch far past it
        sequences = batches * row.layout.pp
        users.append(1 / step[ok])
        accelerators.append(rate(targets.output, step[ok], sequences[ok], row.layout.accelerators, 1))
    if not users:
        return np.array([]), np.array([])
    u, g = np.concatenate(users), np.concatenate(accelerators)
    order = np.argsort(-u)
    keep = g[order] >= np.maximum.accumulate(g[order])
    return u[order][keep][::-1], g[order][keep][::-1]


@dataclass
class Plan:
    """Every accelerator's search, the Pareto rows and the pick: what `derive plan` prints."""

    model: Model
    dtype: str
    targets: Targets
    searches: list[Search]
    prices: dict[str, Price]
    max_accelerators: int
    max_batch: int
    floor: bool = False
    defaults: tuple[str, ...] = ()
    dtype_option: str = COMMAND_DTYPE  # how its user gives the dtype (a question: --set dtype), for the notes

    @property
    def rows(self) -> list[Row]:
        return [row for found in self.searches for row in found.rows]

    def pareto(self) -> list[Row]:
        """Each accelerator's frontier, with the pick and its runner-up wherever they sit (the cheapest fleet for a
        rate may sit off the frontier, and the summary weighs the pick against the runner-up by name)."""
        front = [row for found in self.searches for row in pareto(found.rows)]
        for row in (self.pick, self.runner_up):
            if row is not None and row not in front:
                front.append(row)
        return sorted(front, key=lambda r: (r.cost_per_million is None, r.cost_per_million or 0, -r.per_accelerator))

    @functools.cached_property
    def disaggregated(self) -> Disaggregated | None:
        """The best disaggregated pair of pools over every accelerator (derive/disaggregation.py), or None."""
        found = [
            split
            for f in self.searches
            if (
                split := disaggregate(
                    f.table,
                    f.compiled,
                    f.system,
                    f.gpu.name,
                    self.targets,
                    self.prices.get(f.gpu.name),
                    self.max_batch,
                    self.max_accelerators,
                    self.floor,
                )
            )
            is not None
        ]
        return min(found, key=ranked) if found else None

    @property
    def pick(self) -> Row | None:
        """The cheapest row meeting the targets (without prices, the most tokens per accelerator); None if none."""
        return pick(self.rows)

    @property
    def runner_up(self) -> Row | None:
        """The row the pick is weighed against: the one `pick` would choose were the pick not there."""
        chosen = self.pick
        return None if chosen is None else runner_up(self.rows, chosen)

    @property
    def results(self) -> dict[str, Any]:
        """The pick's figures by name, as pint quantities (as a Derivation's `results`); empty where none meets the
        targets."""
        from derive.core.units import registry

        chosen = self.pick
        if chosen is None:
            return {}
        units = {
            "accelerators": "",
            "micro_batch": "sequence",
            "sequences": "sequence",
            "tpot_s": "second",
            "tpot_floor_s": "second",
            "decode_step_s": "second",
            "ttft_s": "second",
            "prompt_pass_s": "second",
            "requests_per_s": "sequence/second",
            "tokens_per_s_per_accelerator": "token/second",
            "tokens_per_s_per_user": "token/second/sequence",
            "accelerators_for_rate": "",
            "usd_per_million_tokens": "",
            "fleet_usd_per_million_tokens": "",
            "joules_per_token": "joule/token",
        }
        out: dict[str, Any] = {"gpu": chosen.gpu, "layout": str(chosen.layout), "binds": chosen.binds}
        for key, value in chosen.as_dict().items():
            if key in units and value is not None:
                name = key.removesuffix("_s") if units[key] == "second" else key
                out[name] = registry().Quantity(value, units[key]) if units[key] else value
        return out

    def __repr__(self) -> str:
        chosen = self.pick
        picked = "no layout meets the targets" if chosen is None else f"pick {chosen.gpu} {chosen.layout}"
        return f"<Plan {self.model.name} ({self.dtype}): {picked}; {len(self.rows)} layouts meet the targets>"

    @property
    def notes(self) -> list[str]:
        out = [f"{f.gpu.name}: {f.system.title}; estimate: {f.estimate}" for f in self.searches]
        for f in self.searches:
            ruled = ", ".join(f"{reason} ({count})" for reason, count in sorted(f.ruled_out.items()))
            out.append(
                f"{f.gpu.name}: {f.layouts} layouts searched, {len(f.rows)} meet the targets"
                + (f"; ruled out: {ruled}" if ruled else "")
            )
        for name, price in self.prices.items():
            out.append(f"price {name}: {float(price.per_second) * 3600:.2f} USD/h ({price.label}; {price.source})")
        missing = [f.gpu.name for f in self.searches if f.gpu.name not in self.prices]
        if missing:
            out.append(f'no price for {", ".join(missing)}: pass --price "{missing[0]}=2.5 USD/h" for a cost')
        out.append(
            "TPOT is what a user sees on an aggregated server: the decode step plus its share of the prompt passes "
            "interleaved with it (chunked prefill); TTFT is the mean a user sees at the copy's load (busy at its "
            "capacity, or the rate over its copies): the prompt pass and an M/D/1 wait behind the prompts ahead "
            "(formulas/queueing.py); where TTFT binds, a copy takes fewer requests than its batch could finish (its "
            "batch and TPOT are then the most it runs at); energy is every accelerator at its TDP"
        )
        if self.disaggregated is not None:
            out.append(
                "disaggregated: a prefill pool and a decode pool of the same accelerator, balanced (formulas/"
                "disaggregated.py); a prefill worker runs one prompt a pass on each attention rank (a context "
                "server's token budget one prompt, as aiconfigurator 0.12 configures TensorRT-LLM's), and its TTFT is "
                "its M/D/1 wait, the prompt pass and the handover of the request's cache to its decode worker; a "
                "decode worker's TPOT is its step alone"
                + (
                    ""
                    if self.floor
                    else "; as served, a prefill pass takes {} of the profiled one and a decode step {}, and paired "
                    "pools deliver {} and {} of their standalone rates (aiconfigurator 0.12's defaults, calibrated "
                    "on silicon)".format(
                        *(f"{float(dis.SERVED[s]):g}" for s in (dis.kappa_p, dis.kappa_d, dis.u_p, dis.u_d))
                    )
                )
            )
        if self.targets.speculation:
            out.append(
                self.targets.speculation.describe() + "; TPOT is a verification pass and its draft steps over the "
                "tokens a sequence gains from them (formulas/speculative.py)"
            )
        arch = self.model.config
        gpus = [f.gpu for f in self.searches]
        out.extend(checkpoint_notes(arch.weight_recipe, arch.expert_format, self.dtype, gpus, self.dtype_option))
        beyond = arch.position_note(self.targets.prompt + self.targets.output, self.model.name)
        if beyond:
            out.append(beyond)
        if self.defaults:
            t = self.targets
            said = {"dtype": self.dtype, "prompt": t.prompt, "output": t.output, "ttft": f"{float(t.ttft) * 1e3:g} ms"}
            out.append("defaults used: " + ", ".join(f"{k}={said[k]}" if k in said else k for k in self.defaults))
        return out

    def describe_targets(self) -> str:
        t = self.targets
        rate = f", {float(t.rate):g} requests/s" if t.rate is not None else ""
        return (
            f"{self.model.title} ({self.dtype}), {t.prompt:,}-token prompts, {t.output:,}-token replies: "
            f"TTFT <= {float(t.ttft) * 1e3:g} ms, TPOT <= {float(t.tpot) * 1e3:g} ms{rate}; "
            f"layouts of up to {self.max_accelerators} accelerators"
        )

    def to_dict(self) -> dict[str, Any]:
        chosen = self.pick
        return {
            "command": "plan",
            "model": self.model.name,
            "dtype": self.dtype,
            "targets": {
                "ttft_s": float(self.targets.ttft),
                "tpot_s": float(self.targets.tpot),
                "requests_per_s": None if self.targets.rate is None else float(self.targets.rate),
                "prompt": self.targets.prompt,
                "output": self.targets.output,
            },
            "max_accelerators": self.max_accelerators,
            "max_batch_per_rank": self.max_batch,
            "pick": None if chosen is None else chosen.as_dict(),
            "why": self._why_dict(),
            "disaggregated": self._disaggregated_dict(),
            "pareto": [row.as_dict() for row in self.pareto()],
            "searches": {
                f.gpu.name: {
                    "system": f.system.name,
                    "estimate": f.estimate,
                    "layouts": f.layouts,
                    "meet_targets": len(f.rows),
                    "ruled_out": f.ruled_out,
                }
                for f in self.searches
            },
            "notes": self.notes,
        }

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), indent=2) + "\n"

    def table(self) -> tuple[list[str], list[list[str]]]:
        head = [
            "",
            "GPU",
            "accel.",
            "layout",
            "batch",
            "tok/s/accel.",
            "tok/s/user",
            "TPOT ms (floor)",
            "TTFT ms",
            "accel. for rate",
            "USD/M tok",
            "fleet USD/M tok",
            "J/tok",
            "binds",
        ]
        chosen, other = self.pick, self.runner_up
        body = []
        for r in self.pareto():
            body.append(
                [
                    "*" if r is chosen else "+" if r is other else "",
                    r.gpu,
                    str(r.layout.accelerators),
                    str(r.layout),
                    f"{r.batch:,}" + (f" x {r.layout.pp}" if r.layout.pp > 1 else ""),
                    f"{r.per_accelerator:,.0f}",
                    f"{r.per_user:,.1f}",
                    f"{r.tpot * 1e3:.1f} ({r.tpot_floor * 1e3:.1f})",
                    f"{r.ttft * 1e3:,.0f}",
                    "" if r.for_rate is None else f"{r.for_rate:,}",
                    "" if r.cost_per_million is None else f"{r.cost_per_million:.2f}",
                    "" if r.fleet_cost_per_million is None else f"{r.fleet_cost_per_million:.2f}",
                    f"{r.joules_per_token:.3g}",
                    r.binds,
                ]
            )
        return head, body

    def legend(self) -> str:
        """What the table's rows are and what its marks mean."""
        return (
            "On each accelerator, the layouts no other beats on both tokens/s per accelerator and tokens/s per user, "
            "by cost per million tokens (without a price, by tokens/s per accelerator)"
            + ("; * marks the pick" if self.pick is not None else "")
            + (", + the runner-up it is weighed against" if self.runner_up is not None else "")
            + "."
        )

    def to_text(self) -> str:
        head, body = self.table()
        widths = [max(len(x) for x in column) for column in zip(head, *body, strict=True)]
        lines = [f"Plan: {self.describe_targets()}", ""]
        for cells in (head, *body):
            lines.append(
                "  ".join(
                    c.rjust(w) if i > 3 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
                ).rstrip()
            )
        lines += ["", self.legend(), "", self.summary(), ""] + [f"note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def to_markdown(self) -> str:
        head, body = self.table()
        rows = [f"| {' | '.join(head)} |", f"|{'|'.join('---' for _ in head)}|"] + [
            f"| {' | '.join(c)} |" for c in body
        ]
        notes = "\n".join(f"- {n}" for n in self.notes)
        table = "\n".join(rows)
        return f"## Plan\n\n{self.describe_targets()}\n\n{table}\n\n{self.legend()}\n\n{self.summary()}\n\n{notes}\n"

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def summary(self) -> str:
        chosen = self.pick
        if chosen is None:
            return "No layout meets the targets."
        by = (
            "the cheapest fleet for the rate"
            if chosen.fleet_cost_per_million is not None
            else "the lowest cost per million output tokens"
            if chosen.cost_per_million is not None
            else "the most output tokens a second per accelerator"
        )
        rate = ""
        if chosen.for_rate is not None:
            copies = chosen.for_rate // chosen.layout.accelerators
            wanted = float(self.targets.rate or 0)
            rate = (
                f"; {wanted:g} requests/s take {counted(copies, 'copy', 'copies')}, "
                f"{counted(chosen.for_rate, chosen.gpu)}"
            )
            if chosen.fleet_cost_per_million is not None:
                rate += (
                    f", {chosen.fleet_cost_per_million:.2f} USD per million output tokens as a fleet "
                    f"({chosen.cost_per_million:.2f} for one copy busy all the time)"
                )
        return (
            f"Pick ({by}): {chosen.layout.accelerators} x {chosen.gpu} as {chosen.layout}, "
            f"micro-batch {chosen.batch:,} ({chosen.sequences:,} sequences), "
            f"{chosen.per_accelerator:,.0f} tokens/s per accelerator at "
            f"{chosen.per_user:,.1f} tokens/s per user, TPOT {chosen.tpot * 1e3:.1f} ms (floor "
            f"{chosen.tpot_floor * 1e3:.1f} ms), limited by {chosen.binds}{rate}.{self._why()}{self._disaggregated()}"
        )

    def _disaggregated_dict(self) -> dict[str, Any] | None:
        split, chosen = self.disaggregated, self.pick
        if split is None or chosen is None:
            return None
        return {**split.as_dict(), "says": verdict(chosen, split)}

    def _disaggregated(self) -> str:
        """' Disaggregated: ...; X wins: ...' where a pair of pools meets the targets."""
        split, chosen = self.disaggregated, self.pick
        if split is None or chosen is None:
            return " No disaggregated pair of pools meets the targets."
        return (
            f" Disaggregated, the best pair on {split.gpu}: {split.describe()}. {_first_upper(verdict(chosen, split))}."
        )

    def _why_dict(self) -> dict[str, Any] | None:
        chosen, other = self.pick, self.runner_up
        if chosen is None or other is None:
            return None
        said, factors = why(chosen, other, self.prices)
        terms = {name: {"pick": chosen.terms.get(name), "runner_up": other.terms.get(name)} for name in STEP_TERMS}
        return {"runner_up": other.as_dict(), "factors": factors, "step_terms_s_per_token": terms, "says": said}

    def _why(self) -> str:
        """' Against the runner-up, ... decides' where there is one."""
        chosen, other = self.pick, self.runner_up
        if chosen is None or other is None:
            return ""
        said, _ = why(chosen, other, self.prices)
        return (
            f" Against the runner-up, {other.layout.accelerators} x {other.gpu} as {other.layout}"
            f" ({_ranked_by(other)}, the pick {_ranked_by(chosen)}): {said}."
        )

    def figure(self, path: Any) -> list[Any]:
        """The throughput-per-accelerator against tokens-per-user frontier, one curve per accelerator."""
        from derive import figures
        from derive.core import validate

        stem = validate.figure_file(path).with_suffix("")
        plt = figures.pyplot()
        fig, ax = plt.subplots()
        for i, found in enumerate(self.searches):
            users, per_accelerator = frontier(found, self.targets)
            if len(users):
                ax.plot(
                    users,
                    per_accelerator,
                    color=f"C{i}",
                    lw=1.5,
                    label=f"{found.gpu.name} ({found.estimate.split(',')[0].split(' (')[0]})",
                )
        chosen = self.pick
        if chosen is not None:
            ax.plot(
                [chosen.per_user], [chosen.per_accelerator], "k*", ms=10, label=f"pick: {chosen.gpu} {chosen.layout}"
            )
        ax.axvline(1 / float(self.targets.tpot), color="grey", ls=":", lw=1, label="TPOT target")
        ax.set_xlabel("tokens/s per user")
        ax.set_ylabel("output tokens/s per accelerator")
        ax.set_title(f"{self.model.title}: the best layout at each speed", fontsize=10)
        ax.legend(fontsize=8)
        figures.save(fig, stem)
        return [stem.with_suffix(".svg"), stem.with_suffix(".png")]


def plan(
    model: Model,
    gpus: list[Gpu],
    targets: Targets,
    dtype: str = "bf16",
    max_accelerators: int = 64,
    max_batch: int = 1024,
    price_overrides: str | None = None,
    floor: bool = False,
    defaults: tuple[str, ...] = (),
    dtype_option: str = COMMAND_DTYPE,
) -> Plan:
    from derive.systems import prices

    table = prices(gpus, price_overrides)
    searches = [
        search_gpu(model, gpu, dtype, targets, max_accelerators, max_batch, table.get(gpu.name), floor) for gpu in gpus
    ]
    found = Plan(model, dtype, targets, searches, table, max_accelerators, max_batch, floor, defaults, dtype_option)
    if not found.rows:
        reasons: dict[str, int] = {}
        for f in searches:
            for reason, count in f.ruled_out.items():
                reasons[reason] = reasons.get(reason, 0) + count
        said = ", ".join(f"{r} ({c})" for r, c in sorted(reasons.items(), key=lambda kv: -kv[1])) or "no valid layout"
        raise DeriveError(
            f"no layout of up to {max_accelerators} {'/'.join(g.name for g in gpus)} meets the targets: {said}",
            "Relax --tpot or --ttft, raise --max-gpus, or try another --gpu or --dtype"
            if dtype_option == COMMAND_DTYPE
            else "Relax --set tpot= or ttft=, raise --set max_gpus=, or try other --set gpus= or dtype=",
        )
    return found
