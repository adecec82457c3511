"""Seed 000: sizing an 80 GB accelerator for Llama 2 13B with 2,048-token conversations."""

from functools import partial

import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.derivations import costs
from derive.derivations.common import Setup, model_library
from formulas import notation as sym


def _draw(budget, title, stem):  # type: ignore[no-untyped-def]
    figures.bars(stem, list(budget), [float(v) / 1e9 for v in budget.values()], "GB", title)


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
    held = max(0, int(r["max_sequences"].number))
    budget = {
        "accelerator memory": memory.number,
        "weights": weights.number,
        f"KV cache, {held:,} sequences": held * per_seq.number,
        "left over": max(0, memory.number - weights.number - held * per_seq.number),
    }
    answer.figures.append(
        Figure(
            "memory",
            "Where the memory goes: the weights, the caches of the conversations that fit, and what is left over.",
            partial(_draw, budget, f"{setup.model.title} ({setup.dtype}) on {sheet.inputs['tp']} x {setup.gpu.name}"),
        )
    )
    answer.takeaways += [
        _changes(inputs, int(str(sheet.inputs["tp"])), q),
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
    _wrong_answers(answer, setup, sheet, q)
    _follow_up(answer, inputs, q)
    return answer


def _changes(inputs: Inputs, tp: int, q: dict[str, Quantity]) -> Prose:
    """What to change, each alone on the same `tp` accelerators unless the change is more of them: the same sizing
    with one input changed, what the question asks for last."""
    options: tuple[tuple[str, dict[str, object]], ...] = (
        ("an 8-bit cache", {"kv_dtype": "fp8"}),
        ("8-bit (int8) weights", {"dtype": "int8"}),
        ("half the context", {"context": max(1, int(inputs["context"]) // 2)}),
        (f"twice the accelerators (tensor parallel {2 * tp})", {"tp": 2 * tp}),
    )
    said = []
    for i, (name, change) in enumerate(options):
        if all(inputs.get(k) == v for k, v in change.items()):
            continue
        try:
            fits = costs.fit(inputs.setup(**{"tp": tp, **change})).results["max_sequences"].value
        except DeriveError:  # the change does not apply to this model or accelerator
            continue
        q[f"change_{i}"] = Quantity(fits, "sequence")
        said.append(f"{name}, {{change_{i}}}")
    return Prose(
        "takeaway",
        "The cache is linear in context and in bytes per value. Each change alone, against {fits} now: "
        + "; ".join(said)
        + ".",
        q,
    )


def _fits(setup: Setup, sheet: Sheet, **changed: sympy.Expr) -> sympy.Expr:
    """The library's count of sequences beside the weights, with some of its values changed (a mistake's)."""
    library = model_library(setup.model)
    values = {**sheet.values, **{getattr(sym, name): value for name, value in changed.items()}}
    return max(evaluate(library.get("max_batch_by_memory").expr, values, library), sympy.Integer(0))


def _wrong_answers(answer: Answer, setup: Setup, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """The sizing as candidates commonly get it wrong, each figure from the same sheet."""
    arch, v = setup.model.config, sheet.values
    q["no_weights"] = Quantity(_fits(setup, sheet, W=sympy.Integer(0)), "sequence")
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Dividing all {memory} by one conversation's cache, forgetting the weights: {no_weights}, not {fits}. "
            "The {weights} of weights come off first.",
            q,
        )
    )
    plain = arch.is_plain and not arch.is_mla
    if plain and q["fits"].number >= 1:
        q["half_seq"] = Quantity(v[sym.kv_seq] / 2, "byte/sequence")
        q["twice"] = Quantity(_fits(setup, sheet, kv_seq=v[sym.kv_seq] / 2), "sequence")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Caching only K, dropping the 2 in 2·L·d_h·n_kv: {half_seq}, so {twice} seem to fit. "
                "Every layer caches a key and a value per token.",
                q,
            )
        )
    if plain and arch.kv_heads < arch.heads and q["fits"].number >= 1:
        ratio = sympy.Rational(arch.heads, arch.kv_heads)
        q["heads"], q["kv_heads"] = Quantity(arch.heads), Quantity(arch.kv_heads)
        q["mha_seq"] = Quantity(v[sym.kv_seq] * ratio, "byte/sequence")
        q["mha_fits"] = Quantity(_fits(setup, sheet, kv_seq=v[sym.kv_seq] * ratio), "sequence")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Caching all {heads} query heads, as if there were no GQA: {mha_seq}, and "
                + ("only {mha_fits} fit." if q["mha_fits"].number >= 1 else "none fit.")
                + " Only the {kv_heads} KV heads are cached.",
                q,
            )
        )
    del answer.wrong_answers[3:]  # the page holds three


def _follow_up(answer: Answer, inputs: Inputs, q: dict[str, Quantity]) -> None:
    """The first change to try: an 8-bit cache, the same sizing at --kv-dtype fp8."""
    if inputs.get("kv_dtype") == "fp8":
        return
    try:
        fp8 = costs.fit(inputs.setup(kv_dtype="fp8")).results
    except DeriveError:
        return
    q["per_seq_fp8"] = Quantity(fp8["kv_bytes_per_sequence"].value, "byte/sequence")
    q["fits_fp8"] = Quantity(fp8["max_sequences"].value, "sequence")
    if q["weights"].number >= q["memory"].number:
        text = (
            "No help yet: the {weights} of weights leave no room for any cache, so first split them over more "
            "accelerators or store them in fewer bits."
        )
    elif q["fits_fp8"].number < 1:
        q["left"] = Quantity(q["memory"].number - q["weights"].number, "byte")
        text = (
            "Each conversation's cache falls to {per_seq_fp8}, still more than the {left} the weights leave: cap the "
            "context or split over more accelerators."
        )
    else:
        text = (
            "Each conversation's cache falls to {per_seq_fp8}, so {fits_fp8} fit instead of {fits}; past that, "
            "cap the context, split over more accelerators, or quantise the weights."
        )
    answer.follow_up = FollowUp("And with the cache in fp8?", Prose("follow-up", text, q))


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
