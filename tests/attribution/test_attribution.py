"""Leaf attribution: every wrong leaf, below-threshold items split into the leaves that pulled them under.

The numbers are checked against stickler itself on the walkthroughs' own cases: the leaves' shares
rebuild stickler's item similarity, and the folded kinds equal stickler's confusion counts.
"""

from __future__ import annotations

import io
import json

import pytest
import stickler
from strands_evals.evaluators import StructuredOutputSimilarity

from helpers.attribution.kinds import failures_delta, failures_table, report_diffs, results_failures, run_failures
from helpers.attribution.leaves import (
    BELOW,
    INVENTED,
    MISSING,
    UNREADABLE,
    WRONG,
    as_models,
    check_item,
    counted_failures,
    document_diff,
    failures_of,
    fold,
)
from helpers.attribution.pairing import pairings, repairs
from helpers.compare.reading import field_counts
from helpers.exchanges.fixtures import load_exchange
from helpers.files import DATA_DIR, REPO_ROOT
from helpers.formats.results import Counts, ResultsError, ResultsHeader, ResultsWriter, iter_results
from helpers.harness.cases import load_cases, load_predictions
from helpers.harness.results import document_counts, rows_from_report
from helpers.harness.schema import load_schema
from helpers.harness.scoring import score_outputs_sync
from walkthroughs.fcc.documents import fcc_cases, from_snapshot
from walkthroughs.fcc.schema import FccInvoice
from walkthroughs.fcc.tuned import FccInvoiceTuned
from walkthroughs.invoices import Invoice, reference_cases
from walkthroughs.simulated_large import simulated_run

YOUR_OWN = REPO_ROOT / "examples" / "your_own_agent"


def recorded(folder, name, tool):
    """The structured output a stored exchange ends with (its last `tool` call's input)."""
    return load_exchange(folder / f"{name}.json").final_output(tool)


def walkthrough_pairs():
    """(label, spec, expected, got) for every document the walkthroughs score, at their thresholds."""
    fcc = fcc_cases(from_snapshot().documents)
    order = load_schema("purchase_order:PurchaseOrder", directory=YOUR_OWN)
    orders = load_cases(YOUR_OWN / "cases.jsonl", order)
    candidate = load_predictions(YOUR_OWN / "predictions_v2.jsonl", order, orders)
    runs = [
        (
            FccInvoice,
            0.7,
            [(c.name, c.expected_output, recorded(DATA_DIR / "exchanges" / "fcc", c.name, "FccInvoice")) for c in fcc],
        ),
        (
            FccInvoiceTuned,
            0.8,
            [(c.name, c.expected_output, recorded(DATA_DIR / "exchanges" / "fcc", c.name, "FccInvoice")) for c in fcc],
        ),
        (Invoice, 0.7, [(r.name, r.ground_truth, r.prediction) for r in reference_cases()]),
    ]
    for threshold in (0.7, 0.8):
        runs.append(
            (
                order,
                threshold,
                [
                    (c.name, c.expected_output, recorded(YOUR_OWN / "cassettes", c.name, "PurchaseOrder"))
                    for c in orders
                ],
            )
        )
        runs.append((order, threshold, [(c.name, c.expected_output, candidate[c.name]) for c in orders]))
    for schema, threshold, documents in runs:
        spec = stickler.eval_for(schema, match_threshold=threshold)
        for name, expected, got in documents:
            plain = [
                value.model_dump(mode="json") if hasattr(value, "model_dump") else value for value in (expected, got)
            ]
            yield f"{schema.__name__}@{threshold}:{name}", spec, *plain


def test_below_threshold_fcc_item_is_split_into_the_leaves_that_pulled_it_under():
    spec = stickler.eval_for(FccInvoiceTuned, match_threshold=0.8)
    case = next(c for c in fcc_cases(from_snapshot().documents) if c.name == "hand-authored-05")
    got = recorded(DATA_DIR / "exchanges" / "fcc", case.name, "FccInvoice")
    diff = document_diff(spec, case.expected_output.model_dump(mode="json"), got, case.name)
    (item,) = diff.items
    assert item.path == "LineItems[3]" and item.threshold == 0.75
    assert item.similarity == pytest.approx(4.5 / 6.5)  # rate (weight 2.0 of 6.5) scored 0, the rest 1
    (culprit,) = item.culprits
    assert (culprit.path, culprit.expected, culprit.got, culprit.comparator) == (
        "LineItems[3].LineItemRate",
        380.0,
        830.0,
        "NumericComparator",
    )
    assert culprit.weight == 2.0 and culprit.score == 0.0 and culprit.share == pytest.approx(2.0 / 6.5)
    assert check_item(item)
    kinds = [(leaf.path, leaf.kind) for leaf in diff.leaves]
    assert ("LineItems[3]", BELOW) in kinds and ("LineItems[3].LineItemRate", BELOW) in kinds
    assert ("LineItems[5]", MISSING) in kinds


def test_every_walkthrough_item_below_threshold_agrees_with_stickler():
    items = 0
    for label, spec, expected, got in walkthrough_pairs():
        want, have = as_models(spec, expected, got)
        records = {
            record["field_path"]: record
            for record in want.compare_with(have, document_non_matches=True)["non_matches"]
            if "below threshold" in str(record.get("reason")) and str(record["field_path"]).endswith("]")
        }
        diff = document_diff(spec, expected, got, label)
        assert {item.path for item in diff.items} == set(records), label
        for item in diff.items:
            items += 1
            assert check_item(item), (label, item.path, item.leaf_similarity, item.similarity)
            assert item.leaf_similarity == pytest.approx(float(records[item.path]["similarity_score"]), abs=1e-9)
            assert item.similarity < item.threshold
    assert items >= 3  # the FCC tuned run, the reference invoices' `wrong` case, po-1003 at 0.8


def test_folded_kinds_equal_stickler_counts_on_every_walkthrough_document():
    for label, spec, expected, got in walkthrough_pairs():
        diff = document_diff(spec, expected, got, label)
        raw = spec.evaluate(expected, got).raw
        counts = field_counts(raw, label)
        seen = {}
        for leaf in diff.leaves:
            if leaf.item is not None:
                continue  # a leaf of a below-threshold item: stickler counts the item, not the leaf
            key = {MISSING: "fn", INVENTED: "fa", WRONG: "fd", BELOW: "fd"}[leaf.kind]
            seen.setdefault(leaf.field, {}).setdefault(key, 0)
            seen[leaf.field][key] += 1
        for path, values in counts.items():
            for key in ("fn", "fa", "fd"):
                assert seen.get(path, {}).get(key, 0) == values.get(key, 0), (label, path, key)


def test_failures_from_counts_equal_the_full_diff_on_every_walkthrough_document():
    for label, spec, expected, got in walkthrough_pairs():
        raw = spec.evaluate(expected, got).raw
        raw = {key: value for key, value in raw.items() if key != "prediction_raw"}  # as the evaluator stores it
        counts = {path: Counts(**values) for path, values in document_counts(raw).items()}
        full = failures_of(document_diff(spec, expected, got, label).leaves)
        assert counted_failures(spec, counts, expected, got) == full, label


def test_failures_from_counts_equal_the_full_diff_on_long_simulated_lists():
    """20 line items a document: most documents have items paired below the threshold, some several."""
    spec = stickler.eval_for(Invoice, match_threshold=0.7)
    below = 0
    for case, got in simulated_run(80, 20):
        raw = spec.evaluate(case.expected_output, got).raw
        raw = {key: value for key, value in raw.items() if key != "prediction_raw"}
        counts = {path: Counts(**values) for path, values in document_counts(raw).items()}
        full = failures_of(document_diff(spec, case.expected_output, got, case.name).leaves)
        found = counted_failures(spec, counts, case.expected_output, got)
        assert found == full, case.name
        below += any(BELOW in kinds for path, kinds in found.items() if "." in path)
    assert below >= 40  # the leaves of below-threshold items were counted, not skipped


def test_an_output_that_does_not_validate_is_one_unreadable_entry():
    spec = stickler.eval_for(Invoice)
    ref = reference_cases()[0]
    diff = document_diff(spec, ref.ground_truth, {"invoice_id": ["not", "text"]}, "broken")
    assert [(leaf.path, leaf.kind) for leaf in diff.leaves] == [("(output)", UNREADABLE)]
    assert "invoice_id" in diff.reason


def test_fold_drops_indices_at_every_depth():
    assert fold("lines[2].parts[10].sku") == "lines.parts.sku"


@pytest.fixture(scope="module")
def order_runs():
    order = load_schema("purchase_order:PurchaseOrder", directory=YOUR_OWN)
    cases = load_cases(YOUR_OWN / "cases.jsonl", order)
    baseline = {c.name: order.model_validate(recorded(YOUR_OWN / "cassettes", c.name, "PurchaseOrder")) for c in cases}
    candidate = load_predictions(YOUR_OWN / "predictions_v2.jsonl", order, cases)
    evaluator = StructuredOutputSimilarity(order)
    return order, [score_outputs_sync(cases, outputs, evaluator) for outputs in (baseline, candidate)]


def test_failures_table_and_what_got_worse(order_runs):
    order, (baseline, candidate) = order_runs
    spec = stickler.eval_for(order, match_threshold=0.7)
    old, new = (run_failures(report_diffs(report, spec)) for report in (baseline, candidate))
    table = failures_table(old).set_index("field")
    assert table.loc["order_date", MISSING] == 1 and table.loc["buyer", WRONG] == 1
    assert table.loc["lines.quantity", "in"] == "po-1003"
    delta = failures_delta(old, new, ("baseline", "candidate"))
    worst = delta.iloc[0]
    assert (worst["field"], worst["kind"], worst["change"], worst["worse in"]) == ("currency", WRONG, 1, "po-1003")
    assert set(delta["field"]) == {"currency", "lines", "buyer", "lines.quantity", "order_date"}
    assert (delta.set_index(["field", "kind"]).loc[("lines", INVENTED), "candidate"]) == 1


def test_results_file_keeps_failures_and_old_files_still_read(order_runs, tmp_path):
    order, (baseline, _) = order_runs
    spec = stickler.eval_for(order, match_threshold=0.7)
    path = tmp_path / "run.jsonl"
    with ResultsWriter(path, ResultsHeader(schema="purchase_order:PurchaseOrder", failures=True)) as writer:
        for row in rows_from_report(baseline, spec):
            writer.write(row)
    stored = results_failures(path)
    assert stored == run_failures(report_diffs(baseline, spec))
    old = tmp_path / "old.jsonl"  # the format before failures were stored: no header flag, no row field
    lines = path.read_text(encoding="utf-8").splitlines()
    header = {key: value for key, value in json.loads(lines[0]).items() if key != "failures"}
    rows = [{key: value for key, value in json.loads(line).items() if key != "failures"} for line in lines[1:]]
    old.write_text("\n".join(json.dumps(record) for record in [header, *rows]) + "\n", encoding="utf-8")
    assert [row.name for row in iter_results(old)] == [row.name for row in iter_results(path)]
    with pytest.raises(ResultsError, match="written without failures by kind"):
        results_failures(old)


def test_a_swapped_list_is_reported_as_re_paired():
    spec = stickler.eval_for(Invoice)
    truth = {
        "invoice_id": "INV-1",
        "vendor_name": "Acme",
        "invoice_date": None,
        "total_amount": 30.0,
        "line_items": [
            {"sku": "SKU-1", "description": "Widget", "unit_price": 10.0},
            {"sku": "SKU-2", "description": "Gadget", "unit_price": 20.0},
        ],
    }
    swapped = {**truth, "line_items": truth["line_items"][::-1]}
    old = {"doc": pairings(*as_models(spec, truth, truth))}
    new = {"doc": pairings(*as_models(spec, truth, swapped))}
    assert old["doc"]["line_items[0]"].index == 0 and new["doc"]["line_items[0]"].index == 1
    table = repairs(old, new)
    assert list(table["item"]) == ["line_items[0]", "line_items[1]"]
    assert table.iloc[0]["new paired with"] == "got[1] (1.000, match)"
    assert repairs(old, old).empty


def test_score_failures_flag_prints_the_table(tmp_path):
    from helpers.commands.score import main

    refs = reference_cases()
    cases = tmp_path / "cases.jsonl"
    predictions = tmp_path / "predictions.jsonl"
    cases.write_text(
        "\n".join(
            json.dumps({"name": r.name, "input": r.broken, "expected_output": r.ground_truth.model_dump(mode="json")})
            for r in refs
        ),
        encoding="utf-8",
    )
    predictions.write_text(
        "\n".join(json.dumps({"name": r.name, "output": r.prediction.model_dump(mode="json")}) for r in refs),
        encoding="utf-8",
    )
    out = io.StringIO()
    argv = ["--schema", "walkthroughs.invoices:Invoice", "--cases", str(cases), "--predictions", str(predictions)]
    assert main([*argv, "--out", str(tmp_path / "run.json"), "--failures"], out=out) == 0
    printed = out.getvalue()
    assert "Failures by kind (per field path, list indices folded):" in printed
    failures = printed.split("Failures by kind")[1]
    line = next(line for line in failures.splitlines() if line.startswith("line_items "))
    assert line.split()[1:6] == ["0", "1", "0", "1", "0"]  # the invented SKU-9 line; the `wrong` case's item
