"""The step a command derives from, spread over its accelerators.

Tensor parallelism alone is formulas/roofline.py's step on n accelerators. A layout with expert, pipeline or
attention data parallelism is formulas/layout.py's: one accelerator's shares of a slot, and the roofline's
quantities (t_mem, t_comp, t_step, R, B_max, M_g, the energy, claim and utilisation terms) in their layout
forms under the same names, so knee, energy, claim, utilisation and compare work unchanged on either.
"""

from __future__ import annotations

import sympy

from derive.calibration import dispatch_share
from derive.catalog import Gpu
from derive.core.errors import DeriveError
from derive.core.sheet import Work
from derive.derivations.calibrated import collective_inputs
from derive.derivations.common import Setup, parallelism, weight_reads
from derive.layouts import Layout, shape
from derive.systems import System
from formulas import layout as lay
from formulas import notation as sym

STEP = ("kv_bytes", "memory_time", "compute_time", "step_time")
# One accelerator's shares of a slot (formulas/layout.py), in the order a sheet shows them.
SHARES = (
    "layout_accelerators",
    "layout_sequences",
    "weight_bytes_per_accelerator",
    "kv_bytes_held_per_accelerator",
    "weight_read_per_accelerator",
    "kv_read_per_accelerator",
    "gemm_flops_per_accelerator",
    "attention_flops_per_accelerator",
    "rank_activation_bytes",
    "tp_sent_bytes",
    "ep_sent_bytes",
    "pp_sent_bytes",
)
SLOT_FLOOR = ("layout_memory_time", "layout_compute_time", "layout_link_time", "layout_slot_floor", "layout_tpot_floor")


def setup_layout(setup: Setup, command: str) -> tuple[Gpu, Layout, System]:
    """The setup's accelerator, its layout (tp with ep, pp, dp) checked by the plan's rules, and its system."""
    from derive.layouts import check
    from derive.systems import system_for

    if setup.gpu is None:
        raise DeriveError(f"{command} needs an accelerator", "Pass --gpu NAME (see 'derive gpus')")
    tp = setup.tp
    if tp is None and (setup.ep, setup.pp, setup.dp) == (1, 1, 1):  # a draft on tensor parallelism alone
        from derive.derivations.common import SHORTER_REQUEST, smallest_tp

        tp = smallest_tp(setup, context=sympy.Integer(setup.prompt + setup.output), shorter=SHORTER_REQUEST)
    if tp is None:
        raise DeriveError(
            "--ep, --pp and --dp describe a layout with its tensor-parallel degree", "Pass --tp too (1 for none)"
        )
    system = system_for(setup.gpu)
    return setup.gpu, check(setup.model, Layout(tp, setup.ep, setup.pp, setup.dp), system), system


def layout_values(work: Work, setup: Setup, layout: Layout, system: System, prompts_together: int = 1) -> None:
    """The layout's degrees, KV shards, all-to-all layers and links as givens (formulas/layout.py's inputs), and
    the layout forms of the roofline's quantities in the work's library. `prompts_together`: the attention ranks
    whose prompt passes share the experts at once (predict's: those its micro-batch gives a prompt, at most d), else
    one request's alone."""
    model = setup.model
    work.library = work.library.extended(lay.roofline_on_layout())
    work.heading(f"The layout ({system.title})")
    s = shape(model)
    work.given(sym.n, layout.tp, f"tensor parallel, inside the {system.fabric} domain")
    work.given(lay.pp, layout.pp, "pipeline stages")
    work.given(lay.dp, layout.dp, "attention data-parallel ranks")
    split = f"expert groups, each expert split {layout.expert_tp} way{'s' if layout.expert_tp > 1 else ''} inside one"
    work.given(lay.ep, layout.ep, split if model.config.is_moe else "a dense model: no experts")
    work.compute(work.library.get("kv_shards"))
    travel = layout.ep > 1 or layout.dp > 1
    work.given(lay.L_a, s.moe_layers if travel else 0, "MoE layers whose tokens travel to their experts")
    wide = layout.on_deepep(system, s.moe_layers)
    said = "whole experts over a node or more under attention dp: DeepEP" if wide else "the fused all-gather"
    work.given(lay.w_E, 1 if wide else 0, f"how the tokens travel: {said}", inline=True)
    crosses = layout.tp * layout.dp > system.domain
    work.given(lay.x_E, int(crosses), "the expert group spans NVLink domains" if crosses else "one domain", inline=True)
    share = dispatch_share(setup.gpu, setup.dtype) if setup.gpu is not None else 1
    why = "the tokens gathered in FP8, summed back in bf16" if share < 1 else "dispatch and combine in bf16"
    work.given(lay.r_dq, share, why, inline=True)
    together = "attention ranks prefilling at once, their tokens sharing the experts"
    work.given(lay.d_p, prompts_together, together if prompts_together > 1 else "one request's prompt pass alone", True)
    if not model.config.is_moe:
        work.given(sym.k_e, 1, "a dense model: its all-to-all terms are zero (L_a = 0)", inline=True)
        work.given(sym.E, 1, "a dense model: no routed experts to balance (F_x = 0)", inline=True)
    said = setup.speculation.source if setup.speculation else "no draft"
    for quantity, value in setup.speculation.values().items():
        work.given(quantity, value, said, inline=not setup.speculation)
    dense = not model.config.is_moe
    for link, group, what, idle in (
        (lay.BW_tp, layout.tp, "tensor-parallel group", layout.tp == 1 and "one accelerator: no all-reduce"),
        (lay.BW_ep, layout.tp * layout.dp, "expert group", dense and "a dense model: no all-to-all (L_a = 0)"),
        (lay.BW_pp, layout.accelerators, "pipeline", layout.pp == 1 and "one stage: no sends between stages"),
    ):
        wire = system.fabric if group <= system.domain else f"scale-out network ({system.network_note})"
        # A link no term of this layout crosses still needs a value (its term is multiplied by zero): say so.
        work.given(link, system.link(group), idle or f"{what} of {group}: {wire}", inline=bool(idle))
    collective_inputs(work)
    routed = work.library.defining(lay.W_E.symbol)
    assert routed is not None, "formulas/layout.py defines W_E (zero for a dense model)"
    work.compute(routed)
    if layout.ep > 1:  # the busiest expert rank's share of the routed tokens (1 where experts are not spread)
        work.compute(work.library.get("expert_imbalance"))


def on_layout(work: Work) -> bool:
    """Whether the work runs on a layout (its library holds the layout forms)."""
    return lay.pp in work.values


def spread(work: Work, setup: Setup, gpu: Gpu) -> int:
    """n and the cache's shards on tensor parallelism alone; else the layout's degrees and links, and what each
    accelerator stores. Returns the accelerators the step runs on."""
    if setup.plain_tp:
        return parallelism(work, setup, gpu)
    _, layout, system = setup_layout(setup, work.sheet.command)
    layout_values(work, setup, layout, system)
    work.compute(work.library.get("weight_bytes_per_accelerator"))
    work.compute(work.library.get("layout_accelerators"))
    return layout.accelerators


def step(work: Work, setup: Setup, names: tuple[str, ...] = STEP) -> None:
    """The step at the work's batch: the weights it reads, one accelerator's shares on a layout, then `names`."""
    weight_reads(work, setup)
    if on_layout(work):
        work.compute(work.library.get("kv_bytes"))
        for name in SHARES + SLOT_FLOOR:
            work.compute(work.library.get(name))
    for name in names:
        work.compute(work.library.get(name))


def fewest(setup: Setup) -> int:
    """The smallest batch a step runs: one sequence, or one on each attention rank (d of them) on a layout, where a
    rank with no sequence would otherwise hold a fraction of one."""
    return setup.dp
