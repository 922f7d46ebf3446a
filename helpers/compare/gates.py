"""Gates a CI job can hold a run to, and the command line that applies them to two saved runs.

A gate is a one-line rule: `total_amount.recall >= 0.98` and `overall >= 0.8` measure the new
run, `delta(line_items.f1) >= -0.02` the change, and `high(delta(invoice_date.f1)) >= 0` the
upper end of the change's paired bootstrap interval, which fails only when a regression is
beyond noise. A rule that does not parse, or names a field the runs do not have, is an error,
never a pass: a misspelled gate that passes silently is worse than no gate.

    python -m helpers.compare OLD.json NEW.json [--gate RULE ...]

(`python -m helpers.compare.gates` is the same command) prints the tables and exits 0 when every gate
passes, 1 when one fails, and 2 on bad input.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from strands_evals.types.evaluation_report import EvaluationReport

from helpers.compare.runs import (
    CONFIDENCE,
    COUNTS,
    RATIOS,
    RESAMPLES,
    SEED,
    Comparison,
    Sample,
    compare_runs,
    paths_in,
    read_run,
)
from helpers.harness.reports import load_report

TOLERANCE = 1e-9  # comparisons forgive float rounding in a difference of two ratios
EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class GateError(ValueError):
    """A gate rule is malformed or names something the runs do not have; the message names it."""


_OPERATORS = {
    ">=": lambda value, bound: value >= bound - TOLERANCE,
    "<=": lambda value, bound: value <= bound + TOLERANCE,
    ">": lambda value, bound: value > bound + TOLERANCE,
    "<": lambda value, bound: value < bound - TOLERANCE,
    "==": lambda value, bound: abs(value - bound) <= TOLERANCE,
    "!=": lambda value, bound: abs(value - bound) > TOLERANCE,
}
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
    fails only when the whole interval is below zero, which is the `regressed` verdict.
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


def parse_gate(rule: str) -> Gate:
    """Parse `overall >= 0.8`, `total_amount.recall >= 0.98`, `delta(line_items.f1) >= -0.02`
    or `high(delta(invoice_date.f1)) >= 0`.

    Raises:
        GateError: If the rule does not have one of those shapes or names an unknown metric.
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
    measure = match["bound_of"] or ("delta" if match["delta"] else "value")
    return Gate(rule, target, measure, match["op"], float(match["bound"]))


def evaluate_gates(rules: Iterable[str | Gate], subject: Comparison | EvaluationReport) -> list[GateResult]:
    """Evaluate each rule against one run (a report) or a pair (a `Comparison`).

    On a pair, a plain rule is measured on the new run's paired documents, `delta(...)` on new
    minus old, and `low(...)` / `high(...)` on the ends of the delta's bootstrap interval.

    Raises:
        GateError: For a malformed rule, a field path the runs do not have, or a rule that needs
            two runs evaluated against one.
    """
    if isinstance(subject, Comparison):
        comparison, sample, label = subject, subject.new, subject.labels[1]
    else:
        run = read_run(subject, "report")
        comparison, label = None, "run"
        sample = Sample.of(run, list(run.documents), paths_in(run, run.documents))
    results = []
    for rule in rules:
        gate = rule if isinstance(rule, Gate) else parse_gate(rule)
        path = gate.target.rsplit(".", 1)[0]
        if gate.target != "overall" and path not in sample.counts:
            raise GateError(f"gate {gate.rule!r}: unknown field path {path!r}; use one of {', '.join(sample.counts)}")
        measured, on = _measure(gate, comparison, sample, label)
        passed = math.isfinite(measured) and bool(_OPERATORS[gate.operator](measured, gate.bound))
        results.append(GateResult(gate.rule, measured, on, passed))
    return results


def _measure(gate: Gate, comparison: Comparison | None, sample: Sample, label: str) -> tuple[float, str]:
    """The number `gate` tests, and what it was measured on (a run, a difference, an interval end)."""
    if gate.measure == "value":
        return float(sample.value(gate.target)), label
    if comparison is None:
        raise GateError(f"gate {gate.rule!r} compares two runs; evaluate it against compare(old, new), not one report")
    change = comparison.delta(gate.target)
    if gate.measure == "delta":
        old, new = comparison.labels
        return change.estimate, f"{new} - {old}"
    return (change.low if gate.measure == "low" else change.high), f"{gate.measure} of interval"


def gates_table(results: Sequence[GateResult]) -> pd.DataFrame:
    """One row per rule: the rule, the value measured, on which run, and pass or fail."""
    return pd.DataFrame(
        [
            {"rule": r.rule, "measured": r.measured, "on": r.on, "result": "pass" if r.passed else "FAIL"}
            for r in results
        ],
        columns=["rule", "measured", "on", "result"],
    )


def report_text(comparison: Comparison, results: Sequence[GateResult], top: int = 5) -> str:
    """Everything the command line prints, as plain text."""
    old_run, new_run = comparison.old_run, comparison.new_run

    def show(table: pd.DataFrame) -> str:
        return table.to_string(index=False, float_format=lambda value: f"{value:.3f}")

    level = f"{comparison.confidence:.0%}"
    parts = [
        f"old: {old_run.source}  new: {new_run.source}",
        f"paired {len(comparison.pairing.cases)} cases; left out {len(comparison.pairing.excluded)}",
    ]
    if comparison.pairing.excluded:
        parts.append(show(comparison.pairing.table()))
    unreadable = [
        sum(run.documents[name].unreadable for name in comparison.pairing.cases) for run in (old_run, new_run)
    ]
    if any(unreadable):
        parts.append(
            f"outputs not readable as the schema (scored 0, no field counts): old {unreadable[0]}, new {unreadable[1]}"
        )
    parts += [
        "",
        f"Overall ({level} paired bootstrap over documents, {comparison.resamples} resamples, seed {comparison.seed})",
        show(comparison.overall_table()),
        "",
        "Per field",
        show(comparison.field_table()),
        "",
        f"Documents that moved most (top {top})",
        show(comparison.movers(limit=top)),
    ]
    if results:
        failed = sum(not result.passed for result in results)
        parts += ["", f"Gates: {len(results) - failed} passed, {failed} failed", show(gates_table(results))]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """Compare two saved reports; 0 when every gate passes, 1 when one fails, 2 on bad input."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.compare",
        description="Compare two saved StructuredOutputReport runs and gate on the result.",
    )
    parser.add_argument("old", type=Path, help="the baseline run, saved with helpers.harness.reports.save_report")
    parser.add_argument("new", type=Path, help="the run under test, saved the same way")
    parser.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="RULE",
        help=(
            "e.g. 'total_amount.recall >= 0.98', 'overall >= 0.8', 'delta(line_items.f1) >= -0.02', "
            "'high(delta(invoice_date.f1)) >= 0' (repeatable)"
        ),
    )
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--confidence", type=float, default=CONFIDENCE)
    parser.add_argument("--top", type=int, default=5, help="how many moved documents to list")
    args = parser.parse_args(argv)  # argparse itself exits 2 on a missing or malformed argument
    if args.top < 0:
        parser.error(f"--top must be 0 or more; got {args.top}")
    try:
        gates = [parse_gate(rule) for rule in args.gate]
        old = read_run(load_report(args.old), str(args.old))
        new = read_run(load_report(args.new), str(args.new))
        comparison = compare_runs(old, new, resamples=args.resamples, seed=args.seed, confidence=args.confidence)
        results = evaluate_gates(gates, comparison)
    except (OSError, ValueError) as exc:  # a missing or foreign file, a bad rule, nothing to pair
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(report_text(comparison, results, top=args.top))
    return EXIT_FAILED if any(not result.passed for result in results) else EXIT_PASSED


if __name__ == "__main__":
    sys.exit(main())
