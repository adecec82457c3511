"""The two questions answered by experiment quote this machine: recorded for the committed sheets, live on request."""

from __future__ import annotations

from derive import answers
from reports.questions import shared as machine


def test_recorded_measurement_names_the_machine():
    recorded = machine.measurement(live=False)
    assert recorded["machine"]["cpu"] and recorded["machine"]["cores"]
    assert [c["name"] for c in recorded["ceilings"]] == ["copy bandwidth", "float32 matmul"]


def test_roofline_answer_quotes_the_recorded_phases():
    answer = answers.answer("roofline-decode-prefill")
    recorded = machine.measurement(live=False)
    assert answer.results["measured_copy_bandwidth"].value == recorded["ceilings"][0]["value"]
    titles = [s.title for s in answer.sections]
    assert "Measured on this machine" in titles
    # Seed 000: decode is shown bandwidth-bound and prefill compute-bound by the numbers themselves.
    phases = recorded["phases"]
    assert phases[0]["bound"] == "memory" and phases[-1]["bound"] == "compute"


def test_measure_reruns_live():
    # 'quick' is the small plan; `derive answer ... --measure` runs the full one.
    answer = answers.answer("roofline-decode-prefill", {"measure": "quick"})
    assert answer.results["measured_copy_bandwidth"].value != machine.measurement(live=False)["ceilings"][0]["value"]


def test_batching_answer_simulates_the_policies():
    answer = answers.answer("batching-strategy")
    r = answer.results
    # Seed 000, question 5: continuous batching beats static on throughput and on median time to first token.
    assert r["simulated_continuous_throughput"].value > r["simulated_static_throughput"].value
    assert r["simulated_continuous_ttft_p50"].value < r["simulated_static_ttft_p50"].value


def test_batching_answer_on_measured_steps():
    answer = answers.answer("batching-strategy", {"measured_steps": True})
    assert answer.results["simulated_continuous_throughput"].value > answer.results["simulated_static_throughput"].value
