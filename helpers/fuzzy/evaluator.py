"""`FuzzyEquals`: the Strands Evals adapter of a deterministic structured-data comparison.

Strands Evals' `Equals` compares with `==`, so a SQL result set in another row order, a float
off in the ninth digit or a value with a trailing space fails, and the reason names nothing.
`FuzzyEquals` walks dicts and lists together, applies the knobs at every level, and lists each
difference with its JSONPath (`$.rows[0].total: expected 10.0, got 10.5`). The verdict stays
binary: for per-field scores use `StructuredOutputSimilarity`.

This module is the `Evaluator` side (knob checks, the saved form, one output per case); the
comparison itself is `engine.py`, numbers `numeric.py`, and pairing unordered lists `pairing.py`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from strands.agent.agent_result import AgentResult
from strands_evals.evaluators import Evaluator
from strands_evals.types.evaluation import EvaluationData, EvaluationOutput, InputT, OutputT

from helpers.fuzzy.engine import FLAGS as _FLAGS
from helpers.fuzzy.engine import MAX_DEPTH, Comparer, Report, Unreadable, format_path, plain, storable
from helpers.fuzzy.engine import TOLERANCES as _TOLERANCES
from helpers.fuzzy.numeric import EXACT_DIGITS
from helpers.fuzzy.pairing import MAX_PAIR_CHECKS, NESTED, PairingTooLarge

__all__ = [
    "EXACT_DIGITS",
    "EVALUATORS",
    "MAX_DEPTH",
    "MAX_DIFFERENCES",
    "MAX_PAIR_CHECKS",
    "SAVED_TYPE",
    "UNSET",
    "FuzzyEquals",
    "LegacyFuzzyEquals",
]

MAX_DIFFERENCES = 10
"""Differences spelled out in a reason; the rest are counted as `(+N more)`."""

SAVED_TYPE = "FieldFuzzyEquals"
"""The `evaluator_type` this evaluator is saved under (see `FuzzyEquals.get_type_name`)."""

_OLD_SAVED_TYPE = "FuzzyEquals"


class _Unset:
    """The type of `UNSET`: "no value given", as distinct from an explicit `None`."""

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"  # copies and pickles resolve to the module's one instance, so `is UNSET` holds


UNSET: Any = _Unset()
"""`FuzzyEquals(value=UNSET)` (the default) compares against each case's `expected_output`."""


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
            `|a - b| <= max(numeric_tolerance * max(|a|, |b|), absolute_tolerance)`, decided
            in exact arithmetic (a float as its binary value, a tolerance as the decimal
            written). `int`, `float` and `Decimal` compare by value (a `Decimal` with a
            fraction as the nearest float, or exactly when no float holds it); `bool` is never
            a number; NaN equals NaN; an infinity equals only the same infinity. numpy scalars
            compare as the Python numbers they hold.
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

    Nesting deeper than `MAX_DEPTH`, cyclic structures and values with no natural comparison
    (a numpy array, a pandas DataFrame: the reason says what to pass instead) fail the case.
    Cost is linear on exact data and close to `n log n` under a tolerance (see `pairing.py`);
    where pairing cannot be reduced that far (several numbers per element all within tolerance
    of one another, `subset_mode` with `ignore_order`), it gives up after `MAX_PAIR_CHECKS`
    candidate pairs and fails the case with a reason rather than run without bound.

    Saved by `to_dict` as `SAVED_TYPE` ("FieldFuzzyEquals"); `EVALUATORS` reads that and the
    name saved before, "FuzzyEquals".

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
        result: dict[str, Any] = {"evaluator_type": SAVED_TYPE}
        if self._value is not UNSET:
            try:
                result["value"] = storable(plain(self._value, agent_result=AgentResult))
            except Unreadable as exc:
                raise ValueError(f"FuzzyEquals.to_dict: {exc}") from exc
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
            expected_plain = plain(expected, "expected value", agent_result=AgentResult)
            actual_plain = plain(actual, "actual_output", agent_result=AgentResult)
        except Unreadable as exc:
            return _failed(f"could not compare: {exc}", [str(exc)], 1)
        report = Report(MAX_DIFFERENCES)
        try:
            matched = Comparer(**self._knobs).compare(expected_plain, actual_plain, None, report)
        except PairingTooLarge as exc:
            text = _too_large(exc)
            return _failed(text, [text], 1)
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

    @classmethod
    def get_type_name(cls) -> str:
        """`SAVED_TYPE`: the name `to_dict` writes and `Experiment.from_dict` looks this class up by.

        Not "FuzzyEquals": upstream Strands Evals has a pull request adding an evaluator of
        that name, and a saved experiment must say which of the two it means.
        """
        return SAVED_TYPE

    def get_name(self) -> str:
        """The name report rows show: `name` if given, else "FuzzyEquals" (the class as imported)."""
        return self.name or "FuzzyEquals"

    def _changed_knobs(self) -> dict[str, Any]:
        defaults = {**_FLAGS, **_TOLERANCES}
        return {knob: value for knob, value in self._knobs.items() if value != defaults[knob]}


def _too_large(exc: PairingTooLarge) -> str:
    where = "a nested list" if exc.path is NESTED else format_path(exc.path)
    return (
        f"could not compare: pairing the {exc.expected:,} expected with the {exc.actual:,} actual elements of "
        f"{where} would try more than MAX_PAIR_CHECKS={exc.limit:,} candidate pairs (many elements are "
        "within tolerance of one another in several numbers at once); make one number an exact key (an "
        "absolute_tolerance below its spacing), lower the tolerance, or compare the list in smaller parts"
    )


def _failed(reason: str, lines: list[str], count: int) -> EvaluationOutput:
    return EvaluationOutput(
        score=0.0,
        test_pass=False,
        reason=reason,
        metadata={"differences": lines, "difference_count": count},
    )


class LegacyFuzzyEquals(FuzzyEquals):
    """Reads experiments saved before the type name changed: they name "FuzzyEquals".

    `Experiment.from_dict` looks evaluator classes up by `get_type_name()`, so this class
    answers to the old name; constructing it builds a plain `FuzzyEquals`, which saves itself
    under `SAVED_TYPE` from then on. Pass `EVALUATORS` as `custom_evaluators` to read both.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> FuzzyEquals:
        return FuzzyEquals(*args, **kwargs)

    @classmethod
    def get_type_name(cls) -> str:
        """The name experiments saved before carry."""
        return _OLD_SAVED_TYPE


EVALUATORS: list[type[Evaluator]] = [FuzzyEquals, LegacyFuzzyEquals]
"""`Experiment.from_file(path, custom_evaluators=EVALUATORS)` reads the new and the old saved name."""
