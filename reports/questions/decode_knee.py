"""Seed 004, question 11: decode tokens per second against batch, and the knee."""

from functools import partial

from derive import plots
from derive.answers import Answer, Inputs, Question
from derive.derivations import knee
from derive.sheet import Prose, Section


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
    hyperbola = (
        "Step time is a straight line in the batch, so throughput B/t(B) is a hyperbola rising to a ceiling of "
        "{ceiling}; its own knee is at {half}, where the batch's cache equals the weights and throughput is half "
        "the ceiling. "
    )
    if r["knee_batch"].value is None:
        text = hyperbola + (
            "There is no compute knee: each extra sequence adds more KV reading than arithmetic, which is true "
            "above {limit} of context. Memory caps the batch at {fits}, where throughput is {at_max}."
        )
    else:
        text = hyperbola + (
            "The compute knee, where compute time meets memory time, is at {knee}; memory caps the batch at "
            "{fits}, where throughput is {at_max}. A compute knee exists only below {limit} of context."
        )
    realistic = _calibrated_throughput(setup, sheet)
    if realistic is not None:
        quantities["at_max_cal"] = answer.headline("calibrated_throughput_at_max_batch", realistic, "token/second")
        text += " A real server at that batch reaches about {at_max_cal} (the calibrated estimate)."
    answer.summary = Prose("summary", text, quantities)
    answer.sections.append(Section("Step time, knee and ceiling", sheet))
    answer.figures.append(figures_entry(sheet, setup))
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


def figures_entry(sheet, setup):  # type: ignore[no-untyped-def]
    from derive.sheet import Figure

    return Figure(
        "throughput",
        "Decode throughput against batch: the roofline curve, its ceiling, the memory limit "
        "and the knee where one exists.",
        partial(plots.knee, sheet, setup),
    )


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
