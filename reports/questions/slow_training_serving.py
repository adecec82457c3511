"""Seed 000, question 10: slow training and serving: intensity against the ridge, attention's score matrix,
HFU against MFU, and the profiling signals."""

from __future__ import annotations

from dataclasses import replace

from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.core.sheet import Prose, Quantity, Section
from derive.derivations import costs
from derive.derivations.attention_memory import attention_memory
from derive.derivations.common import Setup
from derive.derivations.utilisation import utilisation
from reports.questions.shared import FUSION_ASSUMPTIONS, chain, placement, roofline_figure


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    decode = costs.intensity(setup)
    big = placement(
        setup, inputs, int(inputs["prompt"]), f"A training or prefill matmul over {inputs['prompt']:,} tokens"
    )
    small = chain(setup, inputs, int(inputs["prompt"]), f"Elementwise ops and norms over {inputs['prompt']:,} tokens")
    attention = attention_memory(replace(setup, context=int(inputs["prompt"])))
    measured = assumed(inputs, "measured_step_time", "second")
    recompute = assumed(inputs, "recompute_fraction")
    # The measured step is a serving (decode) step, which recomputes nothing: its HFU is its MFU. Recomputation
    # (activation checkpointing) belongs to training, where it raises HFU by the factor 1 + f_rc.
    util = utilisation(setup, measured, 0)
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    d, u, a = decode.results, util.results, attention.results
    q = {
        "ridge": answer.headline("ridge_intensity", d["ridge_intensity"].value, "FLOP/byte"),
        "decode_i": answer.headline("decode_gemm_intensity", d["mlp_intensity"].value, "FLOP/byte"),
        "attention_i": answer.headline("decode_attention_intensity", d["attention_intensity"].value, "FLOP/byte"),
        "big_i": answer.headline("large_matmul_intensity", big.results["gemm_intensity"].value, "FLOP/byte"),
        "ew_i": answer.headline("elementwise_intensity", small.results["elementwise_intensity"].value, "FLOP/byte"),
        "scores": answer.headline("naive_score_bytes", a["naive_score_bytes"].value, "byte/sequence"),
        "flash": answer.headline("flash_bytes", a["flash_bytes"].value, "byte/sequence"),
        "ratio": answer.headline("attention_traffic_ratio", a["traffic_ratio"].value),
        "mbu_pct": Quantity(100 * u["mbu"].number),
        "mfu_pct": Quantity(100 * u["mfu"].number),
        "hfu_pct": Quantity(100 * u["hfu"].number),
        "gap": answer.headline("unexplained_time", u["unexplained_time"].value, "second"),
        "measured": Quantity(measured, "second"),
        "rc_pct": Quantity(100 * recompute),
        "rc_factor": answer.headline("training_hfu_over_mfu", 1 + recompute),
        "prompt": Quantity(int(inputs["prompt"]), "token"),
        "batch": Quantity(setup.batch),
    }
    for key in ("mbu", "mfu", "hfu"):
        answer.headline(key, u[key].value)
    answer.summary = Prose(
        "summary",
        "Compare each kernel's arithmetic intensity with the ridge ({ridge}): a matmul over {prompt} does {big_i} "
        "counting its weights' bytes (its activations' lower that) and is compute-bound, while decode matmuls "
        "({decode_i}), decode attention ({attention_i}) and "
        "elementwise ops and norms ({ew_i}) sit far left of it: memory-bound, so fuse them. Naive "
        "attention over {prompt} writes "
        "score matrices of {scores} through HBM, and with Q, K, V and O it moves {ratio} times a tiled "
        "(FlashAttention) kernel's {flash}. MFU counts "
        "only the model's FLOPs and HFU also the recomputed ones: the serving step measured at {measured} "
        "(batch {batch}) reads MFU {mfu_pct} %, and HFU the same, since decode recomputes nothing; a training step "
        "whose recomputation adds {rc_pct} % to the model's FLOPs (activation checkpointing) reports HFU {rc_factor} "
        "times its MFU, "
        "so judge training by MFU. Then profile: timeline gaps, and per-kernel achieved bandwidth against "
        "tensor-core use."
        + (
            " (Its MBU, {mbu_pct} %, passes 100 %: the assumed {measured} is faster than this model's floor here, so "
            "set the step you measured with --set measured_step_time=...)."
            if u["mbu"].number > 1
            else ""
        ),
        q,
    )
    _wrong_answers(answer, setup, a, q)
    _follow_up(answer, setup, int(inputs["prompt"]), q)
    answer.sections += [
        Section("Decode kernels against the ridge", decode),
        Section("A large matmul against the ridge", big),
        Section(
            "Elementwise ops and norms",
            small,
            intro=(
                Prose(
                    "text",
                    "The same chain as in compiler-fusion: its intensity is a few FLOPs per value "
                    "over one read and one write.",
                ),
            ),
        ),
        Section("Materialising the attention matrix", attention),
        Section(
            "MBU, MFU and HFU of a measured step",
            util,
            intro=(
                Prose(
                    "text",
                    "Assumed: a measured step of {measured} at batch {batch}, with {rc_pct} % of the "
                    "model FLOPs executed again, as activation checkpointing does in training.",
                    q,
                ),
            ),
        ),
    ]
    answer.figures.append(
        roofline_figure(
            setup,
            [(f"decode matmul, batch {setup.batch}", decode), (f"matmul, {int(inputs['prompt']):,} tokens", big)],
            "Roofline with decode and large matmuls, decode attention and an elementwise kernel placed at their "
            "intensities.",
            [
                ("decode attention", d["attention_intensity"].number),
                ("elementwise op", small.results["elementwise_intensity"].number),
            ],
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "The profiling signals: timeline gaps for data loading, launch overhead and communication "
            "(the {gap} this step spends beyond its floor); per kernel, achieved DRAM bandwidth against "
            "tensor-core utilisation: memory-bound kernels near the first, matmuls near the second.",
            q,
        ),
        Prose(
            "takeaway",
            "Recomputation raises HFU, never MFU: judge a training run by MFU, and use HFU to see how "
            "busy the hardware is.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "The measured step time and the recompute fraction are assumptions (--set "
            "measured_step_time=, recompute_fraction=); a full checkpointing run recomputes the forward "
            "pass, about a third of the 6N training FLOPs.",
        ),
        Prose(
            "caveat",
            "Intensities count the ideal bytes; cache misses, padding and scattered KV pages move more "
            "and lower the achieved figure.",
        ),
    ]
    return answer


def _wrong_answers(answer: Answer, setup: Setup, a: dict, q: dict[str, Quantity]) -> None:  # type: ignore[type-arg]
    """The slow run as candidates commonly diagnose it wrongly, each computed from the same sheets."""
    q["hfu_wrong"] = Quantity(q["mfu_pct"].number * q["rc_factor"].number)
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Applying training's recomputation to the serving step: HFU {hfu_wrong} %, {rc_factor} times its MFU. "
            "A decode step runs the forward pass once and recomputes nothing: its HFU is its MFU, {mfu_pct} %.",
            q,
        )
    )
    if q["mfu_pct"].number < q["mbu_pct"].number <= 100:  # above 100 % the measured step beats the floor
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Judging the serving step by its MFU: {mfu_pct} % reads as a slow GPU, but a decode step at batch "
                "{batch} is bound by bytes, and its MBU, {mbu_pct} %, is the figure to judge it by.",
                q,
            )
        )
    assert setup.gpu is not None
    if a["naive_score_bytes"].number > 0:
        q["t_scores"] = Quantity(a["naive_score_bytes"].number / setup.gpu.bandwidth, "second")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Blaming naive attention's FLOPs: a tiled kernel does the same matmuls. What it removes is the "
                "{scores} of score matrices through HBM, {t_scores} a prompt at the datasheet bandwidth.",
                q,
            )
        )
    del answer.wrong_answers[3:]


def _follow_up(answer: Answer, setup: Setup, prompt: int, q: dict[str, Quantity]) -> None:
    """A prompt twice as long: the naive score matrices grow with its square, the tiled traffic with its length."""
    longer = 2 * prompt
    limit = setup.model.config.max_context
    if limit and longer > limit:
        return
    a = attention_memory(replace(setup, context=longer)).results
    q["prompt2"] = Quantity(longer, "token")
    q["scores2"] = Quantity(a["naive_score_bytes"].value, "byte/sequence")
    q["flash2"] = Quantity(a["flash_bytes"].value, "byte/sequence")
    q["grow"] = Quantity(a["naive_score_bytes"].number / q["scores"].number)
    q["flash_grow"] = Quantity(a["flash_bytes"].number / q["flash"].number)
    answer.follow_up = FollowUp(
        "And with prompts twice as long?",
        Prose(
            "follow-up",
            "At {prompt2} the naive score matrices are {scores2}, {grow} times, since every token scores every "
            "other; the tiled kernel moves {flash2}, {flash_grow} times. The longer the prompt, the more a "
            "non-fused attention kernel dominates the step.",
            q,
        ),
    )


QUESTION = Question(
    id="slow-training-serving",
    title="Your LLM training and serving is slow. Reason about memory-bound versus compute-bound kernels, the cost "
    "of materializing the attention matrix, HFU versus MFU, and which GPU profiling signals you'd read.",
    source="Seed 000, question 10",
    level="Senior",
    kind="diagnosis",
    defaults={
        "model": "llama3-8b",
        "gpu": "h100",
        "dtype": "bf16",
        "context": 2048,
        "batch": 64,
        "prompt": 4096,
        "measured_step_time": "12 ms",
        "recompute_fraction": "1/3",
        **FUSION_ASSUMPTIONS,
    },
    changeable=(
        "model",
        "gpu",
        "dtype",
        "context",
        "batch",
        "prompt",
        "measured_step_time",
        "recompute_fraction",
        "elementwise_flops",
    ),
    build=build,
)
