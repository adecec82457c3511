"""Seed 000, question 5: static, dynamic or continuous batching for replies of 8 to 256 tokens."""

from __future__ import annotations

import sympy

from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.evaluation import evaluate
from derive.core.sheet import Prose, Quantity, Section, Sheet
from derive.derivations.common import Setup, model_library, start
from derive.derivations.energy import at_batch, decode_roofline, max_batch
from formulas import notation as sym
from formulas import static_batching as sb
from reports.questions.shared import described, measurement


def _simulated(answer: Answer, setup, inputs: Inputs, seats: int) -> Section:  # type: ignore[no-untyped-def]
    """`derive simulate batching`: the three policies on this model's roofline step times, or on measured ones."""
    from functools import partial

    from derive import figures
    from derive.core.sheet import Figure
    from derive.derivations.batching import Traffic, batching

    traffic = Traffic(
        requests=int(inputs["requests"]),
        seats=seats,
        shortest=int(inputs["reply_min"]),
        longest=int(inputs["reply_max"]),
        seed=int(inputs["seed"]),
    )
    recorded = measurement(inputs.get("measure") or False) if inputs.get("measured_steps") else None
    sheet, outcomes = batching(inputs.setup(prompt=int(inputs["prompt"])), traffic, recorded)
    r = sheet.results
    machine = described(recorded) if recorded else f"{setup.model.title} on {setup.gpu.title}, roofline step times"
    lines = []
    for policy in outcomes:
        q = {
            "throughput": answer.headline(
                f"simulated_{policy}_throughput", r[f"{policy}_throughput"].value, "token/second"
            ),
            "ttft": answer.headline(f"simulated_{policy}_ttft_p50", r[f"{policy}_ttft_p50"].value, "second"),
            "p99": Quantity(r[f"{policy}_ttft_p99"].value, "second"),
            "latency": Quantity(r[f"{policy}_latency_p50"].value, "second"),
        }
        lines.append(
            Prose(
                "text",
                f"{policy}: {{throughput}}, median time to first token {{ttft}} (p99 {{p99}}), "
                "median request latency {latency}.",
                q,
            )
        )
    answer.figures.append(
        Figure(
            "seats",
            f"Busy seats over the first quarter of the simulated run ({machine}): static and dynamic batches "
            "drain as their replies end; continuous batching refills seats at the next step.",
            partial(
                figures.seat_timeline,
                timelines={p: o.timeline for p, o in outcomes.items()},
                seats=seats,
                title=f"busy seats, {machine}",
            ),
        )
    )
    intro = (
        Prose(
            "text",
            f"`derive simulate batching` ({machine}): {{requests}} requests arrive as a Poisson "
            "process at {load} % of what continuous batching can serve, each policy serves the same "
            "arrivals (seeded), and the step times come from the formulas below.",
            {"requests": Quantity(traffic.requests), "load": Quantity(traffic.load * 100)},
        ),
    )
    if "offered_rate" in r:
        q = {
            "offered": answer.headline("offered_rate", r["offered_rate"].value, "sequence/second"),
            "static": answer.headline("static_capacity", r["static_capacity"].value, "sequence/second"),
            "continuous": answer.headline("continuous_capacity", r["continuous_capacity"].value, "sequence/second"),
        }
        overloaded = bool(r["offered_rate"].number > r["static_capacity"].number)
        lines.append(
            Prose(
                "text",
                "The arrivals, {offered}, exceed what static batching can serve with every seat busy, {static}: it "
                "is simply overloaded, so its queue grows through the run and its time to first token with it; "
                "continuous batching serves up to {continuous}."
                if overloaded
                else "The arrivals, {offered}, are within static batching's capacity of {static} (continuous: "
                "{continuous}); its waits come from padding, not from an overload.",
                q,
            )
        )
    return Section("Simulated: static, dynamic and continuous batching", sheet, intro=intro, outro=tuple(lines))


def build(inputs: Inputs) -> Answer:
    seats = int(inputs["batch"])
    # A decode step at the simulation's context: the prompt plus half the mean reply (derive/derivations/batching.py
    # step_times), so the closed form and the simulated run price the same steps.
    mean_context = int(inputs["prompt"]) + (int(inputs["reply_min"]) + int(inputs["reply_max"])) // 4
    setup = inputs.setup(batch=seats, context=mean_context)
    work = start("batching", f"Static against continuous batching of {setup.model.title}, {seats} seats", setup)
    weights, one_sequence = decode_roofline(work, setup)
    max_batch(work, setup, weights, one_sequence)
    work.heading("A full batch (continuous batching keeps every seat busy)")
    at_batch(work, setup, seats, "seats: at most this many requests at once")
    continuous = work.compute(work.library.get("throughput_floor"), "continuous_throughput")
    work.heading("Static batching: every seat waits for the longest reply")
    work.given(sb.L_lo, inputs["reply_min"], "shortest reply")
    work.given(sb.L_hi, inputs["reply_max"], "longest reply")
    work.given(sb.n_seat, seats, "seats, as a count")
    for name in (
        "reply_mean_tokens",
        "static_batch_longest_reply",
        "static_seat_utilisation",
        "static_batch_throughput",
        "static_wait_tokens",
        "static_wait_time",
    ):
        work.compute(work.library.get(name), name)
    sheet = work.sheet
    r = sheet.results
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    q = {
        "lo": Quantity(int(inputs["reply_min"]), "token"),
        "hi": Quantity(int(inputs["reply_max"]), "token"),
        "seats": Quantity(seats, "sequence"),
        "mean": answer.headline("reply_mean_tokens", r["reply_mean_tokens"].value, "token/sequence"),
        "longest": answer.headline(
            "static_batch_longest_reply", r["static_batch_longest_reply"].value, "token/sequence"
        ),
        "util": answer.headline("static_seat_utilisation", r["static_seat_utilisation"].value),
        "util_pct": Quantity(r["static_seat_utilisation"].number * 100),
        "static": answer.headline("static_throughput", r["static_batch_throughput"].value, "token/second"),
        "continuous": answer.headline("continuous_throughput", continuous, "token/second"),
        "wait": answer.headline("static_wait_time", r["static_wait_time"].value, "second"),
        "step": Quantity(sheet.values[sym.t_step], "second"),
    }
    answer.summary = Prose(
        "summary",
        "Continuous batching. Static batching waits for a full batch and dynamic batching caps that wait, but both "
        "finish a batch together, so a short reply waits for its longest neighbour. With replies uniform between "
        "{lo} and {hi} and {seats} at once, a batch runs for its expected longest reply, {longest}, while a seat "
        "yields {mean} on average: "
        + (
            "only {util_pct} % of seat-steps produce a token"
            if q["util_pct"].number < 100
            else "every seat-step produces a token (the replies are equal)"
        )
        + ", so static batching gives "
        "{static} against {continuous} when continuous batching (Orca's iteration-level scheduling) refills each "
        "seat the step after its reply ends.",
        q,
    )
    answer.sections.append(
        Section(
            "Seat utilisation and throughput",
            sheet,
            intro=(
                Prose(
                    "text",
                    "The expected maximum of n uniform lengths is the closed form below (the n-th order "
                    "statistic sits n/(n+1) of the way along the range); the step time comes from the "
                    "roofline at the full batch.",
                ),
            ),
            outro=(
                Prose(
                    "text",
                    "A mean reply, once finished, waits {wait} for the rest of its batch: that is the "
                    "latency static batching adds on top of its lost throughput.",
                    q,
                ),
            ),
        )
    )
    answer.sections.append(_simulated(answer, setup, inputs, seats))
    offered, static = answer.results.get("offered_rate"), answer.results.get("static_capacity")
    if offered is not None and static is not None and bool(offered.number > static.number):
        said = dict(answer.summary.quantities)
        mean_reply = sympy.Rational(int(inputs["reply_min"]) + int(inputs["reply_max"]), 2)
        said.update(
            {
                "offered": Quantity(offered.value, offered.unit),
                "static_cap": Quantity(static.value, static.unit),
                "static_cap_tokens": Quantity(static.number * mean_reply, "token/second"),
            }
        )
        answer.summary = Prose(
            "summary",
            answer.summary.text + " In the simulated traffic ({offered}) static batching is simply overloaded: it "
            "serves at most {static_cap} ({static_cap_tokens}, each batch's prompt pass taken out), so its queue, "
            "and its time to first token, grow without bound.",
            said,
        )
    # Reconcile the closed form with the simulation: one gives each policy's capacity (every seat always busy), the
    # other the tokens a run of finite traffic at the offered load actually got out.
    simulated = {p: answer.results.get(f"simulated_{p}_throughput") for p in ("continuous", "static")}
    if offered is not None and all(simulated.values()):
        said = dict(answer.summary.quantities)
        said.update({f"sim_{p}": Quantity(v.value, v.unit) for p, v in simulated.items() if v is not None})
        answer.summary = Prose(
            "summary",
            answer.summary.text + " The two pairs of figures answer different questions: {continuous} and {static} "
            "are the capacities with every seat busy, while the simulation's {sim_continuous} and {sim_static} are "
            "what {offered} of arrivals got out, continuous serving its whole offered load below capacity and static "
            + (
                "near its ceiling (a finite run's edges move it a few percent)."
                if static is not None and bool(offered.number > static.number)
                else "serving it too, with longer waits."
            ),
            said,
        )
    # The seed's own simulation (seed 000, question 5): on its Apple GPU's measured steps, 200 requests at most 8 at
    # once, continuous batching gave 343 tokens/s and static batches 299 tokens/s.
    seed_continuous, seed_static = sympy.Integer(343), sympy.Integer(299)
    ours = {p: answer.results[f"simulated_{p}_throughput"].number for p in ("continuous", "static")}
    leads = "Continuous leads in both" if ours["continuous"] > ours["static"] else "Here static keeps up"
    answer.caveats.append(
        Prose(
            "caveat",
            "The seed's simulation on its Apple GPU's measured steps gave continuous batching {seed_c} and static "
            "{seed_s}, {seed_x} times; the same simulation here gives {ours_c} and {ours_s}, {ours_x} times. "
            + leads
            + "; by how much depends on the spread of reply lengths and on how little a step grows with the batch.",
            {
                "seed_c": Quantity(seed_continuous, "token/second"),
                "seed_s": Quantity(seed_static, "token/second"),
                "seed_x": Quantity(seed_continuous / seed_static),
                "ours_c": Quantity(ours["continuous"], "token/second"),
                "ours_s": Quantity(ours["static"], "token/second"),
                "ours_x": Quantity(ours["continuous"] / ours["static"]),
            },
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "The wider the spread of reply lengths and the more seats, the closer the expected "
            "longest reply gets to the maximum, and the worse static batching does; continuous "
            "batching does not depend on the spread.",
        ),
        Prose(
            "takeaway",
            "Dynamic batching only bounds how long a request waits to start; it does not fix the "
            "idle seats while a batch finishes.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "The closed form credits continuous batching with full seats, which needs a queue of "
            "waiting requests; the simulation above runs the policies under Poisson arrivals instead.",
        ),
        Prose(
            "caveat",
            "Each step is taken at the same roofline time; a real continuous batcher also spends "
            "steps on prefill for the requests it admits, and the KV cache grows as replies lengthen.",
        ),
        Prose(
            "caveat",
            "Reply lengths are treated as continuous; whole-token lengths change the expected maximum "
            "by less than a token.",
        ),
    ]
    _wrong_answers(answer, q)
    _follow_up(answer, setup, sheet, q)
    return answer


def _wrong_answers(answer: Answer, q: dict[str, Quantity]) -> None:
    """The choice as candidates commonly get it wrong, each figure from the same sheet and simulation."""
    worst = q["mean"].number / q["hi"].number
    if worst < q["util"].number:
        q["worst_pct"] = Quantity(worst * 100)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Taking every static batch to run to the longest reply, {hi}: seat use {worst_pct} %, not "
                "{util_pct} %. The batch runs to its expected longest, {longest}.",
                q,
            )
        )
    r = answer.results
    dynamic, continuous = "simulated_dynamic_", "simulated_continuous_"
    if (
        r[continuous + "throughput"].number > r[dynamic + "throughput"].number
        and r[continuous + "ttft_p50"].number < r[dynamic + "ttft_p50"].number
    ):
        q["dyn"] = Quantity(r[dynamic + "throughput"].value, "token/second")
        q["dyn_ttft"] = Quantity(r[dynamic + "ttft_p50"].value, "second")
        q["cont"] = Quantity(r[continuous + "throughput"].value, "token/second")
        q["cont_ttft"] = Quantity(r[continuous + "ttft_p50"].value, "second")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Picking dynamic batching for latency: simulated, it gives {dyn} and a median first token in "
                "{dyn_ttft}, against continuous batching's {cont} and {cont_ttft}.",
                q,
            )
        )


def _follow_up(answer: Answer, setup: Setup, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """Four times the seats: the same closed form for static batching's seat use."""
    if q["hi"].number <= q["lo"].number:
        return
    library = model_library(setup.model)
    values = {**sheet.values, sb.n_seat: 4 * sheet.values[sb.n_seat]}
    values[sb.L_max] = evaluate(library.get("static_batch_longest_reply").expr, values, library)
    q["seats4"] = Quantity(values[sb.n_seat], "sequence")
    q["util4_pct"] = Quantity(evaluate(library.get("static_seat_utilisation").expr, values, library) * 100)
    answer.follow_up = FollowUp(
        "And with four times the seats?",
        Prose(
            "follow-up",
            "At {seats4} static batching's seat use falls to {util4_pct} %, from {util_pct} %, as the longest of "
            "more replies nears {hi}; continuous batching's does not depend on it.",
            q,
        ),
    )


QUESTION = Question(
    id="batching-strategy",
    title="Your chat app's replies range from 8 to 256 tokens. Which batching strategy would you pick, and what "
    "did the simulation show?",
    source="Seed 000, question 5",
    level="Senior",
    kind="comparison",
    defaults={
        "model": "llama3-8b",
        "gpu": "h100",
        "dtype": "bf16",
        "batch": 8,
        "reply_min": 8,
        "reply_max": 256,
        "requests": 200,
        "prompt": 128,
        "seed": 0,
        "measured_steps": False,
        "measure": False,
    },
    changeable=(
        "model",
        "gpu",
        "dtype",
        "kv_dtype",
        "tp",
        "batch",
        "reply_min",
        "reply_max",
        "requests",
        "prompt",
        "seed",
        "measured_steps",
        "measure",
    ),
    build=build,
)
