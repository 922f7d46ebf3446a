"""What a report shows, gathered from one run (and optionally the run it is compared against).

Everything here is data: pandas tables, an SVG string, and each document's costly leaves as plain
lists, so the HTML page and the Markdown summary render the same numbers.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd

from fieldeval.attribution.kinds import failures_delta, failures_table, report_diffs, results_failures, run_failures
from fieldeval.attribution.leaves import DocumentDiff
from fieldeval.attribution.pairing import Partner, diff_pairings, repairs
from fieldeval.compare.bootstrap import ratio
from fieldeval.compare.reading import Run, is_results_file, read_run_file
from fieldeval.compare.runs import Sample
from fieldeval.formats import COUNTS
from fieldeval.formats.run_info import provenance_lines, sources_line

VALUE_CHARS = 160  # longer values are cut in the page; the saved report keeps them whole


@dataclass
class Side:
    """One run as the report reads it: its documents' counts, and its leaf diffs when it has outputs."""

    path: Path
    run: Run
    diffs: list[DocumentDiff] | None = None  # None: no outputs to diff (a results file) or none stored
    failures: dict[str, dict[str, dict[str, int]]] | None = None
    report: Any = None  # the saved report, when the run is one
    note: str = ""  # why diffs or failures are missing
    pairings: dict[str, dict[str, Partner]] | None = None  # each document's list items' partners, with the diffs


@dataclass
class Content:
    """Everything the page and the summary show."""

    title: str
    new: Side
    old: Side | None = None
    field_table: pd.DataFrame | None = None
    overall_table: pd.DataFrame | None = None
    delta_table: pd.DataFrame | None = None
    chart_svg: str | None = None
    gates_table: pd.DataFrame | None = None
    gates_failed: int = 0
    gates_note: str = ""  # how the gates read interval ends (`interval ends: joint 95% over K fields`), if any do
    failures_table: pd.DataFrame | None = None
    failures_delta: pd.DataFrame | None = None
    repairs: pd.DataFrame | None = None
    provenance: list[str] = field(default_factory=list)  # where the outputs came from; quality beside cost
    old_note: str = ""  # why what got worse where is missing: the baseline has no failures by kind
    documents: list[list[Any]] = field(default_factory=list)  # [name, score, pass, [leaf, ...]], worst first
    perfect: int = 0  # scored documents with no leaf that cost points, not listed


def read_side(path: Path, spec: Any) -> Side:
    """Read one run as data: a saved report's stored leaf diffs, or with `spec` (from --schema) diffs made afresh."""
    from fieldeval.attribution.stored import read_stored
    from fieldeval.harness.reports import load_saved_run

    run = read_run_file(path)
    if is_results_file(path):
        try:
            return Side(path, run, failures=results_failures(path), note=_RESULTS_NOTE)
        except ValueError as exc:
            return Side(path, run, note=f"{exc}.")
    report, stored = load_saved_run(path)
    if spec is not None:
        diffs = list(report_diffs(report, spec))
        pairings = diff_pairings(diffs)
    elif stored is not None:
        diffs, pairings = read_stored(stored)
    else:
        return Side(path, run, report=report, note=no_diffs_note(path, run))
    return Side(path, run, diffs=diffs, failures=run_failures(diffs), report=report, pairings=pairings)


def no_diffs_note(path: Path, run: Run) -> str:
    """Why a saved report shows no leaf diffs, and the two ways to get them; never by importing what it names."""
    named = f" (it names {run.info.schema_})" if run.info is not None else ""
    return (
        f"{path.name} stores no leaf diffs: it was saved before `score --out` stored them, or by code of your own. "
        f"Re-score it with `score --out` to store them, or pass --schema module:Class{named} to compute them here; "
        "the report imports only a module you name."
    )


_RESULTS_NOTE = (
    "A compact results file keeps no outputs, so it has no per-document leaf diffs; "
    "save the report with `score --out` to see them."
)


def field_table(run: Run) -> pd.DataFrame:
    """Per field path: the counts summed over the run's documents, and precision, recall and F1, worst F1 first."""
    rows = []
    for path, counts in Sample.whole(run).totals.items():  # the sums the gates and the comparison read
        row = {"field": path, **{key: int(counts[COUNTS.index(key)]) for key in ("tp", "fn", "fa", "fd")}}
        row.update({name: float(ratio(counts, name)) for name in ("precision", "recall", "f1")})
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["field", "tp", "fn", "fa", "fd", "precision", "recall", "f1"])
    return frame.sort_values(["f1", "field"], kind="stable").reset_index(drop=True)


def chart_svg(figure: Any) -> str:
    """A matplotlib figure as inline SVG text: no XML prolog, stable ids, no creation date."""
    with matplotlib.rc_context({"svg.hashsalt": "report", "svg.fonttype": "path"}):
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def document_rows(side: Side) -> tuple[list[list[Any]], int]:
    """Each document with a leaf that cost points, worst score first, as plain lists; and how many had none."""
    if side.diffs is None:
        return [], 0
    scores = {name: document.score for name, document in side.run.documents.items()}
    passes = dict(zip([str(case.get("name")) for case in side.report.cases], side.report.test_passes, strict=False))
    listed = []
    for diff in side.diffs:
        if not diff.leaves:
            continue
        leaves = [
            [
                leaf.path,
                leaf.field,
                leaf.kind,
                _cut(leaf.expected),
                _cut(leaf.got),
                leaf.comparator or "",
                _number(leaf.score),
                _number(leaf.share),
                _number(leaf.cost),
            ]
            for leaf in diff.leaves
        ]
        listed.append(
            [diff.name, round(scores.get(diff.name, diff.score or 0.0), 3), bool(passes.get(diff.name)), leaves]
        )
    listed.sort(key=lambda document: (document[1], document[0]))
    return listed, len(side.diffs) - len(listed)


def build(
    new_path: Path,
    *,
    old_path: Path | None = None,
    gates: Sequence[Any] = (),
    spec: Any = None,
    resamples: int = 2000,
    seed: int = 0,
    allow_scoring_change: bool = False,
) -> Content:
    """Read the run(s) and gather every table, the chart and the documents.

    Raises:
        CompareError: If two runs were scored by different rules and `allow_scoring_change` is not set.
    """
    new = read_side(new_path, spec)
    content = Content(title=f"Evaluation report: {new_path.name}", new=new, field_table=field_table(new.run))
    if new.failures is not None:
        content.failures_table = failures_table(new.failures)
    content.documents, content.perfect = document_rows(new)
    if old_path is None:
        content.provenance = [f"outputs: {sources_line(new.run.info)}"] if new.run.info is not None else []
        return content
    from fieldeval.compare.gates import evaluate_gates, gated_intervals, gates_table, interval_note
    from fieldeval.compare.runs import compare_runs
    from fieldeval.compare.scoring_rules import check_same_scoring, marked
    from fieldeval.render.compare_charts import field_delta_chart

    old = read_side(old_path, spec)
    content.old = old
    names = (old_path.name, new_path.name)
    scoring = check_same_scoring(old.run.info, new.run.info, names, allow_scoring_change)
    labels = ("old", "new")
    comparison = compare_runs(old.run, new.run, resamples=resamples, seed=seed, labels=labels)
    results = evaluate_gates(gates, comparison) if gates else []
    gated = gated_intervals(results)  # a gated row prints the interval its gate read
    content.overall_table = comparison.overall_table(gated)
    content.delta_table = comparison.field_table(gated=gated)
    content.provenance = provenance_lines(old.run.info, new.run.info, comparison.headline(content.delta_table))
    if scoring:
        content.provenance.insert(0, marked(scoring))
    content.chart_svg = chart_svg(
        field_delta_chart(
            comparison, title=f"Per-field change in F1, {new_path.name} minus {old_path.name}", gated=gated
        )
    )
    if gates:
        content.gates_table = gates_table(results)
        content.gates_failed = sum(not result.passed for result in results)
        content.gates_note = interval_note(results, comparison.confidence)
    if old.failures is not None and new.failures is not None:
        content.failures_delta = failures_delta(old.failures, new.failures, labels)
    elif new.failures is not None:
        content.old_note = f"What got worse where needs the baseline's failures by kind too: {old.note}"
    if old.pairings is not None and new.pairings is not None:
        content.repairs = repairs(old.pairings, new.pairings, labels)
    return content


def table_cells(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """A table's header and its cells as text, floats to three decimals, for HTML and Markdown alike."""

    def text(value: Any) -> str:
        if isinstance(value, bool | np.bool_):
            return "yes" if value else "no"
        if isinstance(value, float | np.floating):
            return "" if np.isnan(value) else f"{value:.3f}"
        return "" if value is None else str(value)

    return [str(column) for column in frame.columns], [
        [text(value) for value in row] for row in frame.itertuples(index=False)
    ]


def overall_line(content: Content) -> str:
    """One line: documents, mean score and passes of the run."""
    run = content.new.run
    scores = [document.score for document in run.documents.values()]
    mean = sum(scores) / len(scores) if scores else 0.0
    line = f"{len(scores)} scored document(s), mean score {mean:.3f}"
    report = content.new.report
    if report is not None:
        line += f"; {sum(report.test_passes)} of {len(report.test_passes)} case(s) pass"
    return line
