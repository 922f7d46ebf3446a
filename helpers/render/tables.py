"""pandas tables of a `StructuredOutputReport`: what a reader looks at instead of raw dicts.

Every function returns a `Table`: the plain `DataFrame` (for code and tests) and a styled
view (for the notebook). The styled view has a fixed id, so its HTML is the same on every
run and a stored notebook output can be compared with a fresh one. Colour encodes a score
or an F1 on one scale, cividis (dark blue at 0 to yellow at 1), which readers with any form of
colour blindness see as the same ordered scale, so a weak field stands out at a glance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from helpers.render import extra_missing
from helpers.render.non_matches import COLUMNS, non_match_rows
from helpers.render.text import DECIMALS, format_number

try:
    from pandas.io.formats.style import Styler  # needs jinja2
except ImportError as exc:
    raise extra_missing(exc) from exc

SCORE_COLOURS = "cividis"
# The field table's columns are stickler's own keys in `field_metrics[path]`, so a column name
# copied into code (`field_metrics["total_amount"]["cm_f1"]`) reads the same number.
FIELD_METRIC_COLUMNS = ["tp", "fn", "fa", "fd", "tn", "cm_precision", "cm_recall", "cm_f1", "mean_score"]
COUNT_COLUMNS = ("tp", "fn", "fa", "fd")


@dataclass(frozen=True)
class Table:
    """A DataFrame and its styled view; shows as HTML in Jupyter and as text elsewhere.

    Showing the Styler itself would print its memory address as the plain-text output,
    which differs on every run; this wrapper prints the frame instead.
    """

    frame: pd.DataFrame
    styler: Styler
    count_rows: tuple[str, ...] = ()  # rows that hold counts, printed as whole numbers
    note: str = ""  # printed under the text table; the styled view shows it as its caption

    def _repr_html_(self) -> str:
        return self.styler.to_html()

    def __repr__(self) -> str:
        note = f"\n{self.note}" if self.note else ""
        if not self.count_rows:
            return self.frame.to_string(float_format=format_number, na_rep="") + note
        text = self.frame.map(lambda value: "" if pd.isna(value) else format_number(value)).astype(object)
        for row in self.count_rows:
            text.loc[row] = self.frame.loc[row].map(lambda value: f"{value:.0f}")
        return text.to_string() + note


def styled(frame: pd.DataFrame, table_id: str, *, colour: Iterable[str] = (), caption: str = "") -> Table:
    """Style `frame` with a fixed id, three decimals, and the score scale on `colour` columns."""
    styler = frame.style.set_uuid(table_id).format(precision=DECIMALS, na_rep="")
    columns = [column for column in colour if column in frame.columns]
    if columns:
        styler = styler.background_gradient(cmap=SCORE_COLOURS, vmin=0.0, vmax=1.0, subset=columns)
        # The colour map paints a missing value (a nested leaf's mean score) black; leave it blank.
        styler = styler.map(lambda value: "background-color: transparent" if pd.isna(value) else None, subset=columns)
    if caption:
        styler = styler.set_caption(caption)
    return Table(frame, styler, note=caption)


def field_metrics_frame(field_metrics: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per field path from `report.metrics().field_metrics`, worst F1 first.

    Read with `.get`: the row set and the keys on each row depend on the data (nested
    leaves carry counts but no `mean_score`, and stickler omits what it did not count).
    """
    rows = {
        path: {key: counts.get(key, 0 if key in COUNT_COLUMNS else None) for key in FIELD_METRIC_COLUMNS}
        for path, counts in field_metrics.items()
    }
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=FIELD_METRIC_COLUMNS)
    frame.index.name = "field"
    # Worst first; ties broken by path so the order never depends on dict order.
    frame = frame.assign(_path=frame.index).sort_values(["cm_f1", "cm_recall", "_path"], na_position="last")
    return frame.drop(columns="_path").astype({"tp": int, "fn": int, "fa": int, "fd": int})


def field_metrics_table(field_metrics: Mapping[str, Mapping[str, Any]], table_id: str = "field-metrics") -> Table:
    """The per-field confusion matrix as a styled table, coloured by score, its columns named as stickler names them."""
    colour = ["cm_precision", "cm_recall", "cm_f1", "mean_score"]
    return styled(field_metrics_frame(field_metrics), table_id, colour=colour)


def weakest_fields(field_scores: Mapping[str, float], limit: int = 3) -> str:
    """The fields that scored under 1.0, lowest first, as `name=0.000` pairs.

    At most `limit` are named, so the column stays readable; the rest are counted as
    `(+N more)`, so a capped list never looks complete.
    """
    imperfect = sorted((score, name) for name, score in field_scores.items() if score < 1.0)
    named = ", ".join(f"{name}={format_number(score)}" for score, name in imperfect[:limit])
    hidden = len(imperfect) - limit
    return f"{named} (+{hidden} more)" if hidden > 0 else named


def per_case_frame(per_case: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per case from `report.per_case()`: score, verdict, recall, weakest fields."""
    frame = pd.DataFrame(
        [
            {
                "case": row["case"],
                "score": row["overall_score"],
                "pass": bool(row["test_pass"]),
                "recall": row["recall"],
                "precision": row["precision"],
                "weakest fields": weakest_fields(row["field_scores"]),
            }
            for row in per_case
        ]
    )
    return frame.set_index("case")


def per_case_table(per_case: Iterable[Mapping[str, Any]], table_id: str = "per-case") -> Table:
    """The per-case table, coloured by score and recall."""
    return styled(per_case_frame(per_case), table_id, colour=["score", "recall", "precision"])


def explain_frame(explanation: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per field path from `evaluator.explain()`: what compares it, and why."""
    frame = pd.DataFrame(
        [
            {
                "path": path,
                "comparator": entry.get("comparator"),
                "threshold": entry.get("threshold"),
                "weight": entry.get("weight"),
                "basis": entry.get("source"),
                "why": "; ".join(entry.get("why") or []),
            }
            for path, entry in explanation.items()
        ]
    )
    return frame.set_index("path")


def explain_table(explanation: Mapping[str, Mapping[str, Any]], table_id: str = "explain") -> Table:
    """The `explain()` table, left-aligned so the reasoning reads as text."""
    table = styled(explain_frame(explanation), table_id)
    return Table(table.frame, table.styler.set_properties(**{"text-align": "left"}))


def comparison_frame(scores: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """Per-case scores with one column per evaluator, then `overall` and `distinct scores` rows.

    Args:
        scores: `{evaluator name: {case name: score}}`, one experiment per evaluator.
    """
    frame = pd.DataFrame(scores)
    frame.index.name = "case"
    summary = pd.DataFrame(
        [frame.mean(), frame.nunique().astype(float)],
        index=pd.Index(["overall", "distinct scores"], name="case"),
    )
    return pd.concat([frame, summary])


def comparison_table(scores: Mapping[str, Mapping[str, float]], table_id: str = "evaluator-comparison") -> Table:
    """Evaluators side by side; the per-case rows are coloured by score."""
    frame = comparison_frame(scores)
    cases = frame.index[:-2]
    styler = frame.style.set_uuid(table_id).format(precision=DECIMALS)
    styler = styler.format(precision=0, subset=pd.IndexSlice[["distinct scores"], :])
    styler = styler.background_gradient(cmap=SCORE_COLOURS, vmin=0.0, vmax=1.0, subset=pd.IndexSlice[cases, :])
    return Table(frame, styler, count_rows=("distinct scores",))


def non_matches_frame(non_matches: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """stickler's non-match records as a table; see `helpers.render.non_matches` for how they are read."""
    return pd.DataFrame(non_match_rows(non_matches), columns=list(COLUMNS))
