"""A predictions file may say which model answered each case and what the call cost.

A team that ran its agent elsewhere knows the model and its tokens and latency; given on a
prediction's line, they travel into the saved run as a recorded case's would, so `--prices` can
price it and `compare` can set cost beside quality. A line without them reads as before.
"""

from __future__ import annotations

import io
import json

import pytest

from fieldeval.commands import score
from tests.jsonl import write_jsonl

CASES = [{"name": f"doc-{n}", "input": "x", "expected_output": {"title": f"T{n}"}} for n in range(3)]
USAGE = {"calls": 1, "input_tokens": 1200, "output_tokens": 80, "latency_ms": 950}


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "doc_schema.py").write_text(
        "from pydantic import BaseModel\nclass Doc(BaseModel):\n    title: str\n", encoding="utf-8"
    )
    write_jsonl(tmp_path / "cases.jsonl", CASES)
    (tmp_path / "prices.json").write_text(
        json.dumps({"small-a": {"input_per_million": 1.0, "output_per_million": 5.0}}), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = score.main(["--schema", "doc_schema:Doc", "--cases", "cases.jsonl", *args], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_model_and_usage_travel_into_the_saved_run_and_are_priced(project):
    lines = [{"name": c["name"], "output": c["expected_output"], "model_id": "small-a", "usage": USAGE} for c in CASES]
    lines[2] = {"name": "doc-2", "output": {"title": "T2"}}  # one line says neither
    write_jsonl(project / "preds.jsonl", lines)
    code, out, err = run("--predictions", "preds.jsonl", "--prices", "prices.json", "--out", "run.json")
    assert code == 0, err
    cases = json.loads((project / "run.json").read_text())["run"]["cases"]
    assert cases["doc-0"] == {
        "origin": "predictions",
        "provider": None,
        "model_id": "small-a",
        "endpoint": None,
        "file": "preds.jsonl",
        "usage": USAGE,
    }
    assert cases["doc-2"]["model_id"] is None and cases["doc-2"]["usage"] is None
    # 2 priced cases: 2 x (1200 x 1.0 + 80 x 5.0) / 1e6 = 0.0032
    assert "0.0032" in out, out


@pytest.mark.parametrize(
    ("usage", "said"),
    [
        ({"input_tokens": -5}, "usage.input_tokens is -5; it must be a whole number"),
        ({"input_tokens": 1.5}, "usage.input_tokens is 1.5; it must be a whole number"),
        ({"tokens": 3}, "usage.tokens is not a usage field"),
    ],
)
def test_a_usage_no_provider_sends_is_refused_naming_line_and_field(project, usage, said):
    lines = [{"name": c["name"], "output": c["expected_output"]} for c in CASES]
    lines[1]["usage"] = usage
    write_jsonl(project / "preds.jsonl", lines)
    code, out, err = run("--predictions", "preds.jsonl", "--out", "run.json")
    assert code == 2
    assert "preds.jsonl: line 2" in err and said in err, err
    assert not (project / "run.json").exists()
