"""Gates a CI job can hold a run to: one-line rules, parsed without evaluating anything.

A gate is a one-line rule: `total_amount.recall >= 0.98` and `overall >= 0.8` measure the new
run, `delta(line_items.f1) >= -0.02` the change, and `high(delta(invoice_date.f1)) >= 0` the
upper end of the change's paired bootstrap interval, which fails only when a regression is
beyond noise. A rule that does not parse, or names a field the runs do not have, is an error,
never a pass: a misspelled gate that passes silently is worse than no gate.

Interval ends are read, by default, from one joint band over every target the gates read an end
of (`Comparison.joint`): with K such gates at 95%, the chance that any of them fails on a change
that moved nothing stays near 5%, where K separate intervals would allow up to K x 2.5%. The band
is made of the same percentile intervals the tables print, each read at one higher shared level,
so for one gated field it is that field's own interval, and the tables print the band the gates
read (`gated_intervals`). Mode `per-field` reads each target's own 95% interval instead; each
result records its mode and the interval it read.

Parsing needs only the standard library, so the command line (`fieldeval.commands.compare`) refuses a
malformed rule before it imports numpy or pandas; evaluating imports them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fieldeval.compare.params import INTERVAL_MODES, JOINT, RATIOS
from fieldeval.errors import EvalError
from fieldeval.formats import COUNTS

if TYPE_CHECKING:
    import pandas as pd

    from fieldeval.compare.bootstrap import Interval
    from fieldeval.compare.runs import Comparison, Sample

TOLERANCE = 1e-9  # comparisons forgive float rounding in a difference of two ratios


class GateError(EvalError, ValueError):
    """A gate rule is malformed or names something the runs do not have; the message names it."""


_OPERATORS = {
    ">=": lambda value, bound: value >= bound - TOLERANCE,
    "<=": lambda value, bound: value <= bound + TOLERANCE,
    ">": lambda value, bound: value > bound + TOLERANCE,
    "<": lambda value, bound: value < bound - TOLERANCE,
    "==": lambda value, bound: abs(value - bound) <= TOLERANCE,
    "!=": lambda value, bound: abs(value - bound) > TOLERANCE,
}


def regression_caught(high: Any) -> Any:
    """Whether `high(delta(F)) >= 0` fails where the change's interval ends at `high` (a number or an array).

    The gate's own reading, rounding forgiven: what every simulation of the gate counts as a
    regression caught (the power estimate, the gate benchmark).
    """
    return high < -TOLERANCE


_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_TARGET = r"[A-Za-z_][\w.]*"
_RULE = re.compile(
    rf"^\s*(?:(?P<bound_of>low|high)\(\s*delta\(\s*(?P<interval>{_TARGET})\s*\)\s*\)"
    rf"|delta\(\s*(?P<delta>{_TARGET})\s*\)|(?P<plain>{_TARGET}))\s*"
    rf"(?P<op>>=|<=|==|!=|>|<)\s*(?P<bound>{_NUMBER})\s*$"
)
_SHAPES = "TARGET, delta(TARGET), low(delta(TARGET)) or high(delta(TARGET))"


@dataclass(frozen=True)
class Gate:
    """A parsed rule: what to measure (`value`, `delta`, `low` or `high`) of which target, and the bound.

    `low` and `high` are the ends of the paired bootstrap interval of the delta, for a gate
    that should fail only when a change is beyond noise: `high(delta(invoice_date.f1)) >= 0`
    fails only when the whole interval is below zero. By default that interval is the field's
    part of the joint band over every gated interval end: the field's percentile interval read at
    the band's level, which the field table then prints for that field.
    """

    rule: str
    target: str
    measure: str
    operator: str
    bound: float


@dataclass(frozen=True)
class GateResult:
    """One evaluated rule: what was measured, on which run, and whether it passed."""

    rule: str
    measured: float
    on: str
    passed: bool
    interval: str = ""  # for an interval end: `joint` or `per-field`, the mode that produced it
    family: int = 0  # for a joint interval end: how many targets the band holds over together
    target: str = ""
    change: Interval | None = None  # for an interval end: the interval it was read from


def gated_intervals(results: Iterable[GateResult]) -> dict[str, Interval]:
    """The interval each gated target's ends were read from: what the tables print for those targets."""
    return {result.target: result.change for result in results if result.change is not None}


def parse_gate(rule: str) -> Gate:
    """Parse `overall >= 0.8`, `total_amount.recall >= 0.98`, `delta(line_items.f1) >= -0.02`
    or `high(delta(invoice_date.f1)) >= 0`.

    Raises:
        GateError: If the rule does not have one of those shapes, names an unknown metric, or
            its bound is not a finite number.
    """
    match = _RULE.match(rule)
    if match is None:
        raise GateError(
            f"gate {rule!r} is malformed; write {_SHAPES} followed by OP NUMBER, where TARGET is overall "
            f"or FIELD.METRIC and OP is one of {' '.join(_OPERATORS)} (e.g. 'total_amount.recall >= 0.98')"
        )
    target = match["interval"] or match["delta"] or match["plain"]
    if target != "overall" and ("." not in target or target.rsplit(".", 1)[1] not in RATIOS + COUNTS):
        raise GateError(
            f"gate {rule!r}: {target.rsplit('.', 1)[-1]!r} is not a metric; end the target with one of "
            f"{', '.join(RATIOS + COUNTS)}, or use overall"
        )
    bound = float(match["bound"])
    if not math.isfinite(bound):
        raise GateError(f"gate {rule!r}: the bound {match['bound']} is not a finite number; write a plain number")
    measure = match["bound_of"] or ("delta" if match["delta"] else "value")
    return Gate(rule, target, measure, match["op"], bound)


def evaluate_gates(
    rules: Iterable[str | Gate],
    subject: Any,
    *,
    intervals: str = JOINT,
    band: Mapping[str, Interval] | None = None,
    family: int = 0,
) -> list[GateResult]:
    """Evaluate each rule against one run (a report) or a pair (a `Comparison`).

    On a pair, a plain rule is measured on the new run's paired documents, `delta(...)` on new
    minus old, and `low(...)` / `high(...)` on the ends of the delta's bootstrap interval: with
    `intervals="joint"` (the default) one simultaneous band over every target such gates read,
    with `"per-field"` each target's own interval. `band`, given, is the joint band to read
    instead (a leaderboard's family over several candidates, `fieldeval.compare.candidates`), of
    `family` intervals in all.

    Raises:
        GateError: For a malformed rule, a field path the runs do not have, or a rule that needs
            two runs evaluated against one.
        ValueError: For an `intervals` mode other than `joint` or `per-field`.
    """
    from fieldeval.compare.runs import Comparison, Sample, read_run

    if intervals not in INTERVAL_MODES:
        raise ValueError(f"intervals must be one of {', '.join(INTERVAL_MODES)}; got {intervals!r}")
    if isinstance(subject, Comparison):
        comparison, sample, label = subject, subject.new, subject.labels[1]
    else:
        run = read_run(subject, "report")
        comparison, label = None, "run"
        sample = Sample.whole(run)
    gates = [rule if isinstance(rule, Gate) else parse_gate(rule) for rule in rules]
    for gate in gates:
        path = gate.target.rsplit(".", 1)[0]
        if gate.target != "overall" and path not in sample.counts:
            raise GateError(f"gate {gate.rule!r}: unknown field path {path!r}; use one of {', '.join(sample.counts)}")
        if comparison is None and gate.measure != "value":
            raise GateError(
                f"gate {gate.rule!r} compares two runs; evaluate it against compare(old, new), not one report"
            )
    ends = interval_targets(gates)
    joint = comparison is not None and intervals == JOINT
    if band is None or not joint:
        band, family = (comparison.joint(ends) if joint else {}), len(ends)  # type: ignore[union-attr]
    results = []
    for gate in gates:
        measured, on, change = _measure(gate, comparison, sample, label, band)
        passed = math.isfinite(measured) and bool(_OPERATORS[gate.operator](measured, gate.bound))
        mode = intervals if change is not None else ""
        results.append(
            GateResult(gate.rule, measured, on, passed, mode, family if mode == JOINT else 0, gate.target, change)
        )
    return results


def interval_targets(gates: Iterable[Gate]) -> list[str]:
    """The distinct targets whose interval ends the gates read, in order: the family a joint band covers."""
    return list(dict.fromkeys(gate.target for gate in gates if gate.measure in ("low", "high")))


def interval_note(results: Sequence[GateResult], confidence: float) -> str:
    """One line saying how the gates' interval ends were read, e.g. `joint 95% over 8 fields`; empty if none."""
    read = [result for result in results if result.change is not None]
    if not read:
        return ""
    if read[0].interval == JOINT:
        family = max(result.family for result in read)
        level = _level(read[0])
        if family == 1:
            own = f"its own {level} interval, as the tables print it"
            return f"interval ends: joint {confidence:.0%} over 1 field ({own})"
        return (
            f"interval ends: joint {confidence:.0%} over {family} fields (each one's {level} percentile interval, the "
            "level at which all hold together in the same resamples, as the tables print them for the gated rows; "
            "--intervals per-field reads each field's own interval)"
        )
    return f"interval ends: per-field {confidence:.0%} intervals, each alone (not a joint guarantee)"


def _measure(
    gate: Gate, comparison: Comparison | None, sample: Sample, label: str, band: Mapping[str, Interval]
) -> tuple[float, str, Interval | None]:
    """The number `gate` tests, what it was measured on (a run, a difference, an interval end), and that interval."""
    if gate.measure == "value":
        return float(sample.value(gate.target)), label, None
    if comparison is None:
        raise GateError(f"gate {gate.rule!r} compares two runs; evaluate it against compare(old, new), not one report")
    if gate.measure == "delta":
        old, new = comparison.labels
        return comparison.delta(gate.target).estimate, f"{new} - {old}", None
    change = band.get(gate.target) or comparison.delta(gate.target)
    kind = "joint" if gate.target in band else "per-field"
    return (change.low if gate.measure == "low" else change.high), f"{gate.measure} of {kind} interval", change


def gates_table(results: Sequence[GateResult]) -> pd.DataFrame:
    """One row per rule: the rule, the value measured, on what (a run, a difference, which interval), pass or fail."""
    import pandas as pd

    rows = [
        {
            "rule": r.rule,
            "measured": r.measured,
            "on": r.on,
            "interval": "" if r.change is None else f"[{r.change.low:+.3f}, {r.change.high:+.3f}] at {_level(r)}",
            "result": "pass" if r.passed else "FAIL",
        }
        for r in results
    ]
    columns = ["rule", "measured", "on", "interval", "result"]
    if not any(r.change is not None for r in results):
        columns.remove("interval")
    return pd.DataFrame(rows, columns=columns)


def runs_gates(
    results: Mapping[str, Sequence[GateResult]], recommended: str | None, passed: bool
) -> tuple[pd.DataFrame | None, str]:
    """Several runs' gate results as one table, and one line: whether the recommended run passes, who fails.

    None and an empty line when no gate was given.
    """
    if not any(results.values()):
        return None, ""
    import pandas as pd

    tables = []
    for run, run_results in results.items():
        table = gates_table(run_results)
        table.insert(0, "run", run)
        tables.append(table)
    failing = [run for run, run_results in results.items() if not all(result.passed for result in run_results)]
    if recommended is None:
        verdict = "no run is recommended, so none passes"
    else:
        verdict = "the recommended run " + ("passes every gate" if passed else "FAILS a gate")
    return pd.concat(tables, ignore_index=True), verdict + (
        f"; runs failing a gate: {', '.join(failing)}" if failing else ""
    )


def _level(result: GateResult) -> str:
    """The level an interval end was read at, as the tables print it (`95%`, `98.7%`)."""
    from fieldeval.compare.runs import interval_label

    return interval_label(result.change, gated=False) if result.change is not None else ""


def gate_records(results: Sequence[GateResult], confidence: float) -> list[dict[str, Any]]:
    """The results as plain records for a saved gate result: each names the interval mode that produced it."""
    return [
        {
            "rule": r.rule,
            "measured": r.measured,
            "on": r.on,
            "passed": r.passed,
            "interval": r.interval or None,
            "joint_over": r.family or None,
            "confidence": confidence if r.interval else None,
            "low": r.change.low if r.change is not None else None,
            "high": r.change.high if r.change is not None else None,
            "level": r.change.level if r.change is not None else None,
        }
        for r in results
    ]
