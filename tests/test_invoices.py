"""The reference case files: what they hold, and the errors a malformed one raises."""

import json

import pytest

from walkthroughs.invoices import REFERENCE_CASES, CaseFileError, Invoice, load_cases, reference_cases, sparse_cases


def write(tmp_path, document) -> str:
    path = tmp_path / "cases.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def good_document() -> dict:
    return json.loads(REFERENCE_CASES.read_text())


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


def test_case_files_say_they_are_hand_authored():
    for path in [REFERENCE_CASES, REFERENCE_CASES.with_name("sparse_cases.json")]:
        document = json.loads(path.read_text())
        assert document["hand_authored"] is True
        assert "hand-authored" in document["description"].lower()


def test_three_sparse_scenarios():
    assert [case.name for case in sparse_cases()] == ["found nothing", "both correct", "vendor wrong"]


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(CaseFileError, match=r"nowhere\.json: case file not found"):
        load_cases(tmp_path / "nowhere.json")


def test_invalid_json_names_file_and_line(tmp_path):
    path = write(tmp_path, '{"cases": [\n  {"name": }\n]}')
    with pytest.raises(CaseFileError, match=r"cases\.json: not valid JSON \(line 2"):
        load_cases(path)


def test_unknown_schema_names_the_field_and_the_choices(tmp_path):
    document = {**good_document(), "schema": "Receipt"}
    with pytest.raises(CaseFileError, match=r"field 'schema' is 'Receipt'; use one of Invoice, SparseInvoice"):
        load_cases(write(tmp_path, document))


def test_record_without_a_key_names_record_and_field(tmp_path):
    document = good_document()
    del document["cases"][2]["prediction"]
    with pytest.raises(CaseFileError, match=r"record 2 \('amount-off'\) has no field 'prediction'"):
        load_cases(write(tmp_path, document))


def test_record_that_does_not_validate_names_the_nested_field(tmp_path):
    document = good_document()
    document["cases"][4]["prediction"]["line_items"][1]["unit_price"] = "twelve"
    with pytest.raises(CaseFileError, match=r"record 4 \('extra-line'\), field prediction\.line_items\.1\.unit_price"):
        load_cases(write(tmp_path, document))


def test_record_that_is_not_an_object(tmp_path):
    document = good_document()
    document["cases"][0] = ["perfect"]
    with pytest.raises(CaseFileError, match=r"record 0 must be an object"):
        load_cases(write(tmp_path, document))


def test_document_without_cases_list(tmp_path):
    with pytest.raises(CaseFileError, match=r"expected an object with a 'cases' list"):
        load_cases(write(tmp_path, {"schema": "Invoice"}))
