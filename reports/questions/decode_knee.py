"""Seed 004, question 11: decode tokens per second against batch, and the knee."""

import sympy

from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.core.sheet import Figure, Prose, Quantity, Result, Section, Sheet
from derive.derivations import knee
from derive.derivations.common import Setup, model_library
from formulas import intensity
from formulas import notation as sym
from reports.questions.shared import figures_entry


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    sheet = knee(setup)
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    r = sheet.results
    knee_q = answer.headline("knee_batch", r["knee_batch"].value, "sequence")
    limit = answer.headline("knee_context_limit", r["knee_context_limit"].value, "token/sequence")
    fits = answer.headline("max_batch_by_memory", r["max_batch_by_memory"].value, "sequence")
    at_max = answer.headline("throughput_at_max_batch", r["throughput_at_max_batch"].value, "token/second")
    ceiling = answer.headline("throughput_ceiling", r["throughput_ceiling"].value, "token/second")
    answer.headline("first_limit", r["first_limit"].value)
    half = answer.headline("half_ceiling_batch", r["half_ceiling_batch"].value, "sequence")
    quantities = {"knee": knee_q, "limit": limit, "fits": fits, "at_max": at_max, "ceiling": ceiling, "half": half}
    beyond = half.value is not None and fits.value is not None and bool(half.number > fits.number)
    hyperbola = (
        "Step time is a straight line in the batch, so throughput B/t(B) is a hyperbola rising to a ceiling of "
        + (
            "{ceiling}; its own knee, where the batch's cache equals the weights and throughput is half the ceiling, "
            "is at {half}, past the {fits} memory holds: on this hardware a batch never gets there. "
            if beyond
            else "{ceiling}; its own knee is at {half}, where the batch's cache equals the weights and throughput is "
            "half the ceiling. "
        )
    )
    if r["knee_batch"].value is None:
        text = hyperbola + (
            "There is no compute knee: each extra sequence adds more KV reading than arithmetic"
            + (", which is true above {limit} of context." if r["knee_context_limit"].value is not None else ".")
            + " Memory caps the batch at {fits}, where throughput is {at_max}."
        )
    else:
        text = hyperbola + (
            "The compute knee, where compute time meets memory time, is at {knee}; memory caps the batch at "
            "{fits}, where throughput is {at_max}."
            + (" A compute knee exists only below {limit} of context." if r["knee_context_limit"].value else "")
        )
    realistic = _calibrated_throughput(setup, sheet)
    if realistic is not None:
        quantities["at_max_cal"] = answer.headline("calibrated_throughput_at_max_batch", realistic, "token/second")
        text += " A real server at that batch reaches about {at_max_cal} (the calibrated estimate)."
    answer.summary = Prose("summary", text, quantities)
    _wrong_answers(answer, setup, sheet, quantities)
    _follow_up(answer, inputs, sheet, quantities)
    answer.sections.append(Section("Step time, knee and ceiling", sheet))
    answer.figures.append(figures_entry(sheet, setup))
    frontier = _frontier(setup)
    if frontier is not None:
        answer.figures.append(frontier)
    answer.takeaways += [
        Prose(
            "takeaway",
            "The ceiling usually comes from the KV cache, not the tensor cores: per sequence, each step "
            "reads its whole cache, so past the weights the cache bytes set the slope of t(B).",
        ),
        Prose(
            "takeaway",
            "Shorter contexts, a smaller KV dtype or fewer KV heads (GQA, MLA) move the knee into reach; "
            "more bandwidth raises every point of the curve.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Ideal tensor parallelism, peak bandwidth and FLOP/s: real steps add all-reduces and kernel "
            "gaps, so measured curves sit below this one and bend earlier.",
        ),
        Prose(
            "caveat",
            "Every sequence is taken at the same context; a served batch mixes lengths, and its cache "
            "bytes follow the mean context.",
        ),
    ]
    return answer


QUESTION = Question(
    id="decode-knee",
    title="Derive the curve of decode tokens per second against batch size, and show me where the knee is.",
    source="Seed 004, question 11",
    level="Senior",
    kind="knee",
    defaults={"model": "llama3-70b", "gpu": "h100", "dtype": "bf16", "context": 2048},
    changeable=("model", "gpu", "dtype", "kv_dtype", "context", "tp"),
    build=build,
)


def _calibrated_throughput(setup, sheet):  # type: ignore[no-untyped-def]
    """Decode tokens/s at the memory-capped batch at the calibrated step, or None where it cannot run."""
    from derive.derivations.costs import calibrated_at

    batch = sheet.results["max_batch_by_memory"].value
    step = None if batch is None or batch < 1 else calibrated_at(setup, int(batch), int(sheet.inputs["tp"]))
    return None if step is None else step.results["throughput"].number


def _value(result: Result) -> sympy.Expr | None:
    """A result's number, or None where it does not exist."""
    return None if result.value is None else result.number


def _wrong_answers(answer: Answer, setup: Setup, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """The knee and the throughput as candidates commonly get them wrong, each computed from the same sheet."""
    r, v = sheet.results, sheet.values
    found, fits = _value(r["knee_batch"]), _value(r["max_batch_by_memory"])
    ridge = evaluate(intensity.ridge_tokens.expr, v, model_library(setup.model)) / v[sym.tau]
    q["ridge"] = Quantity(ridge, "sequence")
    q["context"] = Quantity(setup.context, "token/sequence")
    if found is None:
        where = "at {context} what each sequence adds to the step's reads keeps it bandwidth-bound at every batch."
    else:
        where = "with what each sequence adds to the step (its cache and attention) the knee is at {knee}."
    first = fits is not None and fits < ridge and (found is None or fits < found)
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Putting the knee at the ridge, B = I_ridge·b_w/c_MAC = {ridge}: that is where "
            + (
                "dense weight GEMMs turn compute-bound (each expert sees only its share of the batch), but "
                if setup.model.config.is_moe
                else "the weight GEMMs alone turn compute-bound, but "
            )
            + where
            + (" Memory caps the batch at {fits} first." if first else ""),
            q,
        )
    )
    at_max, ceiling = _value(r["throughput_at_max_batch"]), _value(r["throughput_ceiling"])
    if fits is not None and fits >= 1 and at_max is not None and ceiling is not None and at_max < ceiling:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Quoting the ceiling, {ceiling}, as the throughput: it is the limit as the batch grows without bound; "
                "memory stops the batch at {fits}, where throughput is {at_max}.",
                q,
            )
        )


def _follow_up(answer: Answer, inputs: Inputs, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """With an 8-bit cache each sequence takes half the memory: the same derivation at --kv-dtype fp8."""
    if sheet.values[sym.b_kv] <= 1:
        return
    try:
        r = knee(inputs.setup(kv_dtype="fp8")).results
    except DeriveError:
        return
    fits, at_max, found = (_value(r[k]) for k in ("max_batch_by_memory", "throughput_at_max_batch", "knee_batch"))
    if fits is None or fits < 1 or at_max is None:
        return
    q["fits_fp8"] = Quantity(fits, "sequence")
    q["at_max_fp8"] = Quantity(at_max, "token/second")
    q["knee_fp8"] = Quantity(found, "sequence")
    before = sheet.results["knee_batch"].value
    knee_text = (
        "there is still no compute knee at this context."
        if found is None and before is None
        else "there is no compute knee any more."
        if found is None
        else "a compute knee appears at {knee_fp8}"
        if before is None
        else "the compute knee moves to {knee_fp8}"
    )
    if found is not None:
        knee_text += ", past what memory holds." if found > fits else ", within what memory holds."
    throughput = (
        "but throughput there stays {at_max}, compute-bound at both; "
        if at_max == sheet.results["throughput_at_max_batch"].value == r["throughput_ceiling"].value
        else "and throughput there is {at_max_fp8} instead of {at_max}; "
    )
    answer.follow_up = FollowUp(
        "And with the cache in fp8?",
        Prose("follow-up", "Memory then holds {fits_fp8} instead of {fits}, " + throughput + knee_text, q),
    )


def _frontier(setup: Setup) -> Figure | None:
    """The latency-throughput frontier from derive plan: tokens a second per user against per accelerator, the best
    layout of up to 8 of the setup's accelerators at each speed. The plan runs when the figure is drawn, not when
    the answer is built (a search costs more than the rest of the answer)."""
    if setup.gpu is None:
        return None

    def draw(stem):  # type: ignore[no-untyped-def]
        from derive import figures
        from derive.planning import Targets, plan

        targets = Targets(ttft=sympy.Integer(10), tpot=sympy.Rational(1, 10), prompt=setup.context, output=256)
        try:
            plan(setup.model, [setup.gpu], targets, dtype=setup.dtype, max_accelerators=8).figure(stem)
        except DeriveError as error:  # no layout serves a 100 ms step: the figure says so
            plt = figures.pyplot()
            fig, ax = plt.subplots()
            ax.text(0.5, 0.5, str(error).split(":")[0], ha="center", va="center", wrap=True, fontsize=9)
            ax.set_axis_off()
            figures.save(fig, stem)

    return Figure(
        "frontier",
        "The latency-throughput frontier derive plan finds on up to 8 of these accelerators: output tokens a second "
        "per accelerator against tokens a second per user, the best layout at each speed (the star: the layout "
        "with the most tokens per accelerator within a 100 ms step).",
        draw,
    )
