"""Charts of a run comparison: each difference as a point with its bootstrap interval.

A bar of the difference alone would hide the one thing a reader needs, whether zero is inside
the interval, so every chart here draws the interval and the zero line. Figures are built with
`matplotlib.figure.Figure`, not `pyplot`, so no global figure state leaks between cells.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from fieldeval.compare.bootstrap import IMPROVED, NO_CLEAR_CHANGE, REGRESSED
from fieldeval.render import extra_missing

try:
    from matplotlib.figure import Figure
except ImportError as exc:
    raise extra_missing(exc) from exc

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fieldeval.compare.bootstrap import Interval
    from fieldeval.compare.runs import Comparison

# Okabe-Ito blue and vermillion, not green and red: a reader with red-green colour blindness tells them apart.
VERDICT_COLOURS = {IMPROVED: "#0072B2", REGRESSED: "#D55E00", NO_CLEAR_CHANGE: "#999999"}


def interval_chart(
    table: pd.DataFrame,
    *,
    label: str,
    estimate: str = "delta",
    title: str,
    xlabel: str,
) -> Figure:
    """One row per line of `table`: the estimate as a dot, `low`..`high` as a bar, coloured by verdict.

    Args:
        table: Needs the columns `label`, `estimate`, `low`, `high` and `verdict`; rows are
            drawn top to bottom in table order.
    """
    rows = table.reset_index(drop=True)
    figure = Figure(figsize=(8.5, 0.42 * len(rows) + 1.5))
    axes = figure.subplots()
    for position, row in rows.iterrows():
        y = len(rows) - 1 - position
        colour = VERDICT_COLOURS[row["verdict"]]
        axes.plot([row["low"], row["high"]], [y, y], color=colour, linewidth=3, solid_capstyle="butt")
        axes.plot([row[estimate]], [y], "o", color=colour, markersize=6)
    axes.axvline(0.0, color="black", linewidth=0.8)
    axes.set_yticks(range(len(rows)), list(rows[label])[::-1])
    axes.set_ylim(-0.6, len(rows) - 0.4)
    axes.set_xlabel(xlabel)
    axes.set_title(title)
    for verdict, colour in VERDICT_COLOURS.items():
        if verdict in set(rows["verdict"]):
            axes.plot([], [], "o-", color=colour, label=verdict)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    figure.tight_layout()
    return figure


def field_delta_chart(
    comparison: Comparison, metric: str = "f1", title: str | None = None, gated: Mapping[str, Interval] | None = None
) -> Figure:
    """Per-field change in `metric` (new minus old) with its paired bootstrap interval.

    With `gated` (`fieldeval.compare.gates.gated_intervals`), a gated field is drawn with the
    interval its gate read, as the field table prints it.
    """
    old, new = comparison.labels
    level = f"{comparison.confidence:.0%}"
    drawn = ", gated fields with the gates' band" if gated else ""
    return interval_chart(
        comparison.field_table(metric, gated),
        label="field",
        estimate=f"delta {metric}",
        title=title or f"Per-field change in {metric}, {new} minus {old}",
        xlabel=f"change in {metric}, with its {level} paired bootstrap interval{drawn}",
    )
