"""One `score` run checks its outputs once, imports its schema once, compiles one stickler spec,
and scores stored outputs by one step whichever outputs it writes.

Each run gets a schema module of its own name, so nothing an earlier test imported or built is
reused; the counters wrap the real functions, in this (the driver's) process.
"""

from __future__ import annotations

import io
import uuid

import pytest
import stickler

from fieldeval import outputs
from fieldeval.commands import score
from fieldeval.harness import schema as schema_module
from fieldeval.scale import run as scale_run
from tests.jsonl import write_jsonl

SCHEMA = """
from pydantic import BaseModel


class Line(BaseModel):
    sku: str
    quantity: int


class Order(BaseModel):
    po_number: str
    buyer: str
    lines: list[Line]
"""

OUTPUTS = {
    "--out": ["--out", "run.json"],
    "--results": ["--results", "run.jsonl"],
    "both": ["--out", "run.json", "--results", "run.jsonl"],
    "both on 2 workers": ["--out", "run.json", "--results", "run.jsonl", "--workers", "2", "--beyond-cores"],
}


def write_project(folder):
    """A schema module under a name no other test uses, 12 cases and their predictions; the schema path."""
    module = f"counted_{uuid.uuid4().hex}"
    (folder / f"{module}.py").write_text(SCHEMA)
    cases, predictions = [], []
    for index in range(12):
        lines = [{"sku": f"S{index}-{n}", "quantity": n + 1} for n in range(index % 3 + 1)]
        truth = {"po_number": f"PO-{index}", "buyer": "Northwind", "lines": lines}
        guess = {**truth, "buyer": "Southwind" if index % 4 == 0 else "Northwind", "lines": lines[::-1]}
        cases.append({"name": f"po-{index}", "input": f"order {index}", "expected_output": truth})
        predictions.append({"name": f"po-{index}", "output": guess})
    write_jsonl(folder / "cases.jsonl", cases)
    write_jsonl(folder / "predictions.jsonl", predictions)
    return f"{module}:Order"


def counting(monkeypatch, counts, owner, name):
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


@pytest.mark.parametrize("asked", OUTPUTS, ids=str)
def test_one_run_checks_imports_and_compiles_once(asked, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    schema = write_project(tmp_path)
    counts: dict[str, int] = {}
    counting(monkeypatch, counts, stickler, "eval_for")
    counting(monkeypatch, counts, schema_module, "import_object")
    for name in ("check_output", "refuse_overlap", "refuse_inputs"):
        counting(monkeypatch, counts, outputs, name)
    counting(monkeypatch, counts, scale_run, "score_at_scale")
    extra = OUTPUTS[asked]
    if "--workers" in extra:
        extra = [*extra, "--fan-out", "always"]  # the workers really score: 12 documents would stay here
    out, err = io.StringIO(), io.StringIO()
    argv = ["--schema", schema, "--cases", "cases.jsonl", "--predictions", "predictions.jsonl", *extra]
    assert score.main(argv, out=out, err=err) == 0, err.getvalue()
    written = [option for option in ("--out", "--results") if option in extra]
    assert counts == {
        "eval_for": 1,
        "import_object": 1,
        "check_output": len(written),  # each output path once
        "refuse_overlap": 1,  # against each other and the command line's files, once
        "refuse_inputs": 1,  # against the schema module, found by importing it
        "score_at_scale": 1,  # the one step for stored outputs, whichever outputs are asked for
    }


def test_the_report_is_the_same_whichever_outputs_are_asked_for(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    schema = write_project(tmp_path)
    argv = ["--schema", schema, "--cases", "cases.jsonl", "--predictions", "predictions.jsonl"]
    assert score.main([*argv, "--out", "alone.json"], out=io.StringIO(), err=io.StringIO()) == 0
    both = [*argv, "--out", "with.json", "--results", "with.jsonl", "--batch-size", "5"]
    assert score.main(both, out=io.StringIO(), err=io.StringIO()) == 0
    assert (tmp_path / "alone.json").read_bytes() == (tmp_path / "with.json").read_bytes()
