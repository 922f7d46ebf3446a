"""Reading one run for a comparison, and refusing what no comparison can be built on.

A run comes from a report in memory, from a saved report (the report's own pydantic JSON) or from
a compact per-document results file. Whatever the source, compare keeps only what it needs per
case: the name, the schema, the score, the per-field confusion counts and the top-level field
values as text (for the movers table). A saved report of 10,000 documents is 127 MB of JSON; it is
read element by element with the standard library's decoder, so each case's comparison is
extracted and dropped before the next one is parsed, instead of holding the whole report (and
validating it as a `StructuredOutputReport`, which is slow at that size).

Everything read is validated, because a wrong number here would otherwise become a gate result:
scores are finite and in [0, 1], counts are whole numbers from 0 to `MAX_COUNT`, the confusion
matrix has the node types stickler writes, and case names are non-empty printable text. A
refusal is a `CompareError` naming the file, the case and the field.

The per-field counts of a document are stickler's own: `stickler.aggregate_from_comparisons` on
that document's comparison, so summed over documents they equal `StructuredOutputReport.metrics()`
by construction. Validation walks the same nodes stickler reads, which also gives the schema's
field order (stickler returns its field metrics unordered).
"""

from __future__ import annotations

import json
import math
import operator
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, overload

from fieldeval.compare.params import ROW_BLOCK, CompareError, check_run_file
from fieldeval.formats import COUNTS, limits
from fieldeval.formats.json import skip_blanks
from fieldeval.formats.names import name_problem
from fieldeval.formats.results import is_results_file
from fieldeval.formats.run_info import RUN_FIX, RUN_KEY, RunInfo, RunInfoError, read_run_info

if TYPE_CHECKING:
    import numpy as np

MARKER = "StructuredOutputSimilarity"  # `metadata["evaluated_by"]` on the rows this module reads
MAX_COUNT = 10**9  # more of one count on one field of one document is not a real comparison
SAVE_FIX = "re-score the run and save it with fieldeval.harness.reports.save_report"
SCORED_BY = (
    "score the run with Experiment(cases, evaluators=[StructuredOutputSimilarity(Model)], "
    "report_cls=StructuredOutputReport)"
)
NOT_OURS = "not scored by StructuredOutputSimilarity (no ground truth, or another evaluator)"


@dataclass(frozen=True, slots=True)
class Document:
    """One scored case of one run: its score, its schema, its per-field counts and field values.

    `expected` and `actual` hold each top-level field of the stored outputs as text (`None` when
    absent), which is all the movers table shows of them.
    """

    score: float
    schema: str
    counts: Mapping[str, tuple[int, ...]]  # path -> counts in `COUNTS` order
    expected: Mapping[str, str] = field(default_factory=dict)
    actual: Mapping[str, str] = field(default_factory=dict)
    unreadable: bool = False
    fields: frozenset[str] = frozenset()  # the schema's top-level fields, as the comparison recorded them


def schema_fields(field_scores: Any, paths: Iterable[str]) -> frozenset[str]:
    """The top-level field names a document's comparison recorded: its field scores' keys and its paths' heads.

    That is the schema as the saved run knows it (stickler scores every field of the model), so two
    runs whose class names agree but whose fields do not are told apart. `field_scores` is the
    mapping, or its keys.
    """
    names = set(field_scores) if isinstance(field_scores, Mapping | tuple) else set()
    names.update(path.split(".", 1)[0] for path in paths)
    return frozenset(str(name) for name in names)


@dataclass(frozen=True, slots=True)
class Shape:
    """What documents of one run often share: the schema, the per-field counts, the recorded fields."""

    schema: str
    pairs: tuple[tuple[str, tuple[int, ...]], ...]  # (path, counts in `COUNTS` order), in the document's order
    fields: frozenset[str]
    unreadable: bool

    @property
    def counts(self) -> Mapping[str, tuple[int, ...]]:
        """path -> counts in `COUNTS` order."""
        return MappingProxyType(dict(self.pairs))


class _RowShape(Shape):
    """A `Shape` whose pairs are built from its row of counts only when read.

    A comparison reads the schema and fields of every shape several times and the counts of
    each once or twice; holding the pairs' tuples would cost about 1.5 KB a shape, which on a
    run whose documents all differ is 1.5 KB a document. Equal to the `Shape` with the same
    pairs (the dataclass's equality reads `pairs`, through the property here).
    """

    __slots__ = ("_paths", "_rows", "_index")
    _paths: tuple[str, ...]
    _rows: np.ndarray
    _index: int

    def __init__(
        self, schema: str, paths: tuple[str, ...], fields: frozenset[str], unreadable: bool, rows: Any, index: int
    ):
        put = object.__setattr__  # the dataclass is frozen
        put(self, "schema", schema)
        put(self, "fields", fields)
        put(self, "unreadable", unreadable)
        put(self, "_paths", paths)
        put(self, "_rows", rows)
        put(self, "_index", index)

    @property  # a field of `Shape`, read here from the row
    def pairs(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        values = self._rows[self._index].tolist()
        return tuple(zip(self._paths, zip(*[iter(values)] * len(COUNTS), strict=True), strict=True))


class ShapeTable(Sequence[Shape]):
    """The distinct shapes of a run read as columns, each built as a `Shape` when first asked for.

    Documents with the same schema, paths and fields share one layout; what sets their shapes
    apart is their counts, held once per distinct row of a small unsigned integer matrix per
    layout instead of one `Shape` of tuples per document (a run of 100,000 documents whose
    counts all differ would hold 100,000 of them, about 1.5 KB each). Shape numbers run through
    the layouts in order: layout `k`'s distinct rows are numbers `starts[k]` onwards. A shape
    once built is kept (about 100 bytes; its pairs are built from the row each time they are read).
    """

    def __init__(self, schema: str, layouts: list[tuple[tuple[str, ...], frozenset[str], bool, np.ndarray]]) -> None:
        self.schema = schema
        self.layouts = layouts  # (paths, fields, unreadable, distinct count rows)
        self.starts: list[int] = []
        total = 0
        for *_, rows in layouts:
            self.starts.append(total)
            total += len(rows)
        self._len = total
        self._built: dict[int, Shape] = {}

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, number: int) -> Shape: ...

    @overload
    def __getitem__(self, number: slice) -> Sequence[Shape]: ...

    def __getitem__(self, number: int | slice) -> Shape | Sequence[Shape]:
        if isinstance(number, slice):
            return [self[each] for each in range(*number.indices(self._len))]
        number = int(number)  # a numpy integer too
        found = self._built.get(number)
        if found is not None:
            return found
        if number < 0:
            number += self._len
        if not 0 <= number < self._len:
            raise IndexError(f"shape {number} of {self._len}")
        layout = bisect_right(self.starts, number) - 1
        paths, fields, unreadable, rows = self.layouts[layout]
        found = self._built[number] = _RowShape(
            self.schema, paths, fields, unreadable, rows, number - self.starts[layout]
        )
        return found

    def __iter__(self) -> Iterator[Shape]:
        return map(self.__getitem__, range(self._len))

    def unreadable_flags(self) -> np.ndarray:
        """Whether each shape is an unreadable output's, without building the shapes."""
        import numpy as np

        return np.repeat([unreadable for _, _, unreadable, _ in self.layouts], [len(rows) for *_, rows in self.layouts])


_NO_VALUES: Mapping[str, str] = MappingProxyType({})  # a document with no field values; one empty map for all
_NO_TEXTS = (_NO_VALUES, _NO_VALUES)


class Documents(Mapping[str, Document]):
    """One run's scored documents by case name, held as columns, so a large run costs little per document.

    A document is its score, its field values and the number of its `Shape`. Documents of one
    run mostly repeat a few shapes (the same counts on the same schema), so each distinct shape
    is held once and a document costs its name, a float and an integer (and, from a saved
    report, its field values). Looking a name up builds its `Document`; the comparison reads
    the columns (`scores`, `shape_numbers`) instead.
    """

    def __init__(self) -> None:
        self.position: dict[str, int] = {}
        self._list: list[Shape] = []
        self.shapes: Sequence[Shape] = self._list
        self._numbers: dict[Shape, int] = {}
        self._scores: array | np.ndarray = array("d")
        self._shape_numbers: array | np.ndarray = array("q")
        self._values: list[tuple[Mapping[str, str], Mapping[str, str]]] | None = []
        self._last: tuple[tuple[str, ...], np.ndarray | slice] | None = None
        self._names: tuple[str, ...] | None = None

    @classmethod
    def held(cls, position: dict[str, int], scores: np.ndarray, numbers: np.ndarray, shapes: ShapeTable) -> Documents:
        """Documents already held as columns (a results file read whole): no field values, shapes built on demand.

        `position` maps each name to its place in `scores` (float64) and `numbers` (int64, each
        document's shape in `shapes`).
        """
        found = cls()
        found.position, found._scores, found._shape_numbers, found.shapes = position, scores, numbers, shapes
        found._values = None
        return found

    @classmethod
    def of(cls, documents: Mapping[str, Document]) -> Documents:
        """The columns of documents held one object each (as a `Run` built by hand holds them)."""
        found = cls()
        for name, document in documents.items():
            pairs = tuple((path, tuple(values)) for path, values in document.counts.items())
            shape = Shape(document.schema, pairs, frozenset(document.fields), document.unreadable)
            found.add(name, document.score, found.number(shape), document.expected, document.actual)
        return found

    def number(self, shape: Shape) -> int:
        """The number of `shape` in this run, the same for every equal shape."""
        if shape not in self._numbers:
            self._numbers[shape] = len(self._list)
            self._list.append(shape)
        return self._numbers[shape]

    def add(
        self,
        name: str,
        score: float,
        shape: int,
        expected: Mapping[str, str] = _NO_VALUES,
        actual: Mapping[str, str] = _NO_VALUES,
    ) -> None:
        """Keep one document: its name, score, the number of its shape and its field values."""
        assert isinstance(self._scores, array) and isinstance(self._shape_numbers, array) and self._values is not None
        self.position[name] = len(self._scores)
        self._scores.append(score)
        self._shape_numbers.append(shape)
        self._values.append(_NO_TEXTS if expected is _NO_VALUES and actual is _NO_VALUES else (expected, actual))

    def columns(self, names: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """The scores (float64) and shape numbers (intp) of the documents named, in that order."""
        import numpy as np

        positions = self._positions(names)
        scores = np.frombuffer(self._scores, dtype=np.float64)[positions]
        numbers = np.frombuffer(self._shape_numbers, dtype=np.int64)[positions]
        if isinstance(self._scores, array):  # columns still added to: copies, so no view pins their buffers
            scores, numbers = scores.copy(), numbers.copy()
        return scores, numbers.astype(np.intp, copy=False)

    def _positions(self, names: Iterable[str]) -> np.ndarray | slice:
        """Where the documents named are held; found once for the last tuple of names asked for.

        A comparison asks for the same paired cases several times, and they are often every
        document in the order read, which needs no lookup at all: then every column is read
        whole, as a view, not a copy.
        """
        import numpy as np

        names = tuple(names)  # the same object when given a tuple
        if self._last is not None and self._last[0] is names:
            return self._last[1]
        found: np.ndarray | slice
        if len(names) == len(self.position) and all(map(operator.eq, names, self.position)):
            found = slice(None)
        else:
            found = np.fromiter(map(self.position.__getitem__, names), dtype=np.intp, count=len(names))
        self._last = (names, found)
        return found

    def names(self) -> tuple[str, ...]:
        """Every case name in the order read, as one tuple kept for all who ask (each candidate's pairing, say)."""
        if self._names is None or len(self._names) != len(self.position):
            self._names = tuple(self.position)
        return self._names

    def shape_of(self, name: str) -> Shape:
        return self.shapes[self._shape_numbers[self.position[name]]]

    def schema_of(self, name: str) -> str | None:
        """The schema `name` was scored against; None when this run scored no such case."""
        index = self.position.get(name)
        return None if index is None else self.shapes[self._shape_numbers[index]].schema

    def unreadable(self, names: Iterable[str]) -> int:
        """How many of the documents named are outputs that could not be read as the schema."""
        import numpy as np

        if isinstance(self.shapes, ShapeTable):
            flags = self.shapes.unreadable_flags()
        else:
            flags = np.array([shape.unreadable for shape in self.shapes], dtype=bool)
        return int(flags[self.columns(names)[1]].sum())

    def __getitem__(self, name: str) -> Document:
        index = self.position[name]
        shape = self.shapes[self._shape_numbers[index]]
        expected, actual = _NO_TEXTS if self._values is None else self._values[index]
        return Document(
            float(self._scores[index]), shape.schema, shape.counts, expected, actual, shape.unreadable, shape.fields
        )

    def __contains__(self, name: object) -> bool:
        return name in self.position

    def __iter__(self) -> Iterator[str]:
        return iter(self.position)

    def __len__(self) -> int:
        return len(self.position)


@dataclass(frozen=True)
class Run:
    """The scored documents of one run by case name, and the cases that carry no score.

    `documents` is always a `Documents`; a mapping of `Document`s given by hand is turned into one.
    """

    source: str
    documents: Mapping[str, Document]
    unscored: Mapping[str, str]
    info: RunInfo | None = None  # where the outputs came from and what they cost, when the run says

    def __post_init__(self) -> None:
        if not isinstance(self.documents, Documents):
            object.__setattr__(self, "documents", Documents.of(self.documents))

    @property
    def columns(self) -> Documents:
        """`documents`, typed as the columns it is."""
        assert isinstance(self.documents, Documents)
        return self.documents


# --- validating one case -----------------------------------------------------------------------


def check_name(name: Any, where: str) -> str:
    """A case name runs can be paired by and a table can print: non-empty printable text."""
    if not isinstance(name, str) or not name:
        raise CompareError(f"{where} has no name; runs are paired by case name, so name every Case")
    problem = name_problem(name)  # the rule score and record apply to the case file
    if problem is not None:
        raise CompareError(f"{where}: {problem}; give every Case a printable name")
    return name


def check_score(score: Any, where: str) -> float:
    """A score a mean can be taken of: a finite number in [0, 1] (a NaN is bad input, not a result)."""
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise CompareError(f"{where}: score is {score!r}; a score must be a number from 0 to 1; {SAVE_FIX}")
    return float(score)


def _check_counts(node: Mapping[str, Any], where: str, path: str) -> None:
    for key in COUNTS:
        if key not in node:
            continue
        value = node[key]
        whole = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
        if isinstance(value, bool) or not whole or not 0 <= value <= MAX_COUNT:
            raise CompareError(
                f"{where}, field {path!r}: count {key!r} is {value!r}; counts must be whole numbers "
                f"from 0 to {MAX_COUNT:,}; {SAVE_FIX}"
            )


def _check_node(node: Any, where: str, path: str, order: dict[str, None]) -> None:
    """Check one field node the way stickler reads it, and the nodes below it."""
    if not isinstance(node, Mapping):
        raise CompareError(
            f"{where}, field {path!r}: the confusion-matrix node is {type(node).__name__}, not an object; {SAVE_FIX}"
        )
    order[path] = None
    _check_counts(node, where, path)
    if node.get("overall") is not None:
        if not isinstance(node["overall"], Mapping):
            raise CompareError(
                f"{where}, field {path!r}: 'overall' is {type(node['overall']).__name__}, not an object; {SAVE_FIX}"
            )
        _check_counts(node["overall"], where, path)
    for child in ("fields", "nested_fields"):
        children = node.get(child)
        if children is None:
            continue
        if not isinstance(children, Mapping):
            raise CompareError(
                f"{where}, field {path!r}: {child!r} is {type(children).__name__}, not an object; {SAVE_FIX}"
            )
        for name, below in children.items():
            _check_node(below, where, f"{path}.{name}", order)


def field_counts(comparison: Any, where: str = "comparison") -> dict[str, dict[str, int]]:
    """Per-field confusion counts of one document, keyed by dotted path (`line_items.sku`), in schema order.

    The counts are stickler's (`aggregate_from_comparisons` on this one comparison), so summing
    them over documents reproduces `report.metrics()`. A path stickler leaves out counts zero.

    Raises:
        CompareError: If the comparison is not an object, its confusion matrix or a node under it
            has the wrong type, or a count is not a whole number from 0 to `MAX_COUNT`.
    """
    from stickler import aggregate_from_comparisons

    if not isinstance(comparison, Mapping):
        raise CompareError(f"{where}: the raw comparison is {type(comparison).__name__}, not an object; {SAVE_FIX}")
    matrix = comparison.get("confusion_matrix", {})
    if not isinstance(matrix, Mapping):
        raise CompareError(f"{where}: 'confusion_matrix' is {type(matrix).__name__}, not an object; {SAVE_FIX}")
    fields = matrix.get("fields", {})
    if not isinstance(fields, Mapping):
        raise CompareError(f"{where}: 'confusion_matrix.fields' is {type(fields).__name__}, not an object; {SAVE_FIX}")
    order: dict[str, None] = {}
    for name, node in fields.items():
        _check_node(node, where, str(name), order)
    if not order:
        return {}
    found = aggregate_from_comparisons([{"confusion_matrix": {"fields": fields}}]).field_metrics
    return {path: {key: int(found.get(path, {}).get(key, 0)) for key in COUNTS} for path in order}


class _Shapes(dict):
    """Each distinct shape a reader meets, numbered once in its run's `Documents`.

    Keyed by what the reader read (the schema, the counts as `(path, counts)` pairs, the field
    scores' keys, whether unreadable), so a repeated shape costs one lookup, not a `Shape`; the
    fields are worked out once per distinct set of keys and paths (documents of one schema share it).
    """

    def __init__(self, documents: Documents) -> None:
        super().__init__()
        self.documents = documents
        self.fields: dict[tuple, frozenset[str]] = {}

    def number(self, key: tuple, where: str) -> int:
        """The number of the shape `key` describes (`(schema, counts, field names, unreadable)`).

        A new shape's counts are checked against `MAX_COUNT`, with `where` naming the case.
        """
        found = self.get(key)
        if found is None:
            schema, pairs, field_names, unreadable = key
            for path, numbers in pairs:
                if max(numbers) > MAX_COUNT:
                    _check_counts(dict(zip(COUNTS, numbers, strict=True)), where, path)
            fields: frozenset[str] = frozenset()
            if not unreadable:
                paths = tuple(path for path, _ in pairs)
                if (field_names, paths) not in self.fields:
                    self.fields[field_names, paths] = schema_fields(field_names, paths)
                fields = self.fields[field_names, paths]
            found = self[key] = self.documents.number(Shape(schema, pairs, fields, unreadable))
        return found


def field_texts(output: Any) -> dict[str, str]:
    """Each top-level field of a stored output (a model or a dict) as text, `None` when empty."""
    if hasattr(output, "model_dump"):
        output = output.model_dump(mode="json")
    if not isinstance(output, Mapping):
        return {}
    return {str(key): "None" if value is None else str(value) for key, value in output.items()}


# --- one report, whatever holds it -------------------------------------------------------------


def _row_parts(row: Any, where: str) -> tuple[Any, Any, Any]:
    """`(score, label, metadata)` of a result row, an `EvaluationOutput` or its JSON."""
    if isinstance(row, Mapping):
        parts = row.get("score"), row.get("label"), row.get("metadata")
    elif hasattr(row, "metadata"):
        parts = getattr(row, "score", None), getattr(row, "label", None), row.metadata
    else:
        raise CompareError(f"{where}: a result row is {type(row).__name__}, not an object; {SAVE_FIX}")
    if parts[2] is not None and not isinstance(parts[2], Mapping):
        raise CompareError(f"{where}: a result row's metadata is {type(parts[2]).__name__}, not an object; {SAVE_FIX}")
    return parts


def _is_ours(metadata: Any) -> bool:
    """A row StructuredOutputSimilarity scored, or one it could not read as the model."""
    return isinstance(metadata, Mapping) and (
        metadata.get("evaluated_by") == MARKER or metadata.get("error") == "unreadable"
    )


class _Builder:
    """Collects one run's documents case by case, refusing repeats."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.documents = Documents()
        self.unscored: dict[str, str] = {}
        self.shapes = _Shapes(self.documents)
        self.info: Any = None  # the run's self-description ("run"), when score wrote one

    def add(self, index: int, case: Any, rows: Any) -> None:
        where = f"{self.source}: case {index}"
        if not isinstance(case, Mapping):
            raise CompareError(f"{where} is {type(case).__name__}, not an object; {SAVE_FIX}")
        name = check_name(case.get("name"), where)
        where = f"{self.source}: case {name!r}"
        if isinstance(rows, Mapping) or not isinstance(rows, Iterable) or isinstance(rows, str | bytes):
            raise CompareError(f"{where}: its results are {type(rows).__name__}, not a list of rows; {SAVE_FIX}")
        ours = [parts for parts in (_row_parts(row, where) for row in rows) if _is_ours(parts[2])]
        if len(ours) > 1:
            self._repeated(name)
        if not ours:
            self.put(name, None)
            return
        score, label, metadata = ours[0]
        unreadable = metadata.get("evaluated_by") != MARKER
        comparison = metadata.get("comparison")
        if not unreadable and comparison is None:
            raise CompareError(
                f"{where} has no raw comparison in its row metadata; re-run the experiment "
                "and save its report with fieldeval.harness.reports.save_report, which keeps row metadata"
            )
        if not isinstance(label, str) or not label.isprintable():
            raise CompareError(f"{where}: its schema label is {label!r}, not a printable model name; {SAVE_FIX}")
        counts = () if unreadable else _pairs(field_counts(comparison, where))
        field_scores = metadata.get("field_scores")
        names = tuple(field_scores) if isinstance(field_scores, Mapping) else ()
        self.put(
            name,
            check_score(score, where),
            self.shapes.number((label, counts, names, unreadable), where),
            field_texts(case.get("expected_output")),
            field_texts(case.get("actual_output")),
        )

    def _repeated(self, name: str) -> None:
        raise CompareError(
            f"{self.source}: case {name!r} appears more than once; compare one evaluator's report "
            "at a time and give every case a distinct name"
        )

    def put(self, name: str, score: float | None, *shape: Any) -> None:
        """Keep one case: scored (`score`, its shape number and field values) or not scored (`None`)."""
        if name in self.documents.position or name in self.unscored:
            self._repeated(name)
        if score is None:
            self.unscored[name] = NOT_OURS
        else:
            self.documents.add(name, score, *shape)

    def run(self) -> Run:
        if not self.documents:
            raise CompareError(f"{self.source}: no case was scored by StructuredOutputSimilarity; {SCORED_BY}")
        return Run(self.source, self.documents, self.unscored, _run_info(self.source, self.info))


def _pairs(counts: Mapping[str, Mapping[str, int]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Per-field counts as `(path, counts in COUNTS order)` pairs, in order."""
    return tuple((path, tuple(values[key] for key in COUNTS)) for path, values in counts.items())


def read_run(report: Any, source: str = "run") -> Run:
    """Collect the `StructuredOutputSimilarity` rows of a report in memory, one per case name.

    A row the evaluator could not read as the model (`metadata["error"] == "unreadable"`) is a
    real failure of the extractor: it is kept with its score of 0 and no field counts. Cases
    with no such row (no ground truth, or scored only by another evaluator) are listed in
    `unscored` with the reason.

    Raises:
        CompareError: If a case name repeats (a flattened multi-evaluator report does that), if
            a case has no printable name, if a score, count or node is malformed, or if nothing
            was scored.
    """
    builder = _Builder(source)
    cases = list(report.cases)
    detailed = list(report.detailed_results)
    check_rows_cover(source, len(cases), len(detailed))
    for index, rows in enumerate(detailed):
        builder.add(index, cases[index], rows)
    return builder.run()


def check_rows_cover(source: str, cases: int, rows: int) -> None:
    """Refuse a report whose `detailed_results` and `cases` differ in length: its cases cannot be told apart.

    A report cut short (or edited) would otherwise be compared on whatever rows are there, and a
    case with no row would silently drop out of the gates.
    """
    if cases != rows:
        raise CompareError(
            f"{source}: the report holds {cases:,} cases but {rows:,} rows of detailed_results; every case needs "
            f"its row, so the report is incomplete or was edited: {SAVE_FIX}"
        )


# --- a saved report, element by element ---------------------------------------------------------


class _Foreign(ValueError):
    """The file is JSON but not shaped like a saved report."""


_DECODE = json.JSONDecoder().raw_decode
_READ = object()  # stands for a case's results once the builder has taken them


def _array(text: str, start: int, each: Callable[[Any], None]) -> int:
    """Hand each element of the JSON array starting at `start` to `each`; return the index after the array."""
    position = skip_blanks(text, start + 1)
    if text.startswith("]", position):
        return position + 1
    while True:
        value, position = _DECODE(text, position)
        each(value)
        position = skip_blanks(text, position)
        if text.startswith(",", position):
            position = skip_blanks(text, position + 1)
        elif text.startswith("]", position):
            return position + 1
        else:
            raise json.JSONDecodeError("expected ',' or ']' in an array", text, position)


def _report_arrays(text: str, builder: _Builder) -> None:
    """Walk the report's top-level object, feeding `cases` and `detailed_results` to `builder` one by one.

    Only those two arrays are read element by element; every other value is decoded and dropped.
    A report written with `detailed_results` before `cases` is still read, holding the results
    until the cases arrive.
    """
    cases: list[Any] = []
    results: list[Any] = []
    found = set()

    def add_result(rows: Any) -> None:
        if "cases" not in found:
            results.append(rows)
            return
        index = len(results)
        if index < len(cases):  # a row past the cases is only counted: check_rows_cover refuses the file
            builder.add(index, cases[index], rows)
        results.append(_READ)  # keeps the count, not the rows

    def add_case(case: Any) -> None:
        cases.append(_keep(case))

    position = skip_blanks(text)
    if not text.startswith("{", position):
        raise _Foreign("the file holds no JSON object")
    position = skip_blanks(text, position + 1)
    while not text.startswith("}", position):
        key, position = _DECODE(text, position)
        position = skip_blanks(text, position)
        if not isinstance(key, str) or not text.startswith(":", position):
            raise json.JSONDecodeError("expected a key and ':'", text, position)
        position = skip_blanks(text, position + 1)
        if key in ("cases", "detailed_results") and text.startswith("[", position):
            found.add(key)
            position = _array(text, position, add_case if key == "cases" else add_result)
        else:
            value, position = _DECODE(text, position)
            if key == RUN_KEY:
                builder.info = value
        position = skip_blanks(text, position)
        if text.startswith(",", position):
            position = skip_blanks(text, position + 1)
        elif not text.startswith("}", position):
            raise json.JSONDecodeError("expected ',' or '}' after a value", text, position)
    if skip_blanks(text, position + 1) != len(text):
        raise json.JSONDecodeError("extra data after the report", text, position + 1)
    if found != {"cases", "detailed_results"}:
        raise _Foreign("the file has no 'cases' and 'detailed_results' lists")
    check_rows_cover(builder.source, len(cases), len(results))
    for index, rows in enumerate(results):
        if rows is not _READ:
            builder.add(index, cases[index], rows)


def _keep(case: Any) -> Any:
    """The parts of a case compare reads, so the rest of it is freed as soon as it is parsed."""
    if not isinstance(case, Mapping):
        return case
    return {
        "name": case.get("name"),
        "expected_output": field_texts(case.get("expected_output")),
        "actual_output": field_texts(case.get("actual_output")),
    }


def read_saved_report(path: Path | str, source: str | None = None) -> Run:
    """Read a saved report's JSON for a comparison, validating what is read, without building the report.

    Raises:
        FileNotFoundError: If there is no file at `path`.
        CompareError: If the file is larger than `limits.RUN` (before it is read), is not a saved
            report, or holds a malformed case (named).
    """
    path = Path(path)
    source = source or str(path)
    text = read_text(path)
    builder = _Builder(source)
    try:
        _report_arrays(text, builder)
    except json.JSONDecodeError as exc:
        raise CompareError(
            f"{source}: not a saved StructuredOutputReport (invalid JSON at line {exc.lineno} column {exc.colno}: "
            f"{exc.msg}); save reports with fieldeval.harness.reports.save_report"
        ) from None
    except RecursionError:
        raise CompareError(
            f"{source}: not a saved StructuredOutputReport (nested too deeply to read); "
            "save reports with fieldeval.harness.reports.save_report"
        ) from None
    except _Foreign as exc:
        raise CompareError(
            f"{source}: not a saved StructuredOutputReport ({exc}); "
            "save reports with fieldeval.harness.reports.save_report"
        ) from None
    return builder.run()


def read_text(path: Path) -> str:
    """The file's UTF-8 text, or an error naming the file and what to do; one over `limits.RUN` is not read."""
    check_run_file(path)
    limits.check_file(path, limits.RUN, error=CompareError)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CompareError(
            f"{path}: not UTF-8 text (byte {exc.start}); a saved report is the JSON save_report writes"
        ) from None


# --- a compact results file, streamed -----------------------------------------------------------


def read_results_file(path: Path | str, source: str | None = None, names_like: Run | None = None) -> Run:
    """Read a compact per-document results file for a comparison, whole, as columns.

    The rows are read by `fieldeval.formats.results.read_columns`, which checks each line in
    file order (refusing a bad header, a line that does not validate, so a score outside [0, 1]
    or a negative count, and a repeated name) and parses the counts of many lines at once. Each
    row is checked here as a saved report's case is: a printable name, and counts up to
    `MAX_COUNT` (a line of the writer's shape cannot hold more, so only lines read one by one
    are checked). Documents with the same fields share one layout, and each distinct row of
    counts is held once (`ShapeTable`). The file holds no outputs, so the movers table shows no
    field values for it. A row with no verdict (`failed`, `not_applicable`) is a case not
    scored, as in a saved report.

    `names_like`: a run read before (the baseline, say) whose documents may bear the same names
    at the same places, as runs scored from one case file do; this run then holds that run's
    name lookup instead of its own copy (about 12 MB of names and dict at 100,000 documents),
    and the reader follows it row by row instead of building one to throw away.

    Raises:
        FileNotFoundError: If there is no file at `path`.
        ValueError: A `ResultsError` or `CompareError` naming the file, the line or case, and the field.
    """
    import numpy as np

    from fieldeval.formats.results import STATUSES, read_columns

    path = Path(path)
    source = source or str(path)

    def refuse_name(name: str, line: int) -> None:
        check_name(name, f"{source}: a case")

    def refuse_counts(name: str, field_path: str, values: tuple[int, ...]) -> None:
        if max(values, default=0) > MAX_COUNT:
            _check_counts(dict(zip(COUNTS, values, strict=True)), f"{source}: case {name!r}", field_path)

    like = names_like.columns.position if names_like is not None else None
    columns = read_columns(path, check_name=refuse_name, check_counts=refuse_counts, names_like=like)
    builder = _Builder(source)
    builder.info = columns.header.run
    status = columns.status
    kept = np.flatnonzero(status <= STATUSES.index("unreadable"))  # scored or unreadable: a document
    position = columns.names
    if len(kept) < len(status):
        names = list(columns.names)
        builder.unscored.update((names[row], NOT_OURS) for row in np.flatnonzero(status > 1).tolist())
        position = {names[row]: index for index, row in enumerate(kept.tolist())}
    if not position:
        return builder.run()  # refuses a run with nothing scored
    position = _shared_names(position, names_like)
    schema = columns.header.schema_.rpartition(":")[2]
    numbers = np.empty(len(status), dtype=np.int64)
    shapes = _shape_table(schema, columns, numbers)
    documents = Documents.held(position, columns.scores[kept], numbers[kept], shapes)
    return Run(source, documents, builder.unscored, _run_info(source, builder.info))


def _shared_names(position: dict[str, int], like: Run | None) -> dict[str, int]:
    """`like`'s name lookup when it maps the same names to the same places as `position`, else `position`.

    Equal maps whose places count up from 0 in insertion order also iterate in the same order,
    so the run reads exactly as with its own; nothing changes the map of a run read whole.
    """
    if like is None or not isinstance(like.documents, Documents):
        return position
    shared = like.documents.position
    return shared if shared is not position and len(shared) == len(position) and shared == position else position


def _shape_table(schema: str, columns: Any, numbers: np.ndarray) -> ShapeTable:
    """The distinct shapes of a results file's documents, writing each document's shape number into `numbers`.

    Layouts whose paths and recorded fields agree (their field names may differ in order) are one
    layout here, as equal `Shape`s are one shape in a saved report's run.
    """
    import numpy as np

    merged: dict[tuple[tuple[str, ...], frozenset[str]], list[int]] = {}
    for layout, (field_names, paths) in enumerate(columns.layouts):
        merged.setdefault((paths, schema_fields(field_names, paths)), []).append(layout)
    table: list[tuple[tuple[str, ...], frozenset[str], bool, np.ndarray]] = []
    start = 0
    for (paths, fields), layouts in merged.items():
        rows = np.concatenate([np.flatnonzero(columns.layout == layout) for layout in layouts])
        counts = _joined([columns.counts[layout] for layout in layouts])
        distinct, inverse = _distinct_rows(counts)
        numbers[rows] = start + inverse
        table.append((paths, fields, False, distinct))
        start += len(distinct)
    unreadable = np.flatnonzero(columns.status == 1)
    if len(unreadable):
        numbers[unreadable] = start
        table.append(((), frozenset(), True, np.zeros((1, 0), dtype=np.uint8)))
    return ShapeTable(schema, table)


def _joined(blocks: list[np.ndarray]) -> np.ndarray:
    """The blocks' rows one after another; a lone block as it is, not copied."""
    import numpy as np

    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks)


def _distinct_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of `counts` and each row's place among them.

    Rows are told apart by a 64-bit hash (random odd weights, summed with wrap-around), which sorts
    as fast as one integer per row; `np.unique(axis=0)` sorts the rows as byte strings, several
    times slower at 100,000 rows. Should two different rows share a hash, the check after finds
    it and the rows are sorted whole instead, so the answer is exact either way.
    """
    import numpy as np

    if not counts.shape[1]:
        return counts[:1], np.zeros(len(counts), dtype=np.intp)
    drawn = np.random.default_rng(0).integers(1, 1 << 63, size=counts.shape[1], dtype=np.uint64)
    weights = np.asarray(drawn, dtype=np.uint64) | np.uint64(1)  # odd: each column's weight is invertible mod 2**64
    keys = np.zeros(len(counts), dtype=np.uint64)
    for column in range(counts.shape[1]):  # a column at a time: no wide copy of the counts
        keys += counts[:, column].astype(np.uint64) * weights[column]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    distinct = counts[first]
    inverse = inverse.reshape(-1)
    blocks = range(0, len(counts), ROW_BLOCK)  # checked a block at a time: no second copy of the counts
    if not all(np.array_equal(distinct[inverse[at : at + ROW_BLOCK]], counts[at : at + ROW_BLOCK]) for at in blocks):
        distinct, inverse = np.unique(counts, axis=0, return_inverse=True)
    return distinct, inverse.reshape(-1)


def _run_info(source: str, data: Any) -> RunInfo | None:
    """The run's self-description, or a refusal naming the file when it is not one `score` wrote."""
    if data is None:
        return None
    try:
        return read_run_info({RUN_KEY: data})
    except RunInfoError as exc:
        raise CompareError(f"{source}: {exc} ({RUN_FIX})") from None


def read_run_file(path: Path | str, names_like: Run | None = None) -> Run:
    """Read a saved run for a comparison: a saved report, or a compact results file, told apart by content.

    `names_like`: a run read before whose name lookup a results file may share (`read_results_file`).

    Raises:
        FileNotFoundError: If there is no file at `path`.
        ValueError: If the file is neither, or holds a malformed case (named with its field).
    """
    path = Path(path)
    if path.is_file() and is_results_file(path):
        return read_results_file(path, names_like=names_like)
    return read_saved_report(path)
