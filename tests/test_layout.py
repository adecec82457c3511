"""Layouts (tp x ep x pp x dp) as formulas: hand calculations, shares that sum to the whole, and one predictor.

Published figures used: Llama 3 70B has 70,553,706,496 parameters (meta-llama/Meta-Llama-3-70B, the
checkpoint's safetensors index; the catalog's count), 80 layers, 8 KV heads of 128 (its config.json);
Qwen3-30B-A3B has 48 layers, 128 experts of which 8 a token, hidden 2048 (its config.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from derive.catalog import load_gpu, load_model
from derive.core.evaluation import evaluate
from derive.layouts import Layout, check, search, shape
from derive.speculation import NONE
from derive.sweeps import predictor_inputs
from derive.systems import catalog_price, prices, system_for, systems
from formulas import calibrated as cal
from formulas import collectives as co
from formulas import layout as lay
from formulas import library
from formulas import notation as sym

library()
KINDS = ["llama3-70b", "llama2-13b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-20b", "nemotron3-nano", "qwen3.5-35b-a3b"]


def values_at(model_name, layout, batch=1, context=4096, gpu="h100"):
    """Every value a layout formula needs for one model, accelerator, layout and batch."""
    model, accelerator = load_model(model_name), load_gpu(gpu)
    values, lib = predictor_inputs(model, accelerator, "bf16")
    s, system = shape(model), system_for(accelerator)
    values.update(
        {
            sym.n: sympy.Integer(layout.tp),
            lay.pp: sympy.Integer(layout.pp),
            lay.dp: sympy.Integer(layout.dp),
            lay.ep: sympy.Integer(layout.ep),
            lay.L_a: sympy.Integer(s.moe_layers if layout.ep > 1 or layout.dp > 1 else 0),
            lay.w_E: sympy.Integer(int(layout.on_deepep(system, s.moe_layers))),
            lay.x_E: sympy.Integer(int(layout.tp * layout.dp > system.domain)),
            lay.d_p: sympy.Integer(1),
            lay.BW_tp: system.link(layout.tp),
            lay.BW_ep: system.link(layout.tp * layout.dp),
            lay.BW_pp: system.link(layout.accelerators),
            sym.B: sympy.Integer(batch),
            sym.S: sympy.Integer(context),
            sym.S_p: sympy.Integer(context),
            sym.S_o: sympy.Integer(256),
        }
    )
    values.setdefault(sym.k_e, sympy.Integer(1))
    values.setdefault(sym.E, sympy.Integer(1))
    values.update(NONE.values())  # no draft
    return values, lib


def value(target, values, lib):
    return evaluate(target.symbol, dict(values), lib)


# Hand calculations.


def test_collectives_by_hand():
    g, x = sympy.Integer(4), sympy.Integer(100)
    assert co.ring_allreduce(g, x) == 150  # 2 * 3/4 * 100
    assert co.exchange(g, x) == 75  # the 3/4 that is for the others
    t = co.over_link(sympy.Integer(150), g, co.alpha_c, co.eta_c, co.BW_c)
    at = {co.alpha_c.symbol: sympy.Rational(1, 10**6), co.eta_c.symbol: 1, co.BW_c.symbol: 10**9}
    assert t.xreplace(at) == sympy.Rational(1, 10**6) + sympy.Rational(150, 10**9)
    assert co.over_link(x, sympy.Integer(1), co.alpha_c, co.eta_c, co.BW_c) == 0  # a group of one sends nothing


def test_llama70b_weights_and_cache_per_accelerator_by_hand():
    values, lib = values_at("llama3-70b", Layout(4, 1, 2, 1), batch=3, context=4096)
    assert value(lay.N_L, values, lib) == 8
    assert value(lay.W_g, values, lib) == 70_553_706_496 * 2 // 8  # bf16, split 4 ways and 2 stages
    per_token = 2 * 80 * 8 * 128 * 2  # K and V, 80 layers, 8 heads of 128, bf16
    assert value(sym.k, values, lib) == per_token
    # Each accelerator reads its 40 layers and 2 of the 8 KV heads of the micro-batch's 3 sequences.
    assert value(lay.K_g, values, lib) == 3 * 4096 * per_token // (2 * 4)
    assert value(lay.K_gs, values, lib) == 2 * 3 * 4096 * per_token // (2 * 4)  # both micro-batches held
    # Two all-reduces a layer of 3 tokens x 8192 values x 2 bytes, ring of 4, 40 layers.
    assert value(lay.Y_tp, values, lib) == 2 * 80 // 2 * sympy.Rational(2 * 3, 4) * 3 * 8192 * 2
    assert value(lay.Y_pp, values, lib) == 3 * 8192 * 2 // 4
    assert value(lay.Y_ep, values, lib) == 0


def test_kv_heads_cap_the_split_and_a_latent_is_whole():
    import derive

    def shards(model, tp):  # the one kv_shards every command and the plan read (formulas/roofline.py, or the model's)
        return derive.fit(model, gpu="h200", tp=tp, dtype="fp8").sheet.values[sym.s_kv]

    assert [shards("llama3-70b", tp) for tp in (1, 4, 8, 16)] == [1, 4, 8, 8]
    assert shards("deepseek-v3", 8) == 1  # MLA's latent is copied to every rank


def test_qwen3_moe_expert_parallel_by_hand():
    values, lib = values_at("qwen3-30b-a3b", Layout(1, 4, 1, 4), batch=8)
    weights, routed = value(sym.W, values, lib), value(lay.W_E, values, lib)
    assert routed == 48 * 128 * 3 * 2048 * 768 * 2  # experts of 3 matrices 2048 x 768, bf16
    assert value(lay.W_g, values, lib) == (weights - routed) + routed / sympy.Integer(4)
    # Dispatch and combine over 48 layers: each rank's 8/4 tokens go to the groups of their 8 experts, once to each
    # of the 4 accelerators at most (an all-gather, as aiconfigurator prices it), 2048 x 2 bytes, 3/4 of them away.
    assert value(lay.Y_ep, values, lib) == 2 * 48 * sympy.Rational(3, 4) * 4 * (8 // 4) * 2048 * 2
    assert value(lay.Y_tp, values, lib) == 0  # no tensor parallelism, no all-reduce


def test_experts_split_inside_their_groups_by_hand():
    """TensorRT-LLM's moe_tp x moe_ep = tp·dp (aiconfigurator's best Mixtral layout is tp1 dp8 etp8): Mixtral 8x7B
    at batch 8 on 8 attention ranks, 1 sequence a rank, its 4,096-wide bf16 activation 8,192 bytes a layer."""
    x_r = 1 * 4096 * 2
    for layout, copies, width in ((Layout(1, 1, 1, 8), 8, 14336 // 8), (Layout(1, 4, 1, 8), 4, 14336 // 2)):
        values, lib = values_at("mixtral-8x7b", layout, batch=8)
        # ep 1: every accelerator holds an eighth of every expert, so each token reaches all 8 (an all-gather, then
        # a reduce-scatter back); ep 4: a token's 2 experts sit in at most 2 groups of 2, 4 accelerators.
        assert value(lay.Y_ep, values, lib) == 2 * 32 * sympy.Rational(7, 8) * copies * x_r
        assert value(lay.w_L, values, lib) == width  # each expert's 14,336-wide MLP split 8 or 2 ways
        assert value(lay.W_g, values, lib) == value(lay.W_g, *values_at("mixtral-8x7b", Layout(1, 8, 1, 8), batch=8))
    # Whole experts (e = n·d) with k no larger than the group: the dispatch of k copies, as before the split.
    values, lib = values_at("qwen3-30b-a3b", Layout(1, 8, 1, 8), batch=8)
    assert value(lay.Y_ep, values, lib) == 2 * 48 * sympy.Rational(7, 8) * 8 * 1 * 2048 * 2


# Shares sum to the whole, for any layout the search admits.


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(KINDS), st.integers(0, 10_000), st.integers(1, 64))
def test_shares_sum_to_the_totals(model_name, pick, batch):
    model = load_model(model_name)
    layouts = search(model, system_for(load_gpu("h100")), 64)
    layout = layouts[pick % len(layouts)]
    values, lib = values_at(model_name, layout, batch=batch, context=1024)
    accelerators, stages = layout.accelerators, layout.pp
    copies = sympy.Integer(layout.tp) / value(lay.s_kv, values, lib)  # KV heads copied past their count
    # Every token of every micro-batch: FLOPs and cache reads, each accelerator running pp slots.
    assert accelerators * stages * value(lay.F_g, values, lib) == stages * batch * value(sym.F, values, lib)
    assert accelerators * stages * value(lay.K_g, values, lib) == copies * stages * value(sym.kv_total, values, lib)
    assert accelerators * value(lay.K_gs, values, lib) == copies * stages * value(sym.kv_total, values, lib)
    # Weights: every weight once, plus the copies attention data parallelism makes of what is not an expert.
    weights, routed = value(sym.W, values, lib), value(lay.W_E, values, lib)
    assert accelerators * value(lay.W_g, values, lib) == weights + (layout.dp - 1) * (weights - routed)


# The layout predictor is the single-node predictor when there is one stage and one rank.


@pytest.mark.parametrize(
    "model_name", ["llama3-70b", "qwen3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gemma4-26b-a4b"]
)
@pytest.mark.parametrize("tp", [1, 2, 4])
def test_layout_step_is_the_calibrated_step_on_one_rank(model_name, tp):
    values, lib = values_at(model_name, Layout(tp), batch=16, context=2048)
    values[sym.S] = sympy.Integer(2048) + sympy.Integer(128)  # the mean context predict uses
    values[sh_link()] = load_gpu("h100").link
    for layout_time, node_time in ((lay.tpot_c, cal.t_cal), (lay.ttft_c, cal.t_calp)):
        assert float(value(layout_time, values, lib)) == pytest.approx(float(value(node_time, values, lib)), rel=1e-6)


def sh_link():
    from formulas.sharding import BW_link

    return BW_link


# The rules and the tables.


def test_layout_rules_say_why():
    model, system = load_model("llama3-70b"), system_for(load_gpu("h100"))
    with pytest.raises(Exception, match="NVLink domain of 8"):
        check(model, Layout(16), system)
    with pytest.raises(Exception, match="divide the 80 layers"):
        check(model, Layout(1, 1, 3), system)
    with pytest.raises(Exception, match="dense model"):
        check(model, Layout(1, 1, 1, 2), system)
    moe = load_model("qwen3-30b-a3b")
    with pytest.raises(Exception, match="ep 3 must divide tp·dp = 4"):
        check(moe, Layout(2, 3, 1, 2), system)
    with pytest.raises(Exception, match="ep 16 does not divide the 8 experts"):
        check(load_model("mixtral-8x7b"), Layout(2, 16, 1, 8), system_for(load_gpu("h100")))
    assert check(moe, Layout(2, 4, 1, 2), system)
    assert check(moe, Layout(2, 2, 1, 2), system).expert_tp == 2  # experts split 2 ways in each of 2 groups
    assert check(moe, Layout(1, 1, 1, 8), system).expert_tp == 8  # every expert split over the 8 ranks


def test_systems_and_prices_tables():
    for system in systems():
        assert system.source and load_gpu(system.gpu)
        assert system.link(system.domain + 1) <= system.link(system.domain)  # leaving the domain is never faster
    hgx = system_for(load_gpu("h100"))
    assert hgx.domain == 8 and hgx.link(8) == 450 * 10**9 and hgx.link(16) == 50 * 10**9  # 400 Gb/s = 50 GB/s
    assert system_for(load_gpu("gb200")).domain == 72
    # An L40S host has no NVLink: PCIe Gen4 x16 (64 GB/s bidirectional, its datasheet) inside, and the NIC's traffic
    # crosses the same PCIe beyond.
    pcie = system_for(load_gpu("l40s"))
    assert pcie.fabric == "PCIe Gen4" and pcie.link(8) == pcie.link(16) == 32 * 10**9
    h100 = catalog_price(load_gpu("h100"))
    assert h100 is not None and h100.source
    assert float(h100.per_second) * 3600 == pytest.approx(2.69)
    given = prices([load_gpu("h100")], "h100=2 USD/h")
    assert float(given["h100"].per_second) * 3600 == pytest.approx(2.0)


def _tool(name: str):  # type: ignore[no-untyped-def]
    """tools/<name>.py, a script rather than a package module, loaded as one."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


# The fused path's (latency, link share) pairs: a decode step's gather and reduce-scatter, then a prompt pass's.
_FUSED = (
    (lay.alpha_ag, lay.eta_ag),
    (lay.alpha_rs, lay.eta_rs),
    (lay.alpha_agp, lay.eta_agp),
    (lay.alpha_rsp, lay.eta_rsp),
)


def test_fused_dispatch_fit_is_the_profiled_tables():
    """formulas/fused_dispatch.json is what tools/fit_fused_dispatch.py makes of aiconfigurator's all-gather and
    reduce-scatter tables (recomputed here), not numbers typed by hand; an FP8 gather only where they have one."""
    from derive.calibration import fused_dispatch

    tool = _tool("fit_fused_dispatch")
    data = json.loads(tool.DATA.read_text())
    for system, gpu in tool.GPUS.items():
        fit = fused_dispatch()["accelerators"][gpu]
        link = data["systems"][system]["link_bandwidth_bytes_per_s"]
        for phase, token_range in tool.PHASES.items():
            for name, op in tool.OPS.items():
                rows = tool._rows(data["points"], system, op, token_range)
                assert (tool.fit_line(rows, link) if rows else None) == fit[phase].get(name), (gpu, phase, name)
        assert ("gather_fp8" in fit["decode"]) == (gpu in ("b200", "gb200"))


def test_served_tpot_adds_each_ranks_prompt_passes():
    values, lib = values_at("qwen3-30b-a3b", Layout(1, 4, 2, 4), batch=16)
    values[lay.tpot_c] = sympy.Rational(20, 1000)
    values[lay.t_rq] = sympy.Rational(8, 1000)  # 8 ms a prompt
    # 2 micro-batches of 16 over 4 ranks: 8 sequences a rank, each a prompt pass every 256 steps.
    assert value(lay.tpot_s, values, lib) == sympy.Rational(20, 1000) + 8 * sympy.Rational(8, 1000) / 256


def test_expert_imbalance_by_hand():
    """Issue 26, item 1: the busiest of e = 8 expert ranks of Qwen3-30B-A3B (E = 128 routed experts, its config)
    gets 1 + 1.4·sqrt(2·8·ln 8/128) = 1.714 times the mean rank's tokens; with the experts not spread (e = 1),
    exactly the mean: tensor parallelism alone keeps the calibrated step (the test above, MoE models included)."""
    import math

    values, lib = values_at("qwen3-30b-a3b", Layout(1, 8, 1, 8), batch=256, context=2048)
    by_hand = 1 + 1.4 * math.sqrt(2 * 8 * math.log(8) / 128)
    assert float(value(lay.I_ep, values, lib)) == pytest.approx(by_hand, rel=1e-12)
    assert round(by_hand, 3) == 1.714
    flat, lib = values_at("qwen3-30b-a3b", Layout(8, 1, 1, 1), batch=256, context=2048)
    assert value(lay.I_ep, flat, lib) == 1


def test_the_imbalance_is_capped_where_one_rank_takes_every_routed_copy():
    """Mixtral 8x7B on e = 8 (E = 8 experts, k = 2, its config): the normal maximum 1 + 1.4·sqrt(2·8·ln 8/8) = 3.85
    is under the cap min(e, E/k) = 4, one expert a rank taking at most 2 of each token's 2 copies over a mean of
    2/8 of them. With c_pop doubled the estimate, 6.7, would pass the cap and stops at it."""
    import math

    values, lib = values_at("mixtral-8x7b", Layout(1, 8, 1, 8), batch=256, context=2048)
    by_hand = 1 + 1.4 * math.sqrt(2 * 8 * math.log(8) / 8)
    assert float(value(lay.I_ep, values, lib)) == pytest.approx(by_hand, rel=1e-12)
    doubled = lib.get("expert_imbalance").expr.subs(lay.c_pop.symbol, sympy.Rational(28, 10))
    assert doubled.subs({lay.ep.symbol: 8, sym.E.symbol: 8, sym.k_e.symbol: 2}) == 4


def test_the_busiest_expert_rank_slows_a_compute_bound_step():
    """The imbalance multiplies the routed experts' FLOPs of the busiest rank, not its weights: a prompt pass of
    Qwen3-30B-A3B on tp1 ep8 dp8 (compute-bound) takes longer than it would with routing even, and by no more
    than the whole of its routed-expert compute scaled by I_ep."""
    values, lib = values_at("qwen3-30b-a3b", Layout(1, 8, 1, 8), batch=64, context=2048)
    skewed = float(value(lay.ttft_c, values, lib))
    even = float(value(lay.ttft_c, {**values, lay.I_ep: sympy.Integer(1)}, lib))
    assert even < skewed < even * float(value(lay.I_ep, values, lib))


def test_the_search_splits_experts_inside_expert_groups():
    """aiconfigurator's best MoE layouts split experts inside expert groups (issue 26): Mixtral on 8 H100s as tp1 dp8
    etp8, DeepSeek-V3 and Kimi K2 on B200 as dp8 etp2 ep4. The search holds every ep dividing tp·dp."""
    layouts = search(load_model("mixtral-8x7b"), system_for(load_gpu("h100")), 8)
    assert {Layout(1, 1, 1, 8), Layout(1, 2, 1, 8), Layout(1, 4, 1, 8), Layout(1, 8, 1, 8)} <= set(layouts)
    assert all((lt.tp * lt.dp) % lt.ep == 0 for lt in layouts)
    assert not [lt for lt in search(load_model("llama3-70b"), system_for(load_gpu("h100")), 8) if lt.ep > 1]


def test_wide_expert_parallelism_runs_on_deepep_by_hand():
    """DeepSeek-V3 on 8 B200s, dp8 ep8 (whole experts, one node, attention dp): each MoE layer's dispatch and
    combine is DeepEP's, alpha_E + 7/8·min(k, e)·X_r/(eta_E·BW) in decode (X_r: one rank's tokens, 2 bytes a value
    of 7,168) and alpha_Ep + 7/8·e(1 - (1 - 1/e)^k)·X_p/(eta_Ep·BW) in a prompt pass, with the fits of
    formulas/deepep.json; with w_E = 0 the slot is the fused all-gather's again (dp8 etp2 ep4 is never wide)."""
    from derive.calibration import deepep

    layout = Layout(1, 8, 1, 8)
    hgx, amd = system_for(load_gpu("b200")), system_for(load_gpu("mi300x"))
    assert layout.on_deepep(hgx, 58) and not Layout(1, 4, 1, 8).on_deepep(hgx, 58)
    assert not Layout(1, 4, 1, 4).on_deepep(hgx, 58) and not layout.on_deepep(hgx, 0)
    assert not layout.on_deepep(amd, 58)  # Infinity Fabric: DeepEP's NVLink kernels do not run there
    values, lib = values_at("deepseek-v3", layout, batch=64, context=2048, gpu="b200")
    assert values[lay.w_E] == 1
    fit = deepep()["accelerators"]["b200"]
    link = 900e9  # B200 NVLink 5, one way (datasheet 1.8 TB/s bidirectional)
    tokens, layers = 64 / 8, 58  # a rank's sequences; DeepSeek-V3's MoE layers
    decode = fit["decode"]["alpha_s"] + 7 / 8 * 8 * tokens * 7168 * 2 / (fit["decode"]["eta"] * link)
    fused = {**values, lay.w_E: sympy.Integer(0)}
    step, old = value(lay.t_sc, values, lib), value(lay.t_sc, fused, lib)
    gathered = 7 / 8 * 8 * tokens * 7168 * 2  # the fused path's all-gather of a rank's tokens, and its reduce-scatter
    own = sum(float(values[a]) + gathered / (float(values[e]) * link) for a, e in _FUSED[:2])
    assert float(step - old) == pytest.approx(layers * (decode - own), rel=1e-9)
    prompt = {**values, sym.B: sympy.Integer(1)}
    copies = 8 * (1 - (1 - 1 / 8) ** 8)  # 5.25 of the 8 ranks hold one of a token's 8 experts
    prefill = fit["prefill"]["alpha_s"] + 7 / 8 * copies * 2048 * 7168 * 2 / (fit["prefill"]["eta"] * link)
    fused_prompt = {**prompt, lay.w_E: sympy.Integer(0)}
    prompt_gathered = 7 / 8 * 8 * 2048 * 7168 * 2
    own_prefill = sum(float(values[a]) + prompt_gathered / (float(values[e]) * link) for a, e in _FUSED[2:])
    delta = value(lay.t_pc, prompt, lib) - value(lay.t_pc, fused_prompt, lib)
    assert float(delta) == pytest.approx(layers * (prefill - own_prefill), rel=1e-9)


def test_deepep_fit_is_the_profiled_tables():
    """formulas/deepep.json is what tools/fit_deepep.py makes of aiconfigurator's DeepEP tables (recomputed here),
    not numbers typed by hand, and its decode fit is within 6% of them at the median on every accelerator."""
    from derive.calibration import deepep

    tool = _tool("fit_deepep")
    data = json.loads(tool.DATA.read_text())
    for system, gpu in tool.GPUS.items():
        fit = deepep()["accelerators"][gpu]
        link = data["fits"][system]["ll"]["link_bandwidth_bytes_per_s"]
        for phase, path in (("decode", "ll"), ("prefill", "ht")):
            assert tool.fit_line(tool._rows(data["points"], system, path), link) == fit[phase], (gpu, phase)
        assert fit["decode"]["median_rel_error"] < 0.06, gpu


def test_blackwell_gathers_fp8_experts_inputs_in_fp8():
    """On Blackwell, TensorRT-LLM's fused MoE dispatch gathers FP8 and FP8-block experts' inputs in FP8 and sums the
    outputs back in bf16 (aiconfigurator 0.12's MoEDispatch on sm 100); on Hopper, and for bf16 experts, both go in
    bf16. Qwen3-30B-A3B on 8 B200s, dp8 etp8 (ep = 1): the all-gather sends half the bytes, so the slot is
    48·(7/8·8·X_r/2)/(eta_ag·900 GB/s) shorter than with r_dq = 1, and the floor's bytes are 3/4 of bf16's."""
    from derive.calibration import dispatch_share

    b200, h200 = load_gpu("b200"), load_gpu("h200")
    assert dispatch_share(b200, "fp8-block") == sympy.Rational(1, 2) == dispatch_share(b200, "fp8")
    assert dispatch_share(h200, "fp8-block") == 1 and dispatch_share(b200, "bf16") == 1
    values, lib = values_at("qwen3-30b-a3b", Layout(1, 1, 1, 8), batch=64, context=2048, gpu="b200")
    values[lay.r_dq] = sympy.Rational(1, 2)
    bf16 = {**values, lay.r_dq: sympy.Integer(1)}
    rank_bytes = 64 / 8 * 2048 * 2  # a rank's tokens, d = 2,048 bf16 values each
    sent = 7 / 8 * 8 * rank_bytes  # an all-gather: every accelerator's tokens to the 7 others
    saved = 48 * (sent / 2) / (float(values[lay.eta_ag]) * 900e9)
    assert float(value(lay.t_sc, bf16, lib) - value(lay.t_sc, values, lib)) == pytest.approx(saved, rel=1e-9)
    assert float(value(lay.Y_ep, values, lib) / value(lay.Y_ep, bf16, lib)) == pytest.approx(0.75, rel=1e-12)


def test_deepep_across_nodes_runs_at_the_nics_measured_share():
    """DeepSeek-V3 on 16 H200s, dp16 ep16: the expert group spans two 8-GPU NVLink domains, so DeepEP's bytes cross
    the 400 Gb/s NIC (50 GB/s one way, DGX H200) at the 43 GB/s DeepEP's README measured at EP 16 (x_E = 1), not at
    the NVLink share fitted inside a node; its fixed time stays the fitted one."""
    from derive.calibration import deepep

    layout = Layout(1, 16, 1, 16)
    values, lib = values_at("deepseek-v3", layout, batch=64, context=2048, gpu="h200")
    assert values[lay.x_E] == 1 and values[lay.w_E] == 1 and float(values[lay.BW_ep]) == 50e9
    fit = deepep()["accelerators"]["h200"]["decode"]
    inside = {**values, lay.x_E: sympy.Integer(0)}
    sent = 15 / 16 * 8 * (64 / 16) * 7168 * 2  # a rank's 4 tokens, 8 copies each, to the 15 others
    across, within = sent / (0.86 * 50e9), sent / (fit["eta"] * 50e9)
    delta = value(lay.t_sc, values, lib) - value(lay.t_sc, inside, lib)
    assert float(delta) == pytest.approx(58 * (across - within), rel=1e-9)


def test_a_tensor_parallel_group_past_the_node_all_reduces_over_its_network():
    """Llama 3.1 405B at tp 16 on HGX H100 (8 a node): its all-reduce crosses the scale-out network, in predict, eval
    and sweep alike; at tp 8 or less it stays on NVLink."""
    import numpy as np

    import derive
    from derive.catalog import load_gpu
    from derive.sweeps import Grid, compile_combination, evaluate_grid, predict_target
    from derive.systems import system_for, tp_link
    from formulas import sharding as sh

    h100 = load_gpu("h100")
    system = system_for(h100)
    assert tp_link(h100, 8)[0] == h100.link and tp_link(h100, 16)[0] == min(system.network, system.nvlink)
    d = derive.predict("llama3.1-405b", tp=16, batch=8)
    assert d.sheet.values[sh.BW_link] == system.network
    grid = Grid(
        {"model": ["llama3.1-405b"], "gpu": ["h100"], "dtype": ["bf16"]},
        {"tp": [16], "batch": [8], "prompt": [2048], "output": [256]},
    )
    (_, columns), *_ = list(evaluate_grid(predict_target(), grid))
    assert columns["tpot"][0] == pytest.approx(d.results["tpot"].magnitude, rel=1e-9)
    # tp held fixed rather than swept: the same link, as a number
    held = compile_combination(
        predict_target(), "llama3.1-405b", "h100", "bf16", ("batch",), {"tp": 16, "prompt": 2048, "output": 256}
    )
    assert held.functions["tpot"](np.array([8.0]))[0] == pytest.approx(d.results["tpot"].magnitude, rel=1e-9)
