"""The order `make test` starts the unit-test files in: a pytest plugin (`-p tests.start_order`).

The files of `START_FIRST` are collected first, longest first; every other file, and the tests
within each file, keep pytest's order. Each of these takes 2.5-9.5 s, much of it waiting on the
processes, servers and deadlines it tests (a Dask cluster, killed workers, kernels, a server that
stops answering), and `make test` runs the notebooks' kernels beside the unit tests, which use the
cores while these wait. pytest-xdist would otherwise start the files with the most tests first
(scripts/run_tests.py passes `--no-loadscope-reorder` to keep this order): these came last, and
`make test` ended with one core idle (63.5 s against 56.4 s, medians of three interleaved runs).
Seconds per file: `pytest -n 2 --dist loadfile -p no:nbval tests --durations=0`, summed by file.
"""

from __future__ import annotations

import pytest

START_FIRST = (
    "tests/scale/test_scale_with_dask.py",
    "tests/notebooks/test_notebook_runner.py",
    "tests/scale/test_scale_hardening.py",
    "tests/scale/test_parallel.py",
    "tests/compare/test_compare_identity.py",
    "tests/commands/test_record_live.py",
    "tests/walkthroughs/test_record_fcc_live.py",
    "tests/commands/test_exits.py",
    "tests/test_slim_install.py",
    "tests/commands/test_score_command.py",
    "tests/report/test_report.py",
    "tests/walkthroughs/test_datasets_server.py",
    "tests/notebooks/test_lab.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Collect the files of `START_FIRST` first, in that order; refuse a name that is no file."""
    missing = [name for name in START_FIRST if not (config.rootpath / name).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/start_order.py START_FIRST names no such file: {', '.join(missing)}")

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return START_FIRST.index(path) if path in START_FIRST else len(START_FIRST)

    items.sort(key=rank)  # stable: tests within a file, and the other files, keep their order
