"""The one scenario builder (derive/scenario.py) that the CLI, the answers and the sweep share."""

from __future__ import annotations

import pytest

from derive import scenario
from derive.core.errors import DeriveError


def test_an_offered_input_left_unset_takes_the_shared_default_and_says_so():
    setup = scenario.build({"model": "llama3-8b", "gpu": None, "context": None, "batch": 4}, need_gpu=True)
    assert (setup.gpu.name, setup.context, setup.batch) == ("h100", scenario.DEFAULTS["context"], 4)
    assert setup.defaults == ("gpu", "context")


def test_an_input_not_offered_is_not_called_a_default():
    setup = scenario.build({"model": "llama3-8b"})
    assert setup.gpu is None and setup.defaults == ()


def test_overrides_are_checked_for_their_unit_and_applied():
    setup = scenario.build({"model": "llama3-8b", "bandwidth": "1 TB/s"}, need_gpu=True)
    assert setup.gpu.bandwidth == 10**12 and "bandwidth" in setup.gpu.overridden
    with pytest.raises(DeriveError, match="--bandwidth"):
        scenario.build({"model": "llama3-8b", "bandwidth": "3 TFLOP/s"}, need_gpu=True)


def test_a_given_context_is_held_to_the_positions_a_question_default_is_not():
    with pytest.raises(DeriveError, match="positions"):
        scenario.build({"model": "llama3-8b", "context": 100_000})
    assert scenario.build({"model": "llama3-8b", "context": 100_000}, given=()).context == 100_000


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "no model given"),
        ({"model": "llama3-8b", "config": "x"}, "both given"),
        ({"model": "llama3-8b", "batch": 0}, "at least 1"),
        ({"model": "llama3-8b", "tp": 3}, "does not divide"),
        ({"model": "no-such-model"}, "unknown model"),
    ],
)
def test_bad_scenarios_are_one_clear_error(values, message):
    with pytest.raises(DeriveError, match=message):
        scenario.build(values)
