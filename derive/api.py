"""The Python API: one function per command, each returning what the command prints, as objects.

    >>> import derive
    >>> r = derive.knee("llama70b", context=2048)
    >>> r.results["max_batch_by_memory"]
    <Quantity(28, 'sequence')>

Every function takes the command's options as keyword arguments, by the same names and with the
same defaults, validation and one-line errors (a `derive.DeriveError`); quantities are strings with
units ('3.35 TB/s') or pint quantities. A model is a catalog name, a `derive.model(...)` or a
`config=` path; an accelerator a catalog name or a `derive.gpu(...)`. The CLI (cli.py) parses its
options into exactly these calls and prints what they return.

Nothing heavy is imported here at import time: `import derive` stays fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from derive.core.errors import DeriveError

__all__ = [
    "Answer",
    "DeriveError",
    "Derivation",
    "answer",
    "attention_memory",
    "check",
    "claim",
    "compare",
    "crossover_kv_weights",
    "crossover_prefill",
    "energy",
    "evaluate",
    "experts",
    "fit",
    "flops",
    "formula",
    "formulas",
    "gpu",
    "gpus",
    "intensity",
    "knee",
    "kv",
    "measure",
    "model",
    "models",
    "params",
    "plan",
    "predict",
    "shard",
    "sheets",
    "simulate_batching",
    "solve",
    "sweep",
    "utilisation",
]


@dataclass
class Derivation:
    """A worked derivation: its steps (given, formula, substitution, result), its results and its notes.

    `results` are pint quantities (or text, such as which limit binds), `symbolic` the SymPy expression
    each result was computed from, `steps` the typed steps; `to_json()`, `to_markdown()` and `to_latex()`
    render it, and a notebook shows it as Markdown.
    """

    sheet: Any  # derive.core.sheet.Sheet
    setup: Any = None  # the derivations.Setup it ran on
    figure_kind: str = ""  # the command whose figure `figure()` draws
    figure_data: dict[str, Any] = field(default_factory=dict)  # what else that figure needs (a simulation's runs)

    @property
    def command(self) -> str:
        return str(self.sheet.command)

    @property
    def title(self) -> str:
        return str(self.sheet.title)

    @property
    def inputs(self) -> dict[str, Any]:
        return dict(self.sheet.inputs)

    @property
    def steps(self) -> list[Any]:
        return list(self.sheet.steps)

    @property
    def notes(self) -> list[str]:
        return list(self.sheet.notes)

    @property
    def results(self) -> dict[str, Any]:
        return {name: _pint(r.value, r.unit) for name, r in self.sheet.results.items()}

    @property
    def symbolic(self) -> dict[str, Any]:
        return {name: r.expr for name, r in self.sheet.results.items() if r.expr is not None}

    @property
    def values(self) -> dict[str, Any]:
        """Every symbol's value in the derivation, exact, in base units, by its key."""
        return {s.key: v for s, v in self.sheet.values.items()}

    def to_json(self) -> str:
        from derive.core.render import to_json

        return to_json(self.sheet)

    def to_text(self) -> str:
        from derive.core.render import render_text

        return render_text(self.sheet)

    def to_markdown(self) -> str:
        from derive.sheet_render import render_sheet

        return render_sheet(self.sheet, "md")

    def to_latex(self) -> str:
        from derive.sheet_render import render_sheet

        return render_sheet(self.sheet, "tex")

    def curve(self, quantity: str, over: str, at: Any, past_memory: bool = False) -> Any:
        """A quantity of this derivation (by name: 'decode_throughput') as a numpy array over one of its inputs
        ('batch') at the values `at`, every other input as the derivation has it, in base units. A batch or context
        past what the accelerators' memory holds is refused unless `past_memory`.

        >>> r = derive.knee("llama70b")
        >>> [round(float(t)) for t in r.curve("throughput_floor", "batch", [1, 2])]
        [48, 95]
        """
        import numpy as np

        from derive.core.evaluation import over as function_of
        from derive.derivations.common import held_per_accelerator, model_library
        from derive.derivations.generic import symbol_for
        from formulas import notation as sym

        try:
            target, variable = symbol_for(quantity), symbol_for(over)
        except DeriveError as error:
            raise DeriveError(error.message, "derive.formulas() lists every quantity by name") from None
        try:
            xs = np.asarray(at, dtype=float)
        except (TypeError, ValueError):
            raise DeriveError(f"curve(at={at!r}): not numbers", "Pass a list or array, e.g. [1, 2, 4]") from None
        values = self.sheet.values
        if variable in (sym.B, sym.S) and not past_memory and all(s in values for s in (sym.M, sym.W, sym.B, sym.S)):
            library = model_library(self.setup.model)
            x = float(xs.max()) if xs.size else 0.0  # what a sequence holds grows with both: the largest decides
            if xs.size:
                batch, context = (x, values[sym.S]) if variable is sym.B else (values[sym.B], x)
                if held_per_accelerator(values, library, int(batch), int(context)) > values[sym.M]:
                    raise DeriveError(
                        f"curve over {over}: {x:g} does not fit: each accelerator's memory holds the weights and "
                        f"less cache than {over} {x:g} needs",
                        "Draw up to the memory ceiling (max_batch_by_memory), or pass past_memory=True",
                    )
        values = function_of(target.symbol, variable, self.sheet.values, model_library(self.setup.model))(xs)
        return np.broadcast_to(values, xs.shape).astype(float)

    def figure(self, path: str | Path) -> list[Path]:
        """Draw this derivation's figure to PATH (.svg, and a .png beside it); returns the files written."""
        from derive import plots
        from derive.core import validate

        if not self.figure_kind:
            raise DeriveError(f"'{self.command}' has no figure", f"Figures are drawn for: {', '.join(plots.KINDS)}")
        stem = validate.figure_file(path, "--figure").with_suffix("")
        plots.draw(self.figure_kind, self.sheet, self.setup, stem, **self.figure_data)
        return [stem.with_suffix(".svg"), stem.with_suffix(".png")]

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in list(self.results.items())[:3])
        return f"<Derivation {self.command}: {self.title}{'; ' + shown if shown else ''}>"

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


@dataclass
class Answer:
    """A worked answer to one of the questions: `results` (the headline figures), `to_markdown()`, `to_latex()`."""

    answer: Any  # derive.answers.Answer

    @property
    def results(self) -> dict[str, Any]:
        return {name: _pint(r.value, r.unit) for name, r in self.answer.results.items()}

    @property
    def notes(self) -> list[str]:
        """The answer's caveats and takeaways, as plain text."""
        from derive.sheet_render import prose

        return [prose(p, "md") for p in [*self.answer.caveats, *self.answer.takeaways]]

    def to_json(self) -> str:
        from derive.core.render import answer_json

        return answer_json(self.answer)

    def to_markdown(self) -> str:
        from derive.sheet_render import render

        return render(self.answer, "md")

    def to_latex(self) -> str:
        from derive.sheet_render import render

        return render(self.answer, "tex")

    def write(self, folder: str | Path) -> list[Path]:
        """ID.md, ID.tex and the figures, into `folder` (which must exist or have a parent that does)."""
        from derive import answers
        from derive.core import validate

        return answers.write(self.answer, validate.output_folder(folder))

    def __repr__(self) -> str:
        return f"<Answer {self.answer.question.id}: {self.answer.question.title[:60]}>"

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def _pint(value: Any, unit: str) -> Any:
    """An exact result in base units as a pint quantity in its own unit (text and None stay as they are)."""
    if value is None or isinstance(value, str):
        return value
    import sympy

    from derive.core.units import base_unit_text, registry

    exact = sympy.sympify(value)
    number = int(exact) if exact.is_Integer else float(exact)
    if not unit:
        return number
    quantity = registry().Quantity(number, base_unit_text(unit) or "dimensionless").to(unit)
    if exact.is_Integer and float(quantity.magnitude).is_integer():
        quantity = registry().Quantity(int(quantity.magnitude), quantity.units)
    return quantity


def _inputs(values: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of an API call as the scenario builder takes them (pint quantities as text)."""
    out = {}
    for key, value in values.items():
        if hasattr(value, "magnitude") and hasattr(value, "units"):
            value = f"{value.magnitude} {value.units:~}"
        out[key] = value
    return out


def _derive(
    build: Callable[..., Any], values: Mapping[str, Any], need_gpu: bool, figure: str = "", *args: Any
) -> Derivation:
    """Build one command's derivation: the scenario from `values`, then the derivation `build` (imported by the
    caller, where it is used: a command loads only its own derivation)."""
    from derive import scenario

    setup = scenario.build(_inputs(values), need_gpu=need_gpu)
    sheet = build(setup, *args)
    _drop_unoffered(sheet.inputs, values)
    return Derivation(sheet, setup, figure)


# The scenario's inputs every sheet starts from (derivations.common.Setup.inputs).
_SCENARIO_INPUTS = ("model", "gpu", "dtype", "kv_dtype", "context", "batch", "tp", "ep", "pp", "dp")


def _drop_unoffered(inputs: dict[str, Any], offered: Mapping[str, Any]) -> None:
    """A sheet's inputs less the scenario's that its command has no option for: `params --json` lists no context,
    `predict --json` no context beside the prompt and output it decodes at."""
    for key in _SCENARIO_INPUTS:
        if key not in offered:
            inputs.pop(key, None)


# The catalog and the formula library.


def model(name: str | None = None, config: str | Path | None = None) -> Any:
    """A model by catalog name or alias, or from a local config.json (or its folder).

    >>> derive.model("llama70b").title
    'Llama 3 70B'
    """
    from derive.catalog import load_config_path, load_model

    if (name is None) == (config is None):
        raise DeriveError("give a model name or a config", "For example derive.model('llama3-8b')")
    return load_model(name) if name is not None else load_config_path(str(config))


def gpu(name: str, **overrides: Any) -> Any:
    """An accelerator by catalog name, with datasheet overrides ('3.35 TB/s') if given.

    >>> derive.gpu("h100", bandwidth="3 TB/s").bandwidth
    3000000000000
    """
    from derive import scenario
    from derive.catalog import load_gpu

    unknown = sorted(set(overrides) - set(scenario.OVERRIDES))
    if unknown:
        raise DeriveError(f"unknown figure {unknown[0]}", f"Override any of: {', '.join(scenario.OVERRIDES)}")
    return load_gpu(name).with_overrides(**scenario.figures(_inputs(overrides)))


def formula(name: str, model: Any = None) -> Any:
    """A library formula by name: `.expr` (SymPy), `.unit`, `.meaning`, `.source`, `.equation`.

    >>> derive.formula("kv_bytes").unit
    'byte'
    """
    from formulas import library

    if model is None:
        return library().get(name)
    from derive.derivations.common import model_library

    loaded = model if hasattr(model, "formulas") else globals()["model"](model)
    return model_library(loaded).get(name)


def formulas() -> list[dict[str, Any]]:
    """Every library formula: name, unit, formula, LaTeX, meaning and source (as `derive formulas --json`).

    >>> any(f["name"] == "kv_bytes" for f in derive.formulas())
    True
    """
    import json

    from derive import listing

    return list(json.loads(listing.formulas(True))["results"]["formulas"]["value"])


def models() -> list[dict[str, Any]]:
    """The model catalog, a row a model (as `derive models --json`).

    >>> "llama3-70b" in [m["name"] for m in derive.models()]
    True
    """
    import json

    from derive import listing

    return list(json.loads(listing.models(True))["results"]["models"]["value"])


def gpus() -> list[dict[str, Any]]:
    """The accelerator catalog, a row an accelerator (as `derive gpus --json`).

    >>> "h100" in [g["name"] for g in derive.gpus()]
    True
    """
    import json

    from derive import listing

    return list(json.loads(listing.gpus(True))["results"]["gpus"]["value"])


def check() -> dict[str, Any]:
    """Every formula's unit check (as `derive check`): the lines it reports and how many failed.

    >>> derive.check()["failures"]
    0
    """
    from derive import checker

    report, failures = checker.run()
    lines = report.splitlines()
    return {"checks": lines[:-1], "summary": lines[-1], "failures": failures}


# One function per command. `None` means "the default", which the derivation names in its defaults used.


def params(model: Any = None, *, config: str | Path | None = None, check: bool | None = None) -> Derivation:
    """Parameter count from the config: breakdown, total, active (MoE), embedding.

    `check=True` also builds the config with transformers on the meta device (the optional extra
    `pip install 'derive[hf]'`) and compares the counts layer by layer, naming the first difference.

    >>> derive.params("llama3-8b").results["total_params"]
    <Quantity(8030261248, 'parameter')>
    """
    if check is not None and not isinstance(check, bool):
        raise DeriveError(f"check is {check!r}, not true or false", "Pass check=True or leave it out")
    from derive.derivations.slice import params as build

    return _derive(build, {"model": model, "config": config}, False, "", bool(check))


def kv(
    model: Any = None,
    *,
    config: str | Path | None = None,
    context: int | None = None,
    batch: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """KV-cache (and recurrent state) bytes per token, per sequence and for the batch.

    >>> derive.kv("llama3-8b", context=8192).results["kv_bytes_per_token"]
    <Quantity(131072, 'byte / token')>
    """
    values = _named(locals())
    from derive.derivations.slice import kv as build

    return _derive(build, values, False, "kv")


def knee(
    model: Any = None,
    gpu: Any = None,
    *,
    config: str | Path | None = None,
    tp: int | None = None,
    ep: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    context: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
    memory: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """Decode step time against batch: the knee in closed form, whether one exists, the memory ceiling.

    >>> derive.knee("llama70b").results["first_limit"]
    'memory_capacity'
    """
    values = _named(locals())
    from derive.derivations.slice import knee as build

    return _derive(build, values, True, "knee")


def flops(
    model: Any = None,
    *,
    config: str | Path | None = None,
    context: int | None = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """FLOPs per token beyond the 2N rule, and the context where attention equals the weights.

    >>> derive.flops("llama3-8b").results["flops_per_token"].units
    <Unit('FLOP / token')>
    """
    values = _named(locals())
    from derive.derivations.costs import flops as build

    return _derive(build, values, False)


def fit(
    model: Any = None,
    gpu: Any = None,
    *,
    config: str | Path | None = None,
    tp: int | None = None,
    ep: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    context: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    memory: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """How many sequences of a context fit beside the weights on `tp` accelerators.

    >>> derive.fit("llama2-13b", "a100", dtype="fp16").results["max_sequences"]
    <Quantity(32, 'sequence')>
    """
    values = _named(locals())
    from derive.derivations.costs import fit as build

    return _derive(build, values, True)


def intensity(
    model: Any = None,
    gpu: Any = None,
    *,
    config: str | Path | None = None,
    batch: int | None = None,
    context: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """Decode arithmetic intensity per operation at a batch, the ridge point, and the flip batch.

    >>> derive.intensity("llama70b", batch=1).results["qkv_intensity"]  # 2 FLOPs per 2-byte weight
    <Quantity(1, 'FLOP / byte')>
    """
    values = _named(locals())
    from derive.derivations.costs import intensity as build

    return _derive(build, values, True, "intensity")


def crossover_kv_weights(
    model: Any = None,
    gpu: Any = None,
    *,
    config: str | Path | None = None,
    batch: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    memory: Any = None,
) -> Derivation:
    """The context at which a batch's KV reads equal the weight reads, and the KV footprint there.

    >>> derive.crossover_kv_weights("llama3-8b", batch=16).results["crossover_context"].units
    <Unit('token / sequence')>
    """
    values = _named(locals())
    from derive.derivations.costs import crossover_kv_weights as build

    return _derive(build, values, True, "crossover kv-weights")


def crossover_prefill(
    model: Any = None,
    gpu: Any = None,
    *,
    config: str | Path | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
) -> Derivation:
    """The prompt length at which prefill turns compute-bound (closed form).

    >>> derive.crossover_prefill("llama3-70b").results["compute_bound_prompt_tokens"].units
    <Unit('token / sequence')>
    """
    values = _named(locals())
    from derive.derivations.costs import crossover_prefill as build

    return _derive(build, values, True, "crossover prefill")


def predict(
    model: Any = None,
    gpu: Any = None,
    *,
    config: str | Path | None = None,
    tp: int | None = None,
    ep: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    batch: int | None = None,
    prompt: int | None = None,
    output: int | None = None,
    floor: bool | None = None,
    draft_tokens: int | None = None,
    acceptance: Any = None,
    draft_cost: Any = None,
    mtp: bool | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
    memory: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """TTFT, TPOT, throughput and end-to-end latency: the roofline floor and the calibrated estimate, on tensor
    parallelism or on any layout `derive plan` searches (ep, pp, dp; batch is then one micro-batch), with a
    speculative draft or the config's MTP modules where asked (TPOT is then a verification pass and its drafts
    over the tokens they gain).

    >>> r = derive.predict("llama3-8b", batch=8)
    >>> r.results["tpot_floor"] < r.results["tpot"]
    True
    """
    values = _named(locals())
    from derive.derivations.costs import predict as build

    return _derive(build, values, True, "predict")


def compare(
    model: Any = None,
    gpu: Any = None,
    *,
    vs: Any,
    config: str | Path | None = None,
    tp: int | None = None,
    ep: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    context: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
    memory: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """One model on two accelerators: bandwidth, compute, capacity and throughput ratios.

    The datasheet overrides (`bandwidth`, `flops`, `memory`) apply to `gpu` alone: `vs` keeps its datasheet figures.

    >>> derive.compare("llama3-70b", "h100", vs="b200").inputs["gpu"]
    'h100'
    """
    values = _named(locals())
    from derive.derivations.costs import compare as build

    return _derive(build, values, True)


def experts(
    model: Any = None,
    *,
    config: str | Path | None = None,
    batch: int | None = None,
    dtype: str | None = None,
) -> Derivation:
    """MoE expert coverage at a decode batch: experts touched, parameters and bytes read per step.

    >>> derive.experts("mixtral-8x7b", batch=1).results["experts_touched"]  # top-2 routing: 2 experts a layer
    2
    """
    values = _named(locals())
    from derive.derivations.moe import experts as build

    return _derive(build, values, False, "experts")


def energy(
    model: Any = None,
    gpu: Any = None,
    *,
    config: str | Path | None = None,
    tp: int | None = None,
    ep: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    batch: int | None = None,
    context: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
    memory: Any = None,
    power: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """Energy per output token from power and the roofline throughput, at batch 1 and the largest batch.

    >>> derive.energy("llama3-8b", power="350 W").inputs["model"]
    'llama3-8b'
    """
    values = _named(locals())
    from derive.derivations.energy import energy as build

    return _derive(build, values, True)


def shard(
    model: Any = None,
    gpu: Any = None,
    *,
    config: str | Path | None = None,
    tp: int | None = None,
    tokens: int | None = None,
    link: Any = None,
    dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
) -> Derivation:
    """One FFN layer under tensor parallelism: FLOPs, weight, activation and all-reduce bytes, what binds.

    >>> derive.shard("llama3-70b", tp=8, link="50 GB/s").inputs["tp"]
    8
    """
    values = _named(locals())
    from derive.derivations.sharding import shard as build

    return _derive(build, values, True)


def claim(
    model: Any = None,
    gpu: Any = None,
    *,
    claim: Any,
    config: str | Path | None = None,
    tp: int | None = None,
    ep: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    context: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    memory: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """A claimed tokens/s per user against the bandwidth floor, and what would make it true.

    >>> derive.claim("llama3-70b", claim="1000 token/s").command
    'claim'
    """
    values = _named(locals())
    values["claim"] = _quantity(values["claim"], "token/second", "--claim")
    from derive.derivations.claim import claim as build

    return _derive(build, values, True)


def attention_memory(
    model: Any = None,
    *,
    config: str | Path | None = None,
    context: int | None = None,
    dtype: str | None = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """Bytes naive attention writes for the full score matrix against a tiled (FlashAttention) kernel.

    >>> derive.attention_memory("llama3-8b", context=8192).command
    'attention-memory'
    """
    values = _named(locals())
    from derive.derivations.attention_memory import attention_memory as build

    return _derive(build, values, False)


def utilisation(
    model: Any = None,
    gpu: Any = None,
    *,
    step_time: Any = None,
    recompute: float = 0,
    config: str | Path | None = None,
    tp: int | None = None,
    ep: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    batch: int | None = None,
    context: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """MBU, MFU and HFU of a decode step, from a measured step time and the counted bytes and FLOPs.

    >>> derive.utilisation("llama3-70b", step_time="36 ms").results["mbu"] < 1
    True
    """
    values = _named(locals(), drop=("step_time", "recompute"))
    import sympy

    from derive.core import validate

    seconds = None if step_time is None else _quantity(step_time, "second", "--step-time")
    fraction = sympy.Rational(validate.number(recompute, "recompute", "--recompute", 0, 10, True))
    from derive.derivations.utilisation import utilisation as build

    return _derive(build, values, True, "", seconds, fraction)


def evaluate(
    name: str,
    model: Any = None,
    gpu: Any = None,
    *,
    settings: Mapping[str, Any] | Iterable[str] = (),
    config: str | Path | None = None,
    tp: int | None = None,
    ep: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    batch: int | None = None,
    context: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
    memory: Any = None,
    power: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """Evaluate any library formula for a model and accelerator; `settings` give any quantity a value.

    >>> derive.evaluate("kv_bytes", "llama3-8b", settings={"batch": 16}).results["kv_bytes"]
    <Quantity(4294967296, 'byte')>
    """
    values = _named(locals(), drop=("name", "settings"))
    from derive.derivations.generic import evaluate_formula as build

    return _derive(build, values, True, "", name, _settings(settings))


def solve(
    equation: str,
    for_: str,
    model: Any = None,
    gpu: Any = None,
    *,
    settings: Mapping[str, Any] | Iterable[str] = (),
    config: str | Path | None = None,
    tp: int | None = None,
    ep: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    batch: int | None = None,
    context: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
    memory: Any = None,
    power: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """Solve an equation between library quantities (or a quantity and a value) for `for_`, then evaluate it.

    >>> r = derive.solve("kv_read_bytes = weight_bytes", for_="context", model="llama70b", batch=16)
    >>> r.symbolic["context"]
    W/(B*k)
    """
    values = _named(locals(), drop=("equation", "for_", "settings"))
    from derive.derivations.generic import solve_equation as build

    return _derive(build, values, True, "", equation, for_, _settings(settings))


def simulate_batching(
    model: Any = None,
    gpu: Any = None,
    *,
    requests: int = 200,
    batch: int = 8,
    replies: str = "8:256",
    arrivals: str = "poisson",
    rate: Any = None,
    load: float | None = None,
    max_wait: Any = None,
    seed: int = 0,
    measured: str | Path | None = None,
    config: str | Path | None = None,
    tp: int | None = None,
    prompt: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    bandwidth: Any = None,
    flops: Any = None,
    memory: Any = None,
    allow_long_context: bool | None = None,
) -> Derivation:
    """Static, dynamic and continuous batching on the step-time model: throughput, TTFT, latency.

    >>> derive.simulate_batching("gpt2", requests=5).inputs["gpu"]
    'h100'
    """
    values = _named(locals(), drop=_SIMULATION)
    from derive import measurement as measuring
    from derive import scenario
    from derive.core import validate
    from derive.derivations.batching import Traffic, batching

    low, sep, high = str(replies).partition(":")
    if not (sep and low.isdigit() and high.isdigit() and 1 <= int(low) <= int(high)):
        raise DeriveError(
            f"--replies '{replies}' is not MIN:MAX, whole numbers with 1 <= MIN <= MAX", "For example --replies 8:256"
        )
    if arrivals not in ("poisson", "all"):
        raise DeriveError(f"--arrivals '{arrivals}' is not poisson or all", "Pass --arrivals poisson or all")
    _one_arrival_rate(arrivals, rate, load)
    traffic = Traffic(
        requests=validate.count(requests, "requests", "--requests"),
        seats=validate.count(batch, "batch", "--batch"),
        shortest=int(low),
        longest=int(high),
        rate=None if rate is None else float(_quantity(rate, "sequence/second", "--rate")),
        load=float(validate.number(0.8 if load is None else load, "load", "--load", 0.01, 10, True)),
        all_at_once=arrivals == "all",
        max_wait=0.05 if max_wait is None else float(_quantity(max_wait, "second", "--max-wait")),
        seed=int(seed),
    )
    measurement = measuring.load(str(measured)) if measured else None
    setup = scenario.build(_inputs(values), need_gpu=True)
    sheet, outcomes = batching(setup, traffic, measurement)
    return Derivation(sheet, setup, "simulate batching", {"outcomes": outcomes, "seats": traffic.seats})


def _one_arrival_rate(arrivals: str, rate: Any, load: Any) -> None:
    """Refuse arrival options that would be ignored: --rate and --load each set the Poisson rate, and --arrivals all
    has none."""
    given = [option for option, value in (("--rate", rate), ("--load", load)) if value is not None]
    if arrivals == "all" and given:
        raise DeriveError(
            f"--arrivals all sends every request at once, so {' and '.join(given)} would be ignored",
            f"Drop {' and '.join(given)}, or pass --arrivals poisson to pace the arrivals",
        )
    if len(given) == 2:
        raise DeriveError(
            "--rate and --load both set the Poisson arrival rate, and --rate would win",
            "Give one: --rate for requests a second, or --load for a fraction of what continuous batching serves",
        )


# The simulation's own inputs (the rest are the scenario's).
_SIMULATION = ("requests", "batch", "replies", "arrivals", "rate", "load", "max_wait", "seed", "measured")


def sweep(
    target: str,
    model: str | Iterable[Any] | None = None,
    gpu: str | Iterable[Any] = "h100",
    *,
    config: str | Path | Iterable[str | Path] = (),
    dtype: str | Iterable[str] | None = None,
    kv_dtype: str | None = None,
    tp: Any = None,
    batch: Any = None,
    context: Any = None,
    prompt: Any = None,
    output: Any = None,
    bandwidth: Any = None,
    flops: Any = None,
    memory: Any = None,
    power: Any = None,
    allow_long_context: bool = False,
) -> Any:
    """TARGET ('predict' or any formula) over a grid, compiled once to numpy: a `derive.sweeps.Sweep`, whose
    `table()` is a pyarrow Table and `write(file, 'csv' | 'parquet' | 'jsonl')` streams it.

    Axes take lists or 'START:STOP[:STEP]' text, as on the command line; names lists or 'a,b' text.

    >>> table = derive.sweep("predict", "llama3-8b", batch="1:4").table()
    >>> table.num_rows, table.column_names[:4]
    (4, ['model', 'gpu', 'dtype', 'batch'])
    """
    from derive import sweeps as sweeping

    return sweeping.plan(
        target,
        models=_listed(model),
        configs=[str(c) for c in _listed(config)],
        gpus=_listed(gpu),
        dtypes=None if dtype is None else _listed(dtype),
        kv_dtype=kv_dtype,
        numeric={"tp": tp, "batch": batch, "context": context, "prompt": prompt, "output": output},
        figures=_inputs({"bandwidth": bandwidth, "flops": flops, "memory": memory, "power": power}),
        allow_long_context=allow_long_context,
    )


def plan(
    model: Any = None,
    gpu: Any = "h100,h200,b200",
    *,
    tpot: Any,
    ttft: Any = None,
    rate: Any = None,
    config: str | Path | None = None,
    prompt: int | None = None,
    output: int | None = None,
    dtype: str | None = None,
    max_gpus: int | None = None,
    max_batch: int | None = None,
    price: str | None = None,
    floor: bool | None = None,
    draft_tokens: int | None = None,
    acceptance: Any = None,
    draft_cost: Any = None,
    mtp: bool | None = None,
    allow_long_context: bool | None = None,
) -> Any:
    """The cheapest layout (tp, ep, pp, dp) meeting TTFT and TPOT targets, over every valid layout and accelerator.

    Each layout's largest batch meeting the TPOT target is solved in closed form; the result is a
    `derive.planning.Plan` whose `pareto()` rows give accelerators, layout, batch, tokens/s per accelerator
    and per user, accelerators for the rate, cost per million output tokens, joules per token and the
    binding limit, and whose `pick` is the cheapest (or, without prices, the most tokens per accelerator).

    >>> p = derive.plan("llama3-70b", "h100", tpot="50 ms")
    >>> p.pick.layout.tp, p.pick.binds
    (4, 'TPOT')
    >>> p.results["tokens_per_s_per_accelerator"].units
    <Unit('token / second')>
    """
    from derive import planning, scenario
    from derive.catalog import Gpu, load_gpu
    from derive.core import validate
    from derive.inputs import INPUTS
    from derive.recipes import shipped_recipe

    defaults = tuple(
        k for k, v in (("dtype", dtype), ("prompt", prompt), ("output", output), ("ttft", ttft)) if v is None
    )
    ttft, max_gpus, max_batch = (
        INPUTS[k].default if v is None else v
        for k, v in (("ttft", ttft), ("max_gpus", max_gpus), ("max_batch", max_batch))
    )
    drafted = {"draft_tokens": draft_tokens, "acceptance": acceptance, "draft_cost": draft_cost, "mtp": mtp}
    request = {"model": model, "config": config, "prompt": prompt, "output": output, "dtype": dtype}
    setup = scenario.build(_inputs({**request, "allow_long_context": allow_long_context, **drafted}))
    gpus = [g if isinstance(g, Gpu) else load_gpu(g) for g in _listed(gpu)]
    if not gpus:
        raise DeriveError("--gpu names no accelerator", "For example --gpu h100,h200,b200")
    targets = planning.Targets(
        ttft=_quantity(ttft, "second", "--ttft"),
        tpot=_quantity(tpot, "second", "--tpot"),
        rate=None if rate is None else _quantity(rate, "sequence/second", "--rate"),
        prompt=setup.prompt,
        output=setup.output,
        speculation=setup.speculation,
    )
    return planning.plan(
        setup.model,
        gpus,
        targets,
        # Defaulted, the checkpoint's recipe where every accelerator searched runs it (derive/recipes.py).
        dtype=setup.dtype
        if dtype is not None
        else shipped_recipe(setup.model.config.weight_recipe, INPUTS["dtype"].default, gpus),
        max_accelerators=validate.count(max_gpus, "max_gpus", "--max-gpus"),
        max_batch=validate.count(max_batch, "max_batch", "--max-batch"),
        price_overrides=price,
        floor=bool(floor),
        defaults=defaults,
    )


def answer(question_id: str, **inputs: Any) -> Answer:
    """A worked answer to one of the questions, for its defaults or the inputs it lets you change.

    >>> derive.answer("kv-sizing-13b").results["max_sequences"]
    <Quantity(32, 'sequence')>
    """
    from derive import answers
    from derive.core import validate

    overrides = {}
    for key, value in inputs.items():
        counted = key in validate.COUNT_LIMITS and value is not None
        overrides[key] = validate.count(value, key, f"--set {key}") if counted else value
    return Answer(answers.answer(question_id, _inputs(overrides)))


def sheets(
    out: str | Path, questions: str | Sequence[str] | None = None, progress: Callable[[str], None] = lambda _: None
) -> list[Path]:
    """Every question's Markdown and LaTeX sheet, the figures and book.tex, written into `out` (`questions`: only
    these, by id, comma-separated or as a list; the book then gathers those).

    >>> import tempfile
    >>> written = derive.sheets(tempfile.mkdtemp(), questions="decode-knee,kv-sizing-13b")
    >>> sorted({p.suffix for p in written}), len(written)
    (['.md', '.png', '.svg', '.tex'], 11)
    """
    from derive import answers
    from derive.core import validate

    only = questions.split(",") if isinstance(questions, str) else questions
    return answers.write_all(validate.output_folder(out), progress=progress, only=only)


def measure(quick: bool = False, progress: Callable[[str], None] = lambda _: None) -> Any:
    """This machine's copy and matmul ceilings, and GPT-2's decode and prefill held against them (a minute;
    `quick`: a few seconds). Returns a derive.measurement.Measurement (`.as_dict()`; `report()` prints it).

    >>> [c.unit for c in derive.measure(quick=True).ceilings]
    ['byte/second', 'FLOP/second']
    """
    from derive import measurement as measuring

    return measuring.run(measuring.Plan.quick() if quick else measuring.Plan(), progress=progress)


# Helpers for the keyword arguments.


def _named(values: Mapping[str, Any], drop: Iterable[str] = ()) -> dict[str, Any]:
    """A function's keyword arguments (its locals()) as scenario inputs: `model`/`gpu` objects pass through."""
    dropped = set(drop)
    return {key: value for key, value in values.items() if key not in dropped and not key.startswith("_")}


def _text(value: Any) -> Any:
    """A pint quantity as the text the validator reads; anything else as it is."""
    return _inputs({"v": value})["v"]


def _quantity(value: Any, unit: str, option: str) -> Any:
    """'36 ms' or a pint quantity, checked; a value the CLI already checked (exact, base units) as it is."""
    from derive.core import validate

    value = _text(value)
    return validate.quantity(value, unit, option) if isinstance(value, str) else value


def _settings(settings: Mapping[str, Any] | Iterable[str]) -> list[str]:
    """{'batch': 16, 'bandwidth': '3.35 TB/s'} or ['batch=16'] as the --set texts the command parses."""
    if isinstance(settings, Mapping):
        return [f"{key}={_text(value)}" for key, value in settings.items()]
    return [str(s) for s in settings]


def _listed(value: Any) -> list[Any]:
    """'a,b' or ['a', 'b'] (or one loaded object) as a list; None and () as empty."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, Path) or hasattr(value, "config") or hasattr(value, "bandwidth"):  # one path or object
        return [value]
    return list(value)


# One validation layer for the API's Python types (derive/core/validate.py's `argument`); values are then checked
# as the CLI's are. Each keyword's kind is the inputs table's (derive/inputs.py) or its command's own, below.
_OWN_KINDS = {
    "name": "text",
    "equation": "text",
    "for_": "text",
    "target": "text",
    "question_id": "text",
    "questions": "texts",
    "settings": "settings",
    "check": "flag",
    "vs": "gpu",
    "link": "text",
    "claim": "quantity",
    "step_time": "quantity",
    "recompute": "number",
    "requests": "count",
    "replies": "text",
    "arrivals": "text",
    "load": "number",
    "max_wait": "quantity",
    "seed": "number",
    "measured": "path",
    "folder": "path",
    "path": "path",
}
# Where a command takes several of an input (a list, or comma-separated text).
_LISTED_KINDS = {
    "plan": {"gpu": "gpus"},
    "sweep": {
        "model": "models",
        "gpu": "gpus",
        "config": "paths",
        "dtype": "texts",
        **dict.fromkeys(("tp", "batch", "context", "prompt", "output"), "list"),
    },
}
_EXAMPLES = {"claim": "1000 token/s", "step_time": "36 ms", "max_wait": "50 ms"}


def _kind(function: str, keyword: str) -> tuple[str, str, str]:
    """The kind of one API keyword, with an example of a quantity and the names a choice takes."""
    from derive.inputs import INPUTS

    listed = _LISTED_KINDS.get(function, {})
    if keyword in listed:
        return listed[keyword], "", ""
    declared = INPUTS.get(keyword)
    if declared is not None:
        kind = {"model": "model", "gpu": "gpu"}.get(keyword, declared.kind)
        return kind, declared.example, ", ".join(declared.names)
    return _OWN_KINDS.get(keyword, ""), _EXAMPLES.get(keyword, ""), ""


def _strict(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` with every argument's Python type checked first: a wrong one is a DeriveError naming it."""
    import functools

    name = function.__name__

    @functools.cache
    def signature() -> Any:  # read at the first call, not at import: `import derive` stays quick
        import inspect

        return inspect.signature(function)

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        from derive.core import validate

        try:
            bound = signature().bind(*args, **kwargs)
        except TypeError as error:
            raise DeriveError(f"derive.{name}: {error}", f"See help(derive.{name})") from None
        for keyword, value in bound.arguments.items():
            parameter = signature().parameters[keyword]
            if parameter.kind is parameter.VAR_KEYWORD:  # derive.gpu's figures; an answer's own inputs
                for key, item in value.items():
                    kind, example, choices = _kind(name, key)
                    if kind:
                        validate.argument(name, key, item, kind, example, choices)
                continue
            kind, example, choices = _kind(name, keyword)
            if kind:
                validate.argument(name, keyword, value, kind, example, choices, optional=parameter.default is None)
        return function(*args, **kwargs)

    return checked


for _name in __all__:
    if _name[0].islower() and callable(globals()[_name]):
        globals()[_name] = _strict(globals()[_name])
