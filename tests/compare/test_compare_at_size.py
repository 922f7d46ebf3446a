"""A run of real size, through the commands as a user runs them: score two 5,000-document runs to
results files, compare them, and report on them.

A results file's header lists every case, so at this size it is far longer than any fixed window
a reader might take of it (it was read through the first 64 KiB only, and a 1,200-document run
was refused as "not a saved StructuredOutputReport").
"""

import json
import random

import pytest

from fieldeval.commands import compare, report, score
from fieldeval.formats.results import iter_results, read_header
from tests.commands.streams import streams

DOCUMENTS = 5_000
SCHEMA_MODULE = """
from typing import Optional

from pydantic import BaseModel


class Receipt(BaseModel):
    receipt_id: str
    store: str
    total: float
    cashier: Optional[str] = None
"""
STORES = ("Corner Market", "Harbor Foods", "Sunrise Grocery", "Valley Deli", "North Pantry")


def receipt(index: int, rng: random.Random) -> dict:
    return {
        "receipt_id": f"R-{index:05d}",
        "store": rng.choice(STORES),
        "total": round(rng.uniform(1, 500), 2),
        "cashier": rng.choice(["Ana", "Bo", None]),
    }


def predicted(truth: dict, rng: random.Random, mistakes: float) -> dict:
    """What a seeded extractor returns: the truth, with a wrong store, total or cashier at the rate given."""
    output = dict(truth)
    if rng.random() < mistakes:
        output["store"] = rng.choice(STORES)
    if rng.random() < mistakes:
        output["total"] = round(output["total"] * rng.uniform(0.5, 1.5), 2)
    if rng.random() < mistakes / 2:
        output["cashier"] = "Someone"
    return output


def write_lines(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A user's folder: a schema module, a case file of 5,000 receipts, and two extractors' predictions."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "receipts", raising=False)
    monkeypatch.setenv("EVAL_NOTEBOOKS_MODE", "replay")
    (tmp_path / "receipts.py").write_text(SCHEMA_MODULE, encoding="utf-8")
    rng = random.Random(43)
    truths = {f"receipt-{index:05d}": receipt(index, rng) for index in range(DOCUMENTS)}
    cases = ({"name": name, "input": f"receipt {name}", "expected_output": truth} for name, truth in truths.items())
    write_lines(tmp_path / "cases.jsonl", cases)
    for label, mistakes in (("old", 0.2), ("new", 0.1)):
        outputs = ({"name": name, "output": predicted(truth, rng, mistakes)} for name, truth in truths.items())
        write_lines(tmp_path / f"{label}.jsonl", outputs)
    return tmp_path


def mean_score(path) -> float:
    scores = [row.score for row in iter_results(path)]
    assert len(scores) == DOCUMENTS
    return sum(scores) / len(scores)


def test_two_5000_document_runs_are_scored_compared_and_reported_through_the_commands(project, capsys):
    for label in ("old", "new"):
        argv = ["--schema", "receipts:Receipt", "--cases", "cases.jsonl", "--predictions", f"{label}.jsonl"]
        code, out, err = streams(score.main, [*argv, "--results", f"{label}.results.jsonl"])
        assert code == 0, err
    with open(project / "old.results.jsonl", "rb") as file:
        assert len(file.readline()) > 64 << 10  # the header lists every case: past any small fixed window
    assert len(read_header(project / "old.results.jsonl").run["cases"]) == DOCUMENTS

    capsys.readouterr()
    gates = ["--gate", "delta(overall) >= 0", "--gate", "delta(store.f1) >= 0"]
    assert compare.main(["old.results.jsonl", "new.results.jsonl", *gates, "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert f"paired {DOCUMENTS} cases; left out 0" in printed
    old, new = mean_score(project / "old.results.jsonl"), mean_score(project / "new.results.jsonl")
    assert new > old  # the seeded extractors: the new one makes half the mistakes
    assert f" {old:.3f} {new:.3f} " in printed  # the overall row: every document of both runs read
    assert compare.main(["old.results.jsonl", "new.results.jsonl", "--gate", "overall >= 0.99"]) == 1

    capsys.readouterr()
    argv = ["new.results.jsonl", "--against", "old.results.jsonl", "--schema", "receipts:Receipt"]
    assert report.main([*argv, "--out", "page.html", "--resamples", "200", *gates]) == 0
    summary = capsys.readouterr().out
    assert "### Gates: 2 passed, 0 failed" in summary
    assert (project / "page.html").stat().st_size > 0
