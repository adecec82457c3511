"""Seed 004, question 8: measuring MBU on a running server, and six ways a dashboard gets it wrong."""

from __future__ import annotations

from functools import partial

import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.core.sheet import Figure, Prose, Quantity, Section, Work
from derive.core.units import format_quantity
from derive.derivations.common import model_library
from derive.derivations.utilisation import utilisation
from formulas import notation as sym
from formulas import prefill as pf
from formulas import step_budget as sb
from formulas import utilisation as u


def _points(value):  # type: ignore[no-untyped-def]
    return Quantity(value * 100)


def _draw(readings, title, stem):  # type: ignore[no-untyped-def]
    figures.bars(stem, list(readings), [100 * float(v) for v in readings.values()], "MBU (%)", title)


def build(inputs: Inputs) -> Answer:
    # A live batch's sequences sit anywhere from their prompt to their last token: on average at the prompt plus
    # half the reply, which is the context the steady step reads.
    probe = inputs.setup()
    setup = inputs.setup(context=probe.prompt + probe.output // 2)
    sheet = utilisation(setup, assumed(inputs, "measured_step_time", "second"))
    work = Work(sheet, model_library(setup.model))
    v = sheet.values
    right, mfu = v[u.U_mem], v[u.U_mf]
    work.heading("Dashboard mistakes, each the same division with one operand wrong")
    work.given(pf.S_p, setup.prompt, "--set prompt=...: the prompt of each live sequence")
    work.given(pf.S_o, setup.output, "--set output=...: output tokens per request")
    for eta in (pf.eta_bw, pf.eta_f):
        work.given(eta, 1, "a floor: the prompt pass at peak")
    work.compute(sb.mbu_without_kv, "mbu_without_kv")
    work.compute(sb.kv_bytes_at_prompt)
    work.compute(sb.mbu_kv_at_prompt, "mbu_kv_at_prompt")
    work.compute(sb.mbu_total_bytes_one_gpu, "mbu_total_bytes_one_gpu")
    for name in ("prefill_memory_time", "prefill_compute_time", "ttft_floor"):
        work.compute(work.library.get(name))
    work.compute(sb.wall_time_per_output_token)
    work.compute(sb.mbu_wall_time, "mbu_wall_time")
    work.given(sb.c_sp, 2, "2:4 structured sparsity doubles the datasheet headline (gpus.toml notes)")
    work.compute(sb.mfu_sparse_peak, "mfu_sparse_peak")

    moe_setup = inputs.setup(model=inputs["moe_model"], batch=inputs["moe_batch"], tp=inputs["moe_tp"])
    moe_sheet = utilisation(moe_setup, assumed(inputs, "moe_step_time", "second"))
    moe_work = Work(moe_sheet, model_library(moe_setup.model))
    moe_work.heading("Counting every expert, touched or not")
    moe_work.compute(sb.mbu_all_weights, "mbu_all_weights")
    mv = moe_sheet.values

    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    answer.headline("mbu", right)
    answer.headline("mfu", mfu)
    errors = {
        "no_kv": v[sb.U_nokv] - right,
        "kv_prompt": v[sb.U_kvp] - right,
        "total_bytes": v[sb.U_tot] - right,
        "wall": v[sb.U_wall] - right,
        "sparse": v[sb.U_sp] - mfu,
        "moe": mv[sb.U_all] - mv[u.U_mem],
    }
    q = {name: _points(answer.headline(f"error_{name}", value).value) for name, value in errors.items()}
    q.update(
        mbu=_points(right),
        mfu=_points(mfu),
        t=Quantity(v[u.t_meas], "second"),
        bytes=Quantity(v[u.D_gpu], "byte"),
        bw=Quantity(v[sym.BW], "byte/second"),
        n=Quantity(v[sym.n]),
        tot=_points(v[sb.U_tot]),
        moe_right=_points(mv[u.U_mem]),
        moe_wrong=_points(mv[sb.U_all]),
        moe_model=Quantity(moe_setup.model.title),
        ttft=Quantity(v[pf.ttft], "second"),
        wall_t=Quantity(v[sb.t_wall], "second"),
    )
    readings = {
        "right: per-accelerator bytes, decode step": right,
        "KV reads ignored": v[sb.U_nokv],
        "KV at the prompt length": v[sb.U_kvp],
        "all accelerators' bytes over one's bandwidth": v[sb.U_tot],
        "wall time with the prompt pass": v[sb.U_wall],
        f"{moe_setup.model.title}: experts touched (right)": mv[u.U_mem],
        f"{moe_setup.model.title}: every expert counted": mv[sb.U_all],
    }
    answer.figures.append(
        Figure(
            "readings",
            "The MBU a dashboard reports with each operand mistake, against the right reading; past 100 % a "
            "reading is impossible and gives its mistake away.",
            partial(
                _draw,
                readings,
                f"{setup.model.title} on {setup.gpu.name}, a {format_quantity(v[u.t_meas], 'second')} step",
            ),
        )
    )
    answer.summary = Prose(
        "summary",
        "MBU is the bytes a step must read per accelerator over what peak bandwidth moves in the measured step: time "
        "the steady decode step (here {t}), count weights/n plus the live batch's KV at its current context ({bytes} "
        "per accelerator), divide by {bw}: {mbu} %. Six operand mistakes move it, in points: KV reads ignored "
        "{no_kv}; KV counted at the prompt length {kv_prompt}; all accelerators' bytes over one's bandwidth "
        "{total_bytes}; wall time with the prompt pass {wall}; MFU against the sparse headline {sparse}; all "
        "experts counted for {moe_model} {moe}."
        + (
            " Here the right reading itself passes 100 %: the assumed {t} is faster than this model can step on "
            "this hardware, so time the step on the server (--set measured_step_time=...) before reading its MBU."
            if right > 1
            else ""
        ),
        q,
    )
    answer.sections.append(
        Section(
            "Both operands on a running server, and the dashboard's mistakes",
            sheet,
            intro=(
                Prose(
                    "text",
                    "The measured step time is an input (assumed here; --set measured_step_time=...): on a "
                    "server it is the inter-token latency at a steady batch, or the engine's own step timer.",
                ),
            ),
        )
    )
    answer.sections.append(
        Section(
            f"The MoE case: {moe_setup.model.title} at batch {moe_setup.batch}",
            moe_sheet,
            intro=(
                Prose(
                    "text",
                    "A mixture of experts reads only the experts its tokens pick; counting every weight puts "
                    "the MBU at {moe_wrong} % instead of {moe_right} %.",
                    q,
                ),
            ),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Time: the decode step alone, at a steady batch, from the engine's step timer or the "
            "inter-token latency; not request wall time, which adds the prompt pass ({ttft} here, "
            "{wall_t} per token instead of {t}).",
            q,
        ),
        Prose(
            "takeaway",
            "Count: per accelerator, the weights it holds plus the KV of the sequences live in this "
            "step at their current lengths, for MoE only the experts touched; divide by one "
            "accelerator's dense HBM bandwidth. Cross-check against a DRAM-throughput counter (DCGM, "
            "Nsight Compute).",
        ),
        Prose(
            "takeaway",
            "A figure above 100 % (total bytes over one GPU: {tot} %) is the tell of a wrong operand, "
            "never of a fast server.",
            q,
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "The measured step times are assumptions standing in for a server's timer; the sizes of "
            "the mistakes scale with them.",
        ),
        Prose(
            "caveat",
            "Expert coverage assumes uniform, independent routing: real routing is skewed and touches "
            "fewer experts, so the MoE mistake is at least this large.",
        ),
    ]
    _wrong_answers(answer, v, q)
    _follow_up(answer, v, q)
    return answer


def _wrong_answers(answer: Answer, v, q: dict[str, Quantity]) -> None:  # type: ignore[no-untyped-def]
    """The MBU as candidates commonly compute it, each the same division with one operand wrong."""
    right = v[u.U_mem]
    q["nokv_mbu"] = _points(v[sb.U_nokv])
    q["kv_gpu"] = Quantity(v[sym.kv_total] / v[sym.n], "byte")
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Counting the weights alone: {nokv_mbu} % against {mbu} %. Each step also reads the live batch's cache, "
            "{kv_gpu} per accelerator here.",
            q,
        )
    )
    binary = sympy.Integer(2) ** 40 / 10**12  # a TiB over a TB
    q["tib_mbu"], q["tib"] = _points(right / binary), Quantity(binary)
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Reading the datasheet's {bw} as binary TiB/s: {tib_mbu} %, low by the {tib} a TiB is over a TB. "
            "Bandwidths are quoted in decimal units.",
            q,
        )
    )
    tokens = v[sym.B] * v[sym.tau]
    if tokens > 1:
        q["agg_rate"] = Quantity(tokens / v[u.t_meas], "token/second")
        q["agg_mbu"], q["agg_x"] = _points(right * tokens), Quantity(tokens)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Multiplying the bytes per token by the aggregate {agg_rate} instead of one user's rate: {agg_mbu} %, "
                "{agg_x} times too high. The weights stream once a step for the whole batch.",
                q,
            )
        )


def _follow_up(answer: Answer, v, q: dict[str, Quantity]) -> None:  # type: ignore[no-untyped-def]
    """The cross-check against a counter: the bandwidth the count implies."""
    q["achieved"] = Quantity(v[u.D_gpu] / v[u.t_meas], "byte/second")
    answer.follow_up = FollowUp(
        "What should a DRAM-throughput counter (DCGM, Nsight Compute) read on each accelerator?",
        Prose(
            "follow-up",
            "About {achieved}: the {bytes} over the {t} step. A higher reading means the kernels move bytes the "
            "count leaves out (re-read cache tiles, activations); a lower one, that the count has bytes the step "
            "never reads.",
            q,
        ),
    )


QUESTION = Question(
    id="measure-mbu",
    title="How would you measure MBU on a running server? What do you time, what do you count, and which numbers "
    "make the result wrong?",
    source="Seed 004, question 8",
    level="Senior",
    kind="measurement",
    defaults={
        "model": "llama3-70b",
        "gpu": "h100",
        "dtype": "bf16",
        "tp": 4,
        "batch": 16,
        "prompt": 1024,
        "output": 512,
        "measured_step_time": "20 ms",
        "moe_model": "mixtral-8x7b",
        "moe_tp": 2,
        "moe_batch": 2,
        "moe_step_time": "12 ms",
    },
    changeable=(
        "model",
        "gpu",
        "dtype",
        "kv_dtype",
        "tp",
        "batch",
        "prompt",
        "output",
        "measured_step_time",
        "moe_model",
        "moe_tp",
        "moe_batch",
        "moe_step_time",
    ),
    build=build,
)
