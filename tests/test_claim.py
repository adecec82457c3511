"""`claim`: the seed's 1,000 tokens/s per user for a 70B model on one H200, against the bandwidth floor."""

from __future__ import annotations

import pytest
import sympy

from derive.catalog import load_gpu, load_model
from derive.core.errors import DeriveError
from derive.derivations.claim import claim
from derive.derivations.common import Setup
from formulas import claim as cl

CLAIM = sympy.Integer(1000)  # "A vendor claims 1,000 tokens per second per user" (issue 3, seed)
BF16 = 2


def _sheet(model="llama3-70b", gpu="h200", tp=1, context=2048, claimed=CLAIM):
    return claim(Setup(load_model(model), load_gpu(gpu), tp=tp, context=context, claim=claimed))


def _bytes_per_step(context=2048, tokens=1, bytes_per_weight=BF16):
    """Independently: published parameters read (the untied 128,256 x 8,192 embedding only by the step's rows,
    config) x 2 bytes, plus one sequence's K and V for every layer."""
    model = load_model("llama3-70b")
    cfg = model.config
    table = cfg.vocab * cfg.hidden
    weights = (model.published_total - table + tokens * cfg.hidden) * bytes_per_weight
    cache = 2 * cfg.layers * cfg.kv_heads * cfg.head_dim * BF16 * context
    return weights, cache


def test_floor_is_far_below_the_claim():
    bandwidth = load_gpu("h200").bandwidth  # 4.8 TB/s, datasheet
    weights, cache = _bytes_per_step()
    floor = _sheet().results["floor_tokens_per_s_per_user"].value
    assert floor == bandwidth / (weights + cache)
    # H200 datasheet: 4.8 TB/s over 141 GB of weights is about 34 token/s (the table's 2.1 GB is only gathered).
    assert float(floor) == pytest.approx(4.8e12 / 141e9, rel=0.03)
    assert floor < CLAIM / 25


def test_required_bits_per_weight_gives_the_claim_back():
    bits = _sheet().results["required_bits_per_weight"].value
    weights, cache = _bytes_per_step(bytes_per_weight=bits / 8)
    rate = load_gpu("h200").bandwidth / (weights + cache)
    assert rate == CLAIM
    assert bits < 1  # under one bit per weight: no real format


def test_required_tokens_per_pass_gives_the_claim_back():
    tau = _sheet().results["required_tokens_per_pass"].value
    weights, cache = _bytes_per_step(tokens=tau)
    assert tau * load_gpu("h200").bandwidth / (weights + cache) == CLAIM


def test_aggregate_batch_gives_the_claim_back():
    sheet = _sheet()
    batch = sheet.values[cl.B_claim]
    weights, cache = _bytes_per_step(tokens=batch)
    assert batch * load_gpu("h200").bandwidth / (weights + batch * cache) == CLAIM
    assert any("do not fit" in note for note in sheet.notes)  # 141.1 GB of bf16 weights on a 141 GB H200


def test_result_names():
    assert set(_sheet().results) == {
        "floor_tokens_per_s_per_user",
        "required_bits_per_weight",
        "required_tokens_per_pass",
    }


def test_a_modest_claim_is_within_the_floor():
    sheet = _sheet(model="llama3-8b", claimed=sympy.Integer(50))
    assert sheet.results["floor_tokens_per_s_per_user"].value > 50
    assert sheet.results["required_bits_per_weight"].value > 16


def test_claim_is_required():
    with pytest.raises(DeriveError, match="claim needs --claim") as info:
        _sheet(claimed=None)
    assert info.value.hint == 'Pass --claim "1000 token/s"'


def test_no_tokens_a_pass_meet_a_claim_past_each_tokens_own_reads():
    """Each token a pass gains reads its own embedding row (8,192 B of Llama 3 8B's 4,096 bf16 values, config), so a
    pass of tau tokens reads tau·8,192 B more: at 10^9 tokens/s a user that alone takes 8.2 TB/s, past one H100's
    3.35 TB/s (datasheet). No count of tokens a pass meets it, and none is said, never a negative count."""
    sheet = _sheet(model="llama3-8b", gpu="h100", claimed=sympy.Integer(10**9))
    assert sheet.results["required_tokens_per_pass"].value is None
    assert all(s.value is None or s.value > 0 for s in sheet.steps if hasattr(s, "solution"))
