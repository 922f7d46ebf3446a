"""The reference numbers of the design brief, checked directly against the libraries.

If a library upgrade changes one of these, this file says which number moved, before a
notebook's stored outputs (and its prose) silently disagree with a fresh run.
"""

import pytest
from strands_evals.evaluators import Equals, StructuredOutputReport, StructuredOutputSimilarity
from strands_evals.types.evaluation import EvaluationData

from walkthroughs.invoices import (
    Invoice,
    SparseInvoice,
    WeightedInvoice,
    comparison_settings,
    reference_cases,
    sparse_cases,
)

REFERENCE_SCORES = {
    "perfect": (1.0, 1.0),
    "case-only": (1.0, 0.0),
    "amount-off": (0.8, 0.0),
    "missing": (0.8, 0.0),
    "extra-line": (0.9, 0.0),
    "wrong": (0.025, 0.0),
}
# field: (tp, fn, fa, fd, precision, recall, f1)
ROLLUP = {
    "total_amount": (4, 0, 0, 2, 0.67, 1.00, 0.80),
    "invoice_date": (4, 1, 0, 1, 0.80, 0.80, 0.80),
    "line_items": (5, 0, 1, 1, 0.71, 1.00, 0.83),
    "invoice_id": (5, 0, 0, 1, 0.83, 1.00, 0.91),
    "vendor_name": (5, 0, 0, 1, 0.83, 1.00, 0.91),
}
LIBRARY_MOVED = "changed against strands-agents-evals 1.7.0 / stickler-eval 1.0.0: re-check the notebooks' prose"


@pytest.fixture(scope="module")
def similarity(score_reference) -> StructuredOutputReport:
    return score_reference(StructuredOutputSimilarity(Invoice), reference_cases())


@pytest.fixture(scope="module")
def equals(score_reference) -> StructuredOutputReport:
    return score_reference(Equals(), reference_cases())


def test_per_case_scores(similarity, equals):
    names = [case.name for case in reference_cases()]
    measured = {
        name: (round(sim, 3), eq) for name, sim, eq in zip(names, similarity.scores, equals.scores, strict=True)
    }
    assert measured == REFERENCE_SCORES, LIBRARY_MOVED


def test_overall_and_distinct_scores(similarity, equals):
    assert round(similarity.overall_score, 3) == 0.754, LIBRARY_MOVED
    assert round(equals.overall_score, 3) == 0.167, LIBRARY_MOVED
    assert len(set(similarity.scores)) == 4, LIBRARY_MOVED
    assert len(set(equals.scores)) == 2, LIBRARY_MOVED


def test_pass_rate_is_five_of_six(similarity):
    assert similarity.test_passes == [True, True, True, True, True, False], LIBRARY_MOVED


def test_rollup_rows(similarity):
    metrics = similarity.metrics().field_metrics
    for path, (tp, fn, fa, fd, precision, recall, f1) in ROLLUP.items():
        row = metrics[path]
        measured = (row["tp"], row["fn"], row["fa"], row["fd"])
        assert measured == (tp, fn, fa, fd), f"{path}: {measured} {LIBRARY_MOVED}"
        rates = (round(row["cm_precision"], 2), round(row["cm_recall"], 2), round(row["cm_f1"], 2))
        assert rates == (precision, recall, f1), f"{path}: {rates} {LIBRARY_MOVED}"


def test_every_line_item_leaf_counts_five_matched_pairs(similarity):
    metrics = similarity.metrics().field_metrics
    leaves = {path: row for path, row in metrics.items() if path.startswith("line_items.")}
    assert sorted(leaves) == ["line_items.description", "line_items.sku", "line_items.unit_price"]
    assert {path: row["tp"] for path, row in leaves.items()} == dict.fromkeys(leaves, 5), LIBRARY_MOVED
    assert all("mean_score" not in row for row in leaves.values()), "nested leaves now carry a mean score"


def test_sparse_schema_scenarios(score_reference):
    report = score_reference(StructuredOutputSimilarity(SparseInvoice), sparse_cases())
    measured = {
        row["case"]: (round(row["overall_score"], 3), round(row["recall"], 3), row["test_pass"])
        for row in report.per_case()
    }
    assert measured == {
        "found nothing": (0.8, 0.0, False),
        "both correct": (1.0, 1.0, True),
        "vendor wrong": (0.9, 1.0, True),
    }, LIBRARY_MOVED


def test_date_typed_str_forgives_a_wrong_month_that_date_does_not():
    truth = {
        "invoice_id": "INV-8842",
        "vendor_name": "Acme Corporation",
        "invoice_date": "2026-01-15",
        "line_items": [],
    }
    month_off = {**truth, "invoice_date": "2026-02-15"}
    case = EvaluationData(input="", actual_output=month_off, expected_output=truth)
    as_str = StructuredOutputSimilarity(SparseInvoice)
    as_date = StructuredOutputSimilarity(Invoice)
    assert as_str.explain()["invoice_date"]["comparator"] == "LevenshteinComparator"
    assert as_str.explain()["invoice_date"]["threshold"] == 0.7
    assert as_date.explain()["invoice_date"]["comparator"] == "DateComparator"
    assert as_date.explain()["invoice_date"]["threshold"] == 0.95
    assert as_str.evaluate(case)[0].metadata["field_scores"]["invoice_date"] == pytest.approx(0.9)
    assert as_date.evaluate(case)[0].metadata["field_scores"]["invoice_date"] == 0.0


def test_weighted_invoice_fails_a_wrong_total_the_uniform_one_passes(similarity, score_reference):
    weighted = score_reference(StructuredOutputSimilarity(WeightedInvoice), reference_cases())
    assert [round(score, 3) for score in weighted.scores] == [1.0, 1.0, 0.667, 0.667, 0.944, 0.014]
    assert weighted.test_passes == [True, True, False, False, True, False]
    assert similarity.test_passes[2] is True
    # Only the weights differ: every field scores as it does under Invoice.
    for uniform, heavy in zip(similarity.per_case(), weighted.per_case(), strict=True):
        assert heavy["field_scores"] == pytest.approx(uniform["field_scores"]), uniform["case"]


def test_weighted_invoice_configures_exactly_what_eval_for_infers_for_invoice():
    import stickler

    inferred = stickler.eval_for(Invoice).eval_model.to_stickler_config()
    configured = WeightedInvoice.to_stickler_config()
    assert comparison_settings(configured) == comparison_settings(inferred)
    description = inferred["fields"]["line_items"]["fields"]["description"]
    assert description["comparator_config"]["method"] == "token_set_ratio"
    assert description["clip_under_threshold"] is False
    assert {name: field["weight"] for name, field in configured["fields"].items() if field["weight"] != 1.0} == {
        "invoice_date": 3.0,
        "total_amount": 3.0,
    }
    required = {name for name, field in Invoice.model_fields.items() if field.is_required()}
    assert {name for name, field in WeightedInvoice.model_fields.items() if field.is_required()} == required


def test_weighted_invoice_explain_equals_invoices_apart_from_weights_and_the_list_label():
    inferred = StructuredOutputSimilarity(Invoice).explain()
    configured = StructuredOutputSimilarity(WeightedInvoice).explain()
    keys = ("comparator", "threshold", "clip_under_threshold")
    differ = {path for path in inferred if any(configured[path][key] != inferred[path][key] for key in keys)}
    # For a list of models, explain() names ComparableField's unused default; the list is still
    # paired by Hungarian matching at the element's match_threshold (the item scores above show it).
    assert differ == {"line_items"}
    assert configured["line_items"]["comparator"] == "LevenshteinComparator"
    assert {path: entry["weight"] for path, entry in configured.items() if entry["weight"] != 1.0} == {
        "invoice_date": 3.0,
        "total_amount": 3.0,
    }


def test_weighted_invoice_date_is_a_date_compared_as_one():
    from pydantic import ValidationError

    perfect = reference_cases()[0].ground_truth
    month_off = perfect.model_copy(update={"invoice_date": perfect.invoice_date.replace(month=2)})
    case = EvaluationData(input="", actual_output=month_off, expected_output=perfect)
    result = StructuredOutputSimilarity(WeightedInvoice).evaluate(case)[0]
    assert result.metadata["field_scores"]["invoice_date"] == 0.0
    with pytest.raises(ValidationError, match="invoice_date"):
        WeightedInvoice.model_validate({**perfect.model_dump(), "invoice_date": "not a date"})


def test_a_wrong_description_scores_its_item_the_same_under_both_models():
    perfect = reference_cases()[0].ground_truth
    item = perfect.line_items[0].model_copy(update={"description": "Cable management kit"})
    wrong_description = perfect.model_copy(update={"line_items": [item]})
    case = EvaluationData(input="", actual_output=wrong_description, expected_output=perfect)
    uniform = StructuredOutputSimilarity(Invoice).evaluate(case)[0].metadata["field_scores"]["line_items"]
    weighted = StructuredOutputSimilarity(WeightedInvoice).evaluate(case)[0].metadata["field_scores"]["line_items"]
    assert weighted == pytest.approx(uniform)
    assert 0.7 <= uniform < 1.0


def test_fuzzy_equals_column_of_the_side_by_side(score_reference):
    from helpers import FuzzyEquals

    report = score_reference(FuzzyEquals(case_sensitive=False, numeric_tolerance=0.01), reference_cases())
    assert report.scores == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert report.overall_score == 0.5
    assert len(set(report.scores)) == 2


def test_the_comparators_behind_case_only_and_amount_off():
    from stickler import LevenshteinComparator, NumericComparator

    assert LevenshteinComparator().compare("BETA INDUSTRIES", "Beta Industries") == 1.0, "no longer case-folds"
    assert round(abs(311.5 - 310.0) / 310.0 * 100, 2) == 0.48
    assert NumericComparator(relative_tolerance=0.001).compare(311.5, 310.0) == 0.0


def test_the_vendor_comparator_ignores_case_and_spacing_but_not_a_lost_space():
    from stickler import LevenshteinComparator

    vendor = LevenshteinComparator()
    assert vendor.compare("  Beta   Industries ", "Beta Industries") == 1.0, "no longer collapses whitespace"
    assert vendor.compare("BetaIndustries", "Beta Industries") < 1.0


def test_a_stricter_match_threshold_moves_a_wrong_description_out_of_the_leaf_rows(score_reference):
    from walkthroughs.invoices import ReferenceCase

    perfect = reference_cases()[0]
    item = perfect.ground_truth.line_items[0].model_copy(update={"description": "Sprocket"})
    wrong_description = perfect.ground_truth.model_copy(update={"line_items": [item]})
    variant = [ReferenceCase("wrong description", "hand-authored", perfect.ground_truth, wrong_description)]
    lenient = score_reference(StructuredOutputSimilarity(Invoice), variant).metrics().field_metrics
    strict = score_reference(StructuredOutputSimilarity(Invoice, match_threshold=0.9), variant).metrics().field_metrics
    assert (lenient["line_items"]["tp"], lenient["line_items"]["fd"]) == (1, 0)
    assert lenient["line_items.description"]["fd"] == 1
    assert (strict["line_items"]["tp"], strict["line_items"]["fd"]) == (0, 1)
    assert "line_items.description" not in strict
