"""Seed 004, question 2: FLOPs per token of a dense transformer from its config, and where 2N stops being accurate."""

from functools import partial

import numpy as np
import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.evaluation import over
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet, Work
from derive.core.units import format_quantity
from derive.derivations import costs, params
from derive.derivations.common import Setup, model_library
from formulas import flops as fl
from formulas import notation as sym


def _draw(sheet, setup, stem):  # type: ignore[no-untyped-def]
    library = model_library(setup.model)
    crossing = sheet.results["attention_equals_weights_context"].value
    top = max(float(crossing) if crossing is not None else 0, setup.context) * 8
    contexts = np.geomspace(128, top, 300)
    total = over(fl.F_tot.symbol, sym.S, sheet.values, library)(contexts)
    plt = figures.pyplot()
    fig, ax = plt.subplots()
    ax.semilogx(contexts, total / 1e9, color="C0", lw=1.5, label="full count: weights and attention")
    ax.axhline(float(sheet.values[fl.F_2n]) / 1e9, color="C3", ls="--", lw=1, label="the 2N rule")
    ax.axhline(float(sheet.values[sym.F]) / 1e9, color="C2", ls=":", lw=1, label="weight matmuls alone (2 N_mm)")
    if crossing is not None:
        ax.axvline(
            float(crossing),
            color="grey",
            ls=":",
            lw=1,
            label=f"attention equals the weights: {format_quantity(crossing, 'token')}",
        )
    ax.axvline(
        setup.context,
        color="C1",
        ls="-.",
        lw=1,
        label=f"this answer's context: {format_quantity(setup.context, 'token')}",
    )
    ax.set_xlabel("context (tokens per sequence)")
    ax.set_ylabel("FLOPs per token (GFLOP)")
    ax.set_title(f"FLOPs per token of {setup.model.title} against context", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    figures.save(fig, stem)


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    counts = params(setup)
    sheet = costs.flops(setup)
    work = Work(sheet, model_library(setup.model))
    work.compute(work.library.get("two_n_ratio"), "two_n_ratio")
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    r, v = sheet.results, sheet.values
    q = {
        "f": answer.headline("weight_flops_per_token", v[sym.F], "FLOP/token"),
        "f_att": answer.headline("attention_flops_per_token", r["attention_flops_per_token"].value, "FLOP/token"),
        "f_tot": answer.headline("flops_per_token", r["flops_per_token"].value, "FLOP/token"),
        "f_2n": answer.headline("two_n_flops_per_token", r["two_n_flops_per_token"].value, "FLOP/token"),
        "ratio": answer.headline("two_n_ratio", r["two_n_ratio"].value, ""),
        "n_na": answer.headline("non_arithmetic_params", r["non_arithmetic_params"].value, "parameter"),
        "s_att": answer.headline(
            "attention_equals_weights_context", r["attention_equals_weights_context"].value, "token"
        ),
        "n": Quantity(v[sym.N], "parameter"),
        "n_mm": Quantity(v[sym.N_mm], "parameter"),
        "n_emb": Quantity(counts.results["embedding_params"].value, "parameter"),
        "n_norm": Quantity(counts.results["norm_params"].value, "parameter"),
        "context": Quantity(v[sym.S], "token"),
        "a": Quantity(v[sym.a], sym.a.unit),
        "model": Quantity(setup.model.title),
    }
    arch = setup.model.config
    # Where attention overtakes the weights past the positions the model was trained for, say so.
    crossing, limit = r["attention_equals_weights_context"].value, arch.max_context
    beyond = ""
    if crossing is not None and limit and crossing > limit:
        q["limit"] = Quantity(limit, "token")
        beyond = ", past the {limit} the config allows"
    lookups = "lookups and norms" if arch.tied else "the embedding lookup and the norms"
    if arch.is_moe:
        # 2N counts every expert; a token multiplies through only those it is routed to, so the rule overcounts.
        q["n_idle"] = Quantity(v[sym.N] - v[sym.N_act], "parameter")
        counts_what = (
            "The rule counts the {n_idle} of the experts a token is not routed to and {n_na} that do no arithmetic "
            f"({lookups}), and misses attention, which grows with context and equals the weight FLOPs at "
            f"{{s_att}}{beyond}."
        )
    else:
        counts_what = (
            f"The rule counts {{n_na}} that do no arithmetic ({lookups}) and misses attention, which grows with "
            f"context and equals the weight FLOPs at {{s_att}}{beyond}: from there on 2N is off by a factor of two or "
            "more."
        )
    # A recurrent layer's state costs the same FLOPs a token whatever the context: not a cost per cached token.
    state = _state_flops(setup)
    if state:
        q["f_st"] = Quantity(state, "FLOP/token")
        q["f_cached"] = Quantity(r["attention_flops_per_token"].value - state, "FLOP/token")
        attention = (
            "Attention adds a fixed cost per cached token in its attention layers ({f_cached} at {context}), and the "
            "recurrent layers {f_st} to update and read their state whatever the context: {f_att} together"
        )
    else:
        attention = "Attention adds a fixed cost per cached token ({f_att} at {context})"
    answer.summary = Prose(
        "summary",
        "Each parameter a token multiplies through costs one multiply-accumulate, two FLOPs: from the config, "
        "{model} multiplies through {n_mm} of its {n}, so the weights cost {f}. "
        + attention
        + ", for a full count of {f_tot} against the 2N rule's {f_2n}, a ratio of {ratio}. "
        + counts_what,
        q,
    )
    _wrong_answers(answer, inputs, setup, q)
    _follow_up(answer, sheet, q)
    answer.sections.append(
        Section(
            "Parameters from the config",
            counts,
            intro=(Prose("text", "Which parameters a token multiplies through, term by term from the config.", q),),
        )
    )
    answer.sections.append(
        Section(
            "FLOPs per token, and where 2N breaks",
            sheet,
            intro=(
                Prose(
                    "text",
                    "The weight matmuls count the parameters a token multiplies through (attention, MLP "
                    "and the LM head); attention scores and value sums grow with the context.",
                    q,
                ),
            ),
        )
    )
    answer.figures.append(
        Figure(
            "flops-against-context",
            "FLOPs per token against context: the 2N rule, the "
            "weight matmuls alone, and the full count, which leaves the rule behind where "
            "attention catches up with the weights.",
            partial(_draw, sheet, setup),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "At short context 2N is close for the wrong reasons: it counts the {n_emb} of the "
            "embedding (a lookup) and the {n_norm} of the norms, and misses attention ({f_att} at "
            "{context}), which soon outweighs them.",
            q,
        ),
        Prose(
            "takeaway",
            "Attention FLOPs grow linearly with context while the weight FLOPs do not, so long-context "
            "prefill and decode are priced by attention: past {s_att} it is most of the arithmetic.",
            q,
        ),
        Prose(
            "takeaway",
            "For a mixture of experts, use the active parameters, not the total: a token multiplies "
            "through only the experts it is routed to.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Only matmul FLOPs are counted: softmax, norms, rotary embeddings and activations add "
            "elementwise work that is small in FLOPs but not in time at decode.",
        ),
        Prose(
            "caveat",
            "Attention at context S is counted for one query token; a prompt pass averages half of "
            "that per token under causal masking, and sliding-window models cap S at the window.",
        ),
    ]
    return answer


def _wrong_answers(answer: Answer, inputs: Inputs, setup: Setup, q: dict[str, Quantity]) -> None:
    """FLOPs per token as candidates commonly get them wrong, each computed from the same sheet."""
    arch = setup.model.config
    weights, total, rule = q["f"].number, q["f_tot"].number, q["f_2n"].number
    q["f_mac"] = Quantity(weights / 2, "FLOP/token")
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Counting a multiply-accumulate as one FLOP: {f_mac}, half the {f} the weight matmuls "
            "do. A MAC is a multiply and an add, two FLOPs.",
            q,
        )
    )
    if arch.is_moe and rule > total:
        q["moe_over"] = Quantity(rule / total)
        q["routed"] = Quantity(arch.experts_per_token)
        q["experts"] = Quantity(arch.experts)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Applying 2N to all {n} of a mixture of experts: {f_2n}, {moe_over} times the full count. A token "
                "multiplies through {n_mm}: {routed} of the {experts} experts a layer, plus the layers every token "
                "uses.",
                q,
            )
        )
    if arch.kv_heads < arch.heads and not arch.is_mla:
        # GQA shares K and V between query heads; every query head still scores and sums on its own.
        q["f_att_gqa"] = Quantity(q["f_att"].number * arch.kv_heads / arch.heads, "FLOP/token")
        q["heads"], q["kv_heads"] = Quantity(arch.heads), Quantity(arch.kv_heads)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Scaling attention's FLOPs down with GQA's {kv_heads} KV heads: {f_att_gqa} instead of {f_att}. GQA "
                "shrinks the cache; each of the {heads} query heads still does its own scores and sums.",
                q,
            )
        )
    limit = arch.max_context
    if limit and limit > setup.context:
        at_limit = costs.flops(inputs.setup(context=limit)).results
        longest = at_limit["flops_per_token"].number
        if longest > rule:
            q["limit"] = Quantity(limit, "token")
            q["f_att_limit"] = Quantity(at_limit["attention_flops_per_token"].value, "FLOP/token")
            q["f_tot_limit"] = Quantity(longest, "FLOP/token")
            q["limit_under"] = Quantity(longest / rule)
            answer.wrong_answers.append(
                Prose(
                    "wrong",
                    "Using 2N at any context: at the {limit} the config allows, attention adds {f_att_limit} and "
                    "the full count is {f_tot_limit}, {limit_under} times the rule's {f_2n}.",
                    q,
                )
            )
    del answer.wrong_answers[3:]


def _follow_up(answer: Answer, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """A prompt pass: causal masking lets each prompt token attend only to those before it."""
    average = sheet.results["prompt_attention_flops_per_token"].number
    q["f_att_avg"] = Quantity(average, "FLOP/token")
    q["f_prefill"] = Quantity(q["f"].number + average, "FLOP/token")
    answer.follow_up = FollowUp(
        "And per token of a prompt that long, at prefill?",
        Prose(
            "follow-up",
            "{f_prefill}: under causal masking each prompt token attends only to the tokens before it, {f_att_avg} "
            "of attention on average instead of {f_att}, while the weights still cost {f}.",
            q,
        ),
    )


QUESTION = Question(
    id="flops-per-token",
    title="Derive the FLOPs per token for a dense transformer from its config. Where does the 2N rule stop being "
    "accurate?",
    source="Seed 004, question 2",
    level="Senior",
    kind="explanation",
    defaults={"model": "llama3-70b", "dtype": "bf16", "context": 2048},
    changeable=("model", "context"),
    build=build,
)


def _state_flops(setup: Setup) -> sympy.Expr:
    """FLOPs a token spends on recurrent state (linear attention, Mamba), every kind's: 0 for a model without any."""
    from derive.core.evaluation import evaluate
    from derive.core.symbols import by_key

    library, shapes = model_library(setup.model), dict(setup.model.formulas.shapes)
    total = sympy.Integer(0)
    for kind in setup.model.formulas.kinds:
        flops = by_key(f"{sym.f_st.key}_{kind.tag}")  # derive/architecture/build.py's, one per recurrent kind
        if kind.state_values is not None and flops is not None:
            total += evaluate(flops.symbol, dict(shapes), library)
    return total
