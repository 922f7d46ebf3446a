"""What every benchmark here reports: the median of interleaved rounds, with the range beside it."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

MIN_ROUNDS = 3
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
