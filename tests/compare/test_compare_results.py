"""Compare reads the compact per-document results file as well as the saved report, told apart by content."""

import json
import math

import pytest
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.commands.compare import EXIT_BAD_INPUT, main
from fieldeval.compare.reading import MAX_COUNT, is_results_file, read_results_file
from fieldeval.compare.runs import compare, compare_files
from fieldeval.formats import RESULTS_FORMAT, results
from fieldeval.harness.reports import save_report
from fieldeval.harness.results import rows_from_report
from fieldeval.harness.scoring import score_outputs_sync
from walkthroughs import simulated_runs as sim
from walkthroughs.invoices import Invoice

RESAMPLES = 300
HEADER = results.ResultsHeader(schema="walkthroughs.invoices:Invoice")


@pytest.fixture(scope="module")
def reports():
    invoices = sim.simulated_invoices()
    cases = sim.simulated_cases(invoices)
    return tuple(
        score_outputs_sync(cases, sim.extract(extractor, invoices), StructuredOutputSimilarity(Invoice))
        for extractor in (sim.BASELINE, sim.CANDIDATE)
    )


def write_results(report, path):
    with results.ResultsWriter(path, HEADER) as out:
        for row in rows_from_report(report):
            out.write(row)
    return path


@pytest.fixture()
def files(tmp_path, reports):
    """Each run saved both ways; the names say nothing of the format (detection is by content)."""
    old, new = reports
    return {
        "old report": save_report(old, tmp_path / "old-report.jsonl"),
        "new report": save_report(new, tmp_path / "new-report.jsonl"),
        "old results": write_results(old, tmp_path / "old-results.json"),
        "new results": write_results(new, tmp_path / "new-results.json"),
    }


def tables(comparison):
    return (
        comparison.overall_table(),
        comparison.field_table(),
        comparison.field_table("recall"),
        comparison.movers(limit=100).drop(columns="fields moved"),
    )


def test_the_format_marker_is_the_results_modules():
    assert RESULTS_FORMAT == results.FORMAT


def test_detection_is_by_content_not_name(files):
    assert is_results_file(files["old results"]) and not is_results_file(files["old report"])


@pytest.mark.parametrize(
    ("old", "new"), [("old report", "new report"), ("old results", "new results"), ("old report", "new results")]
)
def test_a_saved_run_compares_as_the_report_in_memory_does(files, reports, old, new):
    expected = compare(*reports, resamples=RESAMPLES)
    found = compare_files(files[old], files[new], resamples=RESAMPLES)
    assert set(found.paths) == set(expected.paths)
    for want, got in zip(tables(expected), tables(found), strict=True):
        if "field" in want:
            want, got = want.set_index("field").sort_index(), got.set_index("field").sort_index()
        assert want.equals(got)
    assert found.movers(limit=5)["fields moved"].str.len().gt(0).all()


def test_the_command_reads_results_files(files, capsys):
    code = main(
        [str(files["old results"]), str(files["new results"]), "--resamples", "50", "--gate", "overall >= 0.85"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "paired 60 cases; left out 0" in out and "Gates: 1 passed, 0 failed" in out


def edit_line(path, number, change):
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[number - 1])
    change(record)
    lines[number - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda row: row.update(score=math.nan),
            "line 3, field 'score': NaN is not a number JSON allows",
        ),
        (
            lambda row: row.update(score=1.25),
            "line 3 (case 'sim-02'), field 'score': input should be less than or equal to 1",
        ),
        (lambda row: row["counts"]["line_items.sku"].update(fd=MAX_COUNT + 1), "field 'line_items.sku': count 'fd'"),
        (
            lambda row: row["counts"]["line_items.sku"].update(fd=-1),
            "line 3 (case 'sim-02'), field 'counts.line_items.sku.fd': input should be greater than or equal to 0",
        ),
        (
            lambda row: row["counts"].update(invoice_id=[1, 2]),
            "line 3 (case 'sim-02'), field 'counts.invoice_id': input should be a valid dictionary",
        ),
        (lambda row: row.update(name="sim\x1b[2J"), "unprintable characters"),
        (lambda row: row.update(name="sim-01"), "case 'sim-01' repeats line 2"),
    ],
    ids=["nan-score", "score-above-1", "absurd-count", "negative-count", "node-type", "unprintable", "repeat"],
)
def test_a_malformed_results_line_is_exit_2_naming_file_and_case(files, capsys, change, message):
    bad = edit_line(files["new results"], 3, change)
    code = main([str(files["old results"]), str(bad)])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and out == "" and "Traceback" not in err
    assert "new-results.json" in err and message in err


def test_a_results_file_with_a_foreign_header_is_refused(files, capsys):
    bad = edit_line(files["new results"], 1, lambda header: header.update(version=7))
    code = main([str(files["old results"]), str(bad)])
    assert code == EXIT_BAD_INPUT and "line 1, field 'version': is 7" in capsys.readouterr().err


def test_rows_without_a_verdict_are_left_out_as_in_a_report(files):
    bad = edit_line(files["new results"], 2, lambda row: row.update(status="not_applicable"))
    run = read_results_file(bad)
    assert "sim-01" in run.unscored and "sim-01" not in run.documents
    found = compare_files(files["old results"], bad, resamples=50)
    assert dict(found.pairing.excluded)["sim-01"].startswith("old: scored against Invoice; new: not scored")
