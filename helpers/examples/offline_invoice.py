"""The offline invoice exchange: its document, ground truth, prompt and fixture location.

The notebook that replays the exchange and the command that re-records it both read these,
so the document the model sees, the answer it is scored against and the question it is asked
are defined once.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from helpers.examples.invoices import DATA_DIR, Invoice, LineItem
from helpers.exchanges.fixtures import EXCHANGES_DIR

DOCUMENT_PATH: Path = DATA_DIR / "offline_invoice.txt"
FIXTURE_PATH: Path = EXCHANGES_DIR / "offline_invoice.json"
RECORD_COMMAND = "make record"
OUTPUT_MODEL = Invoice

GROUND_TRUTH = Invoice(
    invoice_id="NW-2026-0417",
    vendor_name="Northwind Office Supply",
    invoice_date=date(2026, 4, 17),
    total_amount=1284.50,
    line_items=[
        LineItem(sku="NW-1001", description="Ergonomic office chair", unit_price=689.00),
        LineItem(sku="NW-2040", description="Standing desk frame", unit_price=412.00),
        LineItem(sku="NW-3310", description="Monitor arm, dual", unit_price=126.50),
        LineItem(sku="NW-0087", description="Cable management kit", unit_price=57.00),
    ],
)

_PROMPT_TEMPLATE = """Extract the invoice below into the Invoice structure.
Copy identifiers exactly as printed, give amounts in dollars as numbers, and list every line item.

<document>
{document}</document>"""


def document() -> str:
    """The invoice text the agent reads (hand-authored; not a real invoice)."""
    return DOCUMENT_PATH.read_text(encoding="utf-8")


def prompt() -> str:
    """The user message sent to the agent, with the document embedded."""
    return _PROMPT_TEMPLATE.format(document=document())
