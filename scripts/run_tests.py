"""`make test`'s checks side by side: the unit tests, every notebook under nbval, mypy, and every benchmark.

The notebook run spends most of its time waiting on its kernels, and mypy (about 15 s of one core
when its cache is cold, as on CI) waits on nothing the tests do, so on two cores the three finish
in about the time of the unit tests instead of the sum. Every benchmark runs at its smallest size
(`scripts/bench_quick.py`, as `make bench-quick`, one at a time here since the tests hold both
cores), so a benchmark that no longer runs fails the suite. Each pytest run spreads its files over
two pytest-xdist workers (`--dist loadfile`: a file's tests, and its module-scoped fixtures such as
a local cluster, a browser or a notebook's kernel, stay on one worker), since most of a test's or
a cell's time is a wait on a child process. The unit tests print as they run; the output of mypy,
the notebook run and the benchmarks is held and printed whole after them, so nothing interleaves
and each ends with its own summary line. Every process runs on one BLAS thread (`ONE_BLAS_THREAD`).

    python scripts/run_tests.py [PYTEST OPTION ...]   options go to both pytest runs, e.g. -x or --durations=20

Exit code: 0 when all four pass, otherwise the first non-zero code of the unit tests, the
notebooks, mypy and the benchmarks, in that order.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from scripts.notebooks import ONE_BLAS_THREAD

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PYTEST = str(BIN / "pytest")
WORKERS = ["-n", "2", "--dist", "loadfile"]
# The unit tests never read a notebook through nbval; without its plugin no worker imports it. Their
# files start in the order tests/start_order.py collects them (the longest, much of it waiting, first),
# not with the files of the most tests first as pytest-xdist would.
UNIT = [PYTEST, *WORKERS, "--no-loadscope-reorder", "-p", "tests.start_order", "-p", "no:nbval", "tests"]
# The notebook run keeps no cache: two pytest processes writing one .pytest_cache could clash.
NOTEBOOKS = [PYTEST, *WORKERS, "--nbval", "--nbval-current-env", "-p", "no:cacheprovider", "examples/notebooks"]
MYPY = [str(BIN / "mypy")]  # its files and options are pyproject.toml's, as `make lint` runs it
BENCHMARKS = [sys.executable, "scripts/bench_quick.py", "--jobs", "1"]


def main(options: list[str]) -> int:
    environment = os.environ | ONE_BLAS_THREAD
    held: dict[str, tuple[subprocess.Popen, IO[str]]] = {}
    with ExitStack() as stack:
        held_commands = (
            ("notebooks (nbval)", [*NOTEBOOKS, *options]),
            ("mypy", MYPY),
            ("benchmarks (--quick)", BENCHMARKS),
        )
        for name, command in held_commands:
            output = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))
            process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, env=environment)
            stack.callback(stop, process)
            held[name] = process, output
        print(
            f"`{' '.join(NOTEBOOKS[1:])}`, mypy and `make bench-quick` run beside the unit tests; "
            "their output follows them."
        )
        codes = {"unit tests": subprocess.run([*UNIT, *options], cwd=ROOT, check=False, env=environment).returncode}
        for name, (process, output) in held.items():
            codes[name] = process.wait()
            output.seek(0)
            print(f"\n{'=' * 30} {name} {'=' * 30}", flush=True)
            sys.stdout.write(output.read())
    failed = {name: code for name, code in codes.items() if code}
    if failed:
        print("make test failed: " + ", ".join(f"{name} exit {code}" for name, code in failed.items()), file=sys.stderr)
    return next(iter(failed.values()), 0)


def stop(process: subprocess.Popen) -> None:
    """Interrupted (or done): never leave a run behind."""
    if process.poll() is None:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
