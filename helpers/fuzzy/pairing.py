"""Pairing the elements of two unordered lists: a maximum matching, in close to n log n.

A pass must never depend on the order elements were tried in, so pairing is a maximum bipartite
matching. The work is kept near n log n by reducing each list to the cheapest problem that
still gives the best pairing:

- Without a tolerance, matching is equality (or containment in subset mode), which is
  transitive: identical elements are paired by hashing, in linear time.
- Under a tolerance, each element becomes a record (`Comparer.record`): a shape that must be
  equal and a vector of numbers that must be pairwise within tolerance. Records are blocked by
  shape. A number column whose values fall into clusters that match within and never across
  (an id no two values of which are close; near-duplicates that all match one another) is as
  good as exact, and its cluster joins the block's key.
- A block with one number column left is an interval matching: each number's partners form one
  run of the sorted other side (`numeric.py` explains why), and a sort-and-sweep that gives each
  actual number to the waiting expected one whose run ends first is optimal.
- Only a block with two or more number columns within tolerance of one another, nested lists
  of containers, subset mode under a tolerance, or `numeric_tolerance >= 1` fall through to the
  general path: candidate pairs through a window on the most selective column (or a grid), then
  augmenting paths. That path is bounded: past `MAX_PAIR_CHECKS` candidate checks the case fails
  with a reason instead of running for hours or exhausting memory.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable
from itertools import product
from typing import TYPE_CHECKING, Any

from helpers.fuzzy.numeric import is_infinite

if TYPE_CHECKING:
    from helpers.fuzzy.engine import Comparer

MAX_PAIR_CHECKS = 2_000_000
"""Candidate pairs one comparison may try on the general pairing path before it gives up."""

_SMALL_BLOCK = 64  # candidate pairs in a block below which trying them all beats building a grid


NESTED = ("nested",)
"""The path of a list met while trying a candidate pair: it has no place in the reason's paths."""


class PairingTooLarge(Exception):
    """The general pairing path would try more than `MAX_PAIR_CHECKS` candidate pairs."""

    def __init__(self, path: Any, expected: int, actual: int, limit: int) -> None:
        super().__init__(path, expected, actual, limit)
        self.path, self.expected, self.actual, self.limit = path, expected, actual, limit


class Budget:
    """Candidate checks left for one comparison."""

    def __init__(self) -> None:
        self.limit = MAX_PAIR_CHECKS
        self.left = self.limit

    def spend(self, checks: int, path: Any, expected: list, actual: list) -> None:
        self.left -= checks
        if self.left < 0:
            raise PairingTooLarge(path, len(expected), len(actual), self.limit)


def pair(comparer: Comparer, expected: list, actual: list, path: Any) -> tuple[list[int], list[int]]:
    """Pair elements by a maximum matching; return the unpaired indices of each side, sorted."""
    if comparer.tolerant and not comparer.subset_mode and comparer.tolerance.sortable:
        return _pair_records(comparer, expected, actual, path)
    try:
        keys_e = [comparer.key(x) for x in expected]
        keys_a = [comparer.key(x) for x in actual]
        if not comparer.tolerant and not comparer.subset_mode and Counter(keys_e) == Counter(keys_a):
            return [], []  # the common case, settled in C: identical multisets
        mine, theirs = _group(keys_e), _group(keys_a)
        hashable = True
    except TypeError:  # an unhashable scalar: no shortcut, every element on its own
        mine, theirs = _singles(expected), _singles(actual)
        hashable = False
    if hashable and not comparer.tolerant:
        # Without a tolerance, matching is transitive (equality, or containment in subset
        # mode), so pairing identical elements first never blocks a better pairing.
        for key, indices in mine.items():
            partners = theirs.get(key)
            if partners:
                taken = min(len(indices), len(partners))
                del indices[:taken], partners[:taken]
        mine = {k: v for k, v in mine.items() if v}
        theirs = {k: v for k, v in theirs.items() if v}
        if not comparer.subset_mode or not mine or not theirs:
            return _flatten(mine), _flatten(theirs)
    return _general(comparer, expected, actual, list(mine.values()), list(theirs.values()), hashable, path)


def _group(keys: list) -> dict[Any, list[int]]:
    """Indices by key, in first-seen order, so pairing and reasons are deterministic."""
    groups: dict[Any, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    return groups


def _numbers(records: list[tuple | None], indices: list[int]) -> list:
    """The numbers of the records at `indices`, all of them records of one block (never None)."""
    return [record[1] for i in indices if (record := records[i]) is not None]


def _singles(values: list) -> dict[Any, list[int]]:
    """Every index its own group: for values with an unhashable scalar, which cannot be grouped."""
    return {("#", i): [i] for i in range(len(values))}


def _flatten(groups: dict[Any, list[int]]) -> list[int]:
    return sorted(i for indices in groups.values() for i in indices)


# --- under a tolerance: records ---------------------------------------------------------------


def _pair_records(comparer: Comparer, expected: list, actual: list, path: Any) -> tuple[list[int], list[int]]:
    numbers_e = _finite_numbers(comparer, expected)
    numbers_a = _finite_numbers(comparer, actual) if numbers_e is not None else None
    if numbers_e is not None and numbers_a is not None:  # a list of numbers: no records needed
        unpaired_e, unpaired_a = sweep(numbers_e, numbers_a, comparer.near)
        return sorted(unpaired_e), sorted(unpaired_a)
    records_e = [comparer.record(x) for x in expected]
    records_a = [comparer.record(x) for x in actual]
    blocks: dict[Any, tuple[list[int], list[int]]] = {}
    rest_e = [i for i, r in enumerate(records_e) if r is None]
    rest_a = [j for j, r in enumerate(records_a) if r is None]
    for i, r in enumerate(records_e):
        if r is not None:
            blocks.setdefault(r[0], ([], []))[0].append(i)
    lost_e: list[int] = []
    lost_a: list[int] = []
    for j, r in enumerate(records_a):
        if r is not None:
            block = blocks.get(r[0])
            if block is None:
                lost_a.append(j)  # no expected element has this shape
            else:
                block[1].append(j)
    context = (comparer, path, expected, actual)
    for block_e, block_a in blocks.values():
        le, la = _pair_vectors(_numbers(records_e, block_e), _numbers(records_a, block_a), context)
        lost_e.extend(block_e[i] for i in le)
        lost_a.extend(block_a[j] for j in la)
    if rest_e and rest_a:  # values a record cannot describe never match ones it can
        sub_e, sub_a = [expected[i] for i in rest_e], [actual[j] for j in rest_a]
        groups_e, hashable_e = _group_or_single(comparer, sub_e)
        groups_a, hashable_a = _group_or_single(comparer, sub_a)
        hashable = hashable_e and hashable_a
        le, la = _general(comparer, sub_e, sub_a, list(groups_e.values()), list(groups_a.values()), hashable, path)
        lost_e.extend(rest_e[i] for i in le)
        lost_a.extend(rest_a[j] for j in la)
    else:
        lost_e.extend(rest_e)
        lost_a.extend(rest_a)
    return sorted(lost_e), sorted(lost_a)


def _finite_numbers(comparer: Comparer, values: list) -> list | None:
    """The canonical numbers of a list holding only finite numbers, else None."""
    found = []
    for value in values:
        kind = type(value)
        if kind is int or (kind is float and value == value and not math.isinf(value)):
            found.append(value)
            continue
        if kind is dict or kind is list:
            return None
        leaf = comparer.leaf(value)
        if leaf[0] != "n" or is_infinite(leaf[1]):
            return None
        found.append(leaf[1])
    return found


def _group_or_single(comparer: Comparer, values: list) -> tuple[dict[Any, list[int]], bool]:
    """Indices grouped by key and True, or each on its own and False when a value is unhashable."""
    try:
        return _group([comparer.key(x) for x in values]), True
    except TypeError:
        return _singles(values), False


def _pair_vectors(vectors_e: list[list], vectors_a: list[list], context: tuple) -> tuple[list[int], list[int]]:
    """Pair equal-length number vectors (one block's records); unpaired indices of each side."""
    if not vectors_e or not vectors_a:
        return list(range(len(vectors_e))), list(range(len(vectors_a)))
    comparer = context[0]
    width = len(vectors_e[0])
    labels: dict[int, dict] = {}  # column -> cluster of each value, for columns that act as exact
    if width > 1:
        for d in range(width):
            found = _clusters(comparer.near, vectors_e, vectors_a, d)
            if found is not None:
                labels[d] = found
    loose = [d for d in range(width) if d not in labels]
    if not labels:
        return _pair_loose(vectors_e, vectors_a, loose, context)

    def label(v: list) -> tuple:
        return tuple(found[v[d]] for d, found in labels.items())

    groups: dict[tuple, tuple[list[int], list[int]]] = {}
    for i, v in enumerate(vectors_e):
        groups.setdefault(label(v), ([], []))[0].append(i)
    lost_e: list[int] = []
    lost_a: list[int] = []
    for j, v in enumerate(vectors_a):
        group = groups.get(label(v))
        if group is None:
            lost_a.append(j)
        else:
            group[1].append(j)
    for group_e, group_a in groups.values():
        le, la = _pair_loose([vectors_e[i] for i in group_e], [vectors_a[j] for j in group_a], loose, context)
        lost_e.extend(group_e[i] for i in le)
        lost_a.extend(group_a[j] for j in la)
    return lost_e, lost_a


def _clusters(near: Callable[[Any, Any], bool], vectors_e: list, vectors_a: list, column: int) -> dict | None:
    """Each value's cluster when the column splits into clusters that act as exact labels, else None.

    Sorted, the column's values split where two neighbours are not within tolerance; no value
    is then within tolerance of one in another cluster. If within each cluster the lowest and
    highest value are within tolerance, every two in it are (the test is monotone), so two
    values match exactly when their clusters are equal: an id column no two of whose values are
    close, or a column of near-duplicates that all match one another.
    """
    values = sorted({v[column] for v in vectors_e} | {v[column] for v in vectors_a})
    found: dict = {}
    first = 0
    for position in range(1, len(values) + 1):
        if position == len(values) or not near(values[position - 1], values[position]):
            if not near(values[first], values[position - 1]):
                return None  # a chain of close values whose ends are not close: truly loose
            for value in values[first:position]:
                found[value] = first
            first = position
    return found


def _pair_loose(vectors_e: list, vectors_a: list, columns: list[int], context: tuple) -> tuple[list[int], list[int]]:
    if not vectors_e or not vectors_a:
        return list(range(len(vectors_e))), list(range(len(vectors_a)))
    if not columns:  # every column exact and equal within the group: pair by count
        paired = min(len(vectors_e), len(vectors_a))
        return list(range(paired, len(vectors_e))), list(range(paired, len(vectors_a)))
    near = context[0].near
    if len(columns) == 1:
        d = columns[0]
        return sweep([v[d] for v in vectors_e], [v[d] for v in vectors_a], near)
    return _pair_dense(vectors_e, vectors_a, columns, context)


def runs(values_e: list, values_a: list, near: Callable[[Any, Any], bool]) -> tuple[list[int], list[int], list[tuple]]:
    """Sorted orders of both sides, and for each expected value (in sorted order) the run
    `[start, stop)` of sorted actual positions within tolerance of it.

    Both ends of the runs only move forward as the expected value grows, so two pointers find
    them all with a number of tests linear in the input.
    """
    order_e = sorted(range(len(values_e)), key=values_e.__getitem__)
    order_a = sorted(range(len(values_a)), key=values_a.__getitem__)
    sorted_a = [values_a[j] for j in order_a]
    size = len(sorted_a)
    start = stop = 0
    spans = []
    for i in order_e:
        value = values_e[i]
        while start < size and sorted_a[start] < value and not near(value, sorted_a[start]):
            start += 1
        if start < size and near(value, sorted_a[start]):
            stop = max(stop, start + 1)
            while stop < size and near(value, sorted_a[stop]):
                stop += 1
            spans.append((start, stop))
        else:
            spans.append((start, start))
    return order_e, order_a, spans


def sweep(values_e: list, values_a: list, near: Callable[[Any, Any], bool]) -> tuple[list[int], list[int]]:
    """Maximum pairing of two lists of numbers under the tolerance; unpaired indices of each side.

    Walk the sorted actual numbers; each goes to the waiting expected number whose run ends
    first (earliest deadline first), which is optimal for matching points to intervals. The runs
    start and end in the same order, so the waiting ones form a queue, not a heap.
    """
    order_e, order_a, spans = runs(values_e, values_a, near)
    lost_e: list[int] = []
    lost_a: list[int] = []
    waiting: deque[int] = deque()  # positions in order_e
    nxt = 0
    for position in range(len(order_a)):
        while nxt < len(spans) and spans[nxt][0] <= position:
            waiting.append(nxt)
            nxt += 1
        while waiting and spans[waiting[0]][1] <= position:
            lost_e.append(order_e[waiting.popleft()])  # its run ended with no number left for it
        if waiting:
            waiting.popleft()
        else:
            lost_a.append(order_a[position])
    lost_e.extend(order_e[k] for k in waiting)
    lost_e.extend(order_e[k] for k in range(nxt, len(spans)))
    return lost_e, lost_a


def _pair_dense(vectors_e: list, vectors_a: list, columns: list[int], context: tuple) -> tuple[list[int], list[int]]:
    """Several number columns within tolerance of one another: candidates through a window on
    the most selective column, checked on the others, then a maximum flow (bounded)."""
    comparer, path, expected, actual = context
    near = comparer.near
    groups_e = _group([tuple(v[d] for d in columns) for v in vectors_e])
    groups_a = _group([tuple(v[d] for d in columns) for v in vectors_a])
    heads_e, heads_a = list(groups_e), list(groups_a)
    best = None
    for position in range(len(columns)):
        found = runs([h[position] for h in heads_e], [h[position] for h in heads_a], near)
        total = sum(stop - start for start, stop in found[2])
        if best is None or total < best[0]:
            best = (total, position, found)
    assert best is not None
    total, chosen, (order_e, order_a, spans) = best
    comparer.budget.spend(total, path, expected, actual)
    others = [p for p in range(len(columns)) if p != chosen]
    edges: list[list[int]] = [[] for _ in heads_e]
    for k, (start, stop) in enumerate(spans):
        g = order_e[k]
        mine = heads_e[g]
        edges[g] = [
            h for h in (order_a[p] for p in range(start, stop)) if all(near(mine[p], heads_a[h][p]) for p in others)
        ]
    members_e, members_a = list(groups_e.values()), list(groups_a.values())
    flows = max_flow([len(m) for m in members_e], [len(m) for m in members_a], edges, order_e, context)
    for (g, h), units in flows.items():
        del members_e[g][:units], members_a[h][:units]
    return [i for m in members_e for i in m], [j for m in members_a for j in m]


# --- the general path -------------------------------------------------------------------------


def _general(
    comparer: Comparer, expected: list, actual: list, groups_e: list, groups_a: list, hashable: bool, path: Any
) -> tuple[list[int], list[int]]:
    """Groups of identical elements, candidates compared in full, then a maximum flow (bounded)."""
    heads_e = [expected[g[0]] for g in groups_e]
    heads_a = [actual[g[0]] for g in groups_a]
    context = (comparer, path, expected, actual)
    candidates = _candidates(comparer, heads_e, heads_a, hashable, context)
    edges = [
        [h for h in near if comparer.compare(heads_e[g], heads_a[h], None, None)] for g, near in enumerate(candidates)
    ]
    flows = max_flow([len(g) for g in groups_e], [len(g) for g in groups_a], edges, range(len(edges)), context)
    for (g, h), units in flows.items():
        del groups_e[g][:units], groups_a[h][:units]
    return sorted(i for g in groups_e for i in g), sorted(i for g in groups_a for i in g)


def _candidates(comparer: Comparer, heads_e: list, heads_a: list, hashable: bool, context: tuple) -> list[list[int]]:
    """For each expected group, the actual groups that may match it (a superset), within budget."""
    budget, path, expected, actual = comparer.budget, context[1], context[2], context[3]
    everyone = list(range(len(heads_a)))
    if comparer.subset_mode or not hashable or not comparer.tolerant:
        budget.spend(len(heads_e) * len(heads_a), path, expected, actual)
        return [everyone for _ in heads_e]
    # Under a tolerance only numbers may differ, so a match shares the number-free shape.
    blocks: dict[Any, tuple[list[int], list[int]]] = {}
    for g, head in enumerate(heads_e):
        blocks.setdefault(comparer.shape_without_numbers(head), ([], []))[0].append(g)
    for h, head in enumerate(heads_a):
        shape = comparer.shape_without_numbers(head)
        if shape in blocks:
            blocks[shape][1].append(h)
    result: list[list[int]] = [[] for _ in heads_e]
    for block_e, block_a in blocks.values():
        if not block_a:
            continue
        near = None
        if len(block_e) * len(block_a) > _SMALL_BLOCK:  # a grid only pays off on big blocks
            near = _grid(
                comparer,
                [comparer.numbers_of(heads_e[g]) for g in block_e],
                [comparer.numbers_of(heads_a[h]) for h in block_a],
                context,
            )
        if near is None:
            budget.spend(len(block_e) * len(block_a), path, expected, actual)
        for position, g in enumerate(block_e):
            result[g] = block_a if near is None else [block_a[i] for i in near[position]]
    return result


def _grid(comparer: Comparer, vectors_e: list, vectors_a: list, context: tuple) -> list[list[int]] | None:
    """Candidates through a grid on up to two numeric columns, or None to try them all.

    Each column is mapped by a monotone `t` under which two numbers within tolerance are
    at most one cell width apart, so a partner is always in the same or a neighbouring cell.
    """
    if any(v is None for v in vectors_e + vectors_a) or not vectors_e[0]:
        return None
    relative, absolute = comparer.tolerance.relative, comparer.tolerance.absolute
    columns = []
    for d in range(len(vectors_e[0])):
        cells = _cells([v[d] for v in vectors_e + vectors_a], relative, absolute)
        if cells is not None:
            columns.append((len(set(cells)), d, cells))
    if not columns:
        return None
    chosen = [cells for _, _, cells in sorted(columns, key=lambda c: (-c[0], c[1]))[:2]]
    split = len(vectors_e)
    index: dict[tuple, list[int]] = {}
    for i in range(len(vectors_a)):
        index.setdefault(tuple(cells[split + i] for cells in chosen), []).append(i)
    near = []
    budget, path, expected, actual = comparer.budget, context[1], context[2], context[3]
    for i in range(split):
        around = [_neighbours(cells[i]) for cells in chosen]
        found = sorted(j for cell in product(*around) for j in index.get(cell, ()))
        budget.spend(len(found), path, expected, actual)
        near.append(found)
    return near


def _neighbours(cell: Any) -> tuple:
    return (cell - 1, cell, cell + 1) if isinstance(cell, int) else (cell,)


def _cells(values: list, relative: float, absolute: float) -> list | None:
    """Grid cells for one numeric column, or None when this column cannot narrow the search.

    With `t(x) = sign(x) * log(1 + |x| / k)`, `k >= absolute / relative`, two numbers within
    tolerance are at most `-log(1 - relative)` apart in `t`; with no relative tolerance,
    `t(x) = (x - lowest) / absolute` and the bound is 1. Infinities get cells of their own.
    """
    if relative >= 1:
        return None
    try:
        values = [float(x) for x in values]
    except OverflowError:  # a number beyond float range
        return None
    finite = [x for x in values if math.isfinite(x)]
    if relative == 0:
        width = 1.0
        lowest = min(finite, default=0.0)

        def scale(x: float) -> float:
            return (x - lowest) / absolute
    else:
        width = -math.log1p(-relative)
        positive = [abs(x) for x in finite if x]
        k = absolute / relative if absolute > 0 else min(positive, default=1.0)

        def scale(x: float) -> float:
            return math.copysign(math.log1p(abs(x) / k), x)

    width = width * (1 + 1e-6) + 1e-11  # room for rounding in `t`
    cells: list = []
    for x in values:
        if math.isinf(x):
            cells.append(("inf", x > 0))
            continue
        try:
            t = scale(x)
        except (OverflowError, ValueError, ZeroDivisionError):
            return None
        if not math.isfinite(t) or abs(t) > 2.0**40:
            return None
        cells.append(math.floor(t / width))
    return cells


def max_flow(need: list[int], room: list[int], edges: list[list[int]], starts: Any, context: tuple) -> dict[tuple, int]:
    """Maximum pairing between groups of identical elements, as units sent per (g, h) edge.

    Each expected group (in the order `starts` gives) is served greedily, then by augmenting
    paths through already-paired groups. A group that finds no augmenting path never finds one
    later, so one pass suffices. The searches spend from the comparison's budget.
    """
    comparer, path, expected, actual = context
    room = list(room)
    flow: dict[tuple, int] = {}
    users: list[dict[int, int]] = [{} for _ in room]  # actual group -> expected groups using it

    def send(g: int, h: int, units: int) -> None:
        flow[g, h] = flow.get((g, h), 0) + units
        users[h][g] = users[h].get(g, 0) + units
        if not flow[g, h]:
            del flow[g, h], users[h][g]

    for start in starts:
        wanted = need[start]
        for h in edges[start]:
            if not wanted:
                break
            units = min(wanted, room[h])
            if units:
                send(start, h, units)
                room[h] -= units
                wanted -= units
        while wanted:
            found = _augmenting_path(start, edges, room, users)
            comparer.budget.spend(found[1], path, expected, actual)
            route = found[0]
            if route is None:
                break
            units = min(wanted, room[route[-1][1]])
            for g, h in route[1::2]:
                units = min(units, flow[g, h])  # a backward step gives back flow it carries
            for step, (g, h) in enumerate(route):
                send(g, h, units if step % 2 == 0 else -units)
            room[route[-1][1]] -= units
            wanted -= units
    return flow


def _augmenting_path(
    start: int, edges: list[list[int]], room: list[int], users: list[dict[int, int]]
) -> tuple[list[tuple[int, int]] | None, int]:
    """Breadth-first search for start -> h1 <- g1 -> h2 ... -> h_k with room at h_k.

    Returned as edges alternating forward (even positions, gain flow) and backward (odd
    positions, `(g_i, h_i)` losing flow), with the number of edges the search looked at.
    """
    came_to_h: dict[int, int] = {}
    came_to_g: dict[int, int] = {start: -1}
    queue = [start]
    looked = 0
    for g in queue:
        looked += len(edges[g])
        for h in edges[g]:
            if h in came_to_h:
                continue
            came_to_h[h] = g
            if room[h] > 0:
                route: list[tuple[int, int]] = []
                while True:
                    g_here = came_to_h[h]
                    route.append((g_here, h))
                    if g_here == start:
                        return list(reversed(route)), looked
                    h_before = came_to_g[g_here]
                    route.append((g_here, h_before))
                    h = h_before
            for g_next in users[h]:
                if g_next not in came_to_g:
                    came_to_g[g_next] = h
                    queue.append(g_next)
    return None, looked
