"""Issue 15: the wrong answers and follow-ups of decode-floor-70b and flops-per-token, each pinned by one relation
between a wrong answer's number and the right one."""

from __future__ import annotations

from derive.core.units import to_base_factor
from tests.interview import built as _answer
from tests.interview import wrong as _wrong


def test_the_floor_read_in_gib_as_gb_is_low_by_the_ratio_of_the_units():
    floor = _answer("decode-floor-70b").results["weight_read_time"].number
    low = _wrong("decode-floor-70b", "t_gib").quantities["t_gib"].number
    assert low / floor == to_base_factor("GB") / to_base_factor("GiB")


def test_one_accelerator_reading_every_shard_takes_tp_times_the_floor():
    answer = _answer("decode-floor-70b")
    one = _wrong("decode-floor-70b", "t_one").quantities
    assert one["t_one"].number == one["n"].number * answer.results["weight_read_time"].number
    assert one["n"].number == 2  # the question's two H100s (seed 001)


def test_a_moe_floor_reads_only_the_routed_experts():
    """Mixtral at batch 1: reading all 46.7 B parameters overstates the floor by total over read bytes."""
    found = _wrong("decode-floor-70b", "t_all", "mixtral-8x7b").quantities
    assert found["all_over"].number > 3  # 2 of 8 experts a layer: about 46.7 B against 12.9 B read


def test_fp8_weights_halve_the_weight_reads_on_the_same_accelerators():
    answer = _answer("decode-floor-70b")
    fp8 = answer.follow_up.answer.quantities  # type: ignore[union-attr]
    assert fp8["fp8_t_w"].number * 2 == answer.results["weight_read_time"].number
    assert fp8["t_est"].number > fp8["fp8_est"].number > fp8["t_est"].number / 2  # the all-reduces stay


def test_counting_a_mac_as_one_flop_halves_the_weight_flops():
    found = _wrong("flops-per-token", "f_mac").quantities
    assert found["f_mac"].number * 2 == found["f"].number


def test_gqa_does_not_shrink_attention_flops():
    found = _wrong("flops-per-token", "f_att_gqa").quantities
    assert found["f_att_gqa"].number * 64 == found["f_att"].number * 8  # Llama 3 70B: 64 query heads, 8 KV heads


def test_two_n_over_a_whole_mixture_of_experts_overcounts():
    found = _wrong("flops-per-token", "moe_over", "deepseek-v3").quantities
    assert (
        found["f_2n"].number == 2 * 671_026_419_200
    )  # DeepSeek-V3 without MTP: 671,026,419,200 (catalog.toml published_total)
    assert found["moe_over"].number > 10


def test_prefill_attention_averages_half_the_context_under_causal_masking():
    fp = _answer("flops-per-token").follow_up.answer.quantities  # type: ignore[union-attr]
    assert fp["f_prefill"].number == fp["f"].number + fp["f_att_avg"].number
    assert 0.49 < fp["f_att_avg"].number / fp["f_att"].number <= 0.5


def test_a_crossing_past_the_models_positions_is_said():
    summary = _answer("flops-per-token").summary
    crossing = summary.quantities["s_att"].number
    assert crossing > 8192 and "past the {limit} the config allows" in summary.text  # Llama 3 70B: 8,192 positions
