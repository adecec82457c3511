"""Seed 004, question 5: sanity-check a vendor's 1,000 tokens/s per user for a 70B model on one H200."""

from derive.answers import Answer, Inputs, Question, assumed
from derive.derivations.claim import claim
from derive.derivations.common import model_library
from derive.sheet import Prose, Quantity, Section, Work
from formulas import claim as cl
from formulas import notation as sym


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


def build(inputs: Inputs) -> Answer:
    setup, stated = _sheet(inputs)
    _, quantised = _sheet(inputs, dtype=inputs["alt_dtype"])
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    r, v = stated.results, stated.values
    fits = v[sym.W] + v[sym.kv_seq] <= v[sym.n] * v[sym.M]
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
        "bw": Quantity(v[sym.BW], "byte/second"),
        "memory": Quantity(v[sym.n] * v[sym.M], "byte"),
        "dtype": Quantity(setup.dtype),
        "alt": Quantity(inputs["alt_dtype"]),
        "gpu": Quantity(setup.gpu.title),
        "model": Quantity(setup.model.title),
        "context": Quantity(v[sym.S], "token"),
    }
    realistic = _realistic(setup)
    realistic_dtype = setup.dtype
    if realistic is None:
        quantised_setup = inputs.setup(claim=assumed(inputs, "claim", "token/second"), dtype=inputs["alt_dtype"])
        realistic, realistic_dtype = _realistic(quantised_setup), inputs["alt_dtype"]
    q["realistic"] = answer.headline("calibrated_tokens_per_s_per_user", realistic, "token/second/sequence")
    q["realistic_dtype"] = Quantity(realistic_dtype)
    q["realistic_floor"] = q["floor"] if realistic_dtype == setup.dtype else q["floor_q"]
    bits_suffice = float(r["required_bits_per_weight"].number) >= _SMALLEST_SERVED_BITS
    within = float(r["claim_over_floor"].number) <= 1
    q["headroom"] = Quantity(1 / r["claim_over_floor"].number if within else None)
    fit_text = "" if fits else " In {dtype} the weights and one sequence do not even fit in its {memory}."
    answer.summary = Prose(
        "summary",
        "One user's decode step must read all {weights} of {model}'s weights from {bw} of HBM, at least {t_mem} "
        "a token: the bandwidth floor is {floor}, and the claim of {claim} is {x} times it."
        + fit_text
        + (
            " The claim is below the floor's speed: one user on this hardware can see it, so it is plausible as "
            "stated, and the floor leaves {headroom} times the claim for the overheads a real server adds."
            if within
            else " 4-bit weights would reach it for one user (it needs {bits} bits per weight or fewer); otherwise it "
            "is an aggregate: with {alt} weights (a floor of {floor_q}) a server meets it over about {users_q} "
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
    return answer


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
