"""`attention_memory`: naive score traffic grows with S^2, a tiled kernel's with S (FlashAttention, sec. 3)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from derive.catalog import load_model
from derive.derivations.attention_memory import attention_memory
from derive.derivations.common import Setup

BF16 = 2  # bytes per value


def _results(model, context):
    return attention_memory(Setup(load_model(model), context=context)).results


def _independent(model, context):
    """Dao et al. 2022, Algorithm 0: S and P each written and read back, per query head; tiled: Q, K, V, O once."""
    cfg = load_model(model).config
    per_layer = 4 * cfg.heads * context * context * BF16
    flash = cfg.layers * context * (2 * cfg.heads + 2 * cfg.kv_heads) * cfg.head_dim * BF16
    return per_layer, cfg.layers * per_layer, flash


@pytest.mark.parametrize("model", ["llama3-8b", "llama3-70b", "gpt2"])
@pytest.mark.parametrize("context", [1024, 8192])
def test_matches_an_independent_count(model, context):
    per_layer, naive, flash = _independent(model, context)
    results = _results(model, context)
    assert results["naive_score_bytes_per_layer"].value == per_layer
    assert results["naive_score_bytes"].value == naive
    assert results["flash_bytes"].value == flash
    assert results["traffic_ratio"].value == Fraction(naive + flash, flash)


def test_naive_grows_with_the_square_of_the_context_and_flash_linearly():
    short, long = _results("llama3-8b", 4096), _results("llama3-8b", 8192)
    assert long["naive_score_bytes_per_layer"].value == 4 * short["naive_score_bytes_per_layer"].value
    assert long["naive_score_bytes"].value == 4 * short["naive_score_bytes"].value
    assert long["flash_bytes"].value == 2 * short["flash_bytes"].value
    assert long["traffic_ratio"].value > short["traffic_ratio"].value


def test_result_names_and_units():
    results = _results("llama3-8b", 2048)
    assert set(results) == {"naive_score_bytes_per_layer", "naive_score_bytes", "flash_bytes", "traffic_ratio"}
    assert results["flash_bytes"].unit == "byte/sequence" and results["traffic_ratio"].unit == ""
