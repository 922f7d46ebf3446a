"""Quality against cost: each priced run of a leaderboard at its cost per 1,000 documents and its overall change.

Choosing a model is a trade between what a run costs and what it loses or gains against the
baseline, so one picture puts both on its axes: the overall change with its family interval as a
bar (whether zero is inside is what a reader needs), the frontier's runs filled and joined, the
others hollow, and the recommended run named. A run that cannot be priced has no x, so it is
never drawn (the page lists it beside the chart). The figure is a `matplotlib.figure.Figure`, not
`pyplot`, and each point carries a fixed id (`cost-point-N`, N its row on the leaderboard), so
the page can find it and the SVG stays the same from run to run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fieldeval.render import extra_missing
from fieldeval.render.compare_charts import VERDICT_COLOURS

try:
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
except ImportError as exc:
    raise extra_missing(exc) from exc

if TYPE_CHECKING:
    from fieldeval.compare.candidates import Leaderboard

BASELINE_COLOUR = "#000000"
LOG_SPAN = 20  # costs spanning this factor or more are drawn on a log axis, so the cheap runs do not pile up


def quality_cost_chart(board: Leaderboard) -> Figure | None:
    """The priced runs (the baseline at zero change) with their overall interval; None when no run is priced."""
    placed = [(index, row) for index, row in enumerate(board.rows) if row.priced]
    if not placed:
        return None
    figure = Figure(figsize=(8.5, 5.0))
    axes = figure.subplots()
    costs = [row.cost_per_1000 or 0.0 for _, row in placed]
    log = min(costs) > 0 and max(costs) / min(costs) >= LOG_SPAN
    if log:
        axes.set_xscale("log")
    frontier = sorted((row.cost_per_1000 or 0.0, _estimate(row)) for _, row in placed if row.frontier)
    if len(frontier) > 1:
        axes.plot(*zip(*frontier, strict=True), "--", color="#777777", linewidth=1, zorder=1)
    seen: dict[tuple[float, float], int] = {}
    for index, row in placed:
        x, y = row.cost_per_1000 or 0.0, _estimate(row)
        change = row.overall
        colour = BASELINE_COLOUR if change is None else VERDICT_COLOURS[change.verdict]
        if change is not None:
            bar = axes.plot([x, x], [change.low, change.high], color=colour, linewidth=2, zorder=2)[0]
            bar.set_gid(f"cost-interval-{index}")
        face = colour if row.frontier else "white"
        point = axes.plot([x], [y], "o", color=colour, markerfacecolor=face, markersize=8, zorder=3)[0]
        point.set_gid(f"cost-point-{index}")
        recommended = row.run == board.recommended
        if recommended:
            axes.plot([x], [y], "o", color="black", markerfacecolor="none", markersize=16, linewidth=1.5, zorder=3)
        label = row.run + (" (baseline)" if row.baseline else "") + (" - recommended" if recommended else "")
        stacked = seen.get((round(x, 9), round(y, 9)), 0)  # runs at one place get their names one under another
        seen[(round(x, 9), round(y, 9))] = stacked + 1
        axes.annotate(
            label,
            (x, y),
            xytext=(9, 4 - 12 * stacked),
            textcoords="offset points",
            fontsize=9,
            fontweight="bold" if recommended else "normal",
        )
    axes.axhline(0.0, color="black", linewidth=0.8)
    axes.set_xlabel("cost per 1,000 documents, at the price table" + (" (log scale)" if log else ""))
    level = f"{board.family.confidence:.0%}"
    axes.set_ylabel(f"overall change against the baseline\n(family {level} interval)")
    axes.set_title(f"Quality against cost: every run against {board.baseline.run}")
    axes.legend(handles=_legend(), loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    axes.margins(x=0.15, y=0.15)
    figure.tight_layout()
    return figure


def _estimate(row: object) -> float:
    change = getattr(row, "overall", None)
    return 0.0 if change is None else float(change.estimate)


def _legend() -> list[Line2D]:
    """What the marks mean: filled on the frontier, hollow off it, the ring the recommended run, colour the verdict."""
    handles = [
        Line2D([], [], marker="o", color="#555555", linestyle="--", label="on the frontier (filled, joined)"),
        Line2D([], [], marker="o", color="#555555", markerfacecolor="white", linestyle="", label="off the frontier"),
        Line2D(
            [], [], marker="o", color="black", markerfacecolor="none", markersize=14, linestyle="", label="recommended"
        ),
        Line2D([], [], marker="o", color=BASELINE_COLOUR, linestyle="", label="the baseline"),
    ]
    handles += [
        Line2D([], [], marker="o", color=colour, linewidth=2, label=f"overall {verdict}")
        for verdict, colour in VERDICT_COLOURS.items()
    ]
    return handles
