"""Benchmark: how often interval-end gates fail on a change that moved nothing, and how often they catch one.

    python bench/bench_gates.py                        1,000 seeds at 30, 100 and 1,000 documents
    python bench/bench_gates.py --seeds 2000 --sizes 60

Data: simulated from seeds by `walkthroughs.simulated_gates` (nothing is stored, no model is
called), where every rate of the simulation lives: an invoice extractor on a schema of eight gated
field paths, with per-field error rates higher on poor scans, both runs on the same documents.

Every run gates all eight fields with `high(delta(FIELD.f1)) >= 0`, read two ways from the same
paired bootstrap resamples, computed by the functions `compare` itself uses
(`helpers.compare.bootstrap.resample_sums`, `ratio`, `interval`, `joint_band`):

- per-field: each field's own 95% percentile interval (`--intervals per-field`);
- joint: one simultaneous 95% max-|t| band over the eight fields (the default).

Under no change (both runs at the same rates) it prints the share of seeds in which any gate
failed (the family-wise false-alarm rate), and the mean share of single gates that failed, each
with its Monte Carlo standard error; the joint rate should not exceed 5% beyond that error. Under
a regression planted on `invoice_date` (its error rate raised by each of `REGRESSIONS`) it prints
how often that field's gate failed (power), joint against per-field, and the mean true change in
its F1. The figures are reproducible from `--seed`.

Resamples: 500 per comparison (the command's default is 2,000), so that 1,000 seeds at 1,000
documents run in a few minutes on two cores; the resample count only adds noise to where an
interval end falls, which the seeds average over.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from walkthroughs.simulated_gates import (
    CONFIDENCE,
    FIELDS,
    REGRESSED,
    REGRESSIONS,
    RESAMPLES,
    SEED,
    SEEDS,
    SIZES,
    rate,
    simulate,
)


def show(share: tuple[float, float]) -> str:
    return f"{share[0]:6.1%} ± {share[1]:.1%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="documents per run")
    parser.add_argument("--seeds", type=int, default=SEEDS, help="simulated pairs of runs per size and scenario")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples per comparison")
    parser.add_argument("--seed", type=int, default=SEED, help="master seed: the same figures from the same seed")
    args = parser.parse_args()
    level = 1 - CONFIDENCE
    print(
        f"data: simulated (seed {args.seed}); {len(FIELDS)} gated fields, high(delta(FIELD.f1)) >= 0 on each; "
        f"{args.seeds:,} seeds per row, {args.resamples} resamples, {CONFIDENCE:.0%} intervals; "
        "± is the Monte Carlo standard error"
    )
    print(f"\nNo change (both runs at the same rates): how often gates fail; stated joint level {level:.0%}")
    print(
        f"{'documents':>9}  {'any gate, per-field':>20}  {'any gate, joint':>16}  {'one gate, per-field':>20}  "
        f"{'one gate, joint':>16}  joint within level"
    )
    held = True
    for size in args.sizes:
        start = time.perf_counter()
        found = simulate(size, args.seeds, 0.0, args.seed, args.resamples)
        anyone = {mode: rate(found[mode].any(axis=1)) for mode in ("per-field", "joint")}
        single = {mode: rate(found[mode].ravel()) for mode in ("per-field", "joint")}
        single = {mode: (share, math.sqrt(share * (1 - share) / args.seeds)) for mode, (share, _) in single.items()}
        within = anyone["joint"][0] <= level + 2 * anyone["joint"][1]
        held &= within
        print(
            f"{size:>9,}  {show(anyone['per-field']):>20}  {show(anyone['joint']):>16}  "
            f"{show(single['per-field']):>20}  {show(single['joint']):>16}  "
            f"{'yes' if within else 'NO'} ({time.perf_counter() - start:.0f} s)"
        )
    print(f"\nA regression planted on {REGRESSED}: how often its gate fails (power), joint against per-field")
    print(f"{'documents':>9}  {'error rate +':>12}  {'mean true change in F1':>22}  {'per-field':>16}  {'joint':>16}")
    for size in args.sizes:
        for extra in REGRESSIONS:
            found = simulate(size, args.seeds, extra, args.seed, args.resamples)
            column = FIELDS.index(REGRESSED)
            print(
                f"{size:>9,}  {extra:>12.2f}  {found['change']:>22.3f}  "
                f"{show(rate(found['per-field'][:, column])):>16}  {show(rate(found['joint'][:, column])):>16}"
            )
    print(
        f"\njoint false-alarm rate within {level:.0%} (plus two Monte Carlo errors) at every size: "
        f"{'yes' if held else 'NO'}"
    )
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
