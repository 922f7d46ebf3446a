"""Benchmark: scoring one process, `--workers 2` and a local Dask cluster side by side, in one run.

    python bench/bench_scale.py                        1, 5, 20 and 50 line items (a few minutes)
    python bench/bench_scale.py --items 5,20 --scale 2 pick the sizes, twice the documents
    python bench/bench_scale.py --compare-documents 100000   stream two results files of that size

Data: the seeded SIMULATED invoices of `helpers.examples.simulated_large` (nothing recorded), with
nested lists of N line items and the simulated extractor's mistakes.

What is printed:

- documents per second for today's one-process harness (`score_outputs`, one `Experiment`), the
  batched path on 1 process, 2 local processes and a local Dask cluster of 2 workers, at each
  line-item count, and the speed-up of 2 processes and of Dask over the harness. Beside them, the
  ceiling: two independent processes each scoring half the run with the harness, no engine in
  between, which is what the machine can give two processes at that moment. Each
  engine is started and warmed (its workers have imported the libraries and scored a batch)
  before the clock starts; the start-up time is printed on its own. Timings are wall-clock, since
  wall-clock is what parallelism buys, so they depend on other load on the machine: engines take
  turns on every workload for `--rounds` rounds, the best of each is kept, and the load average
  before and after is printed beside them.
- the cost per document as items grow (one process), so a run's cost can be estimated.
- peak memory of the driver while scoring to the compact results file (no report kept), for a
  run and a run four times its size: bounded by the batch size, not the run size. And the same
  with the full report kept, which grows with the run.
- peak memory of streaming two results files of `--compare-documents` rows side by side (what
  `compare` does through `iter_results`), against the files' size on disk. The rows are those of
  a scored simulated run repeated under new names.

Exit code 1 if a parallel run's rollups differ from one process's.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import platform
import resource
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from strands_evals.evaluators import StructuredOutputSimilarity

from helpers.examples.simulated_large import SCHEMA, simulated_run
from helpers.harness.results import ResultsHeader, ResultsWriter, iter_results
from helpers.harness.scoring import score_outputs_sync
from helpers.scale.batches import Scorer
from helpers.scale.engine import open_engine
from helpers.scale.run import BATCH_SIZE, score_at_scale  # the batch the score command sends

# Documents per item count, sized so one process takes a few seconds at each.
DOCUMENTS = {1: 2000, 5: 800, 20: 240, 50: 60}
BASELINE = "harness, 1 process"
CEILING = "2 independent halves"
ENGINES = (("batched, 1 process", 1, None), ("2 processes", 2, None), ("Dask local, 2 workers", 2, "local"))


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def timed_run(engine, pairs, batch_size: int = BATCH_SIZE):
    gc.collect()
    start = time.perf_counter()
    run = score_at_scale(pairs, Scorer(SCHEMA), engine=engine, batch_size=batch_size, progress=_Quiet())
    return run, time.perf_counter() - start


class _Quiet:
    def start(self, total, engine):
        pass

    def advance(self, documents, failed=0):
        pass

    def finish(self):
        pass


def baseline(pairs) -> tuple[object, float]:
    """Today's path: the whole run in one `Experiment` on one process (`score_outputs`)."""
    gc.collect()
    evaluator = StructuredOutputSimilarity(Scorer(SCHEMA).model())
    start = time.perf_counter()
    report = score_outputs_sync([case for case, _ in pairs], {case.name: output for case, output in pairs}, evaluator)
    return report, time.perf_counter() - start


def score_slice(items: int, documents: int, start: int, count: int) -> float:
    """Score documents `start..start+count` of a workload with the plain harness; seconds taken (in a pool worker)."""
    pairs = list(simulated_run(documents, items))[start : start + count]
    return baseline(pairs)[1]


def ceiling(pool: ProcessPoolExecutor, items: int, documents: int) -> float:
    """Documents per second of two independent processes, each scoring half the run, no engine between.

    What the machine can give two processes right now: the most any 2-worker engine could reach.
    """
    half = documents // 2
    slices = ((0, half), (half, documents - half))
    futures = [pool.submit(score_slice, items, documents, start, count) for start, count in slices]
    return documents / max(future.result() for future in futures)


def speed(items_list: list[int], scale: float, rounds: int) -> bool:
    print(f"\n== documents per second (wall clock, best of {rounds}), batches of {BATCH_SIZE}; load: {load()}")
    sizes = {items: max(8, int(DOCUMENTS.get(items, 100) * scale)) for items in items_list}
    workloads = {items: list(simulated_run(count, items)) for items, count in sizes.items()}
    best: dict[tuple[int, str], float] = {}
    equal = True
    with ExitStack() as stack:
        pool = stack.enter_context(ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")))
        list(pool.map(score_slice, [2, 2], [8, 8], [0, 4], [4, 4]))  # both processes warm
        engines = {}
        for name, workers, cluster in ENGINES:
            started = time.perf_counter()
            engine = stack.enter_context(open_engine(workers, cluster))
            timed_run(engine, list(simulated_run(engine.slots * 4, 2)), batch_size=2)  # every worker warm
            print(f"   {name}: started and warmed in {time.perf_counter() - started:.1f} s")
            engines[name] = engine
        # Engines take turns on each workload, round after round, so load from others falls on all alike.
        for _ in range(rounds):
            for items, pairs in workloads.items():
                reference, seconds = baseline(pairs)
                best[(items, BASELINE)] = max(best.get((items, BASELINE), 0.0), len(pairs) / seconds)
                best[(items, CEILING)] = max(best.get((items, CEILING), 0.0), ceiling(pool, items, len(pairs)))
                for name, engine in engines.items():
                    run, seconds = timed_run(engine, pairs)
                    best[(items, name)] = max(best.get((items, name), 0.0), len(pairs) / seconds)
                    if run.report.model_dump() != reference.model_dump():
                        print(f"   ROLLUPS DIFFER at {items} items on {name}")
                        equal = False
    columns = [BASELINE, *engines, CEILING]
    print(f"{'items':>5} {'documents':>9} " + " ".join(f"{name:>21}" for name in columns), end="")
    print(f" {'speed-up 2 proc':>15} {'speed-up Dask':>13} {'ceiling':>8} {'ms/doc (1 proc)':>15}")
    for items, pairs in workloads.items():
        single = best[(items, BASELINE)]
        cells = " ".join(f"{best[(items, name)]:>21.1f}" for name in columns)
        double, dask = best[(items, ENGINES[1][0])], best[(items, ENGINES[2][0])]
        top = best[(items, CEILING)] / single
        ratios = f"{double / single:>14.2f}x {dask / single:>12.2f}x {top:>7.2f}x {1000 / single:>15.1f}"
        print(f"{items:>5} {len(pairs):>9} {cells} {ratios}")
    print(f"   load average after: {load()}; rollups equal to one process: {'yes' if equal else 'NO'}")
    return equal


def memory(documents: int, items: int) -> None:
    print(f"\n== peak memory while scoring ({items} items, 2 processes, batches of {BATCH_SIZE})")
    print(f"{'documents':>9} {'driver, compact file only':>26} {'driver, full report kept':>25} {'largest worker':>15}")
    with tempfile.TemporaryDirectory() as folder:
        for count in (documents, documents * 4):
            peaks = []
            # A fresh pool per size: the peak of terminated children only ever grows, so a flat
            # figure across sizes means a worker's memory does not grow with the run.
            with open_engine(2) as engine:
                for keep in (False, True):
                    gc.collect()
                    tracemalloc.start()
                    score_at_scale(
                        simulated_run(count, items),
                        Scorer(SCHEMA),
                        engine=engine,
                        batch_size=BATCH_SIZE,
                        keep_report=keep,
                        results=Path(folder) / "run.jsonl",
                        progress=_Quiet(),
                    )
                    peaks.append(tracemalloc.get_traced_memory()[1])
                    tracemalloc.stop()
            worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"{count:>9} {peaks[0] / 2**20:>23.1f} MB {peaks[1] / 2**20:>22.1f} MB {worker:>12.0f} MB")
    print("   driver: Python allocations (tracemalloc); worker: peak resident set of any worker process")


def streaming(documents: int, items: int) -> None:
    print(f"\n== streaming two results files of {documents:,} documents side by side ({items} items)")
    with tempfile.TemporaryDirectory() as folder:
        seed_path = Path(folder) / "seed.jsonl"
        score_at_scale(
            simulated_run(200, items), Scorer(SCHEMA), keep_report=False, results=seed_path, progress=_Quiet()
        )
        rows = list(iter_results(seed_path))
        paths = []
        for which in ("old", "new"):
            path = Path(folder) / f"{which}.jsonl"
            with ResultsWriter(path, ResultsHeader(schema=SCHEMA)) as writer:
                for index in range(documents):
                    writer.write(rows[index % len(rows)].model_copy(update={"name": f"doc-{index:07d}"}))
            paths.append(path)
        size = sum(path.stat().st_size for path in paths)
        gc.collect()
        tracemalloc.start()
        start = time.perf_counter()
        moved = 0
        for old, new in zip(iter_results(paths[0]), iter_results(paths[1]), strict=True):
            moved += old.score != new.score
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"   files {size / 2**20:.0f} MB on disk; peak memory {peak / 2**20:.1f} MB; "
            f"{2 * documents / seconds:,.0f} rows/s read (under tracemalloc)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="1,5,20,50", help="line-item counts, comma separated")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every document count")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every engine on every workload; best kept")
    parser.add_argument("--memory-documents", type=int, default=400, help="documents of the smaller memory run")
    parser.add_argument("--compare-documents", type=int, default=100_000, help="rows per results file streamed")
    args = parser.parse_args(argv)
    from importlib.metadata import version

    print(
        f"bench_scale: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"stickler-eval {version('stickler-eval')}, strands-agents-evals {version('strands-agents-evals')}, "
        f"dask {version('dask')}; data: SIMULATED invoices (seeded)"
    )
    memory(args.memory_documents, 5)  # first, so the worker peak is of this section's processes only
    equal = speed([int(value) for value in args.items.split(",")], args.scale, args.rounds)
    streaming(args.compare_documents, 5)
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
