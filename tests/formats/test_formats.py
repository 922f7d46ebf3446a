"""The formats layer: one base for every format error, one wording, one reader of JSON files."""

import pytest
from pydantic import BaseModel, ConfigDict, NonNegativeInt, ValidationError, model_validator

from fieldeval.errors import EvalError
from fieldeval.exchanges.fixtures import FixtureError
from fieldeval.formats import COUNTS, RESULTS_FORMAT
from fieldeval.formats import json as strict_json
from fieldeval.formats.cases import CaseFileError
from fieldeval.formats.errors import FormatError, file_error, refused, validation_problem
from fieldeval.formats.json import MAX_DEPTH
from fieldeval.formats.results import FORMAT, Counts, ResultsError
from walkthroughs.fcc.datasets_server import SnapshotError


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid")

    total: float
    items: list[int] = []


def test_every_format_error_is_a_format_error_an_eval_error_and_a_value_error():
    for error in (CaseFileError, ResultsError, FixtureError, SnapshotError):
        assert issubclass(error, FormatError) and issubclass(error, EvalError) and issubclass(error, ValueError)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({}, "f.jsonl: is wrong (fix it)"),
        ({"line": 3}, "f.jsonl: line 3: is wrong (fix it)"),
        ({"field": "a.b"}, "f.jsonl: field 'a.b': is wrong (fix it)"),
        ({"line": 3, "field": "a"}, "f.jsonl: line 3, field 'a': is wrong (fix it)"),
        ({"line": 3, "record": "(case 'x')", "field": "a"}, "f.jsonl: line 3 (case 'x'), field 'a': is wrong (fix it)"),
        ({"record": "case 'x'", "field": "a"}, "f.jsonl: case 'x', field 'a': is wrong (fix it)"),
    ],
)
def test_one_wording_names_file_line_record_field_and_fix(where, expected):
    assert file_error("f.jsonl", "is wrong", "fix it", **where) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"items": []}, ("total", "is missing")),
        ({"total": 1, "totl": 1}, ("totl", "is not a field of this format")),  # named before anything missing
        (
            {"total": 1, "items": [1, "x"]},
            ("items[1]", "input should be a valid integer, unable to parse string as an integer"),
        ),
    ],
)
def test_a_validation_error_becomes_a_field_path_and_a_problem(data, expected):
    with pytest.raises(ValidationError) as caught:
        Line.model_validate(data)
    assert validation_problem(caught.value) == expected


def test_a_prefix_puts_the_field_under_the_line_s_own_field():
    with pytest.raises(ValidationError) as caught:
        Line.model_validate({"total": "many"})
    assert validation_problem(caught.value, ("output",))[0] == "output.total"


class Row(BaseModel):
    model_config = ConfigDict(strict=True)

    row_idx: NonNegativeInt
    first: int = 0
    last: int = 0

    @model_validator(mode="after")
    def _ordered(self) -> "Row":
        if self.last < self.first:
            raise refused(("last",), f"is {self.last}, before first ({self.first})", self.last)
        return self


class Page(BaseModel):
    rows: list[Row]


@pytest.mark.parametrize(
    ("data", "musts", "expected"),
    [
        ({"rows": [{"row_idx": "0"}]}, {"row_idx": "must be a row's index"}, 'is "0"; it must be a row\'s index'),
        ({"rows": [{}]}, {"row_idx": "must be a row's index"}, "is missing; it must be a row's index"),
        ({"rows": [{"row_idx": -1}]}, {"rows[].row_idx": "must be >= 0", "row_idx": "no"}, "is -1; it must be >= 0"),
        ({"rows": [{"row_idx": -1}]}, {"rows.row_idx": "no"}, "input should be greater than or equal to 0"),
    ],
)
def test_a_format_s_table_says_what_a_field_must_be_and_shows_the_value(data, musts, expected):
    with pytest.raises(ValidationError) as caught:
        Page.model_validate(data)
    assert validation_problem(caught.value, musts=musts) == ("rows[0].row_idx", expected)


def test_a_check_of_two_fields_is_reported_at_the_field_it_refuses_in_its_own_words():
    with pytest.raises(ValidationError) as caught:
        Page.model_validate({"rows": [{"row_idx": 0, "first": 5, "last": 2}]})
    musts = {"last": "must not be used for a check's own words"}
    assert validation_problem(caught.value, musts=musts) == ("rows[0].last", "is 2, before first (5)")


def test_a_whole_file_is_read_with_its_line_and_field_named(tmp_path):
    path = tmp_path / "doc.json"
    path.write_text('{\n "a": 1,\n "b": NaN}', encoding="utf-8")
    text = strict_json.read_text(path, ("no file", "write one"))
    with pytest.raises(
        FormatError, match=r"doc\.json: line 3, field 'b': NaN is not a number JSON allows.*\(re-make it\)"
    ):
        strict_json.parse(text, path, "re-make it")
    with pytest.raises(FormatError, match=r"gone\.json: no file \(write one\)"):
        strict_json.read_text(tmp_path / "gone.json", ("no file", "write one"))


def test_the_one_counts_order_is_the_results_file_s():
    assert tuple(Counts.model_fields) == COUNTS and FORMAT == RESULTS_FORMAT


@pytest.mark.parametrize(
    ("text", "refused_at"),
    [
        ("[" * MAX_DEPTH + "]" * MAX_DEPTH, None),  # as deep as allowed
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), MAX_DEPTH + 1),
        ('{"a": "' + "[{" * MAX_DEPTH + '"}', None),  # brackets in a string do not nest
        ('["\\"' + "[" * MAX_DEPTH + '"]', None),  # nor after an escaped quote
        ("[" * 3 + ", ".join(["[1]"] * MAX_DEPTH) + "]" * 3, None),  # many brackets, shallow
    ],
)
def test_a_line_is_refused_by_how_deep_it_nests_not_by_how_many_brackets_it_has(text, refused_at):
    if refused_at is None:
        strict_json.parse(text, "cases.jsonl", "fix it", line=1)
        return
    with pytest.raises(FormatError, match=f"line 1: nested {refused_at} levels deep, more than {MAX_DEPTH}"):
        strict_json.parse(text, "cases.jsonl", "fix it", line=1)
