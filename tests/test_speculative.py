"""Speculative decoding's gain in closed form (formulas/speculative.py): issue 26, item 6, the library's part."""

from __future__ import annotations

import json

import pytest

SETTINGS = ("--set", "draft_tokens=4", "--set", "acceptance_rate=0.7", "--set", "draft_cost=0.05")


def _value(run, *args):  # type: ignore[no-untyped-def]
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["results"]


def test_the_gain_while_memory_bound_by_hand(run):
    """Llama 3 8B at batch 1 reads its weights: the pass costs a step, the drafts 4 x 5% of one. tau_sp =
    (1 - 0.7^5)/(1 - 0.7) = 2.7731 tokens (Leviathan et al. 2023, eq. 1), and the gain 2.7731/1.2 = 2.3109."""
    results = _value(run, "eval", "speculative_gain", "--model", "llama3-8b", *SETTINGS)
    assert results["speculative_gain"]["value"] == pytest.approx((1 - 0.7**5) / 0.3 / 1.2, rel=1e-12)


def test_the_old_form_at_its_limits():
    """No drafted token (k = 0) is one token a pass at a step's cost: the gain is 1 at every batch, exactly; and a
    draft never accepted (alpha = 0) makes one token a pass."""
    import sympy

    from derive.core.evaluation import inline
    from formulas import library, speculative
    from formulas import notation as sym

    lib = library()
    gain = inline(speculative.G_sp.symbol, speculative.k_d, lib)
    step = lib.get("step_time").expr
    assert sympy.simplify(gain.subs(speculative.k_d.symbol, 0).subs(sym.t_step.symbol, step)) == 1
    tokens = lib.get("speculative_tokens_per_pass").expr
    assert tokens.subs(speculative.alpha_acc.symbol, 0) == sym.tau.symbol


def test_the_batch_where_speculation_stops_paying(run):
    """Solved in closed form on the piece where the step reads and the pass computes: the gain is above 1 at the
    whole batch below the root and below 1 at the one above. At a 2,048-token context the cache keeps every
    batch memory-bound, and there is no such batch."""
    solved = _value(
        run, "solve", "speculative_gain = 1", "--for", "batch", "--model", "llama3-8b", "-s", "128", *SETTINGS
    )
    batch = solved["batch"]["value"]
    assert 1 < batch < 1000
    import math

    def gain(at: int) -> float:
        return _value(
            run, "eval", "speculative_gain", "--model", "llama3-8b", "-s", "128", "--set", f"batch={at}", *SETTINGS
        )["speculative_gain"]["value"]

    assert gain(math.floor(batch)) > 1 > gain(math.ceil(batch))
    long = _value(run, "solve", "speculative_gain = 1", "--for", "batch", "--model", "llama3-8b", *SETTINGS)
    assert long["batch"]["value"] is None


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("acceptance_rate=1", "must be below 1"),  # 1 + alpha + ... + alpha^k over 1 - alpha is 0/0 there
        ("acceptance_rate=1.5", "at most 1"),  # a chance above 1 would gain more than k+1 tokens a pass
        ("acceptance_rate=-0.1", "at least 0"),
        ("draft_tokens=2.5", "whole number"),
        ("draft_tokens=0", "at least 1"),
    ],
)
def test_a_chance_or_a_draft_length_out_of_range_is_refused(run, setting, says):
    result = run("eval", "speculative_gain", "--model", "llama3-8b", *SETTINGS, "--set", setting)
    assert result.exit_code == 2
    assert says in result.stderr and "Traceback" not in result.stderr


def test_a_draft_never_accepted_gains_nothing_but_its_cost(run):
    """alpha = 0 is allowed: one token a pass, and the gain is 1/(1 + k·c_d) while memory-bound (1/1.2 here)."""
    results = _value(run, "eval", "speculative_gain", "--model", "llama3-8b", *SETTINGS, "--set", "acceptance_rate=0")
    assert results["speculative_gain"]["value"] == pytest.approx(1 / 1.2, rel=1e-12)
