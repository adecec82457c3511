"""`derive energy`: joules per token against an independent roofline, at batch 1, B and B_max."""

from __future__ import annotations

from fractions import Fraction

import pytest

from derive.catalog import load_gpu, load_model
from derive.core.errors import DeriveError, FitError
from derive.derivations.common import Setup
from derive.derivations.energy import energy
from formulas import notation as sym

RESULT_NAMES = {
    "joules_per_token",
    "joules_per_token_calibrated",
    "joules_per_token_batch1",
    "joules_per_token_max_batch",
    "batch1_over_max_batch",
}


def _independent(model_name: str, gpu_name: str, tp: int, context: int):
    """Step time and energy per token from the config and datasheet alone (bf16 weights and cache)."""
    model, gpu = load_model(model_name), load_gpu(gpu_name)
    cfg = model.config
    weights = 2 * Fraction(model.published_total)  # published parameter count x 2 bytes
    kv_per_sequence = context * 2 * cfg.layers * cfg.kv_heads * cfg.head_dim * 2  # K and V, bf16
    # Untied Llama: every parameter but the embedding and the norms is multiplied through (the head included).
    matmul = model.published_total - cfg.vocab * cfg.hidden - (2 * cfg.layers + 1) * cfg.hidden
    flops_per_token = 2 * matmul + context * 4 * cfg.layers * cfg.heads * cfg.head_dim
    bandwidth, peak, power = (Fraction(str(x)) for x in (gpu.bandwidth, gpu.flops["bf16"], gpu.power))

    def joules_per_token(batch: int) -> Fraction:
        # A step reads every matrix but gathers only its tokens' rows of the embedding table.
        read = weights - 2 * (cfg.vocab - batch) * cfg.hidden
        memory_time = (read + batch * kv_per_sequence) / (tp * bandwidth)
        compute_time = batch * flops_per_token / (tp * peak)
        return power * tp * max(memory_time, compute_time) / batch

    max_batch = int((tp * Fraction(str(gpu.memory)) - weights) // kv_per_sequence)
    return joules_per_token, max_batch


def _sheet(batch: int, tp: int = 2, context: int = 2048):
    return energy(Setup(load_model("llama3-70b"), load_gpu("h100"), batch=batch, tp=tp, context=context))


@pytest.mark.parametrize("batch, tp", [(1, 2), (8, 2), (16, 8)])
def test_joules_per_token_is_power_times_step_time_over_tokens(batch, tp):
    sheet = _sheet(batch, tp)
    assert set(sheet.results) == RESULT_NAMES
    joules_per_token, max_batch = _independent("llama3-70b", "h100", tp, 2048)
    assert Fraction(str(sheet.results["joules_per_token"].value)) == joules_per_token(batch)
    assert Fraction(str(sheet.results["joules_per_token_batch1"].value)) == joules_per_token(1)
    assert Fraction(str(sheet.results["joules_per_token_max_batch"].value)) == joules_per_token(max_batch)


def test_batch_one_costs_far_more_per_token_than_a_full_batch():
    # 70B on two H100s at 2,048 tokens: memory holds 28 sequences, each step still bandwidth-bound.
    sheet = _sheet(1)
    ratio = sheet.results["batch1_over_max_batch"].value
    assert ratio > 10
    assert ratio == sheet.results["joules_per_token_batch1"].value / sheet.results["joules_per_token_max_batch"].value
    assert any("denominator" in note for note in sheet.notes)
    # Wider TP frees memory for the cache: the full batch grows and its tokens get cheaper still.
    assert _sheet(1, tp=8).results["batch1_over_max_batch"].value > ratio


def test_energy_needs_a_gpu_and_a_batch_that_fits():
    with pytest.raises(DeriveError, match="needs an accelerator"):
        energy(Setup(load_model("llama3-70b")))
    _, max_batch = _independent("llama3-70b", "h100", 2, 2048)
    with pytest.raises(FitError, match="does not fit"):
        _sheet(max_batch + 1)


def test_a_mixture_of_experts_notes_the_experts_it_skips():
    # At batch 1 Mixtral reads its 2 of 8 experts, not all the weights the roofline counts.
    sheet = energy(Setup(load_model("mixtral-8x7b"), load_gpu("h100"), batch=1))
    assert any("derive experts" in note for note in sheet.notes)


def test_the_calibrated_figure_stands_beside_the_floor_at_predicts_step():
    """Power and tokens are the floor's; the step is derive predict's calibrated TPOT at the same batch and context,
    so the two figures stand in the ratio of the two steps, the estimate above the floor."""
    import derive

    sheet = _sheet(16, tp=2)
    floor, estimate = (sheet.results[n].value for n in ("joules_per_token", "joules_per_token_calibrated"))
    tpot = derive.predict("llama3-70b", "h100", tp=2, batch=16, prompt=2047, output=2).results["tpot"]
    step = sheet.values[sym.t_step]
    assert float(estimate / floor) == pytest.approx(float(tpot.to("second").magnitude) / float(step), rel=1e-9)
    assert estimate > floor
