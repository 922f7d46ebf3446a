"""Compare two `StructuredOutputSimilarity` runs: which is better, which field moved, and gates.

Two runs over the same documents differ partly because one extractor is better and partly by
chance: which documents happened to trip which extractor. The only honest way to tell the two
apart on a few dozen documents is to resample the documents. Every interval here is a paired
bootstrap: the same resampled set of documents is scored for both runs, so a document that is
hard for both cancels out, and the seed and resample count are parameters, so the numbers are
reproducible.

Per-field numbers are rebuilt from each document's confusion counts (stickler's raw comparison
on every scored row), walked the way `stickler.aggregate_from_comparisons` walks them, so on the
full set of documents they equal `StructuredOutputReport.metrics()`.

Gates are one-line rules a CI job can hold a run to: `total_amount.recall >= 0.98` and
`overall >= 0.8` measure the new run, `delta(line_items.f1) >= -0.02` the change, and
`high(delta(invoice_date.f1)) >= 0` the upper end of the change's interval, which fails only
when a regression is beyond noise.

    python -m helpers.compare OLD.json NEW.json [--gate RULE ...]

prints the tables and exits 0 when every gate passes, 1 when one fails, and 2 on bad input.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel
from strands_evals.types.evaluation_report import EvaluationReport

from helpers.reports import load_report

MARKER = "StructuredOutputSimilarity"  # `metadata["evaluated_by"]` on the rows this module reads
COUNTS = ("tp", "fp", "tn", "fn", "fd", "fa")
RATIOS = ("precision", "recall", "f1")
IMPROVED, REGRESSED, NO_CLEAR_CHANGE = "improved", "regressed", "no clear change"
RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95
TOLERANCE = 1e-9  # gate comparisons forgive float rounding in a difference of two ratios


class CompareError(ValueError):
    """Two runs cannot be compared; the message says which run and what to fix."""


class GateError(ValueError):
    """A gate rule is malformed or names something the runs do not have; the message names it."""


# --- reading one run ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """One scored case of one run: its score, its schema, and its per-field confusion counts."""

    score: float
    schema: str
    counts: Mapping[str, Mapping[str, int]]
    expected: Any = None
    actual: Any = None
    unreadable: bool = False


@dataclass(frozen=True)
class Run:
    """The scored documents of one report by case name, and the cases that carry no score."""

    source: str
    documents: Mapping[str, Document]
    unscored: Mapping[str, str]


def field_counts(comparison: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Per-field confusion counts of one document, keyed by dotted path (`line_items.sku`).

    Walks `confusion_matrix.fields` and its `fields` / `nested_fields` children and adds both
    the counts stored on a node and those under its `overall`, exactly as stickler's
    aggregator does, so summing these over documents reproduces `report.metrics()`.
    """
    counts: dict[str, dict[str, int]] = {}

    def walk(fields: Mapping[str, Any], prefix: str) -> None:
        for name, node in fields.items():
            if not isinstance(node, Mapping):
                continue
            path = f"{prefix}.{name}" if prefix else name
            total = counts.setdefault(path, dict.fromkeys(COUNTS, 0))
            for source in (node, node.get("overall")):
                if isinstance(source, Mapping):
                    for key in COUNTS:
                        value = source.get(key)
                        if isinstance(value, int | float) and not isinstance(value, bool):
                            total[key] += int(value)
            for child in ("fields", "nested_fields"):
                if isinstance(node.get(child), Mapping):
                    walk(node[child], path)

    walk(comparison.get("confusion_matrix", {}).get("fields", {}), "")
    return counts


def _is_ours(metadata: Mapping[str, Any]) -> bool:
    """A row StructuredOutputSimilarity scored, or one it could not read as the model."""
    return metadata.get("evaluated_by") == MARKER or metadata.get("error") == "unreadable"


def read_run(report: EvaluationReport, source: str = "run") -> Run:
    """Collect the `StructuredOutputSimilarity` rows of `report`, one per case name.

    A row the evaluator could not read as the model (`metadata["error"] == "unreadable"`) is a
    real failure of the extractor: it is kept with its score of 0 and no field counts. Cases
    with no such row (no ground truth, or scored only by another evaluator) are listed in
    `unscored` with the reason.

    Raises:
        CompareError: If a case name repeats (a flattened multi-evaluator report does that), if
            a case has no name, or if nothing was scored.
    """
    documents: dict[str, Document] = {}
    unscored: dict[str, str] = {}
    for index, rows in enumerate(report.detailed_results):
        case = report.cases[index] if index < len(report.cases) else {}
        name = case.get("name")
        if not isinstance(name, str) or not name:
            raise CompareError(f"{source}: case {index} has no name; runs are paired by case name, so name every Case")
        ours = [row for row in rows if _is_ours(row.metadata or {})]
        if len(ours) > 1 or name in documents or name in unscored:
            raise CompareError(
                f"{source}: case {name!r} appears more than once; compare one evaluator's report "
                "at a time and give every case a distinct name"
            )
        if not ours:
            unscored[name] = "not scored by StructuredOutputSimilarity (no ground truth, or another evaluator)"
            continue
        row = ours[0]
        unreadable = row.metadata.get("evaluated_by") != MARKER
        comparison = row.metadata.get("comparison")
        if not unreadable and not isinstance(comparison, Mapping):
            raise CompareError(f"{source}: case {name!r} has no raw comparison in its row metadata")
        documents[name] = Document(
            score=float(row.score),
            schema=str(row.label),
            counts={} if unreadable else field_counts(comparison),
            expected=case.get("expected_output"),
            actual=case.get("actual_output"),
            unreadable=unreadable,
        )
    if not documents:
        raise CompareError(
            f"{source}: no case was scored by StructuredOutputSimilarity; score the run with "
            "Experiment(cases, evaluators=[StructuredOutputSimilarity(Model)], report_cls=StructuredOutputReport)"
        )
    return Run(source, documents, unscored)


# --- pairing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pairing:
    """The cases both runs scored against the same schema, and every case left out, with why."""

    cases: tuple[str, ...]
    excluded: tuple[tuple[str, str], ...]

    def table(self) -> pd.DataFrame:
        """The left-out cases, one row each; empty when every case paired."""
        return pd.DataFrame(self.excluded, columns=["case", "left out because"])


def pair_runs(old: Run, new: Run) -> Pairing:
    """Pair the documents of two runs by case name, in the old run's order.

    A case is paired only when both runs scored it against the same schema; every other case
    is reported in `excluded` with its status in each run, never silently dropped or matched.

    Raises:
        CompareError: If no case can be paired.
    """

    def status(run: Run, name: str) -> str:
        if name in run.documents:
            return f"scored against {run.documents[name].schema}"
        return run.unscored.get(name, "absent")

    names = dict.fromkeys([*old.documents, *old.unscored, *new.documents, *new.unscored])
    cases, excluded = [], []
    for name in names:
        before, after = old.documents.get(name), new.documents.get(name)
        if before is not None and after is not None and before.schema == after.schema:
            cases.append(name)
        else:
            excluded.append((name, f"old: {status(old, name)}; new: {status(new, name)}"))
    if not cases:
        raise CompareError(
            f"{old.source} and {new.source} share no case scored against the same schema; "
            "compare runs over the same named cases"
        )
    return Pairing(tuple(cases), tuple(excluded))


# --- arrays and the bootstrap ------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A paired difference (new minus old) and its bootstrap percentile interval."""

    estimate: float
    low: float
    high: float

    @property
    def verdict(self) -> str:
        """`improved` or `regressed` only when the interval excludes zero."""
        return verdict(self.low, self.high)


def verdict(low: float, high: float) -> str:
    """Name a change from its interval: a change is claimed only when zero is outside it.

    Higher is better for every metric a verdict is given for (scores, precision, recall, F1).
    """
    if low > 0:
        return IMPROVED
    if high < 0:
        return REGRESSED
    return NO_CLEAR_CHANGE


def bootstrap_indices(documents: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """`resamples` rows of document indices drawn with replacement, the same for a given seed.

    Raises:
        ValueError: If there are no documents or fewer than one resample.
    """
    if documents < 1:
        raise ValueError("the bootstrap needs at least one document")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1; got {resamples}")
    return np.random.default_rng(seed).integers(0, documents, size=(resamples, documents))


def interval(old: np.ndarray, new: np.ndarray, estimate: float, confidence: float) -> Interval:
    """Percentile interval of the resampled differences `new - old`, around the full-sample estimate."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1; got {confidence}")
    tail = (1 - confidence) / 2
    low, high = np.quantile(new - old, [tail, 1 - tail])
    return Interval(float(estimate), float(low), float(high))


def paired_bootstrap(
    old: Sequence[float],
    new: Sequence[float],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Interval:
    """Mean of `new - old` over paired documents, with a paired bootstrap interval.

    Works on any per-document score, `Equals` included.
    """
    before, after = np.asarray(old, dtype=float), np.asarray(new, dtype=float)
    if before.shape != after.shape:
        raise CompareError(f"paired scores differ in length: {before.size} old, {after.size} new")
    indices = bootstrap_indices(before.size, resamples, seed)
    return interval(before[indices].mean(axis=1), after[indices].mean(axis=1), (after - before).mean(), confidence)


def ratio(totals: np.ndarray, name: str) -> np.ndarray:
    """A metric from summed counts (last axis in `COUNTS` order), zero where undefined as in stickler."""
    if name in COUNTS:
        return totals[..., COUNTS.index(name)].astype(float)
    tp, fp, fn = (totals[..., COUNTS.index(key)].astype(float) for key in ("tp", "fp", "fn"))
    precision = np.divide(tp, tp + fp, out=np.zeros_like(tp), where=(tp + fp) > 0)
    recall = np.divide(tp, tp + fn, out=np.zeros_like(tp), where=(tp + fn) > 0)
    if name == "precision":
        return precision
    if name == "recall":
        return recall
    both = precision + recall
    return np.divide(2 * precision * recall, both, out=np.zeros_like(tp), where=both > 0)


@dataclass(frozen=True)
class Sample:
    """One run's documents as arrays, in a fixed case order: what the bootstrap resamples."""

    cases: tuple[str, ...]
    scores: np.ndarray  # (documents,)
    counts: Mapping[str, np.ndarray]  # path -> (documents, len(COUNTS))

    @classmethod
    def of(cls, run: Run, cases: Sequence[str], paths: Sequence[str]) -> Sample:
        """Arrays for `cases` of `run`; a path a document lacks counts zero."""
        documents = [run.documents[name] for name in cases]
        counts = {
            path: np.array(
                [[document.counts.get(path, {}).get(key, 0) for key in COUNTS] for document in documents],
                dtype=np.int64,
            ).reshape(len(documents), len(COUNTS))
            for path in paths
        }
        return cls(tuple(cases), np.array([document.score for document in documents], dtype=float), counts)

    def value(self, target: str, indices: np.ndarray | None = None) -> np.ndarray:
        """`overall` (mean score) or `path.metric`, on all documents or on each resample row."""
        if target == "overall":
            return self.scores.mean() if indices is None else self.scores[indices].mean(axis=-1)
        path, metric = target.rsplit(".", 1)
        counts = self.counts[path]
        totals = counts.sum(axis=0) if indices is None else counts[indices].sum(axis=-2)
        return ratio(totals, metric)


def paths_in(run: Run, cases: Iterable[str]) -> list[str]:
    """Field paths in first-seen order (the schema's order), over the given documents."""
    seen: dict[str, None] = {}
    for name in cases:
        seen.update(dict.fromkeys(run.documents[name].counts))
    return list(seen)


# --- the comparison ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """Two runs paired by case, with everything the tables, the chart and the gates need."""

    labels: tuple[str, str]
    old_run: Run
    new_run: Run
    pairing: Pairing
    old: Sample
    new: Sample
    paths: tuple[str, ...]
    indices: np.ndarray
    confidence: float
    seed: int

    @property
    def resamples(self) -> int:
        """How many bootstrap resamples every interval uses."""
        return int(self.indices.shape[0])

    def delta(self, target: str) -> Interval:
        """`new - old` for `overall` or `path.metric`, with its paired bootstrap interval."""
        old, new = self.old.value(target), self.new.value(target)
        return interval(
            self.old.value(target, self.indices), self.new.value(target, self.indices), new - old, self.confidence
        )

    def overall_table(self) -> pd.DataFrame:
        """Mean StructuredOutputSimilarity score of each run, the difference, its interval, a verdict."""
        return score_row(
            "StructuredOutputSimilarity",
            self.old.value("overall"),
            self.new.value("overall"),
            self.delta("overall"),
            len(self.pairing.cases),
            self.labels,
        )

    def field_table(self, metric: str = "f1") -> pd.DataFrame:
        """Per field path: precision, recall and F1 of each run, and the change in `metric`.

        The verdict is `regressed` only when the whole interval of the change is below zero.
        `documents changed` counts documents whose confusion counts for the field differ.
        """
        if metric not in RATIOS:
            raise ValueError(f"metric must be one of {', '.join(RATIOS)}; got {metric!r}")
        old_label, new_label = self.labels
        rows = []
        for path in self.paths:
            row: dict[str, Any] = {"field": path}
            for label, sample in ((old_label, self.old), (new_label, self.new)):
                for name in RATIOS:
                    row[f"{label} {name}"] = float(sample.value(f"{path}.{name}"))
            change = self.delta(f"{path}.{metric}")
            row[f"delta {metric}"] = change.estimate
            row["low"], row["high"], row["verdict"] = change.low, change.high, change.verdict
            row["documents changed"] = int((self.old.counts[path] != self.new.counts[path]).any(axis=1).sum())
            rows.append(row)
        return pd.DataFrame(rows)

    def movers(self, limit: int = 10, field: str | None = None) -> pd.DataFrame:
        """The documents whose score moved most, with the fields whose counts moved in each.

        With `field`, only documents where that field moved; for a top-level field the expected
        value and each run's value are shown too, so the cause can be read off the table.
        """
        if field is not None and field not in self.paths:
            raise ValueError(f"unknown field path {field!r}; known paths: {', '.join(self.paths)}")
        old_label, new_label = self.labels
        show_values = field is not None and "." not in field
        rows = []
        for position, name in enumerate(self.pairing.cases):
            before = {path: self.old.counts[path][position] for path in self.paths}
            after = {path: self.new.counts[path][position] for path in self.paths}
            moved = [path for path in self.paths if (before[path] != after[path]).any()]
            if field is not None and field not in moved:
                continue
            row = {
                "case": name,
                old_label: self.old.scores[position],
                new_label: self.new.scores[position],
                "delta": self.new.scores[position] - self.old.scores[position],
            }
            if show_values:
                row["expected"] = _value(self.old_run.documents[name].expected, field)
                row[f"{old_label} value"] = _value(self.old_run.documents[name].actual, field)
                row[f"{new_label} value"] = _value(self.new_run.documents[name].actual, field)
            row["fields moved"] = "; ".join(
                f"{path}: {_describe(before[path])} -> {_describe(after[path])}" for path in moved
            )
            rows.append(row)
        columns = ["case", old_label, new_label, "delta"]
        if show_values:
            columns += ["expected", f"{old_label} value", f"{new_label} value"]
        table = pd.DataFrame(rows, columns=[*columns, "fields moved"])
        order = table["delta"].abs().sort_values(ascending=False, kind="stable").index
        return table.loc[order].head(limit).reset_index(drop=True)


def _describe(counts: np.ndarray) -> str:
    """`1 tp, 1 fd` for a document's counts on one field; fp (= fd + fa) and tn are left out."""
    parts = [f"{counts[COUNTS.index(key)]} {key}" for key in ("tp", "fn", "fd", "fa") if counts[COUNTS.index(key)]]
    return ", ".join(parts) or "none"


def _value(output: Any, field: str) -> str:
    """A top-level field of a stored output (model or dict) as text, `None` when absent."""
    if isinstance(output, BaseModel):
        output = output.model_dump(mode="json")
    value = output.get(field) if isinstance(output, Mapping) else None
    return "None" if value is None else str(value)


def score_row(
    evaluator: str, old: float, new: float, change: Interval, documents: int, labels: tuple[str, str]
) -> pd.DataFrame:
    """One row: each run's mean score, the paired difference, its interval and the verdict."""
    return pd.DataFrame(
        [
            {
                "evaluator": evaluator,
                labels[0]: float(old),
                labels[1]: float(new),
                "delta": change.estimate,
                "low": change.low,
                "high": change.high,
                "verdict": change.verdict,
                "documents": documents,
            }
        ]
    )


def compare_runs(
    old: Run,
    new: Run,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    labels: tuple[str, str] = ("old", "new"),
) -> Comparison:
    """Pair two read runs and draw the bootstrap resamples every interval shares."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1; got {confidence}")
    pairing = pair_runs(old, new)
    paths = paths_in(old, pairing.cases)
    paths += [path for path in paths_in(new, pairing.cases) if path not in paths]
    return Comparison(
        labels=labels,
        old_run=old,
        new_run=new,
        pairing=pairing,
        old=Sample.of(old, pairing.cases, paths),
        new=Sample.of(new, pairing.cases, paths),
        paths=tuple(paths),
        indices=bootstrap_indices(len(pairing.cases), resamples, seed),
        confidence=confidence,
        seed=seed,
    )


def compare(
    old: EvaluationReport,
    new: EvaluationReport,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    labels: tuple[str, str] = ("old", "new"),
) -> Comparison:
    """Compare two `StructuredOutputSimilarity` reports over the same named cases."""
    return compare_runs(
        read_run(old, labels[0]),
        read_run(new, labels[1]),
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        labels=labels,
    )


def case_scores(report: EvaluationReport) -> dict[str, float]:
    """Each case's score by name, for any single-evaluator report (`Equals` included).

    Raises:
        CompareError: If a case has no name or a name repeats.
    """
    scores: dict[str, float] = {}
    for index, case in enumerate(report.cases):
        name = case.get("name")
        if not isinstance(name, str) or not name or name in scores:
            raise CompareError(f"case {index} ({name!r}) has no name or repeats one; name every case once")
        scores[name] = float(report.scores[index])
    return scores


def compare_scores(
    evaluator: str,
    old: Mapping[str, float],
    new: Mapping[str, float],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    labels: tuple[str, str] = ("old", "new"),
) -> pd.DataFrame:
    """The `overall_table` row for any evaluator's per-case scores over the same cases.

    Raises:
        CompareError: If the two runs do not score the same case names.
    """
    if set(old) != set(new):
        only_old, only_new = sorted(set(old) - set(new)), sorted(set(new) - set(old))
        raise CompareError(
            f"{evaluator}: runs score different cases (only in old: {only_old}, only in new: {only_new}); "
            "score the same named cases in both runs"
        )
    names = list(old)
    before, after = [old[name] for name in names], [new[name] for name in names]
    change = paired_bootstrap(before, after, resamples=resamples, seed=seed, confidence=confidence)
    return score_row(evaluator, float(np.mean(before)), float(np.mean(after)), change, len(names), labels)


# --- gates -------------------------------------------------------------------------------------

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
    minus old, and `low(...)` / `high(...)` on the ends of the delta's bootstrap interval. A
    rule that needs two runs against a single run, or a field path the runs do not have, is an
    error rather than a pass.

    Raises:
        GateError: For a malformed rule, an unknown field path, or a delta on a single run.
    """
    if isinstance(subject, Comparison):
        comparison, new, paths = subject, subject.new, subject.paths
        old_label, new_label = subject.labels
    else:
        run = read_run(subject, "report")
        paths = tuple(paths_in(run, run.documents))
        comparison, new, new_label = None, Sample.of(run, list(run.documents), paths), "run"
    results = []
    for rule in rules:
        gate = rule if isinstance(rule, Gate) else parse_gate(rule)
        path = gate.target.rsplit(".", 1)[0]
        if gate.target != "overall" and path not in paths:
            raise GateError(f"gate {gate.rule!r}: unknown field path {path!r}; known paths: {', '.join(paths)}")
        if gate.measure == "value":
            measured, on = float(new.value(gate.target)), new_label
        elif comparison is None:
            raise GateError(f"gate {gate.rule!r} compares two runs; evaluate it against a comparison")
        else:
            change = comparison.delta(gate.target)
            measured = {"delta": change.estimate, "low": change.low, "high": change.high}[gate.measure]
            on = f"{new_label} - {old_label}" if gate.measure == "delta" else f"{gate.measure} of interval"
        passed = math.isfinite(measured) and bool(_OPERATORS[gate.operator](measured, gate.bound))
        results.append(GateResult(gate.rule, float(measured), on, passed))
    return results


def gates_table(results: Sequence[GateResult]) -> pd.DataFrame:
    """One row per rule: the rule, the value measured, on which run, and pass or fail."""
    return pd.DataFrame(
        [
            {"rule": r.rule, "measured": r.measured, "on": r.on, "result": "pass" if r.passed else "FAIL"}
            for r in results
        ],
        columns=["rule", "measured", "on", "result"],
    )


# --- command line ------------------------------------------------------------------------------


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
    parser.add_argument("old", type=Path, help="the baseline run, saved with helpers.reports.save_report")
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
    args = parser.parse_args(argv)
    try:
        gates = [parse_gate(rule) for rule in args.gate]
        old = read_run(load_report(args.old), str(args.old))
        new = read_run(load_report(args.new), str(args.new))
        comparison = compare_runs(old, new, resamples=args.resamples, seed=args.seed, confidence=args.confidence)
        results = evaluate_gates(gates, comparison)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report_text(comparison, results, top=args.top))
    return 1 if any(not result.passed for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
