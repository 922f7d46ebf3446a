"""What every benchmark here reports: the median of interleaved rounds, with the range beside it.

Every benchmark also takes `--quick` (`add_quick`): its smallest size and one round, which
`make bench-quick` runs in CI to prove each benchmark still runs end to end and its own checks
(identical scores, right verdicts, every case recorded) still pass. A quick run's figures
measure nothing; only the documented sizes' do.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

MIN_ROUNDS = 3
QUICK_ROUNDS = 1  # a smoke run: one round proves the code runs; a median needs MIN_ROUNDS
QUICK_NOTE = (
    "--quick: the smallest size (one round of any timing), only to check that the benchmark runs; "
    "no figure below means anything"
)
T = TypeVar("T")


def interleaved(
    rounds: int,
    runs: dict[str, Callable[[], Any]],
    minimum: int = MIN_ROUNDS,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Seconds of each run by `clock`, taking turns round after round, so drifting load falls on every run alike.

    The garbage collector runs before each run, so one run's garbage is not collected in another's time.
    """

    def timed(run: Callable[[], Any]) -> Callable[[], float]:
        def once() -> float:
            gc.collect()
            started = clock()
            run()
            return clock() - started

        return once

    return interleaved_results(rounds, {name: timed(run) for name, run in runs.items()}, minimum)


def interleaved_results(rounds: int, runs: dict[str, Callable[[], T]], minimum: int = MIN_ROUNDS) -> dict[str, list[T]]:
    """What each run returns, taking turns round after round: for runs that measure themselves (in a fresh process)."""
    if rounds < minimum:
        raise SystemExit(f"--rounds {rounds}: give at least {MIN_ROUNDS}, so a median means something")
    found: dict[str, list[T]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            found[name].append(run())
    return found


def add_quick(parser: argparse.ArgumentParser) -> None:
    """The `--quick` flag, worded the same in every benchmark."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="CI's smoke run (make bench-quick): the smallest size and one round; it checks that the "
        "benchmark runs and its own checks pass, and its figures measure nothing",
    )


def least_rounds(quick: bool) -> int:
    """The fewest rounds a run may take: one for `--quick`, else enough for a median."""
    return QUICK_ROUNDS if quick else MIN_ROUNDS


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def spread(values: Iterable[float], digits: int = 2) -> str:
    """`median (min-max)`."""
    values = list(values)
    return f"{median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def ratio_spread(values: Iterable[float], floors: Iterable[float]) -> str:
    """The ratio of medians, with the range of the per-round ratios."""
    values, floors = list(values), list(floors)
    per_round = [value / floor for value, floor in zip(values, floors, strict=True)]
    return f"{median(values) / median(floors):.2f}x ({min(per_round):.2f}-{max(per_round):.2f})"
