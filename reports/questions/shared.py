"""What questions share: the decode step and prompt pass one accelerator runs, the peak FLOP/s a question
assumes, this machine's measured ceilings, the fusion and launch assumptions, the MBU budget's buckets and the
figures drawn from them. Questions import these from here, never from one another (tests/test_layering.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import sympy

from derive import figures, plots
from derive.answers import Inputs, assumed
from derive.catalog import dtype_bytes
from derive.core.errors import DeriveError
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet, Work
from derive.core.units import format_quantity
from derive.derivations.calibrated import allreduce_count
from derive.derivations.common import Setup, decode_inputs, start
from derive.derivations.energy import at_batch, decode_roofline, max_batch
from derive.derivations.sharding import activation_format
from formulas import calibrated as cal
from formulas import fusion as fu
from formulas import launch as la
from formulas import notation as sym
from formulas import prefill as pf
from formulas import sharding as sh
from formulas import step_budget as sb
from formulas.sharding import b_a

RECORDED = Path(__file__).resolve().parent.parent / "data" / "measured-machine.json"


def measurement(live: bool | str) -> dict[str, Any]:
    """The recorded result, or (live) a fresh full run; live='quick' runs the small plan the tests use."""
    if live:
        import sys

        from derive import measurement as measure

        plan = measure.Plan.quick() if live == "quick" else measure.Plan()

        def progress(text: str) -> None:  # a live run takes half a minute: say what it is doing
            print(f"  ... {text}", file=sys.stderr, flush=True)

        return measure.run(plan, progress=progress).as_dict()
    from derive import measurement as measure

    return measure.recompute(json.loads(RECORDED.read_text(encoding="utf-8")))


def described(result: dict[str, Any]) -> str:
    m = result["machine"]
    return f"{m['cpu']} ({m['cores']} cores, {m['system']}, numpy {m['numpy']})"


def ceilings_section(setup: Setup, result: dict[str, Any]) -> Section:
    """The measured ceilings as givens, the ridge worked from them, each phase against them."""
    copy, matmul = result["ceilings"]
    work = start("measure", f"Measured on {described(result)}", setup)
    work.given(sym.BW, sympy.Float(copy["value"], 6), f"measured: {copy['how']}")
    work.given(sym.P, sympy.Float(matmul["value"], 6), f"measured: {matmul['how']}")
    ridge = work.compute(work.library.get("ridge_intensity"), "measured_ridge_intensity")
    lines = []
    for phase in result["phases"]:
        bound = phase["bound"]
        fraction = phase["bandwidth_fraction"] if bound == "memory" else phase["flops_fraction"]
        lines.append(
            Prose(
                "text",
                f"{phase['name']}: {{bytes}} and {{flops}} (from the library) in {{seconds}}, "
                f"against a roofline time of "
                f"{{predicted}}: {{bandwidth}} and {{achieved}}, at {{intensity}} FLOP per byte, "
                f"{'left' if bound == 'memory' else 'right'} of the ridge: {bound}-bound, at {{fraction}} % of the "
                f"{'copy' if bound == 'memory' else 'matmul'} ceiling"
                + (
                    ", which cannot be: the ceiling's run was too small or too noisy to be the machine's."
                    if fraction > 1
                    else "."
                ),
                {
                    "bytes": Quantity(sympy.Float(phase["bytes"], 6), "byte"),
                    "flops": Quantity(sympy.Float(phase["flops"], 6), "FLOP"),
                    "seconds": Quantity(sympy.Float(phase["seconds"], 6), "second"),
                    "predicted": Quantity(sympy.Float(phase["predicted_seconds"], 6), "second"),
                    "bandwidth": Quantity(sympy.Float(phase["achieved_bandwidth"], 6), "byte/second"),
                    "achieved": Quantity(sympy.Float(phase["achieved_flops"], 6), "FLOP/second"),
                    "intensity": Quantity(sympy.Float(phase["intensity"], 4)),
                    "fraction": Quantity(sympy.Float(fraction * 100, 3)),
                },
            )
        )
    intro = (
        Prose(
            "text",
            f"`derive measure` on {described(result)}: a large copy and a large float32 matrix "
            "multiply give the two ceilings; a GPT-2-small forward pass in numpy, with random weights "
            "of the real shapes, gives the phases. The ridge of this machine:",
        ),
    )
    del ridge
    return Section("Measured on this machine", work.sheet, intro=intro, outro=tuple(lines))


def measured_figure(result: dict[str, Any]) -> Figure:
    from derive import figures

    copy, matmul = result["ceilings"]
    points = [(p["name"], p["intensity"], p["achieved_flops"]) for p in result["phases"]]
    title = f"{result['machine']['cpu']}: measured ceilings and phases"
    return Figure(
        "measured-roofline",
        f"The roofline of this machine's measured ceilings ({described(result)}), "
        "with each phase at its intensity and the FLOP/s it achieved.",
        partial(figures.measured_roofline, peak=matmul["value"], bandwidth=copy["value"], points=points, title=title),
    )


def peak(setup: Setup, inputs: Inputs) -> tuple[sympy.Expr, str]:
    """Peak FLOP/s: --set flops=..., the catalog figure for the dtype, else the bf16 tensor-core peak."""
    if inputs.get("flops"):
        return assumed(inputs, "flops", "FLOP/second"), "--set flops"
    assert setup.gpu is not None
    if setup.dtype in setup.gpu.flops:
        return setup.peak()
    value, _ = setup.gpu.peak("bf16")
    return value, f"assumed: the bf16 tensor-core peak; the catalog has no {setup.dtype} figure"


def decode_step(setup: Setup, inputs: Inputs, title: str) -> Sheet:
    """One decode step at setup.batch on one accelerator: bytes, FLOPs, intensity, ridge and floor times."""
    work = start("decode step", title, setup)
    decode_inputs(work, setup)
    work.given(sym.B, setup.batch, "sequences in the step")
    work.given(sym.n, 1, "one accelerator")
    work.heading("Bytes and FLOPs of one step")
    work.compute(work.library.get("kv_bytes"), "kv_bytes")
    work.compute(work.library.get("step_bytes_per_gpu"), "step_bytes")
    work.compute(work.library.get("step_flops"), "step_flops")
    work.compute(work.library.get("gemm_intensity"), "gemm_intensity")
    work.heading("The accelerator's two roofs")
    assert setup.gpu is not None
    work.given(sym.BW, setup.gpu.bandwidth, "datasheet")
    value, note = peak(setup, inputs)
    work.given(sym.P, value, note)
    work.compute(work.library.get("ridge_intensity"), "ridge_intensity")
    work.compute(work.library.get("memory_time"), "memory_time")
    work.compute(work.library.get("compute_time"), "compute_time")
    work.compute(work.library.get("step_time"), "step_time")
    return work.sheet


def placement(setup: Setup, inputs: Inputs, tokens: int, title: str) -> Sheet:
    """`tokens` tokens through the weights in one pass: the weight GEMMs' intensity and attainable FLOP/s."""
    work = start("roofline point", title, setup)
    work.given(sym.b_w, dtype_bytes(setup.dtype), setup.dtype)
    work.given(sym.B, 1 if tokens > 1 else setup.batch, "sequences in the pass")
    work.given(sym.tau, tokens if tokens > 1 else 1, "tokens each sequence puts through the weights in the pass")
    work.compute(work.library.get("gemm_intensity"), "gemm_intensity")
    assert setup.gpu is not None
    work.given(sym.BW, setup.gpu.bandwidth, "datasheet")
    value, note = peak(setup, inputs)
    work.given(sym.P, value, note)
    work.compute(work.library.get("ridge_intensity"), "ridge_intensity")
    work.compute(work.library.get("attainable_flops"), "attainable_flops")
    return work.sheet


def roofline_figure(
    setup: Setup, sheets: list[tuple[str, Sheet]], caption: str, extra: Sequence[tuple[str, sympy.Expr]] = ()
) -> Figure:  # type: ignore[assignment]
    """The roofline of the first sheet's P and BW, with each sheet's weight GEMM (and any extra point) placed."""
    first = sheets[0][1]
    points = [(label, (s.results.get("gemm_intensity") or s.results["mlp_intensity"]).value) for label, s in sheets]
    points += list(extra)
    assert setup.gpu is not None
    title = f"{setup.model.title} ({setup.dtype}) on {setup.gpu.name}"
    return Figure("roofline", caption, partial(draw_roofline, first.values[sym.P], first.values[sym.BW], points, title))


def prefill_pass(setup: Setup, inputs: Inputs) -> Sheet:
    """The prompt pass on one accelerator: the time to read the weights against the time for its FLOPs."""
    work = start("prefill", f"Prefill of a {setup.prompt:,}-token prompt of {setup.model.title}", setup)
    decode_inputs(work, setup)
    assert setup.gpu is not None
    work.given(sym.BW, setup.gpu.bandwidth, "datasheet: the copy ceiling until measured")
    value, note = peak(setup, inputs)
    work.given(sym.P, value, f"{note}: the matmul ceiling until measured")
    work.given(sym.B, 1, "one prompt")
    work.given(sym.n, 1, "one accelerator")
    work.given(pf.S_p, setup.prompt, "prompt tokens")
    for eta in (pf.eta_bw, pf.eta_f):
        work.given(eta, 1, "the ceilings themselves")
    work.compute(work.library.get("prefill_memory_time"), "prefill_memory_time")
    work.compute(work.library.get("prompt_weight_flops_per_sequence"))
    work.compute(work.library.get("prefill_compute_time"), "prefill_compute_time")
    work.compute(work.library.get("ttft_floor"), "prefill_time")
    return work.sheet


def chain(setup: Setup, inputs: Inputs, tokens: int, title: str, step: tuple[object, str] | None = None) -> Sheet:
    """The elementwise/norm chain of every layer for `tokens` tokens: bytes and time, unfused and fused.

    With `step`, the GPU time of the step's other kernels and where it comes from, also what fusion saves of
    the eager step: launches run ahead of the GPU, so they count only where the CPU is the longer path."""
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
    if step is not None:
        work.heading("What the eager step saves")
        work.given(sym.k_l, assumed(inputs, "kernels_per_layer"), "assumed: every kernel a layer launches per step")
        work.given(la.t_gw, *step)
        work.given(
            la.t_node,
            assumed(inputs, "kernel_gap", "second"),
            "assumed: the GPU's gap between kernels (framework-to-gpu's; --set kernel_gap=...)",
        )
        for name in (
            "kernels_per_step",
            "kernel_gap_time",
            "fusion_gap_saving",
            "eager_launch_time",
            "unfused_eager_step_time",
            "fused_eager_step_time",
            "fusion_step_saving",
        ):
            work.compute(work.library.get(name), name)
    return work.sheet


# Assumed, one launch model for every answer (formulas/launch.py): a serving runtime's decode step launched
# eagerly, its kernels per layer, the CPU's dispatch and launch of one kernel, and the GPU's idle gap before each.
LAUNCH_ASSUMPTIONS = {"kernels_per_layer": 15, "launch_overhead": "5 us", "kernel_gap": "1 us"}

# The same for a model run op by op in eager PyTorch (transformers' generate): every norm, rotary and activation
# several unfused ops, each dispatched from Python.
EAGER_PYTORCH_ASSUMPTIONS = {"kernels_per_layer": 30, "launch_overhead": "10 us", "kernel_gap": "1 us"}

# Assumed: a layer's elementwise chain (norms, residual adds, activation, rotary) as kernels, unfused and
# fused, and FLOPs per element. One place, shared with the slow-training answer.
FUSION_ASSUMPTIONS = {
    "unfused_kernels": 7,
    "fused_kernels": 4,
    "elementwise_flops": "4 FLOP",
    "launch_overhead": LAUNCH_ASSUMPTIONS["launch_overhead"],
    "kernel_gap": LAUNCH_ASSUMPTIONS["kernel_gap"],
}


def figures_entry(sheet, setup):  # type: ignore[no-untyped-def]
    from derive.core.sheet import Figure

    return Figure(
        "throughput",
        "Decode throughput against batch: the roofline curve, its ceiling, the memory limit "
        "and the knee where one exists.",
        partial(plots.knee, sheet, setup),
    )


def step_floor(work: Work, setup: Setup) -> None:
    """The decode roofline at the setup's batch: weights and KV per accelerator, t_mem, t_comp, t_step."""
    weights, one_sequence = decode_roofline(work, setup)
    work.heading("Memory ceiling")
    max_batch(work, setup, weights, one_sequence)
    work.heading(f"Bandwidth floor at batch {setup.batch:,}")
    at_batch(work, setup, setup.batch, "--batch" if "batch" not in setup.defaults else "default")
    work.compute(work.library.get("step_bytes_per_gpu"))


def buckets(work: Work, setup: Setup, inputs: Mapping[str, Any], allreduce: bool = True) -> None:
    """The buckets beyond the floor, each from its assumption; then what is left unattributed."""
    n = work.values[sym.n]
    if allreduce:
        work.heading("Tensor-parallel all-reduces")
        if n > 1:
            allreduce_count(work, inline=False)
        else:
            work.given(cal.m_ar, 0, "one accelerator: no all-reduce")
        work.given(
            cal.alpha_ar,
            assumed(inputs, "allreduce_latency", "second"),
            "assumed: small-message all-reduce latency on NVLink (--set allreduce_latency=...)",
        )
        work.given(sh.b_a, dtype_bytes("bf16"), "16-bit activations")
        assert setup.gpu is not None  # the question always names one
        if setup.gpu.link is None and n > 1:
            raise DeriveError(f"{setup.gpu.name} has no interconnect in the catalog", "Use --tp 1 or another --gpu")
        work.given(sh.BW_link, setup.gpu.link or 1, setup.gpu.link_note or "datasheet, one way")
        work.given(cal.eta_link, 1, "the all-reduce moves its bytes at the link's full bandwidth", inline=True)
        work.given(cal.lambda_ar, 0, "assumed: the latency does not grow with the group", inline=True)
        work.given(cal.eps_ar, 0, "assumed: nor the time a byte", inline=True)
        work.compute(sh.ffn_io_values_per_token)
        work.compute(cal.decode_allreduce_time)
    else:
        work.given(cal.t_ar, 0, "one accelerator: no all-reduce")
    work.heading("Achieved bandwidth")
    work.given(
        pf.eta_bw,
        assumed(inputs, "achieved_bandwidth"),
        "assumed: fraction of peak the decode GEMVs reach (--set achieved_bandwidth=...)",
    )
    work.compute(sb.bandwidth_shortfall_time)
    work.heading("Kernel launches: GPU gaps in series, CPU launching overlapped (formulas/launch.py)")
    work.given(sb.k_l, assumed(inputs, "kernels_per_layer"), "assumed: kernels per layer (--set kernels_per_layer=...)")
    work.given(
        fu.t_l,
        assumed(inputs, "launch_overhead", "second"),
        "assumed: the CPU's dispatch and launch per kernel (--set launch_overhead=...)",
    )
    work.given(
        sb.t_k,
        assumed(inputs, "kernel_gap", "second"),
        "assumed: the GPU's idle gap between kernels (--set kernel_gap=...)",
    )
    for launching in (sb.cpu_launch_time, sb.gpu_kernel_time, sb.launch_gap_time, sb.cpu_excess_time):
        work.compute(launching)
    work.heading("Host work between steps")
    work.given(
        sb.t_host,
        assumed(inputs, "host_time", "second"),
        "assumed: sampling, scheduler and Python per step (--set host_time=...)",
        inline=True,
    )
    work.heading("What is left")
    work.compute(sb.unattributed_step_time, "unattributed_time")


def draw_budget(sheet: Sheet, rows: tuple[tuple[str, Any], ...], title: str, stem) -> None:  # type: ignore[no-untyped-def]
    labels = [label for label, _ in rows]
    values = [float(sheet.values[s]) * 1e3 for _, s in rows]
    figures.bars(stem, labels, values, "milliseconds per decode step", title)


def draw_roofline(
    peak_value: sympy.Expr, bandwidth: sympy.Expr, points: list[tuple[str, sympy.Expr]], title: str, stem
) -> None:  # type: ignore[no-untyped-def]
    figures.roofline(stem, float(peak_value), float(bandwidth), [(label, float(i)) for label, i in points], title)


def tp_link(setup: Setup, n: int) -> tuple[Any, str, str]:
    """The one-way link n tensor-parallel accelerators all-reduce over (formulas/systems.toml), how to say it, and a
    sentence where the group spans more than one domain ('' where it does not): past a node, over the NIC."""
    from derive.systems import system_for

    gpu = setup.gpu
    assert gpu is not None
    try:
        system = system_for(gpu)
    except DeriveError:  # an accelerator no system lists: its own link
        return gpu.link, gpu.link_note or "datasheet", ""
    if n <= system.domain:
        return system.link(n), f"{system.fabric} inside one {system.title}", ""
    nodes = -(-n // system.domain)
    said = (
        f"the {n} x {gpu.name} span {nodes} systems of {system.domain} ({system.title}): tensor parallelism past one "
        f"all-reduces over the scale-out network at {format_quantity(system.link(n), 'byte/second')} per accelerator, "
        f"not {system.fabric}; serving engines keep tensor parallelism inside a node and stack pipeline stages across"
    )
    return system.link(n), f"scale-out network, {system.network_note}", said


def recurrent_states(setup: Setup, sheet: Sheet) -> str:
    """' Its N linear-attention layers read their recurrent state at X FLOP/B, ...' for a hybrid model whose intensity
    sheet (derive intensity) ranked its recurrent kinds; '' for a model without any. Like attention's, a state's
    intensity is the architecture's: each sequence reads its own state, so the batch never moves it."""
    parts = []
    for kind in setup.model.formulas.kinds:
        result = sheet.results.get(f"{kind.tag}_state_intensity")
        if kind.state_values is None or result is None:
            continue
        layers = setup.model.formulas.shapes.get(kind.layers)
        count = f"{int(layers)} " if layers is not None else ""
        parts.append(f"its {count}{kind.label} layers read their state at {format_quantity(result.value, 'FLOP/byte')}")
    if not parts:
        return ""
    return (
        " Beside attention, "
        + "; ".join(parts)
        + ": fixed by the architecture as attention's is, since each sequence reads its own state, so the batch "
        "never moves them either, and they stay far under the ridge."
    )
