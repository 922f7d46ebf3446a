"""Leaf diffs to and from the data a saved run stores (`fieldeval.formats.leaf_diffs`).

`score --out` turns each document's `DocumentDiff` (and its list items' partners) into plain data
while it holds the schema; `report` turns that data back into the same `DocumentDiff`s and
partners, so the page, the failures by kind and the re-paired items read the same whether the
diffs were computed now or stored then, and the report imports no schema to show them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from fieldeval.attribution.leaves import DocumentDiff, Leaf, failures_of
from fieldeval.attribution.pairing import Partner, pairings
from fieldeval.formats.leaf_diffs import LEAF_COLUMNS, StoredDiffs


def stored_document(diff: DocumentDiff) -> dict[str, Any]:
    """One document's leaf diff as data: its leaves as rows, and each labelled list item's partner."""
    partners = pairings(*diff.models) if diff.models is not None else {}
    return {
        "name": diff.name,
        "score": diff.score,
        "reason": diff.reason,
        "leaves": [[getattr(leaf, column) for column in LEAF_COLUMNS] for leaf in diff.leaves],
        "pairings": {path: [p.index, p.similarity, p.threshold] for path, p in partners.items()},
    }


def stored_failures(documents: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """Each document's failures by kind (`kinds.run_failures`), from its leaf diff as data."""
    return {
        document["name"]: failures_of(Leaf(**dict(zip(LEAF_COLUMNS, row, strict=True))) for row in document["leaves"])
        for document in documents
    }


def read_stored(stored: StoredDiffs) -> tuple[list[DocumentDiff], dict[str, dict[str, Partner]]]:
    """The `DocumentDiff`s and the partners (by document, by item path) a saved run stored."""
    diffs = [
        DocumentDiff(
            name=document.name,
            score=document.score,
            leaves=tuple(Leaf(**leaf.model_dump()) for leaf in document.leaves),
            reason=document.reason,
        )
        for document in stored.documents
    ]
    return diffs, dict(_partners(stored))


def _partners(stored: StoredDiffs) -> Iterator[tuple[str, dict[str, Partner]]]:
    for document in stored.documents:
        if document.pairings:
            yield document.name, {path: Partner(*values) for path, values in document.pairings.items()}
