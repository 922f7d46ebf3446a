"""Rows of the compact results file (`fieldeval.formats.results`), built from a scored report.

A saved `StructuredOutputReport` keeps every case's input, both outputs and stickler's whole raw
comparison, which is what makes it complete and also what makes 10,000 documents weigh 127 MB.
For a large run, each document's contribution to the rollups is a handful of numbers: its score,
its verdict, and its confusion counts per field path. A results file keeps only those, written as
the run goes, so a run of any size is scored, and later compared, in memory bounded by one batch.

`counts` are built by stickler's own aggregation (`aggregate_from_comparisons`) on the document's
comparison, so summing `counts` over every document of a run gives the counts of
`report.metrics().field_metrics`, path by path. `failures` are the document's misses by kind with
list indices folded (`fieldeval.attribution`): what `counts` cannot say, such as which leaves pulled
a list item under the match threshold.

    with ResultsWriter("run.results.jsonl", ResultsHeader(schema="my_schema:Invoice")) as out:
        for row in rows_from_report(report):
            out.write(row)
    for row in iter_results("run.results.jsonl"):
        ...
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from stickler import aggregate_from_comparisons

from fieldeval.attribution.leaves import OUTPUT_PATH, UNREADABLE, counted_failures
from fieldeval.formats.names import case_name
from fieldeval.formats.results import COUNTS, MARKER, Counts, ResultRow, iter_results

if TYPE_CHECKING:  # importing strands_evals costs seconds; readers of a results file never need it
    from pathlib import Path

    from strands_evals.evaluators import StructuredOutputReport


UNREADABLE_FAILURES = {OUTPUT_PATH: {UNREADABLE: 1}}


# --- building rows -----------------------------------------------------------------------------


def _counts_of(metrics: Mapping[str, Any]) -> Counts:
    return Counts(**{key: int(metrics.get(key, 0)) for key in COUNTS})


def _aggregate(comparison: Mapping[str, Any]) -> tuple[Counts, dict[str, Counts]]:
    """One document's overall counts and its counts per dotted field path (sorted), by stickler's aggregation."""
    return _aggregate_all([dict(comparison)])


def _aggregate_all(comparisons: list[dict[str, Any]]) -> tuple[Counts, dict[str, Counts]]:
    evaluation = aggregate_from_comparisons(comparisons)
    paths = {path: _counts_of(metrics) for path, metrics in sorted(evaluation.field_metrics.items())}
    return _counts_of(evaluation.metrics), paths


def document_counts(comparison: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """One document's confusion counts per dotted field path, by stickler's own aggregation.

    `comparison` is the raw comparison `StructuredOutputSimilarity` stores on its row
    (`metadata["comparison"]`). Every path carries all six counts, zero when absent.
    """
    return {path: counts.model_dump() for path, counts in _aggregate(comparison)[1].items()}


def totals(comparisons: Iterable[Mapping[str, Any]]) -> tuple[Counts, dict[str, Counts]]:
    """The overall and per-path counts of many documents' comparisons, in one stickler aggregation.

    Equal to summing each document's counts (stickler's aggregation adds counts), at a fraction of
    the cost: one aggregation per batch instead of one per document, which at one line item a
    document was about a fifth of the scoring time.
    """
    return _aggregate_all([dict(comparison) for comparison in comparisons])


def scored_comparisons(report: StructuredOutputReport) -> Iterator[Mapping[str, Any]]:
    """The raw comparison of every case the evaluator scored, in case order."""
    for outputs in report.detailed_results:
        for output in outputs:
            detail = output.metadata or {}
            if detail.get("evaluated_by") == MARKER:
                yield detail["comparison"]
                break


def row_from_case(
    name: str,
    score: float,
    test_pass: bool,
    reason: str,
    outputs: Iterable[Any],
    failures: Any = None,
    counts: bool = True,
) -> ResultRow:
    """The row of one report case, from its score, verdict, reason and its evaluator rows.

    A case whose rows carry the evaluator's marker is `scored`; an output the evaluator could not
    read is `unreadable`; a case with no rows at all failed before scoring (the reason says why);
    a row without a verdict on offer (no ground truth) is `not_applicable`. `failures`, when given,
    is called with a scored case's counts and its comparison's `field_scores`, and returns its
    failures by kind. Without `counts` a
    scored row carries no counts (the caller sums them per batch with `totals`).
    """
    outputs = list(outputs)
    base = {"name": name, "score": float(score), "test_pass": bool(test_pass), "reason": reason or ""}
    for output in outputs:
        detail = output.metadata or {}
        if detail.get("evaluated_by") == MARKER:
            scored = {
                **base,
                "status": "scored",
                **{key: detail.get(key) for key in ("precision", "recall", "f1")},
                "field_scores": dict(detail.get("field_scores", {})),
            }
            if not counts:
                return ResultRow(**scored)
            overall, paths = _aggregate(detail["comparison"])
            failed = failures(paths, detail["comparison"].get("field_scores")) if failures is not None else {}
            return ResultRow(**scored, overall=overall, counts=paths, failures=failed)
        if detail.get("error") == "unreadable":
            return ResultRow(**base, status="unreadable", failures=UNREADABLE_FAILURES if failures else {})
    if not outputs:  # as `failed_cases` finds them
        return ResultRow(**base, status="failed")
    return ResultRow(**base, status="not_applicable")


def report_cases(report: StructuredOutputReport) -> Iterator[tuple[int, Mapping[str, Any], str, list[Any]]]:
    """Each case of a report with its position, reason and evaluator rows (a case that failed
    before scoring has none, and may have no reason)."""
    for index, case in enumerate(report.cases):
        reason = report.reasons[index] if index < len(report.reasons) else ""
        yield index, case, reason, report.detailed_results[index] if index < len(report.detailed_results) else []


def failed_cases(report: StructuredOutputReport) -> list[tuple[str, str]]:
    """`(name, reason)` of every case that failed before scoring: no evaluator rows (`row_from_case`'s "failed")."""
    return [(case_name(case, index), reason) for index, case, reason, outputs in report_cases(report) if not outputs]


def rows_from_report(report: StructuredOutputReport, spec: Any = None, counts: bool = True) -> Iterator[ResultRow]:
    """The rows of every case of a one-evaluator report, in case order.

    With `spec` (`stickler.eval_for(Schema, match_threshold=...)`, the evaluator's settings), each
    row carries its failures by kind; write the file with `ResultsHeader(failures=True)` then.
    Without `counts` the rows carry no counts (see `row_from_case`).
    """
    for index, case, reason, outputs in report_cases(report):

        def failures(
            counts: Mapping[str, Counts], scores: Mapping[str, float] | None, case: Mapping[str, Any] = case
        ) -> dict[str, dict[str, int]]:
            return counted_failures(spec, counts, case["expected_output"], case.get("actual_output"), scores)

        yield row_from_case(
            case_name(case, index),
            report.scores[index],
            report.test_passes[index],
            reason,
            outputs,
            failures if spec is not None else None,
            counts,
        )


def add_counts(totals: dict[str, Counts], counts: Mapping[str, Counts]) -> None:
    """Add one document's per-path counts into `totals`, in place; a new path keeps first-seen order."""
    for path, value in counts.items():
        totals[path] = totals[path] + value if path in totals else value


def sum_counts(rows: Iterable[ResultRow]) -> dict[str, Counts]:
    """Per-path counts summed over `rows`: on a whole run, the counts of `report.metrics()`."""
    totals: dict[str, Counts] = {}
    for row in rows:
        add_counts(totals, row.counts)
    return dict(sorted(totals.items()))


def results_frame(path: Path | str) -> Any:
    """The rows as a pandas DataFrame, one row per document, counts as `path.count` columns.

    For runs that fit in memory; `iter_results` streams the ones that do not.
    """
    import pandas as pd

    records = []
    for row in iter_results(path):
        record = row.model_dump(exclude={"counts", "field_scores", "overall", "failures"})
        record.update({f"overall.{key}": getattr(row.overall, key) for key in COUNTS})
        for field, counts in row.counts.items():
            record.update({f"{field}.{key}": getattr(counts, key) for key in COUNTS})
        records.append(record)
    return pd.DataFrame.from_records(records)
