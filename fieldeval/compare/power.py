"""How many documents do I need? The change a gate would catch, estimated from a baseline run.

    python -m fieldeval.commands.power BASELINE --target invoice_date.f1 [--change -0.02]

A gate `high(delta(FIELD.METRIC)) >= 0` fails only when a regression is beyond noise, so whether
it can see one depends on how many documents the runs hold and how the field's counts vary from
document to document. Both are read off the baseline itself, by simulation rather than a normal
approximation (few errors on few documents are far from normal):

1. draw a run of `documents` documents from the baseline's own (with replacement);
2. plant a regression: each correct value of the field (a `tp`) breaks with chance `rate`, as a
   wrong value (`fd`, for precision and F1) or a missing one (`fn`, for recall);
3. compare the two with the same paired bootstrap and interval `compare` uses, and note whether
   the gate failed.

Power is the share of simulations in which it failed. The smallest change caught with 80% power
at the run's size is found by searching the rate; the documents needed for a named change, by
doubling the run and then halving the gap. Every search uses the same seeded draws, so it is
reproducible and steady.

The model is a best case: the simulated candidate differs from the baseline only by the planted
regression, where a real candidate also differs by chance on other documents; and it is one gate,
read from its own interval (a joint band over one field), where a joint band over K gated fields
is wider. Treat the figures as the least a run needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fieldeval.compare.bootstrap import percentile_bounds, ratio, resampled_change
from fieldeval.compare.gates import regression_caught
from fieldeval.compare.params import CONFIDENCE, POWER, RATIOS, CompareError  # noqa: E402
from fieldeval.compare.params import POWER_RESAMPLES as RESAMPLES
from fieldeval.compare.params import POWER_SIMULATIONS as SIMULATIONS
from fieldeval.formats import COUNTS

MAX_DOCUMENTS = 20_000  # the search for a run size stops here; beyond it the answer is "more than this"
TP, FP, FN, FD = (COUNTS.index(key) for key in ("tp", "fp", "fn", "fd"))


@dataclass(frozen=True)
class Power:
    """One simulated setting: the run size, the planted rate, the mean change it makes, and the share caught."""

    documents: int
    rate: float
    change: float
    power: float


@dataclass(frozen=True)
class Baseline:
    """One field path's per-document counts of a baseline run: what the simulations draw documents from."""

    source: str
    target: str
    counts: np.ndarray  # (documents, len(COUNTS))

    @classmethod
    def of(cls, run: Any, target: str, source: str = "baseline") -> Baseline:
        """The counts of `target`'s field in a report in memory, or a saved report or results file by path.

        Raises:
            CompareError: If the target is not `FIELD.METRIC` with a ratio metric, or the run lacks the field.
        """
        from fieldeval.compare.reading import read_run, read_run_file
        from fieldeval.compare.runs import Sample, paths_in

        field, _, metric = target.rpartition(".")
        if not field or metric not in RATIOS:
            raise CompareError(
                f"target {target!r}: write FIELD.METRIC with METRIC one of {', '.join(RATIOS)} (e.g. invoice_date.f1)"
            )
        if isinstance(run, str | Path):
            source, run = str(run), read_run_file(run)
        else:
            run = read_run(run, source)
        cases = list(run.documents)
        paths = paths_in(run, cases)
        if field not in paths:
            raise CompareError(f"{source}: no field path {field!r}; use one of {', '.join(paths)}")
        return cls(source, target, Sample.of(run, cases, [field]).counts[field].copy())

    @property
    def metric(self) -> str:
        return self.target.rpartition(".")[2]

    def value(self) -> float:
        return float(ratio(self.counts.sum(axis=0), self.metric))


def simulate(
    baseline: Baseline,
    documents: int,
    rate: float,
    *,
    simulations: int = SIMULATIONS,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Power:
    """Power of `high(delta(target)) >= 0` against a regression that breaks each correct value with chance `rate`."""
    metric = baseline.metric
    broken = FN if metric == "recall" else FD
    rng = np.random.default_rng(seed)
    caught, changes = 0, []
    for simulation in range(simulations):
        old = baseline.counts[rng.integers(0, len(baseline.counts), documents)]
        flips = rng.binomial(old[:, TP], rate)
        new = old.copy()
        new[:, TP] -= flips
        new[:, broken] += flips
        if broken == FD:
            new[:, FP] += flips
        estimates, resampled = resampled_change(old, new, metric, resamples, seed + simulation)
        estimate = float(estimates[0])
        high = float(percentile_bounds(resampled[:, 0], confidence)[1])  # one gate: its joint band is this interval
        caught += regression_caught(high)
        changes.append(estimate)
    return Power(documents, rate, float(np.mean(changes)), caught / simulations)


def smallest_change(baseline: Baseline, documents: int | None = None, power: float = POWER, **options) -> Power:
    """The smallest planted regression caught with `power` at `documents` (the baseline's size by default).

    Searches the rate by halving the gap eight times; if even breaking every correct value is
    not caught that often, returns that setting with its (lower) power.
    """
    documents = documents or len(baseline.counts)
    best = simulate(baseline, documents, 1.0, **options)
    if best.power < power:
        return best
    _, found = _halve(0.0, 1.0, lambda rate: simulate(baseline, documents, rate, **options), power, 1 / 256)
    return found or best


def documents_needed(
    baseline: Baseline, change: float, power: float = POWER, limit: int = MAX_DOCUMENTS, **options
) -> Power | None:
    """The fewest documents at which a regression of mean size `change` is caught with `power`; None past `limit`.

    The planted rate that makes the change is found first (at the baseline's size); then the run
    size is doubled until the gate catches it often enough, and the last gap halved.
    """
    if change >= 0:
        raise CompareError(f"change must be a drop below zero (e.g. -0.02); got {change}")
    rate = _rate_for(baseline, change, **options)
    if rate is None:
        return None
    small, large = 0, max(2, len(baseline.counts) // 4)
    found = simulate(baseline, large, rate, **options)
    while found.power < power:
        if large >= limit:
            return None
        small, large = large, min(limit, large * 2)
        found = simulate(baseline, large, rate, **options)
    _, trial = _halve(small, large, lambda size: simulate(baseline, size, rate, **options), power, large // 20)
    return trial or found


def _rate_for(baseline: Baseline, change: float, **options) -> float | None:
    """The planted rate whose mean change is `change`, from the change breaking every correct value makes."""
    documents = max(len(baseline.counts), 200)
    quick = {**options, "simulations": 20, "resamples": 2}
    if simulate(baseline, documents, 1.0, **quick).change > change:
        return None
    return _halve(0.0, 1.0, lambda rate: simulate(baseline, documents, rate, **quick), None, 1 / 4096, change)[0]


def _halve(
    low: float, high: float, attempt: Any, power: float | None, gap: float, change: float = 0.0
) -> tuple[float, Power | None]:
    """Halve `[low, high]` until it is `gap` wide, keeping the high end where the setting is enough.

    A setting is enough when its power reaches `power`, or, with `power` None, when its mean change
    reaches `change`. Run sizes are whole numbers, so an integer range is halved in integers.
    Returns the high end and the last setting found enough there (None if only the start was).
    """
    whole = isinstance(low, int)
    best = None
    while high - low > max(gap, 1 if whole else 0):
        middle = (low + high) // 2 if whole else (low + high) / 2
        found = attempt(middle)
        if (found.power >= power) if power is not None else (found.change <= change):
            high, best = middle, found
        else:
            low = middle
    return high, best
