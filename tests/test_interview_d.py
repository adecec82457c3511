"""Issue 15, questions 11-15 and the planning question: each wrong answer's number against the right one.

Every answer here gives at least two common wrong answers and a follow-up at its defaults; each test then pins
one relation the sheet's own numbers must bear out between a wrong answer's figure and the right figure.
"""

from __future__ import annotations

import sympy

from derive.core.sheet import Prose
from tests.interview import built as _answer


def _wrong(question: str, words: str) -> Prose:
    """The one wrong answer whose text says `words` (the quantities of one answer's prose share one dict)."""
    (found,) = [w for w in _answer(question).wrong_answers if words in w.text]
    return found


def test_the_ridge_batch_is_past_what_memory_holds():
    """Llama 3 70B on H100s at 2,048 tokens: B = ridge lies past the memory cap, and no compute knee exists."""
    r = _answer("decode-knee").results
    ridge = _wrong("decode-knee", "knee at the ridge").quantities["ridge"].number
    assert r["knee_batch"].value is None
    assert ridge > r["max_batch_by_memory"].number
    # An 8-bit cache halves each sequence's bytes: memory holds at least twice the batch.
    follow = _answer("decode-knee").follow_up.answer.quantities  # type: ignore[union-attr]
    assert follow["fits_fp8"].number >= 2 * r["max_batch_by_memory"].number


def test_one_accelerators_power_gives_a_share_of_the_energy():
    answer = _answer("energy-per-token")
    wrong = _wrong("energy-per-token", "TDP of one accelerator").quantities
    assert wrong["one_gpu"].number * wrong["n"].number == answer.results["joules_per_token_max_batch"].number
    one = _wrong("energy-per-token", "one sequence's figure").quantities["one"].number
    assert one / answer.results["joules_per_token_max_batch"].number == answer.results["batch1_over_max_batch"].number


def test_launch_gaps_that_explain_everything_add_up_to_the_measured_step():
    r = _answer("slow-8b-step").results
    launches = _wrong("slow-8b-step", "on kernel launches")
    wrong = launches.quantities
    step = r["floor_step_time"].number + wrong["implied_gap"].number * r["kernels_per_step"].number
    assert step == r["measured_step_time"].number
    assert "fp32" in launches.text and wrong["fp32_floor"].number == 2 * r["floor_step_time"].number  # bf16 to fp32


def test_one_constant_efficiency_misses_the_lowest_measurement_by_its_ratio():
    r = _answer("predictor-vs-measured").results
    wrong = _wrong("predictor-vs-measured", "one constant efficiency").quantities
    low = r[f"{wrong['low_id'].value}_efficiency"].number
    assert (wrong["over"].number / 100 + 1) * low == wrong["thr_mean"].number / 100
    assert r[f"{wrong['low_id'].value}_efficiency"].number == r["min_efficiency"].number


def test_filling_memory_misses_the_tpot_target_the_pick_meets():
    answer = _answer("serving-plan")
    wrong = _wrong("serving-plan", "Filling each copy").quantities
    target = wrong["tpot"].number
    assert wrong["full_tpot"].number > target >= answer.results["tpot"].number
    follow = answer.follow_up.answer.quantities  # type: ignore[union-attr]
    capacity, per_copy = follow["capacity"].number, answer.results["accelerators_per_copy"].number
    assert follow["fleet2"].number == sympy.ceiling(follow["rate2"].number / capacity) * per_copy
