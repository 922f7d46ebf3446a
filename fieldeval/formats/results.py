"""The compact per-document results file: what each document contributes, one JSON line each.

The format (JSON Lines, UTF-8):

    {"format": "structured-output-results", "version": 1, "schema": "module:Class", ...}   header
    {"name": ..., "score": ..., "test_pass": ..., "reason": ..., "status": ..., "counts": {...}, "failures": {...}}

`counts` is `{path: {"tp", "fa", "fd", "fp", "tn", "fn"}}` (`COUNTS`, the one order every
module holds stickler's confusion counts in); `failures` is `{path: {kind: count}}`. A header
with `"failures": true` says the rows carry failures; files written before they existed read as
before, with none. `fieldeval.harness.results` builds the rows from a report.

    with ResultsWriter("run.results.jsonl", ResultsHeader(schema="my_schema:Invoice")) as out:
        out.write(row)
    for row in iter_results("run.results.jsonl"):
        ...

The file appears only when the writer closes cleanly (it is staged beside and renamed by
`fieldeval.files.StagedFile`), so a crashed run leaves whatever was at the path before, byte for
byte. This module imports only pydantic (and numpy inside `read_columns`, which reads a whole file
as columns for compare), so telling a results file from a report costs nothing.

The header lists every case (`run.cases`, about 230 bytes each), so it grows with the run: a file
is told to be a results file by reading its first line's members from the front up to `format`
(`is_results_file`), whatever the header's length, and the header line is read whole only up to
`limits.HEADER`, each row line up to `limits.ROW`. The rows are streamed, so the file has no cap.
"""

from __future__ import annotations

import codecs
import json
import operator
import re
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fieldeval.files import StagedFile
from fieldeval.formats import COUNTS, RESULTS_FORMAT, limits
from fieldeval.formats import json as strict_json
from fieldeval.formats.errors import FormatError, file_error, validation_problem
from fieldeval.formats.names import MAX_NAME_CHARS

if TYPE_CHECKING:
    import numpy as np

FORMAT: Literal["structured-output-results"] = RESULTS_FORMAT
VERSION: Literal[1] = 1
MARKER = "StructuredOutputSimilarity"  # `metadata["evaluated_by"]` on the evaluator's scored rows
RESCORE = "re-run the scoring that wrote it"

# What a row's numbers mean: scored (counts filled), unreadable (an output that could not be read as
# the schema: score 0, no counts), failed (the case could not be scored at all: score 0, reason says
# why), not_applicable (no ground truth: no verdict, left out of the overall score).
Status = Literal["scored", "unreadable", "failed", "not_applicable"]


class ResultsError(FormatError):
    """A results file cannot be read; the message names the file, the line, the field and the fix."""


class Counts(BaseModel):
    """One field path's confusion counts in one document (or summed over many)."""

    # strict: `true` or `"3"` is a malformed file, not a count of 1 or 3.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    tp: int = Field(0, ge=0)
    fa: int = Field(0, ge=0)
    fd: int = Field(0, ge=0)
    fp: int = Field(0, ge=0)
    tn: int = Field(0, ge=0)
    fn: int = Field(0, ge=0)

    def __add__(self, other: Counts) -> Counts:
        return Counts(**{key: getattr(self, key) + getattr(other, key) for key in COUNTS})


class ResultsHeader(BaseModel):
    """The first line: what the rows are, so a reader refuses a file of another kind or schema."""

    model_config = ConfigDict(extra="allow")

    format: Literal["structured-output-results"] = FORMAT
    version: Literal[1] = VERSION
    schema_: str = Field(alias="schema", description="the scored model as module:Class")
    evaluator: str = MARKER
    match_threshold: float = 0.7
    run: dict[str, Any] | None = None  # the run's self-description (fieldeval.formats.run_info), when score wrote it
    failures: bool = False  # whether rows carry their failures by kind


class ResultRow(BaseModel):
    """One document: its score and verdict as the report holds them, and its counts per field path."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    score: float = Field(ge=0, le=1, allow_inf_nan=False)
    test_pass: bool
    reason: str = ""
    status: Status = "scored"
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    field_scores: dict[str, float] = {}
    overall: Counts = Counts()
    counts: dict[str, Counts] = {}
    failures: dict[str, dict[str, int]] = {}


# --- writing -----------------------------------------------------------------------------------


class ResultsWriter:
    """Writes a results file line by line as rows arrive, and puts it in place only at close.

    Rows go to a temporary file beside `path` and are flushed as written, so memory stays at one
    row; `close()` renames the file over `path` in one step. Leaving the `with` block through an
    exception, or calling `discard()`, removes the temporary file and leaves `path` untouched.
    """

    def __init__(self, path: Path | str, header: ResultsHeader) -> None:
        self.path = Path(path)
        self.header = header
        self.count = 0
        self._staged = StagedFile(self.path)  # a killed run's staged file is cleaned by the next writer
        self._file = self._staged.file
        self._names: set[str] = set()
        self._line(header.model_dump(by_alias=True, exclude={"run"} if header.run is None else None))

    def _line(self, record: Mapping[str, Any]) -> None:
        self._file.write(json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n")

    def write(self, row: ResultRow) -> None:
        """Append one document's row; a repeated name is refused, since rows are paired by name."""
        if row.name in self._names:
            raise ResultsError(
                file_error(self.path, f"case {row.name!r} written twice", "give every case a distinct name")
            )
        self._names.add(row.name)
        self._file.write(row.model_dump_json() + "\n")
        self.count += 1
        if self.count % 256 == 0:
            self._file.flush()

    def close(self) -> Path:
        """Finish the file and rename it over `path`, so readers see the old file or the whole new one."""
        if self._file.closed:
            return self.path
        return self._staged.commit()

    def discard(self) -> None:
        """Drop what was written; `path` keeps whatever it held before."""
        self._staged.discard()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


# --- reading -----------------------------------------------------------------------------------


def _load_line(path: Path, number: int, text: str) -> dict[str, Any]:
    fix = f"the file is cut short or was edited by hand: {RESCORE}"
    record = strict_json.parse(text, path, fix, error=ResultsError, line=number)
    if not isinstance(record, dict):
        raise ResultsError(file_error(path, f"is a JSON {type(record).__name__}, not an object", fix, line=number))
    return record


def read_header(path: Path | str) -> ResultsHeader:
    """The header of a results file.

    Raises:
        FileNotFoundError: If there is no file at `path`.
        ResultsError: If the first line is not this format's header, naming the field, or is
            longer than `limits.HEADER` (refused once that much is read, before it is parsed).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no results file here; write one with `score ... --results {path.name}`")
    with path.open("rb") as file:
        raw = limits.read_line(file, path, limits.HEADER, 1, error=ResultsError)
    try:
        first = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsError(file_error(path, f"not UTF-8 text (byte {exc.start})", RESCORE, line=1)) from None
    if not first.strip():
        raise ResultsError(file_error(path, "is empty", "a results file starts with its header line", line=1))
    record = _load_line(path, 1, first)
    if record.get("format") != FORMAT:
        raise ResultsError(
            file_error(
                path,
                f"is {record.get('format')!r}, not {FORMAT!r}: this is not a results file",
                "a saved report is read with fieldeval.harness.reports.load_report",
                line=1,
                field="format",
            )
        )
    if record.get("version") != VERSION:
        raise ResultsError(
            file_error(
                path,
                f"is {record.get('version')!r}; this reader reads version {VERSION}",
                "re-score with this version of the tool",
                line=1,
                field="version",
            )
        )
    try:
        return ResultsHeader.model_validate(record)
    except ValidationError as exc:
        field, what = validation_problem(exc)
        raise ResultsError(file_error(path, what, RESCORE, line=1, field=field)) from exc


def iter_results(path: Path | str) -> Iterator[ResultRow]:
    """Stream the rows of a results file, one line at a time, checking the header first.

    Memory stays at one row, plus each name seen (to refuse a repeat): about 100 bytes a document.

    Raises:
        FileNotFoundError: If there is no file at `path`.
        ResultsError: For a bad header, a line that is not JSON or does not validate (naming
            the line and the field), or a case name that repeats.
    """
    for record in iter_records(path):
        yield ResultRow.model_validate(record)


def iter_records(path: Path | str) -> Iterator[dict[str, Any]]:
    """`iter_results` as plain dicts (`ResultRow.model_dump()`'s shape), for readers of many rows.

    A line as `ResultsWriter` writes it is checked by its shape and read by the C parser, several
    times faster than building each row's model; the dict holds exactly what its `ResultRow` would.

    Raises:
        FileNotFoundError: If there is no file at `path`.
        ResultsError: As `iter_results`.
    """
    path = Path(path)
    names = _Names(path)
    for number, text in _row_lines(path):
        record = _read_record(path, number, text)
        names.check(record["name"], number)
        yield record


def _record_pairs(record: dict[str, Any]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """A row's counts as `(path, counts in COUNTS order)` pairs, in order."""
    return tuple((key, tuple(map(values.__getitem__, COUNTS))) for key, values in record["counts"].items())


def _distinct_failures(text: str) -> bool:
    """Whether a `failures` object of the writer's shape, with no escape, repeats no key."""
    if text == "{}":
        return True
    found = json.loads(text)
    return len(found) + sum(map(len, found.values())) == text.count('":')


def _row_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Each row line of a results file with its line number, after checking the header.

    A line is read up to `limits.ROW` characters and refused past it, before it is parsed.
    """
    read_header(path)
    return _rows_after_header(path)


def _rows_after_header(path: Path) -> Iterator[tuple[int, str]]:
    """`_row_lines` once the header is checked: it lists every case, so it is read once."""
    cap = limits.ROW.bytes
    with path.open(encoding="utf-8") as file:
        file.readline(limits.HEADER.bytes + 1)  # the header, read and checked (no longer than this) above
        for number, text in enumerate(iter(partial(file.readline, cap + 1), ""), start=2):
            if len(text) > cap:
                raise ResultsError(limits.over_cap(f"{path}: line {number}", None, limits.ROW))
            if not text.isspace():  # stops at the first character of a row; `strip` would copy the line
                yield number, text


# --- telling a results file from a saved report ---------------------------------------------------

_CHUNK = 1 << 16  # the first read of a file's front; each later read doubles, so a long member costs linear time


def is_results_file(path: Path | str) -> bool:
    """Whether the file is a results file: its first line is a JSON object whose `format` is this format's.

    Told from the front of the file, whatever the length of the header (it lists every case):
    the first line's members are decoded one at a time until `format`, which the writer puts
    first (and which sorts before `run`, the long one, should the keys be sorted). A saved report
    starts with a line holding only `{`, or with members of its own, and is told apart as soon as
    that line ends or its object does. At most the first `limits.HEADER` bytes are read.
    """
    try:
        with Path(path).open("rb") as file:
            return _format_member(_Front(file)) == FORMAT
    except (OSError, UnicodeDecodeError):
        return False


class _Front:
    """The first line of a file as text, read in growing chunks, never past its end or `limits.HEADER`."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.text = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._size = _CHUNK
        self._left = limits.HEADER.bytes
        self._complete = False  # the whole line, or all of it the cap allows, is in `text`

    def more(self) -> bool:
        """Read the next chunk of the line; False when there is nothing more to read."""
        if self._complete:
            return False
        chunk = self.file.read(min(self._size, self._left))
        self._left -= len(chunk)
        self._size *= 2
        part = self._decoder.decode(chunk, final=not chunk)
        end = part.find("\n")
        self.text += part if end < 0 else part[:end]
        self._complete = end >= 0 or not chunk or not self._left
        return True


def _format_member(front: _Front) -> Any:
    """The value of the top-level `format` member of the first line's object; None if it holds none.

    Each member is decoded from its start once the text holds all of it; a member cut off by the
    end of what was read so far is decoded again after the next (twice as large) read.
    """
    position = strict_json.skip_blanks(front.text)
    while position == len(front.text):  # a file may start with blanks
        if not front.more():
            return None
        position = strict_json.skip_blanks(front.text)
    if front.text[position] != "{":
        return None
    start: int | None = position + 1
    while start is not None:
        found = _next_member(front.text, start)
        if found is None:
            if front.more():
                continue
            return None  # the whole line is read and holds no further member: no `format`
        key, value, start = found
        if key == "format":
            return value
    return None


def _next_member(text: str, position: int) -> tuple[Any, Any, int | None] | None:
    """The key and value of the object member at `position`, and where the next member starts.

    The next start is None when the object ends after this member. The answer is None when
    `text` holds no whole member there: cut short by the read, or not an object's member at all.
    """
    try:
        key, position = _DECODE(text, strict_json.skip_blanks(text, position))
        position = strict_json.skip_blanks(text, position)
        if not isinstance(key, str) or not text.startswith(":", position):
            return None
        value, position = _DECODE(text, strict_json.skip_blanks(text, position + 1))
    except (ValueError, RecursionError):
        return None
    position = strict_json.skip_blanks(text, position)
    if text.startswith("}", position):
        return key, value, None
    if text.startswith(",", position):  # a number cut off by the read ends the text instead: read on
        return key, value, position + 1
    return None


_DECODE = json.JSONDecoder().raw_decode


class _Names(dict):
    """The line each case name was first seen on, refusing a repeat: rows are paired by name."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def check(self, name: str, number: int) -> None:
        if name in self:
            raise ResultsError(
                file_error(
                    self.path,
                    f"case {name!r} repeats line {self[name]}",
                    "give every case a distinct name",
                    line=number,
                )
            )
        self[name] = number


# A row line exactly as `ResultsWriter` writes it (pydantic's compact dump, fields in model order).
# A line of this shape holds no NaN or Infinity, no number too large for a float or int, no bool
# for a count and no negative count; repeated keys are ruled out by counting them (`_keys`).
_CHARS = r'[^"\\\x00-\x1f]*+(?:\\["\\/bfnrtu][^"\\\x00-\x1f]*+)*+'  # a string's body, unrolled
_STRING = f'"{_CHARS}"'
_INT = r"(?:0|[1-9][0-9]{0,8})"  # at most 999,999,999: under every reader's limit
_EXPONENT = r"[eE](?:-[0-9]{1,3}|\+?[0-9]{1,2})"  # at most 1e99: finite
_FLOAT = rf"-?(?:0|[1-9][0-9]{{0,15}})(?:\.[0-9]+(?:{_EXPONENT})?|{_EXPONENT})"  # a float as pydantic writes it
_OPTIONAL = rf"(?:{_FLOAT}|null)"
_COUNTS = "{" + ",".join(rf'"{key}":{_INT}' for key in COUNTS) + "}"
_ROW_LINE = re.compile(
    rf'{{"name":"(?P<name>(?=[^"]){_CHARS})","score":(?P<score>{_FLOAT}),"test_pass":(?:true|false),'
    rf'"reason":{_STRING},"status":"(?P<status>scored|unreadable|failed|not_applicable)",'
    rf'"precision":{_OPTIONAL},"recall":{_OPTIONAL},"f1":{_OPTIONAL},'
    rf'"field_scores":(?P<field_scores>{{(?:{_STRING}:{_FLOAT}(?:,{_STRING}:{_FLOAT})*)?}}),"overall":{_COUNTS},'
    rf'"counts":(?P<counts>{{(?:{_STRING}:{_COUNTS}(?:,{_STRING}:{_COUNTS})*)?}}),'
    rf'"failures":(?P<failures>{{(?:{_STRING}:{{(?:{_STRING}:-?{_INT}(?:,{_STRING}:-?{_INT})*)?}}'
    rf"(?:,{_STRING}:{{(?:{_STRING}:-?{_INT}(?:,{_STRING}:-?{_INT})*)?}})*)?}})}}\r?\n?"
)
_KEY = re.compile(r'"([^"]*)":')  # a key of an object of the writer's shape with no escape in it
_TOP_KEYS = len(ResultRow.model_fields)


def _keys(record: dict[str, Any]) -> int:
    """How many keys a record of `_ROW_LINE`'s shape holds, once parsed (a repeated key counts once)."""
    failures = record["failures"]
    return (
        _TOP_KEYS
        + len(record["field_scores"])
        + len(COUNTS) * (1 + len(record["counts"]))
        + len(record["counts"])
        + len(failures)
        + sum(map(len, failures.values()))
    )


def _read_record(path: Path, number: int, text: str) -> dict[str, Any]:
    """One row line as a dict. A line of the writer's shape whose every key is distinct (each key's
    closing quote is followed by a colon, so a line of that shape holds at least as many `":` as
    keys, more if a string holds one) and whose score is in range is what the model would accept;
    any other line goes through the strict reader and the model, which name what they refuse."""
    if _ROW_LINE.fullmatch(text):
        try:
            record = json.loads(text)
        except json.JSONDecodeError:  # a bad escape: the strict reader names it
            record = None
        if record is not None and _keys(record) == text.count('":') and 0 <= record["score"] <= 1:
            return record
    return _read_row(path, number, text).model_dump()


def _read_row(path: Path, number: int, text: str) -> ResultRow:
    """One row line through the strict reader and the model, which name the line and field they refuse."""
    record = _load_line(path, number, text)
    try:
        return ResultRow.model_validate(record)
    except ValidationError as exc:
        name = record.get("name")
        field, what = validation_problem(exc)
        case = f"(case {name!r})" if isinstance(name, str) else None
        raise ResultsError(file_error(path, what, RESCORE, line=number, record=case, field=field)) from exc


# --- reading a whole file as columns ------------------------------------------------------------

BATCH = 1 << 11  # row lines whose counts are taken apart in one go: bounds what a batch holds
_LATER_PATH = re.compile(r'\},"([^"]*)":\{')  # a counts object's path key after its first (no key holds a quote)
_STATUS = {"scored": 0, "unreadable": 1, "failed": 2, "not_applicable": 3}
STATUSES: tuple[Status, ...] = ("scored", "unreadable", "failed", "not_applicable")  # by `ResultsColumns.status`


@dataclass
class ResultsColumns:
    """A results file's rows as columns: what a reader of many rows keeps of each, and no more.

    Rows are in file order. `layouts` holds each distinct `(field names, paths)` a scored row has
    (the keys of its `field_scores`, the paths of its `counts`); the counts of the scored rows of
    layout `k` are the rows of `counts[k]` (paths x `COUNTS` wide, in file order), so documents
    with the same fields share one layout whatever their numbers. An unreadable row's counts are
    not kept (it has none to compare), nor a failed or not-applicable row's.
    """

    header: ResultsHeader
    names: dict[str, int]  # case name -> its row
    lines: np.ndarray  # (rows,) each row's line number
    scores: np.ndarray  # (rows,) float64
    status: np.ndarray  # (rows,) int8, an index into `STATUSES`
    layout: np.ndarray  # (rows,) int64, the layout of a scored row; -1 for any other
    layouts: list[tuple[tuple[str, ...], tuple[str, ...]]]
    counts: list[np.ndarray]  # per layout, (its rows, paths x len(COUNTS)), the smallest unsigned type that holds them


CountsCheck = Callable[[str, str, tuple[int, ...]], None]  # (case, path, counts): raises on a count the reader refuses


def read_columns(
    path: Path | str,
    *,
    check_name: Callable[[str, int], None] | None = None,
    check_counts: CountsCheck | None = None,
    names_like: dict[str, int] | None = None,
) -> ResultsColumns:
    """Read a whole results file as `ResultsColumns`, refusing what `iter_records` refuses with its messages.

    A line as `ResultsWriter` writes it, with no escape, is checked by its shape (`_ROW_LINE`) and
    taken apart by the shape's groups; its counts are not parsed one by one but all those of a
    batch of lines at once, as one run of digits each, into an integer array. Any other line is read
    as `iter_records` reads it, so it is refused with the same message, naming line, case and field.
    Lines are checked in file order, so the first bad line is the one named.

    `check_name(name, line)` is called for a name longer than `MAX_NAME_CHARS` or unprintable, and
    `check_counts` for the counts of a line read the slow way (a line of the writer's shape holds
    no count above 999,999,999): a reader with rules of its own raises there, in line order.

    `names_like`: a name lookup read before (another run scored from the same case file) that
    maps its `k`-th name to `k`. While this file's rows bear the same names in the same order,
    no lookup of its own is built; when all of them do, `names` is that very lookup, so two runs
    hold one (about 12 MB at 100,000 rows). The first row that differs builds this file's own
    from the rows before it, and reading goes on as without one.

    Raises:
        FileNotFoundError: If there is no file at `path`.
        ResultsError: As `iter_results`.
    """
    path = Path(path)
    header = read_header(path)
    reader = _ColumnsReader(path, check_name, check_counts, names_like)
    batch: list[tuple[int, str]] = []
    for line in _rows_after_header(path):
        batch.append(line)
        if len(batch) == BATCH:
            reader.add(batch)
            batch = []
    reader.add(batch)
    return reader.columns(header)


class _ColumnsReader:
    """Collects `ResultsColumns` batch by batch (see `read_columns`)."""

    def __init__(
        self,
        path: Path,
        check_name: Callable[[str, int], None] | None,
        check_counts: CountsCheck | None,
        names_like: dict[str, int] | None = None,
    ):
        self.path, self.check_name, self.check_counts = path, check_name, check_counts
        self.names: dict[str, int] = {}
        in_order = names_like is not None and all(map(operator.eq, names_like.values(), range(len(names_like))))
        self.like = names_like if in_order else None  # followed row by row while the names agree (`read_columns`)
        self.expected = iter(self.like or ())
        self.lines = array("q")
        self.scores = array("d")
        self.status = array("b")
        self.layout = array("q")
        self.layouts: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
        self.widths: list[int] = []  # per layout, how many counts a row of it holds
        self.blocks: list[list[np.ndarray]] = []  # per layout, its counts a batch at a time
        self.shared: dict[Any, Any] = {}  # each distinct tuple of names, held once
        self.distinct: dict[tuple[str, ...], bool] = {}  # names tuple -> whether no name repeats

    def _follows(self, name: str) -> bool:
        """Whether this row's name is the next of `like`'s; on the first that is not, the rows' own lookup is built."""
        if next(self.expected, None) == name:
            return True
        self._own_names()
        return False

    def _own_names(self) -> dict[str, int]:
        """The lookup of the rows read so far, built from `like`'s names when they were followed."""
        if self.like is not None:
            count = len(self.lines)
            self.names = dict(zip(islice(self.like, count), range(count), strict=True))
            self.like = None
        return self.names

    def _once(self, names: tuple[str, ...]) -> tuple[str, ...]:
        found = self.shared.setdefault(names, names)
        if found not in self.distinct:
            self.distinct[found] = len(set(found)) == len(found)
        return found

    def add(self, batch: list[tuple[int, str]]) -> None:
        """Check and keep one batch of lines; their counts are parsed together at the end."""
        texts: dict[str, tuple[int, tuple[str, ...], bool]] = {}  # each distinct counts text: (its place, paths, fit)
        widths = array("q")  # how many counts each of those texts holds
        rows = array("q")  # each scored line of the writer's shape: its row
        slots = array("q")  # and the place of its counts text
        numbers = array("q")  # the counts of scored lines read the slow way, in order
        slow = array("q")  # the rows read the slow way
        failures_fit: dict[str, bool] = {"{}": True}  # failures text -> whether it repeats no key
        fields_of, distinct = self._once, self.distinct
        for number, text in batch:
            match = _ROW_LINE.fullmatch(text) if "\\" not in text else None
            place = -1  # where this line's counts text is among the batch's; -1: the line is read the slow way
            if match is not None:
                name, score, status, field_scores, counts, failures = match.groups()
                value = float(score)  # what the JSON parser makes of the same digits
                fields = fields_of(tuple(_KEY.findall(field_scores)))
                known = texts.get(counts)  # documents often repeat another's counts: each text is looked at once
                if known is None:
                    paths = fields_of(_paths(counts))
                    fit = (
                        distinct[paths]
                        and len(paths) == counts.count('":{')
                        and len(paths) * (1 + len(COUNTS)) == counts.count('":')
                    )
                    known = texts[counts] = (len(texts), paths, fit)
                    widths.append(len(paths) * len(COUNTS) if fit else 0)  # an unfit text is not parsed
                slot, paths, fit = known
                fine = failures_fit.get(failures)
                if fine is None:
                    fine = failures_fit[failures] = _distinct_failures(failures)
                if 0 <= value <= 1 and distinct[fields] and fit and fine:
                    place = slot
            if place < 0:
                record = _read_record(self.path, number, text)
                name, value, status, pairs = record["name"], record["score"], record["status"], _record_pairs(record)
                fields = fields_of(tuple(record["field_scores"]))
                paths = fields_of(tuple(key for key, _ in pairs))
                if status == "scored":
                    self._slow_counts(number, name, pairs, numbers)
            followed = self.like is not None and self._follows(name)
            names = self.names  # built afresh when the names stopped following `like`
            if not followed and name in names:
                first = self.lines[names[name]]
                repeat = f"case {name!r} repeats line {first}"
                raise ResultsError(file_error(self.path, repeat, "give every case a distinct name", line=number))
            if (len(name) > MAX_NAME_CHARS or not name.isprintable()) and self.check_name is not None:
                self.check_name(name, number)
            index = len(self.lines)
            if not followed:
                names[name] = index
            self.lines.append(number)
            self.scores.append(value)
            self.status.append(_STATUS[status])
            if status == "scored":
                layout = self.layouts.setdefault((fields, paths), len(self.layouts))
                if layout == len(self.blocks):
                    self.blocks.append([])
                    self.widths.append(len(paths) * len(COUNTS))
                self.layout.append(layout)
                if place < 0:
                    slow.append(index)
                else:
                    rows.append(index)
                    slots.append(place)
            else:
                self.layout.append(-1)
        self._keep([text if fit else "" for text, (_, _, fit) in texts.items()], widths, rows, slots, numbers, slow)

    def _keep(self, texts: list[str], widths: array, rows: array, slots: array, numbers: array, slow: array) -> None:
        """Parse a batch's distinct counts texts in one go and file each scored line's counts by layout."""
        import numpy as np

        parsed = _counts_in("".join(texts).encode("utf-8"))
        every = np.frombuffer(widths, dtype=np.int64)
        assert parsed.size == every.sum()  # the shape fixes how many counts each text holds
        starts = np.concatenate([[0], np.cumsum(every)[:-1]]).astype(np.int64)[np.frombuffer(slots, dtype=np.int64)]
        rows_of = np.frombuffer(rows, dtype=np.int64)
        slow_rows = np.frombuffer(slow, dtype=np.int64)
        slow_values = np.frombuffer(numbers, dtype=np.int64)
        layout = np.frombuffer(self.layout, dtype=np.int64)
        slow_widths = [self.widths[number] for number in layout[slow_rows].tolist()]
        slow_starts = np.concatenate([[0], np.cumsum(slow_widths, dtype=np.int64)]).astype(np.int64)
        for number in np.unique(layout[np.concatenate([rows_of, slow_rows])]).tolist():
            width = self.widths[number]
            fast = np.flatnonzero(layout[rows_of] == number)
            late = np.flatnonzero(layout[slow_rows] == number)
            block = np.empty((fast.size + late.size, width), dtype=np.int64)
            order = np.argsort(np.concatenate([rows_of[fast], slow_rows[late]]), kind="stable")
            block[: fast.size] = parsed[starts[fast, None] + np.arange(width)]
            block[fast.size :] = slow_values[slow_starts[late, None] + np.arange(width)]
            self.blocks[number].append(_smallest(block[order]))

    def _slow_counts(self, number: int, name: str, pairs: Any, numbers: array) -> None:
        """Keep the counts of a scored line read the slow way, after the caller's check of each path's."""
        for key, values in pairs:
            if self.check_counts is not None:
                self.check_counts(name, key, values)
            try:
                numbers.extend(values)
            except OverflowError:
                what = f"a count is {max(values):,}, more than a 64-bit count holds"
                raise ResultsError(
                    file_error(self.path, what, RESCORE, line=number, record=f"(case {name!r})", field=f"counts.{key}")
                ) from None

    def columns(self, header: ResultsHeader) -> ResultsColumns:
        import numpy as np

        counts = [
            np.concatenate(blocks) if blocks else np.empty((0, width), dtype=np.uint8)
            for blocks, width in zip(self.blocks, self.widths, strict=True)
        ]
        if self.like is not None and len(self.lines) < len(self.like):
            self._own_names()  # the file ended before `like`'s names did
        return ResultsColumns(
            header,
            self.names if self.like is None else self.like,
            np.frombuffer(self.lines, dtype=np.int64),
            np.frombuffer(self.scores, dtype=np.float64),
            np.frombuffer(self.status, dtype=np.int8),
            np.frombuffer(self.layout, dtype=np.int64),
            list(self.layouts),
            counts,
        )


def _paths(counts: str) -> tuple[str, ...]:
    """The path keys of a counts object of the writer's shape with no escape, in order.

    No key holds a quote, so the first `":{` ends the first key and every later key follows the
    `},` that closes the counts before it; the caller checks that this found every `":{`.
    """
    if counts == "{}":
        return ()
    return (counts[2 : counts.find('":{')], *_LATER_PATH.findall(counts))


def _counts_in(text: bytes) -> np.ndarray:
    """Every count in counts objects of the writer's shape with no escape, in order, as int64.

    A count is the digits after `":` (a key holds no quote, so a path key's `":` is followed by
    `{`); the shape gives each at most nine digits. They are read with whole-array operations, a
    digit position at a time, so no Python object is made per count: at 100,000 documents of ten
    paths that would be six million short-lived strings, scattered among the names kept.
    """
    import numpy as np

    data = np.frombuffer(text, dtype=np.uint8)
    starts = np.flatnonzero((data[:-2] == ord('"')) & (data[1:-1] == ord(":")) & (data[2:] - ord("0") <= 9)) + 2
    values = np.zeros(len(starts), dtype=np.int64)
    going = np.ones(len(starts), dtype=bool)
    last = len(data) - 1  # a `}`: reading there past the end of the text reads a non-digit
    for offset in range(10):  # nine digits at most, then the `,` or `}` that ends each count
        digit = data[np.minimum(starts + offset, last)] - ord("0")  # uint8: a non-digit is above 9
        going &= digit <= 9
        values = np.where(going, values * 10 + digit, values)
    return values


def _smallest(block: np.ndarray) -> np.ndarray:
    """`block` (whole numbers from 0) in the smallest unsigned type that holds them: most counts are small."""
    import numpy as np

    largest = int(block.max(initial=0))
    for dtype in (np.uint8, np.uint16, np.uint32):
        if largest <= np.iinfo(dtype).max:
            return block.astype(dtype)
    return block.astype(np.uint64)
