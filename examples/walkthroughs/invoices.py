"""The invoice schemas and the hand-authored reference cases the notebooks score.

The models live here, not in a notebook, so an experiment saved with `Experiment.to_file`
reloads: `StructuredOutputSimilarity` records its model as a dotted path, and a class
defined in `__main__` has no path another process can import.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, Field, TypeAdapter, ValidationError
from stickler import (
    ComparableField,
    DateComparator,
    ExactComparator,
    FuzzyComparator,
    LevenshteinComparator,
    NumericComparator,
    StructuredModel,
)

from helpers.fixtures import DATA_DIR as REPO_DATA_DIR
from helpers.fixtures import CaseRecord, read_cases, read_predictions, refusal

DATA_DIR = REPO_DATA_DIR / "invoices"
# Hand-authored, in the case and predictions formats every user brings (read by `helpers.fixtures`).
REFERENCE_CASES = DATA_DIR / "reference_cases.jsonl"
REFERENCE_PREDICTIONS = DATA_DIR / "reference_predictions.jsonl"
SPARSE_CASES = DATA_DIR / "sparse_cases.jsonl"
SPARSE_PREDICTIONS = DATA_DIR / "sparse_predictions.jsonl"


class LineItem(BaseModel):
    """One billed line of an invoice."""

    sku: str | None = None
    description: str | None = None
    unit_price: float | None = None


class Invoice(BaseModel):
    """The reference invoice schema: five fields, one of them a list of objects."""

    invoice_id: str = Field(description="Invoice number exactly as printed")
    vendor_name: str = Field(description="Name of the company that issued the invoice")
    invoice_date: date | None = Field(default=None, description="Date of issue")
    total_amount: float | None = Field(default=None, description="Amount due, in dollars")
    line_items: list[LineItem] = Field(description="Every billed line, in any order")


class SparseInvoice(BaseModel):
    """A sparse schema: two required strings and eight optional fields usually left blank.

    `invoice_date` is typed `str` on purpose: the notebook shows what that costs.
    """

    invoice_id: str
    vendor_name: str
    invoice_date: str | None = None
    total_amount: float | None = None
    tax_amount: float | None = None
    po_number: str | None = None
    payment_terms: str | None = None
    shipping_address: str | None = None
    billing_address: str | None = None
    notes: str | None = None


class CreditNote(BaseModel):
    """Another document type that happens to carry every `Invoice` field, plus a reason.

    Read as an `Invoice` it validates: the extra field is dropped without a word.
    """

    invoice_id: str
    vendor_name: str
    invoice_date: date | None = None
    total_amount: float | None = None
    line_items: list[LineItem]
    credit_reason: str


class Receipt(BaseModel):
    """A till receipt: shares `vendor_name` and `total_amount` with `Invoice` but has no line items."""

    receipt_number: str
    vendor_name: str
    total_amount: float


# What `eval_for` infers for a float amount: within 0.1% of the expected value.
AMOUNT_COMPARATOR = NumericComparator(relative_tolerance=0.001)

# A date validated as a date, then held as its ISO text. stickler's comparison engine hands a
# field's comparator strings, numbers, dicts, plain pydantic models and a list's items, never a
# `date` object: that is scored 0 as a type mismatch without reaching `DateComparator`.
# `eval_for(Invoice)` does the same: its generated model holds `invoice_date` as ISO text.
# Unlike a plain `str`, this still refuses text that is not a date, and the comparator that
# scores it is `DateComparator`. The field is typed `str` (what it holds), so pydantic
# serializes it without warnings.
_DATE = TypeAdapter(date)


def _iso_date(value: Any) -> str:
    """A `date`, or anything pydantic reads as one, as its ISO text; anything else is refused."""
    try:
        return _DATE.validate_python(value).isoformat()
    except ValidationError as exc:
        raise ValueError(exc.errors(include_url=False)[0]["msg"]) from None


IsoDate = Annotated[str, BeforeValidator(_iso_date)]


class WeightedLineItem(StructuredModel):
    """`LineItem` configured explicitly, exactly as `eval_for` infers it for `LineItem`."""

    # Hungarian matching pairs two items when their similarity reaches this (eval_for's default).
    match_threshold: ClassVar[float] = 0.7

    sku: str | None = ComparableField(comparator=ExactComparator(), threshold=1.0, default=None)
    # Free text keeps partial credit: token-set similarity, not clipped under its threshold.
    description: str | None = ComparableField(
        comparator=FuzzyComparator(method="token_set_ratio"), threshold=0.6, clip_under_threshold=False, default=None
    )
    unit_price: float | None = ComparableField(comparator=AMOUNT_COMPARATOR, threshold=0.95, default=None)


class WeightedInvoice(StructuredModel):
    """`Invoice` with the fields an invoice always has weighted three times as heavily.

    A `StructuredModel` is used as configured, so every field states its comparator; the
    choices copy what `eval_for` infers for `Invoice` (tests check it field by field), and only
    the weights differ.
    """

    match_threshold: ClassVar[float] = 0.7

    invoice_id: str = ComparableField(comparator=ExactComparator(), threshold=1.0, weight=1.0, default=...)
    vendor_name: str = ComparableField(comparator=LevenshteinComparator(), threshold=0.85, weight=1.0, default=...)
    invoice_date: IsoDate | None = ComparableField(
        comparator=DateComparator(), threshold=0.95, weight=3.0, default=None
    )
    total_amount: float | None = ComparableField(comparator=AMOUNT_COMPARATOR, threshold=0.95, weight=3.0, default=None)
    line_items: list[WeightedLineItem] = ComparableField(weight=1.0, default=...)


def comparison_settings(config: dict[str, Any]) -> dict[str, Any]:
    """A stickler `to_stickler_config()` export without its weights and class names.

    Two models whose settings are equal compare every field alike (comparator and its
    options, threshold, clipping, list matching); the notebook and the tests use this to
    check that `WeightedInvoice` differs from what stickler infers for `Invoice` only in weight.
    """
    kept = {key: value for key, value in config.items() if key not in ("weight", "model_name")}
    if "fields" in kept:
        kept["fields"] = {name: comparison_settings(field) for name, field in kept["fields"].items()}
    return kept


@dataclass(frozen=True)
class ReferenceCase:
    """One hand-authored case: a ground truth and a prediction with one thing broken."""

    name: str
    broken: str
    ground_truth: BaseModel
    prediction: BaseModel


def load_cases(cases: Path | str, predictions: Path | str, schema: type[BaseModel]) -> list[ReferenceCase]:
    """Read a case file and its predictions file (the general formats), each record validated as `schema`.

    What each case breaks is its `metadata.broken`; the cases have no document, so `input` is empty.

    Raises:
        CaseFileError: As `helpers.fixtures.read_cases` and `read_predictions`, and for a
            case without `metadata.broken`.
    """
    records = read_cases(cases, schema)
    outputs = read_predictions(predictions, schema, [record.name for record, _ in records])
    return [
        ReferenceCase(record.name, _broken(cases, record), truth, outputs[record.name]) for record, truth in records
    ]


def _broken(path: Path | str, record: CaseRecord) -> str:
    broken = (record.metadata or {}).get("broken")
    if not isinstance(broken, str):
        fix = "say in words what this case breaks, or 'nothing'"
        raise refusal(path, f"case {record.name!r}, field 'metadata.broken'", "is missing or not text", fix)
    return broken


def reference_cases() -> list[ReferenceCase]:
    """The six reference invoices: perfect, case-only, amount-off, missing, extra-line, wrong."""
    return load_cases(REFERENCE_CASES, REFERENCE_PREDICTIONS, Invoice)


def sparse_cases() -> list[ReferenceCase]:
    """The three sparse-schema scenarios: found nothing, both correct, vendor wrong."""
    return load_cases(SPARSE_CASES, SPARSE_PREDICTIONS, SparseInvoice)
