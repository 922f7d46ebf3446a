"""tests/start_order.py, the plugin that sets the order `make test` starts the unit-test files in."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import start_order

ROOT = Path(__file__).resolve().parents[1]


def test_the_listed_files_come_first_in_their_order_and_the_rest_keep_theirs():
    first, second = start_order.START_FIRST[:2]
    names = ["tests/a.py::one", f"{second}::x", "tests/b.py::two", f"{first}::y", "tests/a.py::three"]
    items = [SimpleNamespace(nodeid=name) for name in names]
    start_order.pytest_collection_modifyitems(SimpleNamespace(rootpath=ROOT), items)
    assert [item.nodeid for item in items] == [
        f"{first}::y",
        f"{second}::x",
        "tests/a.py::one",
        "tests/b.py::two",
        "tests/a.py::three",
    ]


def test_a_listed_name_that_is_no_file_stops_the_run(monkeypatch):
    monkeypatch.setattr(start_order, "START_FIRST", ("tests/scale/test_parallel.py", "tests/renamed.py"))
    with pytest.raises(pytest.UsageError, match="START_FIRST names no such file: tests/renamed.py"):
        start_order.pytest_collection_modifyitems(SimpleNamespace(rootpath=ROOT), [])
