"""The compact results file: rows sum to the report's rollups, it streams, and every bad line is named."""

from __future__ import annotations

import json

import pytest
from strands_evals import Case
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.formats.results import (
    COUNTS,
    Counts,
    ResultRow,
    ResultsError,
    ResultsHeader,
    ResultsWriter,
    iter_results,
    read_header,
)
from fieldeval.harness.results import (
    document_counts,
    failed_cases,
    results_frame,
    rows_from_report,
    scored_comparisons,
    sum_counts,
    totals,
)
from fieldeval.harness.scoring import score_outputs_sync, score_stored
from walkthroughs.invoices import Invoice, reference_cases

HEADER = ResultsHeader(schema="walkthroughs.invoices:Invoice")


@pytest.fixture(scope="module")
def report():
    refs = reference_cases()
    cases = [Case(name=ref.name, input=ref.broken, expected_output=ref.ground_truth) for ref in refs]
    cases.append(Case(name="no-truth", input="nothing to compare", expected_output=None))
    outputs = {ref.name: ref.prediction for ref in refs}
    outputs["no-truth"] = refs[0].prediction
    return score_outputs_sync(cases, outputs, StructuredOutputSimilarity(Invoice))


def test_summed_counts_equal_report_metrics(report):
    rows = list(rows_from_report(report))
    totals = sum_counts(rows)
    metrics = report.metrics().field_metrics
    assert set(totals) == set(metrics)
    for path, values in metrics.items():
        assert totals[path].model_dump() == {key: values.get(key, 0) for key in COUNTS}, path
    assert totals["total_amount"] == Counts(tp=4, fd=2, fp=2)
    assert [row.status for row in rows][-1] == "not_applicable"
    assert [row.score for row in rows] == report.scores
    assert [row.test_pass for row in rows] == report.test_passes


def test_one_aggregation_of_the_comparisons_is_the_sum_of_the_rows(report):
    """What a batch without a results file sends instead of per-row counts: the same numbers."""
    rows = list(rows_from_report(report))
    overall, paths = totals(scored_comparisons(report))
    assert paths == sum_counts(rows)
    assert overall == sum((row.overall for row in rows), Counts())
    light = list(rows_from_report(report, counts=False))
    assert all(row.counts == {} for row in light)
    strip = {"counts", "overall"}
    assert [row.model_dump(exclude=strip) for row in light] == [row.model_dump(exclude=strip) for row in rows]


def test_failed_cases_are_the_rows_that_failed():
    refs = reference_cases()
    cases = [Case(name=ref.name, input=ref.broken, expected_output=ref.ground_truth) for ref in refs]
    outputs = {ref.name: ref.prediction for ref in refs[1:]}  # the first has none: its task raises
    report = score_stored(cases, outputs, StructuredOutputSimilarity(Invoice))
    failed = [(row.name, row.reason) for row in rows_from_report(report) if row.status == "failed"]
    assert failed_cases(report) == failed
    assert [name for name, _ in failed] == [refs[0].name]


def test_document_counts_match_row_counts(report):
    comparison = report.detailed_results[2][0].metadata["comparison"]
    row = next(row for row in rows_from_report(report) if row.name == report.cases[2]["name"])
    assert document_counts(comparison) == {path: counts.model_dump() for path, counts in row.counts.items()}


def test_round_trip_streams_the_same_rows(report, tmp_path):
    path = tmp_path / "run.results.jsonl"
    rows = list(rows_from_report(report))
    with ResultsWriter(path, HEADER) as writer:
        for row in rows:
            writer.write(row)
    assert writer.count == len(rows)
    assert read_header(path).schema_ == "walkthroughs.invoices:Invoice"
    assert json.loads(path.read_text().splitlines()[0])["schema"] == "walkthroughs.invoices:Invoice"
    assert list(iter_results(path)) == rows
    frame = results_frame(path)
    assert list(frame["name"]) == [row.name for row in rows]
    assert frame["total_amount.tp"].sum() == 4


def test_failed_write_leaves_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "run.results.jsonl"
    path.write_text("old\n")
    with pytest.raises(RuntimeError):
        with ResultsWriter(path, HEADER) as writer:
            writer.write(ResultRow(name="a", score=1.0, test_pass=True))
            raise RuntimeError("scoring stopped")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_repeated_name_is_refused_when_writing(tmp_path):
    with ResultsWriter(tmp_path / "r.jsonl", HEADER) as writer:
        writer.write(ResultRow(name="a", score=1.0, test_pass=True))
        with pytest.raises(ValueError, match="'a' written twice"):
            writer.write(ResultRow(name="a", score=1.0, test_pass=True))


def _file(tmp_path, *lines):
    path = tmp_path / "bad.jsonl"
    header = json.dumps(HEADER.model_dump(by_alias=True))
    path.write_text("\n".join([header, *lines]) + "\n")
    return path


GOOD = json.dumps({"name": "a", "score": 1.0, "test_pass": True})


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", r"bad.jsonl: line 3: not valid JSON \(column 2\)"),
        ("[1, 2]", r"line 3: is a JSON list, not an object"),
        (
            json.dumps({"name": "b", "test_pass": True}),
            r"line 3 \(case 'b'\), field 'score': is missing \(re-run the scoring",
        ),
        (
            json.dumps({"name": "b", "score": "high", "test_pass": True}),
            r"line 3 \(case 'b'\), field 'score': input should be a valid number",
        ),
        (
            json.dumps({"name": "b", "score": 1, "test_pass": True, "counts": {"x": {"tp": -1}}}),
            r"field 'counts.x.tp': input should be greater than or equal to 0",
        ),
        (
            json.dumps({"name": "b", "score": 1, "test_pass": True, "extra": 1}),
            r"field 'extra': is not a field of this format",
        ),
        (GOOD, r"line 3: case 'a' repeats line 2 \(give every case a distinct name\)"),
    ],
)
def test_bad_line_names_file_line_and_field(tmp_path, line, message):
    with pytest.raises(ResultsError, match=message):
        list(iter_results(_file(tmp_path, GOOD, line)))


def test_bad_header_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"overall_score": 0.5}) + "\n")
    with pytest.raises(ResultsError, match=r"report.json: line 1, field 'format': .*load_report"):
        list(iter_results(path))
    path.write_text(json.dumps({**HEADER.model_dump(by_alias=True), "version": 9}) + "\n")
    with pytest.raises(ResultsError, match="line 1, field 'version': is 9"):
        read_header(path)
    path.write_text(json.dumps({"format": "structured-output-results", "version": 1}) + "\n")
    with pytest.raises(ResultsError, match="line 1, field 'schema': is missing"):
        read_header(path)
    with pytest.raises(FileNotFoundError, match="missing.jsonl: no results file here"):
        read_header(tmp_path / "missing.jsonl")
