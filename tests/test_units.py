"""The registry: GB is not GiB, a FLOP is not a byte, and options parse with their units."""

from __future__ import annotations

import pytest
import sympy

from derive.core.errors import UnitError
from derive.core.units import format_quantity, parse_quantity


def test_gigabyte_and_gibibyte_differ():
    assert parse_quantity("80 GB", "byte") == 80 * 10**9
    assert parse_quantity("80 GiB", "byte") == 80 * 2**30


def test_bandwidth_and_compute_parse_exactly():
    # H100 SXM datasheet: 3.35 TB/s, 989.4 dense BF16 TFLOP/s.
    assert parse_quantity("3.35 TB/s", "byte/second") == sympy.Integer(3_350_000_000_000)
    assert parse_quantity("989.4 TFLOP/s", "FLOP/second") == sympy.Integer(989_400_000_000_000)


def test_tflops_spelling_means_per_second():
    assert parse_quantity("989.4 TFLOPS", "FLOP/second") == parse_quantity("989.4 TFLOP/s", "FLOP/second")


def test_bits_are_an_eighth_of_a_byte():
    assert parse_quantity("8 Gb/s", "byte/second") == 10**9


def test_mac_is_two_flops():
    assert parse_quantity("1 TMAC/s", "FLOP/second") == 2 * 10**12


def test_bare_number_is_refused_not_guessed():
    with pytest.raises(UnitError) as err:
        parse_quantity("3", "FLOP/second", "--flops")
    assert str(err.value) == "--flops '3' has no unit. Write it with one, for example '989 TFLOP/s'"


def test_non_positive_quantity_is_refused():
    with pytest.raises(UnitError, match="must be positive"):
        parse_quantity("-3.35 TB/s", "byte/second", "--bandwidth")


def test_wrong_dimension_names_both():
    with pytest.raises(UnitError) as err:
        parse_quantity("3 TFLOP/s", "byte/second", "--bandwidth")
    assert str(err.value) == (
        "--bandwidth '3 TFLOP/s' is a compute rate (FLOP/second), not a bandwidth (byte/second). "
        "Give it in byte/second or a prefixed form, for example '3.35 TB/s'"
    )


def test_tokens_per_second_is_not_per_sequence():
    with pytest.raises(UnitError):
        parse_quantity("100 token/s", "token/(second*sequence)")


def test_format_picks_decimal_prefixes():
    assert format_quantity(1_677_721_600, "byte/sequence") == "1.678 GB/sequence"
    assert format_quantity(56, "sequence") == "56 sequences"
    assert format_quantity(sympy.Rational(2387, 100000), "second") == "23.87 ms"


def test_a_factor_just_off_a_whole_number_keeps_the_digits_that_show_it():
    """fp8-block's weights: 8 bits and one fp32 scale per 128 x 128 block, 1 + 4/16,384 bytes a weight (DeepSeek-V3
    report, sec. 3.3.2). Printed as '1 B/parameter', N·b_w = 70.57 GB read false for Llama 3 70B."""
    assert format_quantity(1 + sympy.Rational(4, 128 * 128), "byte/parameter") == "1.000244 B/parameter"
    assert format_quantity(1, "byte/parameter") == "1 B/parameter"
    assert format_quantity(sympy.Rational(20000003, 1000000) / 1000, "second") == "20 ms"
