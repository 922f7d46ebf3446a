"""The run every scale test scores, its one-process report, and a user's order folder (`same_report.py`)."""

from __future__ import annotations

import pytest
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.harness.scoring import score_outputs_sync
from tests.scale.same_report import mixed_run, write_order_project
from walkthroughs.invoices import Invoice


@pytest.fixture(scope="module")
def run_pairs():
    return mixed_run()


@pytest.fixture(scope="module")
def single(run_pairs):
    cases = [case for case, _ in run_pairs]
    outputs = {case.name: output for case, output in run_pairs}
    return score_outputs_sync(cases, outputs, StructuredOutputSimilarity(Invoice))


@pytest.fixture(scope="module")
def order_project(tmp_path_factory):
    """A user's folder outside the repository: a schema module, a case file and a predictions file."""
    return write_order_project(tmp_path_factory.mktemp("orders"))
