"""The schema of the "Evaluate your own agent" walkthrough: a purchase order, as a user would keep it.

The notebook defines the same classes in a cell to show them; the commands and any saved
experiment name them as `purchase_order:PurchaseOrder`, which is why they live in a module too:
`StructuredOutputSimilarity` records its model as a dotted path, and a class defined in a
notebook cell (`__main__.PurchaseOrder`) cannot be imported again later.
"""

from datetime import date

from pydantic import BaseModel


class OrderLine(BaseModel):
    sku: str
    description: str
    quantity: int
    unit_price: float


class PurchaseOrder(BaseModel):
    po_number: str
    buyer: str
    supplier: str
    order_date: date | None = None
    currency: str
    lines: list[OrderLine]
    total: float
