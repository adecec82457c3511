"""Property tests over generated configs and accelerators (hypothesis).

Counts are checked against parameter shapes built independently here, per
family, tensor by tensor, the way transformers' modeling code lays them out.
Run longer with HYPOTHESIS_PROFILE=long (100,000 examples a test).
"""

from __future__ import annotations

import math
import os

import sympy
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from derive.architecture.reader import read_architecture as read_config
from derive.catalog import Model
from derive.core.evaluation import evaluate
from formulas import library
from formulas import moe as moe_formulas
from formulas import notation as sym

LIBRARY = library()  # every formula, loaded once

settings.register_profile("ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=100_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"

small = st.integers(min_value=1, max_value=8)


@st.composite
def configs(draw):  # type: ignore[no-untyped-def]
    """A config.json of any supported family, with dimensions that fit together."""
    family = draw(
        st.sampled_from(
            ["gpt2", "llama", "mistral", "mixtral", "qwen2", "phi3", "gemma2", "deepseek_v2", "deepseek_v3"]
        )
    )
    kv_heads = draw(small)
    heads = kv_heads * draw(small)
    head_dim = 8 * draw(small)
    hidden = heads * head_dim
    layers, vocab = draw(st.integers(1, 6)), draw(st.integers(10, 500))
    inter = 8 * draw(st.integers(1, 40))
    if family == "gpt2":
        return {
            "model_type": "gpt2",
            "n_embd": hidden,
            "n_head": heads,
            "n_layer": layers,
            "vocab_size": vocab,
            "n_positions": draw(st.integers(1, 300)),
            "n_inner": draw(st.sampled_from([None, inter])),
        }
    cfg = {
        "model_type": family,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "num_hidden_layers": layers,
        "vocab_size": vocab,
        "intermediate_size": inter,
        "tie_word_embeddings": draw(st.booleans()),
    }
    if family == "gemma2":
        cfg["head_dim"] = head_dim * draw(st.sampled_from([1, 2]))
    if family == "llama":
        cfg["attention_bias"] = draw(st.booleans())
        cfg["mlp_bias"] = draw(st.booleans())
    if family == "mixtral":
        cfg["num_local_experts"] = draw(st.integers(1, 8))
        cfg["num_experts_per_tok"] = draw(st.integers(1, cfg["num_local_experts"]))
    if family.startswith("deepseek"):
        experts = draw(st.integers(1, 16))
        cfg.update(
            {
                "kv_lora_rank": 8 * draw(small),
                "qk_nope_head_dim": 8 * draw(small),
                "qk_rope_head_dim": 8 * draw(small),
                "v_head_dim": 8 * draw(small),
                "q_lora_rank": draw(st.sampled_from([None, 16, 32])),
                "n_routed_experts": experts,
                "num_experts_per_tok": draw(st.integers(1, experts)),
                "n_shared_experts": draw(st.integers(0, 2)),
                "moe_intermediate_size": 8 * draw(small),
                "first_k_dense_replace": draw(st.integers(0, layers)),
                "moe_layer_freq": draw(st.integers(1, 2)),
                "topk_method": "noaux_tc" if family == "deepseek_v3" else "greedy",
            }
        )
    return cfg


def tensor_shapes(cfg: dict) -> list[tuple[int, ...]]:  # type: ignore[type-arg]
    """Every parameter tensor of the model, from the family's layout (independent of derive's formulas)."""
    t = cfg["model_type"]
    shapes: list[tuple[int, ...]] = []
    if t == "gpt2":
        d, f = cfg["n_embd"], cfg["n_inner"] or 4 * cfg["n_embd"]
        shapes += [(cfg["vocab_size"], d), (cfg["n_positions"], d)]
        for _ in range(cfg["n_layer"]):
            shapes += [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, f), (f,), (f, d), (d,)]
        return shapes + [(d,), (d,)]
    d, layers, v, f = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["intermediate_size"]
    h, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // h
    shapes.append((v, d))
    dense = set(range(layers))
    if t.startswith("deepseek"):
        dense = {i for i in range(layers) if i < cfg["first_k_dense_replace"] or i % cfg["moe_layer_freq"]}
    for i in range(layers):
        if t.startswith("deepseek"):
            r_kv, nope, rope, vd = (
                cfg["kv_lora_rank"],
                cfg["qk_nope_head_dim"],
                cfg["qk_rope_head_dim"],
                cfg["v_head_dim"],
            )
            if cfg["q_lora_rank"]:
                shapes += [(cfg["q_lora_rank"], d), (cfg["q_lora_rank"],), (h * (nope + rope), cfg["q_lora_rank"])]
            else:
                shapes.append((h * (nope + rope), d))
            shapes += [(r_kv + rope, d), (r_kv,), (h * (nope + vd), r_kv), (d, h * vd)]
        else:
            bias = t == "qwen2" or cfg.get("attention_bias", False)
            shapes += [(h * hd, d), (kv * hd, d), (kv * hd, d), (d, h * hd)]
            if bias:
                shapes += [(h * hd,), (kv * hd,), (kv * hd,)]
            if t == "llama" and cfg.get("attention_bias"):
                shapes.append((d,))
        if t == "mixtral":
            e = cfg["num_local_experts"]
            shapes.append((e, d))
            shapes += [(f, d), (f, d), (d, f)] * e
        elif t.startswith("deepseek") and i not in dense:
            e, fe = cfg["n_routed_experts"], cfg["moe_intermediate_size"]
            shapes.append((e, d))
            if t == "deepseek_v3":
                shapes.append((e,))
            shapes += [(fe, d), (fe, d), (d, fe)] * e
            if cfg["n_shared_experts"]:
                fs = fe * cfg["n_shared_experts"]
                shapes += [(fs, d), (fs, d), (d, fs)]
        else:
            shapes += [(f, d), (f, d), (d, f)]
            if t == "llama" and cfg.get("mlp_bias"):
                shapes += [(f,), (f,), (d,)]
        shapes += [(d,)] * (4 if t == "gemma2" else 2)
    shapes.append((d,))
    tied = cfg.get("tie_word_embeddings", t == "gemma2")
    if not tied:
        shapes.append((v, d))
    return shapes


def model_of(cfg: dict) -> Model:  # type: ignore[type-arg]
    return Model("generated", "generated", read_config(cfg, "generated"), "hypothesis")


def library(model: Model):  # type: ignore[no-untyped-def]
    return LIBRARY.extended(model.formulas.all())


@given(configs())
def test_parameter_count_equals_the_sum_of_tensor_shapes(cfg):
    model = model_of(cfg)
    derived = evaluate(sym.N.symbol, dict(model.formulas.shapes), library(model))
    assert derived == sum(math.prod(s) for s in tensor_shapes(cfg))


@given(configs())
def test_counts_are_positive_integers_and_active_at_most_total(cfg):
    model = model_of(cfg)
    lib, shapes = library(model), dict(model.formulas.shapes)
    total, active = (evaluate(s.symbol, dict(shapes), lib) for s in (sym.N, sym.N_act))
    matmul = evaluate(sym.N_mm.symbol, dict(shapes), lib)
    assert total.is_Integer and active.is_Integer and 0 < active <= total and 0 < matmul
    for formula in model.formulas.all():
        formula.check()  # dimensionally consistent for every generated shape


def _decode_values(model: Model, gpu_bw: int, gpu_flops: int, memory: int, batch: int, context: int):  # type: ignore[no-untyped-def]
    lib, shapes = library(model), dict(model.formulas.shapes)
    values = dict(shapes)
    for target in (sym.N, sym.N_mm):
        values[target] = evaluate(target.symbol, dict(shapes), lib)
    values.update(
        {
            sym.b_w: sympy.Integer(2),
            sym.b_kv: sympy.Integer(2),
            sym.tau: sympy.Integer(1),
            sym.n: sympy.Integer(1),
            sym.BW: sympy.Integer(gpu_bw),
            sym.P: sympy.Integer(gpu_flops),
            sym.M: sympy.Integer(memory),
            sym.B: sympy.Integer(batch),
            sym.S: sympy.Integer(context),
        }
    )
    return values, lib


accelerators = st.tuples(st.integers(10**9, 10**13), st.integers(10**12, 10**16))


@given(configs(), accelerators, st.integers(1, 512), st.integers(1, 10**5))
def test_monotone_where_physics_says_so(cfg, gpu, batch, context):
    model = model_of(cfg)
    bw, flops = gpu

    def step(b: int, s: int, bandwidth: int) -> sympy.Expr:
        values, lib = _decode_values(model, bandwidth, flops, 10**12, b, s)
        return evaluate(sym.t_step.symbol, values, lib)

    def kv(s: int) -> sympy.Expr:
        values, lib = _decode_values(model, bw, flops, 10**12, batch, s)
        return evaluate(sym.kv_seq.symbol, values, lib)

    # KV bytes never fall with context; they rise while some layer still caches every new token
    # (a model whose every layer slides over a window stops growing at the window: Gemma 2, Mistral).
    longest = max(model.config.windows.values(), default=0)
    grows = not model.config.windows or any(k.span is None for k in model.formulas.kinds) or context < longest
    assert kv(context + 1) >= kv(context) > 0
    if grows:
        assert kv(context + 1) > kv(context)
    assert step(batch + 1, context, bw) > step(batch, context, bw) > 0
    assert step(batch, context, 2 * bw) <= step(batch, context, bw)


@given(st.integers(1, 512), st.data())
def test_expected_experts_between_k_and_e_and_tending_to_e(experts, data):
    top_k = data.draw(st.integers(1, experts))
    tokens = data.draw(st.integers(1, 10_000))
    expr = moe_formulas.experts_touched.expr
    touched = expr.xreplace({sym.E.symbol: experts, sym.k_e.symbol: top_k, moe_formulas.T_r.symbol: tokens})
    assert top_k - 1e-9 <= float(touched) <= experts + 1e-9
    # Tending to E: at a huge batch every expert is touched (evaluated as the CLI does, without a hang).
    far = evaluate(
        expr, {sym.E: sympy.Integer(experts), sym.k_e: sympy.Integer(top_k), moe_formulas.T_r: sympy.Integer(10**7)}
    )
    assert float(far) > experts - 1e-6 or top_k == experts


@settings(max_examples=100_000 if LONG else 15)  # a closed-form solve each: fewer in CI
@given(configs(), accelerators, st.integers(1, 8192))
def test_knee_substituted_back_and_existence_agrees_with_a_search(cfg, gpu, context):
    from derive.core.solving import solve

    model = model_of(cfg)
    values, lib = _decode_values(model, gpu[0], gpu[1], 10**15, 1, context)
    memory, compute = LIBRARY.get("memory_time").expr, LIBRARY.get("compute_time").expr
    for derived in (sym.kv_total, sym.t_mem, sym.t_comp):
        values.pop(derived, None)
    values.pop(sym.B)
    knee = solve(memory, compute, sym.B, lib)
    # A MoE model's knee is a Lambert W of huge exact rationals: checked in 40 digits, not simplified.
    batch = evaluate(knee.closed_form, dict(values), lib).evalf(40)
    exists = bool(batch.is_finite and batch.is_real and batch > 0)
    if exists:
        at = {**values, sym.B: batch}
        sides = [evaluate(side, dict(at), lib).evalf(40) for side in (memory, compute)]
        assert abs(sides[0] - sides[1]) <= 1e-25 * abs(sides[0])
    # A direct search of the step-time curve: compute time overtakes memory time at some batch?
    crossed = False
    for b in (2**i for i in range(0, 60, 3)):
        at = {**values, sym.B: sympy.Integer(b)}
        if evaluate(compute, dict(at), lib) >= evaluate(memory, dict(at), lib):
            crossed = True
            break
    assert crossed == exists


@given(configs(), st.integers(1, 256))
@example(  # found by Hypothesis: one sliding-window layer's cache never reaches the weights
    {
        "model_type": "gemma2",
        "hidden_size": 576,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "num_hidden_layers": 1,
        "vocab_size": 10,
        "intermediate_size": 8,
        "tie_word_embeddings": False,
        "head_dim": 48,
    },
    1,
)
def test_kv_weight_crossover_substituted_back(cfg, batch):
    from derive.core.solving import solve

    model = model_of(cfg)
    values, lib = _decode_values(model, 10**12, 10**15, 10**12, batch, 1)
    values.pop(sym.S)
    crossing = solve(sym.kv_total.symbol, sym.W.symbol, sym.S, lib)
    context = evaluate(crossing.closed_form, dict(values), lib)
    if context == sympy.nan:  # no crossing: only where windows cap the cache below the weights (Gemma 2's one layer)
        far = {**values, sym.S: sympy.Integer(10**12)}
        assert evaluate(sym.kv_total.symbol, dict(far), lib) < evaluate(sym.W.symbol, dict(far), lib)
        return
    assert context > 0
    at = {**values, sym.S: context}
    assert evaluate(sym.kv_total.symbol, dict(at), lib) == evaluate(sym.W.symbol, dict(at), lib)
