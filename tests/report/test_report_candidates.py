"""`report --against BASELINE RUN RUN ...`: the page and the summary of several candidates, on constructed runs.

The runs are built as `tests/compare/test_compare_candidates.py` builds them, from the simulated
baseline extractor's outputs: `copy` (the same outputs, the same model), `small` (the same outputs
from a cheaper model), `tiny` (cheapest, `invoice_date` left empty on every second invoice),
`huge` (the ground truth from the dearest model) and `odd` (the baseline's outputs from a model
the price table does not list). Each is scored by the real scorer and saved by the project's own
writer with its provenance, then reported by the command. The browser tests drive headless
Chromium on 127.0.0.1 (`tests/servers/chromium.py`); under CI=true they must run.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from strands_evals import Case
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.commands.report import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_PASSED, main
from fieldeval.harness.reports import save_report
from fieldeval.harness.scoring import score_outputs_sync
from walkthroughs.invoices import Invoice, reference_cases

SCHEMA = "walkthroughs.invoices:Invoice"
ONE = Path(__file__).parent / "one_run"  # written by the code before the report took several runs, on these runs
ONE_ARGS = [
    *("new.json", "--against", "old.json", "--schema", SCHEMA, "--resamples", "200"),
    *("--gate", "overall >= 0.5", "--gate", "total_amount.precision >= 0.9"),
    *("--out", "page.html", "--summary", "summary.md"),
]


def save_reference_runs(folder: Path) -> None:
    """The reference invoices as predicted (`new.json`) and predicted perfectly (`old.json`), saved."""
    refs = reference_cases()
    cases = [Case(name=ref.name, input=ref.broken, expected_output=ref.ground_truth) for ref in refs]
    evaluator = StructuredOutputSimilarity(Invoice)
    save_report(score_outputs_sync(cases, {ref.name: ref.prediction for ref in refs}, evaluator), folder / "new.json")
    save_report(score_outputs_sync(cases, {ref.name: ref.ground_truth for ref in refs}, evaluator), folder / "old.json")


def run_command(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def test_one_run_writes_the_page_and_summary_it_wrote_before_byte_for_byte(tmp_path, monkeypatch):
    """The files under one_run/ are what `report` wrote, with these arguments on these runs, before it took
    several runs."""
    save_reference_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, printed = run_command(ONE_ARGS)
    assert code == EXIT_FAILED  # total_amount precision is 0.667 on the reference invoices
    assert (tmp_path / "page.html").read_bytes() == (ONE / "page.html").read_bytes()
    assert (tmp_path / "summary.md").read_bytes() == (ONE / "summary.md").read_bytes()
    assert printed.encode() == (ONE / "summary.md").read_bytes()
