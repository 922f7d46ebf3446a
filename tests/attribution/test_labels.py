"""The label audit (`eval-labels`) on runs scored here by the score command, from labels with seeded errors.

Three invoices are labelled with a wrong date, a wrong price inside a list whose items every run
returns in another order, an amount the runs read within its tolerance, and a vendor the runs
disagree on. Each run is scored by `fieldeval.commands.score` (in this process) and audited by the
command's own flow, so what is checked is what a user gets.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fieldeval.attribution.labels import Comparators, SavedRun, audit
from fieldeval.commands import exits, labels, score
from fieldeval.formats.leaf_diffs import LEAF_COLUMNS, StoredDiffs
from fieldeval.formats.run_info import RunInfo

SCHEMA = "walkthroughs.invoices:Invoice"
TRUTH = {
    "inv-a": {
        "invoice_id": "A-1",
        "vendor_name": "Acme Corporation",
        "invoice_date": "2026-01-16",
        "total_amount": 150.1,
        "line_items": [{"sku": "S-1", "description": "Steel widget", "unit_price": 150.1}],
    },
    "inv-b": {
        "invoice_id": "B-7",
        "vendor_name": "Beta Industries",
        "invoice_date": "2026-02-01",
        "total_amount": 30.0,
        "line_items": [
            {"sku": "S-1", "description": "Steel widget", "unit_price": 10.0},
            {"sku": "S-2", "description": "Brass hinge", "unit_price": 20.0},
        ],
    },
    "inv-c": {
        "invoice_id": "C-3",
        "vendor_name": "Gamma Ltd",
        "invoice_date": "2026-03-09",
        "total_amount": 120.0,
        "line_items": [{"sku": "S-9", "description": "Oak shelf", "unit_price": 120.0}],
    },
}


def _labels() -> dict[str, dict]:
    """The truth with seeded label errors (and one label within tolerance of what the runs read)."""
    labels = json.loads(json.dumps(TRUTH))
    labels["inv-a"]["invoice_date"] = "2026-01-15"  # a wrong date: every run reads the 16th
    labels["inv-a"]["total_amount"] = 150.0  # the runs read 150.1: within 0.1%, agreement WITH the label
    labels["inv-b"]["line_items"][1]["unit_price"] = 25.0  # a wrong price in the second labelled item
    labels["inv-c"]["total_amount"] = 100.0  # wrong: the runs read 120.0 and 120.05 (within tolerance of each other)
    return labels


def _outputs(run: int) -> dict[str, dict]:
    """What run `run` (0, 1, 2) returns: the truth, items reversed, each run its own vendor error on inv-b."""
    outputs = json.loads(json.dumps(TRUTH))
    outputs["inv-b"]["line_items"].reverse()  # stickler pairs them back by similarity
    outputs["inv-b"]["vendor_name"] = ["Beta Industries", "Omega Group", "Sigma Partners"][run]
    outputs["inv-c"]["total_amount"] = [120.0, 120.05, 120.0][run]
    return outputs


def write_project(
    folder: Path, labels: dict[str, dict], outputs: list[dict[str, dict]], schema: str = SCHEMA
) -> tuple[Path, list[Path]]:
    """The case file and each run scored by the score command; returns the case file and the runs."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = folder / "cases.jsonl"
    cases.write_text(
        "".join(json.dumps({"name": n, "input": "", "expected_output": v}) + "\n" for n, v in labels.items())
    )
    runs = []
    for index, answers in enumerate(outputs):
        predictions = folder / f"predictions{index}.jsonl"
        predictions.write_text("".join(json.dumps({"name": n, "output": v}) + "\n" for n, v in answers.items()))
        run = folder / f"run{index}.json"
        printed = io.StringIO()
        argv = ["--schema", schema, "--cases", str(cases), "--predictions", str(predictions), "--out", str(run)]
        assert score.main(argv, out=printed) == exits.OK, printed.getvalue()
        runs.append(run)
    return cases, runs


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return write_project(tmp_path_factory.mktemp("labels"), _labels(), [_outputs(run) for run in range(3)])


def run_labels(argv: list[str], capsys) -> tuple[int, list[dict], str]:
    code = labels.main(argv)
    printed = capsys.readouterr()
    return code, [json.loads(line) for line in printed.out.splitlines() if line.startswith("{")], printed.err


def test_suspects_are_the_seeded_label_errors_by_each_field_comparator(project, capsys):
    cases, runs = project
    code, found, err = run_labels(["--cases", str(cases), "--schema", SCHEMA, *map(str, runs)], capsys)
    assert code == exits.OK, err
    by_leaf = {(row["case"], row["path"]): row for row in found}
    date = by_leaf.pop(("inv-a", "invoice_date"))
    assert (date["label"], date["proposed"], date["agree"], date["of"]) == ("2026-01-15", "2026-01-16", 3, 3)
    price = by_leaf.pop(("inv-b", "line_items[1].unit_price"))  # named by the labelled item, paired by stickler
    assert (price["label"], price["proposed"], price["agree"], price["of"]) == (25.0, 20.0, 3, 3)
    amount = by_leaf.pop(("inv-c", "total_amount"))  # 120.0 and 120.05 agree within the field's tolerance
    assert (amount["label"], amount["agree"], amount["of"]) == (100.0, 3, 3)
    assert amount["proposed"] in (120.0, 120.05)
    assert by_leaf == {}  # not inv-a's amount (within tolerance of its label), not inv-b's vendor (the runs disagree)


def test_without_the_schema_stored_comparators_are_rebuilt_and_say_what_they_lack(project, capsys):
    cases, runs = project
    code, found, err = run_labels(["--cases", str(cases), *map(str, runs)], capsys)
    assert code == exits.OK, err
    amount = next(row for row in found if row["path"] == "total_amount")
    assert (amount["proposed"], amount["agree"], amount["of"]) == (120.0, 2, 3)  # 120.05 agrees only when equal
    assert "NumericComparator" in err and "--schema" in err


TAGGED = """
from stickler import ComparableField, StructuredModel
from stickler.comparators import ExactComparator, LevenshteinComparator


class Tagged(StructuredModel):
    ref: str = ComparableField(comparator=ExactComparator(), threshold=1.0)
    tags: list[str] = ComparableField(comparator=LevenshteinComparator(), threshold=0.7)
"""


def test_items_of_a_list_of_values_are_audited_paired_and_compared_by_the_lists_comparator(
    tmp_path, monkeypatch, capsys
):
    """A wrong tag in the label is a suspect at the labelled item's index, whatever order the runs return
    the tags in; a tag read within the list's Levenshtein threshold of the label reads as the label; a run
    that left the item out, or invented one at the same index, reads nothing there."""
    (tmp_path / "tagged_schema.py").write_text(TAGGED)
    monkeypatch.syspath_prepend(str(tmp_path))
    labels = {
        "t1": {"ref": "1", "tags": ["red", "grene", "blue"]},  # seeded: every run reads "green"
        "t2": {"ref": "2", "tags": ["amber", "violet"]},  # right: one run reads "ambr" (0.8, above 0.7)
        "t3": {"ref": "3", "tags": ["cyan", "mauve"]},  # seeded: two runs read "magenta", one left it out
    }
    outputs = [
        {"t1": ["green", "red", "blue"], "t2": ["violet", "amber"], "t3": ["magenta", "cyan"]},
        {"t1": ["blue", "green", "red"], "t2": ["ambr", "violet"], "t3": ["cyan", "magenta"]},
        {"t1": ["green", "teal", "red", "blue"], "t2": ["ambr", "violet"], "t3": ["cyan"]},  # invents a tags[1] in t1
    ]
    answers = [{name: {"ref": labels[name]["ref"], "tags": tags} for name, tags in run.items()} for run in outputs]
    cases, runs = write_project(tmp_path / "project", labels, answers, schema="tagged_schema:Tagged")
    for argv in ([], ["--schema", "tagged_schema:Tagged"]):
        code, found, err = run_labels(["--cases", str(cases), *argv, *map(str, runs)], capsys)
        assert code == exits.OK, err
        rows = [(row["case"], row["path"], row["label"], row["proposed"], row["agree"], row["of"]) for row in found]
        assert rows == [("t1", "tags[1]", "grene", "green", 3, 3), ("t3", "tags[1]", "mauve", "magenta", 2, 2)]


def test_runs_that_disagree_with_each_other_give_no_suspect(tmp_path, capsys):
    outputs = [_outputs(run) for run in range(3)]
    for run, date in enumerate(["2026-01-17", "2026-01-18", "2026-01-19"]):
        outputs[run]["inv-a"]["invoice_date"] = date
    cases, runs = write_project(tmp_path, _labels(), outputs)
    code, found, err = run_labels(["--cases", str(cases), *map(str, runs)], capsys)
    assert code == exits.OK, err
    assert ("inv-a", "invoice_date") not in {(row["case"], row["path"]) for row in found}


def test_a_minority_against_the_label_is_no_suspect(tmp_path, capsys):
    """Two runs agreeing on a value, three reading the label: the label stands."""
    labels = json.loads(json.dumps(TRUTH))
    outputs = [json.loads(json.dumps(TRUTH)) for _ in range(5)]
    for run in (0, 1):
        outputs[run]["inv-c"]["invoice_id"] = "C-8"
    cases, runs = write_project(tmp_path, labels, outputs)
    code, found, err = run_labels(["--cases", str(cases), *map(str, runs)], capsys)
    assert (code, found) == (exits.OK, []), err


def test_ranked_by_runs_agreeing_then_by_cost_and_top_keeps_the_first(tmp_path, capsys):
    labels = _labels()
    outputs = [_outputs(run) for run in range(3)]
    outputs[2]["inv-a"]["invoice_date"] = "2026-01-15"  # now two of three read the 16th
    labels["inv-c"]["invoice_id"] = "C-0"  # a third suspect every run reads as C-3
    cases, runs = write_project(tmp_path, labels, outputs)
    code, found, err = run_labels(["--cases", str(cases), "--schema", SCHEMA, *map(str, runs)], capsys)
    assert code == exits.OK, err
    assert [row["agree"] for row in found] == sorted((row["agree"] for row in found), reverse=True)
    threes = [row for row in found if row["agree"] == 3]
    assert [row["cost"] for row in threes] == sorted((row["cost"] for row in threes), reverse=True)
    assert found[-1]["path"] == "invoice_date" and found[-1]["agree"] == 2
    # a top-level field costs a fifth of the document; a price inside one of two items a tenth of a third of that
    assert threes[-1]["path"] == "line_items[1].unit_price"
    code, top, _ = run_labels(["--cases", str(cases), "--schema", SCHEMA, "--top", "2", *map(str, runs)], capsys)
    assert (code, top) == (exits.OK, found[:2])


def test_out_is_written_whole_and_refused_when_it_is_an_input(project, tmp_path, capsys):
    cases, runs = project
    out = tmp_path / "suspects.jsonl"
    code, printed, err = run_labels(["--cases", str(cases), "--out", str(out), *map(str, runs)], capsys)
    assert (code, printed) == (exits.OK, []), err
    _, shown, _ = run_labels(["--cases", str(cases), *map(str, runs)], capsys)
    assert [json.loads(line) for line in out.read_text().splitlines()] == shown and len(shown) == 3
    before = runs[0].read_bytes()
    code, _, err = run_labels(["--cases", str(cases), "--out", str(runs[0]), *map(str, runs)], capsys)
    assert code == exits.BAD_INPUT and f"--out {runs[0]}" in err and "name a new file" in err
    assert runs[0].read_bytes() == before


def test_runs_of_different_schemas_are_refused_naming_the_file_and_the_fix(project, tmp_path, capsys):
    cases, runs = project
    other = tmp_path / "other.json"
    data = json.loads(runs[1].read_text())
    data["run"]["schema_sha256"] = "0" * 64
    data["run"]["comparators"]["total_amount"] = "NumericComparator@0.5"
    other.write_text(json.dumps(data))
    code, found, err = run_labels(["--cases", str(cases), str(runs[0]), str(other)], capsys)
    assert (code, found) == (exits.BAD_INPUT, [])
    assert f"{other} was not scored by the same rules as {runs[0]}" in err
    assert "the schema differs" in err and "'total_amount'" in err and "eval-score" in err


def test_a_schema_other_than_the_runs_is_refused(project, capsys):
    cases, runs = project
    code, _, err = run_labels(
        ["--cases", str(cases), "--schema", "walkthroughs.invoices:SparseInvoice", *map(str, runs)], capsys
    )
    assert code == exits.BAD_INPUT
    assert "--schema walkthroughs.invoices:SparseInvoice is not the schema" in err and "leave --schema out" in err


def test_runs_of_another_case_set_or_other_labels_are_refused(project, tmp_path, capsys):
    cases, runs = project
    fewer = tmp_path / "fewer.jsonl"
    fewer.write_text("".join(line + "\n" for line in cases.read_text().splitlines()[:2]))
    code, _, err = run_labels(["--cases", str(fewer), *map(str, runs)], capsys)
    assert code == exits.BAD_INPUT
    assert f"{runs[0]} was not scored against {fewer}" in err and "'inv-c'" in err and "eval-score" in err
    relabelled = tmp_path / "relabelled.jsonl"
    edited = _labels()
    edited["inv-a"]["invoice_date"] = "2026-01-16"  # the label fixed since the runs were scored
    relabelled.write_text(
        "".join(json.dumps({"name": n, "input": "", "expected_output": v}) + "\n" for n, v in edited.items())
    )
    code, _, err = run_labels(["--cases", str(relabelled), *map(str, runs)], capsys)
    assert code == exits.BAD_INPUT
    assert "scored against another label: case 'inv-a', field 'invoice_date'" in err and "Re-score" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not a saved run's JSON"),
        ("[1, 2]", "is a JSON list, not a saved run"),
        ('{"overall_score": 1.0}', "holds no run description (field 'run')"),
        ("drop leaf_diffs", "stores no leaf diffs (field 'leaf_diffs')"),
        ("bad row", "field 'leaf_diffs.documents"),
    ],
)
def test_a_bad_run_file_is_refused_naming_the_file_and_the_fix(project, tmp_path, capsys, content, message):
    cases, runs = project
    bad = tmp_path / "bad.json"
    if content in ("drop leaf_diffs", "bad row"):
        data = json.loads(runs[1].read_text())
        if content == "drop leaf_diffs":
            del data["leaf_diffs"]
        else:
            data["leaf_diffs"]["documents"][0]["leaves"] = [["total_amount", "wrong value"]]
        content = json.dumps(data)
    bad.write_text(content)
    code, found, err = run_labels(["--cases", str(cases), str(runs[0]), str(bad)], capsys)
    assert (code, found) == (exits.BAD_INPUT, [])
    assert str(bad) in err and message in err and "(" in err.split(message)[-1], err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cases", "cases.jsonl", "run0.json"], "name two saved runs or more"),
        (["--cases", "cases.jsonl", "run0.json", "run0.json"], "run0.json is named twice"),
        (["--cases", "absent.jsonl", "run0.json", "run1.json"], "absent.jsonl: no such file"),
        (["--cases", "cases.jsonl", "--top", "0", "run0.json", "run1.json"], "--top must be 1 or more"),
    ],
)
def test_bad_arguments_are_refused(project, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(project[0].parent)
    code, found, err = run_labels(argv, capsys)
    assert (code, found) == (exits.BAD_INPUT, [])
    assert message in err


def test_a_bad_case_file_is_refused_naming_its_line(project, tmp_path, capsys):
    cases, runs = project
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "inv-a", "input": ""}\n')
    code, _, err = run_labels(["--cases", str(bad), *map(str, runs)], capsys)
    assert code == exits.BAD_INPUT and f"{bad}: line 1" in err and "expected_output" in err


def _stored(name: str, rows: list[list]) -> StoredDiffs:
    return StoredDiffs.model_validate(
        {"format": 1, "columns": list(LEAF_COLUMNS), "documents": [{"name": name, "leaves": rows}]}
    )


def test_dates_written_differently_agree_by_the_date_comparator_not_by_equality():
    """A str field compared by `DateComparator` (as a schema may configure it): its runs store the text they read."""
    info = RunInfo.model_validate({"schema": "m:Doc", "comparators": {"issued": "DateComparator@0.95"}})
    readings = ["2026-01-16", "January 16, 2026", "16 Jan 2026"]
    runs = [
        SavedRun(
            Path(f"run{index}.json"),
            info,
            _stored(
                "doc", [["issued", "wrong value", "2026-01-15", got, "DateComparator", 0.95, 1.0, 0.0, None, 0.5, None]]
            ),
        )
        for index, got in enumerate(readings)
    ]
    found = audit(runs, {"doc": {"issued": "2026-01-15"}}, Comparators()).suspects
    assert [(s.path, s.label, s.proposed, s.agree, s.of) for s in found] == [
        ("issued", "2026-01-15", readings[0], 3, 3)
    ]
    assert sorted(set(readings)) != [readings[0]]  # they are not equal as text: only the comparator joins them


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.mark.parametrize("how", ["console script", "python -m"])
def test_the_command_end_to_end(project, tmp_path, how):
    cases, runs = project
    script = Path(sys.executable).with_name("eval-labels")
    start = [str(script)] if how == "console script" else [sys.executable, "-m", "fieldeval.commands.labels"]
    if how == "console script":
        assert shutil.which(str(script)), "make setup installs the eval-labels console script"
    done = subprocess.run(
        [*start, "--cases", str(cases), "--schema", SCHEMA, "--top", "1", *map(str, runs)],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == exits.OK, done.stderr
    [line] = done.stdout.splitlines()
    row = json.loads(line)
    assert set(row) == {"case", "path", "label", "proposed", "agree", "of", "cost"} and row["agree"] == 3
    bad = subprocess.run([*start, "--cases", str(cases), str(runs[0])], capture_output=True, text=True, timeout=120)
    assert (bad.returncode, bad.stdout) == (exits.BAD_INPUT, "") and "name two saved runs" in bad.stderr
