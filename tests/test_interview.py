"""Issue 15: every answer's page gives the common wrong answers, each with the number it gives, and the follow-up.

The per-question relations between a wrong answer's number and the right one are in tests/test_interview_*.py;
this file holds what every answer shares, and the questions whose answers also gained a calibrated figure.
"""

from __future__ import annotations

import pytest

from derive import answers
from derive.sheet_render import prose
from tests.interview import built


@pytest.mark.parametrize("question", list(answers.questions()))
def test_every_answer_gives_wrong_answers_and_a_follow_up(question):
    answer = built(question)
    assert answer.figures, question  # the answer's page shows its figure
    assert 2 <= len(answer.wrong_answers) <= 3, question  # the few an interviewer hears, on one page
    assert answer.follow_up is not None and answer.follow_up.question.endswith("?")
    for item in [*answer.wrong_answers, answer.follow_up.answer]:
        assert item.kind in ("wrong", "follow-up")
        assert prose(item, "md") and prose(item, "tex")  # every placeholder has its quantity


def test_the_crossover_without_gqa_comes_the_group_ratio_too_early():
    answer = answers.answer("kv-weight-crossover")
    config = answer.inputs.setup().model.config
    right = answer.results["crossover_context"].number
    (gqa,) = [w for w in answer.wrong_answers if "no GQA" in w.text]
    assert gqa.quantities["mha_context"].value * config.heads / config.kv_heads == right
    fp8 = answer.follow_up.answer.quantities["fp8_context"].value  # type: ignore[union-attr]
    assert 1.99 < float(fp8 / right) <= 2  # one byte per cached value instead of two


def test_the_move_to_b200_gains_more_than_one_ratio():
    r = answers.answer("h100-to-b200").results
    assert r["capacity_ratio"].number > r["bandwidth_ratio"].number  # why one speedup for everything is wrong
    # The calibrated batch-1 step keeps a fixed time the bandwidth does not shrink: its speedup is smaller.
    calibrated = r["calibrated_batch1_step_time_old"].number / r["calibrated_batch1_step_time_new"].number
    assert calibrated == r["calibrated_batch1_speedup"].number < r["bandwidth_ratio"].number


def test_mla_attention_is_compute_bound_at_the_efficiencies_kernels_reach():
    """DeepSeek-V3's absorbed MLA sits below the H100's peak ridge but above the calibrated attention ridge."""
    answer = answers.answer("attention-intensity")
    r = answer.results
    assert r["calibrated_attention_ridge"].number < r["mla_attention_intensity"].number < r["ridge_intensity"].number
    assert "compute-bound in practice, though bandwidth-bound against the peaks" in prose(answer.summary, "md")


def test_the_ranking_says_when_the_gemms_pass_the_ridge():
    small = prose(answers.answer("intensity-ranking").summary, "md")
    large = prose(answers.answer("intensity-ranking", {"batch": 512}).summary, "md")
    assert "far under" in small and "the GEMMs are compute-bound already" in large
