"""The Markdown summary: a few lines and short tables, for a CI job's summary page.

Every name and value it shows (case names, field paths, file names) goes through `inline`, so a
case named `po-</script><script>alert(1)</script>` is text on the page, and a `|` or a line break
in a value stays inside its table cell, as the HTML page escapes them.
"""

from __future__ import annotations

import re

import pandas as pd

from fieldeval.report.board import Board
from fieldeval.report.content import Content, overall_line, table_cells

ROWS = 5  # rows per table: the page has the rest
# What Markdown or HTML would read as markup: `&` and `<` (entities and tags), the inline marks, a
# table's `|`, and `_` where it can open or close emphasis (not inside a word, as in `line_items`).
_MARKUP = re.compile(r"[\\`*\[\]|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_ENTITIES = {"&": "&amp;", "<": "&lt;"}


def inline(value: object) -> str:
    """`value` as text that Markdown and HTML show as it is, on one line (a line break becomes a space)."""
    text = re.sub(r"[&<]", lambda match: _ENTITIES[match.group()], str(value))
    return " ".join(_MARKUP.sub(lambda match: "\\" + match.group(), text).splitlines())


def markdown_table(frame: pd.DataFrame, limit: int = ROWS) -> str:
    columns, rows = table_cells(frame.head(limit))
    lines = ["| " + " | ".join(map(inline, columns)) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(map(inline, row)) + " |" for row in rows]
    if len(frame) > limit:
        lines.append(f"\n({len(frame) - limit} more row(s) in the HTML report)")
    return "\n".join(lines)


def page_holds(content: Content, page: str) -> str:
    """The last line: what the page holds beyond these tables, or why it holds no leaf diffs and how to get them."""
    if content.new.diffs is None:
        return f"{page} holds the tables above in full, but no leaf diffs: {content.new.note}"
    if not content.documents:
        return f"No document lost points, so {page} lists no leaf diffs; it holds the tables above in full."
    return (
        f"The leaf diff of each of the {len(content.documents)} document(s) that lost points, every leaf with "
        f"its cost, is in {page}."
    )


def summary(content: Content, html_name: str) -> str:
    """The summary text: the run, the overall change, the gates, and the worst fields by kind of miss."""
    parts = [f"## {inline(content.title)}", "", overall_line(content) + "."]
    parts += [f"- {inline(line)}" for line in content.provenance]
    if content.overall_table is not None and content.old is not None:  # an overall change needs an old run
        row = content.overall_table.iloc[0]
        parts.append(
            f"Against {inline(content.old.path.name)}: change {row['delta']:+.3f} "
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
    parts += ["", page_holds(content, inline(html_name))]
    if content.old_note:
        parts.append(inline(content.old_note))
    return "\n".join(parts) + "\n"


# Several runs -------------------------------------------------------------------------------------

# The summary's leaderboard: `compare`'s table, with the overall change and its interval in one cell,
# and without the tokens and wall time the page keeps.
_BOARD_DROPPED = ("tokens/doc", "wall s")


def board_table(board: Board) -> pd.DataFrame:
    """The leaderboard for the summary, cell for cell the page's and `compare`'s."""
    frame = board.leaderboard.drop(columns=list(_BOARD_DROPPED))
    change = [
        f"{delta} {interval}".strip() for delta, interval in zip(frame["overall delta"], frame["interval"], strict=True)
    ]
    frame = frame.drop(columns=["overall delta", "interval"])
    frame.insert(2, "overall change", change)
    return frame


def board_summary(board: Board, html_name: str) -> str:
    """The summary of several runs: the leaderboard, the recommendation, the runs not priced, the gates."""
    parts = [f"## {inline(board.title)}", ""]
    parts += [f"- {inline(line)}" for line in board.lines]
    parts += ["", "### Leaderboard", "", markdown_table(board_table(board), len(board.leaderboard)), ""]
    parts.append(f"**{inline(board.recommendation)}**")
    if board.not_priced:
        listed = "; ".join(f"{inline(run)}: {inline(why)}" for run, why in board.not_priced)
        parts += ["", f"Not priced, so not placed: {listed}"]
    if board.gates_table is not None:
        parts += ["", f"### Gates: {inline(board.gates_line)}", "", markdown_table(board.gates_table, 20)]
    parts += [
        "",
        f"Quality against cost and every field's change for every candidate are in {inline(html_name)}.",
    ]
    return "\n".join(parts) + "\n"
