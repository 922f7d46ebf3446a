"""Benchmark: `FuzzyEquals(ignore_order=True)` against `DeepDiff(ignore_order=True)`, in one run.

    python bench/bench_fuzzy.py                          1,000, 10,000 and 100,000 rows
    python bench/bench_fuzzy.py --sizes 1000,10000       pick the sizes
    python bench/bench_fuzzy.py --deepdiff-max 10000     skip deepdiff above a size

Data: a generated (seeded, not recorded) SQL-like result set of six columns, compared with a
copy whose rows are shuffled and whose keys are in another order per row. Two cases per size:

- exact: the copy is equal, so both tools must say "equal";
- tolerance: every float in the copy is off by 0.1%, compared under a 1% tolerance, so the right
  verdict is "equal". deepdiff has no relative tolerance; it is given an absolute `math_epsilon`
  of 1% of the largest total (looser than 1% of each value), but with ignore_order it does not
  apply it inside rows (it says so in a warning, silenced here), so it reports differences.
  A third check, one float off by 5%, makes sure FuzzyEquals still fails.

Each timing is the CPU time of this process (so other load on a shared machine does not count),
the best of a few runs of both tools at the same size (fewer at larger sizes), with the garbage
collector run before each. The exit code is 1 if FuzzyEquals gives a wrong verdict, or deepdiff
a wrong one on exact data.
"""

from __future__ import annotations

import argparse
import gc
import logging
import math
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from importlib.metadata import version

from deepdiff import DeepDiff

from helpers.fuzzy.evaluator import FuzzyEquals

REGIONS = ["North", "South", "East", "West", "Central"]
TOLERANCE = 0.01
NOISE = 0.001


def result_set(rows: int, seed: int) -> list[dict]:
    """Six columns: an id, two strings, an int and two floats, like a SQL `SELECT`."""
    rng = random.Random(seed)
    table = []
    for order_id in range(1, rows + 1):
        quantity = rng.randint(1, 40)
        unit_price = round(rng.uniform(1, 500), 2)
        table.append(
            {
                "order_id": order_id,
                "customer": f"customer-{rng.randrange(rows // 4 + 1):06d}",
                "region": rng.choice(REGIONS),
                "quantity": quantity,
                "unit_price": unit_price,
                "total": round(quantity * unit_price, 2),
            }
        )
    return table


def shuffled(table: list[dict], seed: int) -> list[dict]:
    """The same rows in another order, each row's keys in another order too."""
    rng = random.Random(seed)
    copy = []
    for row in table:
        keys = list(row)
        rng.shuffle(keys)
        copy.append({key: row[key] for key in keys})
    rng.shuffle(copy)
    return copy


def perturbed(table: list[dict], seed: int, noise: float) -> list[dict]:
    """Every float moved by `noise` (relative), up or down."""
    rng = random.Random(seed)
    return [
        {k: v * (1 + rng.choice((-noise, noise))) if isinstance(v, float) else v for k, v in row.items()}
        for row in table
    ]


def best_of(repeats: int, call: Callable[[], object]) -> tuple[float, object]:
    best, result = math.inf, None
    for _ in range(repeats):
        gc.collect()
        started = time.process_time()
        result = call()
        best = min(best, time.process_time() - started)
    return best, result


def repeats_for(rows: int) -> int:
    return 5 if rows <= 1_000 else 3 if rows <= 10_000 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated row counts")
    parser.add_argument("--deepdiff-max", type=int, default=100_000, help="largest size deepdiff is timed at")
    args = parser.parse_args(argv)
    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",") if size.strip()]
    logging.getLogger("deepdiff").setLevel(logging.ERROR)  # its math_epsilon warning, explained above
    gc.freeze()  # the imported libraries are never garbage: keep each collection between runs short
    try:
        return _run(sizes, args.deepdiff_max)
    finally:
        gc.unfreeze()


def _run(sizes: list[int], deepdiff_max: int) -> int:
    """Time every size, print one line per case, and count wrong verdicts."""
    print(
        f"FuzzyEquals vs deepdiff {version('deepdiff')}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores; generated data (seeded), measured in this run, CPU seconds"
    )
    header = f"{'rows':>8}  {'case':<10} {'FuzzyEquals':>12} {'deepdiff':>10} {'ratio':>7}  verdicts"
    print(header)
    print("-" * len(header))
    wrong = 0
    fuzzy_times: dict[str, dict[int, float]] = {}
    for rows in sizes:
        expected = result_set(rows, seed=rows)
        exact = shuffled(expected, seed=rows + 1)
        noisy = perturbed(exact, seed=rows + 2, noise=NOISE)
        broken = [dict(row) for row in noisy]
        broken[len(broken) // 2]["total"] *= 1.05
        repeats = repeats_for(rows)
        run_deepdiff = rows <= deepdiff_max
        epsilon = TOLERANCE * max(row["total"] for row in expected)

        cases = [
            ("exact", exact, FuzzyEquals(ignore_order=True), {}, True),
            (
                "tolerance",
                noisy,
                FuzzyEquals(ignore_order=True, numeric_tolerance=TOLERANCE),
                {"math_epsilon": epsilon},
                True,
            ),
            ("one off 5%", broken, FuzzyEquals(ignore_order=True, numeric_tolerance=TOLERANCE), None, False),
        ]
        for label, actual, evaluator, deepdiff_options, right in cases:
            fuzzy_time, output = best_of(repeats, lambda e=evaluator, x=expected, a=actual: e.compare(x, a))
            fuzzy_equal = output.test_pass
            fuzzy_times.setdefault(label, {})[rows] = fuzzy_time
            verdicts = f"FuzzyEquals {_verdict(fuzzy_equal, right)}"
            wrong += fuzzy_equal != right
            dd_text, ratio = "-", "-"
            if deepdiff_options is not None and run_deepdiff:
                dd_time, diff = best_of(
                    repeats, lambda x=expected, a=actual, o=deepdiff_options: DeepDiff(x, a, ignore_order=True, **o)
                )
                dd_equal = not diff
                dd_text, ratio = f"{dd_time:.3f} s", f"{dd_time / max(fuzzy_time, 1e-9):.1f}x"
                verdicts += f", deepdiff {_verdict(dd_equal, right)}"
                wrong += label == "exact" and dd_equal != right
            elif deepdiff_options is not None:
                dd_text = "skipped"
            print(f"{rows:>8,}  {label:<10} {fuzzy_time:>10.3f} s {dd_text:>10} {ratio:>7}  {verdicts}")
            if not right and rows == sizes[0]:
                print(f"{'':>8}  FuzzyEquals says: {output.reason}")
        if not run_deepdiff:
            print(f"{'':>8}  deepdiff not timed above {deepdiff_max:,} rows (--deepdiff-max)")

    for label in ("exact", "tolerance"):
        _growth(label, fuzzy_times.get(label, {}))
    if wrong:
        print(f"{wrong} wrong verdict(s) where a right one is required")
    return 1 if wrong else 0


def _verdict(equal: bool, right: bool) -> str:
    said = "equal" if equal else "differs"
    return f"{said} ({'right' if equal == right else 'WRONG'})"


def _growth(label: str, times: dict[int, float]) -> None:
    """How FuzzyEquals' time grows with the row count, against n log n and n squared."""
    sizes = sorted(times)
    for small, large in zip(sizes, sizes[1:], strict=False):
        factor = large / small
        n_log_n = factor * math.log(large) / math.log(small)
        print(
            f"growth {small:,} -> {large:,} rows ({label}): FuzzyEquals x{times[large] / times[small]:.1f}; "
            f"n log n predicts x{n_log_n:.1f}, n squared x{factor**2:.0f}"
        )


if __name__ == "__main__":
    sys.exit(main())
