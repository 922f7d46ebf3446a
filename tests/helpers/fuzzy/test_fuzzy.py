"""Unit tests of `helpers.fuzzy.evaluator.FuzzyEquals`: every knob, the sentinel, reasons, pairing, bad input."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import math
import random
import re
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from strands.agent.agent_result import AgentResult
from strands_evals import Case, Experiment
from strands_evals.eval_task_handler import eval_task
from strands_evals.types.evaluation import EvaluationData

import helpers
from helpers.fuzzy.evaluator import MAX_DEPTH, MAX_DIFFERENCES, UNSET, FuzzyEquals
from walkthroughs.invoices import Invoice, LineItem, reference_cases

FLAGS = ["ignore_order", "ignore_key_order", "case_sensitive", "ignore_whitespace", "subset_mode", "type_coercion"]
TOLERANCES = ["numeric_tolerance", "absolute_tolerance"]


def passes(expected, actual, **knobs) -> bool:
    return FuzzyEquals(**knobs).compare(expected, actual).test_pass


def reason(expected, actual, **knobs) -> str:
    return FuzzyEquals(**knobs).compare(expected, actual).reason


def case(actual, expected=None) -> EvaluationData:
    return EvaluationData(input="q", actual_output=actual, expected_output=expected)


# --- the evaluator contract ---------------------------------------------------------------------


def test_exported_lazily_from_the_package():
    assert helpers.FuzzyEquals is FuzzyEquals


def test_one_binary_output_per_case():
    [match] = FuzzyEquals().evaluate(case({"a": 1}, {"a": 1}))
    [miss] = FuzzyEquals().evaluate(case({"a": 2}, {"a": 1}))
    assert (match.score, match.test_pass) == (1.0, True)
    assert (miss.score, miss.test_pass) == (0.0, False)
    assert match.reason == "actual_output matches the expected value"


def test_match_reason_names_the_knobs_in_force():
    out = FuzzyEquals(ignore_order=True, numeric_tolerance=0.01).compare([1, 2], [2, 1])
    assert out.reason == "actual_output matches the expected value (ignore_order=True, numeric_tolerance=0.01)"


def test_evaluate_async_gives_the_same_verdict():
    evaluator = FuzzyEquals(case_sensitive=False)
    data = case("ACME", "acme")
    assert asyncio.run(evaluator.evaluate_async(data)) == evaluator.evaluate(data)


def test_repr_shows_given_knobs_and_no_memory_address():
    assert repr(FuzzyEquals(None, ignore_order=True, name="rows")) == (
        "FuzzyEquals(value=None, ignore_order=True, name='rows')"
    )
    assert repr(FuzzyEquals()) == "FuzzyEquals()"


# --- the value sentinel -------------------------------------------------------------------------


def test_unset_value_compares_with_the_case_expected_output():
    evaluator = FuzzyEquals()
    assert evaluator.value is UNSET
    assert evaluator.evaluate(case([1, 2], [1, 2]))[0].test_pass
    assert not evaluator.evaluate(case([1, 2], [1, 3]))[0].test_pass


def test_explicit_none_requires_none_whatever_the_case_expects():
    evaluator = FuzzyEquals(value=None)
    assert evaluator.evaluate(case(None, {"total": 10}))[0].test_pass
    [out] = evaluator.evaluate(case({"total": 10}, {"total": 10}))
    assert not out.test_pass
    assert out.reason == "1 difference: $: expected None (null), got object"


def test_given_value_overrides_the_case_expected_output():
    assert FuzzyEquals(value={"a": 1}).evaluate(case({"a": 1}, {"a": 2}))[0].test_pass


def test_unset_value_with_no_expected_output_says_so():
    [out] = FuzzyEquals().evaluate(case({"a": 1}))
    assert not out.test_pass
    assert out.reason.endswith("(the case has no expected_output)")


# --- serialization round trips ------------------------------------------------------------------


def round_trip(evaluator: FuzzyEquals) -> FuzzyEquals:
    experiment = Experiment(cases=[Case(name="c", input="q", expected_output=[1])], evaluators=[evaluator])
    data = json.loads(json.dumps(experiment.to_dict()))  # what to_file writes and from_file reads
    [rebuilt] = Experiment.from_dict(data, custom_evaluators=[FuzzyEquals]).evaluators
    return rebuilt


def test_explicit_none_survives_to_dict_and_from_dict():
    rebuilt = round_trip(FuzzyEquals(value=None))
    assert rebuilt.value is None
    assert rebuilt.evaluate(case(None, [1]))[0].test_pass


def test_unset_value_stays_unset_after_a_round_trip():
    assert FuzzyEquals().to_dict() == {"evaluator_type": "FieldFuzzyEquals"}
    rebuilt = round_trip(FuzzyEquals())
    assert rebuilt.value is UNSET
    assert rebuilt.evaluate(case([1], [1]))[0].test_pass


def test_knobs_name_and_model_value_survive_a_round_trip():
    value = LineItem(sku="SKU-1", description="Widget", unit_price=150.0)
    evaluator = FuzzyEquals(value, ignore_order=True, numeric_tolerance=0.01, case_sensitive=False, name="fuzzy")
    rebuilt = round_trip(evaluator)
    assert rebuilt.knobs == evaluator.knobs
    assert rebuilt.name == "fuzzy"
    assert rebuilt.value == {"sku": "SKU-1", "description": "Widget", "unit_price": 150.0}
    assert rebuilt.to_dict() == evaluator.to_dict()


def test_round_trip_through_experiment_files(tmp_path):
    evaluators = [FuzzyEquals(None, name="none"), FuzzyEquals({"total": Decimal("10.50")}, name="money")]
    Experiment(cases=[Case(name="c", input="q")], evaluators=evaluators).to_file(str(tmp_path / "experiment.json"))
    none, money = Experiment.from_file(str(tmp_path / "experiment.json"), custom_evaluators=[FuzzyEquals]).evaluators
    assert none.value is None
    assert money.value == {"total": 10.5}
    assert money.compare(money.value, {"total": Decimal("10.5")}).test_pass


def test_runs_inside_the_experiment_harness():
    rows = [{"id": 1, "total": 10.0}, {"id": 2, "total": 20.0}]
    cases = [
        Case(name="shuffled", input="q1", expected_output=rows),
        Case(name="wrong total", input="q2", expected_output=rows),
    ]
    answers = {"q1": list(reversed(rows)), "q2": [{"id": 1, "total": 10.0}, {"id": 2, "total": 25.0}]}

    @eval_task()
    def task(c):
        return {"output": answers[c.input]}

    experiment = Experiment(cases=cases, evaluators=[FuzzyEquals(ignore_order=True)])
    report = asyncio.run(experiment.run_evaluations_async(task))
    assert report.scores == [1.0, 0.0]
    assert report.overall_score == 0.5
    assert report.reasons[1].endswith(
        "nearest unpaired actual is $[1], which differs at .total: expected 20.0, got 25.0"
    )


# --- ignore_order and optimal pairing -----------------------------------------------------------


def test_order_matters_by_default_and_the_reason_says_where():
    assert not passes([1, 2, 3], [3, 2, 1])
    assert reason([1, 2, 3], [1, 3, 2]) == "2 differences: $[1]: expected 2, got 3; $[2]: expected 3, got 2"


def test_ignore_order_treats_lists_as_multisets():
    assert passes([1, "a", None, True], [True, None, "a", 1], ignore_order=True)


def test_duplicates_count():
    assert passes([1, 1, 2], [2, 1, 1], ignore_order=True)
    assert not passes([1, 1, 2], [1, 2, 2], ignore_order=True)
    assert not passes([1, 1], [1], ignore_order=True)


def test_pairing_is_optimal_where_greedy_first_fit_fails():
    # First fit pairs 1.0 with 1.04 and leaves 1.05 without a partner among [0.99].
    assert passes([1.0, 1.05], [1.04, 0.99], ignore_order=True, numeric_tolerance=0.05)
    assert passes([{"v": 1.0}, {"v": 1.05}], [{"v": 1.04}, {"v": 0.99}], ignore_order=True, numeric_tolerance=0.05)


def test_pairing_matches_a_brute_force_reference():
    def close(x, y, rel, tol):
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return x == y or (not math.isinf(x - y) and abs(x - y) <= max(rel * max(abs(x), abs(y)), tol))

    rng = random.Random(20260115)
    pool = [0, 1, -1, 2.5, 100, 1e-9, float("inf"), float("nan")]
    for _ in range(300):
        rel, tol = rng.choice([0, 0.01, 0.05, 0.3]), rng.choice([0, 0.5])
        size = rng.randint(0, 6)
        expected = [rng.choice(pool) * rng.choice([1, 1.02, 0.97]) for _ in range(size)]
        actual = [rng.choice(pool) * rng.choice([1, 1.02, 0.97]) for _ in range(size + rng.choice([0, 0, 1]))]
        subset = rng.random() < 0.3
        perfect = any(
            all(close(e, a, rel, tol) for e, a in zip(expected, chosen, strict=True))
            for chosen in itertools.permutations(actual, len(expected))
        )
        truth = perfect and (subset or len(expected) == len(actual))
        got = passes(
            expected, actual, ignore_order=True, numeric_tolerance=rel, absolute_tolerance=tol, subset_mode=subset
        )
        assert got == truth, (expected, actual, rel, tol, subset)


def test_large_unordered_tables_pair_through_the_numeric_grid():
    rng = random.Random(7)
    rows = [{"x": rng.uniform(1, 1000), "y": rng.uniform(-5, 5), "tag": "same"} for _ in range(400)]
    noisy = [{"tag": "same", "y": r["y"] * 1.004, "x": r["x"] * 0.996} for r in rows]
    rng.shuffle(noisy)
    assert passes(rows, noisy, ignore_order=True, numeric_tolerance=0.01)
    noisy[5] = dict(noisy[5], x=noisy[5]["x"] * 1.5)
    assert not passes(rows, noisy, ignore_order=True, numeric_tolerance=0.01)


def test_ignore_order_applies_at_every_level():
    expected = {"orders": [{"id": 1, "skus": ["a", "b"]}, {"id": 2, "skus": []}]}
    actual = {"orders": [{"skus": [], "id": 2}, {"skus": ["b", "a"], "id": 1}]}
    assert passes(expected, actual, ignore_order=True)
    assert not passes(expected, actual)


def test_unordered_rows_with_non_string_keys():
    rows = [{1: "a", "b": 2.0}, {1: "c", "b": 3.0}]
    assert passes(rows, [{"b": 3.0, 1: "c"}, {"b": 2.0, 1: "a"}], ignore_order=True)
    assert not passes(rows, [{"b": 3.0, 1: "c"}, {"b": 2.0, 1: "x"}], ignore_order=True)
    assert passes(rows, [{"b": 3.01, 1: "c"}, {"b": 2.0, 1: "a"}], ignore_order=True, numeric_tolerance=0.01)


def test_unordered_rows_check_key_order_when_asked():
    rows = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    swapped = [{"a": 3, "b": 4}, {"b": 2, "a": 1}]
    assert passes(rows, swapped, ignore_order=True)
    assert not passes(rows, swapped, ignore_order=True, ignore_key_order=False)
    assert passes(rows, list(reversed(rows)), ignore_order=True, ignore_key_order=False)


def test_unhashable_scalars_still_pair():
    class Point:  # defines __eq__ without __hash__, so it is unhashable
        def __init__(self, x):
            self.x = x

        def __eq__(self, other):
            return isinstance(other, Point) and other.x == self.x

    assert passes([Point(1), Point(2)], [Point(2), Point(1)], ignore_order=True)
    assert not passes([Point(1), Point(2)], [Point(2), Point(3)], ignore_order=True)


# --- key order ----------------------------------------------------------------------------------


def test_key_order_is_ignored_by_default():
    assert passes({"a": 1, "b": 2}, {"b": 2, "a": 1})


def test_key_order_checked_when_asked():
    assert not passes({"a": 1, "b": 2}, {"b": 2, "a": 1}, ignore_key_order=False)
    assert reason({"a": 1, "b": 2}, {"b": 2, "a": 1}, ignore_key_order=False) == (
        "1 difference: $: key order differs: expected ['a', 'b'], got ['b', 'a']"
    )
    assert passes({"a": 1, "b": 2}, {"a": 1, "b": 2}, ignore_key_order=False)


# --- numbers ------------------------------------------------------------------------------------


def test_relative_tolerance_uses_the_larger_magnitude():
    assert passes(100, 100.9, numeric_tolerance=0.01)
    assert passes(90, 100, numeric_tolerance=0.1)  # |10| <= 0.1 * max(90, 100)
    assert passes(100, 90, numeric_tolerance=0.1)
    assert not passes(100, 101.5, numeric_tolerance=0.01)
    assert reason(100, 101.5, numeric_tolerance=0.01) == (
        "1 difference: $: expected 100, got 101.5 (off by 1.5, tolerance allows 1.015)"
    )


def test_absolute_tolerance_lets_zero_match_a_tiny_number():
    assert not passes(0.0, 1e-9, numeric_tolerance=0.5)
    assert passes(0.0, 1e-9, absolute_tolerance=1e-6)
    assert passes(5.0, 5.3, absolute_tolerance=0.5, numeric_tolerance=0.01)


def test_int_float_and_decimal_compare_by_value():
    assert passes(10, 10.0)
    assert passes(Decimal("10.50"), 10.5)
    assert passes(Decimal("0.1"), 0.1)
    assert passes([Decimal("3"), 3.0], [3, 3], ignore_order=True)
    assert not passes(Decimal("10.51"), 10.5)


def test_integers_beyond_float_range_compare_without_overflow():
    huge = 10**400
    assert passes(huge, huge, numeric_tolerance=0.01)
    assert not passes(huge, huge + 1)
    assert passes(huge, huge + 1, numeric_tolerance=0.01)
    assert not passes(huge, huge * 2, numeric_tolerance=0.01)
    assert not passes(huge, 1.0, numeric_tolerance=0.01)
    rows = [{"n": huge + i, "x": 1.0} for i in range(12)]
    assert passes(rows, list(reversed(rows)), ignore_order=True, numeric_tolerance=0.01)


def test_booleans_are_never_numbers():
    assert not passes(True, 1)
    assert not passes(0, False, absolute_tolerance=1.0)
    assert not passes([True], [1], ignore_order=True)
    assert reason(True, 1) == "1 difference: $: expected True (a boolean), got 1 (a number)"


def test_nan_equals_nan_and_nothing_else():
    nan = float("nan")
    assert passes({"v": nan}, {"v": float("nan")})
    assert passes([nan, 1.0], [1.0, Decimal("NaN")], ignore_order=True)
    assert not passes(nan, 0.0, absolute_tolerance=1e9)
    assert not passes(1.0, nan)
    assert reason(1.0, nan) == "1 difference: $: expected 1.0, got nan"


def test_infinities_equal_only_the_same_infinity():
    inf = float("inf")
    assert passes(inf, inf, numeric_tolerance=0.5)
    assert not passes(inf, -inf, numeric_tolerance=0.5)
    assert not passes(inf, 1e308, numeric_tolerance=0.9)
    assert passes([inf, -inf, 1.0], [1.001, -inf, inf], ignore_order=True, numeric_tolerance=0.01)


# --- strings ------------------------------------------------------------------------------------


def test_case_insensitive_strings_but_exact_keys():
    assert passes({"vendor": "ACME Corp"}, {"vendor": "acme corp"}, case_sensitive=False)
    assert passes("Straße", "STRASSE", case_sensitive=False)  # case-folding, not lower()
    assert not passes({"Vendor": "acme"}, {"vendor": "acme"}, case_sensitive=False)
    assert not passes("ACME", "acme")


def test_ignore_whitespace_collapses_runs_but_keeps_keys_exact():
    assert passes("Acme Corp", "  Acme\t\n  Corp ", ignore_whitespace=True)
    assert not passes("Acme Corp", "AcmeCorp", ignore_whitespace=True)
    assert not passes({"name ": 1}, {"name": 1}, ignore_whitespace=True)
    assert not passes("Acme Corp", "Acme  Corp")


def test_string_knobs_combine():
    assert passes(["Beta Industries"], [" BETA\tindustries"], case_sensitive=False, ignore_whitespace=True)


# --- subset mode --------------------------------------------------------------------------------


def test_subset_mode_ignores_extra_keys_recursively():
    expected = {"invoice": {"id": "INV-1"}}
    actual = {"invoice": {"id": "INV-1", "notes": "x"}, "extra": 1}
    assert passes(expected, actual, subset_mode=True)
    assert not passes(expected, actual)
    assert reason({"invoice": {"id": "INV-1", "total": 5}}, actual, subset_mode=True) == (
        "1 difference: $.invoice.total: missing key"
    )


def test_subset_mode_ordered_lists_are_subsequences():
    assert passes([1, 3], [1, 2, 3], subset_mode=True)
    assert not passes([3, 1], [1, 2, 3], subset_mode=True)
    assert reason([3, 1], [1, 2, 3], subset_mode=True) == (
        "1 difference: $[1]: no element of actual matches it in order (searched actual[3:]); "
        "no actual element is left to compare it with"
    )


def test_subset_mode_unordered_lists_are_sub_multisets():
    assert passes([3, 1], [1, 2, 3], subset_mode=True, ignore_order=True)
    assert passes([{"id": 2}], [{"id": 1, "x": 0}, {"id": 2, "x": 5}], subset_mode=True, ignore_order=True)
    assert not passes([1, 1], [1, 2, 3], subset_mode=True, ignore_order=True)


def test_subset_mode_pairing_is_optimal():
    # {"a": 1} fits both actual rows; first fit would take the one {"a": 1, "b": 2} needs.
    expected = [{"a": 1}, {"a": 1, "b": 2}]
    actual = [{"a": 1, "b": 2, "c": 3}, {"a": 1, "c": 0}]
    assert passes(expected, actual, subset_mode=True, ignore_order=True)


def test_subset_mode_still_compares_scalars_whole():
    assert not passes("Acme", "Acme Corporation", subset_mode=True)


# --- type coercion ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "number"),
    [("1,240.00", 1240), (" -3.5e2 ", -350), ("+7", 7), (".5", 0.5), ("1,234,567", 1234567), ("0042", 42)],
)
def test_numeric_strings_coerce_on_either_side(text, number):
    assert passes(text, number, type_coercion=True)
    assert passes(number, text, type_coercion=True)


def test_text_that_is_not_a_number_stays_text():
    for text in ["1,24", "1 240", "12abc", "NaN", "inf", "", "1,2345"]:
        assert passes(text, text, type_coercion=True)
        assert not passes(text, 1.24, type_coercion=True), text


def test_boolean_strings_coerce_in_any_case():
    assert passes({"paid": "TRUE"}, {"paid": True}, type_coercion=True)
    assert passes(False, " false ", type_coercion=True)
    assert not passes(True, "1", type_coercion=True)  # "1" is the number 1, and a bool is no number
    assert not passes(True, "yes", type_coercion=True)


def test_tolerance_applies_after_coercion():
    assert passes("100.5", 100, type_coercion=True, numeric_tolerance=0.01)
    assert not passes("102", 100, type_coercion=True, numeric_tolerance=0.01)
    assert passes(["1,000", "2000"], ["2,000", "1000"], type_coercion=True, ignore_order=True)


def test_without_coercion_the_reason_suggests_it():
    assert reason(42, "42") == (
        "1 difference: $: expected 42 (a number), got '42' (a string); type_coercion=True would compare them as values"
    )


# --- inputs -------------------------------------------------------------------------------------


def test_tuples_compare_as_lists():
    assert passes((1, 2), [1, 2])
    assert passes({"row": (1, "a")}, {"row": ["a", 1]}, ignore_order=True)


def test_pydantic_models_compare_by_their_json_dump():
    invoice = Invoice(
        invoice_id="INV-001",
        vendor_name="Acme Corporation",
        invoice_date=date(2026, 1, 15),
        total_amount=150.0,
        line_items=[LineItem(sku="SKU-1", description="Widget", unit_price=150.0)],
    )
    as_json = {
        "invoice_id": "INV-001",
        "vendor_name": "Acme Corporation",
        "invoice_date": "2026-01-15",
        "total_amount": 150.0,
        "line_items": [{"sku": "SKU-1", "description": "Widget", "unit_price": 150.0}],
    }
    assert passes(invoice, as_json)
    assert (
        reason(invoice, dict(as_json, total_amount=151.0)) == "1 difference: $.total_amount: expected 150.0, got 151.0"
    )


def agent_result(structured_output) -> AgentResult:
    return AgentResult(
        stop_reason="end_turn",
        message={"role": "assistant", "content": []},
        metrics=None,
        state={},
        structured_output=structured_output,
    )


def test_agent_result_compares_by_its_structured_output():
    item = LineItem(sku="SKU-1", description="Widget", unit_price=150.0)
    assert passes(
        {"sku": "SKU-1", "description": "widget", "unit_price": 150}, agent_result(item), case_sensitive=False
    )


def test_agent_result_without_structured_output_fails_with_the_fix():
    out = FuzzyEquals().compare({"sku": "SKU-1"}, agent_result(None))
    assert not out.test_pass
    assert "AgentResult with no structured_output" in out.reason
    assert "structured_output_model" in out.reason


def test_str_and_bytes_are_scalars():
    assert reason(["a", "b"], "ab") == "1 difference: $: expected a list, got string 'ab'"
    assert not passes([97, 98], b"ab", ignore_order=True)
    assert passes(b"ab", b"ab")


# --- reasons ------------------------------------------------------------------------------------


def test_reason_gives_nested_jsonpaths():
    expected = {"rows": [{"total": 10.0, "first name": "Ann"}]}
    actual = {"rows": [{"total": 10.5, "first name": "Anne"}]}
    assert reason(expected, actual) == (
        "2 differences: $.rows[0].total: expected 10.0, got 10.5; $.rows[0]['first name']: expected 'Ann', got 'Anne'"
    )


def test_reason_names_missing_and_unexpected_keys():
    assert reason({"a": 1, "b": 2}, {"a": 1, "c": 3}) == (
        "2 differences: $.b: missing key; $.c: unexpected key (value 3)"
    )


def test_reason_names_type_mismatches():
    assert reason({"rows": {"a": 1}}, {"rows": [1]}) == "1 difference: $.rows: expected an object, got list"
    assert reason({"n": 10}, {"n": [10]}) == "1 difference: $.n: expected 10 (a number), got list"


def test_reason_names_length_differences():
    assert reason([1, 2, 3], [1, 2]) == "2 differences: $: expected 3 elements, got 2; $[2]: missing element 3"
    assert reason([1], [1, 5], ignore_order=True) == (
        "2 differences: $: expected 1 element, got 2; $[1]: actual element has no partner: 5"
    )


def test_unpaired_row_names_its_nearest_actual_row_and_why():
    expected = [{"id": 1, "total": 10.0}, {"id": 2, "total": 20.0}, {"id": 3, "total": 30.0}]
    actual = [{"id": 3, "total": 30.0}, {"id": 1, "total": 10.0}, {"id": 2, "total": 24.0}]
    assert reason(expected, actual, ignore_order=True, numeric_tolerance=0.01) == (
        "1 difference: $[1]: expected element has no partner in actual; nearest unpaired actual is $[2], "
        "which differs at .total: expected 20.0, got 24.0 (off by 4, tolerance allows 0.24)"
    )


def test_subsequence_failure_names_the_nearest_element_in_the_searched_range():
    assert reason(["created", "paid", "lost"], ["created", "paid", "shipped"], subset_mode=True) == (
        "1 difference: $[2]: no element of actual matches it in order (searched actual[2:]); "
        "nearest there is $[2], which differs: expected 'lost', got 'shipped'"
    )


def test_reason_paths_quote_awkward_keys():
    assert reason({"a: b": {"x": 1}}, {"a: b": {"x": 2}}) == "1 difference: $['a: b'].x: expected 1, got 2"
    assert reason([{"a: b": 1}], [{"a: b": 2}], ignore_order=True).endswith("differs at ['a: b']: expected 1, got 2")


def test_reason_lists_up_to_the_cap_then_counts_the_rest():
    out = FuzzyEquals().compare(list(range(15)), [n + 100 for n in range(15)])
    assert out.metadata["difference_count"] == 15
    assert len(out.metadata["differences"]) == MAX_DIFFERENCES
    assert out.reason.startswith("15 differences: $[0]: expected 0, got 100;")
    assert out.reason.endswith(f"; (+{15 - MAX_DIFFERENCES} more)")


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("knob", FLAGS)
@pytest.mark.parametrize("bad", [1, "yes", None])
def test_non_bool_flag_raises_naming_the_knob(knob, bad):
    with pytest.raises(TypeError, match=f"FuzzyEquals: {knob} must be True or False, got {bad!r}"):
        FuzzyEquals(**{knob: bad})


@pytest.mark.parametrize("knob", TOLERANCES)
@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf")])
def test_invalid_tolerance_raises_naming_the_knob(knob, bad):
    with pytest.raises(ValueError, match=f"FuzzyEquals: {knob} must be a finite number >= 0"):
        FuzzyEquals(**{knob: bad})


@pytest.mark.parametrize("knob", TOLERANCES)
@pytest.mark.parametrize("bad", ["0.01", True, None])
def test_non_number_tolerance_raises_naming_the_knob(knob, bad):
    with pytest.raises(TypeError, match=f"FuzzyEquals: {knob} must be a number"):
        FuzzyEquals(**{knob: bad})


def test_non_string_name_raises():
    with pytest.raises(TypeError, match="name must be a string"):
        FuzzyEquals(name=3)


def test_cyclic_structures_fail_the_case_with_the_cycle_named():
    looped: dict = {"rows": [{"id": 1}]}
    looped["rows"][0]["parent"] = looped
    [out] = FuzzyEquals().evaluate(case(looped, {"rows": [{"id": 1}]}))
    assert not out.test_pass
    assert out.reason == "could not compare: actual_output contains a cycle: $.rows[0].parent refers back to $"


def test_too_deep_nesting_fails_the_case_and_the_limit_itself_passes():
    def nested(levels):
        value: list = []
        for _ in range(levels):
            value = [value]
        return value

    assert passes(nested(MAX_DEPTH - 1), nested(MAX_DEPTH - 1))
    out = FuzzyEquals().compare(nested(5000), nested(5000))
    assert not out.test_pass
    assert out.reason.startswith(f"could not compare: expected value nests deeper than MAX_DEPTH={MAX_DEPTH} levels")


def test_to_dict_of_a_cyclic_value_raises_naming_the_knob():
    looped: list = []
    looped.append(looped)
    with pytest.raises(ValueError, match="FuzzyEquals.to_dict: value contains a cycle"):
        FuzzyEquals(looped).to_dict()


# --- knobs together on realistic data -----------------------------------------------------------


def test_sql_result_set_with_every_kind_of_drift():
    expected = [
        {"region": "North", "customer": "Acme Corp", "revenue": 1240.0, "orders": 12, "active": True},
        {"region": "South", "customer": "Beta Industries", "revenue": 980.5, "orders": 7, "active": False},
    ]
    actual = [
        {"active": "false", "orders": "7", "revenue": "980.4999", "customer": "BETA  industries", "region": "south"},
        {"orders": 12, "customer": "acme corp ", "active": True, "region": "NORTH", "revenue": "1,240.00"},
    ]
    knobs = dict(ignore_order=True, numeric_tolerance=0.001, case_sensitive=False, ignore_whitespace=True)
    assert passes(expected, actual, **knobs, type_coercion=True)
    assert not passes(expected, actual, **knobs)
    actual[1]["revenue"] = "1,290.00"
    text = reason(expected, actual, **knobs, type_coercion=True)
    assert text.startswith(
        "1 difference: $[0]: expected element has no partner in actual; nearest unpaired actual is $[1]"
    )
    assert "differs at .revenue: expected 1240.0, got '1,290.00'" in text


def test_subset_with_tolerance_and_order_ignored():
    expected = {"items": [{"sku": "A", "price": 10.0}]}
    actual = {"items": [{"sku": "B", "price": 3.0, "qty": 1}, {"sku": "A", "price": 10.05, "qty": 2}], "total": 1}
    assert passes(expected, actual, subset_mode=True, ignore_order=True, numeric_tolerance=0.01)
    assert not passes(expected, actual, subset_mode=True, ignore_order=True)


def test_reference_invoices_under_case_insensitivity_and_one_percent():
    """The figures the FuzzyEquals notebook quotes for the six hand-authored reference invoices."""
    evaluator = FuzzyEquals(case_sensitive=False, numeric_tolerance=0.01)
    scores = {c.name: evaluator.compare(c.ground_truth, c.prediction).score for c in reference_cases()}
    assert scores == {
        "perfect": 1.0,
        "case-only": 1.0,
        "amount-off": 1.0,
        "missing": 0.0,
        "extra-line": 0.0,
        "wrong": 0.0,
    }
    assert sum(scores.values()) / len(scores) == 0.5
    assert len(set(scores.values())) == 2


def test_benchmark_gives_right_verdicts_at_a_small_size(capsys):
    path = Path(__file__).resolve().parents[3] / "bench" / "bench_fuzzy.py"
    spec = importlib.util.spec_from_file_location("bench_fuzzy", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--sizes", "40", "--shape-sizes", "60"]) == 0
    printed = capsys.readouterr().out
    # Both tools timed in this run, and the ratio printed from those two times.
    exact = re.search(
        r"\n +40  exact +([\d.]+) \([\d.]+-[\d.]+\) s +([\d.]+) \([\d.]+-[\d.]+\) s +([\d.]+)x  "
        r"FuzzyEquals equal \(right\), deepdiff equal \(right\)",
        printed,
    )
    assert exact, printed
    assert "FuzzyEquals equal (right), deepdiff differs (WRONG)" in printed  # a rounding is not a tolerance
    assert "FuzzyEquals differs (right)" in printed
    # Every shape of issue 11 timed against its floor in this run, with its memory, verdict right.
    for label, _, _ in bench.SHAPES:
        timing = r"[\d.]+ \([\d.]+-[\d.]+\) s"
        line = re.search(rf"\n{re.escape(label)} +60 +{timing} +- +\d+x +[\d.]+ +[\d.]+x  equal \(right\)", printed)
        assert line, (label, printed)
    assert re.search(r"\nnear-duplicates, one off 5% +60 +[\d.]+ \([\d.]+-[\d.]+\) s +differs \(right\)", printed)
