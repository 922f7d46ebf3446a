"""Benchmark: how often a leaderboard of several candidates claims a change that is not there.

    python bench/bench_candidates.py                   200 seeds; 2, 4 and 8 candidates; 30, 100, 1,000 documents
    python bench/bench_candidates.py --seeds 1000 --sizes 100 --kinds skewed
    python bench/bench_candidates.py --quick           20 seeds at 30 documents, 100 resamples (CI)

Data: simulated from seeds (nothing is stored, no model is called). Every candidate is drawn from
the same distribution as the baseline, on the same documents: no true change anywhere, so any
"regressed" or "improved" in the leaderboard is false. Two kinds of runs:

- discrete: six fields, each right (tp 1) or wrong (fd 1, fp 1) per document, at error rates
  from 2% to 50% (`DISCRETE_RATES`); a document's score is the share of its fields right;
- skewed: the gate benchmark's invoice extractor (`walkthroughs.simulated_gates`): nine field
  paths, errors far likelier on poor scans (shared by every run, as a hard document is hard for
  every model), line items of 1 to 5 lines, one field wrong on 2% of documents; a document's
  score is its true positives over its true positives, false positives and false negatives.

Each simulated leaderboard is read as `compare BASELINE C1 ... CK` reads it
(`fieldeval.compare.candidates`): every candidate's change in `overall` and in each field's F1
against the baseline, from the same paired bootstrap resamples (`resample_sums`, one draw for
every run, as every pairwise comparison draws the same indices), and one family band
(`bonferroni_band`: each interval the estimate +- z * its bootstrap standard error, z leaving
5% / m in the tails, m the intervals that vary) over all K x (1 + fields) changes. A seed counts
a false verdict when any interval of the family excludes zero. It prints that family-wise rate
per setting with its 95% Monte Carlo interval (rate +- 1.96 standard errors), against the stated
5%, and the rate per single interval. K = 2 and 4 read the first 2 and 4 of the 8 candidates
drawn for each seed. A rate above 5% by more than two Monte Carlo errors (at the stated rate,
sqrt(0.05 x 0.95 / seeds)) is marked ABOVE, and the benchmark then exits 1; `--quick` (20 seeds)
only checks that it runs, and exits 0 whatever it measured.

Resamples: 2,000 per leaderboard, the command's default.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from bench.timing import QUICK_NOTE, add_quick
from fieldeval.compare.bootstrap import bonferroni_band, ratio, resample_sums
from fieldeval.formats import COUNTS
from walkthroughs import simulated_gates as skewed

CONFIDENCE = 0.95
CANDIDATES = (2, 4, 8)
SIZES = (30, 100, 1000)
SEEDS = 200
RESAMPLES = 2000  # the command's default: the band is read far out in the resamples' tails
SEED = 45
DISCRETE_RATES = (0.02, 0.05, 0.10, 0.20, 0.30, 0.50)
KINDS = ("discrete", "skewed")
TP, FP, FN, FD = (COUNTS.index(key) for key in ("tp", "fp", "fn", "fd"))


def discrete_runs(rng: np.random.Generator, size: int, runs: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """`runs` runs of 0/1 fields at the same rates: each (scores, documents x (fields x COUNTS) counts)."""
    drawn = []
    for _ in range(runs):
        wrong = rng.random((size, len(DISCRETE_RATES))) < np.array(DISCRETE_RATES)
        counts = np.zeros((size, len(DISCRETE_RATES), len(COUNTS)), dtype=np.int64)
        counts[..., TP], counts[..., FD], counts[..., FP] = ~wrong, wrong, wrong
        drawn.append(((~wrong).mean(axis=1), counts.reshape(size, -1)))
    return drawn


def skewed_runs(rng: np.random.Generator, size: int, runs: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """`runs` runs of the skewed invoice extractor on the same documents (poor scans and line counts shared)."""
    poor, lines = skewed.documents(rng, size)
    drawn = []
    for _ in range(runs):
        counts = skewed.run_counts(rng, poor, lines)
        per_field = counts.reshape(size, -1, len(COUNTS))
        tp, wrong = per_field[..., TP].sum(axis=1), per_field[..., [FP, FN]].sum(axis=(1, 2))
        drawn.append((tp / np.maximum(tp + wrong, 1), counts))
    return drawn


def leaderboard_changes(runs: list[tuple[np.ndarray, np.ndarray]], seed: int, resamples: int) -> np.ndarray:
    """resamples x candidates x (1 + fields): each candidate's resampled change against the baseline (run 0)."""
    scores = np.column_stack([score for score, _ in runs])
    means, sums = resample_sums(scores, [counts for _, counts in runs], resamples, seed)
    return _changes(means, sums, len(runs))


def leaderboard_estimates(runs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """candidates x (1 + fields): each candidate's change against the baseline on the whole sample."""
    scores = np.array([[score.mean() for score, _ in runs]])
    sums = np.concatenate([counts.sum(axis=0) for _, counts in runs])[None, :]
    return _changes(scores, sums, len(runs))[0]


def _changes(means: np.ndarray, sums: np.ndarray, runs: int) -> np.ndarray:
    """Rows x candidates x (1 + fields) changes from each row's mean scores (rows x runs) and summed counts."""
    rows, width = sums.shape[0], sums.shape[1] // runs
    fields = width // len(COUNTS)
    f1 = np.stack(
        [
            ratio(sums[:, run * width : (run + 1) * width].reshape(rows, fields, len(COUNTS)), "f1")
            for run in range(runs)
        ],
        axis=1,
    )  # rows x runs x fields
    changes = np.concatenate([(means - means[:, :1])[:, :, None], f1 - f1[:, :1]], axis=2)
    return changes[:, 1:]


def false_verdicts(estimates: np.ndarray, changes: np.ndarray, candidates: int) -> tuple[bool, float]:
    """Whether the family band over the first `candidates` claims any change, and the share of its intervals that do."""
    resampled = changes[:, :candidates].reshape(changes.shape[0], -1)
    low, high, _ = bonferroni_band(estimates[:candidates].ravel(), resampled, CONFIDENCE)
    claimed = (low > 0) | (high < 0)
    return bool(claimed.any()), float(claimed.mean())


def simulate(
    kind: str, size: int, seeds: int, master: int, resamples: int
) -> dict[int, tuple[list[bool], list[float]]]:
    """Per number of candidates: per seed, whether the family claimed a change, and the share of intervals that did."""
    draw = discrete_runs if kind == "discrete" else skewed_runs
    found: dict[int, tuple[list[bool], list[float]]] = {k: ([], []) for k in CANDIDATES}
    for seed in range(seeds):
        rng = np.random.default_rng([master, KINDS.index(kind), size, seed])
        runs = draw(rng, size, 1 + max(CANDIDATES))
        changes, estimates = leaderboard_changes(runs, seed, resamples), leaderboard_estimates(runs)
        for candidates in CANDIDATES:
            anyone, share = false_verdicts(estimates, changes, candidates)
            found[candidates][0].append(anyone)
            found[candidates][1].append(share)
    return found


def rate(hits: list[bool]) -> tuple[float, float]:
    """A proportion over seeds and its Monte Carlo standard error."""
    share = float(np.mean(hits))
    return share, math.sqrt(share * (1 - share) / len(hits))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="documents per run")
    parser.add_argument("--seeds", type=int, default=SEEDS, help="simulated leaderboards per kind and size")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples per leaderboard")
    parser.add_argument("--seed", type=int, default=SEED, help="master seed: the same figures from the same seed")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="which simulated runs")
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.seeds, args.resamples = [min(SIZES)], 20, 100
        print(QUICK_NOTE)
    nominal = 1 - CONFIDENCE
    print(
        f"data: simulated (seed {args.seed}), no true change: every candidate drawn as the baseline is; "
        f"{args.seeds:,} seeds per row, {args.resamples} resamples, one {CONFIDENCE:.0%} family band (Bonferroni: "
        "each interval estimate +- z * bootstrap se, z split over the intervals that vary) over every candidate's "
        f"overall and field F1 changes; stated family-wise false-verdict rate {nominal:.0%}; [..] is the 95% Monte "
        f"Carlo interval; ABOVE: more than {nominal:.0%} + 2 Monte Carlo errors at {nominal:.0%}"
    )
    print(
        f"{'kind':>8}  {'documents':>9}  {'candidates':>10}  {'intervals':>9}  "
        f"{'family-wise false verdicts':>27}  per interval"
    )
    above = 0
    limit = nominal + 2 * math.sqrt(nominal * (1 - nominal) / args.seeds)
    for kind in args.kinds:
        fields = len(DISCRETE_RATES) if kind == "discrete" else len(skewed.FIELDS)
        for size in args.sizes:
            start = time.perf_counter()
            found = simulate(kind, size, args.seeds, args.seed, args.resamples)
            for candidates in CANDIDATES:
                anyone, shares = found[candidates]
                share, error = rate(anyone)
                above += share > limit
                shown = f"{share:6.1%} [{max(0.0, share - 1.96 * error):.1%}, {share + 1.96 * error:.1%}]"
                print(
                    f"{kind:>8}  {size:>9,}  {candidates:>10}  {candidates * (1 + fields):>9}  {shown:>27}  "
                    f"{np.mean(shares):>12.2%}{'  ABOVE the stated rate' if share > limit else ''}"
                )
            print(f"{'':>8}  ({time.perf_counter() - start:.0f} s for {size:,} documents)")
    settings = len(args.kinds) * len(args.sizes) * len(CANDIDATES)
    print(
        f"\nfamily-wise false-verdict rate within {nominal:.0%} (at most {limit:.1%} over {args.seeds:,} seeds) "
        f"in {settings - above} of {settings} settings"
    )
    if args.quick:
        return 0  # 20 seeds measure nothing: quick mode checks only that the benchmark runs
    return 1 if above else 0


if __name__ == "__main__":
    sys.exit(main())
