"""Seed 004, question 3: why prefill turns compute-bound after a few hundred tokens, and the TTFT of a 4K prompt."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.evaluation import over
from derive.core.sheet import Figure, Prose, Quantity, Section
from derive.core.units import format_quantity
from derive.derivations import costs
from derive.derivations.common import Setup, model_library
from formulas import notation as sym
from formulas import prefill as pf


def _draw(crossing, predict, setup, stem):  # type: ignore[no-untyped-def]
    library = model_library(setup.model)
    at = crossing.results["compute_bound_prompt_tokens"].value
    prompts = np.geomspace(8, max(setup.prompt, float(at)) * 4, 300)
    memory = over(pf.t_pm.symbol, pf.S_p, predict.values, library)(prompts)
    compute = over(pf.t_pc.symbol, pf.S_p, predict.values, library)(prompts)
    plt = figures.pyplot()
    fig, ax = plt.subplots()
    ax.loglog(prompts, memory * 1e3, color="C0", lw=1.5, label="memory: read the weights, write the prompt's KV")
    ax.loglog(prompts, compute * 1e3, color="C3", lw=1.5, label="compute: the prompt's FLOPs at peak")
    ax.axvline(float(at), color="grey", ls=":", lw=1, label=f"crossover {format_quantity(at, 'token')}")
    ax.axvline(
        setup.prompt,
        color="C1",
        ls="-.",
        lw=1,
        label=f"{format_quantity(setup.prompt, 'token')}: TTFT "
        f"{format_quantity(predict.results['ttft_floor'].value, 'second')}",
    )
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("prefill time (ms)")
    ax.set_title(f"Prefill of {setup.model.title} on {predict.values[sym.n]} x {setup.gpu.name}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    figures.save(fig, stem)


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    crossing = costs.crossover_prefill(setup)
    predict = costs.predict(replace(setup, floor=True))  # the roofline's own figures: the question is the floor
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    c, p, pv = crossing.results, predict.results, predict.values
    q = {
        "s_pc": answer.headline("compute_bound_prompt_tokens", c["compute_bound_prompt_tokens"].value, "token"),
        "ridge": answer.headline("ridge_intensity", c["ridge_intensity"].value, "FLOP/byte"),
        "ttft": answer.headline("ttft_floor", p["ttft_floor"].value, "second"),
        "t_pm": answer.headline("prefill_memory_time", pv[pf.t_pm], "second"),
        "t_pc": answer.headline("prefill_compute_time", pv[pf.t_pc], "second"),
        "tpot": answer.headline("tpot_floor", p["tpot_floor"].value, "second"),
        "prompt": Quantity(pv[pf.S_p], "token"),
        "n": Quantity(pv[sym.n], ""),
        "gpu": Quantity(setup.gpu.name),
        "model": Quantity(setup.model.title),
        "b_w": Quantity(pv[sym.b_w], "byte/parameter"),
        "t_ridge": Quantity(c["ridge_tokens"].value, "token"),
        "dtype": Quantity(setup.dtype),
    }
    compute_bound = pv[pf.t_pc] >= pv[pf.t_pm]
    cfg = setup.model.config
    # A mixture of experts routes each token through k of its E experts: a prompt pass reads every expert the
    # prompt touches (all of them, for any real prompt) but multiplies each by only its share of the tokens.
    multiplies = (
        "multiplies every weight by every prompt token, two FLOPs per token for each weight read once"
        if not setup.model.config.is_moe
        else f"reads every expert the prompt's tokens touch once and multiplies each by the tokens routed to it (each "
        f"token takes {cfg.experts_per_token} of the {cfg.experts} experts a layer), while the other weights see every "
        "token"
    )
    answer.summary = Prose(
        "summary",
        "Prefill and decode read the same weights, but a prompt pass "
        + multiplies
        + ", so its intensity grows with the prompt while decode's stays fixed. It meets the ridge of {ridge} at "
        "{s_pc}: past that the pass waits on the tensor cores. A prompt of {prompt} "
        "on {model} over {n} x {gpu} therefore takes a TTFT of "
        + (
            "{ttft} of compute, against {t_pm} to read the weights and write the cache."
            if compute_bound
            else "{ttft} to read the weights and write the cache, against {t_pc} of compute: it is shorter than the "
            "crossover."
        ),
        q,
    )
    answer.sections.append(
        Section(
            "Where prefill turns compute-bound",
            crossing,
            intro=(
                Prose(
                    "text",
                    "Solve the prompt pass's memory time equal to its compute time for the prompt length. "
                    "Tensor parallelism divides both alike, so one accelerator is enough.",
                    q,
                ),
            ),
        )
    )
    answer.sections.append(
        Section(
            "TTFT of the prompt",
            predict,
            intro=(
                Prose(
                    "text",
                    "The prompt pass is the roofline of its two times; decode steps follow at the mean context.",
                    q,
                ),
            ),
            outro=(
                Prose(
                    "text",
                    "Compute time {t_pc} against memory time {t_pm}: the pass is "
                    + ("compute-bound" if compute_bound else "bandwidth-bound")
                    + ", and each decode step after it takes {tpot}, bound by the same weight reads.",
                    q,
                ),
            ),
        )
    )
    answer.figures.append(
        Figure(
            "prefill-times",
            "Prefill time against prompt length: the memory time is nearly "
            "flat (the weights dominate), the compute time grows with the prompt and crosses "
            "it at the crossover.",
            partial(_draw, crossing, predict, setup),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "The crossover is about the ridge point times the bytes per weight over two FLOPs, I_ridge·b_w/2: "
            "{t_ridge} with {b_w} weights"
            + (
                "; a mixture of experts needs more ({s_pc}), since the pass reads every expert while each token "
                "multiplies through only its own."
                if setup.model.config.is_moe and q["s_pc"].number > q["t_ridge"].number
                else "."
            ),
            q,
        ),
        Prose(
            "takeaway",
            "TTFT past the crossover is FLOPs over peak: fp8 tensor cores, more accelerators or prefix "
            "caching shorten it; more bandwidth does not.",
            q,
        ),
        Prose(
            "takeaway",
            "Chunked prefill at or above the crossover keeps each chunk compute-bound while letting "
            "decode steps share the GPU.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Peak FLOP/s is a ceiling: real prefill GEMMs and attention kernels reach a fraction of it, "
            "so the measured TTFT is longer; pass efficiencies through the predict formulas to model it.",
        ),
        Prose(
            "caveat",
            "Tensor-parallel all-reduces of the prompt's activations (megabytes per layer) and the "
            "attention kernel's own efficiency are not counted.",
        ),
    ]
    _wrong_answers(answer, setup, q, crossing.values.get(sym.b_x))
    _follow_up(answer, inputs, q)
    return answer


def _wrong_answers(answer: Answer, setup: Setup, q: dict[str, Quantity], b_x: object) -> None:
    """The crossover and the TTFT as candidates commonly get them wrong, each from the same sheets; the page holds
    three, the crossover's first."""
    right, ridge, b_w = q["s_pc"].number, q["ridge"].number, q["b_w"].number
    wrong: list[Prose] = []
    moe = setup.model.config.is_moe and right > q["t_ridge"].number
    one_width = (b_x is None or b_x == b_w) and not moe  # every weight is b_w bytes and multiplied by every token
    if one_width and b_w != 1:  # the weights counted as one byte each: an intensity of 2·S_p FLOP/byte
        q["no_bytes"] = Quantity(ridge / 2, "token")
        wrong.append(
            Prose(
                "wrong",
                "Dividing the prompt's 2N·S_p FLOPs by the N weights rather than their N·b_w bytes: the crossover "
                "comes out at half the ridge, {no_bytes}, too "
                + ("early" if ridge / 2 < right else "late")
                + " against {s_pc}; weights in {dtype} take {b_w}.",
                q,
            )
        )
    if one_width and b_w != 2:  # the ridge itself, the crossover only for 2-byte weights
        q["ridge_as_tokens"] = Quantity(ridge, "token")
        wrong.append(
            Prose(
                "wrong",
                "Taking the crossover to be the ridge itself, {ridge_as_tokens}: that holds only for 2-byte weights. "
                "It is I_ridge·b_w/2, and weights in {dtype} take {b_w}, so {s_pc}.",
                q,
            )
        )
    if moe:
        wrong.append(
            Prose(
                "wrong",
                "Using the dense short form for a mixture of experts, {t_ridge}: the prompt pass reads every expert, "
                "but each token multiplies through only its own, so the crossover is {s_pc}.",
                q,
            )
        )
    t_pc, t_pm, ttft = q["t_pc"].number, q["t_pm"].number, q["ttft"].number
    if t_pc > t_pm:
        q["ratio_mem"] = Quantity(t_pc / t_pm)
        wrong.append(
            Prose(
                "wrong",
                "Pricing the prompt like a decode step, weight bytes over bandwidth: a TTFT of {t_pm}, {ratio_mem} "
                "times too short. Past the crossover the pass waits on its FLOPs, {t_pc}.",
                q,
            )
        )
    elif t_pm > t_pc:
        wrong.append(
            Prose(
                "wrong",
                "Pricing the prompt as FLOPs over peak: a TTFT of {t_pc}, too short. This prompt is shorter than the "
                "crossover, so the pass waits on reading the weights, {t_pm}.",
                q,
            )
        )
    training = max(3 * t_pc, t_pm)  # 6N a token instead of 2N
    if training > ttft:
        q["training"], q["ratio_6n"] = Quantity(training, "second"), Quantity(training / ttft)
        wrong.append(
            Prose(
                "wrong",
                "Counting 6N FLOPs a prompt token, the training rule: a TTFT of {training}, {ratio_6n} times too "
                "long. Inference runs only the forward pass, 2N.",
                q,
            )
        )
    answer.wrong_answers += wrong[:3]


def _follow_up(answer: Answer, inputs: Inputs, q: dict[str, Quantity]) -> None:
    """The same two sheets in the other precision, where the accelerator has a peak for it; else on twice the
    accelerators."""
    other = "bf16" if inputs["dtype"] == "fp8" else "fp8"
    try:
        setup = inputs.setup(dtype=other)
        crossing = costs.crossover_prefill(setup)
        predict = costs.predict(replace(setup, floor=True))
    except DeriveError:  # no peak in that precision: more accelerators instead
        _follow_up_tp(answer, inputs, q)
        return
    s_pc = crossing.results["compute_bound_prompt_tokens"].value
    q.update(
        ridge_o=Quantity(crossing.results["ridge_intensity"].value, "FLOP/byte"),
        b_w_o=Quantity(crossing.values[sym.b_w], "byte/parameter"),
        s_pc_o=Quantity(s_pc, "token"),
        ttft_o=Quantity(predict.results["ttft_floor"].value, "second"),
        n_o=Quantity(predict.values[sym.n], ""),
    )
    moves = abs(s_pc / q["s_pc"].number - 1) > sympy.Rational(1, 20)
    b_x = crossing.values.get(sym.b_x)
    kept = moves and b_x is not None and b_x != crossing.values[sym.b_w]
    if kept:
        q["b_x"] = Quantity(b_x, "byte/parameter")
    answer.follow_up = FollowUp(
        f"And with {other} weights on {other} tensor cores?",
        Prose(
            "follow-up",
            "The ridge becomes {ridge_o} and a weight {b_w_o}, so the crossover, which scales as I_ridge·b_w, "
            + ("moves to {s_pc_o}" if moves else "stays near {s_pc_o}: the two factors cancel")
            + (", as the routed experts keep their {b_x}" if kept else "")
            + ". The prompt of {prompt} then takes {ttft_o} on "
            + ("one {gpu}." if predict.values[sym.n] == 1 else "{n_o} x {gpu}."),
            q,
        ),
    )


def _follow_up_tp(answer: Answer, inputs: Inputs, q: dict[str, Quantity]) -> None:
    """Twice the tensor parallelism: both times halve, the crossover stays."""
    n = 2 * int(q["n"].number)
    try:
        predict = costs.predict(replace(inputs.setup(tp=n), floor=True))
    except DeriveError:
        return
    q["n_o"], q["ttft_o"] = Quantity(n, ""), Quantity(predict.results["ttft_floor"].value, "second")
    answer.follow_up = FollowUp(
        "Do more accelerators move the crossover?",
        Prose(
            "follow-up",
            "No: tensor parallelism divides the memory and the compute time alike, so it stays at {s_pc}; on "
            "{n_o} x {gpu} the TTFT of the prompt becomes {ttft_o}.",
            q,
        ),
    )


QUESTION = Question(
    id="prefill-crossover",
    title="Why does prefill turn compute-bound after a few hundred tokens on an H100, and how long does a "
    "4K-token prompt take on a 70B model?",
    source="Seed 004, question 3",
    level="Senior",
    kind="crossover",
    defaults={"model": "llama3-70b", "gpu": "h100", "dtype": "bf16", "prompt": 4096, "output": 256},
    changeable=("model", "gpu", "dtype", "tp", "prompt", "output"),
    build=build,
)
