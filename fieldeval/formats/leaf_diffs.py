"""Each document's leaf diff, stored in a saved run as data, so `report` shows it without importing anything.

A leaf diff is computed with the schema's own comparators (`fieldeval.attribution.leaves`), so it
needs the schema class; a saved run only names it. Rather than import a module because a file
names it, `score --out` computes every document's leaf diff while it has the schema (the one its
command line named) and writes it into the saved report as the top-level `"leaf_diffs"` object,
beside `"run"`. pydantic ignores both keys, so Strands Evals' `StructuredOutputReport.from_file`
still reads the file, and `report RUN.json` shows the leaf diffs, the failures by kind and the
re-paired list items from this data alone::

    "leaf_diffs": {"format": 1,
                   "columns": ["path", "kind", "expected", "got", "comparator", "threshold", "weight",
                               "score", "share", "cost", "item"],
                   "documents": [{"name": "INV-003", "score": 0.8, "reason": "",
                                  "leaves": [["total_amount", "wrong value", 310.0, 311.5, "NumericComparator",
                                              1.0, 1.0, 0.99, null, 0.2, null]],
                                  "pairings": {"line_items[0]": [0, 1.0, 0.7]}}]}

Each leaf is one row in `columns` order (what `Leaf.row()` gives); a pairing is `[the predicted
item's index or null, the pair's similarity or null, the item class's match threshold]`. The
reader refuses what a page could not show truthfully: an unknown kind, a row of the wrong length,
a number that is not finite, a negative index. This module imports only pydantic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import to_json

from fieldeval.formats.errors import FormatError, file_error, validation_problem

LEAF_DIFFS_KEY = "leaf_diffs"
FORMAT = 1
LEAF_COLUMNS = (
    "path",
    "kind",
    "expected",
    "got",
    "comparator",
    "threshold",
    "weight",
    "score",
    "share",
    "cost",
    "item",
)
FIX = (
    "re-score the run with `score --out` to store its leaf diffs again, or pass --schema module:Class to compute "
    "them from your schema"
)

Number = Annotated[float, Field(allow_inf_nan=False)]
Kind = Literal["missing", "invented", "wrong value", "partial", "below threshold", "unreadable"]


class LeafDiffsError(FormatError):
    """Stored leaf diffs that cannot be read; the message names the file, the field and the fix."""


class StoredLeaf(BaseModel):
    """One leaf (or whole list item) that cost a document points, as `fieldeval.attribution.leaves.Leaf` holds it."""

    model_config = ConfigDict(extra="forbid")

    path: str
    kind: Kind
    expected: Any = None
    got: Any = None
    comparator: str | None = None
    threshold: Number | None = None
    weight: Number | None = None
    score: Number | None = None
    share: Number | None = None
    cost: Number | None = None
    item: str | None = None


class StoredDocument(BaseModel):
    """One document's leaf diff and its list items' partners."""

    model_config = ConfigDict(extra="forbid")

    name: str
    score: Number | None = None
    reason: str = ""
    leaves: list[StoredLeaf] = []
    pairings: dict[str, tuple[Annotated[int, Field(ge=0)] | None, Number | None, Number]] = {}

    @field_validator("leaves", mode="before")
    @classmethod
    def _rows(cls, rows: Any) -> Any:
        """Each row (a list in `LEAF_COLUMNS` order) as the leaf's fields."""
        if not isinstance(rows, list):
            return rows
        found = []
        for row in rows:
            if isinstance(row, list) and len(row) != len(LEAF_COLUMNS):
                raise ValueError(f"a leaf row has {len(row)} values; a row has one per column, {len(LEAF_COLUMNS)}")
            found.append(dict(zip(LEAF_COLUMNS, row, strict=True)) if isinstance(row, list) else row)
        return found


class StoredDiffs(BaseModel):
    """Every leaf diff of one saved run, in case order."""

    model_config = ConfigDict(extra="forbid")

    format: Literal[1]
    columns: tuple[str, ...]
    documents: list[StoredDocument]

    @field_validator("columns")
    @classmethod
    def _columns(cls, columns: tuple[str, ...]) -> tuple[str, ...]:
        if columns != LEAF_COLUMNS:
            raise ValueError(f"the columns are {list(columns)}; this version reads {list(LEAF_COLUMNS)}")
        return columns


def read_leaf_diffs(data: Mapping[str, Any], source: Path | str) -> StoredDiffs | None:
    """The leaf diffs a saved report's JSON holds, None when it holds none (saved before runs stored them).

    Raises:
        LeafDiffsError: Naming the file, the field and the fix, when they are there but malformed.
    """
    stored = data.get(LEAF_DIFFS_KEY)
    if stored is None:
        return None
    try:
        return StoredDiffs.model_validate(stored)
    except ValidationError as exc:
        field, problem = validation_problem(exc, (LEAF_DIFFS_KEY,), LEAF_DIFFS_KEY)
        raise LeafDiffsError(file_error(source, problem, FIX, field=field)) from None


def leaf_diffs_json(documents: Iterable[Mapping[str, Any]]) -> str:
    """The `"leaf_diffs"` value as JSON text, one document a line, so a saved run stays readable and diffable.

    `documents` are `StoredDocument`-shaped mappings. A value JSON has no word for is written as
    pydantic writes the report's own outputs: a date as ISO text, NaN as null, anything else as its text.
    """
    lines = [to_json(document, inf_nan_mode="null", fallback=str).decode() for document in documents]
    head = f'{{"format": {FORMAT}, "columns": {json.dumps(list(LEAF_COLUMNS))}, "documents": ['
    return head + ("\n  " + ",\n  ".join(lines) + "\n" if lines else "") + "]}"
