"""A run's failures by kind: per field path (list indices folded), how many of each miss, and where.

The input is one `{field path: {kind: count}}` map per document, from `leaves.document_diff` (a
report in memory or saved) or from the compact results file, which stores it per row. The output
is a table a reader sorts: which field fails how often, in which documents; and, for two runs over
the same documents, what got worse where.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from fieldeval.attribution.leaves import KINDS, DocumentDiff, document_diff, failures_of, unreadable
from fieldeval.formats.names import case_name

if TYPE_CHECKING:  # the tables need pandas; the diffs a scale-out worker stores do not
    import pandas as pd

Failures = Mapping[str, Mapping[str, int]]  # one document: {field path: {kind: count}}
SHOWN_DOCUMENTS = 5  # names listed per row; the count says how many there are in all


def _names(names: list[str]) -> str:
    extra = len(names) - SHOWN_DOCUMENTS
    return ", ".join(names[:SHOWN_DOCUMENTS]) + (f" (+{extra} more)" if extra > 0 else "")


def failures_table(documents: Mapping[str, Failures]) -> pd.DataFrame:
    """One row per field path: the count of each kind of miss, the total, and the documents it occurs in.

    Sorted by total, most first, then by path. `documents` maps a document's name to its failures.
    """
    import pandas as pd

    totals: dict[str, dict[str, int]] = {}
    where: dict[str, list[str]] = {}
    for name, failures in documents.items():
        for path, kinds in failures.items():
            row = totals.setdefault(path, dict.fromkeys(KINDS, 0))
            for kind, count in kinds.items():
                row[kind] = row.get(kind, 0) + int(count)
            where.setdefault(path, []).append(name)
    rows = [
        {"field": path, **kinds, "total": sum(kinds.values()), "documents": len(where[path]), "in": _names(where[path])}
        for path, kinds in totals.items()
    ]
    columns = ["field", *KINDS, "total", "documents", "in"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["total", "field"], ascending=[False, True], kind="stable").reset_index(drop=True)


def failures_delta(
    old: Mapping[str, Failures], new: Mapping[str, Failures], labels: tuple[str, str] = ("old", "new")
) -> pd.DataFrame:
    """What got worse where: per field path and kind, each run's count over the documents both scored.

    Each side maps every scored document's name to its failures (`{}` for none), as `run_failures`
    and the compact results file give them.

    Rows where nothing changed are left out; sorted by the change, worst first. `worse in` names the
    documents where the new run has more of that kind on that path than the old one.
    """
    import pandas as pd

    shared = [name for name in old if name in new]
    cells: dict[tuple[str, str], list[Any]] = {}
    for name in shared:
        paths = dict.fromkeys([*old[name], *new[name]])
        for path in paths:
            before, after = old[name].get(path, {}), new[name].get(path, {})
            for kind in KINDS:
                a, b = int(before.get(kind, 0)), int(after.get(kind, 0))
                if a == b == 0:
                    continue
                cell = cells.setdefault((path, kind), [0, 0, []])
                cell[0] += a
                cell[1] += b
                if b > a:
                    cell[2].append(name)
    rows = [
        {"field": path, "kind": kind, labels[0]: a, labels[1]: b, "change": b - a, "worse in": _names(names)}
        for (path, kind), (a, b, names) in cells.items()
        if a != b
    ]
    frame = pd.DataFrame(rows, columns=["field", "kind", *labels, "change", "worse in"])
    return frame.sort_values(["change", "field", "kind"], ascending=[False, True, True], kind="stable").reset_index(
        drop=True
    )


def report_diffs(report: Any, spec: Any) -> Iterator[DocumentDiff]:
    """The leaf diff of every case of a one-evaluator `StructuredOutputSimilarity` report.

    `spec` is `stickler.eval_for(Schema, match_threshold=...)` with the evaluator's threshold. A case
    the evaluator could not read is one `unreadable` entry, with the evaluator's reason.
    """
    for index, case in enumerate(report.cases):
        name = case_name(case, index)
        rows = report.detailed_results[index] if index < len(report.detailed_results) else []
        metadata = [(_metadata(row) or {}) for row in rows]
        if any(detail.get("error") == "unreadable" for detail in metadata):
            yield unreadable(name, report.reasons[index], case.get("actual_output"))
        elif case.get("expected_output") is not None and rows:
            score = report.scores[index] if index < len(report.scores) else None
            yield document_diff(spec, case["expected_output"], case.get("actual_output"), name, score)


def _metadata(row: Any) -> Mapping[str, Any] | None:
    return row.get("metadata") if isinstance(row, Mapping) else getattr(row, "metadata", None)


def run_failures(diffs: Iterable[DocumentDiff]) -> dict[str, dict[str, dict[str, int]]]:
    """Each document's failures by kind, by document name; a document with none maps to `{}`.

    Every scored document is kept, so `failures_delta` can tell a document that got worse from one
    the other run never scored.
    """
    return {diff.name: failures_of(diff.leaves) for diff in diffs}


def results_failures(path: Any) -> dict[str, dict[str, dict[str, int]]]:
    """Each scored document's failures by kind from a compact results file, by document name.

    Raises:
        ResultsError: If the file was written without failures by kind (before they were stored,
            or by a writer that did not compute them): re-score it to get them.
    """
    from fieldeval.formats.results import ResultsError, iter_results, read_header

    if not read_header(path).failures:
        raise ResultsError(
            f"{path}: written without failures by kind (its header has no `failures: true`); "
            "re-score the run with `python -m fieldeval.commands.score ... --results` to store them"
        )
    return {row.name: row.failures for row in iter_results(path) if row.status in ("scored", "unreadable")}


def failures_text(documents: Mapping[str, Failures]) -> str:
    """The failures-by-kind table as plain text, fitted to a terminal, or a line saying there are none."""
    from fieldeval.render.text import text_table

    table = failures_table(documents)
    if table.empty:
        return f"No failures in {len(documents)} document(s)."
    return text_table(list(table.columns), table.itertuples(index=False))
