"""What every derivation shares: the Setup a command runs on, and the start of a sheet."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sympy

from derive.architecture.build import kind_name
from derive.catalog import Gpu, Model, dtype_bytes
from derive.core.errors import DeriveError, FitError
from derive.core.evaluation import depends_on, evaluate
from derive.core.library import Formula, Library
from derive.core.sheet import Sheet, Work
from derive.core.symbols import Sym
from derive.core.units import counted, format_quantity
from derive.recipes import COMMAND_DTYPE, checkpoint_notes
from derive.speculation import NONE, Speculation
from formulas import energy as en
from formulas import layout as lay
from formulas import library, roofline
from formulas import notation as sym
from formulas import prefill as pf

# The options that give one quantity each: a request's sizes, and the datasheet figures --bandwidth and the rest
# override (derive/derivations/generic.py and derive/sweeps.py refuse one the quantity asked for never reads).
REQUEST_OPTIONS = {"batch": sym.B, "context": sym.S, "prompt": pf.S_p, "output": pf.S_o}
FIGURE_OPTIONS = {"bandwidth": sym.BW, "flops": sym.P, "memory": sym.M, "power": en.P_acc}


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
    ep: int = 1  # expert-parallel groups: each expert split tp·dp/ep ways (tp·dp: whole experts)
    pp: int = 1  # pipeline stages, each holding L/pp layers and its own micro-batch of `batch`
    dp: int = 1  # attention data-parallel ranks sharing one copy of the routed experts
    prompt: int = 2048  # prompt tokens (predict)
    output: int = 256  # output tokens (predict)
    tokens: int = 1  # tokens through a layer at once (shard)
    link: sympy.Rational | None = None  # interconnect bandwidth, one-way (shard)
    link_name: str = ""
    vs: Gpu | None = None  # the accelerator to compare with (compare)
    claim: sympy.Rational | None = None  # claimed tokens/s per user (claim)
    floor: bool = False  # the roofline floor alone, no calibrated estimate (predict)
    allow_long_context: bool = False  # a --context past the config's positions, sized anyway
    speculation: Speculation = NONE  # a draft's tokens, acceptance and cost, or the config's MTP (plan, predict)
    defaults: tuple[str, ...] = field(default=())  # options the user left to their defaults
    dtype_option: str = COMMAND_DTYPE  # how the user gives the dtype (`derive answer`: QUESTION_DTYPE), for the notes

    def __post_init__(self) -> None:
        from derive.core import validate

        for name in ("context", "batch", "tp", "ep", "pp", "dp", "prompt", "output", "tokens"):
            value = getattr(self, name)
            if value is not None and isinstance(value, (int, str, float)):  # internal sympy values are derived
                object.__setattr__(self, name, validate.count(value, name))
        if self.tp is not None and isinstance(self.tp, int):
            from derive.layouts import check_tp

            check_tp(self.model, self.tp)

    def check_context(self, context: bool = True, request: bool = False) -> Setup:
        """Refuse a context the user gave (`context`) past the config's positions, or (`request`: a --prompt or
        --output given) a request whose prompt and reply run past them, unless allow_long_context
        (derive/scenario.py's build, which the CLI, the API and the answers share, calls this)."""
        limit = self.model.config.max_context
        if not limit or self.allow_long_context:
            return self
        given = context and isinstance(self.context, int) and "context" not in self.defaults
        if given and self.context > limit:
            raise DeriveError(
                f"--context {self.context:,} is beyond the {limit:,} positions of {self.model.name}'s config",
                "Pass a shorter --context, or --allow-long-context to size it anyway",
            )
        # A request's prompt and reply: its last token sits at prompt + output, where either was given.
        if request and isinstance(self.prompt, int) and self.prompt + self.output > limit:
            raise DeriveError(
                f"a {self.prompt:,}-token prompt and a {self.output:,}-token reply reach {self.prompt + self.output:,} "
                f"tokens, beyond the {limit:,} positions of {self.model.name}'s config",
                "Pass a shorter prompt or reply, or --allow-long-context to size them anyway",
            )
        return self

    @property
    def kv_format(self) -> str:
        if self.kv_dtype:
            return self.kv_dtype
        # Weight-only quantisation keeps the cache in 16 bits: the format its activations travel in.
        from derive.recipes import recipes

        return recipes()[self.dtype].activations

    def inputs(self) -> dict[str, object]:
        out: dict[str, object] = {
            "model": self.model.name,
            "dtype": self.dtype,
            "kv_dtype": self.kv_format,
            "context": self.context,
            "batch": self.batch,
        }
        if self.gpu is not None:
            out["gpu"] = self.gpu.name
        if self.tp is not None:
            out["tp"] = self.tp
        out.update({k: v for k, v in (("ep", self.ep), ("pp", self.pp), ("dp", self.dp)) if v != 1})
        return out

    @property
    def plain_tp(self) -> bool:
        """Tensor parallelism alone (Layout(tp)) and no draft: the layout formulas reduce to the roofline's and
        calibrated's (a draft's verification pass is the layout formulas' alone)."""
        return (self.ep, self.pp, self.dp) == (1, 1, 1) and not self.speculation

    def peak(self, gpu: Gpu | None = None) -> tuple[sympy.Rational, str]:
        """`gpu`'s (else the setup's accelerator's) peak FLOP/s in the setup's dtype and its note; an accelerator
        without one fails saying how this setup's user gives another dtype."""
        chosen = gpu or self.gpu
        assert chosen is not None
        return chosen.peak(self.dtype, self.dtype_option)


# Each model's library, built once: the catalog loads a model once, and a library's inlining memo (and the limits
# derive/core/solving.py keeps by library) serve every sheet of that model. Keyed by identity, the model held so its
# id is not reused.
_LIBRARIES: dict[int, tuple[Model, Library]] = {}


def model_library(model: Model) -> Library:
    """The whole library, with the model's own formulas (its counts, and its costs where its layers differ)."""
    held = _LIBRARIES.get(id(model))
    if held is None or held[0] is not model:
        if len(_LIBRARIES) > 256:  # config paths load a new Model each time: keep the cache bounded
            _LIBRARIES.clear()
        held = _LIBRARIES[id(model)] = (model, library().extended(model.formulas.all()))
    return held[1]


def start(command: str, title: str, setup: Setup) -> Work:
    work = Work(Sheet(command, title, setup.inputs()), model_library(setup.model))
    # Every derivation says which inputs it took by default ("defaults used:"), in one place.
    work.sheet.inputs["defaults"] = list(setup.defaults)
    for shape, value in setup.model.formulas.shapes.items():
        work.given(shape, value, "config")
    return work


def model_notes(work: Work, setup: Setup, longest: int | None = None) -> None:
    """The model's own notes, and the context checks on the tokens the sheet used: `longest`, the most a sequence
    reaches (predict: prompt plus output), else the context where the sheet reads one; none where it reads none."""
    arch = setup.model.config
    for note in arch.notes:
        work.note(note)
    if longest is None and sym.S in work.values and isinstance(setup.context, int):
        longest = setup.context
    capped = [f"{tokens:,} ({kind_name(tag)})" for tag, tokens in arch.windows.items() if longest and longest > tokens]
    if capped:
        work.note(
            f"at {longest:,} tokens the windowed layers hold only their last {', '.join(capped)} tokens: "
            "their cache and attention stop growing there"
        )
    beyond = arch.position_note(longest, setup.model.name) if longest else None
    if beyond:
        work.note(beyond)
    gpus = [g for g in (setup.gpu, setup.vs) if g is not None]
    for note in checkpoint_notes(arch.weight_recipe, arch.expert_format, setup.dtype, gpus, setup.dtype_option):
        work.note(note)
    sanity_notes(work, setup)


def sanity_notes(work: Work, setup: Setup) -> None:
    """The checks every sheet shares, each said only where the sheet's own values fall outside it: the experts a
    batch touches, the memory that holds the batch (the context past the config's positions is said in
    model_notes)."""
    expert_coverage_note(work, setup)
    batch_memory_note(work)


def expert_coverage_note(work: Work, setup: Setup) -> None:
    """For a MoE model at a batch: how many routed experts a step touches, and what that makes it read."""
    from formulas import moe, reads

    cfg, values = setup.model.config, work.values
    if not cfg.is_moe or moe.E_t not in values or moe.T_r not in values:
        return
    if "experts_touched" in work.sheet.results:  # the sheet derives the coverage itself and says it there
        return
    touched = values[moe.E_t]
    read = (
        f", so it reads {format_quantity(values[reads.W_read], 'byte')} of the "
        f"{format_quantity(values[sym.W], 'byte')} stored"
        if reads.W_read in values and sym.W in values
        else ""
    )
    work.note(
        f"{setup.model.name} is a mixture of experts: a step's {format_quantity(values[moe.T_r], '')} "
        f"token{'s' if values[moe.T_r] != 1 else ''} touch{'es' if values[moe.T_r] == 1 else ''} "
        f"about {format_quantity(touched, '')} of {cfg.experts} routed experts a layer "
        f"({float(touched / cfg.experts):.0%}){read} (derive experts)"
    )


def values_at(work: Work, changes: dict[Sym, object]) -> dict[Sym, sympy.Expr]:
    """The work's values with `changes`, less every value it computed from a changed symbol: for evaluating the
    same step at another batch or context aside, without touching the sheet."""
    from derive.core.evaluation import depends_on

    def derived_from_change(symbol: Sym) -> bool:
        defining = work.library.defining(symbol.symbol)
        return defining is not None and any(depends_on(defining.expr, c, work.library) for c in changes)

    kept = {s: v for s, v in work.values.items() if s not in changes and not derived_from_change(s)}
    kept.update({s: sympy.sympify(v) for s, v in changes.items()})
    return kept


def held_per_accelerator(values: dict[Sym, sympy.Expr], library: Library, batch: object, context: object) -> sympy.Expr:
    """Bytes one accelerator holds for `batch` sequences of `context` tokens (formulas/roofline.py's M_g): the one
    fit check every command shares."""
    at = {sym.n: sympy.Integer(1), **values, sym.B: sympy.sympify(batch), sym.S: sympy.sympify(context)}
    for derived in (sym.kv_seq, lay.K_gs, roofline.M_g):  # the cache at this batch and context, not the sheet's
        at.pop(derived, None)
    return evaluate(library.get("memory_per_accelerator").expr, at, library)


def batch_memory_note(work: Work) -> None:
    """Where a sheet works at a batch its accelerators' memory cannot hold, say so: its figures are not servable."""
    values = work.values
    if not all(s in values for s in (sym.B, sym.W, sym.S, sym.M)):
        return
    needed = held_per_accelerator(values, work.library, values[sym.B], values[sym.S])
    if needed > values[sym.M]:
        batch = values[sym.B]
        sequences = counted(int(batch), "sequence") if batch.is_integer else format_quantity(batch, "sequence")
        shown, held = more_than(needed, values[sym.M])
        work.note(
            f"{sequences} at this context need{'s' if batch == 1 else ''} {shown} of each accelerator for weights "
            f"and cache, more than its {held}: this batch is not servable there"
        )


# Bytes per value of the formats a checkpoint may keep its experts or its recurrent state in.
_FORMAT_BYTES = {"mxfp4": (sympy.Rational(17, 32), "mxfp4: 4-bit values and one 8-bit scale per 32 (OCP MX v1.0)")}


def cache_formulas(model: Model) -> list[Formula]:
    """The model's per-token cache and state formulas (values, bytes), without its FLOP counts."""
    return [f for f in model.formulas.per_token if "FLOP" not in f.unit]


def flop_formulas(model: Model) -> list[Formula]:
    return [f for f in model.formulas.per_token if "FLOP" in f.unit]


def kv_values(work: Work, setup: Setup, compute: bool = True) -> None:
    kv_format = setup.kv_format
    work.given(sym.b_kv, dtype_bytes(kv_format, "--kv-dtype"), kv_format)
    arch = setup.model.config
    if any(kind.state_values is not None for kind in setup.model.formulas.kinds):
        state = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(arch.state_dtype, kv_format)
        work.given(sym.b_st, dtype_bytes(state), f"{state}: the recurrent state's dtype in the config")
    work.given(sym.S, setup.context, "--context" if "context" not in setup.defaults else "default")
    if compute:
        for formula in cache_formulas(setup.model):
            work.compute(formula)


def weight_format(work: Work, setup: Setup) -> None:
    """b_w, and b_x where the checkpoint stores its routed experts in a format of their own."""
    work.given(sym.b_w, dtype_bytes(setup.dtype), setup.dtype)
    expert_format = setup.model.config.expert_format
    if expert_format:
        if expert_format in _FORMAT_BYTES:
            size, note = _FORMAT_BYTES[expert_format]
        else:
            size, note = dtype_bytes(expert_format), f"{expert_format}, as shipped"
        work.given(sym.b_x, size, note)
        work.given(sym.N_routed, _count_of(work, setup, sym.N_routed), "from the config: derive params")


def _count_of(work: Work, setup: Setup, target: Sym) -> sympy.Expr:
    return evaluate(target.symbol, dict(setup.model.formulas.shapes), work.library)


def sizing_values(setup: Setup) -> dict[Sym, sympy.Expr]:
    """The shapes and formats that weight and cache bytes need, for sizing before a derivation starts."""
    probe = Work(Sheet("sizing", "", {}), model_library(setup.model))
    for shape, value in setup.model.formulas.shapes.items():
        probe.values[shape] = value
    weight_format(probe, setup)
    kv_values(probe, setup, compute=False)
    return dict(probe.values)


def aggregates(work: Work, setup: Setup) -> None:
    """The model's totals as givens: the knee needs N and N_mm, not their breakdown."""
    library = work.library
    for target in (sym.N, sym.N_mm):
        work.given(
            target,
            evaluate(target.symbol, dict(setup.model.formulas.shapes), library),
            "from the config: derive params",
        )


def default_tp(
    setup: Setup,
    weights: sympy.Expr,
    one_sequence: sympy.Expr,
    memory: sympy.Expr,
    context: object = None,
    shorter: str = "a shorter --context",
) -> int:
    """The smallest power of two whose memory holds the weights and one sequence (of `context` tokens, the setup's by
    default), splitting whole heads; where none does, a one-line error naming what would (`shorter`: the command's
    own way to a shorter sequence)."""
    from derive.core.validate import COUNT_LIMITS
    from derive.layouts import shape, tp_problem

    s, tp = shape(setup.model), 1
    tokens = setup.context if context is None else context
    scratch, library = {**sizing_values(setup), sym.S: sympy.sympify(tokens)}, model_library(setup.model)

    def holds(degree: int) -> bool:  # one accelerator's share (formulas/roofline.py), each kind's cache its s_kv
        shards = evaluate(sym.s_kv.symbol, {**scratch, sym.n: sympy.Integer(degree)}, library)
        return bool(memory >= weights / degree + one_sequence / shards)

    while not holds(tp):
        problem = tp_problem(s, 2 * tp)
        if problem is None and 2 * tp > COUNT_LIMITS["tp"]:  # no heads to bound it (a recurrent model's state)
            problem = f"tp {2 * tp} is past this tool's bound of {COUNT_LIMITS['tp']:,}"
        if problem is not None:
            # A degree that is not a power of two may split the heads and hold it (gpt2's 12 heads: tp 12).
            splitting = [d for d in range(1, COUNT_LIMITS["tp"] + 1) if not tp_problem(s, d)]
            other = next((d for d in splitting if d > tp and holds(d)), None)
            why = (
                f"the default degree, a power of two, stops at {tp}: {problem}"
                if other
                else (f"its heads split at most {splitting[-1]} ways")
            )
            raise FitError(
                f"{setup.model.name} needs {format_quantity(weights + one_sequence, 'byte')} for its weights and one "
                f"sequence at {format_quantity(tokens, '')} tokens, more than "
                f"{tp} x {_holder(setup, memory)} hold, and {why}",
                (f"Pass --tp {other}, which splits the heads and holds it, or use " if other else "Use ")
                + f"{shorter}, a smaller --dtype or a larger accelerator",
            )
        tp *= 2
    return tp


# predict's way to a shorter sequence: it sizes each at its prompt and output, not a --context.
SHORTER_REQUEST = "a shorter --prompt/--output"


def more_than(needed: sympy.Expr, held: sympy.Expr, unit: str = "byte") -> tuple[str, str]:
    """Two quantities, the first past the second, printed with the digits that tell them apart: never 'needs 141 GB,
    more than its 141 GB'."""
    shown = (format_quantity(needed, unit), format_quantity(held, unit))
    for digits in range(5, 13):
        if shown[0] != shown[1]:
            break
        shown = (format_quantity(needed, unit, digits), format_quantity(held, unit, digits))
    return shown


def accelerator(work: Work, setup: Setup, gpu: Gpu | None = None, compute: bool = True) -> Gpu:
    """The accelerator's bandwidth, peak (unless `compute` is off) and memory as givens."""
    gpu = gpu or setup.gpu
    if gpu is None:
        raise DeriveError(f"{work.sheet.command} needs an accelerator", "Pass --gpu NAME (see 'derive gpus')")
    work.given(sym.BW, gpu.bandwidth, "--bandwidth" if "bandwidth" in gpu.overridden else "datasheet")
    if compute:
        peak, peak_note = setup.peak(gpu)
        work.given(sym.P, peak, "--flops" if "flops" in gpu.overridden else peak_note)
    work.given(sym.M, gpu.memory, "--memory" if "memory" in gpu.overridden else "datasheet")
    return gpu


def decode_inputs(work: Work, setup: Setup) -> None:
    """Weights, cache and per-token work of the model in the chosen dtypes: W, k, K_seq, F."""
    aggregates(work, setup)
    weight_format(work, setup)
    kv_values(work, setup, compute=False)
    work.given(sym.tau, 1, plain_step(setup))
    for count_formula in setup.model.formulas.per_token:
        work.compute(count_formula)
    for name in ("weight_bytes", "kv_bytes_per_token", "kv_bytes_per_sequence", "weight_flops_per_token"):
        work.compute(work.library.get(name))


def flop_inputs(work: Work, setup: Setup) -> None:
    """decode_inputs' counts and per-token work without their bytes: what `derive flops` reads (it sizes no weights
    or cache, so it neither offers nor needs a dtype)."""
    aggregates(work, setup)
    work.given(sym.S, setup.context, "--context" if "context" not in setup.defaults else "default")
    for count_formula in setup.model.formulas.per_token:
        if "byte" not in count_formula.defines.unit:  # a kind's cache bytes and intensities are the other sheets'
            work.compute(count_formula)
    work.compute(work.library.get("weight_flops_per_token"))


def _holder(setup: Setup, memory: sympy.Expr) -> str:
    """The accelerator a fit error names: its memory as given where --memory overrode the datasheet's."""
    name = setup.gpu.name if setup.gpu else "GPU"
    overridden = setup.gpu is not None and "memory" in setup.gpu.overridden
    return f"{name} with --memory {format_quantity(memory, 'byte')}" if overridden else name


def plain_step(setup: Setup) -> str:
    """Why tau is 1: no draft, or a draft whose gain a verification pass brings is tau_sp, worked where it is used."""
    return "a plain step's token: the draft's gain is tau_sp, below" if setup.speculation else "no speculative decoding"


def decode_inputs_at_mean_context(work: Work, setup: Setup, prompt: int, output: int) -> None:
    """decode_inputs at the context a decode step sees on average: the prompt plus half the output."""
    from derive.core.sheet import Given

    mean_context = sympy.Integer(prompt) + sympy.Rational(output, 2)
    decode_inputs(work, replace(setup, context=mean_context))  # type: ignore[arg-type]
    work.sheet.steps = [
        Given(s.sym, s.value, "the mean context: prompt plus half the output")
        if isinstance(s, Given) and s.sym == sym.S
        else s
        for s in work.sheet.steps
    ]


def weight_reads(work: Work, setup: Setup, prefill: bool = False) -> sympy.Expr:
    """W_read (or, for the prompt pass, W_pre) step by step: the tables gathered by row, the experts touched."""
    mf = setup.model.formulas
    for total in mf.totals:
        if total.defines in (sym.N_look, sym.n_g):
            work.compute(total)
    if setup.model.config.is_moe:
        if sym.N_routed not in work.values:
            work.given(sym.N_routed, _count_of(work, setup, sym.N_routed), "from the config: derive params")
        names = (
            ("prefill_routed_tokens", "prefill_experts_touched") if prefill else ("routed_tokens", "experts_touched")
        )
        for name in (*names, "params_per_expert", "always_read_params"):
            work.compute(work.library.get(name))
    pass_names = (
        ("params_read_by_prefill", "bytes_read_by_prefill")
        if prefill
        else ("params_read_per_step", "bytes_read_per_step")
    )
    work.compute(work.library.get(pass_names[0]))
    return work.compute(work.library.get(pass_names[1]))


def chose_default(work: Work, key: str) -> None:
    """Record that the derivation chose `key` itself ("defaults used:" lists it)."""
    defaults = work.sheet.inputs.setdefault("defaults", [])
    if isinstance(defaults, list) and key not in defaults:
        defaults.append(key)


def parallelism(
    work: Work, setup: Setup, gpu: Gpu, sized_at: object = None, shorter: str = "a shorter --context"
) -> int:
    """n: --tp, or the smallest power of two whose memory holds the weights and one sequence (of `sized_at` tokens,
    by default the work's context); and s_kv, the ways it splits the cache."""
    if setup.tp is not None:
        tp = setup.tp
        chosen = "tp" in setup.defaults  # a degree a command chose for the user (compare: one for both accelerators)
        work.given(sym.n, tp, "chosen: the larger of the two accelerators' smallest that fits" if chosen else "--tp")
    else:
        context = work.values.get(sym.S) if sized_at is None else sympy.sympify(sized_at)
        tp = smallest_tp(setup, gpu, context, shorter)
        work.sheet.inputs["tp"] = tp
        chose_default(work, "tp")
        work.given(sym.n, tp, "chosen: the smallest power of two whose memory holds the weights and one sequence")
    shards = work.library.get("kv_shards")
    # What each accelerator holds of the cache; a hybrid's kinds split theirs differently, so its s_kv needs a context.
    if sym.S in work.values or not depends_on(shards.expr, sym.S, work.library):
        work.compute(shards)
    return tp


def smallest_tp(
    setup: Setup, gpu: Gpu | None = None, context: sympy.Expr | None = None, shorter: str = "a shorter --context"
) -> int:
    """The one default rule for the tensor-parallel degree: the smallest power of two whose memory holds the
    weights and one sequence (of `context` tokens, by default the setup's), splitting whole heads. Every
    command, the answers and the sweep pick their degree here."""
    gpu = gpu or setup.gpu
    if gpu is None:
        raise DeriveError("choosing --tp needs an accelerator", "Pass --gpu NAME (see 'derive gpus') or --tp N")
    scratch = sizing_values(setup)
    if context is not None:
        scratch[sym.S] = context
    library = model_library(setup.model)
    weights = evaluate(sym.W.symbol, scratch, library)
    one_sequence = evaluate(sym.kv_seq.symbol, scratch, library)
    return default_tp(setup, weights, one_sequence, gpu.memory, scratch[sym.S], shorter)


def require_own_cache(setup: Setup) -> None:
    """A one-line error for a model that caches nothing (Gemma 4's assistant reads its backbone's cache)."""
    kinds = setup.model.formulas.kinds
    if all(k.kv_bytes_per_token is None and k.state_values is None and k.conv_values is None for k in kinds):
        raise DeriveError(
            f"{setup.model.name} caches nothing of its own: every layer reads another model's keys and values, so "
            "its memory sets no batch limit",
            "Size the batch with the model whose cache it reads",
        )


def fits_beside_weights(work: Work, setup: Setup, gpu: Gpu, result: str | None = None) -> sympy.Expr:
    """B_max from its formula, or a FitError (with the TP that would do) when not one sequence fits."""
    require_own_cache(setup)
    if lay.pp in work.values:  # a layout: its largest micro-batch (formulas/layout.py)
        work.compute(work.library.get("layout_max_micro_batch"))
    max_batch = work.compute(work.library.get("max_batch_by_memory"), result)
    if max_batch >= 1:
        return max_batch
    if lay.pp in work.values:
        raise FitError(
            f"{setup.model.name} in {setup.dtype} keeps {format_quantity(work.values[lay.W_g], 'byte')} of weights on "
            f"each accelerator of this layout, leaving no room for one sequence of {setup.context:,} tokens",
            "Use more accelerators (--tp, --ep with --dp, --pp), a smaller --dtype or a shorter --context",
        )
    weights, one_sequence, tp = work.values[sym.W], work.values[sym.kv_seq], work.values[sym.n]
    try:
        more = f"Use --tp {default_tp(setup, weights, one_sequence, gpu.memory)} or more, a smaller --dtype, "
    except FitError:  # no tensor-parallel degree would do
        more = "Use a larger accelerator, a smaller --dtype, "
    raise FitError(
        f"{setup.model.name} in {setup.dtype} needs {format_quantity(weights, 'byte')} of weights plus "
        f"{format_quantity(one_sequence, 'byte')} per sequence at {setup.context:,} tokens, "
        f"more than the {format_quantity(tp * gpu.memory, 'byte')} of {tp} x {gpu.name}",
        more + "or a shorter --context",
    )


def short_form(work: Work, exact: sympy.Expr | None, what: str) -> None:  # exact: in tokens
    """Beside an exact compute crossover, its short form: the ridge times bytes per weight over c_MAC, and how far
    apart the two are (what attention, the cache and activations add). Nothing where there is no crossover."""
    from formulas import intensity as it

    if exact is None or sym.P not in work.values or sym.BW not in work.values:
        return
    if it.I_ridge not in work.values:
        work.compute(work.library.get("ridge_intensity"))
    tokens = work.compute(work.library.get("ridge_tokens"), "ridge_tokens")
    work.note(
        f"short form: {what} ≈ I_ridge·b_w/c_MAC = {format_quantity(tokens, 'token')}; the exact closed form gives "
        f"{format_quantity(exact, 'token')}, {float(abs(exact - tokens) / exact):.1%} apart (what attention, the cache "
        "and the activations add" + (", and the experts a token skips" if work.values.get(sym.N_routed) else "") + ")"
    )
