"""Compare two `StructuredOutputSimilarity` runs: which is better, and which field moved.

Two runs over the same documents differ partly because one extractor is better and partly by
chance: which documents happened to trip which extractor. The only honest way to tell the two
apart on a few dozen documents is to resample the documents. Every interval here is a paired
bootstrap: the same resampled set of documents is scored for both runs, so a document that is
hard for both cancels out, and the seed and resample count are parameters, so the numbers are
reproducible.

Per-field numbers are rebuilt from each document's confusion counts, which are stickler's own
aggregation of that document's comparison, so on the full set of documents they equal
`StructuredOutputReport.metrics()`. Every resample's sums are drawn once, when the comparison
is built (`fieldeval.compare.bootstrap`), and every interval reads them.

Reading and validating runs is `fieldeval.compare.reading`; gates are `fieldeval.compare.gates`;
the command line is `fieldeval.commands.compare`:

    python -m fieldeval.commands.compare OLD.json NEW.json [--gate RULE ...]
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fieldeval.compare.bootstrap import (
    IMPROVED,
    NO_CLEAR_CHANGE,
    REGRESSED,
    Interval,
    Rows,
    bootstrap_indices,
    interval,
    joint_band,
    paired_bootstrap,
    ratio,
    resample_sums,
    verdict,
)
from fieldeval.compare.heap import release_freed_memory
from fieldeval.compare.params import (
    CONFIDENCE,
    RATIOS,
    RESAMPLES,
    ROW_BLOCK,
    SEED,
    CompareError,
    check_confidence,
    check_resamples,
)
from fieldeval.compare.reading import (
    MARKER,
    Document,
    Documents,
    Run,
    ShapeTable,
    check_name,
    check_score,
    field_counts,
    read_run,
    read_run_file,
)
from fieldeval.formats import COUNTS

__all__ = [
    "CONFIDENCE",
    "COUNTS",
    "IMPROVED",
    "MARKER",
    "NO_CLEAR_CHANGE",
    "RATIOS",
    "REGRESSED",
    "RESAMPLES",
    "SCORE_ONLY",
    "SEED",
    "CompareError",
    "Comparison",
    "Document",
    "Draws",
    "Interval",
    "Pairing",
    "Run",
    "Sample",
    "bootstrap_indices",
    "case_scores",
    "compare",
    "compare_candidates",
    "compare_files",
    "compare_runs",
    "compare_scores",
    "field_counts",
    "interval",
    "pair_runs",
    "paired_bootstrap",
    "paths_in",
    "ratio",
    "read_run",
    "score_row",
    "verdict",
]

# A field can stay a true positive while its value changes (a different wrong description,
# still above the match threshold), so a score can move with no count moving.
SCORE_ONLY = "no field's counts moved, only the similarity score"


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
            return f"scored against {run.columns.shape_of(name).schema}"
        return run.unscored.get(name, "absent")

    before, after = old.columns, new.columns
    one_schema = len(_schemas(before) | _schemas(after)) == 1  # no need to look each up
    if one_schema and not old.unscored and not new.unscored and before.position.keys() == after.position.keys():
        pairing = Pairing(before.names(), ())  # every case pairs, in the old run's order: no loop over names
        _check_same_fields(old, new, pairing.cases)
        return pairing
    names = dict.fromkeys([*before.position, *old.unscored, *after.position, *new.unscored])
    scored = before.position.keys() & after.position.keys()
    cases, excluded = [], []
    for name in names:
        if name in scored and (one_schema or before.schema_of(name) == after.schema_of(name)):
            cases.append(name)
        else:
            excluded.append((name, f"old: {status(old, name)}; new: {status(new, name)}"))
    if not cases:
        raise CompareError(
            f"{old.source} and {new.source} share no case scored against the same schema; "
            "compare runs over the same named cases"
        )
    pairing = Pairing(tuple(cases), tuple(excluded))
    _check_same_fields(old, new, pairing.cases)
    return pairing


def _schemas(documents: Documents) -> set[str]:
    """The schemas a run's shapes were scored against; a results file's shapes share one, read without building them."""
    shapes = documents.shapes
    if isinstance(shapes, ShapeTable):
        return {shapes.schema} if len(shapes) else set()
    return {shape.schema for shape in shapes}


def _check_same_fields(old: Run, new: Run, cases: Sequence[str]) -> None:
    """Refuse two runs whose schemas share a class name but not their fields: their counts mean different things.

    A schema is known by the top-level fields each document's comparison recorded (see
    `fieldeval.compare.reading.schema_fields`), gathered per class name over the paired cases:
    over the distinct shapes they have, which hold the fields.
    """
    distinct: dict[str, tuple[set[frozenset[str]], set[frozenset[str]]]] = {}
    for side, run in enumerate((old, new)):
        numbers = run.columns.columns(cases)[1]
        shapes = run.columns.shapes
        if isinstance(shapes, ShapeTable):  # one schema, and fields per layout: one look per layout
            for layout in _layouts_in_order(shapes, numbers):
                distinct.setdefault(shapes.schema, (set(), set()))[side].add(shapes.layouts[layout][1])
            continue
        for number in np.unique(numbers):
            shape = run.columns.shapes[number]
            distinct.setdefault(shape.schema, (set(), set()))[side].add(shape.fields)
    for schema, sides in distinct.items():
        old_fields, new_fields = (set[str]().union(*found) for found in sides)
        if old_fields and new_fields and old_fields != new_fields:
            raise CompareError(
                f"{old.source} and {new.source} were scored against different schemas that are both named "
                f"{schema!r}: fields only in the old run: {sorted(old_fields - new_fields) or 'none'}; only in the "
                f"new run: {sorted(new_fields - old_fields) or 'none'}; compare two runs of the same schema"
            )


# --- arrays ------------------------------------------------------------------------------------


def _by_path(columns: np.ndarray, paths: Iterable[str]) -> dict[str, np.ndarray]:
    """The last axis of `columns` (paths x len(COUNTS), paths in order) as one view per path."""
    width = len(COUNTS)
    return {path: columns[..., index * width : (index + 1) * width] for index, path in enumerate(paths)}


def _metric(mean_score: Any, totals: Mapping[str, np.ndarray], target: str) -> Any:
    """`overall` (the mean score) or `path.metric` from summed counts."""
    if target == "overall":
        return mean_score
    path, metric = target.rsplit(".", 1)
    return ratio(totals[path], metric)


@dataclass(frozen=True)
class Sample:
    """One run's documents as arrays, in a fixed case order: what the bootstrap resamples.

    Documents that share a shape (`fieldeval.compare.reading.Shape`) share a row of `table`, so
    a run of 100,000 documents holds its counts as a few rows and one number per document;
    `counts` and `matrix` give them per document, gathered on first use.
    """

    cases: tuple[str, ...]
    scores: np.ndarray  # (documents,)
    shapes: np.ndarray  # (documents,) each document's row of `table`
    table: np.ndarray  # (rows, paths x len(COUNTS)) whole numbers from 0, paths in `paths` order; see `_table_of`
    paths: tuple[str, ...]

    @classmethod
    def of(cls, run: Run, cases: Sequence[str], paths: Sequence[str]) -> Sample:
        """Arrays for `cases` of `run`; a path a document lacks counts zero."""
        scores, numbers = run.columns.columns(cases)
        seen = np.zeros(len(run.columns.shapes), dtype=bool)
        seen[numbers] = True
        if seen.all():  # every shape used: each is its own row, and the numbers are the rows (read, not copied)
            used, shapes = np.arange(len(seen)), numbers
        else:
            used, shapes = np.unique(numbers, return_inverse=True)
            shapes = shapes.reshape(-1).astype(np.intp, copy=False)
        width = len(COUNTS)
        column = {path: index for index, path in enumerate(paths)}
        if isinstance(run.columns.shapes, ShapeTable):
            table = _table_of(run.columns.shapes, used, column)
            return cls(tuple(cases), scores, shapes, table, tuple(paths))
        blocks, values = array("q"), array("q")  # which block of `width` counts each path's go in, and the counts
        for row, number in enumerate(used.tolist()):
            first = row * len(paths)
            for path, counted in run.columns.shapes[number].pairs:
                if path in column:
                    blocks.append(first + column[path])
                    values.extend(counted)
        table = np.zeros((len(used), len(paths) * width), dtype=np.int64)
        if blocks:
            counts = np.frombuffer(values, dtype=np.int64).reshape(-1, width)
            table.reshape(-1, width)[np.frombuffer(blocks, dtype=np.int64)] = counts
        return cls(tuple(cases), scores, shapes, table, tuple(paths))

    @classmethod
    def whole(cls, run: Run) -> Sample:
        """Every document of `run`, with every field path it scores: one run read on its own."""
        return cls.of(run, list(run.documents), paths_in(run, run.documents))

    @cached_property
    def matrix(self) -> np.ndarray:
        """(documents, paths x len(COUNTS)) int64: every document's counts, gathered from `table`."""
        return self.table[self.shapes].astype(np.int64)

    @cached_property
    def counts(self) -> Mapping[str, np.ndarray]:
        """Path -> (documents, len(COUNTS)) counts per document, each gathered when first read."""
        return _PathCounts(self)

    @cached_property
    def totals(self) -> dict[str, np.ndarray]:
        """Each path's counts summed over all documents, computed once."""
        per_row = np.bincount(self.shapes, minlength=len(self.table))
        sums = np.zeros(self.table.shape[1], dtype=np.int64)
        for start in range(0, len(self.table), ROW_BLOCK):  # widened a block at a time: no int64 copy of the table
            sums += per_row[start : start + ROW_BLOCK] @ self.table[start : start + ROW_BLOCK].astype(np.int64)
        return _by_path(sums, self.paths)

    def value(self, target: str, indices: np.ndarray | None = None) -> Any:
        """`overall` (mean score) or `path.metric` over all documents, or over each row of `indices`.

        `indices` (resamples x documents, as `Comparison.indices`) gathers every resample: fine
        for a look at a small run; the comparison itself reads `Draws`, which never gathers.
        """
        if indices is None:
            return _metric(self.scores.mean(), self.totals, target)
        if target == "overall":
            return self.scores[indices].mean(axis=-1)
        path, metric = target.rsplit(".", 1)
        return ratio(self.counts[path][indices].sum(axis=-2), metric)


def _layout_of(shapes: ShapeTable, numbers: np.ndarray) -> np.ndarray:
    """Each shape number's layout in `shapes` (as `ShapeTable.__getitem__` finds it, for many at once)."""
    return np.searchsorted(np.asarray(shapes.starts, dtype=np.int64), numbers, side="right") - 1


def _layouts_in_order(shapes: ShapeTable, numbers: np.ndarray) -> list[int]:
    """The layouts the shape numbers fall in, in the order their first number comes."""
    layouts, first = np.unique(_layout_of(shapes, numbers), return_index=True)
    return layouts[np.argsort(first, kind="stable")].tolist()


def _table_of(shapes: ShapeTable, used: np.ndarray, column: Mapping[str, int]) -> np.ndarray:
    """`Sample.table` for the shapes `used` (sorted shape numbers), copied a layout's block of rows at a time.

    Shapes of one layout hold the same paths in the same columns of its count rows, so each
    path's counts move as one column block; on a run whose documents all differ, a loop over
    shapes would be a loop over documents. A path `column` lacks is left out; one it has that a
    shape lacks counts zero, as `Sample.of` fills them.

    The table keeps the layouts' own small unsigned type (a byte a count, usually, not eight as
    int64: at 100,000 distinct documents that is 5 MB a run, not 38), and whatever sums or
    subtracts it widens to int64 first, so every sum is the int64 one, exact and the same. A run
    of one layout whose every shape is used, with its paths in `column`'s order (every case
    paired, as a run compared with one scored from the same case file usually is), is its own
    table: the run's rows are read, not copied.
    """
    width = len(COUNTS)
    if len(shapes.layouts) == 1 and len(used) == len(shapes) and shapes.layouts[0][0] == tuple(column):
        return shapes.layouts[0][3]  # every row, each path in its own column already: the run's own table, not a copy
    layout_of = _layout_of(shapes, used)
    layouts = np.unique(layout_of).tolist()
    dtype = np.result_type(np.uint8, *(shapes.layouts[layout][3].dtype for layout in layouts))
    table = np.zeros((len(used), len(column) * width), dtype=dtype)
    for layout in layouts:
        paths, _, _, rows = shapes.layouts[layout]
        mine = np.flatnonzero(layout_of == layout)
        block = rows[used[mine] - shapes.starts[layout]]
        for index, path in enumerate(paths):
            if path in column:
                start = column[path] * width
                table[mine, start : start + width] = block[:, index * width : (index + 1) * width]
    return table


class _PathCounts(Mapping):
    """A sample's counts per document for each path, gathered from its table on first read and then held."""

    def __init__(self, sample: Sample) -> None:
        self.sample = sample
        self.position = {path: index for index, path in enumerate(sample.paths)}
        self.held: dict[str, np.ndarray] = {}

    def __getitem__(self, path: str) -> np.ndarray:
        if path not in self.held:
            width = len(COUNTS)
            start = self.position[path] * width
            self.held[path] = self.sample.table[:, start : start + width][self.sample.shapes].astype(np.int64)
        return self.held[path]

    def __iter__(self):
        return iter(self.sample.paths)

    def __len__(self) -> int:
        return len(self.sample.paths)


@dataclass(frozen=True)
class Groups:
    """The paired documents grouped by their pair of shapes: in one group, every document has the same counts.

    What the bootstrap sums and what the tables count moved is computed once per group, not per
    document: a resample's sums are how often it drew each group times the group's counts. A
    group is a row of each sample's table, so no counts are copied to hold them.
    """

    of: np.ndarray  # (documents,) each document's group
    rows: tuple[np.ndarray, np.ndarray]  # each group's row of the old and of the new sample's table
    samples: tuple[Sample, Sample]

    @classmethod
    def pair(cls, old: Sample, new: Sample) -> Groups:
        width = len(new.table)
        distinct, of = np.unique(old.shapes.astype(np.int64) * width + new.shapes, return_inverse=True)
        rows = (distinct // width).astype(np.intp), (distinct % width).astype(np.intp)
        return cls(of.reshape(-1).astype(np.intp), rows, (old, new))

    @cached_property
    def moved(self) -> np.ndarray:
        """(groups, paths) whether a path's counts differ between the runs in each group."""
        old, new = (sample.table for sample in self.samples)
        moved = np.empty((len(self.rows[0]), old.shape[1] // len(COUNTS)), dtype=bool)
        for start in range(0, len(moved), ROW_BLOCK):  # a block of groups at a time: no copy of either table
            rows = [side[start : start + ROW_BLOCK] for side in self.rows]
            differ = old[rows[0]] != new[rows[1]]
            moved[start : start + ROW_BLOCK] = differ.reshape(len(rows[0]), -1, len(COUNTS)).any(axis=2)
        return moved

    @cached_property
    def sizes(self) -> np.ndarray:
        """How many documents each group holds."""
        return np.bincount(self.of, minlength=len(self.rows[0]))


@dataclass(frozen=True)
class Draws:
    """One run's bootstrap resamples: each resample's mean score and summed counts per field."""

    scores: np.ndarray  # (resamples,)
    counts: Mapping[str, np.ndarray]  # path -> (resamples, len(COUNTS)), computed on first use

    def value(self, target: str) -> np.ndarray:
        """`overall` or `path.metric`, one value per resample."""
        return _metric(self.scores, self.counts, target)


DRAW_BYTES = 32 << 20  # resampled sums held at once, both runs together: bounds memory whatever the path count


class _Resampled:
    """Both runs' resampled sums per field path, computed a chunk of paths at a time and then held.

    A resample's sums take resamples x 6 numbers per path and run, so a run with thousands of
    field paths (a long list of nested objects) would need gigabytes to hold them all. Paths are
    summed in chunks of at most `DRAW_BYTES`, each from the same seeded draw (the generator yields
    the same indices every time), and at most two chunks are held: reading the paths in order,
    as the field table does, sums each chunk once. Runs of a few dozen paths fit in one chunk,
    summed with the mean scores in the single pass the comparison is built with.
    """

    def __init__(self, old: Sample, new: Sample, resamples: int, seed: int) -> None:
        self.old, self.new, self.resamples, self.seed = old, new, resamples, seed
        self.paths = list(old.paths)
        self.position = {path: index for index, path in enumerate(self.paths)}
        self.size = max(1, DRAW_BYTES // (resamples * 2 * len(COUNTS) * 8))
        self.held: dict[int, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = {}

    @cached_property
    def groups(self) -> Groups:
        """The paired documents grouped by their pair of shapes, for the tables: found when first read."""
        return Groups.pair(self.old, self.new)

    @cached_property
    def drawn_groups(self) -> tuple[list[np.ndarray], np.ndarray | None]:
        """What the draw counts: each run's row per group and each document's group (`_groups_of`)."""
        return _groups_of([self.old, self.new])

    def first(self) -> np.ndarray:
        """The mean scores of both runs per resample (resamples x 2), summing the first chunk of paths with them."""
        return self._sum(0, [self.old.scores, self.new.scores])

    def side(self, side: int) -> Mapping[str, np.ndarray]:
        return _Side(self, side)

    def get(self, path: str, side: int) -> np.ndarray:
        chunk = self.position[path] // self.size
        if chunk not in self.held:
            self._sum(chunk, np.empty((len(self.old.scores), 0)))
        return self.held[chunk][side][path]

    def _sum(self, chunk: int, scores: np.ndarray | list[np.ndarray]) -> np.ndarray:
        paths = self.paths[chunk * self.size : (chunk + 1) * self.size]
        width = len(COUNTS)
        start = chunk * self.size * width
        stop = start + len(paths) * width
        rows, groups = self.drawn_groups
        samples = (self.old, self.new)
        tables = [Rows(sample.table[:, start:stop], row) for sample, row in zip(samples, rows, strict=True)]
        means, sums = resample_sums(scores, tables, self.resamples, self.seed, groups=groups)
        half = len(paths) * width
        while len(self.held) >= 2:
            self.held.pop(next(iter(self.held)))
        self.held[chunk] = (_by_path(sums[:, :half], paths), _by_path(sums[:, half:], paths))
        return means


class _Side(Mapping):
    """One run's resampled sums by path, read through `_Resampled`."""

    def __init__(self, resampled: _Resampled, side: int) -> None:
        self.resampled, self.index = resampled, side

    def __getitem__(self, path: str) -> np.ndarray:
        if path not in self.resampled.position:
            raise KeyError(path)
        return self.resampled.get(path, self.index)

    def __iter__(self):
        return iter(self.resampled.paths)

    def __len__(self) -> int:
        return len(self.resampled.paths)

    def __repr__(self) -> str:
        return f"<resampled sums of {len(self)} field paths, run {self.index}>"


def paths_in(run: Run, cases: Iterable[str]) -> list[str]:
    """Field paths in first-seen order (the schema's order), over the given documents.

    Documents of one shape hold the same paths in the same order, so the shapes are read in the
    order their first document comes.
    """
    numbers = run.columns.columns(cases)[1]
    seen: dict[str, None] = {}
    shapes = run.columns.shapes
    if isinstance(shapes, ShapeTable):  # a layout's shapes share their paths: one look per layout
        for layout in _layouts_in_order(shapes, numbers):
            seen.update(dict.fromkeys(shapes.layouts[layout][0]))
        return list(seen)
    distinct, first = np.unique(numbers, return_index=True)
    for number in distinct[np.argsort(first, kind="stable")]:
        seen.update(dict.fromkeys(path for path, _ in run.columns.shapes[number].pairs))
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
    old_draws: Draws
    new_draws: Draws
    confidence: float
    seed: int
    resampled: _Resampled = field(repr=False)

    @property
    def groups(self) -> Groups:
        """The paired documents grouped by their pair of shapes (found once, when first read)."""
        return self.resampled.groups

    @property
    def resamples(self) -> int:
        """How many bootstrap resamples every interval uses."""
        return int(self.old_draws.scores.shape[0])

    @cached_property
    def indices(self) -> np.ndarray:
        """The resamples' document indices (resamples x documents), drawn again on first use.

        The same indices the draws were summed over; held only when asked for, since at 10,000
        documents they take 160 MB. `resampled_delta` gives each resample's difference without them.
        """
        return bootstrap_indices(len(self.pairing.cases), self.resamples, self.seed)

    def resampled_delta(self, target: str) -> np.ndarray:
        """`new - old` for `overall` or `path.metric` on each bootstrap resample: what the interval is read from."""
        return self.new_draws.value(target) - self.old_draws.value(target)

    def delta(self, target: str) -> Interval:
        """`new - old` for `overall` or `path.metric`, with its paired bootstrap interval."""
        old, new = self.old.value(target), self.new.value(target)
        return interval(self.old_draws.value(target), self.new_draws.value(target), new - old, self.confidence)

    def joint(self, targets: Sequence[str]) -> dict[str, Interval]:
        """`new - old` for each target with a simultaneous band: all of them hold together at `confidence`.

        Each target's part is its own percentile interval read at the band's shared level
        (`fieldeval.compare.bootstrap.joint_band`), from the same resamples as `delta`: for one
        target it is `delta(target)` itself. Gates on interval ends read it by default, so gating
        K fields at 95% keeps the chance that any gate fails on a change that moved nothing near
        5%, rather than up to K x 2.5%.
        """
        targets = list(dict.fromkeys(targets))
        if not targets:
            return {}
        estimates = [self.new.value(target) - self.old.value(target) for target in targets]
        resampled = np.column_stack([self.resampled_delta(target) for target in targets])
        low, high, level = joint_band(resampled, self.confidence)
        return {
            target: Interval(float(estimates[index]), float(low[index]), float(high[index]), level)
            for index, target in enumerate(targets)
        }

    def overall_table(self, gated: Mapping[str, Interval] | None = None) -> pd.DataFrame:
        """Mean StructuredOutputSimilarity score of each run, the difference, its interval, a verdict.

        With `gated` (the intervals the gates read, `gated_intervals`), a gated `overall` shows
        the interval its gate read, and an `interval` column says at what level each was read.
        """
        change = (gated or {}).get("overall") or self.delta("overall")
        table = score_row(
            "StructuredOutputSimilarity",
            self.old.value("overall"),
            self.new.value("overall"),
            change,
            len(self.pairing.cases),
            self.labels,
        )
        if gated:
            table["interval"] = [interval_label(change, "overall" in gated)]
        return table

    def field_table(self, metric: str = "f1", gated: Mapping[str, Interval] | None = None) -> pd.DataFrame:
        """Per field path: precision, recall and F1 of each run, and the change in `metric`.

        The verdict is `regressed` only when the whole interval of the change is below zero.
        `documents changed` counts documents whose confusion counts for the field differ. With
        `gated` (the intervals the gates read, `gated_intervals`), a gated field's row shows the
        interval its gate read, and its verdict comes from it, so a row and its gate never
        disagree; an `interval` column marks the gated rows and the level each was read at.
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
            target = f"{path}.{metric}"
            change = (gated or {}).get(target) or self.delta(target)
            row[f"delta {metric}"] = change.estimate
            row["low"], row["high"], row["verdict"] = change.low, change.high, change.verdict
            if gated:
                row["interval"] = interval_label(change, target in gated)
            row["documents changed"] = int(self.groups.sizes @ self.groups.moved[:, self.paths.index(path)])
            rows.append(row)
        return pd.DataFrame(rows)

    def headline(self, fields: pd.DataFrame | None = None, metric: str = "f1") -> str:
        """The change in a few words: `overall +0.027, currency F1 -0.111` (the field that fell most, if any fell).

        `fields` is the field table, when already computed (its gated rows read as their gates did).
        """
        table = self.field_table(metric) if fields is None else fields
        words = f"overall {self.delta('overall').estimate:+.3f}"
        if not table.empty:
            worst = table.loc[table[f"delta {metric}"].idxmin()]
            if worst[f"delta {metric}"] < 0:
                words += (
                    f", {worst['field']} {metric.upper() if metric == 'f1' else metric} {worst[f'delta {metric}']:+.3f}"
                )
        return words

    def movers(self, limit: int = 10, field: str | None = None) -> pd.DataFrame:
        """The documents whose score moved most, with the fields whose counts moved in each.

        A document on which neither the score nor any field's counts moved is left out. With
        `field`, only documents where that field moved; for a top-level field the expected value
        and each run's value are shown too, so the cause can be read off the table.
        """
        if field is not None and field not in self.paths:
            raise ValueError(f"unknown field path {field!r}; known paths: {', '.join(self.paths)}")
        old_label, new_label = self.labels
        shown = field if field is not None and "." not in field else None  # a top-level field: its values too
        columns = ["case", old_label, new_label, "delta"]
        if shown is not None:
            columns += ["expected", f"{old_label} value", f"{new_label} value"]
        moved = self.groups.moved[self.groups.of]  # (documents, paths)
        deltas = self.new.scores - self.old.scores
        keep = moved[:, self.paths.index(field)] if field is not None else moved.any(axis=1) | (deltas != 0)
        positions = np.flatnonzero(keep)
        positions = positions[np.argsort(-np.abs(deltas[positions]), kind="stable")][: max(limit, 0)]
        width = len(COUNTS)
        rows = []
        for position in positions:
            name = self.pairing.cases[position]
            row = [name, self.old.scores[position], self.new.scores[position], deltas[position]]
            if shown is not None:
                old_document, new_document = self.old_run.documents[name], self.new_run.documents[name]
                row += [old_document.expected.get(shown, "None"), old_document.actual.get(shown, "None")]
                row.append(new_document.actual.get(shown, "None"))
            before, after = (sample.table[sample.shapes[position]].astype(np.int64) for sample in (self.old, self.new))
            changes = [
                f"{path}: {_describe(before[index * width : (index + 1) * width])} -> "
                f"{_describe(after[index * width : (index + 1) * width])}"
                for index, path in enumerate(self.paths)
                if moved[position, index]
            ]
            row.append("; ".join(changes) or SCORE_ONLY)
            rows.append(row)
        return pd.DataFrame(rows, columns=[*columns, "fields moved"])


def _describe(counts: np.ndarray) -> str:
    """`1 tp, 1 fd` for a document's counts on one field; fp (= fd + fa) and tn are left out."""
    parts = [f"{counts[COUNTS.index(key)]} {key}" for key in ("tp", "fn", "fd", "fa") if counts[COUNTS.index(key)]]
    return ", ".join(parts) or "none"


def interval_label(change: Interval, gated: bool) -> str:
    """How a table row's interval was read: `95%`, or `98.7% gated` for a field's part of the gates' band."""
    level = f"{change.level:.1%}".replace(".0%", "%") if change.level is not None else "?"
    return f"{level} gated" if gated else level


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
    """Pair two read runs and draw, once, the bootstrap resamples every interval shares."""
    return compare_candidates(old, [new], resamples=resamples, seed=seed, confidence=confidence, labels=labels)[0]


@dataclass(frozen=True)
class _Paired:
    """One candidate paired with the baseline: what a `Comparison` holds before its resamples are drawn."""

    new: Run
    pairing: Pairing
    paths: tuple[str, ...]
    old: Sample
    new_sample: Sample


def compare_candidates(
    old: Run,
    news: Sequence[Run],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    labels: tuple[str, str] = ("old", "new"),
) -> list[Comparison]:
    """`compare_runs(old, new)` for each of `news`, the baseline's arrays and the resamples' draw shared.

    Every pairing draws the same resample indices (they depend only on the seed and the number
    of documents), so when the candidates pair the same cases with the baseline the resamples
    are drawn, counted and gathered once for all of them, and the baseline's sample is built
    once when its cases and paths are the same. Each comparison is, to the last bit, the one
    `compare_runs` builds alone: the resampled sums are whole numbers (exact in any grouping)
    and each run's mean scores are gathered and summed as one column, as alone.
    """
    check_confidence(confidence)
    check_resamples(resamples)
    paired: list[_Paired] = []
    for new in news:
        pairing = pair_runs(old, new)
        paths = paths_in(old, pairing.cases)
        paths += [path for path in paths_in(new, pairing.cases) if path not in paths]
        shared = next(
            (each.old for each in paired if each.old.cases == pairing.cases and each.paths == tuple(paths)), None
        )
        before = shared if shared is not None else Sample.of(old, pairing.cases, paths)
        after = Sample.of(new, pairing.cases, paths)
        paired.append(_Paired(new, pairing, tuple(paths), before, after))
    resampled = [_Resampled(each.old, each.new_sample, resamples, seed) for each in paired]
    release_freed_memory()  # what reading and pairing freed, before the bootstrap's peak
    if len(paired) > 1 and all(each.pairing.cases == paired[0].pairing.cases for each in paired):
        means = _draw_together(resampled)
    else:
        means = [each.first() for each in resampled]
    return [
        Comparison(
            labels=labels,
            old_run=old,
            new_run=each.new,
            pairing=each.pairing,
            old=each.old,
            new=each.new_sample,
            paths=each.paths,
            old_draws=Draws(found[:, 0], drawn.side(0)),
            new_draws=Draws(found[:, 1], drawn.side(1)),
            confidence=confidence,
            seed=seed,
            resampled=drawn,
        )
        for each, drawn, found in zip(paired, resampled, means, strict=True)
    ]


def _groups_of(samples: Sequence[Sample]) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Each sample's table row for each group of documents that share their shape in every sample, and each
    document's group; when every document is a group of its own, the samples' own rows and no group map.
    """
    key = samples[0].shapes.astype(np.int64)
    for sample in samples[1:]:  # the group numbers stay below the documents, so the key never overflows
        key = np.unique(key * len(sample.table) + sample.shapes, return_inverse=True)[1].reshape(-1)
    _, first, of = np.unique(key, return_index=True, return_inverse=True)
    if len(first) == len(key):
        return [sample.shapes for sample in samples], None
    return [sample.shapes[first] for sample in samples], of.reshape(-1)


def _draw_together(resampled: Sequence[_Resampled]) -> list[np.ndarray]:
    """Each pairing's `_Resampled.first()`, from one pass over the resamples for all of them (same cases).

    The documents are grouped by the shapes of every distinct sample at once, so one count of
    how often a resample drew each group serves every run; each sample's first chunk of paths is
    summed once, however many pairings share it, and its mean scores gathered once.
    """
    samples: list[Sample] = []
    for drawn in resampled:
        samples += [sample for sample in (drawn.old, drawn.new) if not any(sample is seen for seen in samples)]
    rows, groups = _groups_of(samples)
    width = len(COUNTS)
    wanted = [0] * len(samples)  # columns of each sample's table in some pairing's first chunk
    for drawn in resampled:
        for sample in (drawn.old, drawn.new):
            number = next(index for index, seen in enumerate(samples) if seen is sample)
            wanted[number] = max(wanted[number], min(len(drawn.paths), drawn.size) * width)
    tables = [  # each group's row of each table, read a block of columns at a time (never copied whole)
        Rows(sample.table[:, :columns], row) for sample, columns, row in zip(samples, wanted, rows, strict=True)
    ]
    scores = [sample.scores for sample in samples]
    means, sums = resample_sums(scores, tables, resampled[0].resamples, resampled[0].seed, groups=groups)
    starts = np.cumsum([0, *wanted])
    found = []
    for drawn in resampled:
        numbers = [
            next(index for index, seen in enumerate(samples) if seen is sample) for sample in (drawn.old, drawn.new)
        ]
        paths = drawn.paths[: drawn.size]
        sides = [sums[:, starts[number] : starts[number] + len(paths) * width] for number in numbers]
        drawn.held[0] = (_by_path(sides[0], paths), _by_path(sides[1], paths))
        found.append(means[:, numbers])
    return found


def compare(
    old: Any,
    new: Any,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    labels: tuple[str, str] = ("old", "new"),
) -> Comparison:
    """Compare two `StructuredOutputSimilarity` reports over the same named cases.

    Each side is a report in memory, or the path of a saved report or of a compact results
    file (`compare_files` reads those).
    """

    def read(run: Any, label: str) -> Run:
        return read_run_file(run) if isinstance(run, str | Path) else read_run(run, label)

    return compare_runs(
        read(old, labels[0]), read(new, labels[1]), resamples=resamples, seed=seed, confidence=confidence, labels=labels
    )


def compare_files(
    old: Path | str,
    new: Path | str,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    labels: tuple[str, str] = ("old", "new"),
) -> Comparison:
    """Compare two saved runs by path: saved reports or compact results files, told apart by content."""
    return compare(Path(old), Path(new), resamples=resamples, seed=seed, confidence=confidence, labels=labels)


def case_scores(report: Any, source: str = "run") -> dict[str, float]:
    """Each case's score by name, for any single-evaluator report (`Equals` included).

    Raises:
        CompareError: If a case has no printable name, a name repeats, or a score is not in [0, 1].
    """
    scores: dict[str, float] = {}
    for index, case in enumerate(report.cases):
        name = case.get("name")
        if not isinstance(name, str) or not name or name in scores:
            raise CompareError(
                f"{source}: case {index} ({name!r}) has no name or repeats one; runs are paired by case name, "
                "so give every Case one distinct name"
            )
        check_name(name, f"{source}: case {index}")
        scores[name] = check_score(report.scores[index], f"{source}: case {name!r}")
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
