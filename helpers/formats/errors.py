"""The one base of every format error, and the one wording of a refusal.

Every reader of a file this package reads (case and prediction files, exchanges, results files,
the FCC snapshot) refuses bad input with a `FormatError` whose message names the file, the line
or record, the field and the fix, in one shape: `FILE: line N, field 'F': problem (fix)`.
A pydantic `ValidationError` becomes that message through `validation_problem`, so no reader
formats pydantic's errors by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers.errors import EvalError

if TYPE_CHECKING:  # light readers (compare's report scanner) import this module without pydantic
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails


class FormatError(EvalError, ValueError):
    """A file that breaks its format; the message names the file, where in it, the field and the fix."""


def file_error(
    path: Path | str,
    problem: str,
    fix: str,
    *,
    line: int | None = None,
    record: str | None = None,
    field: str | None = None,
) -> str:
    """The one wording of every refusal: `FILE: line N (record), field 'F': problem (fix)`."""
    where = str(path)
    parts = [f"line {line}" if line is not None else "", record or ""]
    place = " ".join(part for part in parts if part)
    if place:
        where += f": {place}"
    if field is not None:
        where += f", field '{field}'" if place else f": field '{field}'"
    return f"{where}: {problem} ({fix})"


def field_path(loc: Sequence[Any], empty: str = "(the whole line)") -> str:
    """A location as a readable path: `expected_output.line_items[0].sku`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or empty


def first_error(exc: ValidationError) -> ErrorDetails:
    """The error to report first: an unknown field is usually a misspelt one, which also shows up
    as a missing field, so it is named before anything else."""
    return sorted(exc.errors(include_url=False), key=lambda error: error["type"] != "extra_forbidden")[0]


def problem(error: ErrorDetails) -> str:
    """What is wrong with the value, in words that follow a field name."""
    if error["type"] == "missing":
        return "is missing"
    if error["type"] == "extra_forbidden":
        return "is not a field of this format"
    if error["type"] == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"]))
    return error["msg"][0].lower() + error["msg"][1:]


def validation_problem(
    exc: ValidationError, prefix: Sequence[str | int] = (), empty: str = "(the whole line)"
) -> tuple[str, str]:
    """`(field, problem)` of a `ValidationError`'s first error, the field under `prefix` (`empty` if none)."""
    error = first_error(exc)
    return field_path((*prefix, *error["loc"]), empty), problem(error)
