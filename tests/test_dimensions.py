"""The dimension checker: a formula whose sides disagree fails when it is defined, naming the term."""

from __future__ import annotations

import sys
import textwrap

import pytest
import sympy

from derive import checker
from derive.core.errors import UnitError
from derive.core.library import Formula
from derive.core.symbols import define
from formulas import notation as sym


def test_sum_of_bytes_and_tokens_names_the_term():
    with pytest.raises(UnitError) as err:
        Formula(sym.W, sym.N.symbol * sym.b_w.symbol + sym.S.symbol, "a deliberate mistake")
    message = str(err.value)
    assert message.startswith("formula weight_bytes: terms of a sum disagree")
    assert "`S` is [token/sequence]" in message


def test_declared_unit_mismatch_is_reported():
    # Parameters are not bytes: forgetting the dtype is the classic mistake.
    with pytest.raises(UnitError) as err:
        Formula(sym.W, sym.N.symbol, "a deliberate mistake")
    assert (
        str(err.value)
        == "formula weight_bytes: the right side `N` is [parameter] but weight_bytes is declared in [byte]"
    )


def test_max_branches_must_agree():
    with pytest.raises(UnitError, match="arguments of Max disagree"):
        Formula(sym.t_step, sympy.Max(sym.t_mem.symbol, sym.W.symbol), "a deliberate mistake")


def test_function_arguments_must_be_pure_numbers():
    with pytest.raises(UnitError, match="argument of log must be a pure number"):
        Formula(sym.t_step, sym.t_mem.symbol * sympy.log(sym.W.symbol), "a deliberate mistake")


def test_count_formulas_must_be_pure_numbers():
    with pytest.raises(UnitError, match="a count must be a pure number"):
        Formula(sym.N, sym.d.symbol * sym.S.symbol, "a deliberate mistake", counts=True)


def test_symbols_must_be_declared_in_base_units():
    with pytest.raises(UnitError, match="not in base units"):
        define("test_gigabytes", "GBx", "GB", "GBx", "a unit with a prefix")


def test_check_command_passes(run):
    result = run("check")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(": 0 failed")
    assert "ok   knee" not in result.stdout  # lists formulas, not commands
    assert "ok   weight_bytes" in result.stdout


def test_check_fails_on_a_module_with_a_wrong_formula(tmp_path, monkeypatch):
    module = tmp_path / "wrong_formulas.py"
    module.write_text(
        textwrap.dedent("""
        from derive.core.library import formula
        from formulas.notation import W, N, S
        wrong = formula(W, N.symbol + S.symbol, "a deliberate mistake")
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    report, failures = checker.run(checker.MODULES + ["wrong_formulas"])
    sys.modules.pop("wrong_formulas", None)
    assert failures == 1
    assert (
        "FAIL wrong_formulas: formula weight_bytes: terms of a sum disagree: `N` is [parameter] but "
        "`S` is [token/sequence]" in report
    )
