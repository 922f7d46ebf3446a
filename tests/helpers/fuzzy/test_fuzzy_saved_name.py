"""The name `FuzzyEquals` is saved under, and reading what was saved under the old name.

Upstream Strands Evals has a pull request adding its own `FuzzyEquals`; once it ships, a saved
experiment naming "FuzzyEquals" would be ambiguous, so this evaluator saves itself as
"FieldFuzzyEquals" and `EVALUATORS` reads both names.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from strands_evals import Case, Experiment
from strands_evals.eval_task_handler import eval_task
from strands_evals.evaluators import StructuredOutputReport

from fieldeval.harness.reports import load_report, save_report
from helpers.fuzzy import EVALUATORS
from helpers.fuzzy.evaluator import SAVED_TYPE, UNSET, FuzzyEquals

OLD_EXPERIMENT = {  # what Experiment.to_file wrote before the rename, key for key
    "cases": [
        {
            "name": "rows",
            "session_id": "7b7a3c1e-0000-4000-8000-000000000000",
            "input": "q",
            "expected_output": [{"id": 1, "total": 10.0}],
            "expected_trajectory": None,
            "expected_interactions": None,
            "expected_environment_state": None,
            "metadata": None,
        }
    ],
    "evaluators": [
        {"evaluator_type": "FuzzyEquals", "ignore_order": True, "numeric_tolerance": 0.01, "name": "rows"},
        {"evaluator_type": "FuzzyEquals", "value": None},
    ],
}


def test_saved_under_a_name_of_its_own():
    assert SAVED_TYPE == "FieldFuzzyEquals"
    assert FuzzyEquals.get_type_name() == "FieldFuzzyEquals"
    assert FuzzyEquals(ignore_order=True).to_dict() == {"evaluator_type": "FieldFuzzyEquals", "ignore_order": True}


def test_report_rows_still_show_the_name_the_class_is_imported_as():
    @eval_task()
    def task(case):
        return {"output": case.expected_output}

    experiment = Experiment(cases=[Case(name="c", input="q", expected_output=[1])], evaluators=[FuzzyEquals()])
    report = asyncio.run(experiment.run_evaluations_async(task))
    assert [row["evaluator"] for row in report.cases] == ["FuzzyEquals"]
    assert [row["evaluator_type"] for row in report.cases] == ["FieldFuzzyEquals"]


def test_new_name_round_trips_through_to_dict_and_from_dict():
    evaluator = FuzzyEquals({"a": 1}, case_sensitive=False, name="checks")
    experiment = Experiment(cases=[Case(name="c", input="q")], evaluators=[evaluator])
    data = json.loads(json.dumps(experiment.to_dict()))
    assert data["evaluators"][0]["evaluator_type"] == "FieldFuzzyEquals"
    [rebuilt] = Experiment.from_dict(data, custom_evaluators=EVALUATORS).evaluators
    assert type(rebuilt) is FuzzyEquals
    assert rebuilt.to_dict() == evaluator.to_dict()
    [alone] = Experiment.from_dict(data, custom_evaluators=[FuzzyEquals]).evaluators
    assert alone.to_dict() == evaluator.to_dict()


def test_experiments_saved_under_the_old_name_still_load(tmp_path):
    path = tmp_path / "old_experiment.json"
    path.write_text(json.dumps(OLD_EXPERIMENT))
    rows, none = Experiment.from_file(str(path), custom_evaluators=EVALUATORS).evaluators
    assert type(rows) is FuzzyEquals and type(none) is FuzzyEquals
    assert rows.knobs["ignore_order"] and rows.knobs["numeric_tolerance"] == 0.01 and rows.name == "rows"
    assert rows.compare([{"id": 1, "total": 10.0}], [{"total": 10.05, "id": 1}]).test_pass
    assert none.value is None and rows.value is UNSET
    # Saved again, they carry the new name.
    Experiment(cases=[Case(name="c", input="q")], evaluators=[rows, none]).to_file(str(tmp_path / "new.json"))
    saved = json.loads((tmp_path / "new.json").read_text())
    assert [e["evaluator_type"] for e in saved["evaluators"]] == ["FieldFuzzyEquals", "FieldFuzzyEquals"]


def test_without_the_old_name_registered_the_library_says_it_cannot_find_it():
    with pytest.raises(Exception, match="Cannot find FuzzyEquals"):
        Experiment.from_dict(OLD_EXPERIMENT, custom_evaluators=[FuzzyEquals])


def test_reports_saved_under_the_old_name_still_load(tmp_path):
    @eval_task()
    def task(case):
        return {"output": case.expected_output}

    experiment = Experiment(
        cases=[Case(name="c", input="q", expected_output=[1])],
        evaluators=[FuzzyEquals()],
        report_cls=StructuredOutputReport,
    )
    report = asyncio.run(experiment.run_evaluations_async(task))
    path = save_report(report, tmp_path / "report.json")
    old = path.read_text().replace('"FieldFuzzyEquals"', '"FuzzyEquals"')
    assert '"FuzzyEquals"' in old
    path.write_text(old)
    loaded = load_report(path)
    assert loaded.scores == [1.0]
    assert [row["evaluator_type"] for row in loaded.cases] == ["FuzzyEquals"]
