"""Disaggregated serving in `derive plan`: the best prefill pool and decode pool on one accelerator, balanced.

Every layout of a search (derive/planning.py's LayoutTable) is a candidate for either pool. A prefill worker
runs one prompt a pass on each attention rank (as aiconfigurator configures TensorRT-LLM's context servers) and
takes Q_p requests a second within the TTFT target, the handover of each request's cache taken out of it; a
decode worker takes Q_d, its step alone within the TPOT target at the largest batch that step and memory allow
(formulas/disaggregated.py). Every (prefill, decode) pair is rated in closed form, S_o/(N_p/Q_p + N_d/Q_d)
tokens a second per accelerator, or by the whole workers a rate needs where one is asked; the best pair is set
beside the aggregated pick, with why one wins.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from derive.batch_roots import largest_batch
from derive.core.units import counted
from derive.layouts import Layout, batch_cap
from derive.systems import Price, System


@dataclass
class LayoutTable:
    """Every layout of a search, one entry of each array a layout: what a pool of workers is built from."""

    layouts: list[Layout]
    base: list[np.ndarray]  # layout_inputs
    by_memory: np.ndarray  # the largest micro-batch whose cache fits beside the weights
    pass_alone: np.ndarray  # one request's prompt pass (TTFT_L)
    per_prompt: np.ndarray  # what one more prompt adds to a pass (t_rq)
    pass_every_rank: np.ndarray  # a pass of one prompt on each attention rank at once: a prefill worker's


class Asked(Protocol):
    """What a plan asks (derive/planning.py's Targets)."""

    @property
    def ttft(self) -> Any: ...
    @property
    def tpot(self) -> Any: ...
    @property
    def rate(self) -> Any: ...
    @property
    def output(self) -> int: ...


class Option(Protocol):
    """A deployment as `pick` ranks it (derive/planning.py's Row, or a Disaggregated)."""

    gpu: str
    per_accelerator: float
    for_rate: int | None  # accelerators whole copies (or workers) need for --rate
    cost_per_million: float | None
    fleet_cost_per_million: float | None


class Copy(Option, Protocol):
    """An aggregated copy (derive/planning.py's Row)."""

    batch: int


@dataclass
class Disaggregated:
    """The best pair of pools on one accelerator, at balance."""

    gpu: str
    prefill: Layout
    decode: Layout
    prefill_capacity: float  # Q_p, requests a second one prefill worker takes
    decode_batch: int  # one micro-batch of the decode worker
    decode_sequences: int
    decode_step: float  # seconds: what a user sees between tokens
    decode_capacity: float  # Q_d
    handover: float  # t_kv, seconds
    handover_bytes: float  # K_h, the larger of one prefill and one decode accelerator's share of a request's cache
    handover_link: str  # the domain's fabric ("NVLink") or "the network"
    ttft: float  # mean at the prefill workers' load
    prefill_workers_per_decode_worker: float  # r_pd
    prefill_share: float  # f_p: prefill accelerators per decode accelerator
    decode_pool_throughput: float  # R_dp, tokens a second per decode accelerator
    per_accelerator: float  # R_dis
    per_user: float
    workers_for_rate: tuple[int, int] | None  # whole prefill and decode workers for --rate
    for_rate: int | None
    cost_per_million: float | None
    fleet_cost_per_million: float | None

    def as_dict(self) -> dict[str, Any]:
        def layout(lt: Layout) -> dict[str, int]:
            return {"tp": lt.tp, "ep": lt.ep, "pp": lt.pp, "dp": lt.dp, "accelerators": lt.accelerators}

        return {
            "gpu": self.gpu,
            "prefill_worker": layout(self.prefill),
            "decode_worker": layout(self.decode),
            "prefill_worker_requests_per_s": self.prefill_capacity,
            "decode_micro_batch": self.decode_batch,
            "decode_sequences": self.decode_sequences,
            "decode_step_s": self.decode_step,
            "decode_worker_requests_per_s": self.decode_capacity,
            "kv_handover_s": self.handover,
            "kv_handover_bytes_per_accelerator": self.handover_bytes,
            "kv_handover_link": self.handover_link,
            "ttft_s": self.ttft,
            "prefill_workers_per_decode_worker": self.prefill_workers_per_decode_worker,
            "prefill_accelerators_per_decode_accelerator": self.prefill_share,
            "decode_pool_tokens_per_s_per_accelerator": self.decode_pool_throughput,
            "tokens_per_s_per_accelerator": self.per_accelerator,
            "tokens_per_s_per_user": self.per_user,
            "workers_for_rate": None
            if self.workers_for_rate is None
            else {"prefill": self.workers_for_rate[0], "decode": self.workers_for_rate[1]},
            "accelerators_for_rate": self.for_rate,
            "usd_per_million_tokens": self.cost_per_million,
            "fleet_usd_per_million_tokens": self.fleet_cost_per_million,
        }

    def describe(self) -> str:
        rate = ""
        if self.workers_for_rate is not None and self.for_rate is not None:
            p, d = self.workers_for_rate
            workers = f"{p:,} prefill and {counted(d, 'decode worker')}"
            rate = f"; the rate takes {workers}, {counted(self.for_rate, self.gpu)}"
        return (
            f"prefill on {self.prefill} ({self.prefill_capacity:,.2f} requests/s a worker), decode on {self.decode} "
            f"(micro-batch {self.decode_batch:,}, step {self.decode_step * 1e3:.1f} ms, "
            f"{self.decode_capacity:,.2f} requests/s a worker), {self.prefill_workers_per_decode_worker:.2f} prefill "
            f"workers a decode worker; each request's cache crosses in {self.handover * 1e3:.2f} ms over "
            f"{self.handover_link}; {self.per_accelerator:,.0f} tokens/s per accelerator, TTFT "
            f"{self.ttft * 1e3:,.0f} ms{rate}"
        )


@functools.cache
def _served() -> tuple[float, float, float, float]:
    """formulas/disaggregated.py's kappa_p, kappa_d, u_p and u_d: what serving costs the calibrated pools."""
    from formulas import disaggregated as dis

    kappa_p, kappa_d, u_p, u_d = (float(dis.SERVED[s]) for s in (dis.kappa_p, dis.kappa_d, dis.u_p, dis.u_d))
    return kappa_p, kappa_d, u_p, u_d


def _formulas() -> dict[str, Callable[..., Any]]:
    """formulas/disaggregated.py as numpy functions of the pools' figures."""
    import sympy

    import formulas
    from derive.core.evaluation import evaluate
    from formulas import disaggregated as dis
    from formulas import layout as lay
    from formulas import notation as sym
    from formulas import queueing as qu

    library = formulas.library()
    served = (dis.kappa_p, dis.kappa_d, dis.u_p, dis.u_d)  # arguments: the floor sets them to 1
    # A prefill worker's prompt is served by a whole pass (formulas/disaggregated.py): its forms take no t_rq.
    capacity_of = (lay.ttft_c, lay.dp, qu.T_max, dis.t_kv, *served)
    ttft_of = (qu.lam_c, lay.ttft_c, lay.dp, dis.t_kv, *served)
    pools = (dis.Q_p, dis.Q_d, dis.N_p, dis.N_d, sym.S_o)

    def numeric(quantity: Any, inputs: tuple[Any, ...]) -> Callable[..., Any]:
        own = {s: s.symbol for s in inputs}
        return sympy.lambdify([s.symbol for s in inputs], evaluate(quantity.symbol, dict(own), library), "numpy")

    return {
        "handover": numeric(dis.t_kv, (dis.K_h, dis.BW_x)),
        "decode step": numeric(dis.t_dw, (lay.t_tok, *served)),
        "decode capacity": numeric(dis.Q_d, (lay.B_L, sym.tau, sym.S_o, lay.t_tok, *served)),
        "prefill capacity": numeric(dis.Q_p, capacity_of),
        "ttft": numeric(dis.ttft_d, ttft_of),
        "ratio": numeric(dis.r_pd, (dis.Q_p, dis.Q_d)),
        "share": numeric(dis.f_p, (dis.Q_p, dis.Q_d, dis.N_p, dis.N_d)),
        "decode pool": numeric(dis.R_dp, (dis.Q_d, dis.N_d, sym.S_o)),
        "throughput": numeric(dis.R_dis, pools),
    }


def disaggregate(
    table: LayoutTable | None,
    compiled: Any,
    system: System,
    gpu: str,
    targets: Asked,
    price: Price | None,
    max_batch: int,
    max_accelerators: int | None = None,
    floor: bool = False,
) -> Disaggregated | None:
    """The best prefill and decode pools of one accelerator's layouts (`compiled`: derive/planning.py's Compiled for
    them), or None where no pair meets the targets; a pair (one worker of each) uses at most `max_accelerators`.
    `floor`: `compiled` is the roofline's, and the pools are served with no overhead (formulas/disaggregated.py's
    kappa and u at 1)."""
    if table is None or compiled is None or not table.layouts:
        return None
    at = _formulas()
    served = (1.0, 1.0, 1.0, 1.0) if floor else _served()
    kappa_d = served[1]
    layouts = table.layouts
    size = len(layouts)
    accelerators = np.array([lt.accelerators for lt in layouts], dtype=float)
    dp = np.array([lt.dp for lt in layouts], dtype=float)
    pp = np.array([lt.pp for lt in layouts], dtype=float)
    inputs = [*table.base, table.per_prompt]

    # Decode workers: the step alone, as served, within the TPOT target, as many sequences as memory holds.
    bound = np.minimum(table.by_memory, np.array(batch_cap(layouts, max_batch), dtype=float))
    one_row = (compiled.step, compiled.one_row)
    by_step = np.floor(
        largest_batch(compiled.step_branches, inputs, float(targets.tpot) / kappa_d, one_row, bound) + 1e-9
    )
    batch = np.minimum(by_step, bound)
    decodes = np.flatnonzero((batch >= 1) & (table.by_memory >= 1))
    if not len(decodes):
        return None
    safe = np.maximum(batch, 1.0)
    alone = np.broadcast_to(np.asarray(compiled.step(*inputs, safe), float), (size,))
    step = at["decode step"](alone, *served)
    capacity_d = at["decode capacity"](safe * pp, 1.0, targets.output, alone, *served)  # tau = 1 token a step
    handover_bytes = np.broadcast_to(np.asarray(compiled.handover(*inputs, 1.0), float), (size,))

    # Prefill workers: those that hold the weights and one prompt's cache. Every pair, vectorised: rows prefill,
    # columns decode.
    prefills = np.flatnonzero(table.by_memory >= 1)
    if not len(prefills):
        return None
    pair_size = accelerators[prefills][:, None] + accelerators[decodes][None, :]
    nvlink = pair_size <= system.domain
    link = np.where(nvlink, float(system.nvlink), float(system.network))
    # Each prefill accelerator sends its shard of the cache and each decode accelerator receives its own, all at once:
    # the side with the larger share (fewer stages or KV shards) sets the handover's time.
    shares = np.maximum(handover_bytes[prefills][:, None], handover_bytes[decodes][None, :])
    handover = at["handover"](shares, link)
    with np.errstate(divide="ignore", invalid="ignore"):
        capacity_p = at["prefill capacity"](
            table.pass_every_rank[prefills][:, None],
            dp[prefills][:, None],
            float(targets.ttft),
            handover,
            *served,
        )
        slack = float(targets.ttft) - served[0] * table.pass_every_rank[prefills][:, None] - handover
        capacity_p = np.where(slack > 0, capacity_p, np.nan)
        rated = at["throughput"](
            capacity_p,
            capacity_d[decodes][None, :],
            accelerators[prefills][:, None],
            accelerators[decodes][None, :],
            targets.output,
        )
    within = pair_size <= (max_accelerators if max_accelerators is not None else np.inf)
    rated = np.where(np.isfinite(rated) & (rated > 0) & within, rated, -np.inf)
    if not np.isfinite(rated).any():
        return None
    if targets.rate is not None:  # the fewest accelerators of whole workers for the rate, then the most tokens
        rate = float(targets.rate)
        with np.errstate(divide="ignore", invalid="ignore"):
            needed = (
                np.ceil(rate / capacity_p) * accelerators[prefills][:, None]
                + np.ceil(rate / capacity_d[decodes][None, :]) * accelerators[decodes][None, :]
            )
        needed = np.where(np.isfinite(rated), needed, np.inf)
        order = np.lexsort((-rated.ravel(), needed.ravel()))
        i, j = np.unravel_index(order[0], rated.shape)
    else:
        i, j = np.unravel_index(int(np.argmax(rated)), rated.shape)
    p, d = int(prefills[i]), int(decodes[j])
    q_p, q_d = float(capacity_p[i, j]), float(capacity_d[d])
    t_kv = float(handover[i, j])
    workers = None
    load = q_p  # busy at its capacity, or the rate over its whole workers
    if targets.rate is not None:
        workers = (math.ceil(float(targets.rate) / q_p), math.ceil(float(targets.rate) / q_d))
        load = float(targets.rate) / workers[0]
    per_accelerator = float(rated[i, j])
    for_rate = None if workers is None else workers[0] * layouts[p].accelerators + workers[1] * layouts[d].accelerators
    cost = fleet = None
    if price is not None:
        per_second = float(price.per_second)
        cost = per_second / per_accelerator * 1e6
        if for_rate is not None and targets.rate is not None:
            fleet = for_rate * per_second / (float(targets.rate) * targets.output) * 1e6
    return Disaggregated(
        gpu=gpu,
        prefill=layouts[p],
        decode=layouts[d],
        prefill_capacity=q_p,
        decode_batch=int(batch[d]),
        decode_sequences=int(batch[d] * layouts[d].pp),
        decode_step=float(step[d]),
        decode_capacity=q_d,
        handover=t_kv,
        handover_bytes=float(shares[i, j]),
        handover_link=system.fabric if nvlink[i, j] else "the network",
        ttft=float(at["ttft"](load, table.pass_every_rank[p], layouts[p].dp, t_kv, *served)),
        prefill_workers_per_decode_worker=float(at["ratio"](q_p, q_d)),
        prefill_share=float(at["share"](q_p, q_d, layouts[p].accelerators, layouts[d].accelerators)),
        decode_pool_throughput=float(at["decode pool"](q_d, layouts[d].accelerators, targets.output)),
        per_accelerator=per_accelerator,
        per_user=1 / float(step[d]),
        workers_for_rate=workers,
        for_rate=for_rate,
        cost_per_million=cost,
        fleet_cost_per_million=fleet,
    )


def decode_capacity(table: LayoutTable, compiled: Any, layout: Layout, batch: float, output: int) -> float:
    """Q_d of one decode worker of `layout` (one of `table`'s) holding `batch` sequences a micro-batch: requests a
    second it finishes as served (formulas/disaggregated.py), whatever its memory or a target allows."""
    at = _formulas()
    inputs = [*table.base, table.per_prompt]
    index = table.layouts.index(layout)
    steps = np.broadcast_to(np.asarray(compiled.step(*inputs, float(batch)), float), (len(table.layouts),))
    return float(np.ravel(at["decode capacity"](batch * layout.pp, 1.0, output, steps[index], *_served()))[0])


def fleet_key(cost: float) -> float:
    """A fleet's cost as plans compare it: two fleets of the same accelerators cost the same, whichever sum of
    floats priced them (round-off of 1e-16 must not pick a winner)."""
    return round(cost, 9)


def ranked(option: Option) -> tuple[float, float]:
    """The figure derive/planning.py's `pick` ranks by, lower first: the fleet's cost, a busy copy's, or tokens."""
    if option.fleet_cost_per_million is not None:
        return (fleet_key(option.fleet_cost_per_million), option.cost_per_million or 0.0)
    if option.cost_per_million is not None:
        return (option.cost_per_million, 0.0)
    return (-option.per_accelerator, 0.0)


def verdict(aggregated: Copy, split: Disaggregated) -> str:
    """Which mode wins and why, in closed form: R_dis/R_agg = (R_dp/R_agg)/(1 + f_p)."""
    gain = split.decode_pool_throughput / aggregated.per_accelerator
    ratio = split.per_accelerator / aggregated.per_accelerator
    winner = "disaggregated" if ranked(split) < ranked(aggregated) else "aggregated"
    said = (
        f"the decode pool alone makes {gain:.2f}x the aggregated pick's tokens/s per accelerator (its step "
        f"{split.decode_step * 1e3:.1f} ms with no prompt passes among its steps, micro-batch {split.decode_batch:,} "
        f"against {aggregated.batch:,}), and the prefill pool adds {split.prefill_share:.2f} accelerators per decode "
        f"accelerator: {gain:.2f}/{1 + split.prefill_share:.2f} = {ratio:.2f}x"
    )
    if aggregated.gpu != split.gpu:
        said += f" (on {split.gpu} against the aggregated pick's {aggregated.gpu})"
    fleets = split.fleet_cost_per_million, aggregated.fleet_cost_per_million
    if fleets[0] is not None and fleets[1] is not None:
        if fleet_key(fleets[0]) == fleet_key(fleets[1]) and split.cost_per_million and aggregated.cost_per_million:
            # Whole copies: both fleets may need the same accelerators for the rate; a busy copy's cost breaks the tie.
            said += (
                f"; as fleets for the rate they tie at {fleets[0]:.2f} USD per million tokens ({split.for_rate} and "
                f"{aggregated.for_rate} accelerators), so a busy copy's cost decides: "
                f"{split.cost_per_million:.2f} against {aggregated.cost_per_million:.2f}"
            )
        else:
            said += f"; as fleets for the rate, {fleets[0]:.2f} against {fleets[1]:.2f} USD per million tokens"
    return f"{winner} wins: {said}"
