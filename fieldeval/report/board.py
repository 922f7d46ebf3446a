"""What the page of several runs shows, gathered from the leaderboard `compare` builds for them.

Everything is read from one `Leaderboard` (`fieldeval.compare.candidates`) and formatted by the
functions `compare` prints it with (`fieldeval.compare.leaderboard`), so a number on the page, in the
summary and in `compare`'s output is one number. Everything here is data (tables, an SVG string,
plain lists), so the HTML page and the Markdown summary render the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fieldeval.compare.bootstrap import IMPROVED, NO_CLEAR_CHANGE, REGRESSED, Interval
from fieldeval.report.content import chart_svg

if TYPE_CHECKING:
    import pandas as pd

    from fieldeval.flows.candidates import Chosen

# Each verdict as a mark a reader sees without colour, beside its word.
SYMBOLS = {REGRESSED: "▼", IMPROVED: "▲", NO_CLEAR_CHANGE: "="}


@dataclass(frozen=True)
class Cell:
    """One candidate's change on one target: the estimate, its family interval and verdict, as text."""

    verdict: str  # regressed, improved, no clear change
    text: str  # `+0.000 [-0.012, +0.010]`

    @property
    def symbol(self) -> str:
        return SYMBOLS[self.verdict]

    @property
    def css(self) -> str:
        return "v-" + self.verdict.replace(" ", "-")


@dataclass
class Board:
    """Everything the page and the summary of several runs show."""

    title: str
    baseline: str
    candidates: list[str]
    lines: list[str]  # how scoring differs (if allowed), what is paired, what the family guarantee covers
    leaderboard: pd.DataFrame  # `compare`'s leaderboard table, cell for cell
    recommended: str | None
    recommendation: str  # `Recommended: ...`, as `compare` prints it
    placed: list[list[str]]  # [run, cost, overall change, frontier, recommended] of each run on the chart
    not_priced: list[list[str]]  # [run, why] of each run that cannot be priced, never placed
    chart_svg: str | None
    targets: list[str]  # the map's rows: overall, each field's F1, any other gated target
    cells: list[list[Cell | None]]  # per target, per candidate; None: the candidate has no such target
    gates_table: pd.DataFrame | None = None
    gates_line: str = ""
    passed: bool = True  # the recommended run passes every gate (True with no gate), as `compare` exits
    dominated: list[str] = field(default_factory=list)  # `RUN by OTHER, ...` for each run off the frontier


def build(chosen: Chosen) -> Board:
    """The page's content from the leaderboard and the gate results `compare` computed."""
    from fieldeval.compare.leaderboard import family_line, leaderboard_table
    from fieldeval.compare.scoring_rules import marked
    from fieldeval.render.board_chart import quality_cost_chart

    board = chosen.board
    first = board.comparisons[0]
    candidates = [row.run for row in board.candidates]
    lines = [
        *([marked(chosen.scoring)] if chosen.scoring else []),
        f"paired {len(first.pairing.cases)} cases, the same in every run; left out {len(first.pairing.excluded)}",
        family_line(board),
    ]
    targets = board.targets
    cells = [[_cell(row.changes.get(target)) for row in board.candidates] for target in targets]
    figure = quality_cost_chart(board)
    gates, line = _gates(chosen)
    return Board(
        title=f"Evaluation report: {len(candidates)} candidates against {board.baseline.run}",
        baseline=board.baseline.run,
        candidates=candidates,
        lines=lines,
        leaderboard=leaderboard_table(board),
        recommended=board.recommended,
        recommendation=f"Recommended: {board.reason}",
        placed=[
            [
                row.run + (" (baseline)" if row.baseline else ""),
                f"{row.cost_per_1000:,.4f}",
                "baseline" if row.overall is None else _interval(row.overall),
                "on the frontier" if row.frontier else "off the frontier",
                "recommended" if row.run == board.recommended else "",
            ]
            for row in board.rows
            if row.cost_per_1000 is not None
        ],
        not_priced=[[row.run, row.cost_note] for row in board.rows if not row.priced],
        chart_svg=chart_svg(figure) if figure is not None else None,
        targets=targets,
        cells=cells,
        gates_table=gates,
        gates_line=line,
        passed=chosen.passed,
        dominated=[f"{row.run} by {', '.join(row.dominated_by)}" for row in board.rows if row.dominated_by],
    )


def _interval(change: Interval) -> str:
    """A change and its family interval, as `compare`'s tables print them."""
    return f"{change.estimate:+.3f} [{change.low:+.3f}, {change.high:+.3f}]"


def _cell(change: Interval | None) -> Cell | None:
    return None if change is None else Cell(change.verdict, _interval(change))


def _gates(chosen: Chosen) -> tuple[pd.DataFrame | None, str]:
    """Every run's gate results in one table (as `compare` prints them), and whether the recommended run passes."""
    from fieldeval.compare.gates import runs_gates

    return runs_gates(chosen.results, chosen.board.recommended, chosen.passed)
