"""What a fanned-out run must equal: one process's report, summary and results file on the same documents.

Shared by the tests of local workers (`test_parallel.py`) and of Dask (`test_scale_with_dask.py`);
the fixtures that build the run, its one-process report and a user's order folder are in `conftest.py`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from strands_evals import Case

from fieldeval.formats.results import COUNTS
from tests.commands.streams import outcome
from tests.jsonl import write_jsonl
from walkthroughs.invoices import reference_cases
from walkthroughs.simulated_large import simulated_run


def mixed_run() -> list[tuple[Case, object]]:
    """Nested lists of many items, the hand-authored reference cases, an unreadable output, no ground truth."""
    pairs: list[tuple[Case, object]] = list(simulated_run(12, 6))
    for ref in reference_cases():
        pairs.append((Case(name=ref.name, input=ref.broken, expected_output=ref.ground_truth), ref.prediction))
    truth = pairs[0][0].expected_output
    pairs.append((Case(name="unreadable", input="x", expected_output=truth), {"unrelated": 1}))
    pairs.append((Case(name="not-json", input="x", expected_output=truth), "not json"))
    pairs.append((Case(name="no-truth", input="x", expected_output=None), truth))
    return pairs


def assert_same_rollups(report, single):
    assert report.model_dump() == single.model_dump()
    parallel_metrics, single_metrics = report.metrics(), single.metrics()
    assert parallel_metrics.field_metrics.keys() == single_metrics.field_metrics.keys()
    for path, values in single_metrics.field_metrics.items():
        assert parallel_metrics.field_metrics[path] == values, path
    assert parallel_metrics.metrics == single_metrics.metrics
    assert report.per_case() == single.per_case()
    assert report.overall_score == single.overall_score
    assert report.test_passes == single.test_passes


def assert_same_summary(summary, single):
    assert summary.overall_score == single.overall_score
    assert summary.pass_rate == sum(single.test_passes) / len(single.test_passes)
    metrics = single.metrics()
    for path, values in metrics.field_metrics.items():
        assert summary.counts[path].model_dump() == {key: values.get(key, 0) for key in COUNTS}, path
    assert summary.overall.model_dump() == {key: metrics.metrics.get(key, 0) for key in COUNTS}
    assert summary.unreadable == ["unreadable", "not-json"]


# --- the score command's --workers, --cluster and --results -----------------------------------

ORDER_SCHEMA = """
from pydantic import BaseModel

class Line(BaseModel):
    sku: str
    quantity: int | None = None

class PurchaseOrder(BaseModel):
    po_number: str
    buyer: str
    lines: list[Line]
"""


def write_order_project(folder: Path) -> Path:
    """A user's folder outside the repository: a schema module, a case file and a predictions file."""
    (folder / "order_schema.py").write_text(textwrap.dedent(ORDER_SCHEMA))
    cases, predictions = [], []
    for index in range(30):
        lines = [{"sku": f"S{index}-{line}", "quantity": line + 1} for line in range(index % 5 + 1)]
        truth = {"po_number": f"PO-{index:03d}", "buyer": "Northwind", "lines": lines}
        guess = {**truth, "lines": lines[:-1] if index % 4 == 0 else lines[::-1]}
        if index % 7 == 0:
            guess["buyer"] = "Southwind"
        cases.append({"name": f"po-{index:03d}", "input": f"order {index}", "expected_output": truth})
        predictions.append({"name": f"po-{index:03d}", "output": guess})
    write_jsonl(folder / "cases.jsonl", cases)
    write_jsonl(folder / "predictions.jsonl", predictions)
    return folder


def score_command(folder, *extra):
    from fieldeval.commands.score import main

    argv = ["--schema", "order_schema:PurchaseOrder", "--cases", "cases.jsonl", "--predictions", "predictions.jsonl"]
    return outcome(main, [*argv, *extra])
