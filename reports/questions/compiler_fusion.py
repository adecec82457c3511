"""Seed 000, question 7: what an ML compiler does, kernel fusion first, with its bytes and launches counted."""

from __future__ import annotations

from functools import partial

from derive import figures
from derive.answers import Answer, Inputs, Question, assumed
from derive.catalog import dtype_bytes
from derive.derivations.common import Setup, start
from derive.derivations.sharding import activation_format
from derive.sheet import Figure, Prose, Quantity, Section, Sheet
from formulas import fusion as fu
from formulas import notation as sym
from formulas.sharding import b_a
from reports.questions.decode_bandwidth_bound import decode_step


def chain(setup: Setup, inputs: Inputs, tokens: int, title: str) -> Sheet:
    """The elementwise/norm chain of every layer for `tokens` tokens: bytes and time, unfused and fused."""
    work = start("fusion", title, setup)
    work.given(b_a, dtype_bytes(activation_format(setup)), activation_format(setup))
    work.compute(work.library.get("ffn_io_values_per_token"))
    work.given(fu.T_fu, tokens, "tokens in the step")
    work.given(
        fu.n_ew,
        assumed(inputs, "unfused_kernels"),
        "assumed: two norms, two residual adds, rotary embedding, activation and gating",
    )
    work.given(fu.n_fk, assumed(inputs, "fused_kernels"), "assumed: each norm fused with its residual add")
    work.given(fu.t_l, assumed(inputs, "launch_overhead", "second"), "assumed: eager dispatch and launch")
    assert setup.gpu is not None
    work.given(sym.BW, setup.gpu.bandwidth, "datasheet")
    for name in (
        "unfused_chain_bytes",
        "fused_chain_bytes",
        "unfused_chain_time",
        "fused_chain_time",
        "fusion_launch_saving",
        "fusion_time_saved",
    ):
        work.compute(work.library.get(name), name)
    work.given(fu.f_ew, assumed(inputs, "elementwise_flops", "FLOP"), "assumed: a norm's few FLOPs per value")
    work.compute(work.library.get("elementwise_intensity"), "elementwise_intensity")
    return work.sheet


def _draw(labels, values, title, stem):  # type: ignore[no-untyped-def]
    figures.bars(stem, labels, [float(v) * 1e6 for v in values], "time per step (µs)", title)


def build(inputs: Inputs) -> Answer:
    decode_tokens = int(inputs["batch"])
    setup = inputs.setup(batch=decode_tokens)
    step = decode_step(setup, inputs, f"The decode step of {setup.model.title} at batch {decode_tokens}")
    dec = chain(setup, inputs, decode_tokens, f"Elementwise chain at decode, {decode_tokens} tokens")
    pre = chain(setup, inputs, int(inputs["prompt"]), f"Elementwise chain at prefill, {int(inputs['prompt']):,} tokens")
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    d, p = dec.results, pre.results
    floor = step.results["step_time"].number
    q = {
        "dec_unf": answer.headline("decode_unfused_bytes", d["unfused_chain_bytes"].value, "byte"),
        "dec_fus": answer.headline("decode_fused_bytes", d["fused_chain_bytes"].value, "byte"),
        "dec_launch": answer.headline("decode_launch_saving", d["fusion_launch_saving"].value, "second"),
        "dec_saved": answer.headline("decode_time_saved", d["fusion_time_saved"].value, "second"),
        "dec_share": Quantity(100 * d["fusion_time_saved"].number / floor),
        "floor": answer.headline("decode_step_time", floor, "second"),
        "pre_unf": answer.headline("prefill_unfused_bytes", p["unfused_chain_bytes"].value, "byte"),
        "pre_fus": answer.headline("prefill_fused_bytes", p["fused_chain_bytes"].value, "byte"),
        "pre_bytes_time": Quantity(p["unfused_chain_time"].number - p["fused_chain_time"].number, "second"),
        "pre_saved": answer.headline("prefill_time_saved", p["fusion_time_saved"].value, "second"),
        "ew_i": answer.headline("elementwise_intensity", d["elementwise_intensity"].value, "FLOP/byte"),
        "ridge": Quantity(step.results["ridge_intensity"].value, "FLOP/byte"),
        "dec_t": Quantity(decode_tokens, "token"),
        "pre_t": Quantity(int(inputs["prompt"]), "token"),
    }
    answer.summary = Prose(
        "summary",
        "A compiler turns the model graph into fewer, faster kernels, and kernel fusion matters most: elementwise "
        "ops and norms do {ew_i}, far below the ridge ({ridge}), so each one is a round trip through HBM. Fusing the "
        "chain cuts a prefill of {pre_t} from {pre_unf} to {pre_fus} of traffic, {pre_saved} a pass; at decode "
        "({dec_t}) the bytes are few and fusion saves {dec_saved} a step, {dec_launch} of it in launches: "
        "{dec_share} % of the {floor} step floor.",
        q,
    )
    answer.sections += [
        Section(f"Fusion at decode ({decode_tokens} tokens)", dec),
        Section(
            f"Fusion at prefill ({int(inputs['prompt']):,} tokens)",
            pre,
            outro=(
                Prose(
                    "text",
                    "At prefill the bytes not moved save {pre_bytes_time}; the launches saved are "
                    "the same as at decode.",
                    q,
                ),
            ),
        ),
        Section("The decode step it is compared with", step),
    ]
    labels = [
        "decode: unfused chain bytes",
        "decode: fused chain bytes",
        "decode: launches saved",
        "prefill: unfused chain bytes",
        "prefill: fused chain bytes",
        "prefill: launches saved",
    ]
    values = [
        d["unfused_chain_time"].value,
        d["fused_chain_time"].value,
        d["fusion_launch_saving"].value,
        p["unfused_chain_time"].value,
        p["fused_chain_time"].value,
        p["fusion_launch_saving"].value,
    ]
    answer.figures.append(
        Figure(
            "fusion",
            "Time per step of the layers' elementwise chains, unfused and fused, and "
            "the launch overhead fusion removes, at decode and prefill.",
            partial(_draw, labels, values, f"{setup.model.title} on {setup.gpu.name}"),
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


# Assumed: a layer's elementwise chain (norms, residual adds, activation, rotary) as kernels, unfused and
# fused, the launch cost of one kernel, and FLOPs per element. One place, shared with the slow-training answer.
FUSION_ASSUMPTIONS = {
    "unfused_kernels": 7,
    "fused_kernels": 4,
    "launch_overhead": "4 us",
    "elementwise_flops": "4 FLOP",
}

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
        "elementwise_flops",
    ),
    build=build,
)
