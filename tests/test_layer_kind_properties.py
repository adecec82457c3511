"""Properties over generated configs of every layer kind: windows, chunks, linear attention, Mamba, full attention.

KV bytes never fall as the context grows; windowed and state layers stop growing where they should; the
KV/weight crossover, solved piece by piece, satisfies its equation, and agrees with a numeric search.
"""

from __future__ import annotations

import os

import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derive.architecture.reader import read_architecture
from derive.catalog import Model
from derive.core.evaluation import evaluate
from derive.derivations.common import Setup, model_library
from derive.derivations.costs import crossover_kv_weights
from formulas import notation as sym
from formulas.reads import W_read

EXAMPLES = 5000 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 40


@st.composite
def hybrid(draw):  # type: ignore[no-untyped-def]
    layers = draw(st.integers(1, 8))
    heads = draw(st.sampled_from([2, 4, 8]))
    base = {
        "hidden_size": 64,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": draw(st.sampled_from([h for h in (1, 2, heads) if heads % h == 0])),
        "head_dim": draw(st.sampled_from([8, 16])),
        "intermediate_size": 128,
        "vocab_size": 100,
        "max_position_embeddings": 1 << 20,
    }
    family = draw(st.sampled_from(["gpt_oss", "llama4", "qwen3_5", "nemotron_h"]))
    if family == "gpt_oss":
        kinds = draw(
            st.lists(st.sampled_from(["sliding_attention", "full_attention"]), min_size=layers, max_size=layers)
        )
        return {
            **base,
            "model_type": "gpt_oss",
            "layer_types": kinds,
            "sliding_window": draw(st.integers(1, 4096)),
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
        }
    if family == "llama4":
        kinds = draw(
            st.lists(st.sampled_from(["chunked_attention", "full_attention"]), min_size=layers, max_size=layers)
        )
        return {
            **base,
            "model_type": "llama4",
            "layer_types": kinds,
            "attention_chunk_size": draw(st.integers(1, 8192)),
            "num_local_experts": 4,
            "num_experts_per_tok": 1,
            "intermediate_size_mlp": 256,
        }
    if family == "qwen3_5":
        kinds = draw(
            st.lists(st.sampled_from(["linear_attention", "full_attention"]), min_size=layers, max_size=layers)
        )
        return {
            **base,
            "model_type": "qwen3_5",
            "layer_types": kinds,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
            "linear_key_head_dim": 8,
            "linear_value_head_dim": 8,
        }
    pattern = "".join(draw(st.lists(st.sampled_from("M*-"), min_size=layers - 1, max_size=layers - 1))) + "*"
    return {
        **base,
        "model_type": "nemotron_h",
        "hybrid_override_pattern": pattern,
        "mamba_num_heads": 4,
        "mamba_head_dim": 8,
        "ssm_state_size": 8,
        "n_groups": 2,
        "conv_kernel": 4,
    }


def _model(raw: dict) -> Model:
    return Model("generated", "generated", read_architecture(raw, "generated"), "hypothesis")


def _cache(model: Model, context: int) -> sympy.Expr:
    values = dict(model.formulas.shapes)
    values.update({sym.b_kv: sympy.Integer(2), sym.b_st: sympy.Integer(4), sym.S: sympy.Integer(context)})
    return evaluate(sym.kv_seq.symbol, values, model_library(model))


def _full_slope(model: Model) -> int:
    """Bytes a token adds once past every window: the full-attention layers' K and V."""
    arch = model.config
    return sum(
        g.count * 2 * g.mixer.kv_head_count() * g.mixer.head_width() * 2
        for g in arch.groups
        if g.mixer is not None and g.mixer.plain()
    )


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hybrid(), st.lists(st.integers(1, 1 << 16), min_size=2, max_size=5))
def test_kv_never_falls_and_windows_stop_growing(raw, contexts):
    model = _model(raw)
    contexts = sorted(contexts)
    caches = [_cache(model, s) for s in contexts]
    assert all(a <= b for a, b in zip(caches, caches[1:], strict=False))
    longest = max(model.config.windows.values(), default=0)
    past = [s for s in contexts if s >= longest]
    if len(past) >= 2:  # past every window only the full layers grow, by their K and V a token
        assert _cache(model, past[-1]) - _cache(model, past[0]) == _full_slope(model) * (past[-1] - past[0])


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hybrid(), st.integers(1, 64))
def test_crossover_satisfies_its_equation_or_none_exists(raw, batch):
    model = _model(raw)
    sheet = crossover_kv_weights(Setup(model=model, batch=batch))
    context = sheet.results["crossover_context"].value
    weights = sheet.values[W_read]  # the weights the batch's step reads
    if context is None:  # a numeric search agrees: no context makes the batch's cache equal the weights
        shortest, longest = batch * _cache(model, 1), batch * _cache(model, 1 << 40)
        assert shortest >= weights or longest < weights
    else:
        assert batch * _cache_exact(model, context) == weights


def _cache_exact(model: Model, context: sympy.Expr) -> sympy.Expr:
    values = dict(model.formulas.shapes)
    values.update({sym.b_kv: sympy.Integer(2), sym.b_st: sympy.Integer(4), sym.S: context})
    return evaluate(sym.kv_seq.symbol, values, model_library(model))
