"""Two simulated invoice extractors with known error rates, for testing a run comparison.

Nothing here calls a model. The invoices are generated from a fixed seed and each
"extractor" copies the ground truth, then breaks one field at a time with a stated
probability. Because the truth is known, a comparison of the two runs can be checked:
it should find the regression planted in the candidate, and it should not flag fields whose
error rate is the same in both runs. Everything produced here is labelled simulated.

The planted regression: a fifth of the invoices print the payment due date above the issue
date, and on exactly those the candidate returns the due date as `invoice_date`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
import pandas as pd
from strands_evals import Case

from walkthroughs.invoices import Invoice, LineItem

SEED = 20260
DOCUMENTS = 60
LABEL = "simulated"
CUSTOMER = "Northwind Traders"
TAX_RATE = 0.08
DUE_DAYS = 30
POOR_SCAN_SHARE = 0.5  # of the invoices, chosen at random
DUE_DATE_FIRST_SHARE = 0.2  # of the invoices, chosen independently: where the planted regression bites
VENDORS = (
    "Acme Corporation",
    "Beta Industries",
    "Gamma Ltd",
    "Delta LLC",
    "Epsilon SA",
    "Zeta Holdings",
    "Eta Logistics",
    "Theta Supplies",
    "Iota Manufacturing",
    "Kappa Foods",
    "Lambda Print Works",
    "Mu Office Partners",
)
PRODUCTS = (
    "Steel widget 40mm",
    "Brass hinge 20mm",
    "Rubber gasket kit",
    "Copper pipe 2m",
    "Hex bolt M8 box",
    "LED panel 60x60",
    "Safety gloves pair",
    "Printer toner black",
    "Oak shelf board",
    "Cable ties 100pk",
    "Ball bearing 6204",
    "Pressure valve 1in",
)

# What each error looks like, keyed by the field path it damages.
ERRORS = {
    "invoice_id": 'drops the "INV-" prefix',
    "vendor_name": f"returns the customer's name ({CUSTOMER})",
    "invoice_date": "leaves the date empty",
    "total_amount": "returns the subtotal before tax",
    "line_items": "adds the tax row as a line item",
    "line_items.description": "copies the next line's description (rate per line)",
}


@dataclass(frozen=True)
class Extractor:
    """A simulated extractor: how often it makes each error on clean and on poor scans."""

    name: str
    stream: int  # picks this extractor's own random stream, so its mistakes are its own
    rates: dict[str, tuple[float, float]]  # field -> (rate on clean scans, rate on poor scans)
    reads_due_date: bool = False  # the planted regression

    def rate(self, field: str, poor_scan: bool) -> float:
        """The probability of the error on `field` for a document of this scan quality."""
        return self.rates[field][1 if poor_scan else 0]


# Errors cluster on poor scans, as they do on real documents. Both extractors misread line
# descriptions there; the baseline also misreads vendor, total and lines, which the candidate
# fixes. `invoice_id`, `invoice_date` (apart from the planted bug) and descriptions are the
# same in both runs, so any difference on them is noise.
BASELINE = Extractor(
    name="baseline (simulated)",
    stream=1,
    rates={
        "invoice_id": (0.05, 0.05),
        "vendor_name": (0.10, 0.60),
        "invoice_date": (0.05, 0.05),
        "total_amount": (0.10, 0.60),
        "line_items": (0.10, 0.60),
        "line_items.description": (0.02, 0.40),
    },
)
CANDIDATE = Extractor(
    name="candidate (simulated)",
    stream=2,
    rates={
        "invoice_id": (0.05, 0.05),
        "vendor_name": (0.05, 0.05),
        "invoice_date": (0.05, 0.05),
        "total_amount": (0.05, 0.05),
        "line_items": (0.05, 0.05),
        "line_items.description": (0.02, 0.40),
    },
    reads_due_date=True,
)


@dataclass(frozen=True, slots=True)
class SimulatedInvoice:
    """One generated invoice: its ground truth, its scan quality and its date layout."""

    name: str
    truth: Invoice
    poor_scan: bool
    due_date_first: bool

    @property
    def due_date(self) -> date:
        """The payment due date printed on the invoice, `DUE_DAYS` after issue."""
        assert self.truth.invoice_date is not None
        return self.truth.invoice_date + timedelta(days=DUE_DAYS)

    @property
    def layout(self) -> str:
        """Scan quality and date layout, as shown in tables."""
        dates = "due date first" if self.due_date_first else "issue date first"
        return f"{'poor' if self.poor_scan else 'clean'} scan, {dates}"


def simulated_invoices(count: int = DOCUMENTS, seed: int = SEED) -> list[SimulatedInvoice]:
    """Generate `count` invoices: exactly `POOR_SCAN_SHARE` of them (rounded down) poor scans, and
    exactly `DUE_DATE_FIRST_SHARE` (rounded down), chosen independently, printing the due date first.

    Exact shares rather than coin flips, so the planted regression touches the same share of
    invoices under every seed.
    """
    rng = np.random.default_rng(seed)
    poor = set(rng.choice(count, size=int(count * POOR_SCAN_SHARE), replace=False).tolist())
    due_first = set(rng.choice(count, size=int(count * DUE_DATE_FIRST_SHARE), replace=False).tolist())
    invoices = []
    for index in range(count):
        lines = int(rng.integers(2, 6))
        products = rng.choice(len(PRODUCTS), size=lines, replace=False)
        items = [
            LineItem(
                sku=f"SKU-{int(rng.integers(100, 1000))}",
                description=PRODUCTS[product],
                unit_price=round(float(rng.uniform(5, 400)), 2),
            )
            for product in products
        ]
        subtotal = sum(item.unit_price or 0.0 for item in items)
        truth = Invoice(
            invoice_id=f"INV-{1001 + index}",
            vendor_name=VENDORS[int(rng.integers(len(VENDORS)))],
            invoice_date=date(2025, 1, 1) + timedelta(days=int(rng.integers(0, 365))),
            total_amount=round(subtotal * (1 + TAX_RATE), 2),
            line_items=items,
        )
        name = f"sim-{index + 1:02d}"
        invoices.append(SimulatedInvoice(name, truth, index in poor, index in due_first))
    return invoices


def extract(extractor: Extractor, invoices: list[SimulatedInvoice], seed: int = SEED) -> dict[str, Invoice]:
    """Run a simulated extractor over `invoices`: its prediction for each, by case name.

    Every invoice draws the same number of random values whatever happens, so changing one
    rate does not reshuffle the mistakes made on other fields. A line item read correctly is the
    truth's own `LineItem` (nothing here or downstream changes a prediction in place): copying each
    one was half the time of the 1,000 extractions the Compare_Runs walkthrough makes.
    """
    rng = np.random.default_rng([seed, extractor.stream])
    predictions = {}
    for invoice in invoices:
        truth, poor = invoice.truth, invoice.poor_scan
        fails = {
            field: draw < extractor.rate(field, poor)
            for field, draw in zip(ERRORS, rng.random(len(ERRORS)), strict=True)
        }
        line_draws = rng.random(len(truth.line_items))
        items = [
            item.model_copy(
                update={"description": truth.line_items[(position + 1) % len(truth.line_items)].description}
            )
            if line_draws[position] < extractor.rate("line_items.description", poor)
            else item
            for position, item in enumerate(truth.line_items)
        ]
        if fails["line_items"]:
            tax = round((truth.total_amount or 0.0) - sum(item.unit_price or 0.0 for item in truth.line_items), 2)
            items.append(LineItem(sku=None, description=f"Sales tax {TAX_RATE:.0%}", unit_price=tax))
        invoice_date = truth.invoice_date
        if extractor.reads_due_date and invoice.due_date_first:
            invoice_date = invoice.due_date
        if fails["invoice_date"]:
            invoice_date = None
        total = truth.total_amount or 0.0
        predictions[invoice.name] = truth.model_copy(
            update={
                "invoice_id": truth.invoice_id.removeprefix("INV-") if fails["invoice_id"] else truth.invoice_id,
                "vendor_name": CUSTOMER if fails["vendor_name"] else truth.vendor_name,
                "invoice_date": invoice_date,
                "total_amount": round(total / (1 + TAX_RATE), 2) if fails["total_amount"] else total,
                "line_items": items,
            }
        )
    return predictions


def simulated_cases(invoices: list[SimulatedInvoice]) -> list[Case]:
    """One Strands Evals case per invoice, with its layout in the metadata."""
    return [
        Case(
            name=invoice.name,
            input=f"{LABEL} invoice {invoice.truth.invoice_id}",
            expected_output=invoice.truth,
            metadata={"source": LABEL, "layout": invoice.layout},
        )
        for invoice in invoices
    ]


# The verdict a sound comparison should reach on each field, given the rates above. Fields with
# no simulated error (`line_items.sku`, `line_items.unit_price`) should show no change either.
EXPECTED_VERDICTS = {
    "invoice_id": "no clear change",
    "vendor_name": "improved",
    "invoice_date": "regressed",
    "total_amount": "improved",
    "line_items": "improved",
    "line_items.description": "no clear change",
}
PLANTED = "returns the due date on invoices that print it first (planted regression)"


def error_rates() -> pd.DataFrame:
    """The known truth: each simulated error and how often each extractor makes it, by scan quality.

    Columns are named after the extractors (`baseline (simulated) poor`), so the table says it
    is simulated wherever it is shown.
    """

    def row(field: str, error: str, baseline: tuple[float, float], candidate: tuple[float, float]) -> dict:
        rates = {BASELINE.name: baseline, CANDIDATE.name: candidate}
        return {"field": field, "error": error} | {
            f"{name} {quality}": rate[column]
            for name, rate in rates.items()
            for column, quality in enumerate(("clean", "poor"))
        }

    rows = [row(field, error, BASELINE.rates[field], CANDIDATE.rates[field]) for field, error in ERRORS.items()]
    share = DUE_DATE_FIRST_SHARE
    rows.insert(3, row("invoice_date", PLANTED, (0.0, 0.0), (share, share)))
    return pd.DataFrame(rows)
