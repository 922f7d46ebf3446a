"""A synthetic run for the report page at scale: documents made here, each with two wrong leaves.

Nothing is scored: the rows have the shape `fieldeval.report.content.document_rows` gives, so the
page's size and paging can be measured at 10,000 documents in well under a second.
"""

from __future__ import annotations

from pathlib import Path

from fieldeval.compare.reading import Document, Run
from fieldeval.report.content import Content, Side, field_table


def synthetic_content(documents: int = 10_000) -> Content:
    """A run of `documents` synthetic documents, each a list item below the threshold and its culprit leaf."""
    names = [f"doc-{index:05d}" for index in range(documents)]
    run = Run("synthetic", {name: Document(0.8, "Synthetic", {"lines": (9, 1, 0, 0, 1, 0)}) for name in names}, {})
    item = ["below threshold", '{"sku":"A-1","qty":5}', '{"sku":"A-1","qty":6}', "Line", "0.500", "", "0.200"]
    leaf = ["below threshold", "5", "6", "NumericComparator", "0.000", "0.500", "0.200"]  # each costs 1 - 0.8
    rows = [
        [
            name,
            0.8,
            index % 3 != 0,
            [[f"lines[{index % 7}]", "lines", *item], [f"lines[{index % 7}].qty", "lines.qty", *leaf]],
        ]
        for index, name in enumerate(names)
    ]
    side = Side(path=Path("synthetic.json"), run=run)  # a name only: no file is read or written
    return Content(title="synthetic run", new=side, field_table=field_table(run), documents=rows)
