"""matplotlib charts of a `StructuredOutputReport`, for when a reader would rather look.

Figures are built with `matplotlib.figure.Figure`, not `pyplot`, so a notebook shows each
chart exactly once (as the cell's value) and no global figure state leaks between cells.

Colours come from the Okabe-Ito palette, which stays distinguishable under every common form of
colour blindness, and each evaluator keeps its colour in every notebook: the colour follows the
evaluator's name, not its position in the chart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from helpers.render import extra_missing

try:
    from matplotlib import colormaps
    from matplotlib.figure import Figure
except ImportError as exc:
    raise extra_missing(exc) from exc

from helpers.render.tables import SCORE_COLOURS, field_metrics_frame

# Okabe-Ito: blue, orange, bluish green first (the three evaluators of the walkthroughs), then the rest.
EVALUATOR_COLOURS = {"StructuredOutputSimilarity": "#0072B2", "Equals": "#E69F00", "FuzzyEquals": "#009E73"}
OTHER_COLOURS = ("#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
PASS_LINE_COLOUR = "#555555"


def evaluator_colours(labels: list[str]) -> dict[str, str]:
    """A colour per label: a known evaluator's own (its class name leads the label), else the next spare one."""
    spare = iter(OTHER_COLOURS * (1 + len(labels) // len(OTHER_COLOURS)))
    colours = {}
    for label in labels:
        name = re.split(r"\W", label, maxsplit=1)[0]  # the leading word: the class name
        colours[label] = EVALUATOR_COLOURS.get(name) or next(spare)
    return colours


def field_f1_chart(field_metrics: Mapping[str, Mapping[str, Any]], title: str = "Per-field F1") -> Figure:
    """Horizontal bars of F1 per field path, worst at the top, coloured on the score scale."""
    frame = field_metrics_frame(field_metrics).iloc[::-1]
    f1 = frame["cm_f1"].fillna(0.0).to_numpy(dtype=float)
    figure = Figure(figsize=(7, 0.45 * len(frame) + 1.2))
    axes = figure.subplots()
    axes.barh(frame.index, f1, color=colormaps[SCORE_COLOURS](f1))
    for y, value in enumerate(f1):
        axes.text(value + 0.01, y, f"{value:.2f}", va="center", fontsize=9)
    axes.set_xlim(0, 1.1)
    axes.set_xlabel("F1 from the per-field confusion counts (stickler's cm_f1)")
    axes.set_title(title)
    figure.tight_layout()
    return figure


def case_scores_chart(
    scores: Mapping[str, Mapping[str, float]],
    title: str = "Per-case score by evaluator",
    *,
    pass_score: float | None = None,
    pass_label: str | None = None,
) -> Figure:
    """Grouped bars: one group per case, one bar per evaluator, each bar labelled with its value.

    Args:
        scores: `{evaluator name: {case name: score}}`; cases are taken in the first
            evaluator's order.
        pass_score: Draws a dashed line at the score a case needs to pass, if given.
        pass_label: The line's legend entry (default: "pass at score >= X").
    """
    evaluators = list(scores)
    cases = list(next(iter(scores.values())))
    colours = evaluator_colours(evaluators)
    width = 0.8 / len(evaluators)
    positions = np.arange(len(cases))
    # Each case gets room for its label at 30 degrees, so long names such as
    # `hand-authored-01` never run into their neighbours, and each bar room for its value.
    longest = max(len(str(case)) for case in cases)
    per_case = max(1.0, 0.08 * longest, 0.45 * len(evaluators))
    figure = Figure(figsize=(max(6.0, 1.0 + len(cases) * per_case), 4.6))
    axes = figure.subplots()
    for index, evaluator in enumerate(evaluators):
        values = [scores[evaluator].get(case, np.nan) for case in cases]
        offset = (index - (len(evaluators) - 1) / 2) * width
        bars = axes.bar(positions + offset, values, width, label=evaluator, color=colours[evaluator])
        # A 0.0 bar has no height; its label is what shows it is there.
        labels = ["" if math.isnan(value) else f"{value:.2f}" for value in values]
        axes.bar_label(bars, labels=labels, padding=2, fontsize=7.5)
    if pass_score is not None:
        label = pass_label or f"pass at score >= {pass_score:g}"
        axes.axhline(pass_score, color=PASS_LINE_COLOUR, linestyle="--", linewidth=1, label=label)
    axes.set_xticks(positions, cases, rotation=30, ha="right", rotation_mode="anchor")
    axes.set_ylim(0, 1.15)
    axes.set_ylabel("score")
    axes.set_title(title)
    # The legend sits under the chart, so it takes no width from the bars.
    entries = len(evaluators) + (pass_score is not None)
    columns = min(entries, 2)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncols=columns, fontsize=9, frameon=False)
    figure.tight_layout()
    return figure
