"""The batching simulation: conservation, continuous batching's invariant, and the seed's result shape."""

from __future__ import annotations

import json

import pytest

from derive.simulate import POLICIES, StepTimes, simulate, workload

# A simple step-time model for the invariants (the CLI tests use the library's).
TIMES = StepTimes([0.0] + [0.006 + 0.0004 * b for b in range(1, 9)], [0.0] + [0.02 * k for k in range(1, 9)])


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("rate", [None, 5.0, 40.0])
def test_every_request_finishes_and_tokens_add_up(policy, rate):
    requests = workload(300, 8, 256, seed=1, rate=rate)
    out = simulate(policy, requests, TIMES, seats=8)
    assert out.tokens == sum(r.reply for r in requests)
    assert all(lat > 0 for lat in out.latency)
    assert all(0 < ttft <= lat for ttft, lat in zip(out.first_token, out.latency, strict=False))


@pytest.mark.parametrize("rate", [None, 2.0, 5.0, 40.0])
def test_continuous_never_leaves_a_seat_idle_while_requests_wait(rate):
    out = simulate("continuous", workload(500, 8, 256, seed=2, rate=rate), TIMES, seats=8)
    assert out.idle_seat_steps_while_waiting == 0


def test_runs_are_reproducible_with_a_seed():
    a = simulate("continuous", workload(200, 8, 256, seed=7, rate=10.0), TIMES, 8)
    b = simulate("continuous", workload(200, 8, 256, seed=7, rate=10.0), TIMES, 8)
    assert a.summary() == b.summary()


def test_ten_thousand_requests_run():
    out = simulate("continuous", workload(10_000, 8, 256, seed=0, rate=40.0), TIMES, 8)
    assert out.tokens == sum(r.reply for r in workload(10_000, 8, 256, seed=0, rate=40.0))


def test_seed_result_shape_continuous_beats_static(run):
    # Seed 000, question 5: continuous batching gave more tokens/s and a far shorter median first token
    # than static batches (343 against 299 tokens/s; 22 ms against 5.3 s on the seed's machine).
    result = run("simulate", "batching", "--model", "llama3-8b", "--json")
    assert result.exit_code == 0, result.stderr
    r = json.loads(result.stdout)["results"]
    assert r["continuous_throughput"]["value"] > r["static_throughput"]["value"]
    assert r["continuous_ttft_p50"]["value"] < r["static_ttft_p50"]["value"]
    assert r["static_ttft_p50"]["unit"] == "second"


def test_bad_reply_range_is_one_line(run):
    result = run("simulate", "batching", "--model", "gpt2", "--replies", "9:3")
    assert result.exit_code == 2
    assert result.stderr == (
        "derive: error: --replies '9:3' is not MIN:MAX, whole numbers with 1 <= MIN <= MAX. For example --replies "
        "8:256\n"
    )
