"""`derive measure --quick`: real timings on this machine, judged by the library's counts."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    from click.testing import CliRunner

    import cli

    out = tmp_path_factory.mktemp("measure") / "m.json"
    result = CliRunner().invoke(
        cli.cli, ["measure", "--quick", "--out", str(out), "--figure", str(out.with_suffix(".svg"))], prog_name="derive"
    )
    assert result.exit_code == 0, result.stderr
    return json.loads(out.read_text()), result.stdout, out


def test_both_ceilings_are_measured(measured):
    payload, _, _ = measured
    names = [c["name"] for c in payload["ceilings"]]
    assert names == ["copy bandwidth", "float32 matmul"]
    assert all(c["value"] > 0 for c in payload["ceilings"])


def test_each_phase_is_placed_by_its_intensity_against_the_ridge(measured):
    # Which side of the ridge a phase falls on is judged by the numbers; on the full run (the recorded
    # reports/data/measured-machine.json) decode falls left and prefill right. Here, with quick and noisy
    # ceilings, only the placement rule and the library's intensities are held.
    payload, _, _ = measured
    ridge = payload["ceilings"][1]["value"] / payload["ceilings"][0]["value"]
    for phase in payload["phases"]:
        assert phase["bound"] == ("memory" if phase["intensity"] < ridge else "compute")
    decode, *_, prefill = payload["phases"]
    assert decode["intensity"] < 1 < prefill["intensity"]  # half an operation per byte against many


def test_bytes_come_from_the_library(measured):
    # Seed 000: the batch-1 decode step reads the fp32 weights plus a 128-token cache. For the quick model
    # (2 layers, 2,048-token vocabulary) the independent count is weights x 4 bytes + 2*L*d*128*4.
    payload, _, _ = measured
    d, layers, vocab, positions = 768, 2, 2048, 1024
    weights = vocab * d + positions * d + layers * (12 * d * d + 13 * d) + 2 * d
    decode = payload["phases"][0]
    assert decode["bytes"] == 4 * weights + 2 * layers * d * 128 * 4


def test_roofline_time_is_the_larger_of_the_two_ceilings(measured):
    # Deterministic in what it checks: timings themselves are left to `derive measure` (a --quick run's
    # tiny ceilings are too noisy on a loaded machine to hold a phase to).
    payload, _, _ = measured
    copy, matmul = (c["value"] for c in payload["ceilings"])
    for phase in payload["phases"]:
        assert phase["predicted_seconds"] == max(phase["bytes"] / copy, phase["flops"] / matmul)


def test_report_and_figure(measured):
    _, stdout, out = measured
    assert "Ceilings" in stdout and "prefill, 64 tokens" in stdout
    assert out.with_suffix(".svg").exists() and out.with_suffix(".png").exists()
