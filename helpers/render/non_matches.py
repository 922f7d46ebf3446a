"""stickler's non-match records as flat rows, read the same way at every depth.

stickler keeps the reason of a top-level non-match under `details` and the reason of a
nested one (a list element) on the record itself. Reading both here means no caller prints
a blank reason. No pandas, so the offline notebook can use it with strands and stickler alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

COLUMNS = ("field", "kind", "expected", "predicted", "similarity", "reason")


def non_match_rows(non_matches: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One dict per record: field path, kind, both values, similarity and reason."""
    rows = []
    for record in non_matches:
        details = record.get("details") or {}
        kind = record.get("non_match_type")
        rows.append(
            {
                "field": record.get("field_path"),
                "kind": getattr(kind, "value", kind),
                "expected": record.get("ground_truth_value"),
                "predicted": record.get("prediction_value"),
                "similarity": record.get("similarity_score", details.get("similarity_score")),
                "reason": record.get("reason") or details.get("reason"),
            }
        )
    return rows
