"""Seed 000, question 8: from framework code to kernels on the GPU, with the launch overhead counted."""

from __future__ import annotations

from functools import partial

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.derivations.common import Setup, start
from formulas import fusion as fu
from formulas import launch as la
from formulas import notation as sym
from reports.questions.shared import FUSION_ASSUMPTIONS, LAUNCH_ASSUMPTIONS, decode_step


def _draw(labels, values, title, stem):  # type: ignore[no-untyped-def]
    figures.bars(stem, labels, [float(v) * 1e6 for v in values], "time per decode step (µs)", title)


def launches(setup: Setup, inputs: Inputs, floor: object, kernels_per_layer: object) -> Sheet:
    """One decode step's launches, eager and as a CUDA graph, against the GPU's roofline floor."""
    work = start("launches", f"Launching one decode step of {setup.model.title}: eager against a CUDA graph", setup)
    work.given(la.k_l, kernels_per_layer, "assumed: norms, projections, rotary, attention, activation, residual adds")
    work.given(fu.t_l, assumed(inputs, "launch_overhead", "second"), "assumed: eager dispatch and launch, per kernel")
    work.given(
        la.t_node,
        assumed(inputs, "kernel_gap", "second"),
        "assumed: the GPU's gap per kernel, eager or graphed",
    )
    work.given(sym.t_step, floor, "the roofline floor, from the decode step below")
    for name in (
        "kernels_per_step",
        "kernel_gap_time",
        "eager_launch_time",
        "graph_launch_time",
        "eager_step_time",
        "graph_step_time",
        "graph_saving",
    ):
        work.compute(work.library.get(name), name)
    return work.sheet


def build(inputs: Inputs) -> Answer:
    setup = inputs.setup()
    step = decode_step(setup, inputs, f"The GPU's work in one decode step of {setup.model.title}")
    floor = step.results["step_time"].number
    sheet = launches(setup, inputs, floor, assumed(inputs, "kernels_per_layer"))
    r = sheet.results
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    eager, graph = r["eager_step_time"].number, r["graph_step_time"].number
    q = {
        "kernels": answer.headline("kernels_per_step", r["kernels_per_step"].value),
        "launch": answer.headline("eager_launch_time", r["eager_launch_time"].value, "second"),
        "floor": answer.headline("decode_step_floor", floor, "second"),
        "eager": answer.headline("eager_step_time", eager, "second"),
        "graph": answer.headline("graph_step_time", graph, "second"),
        "saved": answer.headline("graph_saving", r["graph_saving"].value, "second"),
        "speedup": Quantity(eager / graph),
        "model": Quantity(setup.model.title),
        "gpu": Quantity(setup.gpu.name if setup.gpu else ""),
    }
    q["batch"] = Quantity(setup.batch)
    q["gaps"] = answer.headline("kernel_gap_time", r["kernel_gap_time"].value, "second")
    q["node"] = Quantity(sheet.values[la.t_node], "second")
    bound = "launch-bound" if r["eager_launch_time"].number > floor + r["kernel_gap_time"].number else "GPU-bound"
    answer.summary = Prose(
        "summary",
        "In eager PyTorch each op dispatches to a kernel (often cuBLAS or cuDNN) that the CPU launches "
        "asynchronously on a CUDA stream; the GPU runs it as thread blocks across its SMs, reading HBM. A decode "
        "step of {model} launches {kernels} kernels, {launch} of CPU time, against a roofline floor of {floor} on "
        f"the {{gpu}} and {{gaps}} of GPU gaps between the kernels: the step is {bound} ({{eager}}). "
        + (
            "A CUDA graph replays the step from one launch and brings it to {graph}, saving {saved}; torch.compile "
            "also fuses the small ops into fewer Triton kernels."
            if r["graph_saving"].number > 0
            else "A CUDA graph, which replays the step from one launch, would save nothing here: the GPU's work hides "
            "every launch."
        ),
        q,
    )
    _wrong_answers(answer, r, q)
    _follow_up(answer, setup, inputs, floor, q)
    answer.sections += [
        Section("Launch time per step, eager and graphed", sheet),
        Section("The GPU's own work: the roofline floor", step),
    ]
    labels = ["GPU work (roofline floor)", "GPU gaps between kernels", "eager launches (CPU)", "CUDA graph step"]
    values = [floor, r["kernel_gap_time"].value, r["eager_launch_time"].value, r["graph_step_time"].value]
    answer.figures.append(
        Figure(
            "launches",
            "One decode step: the GPU's roofline work and the gaps between its kernels, against the CPU time to "
            "launch them eagerly, and the step replayed as a CUDA graph (the work and its gaps).",
            partial(_draw, labels, values, f"{setup.model.title} on {q['gpu'].value}"),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "The path down: a Python op dispatches through ATen to a kernel, either a library's (cuBLAS, cuDNN, "
            "cuBLASLt for GEMMs) or one torch.compile generates (Triton, lowered to PTX, which ptxas compiles to "
            "the GPU's SASS); the launch queues it on a CUDA stream and returns at once, so the CPU runs ahead of "
            "the GPU. On the GPU the kernel's thread blocks are spread over the SMs, each block's threads run in "
            "warps of 32 in lockstep, and tensor cores take the matrix tiles. A step costs the longer of the GPU's "
            "work and the CPU's launching, never their sum.",
        ),
        Prose(
            "takeaway",
            "Small ops end up launch- or memory-bound; large matmuls are compute-bound on tensor "
            "cores. The smaller the model and the faster the GPU, the more launches dominate.",
        ),
        Prose(
            "takeaway",
            "CUDA graphs remove per-kernel CPU cost ({speedup} times faster here); fusion removes "
            "kernels altogether (see compiler-fusion).",
            q,
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Kernels per layer, launch overhead and the per-node gap are assumptions (--set "
            "kernels_per_layer=, launch_overhead=, kernel_gap=); profile the step (Nsight "
            "Systems) to read them off the timeline.",
        ),
        Prose(
            "caveat",
            "Launches and GPU work are taken as perfectly overlapped: the step is the longer of the "
            "two. Synchronisations (a .item() call, sampling on the CPU) break the overlap and add both.",
        ),
    ]
    return answer


def _wrong_answers(answer: Answer, r: dict, q: dict[str, Quantity]) -> None:  # type: ignore[type-arg]
    """The step time as candidates commonly get it wrong, each computed from the same sheet."""
    floor, launch, graph = q["floor"].number, q["launch"].number, r["graph_step_time"].number
    q["summed"] = Quantity(floor + launch, "second")
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Adding the launches to the GPU's work: {floor} + {launch} = {summed}. Launches are asynchronous: the "
            "CPU queues kernels while the GPU runs earlier ones, so the step takes the longer of the two, {eager}.",
            q,
        )
    )
    if launch > floor:
        q["too_fast"] = Quantity(launch / floor)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Timing the step by its roofline floor: {floor}, {too_fast} times too fast. At batch {batch} the "
                "CPU cannot launch {kernels} kernels as fast as the GPU runs them.",
                q,
            )
        )
    else:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Expecting a CUDA graph to speed this step up: it saves {saved}. The GPU's {floor} of work already "
                "outlasts the CPU's {launch} of launching, so the launches were never on the critical path.",
                q,
            )
        )
    if graph > floor:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Taking a CUDA graph to remove launch cost altogether: {floor}. A graph still spends {node} of GPU "
                "time between each of its {kernels} kernels, {gaps} in series with the work, so the step is "
                "{floor} + {gaps} = {graph}.",
                q,
            )
        )


def _follow_up(answer: Answer, setup: Setup, inputs: Inputs, floor: object, q: dict[str, Quantity]) -> None:
    """torch.compile fusing each layer's elementwise chain: fewer kernels to launch, eager or graphed."""
    removed = assumed(FUSION_ASSUMPTIONS, "unfused_kernels") - assumed(FUSION_ASSUMPTIONS, "fused_kernels")
    fewer = assumed(inputs, "kernels_per_layer") - removed
    if fewer < 1:
        return
    r = launches(setup, inputs, floor, fewer).results
    q["fused_k"] = Quantity(r["kernels_per_step"].value)
    q["fused_eager"] = Quantity(r["eager_step_time"].value, "second")
    q["fused_graph"] = Quantity(r["graph_step_time"].value, "second")
    q["removed"] = Quantity(removed)
    effect = (
        "the eager step goes from {eager} to {fused_eager} and the graphed one from {graph} to {fused_graph}. "
        "Fusion and graphs compound: one removes kernels, the other their CPU cost."
        if r["eager_step_time"].number < q["eager"].number
        else "the step stays {eager}, since the GPU's work already hides the launches: here fusion pays only in the "
        "HBM bytes it saves (compiler-fusion)."
    )
    answer.follow_up = FollowUp(
        "And if torch.compile fuses each layer's norms with their residual adds?",
        Prose("follow-up", "Each layer launches {removed} kernels fewer, {fused_k} a step: " + effect, q),
    )


QUESTION = Question(
    id="framework-to-gpu",
    title="Walk me through how a model goes from framework code to running on a GPU.",
    source="Seed 000, question 8",
    level="Mid-level",
    kind="explanation",
    defaults={
        "model": "gpt2",
        "gpu": "h100",
        "dtype": "bf16",
        "context": 1024,
        "batch": 1,
        **LAUNCH_ASSUMPTIONS,
    },
    changeable=(
        "model",
        "gpu",
        "dtype",
        "context",
        "batch",
        "kernels_per_layer",
        "launch_overhead",
        "kernel_gap",
    ),
    build=build,
)
