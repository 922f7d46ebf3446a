"""The bundled "your own agent" sample: hand-authored, bound to its prompts, and the three commands work on it."""

import io
import json
import shutil
import sys
from datetime import date

import pytest
import stickler
from strands_evals.evaluators import StructuredOutputSimilarity
from strands_evals.types import EvaluationData

from fieldeval.commands import score
from fieldeval.commands.compare import main as compare_main
from fieldeval.exchanges.cassettes import Cassettes
from fieldeval.exchanges.fixtures import prompt_sha256
from fieldeval.files import REPO_ROOT
from fieldeval.harness.cases import load_cases, load_predictions
from fieldeval.harness.schema import load_schema, load_task

FOLDER = REPO_ROOT / "examples" / "your_own_agent"
SCHEMA, TASK = "purchase_order:PurchaseOrder", "extract:task"


@pytest.fixture
def sample(monkeypatch):
    monkeypatch.setenv("EVAL_NOTEBOOKS_MODE", "replay")
    for name in ("purchase_order", "extract"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    schema = load_schema(SCHEMA, directory=FOLDER)
    task = load_task(TASK, directory=FOLDER)
    return schema, task, load_cases(FOLDER / "cases.jsonl", schema)


def test_every_case_has_a_hand_authored_cassette_bound_to_its_prompt(sample):
    schema, task, cases = sample
    assert 4 <= len(cases) <= 6
    assert all(case.metadata == {"hand_authored": True} for case in cases)
    cassettes = Cassettes(FOLDER / "cassettes", [c.name for c in cases], tool_name="PurchaseOrder", record_command="-")
    exchanges = cassettes.load_all()
    assert sorted(p.name for p in (FOLDER / "cassettes").iterdir()) == sorted(f"{c.name}.json" for c in cases)
    prompt = task.__globals__["PROMPT"]
    for case in cases:
        exchange = exchanges[case.name]
        assert exchange.hand_authored and "Hand-authored" in exchange.provenance["note"]
        assert exchange.prompt_sha256 == prompt_sha256(prompt.format(document=case.input))
        assert exchange.stand_in and exchange.endpoint == "127.0.0.1:8765"  # says how it was made
        lookups, answer = exchange.calls  # a tool run of two model calls
        skus = [block["toolUse"]["input"]["sku"] for block in lookups.response["message"]["content"]]
        assert sorted(skus) == sorted(line.sku for line in case.expected_output.lines)  # all in one message
        results = [block["toolResult"] for block in answer.request["messages"][-1]["content"]]
        assert [result["status"] for result in results] == ["success"] * len(skus)  # the tool's answers, sent back
        chunks = [
            e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in answer.events if "contentBlockDelta" in e
        ]
        assert len(chunks) > 10 and any(chunk[-1].isalnum() for chunk in chunks[:-1]), "split mid-token"
    assert load_predictions(FOLDER / "predictions_v2.jsonl", schema, cases).keys() == {c.name for c in cases}
    answers = load_predictions(FOLDER / "baseline_answers.jsonl", schema, cases)
    assert {name: exchanges[name].final_output("PurchaseOrder") for name in answers} == {
        name: output.model_dump(mode="json") for name, output in answers.items()
    }


def test_the_three_commands_on_the_bundled_sample(sample, tmp_path, monkeypatch):
    project = tmp_path / "your_own_agent"
    shutil.copytree(FOLDER, project, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(project)
    printed = io.StringIO()
    base = ["--schema", SCHEMA, "--cases", "cases.jsonl"]
    replay = [*base, "--task", TASK, "--cassettes", "cassettes", "--out", "runs/baseline.json"]
    assert score.main(replay, out=printed) == 0, printed.getvalue()
    assert "5 of them hand-authored, 5 recorded through 127.0.0.1:8765 (a local or overridden endpoint)" in (
        printed.getvalue()
    )
    predicted = [*base, "--predictions", "predictions_v2.jsonl", "--out", "runs/candidate.json"]
    assert score.main(predicted, out=printed) == 0, printed.getvalue()
    old, new = "runs/baseline.json", "runs/candidate.json"
    assert compare_main([old, new, "--gate", "overall >= 0.9", "--gate", "delta(order_date.f1) >= 0"]) == 0
    assert compare_main([old, new, "--gate", "currency.precision >= 0.95"]) == 1
    baseline = json.loads((project / old).read_text(encoding="utf-8"))
    assert {case["name"] for case in baseline["cases"]} == {"po-1001", "po-1002", "po-1003", "po-1004", "po-1005"}


@pytest.fixture
def tuned(monkeypatch):
    monkeypatch.delitem(sys.modules, "purchase_order_tuned", raising=False)
    return load_schema("purchase_order_tuned:PurchaseOrderTuned", directory=FOLDER)


def settings(field):
    return {key: value for key, value in field.items() if key != "model_name"}


def test_the_tuned_model_is_the_inferred_configuration_but_for_po_number(sample, tuned):
    schema, _, _ = sample
    inferred = stickler.eval_for(schema).eval_model.to_stickler_config()["fields"]
    explicit = tuned.to_stickler_config()["fields"]
    assert inferred.keys() == explicit.keys()
    assert [name for name in inferred if settings(inferred[name]) != settings(explicit[name])] == ["po_number"]
    assert inferred["po_number"]["comparator"] == "LevenshteinComparator"
    assert (explicit["po_number"]["comparator"], explicit["po_number"]["threshold"]) == ("ExactComparator", 1.0)


def test_the_tuned_model_scores_the_bundled_runs_alike_and_a_po_number_slip_as_a_miss(sample, tuned):
    schema, _, cases = sample
    plain, exact = StructuredOutputSimilarity(schema), StructuredOutputSimilarity(tuned)

    def scored(evaluator, case, output):
        data = EvaluationData(input=case.input, expected_output=case.expected_output, actual_output=output)
        return evaluator.evaluate(data)[0]

    for predictions in ("baseline_answers.jsonl", "predictions_v2.jsonl"):
        outputs = load_predictions(FOLDER / predictions, schema, cases)
        for case in cases:  # dates included: the tuned model reads them as ISO text
            rows = [scored(evaluator, case, outputs[case.name]) for evaluator in (plain, exact)]
            assert rows[0].metadata["field_scores"] == rows[1].metadata["field_scores"], (predictions, case.name)
            assert rows[0].score == rows[1].score and rows[0].test_pass == rows[1].test_pass
    first = cases[0]
    slip = first.expected_output.model_copy(update={"po_number": "PO-1008"})
    assert first.expected_output.po_number == "PO-1001"
    counts = [scored(evaluator, first, slip).metadata["comparison"] for evaluator in (plain, exact)]
    matrices = [comparison["confusion_matrix"]["fields"]["po_number"]["overall"] for comparison in counts]
    assert (matrices[0]["tp"], matrices[0]["fd"]) == (1, 0)  # edit distance: 0.857 counts as a match
    assert (matrices[1]["tp"], matrices[1]["fd"]) == (0, 1)  # compared exactly: a miss


def test_a_date_field_of_a_structured_model_scores_only_as_iso_text(tuned):
    """stickler 1.0.0's sharp edge the notebook shows: a `date` value is scored as a type mismatch."""

    class DatedOrder(stickler.StructuredModel):
        order_date: date | None = stickler.ComparableField(comparator=stickler.DateComparator(), threshold=0.95)

    day = date(2026, 3, 2)
    assert DatedOrder(order_date=day).compare_with(DatedOrder(order_date=day))["field_scores"]["order_date"] == 0.0
    assert stickler.DateComparator().compare(day, day) == 1.0
    held = tuned.model_validate(
        {"po_number": "P", "buyer": "B", "supplier": "S", "order_date": day, "currency": "C"}
        | {"lines": [], "total": 1.0}
    )
    assert held.order_date == "2026-03-02"
    assert held.compare_with(held)["field_scores"]["order_date"] == 1.0
