"""Four simulated models extracting one invoice set, and a label file with seeded errors.

Nothing here calls a model: the "models" are seeded extractors (`walkthroughs.simulated_runs`),
and their token counts, latencies and prices are made up. Every file written says so, and the
Choosing_A_Model walkthrough labels each table it shows as simulated.

What is planted, so that what the tool finds can be checked against it:

- `big-1` is the baseline; `small-a` makes the same mistakes at the same rates for a tenth of the
  price; `small-b` is as cheap and also returns the due date as `invoice_date` on invoices that
  print it first (a regression on one field); `large-2` misreads line descriptions half as often
  as `big-1`, at a higher price (better and dearer).
- The label file holds seeded label errors: `LABEL_ERRORS` of the labelled leaves (a date a month
  off, a total before tax, a line description from the line below) differ from what the invoice
  says. Each model reads the invoice, so where the label is wrong they agree with each other
  against it; `label_errors()` returns exactly which leaves were changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from walkthroughs.invoices import Invoice
from walkthroughs.simulated_runs import Extractor, SimulatedInvoice, extract, simulated_invoices

LABEL = "simulated"
SEED = 4242
DOCUMENTS = 120
SCHEMA = "walkthroughs.invoices:Invoice"
LABEL_ERRORS = 6  # leaves of the label file changed on purpose


@dataclass(frozen=True)
class Candidate:
    """A simulated model: its extractor, its made-up prices per million tokens and its speed."""

    model_id: str
    extractor: Extractor
    input_per_million: float
    output_per_million: float
    tokens_factor: float  # how many tokens this model's tokenizer makes of the same text
    latency_ms: float  # median per call


# Each model's error rates (clean scan, poor scan) per field: a capable model's, each mistake its own.
RATES = {
    "invoice_id": (0.01, 0.04),
    "vendor_name": (0.02, 0.10),
    "invoice_date": (0.01, 0.04),
    "total_amount": (0.02, 0.10),
    "line_items": (0.02, 0.10),
    "line_items.description": (0.02, 0.20),
}


def _rates(**changes: tuple[float, float]) -> dict[str, tuple[float, float]]:
    return {**RATES, **changes}


CANDIDATES = (
    Candidate("big-1", Extractor("big-1 (simulated)", 11, _rates()), 3.0, 15.0, 1.0, 2400.0),
    Candidate("small-a", Extractor("small-a (simulated)", 12, _rates()), 0.25, 1.25, 1.1, 700.0),
    Candidate("small-b", Extractor("small-b (simulated)", 13, _rates(), reads_due_date=True), 0.25, 1.25, 1.1, 650.0),
    Candidate(
        "large-2",
        Extractor("large-2 (simulated)", 14, _rates(**{"line_items.description": (0.005, 0.05)})),
        5.0,
        25.0,
        1.0,
        3100.0,
    ),
)


def invoices() -> list[SimulatedInvoice]:
    """The invoices every simulated model reads."""
    return simulated_invoices(DOCUMENTS, SEED)


def label_errors(documents: list[SimulatedInvoice]) -> list[dict[str, Any]]:
    """The leaves the label file gets wrong on purpose: case, path (as a leaf diff writes it), label, truth."""
    rng = np.random.default_rng([SEED, 99])
    chosen = rng.choice(len(documents), size=LABEL_ERRORS, replace=False)
    errors = []
    for number, index in enumerate(sorted(chosen.tolist())):
        truth = documents[index].truth
        kind = ("invoice_date", "total_amount", "line_items.description")[number % 3]
        if kind == "invoice_date":
            assert truth.invoice_date is not None
            wrong: Any = (truth.invoice_date + timedelta(days=31)).isoformat()
            errors.append(_error(documents[index].name, "invoice_date", wrong, truth.invoice_date.isoformat()))
        elif kind == "total_amount":
            wrong = round((truth.total_amount or 0.0) / 1.08, 2)
            errors.append(_error(documents[index].name, "total_amount", wrong, truth.total_amount))
        else:
            items = truth.line_items
            wrong = items[1].description
            errors.append(_error(documents[index].name, "line_items[0].description", wrong, items[0].description))
    return errors


def _error(case: str, path: str, label: Any, truth: Any) -> dict[str, Any]:
    return {"case": case, "path": path, "label": label, "truth": truth}


def labelled(documents: list[SimulatedInvoice]) -> dict[str, dict[str, Any]]:
    """Each document's label as the case file holds it: the truth, with the seeded errors applied."""
    labels = {invoice.name: invoice.truth.model_dump(mode="json") for invoice in documents}
    for error in label_errors(documents):
        label = labels[error["case"]]
        if error["path"].startswith("line_items["):
            label["line_items"][0]["description"] = error["label"]
        else:
            label[error["path"]] = error["label"]
    return labels


def usage(candidate: Candidate, invoice: SimulatedInvoice, rng: np.random.Generator) -> dict[str, int]:
    """Made-up tokens and latency of one call: a longer invoice costs more, each model its own way."""
    lines = len(invoice.truth.line_items)
    return {
        "calls": 1,
        "input_tokens": round((900 + 120 * lines) * candidate.tokens_factor),
        "output_tokens": round((70 + 40 * lines) * candidate.tokens_factor),
        "latency_ms": round(candidate.latency_ms * float(rng.lognormal(0.0, 0.25))),
    }


def write(folder: Path | str) -> dict[str, Path]:
    """Write the case file, one predictions file per model and the price table into `folder`.

    Returns each written file by name: `cases`, `prices`, and each model id.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    documents = invoices()
    labels = labelled(documents)
    written = {"cases": folder / "cases.jsonl", "prices": folder / "prices.json"}
    with written["cases"].open("w", encoding="utf-8") as cases:
        for invoice in documents:
            metadata = {"source": LABEL, "layout": invoice.layout}
            case = {"name": invoice.name, "input": f"{LABEL} invoice", "expected_output": labels[invoice.name]}
            cases.write(json.dumps(case | {"metadata": metadata}) + "\n")
    prices = {
        c.model_id: {"input_per_million": c.input_per_million, "output_per_million": c.output_per_million}
        for c in CANDIDATES
    }
    written["prices"].write_text(json.dumps(prices, indent=2) + "\n", encoding="utf-8")
    for candidate in CANDIDATES:
        outputs = extract(candidate.extractor, documents, SEED)
        rng = np.random.default_rng([SEED, candidate.extractor.stream, 7])
        path = written[candidate.model_id] = folder / f"{candidate.model_id}.predictions.jsonl"
        with path.open("w", encoding="utf-8") as lines:
            for invoice in documents:
                output: Invoice = outputs[invoice.name]
                line = {
                    "name": invoice.name,
                    "output": output.model_dump(mode="json"),
                    "model_id": candidate.model_id,
                    "usage": usage(candidate, invoice, rng),
                }
                lines.write(json.dumps(line) + "\n")
    return written
