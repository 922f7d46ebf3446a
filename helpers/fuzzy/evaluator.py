"""`FuzzyEquals`: a deterministic evaluator that compares structured data with configurable slack.

Strands Evals' `Equals` compares with `==`, so a SQL result set in another row order, a float
off in the ninth digit or a value with a trailing space fails, and the reason names nothing.
`FuzzyEquals` walks dicts and lists together, applies the knobs at every level, and lists each
difference with its JSONPath (`$.rows[0].total: expected 10.0, got 10.5`). The verdict stays
binary: for per-field scores use `StructuredOutputSimilarity`.

Unordered lists are paired by a maximum bipartite matching, so a pass never depends on the order
in which elements were tried. It stays fast on large result sets: elements are first grouped by
a hashable canonical form, so exact data pairs in linear time; under a tolerance, candidates are
found through a grid over the rows' numbers, and only the leftovers go through augmenting paths.
"""

from __future__ import annotations

import math
import numbers
import re
from collections import Counter
from collections.abc import Mapping
from decimal import Decimal
from enum import Enum
from fractions import Fraction
from itertools import product
from typing import Any

from pydantic import BaseModel
from strands.agent.agent_result import AgentResult
from strands_evals.evaluators import Evaluator
from strands_evals.types.evaluation import EvaluationData, EvaluationOutput, InputT, OutputT

__all__ = ["MAX_DEPTH", "MAX_DIFFERENCES", "UNSET", "FuzzyEquals"]

MAX_DEPTH = 100
"""Deepest nesting of dicts and lists compared; deeper (or cyclic) input fails the case."""

MAX_DIFFERENCES = 10
"""Differences spelled out in a reason; the rest are counted as `(+N more)`."""


class _Unset:
    """The type of `UNSET`: "no value given", as distinct from an explicit `None`."""

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"  # copies and pickles resolve to the module's one instance, so `is UNSET` holds


UNSET: Any = _Unset()
"""`FuzzyEquals(value=UNSET)` (the default) compares against each case's `expected_output`."""

_FLAGS = {
    "ignore_order": False,
    "ignore_key_order": True,
    "case_sensitive": True,
    "ignore_whitespace": False,
    "subset_mode": False,
    "type_coercion": False,
}
_TOLERANCES = {"numeric_tolerance": 0.0, "absolute_tolerance": 0.0}

# Canonical leaves are tagged tuples, so True (a boolean) never equals 1 (a number).
_NULL = ("null",)
_NAN = ("nan",)
_NUMBER_ERASED = ("number",)
_UNKNOWN = object()
_PLAIN = frozenset({str, int, float, bool, type(None)})
_NUMERIC_TEXT = re.compile(r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SMALL_BLOCK = 64  # candidate pairs in a block below which trying them all beats building a grid
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class FuzzyEquals(Evaluator[InputT, OutputT]):
    """Passes when `actual_output` equals the expected value under the knobs; says where not.

    Inputs may be dicts, lists and tuples (a tuple compares as a list), scalars, Pydantic models
    (compared by their JSON-mode dump, so a `date` field is its ISO string) and an `AgentResult`
    (compared by its `structured_output`). `str` and `bytes` are always scalars.

    Args:
        value: The expected value. Left unset, each case's `expected_output` is used; an
            explicit `None` requires the output to be `None`, which `Equals` cannot express.
        ignore_order: Lists are multisets. Elements are paired by a maximum matching, so the
            lists match whenever any one-to-one pairing under the other knobs exists.
        ignore_key_order: Dicts match whatever their key order. Off, the common keys must also
            come in the same order.
        numeric_tolerance: Relative tolerance. Numbers match when
            `|a - b| <= max(numeric_tolerance * max(|a|, |b|), absolute_tolerance)`.
            `int`, `float` and `Decimal` compare by value (a `Decimal` with a fraction as the
            nearest float); `bool` is never a number; NaN equals NaN; an infinity equals only
            the same infinity.
        absolute_tolerance: Absolute tolerance, so `0.0` against `1e-9` can pass.
        case_sensitive: Off, string values are compared case-folded.
        ignore_whitespace: String values are stripped and every run of whitespace (tabs and
            newlines included) counts as one space. Dict keys are always compared exactly:
            neither this nor `case_sensitive` touches them.
        subset_mode: Pass when the actual value contains the expected one: every expected key
            present (extra keys ignored), recursively; a list as an ordered subsequence, or a
            sub-multiset with `ignore_order`. Scalars still compare whole.
        type_coercion: Numeric strings (surrounding whitespace, a sign, decimals, an exponent,
            thousands separators as in `"1,240.00"`) equal numbers, and `"true"`/`"false"` in
            any case equal booleans, on either side; tolerances apply after coercion.
        name: Evaluator name, forwarded to `Evaluator`.

    Nesting deeper than `MAX_DEPTH` and cyclic structures fail the case with a reason that says
    where. Cost is linear on exact data and close to `n log n` under a tolerance, except with
    `subset_mode` and `ignore_order` together, where every expected element left after exact
    pairing is tried against every actual one.

    Raises:
        TypeError: If a flag is not a bool, a tolerance is not a number, or `name` is not a string.
        ValueError: If a tolerance is negative, NaN or infinite.
    """

    def __init__(
        self,
        value: Any = UNSET,
        *,
        ignore_order: bool = False,
        ignore_key_order: bool = True,
        numeric_tolerance: float = 0.0,
        absolute_tolerance: float = 0.0,
        case_sensitive: bool = True,
        ignore_whitespace: bool = False,
        subset_mode: bool = False,
        type_coercion: bool = False,
        name: str | None = None,
    ) -> None:
        """Initialize the evaluator; every knob is checked here, not at the first case."""
        if name is not None and not isinstance(name, str):
            raise TypeError(f"FuzzyEquals: name must be a string or None, got {name!r}")
        super().__init__(name=name)
        given = locals()  # knobs by name, so _FLAGS and _TOLERANCES stay the one list of them
        knobs: dict[str, Any] = {}
        for knob in _FLAGS:
            if not isinstance(given[knob], bool):
                raise TypeError(f"FuzzyEquals: {knob} must be True or False, got {given[knob]!r}")
            knobs[knob] = given[knob]
        for knob in _TOLERANCES:
            tolerance = given[knob]
            if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real):
                raise TypeError(f"FuzzyEquals: {knob} must be a number, got {tolerance!r}")
            if not math.isfinite(tolerance) or tolerance < 0:
                raise ValueError(
                    f"FuzzyEquals: {knob} must be a finite number >= 0 "
                    f"(numeric_tolerance=0.01 accepts 1%), got {tolerance!r}"
                )
            knobs[knob] = float(tolerance)
        self._value = value
        self._knobs = knobs

    @property
    def value(self) -> Any:
        """The expected value, or `UNSET` to use each case's `expected_output`."""
        return self._value

    @property
    def knobs(self) -> dict[str, Any]:
        """Every knob's value, defaults included."""
        return dict(self._knobs)

    def __repr__(self) -> str:
        shown = [] if self._value is UNSET else [f"value={self._value!r}"]
        shown += [f"{knob}={value!r}" for knob, value in self._changed_knobs().items()]
        if self.name is not None:
            shown.append(f"name={self.name!r}")
        return f"FuzzyEquals({', '.join(shown)})"

    def to_dict(self) -> dict:
        """The evaluator as `Experiment.to_dict` stores it; `from_dict` rebuilds it exactly.

        `value` is written only when given, so an explicit `None` survives the round trip and an
        unset value stays unset. A Pydantic model is written as its JSON-mode dump, which is how
        it is compared.

        Raises:
            ValueError: If `value` is nested deeper than `MAX_DEPTH` or contains a cycle.
        """
        result: dict[str, Any] = {"evaluator_type": self.get_type_name()}
        if self._value is not UNSET:
            try:
                result["value"] = _storable(_plain(self._value))
            except _Unreadable as exc:
                raise ValueError(f"FuzzyEquals.to_dict: {exc}; store a finite, acyclic value") from exc
        result.update(self._changed_knobs())
        if self.name is not None:
            result["name"] = self.name
        return result

    def evaluate(self, evaluation_case: EvaluationData[InputT, OutputT]) -> list[EvaluationOutput]:
        """Compare one case's actual output with `value`, or with its `expected_output`."""
        unset = self._value is UNSET
        expected = evaluation_case.expected_output if unset else self._value
        output = self.compare(expected, evaluation_case.actual_output)
        if unset and expected is None and not output.test_pass:
            output.reason = f"{output.reason} (the case has no expected_output)"
        return [output]

    async def evaluate_async(self, evaluation_case: EvaluationData[InputT, OutputT]) -> list[EvaluationOutput]:
        """Run inline: the comparison does no I/O, so a thread would only add overhead."""
        return self.evaluate(evaluation_case)

    def compare(self, expected: Any, actual: Any) -> EvaluationOutput:
        """Compare two values directly, outside an experiment.

        Returns:
            Score 1.0 and a pass, or 0.0 and a fail with every difference in `reason`; also in
            `metadata` as `differences` (the listed ones) and `difference_count` (all of them).
        """
        try:
            expected_plain = _plain(expected, "expected value")
            actual_plain = _plain(actual, "actual_output")
        except _Unreadable as exc:
            return _failed(f"could not compare: {exc}", [str(exc)], 1)
        report = _Report(MAX_DIFFERENCES)
        try:
            matched = _Comparer(**self._knobs).compare(expected_plain, actual_plain, None, report)
        except RecursionError:  # MAX_DEPTH keeps well below the limit; this is a last guard
            text = f"could not compare: the values nest too deeply for this interpreter's stack (MAX_DEPTH={MAX_DEPTH})"
            return _failed(text, [text], 1)
        if matched:
            changed = self._changed_knobs()
            knobs = ", ".join(f"{k}={v!r}" for k, v in changed.items())
            reason = "actual_output matches the expected value" + (f" ({knobs})" if knobs else "")
            return EvaluationOutput(
                score=1.0,
                test_pass=True,
                reason=reason,
                metadata={"differences": [], "difference_count": 0},
            )
        lines = report.lines()
        listed = "; ".join(lines)
        more = report.count - len(lines)
        plural = "difference" if report.count == 1 else "differences"
        reason = f"{report.count} {plural}: {listed}" + (f"; (+{more} more)" if more else "")
        return _failed(reason, lines, report.count)

    def _changed_knobs(self) -> dict[str, Any]:
        defaults = {**_FLAGS, **_TOLERANCES}
        return {knob: value for knob, value in self._knobs.items() if value != defaults[knob]}


def _failed(reason: str, lines: list[str], count: int) -> EvaluationOutput:
    return EvaluationOutput(
        score=0.0,
        test_pass=False,
        reason=reason,
        metadata={"differences": lines, "difference_count": count},
    )


# --- reading inputs ---------------------------------------------------------------------------


class _Unreadable(Exception):
    """An input that cannot be compared; the message says which side and where."""


class _TooDeep(Exception):
    pass


def _plain(value: Any, side: str = "value") -> Any:
    """Convert to dicts, lists and scalars; raise `_Unreadable` naming `side` and the path."""
    if isinstance(value, AgentResult):
        if value.structured_output is None:
            raise _Unreadable(
                f"{side} is an AgentResult with no structured_output; call the agent with "
                "structured_output_model=YourModel"
            )
        value = value.structured_output
    try:
        return _to_plain(value, 0)
    except _TooDeep:
        raise _Unreadable(f"{side} {_depth_problem(value)}") from None
    except (ValueError, TypeError, RecursionError) as exc:  # a Pydantic model that cannot dump itself
        raise _Unreadable(f"{side} holds a Pydantic model that cannot be dumped: {exc}") from None


def _to_plain(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is not dict and kind is not list:  # exact types first: ABC checks are slow
        if kind in _PLAIN:
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        elif isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, list | tuple):
            value = list(value)
        else:
            return value
        kind = type(value)
    if depth >= MAX_DEPTH:
        raise _TooDeep
    if kind is dict:
        if _PLAIN.issuperset(map(type, value.values())):
            return value  # nothing to convert: skip the copy
        return {k: v if type(v) in _PLAIN else _to_plain(v, depth + 1) for k, v in value.items()}
    if _PLAIN.issuperset(map(type, value)):
        return value
    return [v if type(v) in _PLAIN else _to_plain(v, depth + 1) for v in value]


def _storable(value: Any) -> Any:
    """Decimals as the int or float they compare as, so `Experiment.to_file` can write them."""
    if type(value) is dict:
        return {k: _storable(v) for k, v in value.items()}
    if type(value) is list:
        return [_storable(v) for v in value]
    if isinstance(value, Decimal) and value.is_finite():
        return _number(value)[1]
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
            return f"contains a cycle: {_format_path(path)} refers back to {_format_path(active[id(node)])}"
        if depth >= MAX_DEPTH:
            where = _format_path(path)
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


def _format_path(path: Any, root: str = "$") -> str:
    """Render a linked path `(parent, key)` in JSONPath style: `$.rows[0].total`."""
    parts = []
    while path is not None:
        path, key = path
        if isinstance(key, str):
            parts.append(f".{key}" if _IDENTIFIER.fullmatch(key) else f"[{key!r}]")
        else:
            parts.append(f"[{key!r}]")
    return root + "".join(reversed(parts))


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
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


class _Report:
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
        return [f"{_format_path(path, root)}: {text}" for path, text in self.items]


# --- comparing --------------------------------------------------------------------------------


class _Comparer:
    """One comparison under one set of knobs (it caches per comparison, so make one for each).

    `compare` walks both values with a `_Report` to explain, or with `None` to answer
    yes or no as fast as possible (pairing tries many candidates that way).
    """

    def __init__(self, **knobs: Any) -> None:
        self.ignore_order: bool = knobs["ignore_order"]
        self.ignore_key_order: bool = knobs["ignore_key_order"]
        self.case_sensitive: bool = knobs["case_sensitive"]
        self.ignore_whitespace: bool = knobs["ignore_whitespace"]
        self.subset_mode: bool = knobs["subset_mode"]
        self.type_coercion: bool = knobs["type_coercion"]
        self.relative: float = knobs["numeric_tolerance"]
        self.absolute: float = knobs["absolute_tolerance"]
        self.tolerant = self.relative > 0 or self.absolute > 0
        self.plain_text = self.case_sensitive and not self.ignore_whitespace and not self.type_coercion
        self._orders: dict[tuple, tuple | None] = {}  # per comparison: see `_names`

    # leaves

    def leaf(self, value: Any) -> tuple:
        """The canonical form of a scalar: equal forms always match, under any knobs."""
        kind = type(value)
        if kind is str:
            return self._text(value)
        if kind is float:
            return ("n", value) if value == value else _NAN
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
            return _number(value)
        if isinstance(value, bytes | bytearray):
            return ("bytes", bytes(value))
        if isinstance(value, set | frozenset):
            return ("other", frozenset(value))
        return ("other", value)

    def _text(self, text: str) -> tuple:
        if self.type_coercion:
            coerced = _coerce(text)
            if coerced is not None:
                return coerced
        if self.ignore_whitespace:
            text = " ".join(text.split())
        if not self.case_sensitive:
            text = text.casefold()
        return ("s", text)

    def close(self, x: int | float, y: int | float) -> bool:
        """Whether two unequal canonical numbers are within tolerance."""
        if not self.tolerant or _infinite(x) or _infinite(y):
            return False
        try:
            return abs(x - y) <= max(self.relative * max(abs(x), abs(y)), self.absolute)
        except OverflowError:  # an int beyond float range: the same test in exact fractions
            a, b = Fraction(x), Fraction(y)
            return abs(a - b) <= max(Fraction(self.relative) * max(abs(a), abs(b)), Fraction(self.absolute))

    # canonical keys

    def key(self, value: Any, erase_numbers: bool = False) -> Any:
        """A hashable form: equal keys mean the values match. Raises TypeError if unhashable.

        With `erase_numbers`, every number becomes one placeholder: the key then names the
        "shape" two values must share to possibly match under a tolerance.
        """
        kind = type(value)
        if kind is dict:
            names = self._names(value)
            if names is None:  # keys that are not all strings have no canonical order
                items = [(k, self.key(v, erase_numbers)) for k, v in value.items()]
                return ("{", frozenset(items) if self.ignore_key_order else tuple(items))
            parts = []
            for name in names:  # plain scalars inline: this loop is the hot path under a tolerance
                v = value[name]
                t = type(v)
                if (t is int or t is float) and v == v:
                    parts.append(_NUMBER_ERASED if erase_numbers else v)
                elif (t is str and self.plain_text) or v is None:
                    parts.append(v)
                else:
                    parts.append(self.key(v, erase_numbers))
            return ("{", names, tuple(parts))
        if kind is list:
            keys = [self.key(v, erase_numbers) for v in value]
            if not self.ignore_order:
                return ("[", tuple(keys))
            counts: dict[Any, int] = {}
            for k in keys:
                counts[k] = counts.get(k, 0) + 1
            return ("[", frozenset(counts.items()))
        leaf = self.leaf(value)
        if leaf[0] == "n":  # numbers and text stand for themselves; they never equal each other
            return _NUMBER_ERASED if erase_numbers else leaf[1]
        if leaf[0] == "s":
            return leaf[1]
        return None if leaf is _NULL else leaf

    def _names(self, value: dict) -> tuple | None:
        """The dict's keys in canonical order; None unless all are strings (then no order exists).

        Cached by the dict's own key order, so a table's rows sort their shared keys once, not once per row.
        """
        order = tuple(value)
        names = self._orders.get(order, _UNKNOWN)
        if names is _UNKNOWN:
            names = None
            if all(type(k) is str for k in order):
                names = tuple(sorted(order)) if self.ignore_key_order else order
            self._orders[order] = names
        return names

    def numbers_of(self, value: Any) -> list | None:
        """The numbers reachable through dicts, in sorted-key order; None if keys are not str."""
        if type(value) is dict:
            found: list = []
            if not all(type(k) is str for k in value):
                return None
            for k in sorted(value):
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

    def compare(self, expected: Any, actual: Any, path: Any, report: _Report | None) -> bool:
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
            if mine[0] == "n" == theirs[0] and self.close(mine[1], theirs[1]):
                return True
            if report is not None:
                report.add(path, self._leaf_difference(expected, actual, mine, theirs))
            return False
        if report is not None:
            report.add(path, self._kind_difference(expected, actual))
        return False

    def _leaf_difference(self, expected: Any, actual: Any, mine: tuple, theirs: tuple) -> str:
        if mine[0] != theirs[0] and not {mine[0], theirs[0]} <= {"n", "nan"}:
            text = f"expected {_show(expected)} ({_a(_kind(expected))}), got {_show(actual)} ({_a(_kind(actual))})"
            texts = [v for v in (expected, actual) if isinstance(v, str)]
            if not self.type_coercion and texts and _coerce(texts[0]) is not None:
                text += "; type_coercion=True would compare them as values"
            return text
        text = f"expected {_show(expected)}, got {_show(actual)}"
        if mine[0] == "n" == theirs[0] and self.tolerant and not (_infinite(mine[1]) or _infinite(theirs[1])):
            x, y = mine[1], theirs[1]
            try:
                allowed = max(self.relative * max(abs(x), abs(y)), self.absolute)
                text += f" (off by {abs(x - y):.6g}, tolerance allows {allowed:.6g})"
            except OverflowError:
                pass
        return text

    @staticmethod
    def _kind_difference(expected: Any, actual: Any) -> str:
        kind = _kind(actual)
        got = kind if isinstance(actual, dict | list) else f"{kind} {_show(actual)}"
        if isinstance(expected, dict | list):
            return f"expected {_a(_kind(expected))}, got {got}"
        return f"expected {_show(expected)} ({_a(_kind(expected))}), got {got}"

    def _dicts(self, expected: dict, actual: dict, path: Any, report: _Report | None) -> bool:
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
                report.add(path, f"key order differs: expected {mine}, got {theirs}")
                matched = False
        return matched

    def _ordered(self, expected: list, actual: list, path: Any, report: _Report | None) -> bool:
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

    def _subsequence(self, expected: list, actual: list, path: Any, report: _Report | None) -> bool:
        """Subset mode, ordered: earliest-first search is optimal for a subsequence."""
        start = 0
        matched = True
        for index, mine in enumerate(expected):
            position = start
            while position < len(actual) and not self.compare(mine, actual[position], None, None):
                position += 1
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

    def _unordered(self, expected: list, actual: list, path: Any, report: _Report | None) -> bool:
        if report is None and not self.subset_mode and len(expected) != len(actual):
            return False
        lost_expected, lost_actual = self._pair(expected, actual)
        if report is None:
            return not lost_expected and (self.subset_mode or not lost_actual)
        matched = not lost_expected and (self.subset_mode or not lost_actual)
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
        best: tuple[int, int, _Report] | None = None
        for position in candidates:
            found = _Report(1)
            self.compare(mine, actual[position], None, found)
            if best is None or found.count < best[0]:
                best = (found.count, position, found)
                if found.count <= 1:
                    break
        assert best is not None
        count, position, found = best
        where, what = found.items[0] if found.items else (None, "")
        where = _format_path(where, root="")
        what = what if len(what) <= 200 else what[:197] + "..."  # nested lists explain recursively
        more = f" (and {count - 1} more)" if count > 1 else ""
        at = f" at {where}" if where else ""
        return position, (f"; {label} is {_format_path((path, position))}, which differs{at}: {what}{more}")

    # pairing

    def _pair(self, expected: list, actual: list) -> tuple[list[int], list[int]]:
        """Pair elements by a maximum matching; return the unpaired indices of each side."""
        try:
            keys_e = [self.key(x) for x in expected]
            keys_a = [self.key(x) for x in actual]
            if not self.tolerant and not self.subset_mode and Counter(keys_e) == Counter(keys_a):
                return [], []  # the common case, settled in C: identical multisets
            mine, theirs = _group(keys_e), _group(keys_a)
            hashable = True
        except TypeError:  # an unhashable scalar: no shortcut, every element on its own
            mine = {("#", i): [i] for i in range(len(expected))}
            theirs = {("#", i): [i] for i in range(len(actual))}
            hashable = False
        if hashable and not self.tolerant:
            # Without a tolerance, matching is transitive (equality, or containment in subset
            # mode), so pairing identical elements first never blocks a better pairing.
            for key, indices in mine.items():
                partners = theirs.get(key)
                if partners:
                    taken = min(len(indices), len(partners))
                    del indices[:taken], partners[:taken]
            mine = {k: v for k, v in mine.items() if v}
            theirs = {k: v for k, v in theirs.items() if v}
            if not self.subset_mode or not mine or not theirs:
                return _flatten(mine), _flatten(theirs)
        groups_e, groups_a = list(mine.values()), list(theirs.values())
        heads_e = [expected[g[0]] for g in groups_e]
        heads_a = [actual[g[0]] for g in groups_a]
        edges = [
            [h for h in candidates if self.compare(heads_e[g], heads_a[h], None, None)]
            for g, candidates in enumerate(self._candidates(heads_e, heads_a, hashable))
        ]
        flows = _max_flow([len(g) for g in groups_e], [len(g) for g in groups_a], edges)
        for (g, h), units in flows.items():
            del groups_e[g][:units], groups_a[h][:units]
        return sorted(i for g in groups_e for i in g), sorted(i for g in groups_a for i in g)

    def _candidates(self, heads_e: list, heads_a: list, hashable: bool) -> list[list[int]]:
        """For each expected group, the actual groups that may match it (a superset)."""
        everyone = list(range(len(heads_a)))
        if self.subset_mode or not hashable:
            return [everyone for _ in heads_e]
        # Under a tolerance only numbers may differ, so a match shares the number-free shape.
        blocks: dict[Any, tuple[list[int], list[int]]] = {}
        for g, head in enumerate(heads_e):
            blocks.setdefault(self.key(head, erase_numbers=True), ([], []))[0].append(g)
        for h, head in enumerate(heads_a):
            shape = self.key(head, erase_numbers=True)
            if shape in blocks:
                blocks[shape][1].append(h)
        result: list[list[int]] = [[] for _ in heads_e]
        for block_e, block_a in blocks.values():
            if not block_a:
                continue
            near = None
            if len(block_e) * len(block_a) > _SMALL_BLOCK:  # a grid only pays off on big blocks
                near = self._grid(
                    [self.numbers_of(heads_e[g]) for g in block_e],
                    [self.numbers_of(heads_a[h]) for h in block_a],
                )
            for position, g in enumerate(block_e):
                chosen = block_a if near is None else [block_a[i] for i in near[position]]
                result[g] = chosen
        return result

    def _grid(self, vectors_e: list, vectors_a: list) -> list[list[int]] | None:
        """Candidates through a grid on up to two numeric columns, or None to try them all.

        Each column is mapped by a monotone `t` under which two numbers within tolerance are
        at most one cell width apart, so a partner is always in the same or a neighbouring cell.
        """
        if any(v is None for v in vectors_e + vectors_a) or not vectors_e[0]:
            return None
        columns = []
        for d in range(len(vectors_e[0])):
            cells = _cells([v[d] for v in vectors_e + vectors_a], self.relative, self.absolute)
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
        for i in range(split):
            around = [_neighbours(cells[i]) for cells in chosen]
            near.append(sorted(j for cell in product(*around) for j in index.get(cell, ())))
        return near


def _number(value: Any) -> tuple:
    """Canonical number: an int when integral, else a float; Decimal and Fraction included."""
    if isinstance(value, Decimal):
        if value.is_nan():
            return _NAN
        if value.is_finite() and value == value.to_integral_value() and value.adjusted() < 400:
            return ("n", int(value))
        return ("n", float(value))
    if isinstance(value, numbers.Integral):
        return ("n", int(value))
    if isinstance(value, numbers.Rational) and value.denominator == 1:
        return ("n", int(value))
    number = float(value)
    return ("n", number) if number == number else _NAN


def _coerce(text: str) -> tuple | None:
    """The number or boolean a string spells, for `type_coercion`; None if it spells neither."""
    stripped = text.strip()
    if _NUMERIC_TEXT.fullmatch(stripped):
        return _number(Decimal(stripped.replace(",", "")))
    lowered = stripped.lower()
    if lowered in ("true", "false"):
        return ("b", lowered == "true")
    return None


def _group(keys: list) -> dict[Any, list[int]]:
    """Indices by key, in first-seen order, so pairing and reasons are deterministic."""
    groups: dict[Any, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    return groups


def _flatten(groups: dict[Any, list[int]]) -> list[int]:
    return sorted(i for indices in groups.values() for i in indices)


def _infinite(number: int | float) -> bool:
    """For canonical numbers: an int is never infinite (and may be too large for `math.isinf`)."""
    return isinstance(number, float) and math.isinf(number)


def _neighbours(cell: Any) -> tuple:
    return (cell - 1, cell, cell + 1) if isinstance(cell, int) else (cell,)


def _cells(values: list, relative: float, absolute: float) -> list | None:
    """Grid cells for one numeric column, or None when this column cannot narrow the search.

    With `t(x) = sign(x) * log(1 + |x| / k)`, `k >= absolute / relative`, two numbers within
    tolerance are at most `-log(1 - relative)` apart in `t`; with no relative tolerance,
    `t(x) = x / absolute` and the bound is 1. Infinities get cells of their own.
    """
    if relative >= 1:
        return None
    try:
        values = [float(x) for x in values]
    except OverflowError:  # an int beyond float range
        return None
    if relative == 0:
        width = 1.0

        def scale(x: float) -> float:
            return x / absolute
    else:
        width = -math.log1p(-relative)
        positive = [abs(x) for x in values if x and math.isfinite(x)]
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


def _max_flow(need: list[int], room: list[int], edges: list[list[int]]) -> dict[tuple, int]:
    """Maximum pairing between groups of identical elements, as units sent per (g, h) edge.

    Each expected group is served greedily, then by augmenting paths through already-paired
    groups. A group that finds no augmenting path never finds one later, so one pass suffices.
    """
    room = list(room)
    flow: dict[tuple, int] = {}
    users: list[dict[int, int]] = [{} for _ in room]  # actual group -> expected groups using it

    def send(g: int, h: int, units: int) -> None:
        flow[g, h] = flow.get((g, h), 0) + units
        users[h][g] = users[h].get(g, 0) + units
        if not flow[g, h]:
            del flow[g, h], users[h][g]

    for start, wanted in enumerate(need):
        for h in edges[start]:
            if not wanted:
                break
            units = min(wanted, room[h])
            if units:
                send(start, h, units)
                room[h] -= units
                wanted -= units
        while wanted:
            path = _augmenting_path(start, edges, room, users)
            if path is None:
                break
            units = min(wanted, room[path[-1][1]])
            for g, h in path[1::2]:
                units = min(units, flow[g, h])  # a backward step gives back flow it carries
            for step, (g, h) in enumerate(path):
                if step % 2 == 0:
                    send(g, h, units)
                else:
                    send(g, h, -units)
            room[path[-1][1]] -= units
            wanted -= units
    return flow


def _augmenting_path(
    start: int, edges: list[list[int]], room: list[int], users: list[dict[int, int]]
) -> list[tuple[int, int]] | None:
    """Breadth-first search for start -> h1 <- g1 -> h2 ... -> h_k with room at h_k.

    Returned as edges alternating forward (even positions, gain flow) and backward (odd
    positions, `(g_i, h_i)` losing flow).
    """
    came_to_h: dict[int, int] = {}
    came_to_g: dict[int, int] = {start: -1}
    queue = [start]
    for g in queue:
        for h in edges[g]:
            if h in came_to_h:
                continue
            came_to_h[h] = g
            if room[h] > 0:
                path: list[tuple[int, int]] = []
                while True:
                    g_here = came_to_h[h]
                    path.append((g_here, h))
                    if g_here == start:
                        return list(reversed(path))
                    h_before = came_to_g[g_here]
                    path.append((g_here, h_before))
                    h = h_before
            for g_next in users[h]:
                if g_next not in came_to_g:
                    came_to_g[g_next] = h
                    queue.append(g_next)
    return None
