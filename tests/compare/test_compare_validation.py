"""Malformed report contents end as a clear exit 2 naming the file, the case and the field, never a traceback.

CI reads exit 1 as a failed gate, so a crash on bad input (which Python ends with exit 1) would
read as a regression. Each kind of malformed input gets its test; every test edits one value of a
real saved report and runs the command in process.
"""

import copy
import json
import math

import pytest
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.commands import compare as cli
from fieldeval.commands.compare import EXIT_BAD_INPUT, EXIT_INTERNAL, main
from fieldeval.compare.params import MAX_RESAMPLES
from fieldeval.compare.reading import MAX_COUNT
from fieldeval.harness.reports import save_report
from fieldeval.harness.scoring import score_outputs_sync
from walkthroughs import simulated_runs as sim
from walkthroughs.invoices import Invoice


@pytest.fixture(scope="module")
def report_json(tmp_path_factory):
    """A real saved report of three simulated cases, as the JSON save_report writes."""
    invoices = sim.simulated_invoices()[:3]
    report = score_outputs_sync(
        sim.simulated_cases(invoices), sim.extract(sim.CANDIDATE, invoices), StructuredOutputSimilarity(Invoice)
    )
    path = save_report(report, tmp_path_factory.mktemp("saved") / "good.json")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture()
def good(tmp_path, report_json):
    path = tmp_path / "good.json"
    path.write_text(json.dumps(report_json), encoding="utf-8")
    return path


def write_bad(tmp_path, report_json, edit, name="bad.json"):
    """The saved report with `edit(data)` applied, written as JSON (NaN and Infinity as JSON allows)."""
    data = copy.deepcopy(report_json)
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def refused(capsys, *args):
    """Run the command; it must exit 2 with nothing on stdout; return the error text."""
    code = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT, err
    assert out == "" and "Traceback" not in err
    return err


# --- counts -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, -1, 2.5, MAX_COUNT + 1, 1e300, True, "3", None], ids=repr
)
def test_a_count_that_is_not_a_whole_number_in_range_is_refused(tmp_path, good, report_json, capsys, value):
    def edit(data):
        data["detailed_results"][1][0]["metadata"]["comparison"]["confusion_matrix"]["fields"]["line_items"]["fields"][
            "sku"
        ]["overall"]["tp"] = value

    err = refused(capsys, good, write_bad(tmp_path, report_json, edit))
    assert "bad.json: case 'sim-02', field 'line_items.sku': count 'tp' is" in err
    assert "whole numbers from 0 to" in err and "save_report" in err


def test_a_whole_float_count_is_read_as_the_integer(tmp_path, good, report_json, capsys):
    def edit(data):
        overall = data["detailed_results"][1][0]["metadata"]["comparison"]["confusion_matrix"]["fields"]["invoice_id"]
        overall["overall"] = {key: float(value) for key, value in overall["overall"].items() if key != "derived"}

    code = main([str(good), str(write_bad(tmp_path, report_json, edit)), "--resamples", "50"])
    assert code == 0, capsys.readouterr().err


# --- node types ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda data: data["detailed_results"][0][0]["metadata"]["comparison"].update(confusion_matrix=[1, 2]),
            "case 'sim-01': 'confusion_matrix' is list, not an object",
        ),
        (
            lambda data: data["detailed_results"][0][0]["metadata"]["comparison"]["confusion_matrix"].update(
                fields="all"
            ),
            "case 'sim-01': 'confusion_matrix.fields' is str, not an object",
        ),
        (
            lambda data: data["detailed_results"][0][0]["metadata"]["comparison"]["confusion_matrix"]["fields"].update(
                vendor_name=[0, 1]
            ),
            "case 'sim-01', field 'vendor_name': the confusion-matrix node is list, not an object",
        ),
        (
            lambda data: data["detailed_results"][0][0]["metadata"]["comparison"]["confusion_matrix"]["fields"][
                "vendor_name"
            ].update(overall=7),
            "case 'sim-01', field 'vendor_name': 'overall' is int, not an object",
        ),
        (
            lambda data: data["detailed_results"][0][0]["metadata"]["comparison"]["confusion_matrix"]["fields"][
                "line_items"
            ].update(fields=["sku"]),
            "case 'sim-01', field 'line_items': 'fields' is list, not an object",
        ),
        (
            lambda data: data["detailed_results"][0][0]["metadata"]["comparison"]["confusion_matrix"]["fields"][
                "line_items"
            ].update(nested_fields="sku"),
            "case 'sim-01', field 'line_items': 'nested_fields' is str, not an object",
        ),
        (
            lambda data: data["detailed_results"][0][0]["metadata"].update(comparison="none"),
            "case 'sim-01': the raw comparison is str, not an object",
        ),
        (lambda data: data["detailed_results"][0][0].update(metadata=[1]), "case 'sim-01': a result row's metadata"),
        (lambda data: data["detailed_results"].__setitem__(0, [42]), "case 'sim-01': a result row is int"),
        (lambda data: data["detailed_results"].__setitem__(0, {"a": 1}), "case 'sim-01': its results are dict"),
        (lambda data: data["cases"].__setitem__(0, "sim-01"), "case 0 is str, not an object"),
        (lambda data: data["detailed_results"][0][0].update(label=None), "case 'sim-01': its schema label is None"),
    ],
    ids=[
        "matrix",
        "fields",
        "node",
        "overall",
        "children",
        "nested",
        "comparison",
        "metadata",
        "row",
        "rows",
        "case",
        "label",
    ],
)
def test_a_node_of_the_wrong_type_is_refused(tmp_path, good, report_json, capsys, edit, message):
    err = refused(capsys, write_bad(tmp_path, report_json, edit), good)
    assert f"bad.json: {message}" in err and "save_report" in err


# --- names and scores ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["sim\x07bell", "line\nbreak", "\ud800", ""], ids=["bell", "newline", "surrogate", "empty"]
)
def test_an_unprintable_or_empty_case_name_is_refused(tmp_path, good, report_json, capsys, name):
    err = refused(capsys, good, write_bad(tmp_path, report_json, lambda data: data["cases"][2].update(name=name)))
    assert "bad.json: case 2" in err
    assert ("unprintable characters" in err) if name else ("has no name" in err)
    err.encode("utf-8")  # the message itself prints: the name is shown escaped


@pytest.mark.parametrize("score", [math.nan, math.inf, 1.5, -0.1, "0.9", None, False], ids=repr)
def test_a_score_that_is_not_in_0_1_is_bad_input_not_a_gate_result(tmp_path, good, report_json, capsys, score):
    bad = write_bad(tmp_path, report_json, lambda data: data["detailed_results"][1][0].update(score=score))
    err = refused(capsys, good, bad, "--gate", "overall >= 0")
    assert "bad.json: case 'sim-02': score is" in err and "a number from 0 to 1" in err


# --- files --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"cases": [], "detailed_results": [', "invalid JSON at line 1"),
        (b'{"cases": [], "detailed_results": []} trailing', "extra data after the report"),
        (b"[1, 2, 3]", "the file holds no JSON object"),
        (b'{"cases": [], "scores": []}', "no 'cases' and 'detailed_results' lists"),
        (b'{"cases": "x", "detailed_results": []}', "no 'cases' and 'detailed_results' lists"),
        (b'{"cases": [], "detailed_results": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", "nested too deeply"),
        (b"\xff\xfe not text", "not UTF-8 text"),
    ],
    ids=["truncated", "trailing", "array", "no-results", "cases-not-list", "deep", "binary"],
)
def test_a_file_that_is_not_a_saved_report_is_refused(tmp_path, good, capsys, content, message):
    path = tmp_path / "foreign.json"
    path.write_bytes(content)
    err = refused(capsys, good, path)
    assert "foreign.json: " in err and message in err


def test_an_empty_report_has_nothing_scored(tmp_path, good, capsys):
    path = tmp_path / "empty.json"
    path.write_text('{"cases": [], "detailed_results": []}', encoding="utf-8")
    assert "empty.json: no case was scored by StructuredOutputSimilarity" in refused(capsys, good, path)


def test_results_before_cases_are_still_read(tmp_path, good, report_json, capsys):
    reordered = {"detailed_results": report_json["detailed_results"], "cases": report_json["cases"]}
    path = tmp_path / "reordered.json"
    path.write_text(json.dumps(reordered), encoding="utf-8")
    assert main([str(good), str(path), "--resamples", "50"]) == 0
    assert "paired 3 cases; left out 0" in capsys.readouterr().out


# --- arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--resamples=0", "resamples must be at least 1"),
        (f"--resamples={MAX_RESAMPLES + 1}", "at most 100,000"),
        ("--resamples=10000000000000000000000", "at most 100,000"),
        ("--seed=-1", "seed must be a whole number from 0"),
        ("--seed=99999999999999999999999", "seed must be a whole number from 0"),
        ("--confidence=nan", "confidence must be between 0 and 1"),
        ("--confidence=1", "confidence must be between 0 and 1"),
        ("--top=-1", "--top must be 0 or more"),
        ("--resamples=many", "invalid int value"),
    ],
)
def test_an_argument_out_of_range_is_refused_before_any_file_is_read(tmp_path, capsys, option, message):
    absent = tmp_path / "absent.json"
    assert message in refused(capsys, absent, absent, option)


def test_a_gate_bound_that_is_not_finite_is_refused(good, capsys):
    err = refused(capsys, good, good, "--gate", "overall >= 1e999")
    assert "gate 'overall >= 1e999': the bound 1e999 is not a finite number" in err


def test_a_bug_is_exit_3_not_a_failed_gate(good, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr("fieldeval.compare.runs.compare_runs", broken)
    assert main([str(good), str(good)]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "internal error in fieldeval.commands.compare (KeyError" in err and "not a gate result" in err
    assert cli.EXIT_FAILED != EXIT_INTERNAL


def test_a_nan_score_in_a_report_in_memory_is_refused_too():
    """The notebook path (reports in memory) validates as the command does."""
    from strands_evals.evaluators import Equals

    from fieldeval.compare.params import CompareError
    from fieldeval.compare.runs import case_scores

    invoices = sim.simulated_invoices()[:2]
    report = score_outputs_sync(sim.simulated_cases(invoices), sim.extract(sim.BASELINE, invoices), Equals())
    report.scores[1] = math.nan
    with pytest.raises(
        CompareError, match="old.json: case 'sim-02': score is nan; a score must be a number from 0 to 1"
    ):
        case_scores(report, "old.json")
