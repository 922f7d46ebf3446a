"""The Markdown summary: a few lines and short tables, for a CI job's summary page."""

from __future__ import annotations

import pandas as pd

from helpers.report.content import Content, overall_line, table_cells

ROWS = 5  # rows per table: the page has the rest


def markdown_table(frame: pd.DataFrame, limit: int = ROWS) -> str:
    columns, rows = table_cells(frame.head(limit))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    if len(frame) > limit:
        lines.append(f"\n({len(frame) - limit} more row(s) in the HTML report)")
    return "\n".join(lines)


def summary(content: Content, html_name: str) -> str:
    """The summary text: the run, the overall change, the gates, and the worst fields by kind of miss."""
    parts = [f"## {content.title}", "", overall_line(content) + "."]
    if content.overall_table is not None and content.old is not None:  # an overall change needs an old run
        row = content.overall_table.iloc[0]
        parts.append(
            f"Against {content.old.path.name}: change {row['delta']:+.3f} "
            f"[{row['low']:+.3f}, {row['high']:+.3f}], {row['verdict']}."
        )
    if content.gates_table is not None:
        passed = len(content.gates_table) - content.gates_failed
        parts += [
            "",
            f"### Gates: {passed} passed, {content.gates_failed} failed",
            "",
            markdown_table(content.gates_table, 20),
        ]
        if content.gates_note:
            parts += ["", content.gates_note + "."]
    if content.failures_delta is not None and not content.failures_delta.empty:
        parts += ["", "### What got worse where", "", markdown_table(content.failures_delta)]
    if content.failures_table is not None and not content.failures_table.empty:
        table = content.failures_table.drop(columns="in")
        parts += ["", "### Failures by kind", "", markdown_table(table)]
    parts += ["", f"Every document's leaf diff is in `{html_name}`."]
    return "\n".join(parts) + "\n"
