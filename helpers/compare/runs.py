"""Compare two `StructuredOutputSimilarity` runs: which is better, and which field moved.

Two runs over the same documents differ partly because one extractor is better and partly by
chance: which documents happened to trip which extractor. The only honest way to tell the two
apart on a few dozen documents is to resample the documents. Every interval here is a paired
bootstrap: the same resampled set of documents is scored for both runs, so a document that is
hard for both cancels out, and the seed and resample count are parameters, so the numbers are
reproducible.

Per-field numbers are rebuilt from each document's confusion counts (stickler's raw comparison
on every scored row), walked the way `stickler.aggregate_from_comparisons` walks them, so on the
full set of documents they equal `StructuredOutputReport.metrics()`.

The gate rules and the command line are in `helpers.compare.gates`; this module stays runnable as

    python -m helpers.compare OLD.json NEW.json [--gate RULE ...]

because that is the command the README and `make compare` document.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel
from strands_evals.types.evaluation_report import EvaluationReport

MARKER = "StructuredOutputSimilarity"  # `metadata["evaluated_by"]` on the rows this module reads
COUNTS = ("tp", "fp", "tn", "fn", "fd", "fa")
RATIOS = ("precision", "recall", "f1")
IMPROVED, REGRESSED, NO_CLEAR_CHANGE = "improved", "regressed", "no clear change"
# A field can stay a true positive while its value changes (a different wrong description,
# still above the match threshold), so a score can move with no count moving.
SCORE_ONLY = "no field's counts moved, only the similarity score"
RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95


class CompareError(ValueError):
    """Two runs cannot be compared; the message says which run and what to fix."""


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
            raise CompareError(
                f"{source}: case {name!r} has no raw comparison in its row metadata; re-run the experiment "
                "and save its report with helpers.harness.reports.save_report, which keeps row metadata"
            )
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


def check_confidence(confidence: float) -> None:
    """Refuse a confidence level no interval can have, before any resampling is spent on it."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95); got {confidence}")


def interval(old: np.ndarray, new: np.ndarray, estimate: float, confidence: float) -> Interval:
    """Percentile interval of the resampled differences `new - old`, around the full-sample estimate."""
    check_confidence(confidence)
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

        A document on which neither the score nor any field's counts moved is left out. With
        `field`, only documents where that field moved; for a top-level field the expected value
        and each run's value are shown too, so the cause can be read off the table.
        """
        if field is not None and field not in self.paths:
            raise ValueError(f"unknown field path {field!r}; known paths: {', '.join(self.paths)}")
        old_label, new_label = self.labels
        show_values = field is not None and "." not in field
        columns = ["case", old_label, new_label, "delta"]
        if show_values:
            columns += ["expected", f"{old_label} value", f"{new_label} value"]
        rows = []
        for position, name in enumerate(self.pairing.cases):
            before = {path: self.old.counts[path][position] for path in self.paths}
            after = {path: self.new.counts[path][position] for path in self.paths}
            moved = [path for path in self.paths if (before[path] != after[path]).any()]
            delta = self.new.scores[position] - self.old.scores[position]
            if (field is not None and field not in moved) or (not moved and delta == 0):
                continue
            row = [name, self.old.scores[position], self.new.scores[position], delta]
            if show_values:
                old_document, new_document = self.old_run.documents[name], self.new_run.documents[name]
                row += [_value(old_document.expected, field), _value(old_document.actual, field)]
                row.append(_value(new_document.actual, field))
            changes = [f"{path}: {_describe(before[path])} -> {_describe(after[path])}" for path in moved]
            row.append("; ".join(changes) or SCORE_ONLY)
            rows.append(row)
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
    check_confidence(confidence)
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


def case_scores(report: EvaluationReport, source: str = "run") -> dict[str, float]:
    """Each case's score by name, for any single-evaluator report (`Equals` included).

    Raises:
        CompareError: If a case has no name or a name repeats.
    """
    scores: dict[str, float] = {}
    for index, case in enumerate(report.cases):
        name = case.get("name")
        if not isinstance(name, str) or not name or name in scores:
            raise CompareError(
                f"{source}: case {index} ({name!r}) has no name or repeats one; runs are paired by case name, "
                "so give every Case one distinct name"
            )
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
