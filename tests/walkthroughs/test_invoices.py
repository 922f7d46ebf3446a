"""The reference case files: what they hold, and the errors a malformed one raises.

They are a case file and a predictions file in the general formats, read by `helpers.fixtures`
(a team's files are read by the tool's strict reader, whose every refusal `tests/harness/test_cases.py`
covers); these tests check the refusals a malformed bundled file gets.
"""

import json

import pytest

from helpers.fixtures import CaseFileError
from tests.jsonl import write_jsonl
from walkthroughs.invoices import (
    REFERENCE_CASES,
    REFERENCE_PREDICTIONS,
    SPARSE_CASES,
    Invoice,
    load_cases,
    reference_cases,
    sparse_cases,
)


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write(tmp_path, name: str, records: list[dict]):
    return write_jsonl(tmp_path / name, records)


def test_six_reference_cases_each_break_one_thing():
    cases = reference_cases()
    assert [case.name for case in cases] == ["perfect", "case-only", "amount-off", "missing", "extra-line", "wrong"]
    assert all(isinstance(case.ground_truth, Invoice) for case in cases)
    differing = {
        case.name: {
            field
            for field in Invoice.model_fields
            if getattr(case.ground_truth, field) != getattr(case.prediction, field)
        }
        for case in cases
    }
    assert differing == {
        "perfect": set(),
        "case-only": {"vendor_name"},
        "amount-off": {"total_amount"},
        "missing": {"invoice_date"},
        "extra-line": {"line_items"},
        "wrong": set(Invoice.model_fields),
    }


def test_ground_truth_line_item_price_equals_total():
    for case in reference_cases():
        assert [item.unit_price for item in case.ground_truth.line_items] == [case.ground_truth.total_amount]


def test_case_files_say_they_are_hand_authored_on_every_line():
    for path in [REFERENCE_CASES, SPARSE_CASES]:
        assert all(record["metadata"]["hand_authored"] is True for record in lines(path))


def test_three_sparse_scenarios():
    assert [case.name for case in sparse_cases()] == ["found nothing", "both correct", "vendor wrong"]


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(CaseFileError, match=r"nowhere\.jsonl: no case file here \(check the path\)"):
        load_cases(tmp_path / "nowhere.jsonl", REFERENCE_PREDICTIONS, Invoice)


def test_invalid_json_names_file_and_line(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(REFERENCE_CASES.read_text().split("\n", 1)[0] + '\n{"name": }\n')
    with pytest.raises(CaseFileError, match=r"cases\.jsonl: line 2: not valid JSON \(column 10\)"):
        load_cases(path, REFERENCE_PREDICTIONS, Invoice)


def test_case_without_what_it_breaks_names_case_and_field(tmp_path):
    records = lines(REFERENCE_CASES)
    del records[2]["metadata"]["broken"]
    with pytest.raises(CaseFileError, match=r"case 'amount-off', field 'metadata.broken': is missing or not text"):
        load_cases(write(tmp_path, "cases.jsonl", records), REFERENCE_PREDICTIONS, Invoice)


def test_prediction_that_does_not_validate_names_line_and_nested_field(tmp_path):
    records = lines(REFERENCE_PREDICTIONS)
    records[4]["output"]["line_items"][1]["unit_price"] = "twelve"
    with pytest.raises(CaseFileError, match=r"line 5, field 'output\.line_items\[1\]\.unit_price': does not validate"):
        load_cases(REFERENCE_CASES, write(tmp_path, "predictions.jsonl", records), Invoice)


def test_a_case_without_a_prediction_is_named(tmp_path):
    records = lines(REFERENCE_PREDICTIONS)[:-1]
    with pytest.raises(CaseFileError, match=r"no prediction for case 'wrong' \(add one line per case\)"):
        load_cases(REFERENCE_CASES, write(tmp_path, "predictions.jsonl", records), Invoice)
