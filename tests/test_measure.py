"""`derive measure --quick`: real timings on this machine, judged by the library's counts."""

from __future__ import annotations

import json

import pytest
import sympy


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    from click.testing import CliRunner

    import cli

    out = tmp_path_factory.mktemp("measure") / "m.json"
    result = CliRunner().invoke(
        cli.cli, ["measure", "--quick", "--out", str(out), "--figure", str(out.with_suffix(".svg"))], prog_name="derive"
    )
    assert result.exit_code == 0, result.stderr
    from derive import measurement as measure

    # The file keeps the measurements alone; what they imply is derived again from the library when it is read.
    return measure.recompute(json.loads(out.read_text())), result.stdout, out


def test_a_result_file_holds_only_measurements(measured):
    """Issue 28: committed data hold measured facts; bytes, FLOPs and fractions are derived on load (the recorded
    file once kept a doubled prefill count, 508.7 GFLOP and 50.66%, after the library had corrected it)."""
    from derive.measurement import MEASURED
    from reports.questions.shared import RECORDED

    _, _, out = measured
    for data in (json.loads(out.read_text()), json.loads(RECORDED.read_text())):
        assert all(set(phase) == set(MEASURED) for phase in data["phases"])


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


def test_prefill_flops_are_the_formulas_own_not_a_doubled_numerator():
    # Issue 15: 2·N_mm per token and attention of 4·layers·d FLOPs per token of context, causal: half the prompt on
    # average; the head (2·V·d a token) scores the last token alone, as the measured forward pass does.
    from derive import measurement as measure
    from derive.core.evaluation import evaluate
    from derive.derivations.common import model_library
    from formulas import notation as sym

    model = measure.measured_model({})
    n_mm = evaluate(sym.N_mm.symbol, dict(model.formulas.shapes), model_library(model))
    cfg = model.config
    _, flops = measure._library_costs(model, 1, 960, "prefill")
    head = 2 * cfg.vocab * cfg.hidden
    assert flops == 960 * (2 * n_mm - head + sympy.Rational(960 * 4 * cfg.layers * cfg.hidden, 2)) + head


def test_a_recorded_result_is_derived_again_from_the_library():
    from reports.questions.shared import RECORDED, measurement

    recorded, derived = json.loads(RECORDED.read_text()), measurement(False)
    assert [p["seconds"] for p in derived["phases"]] == [p["seconds"] for p in recorded["phases"]]
    prefill = derived["phases"][-1]
    assert prefill["flops_fraction"] == pytest.approx(
        prefill["flops"] / prefill["seconds"] / derived["ceilings"][1]["value"]
    )


def test_a_fraction_past_its_ceiling_is_not_reported_as_achieved():
    from derive import measurement as measure

    assert measure.fraction_text(0.69, "copy") == "at 69% of the copy ceiling"
    assert "cannot be" in measure.fraction_text(7.08, "matmul")
