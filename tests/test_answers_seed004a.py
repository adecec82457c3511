"""Seed 004, questions 1 to 7: each answer builds at its defaults, holds what the seed states, and re-derives."""

from __future__ import annotations

from functools import cache

import pytest
import sympy

from derive.answers import answer
from derive.catalog import load_gpu, load_model
from derive.core.errors import DeriveError

IDS = (
    "decode-floor-70b",
    "flops-per-token",
    "prefill-crossover",
    "attention-intensity",
    "vendor-claim",
    "h100-to-b200",
    "moe-experts-read",
)


@cache
def built(question_id: str, **overrides):  # type: ignore[no-untyped-def]
    return answer(question_id, overrides)


def value(question_id: str, name: str, **overrides) -> sympy.Expr:  # type: ignore[no-untyped-def]
    return built(question_id, **overrides).results[name].value


@pytest.mark.parametrize("question_id", IDS)
def test_builds_at_defaults(question_id):
    item = built(question_id)
    assert item.question.source.startswith("Seed 004, question ")
    assert item.summary.text and item.summary.quantities
    assert item.sections and all(s.sheet.steps for s in item.sections)
    assert item.results and item.takeaways and item.caveats
    # Every placeholder in every prose has its quantity.
    for prose in [
        item.summary,
        *item.takeaways,
        *item.caveats,
        *(p for s in item.sections for p in (*s.intro, *s.outro)),
    ]:
        prose.text.format(**{k: "" for k in prose.quantities})


# Seed 004, question 1: "Decode reads every weight once per token": the floor is W / (2 x BW) on two H100s.
def test_decode_floor_is_weights_over_two_h100s():
    # The step reads every matrix and gathers one row of the untied 128,256 x 8,192 embedding (config).
    weights = 2 * (load_model("llama3-70b").published_total - 128_256 * 8_192 + 8_192)
    assert value("decode-floor-70b", "weight_read_time") == sympy.Rational(weights) / (2 * load_gpu("h100").bandwidth)
    assert value("decode-floor-70b", "gemm_intensity") < value("decode-floor-70b", "ridge_intensity")
    parts = [
        value("decode-floor-70b", name)
        for name in ("weight_read_time", "kv_read_time", "bandwidth_shortfall_time", "decode_allreduce_time")
    ]
    assert all(p > 0 for p in parts)
    assert sum(parts) == value("decode-floor-70b", "decode_step_estimate")


def test_decode_floor_re_derives():
    assert value("decode-floor-70b", "weight_read_time", gpu="h200") < value("decode-floor-70b", "weight_read_time")
    assert value("decode-floor-70b", "bandwidth_shortfall_time", achieved_bandwidth="0.9") < value(
        "decode-floor-70b", "bandwidth_shortfall_time"
    )
    assert value("decode-floor-70b", "decode_allreduce_time", gpu="b200", tp=1) == 0
    assert value("decode-floor-70b", "kv_read_time", context=8192) == 2 * value("decode-floor-70b", "kv_read_time")
    with pytest.raises(DeriveError):
        built("decode-floor-70b", achieved_bandwidth="1.5")


# Seed 004, question 2: the 2N rule drifts with context and breaks where attention equals the weights.
def test_flops_per_token_beyond_two_n():
    assert value("flops-per-token", "two_n_ratio") > 1
    assert value("flops-per-token", "non_arithmetic_params") > 0
    assert value("flops-per-token", "attention_equals_weights_context") > 2048


def test_flops_per_token_re_derives():
    assert value("flops-per-token", "attention_flops_per_token", context=8192) == 4 * value(
        "flops-per-token", "attention_flops_per_token"
    )
    assert value("flops-per-token", "weight_flops_per_token", model="llama3-8b") < value(
        "flops-per-token", "weight_flops_per_token"
    )


# Seed 004, question 3: prefill turns compute-bound "after a few hundred tokens on an H100".
def test_prefill_crossover_is_a_few_hundred_tokens():
    assert 100 < value("prefill-crossover", "compute_bound_prompt_tokens") < 1000
    assert value("prefill-crossover", "ttft_floor") == value("prefill-crossover", "prefill_compute_time")


def test_prefill_crossover_re_derives():
    # A higher ridge (PCIe: less bandwidth per FLOP) pushes the crossover out.
    assert value("prefill-crossover", "ridge_intensity", gpu="h100-pcie") > value(
        "prefill-crossover", "ridge_intensity"
    )
    assert value("prefill-crossover", "compute_bound_prompt_tokens", gpu="h100-pcie") > value(
        "prefill-crossover", "compute_bound_prompt_tokens"
    )
    assert value("prefill-crossover", "ttft_floor", gpu="b200") < value("prefill-crossover", "ttft_floor")


# Seed 004, question 4: intensity "fixed at the query-to-KV head ratio"; MLA "within a hair of the H100 ridge".
def test_attention_intensity_is_the_head_ratio_and_mla_near_the_ridge():
    cfg = load_model("llama3-70b").config
    assert value("attention-intensity", "query_kv_group_ratio") == sympy.Rational(cfg.heads, cfg.kv_heads)
    assert value("attention-intensity", "gqa_attention_intensity") == value(
        "attention-intensity", "query_kv_group_ratio"
    )
    assert 0.75 < value("attention-intensity", "mla_ridge_fraction") < 1


def test_attention_intensity_re_derives():
    assert value("attention-intensity", "gqa_attention_intensity", batch=128) == value(
        "attention-intensity", "gqa_attention_intensity"
    )
    assert value("attention-intensity", "gemm_intensity", batch=128) == 2 * value(
        "attention-intensity", "gemm_intensity"
    )
    assert value("attention-intensity", "ridge_intensity", gpu="b200") != value(
        "attention-intensity", "ridge_intensity"
    )
    assert value("attention-intensity", "mla_attention_intensity", kv_dtype="fp8") == 2 * value(
        "attention-intensity", "mla_attention_intensity"
    )


# Seed 004, question 5: 1,000 tokens/s per user on one H200 is above the bandwidth floor.
def test_vendor_claim_exceeds_the_floor():
    floor = value("vendor-claim", "floor_tokens_per_s_per_user")
    assert floor < 1000 and value("vendor-claim", "claim_over_floor") == 1000 / floor
    assert value("vendor-claim", "floor_at_alt_dtype") > floor
    assert value("vendor-claim", "claim_batch") > 1


def test_vendor_claim_re_derives():
    assert value("vendor-claim", "floor_tokens_per_s_per_user", gpu="b200") > value(
        "vendor-claim", "floor_tokens_per_s_per_user"
    )
    assert value("vendor-claim", "floor_tokens_per_s_per_user", model="llama3-8b") > value(
        "vendor-claim", "floor_tokens_per_s_per_user"
    )


# Seed 004, question 6: "the biggest win turns out to come from capacity, not bandwidth".
def test_h100_to_b200_biggest_win_is_capacity():
    bandwidth, compute = value("h100-to-b200", "bandwidth_ratio"), value("h100-to-b200", "compute_ratio")
    assert abs(bandwidth / compute - 1) < 0.1  # "the datasheet ratios are close to each other"
    assert value("h100-to-b200", "capacity_ratio") > 4 * bandwidth
    assert value("h100-to-b200", "batch1_step_time_old") / value("h100-to-b200", "batch1_step_time_new") == bandwidth


def test_h100_to_b200_re_derives():
    assert value("h100-to-b200", "capacity_ratio", vs="h200") < value("h100-to-b200", "capacity_ratio")
    assert value("h100-to-b200", "bandwidth_ratio", vs="h200") < value("h100-to-b200", "bandwidth_ratio")


# Seed 004, question 7: "671B parameters but only 37B active"; batch 64 reads far more than 37B.
def test_moe_step_reads_far_more_than_active():
    model = load_model("deepseek-v3")
    assert int(model.published_total / 10**9) == 671 and int(model.published_active / 10**9) == 37
    assert value("moe-experts-read", "params_read_per_step") > 10 * model.published_active
    assert value("moe-experts-read", "read_vs_total") < 1


def test_moe_experts_re_derive():
    # At batch 1 a step reads exactly the active parameters but the 129,280 x 7,168 embedding (config), of
    # which it gathers one row.
    read = value("moe-experts-read", "params_read_per_step", batch=1)
    active = read / value("moe-experts-read", "read_vs_active", batch=1)
    assert active - read == 129_280 * 7_168 - 7_168
    assert value("moe-experts-read", "experts_touched", batch=256) > value("moe-experts-read", "experts_touched")
