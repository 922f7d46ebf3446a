"""Benchmark: comparing two runs at 1,000 and 10,000 documents per side, and 100,000 in the compact format.

    python -m bench.bench_compare                                  the default sizes
    python -m bench.bench_compare --reports 1000 --results 0       pick the sizes (0 skips)
    python -m bench.bench_compare --old-max 1000                   the old algorithm up to this size
    python -m bench.bench_compare --quick                          50 and 200 documents, one round (CI)

Data: simulated, generated here from seeds (nothing is stored). The 60 simulated invoices of
`walkthroughs.simulated_runs` are scored once through the harness with both simulated
extractors; each benchmark document is one of those scored pairs drawn at random (seeded), renamed,
so both runs carry real stickler comparisons with the simulated error rates. The runs are written
as saved reports (the report's pydantic JSON with indent 2, as `save_report` writes) and as compact
per-document results files (`fieldeval.harness.results`). Documents drawn from 60 pairs repeat each
other's counts and scores, which `compare` profits from (it holds and sums each distinct shape
once), so the results files are also written varied: each document's counts and score moved by a
seeded random amount, so almost no two documents share counts (hand-made numbers, not stickler's).

Each figure is measured in a fresh process (so one measurement's memory does not count against
the next): the time of the work alone (imports excluded), as the CPU time of its process (what
other load on a shared machine does not inflate; numpy's matrix product may add a second thread)
and as wall time, and the process's own peak resident memory (`VmHWM` of `/proc/self/status`,
which starts afresh at exec; `getrusage`'s `ru_maxrss` would carry the forking parent's peak
over), with its resident memory before the work for reference. Every figure is the median of
`--rounds` (default 3) rounds (`bench.timing.interleaved_results`), the kinds interleaved within
each round so load on a shared machine falls on all of them alike, printed with its range; each
ratio is of medians, with the range of the same round's ratios. Figures:

- floor: `json.loads` of both saved reports (or of every line of both results files), which any
  reader of these files pays;
- compare: `compare_files(old, new)` and everything the command prints (overall, field table,
  movers) with the default 2,000 resamples;
- old: the algorithm this replaced (both reports validated into `StructuredOutputReport`, then
  every interval from a resamples x documents gather), where feasible.

It prints each figure with its ratio to the floor, to the old algorithm, and whether every
interval the command prints equals the old algorithm's to the printed digit (and bit for bit).
Exit code 1 if any interval differs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.timing import (
    QUICK_NOTE,
    QUICK_ROUNDS,
    add_quick,
    interleaved_results,
    least_rounds,
    median,
    ratio_spread,
    spread,
)

TARGET_SECONDS, TARGET_BYTES = 10.0, 1 << 30  # issue 11: 10,000 documents per side in under 10 s and 1 GB
SEED = 11
ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    """The 1, 5 and 15 minute load averages, printed beside the figures of a shared machine."""
    return ", ".join(f"{value:.1f}" for value in os.getloadavg())


# --- data ---------------------------------------------------------------------------------------


def scored_pool() -> tuple[dict, dict, list, list]:
    """The simulated invoices scored by both extractors: two report JSONs and two lists of compact rows."""
    from strands_evals.evaluators import StructuredOutputSimilarity

    from fieldeval.harness.results import rows_from_report
    from fieldeval.harness.scoring import score_outputs_sync
    from walkthroughs import simulated_runs as sim
    from walkthroughs.invoices import Invoice

    invoices = sim.simulated_invoices()
    cases = sim.simulated_cases(invoices)
    reports = [
        score_outputs_sync(cases, sim.extract(extractor, invoices), StructuredOutputSimilarity(Invoice))
        for extractor in (sim.BASELINE, sim.CANDIDATE)
    ]
    dumps = [json.loads(report.model_dump_json()) for report in reports]
    rows = [[row.model_dump() for row in rows_from_report(report)] for report in reports]
    return dumps[0], dumps[1], rows[0], rows[1]


def draws(size: int) -> list[int]:
    """Which pooled document each benchmark document copies: the same for both runs."""
    generator = random.Random(SEED + size)
    return [generator.randrange(60) for _ in range(size)]


def write_report(pool: dict, picks: list[int], path: Path) -> int:
    """A saved report of `len(picks)` documents built from the pooled one; its size in bytes."""
    names = [f"doc-{index:06d}" for index in range(len(picks))]
    report = {
        "overall_score": sum(pool["scores"][pick] for pick in picks) / len(picks),
        "scores": [pool["scores"][pick] for pick in picks],
        "cases": [dict(pool["cases"][pick], name=name) for pick, name in zip(picks, names, strict=True)],
        "test_passes": [pool["test_passes"][pick] for pick in picks],
        "reasons": [pool["reasons"][pick] for pick in picks],
        "detailed_results": [pool["detailed_results"][pick] for pick in picks],
        "diagnoses": [None] * len(picks),
        "recommendations": [None] * len(picks),
    }
    with path.open("w", encoding="utf-8") as file:
        json.dump(report, file, indent=2)
    return path.stat().st_size


def write_results(rows: list, picks: list[int], path: Path, varied: int | None = None) -> int:
    """A compact results file of `len(picks)` documents built from the pooled rows; its size in bytes.

    With `varied` (a seed), each document's true positives per path and its score are moved by a
    seeded random amount, so documents no longer repeat each other's counts.
    """
    from fieldeval.formats.results import ResultsHeader

    generator = random.Random(varied)
    header = ResultsHeader(schema="walkthroughs.invoices:Invoice").model_dump(by_alias=True)
    with path.open("w", encoding="utf-8") as file:
        file.write(json.dumps(header) + "\n")
        for index, pick in enumerate(picks):
            row = dict(rows[pick], name=f"doc-{index:06d}")
            if varied is not None:
                row["score"] = min(1.0, row["score"] * generator.uniform(0.9, 1.0) + generator.uniform(0, 0.1))
                counts = row["counts"].items()
                row["counts"] = {path: dict(each, tp=each["tp"] + generator.randrange(8)) for path, each in counts}
            file.write(json.dumps(row, separators=(",", ":")) + "\n")
    return path.stat().st_size


# --- one measurement, in its own process --------------------------------------------------------


def resident() -> int:
    """This process's resident memory now, in bytes."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_resident() -> int:
    """This process's own peak resident memory (VmHWM), in bytes: the high-water mark of its own address space."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status; this benchmark measures memory on Linux only")


def intervals_of(comparison, gathered: bool) -> dict[str, list[float]]:
    """Every interval the command prints: overall and each field's F1, from the draws or by gathering."""
    targets = ["overall", *(f"{path}.f1" for path in comparison.paths)]
    if not gathered:
        found = {target: comparison.delta(target) for target in targets}
        return {target: [change.estimate, change.low, change.high] for target, change in found.items()}
    import numpy as np

    from fieldeval.compare.bootstrap import interval

    indices = comparison.indices
    found = {}
    for target in targets:
        old, new = comparison.old.value(target, indices), comparison.new.value(target, indices)
        estimate = comparison.new.value(target) - comparison.old.value(target)
        change = interval(np.asarray(old), np.asarray(new), estimate, comparison.confidence)
        found[target] = [change.estimate, change.low, change.high]
    return found


def measure(kind: str, old: str, new: str) -> dict:
    """Run one kind of work on two files and return its figures (called in a child process)."""
    if kind == "floor":
        before = resident()
        start, cpu = time.perf_counter(), time.process_time()
        for path in (old, new):
            with open(path, encoding="utf-8") as file:
                if path.endswith(".jsonl"):
                    for line in file:
                        json.loads(line)
                else:
                    json.loads(file.read())
        seconds, cpu, intervals = time.perf_counter() - start, time.process_time() - cpu, None
    elif kind == "compare":
        import stickler  # noqa: F401 (imported before the clock starts, as every other library is)

        import fieldeval.harness.results  # noqa: F401
        from fieldeval.compare.runs import compare_files
        from fieldeval.flows.compare import text

        before = resident()
        start, cpu = time.perf_counter(), time.process_time()
        comparison = compare_files(old, new)
        text(comparison, [])
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        intervals = intervals_of(comparison, gathered=False)
    else:  # the old algorithm: validate whole reports, then gather every resample
        from fieldeval.compare.runs import compare_runs, read_run
        from fieldeval.harness.reports import load_report

        before = resident()
        start, cpu = time.perf_counter(), time.process_time()
        comparison = compare_runs(read_run(load_report(old), old), read_run(load_report(new), new))
        intervals = intervals_of(comparison, gathered=True)
        comparison.movers(limit=5)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = peak_resident()
    return {"seconds": seconds, "cpu": cpu, "peak": peak, "before": before, "intervals": intervals}


def child(kind: str, old: Path, new: Path) -> dict:
    return measured_in_child("bench.bench_compare", kind, [old, new])


def measured_in_child(module: str, kind: str, paths: list[Path]) -> dict:
    """What `python -m MODULE --measure KIND PATHS...` measured in a fresh process (its last line, JSON)."""
    completed = subprocess.run(
        [sys.executable, "-m", module, "--measure", kind, *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if completed.returncode != 0:
        raise SystemExit(f"the {kind} measurement failed:\n{completed.stderr}")
    return json.loads(completed.stdout.splitlines()[-1])


# --- the run ------------------------------------------------------------------------------------


def mb(count: int) -> str:
    return f"{count / 1e6:,.0f} MB"


def summary(rounds: list[dict]) -> dict:
    """The median of each figure over the rounds and every round's value, with the first round's intervals."""
    found = {"intervals": rounds[0]["intervals"], "rounds": len(rounds)}
    for key in ("seconds", "cpu", "peak", "before"):
        values = [figures[key] for figures in rounds]
        found[key], found[f"{key} each"] = median(values), values
    return found


def row(label: str, figures: dict, floor: dict, old: dict | None) -> str:
    versus_old = ""
    if old is not None:
        versus_old = f"; old/new: CPU {old['cpu'] / figures['cpu']:.1f}x, peak {old['peak'] / figures['peak']:.1f}x"
    peaks = [peak / 1e6 for peak in figures["peak each"]]
    return (
        f"  {label:<8} CPU {spread(figures['cpu each'])} s ({ratio_spread(figures['cpu each'], floor['cpu each'])} "
        f"the floor), wall {spread(figures['seconds each'])} s; peak {spread(peaks, 0)} MB "
        f"({figures['peak'] / floor['peak']:4.2f}x the floor's; {mb(figures['before'])} before the work){versus_old}"
    )


def measured(kinds: list[str], old: Path, new: Path, rounds: int, quick: bool) -> dict[str, dict]:
    """Each kind's figures over `rounds` rounds, the kinds interleaved within each round."""
    runs = {kind: (lambda kind=kind: child(kind, old, new)) for kind in kinds}
    found = interleaved_results(rounds, runs, minimum=least_rounds(quick))
    return {kind: summary(figures) for kind, figures in found.items()}


def same(new: dict, old: dict) -> tuple[bool, bool]:
    """Whether every interval equals the old one to the printed digit (3 decimals), and bit for bit."""
    printed = all(f"{a:.3f}" == f"{b:.3f}" for key in old for a, b in zip(new[key], old[key], strict=True))
    return printed, new == old


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, nargs="*", default=[1000, 10000], help="saved-report sizes")
    parser.add_argument("--results", type=int, nargs="*", default=[100000], help="compact results sizes")
    parser.add_argument("--old-max", type=int, default=1000, help="run the old algorithm up to this size")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are printed (at least 3)")
    parser.add_argument("--measure", nargs=3, metavar=("KIND", "OLD", "NEW"), help=argparse.SUPPRESS)
    add_quick(parser)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return 0

    from importlib.metadata import version

    import numpy
    import stickler  # noqa: F401 (its version is printed)

    print(
        f"python {sys.version.split()[0]}, numpy {numpy.__version__}, stickler-eval {version('stickler-eval')}, "
        f"{os.cpu_count()} CPUs; time of the work alone (CPU of its process, and wall), peak resident memory"
    )
    if args.rounds < 3:
        parser.error("--rounds must be at least 3: every figure is a median with its range")
    if args.quick:
        args.reports, args.results, args.old_max, args.rounds = [50], [200], 50, QUICK_ROUNDS
        print(QUICK_NOTE)
    print("data: simulated (seeded), each document a scored simulated invoice pair; 2,000 resamples, seed 0")
    print(f"each figure: the median of {args.rounds} interleaved rounds (its range); load average {load()}")
    old_pool, new_pool, old_rows, new_rows = scored_pool()
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        for size in [size for size in args.reports if size > 0]:
            picks = draws(size)
            old, new = Path(folder) / f"old-{size}.json", Path(folder) / f"new-{size}.json"
            total = write_report(old_pool, picks, old) + write_report(new_pool, picks, new)
            print(f"\nsaved reports, {size:,} documents per side ({mb(total)} of JSON in all)")
            kinds = ["floor", "compare", *(["old"] if size <= args.old_max else [])]
            figures = measured(kinds, old, new, args.rounds, args.quick)
            floor, compare, previous = figures["floor"], figures["compare"], figures.get("old")
            print(row("floor", floor, floor, None))
            print(row("compare", compare, floor, previous))
            if previous is not None:
                print(row("old", previous, floor, None))
                printed, bitwise = same(compare["intervals"], previous["intervals"])
                failed |= not printed
                print(
                    f"  intervals equal the old algorithm's to the printed digit: {'yes' if printed else 'NO'}"
                    f" (bit for bit: {'yes' if bitwise else 'no'}; {len(compare['intervals'])} intervals)"
                )
            if size == 10000:
                fits = compare["cpu"] < TARGET_SECONDS and compare["peak"] < TARGET_BYTES
                print(f"  target (under 10 s of CPU and 1 GB at 10,000 per side): {'met' if fits else 'NOT met'}")
        for size in [size for size in args.results if size > 0]:
            for varied in (None, SEED):
                picks = draws(size)
                tag = "varied-" if varied is not None else ""
                old, new = Path(folder) / f"old-{tag}{size}.jsonl", Path(folder) / f"new-{tag}{size}.jsonl"
                total = write_results(old_rows, picks, old, varied) + write_results(new_rows, picks, new, varied)
                kind = "varied (almost no two documents share counts)" if varied is not None else "drawn from 60 pairs"
                print(f"\ncompact results files, {size:,} documents per side, {kind} ({mb(total)} of JSON lines)")
                figures = measured(["floor", "compare"], old, new, args.rounds, args.quick)
                floor, compare = figures["floor"], figures["compare"]
                print(row("floor", floor, floor, None))
                print(row("compare", compare, floor, None))
                within = compare["cpu"] <= 2 * floor["cpu"]
                print(f"  compare within 2x the json.loads floor (CPU): {'yes' if within else 'NO'}")
                extra = (compare["peak"] - compare["before"]) / (2 * size)
                print(f"  peak beyond the imports: {extra:,.0f} bytes per document per side")
                print(f"  peak under 1 GB: {'yes' if compare['peak'] < TARGET_BYTES else 'NO'}; load average {load()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
