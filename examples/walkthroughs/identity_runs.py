"""The runs two scorers must agree on exactly: the project's stickler fixtures and random documents.

`fixture_runs()` gathers every schema and case set the project's tests and notebooks score with
stickler (the reference invoices under the inferred and the tuned model, the sparse schema, the
FCC cases and their replayed extractions under both FCC models, the purchase orders, the
simulated runs). `random_run()` draws SIMULATED documents with nested lists.

Nothing in `random_run` comes from a model: each ground truth and each prediction is drawn from a seed.
The shapes are chosen to reach every branch of stickler's field comparison: strings, integers,
floats, booleans and dates, `None` and empty strings, lists of strings, lists of objects that
hold lists of objects, and predictions handed over as instances, as dicts or as JSON text. The
mistakes are an extractor's (a value off by a little or a lot, reworded, upper-cased, blanked,
dropped, invented, reordered, duplicated), drawn more often than a real extractor makes them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError
from strands_evals import Case

WORDS = ("bolt", "washer", "hinge", "bracket", "cable", "anchor", "clamp", "caster", "slide", "catch", "spring")


class Part(BaseModel):
    name: str
    size: float | None = None


class Package(BaseModel):
    code: str | None = None
    quantity: int | None = None
    price: float | None = None
    fragile: bool | None = None
    notes: list[str] = []
    parts: list[Part] = []


class Shipment(BaseModel):
    shipment_id: str
    carrier: str | None = None
    shipped: date | None = None
    weight: float | None = None
    pieces: int | None = None
    tags: list[str] = []
    packages: list[Package] = []


SCHEMA = "walkthroughs.identity_runs:Shipment"


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def random_shipment(rng: random.Random, index: int, max_packages: int) -> Shipment:
    """A ground truth with up to `max_packages` packages of up to four parts each."""
    packages = [
        Package(
            code=f"PK-{index}-{number}" if rng.random() < 0.9 else None,
            quantity=rng.randint(1, 40) if rng.random() < 0.8 else None,
            price=round(rng.uniform(0.5, 500.0), 2) if rng.random() < 0.85 else None,
            fragile=rng.choice((True, False, None)),
            notes=[_words(rng, 1, 3) for _ in range(rng.randint(0, 2))],
            parts=[
                Part(name=_words(rng, 1, 2), size=round(rng.uniform(1, 90), 1) if rng.random() < 0.7 else None)
                for _ in range(rng.randint(0, 2))
            ],
        )
        for number in range(rng.randint(0, max_packages))
    ]
    return Shipment(
        shipment_id=f"SH-{index:06d}",
        carrier=rng.choice(("Acme Freight", "Beta Logistics", "Gamma Post", None, "")),
        shipped=date(2026, 1, 1) + timedelta(days=rng.randrange(365)) if rng.random() < 0.9 else None,
        weight=round(rng.uniform(0.1, 900.0), 3) if rng.random() < 0.8 else None,
        pieces=rng.randint(0, 300) if rng.random() < 0.8 else None,
        tags=[rng.choice(WORDS) for _ in range(rng.randint(0, 2))],
        packages=packages,
    )


def _mistake(rng: random.Random, value: Any) -> Any:
    """One extractor's mistake on a scalar, or the value unchanged."""
    roll = rng.random()
    if roll < 0.55:
        return value
    if roll < 0.62:
        return None
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice((1, -1, 10, 1000))
    if isinstance(value, float):
        return round(value * rng.choice((1.0001, 1.01, 0.9, 2.0, -1.0)), 4)
    if isinstance(value, str):
        return rng.choice((value.upper(), value[: max(1, len(value) // 2)], "", value + " x", _words(rng, 1, 2)))
    if isinstance(value, date):
        return value + timedelta(days=rng.choice((1, 30, 365)))
    return value


def _mistaken_list(rng: random.Random, items: list[Any], change) -> list[Any]:
    out = [change(item) for item in items if rng.random() > 0.1]
    if out and rng.random() < 0.2:
        out.append(out[rng.randrange(len(out))])  # a duplicate
    if rng.random() < 0.3:
        rng.shuffle(out)
    return out


def _mistaken(rng: random.Random, model: BaseModel) -> BaseModel:
    values: dict[str, Any] = {}
    for name, value in model:
        if isinstance(value, list):
            values[name] = _mistaken_list(
                rng,
                value,
                lambda item: _mistaken(rng, item) if isinstance(item, BaseModel) else _mistake(rng, item),
            )
        else:
            values[name] = _mistake(rng, value)
    if rng.random() < 0.05:
        return type(model).model_construct(**values)  # unvalidated, as a careless caller builds one
    try:
        return type(model).model_validate(values)
    except ValidationError:  # a mistake the schema refuses (None for a required string) travels unvalidated
        return type(model).model_construct(**values)


def random_prediction(rng: random.Random, truth: Shipment) -> Any:
    """The prediction for `truth`: an instance most often, sometimes its dict or its JSON text."""
    predicted = _mistaken(rng, truth)
    if rng.random() < 0.1:
        predicted = predicted.model_copy(update={"packages": []})
    form = rng.random()
    if form < 0.1:
        return predicted.model_dump(mode="json")
    if form < 0.15:
        return predicted.model_dump_json()
    return predicted


def random_run(count: int, max_packages: int = 3, seed: int = 2121, start: int = 0) -> Iterator[tuple[Case, Any]]:
    """Documents `start .. start + count - 1` as seeded `(case, prediction)` pairs of `Shipment`.

    Each document has its own seed, so any slice of a run is the same wherever it is drawn.
    """
    for index in range(start, start + count):
        rng = random.Random(f"{seed}:{index}")
        truth = random_shipment(rng, index, max_packages)
        case = Case(name=f"random-{index:06d}", input=f"shipment {index}", expected_output=truth)
        yield case, random_prediction(rng, truth)


def reference_pairs(cases: list[Any]) -> list[tuple[Case, Any]]:
    """Hand-authored reference cases (`walkthroughs.invoices`) as `(case, prediction)` pairs."""
    return [(Case(name=c.name, input=c.broken, expected_output=c.ground_truth), c.prediction) for c in cases]


def fixture_runs() -> list[tuple[str, list[tuple[Case, Any]], type[BaseModel]]]:
    """`(name, pairs, model)` for each fixture set the project scores with stickler."""
    import json

    from fieldeval.files import REPO_ROOT as root
    from fieldeval.harness.cases import load_cases, load_predictions
    from fieldeval.harness.schema import load_schema
    from walkthroughs import simulated_runs
    from walkthroughs.fcc.schema import FccInvoice
    from walkthroughs.fcc.tuned import FccInvoiceTuned
    from walkthroughs.invoices import Invoice, SparseInvoice, WeightedInvoice, reference_cases, sparse_cases
    from walkthroughs.simulated_large import simulated_run

    reference = reference_pairs

    fcc_cases = load_cases(root / "data/fcc/cases.jsonl", FccInvoice)
    fcc = []
    for case in fcc_cases:
        exchange = json.loads((root / "data/exchanges/fcc" / f"{case.name}.json").read_text())
        fcc.append((case, exchange["turns"][-1]["toolUse"]["input"]))
    order = load_schema("purchase_order:PurchaseOrder", directory=root / "examples/your_own_agent")
    order_cases = load_cases(root / "examples/your_own_agent/cases.jsonl", order)
    orders = load_predictions(root / "examples/your_own_agent/predictions_v2.jsonl", order, order_cases)
    invoices = simulated_runs.simulated_invoices()
    simulated = []
    for extractor in (simulated_runs.BASELINE, simulated_runs.CANDIDATE):
        outputs = simulated_runs.extract(extractor, invoices)
        simulated += [(case, outputs[case.name]) for case in simulated_runs.simulated_cases(invoices)]
    return [
        ("reference invoices", reference(reference_cases()), Invoice),
        ("reference invoices, tuned model", reference(reference_cases()), WeightedInvoice),
        ("sparse invoices", reference(sparse_cases()), SparseInvoice),
        ("FCC replayed extractions", fcc, FccInvoice),
        ("FCC replayed extractions, tuned model", fcc, FccInvoiceTuned),
        ("purchase orders", [(case, orders[case.name]) for case in order_cases], order),
        ("simulated runs (compare)", simulated, Invoice),
        ("simulated invoices, 6 line items", list(simulated_run(40, 6)), Invoice),
    ]
