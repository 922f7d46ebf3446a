"""Several candidates against one baseline: one leaderboard whose every verdict holds as a family.

Choosing a model means comparing several candidates with the baseline at once, and a table of K
candidates x F fields read at 95% each would call some field "regressed" or "improved" by chance
far more often than 5% of the time. Every candidate is paired with the baseline on the same
documents, and each pair's paired bootstrap draws the same resample indices (they depend only on
the seed and how many documents there are), so the candidates' resampled changes stand side by
side, resample by resample. One family band over every (candidate, target) pair holds them all
together, so that a false "regressed" or "improved" anywhere in the leaderboard happens at most
at 1 - confidence: Bonferroni's (`fieldeval.compare.bootstrap.bonferroni_band`), each interval the
estimate +- z x its bootstrap standard error, z leaving (1 - confidence) / m in the tails, m the
intervals whose target varies. The calibrated percentile band the one-candidate gates read
(`joint_band`) did not hold here: under no change `bench/bench_candidates.py` measured it up to
18.5% at a stated 5%, its ends read so far out in the resamples' tails that a few resamples
decide them. With this band the same benchmark (400 seeds; 2, 4, 8 candidates; 30, 100, 1,000
documents; discrete and skewed fields) measured 1.0% to 5.5%, within 5% and its Monte Carlo
error in all 18 settings (COMPARING.md has the table). With one candidate `build` keeps the
calibrated band, as it was. Every verdict, the frontier, the recommendation, the gates and
`to_json` read this one band, so replacing it here replaces it
everywhere. The targets are `overall`, each field path's F1 and any other metric a gate names.

Cost is from each run's recorded tokens at the user's `--prices` (`fieldeval.formats.prices`); a run
that cannot be priced is said to be so and is neither placed on the frontier nor recommended.

The frontier, precisely: run B *dominates* run A when both are priced, B costs no more per 1,000
documents, and on every target they share the interval of B - A (read as the family reads the
changes, at the family's level, from the same resamples) does not lie entirely below zero; when
they cost the same, B must also be clearly better (interval entirely above zero) on some target,
so two equal runs at one price stay on the frontier together. A priced run no other run dominates is on the frontier.

`recommended` is the cheapest priced run, the baseline included, with no "regressed" verdict against
the baseline on any target (on the gates' targets only, when gates are given); ties in cost go to
the baseline, then to the order the candidates were given.

    board = build(baseline_run, [run_a, run_b], prices=read_prices("prices.json"))
    board.recommended, board.reason          # 'small-a.json', 'small-a.json: no target regressed, ...'
    board.candidates[0].fields["total_amount"].verdict
    board.to_json()                          # what `compare --json` writes for several candidates
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fieldeval.compare.bootstrap import (
    REGRESSED,
    Interval,
    bonferroni_band,
    joint_band,
    normal_bounds,
    varying,
)
from fieldeval.compare.params import CONFIDENCE, RATIOS, RESAMPLES, SEED, CompareError
from fieldeval.compare.reading import Run
from fieldeval.compare.runs import Comparison, compare_candidates
from fieldeval.formats.prices import Price, run_cost
from fieldeval.formats.run_info import RunInfo

OVERALL = "overall"
BONFERRONI = "bonferroni"  # each interval estimate +- z * bootstrap se, z split over the varying intervals
CALIBRATED = "calibrated percentile"  # one candidate: `joint_band`, as before several candidates were taken
SHOWN_CASES = 5  # case names listed when the case sets differ; the rest are counted


@dataclass(frozen=True)
class Row:
    """One run of the leaderboard: its change against the baseline (none for the baseline itself) and its costs.

    `changes` maps each family target (`overall`, `PATH.f1`, a gated `PATH.recall`) to its interval
    from the family's band; `fields` is the F1 of each field path, keyed by the path.
    """

    run: str  # the path as given on the command line (or the run's source)
    baseline: bool
    model_id: str | None
    changes: Mapping[str, Interval]
    tokens_per_document: float | None
    cost_per_1000: float | None  # None: not priced (`cost_note` says why)
    cost_note: str
    latency_p50_s: float | None  # None: not recorded
    latency_p95_s: float | None
    wall_s: float | None  # the live calls' wall time summed over the documents; None: not recorded
    frontier: bool = False  # False for a run that cannot be priced: it is never placed
    dominated_by: tuple[str, ...] = ()

    @property
    def overall(self) -> Interval | None:
        return self.changes.get(OVERALL)

    @property
    def fields(self) -> dict[str, Interval]:
        """Each field path's F1 change against the baseline, by path."""
        return {target[: -len(".f1")]: change for target, change in self.changes.items() if target.endswith(".f1")}

    @property
    def priced(self) -> bool:
        return self.cost_per_1000 is not None

    def verdicts(self, verdict: str) -> list[str]:
        """The field paths whose F1 got `verdict` (`regressed`, `improved`), in the schema's order."""
        return [path for path, change in self.fields.items() if change.verdict == verdict]

    @property
    def worst(self) -> str | None:
        """The field path whose F1 fell most, if any fell."""
        fields = self.fields
        if not fields:
            return None
        path = min(fields, key=lambda name: fields[name].estimate)
        return path if fields[path].estimate < 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "model_id": self.model_id,
            "cost_per_1000": self.cost_per_1000,
            "tokens_per_document": self.tokens_per_document,
            "latency_p50_s": self.latency_p50_s,
            "latency_p95_s": self.latency_p95_s,
            "wall_s": self.wall_s,
            "overall": _change_json(self.overall) if self.overall is not None else None,
            "fields": {path: _change_json(change) for path, change in self.fields.items()},
            "other_targets": {
                target: _change_json(change)
                for target, change in self.changes.items()
                if target != OVERALL and not target.endswith(".f1")
            },
            "frontier": self.frontier,
            "dominated_by": list(self.dominated_by),
        }


@dataclass(frozen=True)
class Family:
    """What the guarantee covers: at `confidence`, every interval of `targets` targets on each of `runs` candidates
    holds together; each is read at `level`.

    `band` says how: `bonferroni` (two or more candidates), each interval `estimate +- z * se` with
    `level = 1 - (1 - confidence) / varying`, `varying` the intervals whose target varies in the
    resamples; `calibrated percentile` (one candidate), each its percentile interval at `level`.
    """

    confidence: float
    level: float
    runs: int
    targets: int
    resamples: int
    seed: int
    documents: int
    band: str
    varying: int

    def to_json(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence,
            "runs": self.runs,
            "fields": self.targets,
            "intervals": self.runs * self.targets,
            "band": self.band,
            "varying": self.varying,
            "level": self.level,
            "resamples": self.resamples,
            "seed": self.seed,
            "documents": self.documents,
        }


@dataclass(frozen=True)
class Leaderboard:
    """The baseline and its candidates side by side; `recommended` is a run path or None, `reason` says why.

    `comparisons` (one per candidate, in order) hold the pairwise tables, movers and draws for a
    closer look at one candidate; they are left out of `to_json`.
    """

    baseline: Row
    candidates: tuple[Row, ...]
    recommended: str | None
    reason: str
    family: Family
    considered: tuple[str, ...]  # the targets the recommendation read: every target, or the gates'
    comparisons: tuple[Comparison, ...] = field(repr=False, compare=False, default=())

    @property
    def rows(self) -> tuple[Row, ...]:
        return (self.baseline, *self.candidates)

    @property
    def targets(self) -> list[str]:
        """Every target some candidate was compared on, in the order they were first met."""
        return list(dict.fromkeys(target for row in self.candidates for target in row.changes))

    def to_json(self) -> dict[str, Any]:
        """The `--json` record: `baseline`, `candidates`, `recommended`, `reason`, `family`."""
        return {
            "baseline": self.baseline.to_json(),
            "candidates": [row.to_json() for row in self.candidates],
            "recommended": self.recommended,
            "reason": self.reason,
            "considered": list(self.considered),
            "family": self.family.to_json(),
        }


def _change_json(change: Interval) -> dict[str, Any]:
    return {"delta": change.estimate, "low": change.low, "high": change.high, "verdict": change.verdict}


# --- building ----------------------------------------------------------------------------------


def build(
    baseline: Run,
    candidates: Sequence[Run],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    prices: Mapping[str, Price] | None = None,
    gated: Sequence[str] = (),
) -> Leaderboard:
    """Pair every candidate with the baseline, read one family band over them all, place them, recommend one.

    `gated` are the gates' targets (`overall`, `PATH.METRIC`): each joins the family (so a gate reads
    the interval the table prints), and when given the recommendation reads only them (`overall`
    and ratios; a count such as `PATH.fa` has no better direction).

    Raises:
        CompareError: If a candidate pairs other cases with the baseline than the first one does
            (the family needs every run on the same documents), or a run cannot be paired at all.
    """
    comparisons = compare_candidates(baseline, candidates, resamples=resamples, seed=seed, confidence=confidence)
    _check_same_cases(comparisons)
    targets_of = [_targets(comparison, gated) for comparison in comparisons]
    resampled = [
        {target: comparison.resampled_delta(target) for target in targets}
        for comparison, targets in zip(comparisons, targets_of, strict=True)
    ]
    estimated = [
        {target: float(comparison.new.value(target) - comparison.old.value(target)) for target in targets}
        for comparison, targets in zip(comparisons, targets_of, strict=True)
    ]
    stacked = np.column_stack([draws[target] for draws in resampled for target in draws])
    estimates = np.array([value for found in estimated for value in found.values()])
    bonferroni = len(candidates) > 1  # one candidate: the calibrated band, as before
    if bonferroni:
        low, high, level = bonferroni_band(estimates, stacked, confidence)
    else:
        low, high, level = joint_band(stacked, confidence)
    changes: list[dict[str, Interval]] = []
    at = 0
    for found in estimated:
        changes.append(
            {
                target: Interval(estimate, float(low[at + index]), float(high[at + index]), level)
                for index, (target, estimate) in enumerate(found.items())
            }
        )
        at += len(found)
    cases = comparisons[0].pairing.cases
    rows = [_row(baseline, cases, {}, prices, True)]
    rows += [_row(run, cases, found, prices, False) for run, found in zip(candidates, changes, strict=True)]
    every = dict.fromkeys(target for targets in targets_of for target in targets)
    resampled.insert(0, {target: np.zeros(resamples) for target in every})  # the baseline against itself
    estimated.insert(0, dict.fromkeys(every, 0.0))
    rows = _place(rows, resampled, estimated if bonferroni else None, level)
    considered = [target for target in dict.fromkeys(gated) if _joins(target)] if gated else []
    recommended, reason = _recommend(rows, considered)
    family = Family(
        confidence,
        level,
        len(candidates),
        max(len(targets) for targets in targets_of),
        resamples,
        seed,
        len(cases),
        BONFERRONI if bonferroni else CALIBRATED,
        int(varying(estimates, stacked).sum()),
    )
    return Leaderboard(rows[0], tuple(rows[1:]), recommended, reason, family, tuple(considered), tuple(comparisons))


def _joins(target: str) -> bool:
    """Whether a gated target's verdict can judge a run: `overall` and ratios, where higher is better (not counts)."""
    return target == OVERALL or target.rsplit(".", 1)[-1] in RATIOS


def _targets(comparison: Comparison, gated: Sequence[str]) -> list[str]:
    """The family's targets on one candidate: overall, every path's F1 (schema order), then the other gated targets.

    Every gated target joins, so a gate on an interval end reads the interval the family holds.
    """
    targets = [OVERALL, *(f"{path}.f1" for path in comparison.paths)]
    extra = [t for t in gated if t not in targets and t.rsplit(".", 1)[0] in comparison.paths]
    return [*targets, *dict.fromkeys(extra)]


def _check_same_cases(comparisons: Sequence[Comparison]) -> None:
    """Refuse candidates that pair different documents with the baseline: their resamples would not line up."""
    first = comparisons[0]
    for other in comparisons[1:]:
        if other.pairing.cases == first.pairing.cases:
            continue
        mine, theirs = set(first.pairing.cases), set(other.pairing.cases)
        only_first, only_other = sorted(mine - theirs), sorted(theirs - mine)

        def named(names: list[str]) -> str:
            more = f" and {len(names) - SHOWN_CASES} more" if len(names) > SHOWN_CASES else ""
            return ", ".join(names[:SHOWN_CASES]) + more if names else "none"

        raise CompareError(
            f"{other.new_run.source} pairs {len(theirs)} cases with the baseline {first.old_run.source}, "
            f"{first.new_run.source} pairs {len(mine)}: paired only with {first.new_run.source}: {named(only_first)}; "
            f"only with {other.new_run.source}: {named(only_other)}. Several candidates are judged together only on "
            "the same documents; score every run over the same case file (every case scored), or compare that "
            "candidate on its own"
        )


def _row(
    run: Run, cases: Sequence[str], changes: dict[str, Interval], prices: Mapping[str, Price] | None, base: bool
) -> Row:
    """A run's row: its changes, and what its paired documents cost and how long their model calls took."""
    info = run.info
    sources = [info.cases[name] for name in cases if name in info.cases] if info is not None else []
    usages = [source.usage for source in sources if source.usage]
    models = sorted({source.model_id for source in sources if source.model_id})
    tokens = (
        sum(usage.get("input_tokens", 0) + usage.get("output_tokens", 0) for usage in usages) / len(cases)
        if usages
        else None
    )
    latencies = [usage["latency_ms"] / 1000 for usage in usages if "latency_ms" in usage]
    walls = [usage["seconds"] for usage in usages if "seconds" in usage]
    cost, note = _cost(info, cases, prices)
    return Row(
        run=run.source,
        baseline=base,
        model_id=", ".join(models) or None,
        changes=changes,
        tokens_per_document=float(tokens) if tokens is not None else None,
        cost_per_1000=cost,
        cost_note=note,
        latency_p50_s=float(np.percentile(latencies, 50)) if latencies else None,
        latency_p95_s=float(np.percentile(latencies, 95)) if latencies else None,
        wall_s=float(sum(walls)) if usages and len(walls) == len(usages) else None,
    )


def _cost(info: RunInfo | None, cases: Sequence[str], prices: Mapping[str, Price] | None) -> tuple[float | None, str]:
    """The cost of 1,000 of the paired documents at `prices`, or None and why it cannot be priced.

    Only a run whose every model call the table prices has a cost: a partial sum would place a
    run by the cases it happened to price.
    """
    if prices is None:
        return None, "no --prices given"
    if info is None:
        return None, "the run recorded no model use"
    paired = info.model_copy(update={"cases": {name: info.cases[name] for name in cases if name in info.cases}})
    amount, priced, unpriced = run_cost(paired, dict(prices))
    if unpriced:
        return None, f"not in the price table: {', '.join(unpriced)}"
    if not priced:
        return None, "the run recorded no model use"
    return amount / len(cases) * 1000, ""


def _place(
    rows: list[Row],
    resampled: list[dict[str, np.ndarray]],
    estimated: list[dict[str, float]] | None,
    level: float,
) -> list[Row]:
    """Each priced run's place on the frontier and the runs that dominate it (see the module's definition).

    `estimated` (each run's full-sample changes) when the family is the Bonferroni band, None for
    the calibrated percentile band: the frontier reads its intervals the way the family does.
    """
    placed = []
    for index, row in enumerate(rows):
        if not row.priced:
            placed.append(row)
            continue
        by = tuple(
            other.run
            for number, other in enumerate(rows)
            if number != index
            and other.priced
            and _dominates(
                other,
                row,
                (resampled[number], resampled[index]),
                None if estimated is None else (estimated[number], estimated[index]),
                level,
            )
        )
        placed.append(replace(row, frontier=not by, dominated_by=by))
    return placed


def _dominates(
    other: Row,
    this: Row,
    resampled: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
    estimated: tuple[Mapping[str, float], Mapping[str, float]] | None,
    level: float,
) -> bool:
    """Whether `other` costs no more than `this` and its intervals show it no worse on any target they share.

    Each run's resampled changes are against the baseline on the same resamples (the baseline's
    own are zeros), so `other - this` per resample is the difference of the two; its interval is
    read at the family's level as the leaderboard reads the changes: `estimate +- z * se` for the
    Bonferroni band (`estimated` given), else the percentile interval. Against the baseline it is
    the very interval the row prints.
    """
    assert other.cost_per_1000 is not None and this.cost_per_1000 is not None
    if other.cost_per_1000 > this.cost_per_1000:
        return False
    theirs, mine = resampled
    shared = [target for target in theirs if target in mine]
    differences = np.column_stack([theirs[target] - mine[target] for target in shared])
    if estimated is None:
        tail = (1 - level) / 2
        low, high = np.quantile(differences, [tail, 1 - tail], axis=0)
    else:
        gaps = np.array([estimated[0][target] - estimated[1][target] for target in shared])
        low, high = normal_bounds(gaps, differences, level)
    if (high < 0).any():
        return False
    return other.cost_per_1000 < this.cost_per_1000 or bool((low > 0).any())


def _recommend(rows: Sequence[Row], considered: Sequence[str]) -> tuple[str | None, str]:
    """The cheapest priced run not worse than the baseline on the targets read, and one line saying why."""
    baseline = rows[0]

    def regressed(row: Row) -> list[str]:
        return [
            target
            for target, change in row.changes.items()
            if change.verdict == REGRESSED and (not considered or target in considered)
        ]

    what = "no gated target regressed" if considered else "no field regressed"
    priced = [row for row in rows if row.priced]
    if not priced:
        return None, f"no recommendation: no run could be priced ({baseline.cost_note}); give --prices FILE"
    eligible = [row for row in priced if not regressed(row)]
    best = min(eligible, key=lambda row: row.cost_per_1000 or 0.0) if eligible else None
    if best is None:  # only when the baseline is not priced (it never regresses against itself)
        return None, f"no recommendation: every priced candidate regressed ({baseline.run} is not priced)"
    if best.baseline:
        cheaper = [row for row in priced if not row.baseline and (row.cost_per_1000 or 0) < (best.cost_per_1000 or 0)]
        if not cheaper:
            return best.run, f"{best.run} (the baseline): no priced candidate costs less"
        why = "; ".join(f"{row.run}: {', '.join(regressed(row))} regressed" for row in cheaper)
        return best.run, f"{best.run} (the baseline): every cheaper candidate regressed ({why})"
    if baseline.priced and baseline.cost_per_1000:
        saving = 1 - (best.cost_per_1000 or 0.0) / baseline.cost_per_1000
        return best.run, f"{best.run}: {what}, {saving:.0%} cheaper than {baseline.run} per 1,000 documents"
    return best.run, f"{best.run}: {what}; the cheapest priced run ({baseline.run}, the baseline, is not priced)"
