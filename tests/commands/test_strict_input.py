"""Hostile input to `score`: one strict JSON reader, one rule for case names, a sandboxed import.

Each test runs the command as a user does (`score.main`) from a user's project folder and
checks the exit code, the message (file, line, field, fix) and that nothing was written.
"""

import json
import sys

import pytest

from fieldeval.formats.names import name_problem
from tests.commands.test_score_command import (
    TASK_MODULE,
    TRUTH,
    answers_from,
    from_predictions,
    project,
    replay_args,
    run_record,
    run_score,
)
from walkthroughs.fcc.datasets_server import SnapshotError, read_snapshot

__all__ = ["project"]  # the fixture, imported for the tests below


def edit_line(path, number: int, old: str, new: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    assert old in lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new, 1)
    path.write_text("\n".join(lines), encoding="utf-8")


def refused(project, printed: str, code: int) -> None:
    assert code == 2, printed
    assert printed.rstrip().endswith("Nothing was written.") and "Traceback" not in printed
    assert not (project / "run.json").exists()


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("cases.jsonl", '"total": 20.0', '"total": NaN', "line 2, field 'expected_output.total': NaN is not a number"),
        ("predictions.jsonl", '"total": 10.0', '"total": -Infinity', "line 1, field 'output.total': -Infinity is not"),
        ("predictions.jsonl", '"total": 10.0', '"total": 1e999', "line 1, field 'output.total': 1e999 is too large"),
        (
            "predictions.jsonl",
            '"supplier": "Acme"',
            '"supplier": "Acme", "supplier": "Acne"',
            "line 1, field 'output.supplier': the key 'supplier' appears twice in one object",
        ),
        (
            "cases.jsonl",
            '"quantity": 3',
            '"quantity": ' + "7" * 5000,
            "line 3, field 'expected_output.lines[0].quantity': an integer of 5000 digits, more than the 4300",
        ),
    ],
    ids=["nan", "infinity", "overflow", "duplicate-key", "huge-integer"],
)
def test_json_that_is_not_plain_json_is_refused_naming_file_line_and_field(project, file, old, new, message):
    line = {"cases.jsonl": 2 if "NaN" in new else 3, "predictions.jsonl": 1}[file]
    edit_line(project / file, line, old, new)
    code, printed = run_score(*from_predictions("run.json"))
    refused(project, printed, code)
    assert f"{file}: {message}" in printed, printed


def test_a_line_separator_inside_a_string_is_text_not_a_line_break(project):
    edit_line(project / "cases.jsonl", 1, "PURCHASE ORDER", "PURCHASE\u2028ORDER")
    code, printed = run_score(*from_predictions("run.json"))
    assert code == 0, printed


def test_a_byte_order_mark_is_named(project):
    path = project / "cases.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    code, printed = run_score(*from_predictions("run.json"))
    refused(project, printed, code)
    assert (
        "cases.jsonl: line 1: the text starts with a byte-order mark (BOM); save the file as UTF-8 without" in printed
    )


@pytest.mark.parametrize("name", ["po\t1", "po\u200b1", "po\u202e1", "p" * 1001])
def test_a_case_name_compare_would_refuse_is_refused_by_score(project, name):
    for file in ("cases.jsonl", "predictions.jsonl"):
        edit_line(project / file, 1, '"po-1"', json.dumps(name))
    code, printed = run_score(*from_predictions("run.json"))
    refused(project, printed, code)
    assert f"cases.jsonl: line 1, field 'name': {name_problem(name)}" in printed, printed  # compare's own words


def cassette_field(project, name: str, change) -> None:
    path = project / "cassettes" / f"{name}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    text = change(json.dumps(data, indent=1))
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda text: text.replace('"inputTokens": 50', '"inputTokens": NaN', 1), "NaN is not a number JSON allows"),
        (lambda text: text.replace('"outputTokens": 20', '"outputTokens": ' + "9" * 4400, 1), "an integer of 4400"),
    ],
    ids=["nan", "huge-integer"],
)
def test_a_cassette_holding_json_that_is_not_plain_json_is_refused(project, change, message):
    assert run_record(answers_from(TRUTH))[0] == 0
    cassette_field(project, "po-1", change)
    code, printed = run_score(*replay_args("run.json"))
    refused(project, printed, code)
    assert "cassettes/po-1.json" in printed and message in printed, printed


def test_a_snapshot_holding_nan_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text('{"provenance": {},\n "request": {"offset": NaN}, "pages": []}', encoding="utf-8")
    with pytest.raises(
        SnapshotError, match=r"snapshot.json: line 2, field 'request.offset': NaN is not a number JSON allows"
    ):
        read_snapshot(path)


@pytest.mark.parametrize(
    ("module", "shown"),
    [
        ("import sys\nsys.exit(0)\n", "SystemExit: 0"),
        ("raise SystemExit('bye')\n", "SystemExit: bye"),
        ("raise KeyError('config')\n", "KeyError: 'config'"),
    ],
)
def test_a_schema_module_that_exits_or_raises_on_import_is_exit_2_naming_it(project, module, shown):
    (project / "po_schema.py").write_text(module, encoding="utf-8")
    code, printed = run_score(*from_predictions("run.json"))
    refused(project, printed, code)
    assert f"--schema 'po_schema:PurchaseOrder': the module 'po_schema' failed to import ({shown})" in printed


def test_a_task_module_that_exits_on_import_is_exit_2_naming_it(project):
    (project / "cassettes").mkdir()
    (project / "po_task.py").write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    code, printed = run_score(*replay_args("run.json"))
    refused(project, printed, code)
    assert "--task 'po_task:task': the module 'po_task' failed to import (SystemExit: 3)" in printed


def test_a_base_class_as_the_schema_is_exit_2_with_the_fix(project):
    code, printed = run_score(*from_predictions("run.json", schema="pydantic:BaseModel"))
    refused(project, printed, code)
    assert "--schema 'pydantic:BaseModel' is a base class with no fields of its own" in printed
    assert "name your own model class that subclasses it" in printed


def test_a_task_that_returns_no_structured_output_for_any_case_is_exit_2(project):
    assert run_record(answers_from(TRUTH))[0] == 0
    (project / "po_task.py").write_text(
        TASK_MODULE + "\n\n_real = task\n\n\ndef task(case, model):\n    _real(case, model)\n    return None\n",
        encoding="utf-8",
    )
    del sys.modules["po_task"]  # recording imported the first version
    code, printed = run_score(*replay_args("run.json"))
    refused(project, printed, code)
    said_once = "3 cases ('po-1', 'po-2', 'po-3'): the task returned a NoneType"  # one bug, said once
    assert said_once in printed and "return result.structured_output" in printed


def test_the_readme_and_its_reference_state_the_limits_the_code_applies():
    from fieldeval.files import REPO_ROOT
    from fieldeval.formats.names import MAX_NAME_CHARS
    from fieldeval.mode import CREDENTIALS_TIMEOUT

    pages = [REPO_ROOT / "README.md", REPO_ROOT / "examples" / "your_own_agent" / "REFERENCE.md"]
    readme = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    assert f"integer of more than {sys.get_int_max_str_digits():,} digits" in readme
    assert f"at most {MAX_NAME_CHARS:,} characters" in readme
    assert f"is given {CREDENTIALS_TIMEOUT:g} seconds in `auto`" in readme


def test_compare_refuses_a_results_row_with_a_repeated_key_naming_line_and_field(tmp_path, capsys):
    from fieldeval.commands.compare import main as compare_main
    from fieldeval.formats.results import ResultRow, ResultsHeader, ResultsWriter

    path = tmp_path / "run.jsonl"
    with ResultsWriter(path, ResultsHeader(schema="po_schema:PurchaseOrder")) as writer:
        for name in ("po-1", "po-2"):
            writer.write(ResultRow(name=name, score=0.5, test_pass=True))
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[2] = lines[2].replace('"score":0.5', '"score":0.5,"score":1.0')
    path.write_text("\n".join(lines), encoding="utf-8")
    assert compare_main([str(path), str(path)]) == 2
    err = capsys.readouterr().err
    assert "run.jsonl: line 3, field 'score': the key 'score' appears twice in one object" in err, err
