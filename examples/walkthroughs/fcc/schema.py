"""The FCC extraction schema and prompt: what the agent is asked to return.

Plain Pydantic, every nullable field `Optional`, so the tool spec the agent registers tells
the model exactly which fields it may leave null. The comparison configuration lives apart,
in `tuned.py`, because none of it reaches the model.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

# OCR text beyond this many characters is cut before it reaches the model. 40,000
# characters is about 10,000 tokens: room for every invoice of at most 12 line items with
# its boilerplate, while one runaway document cannot dominate the run's cost and latency.
# The documents table says whether a document was cut.
MAX_TEXT_CHARS = 40_000


class FccLineItem(BaseModel):
    """One line of the invoice: a program or daypart, its flight dates, air days and rate."""

    LineItemDescription: str | None = Field(None, description="Program or daypart as printed")
    LineItemStartDate: str | None = Field(None, description="First air date, as printed")
    LineItemEndDate: str | None = Field(None, description="Last air date, as printed")
    LineItemDays: str | None = Field(None, description="Air days as printed, e.g. M-F")
    LineItemRate: float | None = Field(None, description="Rate per spot, in dollars")


class FccInvoice(BaseModel):
    """An FCC political-advertising invoice from a broadcast station."""

    Agency: str = Field(description="Advertising agency billed, as printed")
    Advertiser: str = Field(description="Advertiser or campaign, as printed")
    GrossTotal: float | None = Field(None, description="Gross total, in dollars")
    PaymentTerms: str | None = Field(None, description="Payment terms as printed")
    AgencyCommission: float | None = Field(None, description="Agency commission, in dollars")
    NetAmountDue: float | None = Field(None, description="Net amount due, in dollars")
    LineItems: list[FccLineItem] = Field(description="Every line-item row, in document order")


PROMPT = """Extract the fields of this FCC political-advertising invoice.

- Return null for any field that is not on the document; never guess a value.
- Transcribe dates exactly as printed (10/05/16 stays 10/05/16).
- Include every line-item row, one entry per row, in the order printed.
- Write amounts as plain numbers in dollars, without currency symbols or commas.

<document>
{text}
</document>"""


def build_prompt(text: str) -> str:
    """The extraction prompt for one document, its OCR text cut at `MAX_TEXT_CHARS`."""
    return PROMPT.format(text=text[:MAX_TEXT_CHARS])
