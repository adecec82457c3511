"""Issue 14's planning question: serve DeepSeek-V3 at a TPOT target and a request rate; what do you buy?

Every number is `derive plan`'s: each layout's largest batch meeting the target in closed form, the
cheapest by the committed prices, and the pick's worked sheet (derive/derivations/plan.py).
"""

from __future__ import annotations

from derive.answers import Answer, Inputs, Question, assumed
from derive.sheet import Figure, Prose, Quantity, Section


def build(inputs: Inputs) -> Answer:
    from derive import api
    from derive.derivations.common import Setup
    from derive.derivations.plan import layout_sheet
    from derive.systems import system_for

    setup = inputs.setup()
    plan = api.plan(
        setup.model,
        inputs["gpus"],
        tpot=assumed(inputs, "tpot", "second"),
        ttft=assumed(inputs, "ttft", "second"),
        rate=assumed(inputs, "rate", "sequence/second"),
        prompt=setup.prompt,
        output=setup.output,
        dtype=setup.dtype,
        max_gpus=int(inputs["max_gpus"]),
    )
    pick = plan.pick()
    assert pick is not None, "api.plan raises when no layout meets the targets"
    gpu = next(f.gpu for f in plan.searches if f.gpu.name == pick.gpu)
    found = next(f for f in plan.searches if f.gpu.name == pick.gpu)
    sheet = layout_sheet(
        Setup(
            model=setup.model, gpu=gpu, dtype=setup.dtype, batch=pick.batch, prompt=setup.prompt, output=setup.output
        ),
        pick.layout,
        system_for(gpu),
        plan.targets,
        plan.prices.get(gpu.name),
        found.estimate,
    )
    r = sheet.results
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    if "cost_per_token" in r:
        answer.headline("cost_per_token", r["cost_per_token"].value, "USD/token")
    others = [row for row in plan.pareto() if row.gpu != pick.gpu]
    runner = min(others, key=lambda row: row.cost_per_million or float("inf")) if others else None
    q = {
        "model": Quantity(setup.model.title),
        "tpot": Quantity(plan.targets.tpot, "second"),
        "rate": Quantity(plan.targets.rate, "sequence/second"),
        "count": answer.headline("accelerators_per_copy", pick.layout.accelerators),
        "gpu": Quantity(gpu.title),
        "layout": Quantity(str(pick.layout)),
        "fleet": answer.headline("accelerators_for_rate", r["accelerators_for_rate"].value),
        "batch": answer.headline("micro_batch", pick.batch, "sequence"),
        "per_gpu": answer.headline(
            "tokens_per_second_per_accelerator", r["tokens_per_second_per_accelerator"].value, "token/second"
        ),
        "per_user": answer.headline(
            "tokens_per_second_per_user", r["tokens_per_second_per_user"].value, "token/second/sequence"
        ),
        "served": answer.headline("tpot", r["tpot"].value, "second"),
        "step": Quantity(r["decode_step"].value if "decode_step" in r else r["decode_step_floor"].value, "second"),
        "floor": Quantity(r["decode_step_floor"].value, "second"),
        "cost": Quantity(f"{pick.cost_per_million:.2f} USD" if pick.cost_per_million is not None else "no price"),
        "joules": answer.headline("joules_per_token", r["joules_per_token"].value, "joule/token"),
        "binds": Quantity(pick.binds),
    }
    copies = (pick.for_rate or pick.layout.accelerators) // pick.layout.accelerators
    q["copies"] = Quantity(copies)
    q["capacity"] = Quantity(r["requests_per_second"].value, "sequence/second")
    q["memory_batch"] = Quantity(pick.memory_batch, "sequence")
    serve = (
        "one copy serves {rate} (its capacity is {capacity})"
        if copies == 1
        else "{copies} copies together serve {rate} (each holds up to {capacity})"
    )
    answer.summary = Prose(
        "summary",
        "Buy {fleet} of the {gpu}: {model} runs as {layout} on {count} of them a copy, each copy decoding "
        "micro-batches of {batch}, and " + serve + " at a TPOT of {served} (the decode step is {step} of it, its "
        "floor {floor}; the rest is the prompt passes an aggregated server interleaves). That is {per_gpu} per "
        "accelerator at {per_user}, {joules} at the TDP, and {cost} per million output tokens at the committed "
        "prices; the {binds} limit binds.",
        q,
    )
    answer.sections.append(Section(f"The pick, worked: {pick.layout} on {gpu.name}", sheet))
    answer.figures.append(
        Figure(
            "frontier",
            "Output tokens a second per accelerator against tokens a second per user, the best layout at each "
            "speed, one curve per accelerator; the star is the pick, the dotted line the TPOT target.",
            plan.figure,
        )
    )
    if runner is not None:
        q["runner"] = Quantity(f"{runner.layout.accelerators} x {runner.gpu} as {runner.layout}")
        q["runner_cost"] = Quantity(f"{runner.cost_per_million or 0:.2f} USD")
        answer.takeaways.append(
            Prose(
                "takeaway",
                "The next cheapest on another accelerator is {runner}, at {runner_cost} per million output tokens: the "
                "choice is the price per accelerator-hour against the bandwidth and memory it buys.",
                q,
            )
        )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Each layout's largest batch is solved in closed form from the TPOT target, so the whole search is a "
            "few compiled evaluations. "
            + (
                "Here memory caps the pick's batch at {batch} before the TPOT target does."
                if pick.binds == "memory"
                else "Here the TPOT target caps the pick's batch at {batch}, below the {memory_batch} its memory holds."
            ),
            q,
        ),
    ]
    if setup.model.config.is_mla:
        answer.takeaways.append(
            Prose(
                "takeaway",
                "An MLA cache cannot be split by tensor parallelism (its latent has no heads), so large copies use "
                "attention data parallelism with the experts shared and placed whole (ep = tp x dp).",
            )
        )
    answer.caveats += [
        Prose("caveat", note.replace("{", "{{").replace("}", "}}"))
        for note in plan.notes()
        if not note.startswith("price")
    ]
    return answer


QUESTION = Question(
    id="serving-plan",
    title="Serve DeepSeek-V3 at 50 ms TPOT and 20 requests/s: what do you buy?",
    source="Issue 14, the planning question",
    level="Staff",
    kind="plan",
    defaults={
        "model": "deepseek-v3",
        "gpus": "h100,h200,b200",
        "dtype": "fp8",
        "tpot": "50 ms",
        "ttft": "2 s",
        "rate": "20 req/s",
        "prompt": 2048,
        "output": 256,
        "max_gpus": 64,
    },
    changeable=("model", "gpus", "dtype", "tpot", "ttft", "rate", "prompt", "output", "max_gpus"),
    build=build,
)
