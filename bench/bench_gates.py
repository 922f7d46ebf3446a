"""Benchmark: how often interval-end gates fail on a change that moved nothing, and how often they catch one.

    python bench/bench_gates.py                        1,000 seeds at 10, 30, 100 and 1,000 documents
    python bench/bench_gates.py --seeds 2000 --sizes 60
    python bench/bench_gates.py --quick                20 seeds at 10 documents, 100 resamples (CI)

Data: simulated from seeds by `walkthroughs.simulated_gates` (nothing is stored, no model is
called), where every rate of the simulation lives: an invoice extractor on a schema of nine gated
field paths, discrete and skewed (error rates higher on poor scans), one of them (`currency`)
wrong on 2% of documents, both runs on the same documents.

Every run gates all nine fields with `high(delta(FIELD.f1)) >= 0`, read three ways from the same
paired bootstrap resamples, computed by the functions `compare` itself uses
(`fieldeval.compare.bootstrap.resample_sums`, `ratio`, `percentile_bounds`, `joint_band`):

- per-field: each field's own 95% percentile interval (`--intervals per-field`);
- joint: each field's percentile interval at one level calibrated on the same resamples so that
  all nine hold together at 95% (the default, and what the field table prints for gated rows);
- studentized: the symmetric max-|t| band `estimate +- c x se` that `compare` used before, kept
  in the simulation module only for this comparison.

Under no change (both runs at the same rates) it prints the share of seeds in which any gate
failed (the family-wise false-alarm rate) and the mean share of single gates that failed, each
with its Monte Carlo standard error. Under a regression planted on `invoice_date` and on the
2% field `currency` (their error rates raised by each of `REGRESSIONS`) it prints how often that
field's gate failed (power), by each reading, and the mean true change in its F1. The figures
are reproducible from `--seed`. It exits 1 if the joint false-alarm rate exceeds 5% by more
than two Monte Carlo errors at any size.

Resamples: 500 per comparison (the command's default is 2,000), so that 1,000 seeds at 1,000
documents run in minutes on two cores; the resample count only adds noise to where an interval
end falls, which the seeds average over.
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.timing import QUICK_NOTE, add_quick
from walkthroughs.simulated_gates import (
    CONFIDENCE,
    FIELDS,
    MODES,
    REGRESSED,
    REGRESSIONS,
    RESAMPLES,
    SEED,
    SEEDS,
    SIZES,
    bands,
    euro_claims,
    rate,
    simulate,
)

PLANTED = {REGRESSED: REGRESSIONS, "currency": (0.10, 0.30)}  # a rare-error field: 2% -> 12% and 32%


def show(share: tuple[float, float]) -> str:
    return f"{share[0]:6.1%} ± {share[1]:.1%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="documents per run")
    parser.add_argument("--seeds", type=int, default=SEEDS, help="simulated pairs of runs per size and scenario")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples per comparison")
    parser.add_argument("--seed", type=int, default=SEED, help="master seed: the same figures from the same seed")
    add_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.seeds, args.resamples = [min(SIZES)], 20, 100
        print(QUICK_NOTE)
    level = 1 - CONFIDENCE
    print(
        f"data: simulated (seed {args.seed}); {len(FIELDS)} gated fields, high(delta(FIELD.f1)) >= 0 on each; "
        f"{args.seeds:,} seeds per row, {args.resamples} resamples, {CONFIDENCE:.0%} intervals; "
        "± is the Monte Carlo standard error"
    )
    read, _ = bands(*euro_claims(), seed=0, resamples=2000)
    print("\nTen claims, the candidate reads the four euro claims as dollars: currency F1 change, 2,000 resamples")
    for mode, (lows, highs) in read.items():
        low, high = float(lows[0]), float(highs[0])
        verdict = "passes" if high >= 0 else "FAILS"
        print(f"{mode:>12}: [{low:+.3f}, {high:+.3f}] -> gate high(delta(currency.f1)) >= 0 {verdict}")
    print(f"\nNo change (both runs at the same rates): how often some gate fails; stated joint level {level:.0%}")
    print(f"{'documents':>9}  " + "  ".join(f"{'any, ' + mode:>18}" for mode in MODES) + "  one gate, joint")
    held = True
    for size in args.sizes:
        start = time.perf_counter()
        found = simulate(size, args.seeds, 0.0, args.seed, args.resamples)
        anyone = {mode: rate(found[mode].any(axis=1)) for mode in MODES}
        within = anyone["joint"][0] <= level + 2 * anyone["joint"][1]
        held &= within
        mark = "within level" if within else "ABOVE level"
        print(
            f"{size:>9,}  "
            + "  ".join(f"{show(anyone[mode]):>18}" for mode in MODES)
            + f"  {found['joint'].mean():>15.1%}  {mark} ({time.perf_counter() - start:.0f} s)"
        )
    for field, extras in PLANTED.items():
        print(f"\nA regression planted on {field}: how often its gate fails (power), by each reading")
        modes = "  ".join(f"{mode:>16}" for mode in MODES)
        print(f"{'documents':>9}  {'error rate +':>12}  {'mean change in F1':>17}  {modes}")
        column = FIELDS.index(field)
        for size in args.sizes:
            for extra in extras:
                found = simulate(size, args.seeds, extra, args.seed, args.resamples, field)
                print(
                    f"{size:>9,}  {extra:>12.2f}  {found['change']:>17.3f}  "
                    + "  ".join(f"{show(rate(found[mode][:, column])):>16}" for mode in MODES)
                )
    print(
        f"\njoint false-alarm rate within {level:.0%} (plus two Monte Carlo errors) at every size: "
        f"{'yes' if held else 'NO'}"
    )
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
