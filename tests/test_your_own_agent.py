"""The bundled "your own agent" sample: hand-authored, bound to its prompts, and the three commands work on it."""

import io
import json
import shutil
import sys

import pytest

from helpers.commands import score
from helpers.commands.compare import main as compare_main
from helpers.exchanges.cassettes import Cassettes
from helpers.exchanges.fixtures import prompt_sha256
from helpers.files import REPO_ROOT
from helpers.harness.cases import load_cases, load_predictions
from helpers.harness.schema import load_schema, load_task

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
