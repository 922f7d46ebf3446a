"""`make test`'s two pytest runs side by side: the unit tests, and every notebook under nbval.

The notebook run spends most of its time waiting on its kernels, so on two cores the pair
finishes in about the time of the longer one instead of the sum. Each run spreads its files over
two pytest-xdist workers (`--dist loadfile`: a file's tests, and its module-scoped fixtures such as
a local cluster, a browser or a notebook's kernel, stay on one worker), since most of a test's or
a cell's time is a wait on a child process. The unit tests print as they run; the notebook run's
output is held and printed whole after them, so the two never interleave and each ends with its
own pytest summary line.

    python scripts/run_tests.py [PYTEST OPTION ...]   options go to both runs, e.g. -x or --durations=20

Exit code: 0 when both runs pass, otherwise the unit tests' code if non-zero, else the notebooks'.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.notebooks import ONE_BLAS_THREAD

ROOT = Path(__file__).resolve().parent.parent
PYTEST = str(Path(sys.executable).with_name("pytest"))
WORKERS = ["-n", "2", "--dist", "loadfile"]
# The unit tests never read a notebook through nbval; without its plugin no worker imports it.
UNIT = [PYTEST, *WORKERS, "-p", "no:nbval", "tests"]
# The notebook run keeps no cache: two pytest processes writing one .pytest_cache could clash.
NOTEBOOKS = [PYTEST, *WORKERS, "--nbval", "--nbval-current-env", "-p", "no:cacheprovider", "examples/notebooks"]


def main(options: list[str]) -> int:
    environment = os.environ | ONE_BLAS_THREAD
    with tempfile.TemporaryFile("w+", encoding="utf-8") as held:
        notebooks = subprocess.Popen(
            [*NOTEBOOKS, *options], cwd=ROOT, stdout=held, stderr=subprocess.STDOUT, env=environment
        )
        try:
            print(f"notebooks: `{' '.join(NOTEBOOKS[1:])}` runs beside the unit tests; its output follows them.")
            unit = subprocess.run([*UNIT, *options], cwd=ROOT, check=False, env=environment).returncode
            notebook = notebooks.wait()
        finally:
            if notebooks.poll() is None:  # interrupted: stop the notebook run too, never leave it behind
                notebooks.terminate()
                notebooks.wait(timeout=30)
        held.seek(0)
        print(f"\n{'=' * 30} notebooks (nbval) {'=' * 30}", flush=True)
        sys.stdout.write(held.read())
    if unit or notebook:
        print(f"make test failed: unit tests exit {unit}, notebooks exit {notebook}", file=sys.stderr)
    return unit or notebook


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
