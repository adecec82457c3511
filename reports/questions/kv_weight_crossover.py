"""Seed 004, question 10: the context where KV reads overtake weight reads, and the coincidence at it."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import sympy

from derive import plots
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import FitError
from derive.core.sheet import Figure, Prose, Quantity, Section, Work
from derive.derivations import costs
from derive.derivations.common import Setup, default_tp, model_library
from formulas import notation as sym
from formulas import step_budget as sb


def _step_at_crossover(setup: Setup, context: sympy.Expr, cache: sympy.Expr, weights: sympy.Expr):  # type: ignore[no-untyped-def]
    """The decode step at the crossover on the fewest accelerators that hold weights and cache: (n, floor,
    calibrated), or None where no split holds them or the predictor has no estimate."""
    assert setup.gpu is not None  # the question always names one
    try:
        n = default_tp(setup, weights, cache, setup.gpu.memory)
    except FitError:
        return None
    step = costs.calibrated_at(replace(setup, context=int(sympy.ceiling(context))), setup.batch, n)
    if step is None or "tpot" not in step.results:
        return None
    return n, step.results["tpot_floor"].value, step.results["tpot"].value


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    sheet = costs.crossover_kv_weights(setup)
    arch = setup.model.config
    found = sheet.results["crossover_context"].value
    v = sheet.values
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    q: dict[str, Quantity] = {
        "weights": answer.headline("weight_bytes", v[sym.W], "byte"),
        "per_token": answer.headline("kv_bytes_per_token", v[sym.k], "byte/token"),
        "memory": Quantity(setup.gpu.memory, "byte"),
        "batch": Quantity(v[sym.B], "sequence"),
        "gpu": Quantity(setup.gpu.title),
        "model": Quantity(setup.model.title),
    }
    windows = arch.windows
    if found is None:
        q["context"] = answer.headline("crossover_context", None, "token/sequence")
        q["kv"] = answer.headline("kv_bytes_at_crossover", None, "byte")
        q["ceiling"] = Quantity(v[sym.kv_total], "byte")
        answer.summary = Prose(
            "summary",
            "For {model} the KV reads never overtake the weight reads at {batch}: its layers cap what they cache "
            "(windows, chunks or a fixed-size state), so the batch's cache stops growing at {ceiling}, below the "
            "{weights} of weights. Weight reads dominate a decode step at any context.",
            q,
        )
    else:
        work = Work(sheet, model_library(setup.model))
        work.heading(f"Against the memory of one {setup.gpu.name}")
        work.given(sym.M, setup.gpu.memory, "datasheet")
        share = work.compute(sb.cache_memory_share, "cache_memory_share")
        q["context"] = answer.headline("crossover_context", v[sym.S], "token/sequence")
        q["kv"] = answer.headline("kv_bytes_at_crossover", v[sym.kv_total], "byte")
        q["share"] = answer.headline("cache_memory_share", share)
        if arch.is_plain:
            reads = (
                "the experts its batch routes to, the other matrices whole, only the embedding rows it gathers"
                if arch.is_moe
                else "all its matrices, only the embedding rows it gathers"
            )
            how = (
                f"KV reads overtake weight reads when B·S·k = W_read, the weights a step of the batch reads ({reads}), "
                "so S = W_read/(B·k): with {per_token} of cache and {batch}"
            )
        else:
            how = (
                "KV reads overtake weight reads when B·K_seq(S) = W_read, the weights a step of the batch reads, with "
                "K_seq summed over {model}'s layer kinds "
                "(windowed layers stop growing at their window, state layers do not grow); at {batch}"
            )
        step = _step_at_crossover(setup, found, v[sym.kv_total], v[sym.W])
        if step is not None:
            q["n"] = Quantity(step[0], "")
        q["total"] = Quantity(v[sym.W] + v[sym.kv_total], "byte")
        held = (
            ""
            if step is None
            else ": one {gpu} holds them"
            if step[0] == 1
            else ": they take " + ("{n} x {gpu}" if step[0] > 1 else "") + " at the least"
        )
        memory = (
            "so a batch that reaches the crossover needs more than one accelerator's memory for its cache alone; "
            "with the weights, {total}" + held + "."
            if share >= 1
            else "so at the crossover cache and weights, {total}, still fit in one accelerator's memory."
            if v[sym.W] + v[sym.kv_total] <= v[sym.M]
            else "so cache and weights together, {total}, are more than one accelerator's memory" + held + "."
        )
        limit = ""
        if arch.max_context and found > arch.max_context:
            q["limit"] = Quantity(arch.max_context, "token/sequence")
            limit = " That is beyond the {limit} the model's config allows: in practice the weights dominate."
        realistic = ""
        if step is not None:
            q["floor"] = answer.headline("step_floor_at_crossover", step[1], "second")
            q["estimate"] = answer.headline("calibrated_step_at_crossover", step[2], "second")
            realistic = (
                " There a decode step reads twice the weight bytes: on {n} x {gpu} its floor is {floor}, and the "
                "calibrated estimate puts it at {estimate}."
            ).replace("{n} x {gpu}", "one {gpu}" if step[0] == 1 else "{n} x {gpu}")
        answer.summary = Prose(
            "summary",
            how
            + ", that is {context}. "
            # A coincidence only where the cache at the crossover nearly fills one accelerator (the seed's H200 case):
            # within 10% of its memory, computed, never assumed.
            + (
                "The coincidence: at the crossover the cache is, by construction, as big as the weights read, {kv}, "
                "and that is {share} times the {memory} of one {gpu}, "
                if abs(float(share) - 1) <= 0.1
                else "At the crossover the cache is, by construction, as big as the weights read, {kv}: {share} times "
                "the {memory} of one {gpu}, "
            )
            + memory
            + limit
            + realistic,
            q,
        )
        _wrong_answers(answer, setup, q)
        _follow_up(answer, inputs, q)
    answer.sections.append(Section("Where the cache's bytes meet the weights'", sheet))
    answer.figures.append(
        Figure(
            "bytes",
            "Bytes read per decode step against context: the batch's KV cache against the fixed weight bytes.",
            partial(plots.crossover_kv_weights, sheet, setup),
        )
    )
    if found is not None:
        answer.takeaways.append(
            Prose(
                "takeaway",
                "Past {context} a decode step reads more cache than weights: batching no longer "
                "amortises most of the bytes, and step time grows with every token of context.",
                q,
            )
        )
    answer.takeaways.append(
        Prose(
            "takeaway",
            "The crossover scales as 1/(B·k) for the layers that cache every token: GQA (fewer KV heads), an 8-bit "
            "cache (--kv-dtype fp8), MLA or sliding windows push it out; a bigger batch pulls it in.",
        )
    )
    answer.caveats += [
        Prose(
            "caveat",
            "Every sequence is taken at the same context; a served batch mixes lengths, and the "
            "crossover applies to the mean.",
        ),
    ]
    if windows:
        answer.caveats.append(
            Prose("caveat", "Windowed layers are taken to hold exactly their window; a paged cache may keep more.")
        )
    return answer


def _wrong_answers(answer: Answer, setup: Setup, q: dict[str, Quantity]) -> None:
    """The crossover as candidates commonly get it wrong, each computed from the same sheet."""
    arch = setup.model.config
    context = q["context"].number
    if arch.is_plain and arch.kv_heads < arch.heads:
        ratio = sympy.Rational(arch.heads, arch.kv_heads)
        q["heads"], q["kv_heads"] = Quantity(arch.heads), Quantity(arch.kv_heads)
        q["mha_context"] = Quantity(context / ratio, "token/sequence")
        q["ratio"] = Quantity(ratio)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Caching K and V for all {heads} query heads, as if the model had no GQA: the cache per token comes "
                "out {ratio} times too big and the crossover {ratio} times too early, at {mha_context}. Only the "
                "{kv_heads} KV heads are cached.",
                q,
            )
        )
    if arch.is_plain:
        q["unbatched"] = Quantity(context * setup.batch, "token/sequence")
        q["batch_n"] = Quantity(setup.batch)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Setting one sequence's cache against the weights, S·k = W: that gives {unbatched}, {batch_n} times "
                "too late. The weights are read once a step for the whole batch, the cache once for every "
                "sequence.",
                q,
            )
        )
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Reading the crossover as the point decode turns compute-bound: both sides are bytes. Past it the step "
            "is still bandwidth-bound, only now mostly on cache.",
        )
    )


def _follow_up(answer: Answer, inputs: Inputs, q: dict[str, Quantity]) -> None:
    """With an 8-bit cache the crossover moves out: the same derivation at --kv-dtype fp8."""
    if inputs.get("kv_dtype") == "fp8":
        return
    at_fp8 = costs.crossover_kv_weights(inputs.setup(kv_dtype="fp8")).results["crossover_context"].value
    if at_fp8 is None:
        return
    q["fp8_context"] = Quantity(at_fp8, "token/sequence")
    q["fp8_ratio"] = Quantity(at_fp8 / q["context"].number)
    answer.follow_up = FollowUp(
        "And with the cache in fp8?",
        Prose(
            "follow-up",
            "The crossover moves to {fp8_context}, {fp8_ratio} times as far: one byte per cached value shrinks "
            "k in proportion, and the crossover scales as 1/k.",
            q,
        ),
    )


QUESTION = Question(
    id="kv-weight-crossover",
    title="Long context: at what sequence length do KV reads overtake weight reads for a 70B GQA model at batch 16?",
    source="Seed 004, question 10",
    level="Senior",
    kind="crossover",
    defaults={"model": "llama3.1-70b", "gpu": "h200", "dtype": "bf16", "batch": 16},
    changeable=("model", "gpu", "dtype", "kv_dtype", "batch"),
    build=build,
)
