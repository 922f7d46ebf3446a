"""The label audit: leaves where several runs read the same value and the label says another.

A leaf every model reads alike, against its label, is as often a wrong label as a shared model
error, and today it is counted against every model. Each saved run (`score --out`) stores the
leaves that cost its documents points, with the value the run read (`fieldeval.formats.leaf_diffs`),
named by the labelled item's index for list items, so the runs' readings of one labelled leaf line
up as stickler paired them. A run with no row for a leaf read it as the label; a row whose raw
score reached its threshold (a `partial` leaf, a matching leaf of an item below the threshold)
did too, by the field's own comparator.

Whether two runs read the *same* wrong value is decided by the field's comparator as well, not by
`==`: two dates written alike, two amounts within the field's tolerance, two names above the
Levenshtein threshold agree. With the schema (`--schema`) the comparators are the schema's own,
options included; without it they are rebuilt from the names and thresholds the runs stored,
with the comparator's default options (a `NumericComparator`'s tolerance is not stored, so two
amounts then agree only when equal), and `Audit.notes` says so.

A leaf is a suspect when at least two runs agree with each other against the label, and more of
them do than read the label. Suspects rank by how many runs agree, then by what the leaf cost
them together (the sum of their rows' costs). An item of a list of values (`tags[1]`) is a leaf
like a field, paired and compared by the list field's comparator. Not audited: whole items of a
list of models, items a label has and no run found, or that runs invented (named by each run's own
index), and documents a run could not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fieldeval.errors import EvalError
from fieldeval.formats import limits
from fieldeval.formats.cases import CaseFileError, CaseRecord, records
from fieldeval.formats.errors import file_error
from fieldeval.formats.json import StrictJSONError, loads
from fieldeval.formats.leaf_diffs import FIX as LEAF_FIX
from fieldeval.formats.leaf_diffs import LeafDiffsError, StoredDiffs, StoredLeaf, read_leaf_diffs
from fieldeval.formats.run_info import RUN_FIX, RunInfo, RunInfoError, read_run_info

MIN_AGREE = 2  # a single run agrees with no one: its misses are what the leaf diff already lists
RESCORE = "score every run with `eval-score --schema M:Class --cases CASES --out RUN.json` against the same case file"
_STEP = re.compile(r"([^.\[\]]+)(?:\[(\d+)\])?")


class LabelsError(EvalError, ValueError):
    """Runs or a case file the audit cannot use; the message names the file and the fix."""


@dataclass(frozen=True)
class SavedRun:
    """One saved run read as data: its rules and every document's leaf rows."""

    path: Path
    info: RunInfo
    diffs: StoredDiffs

    def names(self) -> list[str]:
        return [document.name for document in self.diffs.documents]


@dataclass(frozen=True)
class Suspect:
    """One labelled leaf that `agree` of the `of` runs reading it read as `proposed`."""

    case: str
    path: str
    label: Any
    proposed: Any
    agree: int
    of: int
    cost: float
    order: tuple[int, str] = field(default=(0, ""), compare=False, repr=False)  # the case's place, the path

    def row(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "path": self.path,
            "label": self.label,
            "proposed": self.proposed,
            "agree": self.agree,
            "of": self.of,
            "cost": round(self.cost, 6),
        }


@dataclass(frozen=True)
class Audit:
    """The suspects, ranked, and what the reader should know about how agreement was decided."""

    suspects: list[Suspect]
    notes: list[str]

    def lines(self, top: int | None = None) -> list[str]:
        """One JSON line per suspect, the first `top` only when given."""
        kept = self.suspects if top is None else self.suspects[:top]
        return [json.dumps(suspect.row(), ensure_ascii=False, default=str) for suspect in kept]


# Reading -------------------------------------------------------------------------------------------


def read_run(path: Path) -> SavedRun:
    """A saved run's run description and leaf diffs, read as data (no schema is imported).

    Raises:
        LabelsError: Naming the file and the fix, for a missing, oversized or malformed file, or one
            saved without a run description or leaf diffs.
    """
    try:
        limits.check_file(path, limits.RUN)
        data = loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LabelsError(file_error(path, "no saved run here", "check the path")) from None
    except (StrictJSONError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LabelsError(file_error(path, f"is not a saved run's JSON ({exc})", RESCORE)) from None
    except (OSError, ValueError) as exc:  # too large, unreadable
        raise LabelsError(str(exc) if str(path) in str(exc) else file_error(path, str(exc), RESCORE)) from None
    if not isinstance(data, dict):
        raise LabelsError(file_error(path, f"is a JSON {type(data).__name__}, not a saved run", RESCORE))
    try:
        info = read_run_info(data)
        diffs = read_leaf_diffs(data, path)
    except RunInfoError as exc:
        raise LabelsError(f"{path}: {exc} ({RUN_FIX})") from None
    except LeafDiffsError as exc:
        raise LabelsError(str(exc)) from None
    if info is None:
        raise LabelsError(file_error(path, "holds no run description (field 'run')", RESCORE, field="run"))
    if diffs is None:
        raise LabelsError(
            file_error(path, "stores no leaf diffs (field 'leaf_diffs')", LEAF_FIX.split(", or")[0], field="leaf_diffs")
        )
    return SavedRun(path, info, diffs)


def read_labels(path: Path) -> dict[str, dict[str, Any]]:
    """Each case's `expected_output` by name, as the case file holds it (validated against no schema).

    Raises:
        LabelsError: As the case file reader refuses (naming file, line, field and fix).
    """
    try:
        return {record.name: record.expected_output for _, record in records(path, CaseRecord, "case")}
    except CaseFileError as exc:
        raise LabelsError(str(exc)) from None


# Checking ------------------------------------------------------------------------------------------


def check_runs(runs: Sequence[SavedRun], labels: Mapping[str, Any], cases: Path) -> None:
    """Refuse runs scored by different rules, or against a case set other than `cases`.

    Raises:
        LabelsError: Naming the first run that differs from the first one (or from the case file) and the fix.
    """
    first = runs[0]
    for run in runs[1:]:
        differences = _rule_differences(first.info, run.info)
        if differences:
            raise LabelsError(
                f"{run.path} was not scored by the same rules as {first.path}: {'; '.join(differences)}. Runs agree "
                f"or disagree by their fields' comparators, so they must share them: {RESCORE}, with the same "
                "--schema and --match-threshold"
            )
    expected = set(labels)
    for run in runs:
        names = run.names()
        extra = [name for name in names if name not in expected]
        lacking = [name for name in labels if name not in set(names)]
        if extra or lacking:
            parts = ([f"has case(s) {_few(extra)} that {cases} lacks"] if extra else []) + (
                [f"lacks case(s) {_few(lacking)} of {cases}"] if lacking else []
            )
            raise LabelsError(
                f"{run.path} was not scored against {cases}: it {' and '.join(parts)}. Name the case file the runs "
                f"were scored against, or {RESCORE}"
            )


def check_schema_fingerprint(runs: Sequence[SavedRun], fingerprint: str, schema: str) -> None:
    """Refuse a --schema other than the one the runs were scored with (by its JSON-schema fingerprint)."""
    for run in runs:
        if run.info.schema_sha256 and run.info.schema_sha256 != fingerprint:
            raise LabelsError(
                f"--schema {schema} is not the schema {run.path} was scored with ({run.info.schema_}, fingerprint "
                f"{run.info.schema_sha256[:12]}; --schema has {fingerprint[:12]}): name that schema, or leave "
                "--schema out to use the comparators the runs stored"
            )


def _rule_differences(a: RunInfo, b: RunInfo) -> list[str]:
    found = []
    if a.schema_sha256 != b.schema_sha256:
        found.append(f"the schema differs ({a.schema_} against {b.schema_}, by JSON-schema fingerprint)")
    if a.match_threshold != b.match_threshold:
        found.append(f"the match threshold differs ({a.match_threshold:g} against {b.match_threshold:g})")
    changed = [
        path
        for path in dict.fromkeys([*a.comparators, *b.comparators])
        if a.comparators.get(path) != b.comparators.get(path)
    ]
    if changed:
        found.append(f"the comparators differ on {_few(changed)}")
    return found


def _few(names: Sequence[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(repr(name) for name in names[:shown]) + more


# Comparing -----------------------------------------------------------------------------------------

Agrees = Callable[[Any, Any], bool]


class Comparators:
    """Each leaf's agreement test, from the schema's compiled comparators or rebuilt from stored names."""

    def __init__(self, model: Any = None) -> None:
        self._model = model  # stickler's compiled model of --schema (`eval_for(...).eval_model`), or None
        self._found: dict[tuple[str, str | None, float | None], Agrees] = {}
        self.rebuilt: set[str] = set()  # comparator names rebuilt without the field's own options
        self.unknown: set[str] = set()  # comparator names that could not be rebuilt: compared by equality

    def agrees(self, path: str, leaf: StoredLeaf) -> Agrees:
        key = (_INDEX.sub("", path), leaf.comparator, leaf.threshold)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = self._build(path, leaf)
        return found

    def _build(self, path: str, leaf: StoredLeaf) -> Agrees:
        threshold = leaf.threshold if leaf.threshold is not None else 1.0
        comparator = _schema_comparator(self._model, path) if self._model is not None else None
        if comparator is None and leaf.comparator:
            comparator = self._rebuild(leaf.comparator)
        return _agreement(comparator, threshold)

    def _rebuild(self, name: str) -> Any:
        import stickler.comparators as comparators

        cls = getattr(comparators, name, None)
        try:
            built = cls() if isinstance(cls, type) else None
        except Exception:  # a comparator that needs a model or a key: equality is the honest fallback
            built = None
        (self.rebuilt if built is not None else self.unknown).add(name)
        return built


_INDEX = re.compile(r"\[\d+\]")


def _schema_comparator(model: Any, path: str) -> Any:
    """The comparator the compiled schema gives the leaf at `path` (`line_items[0].unit_price`), or None."""
    from fieldeval.attribution.leaves import _models_in

    cls = model
    steps = _STEP.findall(path)
    for name, _ in steps[:-1]:
        info = cls.model_fields.get(name)
        inner = _models_in(info.annotation) if info is not None else None
        if inner is None:
            return None
        cls = inner[0]
    name = steps[-1][0] if steps else ""
    if name not in cls.model_fields:
        return None
    return cls._get_comparison_info(name).comparator


def _agreement(comparator: Any, threshold: float) -> Agrees:
    def agrees(a: Any, b: Any) -> bool:
        if a is None or b is None:
            return a is None and b is None
        if a == b:
            return True
        if comparator is None:
            return False
        try:
            return float(comparator.compare(a, b)) >= threshold
        except Exception:  # a value the comparator cannot read (a list where text was expected)
            return False

    return agrees


# The audit -----------------------------------------------------------------------------------------


@dataclass
class _Reading:
    value: Any
    cost: float


def audit(runs: Sequence[SavedRun], labels: Mapping[str, Mapping[str, Any]], comparators: Comparators) -> Audit:
    """Every suspect leaf of the runs, ranked: most runs agreeing first, then the costliest."""
    by_run = [{document.name: document for document in run.diffs.documents} for run in runs]
    suspects: list[Suspect] = []
    for place, case in enumerate(labels):
        documents = [documents[case] for documents in by_run]
        suspects.extend(_case_suspects(case, place, documents, labels[case], comparators, runs))
    suspects.sort(key=lambda suspect: (-suspect.agree, -suspect.cost, suspect.order))
    return Audit(suspects, _notes(comparators))


def _case_suspects(
    case: str,
    place: int,
    documents: Sequence[Any],
    label: Mapping[str, Any],
    comparators: Comparators,
    runs: Sequence[SavedRun],
) -> Iterable[Suspect]:
    rows: list[dict[str, StoredLeaf]] = [
        {leaf.path: leaf for leaf in document.leaves if not _invented_item(leaf)} for document in documents
    ]
    paths = dict.fromkeys(path for found in rows for path, leaf in found.items() if _audited(leaf))
    for path in paths:
        leaf = next(found[path] for found in rows if path in found)
        agrees = comparators.agrees(path, leaf)
        labelled = _label_at(label, path, leaf.expected)
        for run, found in zip(runs, rows, strict=True):
            if path in found and not agrees(found[path].expected, labelled):
                raise LabelsError(
                    f"{run.path} was scored against another label: case {case!r}, field {path!r} is "
                    f"{found[path].expected!r} there and {labelled!r} in the case file. Re-score the runs against the "
                    f"case file as it is now ({RESCORE}), or name the case file they were scored against"
                )
        with_label = 0
        against: list[_Reading] = []
        for found in rows:
            reading = _reading(found, path)
            if reading is None:
                continue
            if reading is _LABEL:
                with_label += 1
            else:
                against.append(reading)
        group = _largest_group(against, agrees)
        if len(group) >= MIN_AGREE and len(group) > with_label:
            yield Suspect(
                case=case,
                path=path,
                label=labelled,
                proposed=group[0].value,
                agree=len(group),
                of=with_label + len(against),
                cost=sum(reading.cost for reading in group),
                order=(place, path),
            )


_LABEL = _Reading(None, 0.0)  # a run that read the leaf as the label


def _audited(leaf: StoredLeaf) -> bool:
    """A leaf of the label: a field, or a paired item of a list of values; not a whole item of a list of
    models, an item missing or invented, nor an unreadable output."""
    if leaf.kind == "unreadable" or leaf.comparator is None:
        return False
    return not leaf.path.endswith("]") or (
        leaf.kind in ("wrong value", "partial") and not isinstance(leaf.expected, dict)
    )


def _invented_item(leaf: StoredLeaf) -> bool:
    """An item a run invented: named by the run's own index, so it may share a path with a labelled item."""
    return leaf.kind == "invented" and leaf.path.endswith("]")


def _reading(rows: Mapping[str, StoredLeaf], path: str) -> _Reading | None:
    """What one run read at `path`: the label, another value, or nothing (its item or output is missing)."""
    if "(output)" in rows:
        return None
    for holder in _holders(path):
        item = rows.get(holder)
        if item is not None and item.kind == "missing":
            return None  # the run has no item paired with the labelled one
    leaf = rows.get(path)
    if leaf is None:
        return _LABEL
    matched = leaf.score is not None and leaf.threshold is not None and leaf.score >= leaf.threshold
    if matched and leaf.kind in ("partial", "below threshold"):
        return _LABEL  # read as the label by the field's comparator; its item was pulled under by other leaves
    return _Reading(leaf.got, leaf.cost or 0.0)


def _holders(path: str) -> list[str]:
    """The list items a leaf lies in: `a[1].b[2].c` -> `a[1]`, `a[1].b[2]`."""
    return [path[: match.end()] for match in _INDEX.finditer(path)]


def _largest_group(readings: Sequence[_Reading], agrees: Agrees) -> list[_Reading]:
    """The readings that agree with the one most others agree with (that one first); the first wins a tie."""
    best: list[_Reading] = []
    for reading in readings:
        group = [reading, *(other for other in readings if other is not reading and agrees(reading.value, other.value))]
        if len(group) > len(best):
            best = group
    return best


def _label_at(label: Mapping[str, Any], path: str, stored: Any) -> Any:
    """The case file's value at `path`, else the label the run stored (a path the file spells otherwise)."""
    node: Any = label
    for name, index in _STEP.findall(path):
        if not isinstance(node, Mapping) or name not in node:
            return stored
        node = node[name]
        if index:
            if not isinstance(node, list) or int(index) >= len(node):
                return stored
            node = node[int(index)]
    return node


def _notes(comparators: Comparators) -> list[str]:
    notes = []
    if comparators.rebuilt:
        notes.append(
            f"runs compared with {', '.join(sorted(comparators.rebuilt))} rebuilt from the names the runs stored, "
            "with their default options (a numeric tolerance is not stored: such values agree only when equal); "
            "pass --schema M:Class to compare with the schema's own"
        )
    if comparators.unknown:
        notes.append(
            f"{', '.join(sorted(comparators.unknown))} could not be rebuilt from its name: those values agree only "
            "when equal; pass --schema M:Class to compare with the schema's own"
        )
    return notes
