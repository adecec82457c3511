"""`derive eval` and `derive solve`: any library formula, evaluated or solved for any symbol.

A scenario gives every input symbol a value from the model, the accelerator and the
options; `--set key=value` replaces any of them. Derived quantities are computed on
demand from their formulas, so setting the context changes the cache bytes too.
"""

from __future__ import annotations

import re

import sympy

from derive import validate
from derive.catalog import dtype_bytes
from derive.derivations.common import Setup, chose_default, default_tp, kv_values, model_library, start
from derive.errors import DeriveError
from derive.evaluation import evaluate
from derive.sheet import Sheet, Work
from derive.symbols import Sym, all_symbols, by_key, tagged
from formulas import energy as en
from formulas import notation as sym
from formulas import prefill as pf

# Units whose values are plain counts: `--set batch=16` needs no unit.
_COUNT_UNITS = {"", "sequence", "token/sequence", "parameter", "token"}
_NUMBER = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")


def symbol_for(key: str) -> Sym:
    found = by_key(key.strip())
    if found is None:
        from derive.names import closest

        keys = [s.key for s in all_symbols()]
        raise DeriveError(f"unknown quantity '{key}'", f"{closest(key, keys)}Run 'derive formulas' to list them")
    return found


def parse_setting(text: str) -> tuple[Sym, sympy.Expr]:
    """'batch=16' or 'bandwidth=3.35 TB/s' as a symbol and an exact value in base units."""
    key, value = validate.setting(text, "--set batch=16 or --set 'bandwidth=3.35 TB/s'")
    target = symbol_for(key)
    if _NUMBER.match(value) and target.unit in _COUNT_UNITS:
        return target, validate.number(value, key, f"--set {key}")
    return target, validate.quantity(value, target.unit, f"--set {key}")


def scenario(command: str, title: str, setup: Setup, settings: list[str]) -> Work:
    """Every input symbol with a value; derived symbols are left to their formulas."""
    work = start(command, title, setup)
    shapes = dict(setup.model.formulas.shapes)
    for target in (sym.N, sym.N_act, sym.N_mm, sym.N_emb):
        work.given(target, evaluate(target.symbol, dict(shapes), work.library), "config")
    work.given(sym.b_w, dtype_bytes(setup.dtype), setup.dtype)
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
            (sym.P, gpu.peak(setup.dtype)[0], "flops"),
            (sym.M, gpu.memory, "memory"),
            (en.P_acc, gpu.power, "power"),
        ):
            work.given(quantity, value, f"--{option}" if option in gpu.overridden else "datasheet")
    overrides = dict(parse_setting(text) for text in settings)
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


def evaluate_formula(setup: Setup, name: str, settings: list[str]) -> Sheet:
    formula = model_library(setup.model).get(name)
    work = scenario("eval", f"{formula.name}: {formula.meaning}", setup, settings)
    if formula.defines in work.values:  # --set gave the very quantity: evaluate its formula anyway
        del work.values[formula.defines]
    work.compute(formula, formula.name)
    return work.sheet


def _side(text: str, other: str) -> Sym | tuple[str, str]:
    """A library quantity's name, or a number with a unit ('0.5 s') to be read in the other side's unit."""
    if by_key(text.strip()) is not None or not _QUANTITY.match(text):
        return symbol_for(text)
    return (text.strip(), other.strip())


_QUANTITY = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*\S")


def solve_equation(setup: Setup, equation: str, unknown_key: str, settings: list[str]) -> Sheet:
    if equation.count("=") != 1:
        raise DeriveError(f"'{equation}' is not an equation", "Write it as 'kv_bytes = weight_bytes' or 'tpot = 20 ms'")
    left_text, right_text = equation.split("=")
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
    work.values.pop(unknown, None)
    solution = work.solve(left.symbol, right.symbol, unknown)
    solution, value = solution.positive(lambda root: evaluate(root, work.values, work.library))
    note = "" if value is not None else "no positive solution at these values"
    work.solved(solution, unknown, value, note, result=unknown.key)
    return work.sheet
