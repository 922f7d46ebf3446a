"""matplotlib charts of a `StructuredOutputReport`, for when a reader would rather look.

Figures are built with `matplotlib.figure.Figure`, not `pyplot`, so a notebook shows each
chart exactly once (as the cell's value) and no global figure state leaks between cells.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from helpers.render import notebooks_extra_missing

try:
    from matplotlib import colormaps
    from matplotlib.figure import Figure
except ImportError as exc:
    raise notebooks_extra_missing(exc) from exc

from helpers.render.tables import SCORE_COLOURS, field_metrics_frame


def field_f1_chart(field_metrics: Mapping[str, Mapping[str, Any]], title: str = "Per-field F1") -> Figure:
    """Horizontal bars of F1 per field path, worst at the top, coloured on the score scale."""
    frame = field_metrics_frame(field_metrics).iloc[::-1]
    f1 = frame["f1"].fillna(0.0).to_numpy(dtype=float)
    figure = Figure(figsize=(7, 0.45 * len(frame) + 1.2))
    axes = figure.subplots()
    axes.barh(frame.index, f1, color=colormaps[SCORE_COLOURS](f1))
    for y, value in enumerate(f1):
        axes.text(value + 0.01, y, f"{value:.2f}", va="center", fontsize=9)
    axes.set_xlim(0, 1.1)
    axes.set_xlabel("F1 from the per-field confusion counts")
    axes.set_title(title)
    figure.tight_layout()
    return figure


def case_scores_chart(scores: Mapping[str, Mapping[str, float]], title: str = "Per-case score by evaluator") -> Figure:
    """Grouped bars: one group per case, one bar per evaluator.

    Args:
        scores: `{evaluator name: {case name: score}}`; cases are taken in the first
            evaluator's order.
    """
    evaluators = list(scores)
    cases = list(next(iter(scores.values())))
    width = 0.8 / len(evaluators)
    positions = np.arange(len(cases))
    # Each case gets room for its label at 30 degrees, so long names such as
    # `hand-authored-01` never run into their neighbours.
    longest = max(len(str(case)) for case in cases)
    figure = Figure(figsize=(max(6.0, 1.0 + len(cases) * max(1.0, 0.08 * longest)), 4.2))
    axes = figure.subplots()
    for index, evaluator in enumerate(evaluators):
        values = [scores[evaluator].get(case, np.nan) for case in cases]
        axes.bar(positions + (index - (len(evaluators) - 1) / 2) * width, values, width, label=evaluator)
    axes.set_xticks(positions, cases, rotation=30, ha="right", rotation_mode="anchor")
    axes.set_ylim(0, 1.1)
    axes.set_ylabel("score")
    axes.set_title(title)
    # The legend sits under the chart, so it takes no width from the bars.
    columns = min(len(evaluators), 3)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=columns, fontsize=8, frameon=False)
    figure.tight_layout()
    return figure
