"""`derive shard`: one FFN layer on n accelerators, and which of compute, HBM and the link binds."""

from __future__ import annotations

from dataclasses import replace

import sympy

from derive.catalog import Gpu, dtype_bytes
from derive.core.errors import CatalogError, DeriveError
from derive.core.evaluation import evaluate
from derive.core.sheet import Sheet
from derive.core.solving import Solution
from derive.core.units import format_quantity
from derive.derivations.common import Setup, parallelism, short_form, start
from derive.recipes import recipes
from formulas import notation as sym
from formulas import sharding as sh


def activation_format(setup: Setup) -> str:
    """The dtype activations travel in: weight-only quantisation keeps them in 16 bits."""
    return recipes()[setup.dtype].activations


def shard(setup: Setup) -> Sheet:
    model, gpu, cfg = setup.model, setup.gpu, setup.model.config
    if gpu is None:
        raise DeriveError("shard needs an accelerator", "Pass --gpu NAME (see 'derive gpus')")
    tokens = f"{setup.tokens:,} token{'' if setup.tokens == 1 else 's'}"
    work = start("shard", f"One FFN layer of {model.title} on {gpu.title}, {tokens}", setup)
    work.sheet.inputs["tokens"] = setup.tokens
    if sym.d_ff not in work.values:  # no dense MLP: shard one routed expert
        work.given(sym.d_ff, cfg.intermediate, "config: one routed expert's width (the model has no dense MLP)")
    work.given(
        sh.m_ffn,
        3 if cfg.gated_mlp else 2,
        "config: gated MLP (gate, up, down)" if cfg.gated_mlp else "config: ungated MLP (up, down)",
    )
    work.given(sh.T_ffn, setup.tokens, "default" if "tokens" in setup.defaults else "--tokens")
    work.given(sym.b_w, dtype_bytes(setup.dtype), setup.dtype)
    work.given(sh.b_a, dtype_bytes(activation_format(setup)), activation_format(setup))
    peak, peak_note = setup.peak(gpu)
    work.given(sym.BW, gpu.bandwidth, "--bandwidth" if "bandwidth" in gpu.overridden else "datasheet")
    work.given(sym.P, peak, "--flops" if "flops" in gpu.overridden else peak_note)
    n = parallelism(work, setup, gpu)
    link = _link(setup, gpu) if n > 1 else None

    work.heading("The layer")
    for name in ("ffn_io_values_per_token", "ffn_hidden_values_per_token", "ffn_params"):
        work.compute(work.library.get(name))
    work.compute(work.library.get("ffn_flops"), "flops")
    work.compute(work.library.get("ffn_weight_bytes"), "weight_bytes")
    work.compute(work.library.get("ffn_activation_bytes"), "activation_bytes")

    work.heading("Per accelerator")
    for name in ("ffn_flops_per_gpu", "ffn_weight_bytes_per_gpu", "ffn_activation_bytes_per_gpu"):
        work.compute(work.library.get(name))
    work.compute(work.library.get("ffn_allreduce_bytes"), "allreduce_bytes")

    work.heading("Three times")
    times = {
        "compute": work.compute(work.library.get("ffn_compute_time"), "t_compute"),
        "hbm": work.compute(work.library.get("ffn_hbm_time"), "t_hbm"),
    }
    if link is not None:
        work.given(sh.BW_link, link[0], link[1])
        times["network"] = work.compute(work.library.get("ffn_network_time"), "t_network")
    else:
        work.result("t_network", sh.t_ffn_net, sympy.Integer(0), work.library.get("ffn_network_time").expr)
        work.note("one accelerator: no all-reduce, so the network takes no time")
    binding = max(times, key=lambda k: times[k])  # ties go to the first: compute, then HBM
    work.result("binding", None, binding)

    work.heading("Where compute overtakes HBM")
    crossing = _cancelled(work.solve(sh.t_ffn_comp.symbol, sh.t_ffn_hbm.symbol, sh.T_ffn))
    at = evaluate(crossing.closed_form, work.values, work.library)
    at = at if at.is_finite and at > 0 else None
    work.solved(
        crossing,
        sh.T_cross,
        at,
        "above it the layer is compute-bound"
        if at is not None
        else "never: each token adds more activation bytes than arithmetic",
    )
    short_form(work, at, "the tokens through the layer")

    spread = ", ".join(f"{k} {format_quantity(v, 'second')}" for k, v in times.items())
    work.note(f"{binding} binds ({spread})")
    if cfg.is_moe:
        work.note(
            f"the config's intermediate size ({cfg.intermediate:,}) is the dense MLP's; MoE layers send each "
            f"token to {cfg.experts_per_token} experts of width {cfg.expert_intermediate:,} instead"
        )
    if cfg.gated_mlp:
        work.note(
            "gated MLP: the gate and up outputs are counted as one hidden activation, as a fused kernel keeps them"
        )
    if cfg.mlp_bias:
        work.note("biases (d_ff + d values) are left out: they are a small fraction of the weights")
    work.note(
        "roofline: peak figures, and no overlap of the all-reduce with the matmuls (a real layer overlaps "
        "them in part, so its time is at least the largest of the three)"
    )
    return work.sheet


def _cancelled(solution: Solution) -> Solution:
    """The closed form over one common denominator, without leading minus signs (the same value)."""
    numerator, denominator = sympy.fraction(sympy.cancel(solution.closed_form))
    if numerator.could_extract_minus_sign():
        numerator, denominator = sympy.expand(-numerator), sympy.expand(-denominator)
    return replace(solution, closed_form=numerator / denominator)


def _link(setup: Setup, gpu: Gpu) -> tuple[sympy.Expr, str]:
    """--link as a bandwidth, or the link its name picks in the accelerator's system (NVLink by default)."""
    from derive.systems import system_for

    if setup.link is not None:
        return setup.link, f"--link {setup.link_name}".strip()
    try:
        system = system_for(gpu)
    except CatalogError:
        system = None
    if setup.link_name == "network":
        if system is None:
            raise DeriveError(
                f"{gpu.name} has no system in formulas/systems.toml, so no scale-out network figure",
                'Pass --link "50 GB/s" (one-way bandwidth between the accelerators)',
            )
        return system.network, f"{system.title}: scale-out network, {system.network_note}, one way"
    if system is not None:
        return system.nvlink, f"{system.title}: {system.fabric}, one way ({system.source.split(';')[0]})"
    if gpu.link is not None:
        return gpu.link, gpu.link_note or "datasheet"
    raise DeriveError(
        f"{gpu.name} has no GPU-to-GPU link in its datasheet, so the all-reduce has no bandwidth",
        'Pass --link "50 GB/s" (one-way bandwidth between the GPUs, e.g. PCIe), or --tp 1',
    )
