"""Saving a report that holds dates, and reading it back with its rollups."""

import pytest
from strands_evals.evaluators import StructuredOutputReport, StructuredOutputSimilarity

from fieldeval.harness.reports import load_report, save_report
from walkthroughs.invoices import Invoice, reference_cases


@pytest.fixture(scope="module")
def report(score_reference) -> StructuredOutputReport:
    return score_reference(StructuredOutputSimilarity(Invoice), reference_cases())


def test_base_to_file_cannot_write_dates(report, tmp_path):
    with pytest.raises(TypeError, match="Object of type date is not JSON serializable"):
        report.to_file(str(tmp_path / "report.json"))


def test_round_trip_keeps_both_rollups(report, tmp_path):
    path = save_report(report, tmp_path / "nested" / "report.json")
    reloaded = load_report(path)
    assert type(reloaded) is StructuredOutputReport
    assert reloaded.metrics().field_metrics == report.metrics().field_metrics
    assert reloaded.per_case() == report.per_case()
    assert reloaded.scores == report.scores


def test_saved_bytes_are_the_reports_own_json(report, tmp_path):
    """The file is `model_dump_json(indent=2)` encoded, whatever the text holds (accents, a line separator)."""
    case = {**report.cases[0], "input": "facture \u00e9mise \u2028 \u2713"}
    unusual = report.model_copy(update={"cases": [case, *report.cases[1:]]})
    for each in (report, unusual):
        assert save_report(each, tmp_path / "r.json").read_bytes() == each.model_dump_json(indent=2).encode()


def test_save_leaves_no_temporary_file(report, tmp_path):
    save_report(report, tmp_path / "report.json")
    assert [path.name for path in tmp_path.iterdir()] == ["report.json"]


def test_failed_save_keeps_the_previous_file(report, tmp_path, monkeypatch):
    path = save_report(report, tmp_path / "report.json")
    before = path.read_bytes()

    class BrokenSerializer:
        def to_json(self, *args, **kwargs):
            raise RuntimeError("disk full")

    monkeypatch.setattr(StructuredOutputReport, "__pydantic_serializer__", BrokenSerializer())
    with pytest.raises(RuntimeError, match="disk full"):
        save_report(report, path)
    assert path.read_bytes() == before
    assert [entry.name for entry in tmp_path.iterdir()] == ["report.json"]


def test_load_missing_file_says_how_to_write_one(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"absent\.json: no saved report here; write one with"):
        load_report(tmp_path / "absent.json")


def test_load_other_json_is_refused_with_the_path(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"hello": "world"}')
    with pytest.raises(ValueError, match=r"other\.json: not a saved StructuredOutputReport"):
        load_report(path)
