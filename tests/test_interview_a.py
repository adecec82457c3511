"""Issue 15: the wrong answers and follow-ups of decode-bandwidth-bound, roofline-decode-prefill, batching-decode,
kv-sizing-13b, batching-strategy and ffn-sharding, each pinned by one relation between a wrong answer's number and
the right one."""

from __future__ import annotations

import sympy

from derive.catalog import dtype_bytes
from tests.interview import built as _answer
from tests.interview import value as _value
from tests.interview import wrong as _wrong


def test_batching_strategy_keeps_to_two_wrong_answers():
    assert len(_answer("batching-strategy").wrong_answers) == 2  # its page is already two pages


def test_timing_decode_by_its_flops_is_short_by_the_bytes_over_the_flops():
    wrong = _wrong("decode-bandwidth-bound", "compute_time")
    floor = _answer("decode-bandwidth-bound").results["decode_step_time"].number
    assert _value(wrong, "compute_time") * _value(wrong, "too_fast") == floor


def test_decode_turns_compute_bound_no_sooner_than_the_weight_gemms_reach_the_ridge():
    follow = _answer("decode-bandwidth-bound").follow_up.answer  # type: ignore[union-attr]
    ridge = _answer("decode-bandwidth-bound").results["ridge_intensity"].number
    batch, b_w = _value(follow, "ridge_batch"), dtype_bytes(_answer("decode-bandwidth-bound").inputs["dtype"])
    assert 2 * (batch - 1) / b_w < ridge <= 2 * batch / b_w  # the first whole batch where 2B/b_w reaches the ridge
    assert _value(follow, "knee") >= batch  # GPT-2's KV reads only push the whole step later


def test_counting_macs_as_flops_halves_the_measured_prefill_fraction():
    wrong = _wrong("roofline-decode-prefill", "mac_fraction")
    assert 2 * _value(wrong, "mac_fraction") == _value(wrong, "prefill_fraction")
    measured = _answer("roofline-decode-prefill").results["measured_prefill_flops_fraction"].number
    assert abs(float(_value(wrong, "mac_fraction")) * 2 / 100 - float(measured)) < 1e-3


def test_linear_batching_overshoots_the_throughput_by_the_batch_ratio():
    answer = _answer("batching-decode")
    wrong = _wrong("batching-decode", "linear")
    r = answer.results
    ratio = sympy.Rational(answer.inputs["large_batch"], answer.inputs["batch"])
    assert _value(wrong, "linear") == r["throughput_small"].number * ratio > r["throughput_large"].number
    fp8 = answer.follow_up.answer  # type: ignore[union-attr]
    assert _value(fp8, "fits_fp8") >= 2 * r["max_batch_by_memory"].number  # half the cache, at least twice as many


def test_forgetting_the_weights_divides_all_the_memory_by_the_cache():
    answer = _answer("kv-sizing-13b")
    wrong = _wrong("kv-sizing-13b", "no_weights")
    r = answer.results
    assert _value(wrong, "no_weights") == sympy.floor(_value(wrong, "memory") / r["kv_bytes_per_sequence"].number)
    assert _value(wrong, "no_weights") > r["max_sequences"].number


def test_the_gqa_mistake_is_made_only_for_a_model_with_gqa():
    assert not [w for w in _answer("kv-sizing-13b").wrong_answers if "{mha_fits}" in w.text]  # Llama 2 13B: MHA
    wrong = _wrong("kv-sizing-13b", "mha_fits", "llama3-70b")
    ratio = _value(wrong, "heads") / _value(wrong, "kv_heads")
    assert (
        _value(wrong, "mha_seq")
        == _answer("kv-sizing-13b", "llama3-70b").results["kv_bytes_per_sequence"].number * ratio
    )
    assert not [w for w in _answer("kv-sizing-13b", "deepseek-v3").wrong_answers if "{half_seq}" in w.text]  # MLA


def test_running_every_static_batch_to_the_longest_reply_understates_seat_use():
    wrong = _wrong("batching-strategy", "worst_pct")
    r = _answer("batching-strategy").results
    assert _value(wrong, "worst_pct") * _value(wrong, "hi") / 100 == r["reply_mean_tokens"].number
    assert _value(wrong, "worst_pct") < 100 * r["static_seat_utilisation"].number


def test_one_copy_of_the_output_undercounts_the_ring_all_reduce():
    wrong = _wrong("ffn-sharding", "one_copy")
    n = _value(wrong, "n")
    right = _answer("ffn-sharding").results["prefill_slow_t_network"].number
    assert _value(wrong, "one_copy") * (2 * n - 2) / n == right
    follow = _answer("ffn-sharding").follow_up.answer  # type: ignore[union-attr]
    r = _answer("ffn-sharding").results
    assert _value(follow, "net_ratio") == right / r["prefill_slow_t_compute"].number


def test_one_accelerator_has_no_all_reduce_to_get_wrong():
    answer = _answer("ffn-sharding", "llama2-13b")  # the smallest split that holds it is one accelerator
    assert answer.results["prefill_slow_t_network"].number == 0
    assert not [w for w in answer.wrong_answers if "all-reduce" in w.text]
    assert answer.follow_up is not None and "{crossing}" in answer.follow_up.answer.text
