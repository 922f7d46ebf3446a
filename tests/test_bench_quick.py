"""`make bench-quick`: every benchmark under bench/ is found and run with --quick, and any failure fails the run.

The real benchmarks run in `make test` itself (`scripts/run_tests.py`); here the runner is pointed
at a folder of stand-in benchmarks, so that what it does with a failing, a hanging and a
passing one is seen in a second.
"""

from __future__ import annotations

import pytest

from scripts import bench_quick

PASSES = "import sys\nassert sys.argv[1:] == ['--quick'], sys.argv\nprint('figures')\n"
FAILS = "raise SystemExit(4)\n"
HANGS = "import time\ntime.sleep(60)\n"


@pytest.fixture
def root(tmp_path, monkeypatch):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "__init__.py").write_text("")
    (tmp_path / "bench" / "timing.py").write_text("")  # a helper, not a benchmark
    monkeypatch.setattr(bench_quick, "ROOT", tmp_path)
    return tmp_path


def benchmark(root, name: str, source: str) -> None:
    (root / "bench" / f"{name}.py").write_text(source)


def test_every_benchmark_in_the_repository_is_found():
    found = bench_quick.benchmarks()
    on_disk = {f"bench.{path.stem}" for path in (bench_quick.ROOT / "bench").glob("bench_*.py")}
    assert set(found) == on_disk and len(found) == len(on_disk) >= 8
    assert "bench.bench_compare" in found and "bench.timing" not in found


def test_a_benchmark_that_fails_fails_the_run_and_its_output_is_shown(root, capsys):
    benchmark(root, "bench_fine", PASSES)
    benchmark(root, "bench_broken", FAILS)
    assert bench_quick.main([]) == 1
    printed = capsys.readouterr().out
    assert "bench.bench_broken --quick: FAILED (exit 4)" in printed
    assert "bench.bench_fine --quick: ok" in printed and "figures" in printed
    assert printed.rstrip().endswith("failed: bench.bench_broken")


def test_a_benchmark_still_running_at_the_timeout_is_stopped_and_fails_the_run(root, capsys):
    benchmark(root, "bench_stuck", HANGS)
    assert bench_quick.main(["--timeout", "1"]) == 1
    assert "bench.bench_stuck --quick: TIMED OUT" in capsys.readouterr().out


def test_all_passing_is_exit_0(root, capsys):
    benchmark(root, "bench_one", PASSES)
    benchmark(root, "bench_two", PASSES)
    assert bench_quick.main(["--jobs", "1"]) == 0
    assert "2 of 2 benchmarks ran --quick" in capsys.readouterr().out
