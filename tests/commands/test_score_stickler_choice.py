"""Who turns the stickler speed-up on: the `score` command for its own run and workers, nothing else.

A notebook calling the library scores with stickler as shipped; the command installs
`fieldeval.harness.fast_stickler` and says so in its first line, unless `--stock-stickler` or
`FIELDEVAL_STOCK_STICKLER=1` turns it off, and its workers follow the choice. Either way the
numbers are the same.
"""

from __future__ import annotations

import io
import os
import uuid

import pytest
from stickler.structured_object_evaluator.models.configuration_helper import ConfigurationHelper
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.commands import score
from fieldeval.harness import fast_stickler
from fieldeval.harness.scoring import score_outputs_sync, score_stored
from fieldeval.scale.batches import Scorer
from fieldeval.scale.run import score_at_scale
from tests.jsonl import write_jsonl
from tests.scale.same_report import mixed_run
from tests.scale.test_scoring_counts import write_project
from walkthroughs.invoices import Invoice

# Each instance built appends "PID INSTALLED" to a file beside the module: where it was rebuilt, and
# whether the speed-up was in effect there.
WATCHED = """
import os
from pathlib import Path

from pydantic import BaseModel, model_validator

from fieldeval.harness import fast_stickler

SEEN = Path(__file__).with_name("seen.txt")


class Order(BaseModel):
    po_number: str
    buyer: str

    @model_validator(mode="after")
    def note(self):
        with SEEN.open("a") as seen:
            seen.write(f"{os.getpid()} {fast_stickler._state['installed']}\\n")
        return self
"""


@pytest.fixture
def shipped_stickler():
    """stickler as shipped before the test, and again after it."""
    fast_stickler.uninstall()
    shipped = ConfigurationHelper.__dict__["get_comparison_info"]
    yield shipped
    fast_stickler.uninstall()


def run_score(folder, schema, *extra, env=None):
    out, err = io.StringIO(), io.StringIO()
    argv = ["--schema", schema, "--cases", "cases.jsonl", "--predictions", "predictions.jsonl", *extra]
    return score.main(argv, out=out, err=err), out.getvalue(), err.getvalue()


def test_library_scoring_leaves_stickler_as_shipped(shipped_stickler):
    pairs = mixed_run()[:8]
    cases = [case for case, _ in pairs]
    outputs = {case.name: output for case, output in pairs}
    score_stored(cases, outputs, StructuredOutputSimilarity(Invoice))
    score_outputs_sync(cases, outputs, StructuredOutputSimilarity(Invoice))
    score_at_scale(pairs, Scorer("walkthroughs.invoices:Invoice"))
    assert not fast_stickler._state["installed"]
    assert ConfigurationHelper.__dict__["get_comparison_info"] is shipped_stickler


def test_the_command_installs_it_and_says_so_first(tmp_path, monkeypatch, shipped_stickler):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(fast_stickler.STOCK_ENV_VAR, raising=False)
    code, out, err = run_score(tmp_path, write_project(tmp_path), "--out", "run.json")
    assert code == 0, err
    assert out.splitlines()[0] == fast_stickler.NOTICE
    assert fast_stickler._state["installed"]
    assert ConfigurationHelper.__dict__["get_comparison_info"] is not shipped_stickler


@pytest.mark.parametrize("how", ["option", "environment"])
def test_turned_off_it_is_stock_and_the_numbers_are_the_same(how, tmp_path, monkeypatch, shipped_stickler):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(fast_stickler.STOCK_ENV_VAR, raising=False)
    schema = write_project(tmp_path)
    code, fast_out, err = run_score(tmp_path, schema, "--out", "fast.json", "--results", "fast.jsonl")
    assert code == 0, err
    assert fast_stickler._state["installed"]  # on from the first run: the second must turn it off
    if how == "option":
        extra = ["--stock-stickler"]
    else:
        monkeypatch.setenv(fast_stickler.STOCK_ENV_VAR, "1")
        extra = []
    code, stock_out, err = run_score(tmp_path, schema, "--out", "stock.json", "--results", "stock.jsonl", *extra)
    assert code == 0, err
    assert fast_stickler.NOTICE not in stock_out
    assert not fast_stickler._state["installed"]
    assert ConfigurationHelper.__dict__["get_comparison_info"] is shipped_stickler
    assert (tmp_path / "fast.json").read_bytes() == (tmp_path / "stock.json").read_bytes()
    fast_rows = (tmp_path / "fast.jsonl").read_text().replace("fast.jsonl", "")
    assert fast_rows == (tmp_path / "stock.jsonl").read_text().replace("stock.jsonl", "")
    assert fast_out.splitlines()[1:] == [line.replace("stock.", "fast.") for line in stock_out.splitlines()]


@pytest.mark.parametrize("value", ["yes", "true", "2", "off"])
def test_a_value_that_is_not_0_or_1_is_refused(value, tmp_path, monkeypatch, shipped_stickler):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(fast_stickler.STOCK_ENV_VAR, value)
    code, out, err = run_score(tmp_path, write_project(tmp_path), "--out", "run.json")
    assert code == 2
    assert f"{fast_stickler.STOCK_ENV_VAR}={value!r} is not 0 or 1" in err
    assert not (tmp_path / "run.json").exists()


@pytest.mark.parametrize("stock", [False, True], ids=["default", "stock"])
def test_the_workers_follow_the_choice(stock, tmp_path, monkeypatch, shipped_stickler):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(fast_stickler.STOCK_ENV_VAR, raising=False)
    module = f"watched_{uuid.uuid4().hex}"
    (tmp_path / f"{module}.py").write_text(WATCHED)
    rows = [{"po_number": f"PO-{n}", "buyer": "Northwind"} for n in range(6)]

    cases = [{"name": f"c{n}", "input": "x", "expected_output": row} for n, row in enumerate(rows)]
    write_jsonl(tmp_path / "cases.jsonl", cases)
    write_jsonl(tmp_path / "predictions.jsonl", [{"name": f"c{n}", "output": r} for n, r in enumerate(rows)])
    extra = ["--stock-stickler"] if stock else []
    code, out, err = run_score(
        tmp_path,
        f"{module}:Order",
        "--out",
        "run.json",
        "--workers",
        "2",
        "--beyond-cores",
        "--fan-out",
        "always",
        "--batch-size",
        "2",
        *extra,
    )
    assert code == 0, err
    seen = [line.split() for line in (tmp_path / "seen.txt").read_text().splitlines()]
    in_workers = {state for pid, state in seen if int(pid) != os.getpid()}
    assert in_workers == {"False" if stock else "True"}
