"""Which list items paired with which, and which re-paired between two runs.

stickler pairs the items of a list of models by Hungarian matching on each pair's similarity, so
one wrong leaf can change which predicted item a labelled item pairs with, and move the counts of
fields that did not change at all. This module asks stickler's own matcher for the pairing
(`HungarianMatcher` with `StructuredModelComparator`, as its list comparator does) and lists the
labelled items whose partner differs between two runs of the same documents.

Items are named by the labelled (expected) item's index, as stickler's non-match paths name them;
a partner is the predicted item's index in that run's output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stickler import StructuredModel

from fieldeval.attribution.leaves import DocumentDiff, matched_pairs

if TYPE_CHECKING:  # the table needs pandas; the partners a scale-out worker stores do not
    import pandas as pd


@dataclass(frozen=True)
class Partner:
    """What one labelled item paired with: a predicted item's index and the pair's similarity."""

    index: int | None  # None: left unpaired (a missing item)
    similarity: float | None
    threshold: float

    def describe(self) -> str:
        if self.index is None or self.similarity is None:
            return "nothing"
        verdict = "match" if self.similarity >= self.threshold else "below threshold"
        return f"got[{self.index}] ({self.similarity:.3f}, {verdict})"


def _lists(model: StructuredModel) -> Iterable[tuple[str, list, type[StructuredModel]]]:
    for name in type(model).model_fields:
        value = getattr(model, name, None)
        if isinstance(value, list) and value and all(isinstance(item, StructuredModel) for item in value):
            yield name, value, type(value[0])


def pairings(expected: StructuredModel, got: StructuredModel, prefix: str = "") -> dict[str, Partner]:
    """Every labelled list item's partner, by item path (`lines[1]`), nested lists of paired items included."""
    found: dict[str, Partner] = {}
    for name, want, cls in _lists(expected):
        have = getattr(got, name, None) or []
        threshold = float(cls.match_threshold)
        pairs = matched_pairs(want, have) if have else []
        partners = {gt: (pred, float(score)) for gt, pred, score in pairs}
        for index, item in enumerate(want):
            path = f"{prefix}{name}[{index}]"
            pred, score = partners.get(index, (None, None))
            found[path] = Partner(pred, score, threshold)
            if pred is None or score is None or score < threshold:
                continue  # unpaired, or paired below the threshold: stickler does not descend into it
            if isinstance(have[pred], StructuredModel):
                found.update(pairings(item, have[pred], prefix=f"{path}."))
    return found


def diff_pairings(diffs: Iterable[DocumentDiff]) -> dict[str, dict[str, Partner]]:
    """Each readable document's pairings, by name, from the models its leaf diff already read."""
    return {diff.name: pairings(*diff.models) for diff in diffs if diff.models is not None}


def repairs(
    old: Mapping[str, Mapping[str, Partner]],
    new: Mapping[str, Mapping[str, Partner]],
    labels: tuple[str, str] = ("old", "new"),
) -> pd.DataFrame:
    """The labelled items whose partner changed between two runs, one row each, in case order."""
    import pandas as pd

    rows = []
    for name, before in old.items():
        after = new.get(name)
        if after is None:
            continue
        for path, partner in before.items():
            other = after.get(path)
            if other is not None and other.index != partner.index:
                rows.append(
                    {
                        "case": name,
                        "item": path,
                        f"{labels[0]} paired with": partner.describe(),
                        f"{labels[1]} paired with": other.describe(),
                    }
                )
    return pd.DataFrame(rows, columns=["case", "item", f"{labels[0]} paired with", f"{labels[1]} paired with"])
