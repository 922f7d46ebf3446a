"""Fan a run out in batches and merge it back into what one process builds.

    run = score_at_scale(pairs, Scorer("my_schema:Invoice"), workers=2)
    run.report.metrics()     # the same StructuredOutputReport one process builds
    run.summary.pass_rate    # streamed rollups, also for runs too large to hold as a report

Batches are scored by the one-process harness in the workers (`fieldeval.scale.batches`) and come
back in any order; the driver merges them in case order, so the report is
`StructuredOutputReport.flatten` of the batch reports: the lists `Experiment` fills, in the same
order, and `overall_score` by the same `calculate_overall_score`. `metrics()` then runs stickler's
`aggregate_from_comparisons` over the same comparisons in the same order, so every rollup is
equal to the one-process run, not approximately.

Workers never lose to one process: a run whose estimated time on the workers (`worth_fanning_out`:
scoring estimated from each document's list items and item pairs, plus the CPU cost of sending
it to a worker and its result back, shared over the cores, plus the engine's start-up) is not
`MARGIN` times shorter than in one process is scored in this process (`fan_out="auto"`, the
default; `"always"` fans out whatever the size). A run kept here is scored straight from the
driver's instances (`_score_here`): nothing is packed to JSON and rebuilt, as the workers' batches
are. The rule decides from the run's size, before anything is scored, rather than scoring in the
driver while the workers start: once a run is big enough to fan out, every batch goes to a worker,
so a document that kills or hangs its scorer costs its batch, never the driver; and on a machine
of two cores, a driver that scores while two workers start (each importing the libraries, which is
CPU work) only takes cores from them.

For runs too large to hold as one report, `keep_report=False` brings back only each document's
compact row (score, verdict, per-field counts), written to the results file as batches arrive;
at most `2 x workers` batches are in flight or waiting, so memory is bounded by the batch size,
not the run size.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator, Sequence, Sized
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from strands_evals import Case
from strands_evals.evaluators import StructuredOutputReport

from fieldeval.formats.results import Counts, ResultRow, ResultsHeader, ResultsWriter
from fieldeval.harness.results import add_counts
from fieldeval.scale.batches import Batch, BatchResult, Scorer, failed_batch, score_batch, score_cases
from fieldeval.scale.engine import BATCH_TIMEOUT, Engine, EngineError, cores, open_engine, require_dask
from fieldeval.scale.pool import RemoteError, start_method
from fieldeval.scale.progress import FinalLine, Progress

BATCH_SIZE = 32
IN_FLIGHT_PER_SLOT = 2
_TICK = 0.5  # how often a waiting driver checks deadlines and the engine

# The size rule, measured with `bench/bench_scale.py`'s documents (the bundled invoices, stickler
# sped up) on a 2-core machine. Scoring one document costs about DOCUMENT_SECONDS, plus ITEM_SECONDS
# per list item on either side, plus PAIR_SECONDS per pair of list items its lists compare (the
# Hungarian matching scores every pair). Sending it to a worker and its result back costs about
# SEND_SECONDS plus SEND_ITEM_SECONDS per list item (packing it, rebuilding it, pickling the
# result both ways, and what a forked worker pays touching pages it shares with the driver): CPU
# time on the same cores, read from the extra CPU seconds `--fan-out always` took in the
# benchmark. Starting the engine costs START_SECONDS: forking the processes
# (`fieldeval.scale.pool.start_method`), or a forkserver importing the libraries once before it forks
# them (about as long as spawned workers importing them side by side), or spawning them, or
# starting a local Dask cluster.
DOCUMENT_SECONDS = 0.0005
ITEM_SECONDS = 0.00018
PAIR_SECONDS = 0.000015
SEND_SECONDS = 0.00045
SEND_ITEM_SECONDS = 0.000025
START_SECONDS = {"fork": 0.3, "forkserver": 2.0, "spawn": 2.0, "local": 3.0}
MARGIN = 1.5  # the workers must be estimated this much faster: the cores are often shared


class StalledError(EngineError):
    """The engine stopped answering while batches were in flight; the message names it and the batches.

    An `EngineError`, so the score command reports it as bad input (exit 2), nothing written.
    """


def estimated_seconds(pairs: Iterable[tuple[Case, Any]]) -> tuple[float, float]:
    """The rough CPU seconds of scoring `pairs` in one process, and of sending them to workers and back."""
    scoring = sending = 0.0
    for case, output in pairs:
        items, pairs_compared = _list_sizes(case.expected_output, output)
        scoring += DOCUMENT_SECONDS + ITEM_SECONDS * items + PAIR_SECONDS * pairs_compared
        sending += SEND_SECONDS + SEND_ITEM_SECONDS * items
    return scoring, sending


def _list_sizes(expected: Any, actual: Any) -> tuple[int, int]:
    """The top-level list items of two documents (both sides), and the item pairs their matching scores."""
    if not (isinstance(expected, BaseModel) and isinstance(actual, BaseModel)):
        return 0, 0
    items = pairs = 0
    for name in type(expected).model_fields:
        mine, theirs = getattr(expected, name, None), getattr(actual, name, None)
        if isinstance(mine, list) and isinstance(theirs, list):
            items += len(mine) + len(theirs)
            pairs += len(mine) * len(theirs)
    return items, pairs


def worth_fanning_out(pairs: Sequence[tuple[Case, Any]], workers: int, cluster: str | None) -> bool:
    """Whether `workers` would finish `pairs` `MARGIN` times sooner than this process, start-up included.

    On the workers, the scoring and the sending share the cores (at most `workers` of them)
    after the engine has started.
    """
    if cluster is not None and cluster != "local":
        return True  # a running cluster has already started
    if workers < 2:
        return False
    start = START_SECONDS["local" if cluster == "local" else start_method()]
    scoring, sending = estimated_seconds(pairs)
    fanned = start + (scoring + sending) / min(workers, cores())
    return scoring > MARGIN * fanned


def kept_here(
    pairs: Iterable[tuple[Case, Any]], workers: int, cluster: str | None, fan_out: str = "auto"
) -> str | None:
    """The engine name to report when a run is scored in this process, or None when it fans out."""
    if cluster is None and workers <= 1:
        return "1 process"
    if fan_out == "auto" and isinstance(pairs, Sequence) and not worth_fanning_out(pairs, workers, cluster):
        return f"1 process (too small a run for {workers} workers to gain)"
    return None


@dataclass
class Summary:
    """The run's rollups, accumulated document by document in case order.

    `overall_score` is the mean of the applicable scores summed in case order, as
    `calculate_overall_score` sums them, so it equals the report's to the last bit.
    """

    documents: int = 0
    passed: int = 0
    applicable: int = 0
    score_sum: float = 0.0
    overall: Counts = Counts()
    counts: dict[str, Counts] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # of the failed cases

    def add_totals(self, overall: Counts, counts: dict[str, Counts]) -> None:
        """Add a batch's counts, for rows that carry none (see `fieldeval.scale.batches.BatchResult`)."""
        self.overall = self.overall + overall
        add_counts(self.counts, counts)

    def add(self, row: ResultRow) -> None:
        self.documents += 1
        self.passed += row.test_pass
        if row.status != "not_applicable":
            self.applicable += 1
            self.score_sum += row.score
        self.overall = self.overall + row.overall
        add_counts(self.counts, row.counts)
        if row.status == "failed":
            self.failed.append(row.name)
            self.reasons[row.name] = row.reason
        elif row.status == "unreadable":
            self.unreadable.append(row.name)

    @property
    def overall_score(self) -> float:
        return self.score_sum / self.applicable if self.applicable else 0.0

    @property
    def pass_rate(self) -> float:
        return self.passed / self.documents if self.documents else 0.0


@dataclass
class ScaleRun:
    """A scored run: the full report when kept, the streamed summary always, and where it ran."""

    summary: Summary
    engine: str
    report: StructuredOutputReport | None = None
    results: Path | None = None
    leaf_diffs: list[dict[str, Any]] | None = None  # with the report, if the scorer asked: as data, in case order


def batches(pairs: Iterable[tuple[Case, Any]], scorer: Scorer, size: int = BATCH_SIZE) -> Iterator[Batch]:
    """Consecutive `(case, output)` pairs in batches of `size`, read lazily from `pairs`."""
    if size < 1:
        raise ValueError(f"batch size {size}: give a whole number of at least 1")
    schema = scorer.model()
    batch = Batch(0)
    for case, output in pairs:
        batch.add(case, output, schema)
        if len(batch) == size:
            yield batch
            batch = Batch(batch.index + 1)
    if len(batch):
        yield batch


def score_at_scale(
    pairs: Iterable[tuple[Case, Any]],
    scorer: Scorer,
    *,
    workers: int = 1,
    cluster: str | None = None,
    batch_size: int = BATCH_SIZE,
    keep_report: bool = True,
    results: Path | str | None = None,
    progress: Progress | None = None,
    total: int | None = None,
    engine: Engine | None = None,
    batch_timeout: float = BATCH_TIMEOUT,
    fan_out: str = "auto",
    run_info: dict[str, Any] | None = None,
) -> ScaleRun:
    """Score `(case, output)` pairs on `workers` processes or a Dask cluster, merged in case order.

    Args:
        pairs: The documents, as `(Case, output)`; read lazily, so a generator streams.
        scorer: The schema (`module:Class`) and threshold the workers rebuild the evaluator from.
        workers: Local processes (`1`: this process), or Dask workers with `cluster="local"`.
        cluster: `None`, `"local"`, or a Dask scheduler address; see `fieldeval.scale.engine`.
        batch_size: Documents per batch: the unit of work, of failure and of memory.
        keep_report: Bring back each batch's full report and build the run's `StructuredOutputReport`.
        results: Write the compact per-document results file here as batches arrive.
        progress: Where progress goes (default: a final line only).
        total: The number of documents, for the bar, when `pairs` cannot say.
        engine: An engine already open (`fieldeval.scale.engine.open_engine`), to score several runs
            on one cluster; `workers` and `cluster` are then not used.
        batch_timeout: Seconds a batch may take; past it the batch is scored 0 with the reason
            (a local worker is stopped and replaced; a Dask task is cancelled).
        fan_out: `"auto"` scores a run too small to gain from the workers in this process;
            `"always"` uses them whatever the size.

    Returns:
        The summary, the report when `keep_report`, and the results path.
    """
    progress = progress or FinalLine()
    total = total if total is not None else (len(pairs) if isinstance(pairs, Sized) else None)
    summary = Summary()
    reports: list[StructuredOutputReport] = []
    leaf_diffs: list[dict[str, Any]] = []
    header = ResultsHeader(schema=scorer.schema, match_threshold=scorer.match_threshold, failures=True, run=run_info)
    writer = ResultsWriter(results, header) if results is not None else None

    def merge(result: BatchResult) -> None:
        failed_before = len(summary.failed)
        for row in result.rows:
            summary.add(row)
            if writer is not None:
                writer.write(row)
        if result.totals is not None:
            summary.add_totals(*result.totals)
        if result.report is not None:
            reports.append(result.report)
            leaf_diffs.extend(result.leaf_diffs or ())
        progress.advance(len(result.rows), len(summary.failed) - failed_before)

    if engine is None and cluster is not None:
        require_dask()
    here = kept_here(pairs, workers, cluster, fan_out) if engine is None else None
    failures = writer is not None
    with writer if writer is not None else nullcontext():
        if here is not None:  # no engine: scored in this thread, nothing packed
            name = here
            progress.start(total, name)
            try:
                _score_here(pairs, scorer, batch_size, keep_report, merge, failures)
            finally:
                progress.finish()
        else:
            with nullcontext(engine) if engine is not None else open_engine(workers, cluster, batch_timeout) as opened:
                name = opened.name
                progress.start(total, name)
                try:
                    work = batches(pairs, scorer, batch_size)
                    _fan_out(opened, work, scorer, keep_report, merge, batch_timeout, failures=failures)
                finally:
                    progress.finish()
    report = StructuredOutputReport.flatten(reports) if keep_report else None
    return ScaleRun(
        summary,
        name,
        report,
        Path(results) if results is not None else None,
        leaf_diffs if keep_report and scorer.leaf_diffs else None,
    )


def _score_here(
    pairs: Iterable[tuple[Case, Any]], scorer: Scorer, size: int, keep_report: bool, merge, failures: bool
) -> None:
    """Score `pairs` in this thread, `size` at a time, straight from the driver's instances.

    The batches a worker gets travel as JSON and are rebuilt (`fieldeval.scale.batches.Batch`);
    here nothing travels, so nothing is packed: each chunk goes to `score_cases` as it is.
    """
    if size < 1:
        raise ValueError(f"batch size {size}: give a whole number of at least 1")
    items = iter(pairs)
    for index in itertools.count():
        chunk = list(itertools.islice(items, size))
        if not chunk:
            return
        cases = [case for case, _ in chunk]
        try:
            result = score_cases(
                scorer, index, cases, {case.name: output for case, output in chunk}, keep_report, failures
            )
        except Exception as exc:  # named case by case, as a batch that failed in a worker
            batch = Batch(index)
            for case, output in chunk:
                batch.add(case, output, scorer.model())
            result = failed_batch(batch, scorer, _describe(exc, batch), keep_report)
        merge(result)


def _fan_out(
    engine: Engine,
    work: Iterator[Batch],
    scorer: Scorer,
    keep_report: bool,
    merge,
    batch_timeout: float,
    failures: bool = True,
) -> None:
    """Keep up to two batches per slot in flight or waiting, and merge results strictly in batch order.

    Rows carry their failures by kind only with `failures` (for the results file; see `score_batch`).

    Every wait is bounded. A local worker pool stops a batch's worker itself at `batch_timeout`
    after the worker took it. On Dask, where a task cannot be stopped, a batch still unfinished
    `IN_FLIGHT_PER_SLOT` x `batch_timeout` after it was handed over (it may wait behind another,
    and a new worker imports the libraries first) is scored 0 with the reason and the run goes on.
    An engine that reports a problem (a lost Dask scheduler) ends the run with `StalledError`.
    """
    pending: dict[Future, tuple[Batch, float]] = {}
    ready: dict[int, BatchResult] = {}
    window = engine.slots * IN_FLIGHT_PER_SLOT
    next_index = 0
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) + len(ready) < window:
                batch = next(work, None)
                if batch is None:
                    exhausted = True
                    break
                deadline = time.monotonic() + batch_timeout * IN_FLIGHT_PER_SLOT
                pending[engine.executor.submit(score_batch, scorer, batch, keep_report, failures)] = (batch, deadline)
            if not pending:
                break
            done, _ = wait(pending, timeout=_TICK, return_when=FIRST_COMPLETED)
            for future in done:
                batch, _ = pending.pop(future)
                try:
                    ready[batch.index] = future.result()
                except Exception as exc:  # the worker's error, reported by case name, not as a traceback
                    ready[batch.index] = failed_batch(batch, scorer, _describe(exc, batch), keep_report)
            if not engine.bounds_batches:
                _expire(pending, ready, scorer, keep_report, batch_timeout)
            problem = engine.problem()
            if problem is not None:
                waiting = ", ".join(str(batch.index) for batch, _ in sorted(pending.values(), key=lambda b: b[0].index))
                raise StalledError(f"{problem} (batches {waiting} in flight)")
            while next_index in ready:
                merge(ready.pop(next_index))
                next_index += 1
    finally:
        for future in pending:
            future.cancel()


def _expire(pending: dict, ready: dict, scorer: Scorer, keep_report: bool, batch_timeout: float) -> None:
    """Score 0 every batch in flight past its deadline, and stop waiting for it."""
    now = time.monotonic()
    for future, (batch, deadline) in list(pending.items()):
        if now > deadline:
            future.cancel()
            del pending[future]
            late = TimeoutError(f"no result within {batch_timeout * IN_FLIGHT_PER_SLOT:g} s of being handed over")
            ready[batch.index] = failed_batch(batch, scorer, _describe(late, batch), keep_report)


def _describe(exc: BaseException, batch: Batch) -> str:
    names = batch.names
    span = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else "no message"
    kind = exc.kind if isinstance(exc, RemoteError) else type(exc).__name__
    return f"batch {batch.index} ({span}, {len(names)} cases) failed in its worker: {kind}: {message}"
