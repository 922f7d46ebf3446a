"""Benchmark: `FuzzyEquals(ignore_order=True)` against deepdiff, and on the shapes that went quadratic.

    python -m bench.bench_fuzzy                                deepdiff at 300, 1,000 and 10,000 rows;
                                                               the shapes at 2,000 and 100,000
    python -m bench.bench_fuzzy --sizes 1000,10000             the deepdiff sizes
    python -m bench.bench_fuzzy --shape-sizes 2000,100000      the shape sizes
    python -m bench.bench_fuzzy --deepdiff-max 10000           skip deepdiff above a size
    python -m bench.bench_fuzzy --quick                        100 rows, shapes at 500, one round (CI)

Part 1, against deepdiff. Data: a generated (seeded, not recorded) SQL-like result set of six
columns, compared with a copy whose rows are shuffled and whose keys are in another order per
row. Three cases per size:

- exact: the copy is equal, so both tools must say "equal";
- tolerance: every float in the copy is off by 0.1%, compared under a 1% tolerance, so the right
  verdict is "equal". deepdiff has no tolerance it honours with `ignore_order=True`: it ignores
  `math_epsilon` there (and warns). The setting it does honour is `significant_digits`, which
  rounds each number before hashing; with `number_format_notation="e"` and 2 digits that is a
  relative rounding of about 1%, the closest deepdiff comes. A rounding is not a tolerance: two
  values 0.1% apart that fall either side of a rounding boundary still differ, so it reports
  differences where the right verdict is "equal". With it deepdiff also pairs every changed row
  against every other, so this case is timed up to 300 rows only.
- one off 5%: one float off by 5%, to make sure FuzzyEquals still fails.

Part 2, the shapes of issue 11 (generated, seeded), each compared with a shuffled copy whose
numbers moved well within the tolerance, so the right verdict is "equal": near-duplicate floats
within a 1% tolerance; the result set's rows as tuples, as a database cursor returns them, and
the same rows as dicts; the same rows as dicts keyed by integers; rows of an integer id and a
near-duplicate amount; values near 5e9 with an absolute tolerance of 1e-3; prices in
[99.5, 100.5] with 4 decimals under 1% (every price within tolerance of every other). Each line
prints the time, its ratio to a floor measured in the same run (sorting every number of both
inputs once), the peak memory of the comparison (tracemalloc, in a separate run so tracing does
not slow the timing) and its ratio to the memory the inputs themselves take. A last check
breaks one value of the largest near-duplicate list, which must then fail.

Each timing is the CPU time of this process (so other load on a shared machine does not count):
the median of at least 3 interleaved rounds (FuzzyEquals and its peer or floor take turns), with
the range, the garbage collector run before each. The exit code is 1 if FuzzyEquals gives a
wrong verdict, or deepdiff a wrong one on exact data.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from importlib.metadata import version

from deepdiff import DeepDiff

from bench.timing import MIN_ROUNDS, QUICK_NOTE, QUICK_ROUNDS, add_quick, interleaved, median, spread
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


def measured(rounds: int, calls: dict[str, Callable[[], object]]) -> tuple[dict[str, list[float]], dict[str, object]]:
    """CPU seconds of each call over `rounds` interleaved rounds, and each call's last result."""
    results: dict[str, object] = {}

    def keeping(name: str, call: Callable[[], object]) -> Callable[[], None]:
        return lambda: results.__setitem__(name, call())

    timed = {name: keeping(name, call) for name, call in calls.items()}
    seconds = interleaved(rounds, timed, minimum=QUICK_ROUNDS, clock=time.process_time)  # rounds: MIN_ROUNDS or --quick
    return seconds, results


# With `significant_digits`, deepdiff pairs every row whose rounded hash changed against every other
# (0.03 s at 300 rows with the ignored `math_epsilon`, 14 s with the honoured rounding), so its
# tolerance case is timed at this many rows and below only.
DEEPDIFF_ROUNDING_MAX = 300


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="300,1000,10000", help="comma-separated row counts against deepdiff")
    parser.add_argument("--shape-sizes", default="2000,100000", help="comma-separated sizes of the shapes")
    parser.add_argument("--deepdiff-max", type=int, default=100_000, help="largest size deepdiff is timed at")
    add_quick(parser)
    args = parser.parse_args(argv)
    rounds = MIN_ROUNDS
    if args.quick:
        args.sizes, args.shape_sizes, rounds = "100", "500", QUICK_ROUNDS
        print(QUICK_NOTE)
    sizes = _sizes(args.sizes)
    shape_sizes = _sizes(args.shape_sizes)
    gc.freeze()  # the imported libraries are never garbage: keep each collection between runs short
    try:
        wrong = _run(sizes, args.deepdiff_max, rounds) if sizes else 0
        wrong += _run_shapes(shape_sizes, rounds) if shape_sizes else 0
    finally:
        gc.unfreeze()
    if wrong:
        print(f"{wrong} wrong verdict(s) where a right one is required")
    return 1 if wrong else 0


def _sizes(text: str) -> list[int]:
    return [int(size.replace("_", "")) for size in text.split(",") if size.strip()]


def _run(sizes: list[int], deepdiff_max: int, rounds: int) -> int:
    """Time every size against deepdiff, print one line per case, and count wrong verdicts."""
    print(
        f"FuzzyEquals vs deepdiff {version('deepdiff')}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores; generated data (seeded), measured in this run, CPU seconds"
    )
    header = f"{'rows':>8}  {'case':<10} {'FuzzyEquals (range)':>24} {'deepdiff (range)':>24} {'ratio':>7}  verdicts"
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
        run_deepdiff = rows <= deepdiff_max
        rounding = {"significant_digits": 2, "number_format_notation": "e"}  # honoured with ignore_order

        cases = [
            ("exact", exact, FuzzyEquals(ignore_order=True), {}, True),
            (
                "tolerance",
                noisy,
                FuzzyEquals(ignore_order=True, numeric_tolerance=TOLERANCE),
                rounding,
                True,
            ),
            ("one off 5%", broken, FuzzyEquals(ignore_order=True, numeric_tolerance=TOLERANCE), None, False),
        ]
        for label, actual, evaluator, deepdiff_options, right in cases:
            calls = {"fuzzy": lambda e=evaluator, x=expected, a=actual: e.compare(x, a)}
            too_slow = bool(deepdiff_options) and rows > DEEPDIFF_ROUNDING_MAX
            if deepdiff_options is not None and run_deepdiff and not too_slow:
                calls["deepdiff"] = lambda x=expected, a=actual, o=deepdiff_options: DeepDiff(
                    x, a, ignore_order=True, **o
                )
            seconds, results = measured(rounds, calls)
            output = results["fuzzy"]
            fuzzy_equal = output.test_pass
            fuzzy_times.setdefault(label, {})[rows] = median(seconds["fuzzy"])
            verdicts = f"FuzzyEquals {_verdict(fuzzy_equal, right)}"
            wrong += fuzzy_equal != right
            dd_text, ratio = "-", "-"
            if "deepdiff" in seconds:
                dd_equal = not results["deepdiff"]
                dd_text = spread(seconds["deepdiff"], 3) + " s"
                ratio = f"{median(seconds['deepdiff']) / max(median(seconds['fuzzy']), 1e-9):.1f}x"
                verdicts += f", deepdiff {_verdict(dd_equal, right)}"
                wrong += label == "exact" and dd_equal != right
            elif deepdiff_options is not None:
                dd_text = f"skipped (> {DEEPDIFF_ROUNDING_MAX} rows)" if too_slow else "skipped"
            fuzzy_text = spread(seconds["fuzzy"], 3) + " s"
            print(f"{rows:>8,}  {label:<10} {fuzzy_text:>24} {dd_text:>24} {ratio:>7}  {verdicts}")
            if not right and rows == sizes[0]:
                print(f"{'':>8}  FuzzyEquals says: {output.reason}")
        if not run_deepdiff:
            print(f"{'':>8}  deepdiff not timed above {deepdiff_max:,} rows (--deepdiff-max)")

    for label in ("exact", "tolerance"):
        _growth(label, fuzzy_times.get(label, {}))
    return wrong


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


# --- part 2: the shapes that went quadratic -----------------------------------------------------


def near_duplicates(n: int, seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    expected = [100 * (1 + rng.uniform(-0.001, 0.001)) for _ in range(n)]
    actual = [x * (1 + rng.uniform(-0.001, 0.001)) for x in expected]
    rng.shuffle(actual)
    return expected, actual


def cursor_rows(n: int, seed: int) -> tuple[list, list]:
    """The result set's rows as tuples in column order, as `cursor.fetchall()` returns them."""
    table = result_set(n, seed)
    noisy = perturbed(shuffled(table, seed + 1), seed + 2, NOISE)
    columns = list(table[0])
    return [tuple(row[c] for c in columns) for row in table], [tuple(row[c] for c in columns) for row in noisy]


def dict_rows(n: int, seed: int) -> tuple[list, list]:
    table = result_set(n, seed)
    return table, perturbed(shuffled(table, seed + 1), seed + 2, NOISE)


def integer_keyed_rows(n: int, seed: int) -> tuple[list, list]:
    """The same rows as dicts whose keys are column numbers."""
    table, noisy = dict_rows(n, seed)
    columns = list(table[0])
    return [{i: row[c] for i, c in enumerate(columns)} for row in table], [
        {i: row[c] for i, c in enumerate(columns)} for row in noisy
    ]


def id_and_amount_rows(n: int, seed: int) -> tuple[list, list]:
    """Rows of an integer id and an amount, every amount within tolerance of every other."""
    rng = random.Random(seed)
    expected = [{"id": i, "amount": 100 * (1 + rng.uniform(-0.001, 0.001))} for i in range(1, n + 1)]
    actual = [{"amount": r["amount"] * (1 + rng.uniform(-0.001, 0.001)), "id": r["id"]} for r in expected]
    rng.shuffle(actual)
    return expected, actual


def near_5e9(n: int, seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    expected = [5e9 + rng.uniform(0, 1) for _ in range(n)]
    actual = [x + rng.uniform(-4e-4, 4e-4) for x in expected]
    rng.shuffle(actual)
    return expected, actual


def prices(n: int, seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    expected = [round(rng.uniform(99.5, 100.5), 4) for _ in range(n)]
    actual = [round(x * (1 + rng.uniform(-0.001, 0.001)), 4) for x in expected]
    rng.shuffle(actual)
    return expected, actual


SHAPES: list[tuple[str, Callable[[int, int], tuple[list, list]], dict]] = [
    ("near-duplicate floats, 1%", near_duplicates, {"numeric_tolerance": TOLERANCE}),
    ("tuple rows (cursor), 1%", cursor_rows, {"numeric_tolerance": TOLERANCE}),
    ("the same rows as dicts, 1%", dict_rows, {"numeric_tolerance": TOLERANCE}),
    ("rows keyed by integers, 1%", integer_keyed_rows, {"numeric_tolerance": TOLERANCE}),
    ("integer id + near-dup amount, 1%", id_and_amount_rows, {"numeric_tolerance": TOLERANCE}),
    ("values near 5e9, absolute 1e-3", near_5e9, {"absolute_tolerance": 1e-3}),
    ("prices [99.5, 100.5], 4 dp, 1%", prices, {"numeric_tolerance": TOLERANCE}),
]
TARGETS = {2_000: 0.5, 100_000: 10.0}  # seconds, from issue 11


def _numbers(values: list) -> list:
    found: list = []
    for value in values:
        if isinstance(value, dict):
            found.extend(v for v in value.values() if isinstance(v, int | float))
        elif isinstance(value, tuple):
            found.extend(v for v in value if isinstance(v, int | float))
        else:
            found.append(value)
    return found


def _built(make: Callable[[int, int], tuple[list, list]], n: int) -> tuple[list, list, int]:
    """Both inputs, and the bytes they take as tracemalloc sees them being built."""
    gc.collect()
    tracemalloc.start()
    expected, actual = make(n, n)
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return expected, actual, size


def _peak(call: Callable[[], object]) -> tuple[int, object]:
    gc.collect()
    tracemalloc.start()
    result = call()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, result


def _run_shapes(sizes: list[int], rounds: int) -> int:
    """Time and measure each shape at each size; count wrong verdicts."""
    print()
    print("FuzzyEquals(ignore_order=True) on the shapes of issue 11; generated data (seeded), CPU seconds;")
    print("floor = sorting every number of both inputs once; memory = tracemalloc peak of the comparison")
    header = (
        f"{'shape':<34} {'size':>8} {'FuzzyEquals (range)':>24} {'target':>7} {'x floor':>8} "
        f"{'peak MB':>8} {'x input':>8}  verdict"
    )
    print(header)
    print("-" * len(header))
    wrong = 0
    for label, make, knobs in SHAPES:
        evaluator = FuzzyEquals(ignore_order=True, **knobs)
        for n in sizes:
            expected, actual, size = _built(make, n)
            numbers = _numbers(expected) + _numbers(actual)
            calls = {
                "floor": lambda v=numbers: sorted(v),
                "fuzzy": lambda e=evaluator, x=expected, a=actual: e.compare(x, a),
            }
            seconds, results = measured(rounds, calls)
            floor, took, output = median(seconds["floor"]), median(seconds["fuzzy"]), results["fuzzy"]
            peak, _ = _peak(lambda e=evaluator, x=expected, a=actual: e.compare(x, a))
            target = TARGETS.get(n)
            met = "-" if target is None else ("met" if took < target else "MISSED")
            wrong += not output.test_pass
            print(
                f"{label:<34} {n:>8,} {spread(seconds['fuzzy'], 3):>22} s {met:>7} {took / max(floor, 1e-9):>7.0f}x "
                f"{peak / 1e6:>8.1f} {peak / max(size, 1):>7.2f}x  {_verdict(output.test_pass, True)}"
            )
            if not output.test_pass:
                print(f"{'':>34}  FuzzyEquals says: {output.reason}")
    largest = max(sizes)
    expected, actual = near_duplicates(largest, largest)
    actual[len(actual) // 2] *= 1.05
    seconds, results = measured(
        rounds, {"fuzzy": lambda: FuzzyEquals(ignore_order=True, numeric_tolerance=TOLERANCE).compare(expected, actual)}
    )
    output = results["fuzzy"]
    wrong += output.test_pass
    print(
        f"{'near-duplicates, one off 5%':<34} {largest:>8,} {spread(seconds['fuzzy'], 3):>22} s {'':>7} {'':>8} "
        f"{'':>8} {'':>8}  "
        f"{_verdict(output.test_pass, False)}"
    )
    return wrong


if __name__ == "__main__":
    sys.exit(main())
