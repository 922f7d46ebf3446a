"""The JSONL case and prediction files a user brings, read into Strands Evals `Case`s and outputs.

One case per line, `{"name": str, "input": str, "expected_output": {...}, "metadata": {...}}`
(`metadata` optional); one prediction per line, `{"name": str, "output": {...}}`. Each line is
read as a pydantic model, and `expected_output` / `output` are validated against the user's
schema, so a bad file is refused before anything runs. Every refusal goes through one formatter
and names the file, the line, the field and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from helpers import strict_json
from helpers.files import settle
from helpers.harness.names import NAME_FIX, name_problem

if TYPE_CHECKING:
    from strands_evals import Case

# Deeper than any real document; deep enough input would otherwise end in a raw RecursionError.
MAX_DEPTH = 100


class CaseFileError(ValueError):
    """A case or prediction file that cannot be used; the message names file, line, field and fix."""


class _Named(BaseModel):
    """A line that names its case; the name follows the one rule every command applies."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _printable(cls, name: str) -> str:
        problem = name_problem(name)
        if problem is not None:
            raise ValueError(problem)
        return name


_Line = TypeVar("_Line", bound=_Named)


class CaseRecord(_Named):
    """One line of a case file."""

    input: str
    expected_output: dict[str, Any]
    metadata: dict[str, Any] | None = None


class PredictionRecord(_Named):
    """One line of a predictions file."""

    output: dict[str, Any]


def file_error(path: Path | str, problem: str, fix: str, *, line: int | None = None, field: str | None = None) -> str:
    """The one wording of every refusal: `FILE: line N, field 'F': problem (fix)`."""
    where = str(path)
    if line is not None:
        where += f": line {line}"
    if field is not None:
        where += f", field '{field}'" if line is not None else f": field '{field}'"
    return f"{where}: {problem} ({fix})"


def read_cases(path: Path | str, schema: type[BaseModel]) -> list[tuple[CaseRecord, BaseModel]]:
    """Read a case file: each line's record with its `expected_output` as an instance of `schema`.

    Needs only pydantic, so a notebook that runs without Strands Evals can read a case file too.

    Raises:
        CaseFileError: On a missing or non-UTF-8 file, invalid JSON, a missing or unknown field,
            a duplicate name, or an `expected_output` that does not validate against `schema`.
    """
    return [
        (record, _validate(path, line, "expected_output", record.expected_output, schema))
        for line, record in _records(path, CaseRecord, "case")
    ]


def load_cases(path: Path | str, schema: type[BaseModel]) -> list[Case]:
    """Read a case file into Strands Evals `Case`s, each `expected_output` an instance of `schema`.

    Raises:
        CaseFileError: As `read_cases`.
    """
    from strands_evals import Case  # here, not at the top: `read_cases` must work without Strands Evals

    return [
        Case(name=record.name, input=record.input, expected_output=expected, metadata=record.metadata)
        for record, expected in read_cases(path, schema)
    ]


def load_predictions(path: Path | str, schema: type[BaseModel], cases: Sequence[Case]) -> dict[str, BaseModel]:
    """Read a predictions file: one validated output per case of `cases`, by name.

    Raises:
        CaseFileError: As `load_cases`, and for a prediction naming no case or a case with none.
    """
    known = {case.name for case in cases}
    outputs: dict[str, BaseModel] = {}
    for line, record in _records(path, PredictionRecord, "prediction"):
        if record.name not in known:
            raise CaseFileError(
                file_error(
                    path,
                    f"no case is named {record.name!r}",
                    "remove the line or give it the name of a case in the case file",
                    line=line,
                    field="name",
                )
            )
        outputs[record.name] = _validate(path, line, "output", record.output, schema)
    missing = [case.name for case in cases if case.name not in outputs]
    if missing:
        raise CaseFileError(
            file_error(
                path,
                f"no prediction for case{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}",
                "add one line per case",
            )
        )
    return outputs


def _records(path: Path | str, model: type[_Line], kind: str) -> list[tuple[int, _Line]]:
    """`(line number, record)` for every non-blank line, with names checked unique."""
    path = Path(path)
    fix = f"fix the line so it is one JSON object per line, as in the {kind} file format"
    try:
        settle(path.parent)  # an interrupted switch of this folder's files is finished or undone first
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CaseFileError(file_error(path, f"no {kind} file here", "check the path")) from None
    except OSError as exc:
        raise CaseFileError(file_error(path, f"cannot be read ({exc.strerror})", "check the path")) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CaseFileError(
            file_error(path, f"not UTF-8 text (byte {exc.start})", "save the file as UTF-8", line=line)
        ) from exc
    records: list[tuple[int, _Line]] = []
    first_line: dict[str, int] = {}
    # Lines end at "\n" only: U+2028 and the like may stand inside a JSON string.
    for number, content in enumerate(text.split("\n"), start=1):
        if not content.strip():
            continue
        data = _parse_line(path, number, content, fix)
        if not isinstance(data, dict):
            raise CaseFileError(file_error(path, f"is a JSON {type(data).__name__}, not an object", fix, line=number))
        try:
            record = model.model_validate(data)
        except ValidationError as exc:
            # An unknown field is usually a misspelt one, which also shows up as a missing field: name it first.
            error = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
            field = _location(error["loc"])
            raise CaseFileError(
                file_error(path, _problem(error), _field_fix(error, model), line=number, field=field)
            ) from exc
        if record.name in first_line:
            raise CaseFileError(
                file_error(
                    path,
                    f"duplicate name {record.name!r} (first on line {first_line[record.name]})",
                    "give every line a unique name",
                    line=number,
                    field="name",
                )
            )
        first_line[record.name] = number
        records.append((number, record))
    if not records:
        raise CaseFileError(file_error(path, f"holds no {kind}s", f"write one {kind} per line as a JSON object"))
    return records


def _parse_line(path: Path, number: int, content: str, fix: str) -> Any:
    depth = _nesting(content)
    if depth > MAX_DEPTH:
        raise CaseFileError(
            file_error(path, f"nested {depth} levels deep, more than {MAX_DEPTH}", "flatten the data", line=number)
        )
    try:
        return strict_json.loads(content)
    except strict_json.StrictJSONError as exc:
        raise CaseFileError(file_error(path, exc.problem, fix, line=number, field=exc.field)) from exc
    except json.JSONDecodeError as exc:
        raise CaseFileError(
            file_error(path, f"not valid JSON (column {exc.colno}): {exc.msg}", fix, line=number)
        ) from exc
    except RecursionError as exc:  # the depth check counts brackets outside strings; this is a backstop
        raise CaseFileError(file_error(path, "nested too deeply to read", "flatten the data", line=number)) from exc


def _nesting(text: str) -> int:
    """The deepest bracket nesting in a JSON text, ignoring brackets inside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _validate(path: Path | str, line: int, field: str, data: dict[str, Any], schema: type[BaseModel]) -> BaseModel:
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = _location((field, *error["loc"]))
        raise CaseFileError(
            file_error(
                path,
                f"does not validate against {schema.__name__}: {_problem(error)}",
                f"correct the value so it fits {schema.__module__}.{schema.__qualname__}",
                line=line,
                field=where,
            )
        ) from exc


def _location(loc: Sequence[Any]) -> str:
    """A pydantic error location as a readable path: `expected_output.line_items[0].sku`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the whole line)"


def _problem(error: Any) -> str:
    if error["type"] == "missing":
        return "is missing"
    if error["type"] == "extra_forbidden":
        return "is not a field of this format"
    if error["type"] == "value_error":
        return str(error["ctx"]["error"])
    return error["msg"][0].lower() + error["msg"][1:]


def _field_fix(error: Any, model: type[BaseModel]) -> str:
    if error["type"] == "value_error" and error["loc"] == ("name",):
        return NAME_FIX
    required = [name for name, field in model.model_fields.items() if field.is_required()]
    optional = [name for name in model.model_fields if name not in required]
    fix = f"every line holds {', '.join(required)}"
    return fix + (f", and optionally {', '.join(optional)}" if optional else "")
