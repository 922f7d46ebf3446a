"""The bundled data of the walkthroughs: where it lives, and its case and prediction files read.

The files are JSON Lines in the formats a team brings to the tool (one case per line: `name`,
`input`, `expected_output`, optional `metadata`; one prediction per line: `name`, `output`).
They are this repository's own hand-authored data, so the reader is short; it still names the
file, the line and the field of anything that does not read, and what to do. The tool reads a
team's files with its own strict, size-bounded reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = REPO_ROOT / "data"


class CaseFileError(ValueError):
    """A bundled case or predictions file that does not read; the message names file, line and field."""


class CaseRecord(BaseModel):
    """One line of a case file."""

    name: str
    input: str
    expected_output: dict[str, Any]
    metadata: dict[str, Any] | None = None


def refusal(path: Path | str, where: str, problem: str, fix: str) -> CaseFileError:
    """`path: where: problem (fix)`, the one shape of every message here."""
    return CaseFileError(f"{path}: {where}: {problem} ({fix})" if where else f"{path}: {problem} ({fix})")


def read_cases(path: Path | str, schema: type[BaseModel]) -> list[tuple[CaseRecord, BaseModel]]:
    """Each case of the file with its `expected_output` validated as `schema`, in file order."""
    cases = []
    for number, line in _lines(path):
        record = _valid(path, number, CaseRecord, line, "")
        cases.append((record, _valid(path, number, schema, record.expected_output, "expected_output")))
    return cases


def read_predictions(path: Path | str, schema: type[BaseModel], names: list[str]) -> dict[str, BaseModel]:
    """The prediction of each case in `names`, its `output` validated as `schema`."""
    outputs = {}
    for number, line in _lines(path):
        outputs[str(line.get("name"))] = _valid(path, number, schema, line.get("output"), "output")
    for name in names:
        if name not in outputs:
            raise refusal(path, "", f"no prediction for case {name!r}", "add one line per case")
    return outputs


def _lines(path: Path | str) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise refusal(path, "", "no case file here", "check the path") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise refusal(path, f"line {number}", f"not valid JSON (column {exc.colno})", "fix the line") from None


def _valid(path: Path | str, number: int, model: type[BaseModel], data: Any, prefix: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        parts = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
        where = f"line {number}, field {(prefix + parts).lstrip('.')!r}"
        raise refusal(path, where, f"does not validate ({error['msg']})", "fix the value") from None
