"""The purchase order as scored with `po_number` compared exactly: a stickler `StructuredModel`.

The agent still answers with `purchase_order.PurchaseOrder`; only the scoring changes, by
passing this class to the evaluator: `StructuredOutputSimilarity(PurchaseOrderTuned)` reads each
output through its JSON form, so a `PurchaseOrder` scores as this model.

A `StructuredModel` is used as configured and infers nothing, so every field names its
comparator and threshold. Each is the one stickler infers for `PurchaseOrder` (its `explain()`),
except `po_number`: the prompt asks for it copied exactly, so it gets `ExactComparator` instead
of edit distance at 0.7, and "PO-1008" for "PO-1001" is a miss. `default=...` keeps a field
required, as it is in `PurchaseOrder` (a `ComparableField` is optional otherwise).

`order_date` is held as its ISO string ("2026-03-02"), not as a `date`. stickler 1.0.0 compares
a field's values only when they are strings, numbers, lists, models or dicts; a `datetime.date`
value is none of these and scores 0.0, a false discovery, even against the same date, whatever
comparator the field names. `IsoDate` turns a `date` into its ISO string as the value is read,
as the models stickler infers do, and `DateComparator` parses the strings.
"""

from datetime import date
from typing import Annotated

from pydantic import BeforeValidator
from stickler import (
    ComparableField,
    DateComparator,
    ExactComparator,
    FuzzyComparator,
    LevenshteinComparator,
    NumericComparator,
    StructuredModel,
)


def _iso(value: object) -> object:
    return value.isoformat() if isinstance(value, date) else value


IsoDate = Annotated[str, BeforeValidator(_iso)]  # a date, or its ISO string, held as the string


class OrderLineTuned(StructuredModel):
    sku: str = ComparableField(comparator=ExactComparator(), threshold=1.0, default=...)
    description: str = ComparableField(
        comparator=FuzzyComparator(method="token_set_ratio"), threshold=0.6, clip_under_threshold=False, default=...
    )
    quantity: int = ComparableField(comparator=NumericComparator(), threshold=1.0, default=...)
    unit_price: float = ComparableField(
        comparator=NumericComparator(relative_tolerance=0.001), threshold=0.95, default=...
    )


class PurchaseOrderTuned(StructuredModel):
    po_number: str = ComparableField(comparator=ExactComparator(), threshold=1.0, default=...)  # the one change
    buyer: str = ComparableField(comparator=LevenshteinComparator(), threshold=0.7, default=...)
    supplier: str = ComparableField(comparator=LevenshteinComparator(), threshold=0.7, default=...)
    order_date: IsoDate | None = ComparableField(comparator=DateComparator(), threshold=0.95)  # not `date`
    currency: str = ComparableField(comparator=LevenshteinComparator(), threshold=0.7, default=...)
    lines: list[OrderLineTuned] = ComparableField(default=...)  # items pair at OrderLineTuned.match_threshold, 0.7
    total: float = ComparableField(comparator=NumericComparator(relative_tolerance=0.001), threshold=0.95, default=...)
