"""Leaf attribution: every leaf that cost points, below-threshold items split into the leaves that pulled them under.

The numbers are checked against stickler itself on the walkthroughs' own cases and on random nested
documents from a fixed seed: the leaves' shares rebuild stickler's item similarity, the leaves'
costs add up to what the document lost (`1 - score`), and the folded kinds equal stickler's counts.
"""

from __future__ import annotations

import io
import json
import random

import pytest
import stickler
from pydantic import BaseModel
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.attribution.kinds import failures_delta, failures_table, report_diffs, results_failures, run_failures
from fieldeval.attribution.leaves import (
    BELOW,
    INVENTED,
    MISSING,
    PARTIAL,
    UNREADABLE,
    WRONG,
    as_models,
    check_costs,
    check_item,
    counted_failures,
    document_diff,
    failures_of,
    fold,
)
from fieldeval.attribution.pairing import pairings, repairs
from fieldeval.compare.reading import field_counts
from fieldeval.exchanges.fixtures import load_exchange
from fieldeval.files import DATA_DIR, REPO_ROOT
from fieldeval.formats.results import Counts, ResultsError, ResultsHeader, ResultsWriter, iter_results
from fieldeval.harness.cases import load_cases, load_predictions
from fieldeval.harness.results import document_counts, rows_from_report
from fieldeval.harness.schema import load_schema
from fieldeval.harness.scoring import score_outputs_sync
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
            if leaf.kind == PARTIAL:
                continue  # a match above its threshold: stickler counts it a true positive
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
        assert counted_failures(spec, counts, expected, got, raw["field_scores"]) == full, label
        assert counted_failures(spec, counts, expected, got) == full, label  # no scores: every document walked


def test_failures_from_counts_equal_the_full_diff_on_long_simulated_lists():
    """20 line items a document: most documents have items paired below the threshold, some several."""
    spec = stickler.eval_for(Invoice, match_threshold=0.7)
    below = 0
    for case, got in simulated_run(80, 20):
        raw = spec.evaluate(case.expected_output, got).raw
        raw = {key: value for key, value in raw.items() if key != "prediction_raw"}
        counts = {path: Counts(**values) for path, values in document_counts(raw).items()}
        full = failures_of(document_diff(spec, case.expected_output, got, case.name).leaves)
        found = counted_failures(spec, counts, case.expected_output, got, raw["field_scores"])
        assert found == full, case.name
        below += any(BELOW in kinds for path, kinds in found.items() if "." in path)
    assert below >= 40  # the leaves of below-threshold items were counted, not skipped


def test_a_name_one_letter_off_is_a_partial_leaf_that_costs_what_the_document_lost():
    """A match above the threshold with a score below 1 lowers the score; its row says by how much."""
    spec = stickler.eval_for(Invoice, match_threshold=0.7)
    truth = reference_cases()[0].ground_truth.model_copy(update={"vendor_name": "Bruno Keller"})
    got = truth.model_copy(update={"vendor_name": "Bruno Kellner"})
    diff = document_diff(spec, truth, got, "claim")
    (leaf,) = diff.leaves
    assert (leaf.path, leaf.kind, leaf.expected, leaf.got) == ("vendor_name", PARTIAL, "Bruno Keller", "Bruno Kellner")
    assert leaf.score == pytest.approx(12 / 13) and leaf.score >= leaf.threshold  # one edit in 13 characters
    assert leaf.cost == pytest.approx((1 - 12 / 13) / 5) == pytest.approx(1 - diff.score)  # one field of five
    assert check_costs(diff)
    assert failures_of(diff.leaves) == {"vendor_name": {PARTIAL: 1}}


class Tagged(BaseModel):
    ref: str
    tags: list[str]  # a list of values: stickler pairs its items by the field's comparator (Levenshtein, 0.7)


class Shelf(BaseModel):
    code: str
    labels: list[str] = []


class Store(BaseModel):
    name: str
    tags: list[str] = []
    sizes: list[float] = []
    shelves: list[Shelf] = []


def test_an_item_of_a_list_of_values_is_paired_and_scored_as_stickler_scores_the_list():
    """stickler's `non_matches` pairs a list of values by other rules than its score (it paired "grene"
    with "teal" below) and records every pair with a similarity of 0, a match included; the rows pair
    as the score does, carry the list's comparator and the pair's own similarity, and a pair at or above
    the list's threshold is `partial`, as stickler's counts have it."""
    spec = stickler.eval_for(Tagged, match_threshold=0.7)
    truth = Tagged(ref="R", tags=["red", "grene", "blue"])
    for got, rows in (
        (["blue", "gren", "red"], [("tags[1]", PARTIAL, "gren", 0.8)]),
        (["red", "green", "blue"], [("tags[1]", WRONG, "green", 0.6)]),
        (["red", "teal", "green", "blue"], [("tags[1]", WRONG, "green", 0.6), ("tags[1]", INVENTED, "teal", None)]),
    ):
        output = Tagged(ref="R", tags=got)
        diff = document_diff(spec, truth, output, "tags")
        found = [(leaf.path, leaf.kind, leaf.got, leaf.score) for leaf in diff.leaves]
        assert found == [
            (path, kind, value, pytest.approx(score) if score else None) for path, kind, value, score in rows
        ]
        assert {leaf.comparator for leaf in diff.leaves} == {"LevenshteinComparator"}
        assert check_costs(diff)
        raw = spec.evaluate(truth, output).raw
        counts = {path: Counts(**values) for path, values in document_counts(raw).items()}
        assert counted_failures(spec, counts, truth, output, raw["field_scores"]) == failures_of(diff.leaves)


def test_leaf_costs_and_kinds_of_lists_of_values_agree_with_stickler_on_random_documents():
    """400 random stores (fixed seed): lists of words and of numbers, top-level and inside list items,
    with typos, drops, inventions and shuffles, clipped and not."""
    rng = random.Random(45)
    words = [*WORDS, "shim", "nut", "bolt"]
    kinds: dict[str, int] = {}

    def store() -> Store:
        return Store(
            name=rng.choice(words),
            tags=rng.sample(words, rng.randrange(4)),
            sizes=[round(rng.uniform(1, 50), 1) for _ in range(rng.randrange(4))],
            shelves=[Shelf(code=f"S{index}", labels=rng.sample(words, rng.randrange(3))) for index in range(2)],
        )

    def mistaken_values(values: list, extra: object) -> list:
        values = [
            typo(rng, v) if isinstance(v, str) and rng.random() < 0.3 else v for v in values if rng.random() > 0.15
        ]
        if rng.random() < 0.2:
            values.append(extra)
        rng.shuffle(values)
        return values

    for threshold in (0.7, 0.9):
        spec = stickler.eval_for(Store, match_threshold=threshold)
        for index in range(200):
            truth = store()
            data = truth.model_dump()
            data["tags"] = mistaken_values(data["tags"], rng.choice(words))
            data["sizes"] = [size + 0.5 if rng.random() < 0.2 else size for size in mistaken_values(data["sizes"], 7.5)]
            for shelf in data["shelves"]:
                shelf["labels"] = mistaken_values(shelf["labels"], "spacer")
            got = Store.model_validate(data)
            diff = document_diff(spec, truth, got, f"store-{index}")
            assert check_costs(diff), (threshold, index, diff.lost, 1 - diff.score)
            raw = spec.evaluate(truth, got).raw
            counts = {path: Counts(**values) for path, values in document_counts(raw).items()}
            assert counted_failures(spec, counts, truth, got, raw["field_scores"]) == failures_of(diff.leaves), index
            for leaf in diff.leaves:
                kinds[leaf.kind] = kinds.get(leaf.kind, 0) + 1
    assert all(kinds.get(kind, 0) >= 20 for kind in (MISSING, INVENTED, WRONG, PARTIAL)), kinds


def test_leaf_costs_add_up_to_what_every_walkthrough_document_lost():
    kinds = set()
    for label, spec, expected, got in walkthrough_pairs():
        diff = document_diff(spec, expected, got, label)
        assert check_costs(diff), (label, diff.lost, 1 - diff.score)
        assert all((leaf.cost or 0) > 0 for leaf in diff.leaves if leaf.item is None), label  # no row costs nothing
        for item in diff.items:  # an item's leaves add up to the item's own cost
            inside = [leaf for leaf in diff.leaves if leaf.item == item.path]
            (row,) = [leaf for leaf in diff.leaves if leaf.path == item.path]
            assert sum(leaf.cost for leaf in inside) == pytest.approx(row.cost, abs=1e-12), (label, item.path)
        kinds.update(leaf.kind for leaf in diff.leaves)
    assert {MISSING, INVENTED, WRONG, PARTIAL, BELOW} <= kinds


class Part(BaseModel):
    code: str
    name: str | None = None


class Line(BaseModel):
    sku: str
    description: str
    quantity: int
    price: float | None = None
    parts: list[Part] = []


class Address(BaseModel):
    street: str
    city: str


class Order(BaseModel):
    number: str
    buyer: str
    note: str | None = None
    total: float
    address: Address
    lines: list[Line]


WORDS = ("bracket", "flange", "sprocket", "gasket", "washer", "bearing", "spindle", "coupling")


def typo(rng: random.Random, text: str) -> str:
    """One letter changed, added or dropped: a Levenshtein score just under 1."""
    at = rng.randrange(len(text))
    return rng.choice([text[:at] + "x" + text[at + 1 :], text[:at] + "e" + text[at:], text[:at] + text[at + 1 :]])


def random_order(rng: random.Random) -> Order:
    def part() -> Part:
        return Part(code=f"P-{rng.randrange(1000):03d}", name=rng.choice([None, *WORDS]))

    lines = [
        Line(
            sku=f"SKU-{rng.randrange(10_000):04d}",
            description=" ".join(rng.sample(WORDS, 2)),
            quantity=rng.randrange(1, 9),
            price=rng.choice([None, round(rng.uniform(1, 500), 2)]),
            parts=[part() for _ in range(rng.randrange(3))],
        )
        for _ in range(rng.randrange(1, 6))
    ]
    return Order(
        number=f"PO-{rng.randrange(10_000):04d}",
        buyer=rng.choice(["Bruno Keller", "Anna Lindqvist", "Chidi Okafor", "Mei Tanaka"]),
        note=rng.choice([None, "deliver to dock 4", "call before delivery"]),
        total=round(rng.uniform(10, 5000), 2),
        address=Address(street=f"{rng.randrange(1, 200)} Mill Road", city=rng.choice(["Basel", "Lyon", "Leeds"])),
        lines=lines,
    )


def mistaken(rng: random.Random, truth: Order) -> Order:
    """The truth with random mistakes at every depth: typos, wrong numbers, dropped, invented and shuffled items."""
    data = truth.model_dump()

    def maybe(probability: float) -> bool:
        return rng.random() < probability

    for key in ("number", "buyer"):
        if maybe(0.3):
            data[key] = typo(rng, data[key])
    if maybe(0.2):
        data["note"] = rng.choice([None, "leave at the gate"])
    if maybe(0.2):
        data["total"] = round(data["total"] * rng.uniform(0.5, 1.5), 2)
    if maybe(0.3):
        data["address"]["city"] = typo(rng, data["address"]["city"])
    lines = []
    for line in data["lines"]:
        if maybe(0.1):
            continue
        if maybe(0.3):
            line["description"] = typo(rng, line["description"])
        if maybe(0.2):
            line["quantity"] += 1
        if maybe(0.15):
            line["sku"] = typo(rng, line["sku"])
        line["parts"] = [
            {**part, "name": typo(rng, part["name"]) if part["name"] and maybe(0.3) else part["name"]}
            for part in line["parts"]
            if not maybe(0.15)
        ]
        if maybe(0.15):
            line["parts"].append({"code": "P-999", "name": "shim"})
        lines.append(line)
    if maybe(0.2):
        lines.append({"sku": "SKU-9999", "description": "freight", "quantity": 1, "price": 12.0, "parts": []})
    rng.shuffle(lines)
    data["lines"] = lines
    return Order.model_validate(data)


def test_leaf_costs_add_up_on_random_nested_documents_and_the_counts_find_the_same_kinds():
    """300 random orders (fixed seed): nested model, lists of models inside list items, every kind of miss."""
    rng = random.Random(35)
    kinds: dict[str, int] = {}
    for threshold in (0.7, 0.9):
        spec = stickler.eval_for(Order, match_threshold=threshold)
        for index in range(150):
            truth = random_order(rng)
            got = mistaken(rng, truth)
            diff = document_diff(spec, truth, got, f"order-{index}")
            assert check_costs(diff), (threshold, index, diff.lost, 1 - diff.score)
            raw = spec.evaluate(truth, got).raw
            counts = {path: Counts(**values) for path, values in document_counts(raw).items()}
            full = failures_of(diff.leaves)
            assert counted_failures(spec, counts, truth, got, raw["field_scores"]) == full, (threshold, index)
            for leaf in diff.leaves:
                kinds[leaf.kind] = kinds.get(leaf.kind, 0) + 1
                kinds["nested"] = kinds.get("nested", 0) + (leaf.path.count("[") > 1)
    # every kind occurs, many times, and at depth: the identity was tested, not skipped
    assert all(kinds.get(kind, 0) >= 20 for kind in (MISSING, INVENTED, WRONG, PARTIAL, BELOW, "nested")), kinds


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
    assert set(delta["field"]) == {"currency", "lines", "buyer", "lines.quantity", "order_date", "supplier"}
    fixed = delta.set_index(["field", "kind"]).loc[("supplier", PARTIAL)]  # "Alpine Textiles" for "... Ltd"
    assert (fixed["baseline"], fixed["candidate"], fixed["change"]) == (1, 0, -1)
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
    from fieldeval.commands.score import main

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
    # missing, invented, wrong value, partial, below threshold, unreadable:
    # the invented SKU-9 line, and the `wrong` case's item
    assert line.split()[1:7] == ["0", "1", "0", "0", "1", "0"]
