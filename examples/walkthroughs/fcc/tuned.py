"""The FCC schema as a tuned stickler `StructuredModel`: explicit comparators, thresholds, weights.

Its fields and descriptions are the plain schema's, so an agent bound to it sees the same tool
spec; only how stickler scores each field differs. `date_comparison` shows why the dates are
declared with `DateComparator` here while the plain `str` dates fall back to edit distance.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import stickler
from pydantic import BaseModel
from stickler import (
    ComparableField,
    DateComparator,
    ExactComparator,
    LevenshteinComparator,
    NumericComparator,
    StructuredModel,
)

from walkthroughs.fcc.schema import FccInvoice, FccLineItem


def _described(model: type[BaseModel], name: str) -> str | None:
    """The plain schema's description of a field, so both schemas tell the model the same."""
    return model.model_fields[name].description


class FccLineItemTuned(StructuredModel):
    """One line of the invoice: a program or daypart, its flight dates, air days and rate."""

    # The docstring above is the plain schema's: it travels to the model as the description,
    # so the comparison choices are explained here instead. Dates are compared as dates
    # (2016-10-05 matches a printed 10/05/16, 10/06/16 does not); the rate to the cent; air
    # days exactly. `match_threshold` is the score at which a predicted line pairs with a
    # labelled one (Hungarian matching reads it from this element class).
    match_threshold: ClassVar[float] = 0.75

    LineItemDescription: str | None = ComparableField(
        comparator=LevenshteinComparator(),
        threshold=0.7,
        weight=1.0,
        description=_described(FccLineItem, "LineItemDescription"),
    )
    LineItemStartDate: str | None = ComparableField(
        comparator=DateComparator(),
        threshold=0.95,
        weight=1.5,
        description=_described(FccLineItem, "LineItemStartDate"),
    )
    LineItemEndDate: str | None = ComparableField(
        comparator=DateComparator(), threshold=0.95, weight=1.5, description=_described(FccLineItem, "LineItemEndDate")
    )
    LineItemDays: str | None = ComparableField(
        comparator=ExactComparator(case_sensitive=False),
        threshold=1.0,
        weight=0.5,
        description=_described(FccLineItem, "LineItemDays"),
    )
    LineItemRate: float | None = ComparableField(
        comparator=NumericComparator(absolute_tolerance=0.005),
        threshold=1.0,
        weight=2.0,
        description=_described(FccLineItem, "LineItemRate"),
    )


class FccInvoiceTuned(StructuredModel):
    """An FCC political-advertising invoice from a broadcast station."""

    # Amounts must match to the cent and weigh double; names tolerate OCR noise up to 0.8.
    # `match_threshold` is declared here, but StructuredOutputSimilarity passes its own
    # (default 0.7) to stickler, which overrides it: pass it to the evaluator explicitly.

    match_threshold: ClassVar[float] = 0.8

    Agency: str = ComparableField(
        comparator=LevenshteinComparator(), threshold=0.8, weight=1.0, description=_described(FccInvoice, "Agency")
    )
    Advertiser: str = ComparableField(
        comparator=LevenshteinComparator(), threshold=0.8, weight=1.0, description=_described(FccInvoice, "Advertiser")
    )
    GrossTotal: float | None = ComparableField(
        comparator=NumericComparator(absolute_tolerance=0.005),
        threshold=1.0,
        weight=2.0,
        description=_described(FccInvoice, "GrossTotal"),
    )
    PaymentTerms: str | None = ComparableField(
        comparator=LevenshteinComparator(),
        threshold=0.7,
        weight=0.5,
        description=_described(FccInvoice, "PaymentTerms"),
    )
    AgencyCommission: float | None = ComparableField(
        comparator=NumericComparator(absolute_tolerance=0.005),
        threshold=1.0,
        weight=1.0,
        description=_described(FccInvoice, "AgencyCommission"),
    )
    NetAmountDue: float | None = ComparableField(
        comparator=NumericComparator(absolute_tolerance=0.005),
        threshold=1.0,
        weight=2.0,
        description=_described(FccInvoice, "NetAmountDue"),
    )
    LineItems: list[FccLineItemTuned] = ComparableField(weight=2.0, description=_described(FccInvoice, "LineItems"))


def date_comparison(label: str, predictions: Iterable[str]) -> list[dict[str, Any]]:
    """Score printed-date variants under edit distance and under the date comparator.

    Each bar is read from the schema's own configuration: what stickler infers for the plain
    `str` date (`LevenshteinComparator@0.7`) and what `FccLineItemTuned` declares (0.95).
    """
    path = "LineItems.LineItemStartDate"
    edit, dates = LevenshteinComparator(), DateComparator()
    edit_bar = stickler.eval_for(FccInvoice).explain()[path]["threshold"]
    date_bar = stickler.eval_for(FccInvoiceTuned).explain()[path]["threshold"]
    rows = []
    for prediction in predictions:
        edit_score, date_score = edit.compare(label, prediction), dates.compare(label, prediction)
        rows.append(
            {
                "label": label,
                "prediction": prediction,
                "levenshtein": round(edit_score, 3),
                "levenshtein_match": edit_score >= edit_bar,
                "date": round(date_score, 3),
                "date_match": date_score >= date_bar,
            }
        )
    return rows
