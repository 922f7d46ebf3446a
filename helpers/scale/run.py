"""Fan a run out in batches and merge it back into what one process builds.

    run = score_at_scale(pairs, Scorer("helpers.examples.invoices:Invoice"), workers=2)
    run.report.metrics()     # the same StructuredOutputReport one process builds
    run.summary.pass_rate    # streamed rollups, also for runs too large to hold as a report

Batches are scored by the one-process harness in the workers (`helpers.scale.batches`) and come
back in any order; the driver merges them in case order, so the report is
`StructuredOutputReport.flatten` of the batch reports: the lists `Experiment` fills, in the same
order, and `overall_score` by the same `calculate_overall_score`. `metrics()` then runs stickler's
`aggregate_from_comparisons` over the same comparisons in the same order, so every rollup is
equal to the one-process run, not approximately.

For runs too large to hold as one report, `keep_report=False` brings back only each document's
compact row (score, verdict, per-field counts), written to the results file as batches arrive;
at most `2 x workers` batches are in flight or waiting, so memory is bounded by the batch size,
not the run size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strands_evals import Case
from strands_evals.evaluators import StructuredOutputReport

from helpers.harness.results import Counts, ResultRow, ResultsHeader, ResultsWriter, add_counts
from helpers.scale.batches import Batch, BatchResult, Scorer, failed_batch, score_batch
from helpers.scale.engine import Engine, EngineError, open_engine
from helpers.scale.progress import FinalLine, Progress

BATCH_SIZE = 32
IN_FLIGHT_PER_SLOT = 2
# How long the driver waits for any batch in flight to finish before it gives up on the engine.
# A batch of 32 documents with 50 line items takes seconds; minutes without one means a stuck worker.
STALL_SECONDS = 300.0


class StalledError(EngineError):
    """No batch in flight finished within `STALL_SECONDS`; the message names the engine and the batches.

    An `EngineError`, so the score command reports it as bad input (exit 2), nothing written.
    """


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
) -> ScaleRun:
    """Score `(case, output)` pairs on `workers` processes or a Dask cluster, merged in case order.

    Args:
        pairs: The documents, as `(Case, output)`; read lazily, so a generator streams.
        scorer: The schema (`module:Class`) and threshold the workers rebuild the evaluator from.
        workers: Local processes (`1`: this process), or Dask workers with `cluster="local"`.
        cluster: `None`, `"local"`, or a Dask scheduler address; see `helpers.scale.engine`.
        batch_size: Documents per batch: the unit of work, of failure and of memory.
        keep_report: Bring back each batch's full report and build the run's `StructuredOutputReport`.
        results: Write the compact per-document results file here as batches arrive.
        progress: Where progress goes (default: a final line only).
        total: The number of documents, for the bar, when `pairs` cannot say.
        engine: An engine already open (`helpers.scale.engine.open_engine`), to score several runs
            on one cluster; `workers` and `cluster` are then not used.

    Returns:
        The summary, the report when `keep_report`, and the results path.
    """
    progress = progress or FinalLine()
    total = total if total is not None else (len(pairs) if hasattr(pairs, "__len__") else None)
    summary = Summary()
    reports: list[StructuredOutputReport] = []
    header = ResultsHeader(schema=scorer.schema, match_threshold=scorer.match_threshold, failures=True)
    writer = ResultsWriter(results, header) if results is not None else None

    def merge(result: BatchResult) -> None:
        failed_before = len(summary.failed)
        for row in result.rows:
            summary.add(row)
            if writer is not None:
                writer.write(row)
        if result.report is not None:
            reports.append(result.report)
        progress.advance(len(result.rows), len(summary.failed) - failed_before)

    opened = nullcontext(engine) if engine is not None else open_engine(workers, cluster)
    with opened as engine, writer if writer is not None else nullcontext():
        progress.start(total, engine.name)
        try:
            _fan_out(
                engine.executor,
                batches(pairs, scorer, batch_size),
                scorer,
                keep_report,
                engine.slots * IN_FLIGHT_PER_SLOT,
                merge,
                stall=f"on {engine.name}",
            )
        finally:
            progress.finish()
    report = StructuredOutputReport.flatten(reports) if keep_report else None
    return ScaleRun(summary, engine.name, report, Path(results) if results is not None else None)


def _fan_out(
    executor, work: Iterator[Batch], scorer: Scorer, keep_report: bool, window: int, merge, stall: str = ""
) -> None:
    """Keep up to `window` batches in flight or waiting, and merge results strictly in batch order.

    Every wait is bounded: when no batch in flight finishes within `STALL_SECONDS`, the run stops
    with `StalledError` instead of waiting on a worker that will never answer.
    """
    pending: dict[Future, Batch] = {}
    ready: dict[int, BatchResult] = {}
    next_index = 0
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) + len(ready) < window:
                batch = next(work, None)
                if batch is None:
                    exhausted = True
                    break
                pending[executor.submit(score_batch, scorer, batch, keep_report)] = batch
            if not pending:
                break
            done, _ = wait(pending, timeout=STALL_SECONDS, return_when=FIRST_COMPLETED)
            if not done:
                waiting = ", ".join(str(batch.index) for batch in sorted(pending.values(), key=lambda b: b.index))
                raise StalledError(
                    f"no batch finished within {STALL_SECONDS:g} s {stall} (batches {waiting} in flight); "
                    "a worker may be stuck or gone: check the workers, or score with fewer --workers"
                )
            for future in done:
                batch = pending.pop(future)
                try:
                    ready[batch.index] = future.result()
                except Exception as exc:  # the worker's error, reported by case name, not as a traceback
                    ready[batch.index] = failed_batch(batch, scorer, _describe(exc, batch), keep_report)
            while next_index in ready:
                merge(ready.pop(next_index))
                next_index += 1
    finally:
        for future in pending:
            future.cancel()


def _describe(exc: BaseException, batch: Batch) -> str:
    names = batch.names
    span = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else "no message"
    return f"batch {batch.index} ({span}, {len(names)} cases) failed in its worker: {type(exc).__name__}: {message}"
