"""Reading a file reads that file: no reader lists its folder or touches what else lies there.

Readers once scanned the folder for an interrupted multi-file switch before every read; the
switch and its recovery are gone, so a six-line case file costs one `open()`. A leftover journal
of an older version (`.<token>.switch.json`), or any other hidden file, is left alone.
"""

import os
import warnings

import pytest
from pydantic import BaseModel

from fieldeval.formats import json as strict_json
from fieldeval.formats.results import ResultRow, ResultsHeader, ResultsWriter, iter_results
from fieldeval.harness.cases import load_cases

LEFTOVERS = {
    ".1-0123abcd.switch.json": '{"primary": ".1-0123abcd.switch.json", "files": [{"name": "cases.jsonl"}]}',
    ".x.switch.json": "{not json",
    ".cases.jsonl.1-0123abcd.bak": "an older version's backup",
}


class Item(BaseModel):
    sku: str


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A folder with a case file, a results file and leftovers; listing it from here on fails the test."""
    (tmp_path / "cases.jsonl").write_text(
        '{"name": "a", "input": "x", "expected_output": {"sku": "A-1"}}\n'
        '{"name": "b", "input": "y", "expected_output": {"sku": "B-2"}}\n',
        encoding="utf-8",
    )
    (tmp_path / "doc.json").write_text('{"answer": 42}', encoding="utf-8")
    with ResultsWriter(tmp_path / "run.jsonl", ResultsHeader(schema="module:Item")) as writer:
        writer.write(ResultRow(name="a", score=1.0, test_pass=True, reason="", status="scored", counts={}))
    for name, text in LEFTOVERS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")

    def no_listing(*args, **kwargs):
        raise AssertionError(f"a reader listed a folder: {args}")

    monkeypatch.setattr(os, "listdir", no_listing)
    monkeypatch.setattr(os, "scandir", no_listing)
    return tmp_path


def test_reading_a_case_file_a_document_and_results_lists_no_folder_and_leaves_leftovers(folder):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to report about the leftovers either
        cases = load_cases(folder / "cases.jsonl", Item)
        document = strict_json.read_document(folder / "doc.json", ("no file", "check the path"), "fix it")
        rows = list(iter_results(folder / "run.jsonl"))
    assert [case.expected_output.sku for case in cases] == ["A-1", "B-2"]
    assert document == {"answer": 42} and [row.name for row in rows] == ["a"]
    for name, text in LEFTOVERS.items():
        assert (folder / name).read_text(encoding="utf-8") == text
