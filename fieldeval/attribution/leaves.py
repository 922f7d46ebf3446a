"""One document's leaf diff: every leaf that cost it points, how, and what it cost.

stickler's `non_matches` already lists each wrong leaf, with both values, for top-level fields
and for the leaves of list items that paired. It does not list a leaf that matched above its
threshold with a score below 1 (a name one letter off, under `LevenshteinComparator@0.85`), yet
that leaf lowers the document's score: here it is a `partial` leaf. Every row carries its `cost`,
the part of `1 - score` it accounts for, found by walking the document as stickler scores it
(`leaf_costs`), so a document's costs add up to what it lost (`check_costs`). The items of a list
of values (`tags: list[str]`) are the walk's own rows: stickler's `non_matches` pairs such a list
by other rules than its score does (`_value_list_costs`).

A list item whose similarity falls below its class's `match_threshold` is different: stickler
counts it as one false discovery of the list and never descends into it, so nothing says which of
its leaves pulled it under. For such an item this module scores each leaf the way stickler scored
the pair when it matched the lists (`StructuredModel.compare`: the weighted mean of each field's
raw comparator score, fields absent on both sides left out), so the leaves' shares of the shortfall
add up to stickler's own item similarity. `check_item` proves it.

    spec = stickler.eval_for(Schema, match_threshold=0.7)
    diff = document_diff(spec, case.expected_output, output, name=case.name)
    diff.rows()   # one dict per leaf that cost points: path, kind, expected, got, comparator, score, share, cost
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, TypeGuard, cast, get_args, get_origin

from pydantic import BaseModel
from stickler import StructuredModel, StructuredModelComparator
from stickler.algorithms.hungarian import HungarianMatcher
from stickler.structured_object_evaluator.models.null_helper import NullHelper
from stickler.structured_object_evaluator.models.threshold_helper import ThresholdHelper

# The kinds of miss, in the order tables show them.
MISSING, INVENTED, WRONG, BELOW, UNREADABLE = "missing", "invented", "wrong value", "below threshold", "unreadable"
PARTIAL = "partial"  # matched at or above its threshold, with a score below 1
KINDS = (MISSING, INVENTED, WRONG, PARTIAL, BELOW, UNREADABLE)
OUTPUT_PATH = "(output)"  # where an output that could not be read as the schema is reported
_STICKLER_KINDS = {"false_negative": MISSING, "false_alarm": INVENTED, "false_discovery": WRONG}
_STEP = re.compile(r"([^.\[\]]+)(?:\[(\d+)\])?")
_INDEX = re.compile(r"\[\d+\]")
_MATCHER = HungarianMatcher(StructuredModelComparator())  # how stickler pairs the items of a list of models
_REMEMBERED = 64  # pairings of lists kept by `matched_pairs`: a document's lists, several times over
_PAIRS: dict[tuple[int, int], tuple[list, list, list]] = {}
_COUNTED = 0.01  # stickler's list score counts a pair scoring below this as 0 (`StructuredListComparator`)
COLUMNS = ("path", "kind", "expected", "got", "comparator", "threshold", "weight", "score", "share", "cost", "item")


def fold(path: str) -> str:
    """`lines[2].quantity` as `lines.quantity`: the field path that rollups count under."""
    return _INDEX.sub("", path)


@dataclass(frozen=True)
class Leaf:
    """One leaf (or whole list item) that differs between the expected and the got output.

    `score` is the comparator's raw similarity (before its threshold); `share` is set on the leaves
    of a list item below the match threshold: how much of the item's similarity this leaf cost,
    `weight * (1 - score) / total weight`, so `1 - sum(shares)` is the item's similarity. `cost` is
    how much of the document's score the row cost (a whole item: the sum over its leaves).
    """

    path: str
    kind: str
    expected: Any = None
    got: Any = None
    comparator: str | None = None
    threshold: float | None = None
    weight: float | None = None
    score: float | None = None
    share: float | None = None
    item: str | None = None  # the below-threshold item this leaf belongs to
    cost: float | None = None

    @property
    def field(self) -> str:
        return fold(self.path)

    def row(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in COLUMNS}


@dataclass(frozen=True)
class ItemBelow:
    """A list item that paired but fell below the match threshold, and the leaves that pulled it under."""

    path: str
    similarity: float  # stickler's pair similarity, as its non-match record gives it
    threshold: float
    leaves: tuple[Leaf, ...]  # every compared leaf, wrong ones first (largest share first)

    @property
    def leaf_similarity(self) -> float:
        """The item's similarity rebuilt from its leaves: `1 - sum(share)`."""
        return 1.0 - sum(leaf.share or 0.0 for leaf in self.leaves)

    @property
    def culprits(self) -> tuple[Leaf, ...]:
        return tuple(leaf for leaf in self.leaves if (leaf.share or 0.0) > 0)


@dataclass(frozen=True)
class DocumentDiff:
    """Every leaf of one document that differs, and every list item that fell below the threshold."""

    name: str
    score: float | None
    leaves: tuple[Leaf, ...]
    items: tuple[ItemBelow, ...] = field(default=())
    reason: str = ""
    # the two sides as the schema read them, kept so what else reads them (pairings) validates nothing again
    models: tuple[StructuredModel, StructuredModel] | None = field(default=None, compare=False, repr=False)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per leaf that cost points; a below-threshold item is followed by the leaves that pulled it under."""
        return [leaf.row() for leaf in self.leaves]

    @property
    def lost(self) -> float:
        """What the rows cost the document, each counted once (an item's leaves are in its own row's cost)."""
        return sum(leaf.cost or 0.0 for leaf in self.leaves if leaf.item is None)


def _comparator_info(cls: type[StructuredModel], name: str) -> tuple[str, float, float]:
    info = cls._get_comparison_info(name)
    return type(info.comparator).__name__, float(info.threshold), float(info.weight)


def _absent(model: StructuredModel, name: str, value: Any) -> bool:
    if model._is_list_field(name):
        return NullHelper.is_effectively_null_for_lists(value)
    return NullHelper.is_effectively_null_for_primitives(value)


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def item_leaves(expected: StructuredModel, got: StructuredModel, path: str) -> tuple[Leaf, ...]:
    """Each compared leaf of one paired item, scored as `StructuredModel.compare` scores it.

    Fields absent on both sides are left out, as stickler leaves them out of the pair's mean.
    Sorted by share, largest first, so the leaves that pulled the item under come first.
    """
    cls = type(expected)
    scored = []
    for name in cls.model_fields:
        if name == "extra_fields" or not hasattr(got, name):
            continue
        want, have = getattr(expected, name), getattr(got, name)
        if _absent(expected, name, want) and _absent(expected, name, have):
            continue
        comparator, threshold, weight = _comparator_info(cls, name)
        score = float(expected.compare_field_raw(name, have))
        scored.append((name, _plain(want), _plain(have), comparator, threshold, weight, score))
    total = sum(entry[5] for entry in scored)
    leaves = [
        Leaf(
            path=f"{path}.{name}",
            kind=BELOW,
            expected=want,
            got=have,
            comparator=comparator,
            threshold=threshold,
            weight=weight,
            score=score,
            share=weight * (1.0 - score) / total if total else 0.0,
            item=path,
        )
        for name, want, have, comparator, threshold, weight, score in scored
    ]
    return tuple(sorted(leaves, key=lambda leaf: -(leaf.share or 0.0)))


def _walk(model: StructuredModel, path: str) -> tuple[StructuredModel | None, str]:
    """The object holding the last step of `path`, and that step's field name (`lines[1].sku` -> lines[1], sku)."""
    steps = _STEP.findall(path)
    node: Any = model
    for name, index in steps[:-1]:
        node = getattr(node, name, None)
        if index:
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
        if node is None:
            return None, steps[-1][0]
    return node, steps[-1][0]


def _element(model: StructuredModel, path: str) -> Any:
    """The list element at `path` (`lines[1]`), or None."""
    holder, name = _walk(model, path)
    index = _STEP.findall(path)[-1][1]
    values = getattr(holder, name, None) if holder is not None else None
    if isinstance(values, list) and index and int(index) < len(values):
        return values[int(index)]
    return None


def _leaf(record: Mapping[str, Any], expected: StructuredModel, got: StructuredModel) -> Leaf:
    path = str(record.get("field_path"))
    stickler_kind = record.get("non_match_type")
    kind = _STICKLER_KINDS.get(str(getattr(stickler_kind, "value", stickler_kind)), str(stickler_kind))
    details = record.get("details") or {}
    score = record.get("similarity_score", details.get("similarity_score"))
    comparator = threshold = weight = None
    if path.endswith("]"):  # a whole list item: compared as its class, paired at its match_threshold
        element = _element(expected, path) if kind != INVENTED else _element(got, path)
        if isinstance(element, StructuredModel):
            comparator, threshold = type(element).__name__, float(type(element).match_threshold)
    else:
        holder, name = _walk(expected, path)
        if isinstance(holder, StructuredModel) and name in type(holder).model_fields:
            comparator, threshold, weight = _comparator_info(type(holder), name)
    return Leaf(
        path=path,
        kind=kind,
        expected=record.get("ground_truth_value"),
        got=record.get("prediction_value"),
        comparator=comparator,
        threshold=threshold,
        weight=weight,
        score=None if score is None else float(score),
    )


def diff_models(expected: StructuredModel, got: StructuredModel, name: str = "") -> DocumentDiff:
    """The leaf diff of two instances of one stickler model (`spec.eval_model`)."""
    raw = expected.compare_with(got, document_non_matches=True, add_derived_metrics=False)
    leaves: list[Leaf] = []
    items: list[ItemBelow] = []
    values = model_shape(cast(Any, type(expected)))[0]  # stickler's classes are untyped: not Hashable to mypy
    for record in raw.get("non_matches") or []:
        path = str(record.get("field_path"))
        if path.endswith("]") and fold(path) in values:
            continue  # an item of a list of values: the cost walk pairs it as stickler scores the list
        leaf = _leaf(record, expected, got)
        want, have = _element(expected, leaf.path), None
        if leaf.kind == WRONG and isinstance(want, StructuredModel) and isinstance(leaf.got, dict):
            have = type(want).model_validate(leaf.got)  # the paired prediction, as stickler serialized it
        if have is None:
            leaves.append(leaf)
            continue
        below = ItemBelow(
            path=leaf.path,
            similarity=float(leaf.score if leaf.score is not None else want.compare(have)),
            threshold=float(type(want).match_threshold),
            leaves=item_leaves(want, have, leaf.path),
        )
        items.append(below)
        leaves.append(replace(leaf, kind=BELOW, score=below.similarity))
        leaves.extend(below.culprits)
    costed = with_costs(leaves, leaf_costs(expected, got))
    return DocumentDiff(name=name, score=float(raw.get("overall_score", 0.0)), leaves=costed, items=tuple(items))


def with_costs(rows: Iterable[Leaf], costs: Iterable[Leaf]) -> tuple[Leaf, ...]:
    """The rows, each with the cost of the leaves under its path, then every costed leaf no row covers.

    A leaf of an item below the threshold is covered by the item's row (its own row has its cost too,
    but the item's row counts it). A whole list stickler lists item by item (a list of models invented
    where none was expected) is split evenly over its items' rows. What no row covers is a leaf
    stickler does not list: a `partial` one.
    """
    costs = list(costs)
    covered: set[int] = set()
    found = []
    for row in rows:
        under = [index for index, leaf in enumerate(costs) if _covers(row, leaf)]
        if row.item is None:
            covered.update(under)
        found.append(replace(row, cost=sum(costs[index].cost or 0.0 for index in under)))
    extra = []
    for index, leaf in enumerate(costs):
        if index in covered:
            continue
        items = [
            at
            for at, row in enumerate(found)
            if row.item is None and _within(row.path, leaf.path) and (row.kind == INVENTED) == (leaf.kind == INVENTED)
        ]
        for at in items:
            found[at] = replace(found[at], cost=(found[at].cost or 0.0) + (leaf.cost or 0.0) / len(items))
        if not items:
            extra.append(leaf)
    return (*found, *extra)


def _covers(row: Leaf, leaf: Leaf) -> bool:
    """Whether `leaf` lies under `row`. An invented item is named by its index in the output, a paired
    or missing one by the labelled item's index, so `lines[4]` may be both: an invented row covers only
    the invented item, and only an invented row covers it."""
    if INVENTED in (row.kind, leaf.kind):
        return row.kind == leaf.kind and row.path == leaf.path
    return _within(leaf.path, row.path)


def _within(path: str, row: str) -> bool:
    return path == row or path.startswith((f"{row}.", f"{row}["))


def leaf_costs(expected: StructuredModel, got: StructuredModel) -> list[Leaf]:
    """Every leaf that cost the document points, with its cost: together they are `1 - score`.

    The walk follows `compare_with`: a model's score is the weight-averaged threshold-applied score
    of its fields; a list of models scores the mean of its pairs' scores (each pair compared as its
    class, a pair under 0.01 counted as 0) times pairs over the longer list's length, so each item
    left unpaired costs its list's share over that length; a nested model scores its raw similarity
    (`compare`), split over its fields by `item_leaves`. A pair scoring 1 is not walked into, so this
    costs little more than stickler's own pairing of the lists. The leaves of an item below the
    match threshold are `below threshold` leaves of that item, one per field.
    """
    return list(_model_costs(expected, got, "", 1.0, None))


def _model_costs(
    want: StructuredModel, have: StructuredModel, prefix: str, scale: float, item: str | None
) -> Iterator[Leaf]:
    cls = type(want)
    names = [name for name in cls.model_fields if name != "extra_fields"]
    weights = [float(cls._get_comparison_info(name).weight) for name in names]
    total = sum(weights)
    for name, weight in zip(names, weights, strict=True):
        if total > 0 and weight > 0:
            yield from _field_costs(want, have, name, f"{prefix}{name}", scale * weight / total, item)


def _field_costs(
    want: StructuredModel, have: StructuredModel, name: str, path: str, share: float, item: str | None
) -> Iterator[Leaf]:
    """What one field cost, `share` being its part of the document's score."""
    expected, got = getattr(want, name), getattr(have, name, None)
    if expected == got:  # equal values score 1 with every comparator: nothing to ask stickler
        return
    if item is None and _model_list(expected) and _model_list(got):
        yield from _list_costs(expected, got, path, share)
        return
    result = want._dispatch_field_comparison(name, expected, got)  # stickler's own score of this field
    applied, raw = float(result["threshold_applied_score"]), float(result["raw_similarity_score"])
    if applied >= 1:
        return
    if item is None and _value_list(want, name, expected, got):
        yield from _value_list_costs(want, name, expected or [], got or [], path, share)
        return
    counts = result["overall"]
    if item is None and counts["tp"] and isinstance(expected, StructuredModel) and isinstance(got, StructuredModel):
        for leaf in item_leaves(expected, got, path):  # a nested model: its raw similarity, field by field
            if leaf.share:
                kind = PARTIAL if (leaf.score or 0.0) >= (leaf.threshold or 0.0) else WRONG
                yield replace(leaf, kind=kind, share=None, item=None, cost=share * leaf.share)
        return
    comparator, threshold, weight = _comparator_info(type(want), name)
    kind = (
        BELOW if item else MISSING if counts["fn"] else INVENTED if counts["fa"] else PARTIAL if counts["tp"] else WRONG
    )
    yield Leaf(
        path,
        kind,
        _plain(expected),
        _plain(got),
        comparator,
        threshold,
        weight,
        raw,
        item=item,
        cost=share * (1 - applied),
    )


def _list_costs(expected: list, got: list, path: str, share: float) -> Iterator[Leaf]:
    threshold = float(type(expected[0]).match_threshold)
    step = share / max(len(expected), len(got))
    pairs = matched_pairs(expected, got)
    for index, partner, similarity in pairs:
        if similarity >= 1:
            continue
        inside = f"{path}[{index}]"
        below = inside if similarity < threshold else None
        leaves = list(_model_costs(expected[index], got[partner], f"{inside}.", step, below))
        lost = sum(leaf.cost or 0.0 for leaf in leaves)
        if lost > step * (1 - _COUNTED):  # the pair scored under 0.01: stickler counts it as 0
            leaves = [replace(leaf, cost=(leaf.cost or 0.0) * step / lost) for leaf in leaves]
        yield from leaves
    yield from _unpaired(expected, got, pairs, path, step, type(expected[0]).__name__, threshold)


def _value_list(want: StructuredModel, name: str, expected: Any, got: Any) -> bool:
    """Whether field `name` holds a list of values (`tags: list[str]`), not of models."""
    if not want._is_list_field(name):
        return False
    return not any(isinstance(value, BaseModel) for value in [*(expected or []), *(got or [])])


def _value_list_costs(
    want: StructuredModel, name: str, expected: list, got: list, path: str, share: float
) -> Iterator[Leaf]:
    """A list of values item by item, paired as stickler pairs it when it scores the list.

    stickler's `non_matches` pairs such a list by other rules than its score does (its own default
    comparator, values normalized) and records every pair it lists with a similarity of 0, a pair
    its counts call a match included; so the pairs here are the scoring's own: a Hungarian matching
    over the field's comparator that keeps every pair. The list scores the sum of its pairs'
    similarities (a pair below the threshold counted 0 when the field clips) over the longer
    list's length, so each row costs its share of that: a pair at or above the threshold is
    `partial`, one below it `wrong value`, an unpaired item one item's share.
    """
    info = type(want)._get_comparison_info(name)
    comparator, threshold, weight = _comparator_info(type(want), name)
    step = share / max(len(expected), len(got))
    pairs = value_pairs(info.comparator, expected, got)
    for index, partner, similarity in pairs:
        if similarity >= 1:
            continue
        matched = ThresholdHelper.is_above_threshold(similarity, threshold)
        counted = similarity if matched or not info.clip_under_threshold else 0.0
        kind = PARTIAL if matched else WRONG
        yield Leaf(
            f"{path}[{index}]",
            kind,
            expected[index],
            got[partner],
            comparator,
            threshold,
            weight,
            float(similarity),
            cost=step * (1 - counted),
        )
    yield from _unpaired(expected, got, pairs, path, step, comparator, threshold, weight)


def _unpaired(
    expected: list,
    got: list,
    pairs: list[tuple[int, int, float]],
    path: str,
    step: float,
    comparator: str,
    threshold: float,
    weight: float | None = None,
) -> Iterator[Leaf]:
    """Each item no pair took: a labelled one `missing`, a returned one `invented`, each one item's `step`."""
    for side, values, kind in ((0, expected, MISSING), (1, got, INVENTED)):
        paired = {pair[side] for pair in pairs}
        for index, value in enumerate(values):
            if index not in paired:
                plain = _plain(value)
                yield Leaf(
                    f"{path}[{index}]",
                    kind,
                    expected=plain if kind == MISSING else None,
                    got=plain if kind == INVENTED else None,
                    comparator=comparator,
                    threshold=threshold,
                    weight=weight,
                    cost=step,
                )


def value_pairs(comparator: Any, expected: list, got: list) -> list[tuple[int, int, float]]:
    """`(expected index, got index, similarity)` of each pair stickler makes of two lists of values as it
    scores them (`ComparisonHelper.compare_unordered_lists`): every pair kept, values as given."""
    if not expected or not got:
        return []
    matcher = HungarianMatcher(comparator, match_threshold=0.0, normalize_values=False)
    return matcher.calculate_metrics(expected, got)["matched_pairs"]


def matched_pairs(expected: list, got: list) -> list[tuple[int, int, float]]:
    """`(expected index, got index, similarity)` of each pair stickler's matcher makes of two lists of models.

    The matching scores every pair of items, which on long lists is most of a document's diff; a
    document's leaf costs and its items' partners (`fieldeval.attribution.pairing`) ask it of the same
    two lists, so the last few answers are kept, for those very list objects.
    """
    key = (id(expected), id(got))
    found = _PAIRS.get(key)
    if found is not None and found[0] is expected and found[1] is got:
        return found[2]
    pairs = _MATCHER.calculate_metrics(expected, got)["matched_pairs"]
    if len(_PAIRS) >= _REMEMBERED:
        _PAIRS.pop(next(iter(_PAIRS)), None)
    _PAIRS[key] = (expected, got, pairs)
    return pairs


def check_costs(diff: DocumentDiff) -> bool:
    """Whether the document's leaf costs add up to what it lost, `1 - score` (to floating-point precision)."""
    return diff.score is not None and math.isclose(diff.lost, 1.0 - diff.score, rel_tol=0, abs_tol=1e-9)


def document_diff(spec: Any, expected: Any, got: Any, name: str = "", score: float | None = None) -> DocumentDiff:
    """The leaf diff of one document, compared as `spec` (`stickler.eval_for(Schema, ...)`) compares it.

    `expected` and `got` are instances of the schema or dicts of its fields. An output that does not
    validate as the schema is one `unreadable` entry naming the problem, as the evaluator scores it 0.
    `score` is the evaluator's score of the document, when known: a document scored 1 whose two
    sides are equal has no leaf that cost points, so stickler is not asked again (most documents
    of a good run are such, and asking is most of the cost of a run's diffs).
    """
    try:
        want, have = as_models(spec, expected, got)
    except (ValueError, TypeError) as exc:
        return unreadable(name, str(exc))
    if score == 1.0 and want == have:
        return DocumentDiff(name=name, score=1.0, leaves=(), models=(want, have))
    return replace(diff_models(want, have, name), models=(want, have))


def as_models(spec: Any, expected: Any, got: Any) -> tuple[StructuredModel, StructuredModel]:
    """Both sides as instances of `spec.eval_model`, read the way `EvalSpec.evaluate` reads them.

    Raises:
        ValueError: If either side does not validate as the schema.
    """
    return tuple(spec.eval_model.from_json(_dumped(spec.source_cls, value)) for value in (expected, got))


def unreadable(name: str, reason: str, got: Any = None) -> DocumentDiff:
    """The diff of an output that could not be read as the schema: it scores 0 and has no leaves to compare."""
    return DocumentDiff(name=name, score=0.0, leaves=(Leaf(OUTPUT_PATH, UNREADABLE, got=got),), reason=reason)


def _dumped(schema: type[BaseModel], value: Any) -> dict[str, Any]:
    if not isinstance(value, schema):
        value = schema.model_validate(_plain(value))
    return value.model_dump(mode="json")


def check_item(item: ItemBelow) -> bool:
    """Whether the leaves rebuild stickler's item similarity (to floating-point precision)."""
    return math.isclose(item.leaf_similarity, item.similarity, rel_tol=0, abs_tol=1e-9)


def failures_of(leaves: Iterable[Leaf]) -> dict[str, dict[str, int]]:
    """Counts of each kind of miss per folded field path, for one document or many."""
    counts: dict[str, dict[str, int]] = {}
    for leaf in leaves:
        kinds = counts.setdefault(leaf.field, {})
        kinds[leaf.kind] = kinds.get(leaf.kind, 0) + 1
    return counts


@lru_cache(maxsize=32)
def model_shape(model: type[StructuredModel]) -> tuple[frozenset[str], frozenset[str]]:
    """The dotted leaf paths of a stickler model, and the paths that are lists of models (`lines`)."""
    leaves: set[str] = set()
    lists: set[str] = set()

    def walk(cls: type[StructuredModel], prefix: str) -> None:
        for name, info in cls.model_fields.items():
            if name == "extra_fields":
                continue
            path = f"{prefix}{name}"
            inner = _models_in(info.annotation)
            if inner is None:
                leaves.add(path)
                continue
            element, is_list = inner
            if is_list:
                lists.add(path)
            walk(element, f"{path}.")

    walk(model, "")
    return frozenset(leaves), frozenset(lists)


def _models_in(annotation: Any) -> tuple[type[StructuredModel], bool] | None:
    """The StructuredModel class an annotation holds, and whether it is a list of them; None for a leaf."""
    if isinstance(annotation, type) and issubclass(annotation, StructuredModel):
        return annotation, False
    for argument in get_args(annotation):
        found = _models_in(argument)
        if found is not None:
            return found[0], found[1] or get_origin(annotation) in (list, tuple)
    return None


def counted_failures(
    spec: Any, counts: Mapping[str, Any], expected: Any, got: Any, scores: Mapping[str, float] | None = None
) -> dict[str, dict[str, int]]:
    """One document's failures by kind from stickler's own counts, walking only what the counts cannot say.

    On every leaf path and list path, `fn` is `missing`, `fa` `invented`, and `fd` `wrong value`
    (`below threshold` on a list of models): what `document_diff` finds, at the cost of no comparison
    (tests/attribution/test_attribution.py checks the two agree on every walkthrough document and on
    random nested ones). `scores` are the comparison's top-level `field_scores`. Only a document the
    counts leave unexplained is walked (`leaf_costs`): one with a list item below the threshold (for
    the leaves that pulled it under) or a field scoring below what its counts allow (for the
    `partial` leaves, which stickler counts as true positives).
    """
    leaves, lists = model_shape(spec.eval_model)
    found: dict[str, dict[str, int]] = {}
    for path, values in counts.items():
        if path not in leaves and path not in lists:
            continue
        for kind, count in (
            (MISSING, values.fn),
            (INVENTED, values.fa),
            (BELOW if path in lists else WRONG, values.fd),
        ):
            if count:
                found.setdefault(path, {})[kind] = count
    if not _unexplained(counts, scores, leaves, lists):
        return found
    try:
        want, have = as_models(spec, expected, got)
    except (ValueError, TypeError):
        return found  # unreadable: nothing to walk (`document_diff` gives its one entry)
    for leaf in leaf_costs(want, have):
        if leaf.item is not None or leaf.kind == PARTIAL:
            kinds = found.setdefault(leaf.field, {})
            kinds[leaf.kind] = kinds.get(leaf.kind, 0) + 1
    return found


def _unexplained(
    counts: Mapping[str, Any], scores: Mapping[str, float] | None, leaves: frozenset[str], lists: frozenset[str]
) -> bool:
    """Whether a document may hold a leaf the counts do not show: a pair below the threshold, or a partial leaf.

    A top-level leaf scoring below 1 that its counts call a match is partial; a list of models with no
    pair below the threshold scores at most its matched pairs over the longer list's length, and any
    less means a leaf inside a pair that cost points: a wrong one the counts show, or a partial one,
    and only the walk tells them apart (a comparator that does not clip, such as `FuzzyComparator`,
    leaves a wrong leaf part of its score). A nested model, or no scores to read, is walked.
    """
    if any(counts[path].fd for path in lists if path in counts):
        return True
    if scores is None:
        return True
    for name, score in scores.items():
        values = counts.get(name)
        if score >= 1 or (values is not None and name in leaves and not values.tp):
            continue
        if values is None or name not in lists:
            return True
        longest = max(values.tp + values.fd + values.fn, values.tp + values.fd + values.fa)
        if longest and score < values.tp / longest - 1e-9:
            return True
    return False


def _model_list(value: Any) -> TypeGuard[list]:
    return isinstance(value, list) and bool(value) and isinstance(value[0], StructuredModel)
