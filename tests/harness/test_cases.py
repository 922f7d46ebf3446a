"""Case and prediction files, and schema import: every refusal names the file, the line, the field and the fix."""

import json
import sys

import pytest
from pydantic import BaseModel

from fieldeval.harness.cases import MAX_DEPTH, CaseFileError, load_cases, load_predictions, read_cases
from fieldeval.harness.schema import SchemaError, load_schema, load_task


class Line(BaseModel):
    sku: str
    quantity: int


class Order(BaseModel):
    order_id: str
    lines: list[Line]


GOOD = {"order_id": "O-1", "lines": [{"sku": "A", "quantity": 2}]}


def write(tmp_path, *lines, name="cases.jsonl"):
    path = tmp_path / name
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), "utf-8")
    return path


def case(name="c1", **changes):
    return {"name": name, "input": "doc", "expected_output": GOOD, **changes}


def refusal(call, *args):
    with pytest.raises(CaseFileError) as caught:
        call(*args)
    return str(caught.value)


def test_a_good_file_becomes_cases_with_schema_instances(tmp_path):
    path = write(tmp_path, case("c1", metadata={"source": "scan"}), "", case("c2"))
    cases = load_cases(path, Order)
    assert [c.name for c in cases] == ["c1", "c2"]
    assert cases[0].expected_output == Order.model_validate(GOOD) and cases[0].metadata == {"source": "scan"}
    assert [record.name for record, _ in read_cases(path, Order)] == ["c1", "c2"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"name": "c2", "input": ', "line 2: not valid JSON (column"),
        ("[1, 2]", "line 2: is a JSON list, not an object"),
        (json.dumps({"name": "c2", "expected_output": GOOD}), "line 2, field 'input': is missing (every line holds"),
        (json.dumps(case("c2", inptu="x")), "line 2, field 'inptu': is not a field of this format"),
        (json.dumps(case("c1")), "line 2, field 'name': duplicate name 'c1' (first on line 1) (give every line"),
        (
            json.dumps(case("c2", expected_output={"order_id": "O", "lines": [{"sku": "A", "quantity": "two"}]})),
            "line 2, field 'expected_output.lines[0].quantity': does not validate against Order",
        ),
        (json.dumps(case("")), "line 2, field 'name': string should have at least 1 character"),
    ],
)
def test_each_bad_line_is_refused_with_file_line_field_and_fix(tmp_path, line, expected):
    path = write(tmp_path, case("c1"), line)
    message = refusal(load_cases, path, Order)
    assert message.startswith(f"{path}: ") and expected in message
    assert message.endswith(")"), "every refusal ends with its fix in parentheses"


def test_non_utf8_and_deep_nesting_and_missing_files_are_refused_by_name(tmp_path):
    path = tmp_path / "latin1.jsonl"
    first = json.dumps(case("c1")).encode() + b"\n"
    path.write_bytes(first + b'{"name": "caf\xe9"}\n')
    byte = len(first) + len(b'{"name": "caf')
    assert refusal(load_cases, path, Order) == f"{path}: line 2: not UTF-8 text (byte {byte}) (save the file as UTF-8)"
    deep = write(tmp_path, '{"name": "d", "input": "x", "expected_output": ' + "[" * 5000 + "]" * 5000 + "}")
    assert f"line 1: nested 5001 levels deep, more than {MAX_DEPTH} (flatten the data)" in refusal(
        load_cases, deep, Order
    )
    assert "no case file here (check the path)" in refusal(load_cases, tmp_path / "none.jsonl", Order)
    assert "holds no cases" in refusal(load_cases, write(tmp_path, "", name="empty.jsonl"), Order)


def test_predictions_must_cover_the_cases_exactly_and_validate(tmp_path):
    cases = load_cases(write(tmp_path, case("c1"), case("c2")), Order)
    good = write(tmp_path, {"name": "c1", "output": GOOD}, {"name": "c2", "output": GOOD}, name="p.jsonl")
    assert load_predictions(good, Order, cases) == {"c1": Order.model_validate(GOOD), "c2": Order.model_validate(GOOD)}
    stray = write(tmp_path, {"name": "c1", "output": GOOD}, {"name": "c9", "output": GOOD}, name="p2.jsonl")
    assert "line 2, field 'name': no case is named 'c9'" in refusal(load_predictions, stray, Order, cases)
    short = write(tmp_path, {"name": "c1", "output": GOOD}, name="p3.jsonl")
    assert (
        refusal(load_predictions, short, Order, cases)
        == f"{short}: no prediction for case 'c2' (add one line per case)"
    )
    bad = write(tmp_path, {"name": "c1", "output": {"order_id": 5, "lines": []}}, name="p4.jsonl")
    assert "line 1, field 'output.order_id': does not validate against Order" in refusal(
        load_predictions, bad, Order, cases
    )


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    (tmp_path / "user_schema.py").write_text(
        "from pydantic import BaseModel\nclass Doc(BaseModel):\n    title: str\nNOT_A_MODEL = 3\n"
        "def task(case, model):\n    return {'title': case.input}\n",
        encoding="utf-8",
    )
    (tmp_path / "broken_schema.py").write_text("class Oops(:\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in ("user_schema", "broken_schema"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


def test_a_schema_imports_from_the_working_directory_without_touching_sys_path(user_folder):
    before = list(sys.path)
    assert load_schema("user_schema:Doc").model_fields.keys() == {"title"}
    assert callable(load_task("user_schema:task"))
    assert sys.path == before
    assert load_schema("walkthroughs.invoices:Invoice").__name__ == "Invoice"  # an installed package


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("user_schema", "write it as module:Name"),
        ("no_such_module:Doc", "no module named 'no_such_module'"),
        ("user_schema:Missing", "defines no 'Missing'; check the name after the colon"),
        ("user_schema:NOT_A_MODEL", "is a int, not a pydantic model class"),
        ("broken_schema:Oops", "failed to import (SyntaxError"),
    ],
)
def test_a_schema_that_does_not_import_is_refused_with_the_fix(user_folder, spec, expected):
    with pytest.raises(SchemaError) as caught:
        load_schema(spec)
    assert str(caught.value).startswith(f"--schema {spec!r}") and expected in str(caught.value)


def test_a_task_that_is_not_a_function_is_refused(user_folder):
    with pytest.raises(SchemaError, match=r"--task 'user_schema:Doc' is a .*not a function; name a function task"):
        load_task("user_schema:Doc")
