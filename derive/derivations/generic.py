"""`derive eval` and `derive solve`: any library formula, evaluated or solved for any symbol.

A scenario gives every input symbol a value from the model, the accelerator and the
options; `--set key=value` replaces any of them. Derived quantities are computed on
demand from their formulas, so setting the context changes the cache bytes too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import sympy

from derive.core import validate
from derive.core.errors import DeriveError
from derive.core.evaluation import depends_on, evaluate
from derive.core.sheet import Sheet, Work
from derive.core.symbols import Sym, all_symbols, by_key, lookup, tagged
from derive.core.units import format_quantity
from derive.derivations.common import (
    FIGURE_OPTIONS,
    REQUEST_OPTIONS,
    Setup,
    chose_default,
    default_tp,
    kv_values,
    model_library,
    start,
    weight_format,
)
from derive.speculation import NONE
from formulas import energy as en
from formulas import library
from formulas import notation as sym
from formulas import prefill as pf

# Units whose values are plain counts: `--set batch=16` needs no unit.
_COUNT_UNITS = {"", "sequence", "token/sequence", "parameter", "token"}
# Settings that count whole things (sequences, tokens, accelerators), checked as the options of those names are.
_WHOLE_UNITS = {"sequence", "token/sequence", "token"}
_WHOLE = {"tp", "pp", "dp", "ep", "kv_shards", "draft_tokens"}
# Settings that are chances: from 0, below 1 (formulas/speculative.py's sum 1 + alpha + ... is 0/0 at 1).
_CHANCES = {"acceptance_rate"}
_COUNT_NAMES = {"batch": "batch", "context": "context", "tp": "tp"}
_LARGEST = 10**18  # a plain number past this is a typo, not a model (parameters number in the trillions)
_NUMBER = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")


def symbol_for(key: str) -> Sym:
    library()  # every module's symbols defined, not only those imported so far
    found = by_key(key.strip())
    if found is None:
        from derive.core.names import closest

        keys = [s.key for s in all_symbols()]
        raise DeriveError(f"unknown quantity '{key}'", f"{closest(key, keys)}Run 'derive formulas' to list them")
    return found


def parse_setting(text: str) -> tuple[Sym, sympy.Expr]:
    """'batch=16' or 'bandwidth=3.35 TB/s' as a symbol and an exact value in base units."""
    key, value = validate.setting(text, "--set batch=16 or --set 'bandwidth=3.35 TB/s'")
    target = symbol_for(key)
    if _NUMBER.match(value) and (target.unit in _WHOLE_UNITS or target.key in _WHOLE):
        # A batch, a context, a degree: a whole number within its sanity bound (derive/core/validate.py), as an option
        return target, sympy.Integer(validate.count(value, _COUNT_NAMES.get(target.key, target.key), f"--set {key}"))
    if target.key in _CHANCES:
        return target, validate.chance(value, f"--set {key}")
    if _NUMBER.match(value) and target.unit in _COUNT_UNITS:
        return target, validate.number(value, key, f"--set {key}", high=_LARGEST)
    return target, validate.quantity(value, target.unit, f"--set {key}")


def scenario(command: str, title: str, setup: Setup, settings: list[str]) -> Work:
    """Every input symbol with a value; derived symbols are left to their formulas."""
    work = start(command, title, setup)
    shapes = dict(setup.model.formulas.shapes)
    for target in (sym.N, sym.N_act, sym.N_mm, sym.N_emb):
        work.given(target, evaluate(target.symbol, dict(shapes), work.library), "config")
    weight_format(work, setup)  # b_w, and b_x where the checkpoint ships its experts in a format of their own
    kv_values(work, setup, compute=False)  # b_kv, the recurrent state's b_st where the model has one, and S
    work.given(sym.B, setup.batch)
    work.given(sym.tau, 1, "no speculative decoding")
    work.given(pf.S_p, setup.prompt)
    work.given(pf.S_o, setup.output)
    for eta in (pf.eta_bw, pf.eta_f):
        work.given(eta, 1, "a floor")
    gpu = setup.gpu
    if gpu is not None:
        for quantity, value, option in (
            (sym.BW, gpu.bandwidth, "bandwidth"),
            (sym.P, setup.peak(gpu)[0], "flops"),
            (sym.M, gpu.memory, "memory"),
            (en.P_acc, gpu.power, "power"),
        ):
            work.given(quantity, value, f"--{option}" if option in gpu.overridden else "datasheet")
    overrides = _overrides(setup, settings)
    if sym.n in overrides:
        _check_set_tp(setup, int(overrides[sym.n]))
    for target, value in overrides.items():
        work.given(target, value, "--set")
    if sym.n not in overrides:
        tp = setup.tp
        if tp is None and gpu is not None:
            # The one rule (default_tp), on the values after --set: a --set b_w or M changes what fits.
            probe = dict(work.values)
            weights = evaluate(sym.W.symbol, probe, work.library)
            tp = default_tp(setup, weights, evaluate(sym.kv_seq.symbol, probe, work.library), gpu.memory)
            chose_default(work, "tp")
        chosen = "chosen: the smallest power of two whose memory holds the weights and one sequence"
        work.given(sym.n, tp or 1, "--tp" if setup.tp else chosen)
    work.sheet.inputs["set"] = {t.key: str(v) for t, v in overrides.items()}
    return work


def _overrides(setup: Setup, settings: list[str]) -> dict[Sym, sympy.Expr]:
    """Each --set's quantity and value; one given twice, or also by its own option, is refused rather than one of the
    two silently winning."""
    given_too = {q: o for o, q in REQUEST_OPTIONS.items() if o not in setup.defaults}
    if setup.gpu is not None:
        given_too |= {q: o for o, q in FIGURE_OPTIONS.items() if o in setup.gpu.overridden}
    if setup.tp is not None:
        given_too[sym.n] = "tp"
    overrides: dict[Sym, sympy.Expr] = {}
    for text in settings:
        target, value = parse_setting(text)
        key = text.split("=", 1)[0].strip()
        if target in overrides:
            raise DeriveError(f"--set {key} is given twice", f"Give {key} once")
        if target in given_too:
            raise DeriveError(
                f"--set {key} and --{given_too[target]} both give {target.meaning}", "Give it one way, not both"
            )
        overrides[target] = value
    return overrides


def _check_set_tp(setup: Setup, tp: int) -> None:
    """--set tp=N is --tp N by another name: the same rule for the heads (Setup's), the error naming the --set (ep, pp
    and dp, set or given, meet the layout's rules together in layout_values)."""
    try:
        replace(setup, tp=tp)
    except DeriveError as error:
        raise DeriveError(error.message.replace(f"--tp {tp}", f"--set tp={tp}", 1), error.hint) from None


def fitted_values(work: Work, setup: Setup, exprs: list[sympy.Expr]) -> None:
    """The calibration's fitted values (derive/calibration.py) where `exprs` reach them: `tpot` and `ttft` are the
    calibrated estimate, the floor is `tpot_floor` and `ttft_floor`, and both are evaluated on the same scenario."""
    from derive.calibration import calibration, predictor_values
    from derive.systems import tp_link
    from formulas import sharding as sh

    gpu = setup.gpu
    if gpu is None:
        return
    needed = [
        (quantity, value)
        for quantity, value in predictor_values(gpu, setup.dtype).items()
        if quantity not in work.values and any(depends_on(e, quantity, work.library) for e in exprs)
    ]
    if not needed:
        return
    fit = calibration(gpu, setup.dtype)
    if gpu.link is None and any(q is sh.BW_link for q, _ in needed) and work.values.get(sym.n, 1) > 1:
        raise DeriveError(
            f"{gpu.name} has no GPU-to-GPU link in the catalog, so a tensor-parallel all-reduce has no bandwidth",
            "Use --tp 1, the floor (tpot_floor, ttft_floor), or another --gpu",
        )
    for quantity, value in needed:
        if quantity is sh.BW_link:  # the tp group's own wire: past the node, its network
            work.given(quantity, *tp_link(gpu, int(work.values.get(sym.n, 1))))
            continue
        work.given(quantity, value, fit.label(quantity) if quantity in fit.values else "calibration's constants")


def layout_values(work: Work, setup: Setup, exprs: list[sympy.Expr]) -> None:
    """The layout formulas' inputs (formulas/layout.py) where `exprs` reach them, for the setup's layout (--ep, --pp,
    --dp, or --set): eval and solve read the plan's own step. On a layout past tensor parallelism, a quantity that
    holds for tensor parallelism alone (it reads n but no layout degree: tpot, step_time, ...) is refused, naming
    the layout formula that holds there."""
    from derive.calibration import dispatch_share
    from derive.layouts import Layout, shape
    from derive.systems import system_for
    from formulas import layout as lay

    for quantity, degree, option in (
        (lay.ep, setup.ep, "--ep"),
        (lay.pp, setup.pp, "--pp"),
        (lay.dp, setup.dp, "--dp"),
    ):
        if degree != 1 and quantity not in work.values:
            work.given(quantity, degree, option)
    if any(work.values.get(q, 1) != 1 for q in (lay.ep, lay.pp, lay.dp)):
        if setup.gpu is not None:  # the plan's rules for the layout, as derive predict and derive plan apply them
            from derive.layouts import Layout, check

            degrees = (int(work.values.get(q, 1)) for q in (sym.n, lay.ep, lay.pp, lay.dp))
            check(setup.model, Layout(*degrees), system_for(setup.gpu))
        plain = [
            lookup(e).key if isinstance(e, sympy.Symbol) else str(e)
            for e in exprs
            if depends_on(e, sym.n, work.library) and not depends_on(e, lay.pp, work.library)
        ]
        if plain:
            raise DeriveError(
                f"{', '.join(plain)} holds for tensor parallelism alone, not on a layout with expert, pipeline or "
                "attention data parallelism",
                "Evaluate the layout's own formula (layout_tpot, layout_tpot_floor, layout_ttft, layout_ttft_floor, "
                "weight_bytes_per_accelerator, ...; derive formulas lists them)",
            )
    if setup.gpu is None:
        return
    try:
        system = system_for(setup.gpu)
    except DeriveError:  # an accelerator no system lists: it runs alone
        system = None
    values = work.values
    tp, ep, pp, dp = (int(values.get(s, 1)) for s in (sym.n, lay.ep, lay.pp, lay.dp))
    layout = {
        lay.pp: (pp, "one stage"),
        lay.dp: (dp, "no attention data parallelism"),
        lay.ep: (ep, "experts split like the MLP"),
        lay.L_a: (shape(setup.model).moe_layers if ep > 1 else 0, "MoE layers reached by all-to-all"),
        lay.w_E: (
            int(system is not None and Layout(tp, ep, pp, dp).on_deepep(system, shape(setup.model).moe_layers)),
            "how the tokens travel (1: DeepEP, 0: the fused all-gather)",
        ),
        lay.r_dq: (dispatch_share(setup.gpu, setup.dtype), "the dispatch's bytes over the combine's"),
        lay.x_E: (int(system is not None and tp * dp > system.domain), "whether the expert group spans domains"),
        lay.d_p: (1, "one request's prompt pass alone"),
        sym.k_e: (1, "a dense model: its all-to-all terms are zero"),
        sym.E: (1, "a dense model: no routed experts to balance"),
        **{q: (v, "no draft") for q, v in NONE.values().items()},
    }
    if system is not None:
        for link, group in ((lay.BW_tp, tp), (lay.BW_ep, tp * dp), (lay.BW_pp, tp * pp * dp)):
            layout[link] = (system.link(group), f"{system.title}: the link of a group of {group}")
    for quantity, (value, why) in layout.items():
        if quantity not in values and any(depends_on(e, quantity, work.library) for e in exprs):
            work.given(quantity, value, why)


def refuse_unread(work: Work, setup: Setup, exprs: list[sympy.Expr], names: str, skip: Sym | None = None) -> None:
    """An option the user gave that none of `exprs` reads is refused, as `derive sweep` refuses an axis it does not
    read: its output would not change, as if it applied (`eval kv_bytes --flops ...`). `skip`: a solve's unknown."""
    inputs = work.sheet.inputs
    defaults = inputs.get("defaults", [])
    # Not the layout's degrees, nor --memory: they reach a result through the layout's givens and the default tp
    # rule as well as through its formula.
    options = {o: q for o, q in REQUEST_OPTIONS.items() if o in inputs and o not in defaults}  # type: ignore[operator]
    if setup.gpu is not None:
        options |= {o: q for o, q in FIGURE_OPTIONS.items() if o in setup.gpu.overridden and o != "memory"}
    for option, quantity in options.items():
        if quantity == skip:
            raise DeriveError(f"--{option} is what {names} is solved for", f"Drop --{option}")
        if not any(depends_on(e, quantity, work.library) for e in exprs):
            raise DeriveError(f"{names} does not depend on --{option}", f"Drop --{option}: it changes nothing here")


def evaluate_formula(setup: Setup, name: str, settings: list[str]) -> Sheet:
    formula = model_library(setup.model).get(name)
    work = scenario("eval", f"{formula.name}: {formula.meaning}", setup, settings)
    fitted_values(work, setup, [formula.expr])
    layout_values(work, setup, [formula.defines.symbol])
    refuse_unread(work, setup, [formula.expr], formula.name)
    if formula.defines in work.values:  # --set gave the very quantity: evaluate its formula anyway
        del work.values[formula.defines]
    work.compute(formula, formula.name)
    return work.sheet


def _side(text: str, other: str) -> Sym | tuple[str, str]:
    """A library quantity's name, or a number with a unit ('0.5 s') to be read in the other side's unit."""
    library()
    if by_key(text.strip()) is not None or not _QUANTITY.match(text):
        return symbol_for(text)
    return (text.strip(), other.strip())


_QUANTITY = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")  # a unit after it, or none (a ratio)
_NOT_FINITE = re.compile(r"^\s*[-+]?(nan|inf|infinity)\b", re.IGNORECASE)


def solve_equation(setup: Setup, equation: str, unknown_key: str, settings: list[str]) -> Sheet:
    if equation.count("=") != 1:
        raise DeriveError(f"'{equation}' is not an equation", "Write it as 'kv_bytes = weight_bytes' or 'tpot = 20 ms'")
    left_text, right_text = equation.split("=")
    example = "Write it as 'kv_bytes = weight_bytes' or 'tpot = 20 ms'"
    for text in (left_text, right_text):
        if not text.strip():
            raise DeriveError(f"'{equation}' has an empty side", example)
        if _NOT_FINITE.match(text):
            raise DeriveError(f"'{text.strip()}' in '{equation}' is not a finite number", example)
    sides = [_side(left_text, right_text), _side(right_text, left_text)]
    if all(isinstance(side, tuple) for side in sides):
        raise DeriveError(f"'{equation}' names no quantity", "Write it as 'tpot = 20 ms'")
    unknown = symbol_for(unknown_key)
    named = [side for side in sides if isinstance(side, Sym)]
    work = scenario("solve", f"{equation.strip()}, solved for {unknown.key}", setup, settings)
    resolved: list[Sym] = []
    for side in sides:
        if isinstance(side, Sym):
            resolved.append(side)
            continue
        text, _ = side
        quantity = named[0]
        # The number stands for a target value of the named quantity: its own symbol, in its unit.
        target = tagged(quantity, "target", f"the value asked of {quantity.key}")
        work.given(target, validate.quantity(text, quantity.unit or "", "the equation"), "the equation")
        resolved.append(target)
    left, right = resolved
    fitted_values(work, setup, [left.symbol, right.symbol])
    layout_values(work, setup, [left.symbol, right.symbol])
    refuse_unread(work, setup, [left.symbol, right.symbol], f"'{equation.strip()}'", skip=unknown)
    work.values.pop(unknown, None)
    solution = work.solve(left.symbol, right.symbol, unknown)
    solution, value = solution.positive(lambda root: evaluate(root, work.values, work.library))
    note = "" if value is not None else "no positive solution at these values"
    work.solved(solution, unknown, value, note, result=unknown.key)
    if value is not None and unknown in (sym.B, sym.S) and value < 1:  # a count the equation puts below one
        word = "sequence" if unknown is sym.B else "token of context"
        work.note(
            f"{format_quantity(value, unknown.unit)} is below one {word}: no whole {unknown.key} satisfies "
            f"'{equation.strip()}' at these values"
        )
    elif value is not None:
        memory_ceiling(work, unknown, value)
    return work.sheet


def memory_ceiling(work: Work, unknown: Sym, value: sympy.Expr) -> None:
    """A batch or a context solved past what the accelerators' memory holds is flagged, beside the largest that fits
    (formulas/roofline.py's M_g at the solved value against M)."""
    from derive.derivations.common import held_per_accelerator

    values = work.values
    if unknown not in (sym.B, sym.S) or sym.M not in values or sym.W not in values and sym.b_w not in values:
        return
    batch, context = values.get(sym.B), values.get(sym.S)

    def held(b: object, s: object) -> sympy.Expr:
        return held_per_accelerator(values, work.library, b, s)

    if held(batch, context) <= values[sym.M]:
        return
    if unknown is sym.B:
        largest = _largest(lambda b: held(b, context) <= values[sym.M], 10**9)
        what, unit = "sequences", "sequence"
    else:
        largest = _largest(lambda s: held(batch, s) <= values[sym.M], 10**9)
        what, unit = "tokens of context", "token/sequence"
    work.result(f"largest_{unknown.key}_that_fits", unknown, sympy.Integer(largest), unit=unit)
    work.note(
        f"{format_quantity(value, unknown.unit)} is past what memory holds: at most {largest:,} {what} fit beside "
        f"the weights on each accelerator's {format_quantity(values[sym.M], 'byte')} (memory_per_accelerator <= "
        "memory)"
        if largest
        else f"{format_quantity(value, unknown.unit)} is past what memory holds: not even one fits"
    )


def _largest(fits: Callable[[int], bool], limit: int) -> int:
    """The largest whole count in [0, limit] that fits (fits is monotone), by bisection."""
    if not fits(1):
        return 0
    low, high = 1, limit
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low
