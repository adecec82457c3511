"""Sweeps: a library expression compiled once to numpy and evaluated over a grid, in bounded chunks.

The grid is the product of categorical axes (model, GPU, dtype: one compiled
function each) and numeric axes (tp, batch, context, prompt, output: numpy
arrays). Points are generated chunk by chunk from their flat index, so memory
stays flat however large the grid.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from derive.catalog import Gpu, Model, load_gpu, load_model
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate, inline_all, symbols_of
from derive.core.library import Library
from derive.core.symbols import Sym
from derive.inputs import DEFAULTS
from derive.recipes import shipped_recipe
from derive.systems import system_of
from formulas import calibrated as cal
from formulas import energy as en
from formulas import library
from formulas import notation as sym
from formulas import prefill as pf
from formulas import sharding as sh

# Numeric axes a sweep may vary, and the symbol each sets.
AXES: dict[str, Sym] = {"tp": sym.n, "batch": sym.B, "context": sym.S, "prompt": pf.S_p, "output": pf.S_o}
CATEGORICAL = ("model", "gpu", "dtype")
CHUNK = 1 << 18  # points per chunk: a few MB per array
_RANGE = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*(?::\s*(\d+))?\s*$")


def parse_axis(name: str, text: str) -> list[Any]:
    """'1,2,4', '1:64' or '128:4096:128' (inclusive); names for the categorical axes."""
    if name in CATEGORICAL:
        values = [v.strip() for v in text.split(",") if v.strip()]
        if not values:
            raise DeriveError(f"--{name} '{text}' names nothing", f"For example --{name} a,b")
        return values
    out: list[int] = []
    for part in text.split(","):
        match = _RANGE.match(part)
        if match:
            start, stop, step = int(match[1]), int(match[2]), int(match[3] or 1)
            if step < 1 or stop < start:
                raise DeriveError(
                    f"--{name} '{part}' is not an increasing range",
                    "Write START:STOP or START:STOP:STEP with STOP >= START and STEP >= 1",
                )
            from derive.core import validate

            validate.count(stop, name)  # before the range is made: 1:10^14 would not fit in memory
            out.extend(range(start, stop + 1, step))
        elif part.strip().isdigit():
            out.append(int(part))
        else:
            raise DeriveError(
                f"--{name} '{part}' is not a number or a range", "For example 1,2,4 or 1:64 or 128:4096:128"
            )
    if any(v < 1 for v in out):
        raise DeriveError(f"--{name} must be at least 1", f"Fix --{name} '{text}'")
    from derive.core import validate

    validate.count(max(out), name)  # the sanity bound every command shares
    return out


@dataclass(frozen=True)
class Target:
    """What a sweep computes: named outputs, each a library expression."""

    name: str
    outputs: dict[str, tuple[sympy.Expr, str]]  # column -> (expression, unit)


def predict_target() -> Target:
    """TTFT and TPOT, floor and calibrated, throughput and end-to-end latency: the predictor of `derive predict`."""
    return Target(
        "predict",
        {
            "ttft_floor": (pf.ttft.symbol, "second"),
            "ttft": (cal.t_calp.symbol, "second"),
            "tpot_floor": (pf.tpot.symbol, "second"),
            "tpot": (cal.t_cal.symbol, "second"),
            "throughput": (cal.R_cal.symbol, "token/second"),
            "e2e_latency": (cal.e2e_cal.symbol, "second"),
        },
    )


def formula_target(name: str) -> Target:
    formula = library().get(name)
    return Target(name, {name: (formula.defines.symbol, formula.unit)})


@dataclass
class TpRule:
    """tp chosen row by row where it is neither swept nor fixed: the degree `derive predict` (or, for a formula,
    every command) picks at the context the row's cache must hold (derivations.common.smallest_tp)."""

    choose: Callable[[sympy.Expr], int]  # the degree at a context
    context: Callable[..., Any]  # the row's context, a numpy function of the swept axes
    known: dict[int, int] = field(default_factory=dict)  # degree by context

    def at(self, tokens: int) -> int:
        if tokens not in self.known:
            self.known[tokens] = self.choose(sympy.Integer(tokens))
        return self.known[tokens]

    def __call__(self, args: Sequence[Any], shape: tuple[int, ...]) -> Any:
        """The degree of each point, as float64 like the axes."""
        tokens = np.broadcast_to(np.asarray(self.context(*args), dtype=np.float64), shape).astype(np.int64)
        low, high = int(tokens.min()), int(tokens.max())
        rises = self.rises(low, high)
        edges = np.array([t for t, _ in rises], dtype=np.int64)
        degrees = np.array([self.at(low), *(tp for _, tp in rises)], dtype=np.float64)
        return degrees[np.searchsorted(edges, tokens, side="right")]

    def rises(self, low: int, high: int) -> list[tuple[int, int]]:
        """(first context, degree) wherever the degree rises between two contexts: it never falls as the context
        grows, so bisection finds each rise in a few choices instead of one choice a row."""
        if self.at(low) == self.at(high):
            return []
        if high - low == 1:
            return [(high, self.at(high))]
        middle = (low + high) // 2
        return self.rises(low, middle) + self.rises(middle, high)


@dataclass
class Compiled:
    """One categorical combination: a numpy function of the numeric axes for each output, and the fit check.

    With `tp_rule`, the functions take the chosen degree after the axes."""

    labels: dict[str, str]
    functions: dict[str, Callable[..., Any]]
    fits: Callable[..., Any]
    axes: tuple[str, ...]
    tp_rule: TpRule | None = None


def predictor_inputs(
    model: Model, gpu: Gpu, dtype: str, fitted: bool = True, kv_dtype: str | None = None
) -> tuple[dict[Sym, sympy.Expr], Library]:
    """The values every sweep target may need for one model, accelerator and dtype, and the model's library.

    The workload (batch, context, tp, prompt, output) is left out: a sweep varies it. Without `fitted`
    the calibration's values are left out too (tools/calibrate.py fits them).
    """
    from derive.calibration import predictor_values
    from derive.derivations.common import Setup, model_library, sizing_values

    library = model_library(model)
    values: dict[Sym, sympy.Expr] = sizing_values(Setup(model=model, dtype=dtype, kv_dtype=kv_dtype))
    values.pop(sym.S, None)
    for target in (sym.N, sym.N_mm, sym.N_act, sym.N_emb):
        values[target] = evaluate(target.symbol, dict(values), library)
    values.update(
        {
            sym.tau: sympy.Integer(1),
            sym.BW: gpu.bandwidth,
            sym.P: gpu.peak(dtype)[0],
            sym.M: gpu.memory,
            en.P_acc: gpu.power,
            pf.eta_bw: sympy.Integer(1),
            pf.eta_f: sympy.Integer(1),
        }
    )
    values.update(predictor_values(gpu, dtype, fitted))
    return values, library


# derive predict decodes at the prompt plus, on average, half the output, and sizes memory (its tp, whether the
# batch fits) at the end of the output.
MEAN_CONTEXT = pf.S_p.symbol + pf.S_o.symbol / 2
END_CONTEXT = pf.S_p.symbol + pf.S_o.symbol


def held_context(target: Target, axes: Sequence[str]) -> sympy.Expr:
    """The context each sequence's cache must hold, where tp is chosen and `fits` checked: the step's own with
    --context (and for a formula), derive predict's end of the output for predict without it."""
    return END_CONTEXT if target.name == "predict" and "context" not in axes else sym.S.symbol


def chosen_tp(model: Model, gpu: Gpu, dtype: str, context: sympy.Expr, kv_dtype: str | None = None) -> int:
    """The rule every command uses when --tp is not given (derivations.common.smallest_tp), at `context`.

    Where no degree holds one sequence, the widest that splits the heads: the row is kept and marked unfit, as a
    sweep keeps every configuration, where a command would refuse it."""
    from derive.core.errors import FitError
    from derive.derivations.common import Setup, smallest_tp

    setup = Setup(model=model, gpu=gpu, dtype=dtype, kv_dtype=kv_dtype)
    try:
        return smallest_tp(setup, gpu, context)
    except FitError:
        return widest_split(model)


def widest_split(model: Model) -> int:
    """The power of two at which smallest_tp stops doubling: the next would not split whole heads."""
    from derive.core.validate import COUNT_LIMITS
    from derive.layouts import shape, tp_problem

    s, tp = shape(model), 1
    while tp < COUNT_LIMITS["tp"] and tp_problem(s, 2 * tp) is None:
        tp *= 2
    return tp


def compile_combination(
    target: Target,
    model: Model | str,
    gpu: Gpu | str,
    dtype: str | None,
    axes: Sequence[str],
    defaults: dict[str, int],
    kv_dtype: str | None = None,
) -> Compiled:
    """One model, accelerator and dtype (None: the recipe the checkpoint ships in) compiled: a catalog name or a
    loaded model (a --config) alike."""
    loaded = load_model(model) if isinstance(model, str) else model
    accelerator = load_gpu(gpu) if isinstance(gpu, str) else gpu
    if dtype is None:  # the checkpoint's recipe where the accelerator runs it (derive/recipes.py)
        dtype = shipped_recipe(loaded.config.weight_recipe, DEFAULTS["dtype"], [accelerator])
    values, library = predictor_inputs(loaded, accelerator, dtype, kv_dtype=kv_dtype)
    system = system_of(accelerator)
    if system is not None and accelerator.link is not None:  # a tp group past the node crosses its network
        fixed_tp = defaults.get("tp") if "tp" not in axes else None
        values[sh.BW_link] = system.link(fixed_tp) if fixed_tp is not None else system.link_for(sym.n.symbol)
    swept = [AXES[a] for a in axes]
    for axis, value in defaults.items():  # numeric inputs held fixed
        if axis not in axes:
            values[AXES[axis]] = sympy.Integer(value)
    if target.name == "predict" and "context" not in axes:
        values.pop(sym.S, None)  # the decode step's context is the mean one (`substituted`)
    held = held_context(target, axes)
    tp_rule = None
    if "tp" not in axes and "tp" not in defaults:  # chosen row by row, at the context memory must hold
        context = compiled([s.symbol for s in swept], substituted(held, swept, values, library, predict=False))
        tp_rule = TpRule(functools.partial(chosen_tp, loaded, accelerator, dtype, kv_dtype=kv_dtype), context)
        swept = [*swept, sym.n]
    # The outputs substituted together: they share most of their terms, and inlining walks them once.
    columns = list(target.outputs)
    together = substituted(
        sympy.Tuple(*(target.outputs[c][0] for c in columns)), swept, values, library, predict=target.name == "predict"
    )
    arguments = [s.symbol for s in swept]
    functions = {c: compiled(arguments, e) for c, e in zip(columns, together, strict=True)}
    # Fits when one accelerator's share of the weights and of the batch's cache (at the context `held`) fits its
    # memory (formulas/roofline.py's M_g, the check every command makes).
    needed = library.get("memory_per_accelerator").expr
    fits = compile_expression(sympy.Le(needed, sym.M.symbol), swept, values, library, predict=False, context=held)
    labels = {"model": loaded.name, "gpu": accelerator.name, "dtype": dtype}
    return Compiled(labels, functions, fits, tuple(axes), tp_rule)


def compile_expression(
    expr: sympy.Expr,
    swept: list[Sym],
    values: dict[Sym, sympy.Expr],
    library: Library,
    predict: bool,
    context: sympy.Expr | None = None,
) -> Callable[..., Any]:
    """`expr` as a numpy function of the swept symbols, every other symbol at its value."""
    return compiled([s.symbol for s in swept], substituted(expr, swept, values, library, predict, context))


def compiled(arguments: list[sympy.Symbol], expr: sympy.Basic) -> Callable[..., Any]:
    """A substituted expression as a numpy function of `arguments`."""
    return sympy.lambdify(arguments, expr, [NUMPY_EXTREMES, "numpy"])


def substituted(
    expr: sympy.Expr,
    swept: list[Sym],
    values: dict[Sym, sympy.Expr],
    library: Library,
    predict: bool,
    context: sympy.Expr | None = None,
) -> sympy.Expr:
    """`expr` with what depends on the swept symbols inlined and every other symbol replaced by its number, its Max
    and Min as LazyMax and LazyMin (compile it with `compiled`).

    With `predict`, the context is the prompt plus half the output (decode steps on average, as derive predict);
    `context` gives another wherever S is not swept (the end of the output, where the cache must still fit).
    """
    if predict and context is None:
        context = MEAN_CONTEXT
    # Substitution without evaluation: SymPy's Min/Max would compare every pair of arguments on each rebuild
    # (most of a compile's time), and numpy evaluates the same expression either way.
    with sympy.evaluate(False):
        # S inlined wherever it is used (a hybrid's cache shards are a ratio of caches), then replaced.
        full = inline_all(sympy.sympify(expr), swept + ([sym.S] if context is not None else []), library)
        if context is not None and sym.S not in swept:
            full = full.xreplace({sym.S.symbol: context})
            full = inline_all(full, swept, library)
    fixed = {}
    for s in symbols_of(full):
        if s in swept:
            continue
        if s.value is None and s not in values and library.defining(s.symbol) is None:
            raise DeriveError(f"the sweep needs a value for {s.key}", f"Sweep it or pass --{s.key}")
        from derive.core.evaluation import resolve

        fixed[s.symbol] = resolve(s, dict(values), library)
    # Evaluating a Max or Min with symbols left in it (a layout's degrees, the swept batch) compares arguments
    # that cannot be compared, at length (five sixths of a sweep's substitution): stand-ins that numpy evaluates
    # keep it quick and give the same numbers. Sums and products still go in evaluated: an unevaluated tree this
    # deep can exceed Python's recursion limit when printed (gpt-oss's windowed layers).
    full = full.replace(sympy.Max, LazyMax).replace(sympy.Min, LazyMin)
    return full.xreplace(fixed)


# Max and Min that never evaluate, for `substituted`; NUMPY_EXTREMES gives lambdify their numpy.
LazyMax = sympy.Function("LazyMax", positive=True)
LazyMin = sympy.Function("LazyMin", positive=True)
NUMPY_EXTREMES = {
    "LazyMax": lambda *a: functools.reduce(np.maximum, a),
    "LazyMin": lambda *a: functools.reduce(np.minimum, a),
}


@dataclass
class Grid:
    """The points of a sweep: models (names or loaded), accelerators, dtypes, and the numeric axes."""

    categorical: dict[str, list[Any]]
    numeric: dict[str, list[int]]
    defaults: dict[str, int] = field(default_factory=dict)
    kv_dtype: str | None = None

    @property
    def size(self) -> int:
        count = 1
        for values in list(self.categorical.values()) + list(self.numeric.values()):
            count *= len(values)
        return count

    @property
    def chooses_tp(self) -> bool:
        """tp neither swept nor fixed: chosen row by row, and written as a column after the axes."""
        return "tp" not in self.numeric and "tp" not in self.defaults

    @property
    def written_axes(self) -> list[str]:
        return [*self.numeric, "tp"] if self.chooses_tp else list(self.numeric)


# The most points one sweep evaluates: 10^9 rows at the 3 million points a second of one core (benchmarks/README.md)
# take about six minutes and hundreds of GB as CSV; a grid past it is a typo in a range more often than a plan.
MAX_POINTS = 10**9


def check(grid: Grid) -> None:
    """Refuse a grid some point of which no command would run (a --tp that splits a head), or one too large to mean,
    before any output."""
    from derive.layouts import check_tp

    if grid.size > MAX_POINTS:
        axes = " x ".join(f"{len(v):,} {k}" for k, v in grid.numeric.items())
        raise DeriveError(
            f"the grid has {grid.size:,} points ({axes}), more than the {MAX_POINTS:,} one sweep evaluates",
            "Narrow an axis (START:STOP:STEP with a larger step, or fewer values), or split the sweep",
        )

    for model in grid.categorical["model"]:
        loaded = load_model(model) if isinstance(model, str) else model
        for tp in grid.numeric.get("tp", [grid.defaults.get("tp", 1)]):
            check_tp(loaded, int(tp))


def check_axes(target: Target, grid: Grid, figures: Sequence[str] = ()) -> None:
    """Refuse an axis no output of the target depends on for any model: its rows would repeat one another, as if
    it applied (`sweep tpot_floor --prompt 100,4000`); and likewise an overridden datasheet figure among `figures`
    (`sweep kv_bytes --flops ...`: its rows would be the datasheet's)."""
    from derive.core.evaluation import depends_on
    from derive.derivations.common import FIGURE_OPTIONS, model_library

    libraries = [model_library(load_model(m) if isinstance(m, str) else m) for m in grid.categorical["model"]]
    outputs = [expr for expr, _ in target.outputs.values()]

    def read(quantity: Sym) -> bool:
        return any(depends_on(e, quantity, lib) for e in outputs for lib in libraries)

    used = [a for a, s in AXES.items() if read(s)]
    for axis in grid.numeric:
        if axis not in used:
            raise DeriveError(
                f"{target.name} does not depend on --{axis}",
                f"It depends on {', '.join(f'--{a}' for a in used)}: sweep those"
                if used
                else f"It depends on none of {', '.join(f'--{a}' for a in AXES)}: 'derive eval {target.name}' gives it",
            )
    for figure in figures:
        quantity = FIGURE_OPTIONS.get(figure) if figure != "memory" else None  # the tp rule and each row's fit read it
        if quantity is not None and not read(quantity):
            raise DeriveError(f"{target.name} does not depend on --{figure}", f"Drop --{figure}: it changes nothing")


def compile_grid(target: Target, grid: Grid) -> list[Compiled]:
    """Every combination compiled, each checked (a dtype an accelerator lacks) before any row is written."""
    check(grid)
    check_axes(target, grid)
    axes = tuple(grid.numeric)
    return [
        compile_combination(target, model, gpu, dtype, axes, grid.defaults, grid.kv_dtype)
        for model, gpu, dtype in itertools.product(*(grid.categorical[c] for c in CATEGORICAL))
    ]


def evaluate_grid(
    target: Target, grid: Grid, chunk: int = CHUNK, combinations: list[Compiled] | None = None
) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    """Yield (labels, columns) chunk by chunk: columns hold the numeric axes, the chosen tp where it was chosen,
    the outputs and 'fits'."""
    for compiled in combinations if combinations is not None else compile_grid(target, grid):
        for columns in evaluate_compiled(compiled, grid, chunk):
            yield compiled.labels, columns


def evaluate_compiled(compiled: Compiled, grid: Grid, chunk: int = CHUNK) -> Iterator[dict[str, Any]]:
    """The numeric part of the grid for one compiled combination, `chunk` points at a time."""
    axes = compiled.axes
    arrays = [np.asarray(grid.numeric[a], dtype=np.float64) for a in axes]
    shape = tuple(len(a) for a in arrays)
    points = int(np.prod(shape)) if shape else 1
    for begin in range(0, points, chunk):
        index = np.arange(begin, min(begin + chunk, points))
        coords = np.unravel_index(index, shape) if shape else ()
        args = [arrays[i][c] for i, c in enumerate(coords)]
        columns: dict[str, Any] = dict(zip(axes, args, strict=False))
        if compiled.tp_rule is not None:
            columns["tp"] = compiled.tp_rule(args, index.shape)
            args.append(columns["tp"])
        for column, function in compiled.functions.items():
            columns[column] = np.broadcast_to(function(*args), index.shape)
        columns["fits"] = np.broadcast_to(compiled.fits(*args), index.shape)
        yield columns


@dataclass
class Sweep:
    """A target over a grid, ready to evaluate: `table()` in memory, `write(path)` streamed chunk by chunk."""

    target: Target
    grid: Grid
    notes: list[str] = field(default_factory=list)  # what the sweep changed of its input (a --tp range's skips)
    combinations: list[Compiled] | None = field(default=None, repr=False)

    def compiled(self) -> list[Compiled]:
        """Every combination compiled once, and so checked, before any output."""
        if self.combinations is None:
            self.combinations = compile_grid(self.target, self.grid)
        return self.combinations

    def picks(self) -> list[tuple[str, str, str, str]]:
        """(model, gpu, dtype, tp) for each combination when tp is not swept: the rule every command uses, at each
        row's context ('1 to 2, by row' where it changes along the grid; the tp column says which)."""
        if not self.grid.chooses_tp:
            return []
        low = [np.float64(min(self.grid.numeric[a])) for a in self.grid.numeric]
        high = [np.float64(max(self.grid.numeric[a])) for a in self.grid.numeric]
        picks = []
        for compiled in self.compiled():
            assert compiled.tp_rule is not None
            # The context grows with each axis: the least degree at the axes' least values, the most at their most.
            least, most = (int(compiled.tp_rule(args, (1,))[0]) for args in (low, high))
            chosen = str(least) if least == most else f"{least} to {most}, by row"
            picks.append((compiled.labels["model"], compiled.labels["gpu"], compiled.labels["dtype"], chosen))
        return picks

    def columns(self) -> list[str]:
        """The column names, each output with its unit ('tpot_s', 'throughput_token_per_s')."""
        outputs = [f"{c}_{_unit_suffix(unit)}" for c, (_, unit) in self.target.outputs.items()]
        return [*CATEGORICAL, *self.grid.written_axes, *outputs, "fits"]

    def schema(self) -> Any:
        """Typed columns: names as dictionary strings, axes as integers, outputs as float64 with their unit
        in the field's metadata, fits as a boolean."""
        import pyarrow as pa

        fields = [pa.field(c, pa.dictionary(pa.int32(), pa.string())) for c in CATEGORICAL]
        fields += [pa.field(a, pa.int64()) for a in self.grid.written_axes]
        for column, (_, unit) in self.target.outputs.items():
            name = f"{column}_{_unit_suffix(unit)}"
            fields.append(pa.field(name, pa.float64(), metadata={"unit": unit}))
        fields.append(pa.field("fits", pa.bool_()))
        return pa.schema(fields, metadata={"target": self.target.name, "source": "derive sweep"})

    def batches(self, progress: Callable[[int], None] | None = None) -> Iterator[Any]:
        """The grid as Arrow record batches, one chunk of points each (memory stays flat)."""
        import pyarrow as pa

        schema = self.schema()
        axes, outputs = self.grid.written_axes, list(self.target.outputs)
        for labels, columns in evaluate_grid(self.target, self.grid, combinations=self.compiled()):
            count = len(columns["fits"])
            arrays = [
                pa.DictionaryArray.from_arrays(pa.array(np.zeros(count, dtype=np.int32)), pa.array([labels[c]]))
                for c in CATEGORICAL
            ]
            arrays += [pa.array(columns[a].astype(np.int64)) for a in axes]
            arrays += [pa.array(np.asarray(columns[c], dtype=np.float64)) for c in outputs]
            arrays.append(pa.array(np.asarray(columns["fits"], dtype=bool)))
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
            if progress:
                progress(count)

    def table(self) -> Any:
        """Every point as one pyarrow Table (`.to_pandas()`, `.to_pylist()`, `.column('tpot_s')`)."""
        import pyarrow as pa

        return pa.Table.from_batches(list(self.batches()), schema=self.schema())

    def check_figure(self) -> None:
        """A figure draws an output against a swept axis: refuse one without, before any work."""
        if not self.grid.numeric:
            raise DeriveError("a sweep figure needs a swept axis", "Sweep one, e.g. --batch 1:64")

    def figure(self, path: Any) -> list[Any]:
        """The first output against the first swept axis, a line per model, accelerator and dtype (.svg, .png)."""
        from derive import plots
        from derive.core import validate

        self.check_figure()
        stem = validate.figure_file(path, "--figure").with_suffix("")
        plots.sweep(self.table(), stem)
        return [stem.with_suffix(".svg"), stem.with_suffix(".png")]

    def write(self, out: Any, fmt: str = "csv", progress: Callable[[int], None] | None = None) -> int:
        """Write every point to `out` (a binary file) as CSV, Parquet or JSON lines; returns the rows written."""
        self.compiled()  # before any header: every combination checked (a Sweep built by hand, without plan(), too)
        rows = 0
        if fmt == "parquet":
            import pyarrow.parquet as pq

            # Dictionary encoding for the name columns only: on floats it costs time and saves nothing.
            with pq.ParquetWriter(out, self.schema(), use_dictionary=list(CATEGORICAL)) as writer:
                for batch in self.batches(progress):
                    writer.write_batch(batch)
                    rows += batch.num_rows
            return rows
        if fmt == "csv":
            import pyarrow.csv as pc

            # Plain cells where no name needs quoting, so `cut -d,` reads the file; quoted where one would.
            names = [str(v.name if hasattr(v, "name") else v) for c in CATEGORICAL for v in self.grid.categorical[c]]
            plain = not any(ch in name for name in names for ch in ',"\n\r')
            style = "none" if plain else "needed"
            options = pc.WriteOptions(quoting_style=style, quoting_header="none")  # column names never need it
            with pc.CSVWriter(out, self.schema(), write_options=options) as writer:
                for batch in self.batches(progress):
                    writer.write_batch(batch)
                    rows += batch.num_rows
            return rows
        for batch in self.batches(progress):
            out.write(_json_lines(batch))
            rows += batch.num_rows
        return rows


def _json_lines(batch: Any) -> bytes:
    """One JSON object a row: names quoted, numbers as Python writes them (repr round-trips a float)."""
    import json

    names = batch.schema.names
    keys = [json.dumps(n) for n in names]
    values: list[list[str]] = []
    for name, column in zip(names, batch.columns, strict=True):
        if name in CATEGORICAL:
            values.append([json.dumps(str(column.dictionary[0]))] * batch.num_rows)
        elif name == "fits":
            values.append(["true" if v else "false" for v in column.to_numpy(zero_copy_only=False)])
        else:
            values.append(list(map(repr, column.to_pylist())))
    template = "{" + ",".join(f"{k}:%s" for k in keys) + "}\n"
    return "".join(template % row for row in zip(*values, strict=True)).encode()


def plan(
    target: str,
    models: Sequence[Any] = (),
    configs: Sequence[str] = (),
    gpus: Sequence[Any] = ("h100",),
    dtypes: Sequence[str] | None = None,
    kv_dtype: str | None = None,
    numeric: dict[str, Any] | None = None,
    figures: dict[str, Any] | None = None,
    allow_long_context: bool = False,
) -> Sweep:
    """A sweep from its inputs as a user gives them (names, config paths, axis texts or lists), each model and
    context checked through the one scenario builder, every accelerator given the datasheet overrides. Without
    `dtypes` each model takes the recipe its checkpoint ships in (derive/recipes.py's shipped_recipe)."""
    from derive import scenario

    axes = {a: _axis_text(v) for a, v in (numeric or {}).items() if v is not None}
    parsed = {axis: parse_axis(axis, text) for axis, text in axes.items()}
    sources = [("model", m) for m in models] + [("config", c) for c in configs]
    if not sources:
        raise DeriveError("no model given", "Pass --model NAMES (see 'derive models') or --config PATH")
    workload = {"context": max(parsed.get("context", []), default=None), "allow_long_context": allow_long_context}
    loaded = [scenario.build({key: source, **workload}).model for key, source in sources]
    notes = []
    if "tp" in parsed:
        parsed["tp"], skipped = splitting_degrees(axes["tp"], loaded)
        if skipped:
            names = ", ".join(m.name for m in loaded)
            notes.append(
                f"--tp {axes['tp']}: skipped {', '.join(map(str, skipped))}, which cannot split the heads of {names}"
            )
    overrides = scenario.figures(figures or {})
    accelerators = [(g if isinstance(g, Gpu) else load_gpu(g)).with_overrides(**overrides) for g in gpus]
    if not accelerators or dtypes is not None and not dtypes:
        raise DeriveError("a sweep needs an accelerator and a dtype", "Pass --gpu h100 --dtype bf16, for example")
    from derive.scenario import checked_dtype

    for dtype in dtypes or ():  # the names every command takes: weight recipes, and plain formats for the cache
        checked_dtype(dtype, "--dtype", weights=True)
    if kv_dtype is not None:  # '' is no dtype either
        checked_dtype(kv_dtype, "--kv-dtype")
    grid = Grid(
        {"model": loaded, "gpu": accelerators, "dtype": [d.lower() for d in dtypes] if dtypes is not None else [None]},
        parsed,
        {key: DEFAULTS[key] for key in ("batch", "context", "prompt", "output")},  # tp: the smallest that fits
        kv_dtype.lower() if kv_dtype else None,
    )
    chosen = predict_target() if target == "predict" else formula_target(target)
    check(grid)
    check_axes(chosen, grid, [key for key, value in (figures or {}).items() if value is not None])
    return Sweep(chosen, grid, notes)


def splitting_degrees(text: str, models: Sequence[Model]) -> tuple[list[int], list[int]]:
    """A --tp axis with its ranges kept to the degrees that split every model's heads (1:8 is 1, 2, 4, 8 for
    most models), and the degrees skipped. A degree named on its own is kept: `check` refuses it in one line."""
    from derive.layouts import shape, tp_problem

    named = {int(part) for part in text.split(",") if not _RANGE.match(part)}
    kept: list[int] = []
    skipped: list[int] = []
    for tp in parse_axis("tp", text):
        splits = all(tp_problem(shape(m), tp) is None for m in models)
        (kept if splits or tp in named else skipped).append(tp)
    return (kept, skipped) if kept else (skipped, [])  # none splits: `check` names the degrees that would


def _axis_text(value: Any) -> str:
    """An axis as parse_axis reads it: '1:64', '1,2,4', or a list or a number given from Python."""
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return ",".join(str(v) for v in value)


def _unit_suffix(unit: str) -> str:
    return {"second": "s", "token/second": "token_per_s", "byte": "byte", "FLOP": "flop"}.get(
        unit, unit.replace("/", "_per_").replace("*", "_")
    )
