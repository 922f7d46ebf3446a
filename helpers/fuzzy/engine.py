"""The comparison engine of `FuzzyEquals`: read inputs, walk both values, explain each difference.

Nothing here knows about Strands Evals: `evaluator.py` adapts this engine to the `Evaluator`
interface, `numeric.py` holds the number rules and `pairing.py` pairs the elements of unordered
lists. `Comparer.compare` walks dicts and lists together, with a `Report` to explain or with
`None` to answer yes or no as fast as possible (pairing tries many candidates that way).
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from collections.abc import Mapping
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from helpers.fuzzy import pairing
from helpers.fuzzy.numeric import EXACT_DIGITS, NAN, Tolerance, is_infinite, number

if TYPE_CHECKING:  # never imported at run time: the adapter (evaluator.py) passes the class in
    from strands.agent.agent_result import AgentResult

MAX_DEPTH = 100
"""Deepest nesting of dicts and lists compared; deeper (or cyclic) input fails the case."""

FLAGS = {
    "ignore_order": False,
    "ignore_key_order": True,
    "case_sensitive": True,
    "ignore_whitespace": False,
    "subset_mode": False,
    "type_coercion": False,
}
TOLERANCES = {"numeric_tolerance": 0.0, "absolute_tolerance": 0.0}

# Canonical leaves are tagged tuples, so True (a boolean) never equals 1 (a number).
_NULL = ("null",)
_NUMBER = ("number",)  # where a number stands in a record's shape: its value is in the record's numbers
_PLAIN = frozenset({str, int, float, bool, type(None)})
_NUMERIC_TEXT = re.compile(r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SORTABLE_KEYS = frozenset({str, int, float, bool})
_PRINTABLE_BITS = 14_000  # an int longer than this may pass Python's 4,300-digit limit on printing it


# --- reading inputs ---------------------------------------------------------------------------


class Unreadable(Exception):
    """An input that cannot be compared; the message says which side, where, and what to pass."""


class _TooDeep(Exception):
    pass


class _Unsupported(Exception):
    """A value of a type that has no natural comparison; `keys` collects its path on the way out."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.keys: list = []


def plain(value: Any, side: str = "value", *, agent_result: type[AgentResult] | None = None) -> Any:
    """Convert to dicts, lists and scalars; raise `Unreadable` naming `side` and the path."""
    if agent_result is not None and isinstance(value, agent_result):
        if value.structured_output is None:
            raise Unreadable(
                f"{side} is an AgentResult with no structured_output; call the agent with "
                "structured_output_model=YourModel"
            )
        value = value.structured_output
    try:
        return _to_plain(value, 0)
    except _TooDeep:
        raise Unreadable(f"{side} {_depth_problem(value)}") from None
    except _Unsupported as exc:
        path: Any = None  # a path is nested pairs, (parent, key), as everywhere here
        for key in reversed(exc.keys):
            path = (path, key)
        raise Unreadable(f"{side} at {format_path(path)} {exc.problem}") from None
    except (ValueError, TypeError, RecursionError) as exc:  # a Pydantic model that cannot dump itself
        raise Unreadable(f"{side} holds a Pydantic model that cannot be dumped: {exc}") from None


def _to_plain(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is not dict and kind is not list:  # exact types first: ABC checks are slow
        if kind in _PLAIN:
            return value
        if kind is tuple:  # database rows: the common container after dict and list
            value = list(value)
        elif isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        elif isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, list | tuple):
            value = list(value)
        else:
            return _scalar(value)
        kind = type(value)
    if depth >= MAX_DEPTH:
        raise _TooDeep
    if kind is dict:
        if _PLAIN.issuperset(map(type, value.values())):
            return value  # nothing to convert: skip the copy
        converted = {}
        for k, v in value.items():
            try:
                converted[k] = v if type(v) in _PLAIN else _to_plain(v, depth + 1)
            except _Unsupported as exc:
                exc.keys.append(k)
                raise
        return converted
    if _PLAIN.issuperset(map(type, value)):
        return value
    converted_list = []
    for index, v in enumerate(value):
        try:
            converted_list.append(v if type(v) in _PLAIN else _to_plain(v, depth + 1))
        except _Unsupported as exc:
            exc.keys.append(index)
            raise
    return converted_list


def _scalar(value: Any) -> Any:
    """A numpy scalar as the Python number it holds; arrays and pandas tables refused with the fix.

    numpy and pandas are looked up only if already imported: a value cannot be theirs otherwise.
    """
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.generic):
            return value.item()  # numpy.bool_ becomes bool, numpy.float64 float, numpy.int64 int
        if isinstance(value, numpy.ndarray):
            raise _Unsupported(f"is a numpy array of shape {value.shape}; pass array.tolist()")
    pandas = sys.modules.get("pandas")
    if pandas is not None:
        if isinstance(value, pandas.DataFrame):
            raise _Unsupported(
                'is a pandas DataFrame; pass frame.to_dict("records") for its rows '
                "(with ignore_order=True if row order does not matter)"
            )
        if isinstance(value, pandas.Series | pandas.Index):
            raise _Unsupported(f"is a pandas {type(value).__name__}; pass .tolist() (or .to_dict() for its labels)")
    return value


def storable(value: Any) -> Any:
    """Decimals as the int or float they compare as, so `Experiment.to_file` can write them.

    Raises `Unreadable` for a number JSON cannot hold exactly (a Decimal beyond a float, an int
    too long for Python to print), rather than saving a value that reloads as something else.
    """
    if type(value) is dict:
        return {k: storable(v) for k, v in value.items()}
    if type(value) is list:
        return [storable(v) for v in value]
    if type(value) is int and value.bit_length() > _PRINTABLE_BITS:
        raise Unreadable(f"value holds {_show(value)}, which JSON cannot hold; store it as a string")
    if isinstance(value, Decimal) and value.is_finite():
        canonical = number(value)
        if canonical[0] == "n" and type(canonical[1]) in (int, float):
            return storable(canonical[1])
        raise Unreadable(
            f"value holds {_show(value)}, which no JSON number written by Python holds exactly; "
            "store it as a string and set type_coercion=True"
        )
    return value


def _depth_problem(value: Any) -> str:
    """Say whether input too deep to compare is cyclic (and where) or just deep."""
    active: dict[int, Any] = {}

    def walk(node: Any, path: Any, depth: int) -> str | None:
        if isinstance(node, BaseModel):
            return None  # a model's dump is finite; a cyclic model fails to dump instead
        if isinstance(node, Mapping):
            children: Any = node.items()
        elif isinstance(node, list | tuple):
            children = enumerate(node)
        else:
            return None
        if id(node) in active:
            return f"contains a cycle: {format_path(path)} refers back to {format_path(active[id(node)])}"
        if depth >= MAX_DEPTH:
            where = format_path(path)
            where = where if len(where) <= 60 else f"{where[:30]}...{where[-25:]}"
            return f"nests deeper than MAX_DEPTH={MAX_DEPTH} levels at {where}"
        active[id(node)] = path
        for key, child in children:
            found = walk(child, (path, key), depth + 1)
            if found:
                return found
        del active[id(node)]
        return None

    return walk(value, None, 0) or f"nests deeper than MAX_DEPTH={MAX_DEPTH} levels"


# --- reasons ----------------------------------------------------------------------------------


def format_path(path: Any, root: str = "$") -> str:
    """Render a linked path `(parent, key)` in JSONPath style: `$.rows[0].total`."""
    parts = []
    while path is not None:
        path, key = path
        if isinstance(key, str):
            parts.append(f".{key}" if _IDENTIFIER.fullmatch(key) else f"[{key!r}]")
        else:
            parts.append(f"[{_show(key, 1_000)}]")
    return root + "".join(reversed(parts))


def _show(value: Any, limit: int = 60) -> str:
    """A short repr; an int too long for `repr` (over 4,300 digits) is described instead."""
    if type(value) is int and value.bit_length() > _PRINTABLE_BITS:
        digits = math.floor(value.bit_length() * math.log10(2)) + 1
        return f"<{'-' if value < 0 else ''}integer of about {digits:,} digits>"
    try:
        text = repr(value)
    except ValueError:  # a container holding such an int
        text = f"<{type(value).__name__} holding an integer too long to print>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, numbers.Number):  # Decimal included
        return "number"
    return type(value).__name__


def _length_difference(expected: list, actual: list) -> str:
    noun = "element" if len(expected) == 1 else "elements"
    return f"expected {len(expected)} {noun}, got {len(actual)}"


def _a(kind: str) -> str:
    return kind if kind == "null" else ("an " if kind[0] in "aeiou" else "a ") + kind


class Report:
    """Differences found so far: all counted, the first `keep` kept as `(path, text)`."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.count = 0
        self.items: list[tuple[Any, str]] = []

    @property
    def room(self) -> bool:
        return len(self.items) < self.keep

    def add(self, path: Any, text: str) -> None:
        self.count += 1
        if self.room:
            self.items.append((path, text))

    def lines(self, root: str = "$") -> list[str]:
        return [f"{format_path(path, root)}: {text}" for path, text in self.items]


# --- comparing --------------------------------------------------------------------------------


def coerce(text: str) -> tuple | None:
    """The number or boolean a string spells, for `type_coercion`; None if it spells neither."""
    stripped = text.strip()
    if _NUMERIC_TEXT.fullmatch(stripped):
        return number(Decimal(stripped.replace(",", "")))
    lowered = stripped.lower()
    if lowered in ("true", "false"):
        return ("b", lowered == "true")
    return None


class Comparer:
    """One comparison under one set of knobs (it caches per comparison, so make one for each)."""

    def __init__(self, **knobs: Any) -> None:
        self.ignore_order: bool = knobs["ignore_order"]
        self.ignore_key_order: bool = knobs["ignore_key_order"]
        self.case_sensitive: bool = knobs["case_sensitive"]
        self.ignore_whitespace: bool = knobs["ignore_whitespace"]
        self.subset_mode: bool = knobs["subset_mode"]
        self.type_coercion: bool = knobs["type_coercion"]
        self.tolerance = Tolerance(knobs["numeric_tolerance"], knobs["absolute_tolerance"])
        self.tolerant = self.tolerance.tolerant
        self.plain_text = self.case_sensitive and not self.ignore_whitespace and not self.type_coercion
        self.budget = pairing.Budget()
        self._orders: dict[tuple, tuple | None] = {}  # per comparison: see `_names`

    # leaves

    def leaf(self, value: Any) -> tuple:
        """The canonical form of a scalar: equal forms always match, under any knobs."""
        kind = type(value)
        if kind is str:
            return self._text(value)
        if kind is float:
            return ("n", value) if value == value else NAN
        if kind is int:
            return ("n", value)
        if kind is bool:
            return ("b", value)
        if value is None:
            return _NULL
        if isinstance(value, Enum):
            return self.leaf(value.value)
        if isinstance(value, str):
            return self._text(str(value))
        if isinstance(value, numbers.Real | Decimal):
            return number(value)
        if isinstance(value, bytes | bytearray):
            return ("bytes", bytes(value))
        if isinstance(value, set | frozenset):
            return ("other", frozenset(value))
        return ("other", value)

    def _text(self, text: str) -> tuple:
        if self.type_coercion:
            coerced = coerce(text)
            if coerced is not None:
                return coerced
        if self.ignore_whitespace:
            text = " ".join(text.split())
        if not self.case_sensitive:
            text = text.casefold()
        return ("s", text)

    def near(self, x: Any, y: Any) -> bool:
        """Whether two canonical numbers are equal or within tolerance."""
        return self.tolerance.near(x, y)

    # canonical keys

    def key(self, value: Any) -> Any:
        """A hashable form: equal keys mean the values match. Raises TypeError if unhashable."""
        kind = type(value)
        if kind is dict:
            names = self._names(value)
            if names is None:  # keys with no canonical order
                items = [(k, self.key(v)) for k, v in value.items()]
                return ("{", frozenset(items) if self.ignore_key_order else tuple(items))
            parts = []
            for name in names:  # plain scalars inline: this loop is the hot path
                v = value[name]
                t = type(v)
                if (t is int or t is float) and v == v:
                    parts.append(v)
                elif (t is str and self.plain_text) or v is None:
                    parts.append(v)
                else:
                    parts.append(self.key(v))
            return ("{", names, tuple(parts))
        if kind is list:
            keys = [self.key(v) for v in value]
            if not self.ignore_order:
                return ("[", tuple(keys))
            return ("[", _multiset(keys))
        return self._leaf_key(self.leaf(value))

    @staticmethod
    def _leaf_key(leaf: tuple) -> Any:
        if leaf[0] == "n" or leaf[0] == "s":  # numbers and text stand for themselves; never equal each other
            return leaf[1]
        return None if leaf is _NULL else leaf

    def _names(self, value: dict) -> tuple | None:
        """The dict's keys in canonical order, or None when they have none.

        Strings sort among themselves, numbers among themselves, strings after numbers; other
        key types have no order. Cached by the dict's own key order, so a table's rows sort
        their shared keys once, not once per row.
        """
        order = tuple(value)
        try:
            return self._orders[order]
        except KeyError:
            pass
        names: tuple | None = None
        if not self.ignore_key_order:
            names = order
        elif _SORTABLE_KEYS.issuperset(map(type, order)):
            names = tuple(sorted(order, key=lambda k: (type(k) is str, k)))
        self._orders[order] = names
        return names

    def record(self, value: Any) -> tuple | None:
        """`(shape, numbers)`: two values match exactly when their shapes are equal and their
        numbers are pairwise within tolerance; None for a value this cannot describe.

        Under `ignore_order` a list of scalars is a multiset: its numbers are sorted, which pairs
        them optimally (the tolerance test is monotone, see `numeric.py`), and the rest counted.
        Dicts nest; a list holding dicts or lists, keys with no canonical order or an
        unhashable scalar give None, and such values are paired the general way.
        """
        found: list = []
        try:
            shape = self._shape(value, found)
            hash(shape)
        except (_NotARecord, TypeError):
            return None
        return shape, found

    def _shape(self, value: Any, found: list) -> Any:
        kind = type(value)
        if kind is dict:
            names = self._names(value)
            if names is None:
                raise _NotARecord
            parts = []
            for name in names:
                v = value[name]
                t = type(v)
                if (t is int or t is float) and v == v and (t is int or not math.isinf(v)):
                    found.append(v)
                    parts.append(_NUMBER)
                elif (t is str and self.plain_text) or v is None:
                    parts.append(v)
                else:
                    parts.append(self._shape(v, found))
            return ("{", names, tuple(parts))
        if kind is list:
            values, others = [], []
            for v in value:
                t = type(v)
                if t is int or (t is float and v == v and not math.isinf(v)):
                    values.append(v)
                    continue
                if t is str and self.plain_text:
                    others.append(v)
                    continue
                if t is dict or t is list:
                    raise _NotARecord
                leaf = self.leaf(v)
                if leaf[0] == "n" and not is_infinite(leaf[1]):
                    values.append(leaf[1])
                else:
                    others.append(self._leaf_key(leaf))
            values.sort()
            found.extend(values)
            return ("[", len(values), _multiset(others))
        leaf = self.leaf(value)
        if leaf[0] == "n" and not is_infinite(leaf[1]):
            found.append(leaf[1])
            return _NUMBER
        return ("=", self._leaf_key(leaf))

    def shape_without_numbers(self, value: Any) -> Any:
        """A hashable form in which every number is one placeholder: what two values must share
        to possibly match under a tolerance. Raises TypeError if unhashable."""
        kind = type(value)
        if kind is dict:
            names = self._names(value)
            if names is None:
                items = [(k, self.shape_without_numbers(v)) for k, v in value.items()]
                return ("{", frozenset(items) if self.ignore_key_order else tuple(items))
            return ("{", names, tuple(self.shape_without_numbers(value[name]) for name in names))
        if kind is list:
            keys = [self.shape_without_numbers(v) for v in value]
            return ("[", _multiset(keys) if self.ignore_order else tuple(keys))
        leaf = self.leaf(value)
        return _NUMBER if leaf[0] == "n" else self._leaf_key(leaf)

    def numbers_of(self, value: Any) -> list | None:
        """The numbers reachable through dicts, in canonical key order; None if keys have no order."""
        if type(value) is dict:
            names = self._names(value)
            if names is None:
                return None
            found: list = []
            for k in names:
                inner = self.numbers_of(value[k])
                if inner is None:
                    return None
                found.extend(inner)
            return found
        if type(value) is list:
            return []
        leaf = self.leaf(value)
        return [leaf[1]] if leaf[0] == "n" else []

    # walking

    def compare(self, expected: Any, actual: Any, path: Any, report: Report | None) -> bool:
        """Whether `actual` matches `expected`; with a report, record every difference."""
        if type(expected) is dict:
            if type(actual) is dict:
                return self._dicts(expected, actual, path, report)
        elif type(expected) is list:
            if type(actual) is list:
                if self.ignore_order:
                    return self._unordered(expected, actual, path, report)
                if self.subset_mode:
                    return self._subsequence(expected, actual, path, report)
                return self._ordered(expected, actual, path, report)
        elif type(actual) is not dict and type(actual) is not list:
            mine, theirs = self.leaf(expected), self.leaf(actual)
            if mine == theirs:
                return True
            if mine[0] == "n" == theirs[0] and self.near(mine[1], theirs[1]):
                return True
            if report is not None:
                report.add(path, self._leaf_difference(expected, actual, mine, theirs))
            return False
        if report is not None:
            report.add(path, self._kind_difference(expected, actual))
        return False

    def _leaf_difference(self, expected: Any, actual: Any, mine: tuple, theirs: tuple) -> str:
        numeric = {"n", "nan", "big"}
        if mine[0] != theirs[0] and not {mine[0], theirs[0]} <= numeric:
            text = f"expected {_show(expected)} ({_a(_kind(expected))}), got {_show(actual)} ({_a(_kind(actual))})"
            texts = [v for v in (expected, actual) if isinstance(v, str)]
            if not self.type_coercion and texts and coerce(texts[0]) is not None:
                text += "; type_coercion=True would compare them as values"
            return text
        text = f"expected {_show(expected)}, got {_show(actual)}"
        if "big" in (mine[0], theirs[0]):
            text += f" (a number with more than {EXACT_DIGITS:,} digits compares by equality only)"
        elif mine[0] == "n" == theirs[0] and self.tolerant and not (is_infinite(mine[1]) or is_infinite(theirs[1])):
            text += self.tolerance.explain(mine[1], theirs[1])
        return text

    @staticmethod
    def _kind_difference(expected: Any, actual: Any) -> str:
        kind = _kind(actual)
        got = kind if isinstance(actual, dict | list) else f"{kind} {_show(actual)}"
        if isinstance(expected, dict | list):
            return f"expected {_a(_kind(expected))}, got {got}"
        return f"expected {_show(expected)} ({_a(_kind(expected))}), got {got}"

    def _dicts(self, expected: dict, actual: dict, path: Any, report: Report | None) -> bool:
        matched = True
        for key, value in expected.items():
            if key not in actual:
                if report is None:
                    return False
                report.add((path, key), "missing key")
                matched = False
            elif not self.compare(value, actual[key], (path, key), report):
                if report is None:
                    return False
                matched = False
        if not self.subset_mode:
            for key in actual:
                if key not in expected:
                    if report is None:
                        return False
                    report.add((path, key), f"unexpected key (value {_show(actual[key])})")
                    matched = False
        if not self.ignore_key_order:
            mine = [k for k in expected if k in actual]
            theirs = [k for k in actual if k in expected]
            if mine != theirs:
                if report is None:
                    return False
                report.add(path, f"key order differs: expected {_show(mine, 10_000)}, got {_show(theirs, 10_000)}")
                matched = False
        return matched

    def _ordered(self, expected: list, actual: list, path: Any, report: Report | None) -> bool:
        if len(expected) != len(actual):
            if report is None:
                return False
            report.add(path, _length_difference(expected, actual))
        matched = len(expected) == len(actual)
        for index, (mine, theirs) in enumerate(zip(expected, actual, strict=False)):
            if not self.compare(mine, theirs, (path, index), report):
                if report is None:
                    return False
                matched = False
        if report is not None:
            for index in range(len(actual), len(expected)):
                report.add((path, index), f"missing element {_show(expected[index])}")
            for index in range(len(expected), len(actual)):
                report.add((path, index), f"unexpected element {_show(actual[index])}")
        return matched

    def _subsequence(self, expected: list, actual: list, path: Any, report: Report | None) -> bool:
        """Subset mode, ordered: earliest-first search is optimal for a subsequence."""
        start = 0
        matched = True
        for index, mine in enumerate(expected):
            position = start
            while position < len(actual) and not self.compare(mine, actual[position], None, None):
                position += 1
            self.budget.spend(position - start + 1, pairing.NESTED if report is None else path, expected, actual)
            if position < len(actual):
                start = position + 1
                continue
            if report is None:
                return False
            matched = False
            text = f"no element of actual matches it in order (searched actual[{start}:])"
            if report.room:
                text += self._nearest_text(mine, actual, list(range(start, len(actual))), path, "nearest there")[1]
            report.add((path, index), text)
        return matched

    def _unordered(self, expected: list, actual: list, path: Any, report: Report | None) -> bool:
        if report is None and not self.subset_mode and len(expected) != len(actual):
            return False
        lost_expected, lost_actual = pairing.pair(self, expected, actual, pairing.NESTED if report is None else path)
        matched = not lost_expected and (self.subset_mode or not lost_actual)
        if report is None:
            return matched
        if not self.subset_mode and len(expected) != len(actual):
            report.add(path, _length_difference(expected, actual))
        free = list(lost_actual)
        for index in lost_expected:
            text = "expected element has no partner in actual"
            if report.room:
                partner, nearest = self._nearest_text(expected[index], actual, free, path, "nearest unpaired actual")
                if partner is not None:
                    free.remove(partner)
                text += nearest
            report.add((path, index), text)
        if not self.subset_mode:
            for index in free:
                report.add((path, index), f"actual element has no partner: {_show(actual[index])}")
        return matched

    def _nearest_text(
        self, mine: Any, actual: list, candidates: list[int], path: Any, label: str
    ) -> tuple[int | None, str]:
        """The candidate with the fewest differences from `mine`, and its first difference."""
        if not candidates:
            return None, "; no actual element is left to compare it with"
        best: tuple[int, int, Report] | None = None
        for position in candidates:
            found = Report(1)
            self.compare(mine, actual[position], None, found)
            if best is None or found.count < best[0]:
                best = (found.count, position, found)
                if found.count <= 1:
                    break
        assert best is not None
        count, position, found = best
        where, what = found.items[0] if found.items else (None, "")
        where = format_path(where, root="")
        what = what if len(what) <= 200 else what[:197] + "..."  # nested lists explain recursively
        more = f" (and {count - 1} more)" if count > 1 else ""
        at = f" at {where}" if where else ""
        return position, (f"; {label} is {format_path((path, position))}, which differs{at}: {what}{more}")


class _NotARecord(Exception):
    pass


def _multiset(keys: list) -> frozenset:
    """Hashable counts of `keys` (not `Counter`: its Mapping check costs more than counting a row)."""
    counts: dict = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return frozenset(counts.items())
