"""Current architectures: exact counts against transformers' own modules, and KV/state bytes by layer kind.

The counts in tests/data/transformers_counts.json were made by shared/tools/count_with_transformers.py
(transformers 5.24.0 modules on the meta device, in a scratch virtual environment; never a dependency).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy

from derive.catalog import load_model
from derive.core.evaluation import evaluate
from derive.derivations.common import model_library
from formulas import notation as sym
from formulas.reads import W_read

ORACLE = {
    k: v
    for k, v in json.loads((Path(__file__).parent / "data" / "transformers_counts.json").read_text()).items()
    if not k.startswith("_")
}


def counts(name: str) -> tuple[int, int, dict]:
    model = load_model(name)
    library, shapes = model_library(model), dict(model.formulas.shapes)
    parts = {p.name: int(evaluate(p.defines.symbol, dict(shapes), library)) for p in model.formulas.parts}
    total = int(evaluate(sym.N.symbol, dict(shapes), library))
    active = int(evaluate(sym.N_act.symbol, dict(shapes), library))
    return total, active, parts


# What the checkpoint holds beyond transformers' parameters, each said where it is counted:
# - e_score_correction_bias: DeepSeek-V3-style routers keep one bias per routed expert and MoE layer; the
#   checkpoint stores it, transformers 5 registers it as a buffer (derive counts it as router_correction_params).
# - Step-3.7: transformers ignores the checkpoint's flat keys and builds Step3p7TextConfig's defaults, whose
#   vocabulary is 128,815 rows; the checkpoint's config says 128,896 (embedding and head: 2 x 81 x 4,096 more).
STEP_VOCAB_ROWS = 2 * (128896 - 128815) * 4096


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_counts_equal_transformers(name):
    total, active, parts = counts(name)
    expected = ORACLE[name]
    beyond = parts.get("router_correction_params", 0) + (STEP_VOCAB_ROWS if name == "step-3.7-flash" else 0)
    assert total - beyond == expected["text"]
    if expected.get("active") is not None:
        assert active - beyond == expected["active"]


def test_gemma4_active_count():
    # The oracle's expert regex misses Gemma 4's layers.N.experts tensors, so it gives no active count: the
    # text count less 120 of 128 experts in each of 30 layers (a count of the same tensors, by hand).
    total, active, _ = counts("gemma4-26b-a4b")
    experts = 30 * 128 * (2 * 704 * 2816 + 2816 * 704)
    assert active == total - experts * 120 // 128


def test_correction_bias_is_one_per_expert_and_moe_layer():
    *_, parts = counts("kimi-k2")
    assert parts["router_correction_params"] == 60 * 384  # 61 layers, the first dense; 384 routed experts


def kv(name: str, context: int = 131072) -> dict[str, sympy.Expr]:
    from derive.derivations.common import Setup
    from derive.derivations.slice import kv as kv_sheet

    sheet = kv_sheet(Setup(model=load_model(name), context=context))
    return {k: r.value for k, r in sheet.results.items()}


def test_sliding_window_gpt_oss():
    # 24 layers alternate: 12 slide over 128 tokens, 12 see all. K and V of 8 heads x 64 in bf16:
    # 2 x 8 x 64 x 2 B = 2,048 B a token a layer. 12 x 128 x 2,048 + 12 x 131,072 x 2,048.
    r = kv("gpt-oss-20b")
    assert r["kv_bytes_swa"] == 12 * 128 * 2048 == 3_145_728
    assert r["kv_bytes_full"] == 12 * 131072 * 2048 == 3_221_225_472
    assert r["kv_bytes_per_sequence"] == 3_145_728 + 3_221_225_472


def test_linear_attention_qwen3_5():
    # 16 full-attention layers: 2 x 4 KV heads x 256 x 2 B = 4,096 B a token a layer, over 131,072 tokens.
    # 48 gated delta-net layers keep, whatever the context, a 128 x 128 state per value head (48 heads) in fp32,
    # and a conv window of 3 inputs of 2 x 16 x 128 + 48 x 128 = 10,240 channels in bf16.
    r = kv("qwen3.5-27b")
    assert r["kv_bytes_full"] == 16 * 131072 * 4096
    assert r["kv_bytes_lin"] == 48 * (48 * 128 * 128 * 4 + 10240 * 3 * 2) == 153_944_064


def test_mamba_hybrid_nemotron3_nano():
    # 6 attention layers: 2 x 2 KV heads x 128 x 2 B = 1,024 B a token. 23 Mamba-2 layers: 64 heads x 64 x 128
    # state in fp32, and a conv window of 3 x (4,096 + 2 x 8 x 128) = 3 x 6,144 values in bf16.
    r = kv("nemotron3-nano")
    assert r["kv_bytes_full"] == 6 * 131072 * 1024
    assert r["kv_bytes_ssm"] == 23 * (64 * 64 * 128 * 4 + 6144 * 3 * 2) == 49_082_368


def test_chunked_attention_llama4_scout():
    # 36 chunked layers cache at most a chunk of 8,192 tokens; 12 NoPE layers cache all 131,072.
    # 2 x 8 KV heads x 128 x 2 B = 4,096 B a token a layer.
    r = kv("llama4-scout")
    assert r["kv_bytes_chunk"] == 36 * 8192 * 4096
    assert r["kv_bytes_full"] == 12 * 131072 * 4096


def test_sparse_attention_deepseek_v3_2():
    # Each of 61 layers caches the 512-wide latent, the 64-wide rotary key and the indexer's 128-wide key, in bf16:
    # (512 + 64 + 128) x 61 x 2 B = 85,888 B a token.
    r = kv("deepseek-v3.2")
    assert r["kv_bytes_per_token"] == 85_888
    assert r["kv_bytes_per_sequence"] == 85_888 * 131072


def test_mixed_heads_gemma4():
    # 25 sliding layers (window 1,024) with 8 KV heads of 256; 5 global layers with 2 KV heads of 512.
    # The global layers have no v_proj but still cache a value (the normed raw key): 2 x 2 x 512 x 2 B.
    r = kv("gemma4-26b-a4b")
    assert r["kv_bytes_swa"] == 25 * 1024 * (2 * 8 * 256 * 2)
    assert r["kv_bytes_full"] == 5 * 131072 * (2 * 2 * 512 * 2)


def test_a_window_means_the_kv_may_never_overtake_the_weights():
    from derive.derivations.common import Setup
    from derive.derivations.costs import crossover_kv_weights

    sheet = crossover_kv_weights(Setup(model=load_model("mistral-7b"), batch=1))
    assert sheet.results["crossover_context"].value is None
    assert any("stops growing" in note for note in sheet.notes)


def test_a_window_crossover_solved_on_its_piece():
    # gpt-oss at batch 16: the window's 12 layers are capped, so K = 16 (12·128·2,048 + S·12·2,048) = W_read (the
    # weights a step of 16 reads: the experts they touch, the rows they gather), S on the piece S >= 128.
    from derive.derivations.common import Setup
    from derive.derivations.costs import crossover_kv_weights

    sheet = crossover_kv_weights(Setup(model=load_model("gpt-oss-20b"), batch=16))
    context = sheet.results["crossover_context"].value
    weights = sheet.values[W_read]
    assert 16 * (12 * 128 * 2048 + context * 12 * 2048) == weights
    assert context > 128


NEW_MODELS = ("gpt-oss-20b", "qwen3.5-27b", "llama4-scout", "deepseek-v3.2")


@pytest.mark.parametrize("name", NEW_MODELS)
def test_every_question_renders_for_current_models(name):
    from derive.answers import answer, questions
    from derive.core.errors import DeriveError
    from derive.sheet_render import render

    for qid, q in questions().items():
        if "model" not in q.changeable:
            continue  # predictor-vs-measured holds published measurements of fixed models
        try:
            built = answer(qid, {"model": name})
        except DeriveError as exc:  # only a MoE question may refuse a dense model, and says so
            assert qid == "moe-experts-read" and "is not a mixture of experts" in exc.message, (qid, exc)
            continue
        page = render(built, "md")
        assert "nan" not in page.split() and "zoo" not in page, qid
