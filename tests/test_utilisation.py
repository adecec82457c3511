"""`derive utilisation`: MBU, MFU and HFU against the roofline's own floors."""

from __future__ import annotations

import pytest
import sympy

from derive.catalog import load_gpu, load_model
from derive.core.errors import DeriveError
from derive.derivations.common import Setup
from derive.derivations.utilisation import utilisation
from formulas import notation as sym

SETUP = Setup(load_model("llama3-70b"), load_gpu("h100"), batch=8, tp=2, context=2048)


def _memory_time() -> sympy.Expr:
    """(weights read + the batch's KV) / (n x bandwidth), from the config and datasheet (bf16 weights and cache).

    A step reads every matrix but gathers only its B rows of the untied embedding table."""
    model, gpu, cfg = SETUP.model, SETUP.gpu, SETUP.model.config
    weights = 2 * (model.published_total - (cfg.vocab - SETUP.batch) * cfg.hidden)  # published count x 2 bytes
    kv = SETUP.batch * SETUP.context * 2 * cfg.layers * cfg.kv_heads * cfg.head_dim * 2
    return sympy.Integer(weights + kv) / (SETUP.tp * gpu.bandwidth)


def test_measured_time_at_the_bandwidth_floor_is_full_mbu():
    floor = _memory_time()
    sheet = utilisation(SETUP, floor)
    assert sheet.values[sym.t_comp] < floor  # a bandwidth-bound point
    assert sheet.results["mbu"].value == 1
    assert sheet.results["unexplained_time"].value == 0


def test_twice_the_time_is_half_the_mbu():
    assert utilisation(SETUP, 2 * _memory_time()).results["mbu"].value == sympy.Rational(1, 2)


def test_sixty_percent_of_the_floor_leaves_forty_percent_unexplained():
    measured = _memory_time() / sympy.Rational(3, 5)
    sheet = utilisation(SETUP, measured)
    assert sheet.results["mbu"].value == sympy.Rational(3, 5)
    assert sheet.results["unexplained_time"].value == measured * sympy.Rational(2, 5)
    assert any("all-reduce" in note for note in sheet.notes)


def test_mfu_is_compute_time_over_measured_time():
    measured = sympy.Rational(3, 100)
    sheet = utilisation(SETUP, measured)
    assert sheet.results["mfu"].value == sheet.values[sym.t_comp] / measured


def test_recomputation_raises_hfu_not_mfu():
    measured = sympy.Rational(3, 100)
    plain = utilisation(SETUP, measured)
    # Full activation checkpointing re-runs each forward pass once: 8N instead of 6N training FLOPs per token
    # (Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models'), f_rc = 1/3.
    checkpointed = utilisation(SETUP, measured, recompute_fraction=sympy.Rational(1, 3))
    assert plain.results["hfu"].value == plain.results["mfu"].value
    assert checkpointed.results["mfu"].value == plain.results["mfu"].value
    assert checkpointed.results["hfu"].value == sympy.Rational(4, 3) * plain.results["mfu"].value
    assert checkpointed.results["hfu"].value >= checkpointed.results["mfu"].value


def test_without_a_measured_time_the_floor_is_used():
    sheet = utilisation(SETUP, None)
    assert sheet.results["mbu"].value == 1
    assert sheet.results["roofline_step_time"].value == _memory_time()
    assert any("floor" in note and "100%" in note for note in sheet.notes)


def test_measured_time_must_be_positive():
    with pytest.raises(DeriveError, match="positive"):
        utilisation(SETUP, sympy.Integer(0))
