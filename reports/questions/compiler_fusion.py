"""Seed 000, question 7: what an ML compiler does, kernel fusion first, with its bytes and launches counted."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.derivations.attention_memory import attention_memory
from derive.derivations.common import Setup
from reports.questions.shared import FUSION_ASSUMPTIONS, LAUNCH_ASSUMPTIONS, chain, decode_step, prefill_pass


def _draw(labels, values, title, stem):  # type: ignore[no-untyped-def]
    figures.bars(stem, labels, [float(v) * 1e6 for v in values], "time per decode step (µs)", title)


def build(inputs: Inputs) -> Answer:
    decode_tokens = int(inputs["batch"])
    setup = inputs.setup(batch=decode_tokens)
    prompt = int(inputs["prompt"])
    step = decode_step(setup, inputs, f"The decode step of {setup.model.title} at batch {decode_tokens}")
    prefill = prefill_pass(setup, inputs)
    dec = chain(
        setup,
        inputs,
        decode_tokens,
        f"Elementwise chain at decode, {decode_tokens} tokens",
        (step.results["step_time"].value, "the decode step's roofline floor, below"),
    )
    pre = chain(
        setup,
        inputs,
        prompt,
        f"Elementwise chain at prefill, {prompt:,} tokens",
        (prefill.results["prefill_time"].value, "the prompt pass's roofline floor, below"),
    )
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    d, p = dec.results, pre.results
    # The GPU's path: the step, the unfused chain, and the gap before each kernel (formulas/launch.py).
    gpu_unfused = step.results["step_time"].number + d["unfused_chain_time"].number + d["kernel_gap_time"].number
    q = {
        "dec_launch": answer.headline("decode_launch_saving", d["fusion_launch_saving"].value, "second"),
        "cpu": answer.headline("decode_eager_launch_time", d["eager_launch_time"].value, "second"),
        "gpu_work": answer.headline("decode_gpu_work", gpu_unfused, "second"),
        "dec_step": Quantity(d["unfused_eager_step_time"].value, "second"),
        "dec_saved": answer.headline("decode_step_saving", d["fusion_step_saving"].value, "second"),
        "dec_share": Quantity(100 * d["fusion_step_saving"].number / d["unfused_eager_step_time"].number),
        "dec_bytes_time": Quantity(d["unfused_chain_time"].number - d["fused_chain_time"].number, "second"),
        "pre_unf": answer.headline("prefill_unfused_bytes", p["unfused_chain_bytes"].value, "byte"),
        "pre_fus": answer.headline("prefill_fused_bytes", p["fused_chain_bytes"].value, "byte"),
        "pre_saved": answer.headline("prefill_step_saving", p["fusion_step_saving"].value, "second"),
        "pre_step": Quantity(p["unfused_eager_step_time"].value, "second"),
        "pre_launch": Quantity(p["fusion_launch_saving"].value, "second"),
        "ew_i": answer.headline("elementwise_intensity", d["elementwise_intensity"].value, "FLOP/byte"),
        "ridge": Quantity(step.results["ridge_intensity"].value, "FLOP/byte"),
        "dec_t": Quantity(decode_tokens, "token"),
        "pre_t": Quantity(prompt, "token"),
    }
    launch_bound = d["eager_launch_time"].number > gpu_unfused
    decode = (
        "the CPU's launching ({cpu}) outlasts the GPU's work ({gpu_work}), so the step is launch-bound and the "
        "{dec_launch} of launches fusion removes count: it saves {dec_saved} of the {dec_step} step, {dec_share} %."
        if launch_bound
        else "fusion removes {dec_launch} of launches, but launches run ahead of the GPU: the CPU's {cpu} of "
        "launching hides behind the GPU's {gpu_work} of work and gaps, so the step saves only the bytes and the "
        "gaps of the kernels removed, {dec_saved} of {dec_step} ({dec_share} %)."
    )
    answer.summary = Prose(
        "summary",
        "A compiler turns the model graph into fewer, faster kernels, and kernel fusion matters most: elementwise "
        "ops and norms do {ew_i}, far below the ridge ({ridge}), so each one is a round trip through HBM; "
        "FlashAttention is the canonical case, keeping attention's score matrix on chip. Fusing the layers' chain "
        "cuts a prefill of {pre_t} from {pre_unf} to {pre_fus} of traffic, {pre_saved} of the {pre_step} pass. At "
        "decode ({dec_t}) the bytes are few: " + decode,
        q,
    )
    _wrong_answers(answer, step, d, q, launch_bound)
    _follow_up(answer, setup, inputs, q)
    answer.sections += [
        Section(f"Fusion at decode ({decode_tokens} tokens)", dec),
        Section(
            f"Fusion at prefill ({prompt:,} tokens)",
            pre,
            outro=(
                Prose(
                    "text",
                    "The launches fusion removes are the same {pre_launch} as at decode; the prompt pass's GPU work "
                    "hides them, so what it saves is bytes.",
                    q,
                )
                if p["eager_launch_time"].number < p["unfused_eager_step_time"].number
                else Prose("text", "The launches fusion removes are the same {pre_launch} as at decode.", q),
            ),
        ),
        Section("The decode step it is compared with", step),
        Section("The prompt pass it is compared with", prefill),
    ]
    labels = [
        "GPU work, chain unfused",
        "GPU work, chain fused",
        "CPU launching, unfused",
        "CPU launching, fused",
    ]
    values = [
        gpu_unfused,
        step.results["step_time"].number
        + d["fused_chain_time"].number
        + d["kernel_gap_time"].number
        - d["fusion_gap_saving"].number,  # the fused chain, and the gaps of the kernels it keeps
        d["eager_launch_time"].number,
        d["eager_launch_time"].number - d["fusion_launch_saving"].number,
    ]
    answer.figures.append(
        Figure(
            "fusion",
            "One eager decode step: the GPU's work and the CPU's launching, unfused and fused. Launches run ahead "
            "of the GPU, so the step takes the longer bar of each pair.",
            partial(_draw, labels, values, f"{setup.model.title}, batch {decode_tokens}, on {setup.gpu.name}"),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "The canonical fusion is FlashAttention: scores, softmax and the weighted sum in one kernel over tiles "
            "held in on-chip SRAM, so the S x S score matrix never reaches HBM (Dao et al. 2022). Compilers fuse "
            "the rest: torch.compile's Inductor merges elementwise chains and norms into Triton kernels, "
            "TensorRT-LLM and vLLM ship hand-fused ones (RMSNorm with the residual add, rotary with the QKV "
            "split, SwiGLU's gate and up), each removing a round trip of the activations through HBM and a launch.",
        ),
        Prose(
            "takeaway",
            "Fusion pays in bytes where tokens are many (prefill, training) and in launches where "
            "they are few (decode); it cannot raise a matmul's intensity.",
        ),
        Prose(
            "takeaway",
            "The other passes map the graph onto the hardware: constant folding, layouts and "
            "tensor-core shapes and precisions for the matmuls, lowering to vendor libraries, "
            "autotuned tile sizes per SM's registers and shared memory, static memory planning, "
            "and CUDA graphs against launch overhead.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Kernel counts, launch overhead and FLOPs per value are assumptions (set them with --set "
            "unfused_kernels=, fused_kernels=, launch_overhead=, elementwise_flops=); the activation "
            "and gating ops act on the wider hidden vector, so the unfused bytes here are a floor.",
        ),
        Prose("caveat", "Under CUDA graphs launches cost less, so the decode saving shrinks to the bytes."),
    ]
    return answer


def _wrong_answers(answer: Answer, step: Sheet, d: dict, q: dict[str, Quantity], launch_bound: bool) -> None:  # type: ignore[type-arg]
    """Fusion's saving as candidates commonly get it wrong, each computed from the same sheets."""
    summed, saved = d["fusion_time_saved"].number, d["fusion_step_saving"].number
    if not launch_bound and summed > saved:
        q["summed"] = Quantity(summed, "second")
        q["summed_over"] = Quantity(summed / saved) if saved else Quantity("many")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Adding the {dec_launch} of launches fusion removes to the {dec_bytes_time} of bytes: {summed} a "
                "decode step, {summed_over} times what it saves. Eager launches are asynchronous; the CPU's {cpu} "
                "of launching runs behind the GPU's {gpu_work}, off the step's critical path.",
                q,
            )
        )
    elif launch_bound and saved > q["dec_bytes_time"].number:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Counting only the bytes at decode: {dec_bytes_time} a step. The CPU's {cpu} of launching outlasts "
                "the GPU's {gpu_work}, so the step is launch-bound and the launches removed are most of the "
                "{dec_saved} saved.",
                q,
            )
        )
    gemm = q["gemm_i"] = Quantity(step.results["gemm_intensity"].value, "FLOP/byte")
    if gemm.number < q["ridge"].number:
        q["under"] = Quantity(q["ridge"].number / gemm.number)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Expecting fusion to make decode compute-bound: the weight matmuls still do {gemm_i}, {under} times "
                "under the ridge. Fusion removes the activations' round trips, not the weight reads that set the "
                "step.",
                q,
            )
        )
    q["all_time"] = Quantity(d["unfused_chain_time"].value, "second")
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Counting a fused chain as moving no bytes: {all_time} saved a decode step instead of {dec_bytes_time}. "
            "The fused kernels still read each layer's input and write its output once.",
            q,
        )
    )
    del answer.wrong_answers[3:]


def _follow_up(answer: Answer, setup: Setup, inputs: Inputs, q: dict[str, Quantity]) -> None:
    """FlashAttention at the prompt: the score matrices a naive kernel moves, against the chain's saving."""
    try:
        a = attention_memory(replace(setup, context=int(inputs["prompt"]))).results
    except DeriveError:
        return
    scores = a["naive_score_bytes"].number
    assert setup.gpu is not None
    q["scores"] = Quantity(a["naive_score_bytes"].value, "byte/sequence")
    q["flash"] = Quantity(a["flash_bytes"].value, "byte/sequence")
    q["att_ratio"] = Quantity(a["traffic_ratio"].value)
    q["t_scores"] = Quantity(scores / setup.gpu.bandwidth, "second")
    q["bw"] = Quantity(setup.gpu.bandwidth, "byte/second")
    answer.follow_up = FollowUp(
        "And what does fusing attention save at that prompt?",
        Prose(
            "follow-up",
            "Naive attention writes and reads back {scores} of score matrices for one prompt of {pre_t}; with Q, "
            "K, V and O that is {att_ratio} times the {flash} a tiled (FlashAttention) kernel moves. The scores "
            "alone take {t_scores} at {bw}, against "
            "the {pre_saved} the chain's fusion saves. That is why attention is fused first.",
            q,
        ),
    )


QUESTION = Question(
    id="compiler-fusion",
    title="Explain the optimisations an ML compiler makes, such as kernel fusion, and how they map to the hardware.",
    source="Seed 000, question 7",
    level="Senior",
    kind="estimate",
    defaults={
        "model": "llama3-8b",
        "gpu": "h100",
        "dtype": "bf16",
        "context": 2048,
        "batch": 8,
        "prompt": 4096,
        **FUSION_ASSUMPTIONS,
        **LAUNCH_ASSUMPTIONS,
    },
    changeable=(
        "model",
        "gpu",
        "dtype",
        "context",
        "batch",
        "prompt",
        "unfused_kernels",
        "fused_kernels",
        "launch_overhead",
        "kernel_gap",
        "elementwise_flops",
        "kernels_per_layer",
    ),
    build=build,
)
