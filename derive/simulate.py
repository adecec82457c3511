"""A discrete-event simulation of batching policies, driven by a step-time model.

Requests arrive (all at once, or as a Poisson process), each wanting a reply of
some length. A server with a fixed number of seats runs prefill passes and decode
steps whose durations come from the library's roofline (or from measured step
times). Policies:

- static: wait for a full batch of seats, run it until its longest reply ends;
- dynamic: the same, but start a partial batch once the oldest request has waited
  max_wait;
- continuous: iteration-level scheduling (Orca, OSDI 2022): before every step,
  finished requests leave and waiting ones take their seats.

Static and dynamic batches are padded: a finished sequence keeps its seat (and its
share of the step) until its batch ends, as request-level batching does.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

POLICIES = ("static", "dynamic", "continuous")


@dataclass(frozen=True)
class Request:
    arrival: float  # seconds
    reply: int  # tokens to generate


@dataclass(frozen=True)
class StepTimes:
    """Seconds for a decode step of b sequences and a prefill pass of k prompts (index 0 unused)."""

    decode: Sequence[float]
    prefill: Sequence[float]


@dataclass
class Outcome:
    policy: str
    first_token: list[float] = field(default_factory=list)  # seconds after arrival, per request
    latency: list[float] = field(default_factory=list)  # seconds after arrival, per request
    tokens: int = 0
    makespan: float = 0.0
    steps: int = 0
    idle_seat_steps_while_waiting: int = 0  # a decode step with a free seat and a request waiting
    timeline: list[tuple[float, int]] = field(default_factory=list)  # (time, busy seats) per step

    @property
    def throughput(self) -> float:
        return self.tokens / self.makespan if self.makespan else 0.0

    def summary(self) -> dict[str, float]:
        return {
            "throughput": self.throughput,
            "ttft_p50": statistics.median(self.first_token),
            "ttft_p99": _percentile(self.first_token, 99),
            "latency_p50": statistics.median(self.latency),
        }


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    rank = max(0, math.ceil(pct / 100 * len(ordered)) - 1)
    return ordered[rank]


def workload(count: int, shortest: int, longest: int, seed: int, rate: float | None) -> list[Request]:
    """Replies uniform in [shortest, longest] tokens; arrivals at 0, or Poisson at `rate` per second."""
    rng = random.Random(seed)
    now, requests = 0.0, []
    for _ in range(count):
        if rate:
            now += rng.expovariate(rate)
        requests.append(Request(now, rng.randint(shortest, longest)))
    return requests


def simulate(
    policy: str,
    requests: Sequence[Request],
    times: StepTimes,
    seats: int,
    max_wait: float = 0.05,
    record_timeline: bool = False,
) -> Outcome:
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}")
    if policy == "continuous":
        return _continuous(requests, times, seats, record_timeline)
    return _batched(requests, times, seats, max_wait if policy == "dynamic" else math.inf, policy, record_timeline)


def _batched(
    requests: Sequence[Request], times: StepTimes, seats: int, max_wait: float, policy: str, record: bool
) -> Outcome:
    out = Outcome(policy, [0.0] * len(requests), [0.0] * len(requests))
    now, nxt = 0.0, 0  # nxt: the first request not yet in a batch
    while nxt < len(requests):
        full_at = requests[min(nxt + seats, len(requests)) - 1].arrival  # when a full batch (or the rest) is here
        start = max(now, full_at if max_wait == math.inf else min(full_at, max(now, requests[nxt].arrival) + max_wait))
        batch = [i for i in range(nxt, min(nxt + seats, len(requests))) if requests[i].arrival <= start]
        nxt += len(batch)
        b = len(batch)
        now = start + times.prefill[b]
        for i in batch:
            out.first_token[i] = now - requests[i].arrival
        longest = max(requests[i].reply for i in batch)
        for step in range(1, longest):  # the prefill pass gave each request its first token
            now += times.decode[b]
            out.steps += 1
            if record:
                out.timeline.append((now, sum(1 for i in batch if requests[i].reply > step)))
            for i in batch:
                if requests[i].reply == step + 1:
                    out.latency[i] = now - requests[i].arrival
        for i in batch:
            if requests[i].reply == 1:
                out.latency[i] = out.first_token[i]
        out.tokens += sum(requests[i].reply for i in batch)
    out.makespan = now - requests[0].arrival
    return out


def _continuous(requests: Sequence[Request], times: StepTimes, seats: int, record: bool) -> Outcome:
    out = Outcome("continuous", [0.0] * len(requests), [0.0] * len(requests))
    remaining: dict[int, int] = {}  # seated request -> tokens still to generate
    now, nxt = 0.0, 0
    while nxt < len(requests) or remaining:
        if not remaining and requests[nxt].arrival > now:
            now = requests[nxt].arrival  # idle server: jump to the next arrival
        while True:  # seat arrivals, including those that came during the last prefill pass
            admitted: list[int] = []
            while nxt < len(requests) and len(remaining) + len(admitted) < seats and requests[nxt].arrival <= now:
                admitted.append(nxt)
                nxt += 1
            if not admitted:
                break
            now += times.prefill[len(admitted)]  # one prefill pass gives each newcomer its first token
            for i in admitted:
                out.first_token[i] = now - requests[i].arrival
                if requests[i].reply == 1:
                    out.latency[i] = now - requests[i].arrival
                else:
                    remaining[i] = requests[i].reply - 1
            out.tokens += len(admitted)
        if not remaining:
            continue
        waiting = nxt < len(requests) and requests[nxt].arrival <= now
        if waiting and len(remaining) < seats:
            out.idle_seat_steps_while_waiting += 1
        now += times.decode[len(remaining)]
        out.steps += 1
        out.tokens += len(remaining)
        if record:
            out.timeline.append((now, len(remaining)))
        for i in list(remaining):
            remaining[i] -= 1
            if remaining[i] == 0:
                del remaining[i]
                out.latency[i] = now - requests[i].arrival
    out.makespan = now - requests[0].arrival
    return out
