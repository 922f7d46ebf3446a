"""A large SIMULATED run: seeded invoices with many line items and an extractor's seeded mistakes.

Nothing here comes from a model. Every ground truth and every prediction is generated from a
seed, so the run is the same on every machine and its size is a parameter: the scale-out
notebook, the tests and the benchmark use it to score thousands of documents with dozens of
line items each, which is where one Python process stops being enough.

The simulated extractor makes the mistakes real extractors make on long invoices: a price off
by a little, a description reworded, a line dropped, a line invented, lines returned out of
order, and now and then a wrong total or a missing date.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import date, timedelta

from strands_evals import Case

from walkthroughs.invoices import Invoice, LineItem

SCHEMA = "walkthroughs.invoices:Invoice"
LABEL = "simulated"
SEED = 1313
PRODUCTS = (
    "Hex bolt M8",
    "Flat washer 10mm",
    "Hinge, stainless",
    "Cable tie pack",
    "Drawer slide 450mm",
    "Caster wheel 75mm",
    "Shelf bracket",
    "Wood screw 4x40",
    "Door handle, brushed",
    "Wall anchor set",
    "Spring clamp",
    "Magnetic catch",
)
VENDORS = ("Acme Corporation", "Beta Industries", "Gamma Ltd", "Delta LLC", "Epsilon SA", "Zeta Holdings")
START = date(2026, 1, 1)


def simulated_invoice(index: int, items: int, seed: int = SEED) -> Invoice:
    """The ground truth of simulated document `index`, with `items` line items."""
    rng = random.Random(f"{seed}:{index}:truth")
    drawn = [(rng.choice(PRODUCTS), round(rng.uniform(0.5, 400.0), 2)) for _ in range(items)]
    line_items = [
        LineItem(sku=f"SKU-{index:06d}-{line:03d}", description=description, unit_price=price)
        for line, (description, price) in enumerate(drawn)
    ]
    return Invoice(
        invoice_id=f"SIM-{index:06d}",
        vendor_name=rng.choice(VENDORS),
        invoice_date=START + timedelta(days=rng.randrange(365)),
        total_amount=round(sum(price for _, price in drawn), 2),
        line_items=line_items,
    )


def simulated_prediction(truth: Invoice, index: int, seed: int = SEED) -> Invoice:
    """What the simulated extractor returns for `truth`: mostly right, with seeded mistakes."""
    rng = random.Random(f"{seed}:{index}:prediction")
    lines = []
    for item in truth.line_items:
        price, description = item.unit_price, item.description
        assert price is not None and description is not None  # a simulated truth fills both
        roll = rng.random()
        if roll < 0.04:
            continue  # a line dropped
        if roll < 0.10:
            item = item.model_copy(update={"unit_price": round(price * rng.uniform(0.5, 1.5), 2)})
        elif roll < 0.14:
            item = item.model_copy(update={"description": description.upper()})
        elif roll < 0.17:
            item = item.model_copy(update={"description": rng.choice(PRODUCTS)})
        lines.append(item)
    if truth.line_items and rng.random() < 0.15:
        lines.append(LineItem(sku=f"SKU-{index:06d}-999", description="Freight", unit_price=12.0))  # invented
    rng.shuffle(lines)
    update: dict = {"line_items": lines}
    if rng.random() < 0.08:
        update["total_amount"] = round((truth.total_amount or 0.0) * 1.1, 2)
    if rng.random() < 0.05:
        update["invoice_date"] = None
    return truth.model_copy(update=update)


def simulated_run(documents: int, items: int, seed: int = SEED) -> Iterator[tuple[Case, Invoice]]:
    """`(case, prediction)` pairs, one document at a time, so a run of any size streams.

    Case names are `sim-000000`, ...; each case's metadata says it is simulated.
    """
    for index in range(documents):
        truth = simulated_invoice(index, items, seed)
        case = Case(
            name=f"sim-{index:06d}",
            input=f"simulated invoice {truth.invoice_id} with {items} line items",
            expected_output=truth,
            metadata={"data": LABEL, "items": items},
            session_id=f"sim-{seed}-{index:06d}",
        )
        yield case, simulated_prediction(truth, index, seed)
