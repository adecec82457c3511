"""Seed 000's worked answers (questions 1-3 and 5-10): they build, reproduce the seed's figures, and re-derive."""

import pytest
import sympy

from derive.answers import answer

IDS = [
    "decode-bandwidth-bound",
    "roofline-decode-prefill",
    "batching-decode",
    "batching-strategy",
    "ffn-sharding",
    "compiler-fusion",
    "framework-to-gpu",
    "data-pipeline",
    "slow-training-serving",
]


@pytest.fixture(scope="module")
def built():
    return {qid: answer(qid) for qid in IDS}


@pytest.mark.parametrize("qid", IDS)
def test_builds_at_defaults(built, qid):
    a = built[qid]
    assert a.summary.text and a.results and a.sections
    assert a.question.source.startswith("Seed 000")
    assert a.takeaways and a.caveats


def test_gpt2_decode_reads_497_8_mb_at_half_a_flop_per_byte(built):
    # Seed 000, question 1: "GPT-2 small in 4-byte floats reads 497.8 MB per token, about half an operation per byte"
    r = built["decode-bandwidth-bound"].results
    assert r["weight_bytes"].value == 124_439_808 * 4
    assert round(float(r["weight_bytes"].value) / 1e6, 1) == 497.8
    assert r["decode_intensity"].value == sympy.Rational(1, 2)
    # "Decode 8 sequences together and the same read serves all 8"; "one read of the weights serves all 960"
    assert r["batched_intensity"].value == 4 and r["prefill_intensity"].value == 480


def test_gpt2_decode_step_moves_507_mb(built):
    # Seed 000, question 2: "a batch-1 decode step moved 507 MB": the stored weights plus a 128-token fp32 cache.
    # The step gathers one row of GPT-2's 1,024 x 768 learned positions (config) rather than the whole table.
    r = built["roofline-decode-prefill"].results
    positions_not_read = (1024 - 1) * 768 * 4
    assert round((float(r["decode_step_bytes"].value) + positions_not_read) / 1e6) == 507
    assert r["decode_intensity"].value < r["ridge_intensity"].value < r["prefill_intensity"].value


def test_roofline_rederives_for_other_accelerator(built):
    base = built["roofline-decode-prefill"].results
    faster = answer("roofline-decode-prefill", {"gpu": "h200"}).results  # same peak, more bandwidth
    assert faster["decode_step_time"].value < base["decode_step_time"].value
    assert faster["ridge_intensity"].value < base["ridge_intensity"].value
    assert faster["decode_step_bytes"].value == base["decode_step_bytes"].value


def test_batching_shares_the_weight_read(built):
    r = built["batching-decode"].results
    assert r["step_time_large"].value < 8 * r["step_time_small"].value
    assert 1 < r["throughput_gain"].value <= 8 and r["per_user_slowdown"].value > 1
    other = answer("batching-decode", {"model": "llama2-13b", "gpu": "h200"}).results
    assert other["kv_bytes_per_sequence"].value > r["kv_bytes_per_sequence"].value  # MHA caches more than GQA


def test_static_batching_closed_form(built):
    r = built["batching-strategy"].results
    # E[max of 8 uniform(8, 256)] = 8 + 248 * 8/9; mean 132
    assert r["static_batch_longest_reply"].value == 8 + sympy.Rational(248 * 8, 9)
    assert r["reply_mean_tokens"].value == 132
    assert r["static_seat_utilisation"].value == sympy.Rational(132) / (8 + sympy.Rational(248 * 8, 9))
    assert r["static_throughput"].value < r["continuous_throughput"].value
    faster = answer("batching-strategy", {"gpu": "h200"}).results
    assert faster["continuous_throughput"].value > r["continuous_throughput"].value
    assert faster["static_seat_utilisation"].value == r["static_seat_utilisation"].value


def test_ffn_binding_limits(built):
    # Seed 000, question 6: decode: HBM binds; big prefill: compute; slow inter-node links: network
    r = built["ffn-sharding"].results
    assert r["decode_nvlink_binding"].value == "hbm"
    assert r["prefill_nvlink_binding"].value == "compute"
    assert r["prefill_slow_binding"].value == "network"
    other = answer("ffn-sharding", {"gpu": "h200"}).results
    assert other["decode_nvlink_t_hbm"].value < r["decode_nvlink_t_hbm"].value


def test_fusion_saves_bytes_and_launches(built):
    r = built["compiler-fusion"].results
    assert r["prefill_fused_bytes"].value < r["prefill_unfused_bytes"].value
    assert r["decode_launch_saving"].value > 0
    other = answer("compiler-fusion", {"gpu": "h200"}).results
    assert other["prefill_step_saving"].value < r["prefill_step_saving"].value  # faster HBM, less to save


def test_launch_bound_small_model(built):
    r = built["framework-to-gpu"].results
    assert r["eager_launch_time"].value > r["decode_step_floor"].value  # GPT-2 small on an H100: launch-bound
    assert r["graph_step_time"].value < r["eager_step_time"].value
    big = answer("framework-to-gpu", {"model": "llama3-70b", "gpu": "h200"}).results
    assert big["decode_step_floor"].value > big["eager_launch_time"].value


def test_data_pipeline_rates(built):
    r = built["data-pipeline"].results
    assert 0 < r["idle_fraction"].value < 1
    more = answer("data-pipeline", {"gpus": 128}).results
    assert more["training_token_rate"].value == 2 * r["training_token_rate"].value
    assert more["idle_fraction"].value > r["idle_fraction"].value


def test_slow_training_serving(built):
    r = built["slow-training-serving"].results
    assert r["decode_gemm_intensity"].value < r["ridge_intensity"].value < r["large_matmul_intensity"].value
    assert r["attention_traffic_ratio"].value > 1
    # Issue 15: the measured step is a decode step, which recomputes nothing, so its HFU is its MFU; the
    # question's recompute fraction (1/3) is a training run's, whose HFU is 4/3 of its MFU.
    assert r["hfu"].value == r["mfu"].value
    assert r["training_hfu_over_mfu"].value == sympy.Rational(4, 3)
    other = answer("slow-training-serving", {"gpu": "a100"}).results
    assert other["ridge_intensity"].value < r["ridge_intensity"].value
