"""Issue 15: the wrong answers and follow-ups of prefill-crossover, vendor-claim, moe-experts-read, measure-mbu and
mbu-budget, each pinned by one relation between a wrong answer's number and the right one."""

from __future__ import annotations

from tests.interview import built as _answer
from tests.interview import value as _value
from tests.interview import wrong as _wrong


def test_prefill_without_bytes_per_weight_lands_at_half_the_ridge():
    """Forgetting b_w gives I_ridge/2 tokens; times b_w that is the short form I_ridge·b_w/2 the sheet derives."""
    wrong = _wrong("prefill-crossover", "no_bytes")
    assert _value(wrong, "no_bytes") * _value(wrong, "b_w") == _value(wrong, "t_ridge")
    assert _value(wrong, "no_bytes") < _answer("prefill-crossover").results["compute_bound_prompt_tokens"].number
    # fp8 weights on fp8 tensor cores: the ridge doubles as the bytes per weight halve, the crossover stays put.
    follow = _answer("prefill-crossover").follow_up.answer  # type: ignore[union-attr]
    assert abs(float(_value(follow, "s_pc_o") / _value(follow, "s_pc")) - 1) < 0.01


def test_vendor_aggregate_reading_leaves_each_user_below_the_floor():
    """Read as the server's total, the claim spreads over B_claim users, each slower than one user alone."""
    wrong = _wrong("vendor-claim", "each")
    assert _value(wrong, "each") * _value(wrong, "users") == _value(wrong, "claim")
    assert _value(wrong, "each") < _value(wrong, "floor")
    # The bandwidth floor grows with the accelerators (the question's tp is 1), a little less than in proportion:
    # past Llama 3 70B's 8 KV heads each accelerator keeps a copy of its heads' cache.
    follow = _answer("vendor-claim").follow_up.answer  # type: ignore[union-attr]
    proportional = _value(follow, "floor") * _value(follow, "n_tp")
    assert 0.95 * proportional < _value(follow, "floor_tp") < proportional
    assert _value(follow, "real_tp") < _value(follow, "claim") <= _value(follow, "floor_tp")


def test_moe_active_count_is_the_read_over_the_ratio():
    answer = _answer("moe-experts-read")
    wrong = _wrong("moe-experts-read", "active")
    assert _value(wrong, "read") / _value(wrong, "active") == answer.results["read_vs_active"].number
    distinct = _wrong("moe-experts-read", "naive")
    assert _value(distinct, "naive") == _value(distinct, "experts")  # B·k >= E: every expert, as if no collisions
    assert _value(distinct, "naive_read") > _value(distinct, "read")


def test_mbu_against_binary_units_is_low_by_a_tib_over_a_tb():
    answer = _answer("measure-mbu")
    right = answer.results["mbu"].number * 100
    binary = _wrong("measure-mbu", "tib_mbu")
    assert _value(binary, "tib_mbu") * _value(binary, "tib") == right
    aggregate = _wrong("measure-mbu", "agg_mbu")
    assert _value(aggregate, "agg_mbu") == right * _value(aggregate, "agg_x")


def test_budget_read_as_percent_over_finds_mbu_of_the_gap():
    """(1 - U)·floor against (1/U - 1)·floor: the misread gap is the right one times the MBU."""
    wrong = _wrong("mbu-budget", "short_missing")
    assert _value(wrong, "short_missing") / _value(wrong, "missing") == _value(wrong, "mbu") / 100


def test_cuda_graphs_buy_only_the_cpus_excess_over_the_gpu():
    """One launch model (formulas/launch.py): a graph removes the CPU's launching where it outlasts the GPU, never the
    GPU's gaps between kernels. Llama 3 70B on 4 H100s is GPU-bound: 960 launches at 5 us (4.8 ms) hide behind its
    kernels, so a graph buys little and the 960 x 1 us of gaps stay. At 18 us a launch it is launch-bound, and the
    graph's saving is the CPU's excess."""
    import sympy

    follow = _answer("mbu-budget").follow_up.answer  # type: ignore[union-attr]
    assert "Little" in follow.text and _value(follow, "gaps") == 80 * 15 * sympy.Rational(1, 10**6)
    fast = _answer("mbu-budget", launch_overhead="18 us").follow_up.answer  # type: ignore[union-attr]
    floor = _value(fast, "floor")
    assert _value(fast, "graph_mbu") == floor / _value(fast, "graph_step") * 100 > _value(fast, "mbu")
