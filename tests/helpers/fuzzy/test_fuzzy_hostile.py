"""`FuzzyEquals` on hostile input: numbers no float holds, integers too long to print, numpy and
pandas values, and numbers exactly on the tolerance boundary."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from helpers.fuzzy.evaluator import EXACT_DIGITS, FuzzyEquals


def passes(expected, actual, **knobs) -> bool:
    return FuzzyEquals(**knobs).compare(expected, actual).test_pass


def reason(expected, actual, **knobs) -> str:
    return FuzzyEquals(**knobs).compare(expected, actual).reason


# --- numbers beyond a float -----------------------------------------------------------------------


def test_decimals_beyond_float_range_do_not_become_infinities():
    assert not passes(Decimal("1e400"), Decimal("2e400"))
    assert not passes(Decimal("1e400"), float("inf"))
    assert not passes(Decimal("-1.5e400"), float("-inf"), numeric_tolerance=0.5)
    assert passes(Decimal("1e400"), Decimal("1.000e400"))
    assert passes(Decimal("1.005e400"), 10**400, numeric_tolerance=0.01)
    assert not passes(Decimal("1.02e400"), 10**400, numeric_tolerance=0.01)


def test_decimals_too_small_for_a_float_do_not_become_zero():
    assert not passes(Decimal("1e-400"), 0)
    assert not passes(Decimal("1e-400"), Decimal("2e-400"))
    assert passes(Decimal("1e-400"), 0, absolute_tolerance=1e-300)
    assert passes(Decimal("1.5e-400"), Decimal("1.5000e-400"))


def test_numeric_strings_with_hundreds_of_digits_compare_exactly():
    digits = "7" * 400
    assert passes(f"{digits}.5", Decimal(f"{digits}.5"), type_coercion=True)
    assert not passes(f"{digits}.5", f"{digits}.6", type_coercion=True)
    assert not passes(f"{digits}", f"{digits[:-1]}8", type_coercion=True)
    assert passes(f"{digits}", f"{digits[:-1]}8", type_coercion=True, numeric_tolerance=1e-300)
    assert passes(f"{-int(digits) * 1000:,}", -int(digits) * 1000, type_coercion=True)  # thousands separators


def test_fractions_beyond_float_range_compare_exactly():
    assert passes(Fraction(10**400, 3), Fraction(10**400, 3))
    assert not passes(Fraction(10**400, 3), Fraction(10**400 + 1, 3))


def test_huge_decimal_exponents_compare_by_equality_only_and_say_so():
    huge = Decimal(f"1e{EXACT_DIGITS + 1}")
    assert passes(huge, Decimal(f"10e{EXACT_DIGITS}"))
    assert not passes(huge, Decimal(f"2e{EXACT_DIGITS + 1}"), numeric_tolerance=0.9)
    assert reason(Decimal("1e999999999"), Decimal("2e999999999")) == (
        "1 difference: $: expected Decimal('1E+999999999'), got Decimal('2E+999999999') "
        "(a number with more than 4,300 digits compares by equality only)"
    )


def test_an_integer_too_long_to_print_is_compared_and_described():
    huge = 10**5000
    assert passes(huge, huge)
    assert passes([huge, 1], [1, huge], ignore_order=True, numeric_tolerance=0.01)
    out = FuzzyEquals().compare({"n": huge}, {"n": huge + 1})
    assert not out.test_pass
    assert out.reason == (
        "1 difference: $.n: expected <integer of about 5,001 digits>, got <integer of about 5,001 digits>"
    )
    assert reason(huge, 3 * huge, numeric_tolerance=0.01) == (
        "1 difference: $: expected <integer of about 5,001 digits>, got <integer of about 5,001 digits> "
        "(off by 2.00000e+5000, tolerance allows 3.00000e+4998)"
    )
    assert reason({"a": [huge]}, {"a": [huge], "b": [huge]}) == (
        "1 difference: $.b: unexpected key (value <list holding an integer too long to print>)"
    )


# --- the boundary of the tolerance ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual", "tolerance"),
    [(783, 775.17, 0.01), (1.61, 1.5295, 0.05), (90, 100, 0.1), (7, 10, 0.3), (100, 99, 0.01)],
)
def test_a_value_exactly_on_the_boundary_passes(expected, actual, tolerance):
    """The test is `<=` on the decimals as written; float rounding used to fail some of these."""
    assert passes(expected, actual, numeric_tolerance=tolerance)
    assert passes([expected, actual], [actual, expected], ignore_order=True, numeric_tolerance=tolerance)


def test_just_past_the_boundary_fails():
    assert not passes(783, 775.1699999, numeric_tolerance=0.01)
    assert not passes(0.0, 1.0000001e-3, absolute_tolerance=1e-3)
    assert passes(0.0, 1e-3, absolute_tolerance=1e-3)


# --- numpy and pandas ---------------------------------------------------------------------------------


def test_numpy_scalars_compare_as_the_python_numbers_they_hold():
    assert passes(np.float64(1.5), 1.5)
    assert passes({"n": np.int64(3), "ok": np.bool_(True)}, {"n": 3, "ok": True})
    assert passes([np.float32(0.5), np.int8(2)], [2, 0.5], ignore_order=True)
    assert not passes(np.True_, 1)
    assert passes(np.float64(100.0), 100.9, numeric_tolerance=0.01)
    assert passes(np.float64("nan"), float("nan"))


def test_a_numpy_array_fails_the_case_and_says_what_to_pass():
    out = FuzzyEquals().compare({"rows": [1, 2]}, {"rows": np.array([1, 2])})
    assert not out.test_pass
    assert (
        out.reason == "could not compare: actual_output at $.rows is a numpy array of shape (2,); pass array.tolist()"
    )


def test_a_dataframe_fails_the_case_and_says_what_to_pass():
    frame = pd.DataFrame({"id": [1, 2], "total": [10.0, 20.0]})
    out = FuzzyEquals(ignore_order=True).compare(frame, frame.to_dict("records"))
    assert not out.test_pass
    assert out.reason.startswith(
        'could not compare: expected value at $ is a pandas DataFrame; pass frame.to_dict("records")'
    )
    assert FuzzyEquals(ignore_order=True).compare(frame.to_dict("records"), frame.to_dict("records")).test_pass
    assert "pass .tolist()" in FuzzyEquals().compare([{"s": frame["id"]}], [{"s": [1, 2]}]).reason
    assert "$[0].s is a pandas Series" in FuzzyEquals().compare([{"s": frame["id"]}], [{"s": [1, 2]}]).reason


def test_to_dict_refuses_numbers_json_cannot_hold_and_says_what_to_store():
    with pytest.raises(ValueError, match=r"FuzzyEquals.to_dict: value holds Decimal\('1.5E-400'\).*as a string"):
        FuzzyEquals({"total": Decimal("1.5e-400")}).to_dict()
    with pytest.raises(ValueError, match="value holds <integer of about 5,001 digits>"):
        FuzzyEquals([10**5000]).to_dict()
    assert FuzzyEquals({"total": Decimal("1e400")}).to_dict()["value"] == {"total": 10**400}
