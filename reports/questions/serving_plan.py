"""The planning question: serve DeepSeek-V3 at a TPOT target and a request rate; what do you buy?

Every number is `derive plan`'s: each layout's largest batch meeting the target in closed form, the
cheapest by the committed prices, and the pick's worked sheet (derive/derivations/plan.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.core.evaluation import evaluate
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from formulas import layout as lay


def build(inputs: Inputs) -> Answer:
    from derive import planning
    from derive.catalog import load_gpu
    from derive.core import validate
    from derive.derivations.common import Setup
    from derive.derivations.plan import layout_sheet
    from derive.systems import system_for

    setup = inputs.setup()
    targets = planning.Targets(
        ttft=assumed(inputs, "ttft", "second"),
        tpot=assumed(inputs, "tpot", "second"),
        rate=assumed(inputs, "rate", "sequence/second"),
        prompt=setup.prompt,
        output=setup.output,
    )
    gpus = [load_gpu(name.strip()) for name in str(inputs["gpus"]).split(",") if name.strip()]
    for gpu in gpus:  # an accelerator without the dtype's peak fails here, in the question's own options
        setup.peak(gpu)
    max_gpus = validate.count(inputs["max_gpus"], "max_gpus", "--set max_gpus")
    plan = planning.plan(
        setup.model, gpus, targets, dtype=setup.dtype, max_accelerators=max_gpus, dtype_option=setup.dtype_option
    )
    pick = plan.pick
    assert pick is not None, "planning.plan raises when no layout meets the targets"
    gpu = next(f.gpu for f in plan.searches if f.gpu.name == pick.gpu)
    found = next(f for f in plan.searches if f.gpu.name == pick.gpu)
    sheet = layout_sheet(
        Setup(
            model=setup.model,
            gpu=gpu,
            dtype=setup.dtype,
            batch=pick.batch,
            prompt=setup.prompt,
            output=setup.output,
            dtype_option=setup.dtype_option,
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
    if "fleet_cost_per_token" in r:
        answer.headline("fleet_cost_per_token", r["fleet_cost_per_token"].value, "USD/token")
    others = [row for row in plan.pareto() if row.gpu != pick.gpu]
    runner = min(others, key=lambda row: row.cost_per_million or float("inf")) if others else None
    q = {
        "model": Quantity(setup.model.title),
        "tpot": Quantity(plan.targets.tpot, "second"),
        "rate": Quantity(plan.targets.rate, "sequence/second"),
        "count": answer.headline("accelerators_per_copy", pick.layout.accelerators),
        "gpu": Quantity(gpu.title),
        "gpu_name": Quantity(gpu.name.upper()),
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
        "fleet_cost": Quantity(
            f"{pick.fleet_cost_per_million:.2f} USD" if pick.fleet_cost_per_million is not None else "no price"
        ),
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
        "Buy {fleet} of the {gpu}: {model} runs as {layout} (tensor-parallel, expert-parallel, pipeline and "
        "attention data-parallel degrees) on {count} of them a copy, each copy decoding micro-batches of {batch}, "
        "and " + serve + " at a TPOT of {served} (the decode step is {step} of it, its floor {floor}; the rest is "
        "the prompt passes an aggregated server interleaves). At capacity that is {per_gpu} per accelerator at "
        "{per_user}, {joules} at the TDP and {cost} per million output tokens at on-demand rental prices ({fleet_cost} "
        "for the fleet at {rate}); the {binds} limit binds.",
        q,
    )
    _wrong_answers(answer, plan, pick, q)
    _follow_up(answer, plan, sheet, q)
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
    if pick.binds != "TPOT":  # where the TPOT target caps the batch, the wrong answers show it
        answer.takeaways.append(
            Prose(
                "takeaway",
                "Here memory caps the pick's batch at {batch} before the TPOT target does."
                if pick.binds == "memory"
                else "Here the TTFT target binds: the prompts queued at a copy's door cap it at {capacity}, fewer "
                "requests than its batch of {batch} could finish.",
                q,
            )
        )
    split = plan.disaggregated
    if split is not None:
        from derive.disaggregation import ranked, verdict

        # The same accelerators split into a prefill pool and a decode pool (formulas/disaggregated.py), and which wins.
        # Plain words (a quantity's text would not break across lines in the book).
        said = f"Disaggregated, the best pair of pools: {split.describe()}. The {verdict(pick, split)}."
        answer.takeaways.append(Prose("takeaway", said.replace("{", "(").replace("}", ")")))
        if ranked(split) < ranked(pick):
            # The page leads with what to buy: where the split wins, the short answer says so beside the copy.
            q["split_per"] = Quantity(split.per_accelerator, "token/second")
            q["split_cost"] = Quantity(f"{split.cost_per_million or 0:.2f} USD")
            q["split_layouts"] = Quantity(f"prefill on {split.prefill}, decode on {split.decode}")
            answer.summary = Prose(
                "summary",
                answer.summary.text + " Split into a prefill and a decode pool on the same accelerators "
                "({split_layouts}) it does better: {split_per} per accelerator and {split_cost} per million tokens "
                "a busy pair, so run it disaggregated.",
                q,
            )
    if setup.model.config.is_mla:
        q["split"] = Quantity(pick.layout.expert_tp)
        placed = "placed whole (ep = tp x dp)" if pick.layout.expert_tp == 1 else "each split {split} ways in its group"
        answer.takeaways.append(
            Prose(
                "takeaway",
                "An MLA cache cannot be split by tensor parallelism (its latent has no heads), so large copies use "
                "attention data parallelism, the experts shared by the ranks and " + placed + ".",
                q,
            )
        )
    answer.caveats += [
        Prose("caveat", note.replace("{", "{{").replace("}", "}}"))
        for note in plan.notes
        if not note.startswith("price") and note not in sheet.notes  # the pick's sheet says it already
    ]
    return answer


def _usd(row: Any) -> Quantity:
    """A row's cost per million output tokens, in dollars."""
    return Quantity(sympy.Float(row.cost_per_million), "USD")


def _wrong_answers(answer: Answer, plan: Any, pick: Any, q: dict[str, Quantity]) -> None:
    """Purchases candidates commonly make, each read from the plan's own search."""
    priced = [f for f in plan.searches if f.gpu.name in plan.prices]

    def per_dollar(found: Any) -> sympy.Expr:
        return found.gpu.bandwidth / plan.prices[found.gpu.name].per_second

    def cheapest(found: Any) -> Any:
        return min(found.rows, key=lambda row: row.cost_per_million) if found.rows else None

    chosen = next((f for f in plan.searches if f.gpu.name == pick.gpu), None)
    if len(priced) > 1 and chosen in priced and pick.cost_per_million is not None:
        q["pick_cost"], q["bw_pick"] = _usd(pick), Quantity(per_dollar(chosen), "byte/USD")
        best = max(priced, key=per_dollar)
        if best is not chosen:
            row = cheapest(best)
            q["bw_gpu"], q["bw_best"] = Quantity(best.gpu.name.upper()), Quantity(per_dollar(best), "byte/USD")
            if row is not None:
                q["bw_cost"] = _usd(row)
            answer.wrong_answers.append(
                Prose(
                    "wrong",
                    "Buying the {bw_gpu} for the most bandwidth per dollar ({bw_best} of reads, against {bw_pick} for "
                    "the {gpu_name}): "
                    + (
                        "at the TPOT target its cheapest layout costs {bw_cost} per million output tokens, against "
                        "{pick_cost}; a token's cost follows the batch a copy runs within the target and its memory."
                        if row is not None
                        else "none of its layouts meets the targets."
                    ),
                    q,
                )
            )
        else:
            second = max((f for f in priced if f is not chosen), key=per_dollar)
            row = cheapest(second)
            if row is not None:
                q["second_gpu"] = Quantity(second.gpu.name.upper())
                q["bw_second"] = Quantity(per_dollar(second), "byte/USD")
                q["bw_share"], q["second_cost"] = Quantity(per_dollar(second) / per_dollar(chosen)), _usd(row)
                q["cost_share"] = Quantity(sympy.Float(row.cost_per_million / pick.cost_per_million))
                answer.wrong_answers.append(
                    Prose(
                        "wrong",
                        "Ranking by bandwidth per dollar: the {second_gpu} buys {bw_second} of reads, {bw_share} times "
                        "the {gpu_name}'s {bw_pick}, yet at the TPOT target its tokens cost {second_cost} per million, "
                        "{cost_share} times the {pick_cost}; a token's cost follows the batch a copy runs within the "
                        "target and its memory.",
                        q,
                    )
                )
    if chosen is not None and chosen.compiled is not None and pick.binds == "TPOT" and pick.memory_batch > pick.batch:
        full = sympy.Float(
            float(np.ravel(chosen.compiled.tpot(*chosen.inputs[pick.layout], float(pick.memory_batch)))[0])
        )
        q["full_tpot"] = Quantity(full, "second")
        q["full_share"] = Quantity(full / plan.targets.tpot)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Filling each copy to {memory_batch}, as far as its memory and the search allow: its TPOT would be "
                "{full_tpot}, {full_share} times the {tpot} target, so the target caps the batch at {batch}.",
                q,
            )
        )
    served, step = q["served"].number, q["step"].number
    if len(answer.wrong_answers) < 2 and served > step:
        q["step_share"] = Quantity(step / plan.targets.tpot)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Reading TPOT as the decode step alone: at {batch} the step takes {step}, {step_share} of the "
                "target, but the prompt passes an aggregated server interleaves bring what a user sees to {served}.",
                q,
            )
        )


def _follow_up(answer: Answer, plan: Any, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """Twice the request rate: the pick's own accelerators-for-rate formula at 2 lambda."""
    if plan.targets.rate is None or "accelerators_for_rate" not in sheet.results:
        return
    values = {**sheet.values, lay.lam: 2 * plan.targets.rate}
    fleet = evaluate(lay.accelerators_for_rate.expr, values)
    copies = fleet / sheet.values[lay.N_L]
    q["rate2"] = Quantity(2 * plan.targets.rate, "sequence/second")
    q["fleet2"], q["copies2"] = Quantity(fleet), Quantity(copies)
    on = "one {gpu_name}" if fleet == 1 else "{fleet2} {gpu_name}s"
    cost = ""
    if "fleet_cost_per_token" in sheet.results:
        # Whole copies: the fleet's cost per token moves with how full its last copy runs; a busy copy's does not.
        per_token = evaluate(lay.fleet_cost_per_token.expr, {**values, lay.N_rate: fleet})
        q["fleet_cost2"] = Quantity(f"{float(per_token) * 1e6:.2f} USD")
        cost = " The fleet's tokens then cost {fleet_cost2} per million (a busy copy's, {cost}, do not move)."
    text = (
        "One copy still serves {rate2}: on " + on + " it holds up to {capacity} within the TPOT and TTFT targets."
        if copies == 1
        else "Serving {rate2} takes {copies2} copies of the same layout, " + on + ": one copy holds at most "
        "{capacity} within the TPOT and TTFT targets."
    ) + cost
    answer.follow_up = FollowUp("And at twice the request rate?", Prose("follow-up", text, q))


QUESTION = Question(
    id="serving-plan",
    title="Serve DeepSeek-V3 at 50 ms TPOT and 20 requests/s: what do you buy?",
    source="The planning question, beyond the seed documents",
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
