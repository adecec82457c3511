"""`derive simulate batching`: the three batching policies on the library's step-time model."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.core.errors import DeriveError
from derive.core.evaluation import over
from derive.core.sheet import Sheet
from derive.core.units import counted, format_quantity
from derive.derivations.common import (
    Setup,
    accelerator,
    decode_inputs,
    held_per_accelerator,
    more_than,
    parallelism,
    start,
)
from derive.simulate import POLICIES, Outcome, StepTimes, simulate, workload
from formulas import notation as sym
from formulas import prefill as pf


@dataclass(frozen=True)
class Traffic:
    requests: int = 200
    seats: int = 8
    shortest: int = 8
    longest: int = 256
    rate: float | None = None  # requests per second; None: chosen from `load`
    load: float = 0.8  # offered load as a fraction of what continuous batching can serve
    all_at_once: bool = False
    max_wait: float = 0.05  # seconds, for the dynamic policy
    seed: int = 0


def step_times(setup: Setup, traffic: Traffic) -> tuple[Sheet, StepTimes]:
    """Decode and prefill durations for 1..seats sequences, from the roofline at the mean context."""
    work = start("simulate batching", f"Batching policies for {setup.model.title}", setup)
    decode_inputs(work, setup)
    gpu = accelerator(work, setup)
    mean_reply = sympy.Rational(traffic.shortest + traffic.longest, 2)
    # Decode steps see the prompt plus, on average, half the reply.
    work.values[sym.S] = sympy.Integer(setup.prompt) + mean_reply / 2
    work.values.pop(sym.kv_seq)
    work.compute(work.library.get("kv_bytes_per_sequence"))
    n = parallelism(work, setup, gpu, shorter="a shorter --prompt or --replies")
    # Every seat may hold a prompt and its longest reply: they must fit beside the weights.
    needed = held_per_accelerator(work.values, work.library, traffic.seats, setup.prompt + traffic.longest)
    if needed > gpu.memory:
        shown, held = more_than(needed, gpu.memory)
        raise DeriveError(
            f"{counted(traffic.seats, 'seat')} of {setup.prompt:,}-token prompts and replies up to "
            f"{traffic.longest:,} tokens need{'s' if traffic.seats == 1 else ''} {shown} of each of {n} x {gpu.name} "
            f"with the weights, more than its {held}",
            "Use a smaller --batch, shorter --replies or a larger --tp",
        )
    work.given(pf.S_p, setup.prompt, "--prompt")
    for eta in (pf.eta_bw, pf.eta_f):
        work.given(eta, 1, "a floor")
    work.given(
        sym.B,
        traffic.seats,
        "--batch: the most requests decoded at once; the step times below are tabulated for 1 to this many",
    )
    for name in (
        "kv_bytes",
        "memory_time",
        "compute_time",
        "step_time",
        "prefill_memory_time",
        "prefill_compute_time",
        "ttft_floor",
    ):
        work.compute(work.library.get(name))
    decode = over(sym.t_step.symbol, sym.B, work.values, work.library)
    prefill = over(pf.ttft.symbol, sym.B, work.values, work.library)
    table = StepTimes(
        [0.0] + [float(decode(b)) for b in range(1, traffic.seats + 1)],
        [0.0] + [float(prefill(b)) for b in range(1, traffic.seats + 1)],
    )
    return work.sheet, table


def measured_step_times(measurement: dict, traffic: Traffic, prompt: int) -> StepTimes:  # type: ignore[type-arg]
    """Step times from a `derive measure` result: decode linear in the batch between the two measured batches,
    prefill linear in prompt tokens from the measured prefill (both stated as assumptions in the notes)."""
    decodes = sorted((p["batch"], p["seconds"]) for p in measurement["phases"] if p["name"].startswith("decode"))
    (b1, t1), (b2, t2) = decodes[0], decodes[-1]
    slope = (t2 - t1) / (b2 - b1)
    prefill = next(p for p in measurement["phases"] if p["name"].startswith("prefill"))
    per_token = prefill["seconds"] / prefill["tokens"]
    return StepTimes(
        [0.0] + [t1 + slope * (b - b1) for b in range(1, traffic.seats + 1)],
        [0.0] + [per_token * prompt * k for k in range(1, traffic.seats + 1)],
    )


def offered_rate(traffic: Traffic, times: StepTimes) -> float:
    """Requests per second at `load` times what full seats of continuous batching serve."""
    mean_reply = (traffic.shortest + traffic.longest) / 2
    per_request = mean_reply * times.decode[traffic.seats] / traffic.seats + times.prefill[1]
    return traffic.load / per_request


def expected_longest(traffic: Traffic) -> float:
    """E[max] of `seats` replies drawn uniformly from shortest..longest: what a padded batch runs for."""
    a, b, n = traffic.shortest, traffic.longest, traffic.seats
    span = b - a + 1
    return b - sum(((k - a + 1) / span) ** n for k in range(a, b))


def capacities(traffic: Traffic, times: StepTimes) -> dict[str, float]:
    """Requests a second each policy can serve with every seat busy: a padded batch, or refilled seats."""
    mean_reply = (traffic.shortest + traffic.longest) / 2
    padded = expected_longest(traffic) * times.decode[traffic.seats] + times.prefill[traffic.seats]
    refilled = mean_reply * times.decode[traffic.seats] / traffic.seats + times.prefill[1]
    return {"static": traffic.seats / padded, "continuous": 1 / refilled}


def batching(setup: Setup, traffic: Traffic, measurement: dict | None = None) -> tuple[Sheet, dict[str, Outcome]]:  # type: ignore[type-arg]
    """Simulate the three policies; step times from the roofline, or from a recorded `derive measure` run."""
    sheet, times = step_times(setup, traffic)
    if measurement is not None:
        times = measured_step_times(measurement, traffic, setup.prompt)
        machine = measurement["machine"]
        sheet.notes.append(
            f"step times measured on {machine['cpu']} ({machine['cores']} cores) for {measurement['plan']['model']}: "
            "decode taken as linear in the batch between the measured batches, prefill as linear in prompt tokens; "
            "the roofline above is shown for comparison"
        )
        sheet.inputs["step_times"] = f"measured on {machine['cpu']}"
    rate = None if traffic.all_at_once else (traffic.rate or offered_rate(traffic, times))
    requests = workload(traffic.requests, traffic.shortest, traffic.longest, traffic.seed, rate)
    outcomes = {
        p: simulate(p, requests, times, traffic.seats, traffic.max_wait, record_timeline=True) for p in POLICIES
    }
    sheet.inputs.update(
        {
            "requests": traffic.requests,
            "seats": traffic.seats,
            "replies": [traffic.shortest, traffic.longest],
            "arrivals": "all at once" if rate is None else f"poisson {rate:.4g}/s",
            "seed": traffic.seed,
            "max_wait_s": traffic.max_wait,
        }
    )
    if rate is not None:
        sheet.results["offered_rate"] = _result("offered_rate", rate, "sequence/second")
    for policy, capacity in capacities(traffic, times).items():
        sheet.results[f"{policy}_capacity"] = _result(f"{policy}_capacity", capacity, "sequence/second")
    for policy, outcome in outcomes.items():
        summary = outcome.summary()
        sheet.results[f"{policy}_throughput"] = _result(f"{policy}_throughput", summary["throughput"], "token/second")
        for key in ("ttft_p50", "ttft_p99", "latency_p50"):
            sheet.results[f"{policy}_{key}"] = _result(f"{policy}_{key}", summary[key], "second")
    sheet.notes.append(
        f"{traffic.requests} requests, replies uniform from {traffic.shortest} to {traffic.longest} tokens, "
        f"{traffic.seats} seats, arrivals "
        + (
            "all at once"
            if rate is None
            else f"Poisson at {rate:.3g} per second"
            + ("" if traffic.rate else f" ({traffic.load:.0%} of continuous capacity)")
        )
        + f", seed {traffic.seed}"
    )
    sheet.notes.append(
        ("step times measured (above)" if measurement is not None else "step times from the roofline above (a floor)")
        + "; static and dynamic batches are padded until their longest reply ends, continuous batching refills a "
        "seat at the next step"
    )
    best = max(outcomes.values(), key=lambda o: o.throughput)
    sheet.notes.append(
        f"highest throughput: {best.policy} ({format_quantity(sympy.Float(best.throughput), 'token/second')})"
    )
    return sheet, outcomes


def _result(name: str, value: float, unit: str):  # type: ignore[no-untyped-def]
    from derive.core.sheet import Result

    return Result(name, unit, sympy.Float(value, 6))
