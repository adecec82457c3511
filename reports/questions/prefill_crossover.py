"""Seed 004, question 3: why prefill turns compute-bound after a few hundred tokens, and the TTFT of a 4K prompt."""

from dataclasses import replace
from functools import partial

import numpy as np

from derive import figures
from derive.answers import Answer, Inputs, Question
from derive.derivations import costs
from derive.derivations.common import model_library
from derive.evaluation import over
from derive.sheet import Figure, Prose, Quantity, Section
from derive.units import format_quantity
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
        "ttft": answer.headline("ttft", p["ttft_floor"].value, "second"),
        "t_pm": answer.headline("prefill_memory_time", pv[pf.t_pm], "second"),
        "t_pc": answer.headline("prefill_compute_time", pv[pf.t_pc], "second"),
        "tpot": answer.headline("tpot", p["tpot_floor"].value, "second"),
        "prompt": Quantity(pv[pf.S_p], "token"),
        "n": Quantity(pv[sym.n], ""),
        "gpu": Quantity(setup.gpu.name),
        "model": Quantity(setup.model.title),
        "b_w": Quantity(pv[sym.b_w], "byte/parameter"),
    }
    answer.summary = Prose(
        "summary",
        "Prefill and decode read the same weights, but a prompt pass multiplies every weight by every prompt token, "
        "two FLOPs per token for each weight read once, so its intensity grows with the prompt while decode's stays "
        "fixed. It meets the ridge of {ridge} at {s_pc}: past that the pass waits on the tensor "
        "cores. A prompt of {prompt} "
        "on {model} over {n} x {gpu} therefore takes a TTFT of {ttft} of compute, against {t_pm} to read "
        "the weights and write the cache.",
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
                    "Compute time {t_pc} against memory time {t_pm}: the pass is compute-bound, and each "
                    "decode step after it takes {tpot}, bound by the same weight reads.",
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
            "The crossover is about the ridge point times the bytes per weight over two FLOPs: with "
            "{b_w} weights a prompt needs roughly as many tokens as the ridge has FLOPs per byte ({ridge}).",
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
    return answer


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
