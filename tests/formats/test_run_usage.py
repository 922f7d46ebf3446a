"""The usage a run file records (tokens, calls, latency, wall time) is read back only in range: a run
edited by hand is refused naming the file, the field and the fix, never summed into a cost."""

import json

import pytest
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.commands import compare
from fieldeval.formats.results import ResultRow, ResultsHeader
from fieldeval.formats.run_info import USAGE_LIMITS, RunInfoError, read_run_info
from fieldeval.harness.reports import load_run_info, save_report
from fieldeval.harness.scoring import score_outputs_sync
from walkthroughs import simulated_runs as sim
from walkthroughs.invoices import Invoice

USAGE = {"calls": 2, "input_tokens": 812, "output_tokens": 96, "latency_ms": 1830, "seconds": 2.1}


def run_with(usage):
    case = {"origin": "model", "provider": "BedrockModel", "model_id": "m", "usage": usage}
    return {"run": {"schema": "walkthroughs.invoices:Invoice", "cases": {"doc-1": case}}}


@pytest.mark.parametrize(
    ("key", "value", "must"),
    [
        ("input_tokens", -5, "a whole number from 0 to 1,000,000,000,000,000"),
        ("output_tokens", 2.5, "a whole number from 0"),
        ("calls", True, "a whole number from 0 to 1,000,000,000"),
        ("calls", "2", "a whole number from 0"),
        ("latency_ms", -1, "a whole number from 0"),
        ("seconds", -0.5, "a number from 0 to 1,000,000,000,000"),
        ("seconds", 10**13, "a number from 0"),
        ("input_tokens", 10**16, "a whole number from 0"),
        ("input_tokens", None, "a whole number from 0"),
    ],
)
def test_a_usage_value_out_of_range_is_refused_naming_the_field(key, value, must):
    with pytest.raises(RunInfoError) as caught:
        read_run_info(run_with(dict(USAGE, **{key: value})))
    assert str(caught.value).startswith(f"field 'run.cases.doc-1.usage.{key}': is ")
    assert must in str(caught.value)


def test_an_unknown_usage_field_is_refused_and_the_known_ones_at_their_limits_are_read():
    with pytest.raises(RunInfoError, match="usage.cost': is not a usage field; usage holds calls, input_tokens"):
        read_run_info(run_with(dict(USAGE, cost=3)))
    at_limits = read_run_info(run_with(dict(USAGE_LIMITS)))
    assert at_limits is not None and at_limits.cases["doc-1"].usage == USAGE_LIMITS
    assert read_run_info(run_with({"calls": 0, "input_tokens": 0, "output_tokens": 0, "seconds": 0.0})) is not None


def results_with(path, usage):
    header = ResultsHeader(schema="walkthroughs.invoices:Invoice", run=run_with(usage)["run"])
    row = ResultRow(name="doc-1", score=0.5, test_pass=False)
    lines = [json.dumps(header.model_dump(by_alias=True)), row.model_dump_json()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_compare_refuses_a_results_file_edited_to_a_negative_token_count(tmp_path, capsys):
    good = results_with(tmp_path / "old.jsonl", USAGE)
    bad = results_with(tmp_path / "new.jsonl", dict(USAGE, output_tokens=-96))
    assert compare.main([str(good), str(good)]) == 0
    capsys.readouterr()
    assert compare.main([str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: field 'run.cases.doc-1.usage.output_tokens': is -96; it must be a whole number from 0" in err
    assert "correct that field, or re-run the score that wrote the file" in err


@pytest.fixture(scope="module")
def scored():
    invoices = sim.simulated_invoices()[:3]
    cases = sim.simulated_cases(invoices)
    return score_outputs_sync(cases, sim.extract(sim.BASELINE, invoices), StructuredOutputSimilarity(Invoice))


def test_compare_and_the_report_reader_refuse_a_saved_report_edited_to_a_negative_token_count(tmp_path, scored, capsys):
    names = [case["name"] for case in scored.cases]
    sources = {name: {"origin": "model", "model_id": "m", "usage": dict(USAGE)} for name in names}
    run = {"schema": "walkthroughs.invoices:Invoice", "cases": sources}
    good = save_report(scored, tmp_path / "old.json", run)
    sources[names[1]]["usage"]["input_tokens"] = -812
    bad = save_report(scored, tmp_path / "new.json", run)
    assert load_run_info(good) is not None
    with pytest.raises(ValueError) as caught:
        load_run_info(bad)
    assert str(caught.value).startswith(f"{bad}: field 'run.cases.{names[1]}.usage.input_tokens': is -812")
    assert compare.main([str(good), str(bad)]) == 2
    assert f"field 'run.cases.{names[1]}.usage.input_tokens': is -812" in capsys.readouterr().err
