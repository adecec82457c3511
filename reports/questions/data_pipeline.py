"""Seed 000, question 9: training GPUs waiting on data: how fast the input pipeline must be, and what a stall costs."""

from __future__ import annotations

import math
from functools import partial

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.derivations.common import aggregates, start
from formulas import notation as sym
from formulas import training as tr


def _draw(times, title, stem):  # type: ignore[no-untyped-def]
    figures.bars(stem, list(times), [float(v) for v in times.values()], "seconds per step (log scale)", title, True)


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    assert setup.gpu is not None
    work = start(
        "data pipeline", f"Feeding the training of {setup.model.title} on {inputs['gpus']} x {setup.gpu.name}", setup
    )
    aggregates(work, setup)
    peak, note = setup.peak()
    work.given(sym.P, peak, note)
    work.given(tr.n_gpu, assumed(inputs, "gpus"), "accelerators in the run")
    work.given(tr.u_tr, assumed(inputs, "mfu"), "assumed: a typical large-run MFU")
    work.heading("What training consumes")
    work.compute(work.library.get("training_flops_per_token"), "training_flops_per_token")
    work.compute(work.library.get("training_token_rate"), "training_token_rate")
    work.given(
        tr.b_tok,
        assumed(inputs, "bytes_per_token", "byte/token"),
        "assumed: raw UTF-8 text, about four bytes per token",
    )
    work.compute(work.library.get("loader_input_bandwidth"), "input_bandwidth")
    work.given(tr.r_core, assumed(inputs, "tokenizer_rate", "token/second"), "assumed: one fast-tokeniser worker")
    work.compute(work.library.get("tokenizer_workers_needed"), "tokenizer_workers_needed")
    work.heading("One global batch, loaded without prefetching")
    work.given(tr.G_tok, assumed(inputs, "batch_tokens", "token"), "tokens per optimiser step")
    work.compute(work.library.get("training_step_time"), "training_step_time")
    work.compute(work.library.get("batch_input_bytes"), "batch_input_bytes")
    work.given(tr.BW_io, assumed(inputs, "storage_bandwidth", "byte/second"), "assumed: shared file system read rate")
    work.given(tr.w_ld, assumed(inputs, "loader_workers"), "assumed: loader processes tokenising online")
    work.compute(work.library.get("batch_load_time"), "batch_load_time")
    work.compute(work.library.get("loader_idle_fraction"), "idle_fraction")
    sheet = work.sheet
    r = sheet.results
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    q = {
        "rate": answer.headline("training_token_rate", r["training_token_rate"].value, "token/second"),
        "bytes": answer.headline("input_bandwidth", r["input_bandwidth"].value, "byte/second"),
        "workers": answer.headline("tokenizer_workers_needed", r["tokenizer_workers_needed"].value),
        "step": answer.headline("training_step_time", r["training_step_time"].value, "second"),
        "load": answer.headline("batch_load_time", r["batch_load_time"].value, "second"),
        "idle": answer.headline("idle_fraction", r["idle_fraction"].value),
        "idle_pct": Quantity(100 * r["idle_fraction"].number),
        "gpus": Quantity(inputs["gpus"]),
        "gpu": Quantity(setup.gpu.name),
        "model": Quantity(setup.model.title),
        "mfu_pct": Quantity(100 * sheet.values[tr.u_tr]),
    }
    answer.summary = Prose(
        "summary",
        "First prove it: the profiler shows each step waiting on the next batch and utilisation dips in a sawtooth; "
        "repeating one cached batch makes throughput jump. At 6N FLOPs per token and an assumed {mfu_pct} % MFU, "
        "{gpus} x {gpu} training {model} consume {rate}, so the loader must read {bytes} and, tokenising online, "
        "keep {workers} tokeniser workers busy; a global batch loaded unprefetched takes {load} against a {step} "
        "step, leaving the GPUs idle {idle_pct} % of the time. Tokenise, filter and dedupe offline into large "
        "packed shards, then stream them with parallel workers, prefetching and pinned memory.",
        q,
    )
    # Of the load, the part that reads the batch's bytes (the rest tokenises them): the figure, a wrong answer
    # and the follow-up all use it.
    read = r["batch_input_bytes"].number / sheet.values[tr.BW_io]
    q["read"] = Quantity(read, "second")
    _wrong_answers(answer, sheet, q)
    _follow_up(answer, sheet, q)
    times = {
        "training step (GPUs)": r["training_step_time"].number,
        "batch load: reading the bytes": read,
        "batch load: tokenising": r["batch_load_time"].number - read,
    }
    answer.figures.append(
        Figure(
            "stall",
            "One optimiser step against the time to load its batch, read and tokenised; unprefetched, the GPUs "
            "wait for the whole load.",
            partial(_draw, times, f"{q['gpus'].value} x {setup.gpu.name} training {setup.model.title}"),
        )
    )
    answer.sections.append(Section("Tokens, bytes and workers the run needs", sheet))
    answer.takeaways += [
        Prose(
            "takeaway",
            "Pre-tokenised, packed shards cut both terms of the load time: fewer bytes per token "
            "and no tokenising on the hot path; prefetching then hides what is left behind the step, "
            "as long as the load ({load}) is shorter than the step ({step}).",
            q,
        ),
        Prose(
            "takeaway",
            "Shuffle by shard order plus a buffer, and make the loader resumable from a saved "
            "position, so a restart neither repeats nor skips data.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "MFU, bytes per token, tokeniser rate, storage bandwidth and loader workers are assumptions "
            "(--set mfu=, bytes_per_token=, tokenizer_rate=, storage_bandwidth=, loader_workers=); the "
            "idle share assumes loading and computing never overlap, the worst case.",
        ),
        Prose(
            "caveat",
            "6N counts the weight matmuls only; attention over long sequences adds FLOPs per token, "
            "which lowers the token rate the loader must match.",
        ),
    ]
    return answer


def _wrong_answers(answer: Answer, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """The stall as candidates commonly diagnose it wrongly, each computed from the same sheet."""
    r, v = sheet.results, sheet.values
    load, step = r["batch_load_time"].number, r["training_step_time"].number
    q["store"] = Quantity(v[tr.BW_io], "byte/second")
    q["batch_bytes"] = Quantity(r["batch_input_bytes"].value, "byte")
    if q["read"].number < load / 2:
        q["read_pct"] = Quantity(100 * q["read"].number / load)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Blaming storage: reading the batch's {batch_bytes} at {store} takes {read}, {read_pct} % of the "
                "{load} load. Tokenising it online is the rest.",
                q,
            )
        )
    capacity = v[tr.w_ld] * v[tr.r_core]
    if capacity >= r["training_token_rate"].number:
        q["capacity"] = Quantity(capacity, "token/second")
        q["loaders"] = Quantity(v[tr.w_ld])
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Concluding the loader keeps up because its {loaders} workers tokenise {capacity}, more than the "
                "{rate} training consumes: without prefetching each batch still loads while the GPUs wait, idle "
                "{idle_pct} % of the time.",
                q,
            )
        )
    # Twice the accelerators halve the step; the unprefetched load stays, so the idle share grows.
    q["gpus2"] = Quantity(2 * v[tr.n_gpu])
    q["step2"] = Quantity(step / 2, "second")
    q["idle2_pct"] = Quantity(100 * load / (load + step / 2))
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Adding accelerators to go faster: {gpus2} of them halve the step to {step2}, but the load stays "
            "{load}, so the GPUs idle {idle2_pct} % of the time instead of {idle_pct} %.",
            q,
        )
    )
    del answer.wrong_answers[3:]


def _follow_up(answer: Answer, sheet: Sheet, q: dict[str, Quantity]) -> None:
    """Prefetching overlaps the next batch's load with this step: the GPUs wait only for what the step cannot hide."""
    r, v = sheet.results, sheet.values
    load, step = r["batch_load_time"].number, r["training_step_time"].number
    q["wait"] = Quantity(max(0, load - step), "second")
    tokenise = step - q["read"].number  # the time a worker pool has left once the bytes are read
    if load <= step:
        text = (
            "The next batch loads during this step: {load} against a {step} step, so the GPUs wait {wait} and the "
            "idle share falls from {idle_pct} % to 0 %, as long as the loader stays ahead on average."
        )
    elif tokenise > 0:
        q["workers_for_step"] = Quantity(math.ceil(v[tr.G_tok] / (v[tr.r_core] * tokenise)))
        text = (
            "The next batch loads during this step, but {load} is longer than the {step} step: the GPUs still wait "
            "{wait} a step. {workers_for_step} loader workers bring the load under the step."
        )
    else:
        text = (
            "The next batch loads during this step, but reading its bytes alone takes {read}, longer than the {step} "
            "step: the GPUs still wait {wait} a step until the data is pre-tokenised or the store is faster."
        )
    answer.follow_up = FollowUp("And with the next batch prefetched?", Prose("follow-up", text, q))


QUESTION = Question(
    id="data-pipeline",
    title="Your training GPUs sit partly idle waiting for data. How do you confirm that, and how would you design "
    "a data-preparation pipeline that keeps them fed?",
    source="Seed 000, question 9",
    level="Senior",
    kind="diagnosis",
    defaults={
        "model": "llama3-8b",
        "gpu": "h100",
        "dtype": "bf16",
        "gpus": 64,
        "mfu": "0.4",
        "bytes_per_token": "4 byte/token",
        "tokenizer_rate": "100000 token/second",
        "batch_tokens": "4194304 token",
        "storage_bandwidth": "5 GB/s",
        "loader_workers": 8,
    },
    changeable=(
        "model",
        "gpu",
        "dtype",
        "gpus",
        "mfu",
        "bytes_per_token",
        "tokenizer_rate",
        "batch_tokens",
        "storage_bandwidth",
        "loader_workers",
    ),
    build=build,
)
