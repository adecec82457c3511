"""Seed 004, question 5: sanity-check a vendor's 1,000 tokens/s per user for a 70B model on one H200."""

from __future__ import annotations

import math
from functools import partial

import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.core.sheet import Figure, Prose, Quantity, Section, Work
from derive.derivations.claim import claim
from derive.derivations.common import held_per_accelerator, model_library
from formulas import claim as cl
from formulas import notation as sym
from formulas import reads
from reports.questions.shared import tp_link


def _sheet(inputs: Inputs, **overrides):  # type: ignore[no-untyped-def]
    rate = assumed(inputs, "claim", "token/second")
    setup = inputs.setup(claim=rate, **overrides)
    sheet = claim(setup)
    work = Work(sheet, model_library(setup.model))
    work.compute(work.library.get("claim_over_floor"), "claim_over_floor")
    return setup, sheet


def _realistic(setup):  # type: ignore[no-untyped-def]
    """Tokens/s for one user at the calibrated estimate, or None where it does not fit."""
    from derive.derivations.costs import calibrated_at

    step = calibrated_at(setup, 1)
    return None if step is None else 1 / step.results["tpot"].number


_SMALLEST_SERVED_BITS = 4  # int4 and fp4 weights (AWQ, GPTQ, NVFP4): the narrowest formats served at scale


def _draw(rates, title, stem):  # type: ignore[no-untyped-def]
    figures.bars(stem, list(rates), [float(v) for v in rates.values()], "tokens/s per user (log scale)", title, True)


def build(inputs: Inputs) -> Answer:
    setup, stated = _sheet(inputs)
    # The other precision on the same accelerators: a smaller dtype's own default degree would halve the bandwidth
    # and the comparison with it.
    _, quantised = _sheet(inputs, dtype=inputs["alt_dtype"], tp=int(stated.values[sym.n]))
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    r, v = stated.results, stated.values
    fits = held_per_accelerator(v, model_library(setup.model), 1, v[sym.S]) <= v[sym.M]
    q = {
        "floor": answer.headline(
            "floor_tokens_per_s_per_user", r["floor_tokens_per_s_per_user"].value, "token/second/sequence"
        ),
        "x": answer.headline("claim_over_floor", r["claim_over_floor"].value, ""),
        "bits": answer.headline("required_bits_per_weight", r["required_bits_per_weight"].value, ""),
        "tau": answer.headline("required_tokens_per_pass", r["required_tokens_per_pass"].value, "token/sequence"),
        "users": answer.headline("claim_batch", v.get(cl.B_claim), "sequence"),
        "floor_q": answer.headline(
            "floor_at_alt_dtype", quantised.results["floor_tokens_per_s_per_user"].value, "token/second/sequence"
        ),
        "users_q": answer.headline("claim_batch_at_alt_dtype", quantised.values.get(cl.B_claim), "sequence"),
        "x_q": answer.headline("claim_over_floor_at_alt_dtype", quantised.results["claim_over_floor"].value, ""),
        "claim": Quantity(v[cl.r_claim], "token/second/sequence"),
        "t_mem": Quantity(v[sym.t_mem], "second"),
        "weights": Quantity(v[sym.W], "byte"),
        "bw": Quantity(v[sym.n] * v[sym.BW], "byte/second"),
        "memory": Quantity(v[sym.n] * v[sym.M], "byte"),
        "dtype": Quantity(setup.dtype),
        "alt": Quantity(inputs["alt_dtype"]),
        "gpu": Quantity(setup.gpu.title),
        "model": Quantity(setup.model.title),
        "context": Quantity(v[sym.S], "token"),
        "n": Quantity(v[sym.n]),
        "touched": Quantity(v[reads.W_read], "byte"),
        # What one step moves: the floor's time at the layout's bandwidth (weights it multiplies through, its cache).
        "step_bytes": Quantity(v[sym.t_mem] * v[sym.n] * v[sym.BW], "byte"),
    }
    realistic = _realistic(setup)
    realistic_dtype = setup.dtype
    if realistic is None:
        quantised_setup = inputs.setup(claim=assumed(inputs, "claim", "token/second"), dtype=inputs["alt_dtype"])
        realistic, realistic_dtype = _realistic(quantised_setup), inputs["alt_dtype"]
    q["realistic"] = answer.headline("calibrated_tokens_per_s_per_user", realistic, "token/second/sequence")
    q["realistic_dtype"] = Quantity(realistic_dtype)
    q["realistic_floor"] = q["floor"] if realistic_dtype == setup.dtype else q["floor_q"]
    rates = {"the claim": q["claim"].number, f"floor, {setup.dtype}": q["floor"].number}
    rates[f"floor, {inputs['alt_dtype']}"] = q["floor_q"].number
    if realistic is not None:
        rates[f"calibrated, {realistic_dtype}"] = q["realistic"].number
    answer.figures.append(
        Figure(
            "claim",
            "Tokens per second one user sees: the claim against the bandwidth floor in each precision and the "
            "calibrated estimate. A claim past every floor is an aggregate over users, not one user's speed.",
            partial(_draw, rates, f"{setup.model.title} on {q['n'].value} x {setup.gpu.name}"),
        )
    )
    spans = tp_link(setup, int(v[sym.n]))[2]
    same = "accelerator" if v[sym.n] == 1 else "{n} accelerators"
    bits_suffice = float(r["required_bits_per_weight"].number) >= _SMALLEST_SERVED_BITS
    within = float(r["claim_over_floor"].number) <= 1
    q["headroom"] = Quantity(1 / r["claim_over_floor"].number if within else None)
    fit_text = "" if fits else " In {dtype} the weights and one sequence do not even fit in its {memory}."
    answer.summary = Prose(
        "summary",
        (
            "One user's decode step must read {step_bytes}, the {touched} of weights its token multiplies through "
            + "(of the {weights} stored) and its cache,"
        )
        + " from {bw} of HBM"
        + ("" if v[sym.n] == 1 else " (its {n} x {gpu} together)")
        + ", at least {t_mem} a token: the bandwidth floor is {floor}, and the claim of {claim} is {x} times it."
        + fit_text
        + (
            " The claim is below the floor's speed: one user on this hardware can see it, so it is plausible as "
            "stated, and the floor leaves {headroom} times the claim for the overheads a real server adds."
            if within and not spans
            else " The claim is below the floor's speed, but the floor spreads the weights over {n} accelerators: "
            + spans
            + ", so ask how the vendor's are connected before calling it plausible."
            if within
            else " {alt} weights on the same " + same + " would reach it for one user (a floor of {floor_q}; it "
            "needs {bits} bits per weight or fewer), as would speculative decoding at {tau} accepted per pass."
            if q["x_q"].number <= 1
            else " 4-bit weights would reach it for one user (it needs {bits} bits per weight or fewer); otherwise it "
            "is an aggregate: with {alt} weights on the same " + same + " (a floor of {floor_q}) a server meets "
            "it over about {users_q} "
            "decoded at once, and speculative decoding would need {tau} accepted per pass."
            if bits_suffice
            else " The figure is reachable only as an aggregate: with {alt} weights (a floor of {floor_q}) a server "
            "meets it over about {users_q} decoded at once, while speculative decoding would need {tau} accepted "
            "per pass and quantisation alone {bits} bits per weight, below any format served."
        )
        + (
            " A real server reaches less than its floor: the calibrated estimate for one user in {realistic_dtype} "
            "is {realistic}, against that precision's floor of {realistic_floor}."
            if realistic is not None
            else ""
        )
        + " Ask the vendor for the concurrency, the precision, the context length and whether speculation is on.",
        q,
    )
    answer.sections.append(
        Section(
            "The claim as stated",
            stated,
            intro=(
                Prose(
                    "text",
                    "The one division: batch 1, every weight and one sequence's cache ({context}) read "
                    "per token, at peak bandwidth on {gpu}.",
                    q,
                ),
            ),
        )
    )
    answer.sections.append(
        Section(
            "With the weights in the other precision",
            quantised,
            intro=(
                Prose("text", "The most likely unstated precision: {alt} weights halve the bytes a token reads.", q),
            ),
            outro=(
                Prose(
                    "text",
                    "At {x_q} times this floor ({floor_q}), "
                    + (
                        "this precision alone meets the claim for one user."
                        if float(quantised.results["claim_over_floor"].number) <= 1
                        else "this precision does not close the gap, though 4-bit weights ({bits} bits suffice) would."
                        if bits_suffice
                        else "precision alone cannot close the gap."
                    ),
                    q,
                ),
            ),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Per-user tokens/s at batch 1 is bounded by bandwidth over weight bytes; "
            + (
                "this claim sits at {x} of that bound, so it needs no trick, only a server within a factor of "
                "{headroom} of its floor."
                if within
                else "a number {x} times that bound is measuring something else, most often aggregate throughput: "
                "about {users} decoded at once in {dtype}, if memory held them."
            ),
            q,
        ),
        Prose(
            "takeaway",
            "What to ask for: concurrent users and batch size, weight and KV precision, prompt and "
            "output lengths, whether speculative decoding is on and its acceptance rate, how many "
            "GPUs, and whether the figure is per user or per server.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "The floor uses peak bandwidth and no overheads, so the real per-user rate is lower still"
            + ("." if within else "; the claim fails by more than this ratio."),
        ),
        Prose(
            "caveat",
            "Speculative decoding at the required tokens per pass assumes free, always-accepted drafts; "
            "real acceptance of a few tokens per pass gives a few times the floor, not this.",
        ),
    ]
    _wrong_answers(answer, setup, stated, q)
    _follow_up(answer, inputs, setup, stated, q)
    return answer


def _wrong_answers(answer: Answer, setup, stated, q: dict[str, Quantity]) -> None:  # type: ignore[no-untyped-def]
    """The claim as candidates commonly misjudge it, each figure from the same sheets."""
    v, x = stated.values, q["x"].number
    users = v.get(cl.B_claim)
    wrong: list[Prose] = []
    if x > 1 and users is not None and users >= 2:
        q["total"] = Quantity(v[cl.R_claim], "token/second")
        q["each"] = Quantity(v[cl.r_claim] / users, "token/second/sequence")
        wrong.append(
            Prose(
                "wrong",
                "Accepting it because batching gets there: {users} decoded at once would make {total} together, "
                "but that is the server's total, and each of them sees {each}, not the {claim} claimed per user.",
                q,
            )
        )
    compute = v[sym.n] * v[sym.P] / v[sym.F]  # peak FLOP/s over 2 FLOPs a weight, for one user
    q["compute"] = Quantity(compute, "token/second/sequence")
    q["compute_x"] = Quantity(compute / q["floor"].number)
    wrong.append(
        Prose(
            "wrong",
            "Dividing peak FLOP/s by a token's FLOPs, 2 a weight it multiplies: {compute} for one user, {compute_x} "
            "times the bandwidth floor, "
            + ("so the claim looks easy" if compute >= v[cl.r_claim] else "and still short of the claim")
            + ". At batch 1 each token waits for its weights to stream from HBM, not for the tensor cores.",
            q,
        )
    )
    if setup.model.config.is_moe and v[reads.W_read] < v[sym.W]:
        # The floor's division with every weight read.
        every = v[sym.tau] * v[sym.n] * v[sym.BW] / (v[sym.W] + v[sym.kv_total])
        q["every"] = Quantity(every, "token/second/sequence")
        wrong.append(
            Prose(
                "wrong",
                "Reading every expert's weights for one user: a floor of {every}, "
                + ("which would reject the claim" if every < v[cl.r_claim] else "below the true floor")
                + ". A lone token touches only its top-k experts a layer, so the floor is {floor}.",
                q,
            )
        )
    if q["x_q"].number > 1 and q["floor_q"].number > q["floor"].number:
        wrong.append(
            Prose(
                "wrong",
                "Saying {alt} weights explain it: they raise the floor to {floor_q}, and the claim is still {x_q} "
                "times that.",
                q,
            )
        )
    answer.wrong_answers += wrong[:3]  # the page holds three


def _follow_up(answer: Answer, inputs: Inputs, setup, stated, q: dict[str, Quantity]) -> None:  # type: ignore[no-untyped-def]
    """Above the floor: would tensor parallelism get one user there? Within it: how many users can share it?"""
    x = q["x"].number
    if x <= 1:
        _follow_up_users(answer, setup, stated, q)
        return
    tp = int(stated.values[sym.n])
    for k in range(math.ceil(x), 4 * math.ceil(x) + 1):  # the floor grows in proportion to n: n/tp >= x
        n = tp * k
        try:
            spread, sheet = _sheet(inputs, tp=n)
            break
        except DeriveError:  # tensor parallelism must split whole heads
            continue
    else:
        return
    q["n_tp"], q["gpu_name"] = Quantity(n, ""), Quantity(spread.gpu.name)
    q["floor_tp"] = Quantity(sheet.results["floor_tokens_per_s_per_user"].value, "token/second/sequence")
    realistic = _realistic(spread)
    text = "On paper: the floor grows with the accelerators, so {n_tp} x {gpu_name} lift it to {floor_tp}. "
    if realistic is None:
        text += "That floor counts no all-reduce, and a token then waits on two a layer."
    else:
        q["real_tp"] = Quantity(realistic, "token/second/sequence")
        text += "The calibrated estimate, which pays the two all-reduces a layer, gives {real_tp}" + (
            ", still short of the claim." if realistic < stated.values[cl.r_claim] else ", enough for the claim."
        )
    answer.follow_up = FollowUp("Could tensor parallelism get one user there?", Prose("follow-up", text, q))


def _follow_up_users(answer: Answer, setup, stated, q: dict[str, Quantity]) -> None:  # type: ignore[no-untyped-def]
    """The batch at which each user's floor falls to the claim: r_floor(B) = r_claim solved for B."""
    work = Work(stated, model_library(setup.model))
    solution = work.solve(cl.r_floor.symbol, cl.r_claim.symbol, sym.B)
    if solution.closed_form is None:
        return
    at = evaluate(solution.closed_form, stated.values, work.library)
    if not (at.is_real and at.is_finite and at >= 1):
        return
    q["share"] = Quantity(sympy.floor(at), "sequence")
    answer.follow_up = FollowUp(
        "How many users could share it at that rate?",
        Prose(
            "follow-up",
            "At the floor, {share}: each adds its cache to the bytes every step reads, and past that each user's "
            "rate falls below {claim}. A real server, slower than its floor, holds fewer.",
            q,
        ),
    )


QUESTION = Question(
    id="vendor-claim",
    title="A vendor claims 1,000 tokens per second per user for a 70B model on one H200. Sanity-check that from "
    "the roofline.",
    source="Seed 004, question 5",
    level="Senior",
    kind="diagnosis",
    defaults={
        "model": "llama3-70b",
        "gpu": "h200",
        "tp": 1,
        "dtype": "bf16",
        "alt_dtype": "fp8",
        "context": 2048,
        "claim": "1000 token/s",
    },
    changeable=("model", "gpu", "tp", "dtype", "alt_dtype", "kv_dtype", "context", "claim"),
    build=build,
)
