"""Layouts (tp, ep, pp, dp): which ones a model admits, and the one search every planner uses.

The rules are the serving engines' (vLLM, SGLang, TensorRT-LLM): tensor parallelism stays inside
one NVLink domain and divides the query heads, and the KV heads divide it or it divides them
(past them the cache is copied, not split); pipeline stages divide the layers; attention data
parallelism is for a mixture of experts, whose experts the ranks share. The experts span a stage's
tp·dp accelerators as ep groups (each holding E/ep experts, which ep must divide), every expert split
tp·dp/ep ways inside its group (TensorRT-LLM's moe_ep and moe_tp, whose product is tp·dp): ep = 1
splits every expert over all of them, ep = tp·dp places whole experts.
"""

from __future__ import annotations

from dataclasses import dataclass

from derive.catalog import Model
from derive.core.errors import DeriveError
from derive.systems import System


@dataclass(frozen=True)
class Layout:
    tp: int
    ep: int = 1
    pp: int = 1
    dp: int = 1

    @property
    def accelerators(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def expert_tp(self) -> int:
        """Ways each routed expert is split inside its expert group (TensorRT-LLM's moe_tp): tp·dp/ep."""
        return self.tp * self.dp // self.ep

    def on_deepep(self, system: System, moe_layers: int) -> bool:
        """Whether the tokens travel on DeepEP's kernels (formulas/layout.py's w_E): a MoE model's whole experts
        under attention data parallelism, an expert group of at least one HGX node, accelerators on NVLink (DeepEP's
        intranode path needs it), as TensorRT-LLM's wide-EP path and aiconfigurator 0.12
        (Task._resolve_moe_comm_backend) take them; else the fused all-gather serves."""
        wide = self.dp > 1 and self.expert_tp == 1 and self.ep >= WIDE_EP_GROUP
        return wide and moe_layers > 0 and system.fabric == "NVLink"

    def __str__(self) -> str:
        return f"tp{self.tp} ep{self.ep} pp{self.pp} dp{self.dp}"


# The smallest expert group DeepEP's kernels serve: one HGX node's 8 GPUs, the EP its tables were profiled at.
WIDE_EP_GROUP = 8


@dataclass(frozen=True)
class Shape:
    """What the rules read from a model."""

    heads: int
    kv_heads: int | None  # None for a latent cache, which tensor parallelism does not split
    layers: int
    experts: int  # 0 for a dense model
    moe_layers: int


def shape(model: Model) -> Shape:
    arch = model.config
    mixers = arch.mixers
    heads = min((m.head_count() for m in mixers if m.head_count()), default=0)
    latent = any(m.whole_cache for m in mixers)
    kv = [m.kv_head_count() for m in mixers if m.kv_head_count() and not m.whole_cache]
    moe = arch.moe
    return Shape(
        heads=heads,
        kv_heads=None if latent or not kv else min(kv),
        layers=arch.layers,
        experts=moe.experts if moe is not None else 0,
        moe_layers=arch.count(lambda g: g.moe is not None),
    )


def tp_problem(s: Shape, tp: int) -> str | None:
    """Why tensor parallelism of `tp` cannot split the model's heads, or None: the one rule every command, the sweep
    and the plan apply."""
    if s.heads and s.heads % tp:
        return f"tp {tp} does not divide the {s.heads} query heads"
    if s.kv_heads and s.kv_heads % tp and tp % s.kv_heads:
        return f"tp {tp} and the {s.kv_heads} KV heads do not divide one another"
    return None


def check_tp(model: Model, tp: int) -> None:
    """A one-line error where `tp` cannot split the model's heads, naming the degrees that can."""
    s = shape(model)
    reason = tp_problem(s, tp)
    if reason is not None:
        fits = [str(d) for d in range(1, 129) if tp_problem(s, d) is None][:12]  # gpt2's 12 heads: 6 and 12 too
        raise DeriveError(
            f"--tp {tp} cannot split {model.name}: {reason}",
            "Tensor parallelism splits whole heads: use one of " + ", ".join(fits),
        )


def problem(s: Shape, layout: Layout, system: System) -> str | None:
    """Why `layout` cannot run the model on `system`, or None."""
    tp, ep, pp, dp = layout.tp, layout.ep, layout.pp, layout.dp
    if min(tp, ep, pp, dp) < 1:
        return "every degree must be at least 1"
    if tp > system.domain:
        return f"tp {tp} exceeds {system.name}'s {system.fabric} domain of {system.domain}"
    split = tp_problem(s, tp)
    if split is not None:
        return split
    if s.layers % pp:
        stages = [f"{k}" for k in range(1, min(s.layers, 64) + 1) if s.layers % k == 0]
        those = ", ".join(stages[:-1]) + f" or {stages[-1]}" if len(stages) > 1 else stages[0]
        return f"pp {pp} does not divide the {s.layers} layers (pp {those} does)"
    if not s.experts:
        if ep != 1 or dp != 1:
            return "a dense model has no experts to share: ep and dp are 1 (more copies serve a higher rate)"
        return None
    if (tp * dp) % ep:
        return f"ep {ep} must divide tp·dp = {tp * dp}, the accelerators a stage's experts span"
    if s.experts % ep:
        return f"ep {ep} does not divide the {s.experts} experts"
    return None


def _powers(limit: int) -> list[int]:
    return [1 << i for i in range(limit.bit_length()) if 1 << i <= limit]


def search(model: Model, system: System, max_accelerators: int) -> list[Layout]:
    """Every valid layout of powers of two on at most `max_accelerators` (pp also any divisor of the layers), attention
    either tensor-parallel or data-parallel: TensorRT-LLM, whose profiled kernels calibrate the estimate, runs
    attention dp only with attention tp = 1 (its enable_attention_dp mapping; aiconfigurator 0.12 searches the same
    space). `derive predict --tp --dp` still prices a layout with both."""
    s = shape(model)
    out = []
    stages = sorted(set(_powers(max_accelerators)) | {p for p in range(1, max_accelerators + 1) if s.layers % p == 0})
    for tp in _powers(min(max_accelerators, system.domain)):
        for pp in stages:
            for dp in _powers(max_accelerators // (tp * pp)) if tp * pp <= max_accelerators else []:
                if tp > 1 and dp > 1:
                    continue
                for ep in _powers(tp * dp):
                    layout = Layout(tp, ep, pp, dp)
                    if problem(s, layout, system) is None:
                        out.append(layout)
    return out


def check(model: Model, layout: Layout, system: System) -> Layout:
    """`layout` if the model can run on it, else a one-line error."""
    reason = problem(shape(model), layout, system)
    if reason is not None:
        raise DeriveError(f"layout {layout} cannot run {model.name}: {reason}", "Choose another layout")
    return layout


def batch_cap(layouts: list[Layout], max_batch: int) -> list[int]:
    """The most sequences each layout's micro-batch may hold: `max_batch` on each of its attention ranks, which
    schedule their own requests (TensorRT-LLM's max_batch_size is an engine's, and each attention data-parallel rank
    runs one; aiconfigurator's batch is per rank too)."""
    return [max_batch * layout.dp for layout in layouts]
