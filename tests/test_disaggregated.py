"""Disaggregated serving (formulas/disaggregated.py, derive/disaggregation.py): issue 26, item 3."""

from __future__ import annotations

import json
import math

import pytest
import sympy

from derive.catalog import load_gpu, load_model
from derive.disaggregation import decode_capacity, disaggregate
from derive.planning import Targets, search_gpu
from derive.systems import system_for
from formulas import disaggregated as dis
from formulas import layout as lay
from formulas import library
from formulas import notation as sym
from formulas import queueing as qu

TARGETS = Targets(ttft=sympy.Integer(2), tpot=sympy.Rational(20, 1000))


def _split(model: str = "llama3-8b", gpu: str = "h100", targets: Targets = TARGETS):  # type: ignore[no-untyped-def]
    found = search_gpu(load_model(model), load_gpu(gpu), "bf16", targets, 8, 1024, None)
    split = _pools(found, targets)
    return found, split


def _pools(found, targets: Targets):  # type: ignore[no-untyped-def]
    split = disaggregate(found.table, found.compiled, found.system, found.gpu.name, targets, None, 1024)
    assert split is not None
    return split


def test_the_pools_by_hand():
    """Llama 3 8B on H100s, 2,048-token prompts, 256-token replies, TTFT 2 s, TPOT 20 ms.

    - Handover: a token's cache is 2·32 layers·8 KV heads·128·2 bytes = 131,072 B (its config), 2,048 of them
      split over each worker's s_kv = min(tp, 8) shards and p stages, the worker with fewer setting the time, over
      NVLink (450 GB/s one way, the H100 datasheet's 900 GB/s halved) where both workers fit one 8-GPU node.
    - Serving (aiconfigurator 0.12's Task defaults): a prefill worker's pass is 1.1 of the profiled one, a decode
      worker's step 1.08, and paired pools deliver 0.9 and 0.92 of their standalone rates.
    - Decode worker: Q_d = 0.92·B_L/(S_o·1.08·step); prefill worker: one prompt a pass on each attention rank (a
      context server's token budget one prompt, as aiconfigurator configures it), so the M/D/1 TTFT
      (formulas/queueing.py) with that whole pass, 1.1 as long, as each prompt's service, plus the handover, equals
      the target at Q_p/0.9; together S_o/(N_p/Q_p + N_d/Q_d) tokens a second per accelerator.
    """
    found, split = _split()
    table = found.table
    assert table is not None
    d, pf = split.decode, split.prefill
    # Each side holds its share, to send or to receive: the larger share sets the time.
    shards = min(min(d.tp, 8) * d.pp, min(pf.tp, 8) * pf.pp)
    assert split.handover_bytes == 2 * 32 * 8 * 128 * 2 * 2048 / shards
    assert split.prefill.accelerators + d.accelerators <= 8 and split.handover_link == "NVLink"
    assert split.handover == pytest.approx(split.handover_bytes / 450e9, rel=1e-12)
    assert split.decode_step <= 0.020
    j = table.layouts.index(d)
    inputs = [*(column[j : j + 1] for column in table.base), table.per_prompt[j : j + 1]]
    alone_step = float(found.compiled.step(*inputs, float(split.decode_batch))[0])  # type: ignore[union-attr]
    assert split.decode_step == pytest.approx(1.08 * alone_step, rel=1e-12)
    assert split.decode_capacity == pytest.approx(0.92 * split.decode_sequences / (256 * split.decode_step), rel=1e-12)
    i = table.layouts.index(split.prefill)
    alone = 1.1 * float(table.pass_every_rank[i])  # one prompt on each rank, and each prompt's service
    offered = split.prefill_capacity / 0.9  # the queue at its standalone rate
    rho = offered * alone / split.prefill.dp  # each attention rank's share of the prompts
    wait = rho * alone / (2 * (1 - rho))  # M/D/1, Pollaczek-Khinchine
    assert alone + wait + split.handover == pytest.approx(2.0, rel=1e-9)
    assert split.ttft == pytest.approx(2.0, rel=1e-9)  # busy at capacity: the mean TTFT is the target
    per_accelerator = 256 / (
        split.prefill.accelerators / split.prefill_capacity + d.accelerators / split.decode_capacity
    )
    assert split.per_accelerator == pytest.approx(per_accelerator, rel=1e-12)
    assert split.prefill_workers_per_decode_worker == pytest.approx(split.decode_capacity / split.prefill_capacity)


def test_the_decode_batch_is_the_largest_its_step_allows():
    """One more sequence and the decode step alone, as served (1.08 of the profiled step), misses the TPOT target
    (or memory is full)."""
    found, split = _split()
    assert found.compiled is not None and found.table is not None
    i = found.table.layouts.index(split.decode)
    inputs = [*(column[i : i + 1] for column in found.table.base), found.table.per_prompt[i : i + 1]]
    over = float(found.compiled.step(*inputs, float(split.decode_batch + 1))[0])
    assert 1.08 * over > 0.020 or split.decode_batch == int(found.table.by_memory[i])


def test_a_decode_workers_capacity_at_any_batch_is_the_pools_at_its_own():
    """decode_capacity (what benchmarks/plan_compare.py rates a decode worker at aiconfigurator's batch with) gives the
    pair's Q_d at the pair's own micro-batch, and more requests a second at a larger one."""
    found, split = _split()
    at = decode_capacity(found.table, found.compiled, split.decode, split.decode_batch, TARGETS.output)
    assert at == pytest.approx(split.decode_capacity, rel=1e-12)
    more = decode_capacity(found.table, found.compiled, split.decode, 2 * split.decode_batch, TARGETS.output)
    assert more > at


def test_the_old_forms_at_their_limits():
    """With prompts free (Q_p without bound) the two pools are the decode pool alone, and with no handover the
    prefill worker's capacity is an aggregated copy's TTFT capacity and its TTFT the queued prompt pass, each prompt
    served by a whole pass (t_rq = TTFT_L), once serving costs nothing over the profiled passes (kappa = u = 1, as in
    the floor)."""
    lib = library()
    unserved = {s.symbol: 1 for s in (dis.kappa_p, dis.kappa_d, dis.u_p, dis.u_d)}
    throughput = lib.get("disaggregated_throughput").expr.subs(
        dis.f_p.symbol, lib.get("prefill_accelerator_share").expr
    )
    throughput = throughput.subs(dis.r_pd.symbol, lib.get("prefill_workers_per_decode_worker").expr)
    assert sympy.limit(throughput, dis.Q_p.symbol, sympy.oo) == dis.R_dp.symbol
    capacity = lib.get("prefill_worker_capacity").expr.subs(unserved)
    whole_pass = {lay.t_rq.symbol: qu.ttft_c.symbol / qu.q_1.symbol}
    aggregated = lib.get("ttft_capacity").expr.subs(qu.S_rq.symbol, lib.get("prompt_service_time").expr)
    assert sympy.simplify(capacity.subs(dis.t_kv.symbol, 0) - aggregated.subs(whole_pass)) == 0
    ttft = lib.get("disaggregated_ttft").expr.subs(unserved)
    queued = qu.ttft_c.symbol + lib.get("prompt_queue_wait").expr.subs(
        {qu.rho_p.symbol: lib.get("prompt_load").expr, qu.S_rq.symbol: lib.get("prompt_service_time").expr}
    ).subs(whole_pass)
    assert sympy.simplify(ttft.subs(dis.t_kv.symbol, 0) - queued) == 0
    # And the decode pool's tokens are an aggregated copy's where prompts add nothing to its step (t_rq = 0).
    decode = lib.get("decode_worker_capacity").expr.subs(dis.t_dw.symbol, lib.get("decode_worker_step").expr)
    assert decode.subs(unserved) == lay.B_L.symbol * sym.tau.symbol / (sym.S_o.symbol * lay.t_tok.symbol)
    pool = (
        lib.get("decode_pool_throughput").expr.subs(dis.Q_d.symbol, lay.Q_L.symbol).subs(dis.N_d.symbol, lay.N_L.symbol)
    )
    copy = lib.get("throughput_per_accelerator").expr.subs(lay.Q_s.symbol, lay.Q_L.symbol)
    assert sympy.simplify(pool - copy) == 0 and sym.S_o.symbol in pool.free_symbols


def test_a_rate_takes_whole_workers_in_each_pool():
    targets = Targets(ttft=sympy.Integer(2), tpot=sympy.Rational(20, 1000), rate=sympy.Integer(50))
    _, split = _split(targets=targets)
    assert split.workers_for_rate is not None
    prefill, decode = split.workers_for_rate
    assert prefill == math.ceil(50 / split.prefill_capacity) and decode == math.ceil(50 / split.decode_capacity)
    assert split.for_rate == prefill * split.prefill.accelerators + decode * split.decode.accelerators
    assert split.ttft <= 2.0  # the rate spread over whole prefill workers loads each at most to capacity


def test_the_handover_crosses_the_network_past_one_node():
    """DeepSeek-V3 in bf16 needs more than one 8-GPU H200 node for either pool: the cache crosses a NIC (400 Gb/s,
    50 GB/s one way, DGX H200 datasheet)."""
    targets = Targets(ttft=sympy.Integer(3), tpot=sympy.Rational(60, 1000))
    found = search_gpu(load_model("deepseek-v3"), load_gpu("h200"), "bf16", targets, 64, 1024, None)
    split = _pools(found, targets)
    assert split.prefill.accelerators + split.decode.accelerators > 8 and split.handover_link == "the network"
    assert split.handover == pytest.approx(split.handover_bytes / float(system_for(load_gpu("h200")).network))


@pytest.mark.parametrize(
    ("model", "tpot"),
    [("qwen3-30b-a3b", "30 ms"), ("gpt-oss-20b", "20 ms"), ("nemotron3-nano", "30 ms"), ("llama3-70b", "50 ms")],
)
def test_plan_says_which_mode_wins_and_what_it_computes(run, model, tpot):
    result = run("plan", "--model", model, "--tpot", tpot, "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    split, pick = out["disaggregated"], out["pick"]
    assert split["decode_step_s"] <= float(tpot.split()[0]) / 1000 * (1 + 1e-9) and split["ttft_s"] <= 2.0 + 1e-9
    ratio = split["tokens_per_s_per_accelerator"] / pick["tokens_per_s_per_accelerator"]
    gain = split["decode_pool_tokens_per_s_per_accelerator"] / pick["tokens_per_s_per_accelerator"]
    share = split["prefill_accelerators_per_decode_accelerator"]
    assert ratio == pytest.approx(gain / (1 + share), rel=1e-9)
    winner = "disaggregated" if split["usd_per_million_tokens"] < pick["usd_per_million_tokens"] else "aggregated"
    assert split["says"].startswith(f"{winner} wins") and f"= {ratio:.2f}x" in split["says"]
    text = run("plan", "--model", model, "--tpot", tpot)
    assert f"{winner.capitalize()} wins" in text.stdout


def test_a_pair_fits_the_accelerators_one_copy_may_use():
    """With at most 8 accelerators a copy, one prefill and one decode worker together use at most 8 (DeepSeek-V3 in
    fp8-block on H200: each worker needs 8, so no pair fits, and the plan says none does)."""
    targets = Targets(ttft=sympy.Integer(2), tpot=sympy.Rational(50, 1000))
    found = search_gpu(load_model("deepseek-v3"), load_gpu("h200"), "fp8-block", targets, 8, 1024, None)
    args = (found.table, found.compiled, found.system, found.gpu.name, targets, None, 1024)
    assert disaggregate(*args, 8) is None
    loose = disaggregate(*args, 16)
    assert loose is not None and loose.prefill.accelerators + loose.decode.accelerators <= 16


def test_fleets_equal_but_for_round_off_tie_and_a_busy_copy_decides():
    """Qwen3.5-27B at 10 req/s on H100s: both modes need 3 accelerators, priced 0.8756510416666667 and
    0.8756510416666669 USD per million tokens by two sums of floats; the split's busy copy (0.69) is cheaper than the
    aggregated one's (0.82), so the split wins, and the verdict says the fleets tie."""
    from types import SimpleNamespace

    from derive.disaggregation import ranked

    agg = SimpleNamespace(fleet_cost_per_million=0.8756510416666667, cost_per_million=0.8220509155413884)
    split = SimpleNamespace(fleet_cost_per_million=0.8756510416666669, cost_per_million=0.6867774694212787)
    assert ranked(split) < ranked(agg)  # type: ignore[arg-type]


def test_the_floor_serves_the_pools_without_overhead():
    """Under --floor the pools are the roofline's, with no serving overhead (kappa = u = 1): a decode worker's step
    is the floor's step, and its capacity B_L/(S_o·step)."""
    found = search_gpu(load_model("llama3-8b"), load_gpu("h100"), "bf16", TARGETS, 8, 1024, None, floor=True)
    split = disaggregate(found.table, found.compiled, found.system, found.gpu.name, TARGETS, None, 1024, floor=True)
    assert split is not None and found.table is not None and found.compiled is not None
    j = found.table.layouts.index(split.decode)
    inputs = [*(column[j : j + 1] for column in found.table.base), found.table.per_prompt[j : j + 1]]
    assert split.decode_step == pytest.approx(float(found.compiled.step(*inputs, float(split.decode_batch))[0]))
    assert split.decode_capacity == pytest.approx(split.decode_sequences / (256 * split.decode_step), rel=1e-12)
