"""The `derive` command line: parses options, calls the library, prints.

Every command is thin: the work is in derive/ and formulas/. Any DeriveError
(and any bad option) becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from derive import api
from derive.inputs import DTYPES as INPUT_DTYPES
from derive.inputs import INPUTS
from derive.scenario import DEFAULTS

# Imports of sympy, pint and the formula library happen inside the commands, so
# that `derive --help` and errors in option parsing stay fast.


class _Once(click.Command):
    """A command that refuses an option given twice: click keeps the last value, so `--gpu h100 --gpu b200` would
    plan on b200 alone without a word."""

    def make_parser(self, ctx: click.Context) -> Any:
        parser = super().make_parser(ctx)
        parse = parser.parse_args

        def once(args: list[str]) -> Any:
            opts, rest, order = parse(args)
            seen: set[str | None] = set()
            for param in order:
                if not isinstance(param, click.Option) or param.multiple or param.is_flag or param.count:
                    continue
                if param.name in seen:
                    several = " (several go in one, comma-separated)" if "comma-separated" in (param.help or "") else ""
                    raise click.UsageError(f"{param.opts[0]} is given more than once: give it once{several}", ctx)
                seen.add(param.name)
            return opts, rest, order

        parser.parse_args = once  # type: ignore[method-assign]
        return parser


class _DeriveGroup(click.Group):
    command_class = _Once
    group_class = type  # subgroups (crossover, simulate, sweep) are _DeriveGroups, their commands _Once

    def main(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        from derive.core.errors import DeriveError

        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.NoArgsIsHelpError as exc:  # a group alone: its help, as click shows it (exit 2)
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            message = exc.format_message().removesuffix(" Did you mean '--help'?").rstrip(".")  # no option is near
            context = getattr(exc, "ctx", None)
            stop = "" if message.endswith("?") else "."  # click's "Did you mean '--help'?" ends a sentence already
            hint = f"{stop} Run '{context.command_path} --help' for the options" if context else ""
            click.echo(f"derive: error: {_one_line(message)}{hint}", err=True)
            sys.exit(2)
        except DeriveError as exc:
            click.echo(f"derive: error: {_one_line(str(exc))}", err=True)
            sys.exit(2)
        except click.Abort:
            click.echo("derive: aborted", err=True)
            sys.exit(1)
        except Exception as exc:  # a bug, not bad input: one line, and the traceback on request
            if os.environ.get("DERIVE_DEBUG"):
                raise
            click.echo(
                f"derive: internal error: {type(exc).__name__}: {exc}. Rerun with DERIVE_DEBUG=1 for the "
                "traceback, and please report it",
                err=True,
            )
            sys.exit(1)
        sys.exit(code or 0)


def _one_line(message: str) -> str:
    """An error echoes what the user typed: any character that would break its one line (a newline, a record
    separator, a control character) is written as its escape."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


class _Count(click.ParamType):
    """A whole number of at least 1 (batch, context, tp), within its sanity bound (derive/core/validate.py)."""

    name = "N"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        from derive.core import validate

        return validate.count(value, param.name if param else "count", param.opts[0] if param else "")


class _Number(click.ParamType):
    """A finite plain number within bounds (derive/core/validate.py): a share, a load, a recomputed fraction."""

    name = "number"

    def __init__(self, low: float, high: float | None, zero: bool = False) -> None:
        self.low, self.high, self.zero = low, high, zero

    def get_metavar(self, *args: Any, **kwargs: Any) -> str:
        return f"{'[' if self.zero else '('}{self.low:g}..{self.high:g}]" if self.high is not None else "NUMBER"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        from derive.core import validate

        opt = param.opts[0] if param else ""
        return validate.number(value, param.name if param else "", opt, self.low, self.high, self.zero)


class _PathText(click.ParamType):
    """A path as typed: a file or folder the command checks itself (derive/core/validate.py), never a NUL byte."""

    def __init__(self, metavar: str) -> None:
        self.name = metavar.lower()
        self.metavar = metavar

    def get_metavar(self, *args: Any, **kwargs: Any) -> str:
        return self.metavar

    def convert(self, value: Any, param: Any, ctx: Any) -> str:
        from derive.core import validate

        return validate.path_text(value, param.opts[0] if param else "")


class _Quantity(click.ParamType):
    """A quantity with units, checked for dimension and sanity bounds ('3.35 TB/s')."""

    def __init__(self, unit_text: str, example: str) -> None:
        self.unit_text, self.example, self.name = unit_text, example, "quantity"

    def get_metavar(self, *args: Any, **kwargs: Any) -> str:
        # Shown as written: click upper-cases a type's name, and '3.35 TB/S' is not a unit.
        return f"'{self.example}'"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        from derive.core import validate

        return validate.quantity(value, self.unit_text, param.opts[0] if param else "")


COUNT = _Count()
DTYPES = list(INPUT_DTYPES)


def option(name: str, help: str | None = None) -> Callable[..., Any]:
    """The click option of one shared input, built from its declaration in derive/inputs.py; `help`: the command's
    own words where the input means something of its own there."""
    declared = INPUTS[name]
    flags = [declared.option, *([declared.short] if declared.short else [])]
    kinds: dict[str, dict[str, Any]] = {
        "count": {"type": COUNT},
        "quantity": {"type": _Quantity(declared.unit, declared.example)},
        "choice": {"type": click.Choice(list(declared.names), case_sensitive=False)},
        "flag": {"is_flag": True, "default": None},
        "path": {"type": _PathText("PATH")},
        "text": {},
        "number": {"metavar": "NUMBER"},
    }
    # Every default is filled in below the CLI (a shared input's by the scenario, derive/scenario.py; a command's own
    # by its API function), which then names it in "defaults used"; the help states it (Input.text).
    return click.option(*flags, name, help=help or declared.text, **kinds[declared.kind])


def _options(*decorators: Callable[..., Any]) -> Callable[..., Any]:
    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


model_options = _options(option("model"), option("config"))
GPU_FIGURES = {name: option(name) for name in ("bandwidth", "flops", "memory", "power")}


def gpu_options_for(*figures: str) -> Callable[..., Any]:
    """--gpu and the datasheet overrides a command reads (an override it ignores is not offered)."""
    return _options(
        option("gpu"),
        *(GPU_FIGURES[f] for f in figures),
    )


gpu_options = gpu_options_for(*GPU_FIGURES)
ROOFLINE = ("bandwidth", "flops", "memory")


context_options = _options(option("context"), option("allow_long_context"))
dtype_option = option("dtype")
kv_dtype_option = option("kv_dtype")
WORKLOAD = {"context": context_options, "dtype": dtype_option, "kv_dtype": kv_dtype_option}
workload_options = _options(*WORKLOAD.values())


tp_option = option("tp")
set_option = click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="Give any quantity a value: --set batch=16, --set 'bandwidth=3.35 TB/s'.",
)
batch_option = option("batch")
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the derivation.")


def _emit(result: Any, as_json: bool) -> None:
    click.echo(result.to_json() if as_json else result.to_text(), nl=False)


def _doc(function: Callable[..., Any]) -> str:
    """A command's help: the first paragraph of its API function's docstring (one text for both)."""
    return str(function.__doc__).split("\n\n")[0].strip()


figure_option = click.option("--figure", type=_PathText("FILE"), help="Also draw the figure to this .svg (and .png).")


@click.group(cls=_DeriveGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="derive", prog_name="derive")
def cli() -> None:
    """Unit-checked, closed-form costs of running transformers.

    Every number comes from a SymPy formula whose units are checked, evaluated
    from a model's real config.json and an accelerator's datasheet figures.
    """


@cli.group()
def crossover() -> None:
    """Closed-form crossovers: where KV reads overtake weight reads, where prefill turns compute-bound."""


def _sheet_command(
    name: str,
    function: Callable[..., Any],
    *extra: Callable[..., Any],
    need_gpu: bool = True,
    reads: tuple[str, ...] = ("context", "dtype", "kv_dtype"),
    figures: tuple[str, ...] = ROOFLINE,
    figure: bool = False,
) -> None:
    """Register a command that is one API call (derive/api.py) with the shared options it `reads`.

    An option the derivation does not read is not offered: a --context that changes nothing is a trap.
    """

    def command(as_json: bool, **kwargs: Any) -> None:
        from derive.core import validate

        path = kwargs.pop("figure", None)
        if path:
            validate.figure_file(path, "--figure")  # before any work: an unwritable path fails first
        result = function(**kwargs)
        if path:
            result.figure(path)
        _emit(result, as_json)

    command.__doc__ = _doc(function)
    decorated: Any = command
    for decorator in reversed(
        (
            model_options,
            *((gpu_options_for(*figures),) if need_gpu else ()),
            *(WORKLOAD[r] for r in reads),
            *extra,
            *((figure_option,) if figure else ()),
            json_option,
        )
    ):
        decorated = decorator(decorated)
    group = crossover if name.startswith("crossover ") else cli
    group.command(name=name.split()[-1])(decorated)


prompt_option = option("prompt")
output_option = option("output")
layout_options = (option("ep"), option("pp"), option("dp"))
floor_option = option("floor")
speculation_options = tuple(option(name) for name in ("draft_tokens", "acceptance", "draft_cost", "mtp"))
vs_option = click.option(
    "--vs",
    required=True,
    help="The accelerator to compare with, at its datasheet figures: --bandwidth, --flops and --memory override "
    "--gpu's alone.",
)
tokens_option = option("tokens")
link_option = click.option(
    "--link",
    help="Interconnect: 'nvlink' or 'network' (the system's NVLink or scale-out network per accelerator, one way; "
    "formulas/systems.toml), or a bandwidth such as '50 GB/s'. Default: nvlink.",
)
claim_option = click.option(
    "--claim",
    "claim",
    required=True,
    type=_Quantity("token/second", "1000 token/s"),
    help="The claimed tokens per second per user.",
)

check_option = click.option(
    "--check",
    is_flag=True,
    default=None,
    help="Also build the config with transformers on the meta device and compare layer by layer "
    "(needs pip install 'derive[hf]').",
)
_sheet_command("params", api.params, check_option, need_gpu=False, reads=())
_sheet_command("kv", api.kv, batch_option, need_gpu=False, figure=True)
_sheet_command("knee", api.knee, tp_option, *layout_options, figure=True)
_sheet_command("flops", api.flops, need_gpu=False, reads=("context",))
_sheet_command("fit", api.fit, tp_option, *layout_options, figures=("memory",))
_sheet_command("intensity", api.intensity, batch_option, figures=("bandwidth", "flops"), figure=True)
_sheet_command(
    "crossover kv-weights",
    api.crossover_kv_weights,
    batch_option,
    reads=("dtype", "kv_dtype"),
    figures=("memory",),
    figure=True,
)
_sheet_command(
    "crossover prefill", api.crossover_prefill, reads=("dtype", "kv_dtype"), figures=("bandwidth", "flops"), figure=True
)
_sheet_command(
    "predict",
    api.predict,
    tp_option,
    *layout_options,
    batch_option,
    prompt_option,
    output_option,
    option("allow_long_context"),
    floor_option,
    *speculation_options,
    reads=("dtype", "kv_dtype"),
    figure=True,
)
_sheet_command("compare", api.compare, tp_option, *layout_options, vs_option)
_sheet_command("experts", api.experts, batch_option, need_gpu=False, reads=("dtype",), figure=True)
_sheet_command("energy", api.energy, tp_option, *layout_options, batch_option, figures=tuple(GPU_FIGURES))
_sheet_command(
    "shard", api.shard, tp_option, tokens_option, link_option, reads=("dtype",), figures=("bandwidth", "flops")
)
_sheet_command("claim", api.claim, tp_option, *layout_options, claim_option, figures=("bandwidth", "memory"))
_sheet_command("attention-memory", api.attention_memory, need_gpu=False, reads=("context", "dtype"))
_sheet_command(
    "utilisation",
    api.utilisation,
    tp_option,
    *layout_options,
    batch_option,
    click.option(
        "--step-time",
        type=_Quantity("second", "36 ms"),
        help="The measured decode step time. Default: the roofline step time (a 100% floor).",
    ),
    click.option(
        "--recompute",
        type=_Number(0, 10, zero=True),
        default="0",
        help="Recomputed FLOPs as a fraction of the model's (activation checkpointing). Default: 0.",
    ),
    figures=("bandwidth", "flops"),
)


@cli.command()
@click.option("--quick", is_flag=True, help="Small sizes and two layers: a few seconds (for tests).")
@click.option("--out", type=_PathText("FILE"), help="Write the result as JSON to this file.")
@click.option("--figure", type=_PathText("FILE"), help="Write the roofline to this .svg (and .png).")
@json_option
def measure(quick: bool, out: str | None, figure: str | None, as_json: bool) -> None:
    """Measure this machine's copy and matmul ceilings, then GPT-2's decode and prefill against them."""
    import json as json_module
    from pathlib import Path

    from derive import measurement as measuring
    from derive.core import validate

    # Checked before a minute of measuring.
    out_file = validate.output_file(out, example="measured.json") if out else None
    if figure:
        validate.figure_file(figure, "--figure")
    plan = measuring.Plan.quick() if quick else measuring.Plan()
    result = measuring.run(plan, progress=lambda text: click.echo(f"  ... {text}", err=True))
    payload = json_module.dumps(result.as_dict(), indent=2) + "\n"
    if out_file:  # the measurements alone: what is derived from them is derived again when the file is read
        with validate.atomic(out_file) as stream:
            stream.write(json_module.dumps(result.recorded(), indent=2) + "\n")  # type: ignore[attr-defined]
    if figure:
        measuring.draw(result, Path(figure).with_suffix(""))
    click.echo(payload if as_json else measuring.report(result), nl=False)


@cli.group()
def simulate() -> None:
    """Discrete-event simulations driven by the step-time model."""


@simulate.command(name="batching", help=_doc(api.simulate_batching))
@model_options
@gpu_options_for(*ROOFLINE)
@dtype_option
@kv_dtype_option
@tp_option
@prompt_option
@option("allow_long_context")
@click.option("--requests", type=COUNT, default=200, show_default=True, help="Requests to serve.")
@click.option("--batch", type=COUNT, default=8, show_default=True, help="Most requests decoded at once (the seats).")
@click.option("--replies", default="8:256", show_default=True, help="Reply lengths, uniform: MIN:MAX tokens.")
@click.option("--arrivals", type=click.Choice(["poisson", "all"]), default="poisson", show_default=True)
@option("rate", help="Requests a second the Poisson arrivals come at (instead of --load). Default: --load's.")
@click.option(
    "--load",
    type=_Number(0.01, 10, zero=True),
    help="Offered load as a fraction of what continuous batching serves: Poisson arrivals at that rate (instead of "
    "--rate). Default: 0.8.",
)
@click.option(
    "--max-wait", type=_Quantity("second", "50 ms"), help="Dynamic batching's cap on waiting. Default: 50 ms."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed: runs are reproducible.")
@click.option(
    "--measured",
    type=_PathText("FILE"),
    help="Drive the steps by a 'derive measure --out' result instead of the roofline.",
)
@click.option("--figure", type=_PathText("FILE"), help="Write a seat timeline to this .svg (and .png).")
@json_option
def simulate_batching(
    as_json: bool,
    requests: int,
    batch: int,
    replies: str,
    arrivals: str,
    rate: Any,
    load: Any,
    max_wait: Any,
    seed: int,
    measured: str | None,
    figure: str | None,
    **kwargs: Any,
) -> None:
    from derive import api
    from derive.core import validate

    if figure:
        validate.figure_file(figure, "--figure")  # before the simulation: an unwritable path fails first
    result = api.simulate_batching(
        requests=requests,
        batch=batch,
        replies=replies,
        arrivals=arrivals,
        rate=rate,
        load=load,
        max_wait=max_wait,
        seed=seed,
        measured=measured,
        **kwargs,
    )
    if figure:
        result.figure(figure)
    _emit(result, as_json)


@cli.command(help=_doc(api.plan))
@model_options
@click.option(
    "--gpu", "-g", "gpus", default="h100,h200,b200", show_default=True, help="Accelerators to plan on, comma-separated."
)
@_options(*(option(name) for name in ("tpot", "ttft", "rate")))
@prompt_option
@output_option
@option("allow_long_context")
@dtype_option
@_options(*(option(name) for name in ("max_gpus", "max_batch", "price", "floor")))
@_options(*speculation_options)
@figure_option
@json_option
def plan(as_json: bool, figure: str | None, gpus: str, tpot: Any, **kwargs: Any) -> None:
    from derive import api
    from derive.core import validate

    if tpot is None:
        raise click.UsageError("Missing option '--tpot'. Give the time-per-output-token target, e.g. --tpot '50 ms'.")
    if figure:
        validate.figure_file(figure, "--figure")
    result = api.plan(gpu=gpus, tpot=tpot, **{k: v for k, v in kwargs.items() if v is not None})
    if figure:
        result.figure(figure)
    _emit(result, as_json)


@cli.command()
@click.argument("target")
@click.option("--model", "-m", "models", help="Catalog models, comma-separated: llama3-70b,llama3-8b.")
@click.option(
    "--config",
    "configs",
    type=_PathText("PATH"),
    multiple=True,
    help="A local Hugging Face config.json, or its folder (repeat for more; with or without --model).",
)
@click.option("--gpu", "-g", "gpus", default=DEFAULTS["gpu"], show_default=True, help="Accelerators, comma-separated.")
@_options(*(GPU_FIGURES[f] for f in ("bandwidth", "flops", "memory", "power")))
@click.option(
    "--dtype",
    "dtypes",
    help=f"Weight dtypes, comma-separated. Default: {INPUTS['dtype'].rule}, for each model.",
)
@kv_dtype_option
@click.option(
    "--tp",
    help="Tensor-parallel degrees: 1,2,4,8, or a range 1:8 (a range keeps the degrees that split the model's heads). "
    "Default: the smallest power of two that fits, chosen row by row as derive predict chooses it, in a tp column.",
)
@click.option("--batch", help=f"Batches: a list or START:STOP[:STEP], inclusive. Default: {DEFAULTS['batch']}.")
@click.option(
    "--context",
    help=f"Contexts: S for a formula; for predict, the context each decode step sees and the cache must hold. "
    f"Default: {DEFAULTS['context']}; for predict, decode at the prompt plus half the output and hold the cache to its "
    "end, as derive predict.",
)
@click.option("--allow-long-context", is_flag=True, help="Sweep contexts beyond a config's position limit anyway.")
@click.option("--prompt", help=f"Prompt tokens. Default: {DEFAULTS['prompt']}.")
@click.option("--output", help=f"Output tokens. Default: {DEFAULTS['output']}.")
@click.option("--out", type=_PathText("FILE"), help="Write here (.csv, .parquet or .jsonl); default: CSV to stdout.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@figure_option
def sweep(
    target: str,
    models: str | None,
    configs: tuple[str, ...],
    gpus: str,
    dtypes: str | None,
    kv_dtype: str | None,
    out: str | None,
    quiet: bool,
    allow_long_context: bool,
    bandwidth: Any,
    flops: Any,
    memory: Any,
    power: Any,
    figure: str | None,
    **numeric: str | None,
) -> None:
    """Evaluate TARGET ('predict' or any formula name) over a grid, compiled once to numpy.

    Configurations that do not fit in memory are kept and marked fits=0. Datasheet overrides apply to every
    accelerator swept. Without --tp, a tp column gives the degree each row ran at. Columns are typed and carry
    their unit in their name (and, in Parquet, in the field's metadata).
    """
    import sys as system

    from derive import api
    from derive.core import validate
    from derive.core.errors import DeriveError

    target_file = validate.output_file(out) if out else None
    if figure:
        validate.figure_file(figure, "--figure")  # before any work: an unwritable path fails first
    fmt = _sweep_format(out)
    planned = api.sweep(
        target,
        models,
        gpus,
        config=configs,
        dtype=dtypes,
        kv_dtype=kv_dtype,
        bandwidth=bandwidth,
        flops=flops,
        memory=memory,
        power=power,
        allow_long_context=allow_long_context,
        **numeric,
    )
    if figure:
        planned.check_figure()
    picks = planned.picks()
    if picks and not quiet:
        chosen = ", ".join(f"{m} on {g} ({d}): {tp}" for m, g, d, tp in picks)
        click.echo(f"derive: tp not given, the smallest power of two that fits: {chosen}", err=True)
    if not quiet:
        for note in planned.notes:
            click.echo(f"derive: {note}", err=True)

    def write(handle: Any) -> int:
        if quiet or planned.grid.size < 100_000:
            return int(planned.write(handle, fmt))
        with click.progressbar(length=planned.grid.size, label="sweeping", file=system.stderr) as bar:
            return int(planned.write(handle, fmt, bar.update))

    if figure:
        planned.figure(figure)
    if target_file is None:
        if fmt == "parquet":
            raise DeriveError("Parquet cannot go to the terminal", "Pass --out grid.parquet")
        system.stdout.flush()
        write(system.stdout.buffer)
        system.stdout.buffer.flush()
        return
    # Written beside the target and renamed at the end: a sweep that fails leaves no header-only file.
    with validate.atomic(target_file, "wb") as handle:
        rows = write(handle)
    click.echo(f"wrote {rows:,} rows to {out}", err=True)


def _sweep_format(out: str | None) -> str:
    """The format an --out path asks for by its suffix: .csv (and stdout), .parquet, .jsonl."""
    from derive.core.errors import DeriveError

    if out is None or out.endswith(".csv"):
        return "csv"
    if out.endswith(".parquet"):
        return "parquet"
    if out.endswith((".jsonl", ".json")):
        return "jsonl"
    raise DeriveError(
        f"--out '{out}' is not .csv, .parquet or .jsonl", "Name the file grid.csv, grid.parquet or grid.jsonl"
    )


@cli.command()
@json_option
def formulas(as_json: bool) -> None:
    """Every library formula: name, unit, formula, LaTeX, meaning and source."""
    from derive import listing

    click.echo(listing.formulas(as_json), nl=False)


@cli.command(name="eval", help=_doc(api.evaluate))
@click.argument("name")
@model_options
@gpu_options
@workload_options
@tp_option
@_options(*layout_options)
@batch_option
@set_option
@json_option
def eval_command(name: str, settings: tuple[str, ...], as_json: bool, **kwargs: Any) -> None:
    from derive import api

    _emit(api.evaluate(name, settings=settings, **kwargs), as_json)


@cli.command(name="solve", help=_doc(api.solve))
@click.argument("equation")
@click.option("--for", "unknown", required=True, help="The quantity to solve for, e.g. context.")
@model_options
@gpu_options
@workload_options
@tp_option
@_options(*layout_options)
@batch_option
@set_option
@json_option
def solve_command(equation: str, unknown: str, settings: tuple[str, ...], as_json: bool, **kwargs: Any) -> None:
    from derive import api

    _emit(api.solve(equation, unknown, settings=settings, **kwargs), as_json)


@cli.command()
@click.argument("question_id", required=False)
@click.option("--list", "list_questions", is_flag=True, help="List the questions and their ids.")
@click.option("--model", "-m", help="Model for the question (where it lets you change it).")
@click.option("--gpu", "-g", help="Accelerator for the question (where it lets you change it).")
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="Change another input the question names: --set context=4096, --set tp=4.",
)
@click.option("--format", "fmt", type=click.Choice(["md", "tex", "json"]), default="md", show_default=True)
@click.option("--out", type=_PathText("FOLDER"), help="Write ID.md, ID.tex and the figures into this folder.")
@click.option(
    "--measure",
    is_flag=True,
    help="Measure this machine live instead of reading the recorded result "
    "(for the questions that quote a measurement).",
)
def answer(
    question_id: str | None,
    list_questions: bool,
    model: str | None,
    gpu: str | None,
    settings: tuple[str, ...],
    fmt: str,
    out: str | None,
    measure: bool,
) -> None:
    """A worked answer to one of the 25 questions, for its defaults or your model and accelerator."""
    from derive import answers
    from derive.core import validate

    if list_questions or question_id is None:
        for q in answers.questions().values():
            click.echo(f"{q.id:<26} {q.source:<22} {q.title}")
        return
    from derive import api

    overrides: dict[str, Any] = {"model": model, "gpu": gpu, "measure": True if measure else None}
    overrides.update(validate.setting(text, "--set context=4096") for text in settings)
    folder = validate.output_folder(out) if out else None  # before any work: an unwritable folder fails first
    worked = api.answer(question_id, **overrides)
    if folder:
        for path in worked.write(folder):
            click.echo(str(path))
        return
    rendered = {"json": worked.to_json, "md": worked.to_markdown, "tex": worked.to_latex}[fmt]()
    click.echo(rendered, nl=False)


@cli.command()
@click.option("--out", type=_PathText("FOLDER"), required=True, help="The folder for the sheets.")
@click.option(
    "--question", "questions", metavar="ID[,ID...]", help="Only these answers (ids as 'derive answer --list' gives)."
)
def sheets(out: str, questions: str | None) -> None:
    """Write every question's Markdown and LaTeX sheet, the figures and book.tex."""
    from derive import answers, api

    total = len({q.strip() for q in questions.split(",")}) if questions else len(answers.questions())
    done = iter(range(1, total + 1))
    written = api.sheets(out, questions, progress=lambda qid: click.echo(f"  ... {next(done)}/{total} {qid}", err=True))
    click.echo(f"wrote {len(written)} files to {out}")


@cli.command()
@json_option
def models(as_json: bool) -> None:
    """List the catalog's models: name, family, published parameters, aliases."""
    from derive import listing

    click.echo(listing.models(as_json), nl=False)


@cli.command()
@json_option
def gpus(as_json: bool) -> None:
    """List the catalog's accelerators with their dense datasheet figures."""
    from derive import listing

    click.echo(listing.gpus(as_json), nl=False)


@cli.command()
@json_option
def check(as_json: bool) -> None:
    """Check every formula's units; exit non-zero if any fails."""
    from derive import checker
    from derive.core.render import listing_json

    report, failures = checker.run()
    if as_json:
        lines = report.splitlines()
        click.echo(listing_json("check", "checks", lines[:-1], [lines[-1]]), nl=False)
    else:
        click.echo(report, nl=False)
    if failures:
        click.echo(f"derive: {failures} formula check(s) failed", err=True)
        sys.exit(1)


main = functools.partial(cli.main, prog_name="derive")

if __name__ == "__main__":
    cli.main(prog_name="derive")
