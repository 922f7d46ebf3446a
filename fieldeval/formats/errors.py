"""The one base of every format error, and the one wording of a refusal.

Every reader of a file this package reads (case and prediction files, exchanges, results files,
the FCC snapshot) refuses bad input with a `FormatError` whose message names the file, the line
or record, the field and the fix, in one shape: `FILE: line N, field 'F': problem (fix)`.
A pydantic `ValidationError` becomes that message through `validation_problem`, so no reader
formats pydantic's errors by hand. Where pydantic's own words are generic ("input should be a
valid integer"), a format gives its table of what each field must be (`musts`), and the refusal
shows the value and says it in the format's words: `field 'usage.inputTokens': is -1; it must be a
non-negative integer`. A check a format writes itself raises `ValueError` in its own words, or
`refused(...)` when it judges one field from another (the location is then that field's).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fieldeval.errors import EvalError

if TYPE_CHECKING:  # light readers (compare's report scanner) import this module without pydantic
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails


SHOWN = 60  # characters of a refused value quoted in a one-line message


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


def problem(error: ErrorDetails, musts: Mapping[str, str] | None = None) -> str:
    """What is wrong with the value, in words that follow a field name; `musts` as `validation_problem`."""
    if error["type"] == "extra_forbidden":
        return "is not a field of this format"
    if error["type"] in ("value_error", "refused"):  # the format's own check, in its own words
        return str(error.get("ctx", {}).get("error", error["msg"]))
    must = _must(error["loc"], musts or {})
    if error["type"] == "missing":
        return f"is missing; it {must}" if must else "is missing"
    if must:
        return f"is {shown(error['input'])}; it {must}"
    return error["msg"][0].lower() + error["msg"][1:]


def validation_problem(
    exc: ValidationError,
    prefix: Sequence[str | int] = (),
    empty: str = "(the whole line)",
    musts: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """`(field, problem)` of a `ValidationError`'s first error, the field under `prefix` (`empty` if none).

    `musts` maps a field to what it must be (`"inputTokens": "must be a non-negative integer"`),
    keyed by the end of its path with list indices left out (`rows[].row_idx`, or just `row_idx`);
    the longest key that ends the path wins.
    """
    error = first_error(exc)
    return field_path((*prefix, *error["loc"]), empty), problem(error, musts)


def refused(loc: Sequence[str | int], what: str, value: Any = None) -> ValidationError:
    """A format's own check of the field at `loc` (under the model that raises it), as pydantic's error.

    Raised from a model's validator, it is reported at that field, not at the model, so a check
    that compares two fields names the one that is wrong.
    """
    from pydantic import ValidationError
    from pydantic_core import InitErrorDetails, PydanticCustomError

    error = PydanticCustomError("refused", "{error}", {"error": what})
    return ValidationError.from_exception_data("format", [InitErrorDetails(type=error, loc=tuple(loc), input=value)])


def shown(value: Any) -> str:
    """`value` as JSON, cut to `SHOWN` characters, for a one-line message."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def _must(loc: Sequence[Any], musts: Mapping[str, str]) -> str | None:
    parts = re.sub(r"\[\d+\]", "[]", field_path(loc, "")).split(".")
    return next((musts[key] for key in (".".join(parts[i:]) for i in range(len(parts))) if key in musts), None)
