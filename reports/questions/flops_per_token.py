"""Seed 004, question 2: FLOPs per token of a dense transformer from its config, and where 2N stops being accurate."""

from functools import partial

import numpy as np

from derive import figures
from derive.answers import Answer, Inputs, Question
from derive.derivations import costs, params
from derive.derivations.common import model_library
from derive.evaluation import over
from derive.sheet import Figure, Prose, Quantity, Section, Work
from derive.units import format_quantity
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
    answer.summary = Prose(
        "summary",
        "Each parameter a token multiplies through costs one multiply-accumulate, two FLOPs: from the config, "
        "{model} multiplies through {n_mm} of its {n}, so the weights cost {f}. Attention adds a fixed cost per "
        "cached token ({f_att} at {context}), for a full count of {f_tot} against the 2N rule's {f_2n}, a ratio "
        "of {ratio}. The rule counts {n_na} that do no arithmetic (the embedding lookup and the norms) and misses "
        "attention, which grows with context and equals the weight FLOPs at {s_att}: from there on 2N is off by "
        "a factor of two or more.",
        q,
    )
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
