"""Benchmark: reading five 100,000-document results files for compare, and the compare command, against json.loads.

    python -m bench.bench_compare_size                 100,000 documents per run, three rounds
    python -m bench.bench_compare_size --size 20000    another size
    python -m bench.bench_compare_size --quick         300 documents, one round (CI)

Data: simulated, generated here from seeds (nothing is stored). The 60 simulated invoices of
`walkthroughs.simulated_runs` are scored once through the harness with both simulated
extractors (`bench.bench_compare.scored_pool`); each document of a run is one of those scored
rows drawn at random (seeded), renamed, with its score and each path's true positives moved by a
seeded random amount, so almost no two documents share counts (the hard case for compare, which
holds each distinct row of counts once). Five runs are drawn (the extractors in turn, a seed
each) and written with the project's own writer (`ResultsWriter`, one `ResultRow` a line), as
`eval-score --results` writes them.

Each figure is measured in a fresh process (`python -m bench.bench_compare_size --measure ...`)
after its imports, so that one measurement's memory does not count against the next: CPU time of
that process (and wall time), and its peak resident memory, `VmHWM` of `/proc/self/status` (which
starts afresh at exec; `getrusage`'s `ru_maxrss` would carry the forking parent's peak over). The
floor is `json.loads` of every line of the same files, in the same rounds; its process imports
what the measured work imports before it starts, so both peaks hold the same libraries and the
memory ratio compares what reading holds. Every figure is the median of `--rounds` interleaved
rounds (`bench.timing.interleaved_results`), printed with its range; each ratio is of medians,
with the range of the same round's ratios. Work measured (`WORK`, one line each):

- read 5: `read_run_file` on each of the five files, all held at once, each after the first
  sharing its name lookup (`names_like`): the library call `eval-compare` reads each run with;
- compare 2: `eval-compare RUN0 RUN1` in process (`fieldeval.commands.compare.main`, its printed
  tables sent to /dev/null), with the default 2,000 resamples;
- compare 5: `eval-compare RUN0 RUN1 RUN2 RUN3 RUN4` the same way: the first run the baseline,
  the other four its candidates, on the same resamples (the issue's target).

Exit code 1 if a measured command exits non-zero.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_compare import load, measured_in_child, peak_resident, resident, scored_pool
from bench.timing import QUICK_NOTE, QUICK_ROUNDS, add_quick, interleaved_results, least_rounds, ratio_spread, spread

ROOT = Path(__file__).resolve().parents[1]
SEED = 45
RUNS = 5
TARGET_TIME, TARGET_MEMORY = 2.5, 2.0  # the bound: within 2.5x the floor's time and twice its memory
# Each piece of work: its label, what it does (`measure`) and which of the runs it reads. The floor
# for it reads the same runs.
WORK = [
    ("read 5", "read", list(range(RUNS))),
    ("compare 2", "command", [0, 1]),
    ("compare 5", "command", list(range(RUNS))),
]


# --- data ---------------------------------------------------------------------------------------


def write_run(rows: list[dict], size: int, seed: int, path: Path) -> int:
    """A results file of `size` documents drawn from the pooled rows and varied (seeded); its size in bytes."""
    from fieldeval.formats.results import ResultRow, ResultsHeader, ResultsWriter

    generator = random.Random(seed)
    with ResultsWriter(path, ResultsHeader(schema="walkthroughs.invoices:Invoice")) as out:
        for index in range(size):
            row = dict(rows[generator.randrange(len(rows))], name=f"doc-{index:06d}")
            row["score"] = min(1.0, row["score"] * generator.uniform(0.9, 1.0) + generator.uniform(0, 0.1))
            counts = row["counts"].items()
            row["counts"] = {key: dict(each, tp=each["tp"] + generator.randrange(8)) for key, each in counts}
            out.write(ResultRow.model_validate(row))
    return path.stat().st_size


# --- one measurement, in its own process --------------------------------------------------------


def imports() -> None:
    """What the measured work imports, loaded before any clock starts (by the floor too)."""
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import stickler  # noqa: F401

    import fieldeval.commands.compare  # noqa: F401
    import fieldeval.compare.runs  # noqa: F401
    import fieldeval.flows.compare  # noqa: F401


def measure(kind: str, paths: list[str]) -> dict:
    """Run one kind of work on the files and return its figures (called in a child process)."""
    imports()
    code = 0
    before = resident()
    start, cpu = time.perf_counter(), time.process_time()
    if kind == "floor":
        for path in paths:
            with open(path, encoding="utf-8") as file:
                for line in file:
                    json.loads(line)
    elif kind == "read":
        from fieldeval.compare.reading import read_run_file

        held = [read_run_file(paths[0])]
        held += [read_run_file(path, names_like=held[0]) for path in paths[1:]]
        assert all(len(run.documents) for run in held)
    else:  # the command, its output dropped
        from fieldeval.commands.compare import main

        with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
            code = main(paths)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"seconds": seconds, "cpu": cpu, "peak": peak_resident(), "before": before, "code": code}


def child(kind: str, paths: list[Path]) -> dict:
    return measured_in_child("bench.bench_compare_size", kind, paths)


# --- the run ------------------------------------------------------------------------------------


def row(label: str, found: list[dict], floor: list[dict]) -> str:
    cpu, wall = [each["cpu"] for each in found], [each["seconds"] for each in found]
    peaks, floor_peaks = [each["peak"] for each in found], [each["peak"] for each in floor]
    return (
        f"  {label:<16} CPU {spread(cpu)} s ({ratio_spread(cpu, [each['cpu'] for each in floor])} the floor's), "
        f"wall {spread(wall)} s; peak {spread([peak / 1e6 for peak in peaks], 0)} MB "
        f"({ratio_spread(peaks, floor_peaks)} the floor's)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="documents per run (default 100,000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are printed (at least 3)")
    parser.add_argument("--measure", nargs="+", metavar="KIND_AND_PATHS", help=argparse.SUPPRESS)
    add_quick(parser)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], args.measure[1:])))
        return 0
    if args.quick:
        args.size, args.rounds = 300, QUICK_ROUNDS
        print(QUICK_NOTE)
    if args.size < 1:
        parser.error("--size must be at least 1")

    import numpy

    print(
        f"python {sys.version.split()[0]}, numpy {numpy.__version__}, {os.cpu_count()} CPUs; the work alone "
        "(imports excluded) in CPU and wall seconds of a fresh process, its peak resident memory (VmHWM)"
    )
    print(f"each figure: the median of {args.rounds} interleaved rounds (its range); load average {load()}")
    pool = scored_pool()[2:]  # the compact rows of both extractors
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / f"run-{index}.results.jsonl" for index in range(RUNS)]
        total = sum(write_run(pool[index % 2], args.size, SEED + index, path) for index, path in enumerate(paths))
        print(f"\n{RUNS} results files of {args.size:,} documents each, varied counts ({total / 1e6:,.0f} MB in all)")
        runs = {}
        for label, kind, which in WORK:
            files = [paths[index] for index in which]
            runs[f"{label} floor"] = lambda files=files: child("floor", files)
            runs[label] = lambda kind=kind, files=files: child(kind, files)
        found = interleaved_results(args.rounds, runs, minimum=least_rounds(args.quick))
        for label, _, which in WORK:
            work, floor = found[label], found[f"{label} floor"]
            failed |= any(each["code"] != 0 for each in work)
            before = min(each["before"] for each in work) / 1e6
            print(f"{label} (runs {', '.join(map(str, which))}; {before:,.0f} MB resident after the imports)")
            print(row("json.loads floor", floor, floor))
            print(row(label, work, floor))
            cpu = numpy.median([each["cpu"] for each in work]) / numpy.median([each["cpu"] for each in floor])
            peak = numpy.median([each["peak"] for each in work]) / numpy.median([each["peak"] for each in floor])
            print(
                f"  within {TARGET_TIME}x the floor's CPU time: {'yes' if cpu <= TARGET_TIME else 'NO'}; "
                f"within {TARGET_MEMORY:g}x its peak memory: {'yes' if peak <= TARGET_MEMORY else 'NO'}"
            )
    print(f"load average {load()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
