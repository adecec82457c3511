"""Seed 000: sizing an 80 GB accelerator for Llama 2 13B with 2,048-token conversations."""

from derive.answers import Answer, Inputs, Question
from derive.derivations import costs
from derive.sheet import Prose, Quantity, Section


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    sheet = costs.fit(setup)
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    r = sheet.results
    weights = answer.headline("weight_bytes", r["weight_bytes"].value, "byte")
    per_seq = answer.headline("kv_bytes_per_sequence", r["kv_bytes_per_sequence"].value, "byte/sequence")
    fits = answer.headline("max_sequences", r["max_sequences"].value, "sequence")
    memory = Quantity(setup.gpu.memory * sheet.inputs["tp"], "byte")
    q = {"weights": weights, "per_seq": per_seq, "memory": memory, "fits": fits}
    if r["max_sequences"].number >= 1:
        text = (
            "Weights plus one KV cache per conversation must fit. The weights take {weights}; each "
            "conversation's cache takes {per_seq}, so {memory} holds {fits} beside the weights. "
            "Real servers fit fewer: activations, the framework's workspace and fragmentation take memory too."
        )
    else:
        text = (
            "Weights plus one KV cache per conversation must fit, and here they do not: the weights alone take "
            "{weights}, more than the {memory} given, so no conversation fits until the model is split over more "
            "accelerators (--set tp=...) or stored in fewer bits; each conversation's cache then takes {per_seq}."
        )
    answer.summary = Prose("summary", text, q)
    answer.sections.append(Section("Weights, cache and what fits", sheet))
    answer.takeaways += [
        Prose(
            "takeaway",
            "The cache is linear in context and in bytes per value: halve either "
            "(cap conversations, or an 8-bit cache with --kv-dtype fp8) and nearly twice as many fit.",
        ),
        Prose(
            "takeaway",
            "The weights are paid once per accelerator group, the cache once per conversation: "
            "past a handful of conversations the cache decides capacity.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Paged KV caches waste little, but the activation workspace, CUDA graphs and the "
            "framework's own allocations commonly take several GB more.",
        ),
    ]
    return answer


QUESTION = Question(
    id="kv-sizing-13b",
    title="You're sizing an 80 GB accelerator for Llama 2 13B in 16-bit with 2,048-token conversations. "
    "How many fit, and what would you change if that's not enough?",
    source="Seed 000, question 4",
    level="Senior",
    kind="sizing",
    defaults={"model": "llama2-13b", "gpu": "a100", "dtype": "fp16", "kv_dtype": "fp16", "context": 2048, "tp": 1},
    changeable=("model", "gpu", "dtype", "kv_dtype", "context", "tp"),
    build=build,
)
