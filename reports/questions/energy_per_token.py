"""Seed 004, question 12: joules per output token from power and throughput, and what moves it most."""

from __future__ import annotations

from functools import partial

import numpy as np

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.evaluation import over
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.derivations.common import Setup, model_library
from derive.derivations.energy import energy
from derive.systems import system_for
from formulas import energy as ef
from formulas import notation as sym


def _draw(sheet, setup, stem):  # type: ignore[no-untyped-def]
    largest = float(sheet.values[sym.B_max])
    batches = np.linspace(1, largest, 300)
    per_token = over(ef.e_tok.symbol, sym.B, sheet.values, model_library(setup.model))(batches)
    plt = figures.pyplot()
    fig, ax = plt.subplots()
    ax.plot(batches, per_token, color="C0", lw=1.5, label="energy per output token")
    ax.axvline(largest, color="C2", ls="-.", lw=1, label="memory holds this batch")
    ax.set_yscale("log")
    ax.set_xlabel("batch (sequences)")
    ax.set_ylabel("energy per output token (J/token)")
    ax.set_title(f"{setup.model.title} on {sheet.inputs['tp']} x {setup.gpu.name} at the TDP", fontsize=10)
    ax.legend(fontsize=8)
    figures.save(fig, stem)


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    sheet = energy(setup)
    r, v = sheet.results, sheet.values
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    q = {
        "one": answer.headline("joules_per_token_batch1", r["joules_per_token_batch1"].value, "joule/token"),
        "full": answer.headline("joules_per_token_max_batch", r["joules_per_token_max_batch"].value, "joule/token"),
        "ratio": answer.headline("batch1_over_max_batch", r["batch1_over_max_batch"].value),
        "largest": answer.headline("max_batch_by_memory", v[sym.B_max], "sequence"),
        "power": Quantity(v[ef.P_acc], "watt"),
        "n": Quantity(v[sym.n]),
        "context": Quantity(setup.context, "token/sequence"),
    }
    answer.summary = Prose(
        "summary",
        "Joules per token is power over throughput. "
        + ("One accelerator at its" if v[sym.n] == 1 else "{n} accelerators at their")
        + " {power} TDP decoding one sequence "
        "spend {one}; filled to the {largest} that memory holds at {context}, {full}. Both take the TDP, an upper "
        "bound: no datasheet here gives power against utilisation, and a batch-1 step that waits on memory draws "
        "well under it, so the {ratio} times between them is the most the batch can move the result; the "
        "denominator, the batch that shares each step's weight reads, is what moves it.",
        q,
    )
    realistic = {name: _calibrated(setup, batch, v) for name, batch in (("one_cal", 1), ("full_cal", v[sym.B_max]))}
    if all(value is not None for value in realistic.values()):
        for name, value in realistic.items():
            q[name] = answer.headline(f"calibrated_joules_per_token_{name[:-4]}", value, "joule/token")
        answer.summary = Prose(
            "summary",
            answer.summary.text + " At the calibrated step times a real server takes, the same two batches spend "
            "{one_cal} and {full_cal} at the TDP: the floor's step time understates the energy as the TDP "
            "overstates the power, so neither figure bounds it alone.",
            q,
        )
    _wrong_answers(answer, setup, sheet, q)
    _follow_up(answer, inputs, sheet, q)
    answer.sections.append(Section("Power over throughput", sheet))
    answer.figures.append(
        Figure(
            "energy",
            "Energy per output token against batch, at the TDP: the step's power is "
            "fixed and its tokens grow with the batch.",
            partial(_draw, sheet, setup),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Power can only fall below the TDP, so it moves the figure by less than the cap allows; the "
            "batch moves it by {ratio} times. Cheap tokens come from full batches.",
            q,
        ),
        Prose(
            "takeaway",
            "Anything that lets more sequences share a step cuts joules per token: more memory per "
            "model (a higher --tp), a shorter context, an 8-bit KV cache.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "The TDP is an upper bound on the accelerators' draw; a memory-bound step draws less. Host, "
            "network and cooling (PUE) are not counted.",
        ),
        Prose(
            "caveat",
            "Step times are roofline floors: a real server is slower, and spends more per token in proportion.",
        ),
    ]
    return answer


QUESTION = Question(
    id="energy-per-token",
    title="Estimate the energy per output token for a 70B model on H100s from power and throughput. "
    "What moves the number most?",
    source="Seed 004, question 12",
    level="Senior",
    kind="estimate",
    defaults={"model": "llama3-70b", "gpu": "h100", "dtype": "bf16", "tp": 2, "context": 1024, "batch": 1},
    changeable=("model", "gpu", "dtype", "kv_dtype", "tp", "context", "batch"),
    build=build,
)


def _calibrated(setup, batch, values):  # type: ignore[no-untyped-def]
    """Joules per token at the calibrated decode step for `batch`, or None where it cannot run."""
    from derive.derivations.costs import calibrated_at

    step = calibrated_at(setup, int(batch), int(values[sym.n]))
    if step is None:
        return None
    return values[ef.P_acc] * values[sym.n] * step.results["tpot"].number / (int(batch) * values[sym.tau])


def _wrong_answers(answer: Answer, setup: Setup, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """Joules per token as candidates commonly get it wrong, each computed from the same sheet."""
    v = sheet.values
    n, full = v[sym.n], q["full"].number
    assert setup.gpu is not None  # energy() refuses without one
    try:
        node = system_for(setup.gpu)
    except DeriveError:
        node = None
    if n > 1:
        q["one_gpu"] = Quantity(full / n, "joule/token")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Counting the TDP of one accelerator when the model is split over {n} accelerators: a full batch "
                "then seems to spend {one_gpu}, {n} times too little; every accelerator of the group draws power "
                "through the whole step.",
                q,
            )
        )
    elif node is not None and node.domain > n:
        q["domain"], q["system"] = Quantity(node.domain), Quantity(node.title)
        q["node"] = Quantity(full * node.domain / n, "joule/token")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Charging a whole {system} to a model that runs on one accelerator: a full batch then seems to "
                "spend {node}, {domain} times the {full}; the node's other accelerators can serve other copies.",
                q,
            )
        )
    if v[sym.B_max] > 1:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Quoting one sequence's figure, {one}, as what a token costs: it is {ratio} times the {full} of a full "
                "batch, because one sequence alone pays for every weight read of the step.",
                q,
            )
        )


def _follow_up(answer: Answer, inputs: Inputs, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """An 8-bit cache lets more sequences share each step: the same derivation at --kv-dtype fp8."""
    if sheet.values[sym.b_kv] <= 1:
        return
    try:
        fp8 = energy(inputs.setup(kv_dtype="fp8"))
    except DeriveError:
        return
    q["largest_fp8"] = Quantity(fp8.values[sym.B_max], "sequence")
    q["full_fp8"] = Quantity(fp8.results["joules_per_token_max_batch"].value, "joule/token")
    q["one_fp8"] = Quantity(fp8.results["joules_per_token_batch1"].value, "joule/token")
    small = 10 * (q["one"].number - q["one_fp8"].number) < q["one"].number
    answer.follow_up = FollowUp(
        "And with the KV cache in fp8?",
        Prose(
            "follow-up",
            "Memory then holds {largest_fp8} instead of {largest}, "
            + (
                "but a full batch still spends {full}: its step is compute-bound at both"
                if q["full_fp8"].number == q["full"].number
                else "and a full batch spends {full_fp8} instead of {full}"
            )
            + "; one sequence alone spends {one_fp8} against {one}"
            + (", since one sequence's cache is a small part of the step's bytes." if small else "."),
            q,
        ),
    )
