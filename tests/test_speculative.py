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
        ("acceptance_rate=1.5", "below 1"),  # a chance above 1 would gain more than k+1 tokens a pass
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
    never = ("--set", "draft_tokens=4", "--set", "acceptance_rate=0", "--set", "draft_cost=0.05")
    results = _value(run, "eval", "speculative_gain", "--model", "llama3-8b", *never)
    assert results["speculative_gain"]["value"] == pytest.approx(1 / 1.2, rel=1e-12)


# Issue 26, item 6: plan and predict take a draft, or the config's own MTP modules.

DRAFT = ("--draft-tokens", "4", "--acceptance", "0.7", "--draft-cost", "0.05")


def test_predict_with_a_draft_by_hand(run):
    """TPOT is the verification pass (the layout step with k+1 = 5 tokens a sequence through the weights) and its
    4 draft steps of 5% of a pass, over the tau_sp = (1 - 0.7^5)/0.3 tokens they gain."""
    out = _value(run, "predict", "--model", "llama3-8b", "--batch", "8", *DRAFT)
    tau_sp = (1 - 0.7**5) / 0.3
    assert out["tokens_per_pass"]["value"] == pytest.approx(tau_sp, rel=1e-12)
    for name in ("tpot", "tpot_floor"):
        drafted = out[name.replace("tpot", "pass")]["value"] * (1 + 4 * 0.05) / tau_sp
        assert out[name]["value"] == pytest.approx(drafted, rel=1e-12)


def test_the_layout_step_is_the_old_one_without_a_draft():
    """k = 0 and alpha = 0: one token through the weights and one gained, the time per token the step itself."""
    from formulas import layout as lay
    from formulas import library

    lib = library()
    for name, step in (("layout_token_time", lay.tpot_c), ("layout_token_time_floor", lay.tpot_f)):
        expr = lib.get(name).expr.subs(speculative_tau_sp(), lib.get("speculative_tokens_per_pass").expr)
        assert expr.subs({_k(): 0, _alpha(): 0}) == step.symbol
    from formulas import notation as sym

    assert lib.get("layout_tokens_through").expr.subs(_k(), 0) == sym.tau.symbol


def speculative_tau_sp():  # type: ignore[no-untyped-def]
    from formulas import speculative

    return speculative.tau_sp.symbol


def _k():  # type: ignore[no-untyped-def]
    from formulas import speculative

    return speculative.k_d.symbol


def _alpha():  # type: ignore[no-untyped-def]
    from formulas import speculative

    return speculative.alpha_acc.symbol


def test_mtp_reads_the_config():
    """DeepSeek-V3's config.json ships num_nextn_predict_layers = 1 (its published config); Llama 3 70B none."""
    from derive.catalog import load_model
    from derive.speculation import speculation

    drafted = speculation(load_model("deepseek-v3"), {"mtp": True})
    assert (drafted.draft_tokens, float(drafted.acceptance)) == (1, 0.85)  # DeepSeek-V3 report, sec. 5.4.3
    assert drafted.draft_cost == pytest.approx(1 / 61)  # one MTP layer of its 61
    assert load_model("llama3-70b").config.mtp_layers == 0


def test_plan_with_mtp_meets_its_target_with_more_tokens(run):
    """The MTP plan meets TPOT per output token, and makes more tokens a second per accelerator than without."""
    args = ("plan", "--model", "deepseek-v3", "--dtype", "fp8-block", "--gpu", "b200", "--tpot", "50 ms", "--json")
    plain = json.loads(run(*args).stdout)
    result = run(*args, "--mtp")
    assert result.exit_code == 0, result.stderr
    drafted = json.loads(result.stdout)
    assert drafted["pick"]["tpot_s"] <= 0.050 * (1 + 1e-9)
    assert drafted["pick"]["tokens_per_s_per_accelerator"] > plain["pick"]["tokens_per_s_per_accelerator"]
    assert any("speculative decoding" in note for note in drafted["notes"])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--model", "llama3-70b", "--mtp"), "no multi-token-prediction modules"),
        (("--model", "llama3-8b", "--acceptance", "0.7"), "none is given"),
        (("--model", "llama3-8b", "--draft-tokens", "4"), "needs --acceptance and --draft-cost"),
        (("--model", "llama3-8b", *DRAFT[:2], "--acceptance", "1", "--draft-cost", "0.1"), "below 1"),
        (("--model", "llama3-8b", *DRAFT[:4], "--draft-cost", "2"), "at most 1"),
    ],
)
@pytest.mark.parametrize("command", [("predict",), ("plan", "--tpot", "50 ms")])
def test_a_draft_badly_described_is_refused(run, command, args, says):
    result = run(*command, *args)
    assert result.exit_code == 2 and says in result.stderr and "Traceback" not in result.stderr
