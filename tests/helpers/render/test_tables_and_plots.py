"""Tables and charts of a report: columns, order, fixed ids, and both non-match shapes."""

import pandas as pd
import pytest
import stickler
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.render.text import text_table
from helpers.render.charts import case_scores_chart, field_f1_chart
from helpers.render.tables import (
    SCORE_COLOURS,
    comparison_frame,
    comparison_table,
    explain_frame,
    explain_table,
    field_metrics_frame,
    field_metrics_table,
    non_matches_frame,
    per_case_frame,
    per_case_table,
    weakest_fields,
)
from walkthroughs.invoices import Invoice, reference_cases

FIELD_METRICS = {
    "invoice_id": {
        "tp": 5,
        "fn": 0,
        "fa": 0,
        "fd": 1,
        "tn": 0,
        "cm_precision": 0.83,
        "cm_recall": 1.0,
        "cm_f1": 0.91,
        "mean_score": 0.83,
    },
    "total_amount": {"tp": 4, "fd": 2, "cm_precision": 0.67, "cm_recall": 1.0, "cm_f1": 0.8, "mean_score": 0.67},
    "line_items.sku": {"tp": 5, "cm_precision": 1.0, "cm_recall": 1.0, "cm_f1": 1.0},
    "invoice_date": {
        "tp": 4,
        "fn": 1,
        "fd": 1,
        "cm_precision": 0.8,
        "cm_recall": 0.8,
        "cm_f1": 0.8,
        "mean_score": 0.67,
    },
}


def test_field_metrics_sorted_worst_first_with_missing_keys_blank():
    frame = field_metrics_frame(FIELD_METRICS)
    assert list(frame.index) == ["invoice_date", "total_amount", "invoice_id", "line_items.sku"]
    assert list(frame.columns) == ["tp", "fn", "fa", "fd", "tn", "cm_precision", "cm_recall", "cm_f1", "mean_score"]
    assert frame.loc["total_amount", "fn"] == 0
    assert pd.isna(frame.loc["line_items.sku", "mean_score"])


def test_styled_table_html_is_the_same_twice_and_uses_the_fixed_id():
    first = field_metrics_table(FIELD_METRICS, table_id="fixed")._repr_html_()
    second = field_metrics_table(FIELD_METRICS, table_id="fixed")._repr_html_()
    assert first == second
    assert 'id="T_fixed"' in first
    assert "background-color" in first


def test_table_text_repr_has_no_memory_address():
    table = field_metrics_table(FIELD_METRICS)
    assert " at 0x" not in repr(table)
    assert "invoice_date" in repr(table)


def test_per_case_frame_names_weakest_fields():
    rows = [
        {
            "case": "a",
            "overall_score": 0.8,
            "test_pass": True,
            "recall": 1.0,
            "precision": 0.8,
            "field_scores": {"x": 1.0, "y": 0.0, "z": 0.5},
        },
    ]
    frame = per_case_frame(rows)
    assert frame.loc["a", "weakest fields"] == "y=0.000, z=0.500"
    assert bool(frame.loc["a", "pass"]) is True


def test_weakest_fields_caps_the_list_and_says_how_many_it_left_out():
    assert weakest_fields({f"f{i}": i / 10 for i in range(6)}, limit=2) == "f0=0.000, f1=0.100 (+4 more)"
    assert weakest_fields({"a": 0.5, "b": 1.0}, limit=1) == "a=0.500"
    assert weakest_fields({"a": 1.0}) == ""


def test_text_repr_uses_the_styled_tables_three_decimals_and_leaves_missing_blank():
    text = repr(field_metrics_table(FIELD_METRICS))
    assert "0.830" in text and "0.910" in text
    assert "NaN" not in text
    assert "0.666667" not in repr(per_case_table([_per_case_row(0.6666666)]))


def _per_case_row(score: float) -> dict:
    return {
        "case": "a",
        "overall_score": score,
        "test_pass": False,
        "recall": 1.0,
        "precision": 1.0,
        "field_scores": {"x": score},
    }


def test_text_table_wraps_long_cells_at_word_boundaries():
    reason = "raw 0.52 < threshold 0.85 -> clipped to 0.0 because the vendor came from the remit-to line"
    rows = [["vendor_name", 0.0, reason], ["id", None, "ok"]]
    lines = text_table(["field", "score", "reason"], rows, 30).splitlines()
    assert lines[0].split() == ["field", "score", "reason"]
    assert lines[1].startswith("vendor_name  0.000  raw 0.52")
    assert all(len(line) <= len("vendor_name  0.000  ") + 30 for line in lines)
    words = " ".join(line[len("vendor_name  0.000  ") :].strip() for line in lines[1:-1])
    assert words == reason
    assert lines[-1].split() == ["id", "-", "ok"]


def test_explain_frame_has_the_basis_and_reasoning():
    frame = explain_frame(StructuredOutputSimilarity(Invoice).explain())
    assert list(frame.columns) == ["comparator", "threshold", "weight", "basis", "why"]
    assert frame.loc["invoice_id", "comparator"] == "ExactComparator"
    assert "name-token:invoice_id" in frame.loc["invoice_id", "why"]
    assert 'id="T_explain"' in explain_table(StructuredOutputSimilarity(Invoice).explain())._repr_html_()


def test_comparison_adds_overall_and_distinct_rows():
    frame = comparison_frame({"A": {"x": 1.0, "y": 0.5}, "B": {"x": 1.0, "y": 1.0}})
    assert list(frame.index) == ["x", "y", "overall", "distinct scores"]
    assert frame.loc["overall", "A"] == pytest.approx(0.75)
    assert frame.loc["distinct scores"].tolist() == [2.0, 1.0]
    assert 'id="T_evaluator-comparison"' in comparison_table({"A": {"x": 1.0}})._repr_html_()


def test_non_matches_read_reason_from_both_places():
    cases = {case.name: case for case in reference_cases()}
    records = stickler.evaluate(cases["wrong"].ground_truth, cases["wrong"].prediction).non_matches
    records += stickler.evaluate(cases["extra-line"].ground_truth, cases["extra-line"].prediction).non_matches
    frame = non_matches_frame(records).set_index("field")
    assert frame["reason"].notna().all()
    assert frame.loc["total_amount", "reason"] == "below threshold (0.000 < 0.95)"
    assert frame.loc["line_items[0]", "reason"] == "below threshold (0.125 < 0.7)"
    assert frame.loc["line_items[1]", "kind"] == "false_alarm"
    assert frame.loc["line_items[0]", "similarity"] == pytest.approx(0.125)


def test_charts_are_figures_with_one_bar_per_row():
    chart = field_f1_chart(FIELD_METRICS)
    assert isinstance(chart, Figure)
    assert len(chart.axes[0].patches) == len(FIELD_METRICS)
    grouped = case_scores_chart({"A": {"x": 1.0, "y": 0.5}, "B": {"x": 0.0, "y": 1.0}})
    heights = [bar.get_height() for bar in grouped.axes[0].patches]
    assert heights == [1.0, 0.5, 0.0, 1.0]


def test_each_bar_shows_its_value_so_a_zero_bar_is_visible_and_the_pass_line_is_drawn():
    chart = case_scores_chart({"A": {"x": 1.0, "y": 0.0}}, pass_score=0.7)
    axes = chart.axes[0]
    assert [text.get_text() for text in axes.texts] == ["1.00", "0.00"]
    (line,) = [line for line in axes.get_lines() if line.get_label() == "pass at score >= 0.7"]
    assert set(line.get_ydata()) == {0.7}
    assert "pass at score >= 0.7" in [text.get_text() for text in axes.get_legend().get_texts()]
    assert not any(
        line.get_label() == "pass at score >= 0.7" for line in case_scores_chart({"A": {"x": 1}}).axes[0].lines
    )


def test_an_evaluator_keeps_its_colour_whatever_its_place_and_the_palette_is_okabe_ito():
    def colours(scores):
        chart = case_scores_chart(scores)
        return {bar.get_label(): to_hex(bar.patches[0].get_facecolor()) for bar in chart.axes[0].containers}

    first = colours({"StructuredOutputSimilarity": {"x": 1.0}, "Equals": {"x": 0.0}})
    second = colours({"FuzzyEquals (1%)": {"x": 1.0}, "StructuredOutputSimilarity(FccInvoice)": {"x": 0.5}})
    assert first["StructuredOutputSimilarity"] == second["StructuredOutputSimilarity(FccInvoice)"] == "#0072b2"
    assert (first["Equals"], second["FuzzyEquals (1%)"]) == ("#e69f00", "#009e73")
    others = colours({"inferred": {"x": 1.0}, "tuned": {"x": 1.0}})
    assert len(set(others.values())) == 2 and not set(others.values()) & set(first.values())
    assert SCORE_COLOURS == "cividis"


def test_the_field_table_names_its_columns_as_stickler_names_the_keys():
    """A column name copied from the table into code reads the same number from `field_metrics`."""
    table = field_metrics_table(FIELD_METRICS, table_id="keys")
    for path, counts in FIELD_METRICS.items():
        for key, value in counts.items():
            assert table.frame.loc[path, key] == value, (path, key)


def test_missing_values_are_left_blank_not_painted():
    html = field_metrics_table(FIELD_METRICS, table_id="blank")._repr_html_()
    row = list(field_metrics_frame(FIELD_METRICS).index).index("line_items.sku")
    column = list(field_metrics_frame(FIELD_METRICS).columns).index("mean_score")
    cell = f"#T_blank_row{row}_col{column}"
    rules = html.split(cell, 1)[1].split("}", 1)[0]
    assert "background-color: transparent" in rules


def test_text_table_keeps_a_cells_own_line_breaks_and_fits_the_width():
    rows = [["invoice_id", "type:str -> LevenshteinComparator@0.7\nname-token:invoice_id -> ExactComparator@1.0"]]
    lines = text_table(["field", "chosen by"], rows, width=70).splitlines()
    assert lines[1] == "invoice_id  type:str -> LevenshteinComparator@0.7"
    assert lines[2].strip() == "name-token:invoice_id -> ExactComparator@1.0"
    assert all(len(line) <= 70 for line in lines)


def test_case_chart_gives_long_labels_room_and_keeps_the_legend_off_the_bars():
    names = [f"hand-authored-0{index}" for index in (1, 3, 5, 7, 8)]
    chart = case_scores_chart({"A": dict.fromkeys(names, 0.8), "B": dict.fromkeys(names, 0.7)})
    renderer = FigureCanvasAgg(chart).get_renderer()
    chart.draw(renderer)
    boxes = [label.get_window_extent(renderer) for label in chart.axes[0].get_xticklabels()]
    assert all(left.x1 <= right.x0 for left, right in zip(boxes, boxes[1:], strict=False)), "tick labels overlap"
    legend = chart.axes[0].get_legend().get_window_extent(renderer)
    assert legend.y1 <= chart.axes[0].get_window_extent(renderer).y0


def test_cells_that_fit_are_wrapped_exactly_as_textwrap_wraps_them():
    """The short-cut for a cell that already fits gives textwrap's own lines, whatever the whitespace."""
    import textwrap

    from fieldeval.render.text import wrap

    cells = ["", "0.800", "sim-000001", "a  b", " lead", "trail ", "tab\there", "nbsp\u00a0", "x" * 12, "two words"]
    for cell in cells:
        for limit in (1, 4, 12, 40):
            expected = textwrap.wrap(cell, limit, break_long_words=False, break_on_hyphens=False) or [""]
            assert wrap(cell, limit) == expected, (cell, limit)
