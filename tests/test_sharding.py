"""`shard`: one FFN layer on n GPUs agrees with the issue's own formulas, and the binding resource moves as it says."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy

import derive.checker
from derive.catalog import load_gpu, load_model
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.derivations.common import Setup
from derive.derivations.sharding import shard
from formulas import library
from formulas import sharding as sh

LIBRARY = library()  # every formula, loaded once

NVLINK = None  # use the GPU's own link from the catalog
MINE = ["formulas.sharding", "formulas.attention_memory", "formulas.claim"]


def _sheet(model="llama3-70b", gpu="h100", tokens=1, tp=8, link=NVLINK):
    return shard(
        Setup(
            load_model(model),
            load_gpu(gpu),
            tokens=tokens,
            tp=tp,
            link=link,
            link_name="" if link is None else "test link",
        )
    )


def _seed(d, f, T, n, peak_flops, hbm_bw, link_bw):
    """The seed question's formulas as written (issue 3, bf16, a 2-matrix MLP), in exact fractions."""
    n = Fraction(n)
    flops = 2 * (2 * T * d * f)
    w_bytes = 2 * d * f * 2
    act_bytes = T * (2 * d + f) * 2
    comm = 2 * (n - 1) / n * T * d * 2
    t_compute = flops / n / peak_flops
    t_hbm = (w_bytes / n + act_bytes) / hbm_bw
    t_net = comm / link_bw
    return {
        "flops": flops,
        "weight_bytes": w_bytes,
        "activation_bytes": act_bytes,
        "allreduce_bytes": comm,
        "t_compute": t_compute,
        "t_hbm": t_hbm,
        "t_network": t_net,
    }


def _fraction(value: sympy.Expr) -> Fraction:
    p, q = sympy.fraction(sympy.Rational(value))
    return Fraction(int(p), int(q))


def _gpu_figures(name="h100"):
    gpu = load_gpu(name)
    return _fraction(gpu.peak("bf16")[0]), _fraction(gpu.bandwidth), _fraction(gpu.link)


@pytest.mark.parametrize("tokens", [1, 512, 8192])
def test_one_gpu_equals_the_seed_formulas_for_gpt2(tokens):
    cfg = load_model("gpt2").config
    assert not cfg.gated_mlp and cfg.intermediate == 4 * cfg.hidden  # the seed's "often 4d", two matrices
    peak, bw, link = _gpu_figures()
    seed = _seed(cfg.hidden, cfg.intermediate, tokens, 1, peak, bw, link)
    results = _sheet("gpt2", tokens=tokens, tp=1).results
    for name, value in seed.items():
        assert _fraction(results[name].value) == value, name


def test_sharded_gpt2_equals_the_seed_with_the_hidden_part_sharded():
    cfg, n, tokens = load_model("gpt2").config, 4, 2048
    peak, bw, link = _gpu_figures()
    seed = _seed(cfg.hidden, cfg.intermediate, tokens, n, peak, bw, link)
    results = _sheet("gpt2", tokens=tokens, tp=n).results
    for name in ("flops", "weight_bytes", "activation_bytes", "allreduce_bytes", "t_compute", "t_network"):
        assert _fraction(results[name].value) == seed[name], name
    # Per GPU only 1/n of the hidden activation is touched: T * (2d + f/n) * b, not the seed's T * (2d + f) * b.
    per_gpu = tokens * (2 * cfg.hidden + Fraction(cfg.intermediate, n)) * 2
    assert _fraction(results["t_hbm"].value) == (Fraction(seed["weight_bytes"], n) + per_gpu) / bw


def test_gated_mlp_counts_three_matrices():
    cfg, tokens = load_model("llama3-70b").config, 16
    results = _sheet(tokens=tokens).results
    assert cfg.gated_mlp
    assert results["flops"].value == 2 * (3 * tokens * cfg.hidden * cfg.intermediate)
    assert results["weight_bytes"].value == 3 * cfg.hidden * cfg.intermediate * 2


def test_decode_on_nvlink_binds_on_hbm():
    assert _sheet(tokens=1).results["binding"].value == "hbm"


def test_large_prefill_binds_on_compute():
    assert _sheet(tokens=65536).results["binding"].value == "compute"


def test_slow_link_binds_on_network():
    slow = sympy.Integer(25 * 10**9)  # "25 GB/s": a slow inter-node link, one way
    results = _sheet(tokens=4096, link=slow).results
    assert results["binding"].value == "network"
    assert results["t_network"].value == results["allreduce_bytes"].value / slow


def _without_derived(values):
    derived = {f.defines for f in LIBRARY if f.defines.key.startswith("ffn_") and f.counts is False}
    return {s: v for s, v in values.items() if s not in derived and s is not sh.T_ffn}


def test_crossover_satisfies_its_equation_and_flips_the_binding():
    sheet = _sheet(tokens=1, tp=1)
    crossing = sheet.values[sh.T_cross]
    values = _without_derived(sheet.values)
    values[sh.T_ffn] = crossing
    compute = evaluate(sh.t_ffn_comp.symbol, dict(values), LIBRARY)
    hbm = evaluate(sh.t_ffn_hbm.symbol, dict(values), LIBRARY)
    assert sympy.simplify(compute - hbm) == 0
    below, above = int(crossing), int(crossing) + 1
    assert _sheet(tokens=below, tp=1).results["binding"].value == "hbm"
    assert _sheet(tokens=above, tp=1).results["binding"].value == "compute"


def test_a_gpu_without_a_link_needs_one():
    with pytest.raises(DeriveError, match="no GPU-to-GPU link") as info:
        _sheet("llama3-8b", gpu="rtx4090", tp=2)
    assert '--link "50 GB/s"' in info.value.hint
    assert _sheet("llama3-8b", gpu="rtx4090", tp=2, link=sympy.Integer(50 * 10**9)).results["binding"].value


def test_one_gpu_needs_no_link():
    results = _sheet("llama3-8b", gpu="rtx4090", tp=1).results
    assert results["t_network"].value == 0 and results["allreduce_bytes"].value == 0


def test_result_names():
    assert set(_sheet().results) == {
        "flops",
        "weight_bytes",
        "activation_bytes",
        "allreduce_bytes",
        "binding",
        "t_compute",
        "t_hbm",
        "t_network",
        "ridge_tokens",  # the short form beside the compute-HBM crossover
    }


def test_the_new_modules_pass_the_unit_check():
    report, failures = derive.checker.run(derive.checker.MODULES + MINE)
    assert failures == 0, report
