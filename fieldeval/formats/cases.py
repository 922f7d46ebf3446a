"""The case file and the predictions file: JSON Lines a user brings, one record a line.

One case per line, `{"name": str, "input": str, "expected_output": {...}, "metadata": {...}}`
(`metadata` optional); one prediction per line, `{"name": str, "output": {...}}`. Each line is
read as a pydantic model, and `expected_output` / `output` are validated against the user's
schema, so a bad file is refused before anything runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fieldeval.formats import json as strict_json
from fieldeval.formats.errors import FormatError, file_error, first_error, validation_problem
from fieldeval.formats.names import NAME_FIX, name_problem
from fieldeval.formats.run_info import usage_problem

Record = TypeVar("Record", bound="_Named")


class CaseFileError(FormatError):
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


class CaseRecord(_Named):
    """One line of a case file."""

    input: str
    expected_output: dict[str, Any]
    metadata: dict[str, Any] | None = None


class PredictionRecord(_Named):
    """One line of a predictions file: the output, and optionally the model and what the call cost.

    A team that runs its agent elsewhere (a batch job, another harness) knows which model answered
    and its tokens and latency; given here, they travel into the saved run as a recorded case's
    would, so `compare --prices` can put a cost and a latency beside the quality.
    """

    output: dict[str, Any]
    model_id: str | None = Field(default=None, min_length=1)
    usage: dict[str, Any] | None = None

    @field_validator("usage")
    @classmethod
    def _usage_in_range(cls, usage: dict[str, Any] | None) -> dict[str, Any] | None:
        for key, value in (usage or {}).items():
            problem = usage_problem(key, value)
            if problem is not None:
                raise ValueError(f"usage.{key} {problem}")
        return usage


def read_cases(path: Path | str, schema: type[BaseModel]) -> list[tuple[CaseRecord, BaseModel]]:
    """Read a case file: each line's record with its `expected_output` as an instance of `schema`.

    Needs only pydantic, so a notebook that runs without Strands Evals can read a case file too.

    Raises:
        CaseFileError: On a missing or non-UTF-8 file, invalid JSON, a missing or unknown field,
            a duplicate name, or an `expected_output` that does not validate against `schema`.
    """
    return [
        (record, validate(path, line, "expected_output", record.expected_output, schema))
        for line, record in records(path, CaseRecord, "case")
    ]


def read_predictions(
    path: Path | str, schema: type[BaseModel], names: Iterable[str], sources: dict[str, dict[str, Any]] | None = None
) -> dict[str, BaseModel]:
    """Read a predictions file: one output validated against `schema` for each of `names`.

    `sources`, when given, receives each case's `model_id` and `usage` from the lines that give them.

    Raises:
        CaseFileError: As `read_cases`, and for a prediction naming no case or a case with none.
    """
    names = list(names)
    known = set(names)
    outputs: dict[str, BaseModel] = {}
    for line, record in records(path, PredictionRecord, "prediction"):
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
        outputs[record.name] = validate(path, line, "output", record.output, schema)
        if sources is not None and (record.model_id is not None or record.usage is not None):
            sources[record.name] = {"model_id": record.model_id, "usage": record.usage}
    missing = [name for name in names if name not in outputs]
    if missing:
        raise CaseFileError(
            file_error(
                path,
                f"no prediction for case{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}",
                "add one line per case",
            )
        )
    return outputs


def records(path: Path | str, model: type[Record], kind: str) -> list[tuple[int, Record]]:
    """`(line number, record)` for every non-blank line, with names checked unique."""
    path = Path(path)
    fix = f"fix the line so it is one JSON object per line, as in the {kind} file format"
    text = strict_json.read_text(path, (f"no {kind} file here", "check the path"), error=CaseFileError)
    found: list[tuple[int, Record]] = []
    first_line: dict[str, int] = {}
    # Lines end at "\n" only: U+2028 and the like may stand inside a JSON string.
    for number, content in enumerate(text.split("\n"), start=1):
        if not content.strip():
            continue
        data = strict_json.parse(content, path, fix, error=CaseFileError, line=number)
        if not isinstance(data, dict):
            raise CaseFileError(file_error(path, f"is a JSON {type(data).__name__}, not an object", fix, line=number))
        try:
            record = model.model_validate(data)
        except ValidationError as exc:
            field, what = validation_problem(exc)
            raise CaseFileError(
                file_error(path, what, _field_fix(first_error(exc), model), line=number, field=field)
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
        found.append((number, record))
    if not found:
        raise CaseFileError(file_error(path, f"holds no {kind}s", f"write one {kind} per line as a JSON object"))
    return found


def validate(path: Path | str, line: int, field: str, data: dict[str, Any], schema: type[BaseModel]) -> BaseModel:
    """`data` (the line's `field`) as an instance of `schema`, or a refusal naming the nested field."""
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        where, what = validation_problem(exc, (field,))
        raise CaseFileError(
            file_error(
                path,
                f"does not validate against {schema.__name__}: {what}",
                f"correct the value so it fits {schema.__module__}.{schema.__qualname__}",
                line=line,
                field=where,
            )
        ) from exc


def _field_fix(error: Any, model: type[BaseModel]) -> str:
    if error["type"] == "value_error" and error["loc"] == ("name",):
        return NAME_FIX
    required = [name for name, field in model.model_fields.items() if field.is_required()]
    optional = [name for name in model.model_fields if name not in required]
    fix = f"every line holds {', '.join(required)}"
    return fix + (f", and optionally {', '.join(optional)}" if optional else "")
