"""Seed 004, question 10: the context where KV reads overtake weight reads, and the coincidence at it."""

from __future__ import annotations

from functools import partial

import numpy as np

from derive import figures
from derive.answers import Answer, Inputs, Question
from derive.derivations import costs
from derive.derivations.common import model_library
from derive.evaluate import over
from derive.sheet import Figure, Prose, Quantity, Section, Work
from formulas import notation as sym
from formulas import step_budget as sb


def _draw(sheet, setup, stem):  # type: ignore[no-untyped-def]
    crossover = float(sheet.values[sym.S])
    contexts = np.linspace(0, 2 * crossover, 400)
    kv = over(sym.kv_total.symbol, sym.S, sheet.values, model_library(setup.model))(contexts)
    figures.bytes_against_context(
        stem,
        contexts,
        np.broadcast_to(kv, contexts.shape),
        float(sheet.values[sym.W]),
        crossover,
        f"{setup.model.title}, batch {setup.batch}, {setup.kv_format} cache",
    )


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    sheet = costs.crossover_kv_weights(setup)
    work = Work(sheet, model_library(setup.model))
    work.heading(f"Against the memory of one {setup.gpu.name}")
    work.given(sym.M, setup.gpu.memory, "datasheet")
    share = work.compute(sb.cache_memory_share, "cache_memory_share")
    v = sheet.values
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    q = {
        "context": answer.headline("crossover_context", v[sym.S], "token/sequence"),
        "kv": answer.headline("kv_bytes_at_crossover", v[sym.kv_total], "byte"),
        "weights": answer.headline("weight_bytes", v[sym.W], "byte"),
        "per_token": answer.headline("kv_bytes_per_token", v[sym.k], "byte/token"),
        "share": answer.headline("cache_memory_share", share),
        "memory": Quantity(setup.gpu.memory, "byte"),
        "batch": Quantity(v[sym.B], "sequence"),
        "gpu": Quantity(setup.gpu.title),
    }
    answer.summary = Prose(
        "summary",
        "KV reads overtake weight reads when B·S·k = W, so S = W/(B·k): with {per_token} of cache and "
        "{batch}, that is {context}. The coincidence: at the crossover the cache is, by construction, as big as "
        "the weights, {kv}, and that is {share} times the {memory} of one {gpu}. A batch that reaches the crossover "
        "needs a whole extra accelerator's memory just for its cache.",
        q,
    )
    answer.sections.append(Section("Where the cache's bytes meet the weights'", sheet))
    answer.figures.append(
        Figure(
            "bytes",
            "Bytes read per decode step against context: the batch's KV cache "
            "grows linearly and crosses the fixed weight bytes.",
            partial(_draw, sheet, setup),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Past {context} a decode step reads more cache than weights: batching no longer "
            "amortises most of the bytes, and step time grows with every token of context.",
            q,
        ),
        Prose(
            "takeaway",
            "The crossover scales as 1/(B·k): GQA (fewer KV heads), an 8-bit cache (--kv-dtype fp8) "
            "or MLA push it out; a bigger batch pulls it in.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Every sequence is taken at the same context; a served batch mixes lengths, and the "
            "crossover applies to the mean.",
        ),
        Prose("caveat", "A sliding-window or paged cache that evicts tokens reads less than the full context."),
    ]
    return answer


QUESTION = Question(
    id="kv-weight-crossover",
    title="Long context: at what sequence length do KV reads overtake weight reads for a 70B GQA model at batch 16?",
    source="Seed 004, question 10",
    level="Senior",
    kind="crossover",
    defaults={"model": "llama3-70b", "gpu": "h200", "dtype": "bf16", "batch": 16},
    changeable=("model", "gpu", "dtype", "kv_dtype", "batch"),
    build=build,
)
