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
import os
import signal
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
RUNNING: set[int] = set()  # the process group of each benchmark running now, to stop on Ctrl-C


def benchmarks() -> list[str]:
    """The module of every benchmark under bench/, the longest first, then by name."""
    found = sorted(f"bench.{path.stem}" for path in (ROOT / "bench").glob("bench_*.py"))
    return sorted(found, key=lambda module: (module not in FIRST, module))


def run(module: str, timeout: float) -> tuple[str, int, float, str]:
    """One benchmark's quick run: its module, exit code (-1 when stopped at the timeout), wall seconds, output.

    It runs in a session of its own, so that a stopped benchmark takes the processes it started
    (workers, a local cluster, a server) with it; Ctrl-C, which the terminal then sends to this
    process only, stops every one still running (`stop_all`).
    """
    command = [sys.executable, "-m", module, "--quick"]
    started = time.perf_counter()
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    ) as process:
        RUNNING.add(process.pid)
        try:
            printed, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(process.pid)
            printed, _ = process.communicate()
            printed += f"\nstopped: still running after {timeout:g} s\n"
            return module, -1, time.perf_counter() - started, printed
        finally:
            RUNNING.discard(process.pid)
    return module, process.returncode, time.perf_counter() - started, printed


def stop(group: int) -> None:
    """End a benchmark's process group, whatever is left of it."""
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_all(*_: object) -> None:
    """Ctrl-C, or `make test` ending this run: stop every benchmark still running, then exit 130."""
    for group in list(RUNNING):
        stop(group)
    raise SystemExit(130)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="benchmarks run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help=f"seconds each may take (default {TIMEOUT})")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs must be at least 1 and --timeout above 0")
    started = time.perf_counter()
    failed = []
    before = {number: signal.signal(number, stop_all) for number in (signal.SIGINT, signal.SIGTERM)}
    pool = ThreadPoolExecutor(args.jobs)
    try:
        for module, code, seconds, printed in pool.map(lambda module: run(module, args.timeout), benchmarks()):
            verdict = "ok" if code == 0 else ("TIMED OUT" if code == -1 else f"FAILED (exit {code})")
            print(f"\n{'=' * 20} {module} --quick: {verdict}, {seconds:.1f} s {'=' * 20}", flush=True)
            sys.stdout.write(printed)
            if code != 0:
                failed.append(module)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # after Ctrl-C, start nothing more
        for number, handler in before.items():
            signal.signal(number, handler)
    total = time.perf_counter() - started
    summary = f"{len(benchmarks()) - len(failed)} of {len(benchmarks())} benchmarks ran --quick in {total:.1f} s"
    print(f"\n{summary}" + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
