"""`make bench-quick`: every benchmark under bench/ at its smallest size, failing on any error.

Each `bench/bench_*.py` is found by its file name (a new benchmark cannot be left out) and run as
`python -m bench.NAME --quick` in a fresh process from the repository root, `--jobs` at a time.
`--quick` is every benchmark's smoke run (`bench.timing.add_quick`): its smallest size and one
round, so its own checks (identical scores, right verdicts, every case recorded) run, and its
figures mean nothing. Each benchmark's output is held and printed whole when it ends, with its
wall time; one still running after `--timeout` seconds is stopped and counts as failed. `make
test` runs this beside the unit tests (`scripts/run_tests.py`).

    python scripts/bench_quick.py [--jobs 2] [--timeout 300]

Exit code: 0 when every benchmark exits 0, otherwise 1.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 300  # seconds a benchmark's quick run may take, on a loaded machine, before it counts as failed
# The longest quick runs (Dask clusters and spawned workers; every fixture scored twice) start first,
# so that the others fill the second lane beside them instead of waiting behind them at the end.
FIRST = ("bench.bench_scale", "bench.bench_stickler_identity")


def benchmarks() -> list[str]:
    """The module of every benchmark under bench/, the longest first, then by name."""
    found = sorted(f"bench.{path.stem}" for path in (ROOT / "bench").glob("bench_*.py"))
    return sorted(found, key=lambda module: (module not in FIRST, module))


def run(module: str, timeout: float) -> tuple[str, int, float, str]:
    """One benchmark's quick run: its module, exit code (-1 when stopped at the timeout), wall seconds, output."""
    command = [sys.executable, "-m", module, "--quick"]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as expired:
        printed = _text(expired.stdout) + _text(expired.stderr)
        return module, -1, time.perf_counter() - started, printed + f"\nstopped: still running after {timeout:g} s\n"
    return module, done.returncode, time.perf_counter() - started, done.stdout + done.stderr


def _text(value: bytes | str | None) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value or ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="benchmarks run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help=f"seconds each may take (default {TIMEOUT})")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs must be at least 1 and --timeout above 0")
    started = time.perf_counter()
    failed = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for module, code, seconds, printed in pool.map(lambda module: run(module, args.timeout), benchmarks()):
            verdict = "ok" if code == 0 else ("TIMED OUT" if code == -1 else f"FAILED (exit {code})")
            print(f"\n{'=' * 20} {module} --quick: {verdict}, {seconds:.1f} s {'=' * 20}", flush=True)
            sys.stdout.write(printed)
            if code != 0:
                failed.append(module)
    total = time.perf_counter() - started
    summary = f"{len(benchmarks()) - len(failed)} of {len(benchmarks())} benchmarks ran --quick in {total:.1f} s"
    print(f"\n{summary}" + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
